"""How the click rewards of ``gbdt-plrank clicks`` order each training query's documents.

For every configuration, fold and session count, the stochastic logger's training log is made
as the experiment makes it (:class:`gbdt_plrank.harness.clicks_run._Fold`: the same logger, the
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

Only training splits are read.

    nice -n 10 python research/clicks_reward_order.py configs/clicks-mq2008.toml \\
        configs/clicks-mq2008-sharp-logger.toml configs/clicks-mq2008-eta2.toml \\
        --out benchmarks/results/clicks_reward_order.md
"""

from __future__ import annotations

import argparse
from itertools import pairwise
from pathlib import Path

import numpy as np

from gbdt_plrank.harness.clicks_config import load_clicks_config
from gbdt_plrank.harness.clicks_run import _Fold
from gbdt_plrank.harness.data import dataset_label, load

ESTIMATORS = ("policy-aware", "naive")


def misordered_pairs(rewards: np.ndarray, y: np.ndarray, group_ptr: np.ndarray) -> tuple[int, int]:
    """(Pairs of a relevant and a non-relevant row of one query whose rewards are in the wrong
    order, all such pairs), over the queries of ``group_ptr``."""
    wrong = total = 0
    for a, b in pairwise(group_ptr):
        r, rel = rewards[a:b], y[a:b] > 0
        pos, neg = r[rel], r[~rel]
        wrong += int((pos[:, None] <= neg[None, :]).sum())
        total += pos.size * neg.size
    return wrong, total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("configs", nargs="+", help="gbdt-plrank clicks configuration files")
    parser.add_argument("--out", required=True, help="markdown file to write")
    args = parser.parse_args()
    lines = [
        "## Click rewards of the training rows: bias and order",
        "",
        "Rewards of the stochastic logger's training log, pooled over the folds: mean reward of "
        "the relevant and non-relevant rows (the click probability when seen is 1 and `noise`), "
        "and the share of (relevant, non-relevant) pairs of one query whose rewards are in the "
        "wrong order.",
        "",
        "Command: `python research/clicks_reward_order.py "
        + " ".join(args.configs) + f" --out {args.out}`",
        "",
        "| configuration | sessions/query | estimator | mean reward, relevant | "
        "mean reward, non-relevant | wrongly ordered pairs |",
        "|---|---:|---|---:|---:|---:|",
    ]
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
                        r = unit.rewards(logs, estimator=estimator, policy=False)["train"]
                        wrong, total = misordered_pairs(r, train.y, train.group_ptr)
                        acc = sums.setdefault((s, estimator), np.zeros(6))
                        acc += [r[train.y > 0].sum(), (train.y > 0).sum(),
                                r[train.y == 0].sum(), (train.y == 0).sum(), wrong, total]
                print(dataset_label(data, fold), path, flush=True)
        for (s, estimator), (rs, rn, ns, nn, wrong, total) in sorted(sums.items()):
            lines.append(f"| {Path(path).name} | {s} | {estimator} | {rs / rn:.3f} | "
                         f"{ns / nn:.3f} | {wrong / total:.4f} |")
    text = "\n".join(lines) + "\n"
    Path(args.out).write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
