"""The clicks experiment's doubly robust learner with other forms of the correction.

Runs ``gbdt-plrank clicks CONFIG`` (:func:`gbdt_plrank.harness.clicks.run_clicks`) at
``shrinkage = 0`` with the rewards of ``plrank-doubly-robust`` replaced by ``--variant``, the
regression ``g`` the default :func:`gbdt_plrank.clicks.click_regression` in every variant:

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

The other learners are untouched, so a folder holding their results of the same settings can be
reused: copy it, remove the ``plrank-doubly-robust`` lines, and point ``--out`` at the copy.

    for v in policy logged pooled-10 shrink-1 shrink-2 shrink-3 shrinkpolicy-1; do
        nice -n 19 python research/dr_ranker.py research/dr_ranker_mq2008.toml --variant $v \\
            --out benchmarks/results/dr_ranker/$v
    done
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from gbdt_plrank.clicks import ClickLog, click_rewards
from gbdt_plrank.harness.clicks import load_clicks_config, run_clicks, write_clicks_report
from gbdt_plrank.harness.clicks import run as clicks_run


def variant_rewards(variant: str) -> Any:
    """``click_rewards`` with its doubly robust rewards replaced by ``variant``."""

    def rewards(log: ClickLog, n_rows: int, **kw: Any) -> np.ndarray:
        kw.pop("shrinkage", None)  # the run's is 0: the variants replace it
        if kw.get("estimator") != "doubly-robust" or variant == "policy":
            return click_rewards(log, n_rows, **kw)
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
        raise ValueError(f"variant must be policy, logged, pooled-M, shrink-KAPPA or "
                         f"shrinkpolicy-KAPPA, but {variant!r} is given.")

    return rewards


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("config", help="gbdt-plrank clicks configuration file")
    parser.add_argument("--variant", required=True)
    parser.add_argument("--out", required=True, help="the results folder")
    args = parser.parse_args()
    # shrinkage 0: the harness hands the doubly robust rewards the logger's propensities
    config = load_clicks_config(args.config, overrides={"out": args.out, "shrinkage": 0.0})
    clicks_run.click_rewards = variant_rewards(args.variant)
    store = run_clicks(config)
    print(write_clicks_report(config, store, command=(
        f"python research/dr_ranker.py {args.config} --variant {args.variant} "
        f"--out {args.out}")))


if __name__ == "__main__":
    main()
