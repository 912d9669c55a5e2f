"""The position bias of a deterministic ranker's log, estimated through the documents' features.

A deterministic logger shows every session of a query in one order, so no document is seen at
two ranks: only the features link the ranks (documents alike in them are shown at different
ranks across queries). Two ways to fit the position-based model with the relevance a boosted
model of the features, each at several tree depths and numbers of trees:

- ``joint``: ``step_rounds`` trees by Fisher scoring on the click likelihood given theta
  (the likelihood of :func:`gbdt_plrank.clicks.click_regression`), then theta of greatest
  likelihood given the trees (EM on theta alone), in turns;
- ``em``: regression EM (Wang et al., WSDM 2018): the E-step's posteriors that an unclicked
  display was seen and that its document is relevant, theta the mean seen posterior per rank,
  and ``step_rounds`` more trees of a logistic regression on the relevant posteriors (soft
  labels, weighted by the displays), in turns. The chosen variant became
  :func:`gbdt_plrank.clicks.estimate_position_bias` with ``X``, which this runs.

The logs are those of ``gbdt-plrank clicks CONFIG`` (its ``_Fold``: the LambdaMART logger,
its display, the click model), one per fold and position-bias severity ``--eta``. The variant
is chosen on the validation queries' logs (mean over folds and severities of the mean absolute
log-ratio of estimate to truth over ranks 2 and below); the estimate of the package's default
on the training logs, the ones the experiment's learners use, is reported once. The choice is
made at 100 sessions per query: at 10, the validation logs of MQ2008 hold a few clicks at the
deep ranks with ``(1/k)**2``, and their error says more about those clicks than about the
estimator.

    python research/position_bias_features.py configs/clicks-mq2008-deterministic.toml \\
        --eta 1 2 --sessions 100 --out benchmarks/results/position_bias_features.md
"""

from __future__ import annotations

import argparse
import inspect
import math
import time
from typing import Any

import numpy as np

from gbdt_plrank.clicks import ClickLog, estimate_position_bias, pbm_position_bias
from gbdt_plrank.clicks._click_model import display_counts, likelihood_objective
from gbdt_plrank.harness.clicks import load_clicks_config
from gbdt_plrank.harness.clicks.run import _Fold
from gbdt_plrank.harness.data import load

#: (method, max_depth, n_rounds) of every variant compared.
VARIANTS = [("joint", d, r) for d in (1, 2) for r in (100, 300)] + [
    ("em", d, r) for d in (1, 2) for r in (300, 600, 1000)
]
#: :func:`~gbdt_plrank.clicks.estimate_position_bias` with ``X`` at its defaults.
DEFAULT = (
    "em",
    *(
        inspect.signature(estimate_position_bias).parameters[name].default
        for name in ("max_depth", "n_rounds")
    ),
)


def joint_fit(
    log: ClickLog, X: Any, *, max_depth: int, n_rounds: int, step_rounds: int = 10, n_jobs: int = 1
) -> np.ndarray:
    """The click likelihood's relevance and theta fitted jointly, in turns."""
    import xgboost as xgb

    K = int(log.rank.max())
    rows = np.unique(log.row)
    counts = display_counts(log, int(rows.max()) + 1, K).take(rows)
    n, c = counts.shows, counts.hits
    theta = np.full(K, 0.5)
    pooled = float(np.clip(c.sum() / (n * theta[counts.rank]).sum(), 1e-3, 1 - 1e-3))
    data = xgb.DMatrix(X[rows], base_margin=np.full(rows.size, math.log(pooled / (1 - pooled))))
    booster = None
    for done in range(0, n_rounds, step_rounds):
        booster = xgb.train(
            {
                "max_depth": max_depth,
                "eta": 0.1,
                "nthread": n_jobs,
                "min_child_weight": 1e-3,
                "lambda": 1.0,
            },
            data,
            num_boost_round=min(step_rounds, n_rounds - done),
            obj=likelihood_objective(counts, theta),
            xgb_model=booster,
        )
        g = 1 / (1 + np.exp(-booster.predict(data, output_margin=True).astype(np.float64)))
        g = g[counts.row]
        for _ in range(200):  # theta of greatest likelihood given g, by EM
            t = theta[counts.rank]
            seen = c + (n - c) * t * (1 - g) / np.maximum(1 - t * g, 1e-12)
            new = np.clip(counts.per_rank(seen) / counts.per_rank(n), 1e-6, 1 - 1e-6)
            moved = np.abs(new - theta).max()
            theta = new
            if moved < 1e-8:
                break
    return theta / theta.max()


