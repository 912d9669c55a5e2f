"""Measurements that need a fresh process: peak memory per configuration, and compile time.

Run by :mod:`benchmarks.bench_round` as ``python -m benchmarks.probes KIND ...`` (from the
repository root); each run prints one JSON object on its last line of output.

``memory``
    One estimator configuration (method, dataset, K, N, threads): the kernels are compiled (or
    loaded from Numba's cache) on a tiny input, the peak-RSS mark is reset
    (``/proc/self/clear_refs``), one call is made on the full data, and the peak resident set size
    is read back (``VmHWM``): ``peak - rss_before`` is the memory the call itself needed, including
    Numba's allocations that ``tracemalloc`` cannot see. Then the call is timed.
``compile``
    Import time and first-call time of the library in this process; run it with
    ``NUMBA_CACHE_DIR`` set to an empty directory (compilation) and again with the same
    directory (Numba's on-disk cache).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import numpy as np

Estimator = Callable[[np.ndarray, np.ndarray, np.ndarray, int, int, int], object]

#: Estimators that the benchmarks time, by name.
METHODS = ("library-auto", "library-tree", "library-race", "plrank3", "plrank2")


def _baselines() -> ModuleType:
    """The published algorithms the library is timed against: ``tests/baselines.py``, where the
    tests check them against the library."""
    spec = importlib.util.spec_from_file_location(
        "baselines", Path(__file__).resolve().parents[1] / "tests" / "baselines.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules["baselines"] = module  # Numba's cache finds the module's functions by name
    spec.loader.exec_module(module)
    return module


def estimator(method: str) -> Estimator:
    """``f(scores, labels, group_ptr, K, N, n_jobs)`` for one of :data:`METHODS`."""
    import gbdt_plrank

    baselines = _baselines()
    if method.startswith("library-"):
        sampler = method.split("-", 1)[1]

        def library(s: np.ndarray, y: np.ndarray, p: np.ndarray, K: int, N: int, j: int) -> object:
            return gbdt_plrank.plrank_grad_hess(
                s, y, p, K=K, N=N, hessian="raw", sampler=sampler, n_jobs=j
            )

        return library
    if method == "plrank3":
        return lambda s, y, p, K, N, j: baselines.plrank3_grad_hess(s, y, p, K=K, N=N, n_jobs=j)
    if method == "plrank2":
        return lambda s, y, p, K, N, j: baselines.plrank2_grad(s, y, p, K=K, N=N, n_jobs=j)
    raise ValueError(f"method must be one of {METHODS}, but {method!r} is given.")


def _status_kb(field: str) -> int | None:
    """A ``kB`` field of ``/proc/self/status`` (Linux), or None."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def _reset_peak() -> bool:
    """Reset the peak-RSS mark to the current RSS (Linux >= 4.0); False when not possible."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def _tiny() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.normal(size=40), rng.integers(0, 5, size=40).astype(float), np.array([0, 25, 40])


def memory_probe(args: argparse.Namespace) -> dict[str, object]:
    """Peak memory of one call and its median time, for one configuration."""
    from benchmarks import harness, synthetic

    maker = synthetic.mslr_like if args.dataset == "mslr" else synthetic.long_lists
    data = maker(n_queries=args.queries, features=False)
    scores = np.random.default_rng(2).normal(size=data.n_docs)
    fn = estimator(args.method)
    fn(*_tiny(), args.K, 2, args.n_jobs)
    rss_before = _status_kb("VmRSS")
    exact = _reset_peak()
    fn(scores, data.y, data.group_ptr, args.K, args.N, args.n_jobs)
    peak = _status_kb("VmHWM")
    if peak is None:  # no /proc: the whole-life peak (on Linux it even survives exec)
        peak, exact = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, False
    timing = harness.measure(
        lambda: fn(scores, data.y, data.group_ptr, args.K, args.N, args.n_jobs),
        reps=args.reps, budget=args.budget,
    )
    return {
        "method": args.method,
        "dataset": data.name,
        "K": args.K,
        "N": args.N,
        "n_jobs": args.n_jobs,
        "rss_before_kb": rss_before,
        "peak_kb": peak,
        "peak_increase_kb": None if (peak is None or rss_before is None) else peak - rss_before,
        "peak_reset": exact,
        "input_kb": (scores.nbytes + data.y.nbytes + data.group_ptr.nbytes) // 1024,
        "timing": timing.as_dict(),
    }


def compile_probe(args: argparse.Namespace) -> dict[str, object]:
    """Import and first-call times of the library in this (fresh) process."""
    import os

    start = time.perf_counter()
    import gbdt_plrank

    imported = time.perf_counter()
    scores, labels, ptr = _tiny()
    gbdt_plrank.plrank_grad_hess(scores, labels, ptr, K=5, N=4)
    first = time.perf_counter()
    gbdt_plrank.plrank_grad_hess(scores, labels, ptr, K=5, N=4)
    second = time.perf_counter()
    rankings = np.array([[0, 1, 2, 3, 4], [4, 3, 2, 1, 0]])
    gbdt_plrank.plrank_grad_hess_from_rankings(scores[:25], labels[:25], rankings, K=5)
    from_rankings = time.perf_counter()
    cache_dir = os.environ.get("NUMBA_CACHE_DIR")
    n_files = sum(1 for p in Path(cache_dir).rglob("*") if p.is_file()) if cache_dir else None
    return {
        "import_s": imported - start,
        "first_call_s": first - imported,
        "second_call_s": second - first,
        "first_from_rankings_s": from_rankings - second,
        "cache_files_after": n_files,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="kind", required=True)
    mem = sub.add_parser("memory", help="peak memory and time of one configuration")
    mem.add_argument("--method", choices=METHODS, required=True)
    mem.add_argument("--dataset", choices=("mslr", "long"), default="mslr")
    mem.add_argument("--queries", type=int, default=2000)
    mem.add_argument("--K", type=int, default=10)
    mem.add_argument("--N", type=int, default=100)
    mem.add_argument("--n-jobs", type=int, default=1)
    mem.add_argument("--reps", type=int, default=5)
    mem.add_argument("--budget", type=float, default=3.0)
    sub.add_parser("compile", help="import and first-call time (set NUMBA_CACHE_DIR)")
    args = parser.parse_args(argv)
    result = memory_probe(args) if args.kind == "memory" else compile_probe(args)
    sys.stdout.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
