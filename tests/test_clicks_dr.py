"""Doubly robust click rewards and off-policy value estimates: exact enumeration and simulation."""

from __future__ import annotations

import itertools
import re

import naive
import numpy as np
import pytest

from gbdt_plrank.clicks import (
    ClickLog,
    PolicyValue,
    click_regression,
    click_rewards,
    estimate_policy_value,
    simulate_clicks,
)

pytest.importorskip("xgboost")


def _outcomes(scores, K, theta, gamma):
    """Every (one-session log, probability) of a Plackett-Luce logger with scores, showing the
    top K, rank k seen with probability theta[k-1], a seen row clicked with probability gamma."""
    for ranking, p in naive.partial_rankings(scores, K):
        click_p = [theta[k] * gamma[d] for k, d in enumerate(ranking)]
        for clicks in itertools.product((0, 1), repeat=len(ranking)):
            q = p * np.prod([c_p if c else 1 - c_p for c, c_p in zip(clicks, click_p)])
            log = ClickLog(session=[0] * len(ranking), row=list(ranking),
                           rank=list(range(1, len(ranking) + 1)), click=list(clicks))
            yield log, q


def _exact_propensities(scores, K, theta):
    rho = np.zeros(len(scores))
    for ranking, p in naive.partial_rankings(scores, K):
        for k, d in enumerate(ranking):
            rho[d] += p * theta[k]
    return rho


CASES = [(2, 1), (3, 2), (4, 2), (4, 3)]


@pytest.mark.parametrize(("D", "K"), CASES)
def test_doubly_robust_rewards_are_unbiased_with_the_loggers_propensities(D, K):
    rng = np.random.default_rng(D * 10 + K)
    scores = rng.normal(size=D)
    theta = 1.0 / np.arange(1, K + 1)
    gamma = rng.uniform(0.05, 0.95, size=D)
    rho = _exact_propensities(scores, K, theta)
    regression = rng.uniform(-0.5, 1.5, size=D)  # any fixed regression, even a poor one
    mean = np.zeros(D)
    total = 0.0
    for log, q in _outcomes(scores, K, theta, gamma):
        mean += q * click_rewards(log, D, position_bias=theta, estimator="doubly-robust",
                                  propensities=rho, qid=np.zeros(D), regression=regression)
        total += q
    assert total == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(mean, gamma, rtol=0, atol=1e-12)


@pytest.mark.parametrize(("D", "K"), CASES)
def test_doubly_robust_rewards_are_unbiased_with_the_true_regression(D, K):
    rng = np.random.default_rng(D * 10 + K + 1)
    scores = rng.normal(size=D)
    theta = 1.0 / np.arange(1, K + 1)
    gamma = rng.uniform(0.05, 0.95, size=D)
    wrong = _exact_propensities(scores, K, theta) * rng.uniform(0.3, 3.0, size=D)
    mean = sum(q * click_rewards(log, D, position_bias=theta, estimator="doubly-robust",
                                 propensities=wrong, qid=np.zeros(D), regression=gamma)
               for log, q in _outcomes(scores, K, theta, gamma))
    np.testing.assert_allclose(mean, gamma, rtol=0, atol=1e-12)
    # the policy-aware rewards with the same wrong propensities are biased
    ips = sum(q * click_rewards(log, D, position_bias=theta, propensities=wrong, qid=np.zeros(D))
              for log, q in _outcomes(scores, K, theta, gamma))
    assert np.abs(ips - gamma).max() > 0.01


def test_doubly_robust_rewards_by_hand_and_never_shown_rows():
    log = ClickLog(session=[0, 0, 1, 1], row=[0, 1, 1, 0], rank=[1, 2, 1, 2],
                   click=[1, 0, 0, 0])
    theta = np.array([1.0, 0.5])
    rho = np.array([0.75, 0.5, 0.25])
    g = np.array([0.2, 0.4, 0.6])
    r = click_rewards(log, 3, position_bias=theta, estimator="doubly-robust", propensities=rho,
                      qid=[7, 7, 7], regression=g)
    # row 0: 0.2 + (1 - 1.5 x 0.2) / (2 x 0.75); row 1: 0.4 + (0 - 1.5 x 0.4) / (2 x 0.5);
    # row 2 never shown: its regression
    np.testing.assert_allclose(r, [0.2 + 0.7 / 1.5, 0.4 - 0.6, 0.6])
    assert r[1] < 0  # unclipped
    # without propensities a shown row's reward is the policy-aware one
    freq = click_rewards(log, 3, position_bias=theta, estimator="doubly-robust", regression=g)
    pa = click_rewards(log, 3, position_bias=theta)
    np.testing.assert_allclose(freq[:2], pa[:2], atol=1e-15)
    assert freq[2] == 0.6


