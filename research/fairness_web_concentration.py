"""Where the group disparity of a frontier's policies lies: in which test queries, of what merit.

The group disparity :math:`(X_a/M_a - X_b/M_b)^2` of a query divides each group's exposure by
its merit, so a query where one group holds almost no merit (a grade-1 document or two among
dozens) can weigh more than hundreds of others. For policies of a finished frontier run (the
per-query values its report pools, seeds averaged), per policy over the pooled test queries: the
mean group disparity, the share of it that the 2 %, 5 % and 10 % of queries with the largest
values hold, the median merit (sum of the gains :math:`2^y - 1`) of the smaller group there and
over all queries, and the correlation of each query's value with its query-level feature
(``web_groups``' column ``n_features + 2``, when the data has one). Written to
``concentration.md`` beside the report::

    python research/fairness_web_concentration.py configs/fairness_group_web_start.toml \\
        --policy lambdamart:0:0.05:0 --policy plrank-fair:10:0:0

A policy is ``curve:weight:temperature:offset`` as the frontier's evaluations name it
(temperature 0: a fair policy as trained).
"""

from __future__ import annotations

import argparse

import numpy as np

from gbdt_plrank._ranking_metric import gains
from gbdt_plrank.harness.frontier.config import load_frontier_config
from gbdt_plrank.harness.frontier.report import pool
from gbdt_plrank.harness.frontier.run import TABLES, fold_sources, load_fold
from gbdt_plrank.harness.item_groups import protected_rows
from gbdt_plrank.harness.store import ResultStore

SHARES = (0.02, 0.05, 0.10)


def _merits(split) -> tuple[np.ndarray, np.ndarray]:
    """Per query: the merit of the protected group and of the others."""
    g = gains(split.y, "exp")
    p = protected_rows(split).astype(bool)
    q = np.repeat(np.arange(split.n_queries), split.group_sizes)
    return np.bincount(q[p], g[p], split.n_queries), np.bincount(q[~p], g[~p], split.n_queries)


def _context(split) -> np.ndarray | None:
    """Per query: the web data's query-level feature (its last column), if it has groups."""
    values = split.X[:, split.X.shape[1] - 1]
    values = np.asarray(values.toarray() if hasattr(values, "toarray") else values).ravel()
    return values[split.group_ptr[:-1]]


def _policy(text: str) -> tuple[str, float, float, float]:
    """``curve:weight:temperature:offset`` as the frontier's evaluation keys hold it."""
    curve, *numbers = text.split(":")
    if len(numbers) != 3:
        raise SystemExit(f"--policy must be curve:weight:temperature:offset, but {text!r} is given")
    weight, temperature, offset = map(float, numbers)
    return curve, weight, temperature, offset


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config")
    parser.add_argument("--policy", action="append", required=True)
    args = parser.parse_args()
    config = load_frontier_config(args.config)
    store = ResultStore(config.out, settings=config.settings(), tables=TABLES)
    policies = {p: _policy(p) for p in args.policy}
    pooled: dict[tuple, dict] = {key: {} for key in policies.values()}
    for point in pool(store, config):  # per query (fold label, query id), seeds averaged
        key = (point.curve, point.weight, point.temperature, point.offset)
        if point.split == "test" and key in pooled:
            pooled[key].update(point.values["group_disparity"])
    smaller, context, queries = [], [], []
    for label, (data, fold) in fold_sources(config).items():
        test = load_fold(config, data, fold).test
        protected, other = _merits(test)
        smaller.append(np.minimum(protected, other))
        queries += [(label, int(q)) for q in np.unique(test.qid)]
        if config.web_groups is not None:
            context.append(_context(test))
    values = {}
    for name, key in policies.items():
        by_query = pooled[key]
        if len(by_query) != len(queries):
            raise SystemExit(f"{name}: {len(by_query)} of {len(queries)} test queries evaluated")
        values[name] = np.array([by_query[q] for q in queries])
    low = np.concatenate(smaller)
    ctx = np.concatenate(context) if context else None
    lines = [
        "# Where the group disparity lies",
        "",
        f"`python research/fairness_web_concentration.py {args.config} "
        + " ".join(f"--policy {p}" for p in args.policy)
        + "`",
        "",
        f"{low.size} pooled test queries of {', '.join(fold_sources(config))}; the smaller "
        f"group's merit (sum of 2^y - 1) has median {np.median(low):.1f} over all queries, and "
        f"is at most 3 in {np.mean(low <= 3):.1%} of them.",
        "",
        "| policy | mean GD | "
        + " | ".join(f"top {s:.0%}: share of GD, median smaller merit" for s in SHARES)
        + (" | corr(GD, query feature) |" if ctx is not None else " |"),
        "|---|---:|" + "---:|" * len(SHARES) + ("---:|" if ctx is not None else ""),
    ]
    for policy in policies:
        gd = values[policy]
        order = np.argsort(-gd)
        cells = []
        for share in SHARES:
            top = order[: max(1, round(share * gd.size))]
            cells.append(f"{gd[top].sum() / gd.sum():.0%}, {np.median(low[top]):.1f}")
        corr = f" | {np.corrcoef(gd, ctx)[0, 1]:+.2f}" if ctx is not None else ""
        lines.append(f"| {policy} | {gd.mean():.5f} | " + " | ".join(cells) + corr + " |")
    text = "\n".join(lines) + "\n"
    (store.folder / "concentration.md").write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
