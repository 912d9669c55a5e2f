"""Where the boosting rounds of the README's path go: order against sharpening, per round.

PL-Rank (``plrank_objective(K=10)`` in ``xgboost.train``, eta 0.05, XGBoost's own tree
defaults, 2 threads) is trained for a fixed number of rounds, without early stopping, on the
training split of a dataset's fold. At chosen rounds ``r``, the validation margins of the first
``r`` trees are read, and reported on validation:

- ``ranking``: the NDCG@10 of the ranking by the margins (:func:`gbdt_plrank.ndcg`);
- ``policy``: the Plackett-Luce policy's expected NDCG@10 (``obj.expected_metric``);
- ``standardized``: the expected NDCG@10 of the policy of the standardised margins
  (``obj.standardized_metric``, the README's stopping signal);
- ``spread``: the mean over queries of the standard deviation of a query's margins.

The ranking's metric and the standardised policy's value are blind to the margins' scale; the
policy's own value grows as the margins spread, so the gap between ``policy`` and ``ranking``
is what the rounds spend on sharpening the policy rather than on its order. The last row gives
the round (of those read) at which each signal peaks.

    nice -n 10 python research/rounds.py --data mq2008 mq2007-agg --rounds 700 \\
        --out benchmarks/results/rounds.md
"""

from __future__ import annotations

import argparse
from itertools import pairwise
from pathlib import Path

import numpy as np

from gbdt_plrank import load_dataset, ndcg, plrank_objective

SIGNALS = ("ranking", "policy", "standardized", "spread")


def mean_spread(margins: np.ndarray, group_ptr: np.ndarray) -> float:
    """Mean over queries of the (population) standard deviation of a query's margins."""
    return float(np.mean([margins[a:b].std() for a, b in pairwise(group_ptr)]))


def read_points(rounds: int) -> list[int]:
    """The rounds read: 10, 25, 50, 100, 200, 400, ... below ``rounds``, and ``rounds``."""
    points = [r for r in (1, 5, 10, 25, 50, 100, 200, 400, 700, 1000) if r < rounds]
    return [*points, rounds]


def curve(data: str, *, fold: int, rounds: int, seed: int = 0) -> dict[int, dict[str, float]]:
    """The four signals on validation at each of :func:`read_points` of ``rounds``."""
    import xgboost  # after gbdt_plrank, which sets its threads to wait passively

    ds = load_dataset(data, fold=fold)
    train, vali = ds.train, ds.vali
    obj = plrank_objective(K=10, seed=seed)
    dtrain = xgboost.DMatrix(train.X, train.y, qid=train.qid)
    dvalid = xgboost.DMatrix(vali.X, vali.y, qid=vali.qid)
    params = {
        "eta": 0.05,
        "nthread": 2,
        "base_score": 0.0,
        "disable_default_eval_metric": 1,
        "seed": seed,
    }
    bst = xgboost.train(params, dtrain, num_boost_round=rounds, obj=obj)
    out: dict[int, dict[str, float]] = {}
    for r in read_points(rounds):
        m = bst.predict(dvalid, output_margin=True, iteration_range=(0, r))
        out[r] = {
            "ranking": float(ndcg(vali.y, m, vali.qid, k=10)),
            "policy": float(obj.expected_metric(m, dvalid)[1]),
            "standardized": float(obj.standardized_metric(m, dvalid)[1]),
            "spread": mean_spread(m, vali.group_ptr),
        }
    return out


def table(label: str, values: dict[int, dict[str, float]]) -> list[str]:
    """Markdown rows: one per round read, then the round each signal peaks at."""
    lines = [
        f"### {label}",
        "",
        "| round | ranking NDCG@10 | policy expected NDCG@10 | standardized | spread |",
        "|---|---|---|---|---|",
    ]
    for r, v in values.items():
        lines.append(f"| {r} | " + " | ".join(f"{v[s]:.4f}" for s in SIGNALS) + " |")
    peaks = [max(values, key=lambda r, s=s: values[r][s]) for s in SIGNALS]
    lines += ["| peak at round | " + " | ".join(str(p) for p in peaks) + " |", ""]
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", nargs="+", default=["mq2008", "mq2007-agg"])
    parser.add_argument("--fold", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=700)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    command = (
        "python research/rounds.py --data "
        + " ".join(args.data)
        + f" --fold {args.fold} --rounds {args.rounds} --out {args.out}"
    )
    lines = [
        "# Where the rounds go: validation signals per round",
        "",
        f"Written by `{command}`: PL-Rank, `plrank_objective(K=10)` in `xgboost.train`, "
        "eta 0.05, XGBoost's tree defaults, 2 threads, no early stopping; validation "
        f"split of Fold{args.fold}. spread: mean over queries of the standard deviation "
        "of a query's margins.",
        "",
    ]
    for data in args.data:
        lines += table(f"{data}, Fold{args.fold}", curve(data, fold=args.fold, rounds=args.rounds))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
