"""The report of a comparison: ``results.md`` (mean (std) per method) and ``curves.png``.

Runs are pooled per data entry (over its folds and the seeds) and cut-off k. Each method is
compared with its baseline and its references in :data:`~gbdt_plrank.harness.methods.METHODS` that
also ran, query by query on the pooled test queries (:mod:`.stats`): across the five LETOR folds
every query of the dataset is a test query exactly once.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..._util.compat import is_installed, missing_message, require
from ..data import family
from ..methods import METHODS
from ..stats import ALPHA, RESAMPLES, paired, seed_means
from ..store import ResultStore, RunKey
from .config import CompareConfig

__all__ = ["markdown_report", "plot_curves", "write_report"]

Rows = Mapping[RunKey, Mapping[str, Any]]

Queries = Mapping[RunKey, Mapping[int, float]]


def _mean_std(values: Sequence[float], digits: int = 4) -> str:
    if not values:
        return ""
    std = float(np.std(values, ddof=1)) if len(values) > 1 else math.nan
    spread = "" if math.isnan(std) else f" ({std:.{digits}f})"
    return f"{np.mean(values):.{digits}f}{spread}"


def _per_query(
    queries: Queries, keys: Sequence[RunKey], method: str
) -> dict[tuple[str, int], float]:
    """(dataset fold, query id) -> the method's test NDCG@k there, averaged over its seeds."""
    return seed_means(
        ((key.dataset, qid), value)
        for key in keys
        if key.method == method and key in queries
        for qid, value in queries[key].items()
    )


def _paired_table(queries: Queries, keys: Sequence[RunKey], methods: Sequence[str]) -> list[str]:
    """The paired tests over the pooled queries: each method against its baseline and references."""
    lines = []
    for method in methods:
        a = _per_query(queries, keys, method)
        for baseline in (METHODS[method].baseline, *METHODS[method].references):
            if baseline not in methods:
                continue
            b = _per_query(queries, keys, baseline)
            if sum(q in b for q in a) < 2:
                continue
            r = paired(a, b)
            lines.append(
                f"| {method} | {baseline} | {r.n} | {r.mean:+.4f} | [{r.low:+.4f}, {r.high:+.4f}] "
                f"| {r.p_t:.3f} | {r.p_randomization:.3f} | {r.verdict} |"
            )
    if not lines:
        return []
    return [
        "| method | baseline | queries | mean difference | 95% CI | p (t-test) "
        "| p (randomization) | verdict |",
        "|---|---|---|---|---|---|---|---|",
        *lines,
    ]


def _cell(
    runs: Sequence[Mapping[str, Any]], column: str, *, digits: int = 4, scale: float = 1.0
) -> str:
    return _mean_std([scale * float(r[column]) for r in runs], digits)


def _table(rows: Rows, keys: Sequence[RunKey], methods: Sequence[str], k: int) -> list[str]:
    lines = [
        f"| method | NDCG@{k} | dataset NDCG@{k} | best round | train s | ms / round | runs |",
        "|---|---|---|---|---|---|---|",
    ]
    for method in methods:
        runs = [rows[key] for key in keys if key.method == method and key in rows]
        if runs:
            lines.append(
                f"| {method} | {_cell(runs, 'ndcg')} | {_cell(runs, 'ndcg_dataset')} "
                f"| {_cell(runs, 'best_round', digits=0)} "
                f"| {_cell(runs, 'train_seconds', digits=1)} "
                f"| {_cell(runs, 'seconds_per_round', digits=1, scale=1000.0)} | {len(runs)} |"
            )
    return lines


