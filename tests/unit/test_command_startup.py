"""What the ``colloc identify`` command does before and around the solve to be quick: pandas
kept off the path before the solve and imported beside it, glibc's allocator told to keep
freed memory (only in the console script's own process)."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from colloc.base.prefetch import prefetch

SEED = Path(__file__).resolve().parents[2] / "data" / "two_link" / "two_link_seed.csv"
GLIBC = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"


def _run(code: str, env: dict | None = None) -> str:
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_the_solve_path_and_reading_a_large_file_do_not_import_pandas():
    """Until the solve, the command needs no pandas: the solve path's modules and the fast CSV
    reader (the two-link seed file is 647 kB, above FAST_READ_BYTES) leave it unimported."""
    out = _run(f"""
        import sys
        import colloc.solving.solve, colloc.cli
        from colloc.definition import readers
        from colloc.definition.trial import Trial
        from pathlib import Path
        path = Path({str(SEED)!r})
        assert path.stat().st_size >= readers.FAST_READ_BYTES
        t = Trial.from_csv(path)
        print(len(t.time), "pandas" in sys.modules)
    """)
    assert out == "6001 False"


def test_the_solve_path_leaves_the_stochastic_estimator_and_signal_processing_unimported():
    """A deterministic identification never needs the Kalman estimator nor SciPy's signal
    processing (0.6 s of imports); they come with a stochastic problem or a signal tool."""
    out = _run("""
        import sys
        import colloc.solving.solve, colloc.cli, colloc.results.report
        from colloc.signals import forecast
        before = ["colloc.solving.kalman_ml" in sys.modules, "scipy.signal" in sys.modules]
        from colloc.signals import lowpass
        print(before, "scipy.signal" in sys.modules, callable(lowpass))
    """)
    assert out == "[False, False] True True"


def test_prefetch_imports_on_another_thread_and_leaves_errors_to_the_caller(tmp_path, monkeypatch):
    (tmp_path / "colloc_probe_ok.py").write_text("import threading\nTHREAD = threading.current_thread().name\n")
    (tmp_path / "colloc_probe_bad.py").write_text("raise RuntimeError('broken on purpose')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("colloc_probe_ok", "colloc_probe_bad"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    thread = prefetch("colloc_probe_ok", "colloc_probe_bad")
    assert thread is not None and thread.daemon
    thread.join()
    import colloc_probe_ok

    assert colloc_probe_ok.THREAD == "colloc-prefetch"  # imported there, not here
    with pytest.raises(RuntimeError, match="broken on purpose"):
        import colloc_probe_bad  # noqa: F401
    assert prefetch("colloc_probe_ok", "sys") is None  # nothing left to import


_RSS_AFTER_FREE = """
    import numpy as np
    from colloc import cli
    {call}
    def rss():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * 4096 / 2**20
    before = rss()
    a = np.ones(100 * 2**20 // 8)   # 100 MB: mapped on its own by glibc's default rules
    del a
    print(round(rss() - before))
"""


@pytest.mark.skipif(not GLIBC, reason="glibc's allocator only")
def test_the_console_script_keeps_freed_memory_for_its_next_allocation():
    env = {k: v for k, v in os.environ.items() if k != "GLIBC_TUNABLES" and not k.startswith("MALLOC_")}
    kept = int(_run(_RSS_AFTER_FREE.format(call="assert cli._keep_freed_memory()"), env))
    returned = int(_run(_RSS_AFTER_FREE.format(call=""), env))
    assert kept >= 90 and returned <= 10, (kept, returned)
    told = int(_run(_RSS_AFTER_FREE.format(call="assert not cli._keep_freed_memory()"),
                    env | {"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=1000000"}))
    assert told <= 10  # the user's own tuning is left alone


def test_the_allocator_is_left_alone_off_glibc_or_when_tuned(monkeypatch):
    """Wherever the setting does not apply the function says so and calls nothing: off Linux,
    or when the user tuned glibc's allocator through either of its two channels."""
    from colloc import cli

    monkeypatch.delenv("GLIBC_TUNABLES", raising=False)
    for key in [k for k in os.environ if k.startswith("MALLOC_")]:
        monkeypatch.delenv(key)
    monkeypatch.setattr(cli.sys, "platform", "darwin")
    assert cli._keep_freed_memory() is False
    monkeypatch.setattr(cli.sys, "platform", "linux")
    monkeypatch.setenv("MALLOC_ARENA_MAX_", "2")
    assert cli._keep_freed_memory() is False
    monkeypatch.delenv("MALLOC_ARENA_MAX_")
    monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.tcache_count=0")
    assert cli._keep_freed_memory() is False
