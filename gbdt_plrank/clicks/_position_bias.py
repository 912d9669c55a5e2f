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
from typing import Any

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from .._util.compat import require
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
    from: empty, without a click, or missing a rank below its largest."""
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
    missing = np.flatnonzero(np.bincount(log.rank - 1, minlength=K) == 0)
    if missing.size:
        raise ValueError(
            f"every rank up to the largest logged one ({K}) must be logged to "
            f"estimate its observation probability, but rank {_ranks(missing)} "
            f"is not: give position_bias for such a log."
        )
    return K


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
    weight = n.sum(axis=1)  # a row's displays
    pooled = float(np.clip(c.sum() / weight.sum(), 1e-3, 1 - 1e-3))
    base = np.full(Xr.shape[0], math.log(pooled / (1 - pooled)))
    theta = np.full(K, _START)
    gamma = np.full(Xr.shape[0], _START)
    booster = None
    for done in range(0, n_rounds, step_rounds):
        g = gamma[:, None]
        den = np.maximum(1.0 - theta * g, 1e-12)
        seen = c + (n - c) * theta * (1 - g) / den
        relevant = c + (n - c) * (1 - theta) * g / den
        theta = np.clip(seen.sum(axis=0) / n.sum(axis=0), _LOW, _HIGH)
        data = xgb.DMatrix(Xr, label=relevant.sum(axis=1) / weight, weight=weight, base_margin=base)
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

    The position-based model (PBM) clicks row :math:`d` at rank :math:`k` with probability
    :math:`\theta_k \gamma_d`: seen with probability :math:`\theta_k`, clicked when seen with
    probability :math:`\gamma_d`. Only the product is observed, so :math:`\theta` is identified
    only where something links the ranks other than the relevance of the rows shown there.

    *Without features* (``X=None``): expectation-maximisation over one relevance per row
    (Wang et al., 2018). Given :math:`(\theta, \gamma)`, an entry without a click was seen with
    probability :math:`\theta_k(1-\gamma_d)/(1-\theta_k\gamma_d)` and relevant with probability
    :math:`(1-\theta_k)\gamma_d/(1-\theta_k\gamma_d)` (a clicked entry was both); then
    :math:`\theta_k` becomes the mean of the seen posteriors over the entries at rank :math:`k`,
    and :math:`\gamma_d` the mean of the relevant posteriors over the entries of row :math:`d`.
    The ratio :math:`\theta_k / \theta_{k'}` is identified by rows shown at both ranks (or a
    chain of such rows), which a stochastic logger gives and a deterministic one does not: a log
    whose ranks are not all linked so is refused, with what would identify it.

    *With features* (``X``, ``qid``): regression EM (Wang et al., 2018), the relevance
    :math:`\gamma_d = \sigma(f(x_d))` a boosted model of the row's features. In turns: the
    E-step's posteriors above with :math:`\gamma_d` from :math:`f`; :math:`\theta_k` the mean
    seen posterior at rank :math:`k`; ``step_rounds`` more trees of depth ``max_depth`` on
    :math:`f`, a logistic regression on the relevant posteriors (each row's mean over its
    displays, weighted by them), ``n_rounds`` trees in all. Where the features predict the
    rows' relevance, rows alike in them are shown at different ranks across queries, which
    identifies :math:`\theta` from a deterministic logger's log too, under one more assumption:
    the click probability when seen is a function of the features, so that the rank a logger
    gave a row says nothing more of it. Features that predict nothing of the relevance
    (constant, noise) leave the estimate at about the per-rank click-through ratio, which takes
    the relevance of the rows a logger puts at each rank for position; so does a log of a few
    queries, whose rows a model of the features can tell apart one by one. Such a log is
    refused: one whose displayed rows span fewer than 20 queries (``MIN_FEATURE_QUERIES``), or
    whose features' evidence is below 2 (``MIN_FEATURE_EVIDENCE``): a relevance model of them
    (30 trees of depth ``max_depth``), fitted on half of the queries under the estimate, must
    predict the other half's clicks better than the same trees without the features, by two
    standard errors of the per-query gain in log-likelihood. What the test cannot see is
    relevance that the logger knew and the features do not hold: on simulated deterministic
    logs of 50 to 400 queries whose one informative feature has correlation 0.9 (0.8) with the
    logger's relevance, logs the rule takes, the estimate was off by a factor of up to 1.52
    (1.77) at its worst rank, and up to 1.26 where the feature was that relevance, while the
    click-through ratio was off by 2.2 to 2.4 (``research/position_bias_identification.py``, in
    the clicks guide). Where the
    features nearly determine the rank (as query-normalised features of a deterministic
    logger's top rows do), the model can mistake position for relevance; shallow trees (an
    additive model at depth 1) leave it less room to. On MQ2008 (a LambdaMART's top
    10, 100 sessions per query) this was closer to the truth on the validation queries' logs
    than fitting :math:`f` and :math:`\theta` jointly by Fisher scoring on the click likelihood,
    and than deeper trees (``research/position_bias_features.py``).

    ``n_rounds`` is the alternation's budget, and it must let the alternation converge: the
    largest :math:`\theta_k` approaches 1, a fixed point of its update near which each E-step
    moves it little, so a short alternation leaves the estimate flatter than the truth. On
    MQ2008's training logs with :math:`(1/k)^2` and 100 sessions per query, 300 trees left the
    mean over the folds 20% to 24% high at some rank in 2-10 (three independent logs); from 800
    on, within 9% (1000: 6.6% to 8.2%), and barely moving after (to 2000 trees on one log). On
    the validation logs 600 and 1000 trees were level (mean absolute log-error 0.154 and 0.159,
    300: 0.173); 1000 is the default, as 600 still leaves a log of six-document queries 14% off
    at its deepest rank.

    What no setting removes is the log's own noise: the estimate of :math:`\theta_k` cannot be
    finer than the clicks at rank :math:`k`. A top-10 log of MQ2008's 471 training queries with
    :math:`(1/k)^2` and 10 sessions per query holds about 15 clicks at rank 8 and 3 at rank 10
    (relative standard errors of about 26% and 58% even were every row's relevance known), and
    three independent such logs gave estimates whose largest error at ranks 2-10 was 28%, 29%
    and 36%, at rank 8, 9 or 10 (300 trees: 22%, 52%, 60%).

    The scale is fixed by :math:`\max_k \theta_k = 1`: the most seen logged rank is taken to be
    always seen, the largest scale at which every :math:`\theta_k` is a probability. That rank
    is usually rank 1 (then :math:`\theta_1 = 1`), but not in every log (a banner above the
    results, a grid). A common factor in :math:`\theta` divides every reward of
    :func:`~gbdt_plrank.clicks.click_rewards` by it, so it changes neither the ordering a ranker
    learns from them nor a policy's estimated clicks (its observation scales by the same
    factor).

    Parameters
    ----------
    log : ClickLog
        The clicks.
    X : array-like, DataFrame or sparse matrix of shape (n_rows, n_features) or None
        The rows' features (rows as ``log.row`` indexes them, by position), as
        :class:`~gbdt_plrank.PLRankRanker` takes them (numeric, finite or NaN for a missing
        value): the joint fit with features.
    qid : array of shape (n_rows,) or None
        The rows' query ids, with ``X`` (checks that every session shows one query's rows).
    n_iter : int, default 200
        Without features: the most EM iterations.
    tol : float, default 1e-8
        Without features: EM stops when no parameter moves by more than this in an iteration.
    n_rounds : int, default 1000
        With features: the trees of :math:`f` in all (the alternation's budget).
    step_rounds : int, default 10
        With features: the trees grown in each EM iteration (after each E-step).
    max_depth : int, default 1
        With features: the depth of the trees of :math:`f`.
    learning_rate : float, default 0.1
        With features: the trees' step.
    n_jobs : int, default 1
        With features: the booster's threads.

    Returns
    -------
    float64 array of shape (max logged rank,)
        ``theta[k-1]`` for rank ``k``, in (0, 1], divided by the largest (so
        ``theta.max() == 1``, and ``theta[0] == 1`` when rank 1 is the most seen). It passes
        :func:`~gbdt_plrank.clicks.click_rewards`'s rule for a given position bias.

    Raises
    ------
    ValueError
        For an empty log, a log without a click, a rank below the largest logged one that the
        log never shows, a log whose rows and ranks do not identify :math:`\theta` without
        features (saying why and what would), features that cannot identify it (fewer than
        20 queries displayed, or evidence below 2: saying so and what would), ``X`` without
        ``qid`` or the reverse, rows outside ``X``, a feature that is not a finite number or
        NaN, or bad ``n_iter`` / ``tol`` / booster settings; ``MissingDependencyError`` for the
        estimate with features without xgboost.

    Notes
    -----
    Cost: without features, ``n_iter`` passes over the log's entries. With features,
    ``n_rounds`` trees on the log's displayed rows (one training row per displayed feature row,
    its displays and clicks per rank aggregated: it grows with the rows, not the sessions)
    in ``n_rounds / step_rounds`` EM iterations; about 10 s on one thread for the 4700 rows
    a top-10 display shows of MQ2008's training queries.
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
    counts = display_counts(log, int(rows.max()) + 1, K)
    shown = DisplayCounts(counts.shows[rows], counts.hits[rows])
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
