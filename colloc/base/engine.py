"""The one parallel engine: tasks on a Dask client (a local cluster of processes by default).

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

__all__ = ["THREAD_ENV", "local_client", "pack", "unpack", "single_threaded", "check_client"]

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
                           scheduler_kwargs={"dashboard": False, "dashboard_address": ":0"}, env=dict(THREAD_ENV), silence_logs=40)
    try:
        with Client(cluster) as c:
            yield c
    finally:
        cluster.close()
