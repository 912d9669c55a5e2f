"""Threads: the OpenMP wait policy, and how ``n_jobs`` becomes a thread count.

Every boosting round alternates the booster's OpenMP threads with the objective's Numba
threads. Threads that spin while they wait starve the other runtime (a round 10 to 20 times
slower on a busy 2-core machine), so importing this module sets ``OMP_WAIT_POLICY=PASSIVE``
unless the variable is already set. An OpenMP runtime reads it once, when it is loaded: a
booster imported before the package without the variable keeps spinning, and the import warns.
The package imports this module first.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

import numba
import numpy as np

__all__ = ["booster_threads", "numba_threads", "passive_openmp", "thread_count"]


def passive_openmp() -> None:
    """Set ``OMP_WAIT_POLICY=PASSIVE`` unless it is set; warn if a booster is already loaded."""
    if "OMP_WAIT_POLICY" in os.environ:
        return
    loaded = [name for name in ("xgboost", "lightgbm", "catboost") if name in sys.modules]
    if loaded:
        warnings.warn(
            f"{', '.join(loaded)} was imported before gbdt_plrank without OMP_WAIT_POLICY set, "
            f"so its OpenMP threads spin while the PL-Rank objective runs (rounds measured 10 to "
            f"20 times slower). Import gbdt_plrank first, or set OMP_WAIT_POLICY=PASSIVE in the "
            f"environment.",
            RuntimeWarning,
            stacklevel=4,  # the import of gbdt_plrank
        )
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"


passive_openmp()  # numba loads no OpenMP runtime at import, only at its first parallel call


def thread_count(n_jobs: int | None) -> int:
    """Threads for ``n_jobs``: None is Numba's default, negative values count back from it."""
    limit = numba.config.NUMBA_NUM_THREADS  # type: ignore[attr-defined]  # set by numba at import
    if n_jobs is None:
        return limit
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, (int, np.integer)) or n_jobs == 0:
        raise ValueError(
            f"n_jobs must be None, a positive or a negative integer, but {n_jobs!r} is given."
        )
    return max(1, min(limit, n_jobs if n_jobs > 0 else limit + 1 + n_jobs))


def booster_threads(n_jobs: int | None) -> int | None:
    """``None`` (each library's default), or ``n_jobs`` as a positive :func:`thread_count`."""
    return None if n_jobs is None else thread_count(n_jobs)


@contextmanager
def numba_threads(n_jobs: int | None) -> Iterator[None]:
    """Run the enclosed parallel kernels on :func:`thread_count` threads, then restore."""
    previous = numba.get_num_threads()
    numba.set_num_threads(thread_count(n_jobs))
    try:
        yield
    finally:
        numba.set_num_threads(previous)
