"""How close the click rewards of ``gbdt-plrank clicks`` are, per row, for candidate regressions
of the doubly robust estimator.

For every fold of a clicks configuration, the stochastic logger's log of the first ``--sessions``
sessions per query is made as the experiment makes it
(:class:`gbdt_plrank.harness.clicks.run._Fold`: the same logger, the same seeds), and the rewards of
the validation rows (``--split``) are compared with the simulated click probability when seen
(:func:`gbdt_plrank.clicks.seen_click_probability`): mean squared error by grade and over every row,
and the within-query error (each query's mean error removed first: a shift common to a query's rows
changes no ranking).

Rewards:

- ``policy-aware (logged)``: clicks over the position bias summed over the displays (the
  experiment's ``plrank-policy-aware``);
- ``policy-aware (policy)``: clicks over (sessions x the logger's expected exposure), inverse
  propensity scoring (the doubly robust rewards with the regression 0);
- for each regression ``g`` (cross-fitted by query, seed 0): ``g`` alone, the doubly robust
  rewards with the logger's expected exposure (the experiment's ``plrank-doubly-robust`` at
  ``shrinkage = 0``), and with the logged display frequencies (the policy-aware reward on shown
  rows, ``g`` on the rows the log never shows);
- for the default regression, the logger's calibrated score and the oracle (``POOLED``): the
  logger's expected exposure pooled as if from ``M`` = 10 or 100 rankings
  (``propensity_samples=M``), and the rewards shrunk by ``kappa`` pseudo-observations at ``g``
  (``shrinkage=kappa`` of :func:`gbdt_plrank.clicks.click_rewards`, ``KAPPAS``) on the display
  frequencies, and on the logger's expected exposure for ``kappa`` = 1 and 3.

Regressions: the position-based likelihood of :func:`gbdt_plrank.clicks.click_regression`
(XGBoost, Fisher scoring; the default and a smaller booster), the same likelihood fitted by
regression-EM (Wang et al. 2018), the logger's score calibrated to the click probability by
that likelihood (``sigmoid(a s + b)``, also with the query's mean score removed), an
exposure-weighted regression on the policy-aware rewards, the mean click probability, and the
true click probability (an oracle, a floor for the doubly robust error).

    nice -n 19 python research/dr_regressions.py configs/clicks-mq2008.toml --sessions 10 \\
        --split vali --out benchmarks/results/dr_regressions_vali.md
    nice -n 19 python research/dr_regressions.py configs/clicks-mq2008.toml --sessions 10 \\
        --split train --out benchmarks/results/dr_regressions_train.md
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from scipy.optimize import minimize

from gbdt_plrank.clicks import (
    ClickLog,
    click_regression,
    click_rewards,
    pbm_position_bias,
    seen_click_probability,
)
from gbdt_plrank.harness.clicks.config import load_clicks_config
from gbdt_plrank.harness.clicks.run import _Fold
from gbdt_plrank.harness.data import dataset_label, load


def _displays(log: ClickLog, n_rows: int, K: int) -> tuple[np.ndarray, np.ndarray]:
    """Displays and clicks of every row at every rank, shape (n_rows, K)."""
    shows, hits = np.zeros((n_rows, K)), np.zeros((n_rows, K))
    np.add.at(shows, (log.row, log.rank - 1), 1.0)
    np.add.at(hits, (log.row, log.rank - 1), log.click)
    return shows, hits


def _query_folds(qid: np.ndarray, seed: int, n_folds: int = 2) -> np.ndarray:
    """Each row's query fold, as :func:`click_regression` draws them."""
    queries, q = np.unique(qid, return_inverse=True)
    return (np.random.default_rng(seed).permutation(queries.size) % n_folds)[q]


def cross_fit(
    fit: Callable[[np.ndarray], Callable[[np.ndarray], np.ndarray]],
    qid: np.ndarray,
    *,
    seed: int = 0,
) -> np.ndarray:
    """Predictions of every row by ``fit(train_rows)`` fitted on the other query fold."""
    fold = _query_folds(qid, seed)
    out = np.zeros(qid.size)
    for f in (0, 1):
        predict = fit(np.flatnonzero(fold != f))
        test = np.flatnonzero(fold == f)
        out[test] = predict(test)
    return out


def _pbm_nll(p: np.ndarray, n: np.ndarray, c: np.ndarray, theta: np.ndarray) -> float:
    """Negative log-likelihood of displays ``n`` and clicks ``c`` (rows x ranks) at click
    probabilities when seen ``p`` (rows)."""
    tp = np.clip(theta * p[:, None], 1e-12, 1 - 1e-12)
    return float(-(c * np.log(tp) + (n - c) * np.log1p(-tp)).sum())


