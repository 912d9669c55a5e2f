"""The kernels of several git revisions side by side: seconds per call and their ratios, one run.

Each revision's kernels' folder ``gbdt_plrank/_kernels/`` (whose modules import only NumPy, Numba
and one another), or the single file ``gbdt_plrank/_kernels.py`` of a revision from before the
folder, is loaded as a package of its own, and ``estimate_groups`` of every revision's estimator
(``plrank.py`` in the folder) is timed on the same MSLR-shaped data
(:func:`benchmarks.synthetic.mslr_like`; the NDCG@K rewards are computed once, outside the timed
calls), the revisions in turns within each repetition so that the machine's drift affects them
alike. The outputs are compared too: ``identical`` says whether
a revision returns the first revision's gradient and Hessian bit for bit.

    python benchmarks/kernel_revisions.py REV [REV ...] [--K 10 20] [--N 100] [--threads 2]
        [--clock wall|cpu] [--data mslr|long] [--length L]

``WORKTREE`` as a revision is the folder as it is on disk, and the path of an existing folder or
file is that folder, or that file as the estimator's module (a variant being tried).
``--clock cpu`` times the process's CPU seconds instead of the wall clock: with one thread, the
work itself, whatever else the machine runs. ``--data long`` takes
the ~1,000-document lists of :func:`benchmarks.synthetic.long_lists` instead, ``--length L``
queries of exactly L documents (400,000 documents in all, at least one query).
"""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys
import tempfile
import time
import uuid
from functools import partial
from pathlib import Path
from types import ModuleType

import numba
import numpy as np

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks import synthetic  # noqa: E402
from gbdt_plrank._ranking_metric import RankingMetric  # noqa: E402

KERNELS = "gbdt_plrank/_kernels"
SINGLE_FILE = "gbdt_plrank/_kernels.py"
ESTIMATOR = "plrank"


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, check=True, capture_output=True, text=True
    ).stdout


def kernel_sources(revision: str, repo: Path = REPO) -> dict[str, str]:
    """The kernel modules of ``revision`` of ``repo`` by file name, the estimator's as
    ``plrank.py``.

    The kernels' folder first; a revision without it has the estimator in one file.
    """
    path = repo / KERNELS if revision == "WORKTREE" else Path(revision)
    if path.is_dir():
        return {p.name: p.read_text() for p in sorted(path.glob("*.py"))}
    if path.is_file():
        return {f"{ESTIMATOR}.py": path.read_text()}
    listing = _git(repo, "ls-tree", "--name-only", revision, f"{KERNELS}/").split()
    files = [f for f in listing if f.endswith(".py")]
    if files:
        return {Path(f).name: _git(repo, "show", f"{revision}:{f}") for f in files}
    return {f"{ESTIMATOR}.py": _git(repo, "show", f"{revision}:{SINGLE_FILE}")}


def load_kernels(revision: str, folder: Path) -> ModuleType:
    """The estimator's kernels of ``revision`` (``WORKTREE``: on disk; a path: that folder or
    file), loaded from a package of their own under ``folder``, as a module."""
    name = f"kernels_{uuid.uuid4().hex}"  # a new package each time: none is taken from sys.modules
    package = folder / name
    package.mkdir()
    sources = {"__init__.py": "", **kernel_sources(revision)}
    for file, source in sources.items():
        (package / file).write_text(source)
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
    return importlib.import_module(f"{name}.{ESTIMATOR}")


#: The modules of a revision that may define the codes ``estimate_groups`` takes: the
#: estimator's own, or since the estimator's kernels were split, the samplers' and the streams'.
CODE_MODULES = (ESTIMATOR, "samplers", "streams")


def kernel_code(module: ModuleType, name: str) -> int | None:
    """The code ``name`` (``SAMPLER_TREE``, ``NOISE_INDEPENDENT``, ...) of the revision whose
    estimator's module is ``module`` (:func:`load_kernels`), or None where it has none."""
    for sibling in CODE_MODULES:
        try:
            found = importlib.import_module(f"{module.__package__}.{sibling}")
        except ModuleNotFoundError:
            continue
        if hasattr(found, name):
            return getattr(found, name)
    return None


