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
            log = ClickLog(
                session=[0] * len(ranking),
                row=list(ranking),
                rank=list(range(1, len(ranking) + 1)),
                click=list(clicks),
            )
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
        mean += q * click_rewards(
            log,
            D,
            position_bias=theta,
            estimator="doubly-robust",
            propensities=rho,
            qid=np.zeros(D),
            regression=regression,
        )
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
    mean = sum(
        q
        * click_rewards(
            log,
            D,
            position_bias=theta,
            estimator="doubly-robust",
            propensities=wrong,
            qid=np.zeros(D),
            regression=gamma,
        )
        for log, q in _outcomes(scores, K, theta, gamma)
    )
    np.testing.assert_allclose(mean, gamma, rtol=0, atol=1e-12)
    # the policy-aware rewards with the same wrong propensities are biased
    ips = sum(
        q * click_rewards(log, D, position_bias=theta, propensities=wrong, qid=np.zeros(D))
        for log, q in _outcomes(scores, K, theta, gamma)
    )
    assert np.abs(ips - gamma).max() > 0.01


def test_doubly_robust_rewards_by_hand_and_never_shown_rows():
    log = ClickLog(session=[0, 0, 1, 1], row=[0, 1, 1, 0], rank=[1, 2, 1, 2], click=[1, 0, 0, 0])
    theta = np.array([1.0, 0.5])
    rho = np.array([0.75, 0.5, 0.25])
    g = np.array([0.2, 0.4, 0.6])
    r = click_rewards(
        log,
        3,
        position_bias=theta,
        estimator="doubly-robust",
        propensities=rho,
        qid=[7, 7, 7],
        regression=g,
    )
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
    with pytest.raises(
        ValueError, match=re.escape("X must be given (or regression=), but it is None.")
    ):
        click_rewards(log, 2, position_bias=[1.0], estimator="doubly-robust", qid=[0, 0])
    with pytest.raises(
        ValueError,
        match=re.escape("regression must have shape (2,) (one per row), but has shape (3,)."),
    ):
        click_rewards(
            log, 2, position_bias=[1.0], estimator="doubly-robust", regression=[0.1, 0.2, 0.3]
        )
    with pytest.raises(ValueError, match=re.escape("regression must be finite")):
        click_rewards(
            log, 2, position_bias=[1.0], estimator="doubly-robust", regression=[0.1, np.nan]
        )
    with pytest.raises(
        ValueError, match=re.escape("n_folds must be >= 2 (cross-fitting), but 1 is given.")
    ):
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
        s = logger[q * n_docs : (q + 1) * n_docs]
        g = rng.gumbel(size=(n_sessions, n_docs))
        rankings.append(q * n_docs + np.argsort(-(s + g), axis=1)[:, :K])
    return simulate_clicks(rankings, y, eta=eta, noise=noise, top_k=K, seed=seed)


def _mc_propensities(logger, n_queries, n_docs, K, theta, n=20000, seed=1):
    rng = np.random.default_rng(seed)
    rho = np.zeros(logger.size)
    for q in range(n_queries):
        s = logger[q * n_docs : (q + 1) * n_docs]
        order = np.argsort(-(s + rng.gumbel(size=(n, n_docs))), axis=1)[:, :K]
        for k in range(K):
            rho[q * n_docs : (q + 1) * n_docs] += (
                theta[k] * np.bincount(order[:, k], minlength=n_docs) / n
            )
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
        dr.append(
            click_rewards(
                log,
                y.size,
                position_bias=theta,
                estimator="doubly-robust",
                propensities=rho,
                qid=qid,
                X=X,
                seed=rep,
            )
        )
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
    flipped = ClickLog(
        session=log.session,
        row=log.row,
        rank=log.rank,
        click=np.where(own, 1 - log.click, log.click),
    )
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
    mean = sum(
        q
        * estimate_policy_value(
            log,
            w,
            qid=np.zeros(D),
            position_bias=theta,
            propensities=rho,
            estimator=estimator,
            regression=regression,
        ).value
        for log, q in _outcomes(scores, K, theta, gamma)
    )
    assert mean == pytest.approx(float(w @ gamma), abs=1e-12)