def markdown_report(
    config: CompareConfig,
    rows: Rows,
    queries: Queries,
    keys: Sequence[RunKey],
    *,
    command: str | None = None,
) -> str:
    """The text of ``results.md`` for the trainings ``keys`` (those present in ``rows``)."""
    empty = (
        "left out (as the papers do)"
        if config.drop_empty_test_queries
        else "kept; each scores 1 in NDCG@k (as XGBoost and LightGBM) and 0 in dataset NDCG@k"
    )
    lines = ["# Comparison", ""]
    if command:
        lines += [f"Command: `{command}`", ""]
    policy = {
        "policy": "; the PL-Rank methods on their policy's validation expected NDCG@k",
        "standardized": "; the PL-Rank methods on the validation expected NDCG@k of the policy "
        "of their standardised margins",
    }.get(config.plrank.stopping, "")
    train_K = config.plrank.train_K
    trained_at = (
        " The PL-Rank methods train at the cut-off 2k (k with fairness)."
        if train_K == "auto"
        else f" The PL-Rank methods train at the cut-off {train_K}."
    )
    first = {0: "", "auto": ", no round kept before ceil(2 / learning rate)"}.get(
        config.trees.min_rounds, f", no round kept before round {config.trees.min_rounds}"
    )
    if config.trees.patience_rate > 0:
        first += f", the patience growing to {config.trees.patience_rate:g} times the best round"
    if config.trees.min_delta > 0:
        first += f", a gain of at most {config.trees.min_delta:g} counted as none"
    lines += [
        f"Test NDCG@k at each method's best validation round, mean (std) over folds "
        f"{list(config.folds)} and seeds {list(config.seed_values)}, one training per k (early "
        f"stopping on validation NDCG@k{policy}, patience {config.trees.early_stopping_rounds}"
        f"{first}, at most "
        f"{config.trees.rounds} rounds). NDCG@k: gain 2^label - 1, ties in input order, mean "
        f"over queries (XGBoost's and LightGBM's conventions). Dataset NDCG@k: each query's "
        f"DCG@k over the mean ideal DCG@k of the split (the PL-Rank papers). Test queries "
        f"without relevant documents: {empty}. Train s: wall time of training, validation "
        f"included.{trained_at}",
        "",
    ]
    present = [key for key in keys if key in rows]
    for name in dict.fromkeys(family(key.dataset) for key in present):
        for k in config.k:
            group = [key for key in present if family(key.dataset) == name and key.k == k]
            if not group:
                continue
            lines += [f"## {name}, NDCG@{k}", "", *_table(rows, group, config.methods, k), ""]
            table = _paired_table(queries, group, config.methods)
            if table:
                lines += [
                    f"Each method against its baseline (and references), paired by test query "
                    f"(every query of "
                    f"the folds run, each method's seeds averaged per query first): mean "
                    f"difference in NDCG@{k}, its 95% confidence interval, and the p-values of "
                    f"the paired t-test and of the paired randomization test "
                    f"({RESAMPLES:,} sign flips), whose verdict at p < {ALPHA} is shown.",
                    "",
                    *table,
                    "",
                ]
    return "\n".join(lines)


def _mean_curve(curves: Sequence[np.ndarray]) -> np.ndarray:
    """Mean over runs at each round, over the runs still training at that round."""
    longest = max(c.shape[0] for c in curves)
    padded = np.full((len(curves), longest), np.nan)
    for i, c in enumerate(curves):
        padded[i, : c.shape[0]] = c
    return np.nanmean(padded, axis=0)


def plot_curves(
    curves: Mapping[RunKey, np.ndarray],
    path: str | Path,
    *,
    methods: Sequence[str],
    ks: Sequence[int],
) -> None:
    """Validation NDCG@k against boosting round, one line per method (mean over runs).

    One panel per data entry and k. A run stops at its early-stopping round; past it the mean is
    over the runs still training. Each curve is its library's own NDCG@k (gain 2^label - 1; a
    query without relevant documents scores 1 in all three).
    """
    figure_module = require("matplotlib.figure", purpose="curves.png")
    names = list(dict.fromkeys(family(key.dataset) for key in curves))
    n_rows = max(len(names), 1)
    fig = figure_module.Figure(figsize=(5.5 * len(ks), 3.8 * n_rows), layout="constrained")
    axes = fig.subplots(n_rows, len(ks), squeeze=False)
    for row, name in enumerate(names):
        for col, k in enumerate(ks):
            ax = axes[row, col]
            for i, method in enumerate(methods):
                runs = [
                    c
                    for key, c in curves.items()
                    if key.method == method and key.k == k and family(key.dataset) == name
                ]
                if runs:
                    mean = _mean_curve(runs)
                    style = {"color": f"C{i % 10}", "linestyle": "-" if i < 10 else "--"}
                    ax.plot(np.arange(1, mean.shape[0] + 1), mean, label=method, **style)
            ax.set(title=f"{name}: validation NDCG@{k}", xlabel="boosting round", ylabel="NDCG")
            ax.grid(alpha=0.3)
            if ax.lines:
                ax.legend(fontsize="small")
    fig.savefig(path, dpi=110)


def write_report(
    config: CompareConfig,
    store: ResultStore,
    keys: Sequence[RunKey],
    *,
    command: str | None = None,
) -> str:
    """Write ``results.md`` and ``curves.png`` into ``config.out``; return the markdown.

    Only the trainings ``keys`` (the configuration's) are reported, even when the folder holds
    more. Without matplotlib the curves are not drawn, and the markdown says so.
    """
    out = Path(config.out)
    text = markdown_report(config, store.rows(), store.queries(), keys, command=command)
    if is_installed("matplotlib"):
        wanted = set(keys)
        plot_curves(
            {key: c for key, c in store.curves().items() if key in wanted},
            out / "curves.png",
            methods=config.methods,
            ks=config.k,
        )
    else:
        text += f"\ncurves.png is not drawn: {missing_message('matplotlib', purpose='it')}\n"
    (out / "results.md").write_text(text, encoding="utf-8")
    return text
