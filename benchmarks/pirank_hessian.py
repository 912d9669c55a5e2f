"""Choose PiRank's default Hessian mode (and temperature) by measurement on validation splits.

XGBoost (eta 0.05, depth 6, early stopping after 50 rounds without gain in validation NDCG@10)
with the PiRank objective at K=10 on the bundled MQ2008 folds; prints validation NDCG@10 at the
best iteration (test beside it) per mode and temperature.

    python benchmarks/pirank_hessian.py --folds 1 2 3 --taus 0.1 1.0
"""

from __future__ import annotations

import argparse

import numpy as np
import xgboost as xgb

from gbdt_plrank import pirank_objective
from gbdt_plrank.datasets import load_dataset

MODES = ("bound", "abs", "clip", "constant")
K = 10


def run(ds, obj, rounds: int) -> tuple[float, float, int]:
    params = {
        "tree_method": "hist",
        "eta": 0.05,
        "max_depth": 6,
        "eval_metric": f"ndcg@{K}",
        "base_score": 0.0,
        "nthread": 2,
        "seed": 0,
    }
    d = {
        s: xgb.DMatrix(getattr(ds, s).X, getattr(ds, s).y, qid=getattr(ds, s).qid)
        for s in ("train", "vali", "test")
    }
    bst = xgb.train(
        params,
        d["train"],
        rounds,
        obj=obj,
        evals=[(d["vali"], "vali")],
        early_stopping_rounds=50,
        verbose_eval=False,
    )
    it = bst.best_iteration
    vali, test = (float(bst.eval(d[s], iteration=it).split(":")[-1]) for s in ("vali", "test"))
    return vali, test, it


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--folds", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--taus", type=float, nargs="+", default=[0.1, 1.0])
    ap.add_argument("--modes", nargs="+", default=list(MODES))
    ap.add_argument("--rounds", type=int, default=500)
    args = ap.parse_args()
    data = {f: load_dataset("mq2008", fold=f) for f in args.folds}
    print(f"| hessian | tau | vali NDCG@{K} (mean over folds {args.folds}) | test | rounds |")
    print("|---|---|---|---|---|")
    for tau in args.taus:
        for mode in args.modes:
            rows = [
                run(data[f], pirank_objective(K=K, tau=tau, hessian=mode), args.rounds)
                for f in args.folds
            ]
            v, t, r = np.mean(rows, axis=0)
            print(f"| {mode} | {tau:g} | {v:.4f} | {t:.4f} | {r:.0f} |", flush=True)


if __name__ == "__main__":
    main()
