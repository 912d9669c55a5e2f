r"""The position-based model's likelihood, with the relevance a boosted model of the features.

A row :math:`d` shown at rank :math:`k` is clicked with probability
:math:`\theta_k\, \sigma(f(x_d))`. Given :math:`\theta`, :func:`fit_relevance` grows :math:`f`
(XGBoost, Fisher scoring on that Bernoulli likelihood) on the displays and clicks of each row per
rank; :func:`relevance` predicts :math:`\sigma(f(x))`. :func:`~gbdt_plrank.clicks.click_regression`
fits it with a known :math:`\theta`, cross-fitted by query.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._log import ClickLog

__all__ = [
    "DisplayCounts",
    "RelevanceModel",
    "display_counts",
    "fit_relevance",
    "likelihood_objective",
    "relevance",
]


@dataclass(frozen=True)
class DisplayCounts:
    """Each row's displays and clicks per rank: ``shows[d, k-1]``, ``hits[d, k-1]``."""

    shows: np.ndarray
    hits: np.ndarray


def display_counts(log: ClickLog, n_rows: int, K: int) -> DisplayCounts:
    """The displays and clicks of every row at each of the ranks ``1..K`` of ``log``."""
    shows = np.zeros((n_rows, K))
    hits = np.zeros((n_rows, K))
    np.add.at(shows, (log.row, log.rank - 1), 1.0)
    np.add.at(hits, (log.row, log.rank - 1), log.click)
    return DisplayCounts(shows, hits)


@dataclass(frozen=True)
class RelevanceModel:
    """A fitted :math:`f`: the booster and the constant margin it starts from."""

    booster: Any
    base: float


def likelihood_objective(n: np.ndarray, c: np.ndarray, theta: np.ndarray) -> Any:
    """XGBoost's objective of the click likelihood: the negative log-likelihood's gradient and
    Fisher information in the margin, from each row's displays ``n`` and clicks ``c`` per rank."""

    def objective(margin: np.ndarray, _: Any) -> Any:
        s = 1.0 / (1.0 + np.exp(-margin))[:, None]
        ts = np.minimum(theta * s, 1 - 1e-12)
        # -d/df log-likelihood, and its Fisher information (positive)
        grad = -(c * (1 - s) - (n - c) * theta * s * (1 - s) / (1 - ts)).sum(axis=1)
        hess = (n * theta * s * (1 - s) ** 2 / (1 - ts)).sum(axis=1)
        return grad, np.maximum(hess, 1e-12)

    return objective


def fit_relevance(
    xgb: Any,
    X: Any,
    counts: DisplayCounts,
    theta: np.ndarray,
    *,
    n_rounds: int,
    max_depth: int,
    learning_rate: float,
    n_jobs: int,
) -> RelevanceModel:
    r""":math:`f` fitted on the rows ``X`` with their displays and clicks ``counts`` (rows
    aligned), :math:`\theta` given, starting from the log-odds of the pooled click rate per
    observation, clipped to [0.001, 0.999]."""
    n, c = counts.shows, counts.hits
    pooled = float(np.clip(c.sum() / (n @ theta).sum(), 1e-3, 1 - 1e-3))
    base = math.log(pooled / (1 - pooled))
    dtrain = xgb.DMatrix(X, base_margin=np.full(n.shape[0], base))
    booster = xgb.train(
        {
            "max_depth": max_depth,
            "eta": learning_rate,
            "nthread": n_jobs,
            "min_child_weight": 1e-3,
            "lambda": 1.0,
        },
        dtrain,
        num_boost_round=n_rounds,
        obj=likelihood_objective(n, c, theta),
    )
    return RelevanceModel(booster, base)


def relevance(xgb: Any, model: RelevanceModel, X: Any) -> np.ndarray:
    r""":math:`\sigma(f(x))` of the rows ``X``, float64 in (0, 1)."""
    margin = model.booster.predict(
        xgb.DMatrix(X, base_margin=np.full(X.shape[0], model.base)), output_margin=True
    )
    return 1.0 / (1.0 + np.exp(-margin.astype(np.float64)))