def test_doubly_robust_arguments_are_named():
    log = ClickLog(session=[0], row=[0], rank=[1], click=[1])
    with pytest.raises(ValueError, match=re.escape("X must be given (or regression=), but it "
                                                   "is None.")):
        click_rewards(log, 2, position_bias=[1.0], estimator="doubly-robust", qid=[0, 0])
    with pytest.raises(ValueError, match=re.escape("regression must have shape (2,) (one per "
                                                   "row), but has shape (3,).")):
        click_rewards(log, 2, position_bias=[1.0], estimator="doubly-robust",
                      regression=[0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match=re.escape("regression must be finite")):
        click_rewards(log, 2, position_bias=[1.0], estimator="doubly-robust",
                      regression=[0.1, np.nan])
    with pytest.raises(ValueError, match=re.escape("n_folds must be >= 2 (cross-fitting), but 1 "
                                                   "is given.")):
        click_regression(log, np.zeros((2, 1)), [0, 1], position_bias=[1.0], n_folds=1)


def _simulated(n_queries=60, n_docs=8, n_sessions=10, seed=0):
    """Features that predict relevance, a Plackett-Luce logger on a noisy score, and its log."""
    rng = np.random.default_rng(seed)
    n = n_queries * n_docs
    y = rng.integers(0, 3, size=n).astype(float)
    X = np.c_[y + rng.normal(scale=0.7, size=n), rng.normal(size=(n, 2))]
    qid = np.repeat(np.arange(n_queries), n_docs)
    logger = 0.5 * X[:, 0] + rng.normal(size=n)
    return X, y, qid, logger


def _pl_log(logger, y, n_queries, n_docs, n_sessions, K, seed, noise=0.1, eta=1.0):
    rng = np.random.default_rng(seed)
    rankings = []
    for q in range(n_queries):
        s = logger[q * n_docs:(q + 1) * n_docs]
        g = rng.gumbel(size=(n_sessions, n_docs))
        rankings.append(q * n_docs + np.argsort(-(s + g), axis=1)[:, :K])
    return simulate_clicks(rankings, y, eta=eta, noise=noise, top_k=K, seed=seed)


def _mc_propensities(logger, n_queries, n_docs, K, theta, n=20000, seed=1):
    rng = np.random.default_rng(seed)
    rho = np.zeros(logger.size)
    for q in range(n_queries):
        s = logger[q * n_docs:(q + 1) * n_docs]
        order = np.argsort(-(s + rng.gumbel(size=(n, n_docs))), axis=1)[:, :K]
        for k in range(K):
            rho[q * n_docs:(q + 1) * n_docs] += theta[k] * np.bincount(
                order[:, k], minlength=n_docs) / n
    return rho


def test_doubly_robust_is_unbiased_by_grade_with_less_variance_than_policy_aware():
    nq, nd, ns, K = 40, 8, 10, 5
    X, y, qid, logger = _simulated(nq, nd)
    theta = 1.0 / np.arange(1, K + 1)
    rho = _mc_propensities(logger, nq, nd, K, theta)
    gamma = np.where(y > 0, 1.0, 0.1)
    dr, pa = [], []
    for rep in range(30):
        log = _pl_log(logger, y, nq, nd, ns, K, seed=100 + rep)
        dr.append(click_rewards(log, y.size, position_bias=theta, estimator="doubly-robust",
                                propensities=rho, qid=qid, X=X, seed=rep))
        pa.append(click_rewards(log, y.size, position_bias=theta, propensities=rho, qid=qid))
    dr, pa = np.array(dr), np.array(pa)
    for grade in (0, 1, 2):
        rows = y == grade
        err = (dr[:, rows] - gamma[rows]).mean(axis=1)  # per replication, over the grade's rows
        bias, se = err.mean(), err.std(ddof=1) / np.sqrt(err.size)
        assert abs(bias) < 4 * se + 0.01, (grade, bias, se)
    assert dr.var(axis=0).mean() < 0.9 * pa.var(axis=0).mean()


def test_the_regression_never_sees_its_own_querys_clicks():
    nq, nd, K = 20, 6, 3
    X, y, qid, logger = _simulated(nq, nd)
    log = _pl_log(logger, y, nq, nd, 20, K, seed=5)
    theta = 1.0 / np.arange(1, K + 1)
    g = click_regression(log, X, qid, position_bias=theta, seed=3)
    own = qid[log.row] == 0
    flipped = ClickLog(session=log.session, row=log.row, rank=log.rank,
                       click=np.where(own, 1 - log.click, log.click))
    g2 = click_regression(flipped, X, qid, position_bias=theta, seed=3)
    np.testing.assert_array_equal(g[qid == 0], g2[qid == 0])
    assert not np.array_equal(g, g2)  # the other fold's model did see them
    assert ((g > 0) & (g < 1)).all()



def test_the_regression_leaves_xgboosts_global_settings_alone():
    """Fitting the regression must not change the process's XGBoost configuration (a
    ``verbosity`` in a booster's parameters is global in XGBoost and silenced the user's own
    warnings afterwards)."""
    import xgboost as xgb

    nq, nd, K = 6, 4, 2
    X, y, qid, logger = _simulated(nq, nd)
    log = _pl_log(logger, y, nq, nd, 5, K, seed=1)
    before = xgb.get_config()
    click_regression(log, X, qid, position_bias=1.0 / np.arange(1, K + 1), seed=0)
    assert xgb.get_config() == before

# --------------------------------------------------------------------------------------------
# Off-policy value
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("D", "K"), CASES)
@pytest.mark.parametrize("estimator", ["policy-aware", "doubly-robust"])
def test_policy_value_is_unbiased_by_enumeration(D, K, estimator):
    rng = np.random.default_rng(D * 100 + K)
    scores = rng.normal(size=D)
    theta = 1.0 / np.arange(1, K + 1)
    gamma = rng.uniform(0.05, 0.95, size=D)
    rho = _exact_propensities(scores, K, theta)
    w = _exact_propensities(rng.normal(size=D), K, theta)  # a new PL policy
    regression = rng.uniform(0, 1, size=D) if estimator == "doubly-robust" else None
    mean = sum(q * estimate_policy_value(log, w, qid=np.zeros(D), position_bias=theta,
                                         propensities=rho, estimator=estimator,
                                         regression=regression).value
               for log, q in _outcomes(scores, K, theta, gamma))
    assert mean == pytest.approx(float(w @ gamma), abs=1e-12)


