"""The parallel engine: tasks on a Dask client (a local cluster of processes by default), and,
for the few short tasks of one call when no client is given, a pool of local processes forked
from a server that has already imported the library (:func:`process_pool`).

Every worker runs one solve at a time with BLAS/OpenMP threads at 1, so that parallel solves
do not oversubscribe the cores.  Objects that hold CasADi symbols (a
:class:`~colloc.Problem`, a model) are shipped with :func:`pack` and rebuilt with
:func:`unpack`: CasADi pickles symbols only inside its pickle contexts, which keep one
symbol one object across everything pickled together.
"""

from __future__ import annotations

import contextlib
import os
import pickle
from collections.abc import Iterator
from typing import Any

from .errors import OptionsError

__all__ = ["THREAD_ENV", "check_client", "local_client", "one_blas_thread", "pack", "process_pool", "single_threaded",
           "unpack"]

#: Environment of every worker process: one BLAS/OpenMP thread.
THREAD_ENV = {
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "VECLIB_MAXIMUM_THREADS": "1",
    "NUMEXPR_NUM_THREADS": "1",
}


def pack(obj: Any) -> bytes:
    """Pickle ``obj`` (which may hold CasADi SX symbols and functions) for a worker."""
    import casadi as ca
    import cloudpickle

    with ca.global_pickle_context():
        return cloudpickle.dumps(obj)


def unpack(blob: bytes) -> Any:
    """Inverse of :func:`pack`."""
    import casadi as ca

    with ca.global_unpickle_context():
        return pickle.loads(blob)


def single_threaded() -> None:
    """Set this process's thread environment to one BLAS/OpenMP thread (in a worker)."""
    os.environ.update(THREAD_ENV)


@contextlib.contextmanager
def one_blas_thread() -> Iterator[None]:
    """One BLAS/OpenMP thread in this process for the duration (``threadpoolctl``), as the
    ``colloc`` command sets for its whole process, unless the environment chose a thread count
    (any variable of :data:`THREAD_ENV`): then it is left as it is.  On a shared machine
    OpenBLAS's idle threads spin on the other core: the covariance of the 20 s noisy heel-off
    fit took 46.1 s with two threads and 1.4 s with one at load 5.8
    (``benchmarks/heel_off_hybrid.py``, benchmarks/README.md)."""
    if any(k in os.environ for k in THREAD_ENV):
        yield
        return
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        yield


def check_client(client: Any, where: str) -> None:
    """Raise :class:`OptionsError` unless ``client`` is a ``dask.distributed.Client`` (or None)."""
    if client is None:
        return
    from distributed import Client

    if not isinstance(client, Client):
        raise OptionsError(f"{where}(client={client!r}): expected a dask.distributed.Client or None, "
                           f"got {type(client).__name__}")
    if client.status not in ("running", "connecting", "newly-created"):
        raise OptionsError(f"{where}(client=...): the Dask client is {client.status}, not running")


@contextlib.contextmanager
def local_client(client: Any = None, *, tasks: int | None = None, workers: int | None = None,
                 scheduler: str | None = None) -> Iterator[Any]:
    """``client`` itself, a client of the scheduler at ``scheduler`` (an address such as
    ``tcp://10.0.0.5:8786``), or a local cluster made for the duration of the block.

    The local cluster has ``workers`` single-threaded worker processes (default one per
    core, no more than ``tasks``), each with :data:`THREAD_ENV`, and no dashboard; it is
    closed on exit.  Clients made here are closed on exit; a given ``client`` is not.
    """
    if client is not None:
        yield client
        return
    from distributed import Client, LocalCluster

    if scheduler is not None:
        _probe(scheduler)
        try:
            c = Client(scheduler, timeout="20s")
        except (OSError, TimeoutError) as exc:
            raise OptionsError(f"cannot reach the Dask scheduler at {scheduler} ({exc})") from None
        try:
            yield c
        finally:
            c.close()
        return
    if workers is not None:
        workers = int(workers)
        if workers < 1:
            raise OptionsError(f"workers must be >= 1, got {workers}")
    else:
        workers = max(1, os.cpu_count() or 1)
    if tasks is not None:
        workers = max(1, min(workers, int(tasks)))
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                           dashboard_address=None,
                           scheduler_kwargs={"dashboard": False, "dashboard_address": ":0"}, env=dict(THREAD_ENV),
                           silence_logs=40)
    try:
        with Client(cluster) as c:
            yield c
    finally:
        cluster.close()


def _probe(address: str) -> None:
    """Fail at once, with the reason, when a ``tcp://host:port`` scheduler refuses the
    connection (Dask's client would retry for its whole timeout)."""
    import socket
    from urllib.parse import urlsplit

    text = address if "://" in address else f"tcp://{address}"
    parts = urlsplit(text)
    if parts.scheme != "tcp":
        return
    try:
        host, port = parts.hostname, parts.port
    except ValueError:
        raise OptionsError(f"scheduler address {address!r}: the port is not a number") from None
    if not host or port is None:
        raise OptionsError(f"scheduler address {address!r}: expected tcp://HOST:PORT") from None
    try:
        socket.create_connection((host, port), timeout=5.0).close()
    except OSError as exc:
        raise OptionsError(f"cannot reach the Dask scheduler at {address} ({exc.strerror or exc})") from None


@contextlib.contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@contextlib.contextmanager
def process_pool(workers: int, *, preload: tuple[str, ...] = ()) -> Iterator[Any]:
    """A ``concurrent.futures.ProcessPoolExecutor`` of ``workers`` single-threaded processes.

    Where the platform has it (Linux, macOS), the processes are forked from multiprocessing's
    *fork server*, a clean single-threaded process that imports ``preload`` once when it
    starts (it lives as long as this process; later pools reuse it): a worker is ready in
    milliseconds instead of the seconds a fresh interpreter needs to import NumPy, SciPy and
    CasADi, and nothing is forked from this (possibly multi-threaded) process.  Elsewhere
    the workers are spawned.  The fork server and the workers get :data:`THREAD_ENV`.

    Use it for the tasks of one call (several starts); a study of many fits goes to a Dask
    client (:func:`local_client`), which also survives a worker that dies.
    """
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from .fork_main import parent_main

    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
    env = dict(THREAD_ENV)
    if ctx.get_start_method() == "forkserver":
        # the workers do not import this process's main module again (colloc.base.fork_main)
        ctx.set_forkserver_preload(["colloc.base.fork_main", *preload])
        env.update(parent_main(), COLLOC_FORK_SERVER="1")
    with _environment(env):  # inherited by the fork server when it starts here
        pool = ProcessPoolExecutor(max_workers=max(1, int(workers)), mp_context=ctx, initializer=single_threaded)
        try:
            yield pool
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
