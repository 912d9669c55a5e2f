"""PiRank's objective time per call next to PL-Rank's objective and one LambdaMART round.

On the MSLR-shaped synthetic data of :mod:`benchmarks.synthetic` (~120 documents per query) and
its long-list variant (~1,000 per query), at K=10: the PiRank objective (tau 1, margins drawn
from a normal law), the PL-Rank objective (N=100) and one XGBoost ``rank:ndcg`` round
(``Booster.update``), medians over ``--reps`` calls. A last table shows the growth with the list
length at a fixed number of documents.

    python benchmarks/pirank_cost.py --threads 2 --reps 5
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np
import xgboost

import gbdt_plrank
from benchmarks import synthetic

K = 10


def median_seconds(step: Callable[[], object], reps: int) -> float:
    step()  # compile or warm the caches
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def compare(data: synthetic.RankingData, threads: int, reps: int) -> list[str]:
    qid = np.repeat(np.arange(data.n_queries), data.sizes)
    dtrain = xgboost.DMatrix(data.X, data.y, qid=qid, nthread=threads)
    margins = np.random.default_rng(0).normal(size=data.n_docs).astype(np.float32)
    pirank = gbdt_plrank.pirank_objective(K, 1.0, n_jobs=threads)
    plrank = gbdt_plrank.plrank_objective(K, 100, n_jobs=threads)
    t_pi = median_seconds(lambda: pirank(margins, dtrain), reps)
    t_pl = median_seconds(lambda: plrank(margins, dtrain), reps)
    params = {"tree_method": "hist", "nthread": threads, "seed": 0, "objective": "rank:ndcg"}
    booster = xgboost.Booster(params, [dtrain])
    rounds = iter(range(10**6))
    t_xgb = median_seconds(lambda: booster.update(dtrain, next(rounds)), reps)
    return [
        f"| {data.name} | PiRank objective (tau 1) | {t_pi:.4f} | {t_pi / t_xgb:.2f} |",
        f"| {data.name} | PL-Rank objective (N=100) | {t_pl:.4f} | {t_pl / t_xgb:.2f} |",
        f"| {data.name} | XGBoost rank:ndcg round | {t_xgb:.4f} | 1.00 |",
    ]


def growth(threads: int, reps: int, n_docs: int = 200_000) -> list[str]:
    rng = np.random.default_rng(0)
    lines = []
    for L in (100, 1000, 10_000, 100_000):
        ptr = np.arange(0, n_docs + 1, L)
        y = rng.integers(0, 5, size=n_docs).astype(np.float64)
        s = rng.normal(size=n_docs)
        t = median_seconds(
            lambda s=s, y=y, ptr=ptr: gbdt_plrank._pirank.pirank_loss_grad_hess(
                s, y, ptr, K=K, tau=1.0, n_jobs=threads
            ),
            reps,
        )
        lines.append(f"| {L} | {n_docs // L} | {t:.4f} | {1e9 * t / n_docs:.0f} |")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--queries", type=int, default=1000)
    args = ap.parse_args()
    print("| data | what | seconds per call | / rank:ndcg round |")
    print("|---|---|---|---|")
    for data in (
        synthetic.mslr_like(n_queries=args.queries),
        synthetic.long_lists(n_queries=max(1, args.queries // 8)),
    ):
        print("\n".join(compare(data, args.threads, args.reps)), flush=True)
    print(f"\nPiRank objective (K={K}), 200,000 documents in queries of equal length L\n")
    print("| L | queries | seconds | ns per document |")
    print("|---|---|---|---|")
    print("\n".join(growth(args.threads, args.reps)))


if __name__ == "__main__":
    main()
