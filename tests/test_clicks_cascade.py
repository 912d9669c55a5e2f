"""The cascade click model: simulated clicks against exact enumeration on tiny lists."""

import itertools
import re

import numpy as np
import pytest

from gbdt_plrank.clicks import (
    cascade_position_bias,
    seen_click_probability,
    simulate_cascade_clicks,
)


def _exact_patterns(gamma, stop, satisfaction):
    """Click pattern -> probability, by enumerating every path of a reader of the list
    ``gamma`` (click probabilities when read, top rank first): a plain reference."""
    out = {}

    def walk(k, clicks, prob):
        if k == len(gamma):
            out[tuple(clicks)] = out.get(tuple(clicks), 0.0) + prob
            return
        for c in (1, 0):
            p = prob * (gamma[k] if c else 1 - gamma[k])
            stays = (1 - stop) * (1 - satisfaction * c)
            rest = len(gamma) - k - 1
            # leaves: the remaining ranks are not read, so not clicked
            done = tuple(clicks + [c] + [0] * rest)
            out[done] = out.get(done, 0.0) + p * (1 - stays)
            walk(k + 1, [*clicks, c], p * stays)

    walk(0, [], 1.0)
    return out


def _patterns(log):
    """Each session's clicks by rank, as one integer per session (bit k-1 for rank k)."""
    code = np.zeros(int(log.session.max()) + 1, np.int64)
    np.add.at(code, log.session, log.click << (log.rank - 1))
    return code


@pytest.mark.parametrize(
    ("stop", "satisfaction"), [(0.2, 0.0), (0.3, 0.5), (0.0, 1.0), (0.1, 0.7), (0.0, 0.0)]
)
def test_click_patterns_match_enumeration(stop, satisfaction):
    """Every joint pattern of clicks on a list of four documents, shown in two orders, within
    five standard errors of its exact probability over 200,000 sessions per order."""
    y = np.array([2.0, 0.0, 1.0, 3.0])
    gamma = seen_click_probability(y, noise=0.15, graded=True)
    n = 200_000
    for order in ([0, 1, 2, 3], [3, 2, 1, 0]):
        log = simulate_cascade_clicks(
            [np.tile(order, (n, 1))],
            y,
            stop=stop,
            satisfaction=satisfaction,
            noise=0.15,
            graded=True,
            seed=7,
        )
        code = _patterns(log)
        freq = np.bincount(code, minlength=16) / n
        exact = np.zeros(16)
        for pattern, prob in _exact_patterns(gamma[order], stop, satisfaction).items():
            exact[sum(c << k for k, c in enumerate(pattern))] += prob
        assert exact.sum() == pytest.approx(1.0)
        se = np.sqrt(exact * (1 - exact) / n)
        assert np.all(np.abs(freq - exact) <= 5 * se + 1e-12), (order, freq, exact)


def test_without_satisfaction_it_is_the_position_based_model_of_cascade_position_bias():
    """satisfaction=0: rank k's click probability is (1 - stop)^(k-1) times the document's,
    exactly as enumeration gives it, and clicks at two ranks are independent."""
    y = np.array([1.0, 0.0, 1.0, 0.0, 1.0])
    gamma = seen_click_probability(y, noise=0.1)
    theta = cascade_position_bias(5, stop=0.25)
    exact = _exact_patterns(gamma, 0.25, 0.0)
    by_rank = [sum(p for pat, p in exact.items() if pat[k]) for k in range(5)]
    np.testing.assert_allclose(by_rank, theta * gamma, rtol=1e-12)
    np.testing.assert_allclose(theta, [1, 0.75, 0.75**2, 0.75**3, 0.75**4])
    both = sum(p for pat, p in exact.items() if pat[0] and pat[2])
    assert both == pytest.approx(by_rank[0] * by_rank[2])


def test_reading_follows_the_displayed_order_across_queries_and_sessions():
    """Rows of two queries, each session its own order and display; the top displayed document
    is always read, a document displayed second only after it (stop=0, satisfaction=1: the
    cascade that reads to the first click)."""
    y = np.array([1.0, 0.0, 0.0, 1.0, 1.0])  # query 0: rows 0-2; query 1: rows 3-4
    rankings = [np.array([[0, 1, 2], [2, 1, 0], [1, 0, 2]]), np.array([[4, 3], [3, 4]])]
    log = simulate_cascade_clicks(
        rankings, y, stop=0.0, satisfaction=1.0, noise=0.0, top_k=2, seed=0
    )
    assert log.session.tolist() == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]
    assert log.row.tolist() == [0, 1, 2, 1, 1, 0, 4, 3, 3, 4]
    # the first relevant document read is clicked and ends the session
    assert log.click.tolist() == [1, 0, 0, 0, 0, 1, 1, 0, 1, 0]
    again = simulate_cascade_clicks(
        rankings, y, stop=0.0, satisfaction=1.0, noise=0.0, top_k=2, seed=0
    )
    assert np.array_equal(again.click, log.click)


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        (dict(stop=1.0), "stop must be a number in [0, 1), but 1.0 is given."),
        (dict(stop=-0.1), "stop must be a number in [0, 1), but -0.1 is given."),
        (dict(stop=float("nan")), "stop must be a number in [0, 1), but nan is given."),
        (dict(satisfaction=1.5), "satisfaction must be a number in [0, 1], but 1.5 is given."),
        (dict(satisfaction="1"), "satisfaction must be a number in [0, 1], but '1' is given."),
        (dict(noise=2.0), "noise must be a number in [0, 1], but 2.0 is given."),
        (dict(top_k=0), "top_k must be an integer >= 1, but 0 is given."),
        (dict(seed=-1), "seed must be an integer in [0, 2**63), but -1 is given."),
        (dict(y=[0.0, -1.0, 1.0]), "y must be >= 0, but y[1] is -1.0."),
        (
            dict(rankings=[[[0, 1, 3]]]),
            "rankings[0] must hold row indices in [0, 3) (rows of y), but holds 3.",
        ),
    ],
)
def test_every_bad_cascade_argument_is_named(kw, message):
    args = {"rankings": [[[0, 1, 2]]], "y": [0.0, 1.0, 2.0], "seed": 0, **kw}
    with pytest.raises(ValueError, match=re.escape(message)):
        simulate_cascade_clicks(args.pop("rankings"), args.pop("y"), **args)


def test_cascade_position_bias_arguments_are_named():
    with pytest.raises(ValueError, match=re.escape("K must be an integer >= 1, but 0 is given.")):
        cascade_position_bias(0)
    with pytest.raises(ValueError, match=re.escape("stop must be a number in [0, 1)")):
        cascade_position_bias(3, stop=1)


def test_an_empty_display_gives_an_empty_log():
    log = simulate_cascade_clicks([np.zeros((0, 3), np.int64)], [0.0, 1.0, 0.0], seed=0)
    assert len(log) == 0


@pytest.mark.parametrize("n", [1, 3])
def test_every_pattern_of_the_reference_sums_to_one(n):
    """The reference itself: its probabilities over all 2**n patterns sum to 1."""
    for stop, sat in itertools.product((0.0, 0.4), (0.0, 0.6, 1.0)):
        exact = _exact_patterns([0.3] * n, stop, sat)
        assert sum(exact.values()) == pytest.approx(1.0)
