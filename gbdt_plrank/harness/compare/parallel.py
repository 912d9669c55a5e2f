"""Trainings of a comparison in parallel on a Dask cluster.

``gbdt-plrank compare CONFIG --workers N`` starts a local cluster of ``N`` single-threaded worker
processes; ``--scheduler ADDRESS`` uses a running cluster. Each training is one task
(:func:`~gbdt_plrank.harness.compare.run.run_task`, a plain function of its settings, so a worker
gives the same result as a sequential run); the client stores each result as soon as it arrives, so
an interrupted comparison resumes exactly as a sequential one does. Every worker must have the same
version of ``gbdt_plrank`` installed (checked first), and the data folders at the same paths
(bundled datasets travel with the package).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from ..._util.compat import require
from ...dask._workers import check_workers
from .run import Done, Executor, Task, run_task

__all__ = ["dask_executor"]

PURPOSE = "running a comparison on Dask (--workers, --scheduler)"


@contextmanager
def dask_executor(
    *, scheduler: str | None = None, workers: int | None = None
) -> Iterator[Executor]:
    """An executor that runs comparison tasks on a Dask cluster.

    Parameters
    ----------
    scheduler : str, optional
        Address of a running scheduler (``"tcp://host:8786"``).
    workers : int, optional
        Start a local cluster of this many single-threaded worker processes instead.

    Yields
    ------
    callable
        ``executor(tasks)``: yields each task's :class:`~gbdt_plrank.harness.compare.run.Done` as
        soon as it finishes. Leaving the context cancels what has not finished and closes the client
        (and the local cluster).
    """
    if (scheduler is None) == (workers is None):
        raise ValueError("give exactly one of scheduler (an address) and workers (a count).")
    distributed = require("distributed", purpose=PURPOSE)
    if workers is not None:
        cluster = distributed.LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
        )
        client = distributed.Client(cluster)
    else:
        cluster, client = None, distributed.Client(scheduler)
    try:
        check_workers(client, ("gbdt_plrank",))

        def execute(tasks: Sequence[Task]) -> Iterator[Done]:
            futures = client.map(run_task, tasks, pure=False)
            try:
                for future in distributed.as_completed(futures):
                    yield future.result()
            finally:
                client.cancel(futures)

        yield execute
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