def test_policy_value_refuses_rows_the_logger_never_shows():
    log = ClickLog(session=[0, 1], row=[0, 0], rank=[1, 1], click=[1, 0])
    with pytest.raises(
        ValueError,
        match=re.escape(
            "the new policy observes row 1 (expected observation 0.5) that the logging policy "
            "never shows (its propensity from propensities is 0.0)"
        ),
    ):
        estimate_policy_value(
            log, [1.0, 0.5], qid=[0, 0], position_bias=[1.0], propensities=[1.0, 0.0]
        )
    with pytest.raises(
        ValueError, match=re.escape("its propensity from the logged display frequencies is 0.0")
    ):
        estimate_policy_value(log, [1.0, 0.5], qid=[0, 0], position_bias=[1.0])
    with pytest.raises(
        ValueError,
        match=re.escape(
            "policy must hold expected observations in [0, 1] (the probability that a session "
            "sees the row), but policy[1] is -0.5."
        ),
    ):
        estimate_policy_value(log, [1.0, -0.5], qid=[0, 0], position_bias=[1.0])
    # a row the new policy never shows needs no propensity
    v = estimate_policy_value(
        log, [1.0, 0.0], qid=[0, 0], position_bias=[1.0], propensities=[1.0, 0.0]
    )
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
        est = estimate_policy_value(
            log,
            w,
            qid=qid,
            position_bias=theta,
            propensities=rho,
            estimator=estimator,
            regression=regression if estimator == "doubly-robust" else None,
        )
        lo, hi = est.interval(0.9)
        hits += lo <= truth <= hi
    assert 0.84 <= hits / n_rep <= 0.96, hits


# --------------------------------------------------------------------------------------------
# Monte-Carlo propensities pooled with the log's own displays (propensity_samples)
# --------------------------------------------------------------------------------------------
def _sampled_propensities(scores, K, theta, M):
    """Every Monte-Carlo propensity vector of M rankings of the Plackett-Luce logger (the mean
    observation over them), with its probability."""
    out = {}
    for draws in itertools.product(naive.partial_rankings(scores, K), repeat=M):
        rho = np.zeros(len(scores))
        for ranking, _ in draws:
            rho[list(ranking)] += theta[: len(ranking)]
        key = tuple(rho / M)
        out[key] = out.get(key, 0.0) + np.prod([p for _, p in draws])
    return [(np.array(rho), p) for rho, p in out.items()]


def _logs(scores, K, theta, gamma, S):
    """Every log of S sessions of the logger, with its probability."""
    for parts in itertools.product(list(_outcomes(scores, K, theta, gamma)), repeat=S):
        log = ClickLog(
            session=np.concatenate([np.full(len(lg), s) for s, (lg, _) in enumerate(parts)]),
            row=np.concatenate([lg.row for lg, _ in parts]),
            rank=np.concatenate([lg.rank for lg, _ in parts]),
            click=np.concatenate([lg.click for lg, _ in parts]),
        )
        yield log, np.prod([q for _, q in parts])


