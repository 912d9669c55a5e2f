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
``first-training``
    The README's first training in this process: ``xgboost.train`` with ``plrank_objective()``
    and ``custom_metric=obj.standardized_metric`` for 2 rounds on MQ2008 Fold1, timed, then the
    same call again; and every kernel it compiled (or loaded from the cache) with its
    specialisations. Run it with ``NUMBA_CACHE_DIR`` as ``compile``.
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
        reps=args.reps,
        budget=args.budget,
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


def compiled_kernels() -> dict[str, list[str]]:
    """Every kernel of the package this process compiled -> the specialisations it compiled
    (not those it loaded from Numba's cache: a kernel the cache gives needs none of its callees)."""
    from numba.core.registry import CPUDispatcher

    kernels = {}
    for name, module in list(sys.modules.items()):
        if not name.startswith("gbdt_plrank._kernels"):
            continue
        for attr, f in vars(module).items():
            if isinstance(f, CPUDispatcher) and f.__module__ == name and f.stats.cache_misses:
                kernels[f"{name}.{attr}"] = [str(sig) for sig in f.stats.cache_misses]
    return kernels


def first_training_probe(args: argparse.Namespace) -> dict[str, object]:
    """Import time and the first and second 2-round ``xgboost.train`` of the README's call."""
    start = time.perf_counter()
    import gbdt_plrank

    imported = time.perf_counter()
    import xgboost

    data = gbdt_plrank.load_dataset("mq2008")
    dtrain = xgboost.DMatrix(data.train.X, data.train.y, qid=data.train.qid)
    dvalid = xgboost.DMatrix(data.vali.X, data.vali.y, qid=data.vali.qid)
    params = {
        "eta": 0.05,
        "max_depth": 6,
        "base_score": 0.0,
        "disable_default_eval_metric": 1,
        "nthread": args.threads,
    }
    seconds = []
    for _ in range(2):
        obj = gbdt_plrank.plrank_objective()
        before = time.perf_counter()
        xgboost.train(
            params,
            dtrain,
            num_boost_round=2,
            obj=obj,
            evals=[(dvalid, "valid")],
            custom_metric=obj.standardized_metric,
            maximize=True,
            verbose_eval=False,
        )
        seconds.append(time.perf_counter() - before)
    kernels = compiled_kernels()
    return {
        "import_s": imported - start,
        "first_training_s": seconds[0],
        "second_training_s": seconds[1],
        "kernels": kernels,
        "specialisations": sum(len(v) for v in kernels.values()),
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
    first = sub.add_parser("first-training", help="first xgboost.train (set NUMBA_CACHE_DIR)")
    first.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    probes = {
        "memory": memory_probe,
        "compile": compile_probe,
        "first-training": first_training_probe,
    }
    result = probes[args.kind](args)
    sys.stdout.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
