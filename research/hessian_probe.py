"""What the PL-Rank Hessian estimate carries: its ratio to the gradient, and its scale.

Two measurements behind docs/research/hessian.md, on the bundled data's Fold1 training
splits (queries with a relevant document):

1. The ratio h/g of the Hessian diagonal to the gradient, per document, with N = 20,000 samples
   (so that both are close to their exact values), at equal margins (round 0) and at margins of
   a trained model's spread (random normal margins of scale 1 and 2, shifted by 0.5 per label
   grade), by label. At K = 1 the exact ratio is 1 - 2 p_d (tests/test_estimator.py); the
   question is how close longer rankings of real queries stay to it.
2. The booster-side scale: the sum of Hessians that XGBoost sees at the root (its ``cover``) per
   training row in round 1 and round 20, and the mean |leaf value|, for LambdaMART
   (``rank:ndcg``), PL-Rank ``abs`` and PL-Rank ``constant`` (all ones), under the comparison's
   tree settings (eta 0.05, depth 6, min_child_weight 0.1, lambda 1).

    python -m research.hessian_probe --out benchmarks/results/hessian_probe.md
"""

from __future__ import annotations

import argparse
from pathlib import Path

# gbdt_plrank first: its import sets the OpenMP wait before xgboost loads OpenMP.
import gbdt_plrank  # noqa: F401  # isort: skip
import numpy as np
import xgboost as xgb

from benchmarks.harness import command_line
from gbdt_plrank import plrank_grad_hess, plrank_objective
from gbdt_plrank.cli._argtypes import text_list
from gbdt_plrank.datasets import load_dataset
from gbdt_plrank.harness.settings import TreeSettings

K = 5
DATASETS = ("mq2008", "mq2007-agg")
#: Rankings per query of the ratio's estimates: enough for both to be close to exact.
SAMPLES = 20_000
#: The harness's shared trees (its :class:`~gbdt_plrank.harness.settings.TreeSettings`) on one
#: thread, as XGBoost parameters.
TREES = {**TreeSettings(n_jobs=1).native_params("xgboost"), "tree_method": "hist"}


def ratio_rows(data: str, samples: int = SAMPLES) -> list[str]:
    """Median and quartiles of h/g by label, and the share of documents where h and g agree."""
    train = load_dataset(data, fold=1).train
    ptr = train.group_ptr
    rng = np.random.default_rng(0)
    rows = []
    for spread in (0.0, 1.0, 2.0):
        margins = spread * (rng.normal(size=train.y.shape[0]) + 0.5 * train.y)
        g, h = plrank_grad_hess(margins, train.y, ptr, K=K, N=samples, hessian="raw", seed=1)
        for label in np.unique(train.y).astype(int):
            rows_of = (g != 0) & (train.y == label)
            r = h[rows_of] / g[rows_of]
            q1, med, q3 = np.percentile(r, [25, 50, 75])
            agree = np.mean(np.sign(h[rows_of]) == np.sign(g[rows_of]))
            rows.append(
                f"| {data} | {spread:g} | {label} | {rows_of.sum()} | "
                f"{med:.2f} [{q1:.2f}, {q3:.2f}] | {agree:.2f} |"
            )
    return rows


def scale_rows(data: str) -> list[str]:
    """Root Hessian sum per row (rounds 1 and 20) and mean |leaf| (round 20) per objective."""
    train = load_dataset(data, fold=1).train
    dtrain = xgb.DMatrix(train.X, train.y, qid=train.qid)
    rows = []
    for name, obj, extra in (
        ("LambdaMART (rank:ndcg)", None, {"objective": "rank:ndcg"}),
        (
            "PL-Rank abs",
            plrank_objective(K=K, train_K=K, hessian="abs", n_jobs=1),
            {"base_score": 0.0},
        ),
        (
            "PL-Rank constant 1",
            plrank_objective(K=K, train_K=K, hessian="constant", n_jobs=1),
            {"base_score": 0.0},
        ),
    ):
        bst = xgb.train({**TREES, **extra}, dtrain, 20, obj=obj)
        trees = bst.get_dump(with_stats=True)
        cover = [float(t.split("cover=")[1].split(",")[0].split("\n")[0]) for t in trees]
        leaves = [
            float(line.split("leaf=")[1].split(",")[0])
            for line in trees[19].splitlines()
            if "leaf=" in line
        ]
        n = train.y.shape[0]
        rows.append(
            f"| {data} | {name} | {cover[0] / n:.4f} | {cover[19] / n:.4f} | "
            f"{np.mean(np.abs(leaves)):.5f} |"
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--data",
        type=text_list,
        default=list(DATASETS),
        help="datasets or LETOR folders (their Fold1)",
    )
    parser.add_argument(
        "--samples", type=int, default=SAMPLES, help="rankings per query of the ratio's estimates"
    )
    parser.add_argument("--out", default="benchmarks/results/hessian_probe.md")
    args = parser.parse_args()
    lines = [
        "# What the PL-Rank Hessian estimate carries",
        "",
        "Command: `" + command_line("python -m research.hessian_probe") + "`",
        "",
        f"## Ratio of the Hessian diagonal to the gradient (K={K}, N={args.samples:,}, Fold1 "
        "training documents of queries with a relevant document)",
        "",
        "Margins: spread x (normal noise + 0.5 x label). Median [quartiles] of h/g per document, "
        "and the share of documents where h and g have the same sign (the exact ratio at K=1 "
        "is 1 - 2p).",
        "",
        "| data | spread | label | documents | h/g | same sign |",
        "|---|---|---|---|---|---|",
    ]
    for data in args.data:
        lines += ratio_rows(data, args.samples)
    lines += [
        "",
        "## The scale XGBoost sees (Fold1 training split, eta 0.05, depth 6, "
        "min_child_weight 0.1, lambda 1)",
        "",
        "| data | objective | root Hessian sum per row, round 1 | round 20 | mean abs leaf, "
        "round 20 |",
        "|---|---|---|---|---|",
    ]
    for data in args.data:
        lines += scale_rows(data)
    text = "\n".join(lines) + "\n"
    Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
