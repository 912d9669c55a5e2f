"""The report of a comparison: ``results.md`` (mean (std) per method) and ``curves.png``.

Runs are pooled per data entry (over its folds and the seeds) and cut-off k. Each method with a
baseline in :data:`~gbdt_plrank.harness.methods.METHODS` that also ran is compared with it on
the same dataset folds and seeds: the mean paired difference of test NDCG@k and its standard
error.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._compat import is_installed, missing_message, require
from .config import CompareConfig
from .data import family
from .methods import METHODS
from .store import RunKey

__all__ = ["markdown_report", "plot_curves", "write_report"]

Rows = Mapping[RunKey, Mapping[str, Any]]

#: Fewest pairs for a verdict: "ahead" / "behind" when the mean paired difference is more than
#: two standard errors from 0, "level" otherwise.
MIN_PAIRS = 5


def _mean_std(values: Sequence[float], digits: int = 4) -> str:
    if not values:
        return ""
    std = float(np.std(values, ddof=1)) if len(values) > 1 else math.nan
    spread = "" if math.isnan(std) else f" ({std:.{digits}f})"
    return f"{np.mean(values):.{digits}f}{spread}"


def _paired(rows: Rows, keys: Sequence[RunKey], method: str, baseline: str) -> str | None:
    """``method - baseline`` in test NDCG@k, paired by dataset and seed, or None without pairs."""
    diffs = [
        rows[key]["ndcg"] - rows[other]["ndcg"]
        for key in keys
        if key.method == method
        and (other := key._replace(method=baseline)) in rows
    ]
    if not diffs:
        return None
    mean = float(np.mean(diffs))
    se = float(np.std(diffs, ddof=1) / math.sqrt(len(diffs))) if len(diffs) > 1 else math.nan
    line = f"- {method} minus {baseline}: {mean:+.4f}"
    if math.isnan(se):
        return f"{line} (n = 1)"
    line = f"{line} ± {se:.4f} (n = {len(diffs)})"
    if len(diffs) < MIN_PAIRS:
        return line
    verdict = "behind" if mean + 2 * se < 0 else "ahead" if mean - 2 * se > 0 else "level"
    return f"{line}: {verdict}"


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
    config: CompareConfig, rows: Rows, keys: Sequence[RunKey], *, command: str | None = None
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
    lines += [
        f"Test NDCG@k at each method's best validation round, mean (std) over folds "
        f"{list(config.folds)} and seeds {list(config.seed_values)}, one training per k (early "
        f"stopping on validation NDCG@k, patience {config.trees.early_stopping_rounds}, at most "
        f"{config.trees.rounds} rounds). NDCG@k: gain 2^label - 1, ties in input order, mean "
        f"over queries (XGBoost's and LightGBM's conventions). Dataset NDCG@k: each query's "
        f"DCG@k over the mean ideal DCG@k of the split (the PL-Rank papers). Test queries "
        f"without relevant documents: {empty}. Train s: wall time of training, validation "
        f"included.",
        "",
    ]
    present = [key for key in keys if key in rows]
    for name in dict.fromkeys(family(key.dataset) for key in present):
        for k in config.k:
            group = [key for key in present if family(key.dataset) == name and key.k == k]
            if not group:
                continue
            lines += [f"## {name}, NDCG@{k}", "", *_table(rows, group, config.methods, k), ""]
            paired = [
                _paired(rows, group, m, METHODS[m].baseline)
                for m in config.methods
                if METHODS[m].baseline in config.methods
            ]
            paired = [p for p in paired if p is not None]
            if paired:
                lines += [
                    f"Paired differences in NDCG@{k} (same fold and seed), mean ± standard error; "
                    f"with {MIN_PAIRS} pairs or more, ahead / behind when more than 2 s.e. from 0:",
                    "",
                    *paired,
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
                    c for key, c in curves.items()
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
    rows: Rows,
    curves: Mapping[RunKey, np.ndarray],
    keys: Sequence[RunKey],
    *,
    command: str | None = None,
) -> str:
    """Write ``results.md`` and ``curves.png`` into ``config.out``; return the markdown.

    Only the trainings ``keys`` (the configuration's) are reported, even when the folder holds
    more. Without matplotlib the curves are not drawn, and the markdown says so.
    """
    out = Path(config.out)
    text = markdown_report(config, rows, keys, command=command)
    if is_installed("matplotlib"):
        wanted = set(keys)
        plot_curves(
            {key: c for key, c in curves.items() if key in wanted},
            out / "curves.png", methods=config.methods, ks=config.k,
        )
    else:
        text += f"\ncurves.png is not drawn: {missing_message('matplotlib', purpose='it')}\n"
    (out / "results.md").write_text(text, encoding="utf-8")
    return text
