"""Click logs: validation, simulation, position-bias recovery and unbiased rewards."""

import numpy as np
import pandas as pd
import pytest

from gbdt_plrank.clicks import ClickLog, click_rewards, estimate_position_bias, simulate_clicks


def _uniform_rankings(n_queries, n_docs, n_sessions, seed):
    """A stochastic logger: uniformly random permutations of each query's rows."""
    rng = np.random.default_rng(seed)
    return [q * n_docs + np.argsort(rng.random((n_sessions, n_docs)), axis=1)
            for q in range(n_queries)]


def _log(**kw):
    base = dict(session=[0, 0, 1], row=[0, 1, 0], rank=[1, 2, 1], click=[0, 1, 0])
    base.update(kw)
    return ClickLog(**base)


@pytest.mark.parametrize(("kw", "message"), [
    (dict(rank=[1, 1, 1]), "ranks within a session should be distinct, but session 0 shows rank 1"),
    (dict(rank=[0, 2, 1]), "rank should be >= 1 (1-based), but 0 is given"),
    (dict(click=[0, 2, 0]), "click should be 0 or 1, but 2 is given"),
    (dict(row=[0, -1, 0]), "row should be >= 0, but -1 is given"),
    (dict(row=[0, 1.5, 0]), "row should hold integers, but 1.5 is given"),
    (dict(click=[0, 1]), "should have one length"),
])
def test_every_bad_value_is_named(kw, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        _log(**kw)


def test_sessions_within_one_query_and_rows_in_range():
    log = _log()
    with pytest.raises(ValueError, match="session 0 shows rows of several queries"):
        click_rewards(log, 2, position_bias=[1.0, 0.5], qid=[1, 2])
    click_rewards(log, 2, position_bias=[1.0, 0.5], qid=[1, 1])
    with pytest.raises(ValueError, match="row should be < n_rows = 1, but 1 is given"):
        click_rewards(log, 1, position_bias=[1.0, 0.5])
    with pytest.raises(ValueError, match="cover every logged rank, but rank 2"):
        click_rewards(log, 2, position_bias=[1.0])
    with pytest.raises(ValueError, match="position_bias should be in \\(0, 1\\]"):
        click_rewards(log, 2, position_bias=[1.0, 0.0])
    with pytest.raises(ValueError, match="estimator should be"):
        click_rewards(log, 2, position_bias=[1.0, 0.5], estimator="ips")
    with pytest.raises(ValueError, match="qid should be given with propensities"):
        click_rewards(log, 2, position_bias=[1.0, 0.5], propensities=[1.0, 1.0])


def test_from_frame_round_trip_and_missing_column():
    log = _log()
    df = pd.DataFrame(dict(session=log.session, row=log.row, rank=log.rank, click=log.click))
    back = ClickLog.from_frame(df)
    assert np.array_equal(back.rank, log.rank) and np.array_equal(back.click, log.click)
    with pytest.raises(ValueError, match=r"\['click'\] are missing"):
        ClickLog.from_frame(df.drop(columns="click"))


def test_rewards_by_hand():
    # row 0 shown at rank 1 twice (one click), row 1 at rank 2 once (one click), row 2 never
    log = ClickLog(session=[0, 0, 1], row=[0, 1, 0], rank=[1, 2, 1], click=[1, 1, 0])
    theta = [1.0, 0.25]
    np.testing.assert_allclose(click_rewards(log, 3, position_bias=theta), [0.5, 4.0, 0.0])
    np.testing.assert_allclose(click_rewards(log, 3, position_bias=theta, estimator="naive"),
                               [0.5, 1.0, 0.0])
    # given propensities: clicks / (sessions of the query * propensity)
    np.testing.assert_allclose(
        click_rewards(log, 3, position_bias=theta, propensities=[0.5, 0.25, 0.1],
                      qid=[0, 0, 0]), [1.0, 2.0, 0.0])


def test_simulated_clicks_follow_the_model():
    y = np.array([1, 0, 2, 0])
    rankings = [np.tile(np.arange(4), (40000, 1))]
    log = simulate_clicks(rankings, y, eta=1.0, noise=0.1, top_k=3, seed=0)
    assert log.rank.max() == 3 and len(log) == 3 * 40000
    ctr = [log.click[log.rank == k].mean() for k in (1, 2, 3)]
    np.testing.assert_allclose(ctr, [1.0, 0.1 / 2, 1.0 / 3], atol=0.01)
    again = simulate_clicks(rankings, y, eta=1.0, noise=0.1, top_k=3, seed=0)
    assert np.array_equal(again.click, log.click)


def test_position_bias_is_recovered_from_a_stochastic_logger():
    eta = 1.2
    y = np.random.default_rng(1).integers(0, 3, size=30 * 8)
    log = simulate_clicks(_uniform_rankings(30, 8, 400, seed=2), y, eta=eta, noise=0.1,
                          top_k=5, seed=3)
    theta = estimate_position_bias(log)
    truth = (1.0 / np.arange(1, 6)) ** eta
    assert theta[0] == 1.0
    np.testing.assert_allclose(theta, truth, atol=0.03)
    # and "estimate" gives the rewards from these weights
    np.testing.assert_allclose(click_rewards(log, y.size, position_bias="estimate"),
                               click_rewards(log, y.size, position_bias=theta))


def test_policy_aware_is_unbiased_and_naive_is_not():
    n_q, n_d = 40, 8
    y = np.random.default_rng(4).integers(0, 2, size=n_q * n_d)
    truth_click = np.where(y > 0, 1.0, 0.1)  # click probability when seen
    log = simulate_clicks(_uniform_rankings(n_q, n_d, 2000, seed=5), y, eta=1.0, noise=0.1,
                          top_k=5, seed=6)
    theta = 1.0 / np.arange(1, 6)
    aware = click_rewards(log, y.size, position_bias=theta)
    naive = click_rewards(log, y.size, position_bias=theta, estimator="naive")
    # uniform logger: each row is seen per session with probability sum_k theta_k / n_d
    qid = np.repeat(np.arange(n_q), n_d)
    with_prop = click_rewards(log, y.size, position_bias=theta, qid=qid,
                              propensities=np.full(y.size, theta.sum() / n_d))
    assert abs(np.mean(aware - truth_click)) < 0.01
    assert abs(np.mean(with_prop - truth_click)) < 0.01
    np.testing.assert_allclose(aware, truth_click, atol=0.12)
    # naive click-through rates shrink the relevant rows' rewards by the mean observation
    assert np.mean(truth_click[y > 0] - naive[y > 0]) > 0.3


def test_deterministic_logger_leaves_rows_unseen():
    y = np.array([0, 1, 1, 0, 1, 0])
    log = simulate_clicks([np.tile(np.arange(6), (500, 1))], y, top_k=3, seed=0)
    r = click_rewards(log, 6, position_bias=1.0 / np.arange(1, 4))
    assert np.all(r[3:] == 0.0)


def test_early_stopping_on_validation_rewards():
    """Rewards of validation queries serve as eval_set labels (gain="linear") as labels do."""
    from gbdt_plrank.datasets import load_dataset
    from gbdt_plrank.ranker import PLRankRanker

    data = load_dataset("mq2008")
    fast = {"N": 10, "n_jobs": 1, "random_state": 0}

    def head(split, n):
        rows = int(split.group_ptr[n])
        return split.X[:rows], split.y[:rows], split.qid[:rows]

    (X, y, qid), (Xv, yv, qv) = head(data.train, 30), head(data.vali, 15)
    logger = PLRankRanker(n_estimators=5, **fast).fit(X, y, group=qid)
    theta = 1.0 / np.arange(1, 6)

    def rewards(X_, y_, q_, seed):
        log = simulate_clicks(logger.sample_rankings(X_, q_, n_samples=50, K=5, random_state=seed),
                              y_, top_k=5, seed=seed)
        return click_rewards(log, y_.size, position_bias=theta, qid=q_)

    r, rv = rewards(X, y, qid, 1), rewards(Xv, yv, qv, 2)
    ranker = PLRankRanker(gain="linear", n_estimators=200, learning_rate=0.3,
                          stopping_metric="ranking", **fast)
    ranker.fit(X, r, group=qid, eval_set=[(Xv, rv, qv)], early_stopping_rounds=3)
    assert ranker.best_iteration_ is not None and ranker.best_iteration_ < 199
    history = next(iter(next(iter(ranker.evals_result_.values())).values()))
    assert len(history) == ranker.best_iteration_ + 4


def _exact_observation(margins, theta):
    """sum_k P(rank(d) = k) theta_k of a Plackett-Luce query, enumerating its top-L prefixes."""
    from itertools import permutations

    w = np.exp(margins - margins.max())
    out = np.zeros(margins.size)
    for perm in permutations(range(margins.size), theta.size):
        left, p = w.sum(), 1.0
        for d in perm:
            p *= w[d] / left
            left -= w[d]
        for k, d in enumerate(perm):
            out[d] += p * theta[k]
    return out


def test_policy_propensities_from_expected_exposure_match_enumeration():
    """expected_exposure(weights=theta) is each row's expected observation per session."""
    from gbdt_plrank.datasets import load_dataset
    from gbdt_plrank.ranker import PLRankRanker

    data = load_dataset("mq2008")
    rows = int(data.train.group_ptr[8])
    X, y, qid = data.train.X[:rows], data.train.y[:rows], data.train.qid[:rows]
    logger = PLRankRanker(n_estimators=10, learning_rate=0.5, N=10, n_jobs=1,
                          random_state=0).fit(X, y, group=qid)
    keep = np.isin(qid, np.unique(qid)[[0, 1, 5]])  # queries of 8, 8 and 16 rows
    Xs, qs = X[keep], qid[keep]
    theta = 1.0 / np.arange(1, 4)  # a top-3 display
    margins = logger.predict(Xs)
    exact = np.concatenate([_exact_observation(margins[qs == q], theta) for q in np.unique(qs)])
    got = logger.expected_exposure(Xs, qs, n_samples=20000, weights=theta, random_state=1)
    np.testing.assert_allclose(got, exact, atol=0.02)
    assert np.abs(got - exact).max() < np.abs(
        logger.expected_exposure(Xs, qs, n_samples=20000, random_state=1) - exact).max()
    # as propensities: each query's observations sum to sum(theta) (every query has >= 3 rows)
    np.testing.assert_allclose(np.bincount(np.unique(qs, return_inverse=True)[1], got),
                               theta.sum())
    with pytest.raises(ValueError, match=r"weights should be finite and >= 0, but -0\.5"):
        logger.expected_exposure(Xs, qs, n_samples=5, weights=[1.0, -0.5])
    with pytest.raises(ValueError, match="weights should be a non-empty one-dimensional array"):
        logger.expected_exposure(Xs, qs, n_samples=5, weights=[])


def test_the_anchors_see_sessions_in_displayed_order():
    """The experiment's session groups: clicked sessions only, rows in displayed order, and the
    LightGBM position field equal to the displayed rank - 1."""
    from gbdt_plrank.datasets import Split
    from gbdt_plrank.harness.clicks_run import (
        _DisplayOrderLightGBM,
        first_sessions,
        session_split,
        top_k_rankings,
    )

    split = Split(np.arange(12.0)[:, None], np.array([0, 1, 0, 2, 0, 0, 1, 0, 0, 0, 0, 1.0]),
                  np.repeat([0, 1], 6))
    scores = np.array([0.1, 0.9, 0.5, 0.7, 0.0, 0.3, 1, 2, 3, 4, 5, 6.0])
    rankings = top_k_rankings(scores, split, k=3, n=4)
    assert [r.tolist() for r in rankings] == [[[1, 3, 2]] * 4, [[11, 10, 9]] * 4]
    # shuffle the entries: the groups come back by session, then rank
    log = simulate_clicks(rankings, split.y, eta=0.0, noise=0.0, seed=0)
    perm = np.random.default_rng(0).permutation(len(log))
    shuffled = ClickLog(session=log.session[perm], row=log.row[perm], rank=log.rank[perm],
                        click=log.click[perm])
    part, position = session_split(shuffled, split)
    clicked = np.unique(log.session[log.click == 1])
    assert np.array_equal(np.unique(part.qid), clicked)  # every session has a click (eta=0)
    assert part.X[:3, 0].tolist() == [1, 3, 2] and part.y[:3].tolist() == [1, 1, 0]
    assert position.tolist() == [0, 1, 2] * clicked.size
    dataset = _DisplayOrderLightGBM._dataset(part)
    assert np.array_equal(dataset.position, position)
    # the first s sessions of each query of a log of n sessions per query
    two = first_sessions(log, 2, 4)
    assert sorted(set(two.session.tolist())) == [0, 1, 4, 5]
