"""The clicks experiment's doubly robust learner with other forms of the correction.

Runs ``gbdt-plrank clicks CONFIG`` (:func:`gbdt_plrank.harness.clicks.run_clicks`) at
``shrinkage = 0`` with the rewards of ``plrank-doubly-robust`` replaced by ``--variant``, the
regression ``g`` the default :func:`gbdt_plrank.clicks.click_regression` in every variant but
``oracle``:

- ``policy``: the unshrunk rewards, as the experiment does at ``shrinkage = 0`` (the logger's
  expected exposure from ``propensity_samples`` rankings, pooled with the log's sessions);
- ``pooled-M``: the same propensities pooled as if they were the mean of ``M`` rankings
  (``propensity_samples=M``), which weighs the log's own displays more;
- ``logged``: the display frequencies (the policy-aware reward on every shown row, ``g`` on
  the rows the log never shows);
- ``shrink-KAPPA``: ``g + sum_s (c_sd - theta_s g_d) / (sum_s theta_s + kappa)``, the clicks
  and observations of the row with ``kappa`` pseudo-observations at ``g`` (biased towards ``g``
  by ``kappa / (observation + kappa)``, which vanishes as the sessions grow): the experiment's
  own ``shrinkage = KAPPA`` with ``propensities = "logged"``, the same numbers;
- ``shrinkpolicy-KAPPA``: the same with the experiment's policy propensities,
  ``g + sum_s (c_sd - theta_s g_d) / (S_q rho_d + kappa)``.
- ``oracle``: the unshrunk rewards of ``policy`` with the simulated click probability when seen
  as ``g``, the regression no estimate can beat (with it the correction's mean is 0 at every
  rank, so its variance is the least any regression gives): the bound on what a better
  regression can do for the unbiased rewards.

The other learners are untouched, so a folder holding their results of the same settings can be
reused: copy it, remove the ``plrank-doubly-robust`` lines, and point ``--out`` at the copy.

    for v in policy oracle logged pooled-10 shrink-1 shrink-2 shrink-3 shrinkpolicy-1; do
        nice -n 19 python research/dr_ranker.py research/dr_ranker_mq2008.toml --variant $v \\
            --out benchmarks/results/dr_ranker/$v
    done
    python research/dr_ranker.py --summary benchmarks/results/dr_ranker/* \\
        --out benchmarks/results/dr_ranker.md
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from gbdt_plrank.clicks import ClickLog, click_rewards, seen_click_probability
from gbdt_plrank.harness.clicks import load_clicks_config, run_clicks, write_clicks_report
from gbdt_plrank.harness.clicks import run as clicks_run


def variant_rewards(variant: str, labels: dict[int, np.ndarray], config: Any) -> Any:
    """``click_rewards`` with its doubly robust rewards replaced by ``variant``; ``labels`` maps
    ``id`` of a split's features to its labels (``oracle``), ``config`` the run's (its click
    model)."""

    def rewards(log: ClickLog, n_rows: int, **kw: Any) -> np.ndarray:
        kw.pop("shrinkage", None)  # the run's is 0: the variants replace it
        if kw.get("estimator") != "doubly-robust" or variant == "policy":
            return click_rewards(log, n_rows, **kw)
        if variant == "oracle":
            gamma = seen_click_probability(
                labels[id(kw["X"])], noise=config.noise, graded=config.graded
            )
            return click_rewards(log, n_rows, **kw, regression=gamma)
        if variant == "logged":
            kw.pop("propensities", None)
            kw.pop("propensity_samples", None)
            return click_rewards(log, n_rows, **kw)
        if variant.startswith("pooled-"):
            return click_rewards(log, n_rows, **{**kw, "propensity_samples": int(variant[7:])})
        if variant.startswith("shrink-"):  # on the display frequencies
            kw.pop("propensities", None)
            kw.pop("propensity_samples", None)
            return click_rewards(log, n_rows, **kw, shrinkage=float(variant[7:]))
        if variant.startswith("shrinkpolicy-"):  # on the logger's propensities
            return click_rewards(log, n_rows, **kw, shrinkage=float(variant[13:]))
        raise ValueError(
            f"variant must be policy, oracle, logged, pooled-M, shrink-KAPPA or "
            f"shrinkpolicy-KAPPA, but {variant!r} is given."
        )

    return rewards


def summary(folders: list[str], out: str) -> str:
    """A table of every variant's doubly robust learner against the policy-aware one (test
    NDCG@k paired per query, seeds averaged, folds pooled), from the variants' results folders
    (named by their variant); written to ``out``."""
    from gbdt_plrank.harness.clicks.report import per_query
    from gbdt_plrank.harness.stats import paired

    lines = [
        "## The clicks experiment's doubly robust learner, by form of the correction",
        "",
        "PL-Rank on each variant's doubly robust rewards minus PL-Rank on the policy-aware "
        "rewards (display frequencies), test NDCG@k paired per query (mean [95% interval] "
        "verdict), folds pooled; seed 0 alone (what a run of one seed gives) and every "
        "seed averaged per query; the configuration of each folder's `clicks.md`.",
        "",
        "Command: `python research/dr_ranker.py --summary " + " ".join(folders) + f" --out {out}`",
        "",
        "| variant | sessions/query | seeds | NDCG@5 DR | NDCG@5 PA | DR - PA @5 | DR - PA @10 |",
        "|---|---:|---:|---:|---:|---|---|",
    ]
    for folder in folders:
        records = [
            json.loads(line)
            for line in (Path(folder) / "results.jsonl").read_text(encoding="utf-8").splitlines()
        ]
        n_seeds = len({r["seed"] for r in records})
        runs = [
            (s, seeds)
            for s in sorted({r["sessions"] for r in records})
            for seeds in ((0,), tuple(range(n_seeds)))[: 1 if n_seeds == 1 else 2]
        ]
        for s, seeds in runs:

            def of(
                learner: str, k: int, s: int = s, seeds: tuple = seeds, records: list = records
            ) -> dict:
                return per_query(
                    [
                        r
                        for r in records
                        if r["learner"] == learner and r["sessions"] == s and r["seed"] in seeds
                    ],
                    k,
                )

            cells = []
            for k in (5, 10):
                p = paired(of("plrank-doubly-robust", k), of("plrank-policy-aware", k))
                cells.append(f"{p.interval} {p.verdict}")
            dr5, pa5 = (
                np.mean(list(of(x, 5).values()))
                for x in ("plrank-doubly-robust", "plrank-policy-aware")
            )
            lines.append(
                f"| {Path(folder).name} | {s} | {len(seeds)} | {dr5:.4f} | {pa5:.4f} | "
                + " | ".join(cells)
                + " |"
            )
    text = "\n".join(lines) + "\n"
    Path(out).write_text(text, encoding="utf-8")
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("config", nargs="?", help="gbdt-plrank clicks configuration file")
    parser.add_argument("--variant")
    parser.add_argument("--out", required=True, help="the results folder (the summary file)")
    parser.add_argument(
        "--summary",
        nargs="+",
        metavar="FOLDER",
        help="tabulate these variants' results folders into --out instead",
    )
    args = parser.parse_args()
    if args.summary:
        print(summary(args.summary, args.out))
        return
    if args.config is None or args.variant is None:
        parser.error("a configuration and --variant are needed without --summary")
    # shrinkage 0: the harness hands the doubly robust rewards the logger's propensities
    config = load_clicks_config(args.config, overrides={"out": args.out, "shrinkage": 0.0})
    labels: dict[int, np.ndarray] = {}  # the labels of every split the run loads, by id(X)
    load = clicks_run.load

    def load_recording(*a: Any, **kw: Any) -> Any:
        dataset = load(*a, **kw)
        labels.update({id(split.X): split.y for split in (dataset.train, dataset.vali)})
        return dataset

    clicks_run.load = load_recording
    clicks_run.click_rewards = variant_rewards(args.variant, labels, config)
    store = run_clicks(config)
    print(
        write_clicks_report(
            config,
            store,
            command=(
                f"python research/dr_ranker.py {args.config} --variant {args.variant} "
                f"--out {args.out}"
            ),
        )
    )


if __name__ == "__main__":
    main()
