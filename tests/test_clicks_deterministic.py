"""Clicks from a deterministic ranker's log: the position bias through the features, the logs
that cannot identify it without them, and the defects met on such logs."""

from __future__ import annotations

import re

import numpy as np
import pytest

from gbdt_plrank.clicks import (
    REWARD_ESTIMATORS,
    ClickLog,
    click_regression,
    click_rewards,
    estimate_policy_value,
    estimate_position_bias,
    pbm_position_bias,
    simulate_clicks,
)

pytest.importorskip("xgboost")


def _deterministic(n_queries, n_docs, n_sessions, *, eta, seed, top_k=None):
    """A deterministic logger's log: every session of a query shows the rows by a noisy score of
    their one feature, whose value sets the click probability when seen (a logistic curve), so
    rows alike in the feature are shown at different ranks across queries."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n_queries * n_docs, 1))
    gamma = 1 / (1 + np.exp(-2.0 * x[:, 0]))
    score = x[:, 0] + rng.normal(scale=1.0, size=x.shape[0])
    qid = np.repeat(np.arange(n_queries), n_docs)
    rankings = [
        q * n_docs + np.tile(np.argsort(-score[qid == q], kind="stable"), (n_sessions, 1))
        for q in range(n_queries)
    ]
    seen_prob = pbm_position_bias(n_docs, eta=eta)
    session = np.concatenate(
        [
            np.repeat(np.arange(q * n_sessions, (q + 1) * n_sessions), min(top_k or n_docs, n_docs))
            for q in range(n_queries)
        ]
    )
    shown = [r[:, :top_k] for r in rankings]
    row = np.concatenate([r.ravel() for r in shown])
    rank = np.concatenate([np.tile(np.arange(1, r.shape[1] + 1), r.shape[0]) for r in shown])
    click = (rng.random(row.size) < seen_prob[rank - 1] * gamma[row]).astype(int)
    return ClickLog(session=session, row=row, rank=rank, click=click), x, qid, gamma


@pytest.mark.parametrize("eta", [1.0, 2.0])
def test_position_bias_is_identified_by_features_from_a_deterministic_log(eta):
    """At the default budget (1000 trees, where regression EM has converged) the estimate
    recovers theta within 12%; 300 trees, the earlier default, stopped it 21% off at the
    deepest rank here with (1/k)^2, and 600 14%."""
    log, X, qid, _ = _deterministic(400, 6, 20, eta=eta, seed=1)
    truth = pbm_position_bias(6, eta=eta)
    theta = estimate_position_bias(log, X=X, qid=qid)
    assert theta.max() == 1.0 == theta[0]
    np.testing.assert_allclose(theta / truth, 1.0, atol=0.12)


@pytest.mark.parametrize("eta", [1.0, 2.0])
def test_features_that_cannot_identify_the_position_bias_are_refused(eta):
    """The same deterministic logs with features that carry nothing of the relevance (zeros,
    noise) gave about the per-rank click-through ratio (58% low at rank 5 with (1/k)^2), and
    one query always shown in one order gave a rank seen three times as often as the one above
    it: each is refused, saying what identifies the position bias."""
    log, X, qid, _ = _deterministic(400, 6, 20, eta=eta, seed=1)
    what = "What identifies it: features that predict the rows' relevance"
    for features in (np.zeros_like(X), np.random.default_rng(0).normal(size=(X.shape[0], 3))):
        with pytest.raises(
            ValueError,
            match=r"the features do not identify the position bias: on held-out queries a "
            r"relevance model of them predicts the clicks no better than one without them, "
            r"under the estimated position bias \(evidence z = -?\d+\.\d\d over 400 queries, 2 "
            r"or more needed\).*" + what,
        ):
            estimate_position_bias(log, X=features, qid=qid)
    one, X1, qid1, _ = _deterministic(1, 5, 200, eta=eta, seed=2)
    with pytest.raises(
        ValueError,
        match=re.escape(
            "the features identify the position bias only across queries (rows alike in their "
            "features shown at different ranks in different queries), and the log must show "
            "rows of 20 or more queries for it, but it shows 1. " + what
        ),
    ):
        estimate_position_bias(one, X=X1, qid=qid1)


def test_the_evidence_of_constant_features_is_exactly_nothing_and_of_informative_ones_clear():
    """The held-out gain of a relevance model over the same trees without the features: 0 for
    every query where the features are constant (the trees cannot split), well above the rule
    for the feature that sets the relevance."""
    import xgboost

    from gbdt_plrank.clicks._click_model import display_counts, feature_evidence
    from gbdt_plrank.clicks._position_bias import MIN_FEATURE_EVIDENCE

    log, X, qid, _ = _deterministic(200, 6, 20, eta=1.0, seed=4)
    counts = display_counts(log, X.shape[0], 6)
    theta = pbm_position_bias(6)
    trees = {"n_rounds": 30, "max_depth": 1, "learning_rate": 0.1, "n_jobs": 1}
    flat = feature_evidence(xgboost, np.full_like(X, 3.0), counts, qid, theta, **trees)
    assert (flat.z, flat.gain, flat.queries) == (0.0, 0.0, 200)
    informative = feature_evidence(xgboost, X, counts, qid, theta, **trees)
    assert informative.z > 2 * MIN_FEATURE_EVIDENCE and informative.gain > 0


def test_a_deterministic_log_is_refused_without_features_with_what_identifies_it():
    log, X, qid, _ = _deterministic(50, 5, 10, eta=1.0, seed=2)
    message = (
        "the log does not identify the position bias without features: no row is shown "
        "at two ranks (a deterministic logger: every session of a query shows one "
        "order), so the clicks at a rank cannot be told from the relevance of the rows "
        "shown there. What identifies it: the rows' features (estimate_position_bias(log, "
        "X=X, qid=qid)), a stochastic logger (a Plackett-Luce policy shows a row at "
        "several ranks), or randomised swaps of the displayed ranks."
    )
    with pytest.raises(ValueError, match=re.escape(message)):
        estimate_position_bias(log)
    # "estimate" in the rewards and the policy value reads the same rule
    with pytest.raises(ValueError, match=re.escape(message)):
        click_rewards(log, X.shape[0], position_bias="estimate")
    with pytest.raises(ValueError, match=re.escape(message)):
        estimate_policy_value(log, np.full(X.shape[0], 0.1), qid=qid, position_bias="estimate")
    # one session per query, as a single deterministic ranking: refused the same way
    one = ClickLog(session=[0, 0, 1, 1], row=[0, 1, 2, 3], rank=[1, 2, 1, 2], click=[1, 0, 0, 1])
    with pytest.raises(ValueError, match=re.escape("no row is shown at two ranks")):
        estimate_position_bias(one)


def test_a_disconnected_design_is_refused_naming_its_groups():
    """Rows swap between ranks 1 and 2 and between ranks 3 and 4, never across: the ratio of
    the two pairs' observation probabilities is not identified."""
    log = ClickLog(
        session=[0, 0, 0, 0, 1, 1, 1, 1],
        row=[0, 1, 2, 3, 1, 0, 3, 2],
        rank=[1, 2, 3, 4, 1, 2, 3, 4],
        click=[1, 0, 1, 0, 0, 1, 0, 0],
    )
    with pytest.raises(
        ValueError,
        match=re.escape(
            "the log does not identify the position bias without features: its ranks fall "
            "into 2 groups that no row links (ranks 1, 2 and ranks 3, 4 share no row)"
        ),
    ):
        estimate_position_bias(log)
    # one row linking the groups identifies it
    linked = ClickLog(
        session=[*log.session, 2, 2],
        row=[*log.row, 1, 2],
        rank=[*log.rank, 3, 1],
        click=[*log.click, 0, 1],
    )
    assert estimate_position_bias(linked).shape == (4,)