def estimate(method: str, log: ClickLog, split: Any, depth: int, rounds: int) -> np.ndarray:
    if method == "joint":
        return joint_fit(log, split.X, max_depth=depth, n_rounds=rounds)
    return estimate_position_bias(log, X=split.X, qid=split.qid, max_depth=depth, n_rounds=rounds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("config")
    parser.add_argument("--eta", type=float, nargs="+", default=[1.0, 2.0])
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    ratios: dict[tuple, dict[str, list[np.ndarray]]] = {}
    seconds: dict[tuple, list[float]] = {}
    for eta in args.eta:
        config = load_clicks_config(
            args.config, overrides={"eta": eta, "sessions": [args.sessions]}
        )
        for fold in config.folds:
            data = load(
                config.datasets[0], fold, drop_empty_test_queries=config.drop_empty_test_queries
            )
            logs = _Fold(config, data, 0).logs(False, args.sessions)
            for variant in VARIANTS:
                for name in ("vali", "train"):
                    log, split = logs[name], getattr(data, name)
                    start = time.perf_counter()
                    theta = estimate(*variant[:1], log, split, *variant[1:])
                    seconds.setdefault(variant, []).append(time.perf_counter() - start)
                    truth = pbm_position_bias(theta.size, eta=eta)
                    ratios.setdefault((eta, *variant), {}).setdefault(name, []).append(
                        theta / truth
                    )
                print(
                    eta,
                    fold,
                    variant,
                    np.round(ratios[(eta, *variant)]["train"][-1], 3),
                    flush=True,
                )

    def error(name: str, variant: tuple) -> float:
        """Mean over severities and folds of the mean |log(estimate / truth)| at ranks 2.."""
        return float(
            np.mean(
                [
                    np.mean(np.abs(np.log(r[1:])))
                    for eta in args.eta
                    for r in ratios[(eta, *variant)][name]
                ]
            )
        )

    best = min(VARIANTS, key=lambda v: error("vali", v))
    lines = [
        "## The position bias of a deterministic ranker's log, through the features",
        "",
        f"Command: `python research/position_bias_features.py {args.config} --eta "
        f"{' '.join(f'{e:g}' for e in args.eta)} --sessions {args.sessions} --out {args.out}`",
        "",
        f"The logs of `{args.config}` ({args.sessions} sessions per query), every fold. Error: "
        "the mean over severities and folds of the mean |log(estimate / truth)| over ranks 2 "
        "and below, on the validation queries' logs (which choose) and the training queries' "
        "(the experiment's); seconds per estimate on one thread.",
        "",
        "| method | depth | trees | validation error | training error | seconds |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for v in VARIANTS:
        mark = "".join(
            m
            for m, is_it in ((" (best on validation)", v == best), (" (the default)", v == DEFAULT))
            if is_it
        )
        lines.append(
            f"| {v[0]}{mark} | {v[1]} | {v[2]} | {error('vali', v):.3f} | "
            f"{error('train', v):.3f} | {np.mean(seconds[v]):.1f} |"
        )
    for eta in args.eta:
        r = np.array(ratios[(eta, *DEFAULT)]["train"])
        K = r.shape[1]
        lines += [
            "",
            f"### eta = {eta:g}: the default ({DEFAULT[0]}, depth {DEFAULT[1]}, "
            f"{DEFAULT[2]} trees) on the training logs, estimate / truth",
            "",
            "| rank | truth | "
            + " | ".join(f"fold {f}" for f in config.folds)
            + " | mean over folds | mean estimate |",
            "|---:|---:|" + "---:|" * (len(config.folds) + 2),
        ]
        truth = pbm_position_bias(K, eta=eta)
        for k in range(K):
            lines.append(
                f"| {k + 1} | {truth[k]:.4f} | "
                + " | ".join(f"{x:.3f}" for x in r[:, k])
                + f" | {r[:, k].mean():.3f} | {r[:, k].mean() * truth[k]:.4f} |"
            )
        worst = np.abs(r[:, 1:].mean(axis=0) - 1).max()
        lines += [
            "",
            f"Largest |mean over folds / truth - 1| at ranks 2-{K}: {worst:.3f}; "
            f"largest of a single fold: {np.abs(r[:, 1:] - 1).max():.3f}.",
        ]
    text = "\n".join(lines) + "\n"
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
