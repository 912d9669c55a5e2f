"""The doubly robust estimator's regression: every row's click probability when seen.

:func:`click_regression` fits the position-based model's likelihood with the position bias
known (:mod:`._click_model`), cross-fitted by query, so that no row's estimate has seen its own
query's clicks.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._util.compat import require
from .._util.validation import (
    as_feature_matrix,
    check_choice,
    check_positive_int,
    check_positive_number,
    check_seed,
)
from ._click_model import (
    REGRESSION_FEATURES,
    display_counts,
    fit_relevance,
    query_centred,
    relevance,
)
from ._log import ClickLog, check_qid, check_rows
from ._position_bias import resolve_position_bias

__all__ = ["click_regression"]


def click_regression(
    log: ClickLog,
    X: Any,
    qid: Any,
    *,
    position_bias: Any,
    n_folds: int = 2,
    n_rounds: int = 100,
    max_depth: int = 3,
    learning_rate: float = 0.1,
    seed: int = 0,
    n_jobs: int = 1,
    features: str = "raw",
) -> np.ndarray:
    r"""Every row's click probability when seen, regressed on its features, cross-fitted by query.

    The position-based model's likelihood with the observation as a known factor: a row
    :math:`d` shown at rank :math:`k` is clicked with probability :math:`\theta_k\,
    \sigma(f(x_d))`, :math:`f` a small XGBoost model (Fisher scoring) fitted on the other query
    folds' displays and clicks, so that no row's estimate has seen its own query's clicks (what
    keeps the doubly robust rewards unbiased). Cost, measurements: :doc:`/guide/clicks`.

    Parameters
    ----------
    log : ClickLog
        The clicks.
    X : array-like, DataFrame or sparse matrix of shape (n_rows, n_features)
        The rows' features (by position), as :class:`~gbdt_plrank.PLRankRanker` takes them.
    qid : array of shape (n_rows,)
        The rows' query ids.
    position_bias : array of shape (K,) or "estimate"
        As in :func:`click_rewards`.
    n_folds : int, default 2
        Query folds, ``>= 2``, drawn at random with ``seed`` (the booster is deterministic).
    n_rounds, max_depth, learning_rate : int, int, float
        The booster's rounds (``>= 1``), tree depth (``>= 1``) and step (``> 0``).
    seed, n_jobs : int, default 0 and 1
        Seed of the query folds, and the booster's threads.
    features : {"raw", "centred"}, default "raw"
        What the booster reads: the features as they are, or each minus its mean over the rows
        of the row's query (``"centred"``; dense float32), for features whose level within a
        query says nothing of its clicks (raw web features such as term counts).

    Returns
    -------
    float64 array of shape (n_rows,)
        :math:`\hat\gamma_d = \sigma(f(x_d))` in (0, 1), displayed or not; a fold whose other
        folds hold no display gets 0 (its doubly robust rewards are then the policy-aware ones).

    Raises
    ------
    ValueError
        For a bad value, naming it; ``MissingDependencyError`` without xgboost.
    """
    xgb = require("xgboost", purpose="the doubly robust estimator's regression")
    n_folds = check_positive_int("n_folds", n_folds)
    if n_folds < 2:
        raise ValueError(f"n_folds must be >= 2 (cross-fitting), but {n_folds} is given.")
    n_rounds = check_positive_int("n_rounds", n_rounds)
    max_depth = check_positive_int("max_depth", max_depth)
    learning_rate = check_positive_number("learning_rate", learning_rate)
    seed = check_seed("seed", seed)
    features = check_choice("features", features, REGRESSION_FEATURES)
    X = as_feature_matrix(X, allow_nan=True)
    n_rows = int(X.shape[0])
    qid = check_qid(qid, n_rows)
    check_rows(log, n_rows)
    log.check_queries(qid)
    theta = resolve_position_bias(position_bias, log)
    if features == "centred":
        X = query_centred(X, qid)
    counts = display_counts(log, n_rows, theta.size)
    queries, q = np.unique(qid, return_inverse=True)
    fold = np.random.default_rng(seed).permutation(queries.size) % n_folds
    row_fold = fold[q]
    shown = counts.shown()
    gamma = np.zeros(n_rows)
    for f in range(n_folds):
        train = np.flatnonzero(shown & (row_fold != f))
        test = np.flatnonzero(row_fold == f)
        if not train.size or not test.size:
            continue
        model = fit_relevance(
            xgb,
            X[train],
            counts.take(train),
            theta,
            n_rounds=n_rounds,
            max_depth=max_depth,
            learning_rate=learning_rate,
            n_jobs=n_jobs,
        )
        gamma[test] = relevance(xgb, model, X[test])
    return gamma