def test_a_log_without_a_click_is_refused_rather_than_given_theta_1():
    log = ClickLog(session=[0, 0, 1, 1], row=[0, 1, 1, 0], rank=[1, 2, 1, 2], click=[0, 0, 0, 0])
    with pytest.raises(
        ValueError,
        match=re.escape(
            "the log must have clicks to estimate the position bias from, but none of its 4 "
            "entries is clicked."
        ),
    ):
        estimate_position_bias(log)
    with pytest.raises(ValueError, match="the log must have clicks"):
        estimate_position_bias(log, X=np.zeros((2, 1)), qid=[0, 0])


def test_features_and_queries_go_together_and_are_checked():
    log, X, qid, _ = _deterministic(10, 4, 3, eta=1.0, seed=3)
    with pytest.raises(
        ValueError,
        match=re.escape(
            "X and qid go together (the features of the rows and their queries), but qid is None."
        ),
    ):
        estimate_position_bias(log, X=X)
    with pytest.raises(ValueError, match=re.escape("row must be < n_rows = 5, but row[")):
        estimate_position_bias(log, X=X[:5], qid=qid[:5])
    with pytest.raises(
        ValueError, match=re.escape("the rows of a session must belong to one query")
    ):
        estimate_position_bias(log, X=X, qid=np.arange(qid.size))
    with pytest.raises(ValueError, match=re.escape("max_depth must be an integer >= 1, but 0")):
        estimate_position_bias(log, X=X, qid=qid, max_depth=0)


