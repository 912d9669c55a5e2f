"""Choose PiRank's default Hessian mode by measurement on validation splits.

XGBoost with the PiRank objective at K=5 on the bundled MQ2008 folds, trained and scored by
:func:`benchmarks.hessian_modes.xgb_run` (eta 0.05, depth 6, early stopping after 50 rounds
without gain in validation NDCG@5, LambdaMART beside it); prints validation NDCG@5 at the best
iteration (test beside it), mean over the folds, per Hessian mode and temperature.

    python -m benchmarks.pirank_hessian --folds 1 2 3 --taus 1.0
"""

from __future__ import annotations

import argparse

import numpy as np

from benchmarks.hessian_modes import K, xgb_run
from gbdt_plrank import pirank_objective
from gbdt_plrank._pirank import PIRANK_HESSIANS
from gbdt_plrank.datasets import load_dataset


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--folds", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--taus", type=float, nargs="+", default=[1.0])
    ap.add_argument("--modes", nargs="+", default=list(PIRANK_HESSIANS))
    ap.add_argument("--rounds", type=int, default=500)
    args = ap.parse_args()
    data = {f: load_dataset("mq2008", fold=f) for f in args.folds}
    print(f"| objective | hessian | tau | vali NDCG@{K} (folds {args.folds}) | test | rounds |")
    print("|---|---|---|---|---|---|")
    runs = [("XGBoost rank:ndcg", None, None)] + [
        ("PiRank", mode, tau) for tau in args.taus for mode in args.modes
    ]
    for name, mode, tau in runs:
        rows = [
            xgb_run(
                data[f],
                None if mode is None else pirank_objective(K, tau, hessian=mode),
                0,
                args.rounds,
            )
            for f in args.folds
        ]
        v, t, r = np.mean(rows, axis=0)
        print(
            f"| {name} | {mode or '-'} | {tau or '-'} | {v:.4f} | {t:.4f} | {r:.0f} |", flush=True
        )


if __name__ == "__main__":
    main()