@pytest.mark.parametrize(
    ("D", "K", "M", "S"),
    [(2, 1, 3, 1), (2, 1, 1, 3), (2, 1, 2, 3), (3, 2, 1, 1), (3, 2, 2, 1), (4, 2, 1, 1)],
)
def test_pooled_propensities_are_unbiased_but_for_rows_no_ranking_shows(D, K, M, S):
    """Exact enumeration of the M sampled rankings and of the S logged sessions: every reward
    has the expectation of the Notes of click_rewards, gamma (doubly robust: g + (gamma - g))
    times 1 - (1 - p)^(M + S), p the chance the logger shows the row; the value of a new policy
    is its expected observation times those rewards, or refused where it observes a row that
    none of the M + S rankings shows."""
    rng = np.random.default_rng(D * 1000 + K * 100 + M * 10 + S)
    scores = 1.5 * rng.normal(size=D)
    theta = 1.0 / np.arange(1, K + 1)
    gamma = rng.uniform(0.05, 0.95, size=D)
    g = rng.uniform(0.0, 1.0, size=D)  # any regression that has not seen these clicks
    w = _exact_propensities(rng.normal(size=D), K, theta)  # a new policy
    qid = np.zeros(D)
    shown = np.zeros(D)
    for ranking, p in naive.partial_rankings(scores, K):
        shown[list(ranking)] += p
    found = 1 - (1 - shown) ** (M + S)
    assert found.min() < 1 - 1e-3  # some row's bias term is not negligible
    logs = list(_logs(scores, K, theta, gamma, S))
    pa, dr, total, refused = np.zeros(D), np.zeros(D), 0.0, 0
    for rho, p_rho in _sampled_propensities(scores, K, theta, M):
        pool = dict(position_bias=theta, propensities=rho, propensity_samples=M, qid=qid)
        for log, q in logs:
            r_pa = click_rewards(log, D, **pool)
            r_dr = click_rewards(log, D, estimator="doubly-robust", regression=g, **pool)
            pa += p_rho * q * r_pa
            dr += p_rho * q * r_dr
            total += p_rho * q
            unseen = (M * rho + np.bincount(log.row, minlength=D)) == 0
            if unseen.any():  # w > 0 everywhere: a row none of the rankings shows is refused
                with pytest.raises(ValueError, match="never shows"):
                    estimate_policy_value(log, w, **pool)
                refused += 1
                continue
            for estimator, r in (("policy-aware", r_pa), ("doubly-robust", r_dr)):
                v = estimate_policy_value(
                    log,
                    w,
                    estimator=estimator,
                    **pool,
                    regression=g if estimator == "doubly-robust" else None,
                )
                assert v.value == pytest.approx(float(w @ r), rel=1e-12, abs=1e-15)
    assert total == pytest.approx(1.0, abs=1e-12)
    assert refused  # the refusal is exercised, and (below) the rows it concerns are biased
    np.testing.assert_allclose(pa, gamma * found, rtol=0, atol=1e-12)
    np.testing.assert_allclose(dr, g + (gamma - g) * found, rtol=0, atol=1e-12)


def test_a_clicked_row_that_no_sampled_ranking_shows_gets_a_finite_reward():
    """A sharp logger rarely shows its last row: no ranking of a small Monte-Carlo sample shows
    it, so its sampled propensity is 0, yet the log shows it clicked. Taken as exact, that
    propensity is refused (the experiment's crash); pooled with the log's displays, the row's
    reward is finite."""
    nd, K, M = 5, 2, 20
    theta = np.array([1.0, 0.5])
    scores = np.array([6.0, 4.0, 3.0, 0.0, -6.0])  # a sharp logger
    rho = _mc_propensities(scores, 1, nd, K, theta, n=M, seed=0)
    assert rho[4] == 0 and rho.sum() == pytest.approx(theta.sum())
    # two sessions, the second showed row 4 at rank 2, which was clicked
    log = ClickLog(session=[0, 0, 1, 1], row=[0, 1, 0, 4], rank=[1, 2, 1, 2], click=[1, 0, 0, 1])
    qid, g = np.zeros(nd), np.full(nd, 0.3)
    for kw in ({}, {"estimator": "doubly-robust", "regression": g}):
        with pytest.raises(
            ValueError,
            match=re.escape(
                "propensities must be > 0 for every clicked row, but row 4 has 1 click(s) and "
                "propensities[4] is 0.0 (a Monte-Carlo estimate such as expected_exposure's: "
                "give its n_samples as propensity_samples to pool it with the log's displays, "
                "or the logging policy itself as logging_policy)."
            ),
        ):
            click_rewards(log, nd, position_bias=theta, propensities=rho, qid=qid, **kw)
    pool = dict(position_bias=theta, propensities=rho, propensity_samples=M, qid=qid)
    seen = np.array([2.0, 0.5, 0.0, 0.0, 0.5])  # theta summed over each row's displays
    pooled = (M * rho + seen) / (M + 2)
    clicks = np.array([1.0, 0.0, 0.0, 0.0, 1.0])
    r = click_rewards(log, nd, **pool)
    np.testing.assert_allclose(r, np.divide(clicks, 2 * pooled, out=np.zeros(nd), where=pooled > 0))
    assert r[4] == pytest.approx(1 / (2 * 0.5 / (M + 2)))  # 22: its one display in 22 rankings
    r_dr = click_rewards(log, nd, estimator="doubly-robust", regression=g, **pool)
    np.testing.assert_allclose(
        r_dr, g + np.divide(clicks - seen * g, 2 * pooled, out=np.zeros(nd), where=pooled > 0)
    )
    # the same pooled propensities value a new policy
    w = np.where(pooled > 0, [0.2, 0.3, 0.4, 0.0, 0.6], 0.0)
    v = estimate_policy_value(log, w, **pool)
    assert v.value == pytest.approx(np.mean([w[0] * 1 / pooled[0], w[4] * 1 / pooled[4]]))


