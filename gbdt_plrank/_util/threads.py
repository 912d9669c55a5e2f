"""Threads: the OpenMP wait, and how ``n_jobs`` becomes a thread count.

Every boosting round alternates the booster's OpenMP threads with the objective's Numba
threads. OpenMP threads that spin long while they wait starve the other runtime (GNU libgomp's
default spins about 300,000 times: a round 10 to 20 times slower on a busy 2-core machine), and
threads that sleep at once (``OMP_WAIT_POLICY=PASSIVE``) make every parallel region of the
boosters pay a wake-up (``LGBMRanker`` 2 to 4 times slower on LETOR on an idle machine). So
importing this module sets :data:`OPENMP_WAIT`, a short spin, unless one of :data:`USER_WAIT` is
already set; on a machine busy with other processes ``OMP_WAIT_POLICY=PASSIVE`` is faster, and a
user sets it there (the performance guide's "Threads" has the measurements). An OpenMP runtime
reads them once, when it is loaded: a booster imported before the package without them keeps
its long spin, and the import warns. The package imports this module first.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

import numba
import numpy as np

__all__ = [
    "OPENMP_WAIT",
    "USER_WAIT",
    "booster_threads",
    "numba_threads",
    "short_openmp_wait",
    "thread_count",
]

#: The OpenMP wait the package sets: GNU libgomp's threads (XGBoost's, LightGBM's and Numba's
#: on Linux) spin 1,000 times after a parallel region, then sleep; LLVM's and Intel's runtimes
#: (``KMP_BLOCKTIME``, in ms) sleep at once, as with ``OMP_WAIT_POLICY=PASSIVE``.
OPENMP_WAIT = {"GOMP_SPINCOUNT": "1000", "KMP_BLOCKTIME": "0"}

#: The variables by which a user has chosen a wait: with any of them set, the package sets none.
USER_WAIT = ("OMP_WAIT_POLICY", *OPENMP_WAIT)


def short_openmp_wait() -> None:
    """Set :data:`OPENMP_WAIT` unless a variable of :data:`USER_WAIT` is set; warn if a booster
    is already loaded."""
    if any(name in os.environ for name in USER_WAIT):
        return
    loaded = [name for name in ("xgboost", "lightgbm", "catboost") if name in sys.modules]
    if loaded:
        wait = " ".join(f"{name}={value}" for name, value in OPENMP_WAIT.items())
        warnings.warn(
            f"{', '.join(loaded)} was imported before gbdt_plrank without an OpenMP wait set "
            f"({', '.join(USER_WAIT)}), so its OpenMP threads spin long while the PL-Rank "
            f"objective runs (rounds measured 10 to 20 times slower). Import gbdt_plrank first, "
            f"or set {wait} in the environment.",
            RuntimeWarning,
            stacklevel=4,  # the import of gbdt_plrank
        )
    os.environ.update(OPENMP_WAIT)


short_openmp_wait()  # numba loads no OpenMP runtime at import, only at its first parallel call


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