def test_an_empty_log_with_queries_gives_zero_rewards_not_an_index_error():
    empty = ClickLog(session=[], row=[], rank=[], click=[])
    empty.check_queries([0, 0, 1])
    np.testing.assert_array_equal(
        click_rewards(empty, 3, position_bias=[1.0], qid=[0, 0, 1]), np.zeros(3)
    )


def test_the_policy_value_refuses_observations_above_1():
    log = ClickLog(session=[0, 0], row=[0, 1], rank=[1, 2], click=[1, 1])
    with pytest.raises(
        ValueError,
        match=re.escape(
            "policy must hold expected observations in [0, 1] (the probability that a session "
            "sees the row), but policy[1] is 4.33."
        ),
    ):
        estimate_policy_value(log, [1.0, 4.33], qid=[0, 0], position_bias=[1.0, 0.5])


def test_a_fitted_model_with_predict_is_valued_as_its_ranking_by_score():
    """An XGBRanker, deployed by its scores, is valued as the array of theta at each row's rank;
    an object that is neither a ranker nor an array is refused naming its type."""
    import xgboost

    rng = np.random.default_rng(5)
    n_q, n_d = 30, 6
    X = rng.normal(size=(n_q * n_d, 3))
    y = (X[:, 0] > 0.5).astype(float)
    qid = np.repeat(np.arange(n_q), n_d)
    model = xgboost.XGBRanker(n_estimators=3, n_jobs=1).fit(X, y, qid=qid)
    uniform = [q * n_d + np.argsort(rng.random((40, n_d)), axis=1) for q in range(n_q)]
    log = simulate_clicks(uniform, y, eta=1.0, top_k=3, seed=6)
    theta = pbm_position_bias(3)
    order = np.concatenate(
        [q * n_d + np.argsort(-model.predict(X[qid == q]), kind="stable") for q in range(n_q)]
    )
    w = np.zeros(X.shape[0])
    w[order] = np.tile(np.r_[theta, np.zeros(n_d - 3)], n_q)
    by_model = estimate_policy_value(log, model, X=X, qid=qid, position_bias=theta)
    by_array = estimate_policy_value(log, w, qid=qid, position_bias=theta)
    assert by_model == by_array
    with pytest.raises(
        ValueError,
        match=re.escape(
            "policy must be a fitted ranker (a Plackett-Luce policy with expected_exposure, "
            "such as PLRankRanker, or a model with predict, ranked by its scores) or one "
            "expected observation per row, but a object is given."
        ),
    ):
        estimate_policy_value(log, object(), X=X, qid=qid, position_bias=theta)
    # neither is a mapping, a set or a ragged list (float() of them raised a bare TypeError)
    for bad in ({"a": 0.5}, {0.1, 0.2}, [[0.1], [0.2, 0.3]], ["0.5"] * X.shape[0]):
        with pytest.raises(
            ValueError, match=f"or one expected observation per row, but a {type(bad).__name__} "
        ):
            estimate_policy_value(log, bad, X=X, qid=qid, position_bias=theta)


