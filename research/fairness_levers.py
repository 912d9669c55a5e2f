"""The levers of a frontier's fair curve, measured on validation, test left alone.

For each frontier configuration given (finished runs; the same data, one lever changed: the
rankings per query N, the weights, the rounds or the learning rate), every fair policy (a weight
as trained and under each temperature) against the post-hoc policies chosen for it on the
validation queries, and measured there too (``compare_points`` of
:mod:`gbdt_plrank.harness.frontier.report` with ``judged_on="vali"`` and the configuration's
``ndcg_tolerance``; mixtures measured from their exposures): the fairness difference to the
fairest post-hoc policy or mixture at no less expected NDCG, and the NDCG difference to the
most relevant one at no more unfairness (fair minus post hoc, standard errors over the
validation queries). Below zero in the first, above in the second, is beyond the post-hoc
envelope on validation.

    python -m research.fairness_levers configs/fairness_group_web.toml other.toml \\
        --out benchmarks/results/fairness_levers_web.md
"""

from __future__ import annotations

import argparse
from pathlib import Path

import gbdt_plrank  # noqa: F401  (first: sets the OpenMP wait before a booster loads)
from benchmarks.harness import command_line
from gbdt_plrank.harness.frontier import load_frontier_config
from gbdt_plrank.harness.frontier.report import (
    Comparison,
    MixtureSource,
    compare_points,
    pool,
)
from gbdt_plrank.harness.frontier.run import TABLES
from gbdt_plrank.harness.store import ResultStore


def _label(c: Comparison) -> str:
    """A fair policy's name: its weight, and its temperature if any."""
    return f"w={c.weight:g}" + (f" T={c.temperature:g}" if c.temperature else "")


def _cells(c: Comparison, digits: int) -> list[str]:
    out = [c.dataset, _label(c)]
    out += [f"{c.ndcg:.4f}", f"{c.unfairness:.{digits}f}"]
    for m, diff in ((c.at_ndcg, "unfairness"), (c.at_level, "ndcg")):
        if m is None:
            out += ["not reached", ""]
            continue
        value, se = getattr(m, f"{diff}_difference"), getattr(m, f"{diff}_se")
        width = digits if diff == "unfairness" else 4
        out += [m.name, f"{value:+.{width}f} ({se:.{width}f})"]
    return out


def lever_table(path: Path) -> list[str]:
    """The markdown section of one finished frontier configuration."""
    config = load_frontier_config(path)
    measure = config.measure
    with ResultStore.locked(config.out, settings=config.settings(), tables=TABLES) as store:
        points = pool(store, config)
        comparisons = compare_points(
            points,
            measure=measure,
            ndcg_tolerance=config.ndcg_tolerance,
            judged_on="vali",
            source=MixtureSource(store, config),
        )
    digits = 5 if measure == "group_disparity" else 4
    fair = [c for c in comparisons if c.side == "fair"]
    head = [
        "data",
        "fair policy",
        "NDCG",
        measure,
        f"post hoc at no less NDCG (-{config.ndcg_tolerance:g})",
        f"{measure} diff (s.e.)",
        f"post hoc at no more {measure}",
        "NDCG diff (s.e.)",
    ]
    lines = [f"## {path}", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(_cells(c, digits)) + " |" for c in fair]
    fairer = [c for c in fair if c.at_ndcg is not None]
    relevant = [c for c in fair if c.at_level is not None]
    if fairer:
        best = min(fairer, key=lambda c: c.at_ndcg.unfairness_difference)  # type: ignore[union-attr]
        m = best.at_ndcg
        lines += [
            "",
            f"Fairest against the post-hoc envelope: {_label(best)}, {measure} "
            f"{m.unfairness_difference:+.{digits}f} (s.e. {m.unfairness_se:.{digits}f}).",
        ]
    if relevant:
        best = max(relevant, key=lambda c: c.at_level.ndcg_difference)  # type: ignore[union-attr]
        m = best.at_level
        lines += [
            f"Most relevant against it: {_label(best)}, NDCG {m.ndcg_difference:+.4f} "
            f"(s.e. {m.ndcg_se:.4f}).",
        ]
    return [*lines, ""]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("configs", nargs="+", type=Path, help="finished frontier configurations")
    parser.add_argument("--out", type=Path, default=None, help="markdown file (default: stdout)")
    args = parser.parse_args(argv)
    command = command_line("python -m research.fairness_levers", argv)
    lines = [
        "# Fair-curve levers on validation",
        "",
        f"`{command}`",
        "",
        "Each fair policy against the post-hoc policies chosen for it on validation, measured "
        "on validation (differences fair minus post hoc; standard errors over the validation "
        "queries).",
        "",
    ]
    for path in args.configs:
        lines += lever_table(path)
    text = "\n".join(lines)
    if args.out is None:
        print(text)
    else:
        args.out.write_text(text, encoding="utf-8")
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
