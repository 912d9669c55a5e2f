"""Where the exponential race beats the sum tree: the measurement behind ``sampler="auto"``.

For list lengths D and cut-offs K, the CPU time of the estimator (one thread, N=20, random margins)
with the race sampler divided by that with the tree sampler. Values above 1: the tree is faster.
CPU time (``time.process_time``, best of 3) is used so that other load on the machine matters less.

    python benchmarks/sampler_crossover.py --out benchmarks/results/sampler_crossover.md
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numba
import numpy as np

from gbdt_plrank._kernels import plrank, samplers, streams

LENGTHS = (8, 16, 40, 120, 1000)
DOCS = 60_000  # documents per configuration: queries of length D fill this many


def _cpu_seconds(scores, rho, ptr, theta, sampler: int, n_samples: int) -> float:
    grad, hess = np.empty_like(scores), np.empty_like(scores)
    keys = np.arange(ptr.shape[0] - 1, dtype=np.int64)
    args = (sampler, streams.NOISE_INDEPENDENT, grad, hess)
    plrank.estimate_groups(scores, rho, ptr, keys, theta, 2, 0, 0, *args)
    best = np.inf
    for _ in range(3):
        start = time.process_time()
        plrank.estimate_groups(scores, rho, ptr, keys, theta, n_samples, 0, 0, *args)
        best = min(best, time.process_time() - start)
    return best


def crossover(*, n_samples: int = 20) -> list[tuple[int, int, float]]:
    """(D, K, race time / tree time) for each length and a spread of cut-offs."""
    numba.set_num_threads(1)
    rng = np.random.default_rng(0)
    out = []
    for D in LENGTHS:
        n_queries = max(2, DOCS // D)
        ptr = np.arange(0, n_queries * D + 1, D, dtype=np.int64)
        scores = rng.normal(size=ptr[-1])
        rho = rng.random(ptr[-1])
        for K in sorted({1, 5, 10, 25, D // 2, D} & set(range(1, D + 1))):
            theta = 1.0 / np.log2(np.arange(2, K + 2))
            race = _cpu_seconds(scores, rho, ptr, theta, samplers.SAMPLER_RACE, n_samples)
            tree = _cpu_seconds(scores, rho, ptr, theta, samplers.SAMPLER_TREE, n_samples)
            out.append((D, K, race / tree))
            print(f"D={D:5d} K={K:5d} race/tree={race / tree:.2f}", flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/sampler_crossover.md"))
    args = parser.parse_args()
    rows = crossover()
    lines = [
        "CPU time of the race sampler / the tree sampler (one thread, N=20); above 1: tree faster.",
        "`python benchmarks/sampler_crossover.py`",
        "",
        "| D | K | race / tree |",
        "|---|---|---|",
        *(f"| {D} | {K} | {r:.2f} |" for D, K, r in rows),
    ]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