def test_a_plackett_luce_loggers_rows_are_never_refused_with_the_logging_policy():
    """A sharp PL logger's rare rows: its counted propensities from a few rankings leave some at
    0, so valuing a uniform policy refuses them; given the logger itself, the placement
    probabilities give every row a positive propensity and the value is estimated."""
    from gbdt_plrank import PLRankRanker

    rng = np.random.default_rng(7)
    n_q, n_d = 40, 8
    X = rng.normal(size=(n_q * n_d, 2))
    y = (X[:, 0] > 0.8).astype(float) + (X[:, 0] > 1.5)
    qid = np.repeat(np.arange(n_q), n_d)
    logger = PLRankRanker(n_estimators=30, learning_rate=0.5, N=10, n_jobs=1, random_state=0)
    logger.fit(X * 4, y, group=qid)
    theta = pbm_position_bias(3)
    log = simulate_clicks(
        logger.sample_rankings(X * 4, qid, n_samples=20, K=3, random_state=1), y, top_k=3, seed=2
    )
    uniform = np.full(X.shape[0], theta.sum() / n_d)
    counted = logger.expected_exposure(X * 4, qid, n_samples=2, weights=theta, random_state=3)
    assert (counted == 0).any()
    with pytest.raises(ValueError, match="that the logging policy never shows"):
        estimate_policy_value(
            log, uniform, qid=qid, position_bias=theta, propensities=counted, propensity_samples=2
        )
    value = estimate_policy_value(
        log, uniform, X=X * 4, qid=qid, position_bias=theta, logging_policy=logger
    )
    assert np.isfinite(value.value) and value.stderr > 0
    rewards = click_rewards(
        log,
        X.shape[0],
        position_bias=theta,
        qid=qid,
        X=X * 4,
        logging_policy=logger,
        propensity_samples=500,
    )
    placed = logger.expected_exposure(
        X * 4, qid, n_samples=500, weights=theta, random_state=0, method="placement"
    )
    np.testing.assert_array_equal(
        rewards, click_rewards(log, X.shape[0], position_bias=theta, qid=qid, propensities=placed)
    )
    with pytest.raises(
        ValueError,
        match=re.escape(
            "propensities and logging_policy are two sources of the same propensities: give "
            "one, but both are given."
        ),
    ):
        click_rewards(
            log,
            X.shape[0],
            position_bias=theta,
            qid=qid,
            X=X,
            propensities=placed,
            logging_policy=logger,
        )
    with pytest.raises(
        ValueError,
        match=re.escape(
            "logging_policy weigh the rows' observation under the logging policy, which the "
            "naive estimator does not use, but they are given."
        ),
    ):
        click_rewards(
            log,
            X.shape[0],
            position_bias=theta,
            qid=qid,
            X=X,
            estimator="naive",
            logging_policy=logger,
        )
    with pytest.raises(
        ValueError,
        match=re.escape(
            "logging_policy must be a fitted ranker (a Plackett-Luce policy with "
            "expected_exposure, such as PLRankRanker, or a model with predict, ranked by its "
            "scores), but a list is given."
        ),
    ):
        click_rewards(
            log, X.shape[0], position_bias=theta, qid=qid, X=X, logging_policy=[0.5] * X.shape[0]
        )


