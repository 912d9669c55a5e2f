r"""The position bias: checked where given, estimated from a log where asked for.

Under the position-based model a row :math:`d` shown at rank :math:`k` is clicked with
probability :math:`\theta_k \gamma_d`. :func:`estimate_position_bias` estimates :math:`\theta`
from a log, by row (a stochastic logger's log, which shows a row at several ranks) or through the
rows' features (a deterministic logger's log too, where the features predict the rows'
relevance), and refuses a log, or features, that cannot tell :math:`\theta` from the relevance
of the rows shown at each rank.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from .._util.compat import require
from .._util.frames import caller_level
from .._util.validation import (
    as_feature_matrix,
    as_finite_vector,
    check_choice,
    check_positive_int,
    check_positive_number,
)
from ._click_model import DisplayCounts, FeatureEvidence, display_counts, feature_evidence
from ._log import ClickLog, check_qid, check_rows

__all__ = [
    "MIN_FEATURE_EVIDENCE",
    "MIN_FEATURE_QUERIES",
    "check_position_bias",
    "estimate_position_bias",
    "features_estimate",
    "resolve_position_bias",
]

#: Where the estimate's alternation starts: every rank seen with this probability (1 is a fixed
#: point of the update, which would never leave it).
_START = 0.5

#: Bounds of an estimated observation probability before it is divided by the largest.
_LOW, _HIGH = 1e-6, 1 - 1e-6


def check_position_bias(name: str, theta: Any, log: ClickLog) -> np.ndarray:
    """``theta`` (given as ``name``) as a float64 vector of observation probabilities, one per
    rank, each finite and in (0, 1], covering every rank of ``log``; the one rule of a given
    position bias and of an estimated one."""
    theta = as_finite_vector(name, theta)
    if theta.size == 0:
        raise ValueError(f"{name} must hold one probability per rank, but is empty.")
    bad = np.flatnonzero((theta <= 0) | (theta > 1))
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"{name} must be in (0, 1], but {name}[{i}] is {float(theta[i])!r}.")
    if log.rank.size and log.rank.max() > theta.size:
        raise ValueError(
            f"{name} must cover every logged rank, but rank {log.rank.max()} is "
            f"logged and {theta.size} ranks are given."
        )
    return theta


def resolve_position_bias(position_bias: Any, log: ClickLog) -> np.ndarray:
    """``position_bias`` checked against ``log``, or estimated from it by row (``"estimate"``:
    :func:`estimate_position_bias` without features) and checked by the same rule."""
    if isinstance(position_bias, str):
        check_choice("position_bias", position_bias, ("estimate",))
        return check_position_bias("estimate_position_bias(log)", estimate_position_bias(log), log)
    return check_position_bias("position_bias", position_bias, log)


def _ranks(values: np.ndarray) -> str:
    """Ranks (0-based) as a short 1-based list."""
    shown = ", ".join(str(int(k) + 1) for k in values[:6])
    return shown + (", ..." if values.size > 6 else "")


def _check_estimable(log: ClickLog) -> int:
    """The number of ranks ``K`` of ``log``, after refusing a log that nothing can be estimated
    from (empty, without a click, or missing a rank below its largest) and warning of ranks
    without a click (``_warn_unclicked``)."""
    if len(log) == 0:
        raise ValueError(
            "the log must have entries to estimate the position bias from, but it is empty."
        )
    if not log.click.any():
        raise ValueError(
            f"the log must have clicks to estimate the position bias from, but "
            f"none of its {len(log)} entries is clicked."
        )
    K = int(log.rank.max())
    shown = np.bincount(log.rank - 1, minlength=K)
    missing = np.flatnonzero(shown == 0)
    if missing.size:
        raise ValueError(
            f"every rank up to the largest logged one ({K}) must be logged to "
            f"estimate its observation probability, but rank {_ranks(missing)} "
            f"is not: give position_bias for such a log."
        )
    _warn_unclicked(log, shown)
    return K


def _warn_unclicked(log: ClickLog, shown: np.ndarray) -> None:
    """Warn of the ranks that ``log`` shows (``shown[k-1]`` times rank ``k``) but never clicks:
    the estimate of each is its floor (``_LOW`` before the division by the largest), which says
    only that no click was seen."""
    K = shown.size
    clicked = np.bincount(log.rank - 1, weights=log.click, minlength=K)
    bare = np.flatnonzero(clicked == 0)
    if bare.size == 0:
        return
    displays = ", ".join(f"rank {int(k) + 1}: {int(shown[k])}" for k in bare[:6])
    warnings.warn(
        f"the log has no click at {bare.size} of its {K} ranks (displays {displays}"
        f"{', ...' if bare.size > 6 else ''}), so their observation probability is estimated "
        f"at its floor ({_LOW:g} before the division by the largest): it says only that no "
        f"click was seen there. Log more sessions, or give position_bias for such ranks.",
        UserWarning,
        stacklevel=caller_level(),
    )


def _check_identified(log: ClickLog, K: int) -> None:
    r"""Refuse a log whose rows and ranks do not identify :math:`\theta` without features.

    :math:`\theta_k\gamma_d` fixes :math:`\theta_k/\theta_{k'}` only through rows shown at both
    ranks, or chains of such rows: the ranks must be connected in the graph whose edges join a
    row to the ranks it was shown at.
    """
    rows, d = np.unique(log.row, return_inverse=True)
    n = rows.size + K
    graph = coo_matrix((np.ones(len(log)), (d, rows.size + log.rank - 1)), shape=(n, n))
    _, component = connected_components(graph, directed=False)
    parts = [np.flatnonzero(component[rows.size :] == c) for c in np.unique(component[rows.size :])]
    if len(parts) == 1:
        return
    cause = (
        "no row is shown at two ranks (a deterministic logger: every session of a query "
        "shows one order)"
        if np.all(np.diff(np.unique(np.c_[d, log.rank - 1], axis=0)[:, 0]) > 0)
        else f"its ranks fall into {len(parts)} groups that no row links (ranks "
        f"{_ranks(parts[0])} and ranks {_ranks(parts[1])} share no row)"
    )
    raise ValueError(
        f"the log does not identify the position bias without features: {cause}, so the "
        f"clicks at a rank cannot be told from the relevance of the rows shown there. What "
        f"identifies it: the rows' features (estimate_position_bias(log, X=X, qid=qid)), a "
        f"stochastic logger (a Plackett-Luce policy shows a row at several ranks), or "
        f"randomised swaps of the displayed ranks."
    )


#: The least queries with displays that the estimate through the features takes: features
#: identify the position bias only across queries, and the test of it (``_check_evidence``)
#: holds out half of them.
MIN_FEATURE_QUERIES = 20

#: The trees of the relevance model that tests the features (depth and step the estimate's).
_EVIDENCE_ROUNDS = 30

#: The least evidence that the features predict the clicks beyond the rank: the per-query gain
#: of the held-out log-likelihood over its standard error (a one-sided test at about 2%).
MIN_FEATURE_EVIDENCE = 2.0

_IDENTIFY = (
    "What identifies it: features that predict the rows' relevance (the logger's own), more "
    "queries, a stochastic logger (a Plackett-Luce policy shows a row at several ranks; then "
    "estimate_position_bias(log) without features), or randomised swaps of the displayed "
    "ranks; or give position_bias where it is known."
)


def _check_evidence(evidence: FeatureEvidence) -> None:
    r"""Refuse features that cannot identify the position bias: a log whose displayed rows span
    fewer than ``MIN_FEATURE_QUERIES`` queries, or features whose evidence
    (:func:`~gbdt_plrank.clicks._click_model.feature_evidence`) is below
    ``MIN_FEATURE_EVIDENCE``.

    Features that do not predict the clicks beyond the rank on held-out queries (constant, noise,
    or too few rows for a model of them to carry over to other queries) leave :math:`f` flat
    where it generalises, and the estimate is then about the per-rank click-through ratio: it
    takes the relevance of the rows a logger puts at each rank for position.
    """
    if evidence.queries < MIN_FEATURE_QUERIES:
        raise ValueError(
            f"the features identify the position bias only across queries (rows alike in "
            f"their features shown at different ranks in different queries), and the log must "
            f"show rows of {MIN_FEATURE_QUERIES} or more queries for it, but it shows "
            f"{evidence.queries}. " + _IDENTIFY
        )
    if evidence.z < MIN_FEATURE_EVIDENCE:
        raise ValueError(
            f"the features do not identify the position bias: on held-out queries a relevance "
            f"model of them predicts the clicks no better than one without them, under the "
            f"estimated position bias (evidence z = {evidence.z:.2f} over "
            f"{evidence.queries} queries, {MIN_FEATURE_EVIDENCE:g} or more needed), so the "
            f"estimate would take the relevance of the rows shown at each rank for position "
            f"(it would be about the per-rank click-through ratio). " + _IDENTIFY
        )


def _by_row(log: ClickLog, K: int, *, n_iter: int, tol: float) -> np.ndarray:
    """EM over one relevance per row (the rows' displays at several ranks identify theta)."""
    _, d = np.unique(log.row, return_inverse=True)
    k = log.rank - 1
    c = log.click.astype(np.float64)
    n_k = np.bincount(k, minlength=K).astype(np.float64)
    n_d = np.bincount(d).astype(np.float64)
    theta = np.full(K, _START)
    gamma = np.full(n_d.size, _START)
    for _ in range(n_iter):
        t, g = theta[k], gamma[d]
        den = np.maximum(1.0 - t * g, 1e-12)
        seen = c + (1 - c) * t * (1 - g) / den
        relevant = c + (1 - c) * (1 - t) * g / den
        new_theta = np.clip(np.bincount(k, seen, K) / n_k, _LOW, _HIGH)
        new_gamma = np.clip(np.bincount(d, relevant) / n_d, _LOW, _HIGH)
        delta = max(np.abs(new_theta - theta).max(), np.abs(new_gamma - gamma).max())
        theta, gamma = new_theta, new_gamma
        if delta < tol:
            break
    return theta


def _by_features(
    xgb: Any,
    Xr: Any,
    counts: DisplayCounts,
    K: int,
    *,
    n_rounds: int,
    step_rounds: int,
    max_depth: int,
    learning_rate: float,
    n_jobs: int,
) -> np.ndarray:
    """Regression EM: relevance a boosted model of the features, theta per rank, in turns (the
    displayed rows ``Xr`` with their displays and clicks ``counts``)."""
    n, c = counts.shows, counts.hits
    weight = counts.per_row(n)  # a row's displays
    pooled = float(np.clip(c.sum() / weight.sum(), 1e-3, 1 - 1e-3))
    base = np.full(Xr.shape[0], math.log(pooled / (1 - pooled)))
    theta = np.full(K, _START)
    gamma = np.full(Xr.shape[0], _START)
    shows_at = counts.per_rank(n)  # each rank's displays
    booster = None
    data = xgb.DMatrix(Xr, weight=weight, base_margin=base)  # quantised once, relabelled each turn
    for done in range(0, n_rounds, step_rounds):
        t, g = theta[counts.rank], gamma[counts.row]
        den = np.maximum(1.0 - t * g, 1e-12)
        seen = c + (n - c) * t * (1 - g) / den
        relevant = c + (n - c) * (1 - t) * g / den
        theta = np.clip(counts.per_rank(seen) / shows_at, _LOW, _HIGH)
        data.set_label(counts.per_row(relevant) / weight)
        booster = xgb.train(
            {
                "objective": "binary:logistic",
                "max_depth": max_depth,
                "eta": learning_rate,
                "nthread": n_jobs,
                "min_child_weight": 1e-3,
                "lambda": 1.0,
            },
            data,
            num_boost_round=min(step_rounds, n_rounds - done),
            xgb_model=booster,
        )
        margin = booster.predict(data, output_margin=True).astype(np.float64)
        gamma = 1.0 / (1.0 + np.exp(-margin))
    return theta


def estimate_position_bias(
    log: ClickLog,
    *,
    X: Any = None,
    qid: Any = None,
    n_iter: int = 200,
    tol: float = 1e-8,
    n_rounds: int = 1000,
    step_rounds: int = 10,
    max_depth: int = 1,
    learning_rate: float = 0.1,
    n_jobs: int = 1,
) -> np.ndarray:
    r"""The position-based model's observation probabilities, estimated from a click log.

    The position-based model clicks row :math:`d` at rank :math:`k` with probability
    :math:`\theta_k \gamma_d`. Without features: EM over one relevance :math:`\gamma_d` per row
    (Wang et al., 2018), identified by rows shown at several ranks; with features: regression
    EM, :math:`\gamma_d = \sigma(f(x_d))` with :math:`f` boosted trees, identified from a
    deterministic logger's log too where the features predict the relevance. A log that does
    not identify :math:`\theta` is refused, saying why and what would (:doc:`/guide/clicks`).

    Parameters
    ----------
    log : ClickLog
        The clicks.
    X, qid : array-like, DataFrame or sparse matrix (n_rows, n_features), array (n_rows,) or None
        The rows' features (``log.row`` indexes them by position), as the rankers take them, and
        their query ids (every session must show one query's rows); given together.
    n_iter, tol : int and float, default 200 and 1e-8
        Without features: the most EM iterations, and the largest move at which EM stops.
    n_rounds, step_rounds : int, default 1000 and 10
        With features: the trees of :math:`f` in all, and those grown after each E-step.
    max_depth, learning_rate, n_jobs : int, float and int, default 1, 0.1 and 1
        With features: the trees' depth and step, and the booster's threads.

    Returns
    -------
    float64 array of shape (max logged rank,)
        ``theta[k-1]`` for rank ``k`` in (0, 1], divided by the largest, as
        :func:`~gbdt_plrank.clicks.click_rewards` takes it.

    Raises
    ------
    ValueError
        For an empty log, one without a click or skipping a rank, a log that does not identify
        :math:`\theta`, and bad values; ``MissingDependencyError`` without xgboost for ``X``.

    Warns
    -----
    UserWarning
        For ranks shown but never clicked, with their displays: their estimate is the floor.
    """
    n_iter = check_positive_int("n_iter", n_iter)
    tol = check_positive_number("tol", tol)
    if (X is None) != (qid is None):
        given, missing = ("X", "qid") if qid is None else ("qid", "X")
        raise ValueError(
            f"{given} and {missing} go together (the features of the rows and their "
            f"queries), but {missing} is None."
        )
    if X is None:
        K = _check_estimable(log)
        _check_identified(log, K)
        theta = _by_row(log, K, n_iter=n_iter, tol=tol)
        return theta / theta.max()
    theta, evidence = features_estimate(
        log,
        X=X,
        qid=qid,
        n_rounds=n_rounds,
        step_rounds=step_rounds,
        max_depth=max_depth,
        learning_rate=learning_rate,
        n_jobs=n_jobs,
    )
    _check_evidence(evidence)
    return theta


def features_estimate(
    log: ClickLog,
    *,
    X: Any,
    qid: Any,
    n_rounds: int,
    step_rounds: int,
    max_depth: int,
    learning_rate: float,
    n_jobs: int,
) -> tuple[np.ndarray, FeatureEvidence]:
    """The position bias through the features and the evidence of its features, before
    :func:`estimate_position_bias` tests the evidence (``_check_evidence``).

    Its arguments as :func:`estimate_position_bias`'s (all given), checked the same way; returns
    the estimate divided by its largest value and
    :func:`~gbdt_plrank.clicks._click_model.feature_evidence` of ``_EVIDENCE_ROUNDS`` trees of the
    estimate's depth and step, under the estimate.
    """
    K = _check_estimable(log)
    X = as_feature_matrix(X, allow_nan=True)
    n_rows = int(X.shape[0])
    check_rows(log, n_rows)
    qid = check_qid(qid, n_rows)
    log.check_queries(qid)
    max_depth = check_positive_int("max_depth", max_depth)
    learning_rate = check_positive_number("learning_rate", learning_rate)
    n_jobs = check_positive_int("n_jobs", n_jobs)
    n_rounds = check_positive_int("n_rounds", n_rounds)
    step_rounds = check_positive_int("step_rounds", step_rounds)
    xgb = require("xgboost", purpose="the position bias estimated with features")
    rows = np.unique(log.row)
    shown = display_counts(log, int(rows.max()) + 1, K).take(rows)
    Xr = X[rows]
    theta = _by_features(
        xgb,
        Xr,
        shown,
        K,
        n_rounds=n_rounds,
        step_rounds=step_rounds,
        max_depth=max_depth,
        learning_rate=learning_rate,
        n_jobs=n_jobs,
    )
    evidence = feature_evidence(
        xgb,
        Xr,
        shown,
        qid[rows],
        theta,
        n_rounds=_EVIDENCE_ROUNDS,
        max_depth=max_depth,
        learning_rate=learning_rate,
        n_jobs=n_jobs,
    )
    return theta / theta.max(), evidence
