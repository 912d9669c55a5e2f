"""A Plackett-Luce policy's exposure from its placement probabilities (``method="placement"``).

Unbiased by exact enumeration, positive for every row where counting leaves rows at 0, the mean
of the plain reference over the very rankings ``sample_rankings`` draws, and its variance set
against counting's, exactly, on small queries.
"""

from __future__ import annotations

from itertools import pairwise

import naive
import numpy as np
import pytest

from gbdt_plrank import PLRankRanker
from gbdt_plrank._training.policy_sample import sampled_exposure
from gbdt_plrank.datasets import load_dataset

QUERIES = [  # (margins, rank weights)
    ([0.3, -1.0, 2.0, 0.0, -3.0], [1.0, 0.5, 0.25]),
    ([4.0, 0.0, -4.0, -8.0], [1.0, 1 / 4, 1 / 9, 1 / 16]),  # sharp, every rank shown
    ([0.0, 0.0, 0.0, 0.0, 0.0, 0.0], [1.0, 0.63]),  # ties
    ([1.0, -2.0, 0.5], [0.0, 1.0]),  # a banner at rank 1
    ([2.0, 1.0], [1.0, 0.5, 0.25]),  # fewer rows than ranks
]


def _moments(scores, theta, estimate):
    """Exact mean and variance per row of ``estimate(scores, theta, ranking)`` over one ranking."""
    mean = second = 0.0
    for ranking, p in naive.partial_rankings(scores, len(theta)):
        value = estimate(scores, theta, ranking)
        mean, second = mean + p * value, second + p * value**2
    return mean, second - mean**2


@pytest.mark.parametrize(("scores", "theta"), QUERIES)
def test_placement_exposure_is_unbiased_by_enumeration(scores, theta):
    exact = naive.exact_exposure(np.asarray(scores), theta)
    mean, _ = _moments(scores, theta, naive.placement_exposure)
    np.testing.assert_allclose(mean, exact, rtol=0, atol=1e-14)
    # every ranking's placement terms hand out the whole rank weight, as counting does
    for ranking, _ in naive.partial_rankings(scores, len(theta)):
        total = naive.placement_exposure(scores, theta, ranking).sum()
        assert total == pytest.approx(sum(theta[: len(ranking)]), abs=1e-14)


def test_the_kernel_is_the_reference_over_the_sampled_rankings():
    """The kernel's estimate is the reference's mean over the rankings the same streams draw
    (those of ``sample_rankings``), counting's too; wide queries (margins spanning more than
    the sampler's floor) included."""
    rng = np.random.default_rng(0)
    sizes = [1, 2, 5, 9, 30]
    ptr = np.concatenate(([0], np.cumsum(sizes)))
    margins = rng.normal(scale=2.0, size=ptr[-1])
    margins[ptr[3] : ptr[4]] *= 400.0  # a wide query
    theta = np.array([1.0, 0.5, 1 / 3, 0.25])
    S = 7
    from gbdt_plrank._kernels import plrank

    rankings = np.full(((ptr.size - 1) * S, theta.size), -1, dtype=np.int64)
    plrank.sample_groups(margins, ptr, theta.size, S, 3, 0, rankings)
    for placement, reference in ((True, naive.placement_exposure), (False, naive.counted_exposure)):
        got = sampled_exposure(
            margins, ptr, theta, n_samples=S, seed=3, round_=0, n_jobs=1, placement=placement
        )
        for g, (a, b) in enumerate(pairwise(ptr)):
            draws = rankings[g * S : (g + 1) * S, : min(theta.size, b - a)]
            want = np.mean([reference(margins[a:b], theta, r) for r in draws], axis=0)
            np.testing.assert_allclose(got[a:b], want, rtol=1e-12, atol=1e-300)
            assert got[a:b].sum() == pytest.approx(theta[: b - a].sum(), rel=1e-12)


def test_placement_is_positive_where_counting_is_zero_and_far_less_variable_for_rare_rows():
    """A sharp policy rarely shows its last rows: counting gives them 0 in most samples of a
    few rankings, placement never does, and its exact variance relative to the exposure is
    orders of magnitude below counting's for them."""
    scores, theta = np.array([6.0, 4.0, 3.0, 0.0, -6.0]), [1.0, 0.5]
    count = sampled_exposure(
        scores, np.array([0, 5]), np.array(theta), n_samples=20, seed=0, round_=0, n_jobs=1
    )
    place = sampled_exposure(
        scores,
        np.array([0, 5]),
        np.array(theta),
        n_samples=20,
        seed=0,
        round_=0,
        n_jobs=1,
        placement=True,
    )
    assert count[4] == 0.0 and (place > 0).all()
    exact = naive.exact_exposure(scores, theta)
    _, var_count = _moments(scores, theta, naive.counted_exposure)
    _, var_place = _moments(scores, theta, naive.placement_exposure)
    relative_count, relative_place = var_count / exact**2, var_place / exact**2
    assert (relative_place[3:] < relative_count[3:] / 100).all()


def test_placement_is_not_less_variable_for_every_row():
    """Conditioning each rank's term on the rows above it is a Rao-Blackwellisation term by
    term, not of the sum: where a ranking places nearly every row under flat rank weights,
    counting's terms offset each other (every row is placed once) and a common row's counted
    exposure can vary less than its placement estimate."""
    scores = [0.85, -0.43, -0.75, -1.06, 0.59, -0.05]
    theta = 1 / np.sqrt(np.arange(1, 7))
    _, var_count = _moments(scores, theta, naive.counted_exposure)
    _, var_place = _moments(scores, theta, naive.placement_exposure)
    assert var_place[5] > 3 * var_count[5]


@pytest.mark.parametrize("backend", ["xgboost", "lightgbm"])
def test_a_rankers_placement_exposure_uses_its_sampled_rankings(backend):
    data = load_dataset("mq2008")
    rows = int(data.test.group_ptr[6])
    X, y, qid = data.test.X[:rows], data.test.y[:rows], data.test.qid[:rows]
    ranker = PLRankRanker(
        backend=backend, n_estimators=5, N=5, min_child_weight=0.01, n_jobs=1, random_state=0
    )
    ranker.fit(X, y, group=qid)
    theta = np.array([1.0, 0.5, 0.25])
    got = ranker.expected_exposure(
        X, qid, n_samples=9, weights=theta, random_state=4, method="placement"
    )
    margins = ranker.predict(X)
    assert np.ptp(margins) > 0.1  # a policy that is not uniform
    for q, ranks in zip(
        np.unique(qid), ranker.sample_rankings(X, qid, n_samples=9, K=3, random_state=4)
    ):
        rows_q = np.flatnonzero(qid == q)
        local = [np.searchsorted(rows_q, r) for r in ranks]
        want = np.mean([naive.placement_exposure(margins[rows_q], theta, r) for r in local], axis=0)
        np.testing.assert_allclose(got[rows_q], want, rtol=1e-10)
    with pytest.raises(
        ValueError, match="method must be one of 'count', 'placement', but 'rao' is given"
    ):
        ranker.expected_exposure(X, qid, n_samples=2, method="rao")
