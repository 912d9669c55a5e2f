"""How the click rewards of ``gbdt-plrank clicks`` order each training query's documents.

For every configuration, fold and session count, the stochastic logger's training log is made
as the experiment makes it (:class:`gbdt_plrank.harness.clicks.run._Fold`: the same logger, the
same seeds), and the rewards of the training rows are computed with the policy-aware estimator
and with click-through rates (:func:`gbdt_plrank.clicks.click_rewards`). Reported, pooled over
the folds:

- the mean reward of the relevant and of the non-relevant rows, against the click probability
  when seen that the rewards estimate (1 for a relevant row, ``noise`` for a non-relevant one):
  the policy-aware rewards are unbiased, click-through rates are scaled down by the mean
  observation of the ranks a row was shown at;
- the share of (relevant, non-relevant) pairs of rows of one query whose rewards are in the
  wrong order (the relevant row's reward not above the non-relevant row's), which is what a
  ranker trained on the rewards sees.

With ``--by-grade`` (for graded click probabilities, ``graded = true``), the mean reward of
the rows of each grade, and for each pair of grades the share of pairs of rows of one query
whose rewards are in the wrong order (the higher grade's reward not above the lower grade's).

Only training splits are read.

    nice -n 10 python research/clicks_reward_order.py configs/clicks-mq2008.toml \\
        configs/clicks-mq2008-sharp-logger.toml configs/clicks-mq2008-eta2.toml \\
        --out benchmarks/results/clicks_reward_order.md
    nice -n 10 python research/clicks_reward_order.py configs/clicks-mq2008-graded.toml \\
        configs/clicks-mq2007-agg-graded.toml \\
        --by-grade --out benchmarks/results/clicks_reward_order_graded.md
"""

from __future__ import annotations

import argparse
from itertools import pairwise
from pathlib import Path

import numpy as np

from gbdt_plrank.harness.clicks.config import load_clicks_config
from gbdt_plrank.harness.clicks.run import _Fold
from gbdt_plrank.harness.data import dataset_label, load

ESTIMATORS = ("policy-aware", "naive")


def misordered_pairs(
    rewards: np.ndarray, high: np.ndarray, low: np.ndarray, group_ptr: np.ndarray
) -> tuple[int, int]:
    """(Pairs of a ``high`` and a ``low`` row of one query whose rewards are in the wrong order,
    the high row's not above the low row's; all such pairs), over the queries of ``group_ptr``."""
    wrong = total = 0
    for a, b in pairwise(group_ptr):
        pos, neg = rewards[a:b][high[a:b]], rewards[a:b][low[a:b]]
        wrong += int((pos[:, None] <= neg[None, :]).sum())
        total += pos.size * neg.size
    return wrong, total


def reward_order(
    rewards: np.ndarray, y: np.ndarray, group_ptr: np.ndarray, *, by_grade: bool
) -> dict[str, tuple[float, float]]:
    """Column -> (sum, count) of one fold: reward sums and row counts of each class of rows
    (relevant and non-relevant, or each grade), wrongly ordered and all pairs of each two."""
    if by_grade:
        classes = {f"grade {g:g}": y == g for g in np.unique(y)}
    else:
        classes = {"relevant": y > 0, "non-relevant": y == 0}
    out = {
        f"mean reward, {name}": (float(rewards[rows].sum()), float(rows.sum()))
        for name, rows in classes.items()
    }
    names = list(classes)[::-1] if by_grade else list(classes)  # the better class first
    for i, hi in enumerate(names):
        for lo in names[i + 1 :]:
            column = f"wrongly ordered, {hi} vs {lo}" if by_grade else "wrongly ordered pairs"
            out[column] = misordered_pairs(rewards, classes[hi], classes[lo], group_ptr)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("configs", nargs="+", help="gbdt-plrank clicks configuration files")
    parser.add_argument(
        "--by-grade",
        action="store_true",
        help="mean reward of each grade and wrongly ordered pairs of grades",
    )
    parser.add_argument("--out", required=True, help="markdown file to write")
    args = parser.parse_args()
    if args.by_grade:
        what = (
            "mean reward of the rows of each grade, and the share of pairs of rows of one "
            "query and two grades whose rewards are in the wrong order (the higher grade's "
            "not above the lower grade's)."
        )
    else:
        what = (
            "mean reward of the relevant and non-relevant rows (the click probability when "
            "seen is 1 and `noise`), and the share of (relevant, non-relevant) pairs of one "
            "query whose rewards are in the wrong order."
        )
    flag = " --by-grade" if args.by_grade else ""
    lines = [
        "## Click rewards of the training rows: bias and order",
        "",
        f"Rewards of the stochastic logger's training log, pooled over the folds: {what}",
        "",
        "Command: `python research/clicks_reward_order.py "
        + " ".join(args.configs)
        + f"{flag} --out {args.out}`",
        "",
    ]
    header = False
    for path in args.configs:
        config = load_clicks_config(path)
        sums = {}
        for data in config.datasets:
            for fold in config.folds:
                dataset = load(data, fold, drop_empty_test_queries=config.drop_empty_test_queries)
                unit = _Fold(config, dataset, 0)
                train = dataset.train
                for s in sorted(config.sessions):
                    logs = unit.logs(True, s)
                    for estimator in ESTIMATORS:
                        r = unit.rewards(logs, estimator=estimator, policy=False, stochastic=True)[
                            "train"
                        ]
                        acc = sums.setdefault((s, estimator), {})
                        for column, (total, count) in reward_order(
                            r, train.y, train.group_ptr, by_grade=args.by_grade
                        ).items():
                            acc[column] = acc.get(column, np.zeros(2)) + np.array([total, count])
                print(dataset_label(data, fold), path, flush=True)
        for (s, estimator), acc in sorted(sums.items()):
            if not header:
                lines += [
                    "| configuration | sessions/query | estimator | " + " | ".join(acc) + " |",
                    "|---|---:|---|" + "---:|" * len(acc),
                ]
                header = True
            cells = [
                f"{t / n:.3f}" if c.startswith("mean") else f"{t / n:.4f}"
                for c, (t, n) in acc.items()
            ]
            lines.append(f"| {Path(path).name} | {s} | {estimator} | " + " | ".join(cells) + " |")
    text = "\n".join(lines) + "\n"
    Path(args.out).write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
