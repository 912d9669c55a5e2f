"""A first stochastic policy: the temperature of a model trained on a deterministic ranker's clicks.

The model of ``--learner`` in ``gbdt-plrank clicks CONFIG`` (a ``logger = "lambdamart"``
configuration: PL-Rank on the deterministic log's rewards, ``--sessions`` per query) is
deployed as its Plackett-Luce policy at a temperature :math:`T` (its scores divided by
:math:`T`): the lower :math:`T`, the closer to its ranking by score, the less exploration. The
cost of :math:`T` is the NDCG@``--k`` of the ranking by score minus the policy's expected
NDCG@k (its exposure from placement probabilities, ``expected_exposure(method="placement")``,
with the DCG rank weights), over the validation queries:

- *measured* with their labels, where a team has a labelled validation set;
- *estimated from clicks* with their policy-aware rewards (the same log's validation queries,
  the training log's position bias) as gains, each query over the ideal DCG of its rewards. A
  document the deterministic logger never showed has reward 0, so any exposure it gets counts
  as lost; but the rewards' noise also lowers the ranking by score's own value, and on MQ2008
  the estimate came out below the labels' cost (by a quarter at T = 1): a budget met on clicks
  may cost more on labels.

For each budget the largest temperature whose validation cost stays within it is chosen, and
its test cost (labels) reported once.

With ``--learner logger`` the policy is the configuration's own logger as trained (a
``logger = "plrank"`` configuration: PL-Rank on the labels of ``logging_queries`` queries), the
temperature a ``logger_temperature`` deploys it at; the clicks are then its own top-k log's.
``--temperatures`` sets the grid.

    python research/first_policy_temperature.py configs/clicks-mq2008-deterministic.toml \\
        --learner plrank-regression --sessions 10 \\
        --out benchmarks/results/first_policy_temperature.md
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from gbdt_plrank._ranking_metric import dcg_weights
from gbdt_plrank.harness.clicks import load_clicks_config
from gbdt_plrank.harness.clicks.run import _fit_plrank, _Fold
from gbdt_plrank.harness.data import load
from gbdt_plrank.metrics import ndcg

TEMPERATURES = (0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0)
BUDGETS = (0.005, 0.01, 0.02)


def expected_ndcg(
    model: Any, split: Any, gains: np.ndarray, *, k: int, temperature: float, n_samples: int
) -> np.ndarray:
    """Per query: the policy's expected DCG@k of ``gains`` over their positive part's ideal
    DCG@k (NaN for a query without a positive gain)."""
    exposure = model.expected_exposure(
        split.X,
        split.qid,
        n_samples=n_samples,
        weights=dcg_weights(k),
        temperature=temperature,
        random_state=0,
        method="placement",
    )
    queries, q = np.unique(split.qid, return_inverse=True)
    value = np.bincount(q, weights=exposure * gains, minlength=queries.size)
    ideal = np.array(
        [
            np.sort(np.maximum(gains[q == g], 0))[::-1][:k]
            @ dcg_weights(k)[: min(k, int((q == g).sum()))]
            for g in range(queries.size)
        ]
    )
    return np.divide(value, ideal, out=np.full(queries.size, np.nan), where=ideal > 0)


def by_score(model: Any, split: Any, gains: np.ndarray, k: int) -> np.ndarray:
    """Per query: the DCG@k of the ranking by score over the ideal one (NaN as above)."""
    return ndcg(
        gains, model.predict(split.X), split.qid, k=k, gain="linear", empty=np.nan, per_query=True
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("config")
    parser.add_argument("--learner", default="plrank-regression")
    parser.add_argument("--sessions", type=int, default=10)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--samples", type=int, default=200, help="rankings per query")
    parser.add_argument(
        "--temperatures",
        default=",".join(f"{t:g}" for t in TEMPERATURES),
        help="the grid, comma-separated",
    )
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    config = load_clicks_config(args.config, overrides={"sessions": [args.sessions]})
    temperatures = tuple(float(t) for t in args.temperatures.split(","))
    cost: dict[str, dict[float, list[np.ndarray]]] = {}
    for fold in config.folds:
        data = load(
            config.datasets[0], fold, drop_empty_test_queries=config.drop_empty_test_queries
        )
        unit = _Fold(config, data, 0)
        logs = unit.logs(False, args.sessions)
        if args.learner == "logger":
            model = unit.logger
        else:
            rewards = unit.learner_rewards(args.learner, logs, stochastic=False)
            model, _ = _fit_plrank(config, 0, data, rewards["train"], rewards["vali"])
        vali_clicks = unit.rewards(logs, estimator="policy-aware", policy=False, stochastic=False)[
            "vali"
        ]
        for name, split, gains in (
            ("validation, labels", data.vali, 2.0**data.vali.y - 1),
            ("validation, clicks", data.vali, vali_clicks),
            ("test, labels", data.test, 2.0**data.test.y - 1),
        ):
            top = by_score(model, split, gains, args.k)
            for T in temperatures:
                value = expected_ndcg(
                    model, split, gains, k=args.k, temperature=T, n_samples=args.samples
                )
                cost.setdefault(name, {}).setdefault(T, []).append(top - value)
        print(fold, flush=True)
    mean = {
        name: {T: float(np.nanmean(np.concatenate(v))) for T, v in by_t.items()}
        for name, by_t in cost.items()
    }
    lines = [
        "## A first stochastic policy: the NDCG a temperature costs",
        "",
        f"Command: `python research/first_policy_temperature.py {args.config} --learner "
        f"{args.learner} --sessions {args.sessions} --k {args.k} --samples {args.samples} "
        + (f"--temperatures {args.temperatures} " if temperatures != TEMPERATURES else "")
        + f"--out {args.out}`",
        "",
        (
            f"The logger of `{args.config}` (PL-Rank on the labels of its "
            f"{config.logging_queries} logging queries), deployed as its Plackett-Luce policy at "
            f"temperature T (clicks: its top-{config.top_k} log, {args.sessions} sessions per "
            "query): NDCG@"
            if args.learner == "logger"
            else f"PL-Rank on `{args.learner}`'s rewards of `{args.config}`'s log "
            f"({args.sessions} sessions per query), deployed as its Plackett-Luce policy at "
            "temperature T: NDCG@"
        )
        + f"{args.k} of its ranking by score minus its expected NDCG@{args.k}, mean over the "
        f"queries of folds {', '.join(map(str, config.folds))} (clicks: the validation queries' "
        "policy-aware rewards as "
        f"gains; {args.samples} rankings per query, placement probabilities).",
        "",
        "| T | " + " | ".join(mean) + " |",
        "|---:|" + "---:|" * len(mean),
    ]
    for T in temperatures:
        lines.append(f"| {T:g} | " + " | ".join(f"{mean[n][T]:.4f}" for n in mean) + " |")
    lines += [
        "",
        "The largest temperature whose validation cost stays within a budget, and its test cost:",
        "",
        "| budget | chosen on | T | test cost |",
        "|---:|---|---:|---:|",
    ]
    for budget in BUDGETS:
        for name in ("validation, labels", "validation, clicks"):
            within = [T for T in temperatures if mean[name][T] <= budget]
            if within:
                T = max(within)
                lines.append(
                    f"| {budget:g} | {name.split(', ')[1]} | {T:g} | "
                    f"{mean['test, labels'][T]:.4f} |"
                )
            else:
                lines.append(f"| {budget:g} | {name.split(', ')[1]} | none | |")
    text = "\n".join(lines) + "\n"
    Path(args.out).write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
