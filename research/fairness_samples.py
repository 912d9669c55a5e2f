"""How many rankings per query a group-fair ranker needs: N = 50 against the default (100).

On an MQ2008 fold, as a user calls it: ``PLRankRanker(K=10, n_estimators=300,
learning_rate=0.05, fairness="group-disparity", fairness_weight=w)`` with the protected group of
``configs/fairness_group.toml`` (PageRank, LETOR 4.0 feature 41, below its median on the
training split), once at ``N=50`` and once at the defaults (``N="auto"``, 100 with fairness).
Each is measured on the test queries with a relevant document as trained and sharpened or
flattened by temperatures of its raw margins: the policy's expected NDCG@10 and the group
disparity of its expected exposure (``--samples`` rankings per query).

    python -m research.fairness_samples --out benchmarks/results/fairness_samples.md
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

import gbdt_plrank  # noqa: F401  (first: sets the OpenMP wait before a booster loads)
from benchmarks.harness import command_line
from gbdt_plrank import PLRankRanker, metrics
from gbdt_plrank.datasets import Split, load_dataset

FEATURE = 41  # 1-based, as in configs/fairness_group.toml


def _column(split: Split) -> np.ndarray:
    values = split.X[:, FEATURE - 1]
    return np.asarray(values.todense() if hasattr(values, "todense") else values).ravel()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="mq2008", help="a bundled dataset or a data folder")
    parser.add_argument("--fold", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--weight", type=float, default=3.0)
    parser.add_argument("--temperatures", default="0.05,0.1")
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/fairness_samples.md"))
    args = parser.parse_args(argv)
    data = load_dataset(args.data, fold=args.fold)
    threshold = np.quantile(_column(data.train), 0.5)
    groups = {
        name: (_column(getattr(data, name)) < threshold).astype(int) for name in ("train", "test")
    }
    test = data.test
    keep = np.isin(test.qid, np.unique(test.qid[test.y > 0]))
    X, y, qid, g = test.X[keep], test.y[keep], test.qid[keep], groups["test"][keep]
    rows = []
    for label, options in (("N = 50", {"N": 50}), ('N = "auto" (default)', {})):
        ranker = PLRankRanker(
            K=10,
            n_estimators=args.rounds,
            learning_rate=0.05,
            fairness="group-disparity",
            fairness_weight=args.weight,
            random_state=0,
            **options,
        )
        ranker.fit(data.train.X, data.train.y, group=data.train.qid, item_groups=groups["train"])
        n = ranker._options().training_N
        for t in ("as trained", *args.temperatures.split(",")):
            temperature = 1.0 if t == "as trained" else float(t)
            kw = {"n_samples": args.samples, "random_state": 0, "temperature": temperature}
            exposure = ranker.expected_exposure(X, group=qid, **kw)
            ndcg = ranker.expected_metric(X, y, group=qid, **kw).mean
            gd = metrics.group_disparity(y, exposure, qid, g)
            rows.append(f"| {label} | {n} | {t} | {ndcg:.4f} | {gd:.4f} |")
            print(rows[-1], flush=True)
    command = command_line("python -m research.fairness_samples", argv)
    text = "\n".join(
        [
            "# Rankings per query of a group-fair ranker",
            "",
            f"`{command}`",
            "",
            __doc__.split("\n\n")[1].replace("\n", " "),
            "",
            f"{args.data}, fold {args.fold}, {args.rounds} rounds, "
            f"fairness_weight {args.weight:g}, "
            f"{int(keep.sum())} test rows of {np.unique(qid).size} queries with a relevant "
            f"document, seed 0; temperatures divide the raw margins.",
            "",
            "| N | rankings per query | temperature | expected NDCG@10 | group disparity |",
            "|---|---|---|---|---|",
            *rows,
            "",
        ]
    )
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
