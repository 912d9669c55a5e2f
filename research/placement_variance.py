"""The variance of a Plackett-Luce policy's exposure: placement probabilities against counting.

Both estimates are unbiased (``tests/test_placement_exposure.py``). Their variances:

1. exactly, by enumerating every ranking of random small queries (2 to 6 documents, every
   cut-off, rank weights ``(1/k)**eta``): per row, the variance of one ranking's estimate,
   relative to the squared exposure;
2. on MQ2008 Fold1's test queries, for the clicks experiment's logger (``configs/clicks-mq2008
   .toml``'s ``_Fold``: a PL-Rank model on 20 labelled queries, its top 5 seen with probability
   ``1/k``): the spread over ``--repeats`` independent estimates from ``--samples`` rankings
   per query each, as the logger's propensities are computed.

    python research/placement_variance.py configs/clicks-mq2008.toml --samples 1000 \\
        --repeats 30 --out benchmarks/results/placement_variance.md
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import naive

from gbdt_plrank.clicks import pbm_position_bias
from gbdt_plrank.harness.clicks import load_clicks_config
from gbdt_plrank.harness.clicks.run import _Fold
from gbdt_plrank.harness.data import load


def exact(n_queries: int, seed: int) -> dict[str, float]:
    """Per-row exact relative variances of both estimates over random small queries."""
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(n_queries):
        D = int(rng.integers(2, 7))
        K = int(rng.integers(1, D + 1))
        scores = rng.normal(scale=float(rng.choice([0.5, 1.0, 2.0, 4.0])), size=D)
        theta = pbm_position_bias(K, eta=float(rng.choice([0.5, 1.0, 2.0])))
        moments = {}
        for name, f in (("count", naive.counted_exposure), ("placement", naive.placement_exposure)):
            mean = second = 0.0
            for ranking, p in naive.partial_rankings(scores, K):
                v = f(scores, theta, ranking)
                mean, second = mean + p * v, second + p * v**2
            moments[name] = (mean, np.maximum(second - mean**2, 0.0))
        E = moments["count"][0]
        for d in range(D):
            rows.append(
                (
                    D,
                    K,
                    moments["count"][1][d] / E[d] ** 2,
                    moments["placement"][1][d] / E[d] ** 2,
                    E[d] / theta.sum(),
                )
            )
    r = np.array(rows)
    worse = r[:, 3] > r[:, 2] * (1 + 1e-9) + 1e-15
    rare = r[:, 4] < 0.05
    stats = {
        "rows": len(r),
        "worse": int(worse.sum()),
        "worse_full": int((worse & (r[:, 1] >= r[:, 0] - 1)).sum()),
        "full": int((r[:, 1] >= r[:, 0] - 1).sum()),
        "ratio_max": float(np.max(r[worse, 3] / r[worse, 2])) if worse.any() else 0.0,
        "median_count": float(np.median(r[:, 2])),
        "median_placement": float(np.median(r[:, 3])),
        "rare": int(rare.sum()),
        "rare_count": float(np.median(r[rare, 2])) if rare.any() else np.nan,
        "rare_placement": float(np.median(r[rare, 3])) if rare.any() else np.nan,
    }
    return stats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("config")
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--queries", type=int, default=400, help="random small queries")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    s = exact(args.queries, seed=0)
    lines = [
        "## A Plackett-Luce policy's exposure: placement probabilities against counting",
        "",
        f"Command: `python research/placement_variance.py {args.config} --samples "
        f"{args.samples} --repeats {args.repeats} --queries {args.queries} --out {args.out}`",
        "",
        f"### Exact, {args.queries} random queries of 2 to 6 documents ({s['rows']} rows)",
        "",
        "Variance of one ranking's estimate divided by the squared exposure, per row, by "
        "enumerating every ranking.",
        "",
        "| rows | median, counting | median, placement |",
        "|---|---:|---:|",
        f"| all ({s['rows']}) | {s['median_count']:.4g} | {s['median_placement']:.4g} |",
        f"| exposure below 5% of the query's ({s['rare']}) | {s['rare_count']:.4g} | "
        f"{s['rare_placement']:.4g} |",
        "",
        f"Placement is the more variable in {s['worse']} of {s['rows']} rows, up to "
        f"{s['ratio_max']:.1f} times counting's variance; {s['worse_full']} of them in the "
        f"{s['full']} rows of queries whose rankings place every document or all but one (each "
        "row is placed once, so counting's terms offset each other).",
    ]
    config = load_clicks_config(args.config, overrides={"folds": [1]})
    data = load(config.datasets[0], 1, drop_empty_test_queries=config.drop_empty_test_queries)
    logger = _Fold(config, data, 0).logger
    test = data.test
    theta = pbm_position_bias(config.top_k, eta=config.eta)
    runs = {
        method: np.array(
            [
                logger.expected_exposure(
                    test.X,
                    test.qid,
                    n_samples=args.samples,
                    weights=theta,
                    random_state=1000 + i,
                    method=method,
                )
                for i in range(args.repeats)
            ]
        )
        for method in ("count", "placement")
    }
    exposure = runs["placement"].mean(axis=0)
    rel = {m: runs[m].std(axis=0, ddof=1) / exposure for m in runs}
    zero = (runs["count"] == 0).mean(axis=0)
    order = np.argsort(exposure)
    tail = order[: max(1, order.size // 10)]
    lines += [
        "",
        f"### MQ2008 Fold1 test queries ({test.y.size} rows): the clicks experiment's logger, "
        f"top {config.top_k}, (1/k)^{config.eta:g}",
        "",
        f"Relative standard deviation of the estimate from {args.samples} rankings per query "
        f"(over {args.repeats} independent estimates), per row.",
        "",
        "| rows | median, counting | median, placement | largest, counting | "
        "largest, placement | estimates at 0, counting |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, rows in (("all", np.arange(exposure.size)), ("the 10% least exposed", tail)):
        lines.append(
            f"| {name} ({rows.size}) | {np.median(rel['count'][rows]):.4f} | "
            f"{np.median(rel['placement'][rows]):.4f} | {rel['count'][rows].max():.4f} | "
            f"{rel['placement'][rows].max():.4f} | {zero[rows].mean():.1%} |"
        )
    worse = rel["placement"] > rel["count"]
    ratio = float(np.max(rel["placement"][worse] / rel["count"][worse])) if worse.any() else 0.0
    lines += [
        "",
        f"Placement is the more variable in {int(worse.sum())} of {exposure.size} "
        f"rows (by up to {ratio:.2f} times counting's standard deviation).",
    ]
    text = "\n".join(lines) + "\n"
    Path(args.out).write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
