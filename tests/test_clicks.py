"""Click logs: validation, simulation, position-bias recovery and unbiased rewards."""

import re
import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from stopping import rounds_after_best

from gbdt_plrank.clicks import (
    ClickLog,
    click_rewards,
    estimate_position_bias,
    pbm_position_bias,
    simulate_clicks,
)
from gbdt_plrank.clicks._simulation import _grade_share


def _uniform_rankings(n_queries, n_docs, n_sessions, seed):
    """A stochastic logger: uniformly random permutations of each query's rows."""
    rng = np.random.default_rng(seed)
    return [
        q * n_docs + np.argsort(rng.random((n_sessions, n_docs)), axis=1) for q in range(n_queries)
    ]


def _log(**kw):
    base = dict(session=[0, 0, 1], row=[0, 1, 0], rank=[1, 2, 1], click=[0, 1, 0])
    base.update(kw)
    return ClickLog(**base)


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        (
            dict(rank=[1, 1, 1]),
            "rank must be distinct within a session (a session shows one "
            "document per rank), but session 0 shows rank 1 2 times.",
        ),
        (
            dict(row=[0, 0, 0], rank=[1, 2, 1]),
            "row must be distinct within a session (a session "
            "shows a document once), but session 0 shows row 0 "
            "2 times.",
        ),
        (dict(rank=[1, 0, 1]), "rank must be >= 1 (ranks are 1-based), but rank[1] is 0."),
        (dict(click=[0, 2, 0]), "click must be 0 or 1, but click[1] is 2."),
        (dict(click=[0, -1, 0]), "click must be 0 or 1, but click[1] is -1."),
        (dict(click=[0.0, 0.5, 0.0]), "click must hold integers, but click[1] is 0.5."),
        (dict(row=[0, -1, 0]), "row must be >= 0, but row[1] is -1."),
        (dict(row=[0, 1.5, 0]), "row must hold integers, but row[1] is 1.5."),
        (dict(row=[0, np.nan, 0]), "row must hold integers, but row[1] is nan."),
        (dict(session=[0, np.inf, 1]), "session must hold integers, but session[1] is inf."),
        # float ids of 2**63 or more would all cast to -2**63 (one session); unsigned ones wrap
        (
            dict(session=[2.0**63, 2.0**64, 5.0], rank=[1, 1, 1]),
            "session must hold integers in [-2**63, 2**63) (int64), but session[0] is "
            "9.223372036854776e+18.",
        ),
        (
            dict(session=np.array([0, 2**63, 1], np.uint64)),
            "session must hold integers in [-2**63, 2**63) (int64), but session[1] is "
            "9223372036854775808.",
        ),
        (dict(rank=["1", "2", "1"]), "rank must hold integers, but has dtype <U1."),
        (dict(click=[[0, 1, 0]]), "click must be one-dimensional, but has shape (1, 3)."),
        (
            dict(click=[0, 1]),
            "lengths must agree, but session has 3, row has 3, rank has 3, click has 2.",
        ),
    ],
)
def test_every_bad_value_is_named(kw, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        _log(**kw)


def test_int64_ids_at_the_ends_of_the_range_are_kept_exactly():
    low, high = -(2**63), 2**63 - 1
    log = _log(session=np.array([high, high, low], np.int64))
    assert log.session.tolist() == [high, high, low]
    log = _log(session=[-(2.0**63), -(2.0**63), 2.0**62])
    assert log.session.tolist() == [low, low, 2**62]
    log = _log(session=np.array([2**63 - 1, 2**63 - 1, 0], np.uint64))
    assert log.session.tolist() == [high, high, 0]


def test_the_log_copies_and_leaves_the_callers_arrays_writable():
    session, row, rank, click = (
        np.array(v, np.int64) for v in ([0, 0, 1], [0, 1, 0], [1, 2, 1], [0, 1, 0])
    )
    log = ClickLog(session=session, row=row, rank=rank, click=click)
    for mine in (session, row, rank, click):
        assert mine.flags.writeable
    click[1] = 0  # the caller's array changes, the log does not
    assert log.click.tolist() == [0, 1, 0]
    with pytest.raises(ValueError, match="read-only"):
        log.click[0] = 1
    df = pd.DataFrame(dict(session=session, row=row, rank=rank, click=[0, 1, 1]))
    ClickLog.from_frame(df)
    df.loc[0, "click"] = 1
    assert df["click"].tolist() == [1, 1, 1]


def test_the_rows_of_a_session_stay_in_range_and_in_one_query():
    log = _log()
    theta = [1.0, 0.5]
    with pytest.raises(
        ValueError,
        match=re.escape(
            "the rows of a session must belong to one query, but session 0 shows rows of "
            "queries 1 and 2."
        ),
    ):
        click_rewards(log, 2, position_bias=theta, qid=[1, 2])
    click_rewards(log, 2, position_bias=theta, qid=[1, 1])
    # entries of sessions interleaved, session ids not contiguous
    mixed = ClickLog(session=[7, 3, 7, 3], row=[0, 2, 3, 1], rank=[1, 1, 2, 2], click=[0] * 4)
    ok = ClickLog(session=[7, 3, 7, 3], row=[0, 2, 1, 3], rank=[1, 1, 2, 2], click=[0] * 4)
    ok.check_queries(["a", "a", "b", "b"])
    with pytest.raises(ValueError, match=re.escape("session 3 shows rows of queries 'b' and 'a'.")):
        mixed.check_queries(["a", "a", "b", "b"])
    for qid in (None, [7]):
        with pytest.raises(
            ValueError, match=re.escape("row must be < n_rows = 1, but row[1] is 1.")
        ):
            click_rewards(log, 1, position_bias=theta, qid=qid)
    with pytest.raises(
        ValueError,
        match=re.escape("qid must have shape (2,) (one query id per row), but has shape (3,)."),
    ):
        click_rewards(log, 2, position_bias=theta, qid=[1, 1, 1])
    with pytest.raises(ValueError, match=re.escape("n_rows must be an integer >= 1, but 2.0")):
        click_rewards(log, 2.0, position_bias=theta)


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        (
            dict(position_bias=[1.0]),
            "position_bias must cover every logged rank, but rank 2 is "
            "logged and 1 ranks are given.",
        ),
        (
            dict(position_bias=[1.0, 0.0]),
            "position_bias must be in (0, 1], but position_bias[1] is 0.0.",
        ),
        (
            dict(position_bias=[1.0, 1.5]),
            "position_bias must be in (0, 1], but position_bias[1] is 1.5.",
        ),
        (
            dict(position_bias=[1.0, np.nan]),
            "position_bias must be finite, but position_bias[1] is nan",
        ),
        (dict(position_bias=[]), "position_bias must hold one probability per rank, but is empty."),
        (
            dict(position_bias="known"),
            "position_bias must be one of 'estimate', but 'known' is given.",
        ),
        (
            dict(estimator="ips"),
            "estimator must be one of 'policy-aware', 'doubly-robust', 'naive', "
            "'regression', but 'ips' is given.",
        ),
        (
            dict(propensities=[1.0, 1.0]),
            "qid must be given with propensities (the sessions are "
            "counted per query), but it is None.",
        ),
        (
            dict(propensities=[1.0, -0.5], qid=[0, 0]),
            "propensities must be >= 0, but propensities[1] is -0.5.",
        ),
        (
            dict(propensities=[1.0, np.inf], qid=[0, 0]),
            "propensities must be finite, but propensities[1] is inf",
        ),
        (
            dict(propensities=[1.0], qid=[0, 0]),
            "propensities must have shape (2,) (one per row), but has shape (1,).",
        ),
        (
            dict(propensities=[1.0, 0.0], qid=[0, 0]),
            "propensities must be > 0 for every clicked "
            "row, but row 1 has 1 click(s) and "
            "propensities[1] is 0.0 (a Monte-Carlo "
            "estimate such as expected_exposure's: give "
            "its n_samples as propensity_samples",
        ),
        (
            dict(propensity_samples=5),
            "propensity_samples counts the logging policy's rankings "
            "behind propensities, but propensities is None",
        ),
        # a clicked row's reward 1 / (2 x 1e-320) overflows float64
        (
            dict(propensities=[1.0, 1e-320], qid=[0, 0]),
            "propensities must be large enough for a finite reward, clicks / (sessions x "
            "propensity), but row 1 has 1 click(s) in 2 session(s) and propensities[1] is 1e-320.",
        ),
        (
            dict(position_bias=[1.0, 1e-320]),
            "position_bias must be large enough for a finite reward, clicks / (the position bias "
            "summed over the row's displays), but row 1 has 1 click(s) and a sum of 1e-320.",
        ),
    ],
)
def test_every_bad_reward_argument_is_named(kw, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        click_rewards(_log(), 2, **{"position_bias": [1.0, 0.5], **kw})


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        (dict(eta=-1.0), "eta must be a finite number >= 0, but -1.0 is given."),
        (dict(eta=np.nan), "eta must be a finite number >= 0, but nan is given."),
        (dict(noise=1.5), "noise must be a number in [0, 1], but 1.5 is given."),
        (dict(top_k=0), "top_k must be an integer >= 1, but 0 is given."),
        (
            dict(trust=(0.5, 2.0)),
            "trust must be a pair (eps_plus, eps_minus) of numbers in [0, 1], "
            "but (0.5, 2.0) is given.",
        ),
        (dict(seed=-1), "seed must be an integer in [0, 2**63), but -1 is given."),
        (dict(y=[0.0, -1.0, 1.0]), "y must be >= 0, but y[1] is -1.0."),
        (dict(y=[0.0, np.nan, 1.0]), "y must be finite, but y[1] is nan"),
        (
            dict(rankings=[[[0, 1, 3]]]),
            "rankings[0] must hold row indices in [0, 3) (rows of y), but holds 3.",
        ),
        (
            dict(rankings=[[0, 1], [[[0]]]]),
            "rankings[1] must be one ranking or a 2-d array of "
            "rankings (one per session), but has shape (1, 1, 1).",
        ),
        (
            dict(rankings=[[[0, 1, 0]]]),
            "row must be distinct within a session (a session shows a "
            "document once), but session 0 shows row 0 2 times.",
        ),
    ],
)
def test_every_bad_simulation_argument_is_named(kw, message):
    args = {"rankings": [[[0, 1, 2]]], "y": [0.0, 1.0, 2.0], "seed": 0, **kw}
    with pytest.raises(ValueError, match=re.escape(message)):
        simulate_clicks(args.pop("rankings"), args.pop("y"), **args)