def logger_calibrated(
    score: np.ndarray,
    qid: np.ndarray,
    shows: np.ndarray,
    hits: np.ndarray,
    theta: np.ndarray,
    *,
    centred: bool,
) -> np.ndarray:
    """``sigmoid(a s + b)`` with ``s`` the logger's score (minus its query's mean with
    ``centred``), ``(a, b)`` by the position-based likelihood of the other query fold."""
    if centred:
        _, q = np.unique(qid, return_inverse=True)
        score = score - (np.bincount(q, score) / np.bincount(q))[q]
    score = (score - score.mean()) / (score.std() or 1.0)

    def fit(train: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
        n, c, s = shows[train], hits[train], score[train]

        def nll(ab: np.ndarray) -> float:
            return _pbm_nll(1 / (1 + np.exp(-(ab[0] * s + ab[1]))), n, c, theta)

        a, b = minimize(nll, np.zeros(2), method="Nelder-Mead").x
        return lambda rows: 1 / (1 + np.exp(-(a * score[rows] + b)))

    return cross_fit(fit, qid)


def regression_em(
    X: Any,
    qid: np.ndarray,
    shows: np.ndarray,
    hits: np.ndarray,
    theta: np.ndarray,
    *,
    n_iter: int = 10,
    n_rounds: int = 30,
) -> np.ndarray:
    """Regression-EM (Wang et al. 2018) with the position bias known: a row's unclicked display
    at rank k is relevant with posterior ``(1 - theta_k) g / (1 - theta_k g)``; XGBoost
    (``reg:logistic``, weighted by displays) regresses the mean posterior on the features, and
    the next E-step uses its predictions; cross-fitted by query."""
    import xgboost as xgb

    def fit(train: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
        rows = train[shows[train].sum(axis=1) > 0]
        n, c = shows[rows], hits[rows]
        g = np.full(rows.size, np.clip(c.sum() / (n @ theta).sum(), 1e-3, 1 - 1e-3))
        booster = None
        for _ in range(n_iter):
            post = (c + (n - c) * (1 - theta) * g[:, None] / (1 - theta * g[:, None])).sum(1)
            target = post / n.sum(axis=1)
            dtrain = xgb.DMatrix(X[rows], label=target, weight=n.sum(axis=1))
            booster = xgb.train(
                {
                    "objective": "reg:logistic",
                    "max_depth": 3,
                    "eta": 0.1,
                    "nthread": 1,
                    "min_child_weight": 1e-3,
                },
                dtrain,
                n_rounds,
            )
            g = np.clip(booster.predict(dtrain), 1e-6, 1 - 1e-6)
        return lambda test: booster.predict(xgb.DMatrix(X[test])).astype(np.float64)

    return cross_fit(fit, qid)


def pa_regression(X: Any, qid: np.ndarray, rewards: np.ndarray, seen: np.ndarray) -> np.ndarray:
    """An exposure-weighted XGBoost regression (squared error) of the policy-aware rewards of
    the shown rows on the features, cross-fitted by query."""
    import xgboost as xgb

    def fit(train: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
        rows = train[seen[train] > 0]
        booster = xgb.train(
            {
                "objective": "reg:squarederror",
                "max_depth": 3,
                "eta": 0.1,
                "nthread": 1,
                "lambda": 1.0,
            },
            xgb.DMatrix(X[rows], label=rewards[rows], weight=seen[rows]),
            100,
        )
        return lambda test: booster.predict(xgb.DMatrix(X[test])).astype(np.float64)

    return cross_fit(fit, qid)


def constant(qid: np.ndarray, shows: np.ndarray, hits: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """The pooled click probability when seen of the other query fold."""

    def fit(train: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
        p = hits[train].sum() / (shows[train] @ theta).sum()
        return lambda test: np.full(test.size, p)

    return cross_fit(fit, qid)


def errors(r: np.ndarray, gamma: np.ndarray, y: np.ndarray, qid: np.ndarray) -> dict[str, tuple]:
    """Column -> (sum of squared errors, rows): by grade, all rows, and within query."""
    e = r - gamma
    _, q = np.unique(qid, return_inverse=True)
    within = e - (np.bincount(q, e) / np.bincount(q))[q]
    out = {
        f"grade {g:g}": (float((e[y == g] ** 2).sum()), int((y == g).sum())) for g in np.unique(y)
    }
    out["all"] = (float((e**2).sum()), e.size)
    out["within query"] = (float((within**2).sum()), e.size)
    return out


#: The regressions also shown with pooled propensities and shrunk.
POOLED = (
    "position-based likelihood, XGBoost (default)",
    "logger's score, calibrated",
    "oracle: the true click probability",
)


#: The pseudo-observations of the shrunk rewards.
KAPPAS = (0.5, 1.0, 2.0, 3.0, 5.0, 10.0)


def fold_rewards(unit: _Fold, split_name: str, s: int) -> tuple[dict[str, np.ndarray], Any]:
    """Reward name -> rewards of the rows of ``split_name``, and the split."""
    config = unit.config
    log = unit.logs(True, s)[split_name]
    split = getattr(unit.data, split_name)
    X, qid, y = split.X, split.qid, split.y
    theta = pbm_position_bias(config.top_k, eta=config.eta)
    n_rows = y.size
    rho = unit.propensities(split, theta, n_samples=config.propensity_samples)
    shows, hits = _displays(log, n_rows, theta.size)
    seen = shows @ theta
    pa_logged = click_rewards(log, n_rows, position_bias=theta, qid=qid)
    regressions = {
        "position-based likelihood, XGBoost (default)": click_regression(
            log, X, qid, position_bias=theta
        ),
        "position-based likelihood, XGBoost 30 trees depth 2": click_regression(
            log, X, qid, position_bias=theta, n_rounds=30, max_depth=2
        ),
        "position-based likelihood, regression-EM": regression_em(X, qid, shows, hits, theta),
        "logger's score, calibrated": logger_calibrated(
            unit.logger.predict(X), qid, shows, hits, theta, centred=False
        ),
        "logger's score minus query mean, calibrated": logger_calibrated(
            unit.logger.predict(X), qid, shows, hits, theta, centred=True
        ),
        "exposure-weighted regression on policy-aware rewards": pa_regression(
            X, qid, pa_logged, seen
        ),
        "constant (pooled click probability)": constant(qid, shows, hits, theta),
        "oracle: the true click probability": seen_click_probability(
            y, noise=config.noise, graded=config.graded
        ),
    }
    out = {
        "policy-aware (logged)": pa_logged,
        "policy-aware (policy)": click_rewards(log, n_rows, position_bias=theta, qid=qid, **rho),
    }
    for name, g in regressions.items():
        out[f"{name}: g"] = g
        out[f"{name}: DR (policy)"] = click_rewards(
            log,
            n_rows,
            position_bias=theta,
            qid=qid,
            estimator="doubly-robust",
            regression=g,
            **rho,
        )
        out[f"{name}: DR (logged)"] = click_rewards(
            log, n_rows, position_bias=theta, qid=qid, estimator="doubly-robust", regression=g
        )
        if name in POOLED:
            for m in (10, 100):
                out[f"{name}: DR (policy pooled, M={m})"] = click_rewards(
                    log,
                    n_rows,
                    position_bias=theta,
                    qid=qid,
                    estimator="doubly-robust",
                    regression=g,
                    propensities=rho["propensities"],
                    propensity_samples=m,
                )
            for kappa in KAPPAS:
                out[f"{name}: shrunk to g, kappa={kappa:g}"] = click_rewards(
                    log,
                    n_rows,
                    position_bias=theta,
                    qid=qid,
                    estimator="doubly-robust",
                    regression=g,
                    shrinkage=kappa,
                )
            for kappa in (1.0, 3.0):
                out[f"{name}: shrunk to g, kappa={kappa:g}, policy propensities"] = click_rewards(
                    log,
                    n_rows,
                    position_bias=theta,
                    qid=qid,
                    estimator="doubly-robust",
                    regression=g,
                    shrinkage=kappa,
                    **rho,
                )
    return out, split


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("config", help="gbdt-plrank clicks configuration file")
    parser.add_argument("--sessions", type=int, default=10, help="sessions per query")
    parser.add_argument("--split", default="vali", choices=("vali", "train"))
    parser.add_argument("--folds", type=int, nargs="*", help="default: the config's folds")
    parser.add_argument("--out", required=True, help="markdown file to write")
    args = parser.parse_args()
    config = load_clicks_config(args.config)
    sums: dict[str, dict[str, np.ndarray]] = {}
    folds = args.folds or config.folds
    for data in config.datasets:
        for fold in folds:
            dataset = load(data, fold, drop_empty_test_queries=config.drop_empty_test_queries)
            unit = _Fold(config, dataset, 0)
            rewards, split = fold_rewards(unit, args.split, args.sessions)
            gamma = seen_click_probability(split.y, noise=config.noise, graded=config.graded)
            for name, r in rewards.items():
                acc = sums.setdefault(name, {})
                for column, (sse, n) in errors(r, gamma, split.y, split.qid).items():
                    acc[column] = acc.get(column, np.zeros(2)) + np.array([sse, n])
            print(dataset_label(data, fold), flush=True)
    columns = list(next(iter(sums.values())))
    counts = next(iter(sums.values()))
    lines = [
        f"## Click rewards of the {args.split} rows: mean squared error per row, by regression",
        "",
        f"{Path(args.config).name}, {args.sessions} sessions per query of the stochastic "
        f"logger, folds {', '.join(map(str, folds))} pooled; errors against the simulated click "
        "probability when seen; rows per column: "
        + ", ".join(f"{c} {int(counts[c][1])}" for c in columns)
        + ".",
        "",
        f"Command: `python research/dr_regressions.py {args.config} --sessions {args.sessions} "
        f"--split {args.split}"
        + (f" --folds {' '.join(map(str, folds))}" if args.folds else "")
        + f" --out {args.out}`",
        "",
        "| rewards | " + " | ".join(columns) + " |",
        "|---|" + "---:|" * len(columns),
    ]
    for name, acc in sums.items():
        lines.append(
            f"| {name} | "
            + " | ".join(f"{t / n:.4f}" if n else "" for t, n in (acc[c] for c in columns))
            + " |"
        )
    text = "\n".join(lines) + "\n"
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