def estimate(
    module: ModuleType, inputs: tuple[np.ndarray, ...], N: int, sampler: str
) -> tuple[np.ndarray, np.ndarray]:
    """``module.estimate_groups`` on ``inputs`` = (scores, rho, group_ptr, keys, theta), round 1
    of seed 0: (grad, hess)."""
    scores = inputs[0]
    codes = {
        name: kernel_code(module, f"SAMPLER_{name.upper()}") for name in ("auto", "tree", "race")
    }
    grad, hess = np.empty_like(scores), np.empty_like(scores)
    # revisions with the noise option take its code (independent: the draws of those before)
    independent = kernel_code(module, "NOISE_INDEPENDENT")
    noise = () if independent is None else (independent,)
    module.estimate_groups(*inputs, N, 0, 1, codes[sampler], *noise, grad, hess)
    return grad, hess


CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}
DATA = {"mslr": synthetic.mslr_like, "long": synthetic.long_lists}


def compare(
    revisions: list[str],
    *,
    Ks: list[int],
    N: int,
    queries: int,
    reps: int,
    sampler: str,
    clock: str = "wall",
    data: str = "mslr",
    length: int | None = None,
) -> list[dict[str, object]]:
    """One row per (K, revision): median seconds, ratio to the first revision, identical output."""
    if length is None:
        data = DATA[data](n_queries=queries, features=False)
    else:
        data = synthetic.make_dataset(
            n_queries=max(1, 400_000 // length),
            mean_docs=float(length),
            sigma=1e-9,
            max_docs=length,
            features=False,
        )
    scores = np.random.default_rng(0).normal(size=data.n_docs)
    ptr = data.group_ptr
    keys = np.arange(ptr.shape[0] - 1, dtype=np.int64)
    rows = []
    with tempfile.TemporaryDirectory(prefix="plrank-kernels-") as tmp:
        modules = {rev: load_kernels(rev, Path(tmp)) for rev in revisions}
        for K in Ks:
            metric = RankingMetric("ndcg", K, "exp")
            inputs = (scores, metric.rewards(data.y, ptr), ptr, keys, metric.theta(ptr))
            calls = {rev: partial(estimate, m, inputs, N, sampler) for rev, m in modules.items()}
            first = calls[revisions[0]]()
            identical = {
                rev: all(np.array_equal(a, b) for a, b in zip(call(), first))
                for rev, call in calls.items()
            }
            times: dict[str, list[float]] = {rev: [] for rev in revisions}
            now = CLOCKS[clock]
            for _ in range(reps):
                for rev, call in calls.items():
                    start = now()
                    call()
                    times[rev].append(now() - start)
            base = float(np.median(times[revisions[0]]))
            rows += [
                {
                    "K": K,
                    "revision": rev,
                    "seconds": float(np.median(times[rev])),
                    "ratio": float(np.median(times[rev])) / base,
                    "identical": identical[rev],
                }
                for rev in revisions
            ]
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("revisions", nargs="+")
    parser.add_argument("--K", type=int, nargs="+", default=[10, 20])
    parser.add_argument("--N", type=int, default=100)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--reps", type=int, default=9)
    parser.add_argument("--sampler", choices=("auto", "tree", "race"), default="auto")
    parser.add_argument("--clock", choices=tuple(CLOCKS), default="wall")
    parser.add_argument("--data", choices=tuple(DATA), default="mslr")
    parser.add_argument("--length", type=int, default=None)
    args = parser.parse_args(argv)
    numba.set_num_threads(args.threads)
    rows = compare(
        args.revisions,
        Ks=args.K,
        N=args.N,
        queries=args.queries,
        reps=args.reps,
        sampler=args.sampler,
        clock=args.clock,
        data=args.data,
        length=args.length,
    )
    shape = (
        f"{args.data} data, {args.queries} queries"
        if args.length is None
        else (f"queries of {args.length} documents")
    )
    print(
        f"{shape}, N={args.N}, threads={args.threads}, "
        f"sampler={args.sampler}, {args.clock} clock, median of {args.reps} calls per revision"
    )
    for r in rows:
        print(
            f"K={r['K']:<3} {r['revision']:<12} {r['seconds'] * 1e3:8.1f} ms  "
            f"ratio {r['ratio']:5.2f}  identical {r['identical']}"
        )


if __name__ == "__main__":
    main()