def test_tiny_propensities_of_rows_without_clicks_give_zero_without_a_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = click_rewards(
            _log(), 2, position_bias=[1.0, 1e-320], propensities=[1e-320, 1.0], qid=[0, 0]
        )
        assert r.tolist() == [0.0, 0.5]
        r = click_rewards(_log(click=[0, 0, 0]), 2, position_bias=[1.0, 1e-320])
        assert r.tolist() == [0.0, 0.0]


def test_position_bias_estimate_arguments_are_named():
    with pytest.raises(
        ValueError,
        match=re.escape(
            "the log must have entries to estimate the position bias from, but it is empty."
        ),
    ):
        estimate_position_bias(ClickLog(session=[], row=[], rank=[], click=[]))
    with pytest.raises(ValueError, match=re.escape("n_iter must be an integer >= 1, but 0")):
        estimate_position_bias(_log(), n_iter=0)
    with pytest.raises(ValueError, match=re.escape("tol must be a finite number > 0, but -1.0")):
        estimate_position_bias(_log(), tol=-1.0)


def test_estimated_position_bias_is_a_probability_when_rank_1_is_seen_less():
    """Rank 1 seen half as often as ranks 2-4 (a banner above the results): the estimate is
    scaled by its largest value, so it is the true theta, and "estimate" gives the rewards of
    the same array passed explicitly (both in (0, 1])."""
    n_docs, n_sessions = 6, 3000
    y = np.array([1, 0, 1, 1, 0, 1])
    log = simulate_clicks(
        _uniform_rankings(1, n_docs, n_sessions, seed=0), y, eta=0.0, noise=0.1, top_k=4, seed=1
    )
    drop = (log.rank == 1) & (np.random.default_rng(2).random(len(log)) < 0.5)
    log = ClickLog(
        session=log.session, row=log.row, rank=log.rank, click=np.where(drop, 0, log.click)
    )
    theta = estimate_position_bias(log)
    assert theta.max() == 1.0 and theta.min() > 0
    np.testing.assert_allclose(theta, [0.5, 1.0, 1.0, 1.0], atol=0.05)
    r = click_rewards(log, n_docs, position_bias="estimate")
    np.testing.assert_array_equal(r, click_rewards(log, n_docs, position_bias=theta))
    np.testing.assert_allclose(r, np.where(y > 0, 1.0, 0.1), atol=0.05)
    # a log without rank 1 has no estimate of it: refused, rather than given 1
    part = ClickLog(
        session=log.session[log.rank > 1],
        row=log.row[log.rank > 1],
        rank=log.rank[log.rank > 1],
        click=log.click[log.rank > 1],
    )
    with pytest.raises(
        ValueError,
        match=re.escape(
            "every rank up to the largest logged one (4) must be logged to estimate its "
            "observation probability, but rank 1 is not: give position_bias for such a log."
        ),
    ):
        estimate_position_bias(part)


