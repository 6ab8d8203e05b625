/* Native allocation tracer for benchmarks/memory_profile.py --trace (Linux, glibc).
 *
 * Loaded with LD_PRELOAD, it wraps malloc/calloc/realloc/free/memalign and keeps
 *   - the bytes in use over all allocations (malloc_usable_size), and
 *   - for each allocation of at least TRACE_BIG bytes, a tag: the first caller in the
 *     backtrace outside libc, libstdc++, libgfortran and this file ("library symbol").
 * SIGUSR1 starts a window (peaks reset to the current state); SIGUSR2 writes, to the file
 * named by $ALLOCTRACE_OUT, the peak of the tagged bytes in the window, the bytes in use at
 * that moment, and the live bytes of each tag at that moment (tab separated).
 *
 * Blind spot: CasADi opens its plugins with RTLD_DEEPBIND, so a plugin library's own calls
 * to malloc (MUMPS's Fortran ALLOCATEs in libcoinmumps, IPOPT's few direct mallocs) bind to
 * glibc and are not seen here; C++ `new` goes through libstdc++ and is seen.  MUMPS reports
 * its own memory (INFOG(19), INFOG(22)). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

#define TRACE_BIG (256 * 1024)
#define SLOTS (1 << 20)
#define TAGS 512

static struct { void *p; size_t n; int tag; } slot[SLOTS];
static char tag_name[TAGS][200];
static int n_tags;
static long long live[TAGS], at_peak[TAGS], big_now, big_peak, all_now, all_at_peak;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static __thread int busy;

static int passthrough(const char *f) {
  return !f || strstr(f, "alloc_trace") || strstr(f, "libc.so") || strstr(f, "libstdc++") ||
         strstr(f, "libgfortran");
}

static int tag_here(void) {
  void *frames[12];
  int k = backtrace(frames, 12), i;
  Dl_info info;
  const char *file = "?", *sym = "?";
  for (i = 1; i < k; i++)
    if (dladdr(frames[i], &info) && !passthrough(info.dli_fname)) {
      file = info.dli_fname;
      sym = info.dli_sname ? info.dli_sname : "?";
      break;
    }
  const char *base = strrchr(file, '/');
  char key[200];
  snprintf(key, sizeof key, "%s %s", base ? base + 1 : file, sym);
  for (i = 0; i < n_tags; i++)
    if (!strcmp(tag_name[i], key)) return i;
  if (n_tags == TAGS - 1) return TAGS - 1; /* the last tag collects the overflow */
  strcpy(tag_name[n_tags], key);
  return n_tags++;
}

static size_t home(const void *p) { return (((uintptr_t)p >> 4) * 2654435761u) & (SLOTS - 1); }

static void took(void *p, size_t requested) {
  if (!p) return;
  size_t n = malloc_usable_size(p);
  pthread_mutex_lock(&lock);
  all_now += (long long)n;
  if (requested >= TRACE_BIG) {
    int t = tag_here();
    size_t i = home(p);
    while (slot[i].p) i = (i + 1) & (SLOTS - 1);
    slot[i].p = p; slot[i].n = n; slot[i].tag = t;
    live[t] += (long long)n;
    big_now += (long long)n;
    if (big_now > big_peak) {
      big_peak = big_now;
      all_at_peak = all_now;
      memcpy(at_peak, live, sizeof live);
    }
  }
  pthread_mutex_unlock(&lock);
}

static void gave(void *p) {
  if (!p) return;
  size_t n = malloc_usable_size(p);
  pthread_mutex_lock(&lock);
  all_now -= (long long)n;
  if (n >= TRACE_BIG) {
    size_t i = home(p);
    while (slot[i].p && slot[i].p != p) i = (i + 1) & (SLOTS - 1);
    if (slot[i].p == p) {
      live[slot[i].tag] -= (long long)slot[i].n;
      big_now -= (long long)slot[i].n;
      slot[i].p = 0;
      /* linear probing: re-seat the rest of the cluster */
      for (size_t j = (i + 1) & (SLOTS - 1); slot[j].p; j = (j + 1) & (SLOTS - 1)) {
        void *q = slot[j].p; size_t qn = slot[j].n; int qt = slot[j].tag;
        slot[j].p = 0;
        size_t h = home(q);
        while (slot[h].p) h = (h + 1) & (SLOTS - 1);
        slot[h].p = q; slot[h].n = qn; slot[h].tag = qt;
      }
    }
  }
  pthread_mutex_unlock(&lock);
}

#define TRACED(call, p, size) do { if (!busy) { busy = 1; call(p, size); busy = 0; } } while (0)

void *malloc(size_t n) { void *p = __libc_malloc(n); TRACED(took, p, n); return p; }
void *calloc(size_t a, size_t b) { void *p = __libc_calloc(a, b); TRACED(took, p, a * b); return p; }
void free(void *p) { if (!busy && p) { busy = 1; gave(p); busy = 0; } __libc_free(p); }
void *realloc(void *p, size_t n) {
  if (busy) return __libc_realloc(p, n);
  busy = 1;
  if (p) gave(p);
  void *q = __libc_realloc(p, n);
  if (q) took(q, n); else if (p && n) took(p, malloc_usable_size(p)); /* failed: p still ours */
  busy = 0;
  return q;
}
void *memalign(size_t a, size_t n) { void *p = __libc_memalign(a, n); TRACED(took, p, n); return p; }
void *aligned_alloc(size_t a, size_t n) { return memalign(a, n); }
int posix_memalign(void **out, size_t a, size_t n) {
  void *p = memalign(a, n);
  if (!p) return 12; /* ENOMEM */
  *out = p;
  return 0;
}

static void window(int sig) {
  (void)sig;
  big_peak = big_now;
  all_at_peak = all_now;
  memcpy(at_peak, live, sizeof live);
}

static void report(int sig) {
  (void)sig;
  const char *path = getenv("ALLOCTRACE_OUT");
  if (!path) return;
  busy = 1;
  FILE *f = fopen(path, "w");
  if (f) {
    fprintf(f, "peak_tagged\t%lld\nin_use_at_peak\t%lld\nin_use_now\t%lld\n", big_peak, all_at_peak, all_now);
    for (int i = 0; i < n_tags; i++)
      if (at_peak[i] > 0) fprintf(f, "tag\t%lld\t%s\n", at_peak[i], tag_name[i]);
    fclose(f);
  }
  busy = 0;
}

__attribute__((constructor)) static void start(void) {
  signal(SIGUSR1, window);
  signal(SIGUSR2, report);
}