def test_pooled_propensities_name_their_rules():
    log = ClickLog(session=[0, 1], row=[0, 0], rank=[1, 1], click=[1, 0])
    for value, rule in (
        (0, "propensity_samples must be an integer >= 1, but 0 is given."),
        (2.5, "propensity_samples must be an integer >= 1, but 2.5 is given."),
    ):
        with pytest.raises(ValueError, match=re.escape(rule)):
            click_rewards(
                log,
                2,
                position_bias=[1.0],
                propensities=[1.0, 0.0],
                qid=[0, 0],
                propensity_samples=value,
            )
        with pytest.raises(ValueError, match=re.escape(rule)):
            estimate_policy_value(
                log,
                [1.0, 0.0],
                qid=[0, 0],
                position_bias=[1.0],
                propensities=[1.0, 0.0],
                propensity_samples=value,
            )
    alone = (
        "propensity_samples counts the logging policy's rankings behind propensities, but "
        "propensities is None (propensity_samples=10)."
    )
    with pytest.raises(ValueError, match=re.escape(alone)):
        click_rewards(log, 2, position_bias=[1.0], propensity_samples=10)
    with pytest.raises(ValueError, match=re.escape(alone)):
        estimate_policy_value(
            log, [1.0, 0.0], qid=[0, 0], position_bias=[1.0], propensity_samples=10
        )
    # a row the new policy observes that neither the samples nor the log show is refused
    with pytest.raises(
        ValueError,
        match=re.escape(
            "the new policy observes row 1 (expected observation 0.5) that the logging policy "
            "never shows (its propensity from propensities pooled with the log's displays (10 "
            "sampled rankings per query and the log's sessions) is 0.0)"
        ),
    ):
        estimate_policy_value(
            log,
            [1.0, 0.5],
            qid=[0, 0],
            position_bias=[1.0],
            propensities=[1.0, 0.0],
            propensity_samples=10,
        )


def _expected_share(scores, K, theta, S, kappa):
    """E[O / (O + kappa)] per row, O the position bias summed over the row's displays in S
    sessions of the logger (0 where none shows it), by enumeration of the displays alone."""
    share = np.zeros(len(scores))
    rankings = naive.partial_rankings(scores, K)
    for parts in itertools.product(rankings, repeat=S):
        seen = np.zeros(len(scores))
        for ranking, _ in parts:
            seen[list(ranking)] += theta[: len(ranking)]
        share += np.prod([p for _, p in parts]) * seen / (seen + kappa)
    return share


@pytest.mark.parametrize(("D", "K", "S"), [(2, 1, 2), (3, 2, 1), (3, 2, 2), (4, 2, 1)])
@pytest.mark.parametrize("kappa", [0.5, 2.0])
def test_shrunk_doubly_robust_rewards_have_their_exact_expectation(D, K, S, kappa):
    """Exact enumeration of S logged sessions: with shrinkage kappa the reward's expectation is
    g + (gamma - g) E[O / (O + kappa)] on the display frequencies (O the row's summed position
    bias) and g + (gamma - g) S rho / (S rho + kappa) with the logger's exact propensities:
    shrunk towards g, and unbiased whatever the displays where g is the truth."""
    rng = np.random.default_rng(D * 100 + K * 10 + S)
    scores = rng.normal(size=D)
    theta = 1.0 / np.arange(1, K + 1)
    gamma = rng.uniform(0.05, 0.95, size=D)
    g = rng.uniform(-0.5, 1.5, size=D)
    rho = _exact_propensities(scores, K, theta)
    qid = np.zeros(D)
    logged, policy, truth, total = np.zeros(D), np.zeros(D), np.zeros(D), 0.0
    for log, q in _logs(scores, K, theta, gamma, S):
        kw = dict(position_bias=theta, estimator="doubly-robust", qid=qid, shrinkage=kappa)
        logged += q * click_rewards(log, D, regression=g, **kw)
        policy += q * click_rewards(log, D, regression=g, propensities=rho, **kw)
        truth += q * click_rewards(log, D, regression=gamma, **kw)
        total += q
    assert total == pytest.approx(1.0, abs=1e-12)
    share = _expected_share(scores, K, theta, S, kappa)
    np.testing.assert_allclose(logged, g + (gamma - g) * share, rtol=0, atol=1e-12)
    np.testing.assert_allclose(
        policy, g + (gamma - g) * S * rho / (S * rho + kappa), rtol=0, atol=1e-12
    )
    np.testing.assert_allclose(truth, gamma, rtol=0, atol=1e-12)
    assert np.abs(logged - gamma).max() > 0.01  # a wrong regression's pull is exercised


