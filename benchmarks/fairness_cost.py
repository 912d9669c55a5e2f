"""What a fairness objective costs per round against the relevance objective, interleaved.

For each dataset and fairness loss, two XGBoost boosters train side by side, one with
``plrank_objective(K, N)`` and one with the same plus ``fairness=<loss>``; every round calls both
objectives on the same margins (the objective alone), then updates both boosters (a full round),
alternating the two so that the machine's load hits both alike. Medians over the rounds, and
their ratios. ``group-disparity`` takes as item groups the rows whose feature ``--group-feature``
(0-based column; LETOR 4.0 feature 41, PageRank, is column 40) lies below its training median.
A data name ending in ``:relevant`` keeps only the training queries with a relevant document:
the relevance objective skips the others, whose only gradient is the fairness term, so this row
is the cost of the same queries' work (MQ2008: 28% of its training queries have none).

    nice -n 10 python benchmarks/fairness_cost.py [--rounds 15] [--threads 1] [--data ...]
        [--fairness expected-exposure,disparity,group-disparity] [--group-feature 40]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import gbdt_plrank  # isort: skip  (sets the OpenMP wait before xgboost loads)
import numpy as np
import xgboost

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks import synthetic  # noqa: E402
from gbdt_plrank.harness.data import without_empty_queries  # noqa: E402

#: Suffix of a data name that keeps only the training queries with a relevant document, the
#: queries both objectives work on (the relevance objective skips the others).
RELEVANT = ":relevant"


def _data(name: str, column: int) -> tuple[xgboost.DMatrix, np.ndarray]:
    """The training DMatrix and the item groups (feature ``column`` below its median)."""
    if name == "mslr-like":
        data = synthetic.mslr_like(n_queries=300)
        dtrain, X = data.dmatrix(), np.asarray(data.X)
    else:
        train = gbdt_plrank.load_dataset(name.removesuffix(RELEVANT)).train
        if name.endswith(RELEVANT):
            train = without_empty_queries(train)
        dtrain = xgboost.DMatrix(train.X, train.y, qid=train.qid)
        X = train.X.toarray() if hasattr(train.X, "toarray") else np.asarray(train.X)
    feature = X[:, min(column, X.shape[1] - 1)]
    return dtrain, (feature < np.median(feature)).astype(np.int64)


def measure(
    name: str, fairness: str, *, K: int, N: int, rounds: int, threads: int, column: int
) -> str:
    dtrain, groups = _data(name, column)
    params = {
        "tree_method": "hist",
        "nthread": threads,
        "seed": 0,
        "base_score": 0.0,
        "eval_metric": f"ndcg@{K}",
    }
    item_groups = groups if fairness == "group-disparity" else None
    objectives = {
        "relevance": gbdt_plrank.plrank_objective(K, N, train_K=K, n_jobs=threads),
        "fairness": gbdt_plrank.plrank_objective(
            K, N, n_jobs=threads, fairness=fairness, item_groups=item_groups
        ),
    }
    boosters = {k: xgboost.Booster(params, [dtrain]) for k in objectives}
    for k, obj in objectives.items():
        boosters[k].update(dtrain, 0, fobj=obj)  # compile and sketch the quantiles
    objective_times = {k: [] for k in objectives}
    round_times = {k: [] for k in objectives}
    preds = boosters["relevance"].predict(dtrain, output_margin=True)
    for i in range(1, rounds + 1):
        for k, obj in objectives.items():
            start = time.perf_counter()
            obj(preds, dtrain)
            objective_times[k].append(time.perf_counter() - start)
            start = time.perf_counter()
            boosters[k].update(dtrain, i, fobj=obj)
            round_times[k].append(time.perf_counter() - start)
    o = {k: float(np.median(v)) for k, v in objective_times.items()}
    r = {k: float(np.median(v)) for k, v in round_times.items()}
    return (
        f"| {name} | {fairness} | {1e3 * o['relevance']:.1f} | {1e3 * o['fairness']:.1f} | "
        f"{o['fairness'] / o['relevance']:.2f} | {1e3 * r['relevance']:.1f} | "
        f"{1e3 * r['fairness']:.1f} | {r['fairness'] / r['relevance']:.2f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--data", default="mq2008,mq2008:relevant,mq2007-agg,mslr-like")
    parser.add_argument("--fairness", default="expected-exposure,disparity,group-disparity")
    parser.add_argument("--group-feature", type=int, default=40)
    args = parser.parse_args()
    print(
        "| data (train) | fairness | relevance objective ms | fairness objective ms | ratio | "
        "relevance round ms | fairness round ms | ratio |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name in args.data.split(","):
        for fairness in args.fairness.split(","):
            print(
                measure(
                    name,
                    fairness,
                    K=10,
                    N=100,
                    rounds=args.rounds,
                    threads=args.threads,
                    column=args.group_feature,
                ),
                flush=True,
            )


if __name__ == "__main__":
    main()