def test_ranks_without_a_click_are_named_with_their_displays():
    """A rank shown but never clicked has no estimate but the floor: the estimate warns, naming
    the ranks and their displays, at the caller's line; a log with clicks at every rank does
    not warn."""
    log = simulate_clicks(
        _uniform_rankings(4, 6, 200, seed=0), np.ones(24), eta=1.0, noise=0.1, top_k=5, seed=1
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        full = estimate_position_bias(log)
    deep = log.rank >= 4
    bare = ClickLog(
        session=log.session, row=log.row, rank=log.rank, click=np.where(deep, 0, log.click)
    )
    shown = np.bincount(log.rank - 1)
    message = (
        f"the log has no click at 2 of its 5 ranks (displays rank 4: {shown[3]}, rank 5: "
        f"{shown[4]}), so their observation probability is estimated at its floor (1e-06 "
        f"before the division by the largest)"
    )
    with pytest.warns(UserWarning, match=re.escape(message)) as caught:
        theta = estimate_position_bias(bare)
    assert [w.filename for w in caught] == [__file__]
    assert theta[3:].max() < 1e-5 < full[3:].min()
    np.testing.assert_allclose(theta[:3], full[:3], rtol=0.05)


@pytest.mark.parametrize(
    ("estimate", "message"),
    [
        ([1.0, 2.07], "must be in (0, 1], but {name}[1] is 2.07."),
        ([1.0], "must cover every logged rank, but rank 2 is logged and 1 ranks are given."),
        ([1.0, np.nan], "must be finite, but {name}[1] is nan"),
    ],
)
def test_an_estimated_position_bias_obeys_the_rule_of_a_given_one(monkeypatch, estimate, message):
    from gbdt_plrank.clicks import _position_bias

    monkeypatch.setattr(_position_bias, "estimate_position_bias", lambda log: np.array(estimate))
    for given, name in ((estimate, "position_bias"), ("estimate", "estimate_position_bias(log)")):
        with pytest.raises(ValueError, match=re.escape(f"{name} " + message.format(name=name))):
            click_rewards(_log(), 2, position_bias=given)


def test_pbm_position_bias():
    np.testing.assert_allclose(pbm_position_bias(4, eta=2.0), [1.0, 1 / 4, 1 / 9, 1 / 16])
    np.testing.assert_array_equal(pbm_position_bias(3, eta=0.0), [1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match=re.escape("K must be an integer >= 1, but 0 is given.")):
        pbm_position_bias(0)


def test_from_frame_round_trip_and_missing_column():
    log = _log()
    df = pd.DataFrame(dict(session=log.session, row=log.row, rank=log.rank, click=log.click))
    back = ClickLog.from_frame(df)
    assert np.array_equal(back.rank, log.rank) and np.array_equal(back.click, log.click)
    with pytest.raises(
        ValueError,
        match=re.escape(
            "the frame must have the columns session, row, rank, click, but ['click'] are missing."
        ),
    ):
        ClickLog.from_frame(df.drop(columns="click"))


def test_rewards_by_hand():
    # row 0 shown at rank 1 twice (one click), row 1 at rank 2 once (one click), row 2 never
    log = ClickLog(session=[0, 0, 1], row=[0, 1, 0], rank=[1, 2, 1], click=[1, 1, 0])
    theta = [1.0, 0.25]
    np.testing.assert_allclose(click_rewards(log, 3, position_bias=theta), [0.5, 4.0, 0.0])
    np.testing.assert_allclose(
        click_rewards(log, 3, position_bias=theta, estimator="naive"), [0.5, 1.0, 0.0]
    )
    # given propensities: clicks / (sessions of the query * propensity)
    np.testing.assert_allclose(
        click_rewards(log, 3, position_bias=theta, propensities=[0.5, 0.25, 0.1], qid=[0, 0, 0]),
        [1.0, 2.0, 0.0],
    )


def test_simulated_clicks_follow_the_model():
    y = np.array([1, 0, 2, 0])
    rankings = [np.tile(np.arange(4), (40000, 1))]
    log = simulate_clicks(rankings, y, eta=1.0, noise=0.1, top_k=3, seed=0)
    assert log.rank.max() == 3 and len(log) == 3 * 40000
    ctr = [log.click[log.rank == k].mean() for k in (1, 2, 3)]
    np.testing.assert_allclose(ctr, [1.0, 0.1 / 2, 1.0 / 3], atol=0.01)
    again = simulate_clicks(rankings, y, eta=1.0, noise=0.1, top_k=3, seed=0)
    assert np.array_equal(again.click, log.click)


def test_graded_click_probabilities_are_exact_at_extreme_labels():
    """(2^l - 1) / (2^t - 1) as exact fractions, for labels up to 5000 (2.0**1024 is inf)."""
    for top in (1, 2, 3, 31, 1023, 1024, 1100, 5000):
        labels = sorted({0, 1, 2, top // 2, max(top - 53, 0), top - 1, top})
        got = _grade_share(np.array(labels, np.float64), float(top))
        exact = [float(Fraction(2**lab - 1, 2**top - 1)) for lab in labels]
        np.testing.assert_allclose(got, exact, rtol=4e-16, atol=0)
    fractional = np.array([0.0, 0.25, 0.5, 1.5, 2.0, 3.0])
    np.testing.assert_allclose(_grade_share(fractional, 3.0), (2**fractional - 1) / 7, rtol=1e-15)


def test_graded_clicks_at_labels_of_1024_and_more():
    """Every rank seen, no noise: the top grade is clicked in every session, one grade below in
    half, the rest never; no NaN probability and no warning."""
    y = np.array([0.0, 1024.0, 1999.0, 2000.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        log = simulate_clicks(
            [np.tile(np.arange(4), (4000, 1))], y, eta=0.0, noise=0.0, graded=True, seed=0
        )
        ctr = np.bincount(log.row, weights=log.click) / 4000
    assert ctr[3] == 1.0 and ctr[0] == 0.0 and ctr[1] == 0.0
    assert abs(ctr[2] - 0.5) < 0.03
    # a query whose top grade is 1024: that row was never clicked when p was nan
    log = simulate_clicks(
        [np.tile(np.arange(2), (50, 1))], [1024.0, 0.0], eta=0.0, noise=0.0, graded=True, seed=0
    )
    assert log.click[log.row == 0].sum() == 50


def _plackett_luce_rankings(y, n_queries, n_docs, n_sessions, seed):
    """A stochastic logger that favours relevant rows: Plackett-Luce rankings (Gumbel trick) of
    scores that grow with the label, so each row is shown mostly at some ranks."""
    rng = np.random.default_rng(seed)
    scores = 1.5 * y.reshape(n_queries, n_docs) + rng.normal(size=(n_queries, n_docs))
    return [
        q * n_docs + np.argsort(-(scores[q] + rng.gumbel(size=(n_sessions, n_docs))), axis=1)
        for q in range(n_queries)
    ]


@pytest.mark.parametrize(
    ("logger", "eta"), [("uniform", 1.2), ("plackett-luce", 1.0), ("plackett-luce", 2.0)]
)
def test_position_bias_is_recovered_from_a_stochastic_logger(logger, eta):
    y = np.random.default_rng(1).choice(3, size=30 * 8, p=[0.6, 0.25, 0.15])
    rankings = (
        _uniform_rankings(30, 8, 400, seed=2)
        if logger == "uniform"
        else _plackett_luce_rankings(y, 30, 8, 400, seed=2)
    )
    log = simulate_clicks(rankings, y, eta=eta, noise=0.1, top_k=5, seed=3)
    theta = estimate_position_bias(log)
    truth = pbm_position_bias(5, eta=eta)
    assert theta[0] == 1.0 == theta.max()
    np.testing.assert_allclose(theta, truth, atol=0.03)
    # the click-through rate by rank is not the position bias: relevance differs by rank
    ctr = np.bincount(log.rank - 1, log.click) / np.bincount(log.rank - 1)
    if logger == "plackett-luce":
        assert np.abs(ctr / ctr[0] / truth - 1).max() > 0.2
    # and "estimate" gives the rewards from these weights
    np.testing.assert_allclose(
        click_rewards(log, y.size, position_bias="estimate"),
        click_rewards(log, y.size, position_bias=theta),
    )


def test_policy_aware_is_unbiased_and_naive_is_not():
    n_q, n_d = 40, 8
    y = np.random.default_rng(4).integers(0, 2, size=n_q * n_d)
    truth_click = np.where(y > 0, 1.0, 0.1)  # click probability when seen
    log = simulate_clicks(
        _uniform_rankings(n_q, n_d, 2000, seed=5), y, eta=1.0, noise=0.1, top_k=5, seed=6
    )
    theta = 1.0 / np.arange(1, 6)
    aware = click_rewards(log, y.size, position_bias=theta)
    naive = click_rewards(log, y.size, position_bias=theta, estimator="naive")
    # uniform logger: each row is seen per session with probability sum_k theta_k / n_d
    qid = np.repeat(np.arange(n_q), n_d)
    with_prop = click_rewards(
        log, y.size, position_bias=theta, qid=qid, propensities=np.full(y.size, theta.sum() / n_d)
    )
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


@pytest.fixture(scope="module")
def logged_rewards():
    """Policy-aware rewards of 30 training and 15 validation MQ2008 queries, logged by a weak
    PL-Rank policy with a top-5 display (fractional values, some above 1)."""
    from gbdt_plrank.datasets import load_dataset
    from gbdt_plrank.ranker import PLRankRanker

    data = load_dataset("mq2008")

    def head(split, n):
        rows = int(split.group_ptr[n])
        return split.X[:rows], split.y[:rows], split.qid[:rows]

    (X, y, qid), (Xv, yv, qv) = head(data.train, 30), head(data.vali, 15)
    logger = PLRankRanker(n_estimators=5, N=10, n_jobs=1, random_state=0).fit(X, y, group=qid)
    theta = pbm_position_bias(5)

    def rewards(X_, y_, q_, seed):
        log = simulate_clicks(
            logger.sample_rankings(X_, q_, n_samples=50, K=5, random_state=seed),
            y_,
            top_k=5,
            seed=seed,
        )
        return click_rewards(log, y_.size, position_bias=theta, qid=q_)

    return (X, rewards(X, y, qid, 1), qid), (Xv, rewards(Xv, yv, qv, 2), qv)


@pytest.mark.parametrize("stopping_metric", ["policy", "ranking"])
def test_early_stopping_on_validation_rewards(logged_rewards, stopping_metric):
    """Rewards of validation queries serve as eval_set labels (gain="linear") as labels do."""
    from gbdt_plrank.ranker import PLRankRanker

    (X, r, qid), (Xv, rv, qv) = logged_rewards
    assert np.any((rv > 0) & (rv != np.round(rv)))
    ranker = PLRankRanker(
        gain="linear",
        metric="dcg",
        n_estimators=200,
        learning_rate=0.3,
        N=10,
        n_jobs=1,
        random_state=0,
        stopping_metric=stopping_metric,
    )
    ranker.fit(X, r, group=qid, eval_set=[(Xv, rv, qv)], early_stopping_rounds=3)
    assert ranker.best_iteration_ is not None and ranker.best_iteration_ < 199
    (history,) = (
        h
        for curves in ranker.evals_result_.values()
        for name, h in curves.items()
        if name.startswith("expected_" if stopping_metric == "policy" else "dcg")
    )
    best = ranker.best_iteration_
    assert len(history) == best + 1 + rounds_after_best(best, 3)


def test_expected_metric_on_validation_rewards_in_xgboost(logged_rewards):
    """obj.expected_metric takes fractional rewards as linear gains (the expected DCG is linear
    in them) and early-stops xgboost.train on an eval set labelled by them."""
    xgboost = pytest.importorskip("xgboost")
    from gbdt_plrank import plrank_objective

    (X, r, qid), (Xv, rv, qv) = logged_rewards
    obj = plrank_objective(K=5, N=10, gain="linear", metric="dcg", seed=0, n_jobs=1)
    margins = np.random.default_rng(0).normal(size=rv.size)

    def value(labels):
        name, v = obj.expected_metric(margins, xgboost.DMatrix(Xv, labels, qid=qv))
        assert name == "expected_dcg@5"
        return v

    other = np.random.default_rng(1).random(rv.size)
    np.testing.assert_allclose(
        value(0.37 * rv + 2.5 * other), 0.37 * value(rv) + 2.5 * value(other), rtol=1e-6
    )  # float32 labels
    assert value(rv) > 0
    history = {}
    booster = xgboost.train(
        {"eta": 0.3, "max_depth": 6, "nthread": 1, "disable_default_eval_metric": 1},
        xgboost.DMatrix(X, r, qid=qid),
        200,
        obj=obj,
        evals=[(xgboost.DMatrix(Xv, rv, qid=qv), "valid")],
        custom_metric=obj.expected_metric,
        maximize=True,
        early_stopping_rounds=3,
        evals_result=history,
        verbose_eval=False,
    )
    curve = history["valid"]["expected_dcg@5"]
    assert booster.best_iteration < 199 and len(curve) == booster.best_iteration + 4
    assert curve[booster.best_iteration] == max(curve)


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
    logger = PLRankRanker(
        n_estimators=10, learning_rate=0.5, N=10, min_child_weight=0.01, n_jobs=1, random_state=0
    ).fit(X, y, group=qid)
    keep = np.isin(qid, np.unique(qid)[[0, 1, 5]])  # queries of 8, 8 and 16 rows
    Xs, qs = X[keep], qid[keep]
    theta = 1.0 / np.arange(1, 4)  # a top-3 display
    margins = logger.predict(Xs)
    assert np.ptp(margins) > 1.0  # a policy that is not uniform
    exact = np.concatenate([_exact_observation(margins[qs == q], theta) for q in np.unique(qs)])
    got = logger.expected_exposure(Xs, qs, n_samples=20000, weights=theta, random_state=1)
    np.testing.assert_allclose(got, exact, atol=0.02)
    assert (
        np.abs(got - exact).max()
        < np.abs(logger.expected_exposure(Xs, qs, n_samples=20000, random_state=1) - exact).max()
    )
    # as propensities: each query's observations sum to sum(theta) (every query has >= 3 rows)
    np.testing.assert_allclose(np.bincount(np.unique(qs, return_inverse=True)[1], got), theta.sum())
    with pytest.raises(ValueError, match=r"weights should be finite and >= 0, but -0\.5"):
        logger.expected_exposure(Xs, qs, n_samples=5, weights=[1.0, -0.5])
    with pytest.raises(ValueError, match="weights should be a non-empty one-dimensional array"):
        logger.expected_exposure(Xs, qs, n_samples=5, weights=[])


def test_the_anchors_see_sessions_in_displayed_order():
    """The experiment's session groups: clicked sessions only, rows in displayed order, and the
    LightGBM position field equal to the displayed rank - 1."""
    from gbdt_plrank.datasets import Split
    from gbdt_plrank.harness.clicks.run import (
        _DisplayOrderLightGBM,
        first_sessions,
        session_split,
        top_k_rankings,
    )

    split = Split(
        np.arange(12.0)[:, None],
        np.array([0, 1, 0, 2, 0, 0, 1, 0, 0, 0, 0, 1.0]),
        np.repeat([0, 1], 6),
    )
    scores = np.array([0.1, 0.9, 0.5, 0.7, 0.0, 0.3, 1, 2, 3, 4, 5, 6.0])
    rankings = top_k_rankings(scores, split, k=3, n=4)
    assert [r.tolist() for r in rankings] == [[[1, 3, 2]] * 4, [[11, 10, 9]] * 4]
    # shuffle the entries: the groups come back by session, then rank
    log = simulate_clicks(rankings, split.y, eta=0.0, noise=0.0, seed=0)
    perm = np.random.default_rng(0).permutation(len(log))
    shuffled = ClickLog(
        session=log.session[perm], row=log.row[perm], rank=log.rank[perm], click=log.click[perm]
    )
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


class _FixedScores:
    """A ranker whose scores are given: row i of the split scores -i (rank i + 1)."""

    def predict(self, X):
        return -np.arange(len(X), dtype=np.float64)


@pytest.mark.parametrize(
    ("graded", "expected"),
    [
        # ranks 1..5 show grades 2, 1, 0, 2, 1; every rank seen (eta = 0); noise 0.1; trust
        # (0.5, 0.05) below rank 1. Graded: grade g clicked with 0.1 + 0.9 (2^g - 1) / 3.
        (False, [1.0, 0.5, 0.05, 0.5, 0.5]),
        (True, [1.0, 0.2, 0.05, 0.5, 0.2]),
    ],
)
def test_the_click_model_keys_reach_the_simulation(graded, expected):
    """configs/clicks-tiny.toml with graded and trust: the experiment's logs follow them."""
    from pathlib import Path

    from gbdt_plrank.datasets import Split
    from gbdt_plrank.harness.clicks.config import load_clicks_config
    from gbdt_plrank.harness.clicks.run import _deploy

    tiny = Path(__file__).resolve().parents[1] / "configs" / "clicks-tiny.toml"
    config = load_clicks_config(
        tiny, overrides={"graded": graded, "trust": [0.5, 0.05], "eta": 0.0}
    )
    split = Split(np.arange(6.0)[:, None], np.array([2, 1, 0, 2, 1, 0.0]), np.zeros(6, int))
    n = 4000
    log = _deploy(_FixedScores(), split, stochastic=False, config=config, n=n, seed=0)
    assert np.array_equal(log.row, np.tile(np.arange(5), n))
    ctr = np.bincount(log.rank - 1, weights=log.click) / n
    np.testing.assert_allclose(ctr, expected, atol=0.03)
    # what changes the logs is part of the settings a resumed run must match; the binary model
    # without trust bias leaves them out
    settings = config.settings()
    assert settings["trust"] == [0.5, 0.05] and settings.get("graded", False) is graded
    assert not {"graded", "trust"} & set(load_clicks_config(tiny).settings())


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("graded = 1", "graded must be true or false, but 1 is given."),
        (
            "trust = [0.9]",
            "trust must be a pair [eps_plus, eps_minus] of numbers in [0, 1], but "
            "[0.9] is given (it holds 1 item).",
        ),
        (
            "trust = [0.9, 1.5]",
            "trust must be a pair [eps_plus, eps_minus] of numbers in [0, 1], but 1.5 is given.",
        ),
        (
            "trust = 0.5",
            "trust must be a pair [eps_plus, eps_minus] of numbers in [0, 1], but 0.5 is given.",
        ),
        ("regression_rounds = 0", "regression_rounds must be an integer >= 1, but 0 is given."),
    ],
)
def test_click_model_keys_refuse_bad_values(tmp_path, line, message):
    from gbdt_plrank.harness import ConfigError
    from gbdt_plrank.harness.clicks.config import load_clicks_config

    path = tmp_path / "c.toml"
    path.write_text(f"datasets = ['mq2008']\n{line}\n")
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_clicks_config(path)


def test_the_cascade_keys_reach_the_simulation_and_the_known_position_bias():
    """click_model = "cascade": the experiment's logs are the cascade's (without satisfaction,
    rank k's click-through rate is (1 - stop)^(k-1) times the document's click probability),
    the learners' known position bias is (1 - stop)^(k-1), and the keys are part of the
    settings a resumed run must match."""
    from pathlib import Path

    from gbdt_plrank.datasets import Split
    from gbdt_plrank.harness.clicks.config import load_clicks_config
    from gbdt_plrank.harness.clicks.run import _deploy, _theta

    tiny = Path(__file__).resolve().parents[1] / "configs" / "clicks-tiny.toml"
    config = load_clicks_config(tiny, overrides={"click_model": "cascade", "stop": 0.3})
    split = Split(np.arange(6.0)[:, None], np.array([2, 1, 0, 2, 1, 0.0]), np.zeros(6, int))
    n = 20000
    log = _deploy(_FixedScores(), split, stochastic=False, config=config, n=n, seed=0)
    ctr = np.bincount(log.rank - 1, weights=log.click) / n
    theta = 0.7 ** np.arange(5)
    np.testing.assert_allclose(ctr, theta * [1, 1, 0.1, 1, 1], atol=0.012)
    np.testing.assert_allclose(_theta(config, log, split, stochastic=False), theta)
    assert config.position_based  # without satisfaction: the position-based model
    settings = config.settings()
    assert (settings["click_model"], settings["stop"], settings["satisfaction"]) == (
        "cascade",
        0.3,
        0.0,
    )
    assert not {"click_model", "stop", "satisfaction", "logger_temperature"} & set(
        load_clicks_config(tiny).settings()
    )
    satisfied = load_clicks_config(tiny, overrides={"click_model": "cascade", "satisfaction": 0.5})
    assert not satisfied.position_based  # the off-policy truth is not a position-based one's


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            {"click_model": "cascade", "eta": 2.0},
            "eta is the position-based model's and must not be set with click_model 'cascade'",
        ),
        ({"stop": 0.3}, "stop is the cascade model's and must not be set with click_model 'pbm'"),
        (
            {"satisfaction": 0.3},
            "satisfaction is the cascade model's and must not be set with click_model 'pbm'",
        ),
        (
            {"click_model": "cascade", "trust": [0.9, 0.1]},
            "trust is the position-based model's and must not be set with click_model 'cascade'",
        ),
        ({"click_model": "cascade", "stop": 1.0}, "stop must be a number in [0, 1), but 1.0"),
        ({"click_model": "dcm"}, "click_model must be one of 'pbm', 'cascade', but 'dcm'"),
        (
            {
                "logger_temperature": 0.5,
                "logger": "lambdamart",
                "learners": ["plrank-naive"],
                "exploration_rounds": 0,
                "ope_sessions": 0,
            },
            "logger_temperature deploys a PL-Rank logger's policy at a temperature and needs "
            "logger 'plrank' and exploration_rounds 0",
        ),
        (
            {"logger_temperature": 0.5},
            "logger_temperature deploys a PL-Rank logger's policy at a temperature and needs",
        ),
        ({"logger_temperature": 0.0}, "logger_temperature must be a finite number > 0, but 0.0"),
    ],
)
def test_click_model_and_temperature_keys_refuse_what_does_not_apply(overrides, message):
    from pathlib import Path

    from gbdt_plrank.harness import ConfigError
    from gbdt_plrank.harness.clicks.config import load_clicks_config

    tiny = Path(__file__).resolve().parents[1] / "configs" / "clicks-tiny.toml"
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_clicks_config(tiny, overrides=overrides)


def test_the_logger_temperature_reaches_its_rankings_propensities_and_values(tmp_path, monkeypatch):
    """logger_temperature = 0.25: every ranking the PL-Rank logger samples for a log, its
    propensities and its own off-policy value are at 0.25 (a learner's value at its own 1);
    its deterministic top-k is its ranking by score."""
    from pathlib import Path

    from tiny_ltr import write_tiny_letor

    from gbdt_plrank import PLRankRanker
    from gbdt_plrank.harness.clicks.config import load_clicks_config
    from gbdt_plrank.harness.clicks.run import ResultKey, _Fold
    from gbdt_plrank.harness.data import load

    folder = write_tiny_letor(tmp_path / "tiny", queries=(8, 4, 4))
    tiny = Path(__file__).resolve().parents[1] / "configs" / "clicks-tiny.toml"
    config = load_clicks_config(
        tiny,
        overrides={
            "logger_temperature": 0.25,
            "exploration_rounds": 0,
            "propensities": "placement",
            "sessions": [3],
            "ope_sessions": 3,
            "propensity_samples": 5,
        },
    )
    seen = []
    for name in ("sample_rankings", "expected_exposure"):
        method = getattr(PLRankRanker, name)

        def record(self, *args, _method=method, _name=name, **kw):
            seen.append((_name, self, kw.get("temperature", 1.0)))
            return _method(self, *args, **kw)

        monkeypatch.setattr(PLRankRanker, name, record)
    unit = _Fold(config, load(str(folder), 1, drop_empty_test_queries=False), 0)
    logs = unit.logs(True, 3)
    unit.rewards(logs, estimator="policy-aware", policy=True, stochastic=True)
    unit.ope(ResultKey("tiny", "logger", 0, 0), unit.logger)
    assert {n for n, *_ in seen} == {"sample_rankings", "expected_exposure"}
    assert all(t == 0.25 for _, model, t in seen if model is unit.logger)
    other = PLRankRanker(n_estimators=2, N=4, min_child_weight=0.01, random_state=0).fit(
        unit.data.train.X, unit.data.train.y, group=unit.data.train.qid
    )
    seen.clear()
    unit.ope(ResultKey("tiny", "plrank-policy-aware", 3, 0), other)
    assert {t for _, model, t in seen if model is other} == {1.0}
    before = len(seen)
    unit.logs(False, 3)  # the deterministic log: the ranking by score, no sampling
    assert len(seen) == before


def test_a_full_display_corrects_every_rank_its_logs_show(tmp_path):
    """display = "full" with a known position bias: the learners' position bias covers the
    deepest rank of the training and the validation logs (here the validation split's longest
    query is deeper than the training split's), so the rewards of both are computed."""
    from pathlib import Path

    from tiny_ltr import write_tiny_letor

    from gbdt_plrank.harness.clicks.config import load_clicks_config
    from gbdt_plrank.harness.clicks.run import _Fold
    from gbdt_plrank.harness.data import load

    folder = write_tiny_letor(tmp_path / "tiny", queries=(4, 4, 4))
    tiny = Path(__file__).resolve().parents[1] / "configs" / "clicks-tiny.toml"
    config = load_clicks_config(
        tiny, overrides={"display": "full", "exploration_rounds": 0, "sessions": [3]}
    )
    unit = _Fold(config, load(str(folder), 1, drop_empty_test_queries=False), 0)
    logs = unit.logs(True, 3)
    deepest = {name: int(log.rank.max()) for name, log in logs.items()}
    assert deepest["vali"] > deepest["train"]
    r = unit.rewards(logs, estimator="policy-aware", policy=True, stochastic=True)
    np.testing.assert_allclose(r["theta"], config.simulated_position_bias(deepest["vali"]))
    assert r["vali"].shape == unit.data.vali.y.shape and np.isfinite(r["vali"]).all()


@pytest.mark.parametrize("position_bias", ["known", "estimate"])
def test_a_log_the_estimate_refuses_is_reported_where_the_bias_is_known(
    tmp_path, monkeypatch, position_bias
):
    """The report's estimate of the position bias from a log that does not identify it: with
    the known bias (what the learners correct with) the refusal and its reason are recorded and
    reported, and the run goes on; where the learners correct with the estimate, it stops the
    run."""
    from pathlib import Path

    from tiny_ltr import write_tiny_letor

    from gbdt_plrank.harness.clicks import run as clicks_run
    from gbdt_plrank.harness.clicks.config import load_clicks_config
    from gbdt_plrank.harness.clicks.report import _theta_table
    from gbdt_plrank.harness.data import load

    folder = write_tiny_letor(tmp_path / "tiny", queries=(4, 4, 4))
    tiny = Path(__file__).resolve().parents[1] / "configs" / "clicks-tiny.toml"
    config = load_clicks_config(
        tiny,
        overrides={"position_bias": position_bias, "exploration_rounds": 0, "sessions": [3]},
    )
    reason = "the features do not identify the position bias: evidence z = 0.14"

    def refuse(*args, **kwargs):
        raise ValueError(reason)

    monkeypatch.setattr(clicks_run, "estimated_theta", refuse)
    unit = clicks_run._Fold(config, load(str(folder), 1, drop_empty_test_queries=False), 0)
    logs = unit.logs(True, 3)
    if position_bias == "estimate":
        with pytest.raises(ValueError, match=reason):
            unit.reported_theta(logs["train"], stochastic=True)
        return
    got = unit.reported_theta(logs["train"], stochastic=True)
    assert got["theta_refused"] == reason and "theta_estimate" not in got
    table = _theta_table(config, "tiny", {("plrank-policy-aware", 3): [got, got]})
    assert table == (
        "### tiny: the position bias could not be estimated from every log\n\n"
        f"- 3 sessions/query: refused on 2 of 2 logs ({reason})\n"
    )
    estimated = {"theta_estimate": [1.0, 0.5], "theta_seconds": 1.0}
    table = _theta_table(config, "tiny", {("plrank-policy-aware", 3): [got, estimated]})
    assert table.endswith(f"- 3 sessions/query: refused on 1 of 2 logs ({reason})\n")
    assert "| 2 | " in table  # the estimated log's table stands above


def test_position_bias_from_chooses_rows_or_features(monkeypatch):
    """position_bias_from: "rows" estimates by row (no features passed), "features" through the
    rows' features, "auto" by row from a stochastic log and through the features from a
    deterministic one; the configuration refuses other values, naming them."""
    from pathlib import Path

    from gbdt_plrank.datasets import Split
    from gbdt_plrank.harness import ConfigError
    from gbdt_plrank.harness.clicks import run
    from gbdt_plrank.harness.clicks.config import load_clicks_config

    calls = []
    monkeypatch.setattr(
        run, "estimate_position_bias", lambda log, **kw: calls.append(sorted(kw)) or np.ones(2)
    )
    split = Split(np.zeros((4, 2)), np.zeros(4), np.array([0, 0, 1, 1]))
    log = object()
    for source, stochastic, passed in (
        ("rows", False, []),
        ("features", True, ["X", "qid"]),
        ("auto", True, []),
        ("auto", False, ["X", "qid"]),
    ):
        run.estimated_theta(log, split, stochastic=stochastic, source=source)
        assert calls.pop() == passed
    tiny = Path(__file__).resolve().parents[1] / "configs" / "clicks-tiny.toml"
    assert load_clicks_config(tiny).position_bias_from == "auto"
    # what changes a stored result is in the settings (absent at the default, as before)
    assert "position_bias_from" not in load_clicks_config(tiny).settings()
    for source in ("rows", "features"):
        given = load_clicks_config(tiny, overrides={"position_bias_from": source})
        assert given.settings()["position_bias_from"] == source
    with pytest.raises(ConfigError, match="position_bias_from must be one of"):
        load_clicks_config(tiny, overrides={"position_bias_from": "clicks"})


def test_a_plrank_logger_trains_without_warning_of_the_learners_stopping_metric():
    """The logger trains a fixed number of rounds without an eval set: the [plrank] table's
    stopping_metric, the learners' early-stopping value, is not passed to it (the ranker warned
    that it had no effect on every run of a configuration that sets it)."""
    import warnings
    from pathlib import Path

    from gbdt_plrank.datasets import Split
    from gbdt_plrank.harness.clicks.config import load_clicks_config
    from gbdt_plrank.harness.clicks.run import _logger

    tiny = Path(__file__).resolve().parents[1] / "configs" / "clicks-tiny.toml"
    config = load_clicks_config(
        tiny, overrides={"logger": "plrank", "plrank.stopping_metric": "standardized"}
    )
    assert config.learner_options(labels=False)["stopping_metric"] == "standardized"
    rng = np.random.default_rng(0)
    split = Split(
        rng.normal(size=(40, 3)), rng.integers(0, 3, 40).astype(float), np.repeat(np.arange(8), 5)
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        logger = _logger(config, split, 0)
    assert logger.n_estimators == config.logging_rounds


def test_a_feature_logger_ranks_by_its_feature_and_needs_one():
    """logger = "feature": the deterministic log shows each query's rows by the feature,
    descending, in every session (a sparse matrix read as such); logger_feature goes with it
    alone, and must be one of the data's features."""
    from pathlib import Path

    import scipy.sparse as sp

    from gbdt_plrank.datasets import Split
    from gbdt_plrank.harness import ConfigError
    from gbdt_plrank.harness.clicks.config import load_clicks_config
    from gbdt_plrank.harness.clicks.run import _deploy, _logger

    tiny = Path(__file__).resolve().parents[1] / "configs" / "clicks-tiny.toml"
    overrides = {
        "logger": "feature",
        "logger_feature": 2,
        "learners": ["plrank-naive"],
        "exploration_rounds": 0,
        "ope_sessions": 0,
        "top_k": 3,
        "eta": 0.0,
        "noise": 0.0,
    }
    config = load_clicks_config(tiny, overrides=overrides)
    X = sp.csr_matrix(np.array([[9, 0.2], [0, 0.9], [5, 0.5], [1, 0.1], [0, 0.7], [3, 0.3]]))
    split = Split(X, np.array([0, 1, 0, 0, 1, 1.0]), np.array([0, 0, 0, 1, 1, 1]))
    logger = _logger(config, split, 0)
    log = _deploy(logger, split, stochastic=False, config=config, n=2, seed=0)
    assert log.row.tolist() == [1, 2, 0, 1, 2, 0, 4, 5, 3, 4, 5, 3]
    assert log.click.tolist() == [1, 0, 0] * 2 + [1, 1, 0] * 2
    with pytest.raises(
        ConfigError, match=re.escape("logger_feature must be a feature of the data (1 to 2), but 3")
    ):
        _logger(load_clicks_config(tiny, overrides={**overrides, "logger_feature": 3}), split, 0)
    for bad in ({"logger_feature": None}, {"logger": "lambdamart"}):
        with pytest.raises(
            ConfigError, match="logger_feature names the feature a 'feature' logger"
        ):
            load_clicks_config(tiny, overrides={**overrides, **bad})
    with pytest.raises(
        ConfigError, match=re.escape("exploration_rounds must be 0 (the loop deploys")
    ):
        load_clicks_config(
            tiny,
            overrides={**overrides, "exploration_rounds": 1, "learners": ["plrank-policy-aware"]},
        )


@pytest.mark.parametrize(
    ("key", "value", "regression"),
    [
        ("regression_features", "centred", {"features": "centred"}),
        ("regression_rounds", 3, {"n_rounds": 3}),
    ],
)
def test_regression_settings_reach_every_regression_of_the_run(tmp_path, key, value, regression):
    """regression_features = "centred" and regression_rounds: the regression's and the doubly
    robust rewards, and the off-policy table's regression, are click_regression's with those
    features and rounds; at their defaults ("raw", 100) they are what click_rewards fits
    itself, and the settings are as they were."""
    from pathlib import Path

    from tiny_ltr import write_tiny_letor

    from gbdt_plrank.clicks import click_regression
    from gbdt_plrank.harness.clicks.config import load_clicks_config
    from gbdt_plrank.harness.clicks.run import _Fold
    from gbdt_plrank.harness.data import load

    folder = write_tiny_letor(tmp_path / "tiny", queries=(10, 5, 5))
    tiny = Path(__file__).resolve().parents[1] / "configs" / "clicks-tiny.toml"
    data = load(str(folder), 1, drop_empty_test_queries=False)
    got = {}
    for setting in (None, value):  # None: the key left at its default
        given = {} if setting is None else {key: setting}
        config = load_clicks_config(
            tiny, overrides={"exploration_rounds": 0, "ope_logs": 1, **given}
        )
        fit = {} if setting is None else regression
        unit = _Fold(config, data, 0)
        logs = unit.logs(True, 3)
        theta = unit.theta(logs, stochastic=True)
        for estimator in ("regression", "doubly-robust"):
            policy = estimator == "doubly-robust"  # the logger's propensities: unshrunk
            r = unit.rewards(logs, estimator=estimator, policy=policy, stochastic=True)
            got[setting, estimator] = r["train"]
        expected = click_regression(
            logs["train"], data.train.X, data.train.qid, position_bias=theta, seed=0, **fit
        )
        np.testing.assert_array_equal(got[setting, "regression"], expected)
        plain = click_rewards(
            logs["train"],
            data.train.y.size,
            position_bias=theta,
            estimator="regression",
            X=data.train.X,
            qid=data.train.qid,
            seed=0,
        )
        assert np.array_equal(plain, expected) == (setting is None)
        (ope,) = unit._ope_logs()
        np.testing.assert_array_equal(
            ope.regression,
            click_regression(
                ope.log,
                data.test.X,
                data.test.qid,
                position_bias=ope.theta,
                seed=4_000_003,
                **fit,
            ),
        )
        assert (key in config.settings()) == (setting is not None)
    for estimator in ("regression", "doubly-robust"):
        assert not np.array_equal(got[None, estimator], got[value, estimator])