def test_shrunk_doubly_robust_rewards_by_hand():
    log = ClickLog(session=[0, 0, 1, 1], row=[0, 1, 1, 0], rank=[1, 2, 1, 2], click=[1, 0, 0, 0])
    theta = np.array([1.0, 0.5])
    g = np.array([0.2, 0.4, 0.6])
    r = click_rewards(
        log, 3, position_bias=theta, estimator="doubly-robust", regression=g, shrinkage=1.0
    )
    # (clicks + kappa g) / (observation + kappa); row 2 never shown: its regression
    np.testing.assert_allclose(r, [(1 + 0.2) / 2.5, (0 + 0.4) / 2.5, 0.6])
    rho = np.array([0.75, 0.5, 0.25])
    r = click_rewards(
        log,
        3,
        position_bias=theta,
        estimator="doubly-robust",
        regression=g,
        propensities=rho,
        qid=[7, 7, 7],
        shrinkage=1.0,
    )
    np.testing.assert_allclose(r, [0.2 + 0.7 / 2.5, 0.4 - 0.6 / 2.0, 0.6])
    unshrunk = click_rewards(
        log,
        3,
        position_bias=theta,
        estimator="doubly-robust",
        regression=g,
        propensities=rho,
        qid=[7, 7, 7],
    )
    assert np.array_equal(
        unshrunk,
        click_rewards(
            log,
            3,
            position_bias=theta,
            estimator="doubly-robust",
            regression=g,
            propensities=rho,
            qid=[7, 7, 7],
            shrinkage=0,
        ),
    )


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        (dict(shrinkage=-1.0), "shrinkage must be a finite number >= 0, but -1.0 is given."),
        (dict(shrinkage=np.nan), "shrinkage must be a finite number >= 0, but nan is given."),
        (dict(shrinkage="1"), "shrinkage must be a finite number >= 0, but '1' is given."),
        (dict(shrinkage=True), "shrinkage must be a finite number >= 0, but True is given."),
        (
            dict(estimator="policy-aware", shrinkage=1.0),
            "shrinkage pulls the doubly robust rewards towards their regression and must be 0 with "
            "estimator 'policy-aware', but 1.0 is given.",
        ),
        (dict(estimator="naive", shrinkage=2), "must be 0 with estimator 'naive', but 2 is given."),
    ],
)
def test_bad_shrinkage_is_named(kw, message):
    log = ClickLog(session=[0], row=[0], rank=[1], click=[1])
    kw = {"estimator": "doubly-robust", "regression": [0.5, 0.5], **kw}
    with pytest.raises(ValueError, match=re.escape(message)):
        click_rewards(log, 2, position_bias=[1.0], **kw)