def test_policy_value_refuses_rows_the_logger_never_shows():
    log = ClickLog(session=[0, 1], row=[0, 0], rank=[1, 1], click=[1, 0])
    with pytest.raises(ValueError, match=re.escape(
            "the new policy observes row 1 (expected observation 0.5) that the logging policy "
            "never shows (its propensity from propensities is 0.0)")):
        estimate_policy_value(log, [1.0, 0.5], qid=[0, 0], position_bias=[1.0],
                              propensities=[1.0, 0.0])
    with pytest.raises(ValueError, match=re.escape("its propensity from the logged display "
                                                   "frequencies is 0.0")):
        estimate_policy_value(log, [1.0, 0.5], qid=[0, 0], position_bias=[1.0])
    with pytest.raises(ValueError, match=re.escape("policy must hold expected observations >= 0, "
                                                   "but policy[1] is -0.5.")):
        estimate_policy_value(log, [1.0, -0.5], qid=[0, 0], position_bias=[1.0])
    # a row the new policy never shows needs no propensity
    v = estimate_policy_value(log, [1.0, 0.0], qid=[0, 0], position_bias=[1.0],
                              propensities=[1.0, 0.0])
    assert isinstance(v, PolicyValue) and v.value == 0.5 and v.n_sessions == 2


@pytest.mark.parametrize("estimator", ["policy-aware", "doubly-robust"])
def test_policy_value_intervals_cover_the_truth(estimator):
    nq, nd, ns, K = 15, 5, 20, 3
    rng = np.random.default_rng(11)
    theta = 1.0 / np.arange(1, K + 1)
    y = rng.integers(0, 2, size=nq * nd).astype(float)
    gamma = np.where(y > 0, 1.0, 0.1)
    logger = rng.normal(size=y.size)
    rho = _mc_propensities(logger, nq, nd, K, theta, n=50000)
    new = logger + 2 * y
    w = _mc_propensities(new, nq, nd, K, theta, n=50000, seed=2)
    qid = np.repeat(np.arange(nq), nd)
    truth = float(w @ gamma) / nq
    regression = np.clip(gamma + rng.normal(scale=0.3, size=y.size), 0, 1)
    hits = 0
    n_rep = 200
    for rep in range(n_rep):
        log = _pl_log(logger, y, nq, nd, ns, K, seed=1000 + rep)
        est = estimate_policy_value(log, w, qid=qid, position_bias=theta, propensities=rho,
                                    estimator=estimator,
                                    regression=regression if estimator == "doubly-robust"
                                    else None)
        lo, hi = est.interval(0.9)
        hits += lo <= truth <= hi
    assert 0.84 <= hits / n_rep <= 0.96, hits