def test_the_registry_owns_the_estimators():
    """Every estimator of the registry is one name for the rewards, the experiment's learners
    and, where it values policies, the policy value; the regression estimator's rewards are
    the regression."""
    from gbdt_plrank.harness.clicks.config import estimator_learners, learner_names

    assert list(estimator_learners().values()) == list(REWARD_ESTIMATORS)
    assert all(f"plrank-{name}" in learner_names() for name in REWARD_ESTIMATORS)
    values = [e.name for e in REWARD_ESTIMATORS.values() if e.values_policies]
    assert values == ["policy-aware", "doubly-robust"]
    log, X, qid, _ = _deterministic(30, 4, 5, eta=1.0, seed=8)
    theta = pbm_position_bias(4)
    np.testing.assert_array_equal(
        click_rewards(
            log, X.shape[0], position_bias=theta, estimator="regression", X=X, qid=qid, seed=3
        ),
        click_regression(log, X, qid, position_bias=theta, seed=3),
    )
    with pytest.raises(
        ValueError,
        match=re.escape(
            "estimator must be one of 'policy-aware', 'doubly-robust', but 'regression' is given."
        ),
    ):
        estimate_policy_value(
            log, np.zeros(X.shape[0]), qid=qid, position_bias=theta, estimator="regression"
        )
    with pytest.raises(
        ValueError,
        match=re.escape(
            "regression is read by the estimators that start from one ('doubly-robust', "
            "'regression') and must be None with estimator 'policy-aware', but it is given."
        ),
    ):
        click_rewards(log, X.shape[0], position_bias=theta, regression=np.zeros(X.shape[0]))


def test_display_counts_hold_the_dense_counts_and_the_likelihood_reads_them_alike():
    """The counts keep one entry per (row, rank) pair shown: rebuilt dense they are the plain
    per-rank counts (np.add.at), a row subset is the dense rows' subset, and the likelihood's
    gradient and Fisher information equal the plain dense formula's."""
    from gbdt_plrank.clicks._click_model import display_counts, likelihood_objective

    rng = np.random.default_rng(5)
    n_rows, K = 12, 7
    shown = [rng.permutation(n_rows - 2)[:K] for _ in range(10)]  # rows 10, 11 never shown
    log = ClickLog(
        session=np.repeat(np.arange(10), K),
        row=np.concatenate(shown),
        rank=np.tile(np.arange(1, K + 1), 10),
        click=rng.integers(0, 2, size=10 * K),
    )
    n, c = np.zeros((n_rows, K)), np.zeros((n_rows, K))
    np.add.at(n, (log.row, log.rank - 1), 1.0)
    np.add.at(c, (log.row, log.rank - 1), log.click)
    counts = display_counts(log, n_rows, K)

    def dense(part):
        out = np.zeros((2, part.n_rows, part.K))
        out[0][part.row, part.rank], out[1][part.row, part.rank] = part.shows, part.hits
        return out

    np.testing.assert_array_equal(dense(counts), [n, c])
    assert (counts.shows > 0).all() and counts.row.size == np.count_nonzero(n)
    np.testing.assert_array_equal(counts.shown(), n.sum(axis=1) > 0)
    np.testing.assert_array_equal(counts.per_rank(counts.shows), n.sum(axis=0))
    rows = np.array([1, 4, 5, 11])
    np.testing.assert_array_equal(dense(counts.take(rows)), [n[rows], c[rows]])
    np.testing.assert_array_equal(dense(counts.take(np.ones(n_rows, bool))), [n, c])
    theta, margin = 1 / np.arange(1, K + 1), rng.normal(size=n_rows)
    s = (1 / (1 + np.exp(-margin)))[:, None]
    ts = np.minimum(theta * s, 1 - 1e-12)
    grad = -(c * (1 - s) - (n - c) * theta * s * (1 - s) / (1 - ts)).sum(axis=1)
    hess = np.maximum((n * theta * s * (1 - s) ** 2 / (1 - ts)).sum(axis=1), 1e-12)
    got = likelihood_objective(counts, theta)(margin, None)
    np.testing.assert_allclose(got[0], grad, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(got[1], hess, rtol=1e-12, atol=1e-15)