def test_shrunk_doubly_robust_rewards_are_closer_than_policy_aware_ones_at_few_sessions():
    """10 sessions per query, the regression cross-fitted on weakly informative features: the
    shrunk doubly robust rewards are closer to the click probability when seen than the
    policy-aware ones (the display frequencies, or the logger's propensities) and than the
    unshrunk doubly robust ones."""
    nq, nd, ns, K = 40, 8, 10, 5
    X, y, qid, logger = _simulated(nq, nd)
    theta = 1.0 / np.arange(1, K + 1)
    rho = _mc_propensities(logger, nq, nd, K, theta)
    gamma = np.where(y > 0, 1.0, 0.1)
    err = {name: [] for name in ("shrunk", "unshrunk", "policy-aware", "ips")}
    for rep in range(20):
        log = _pl_log(logger, y, nq, nd, ns, K, seed=200 + rep)
        g = click_regression(log, X, qid, position_bias=theta, seed=rep)
        dr = dict(position_bias=theta, estimator="doubly-robust", qid=qid, regression=g)
        for name, r in (
            ("shrunk", click_rewards(log, y.size, **dr, shrinkage=1.0)),
            ("unshrunk", click_rewards(log, y.size, **dr, propensities=rho)),
            ("policy-aware", click_rewards(log, y.size, position_bias=theta)),
            ("ips", click_rewards(log, y.size, position_bias=theta, propensities=rho, qid=qid)),
        ):
            err[name].append(np.mean((r - gamma) ** 2))
    mse = {name: float(np.mean(e)) for name, e in err.items()}
    assert mse["shrunk"] < 0.7 * min(mse["policy-aware"], mse["ips"], mse["unshrunk"]), mse


def test_query_centred_features_against_a_loop_and_for_sparse_input():
    import scipy.sparse as sp

    from gbdt_plrank.clicks._click_model import query_centred

    rng = np.random.default_rng(0)
    X = rng.integers(0, 5, size=(9, 3)).astype(np.float64)
    qid = np.array([4, 4, 4, 1, 1, 7, 7, 7, 7])
    expected = X.copy()
    for q in np.unique(qid):
        rows = qid == q
        expected[rows] -= X[rows].mean(axis=0)
    for given in (X, sp.csr_matrix(X)):
        got = query_centred(given, qid)
        assert got.dtype == np.float32 and got.shape == X.shape
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-6)
    # a missing value stays missing and is left out of its query's mean, nothing else changes
    missing = X.copy()
    missing[0, 1] = np.nan
    missing[[3, 4], 2] = np.nan  # missing on every row of query 1
    expected[[1, 2], 1] = X[[1, 2], 1] - X[[1, 2], 1].mean()
    expected[0, 1] = expected[[3, 4], 2] = np.nan
    np.testing.assert_allclose(query_centred(missing, qid), expected, rtol=0, atol=1e-6)


def test_the_centred_regression_ignores_a_shift_shared_by_a_querys_rows():
    """features="centred": adding one vector to every row of a query changes nothing the
    regression fits or predicts (integer features and shifts, so the centring is exact); the
    raw regression sees the shift and its estimates move."""
    rng = np.random.default_rng(3)
    n_q, n_d = 40, 6
    qid = np.repeat(np.arange(n_q), n_d)
    X = rng.integers(0, 8, size=(n_q * n_d, 4)).astype(np.float64)
    y = (X[:, 0] - X.reshape(n_q, n_d, 4)[:, :, 0].mean(axis=1).repeat(n_d) > 0).astype(float)
    rankings = [q * n_d + np.argsort(rng.random((20, n_d)), axis=1) for q in range(n_q)]
    log = simulate_clicks(rankings, y, eta=1.0, noise=0.1, top_k=4, seed=0)
    shifted = X + rng.integers(-50, 50, size=(n_q, 4)).astype(np.float64).repeat(n_d, axis=0)
    theta = 1.0 / np.arange(1, 5)
    kw = dict(position_bias=theta, n_rounds=20, seed=0)
    centred = click_regression(log, X, qid, features="centred", **kw)
    np.testing.assert_array_equal(
        click_regression(log, shifted, qid, features="centred", **kw), centred
    )
    raw = click_regression(log, X, qid, **kw)
    assert not np.allclose(click_regression(log, shifted, qid, **kw), raw)
    # the centred features tell the relevant rows apart across queries
    assert centred[y > 0].mean() > centred[y == 0].mean() + 0.2
    with pytest.raises(
        ValueError, match=re.escape("features must be one of 'raw', 'centred', but 'z' is given.")
    ):
        click_regression(log, X, qid, features="z", **kw)
