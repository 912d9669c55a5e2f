"""Choose the default Hessian mode by measurement (docs/research/hessian.md, "Choosing the
Hessian").

Trains XGBoost and LightGBM with the PL-Rank objective under every Hessian mode, next to their own
LambdaMART, on the bundled MQ2008 and MQ2007-agg (Fold1), over several seeds, with the same tree
settings, early stopping on validation NDCG@5. The choice is made on the validation split; the
test split is reported beside it.

    python research/hessian_modes.py --seeds 3 --out benchmarks/results/hessian_modes.md
"""

from __future__ import annotations

import argparse
from pathlib import Path

# gbdt_plrank first: its import sets the OpenMP wait before the boosters load OpenMP.
import gbdt_plrank  # noqa: F401  # isort: skip
import lightgbm as lgb
import numpy as np
import xgboost as xgb

from gbdt_plrank import plrank_objective
from gbdt_plrank.datasets import load_dataset

MODES = ("abs", "clip", "raw", "constant", "denoised")
K = 5


def _ndcg_of(result: str) -> float:
    return float(result.split(":")[-1])


def xgb_run(ds, obj, seed: int, rounds: int) -> tuple[float, float, int]:
    params = {
        "tree_method": "hist",
        "eta": 0.05,
        "max_depth": 6,
        "eval_metric": f"ndcg@{K}",
        "base_score": 0.0,
        "nthread": 2,
        "seed": seed,
    }
    if obj is None:
        params["objective"] = "rank:ndcg"
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
    return (
        _ndcg_of(bst.eval(d["vali"], iteration=it)),
        _ndcg_of(bst.eval(d["test"], iteration=it)),
        it,
    )


def lgb_run(ds, obj, seed: int, rounds: int) -> tuple[float, float, int]:
    params = {
        "objective": obj if obj is not None else "lambdarank",
        "metric": "ndcg",
        "eval_at": [K],
        "learning_rate": 0.05,
        "num_leaves": 31,
        "num_threads": 2,
        "seed": seed,
        "verbosity": -1,
    }
    sets = {
        s: lgb.Dataset(
            getattr(ds, s).X,
            getattr(ds, s).y,
            group=getattr(ds, s).group_sizes,
            free_raw_data=False,
        )
        for s in ("train", "vali", "test")
    }
    bst = lgb.train(
        params,
        sets["train"],
        rounds,
        valid_sets=[sets["vali"], sets["test"]],
        valid_names=["vali", "test"],
        callbacks=[lgb.early_stopping(50, verbose=False)],
    )
    best = bst.best_score
    return best["vali"][f"ndcg@{K}"], best["test"][f"ndcg@{K}"], bst.best_iteration


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=500)
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/hessian_modes.md"))
    args = ap.parse_args()
    rows = []
    for name in ("mq2008", "mq2007-agg"):
        ds = load_dataset(name)
        for booster, run in (("xgb", xgb_run), ("lgb", lgb_run)):
            native = "lambdamart (rank:ndcg)" if booster == "xgb" else "lambdarank"
            for mode in (native, *MODES):
                res = [
                    run(
                        ds,
                        None
                        if mode == native
                        else plrank_objective(K=K, N=100, train_K=K, hessian=mode, seed=s),
                        s,
                        args.rounds,
                    )
                    for s in range(args.seeds)
                ]
                v, t, it = (np.array(x, dtype=float) for x in zip(*res))
                rows.append(
                    f"| {name} | {booster} | {mode} | {v.mean():.4f} ({v.std():.4f}) "
                    f"| {t.mean():.4f} ({t.std():.4f}) | {it.mean():.0f} |"
                )
                print(rows[-1], flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    head = [
        "| dataset | booster | hessian | vali NDCG@5 | test NDCG@5 | best round |",
        "|---|---|---|---|---|---|",
    ]
    args.out.write_text("\n".join(head + rows) + "\n")


if __name__ == "__main__":
    main()
