"""Sharp policies: queries whose margins span hundreds or thousands (the kernels' wide path).

A query whose margins span more than ``LOG_FLOOR`` (300) is drawn by an exponential race in log
space and its estimate computed from ratios of normalisers. These tests hold it to exact
enumeration (:mod:`naive`, whose probabilities are normalised about the remaining documents'
maximum and so exact at any spread) and to the plain formulas, ranking by ranking.
"""

from __future__ import annotations

import naive
import numpy as np
import pytest
from scipy import stats

from gbdt_plrank import plrank_grad_hess, plrank_grad_hess_from_rankings
from gbdt_plrank._kernels import fairness as _fair_kernels
from gbdt_plrank._kernels import plrank, samplers, streams, wide_margins
from gbdt_plrank._kernels import policy as _policy_kernels
from gbdt_plrank._ranking_metric import dcg_weights
from gbdt_plrank._training.fairness_spec import FairnessSpec
from gbdt_plrank._training.plrank_grad_hess import _estimate_groups
from gbdt_plrank._training.policy_methods import PolicyMethods
from gbdt_plrank._training.policy_sample import sampled_exposure

GAPS = [60.0, 200.0, 400.0, 1000.0]


def _clusters(D: int, gap: float, seed: int) -> np.ndarray:
    """Pairs of nearby margins (about 1 apart), consecutive pairs ``gap`` apart, shuffled."""
    rng = np.random.default_rng(seed)
    scores = -gap * (np.arange(D) // 2) - rng.uniform(0.0, 1.5, size=D)
    return scores[rng.permutation(D)]


def _chain(D: int, gap: float) -> np.ndarray:
    """Every consecutive pair of margins ``gap`` apart, in a scrambled order."""
    return (-gap * np.arange(D))[np.array([2, 0, 5, 1, 4, 3][:D]) % D]


def _labels(D: int, seed: int) -> np.ndarray:
    labels = np.random.default_rng(seed).integers(0, 3, size=D).astype(float)
    labels[seed % D] = 2.0
    return labels


def _exact_expectation(scores, labels, K, metric="ndcg"):
    """sum over every partial ranking of its probability x the kernel's one-ranking estimate."""
    grad = np.zeros(len(scores))
    hess = np.zeros(len(scores))
    for y, p in naive.partial_rankings(scores, K):
        g, h = plrank_grad_hess_from_rankings(scores, labels, np.array([y]), K=K, metric=metric)
        assert np.all(np.isfinite(g)) and np.all(np.isfinite(h)), (y, g, h)
        grad += p * g
        hess += p * h
    return grad, hess


@pytest.mark.parametrize("gap", GAPS)
@pytest.mark.parametrize(
    ("D", "K", "shape"),
    [
        (3, 2, "chain"),
        (4, 4, "clusters"),
        (5, 3, "clusters"),
        (6, 2, "chain"),
        (6, 6, "clusters"),
        (6, 4, "chain"),
    ],
)
def test_exact_expectation_equals_exact_derivatives_at_any_spread(gap, D, K, shape):
    """Unbiased at spreads of 60 to 5000: every ranking's estimate is finite and their
    probability-weighted sum is the exact gradient and Hessian (the floor at 300 below the top
    once made the documents beyond it ties, and those estimates O(1) wrong)."""
    scores = _chain(D, gap) if shape == "chain" else _clusters(D, gap, seed=D + K)
    labels = _labels(D, seed=D * K)
    rho, theta = naive.rewards(labels, K=K)
    _, g_exact, h_exact = naive.exact_derivatives(scores, rho, theta[: min(K, D)])
    g, h = _exact_expectation(scores, labels, K)
    np.testing.assert_allclose(g, -g_exact, rtol=0, atol=1e-8)
    np.testing.assert_allclose(h, -h_exact, rtol=0, atol=1e-8)


@pytest.mark.parametrize("spread", [301.0, 340.0])
def test_wide_path_equals_the_plain_formulas_ranking_by_ranking(spread):
    """Just past the floor the plain formulas (1/S_k^2 up to 1e295) are still finite: the wide
    path's ratios must give the same numbers, in any order of the placed documents.

    The two top documents are placed by every ranking (as by every sample of the policy): a
    document unplaced by one ranking and placed by others gets the difference of sums over
    all rankings and over those placing it, whose rounding grows with its weight e(d) relative to
    the K-th margin (in either path; sampled rankings leave out only documents within 42 of it).
    """
    rng = np.random.default_rng(int(spread))
    D, K = 6, 4
    scores = np.array([0.0, -1.0, -spread / 2, -spread / 2 - 0.5, -spread + 0.7, -spread])
    assert wide_margins.is_wide(scores)
    labels = _labels(D, seed=3)
    rho, theta = naive.rewards(labels, K=K)
    rankings = np.array(
        [rng.permutation(np.r_[0, 1, 2 + rng.permutation(4)[:2]]) for _ in range(7)],
        dtype=np.int64,
    )
    g_ref, h_ref = naive.estimate(scores, rho, theta, rankings)
    g, h = plrank_grad_hess_from_rankings(scores, labels, rankings, K=K)
    np.testing.assert_allclose(g, g_ref, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(h, h_ref, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("kind", ["expected-exposure", "disparity"])
def test_wide_fairness_terms_equal_the_plain_formulas(kind):
    """The fairness kernel's wide path (signed rewards, dE/dm slopes) against its plain
    reference, just past the floor where the reference is still finite."""
    D, K, w = 6, 3, 0.7
    scores = np.array([0.0, -0.8, -160.0, -160.4, -320.0, -320.9])
    labels = np.array([2.0, 0.0, 1.0, 2.0, 0.0, 1.0])
    rho, theta = naive.rewards(labels, K=K)
    gain = 2.0**labels - 1.0
    loss = (
        naive.ee_loss(naive.equal_exposure_target(labels, theta))
        if kind != "disparity"
        else naive.disparity_loss(gain)
    )
    rng = np.random.default_rng(5)
    rankings = np.array([rng.permutation(D)[:K] for _ in range(6)], dtype=np.int64)
    g_ref, h_ref, s_ref = naive.fair_estimate(scores, rho, loss, w, theta, rankings)
    spec = FairnessSpec(kind, w)
    terms = spec.terms(labels, np.array([0, D]), theta, gain="exp", item_groups=None)
    g, h, s = np.empty(D), np.empty(D), np.empty(D)
    _fair_kernels.fair_estimate_from_rankings(
        scores, rho, spec.kind, terms.aux, terms.member, w, theta, rankings, g, h, s
    )
    np.testing.assert_allclose(g, g_ref, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(h, h_ref, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(s, s_ref, rtol=1e-9, atol=1e-12)
    # sampled: finite, and the sorted query's documents far below get nothing
    fg, fh = plrank_grad_hess(
        np.tile(scores * 3, 50),
        np.tile(labels, 50),
        np.arange(0, 6 * 50 + 1, 6),
        K=K,
        N=8,
        fairness=kind,
        fairness_weight=w,
        hessian="raw",
    )
    assert np.all(np.isfinite(fg)) and np.all(np.isfinite(fh))


@pytest.mark.parametrize("gap", GAPS)
def test_monte_carlo_estimate_agrees_with_exact(gap):
    """Many copies of a wide query: the sampled estimate's mean within 5 SE of exact."""
    D, K, copies = 6, 4, 3000
    scores = _clusters(D, gap, seed=1)
    labels = _labels(D, seed=4)
    rho, theta = naive.rewards(labels, K=K)
    _, g_exact, h_exact = naive.exact_derivatives(scores, rho, theta[:K])
    g, h = plrank_grad_hess(
        np.tile(scores, copies),
        np.tile(labels, copies),
        np.arange(0, D * copies + 1, D),
        K=K,
        N=4,
        hessian="raw",
        seed=3,
    )
    for est, exact in ((g, -g_exact), (h, -h_exact)):
        per_copy = est.reshape(copies, D)
        se = per_copy.std(axis=0, ddof=1) / np.sqrt(copies)
        assert np.all(np.abs(per_copy.mean(axis=0) - exact) <= 5 * se + 1e-12)


@pytest.mark.parametrize("gap", [200.0, 1000.0])
def test_log_space_race_follows_plackett_luce(gap):
    """Chi-square of the wide race's rankings against their exact PL probabilities; rankings
    of probability below 1e-12 never drawn."""
    D, K, n = 6, 4, 20000
    scores = _clusters(D, gap, seed=2)
    m_c, _ = wide_margins.wide_frame(scores, K)
    cand, _ = wide_margins.wide_candidates(m_c)
    assert cand.shape[0] < D  # documents that cannot be placed draw no key
    state = np.array([streams.stream_state(5, 0, 0)], dtype=np.uint64)
    keys = np.empty(D)
    ranking = np.empty(K, dtype=np.int64)
    counts: dict[tuple[int, ...], int] = {}
    every = np.arange(D)
    whole = np.empty(K, dtype=np.int64)
    for _ in range(n):
        u = naive.independent_uniforms(state, 1, D)[0]
        wide_margins._draw_race_wide(m_c, cand, u, keys, ranking)
        wide_margins._draw_race_wide(m_c, every, u, keys, whole)  # every document keyed
        assert np.array_equal(ranking, whole)
        counts[tuple(ranking)] = counts.get(tuple(ranking), 0) + 1
    exact = {y: p for y, p in naive.partial_rankings(scores, K) if p > 1e-12}
    assert set(counts) <= set(exact)
    observed = np.array([counts.get(y, 0) for y in exact])
    assert stats.chisquare(observed, np.array(list(exact.values())) * n).pvalue > 1e-4


@pytest.mark.parametrize("gap", GAPS)
def test_sampled_exposure_matches_enumeration(gap):
    """The policy's exposure at every spread, two queries in one call."""
    theta = dcg_weights(3)
    a, b = _clusters(5, gap, seed=7), _chain(4, gap)
    E = sampled_exposure(
        np.concatenate([a, b]),
        np.array([0, 5, 9]),
        theta,
        n_samples=20000,
        seed=1,
        round_=0,
        n_jobs=1,
    )
    exact = np.concatenate([naive.exact_exposure(a, theta), naive.exact_exposure(b, theta)])
    np.testing.assert_allclose(E, exact, rtol=0, atol=0.015)


class _Margins(PolicyMethods):
    """A fitted policy whose margins are given (the policy methods need only ``predict``)."""

    metric, gain, n_jobs = "ndcg", "exp", 1

    def __init__(self, margins: np.ndarray, K: int) -> None:
        self.margins, self.K = margins, K

    def predict(self, X: object) -> np.ndarray:
        return self.margins


def test_sharp_policy_is_the_ranking():
    """The reproduction: eight documents whose margins lie 60 temperatures apart. The policy is
    the ranking: its exposure is the DCG@5 weights in margin order, and its expected metric
    rises to the ranking's as the temperature drops (it once fell: 0.9999, 0.98, 0.90)."""
    margins = np.array([3.0, 0.0, 6.0, 1.5, 9.0, 4.5, 10.5, 7.5])  # 1.5 apart
    policy = _Margins(margins, K=5)
    order = np.argsort(-margins)
    expected = np.zeros(8)
    expected[order[:5]] = dcg_weights(5)
    E = policy.expected_exposure(
        None, np.zeros(8), n_samples=200, random_state=0, temperature=1.5 / 60
    )
    np.testing.assert_allclose(E, expected, rtol=0, atol=1e-12)
    np.testing.assert_allclose(expected[order], [1, 0.631, 0.5, 0.431, 0.387, 0, 0, 0], atol=1e-3)
    labels = np.array([0.0, 1.0, 0.0, 2.0, 3.0, 1.0, 2.0, 0.0])
    ranked = policy.score(None, labels, np.zeros(8))
    means = [
        policy.expected_metric(
            None, labels, np.zeros(8), n_samples=400, random_state=1, temperature=t
        ).mean
        for t in (1.0, 0.1, 0.01, 1e-3, 1e-6)
    ]
    assert np.all(np.diff(means) >= -1e-3), means
    assert means[-1] == pytest.approx(ranked, abs=1e-12)
    assert means[-2] == pytest.approx(ranked, abs=1e-12)


@pytest.mark.parametrize("noise", [streams.NOISE_INDEPENDENT, streams.NOISE_LATTICE])
def test_wide_queries_gathered_after_the_narrow_kernel_are_one_estimate_groups_call(noise):
    """The estimator runs the kernel without the wide path, then the wide queries alone through
    ``estimate_groups``: the same numbers, bit for bit, as one ``estimate_groups`` call."""
    rng = np.random.default_rng(5)
    sizes = [1, 6, 9, 2, 30, 5, 12, 40]
    ptr = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    scores = rng.normal(size=ptr[-1])
    labels = rng.integers(0, 3, size=ptr[-1]).astype(float)
    spread = [0, 1, 3, 4, 6]  # wide (margins spanning 1000s); query 6 also has no reward
    for q in spread:
        scores[ptr[q] : ptr[q + 1]] *= 900.0
    labels[ptr[6] : ptr[7]] = 0.0
    wide = np.array([wide_margins.is_wide(scores[ptr[q] : ptr[q + 1]]) for q in range(len(sizes))])
    assert wide.tolist() == [False, True, False, True, True, False, True, False]

    rho = labels / 3.0
    theta = dcg_weights(10)
    keys = np.arange(len(sizes), dtype=np.int64) + 100
    args = (scores, rho, ptr, keys, theta, 20, 7, 2, samplers.SAMPLER_AUTO, noise)
    grad, hess = np.full(ptr[-1], np.nan), np.full(ptr[-1], np.nan)
    flagged = np.ones(len(sizes), dtype=np.bool_)
    plrank.estimate_narrow_groups(*args, grad, hess, flagged)
    # Flagged: the wide queries that have a reward; their rows are left for estimate_groups.
    assert flagged.tolist() == [False, True, False, True, True, False, False, False]
    assert np.isnan(grad[ptr[1] : ptr[2]]).all() and not np.isnan(grad[: ptr[1]]).any()

    whole = np.empty(ptr[-1]), np.empty(ptr[-1])
    plrank.estimate_groups(*args, *whole)
    both = np.empty(ptr[-1]), np.empty(ptr[-1])
    _estimate_groups(*args, *both)
    np.testing.assert_array_equal(both[0], whole[0])
    np.testing.assert_array_equal(both[1], whole[1])
    narrow = ~np.repeat(flagged, sizes)
    np.testing.assert_array_equal(grad[narrow], whole[0][narrow])


@pytest.mark.parametrize("placement", [False, True])
def test_wide_queries_of_the_exposure_gathered_after_the_narrow_kernel(placement):
    """sampled_exposure runs the kernel without the wide path, then the wide queries alone,
    each with its own stream: the numbers of one whole ``sampled_exposure_groups`` call,
    counted or from the placement probabilities."""
    rng = np.random.default_rng(8)
    sizes = [3, 0, 8, 25, 1, 14, 6]
    ptr = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    margins = rng.normal(size=ptr[-1])
    for q in (2, 4, 5):  # wide, except the single document of query 4
        margins[ptr[q] : ptr[q + 1]] *= 700.0
    theta = dcg_weights(5)
    keys = np.arange(len(sizes), dtype=np.int64)
    whole = np.empty(ptr[-1])
    _policy_kernels.sampled_exposure_groups(margins, ptr, keys, theta, 30, 4, 1, placement, whole)
    got = sampled_exposure(
        margins, ptr, theta, n_samples=30, seed=4, round_=1, n_jobs=2, placement=placement
    )
    np.testing.assert_array_equal(got, whole)
    out, wide = np.full(ptr[-1], np.nan), np.ones(len(sizes), dtype=np.bool_)
    _policy_kernels.sampled_exposure_narrow_groups(
        margins, ptr, keys, theta, 30, 4, 1, placement, out, wide
    )
    assert wide.tolist() == [False, False, True, False, False, True, False]
    narrow = ~np.repeat(wide, sizes)
    np.testing.assert_array_equal(out[narrow], whole[narrow])
    assert np.isnan(out[~narrow]).all()


@pytest.mark.parametrize("span", [1e6, 1e8, 1e10])
@pytest.mark.parametrize(("D", "K"), [(4, 4), (5, 3), (6, 6)])
def test_exact_up_to_the_documented_span(span, D, K):
    """The documented range (MAX_EXACT_SPAN, 1e10): the enumerated estimate is the exact
    gradient and Hessian to 1e-4 of their scale (1.2e-5 at most here). Beyond it the log-space
    normalisers round away differences of order 1 between margins far below the top (1e-3 at
    1e12, several times the gradient from 1e18), which the next test's warning says."""
    scores = _clusters(D, (span - 2.0) / ((D - 1) // 2), seed=D + K)  # pairs 1.5 wide at most
    assert scores.max() - scores.min() <= span
    labels = _labels(D, seed=D * K)
    rho, theta = naive.rewards(labels, K=K)
    _, g_exact, h_exact = naive.exact_derivatives(scores, rho, theta[: min(K, D)])
    g, h = _exact_expectation(scores, labels, K)
    scale = max(np.abs(g_exact).max(), np.abs(h_exact).max())
    np.testing.assert_allclose(g, -g_exact, rtol=0, atol=1e-4 * scale)
    np.testing.assert_allclose(h, -h_exact, rtol=0, atol=1e-4 * scale)


def test_a_query_beyond_the_exact_span_warns_and_one_within_does_not(recwarn):
    """Margins spanning 1e20 gave a gradient several times the exact one without a word; now a
    RuntimeWarning names the query and the span (the estimate itself is unchanged)."""
    from gbdt_plrank._training.plrank_grad_hess import MAX_EXACT_SPAN

    labels = np.array([2.0, 0.0, 1.0, 1.0, 0.0, 2.0])
    ptr = np.array([0, 3, 6])
    within = np.array([0.0, -1.0, 0.5, 0.0, 0.3 - MAX_EXACT_SPAN, 0.3])
    plrank_grad_hess(within, labels, ptr, K=3, N=4)
    plrank_grad_hess_from_rankings(within[3:], labels[3:], np.array([[0, 1, 2]]), K=3)
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]
    beyond = within.copy()
    beyond[4] = -1e20
    with pytest.warns(RuntimeWarning, match=r"the margins of query 1 span 1e\+20: the PL-Rank "):
        g, _ = plrank_grad_hess(beyond, labels, ptr, K=3, N=4)
    assert np.all(np.isfinite(g))
    with pytest.warns(RuntimeWarning, match=r"the margins of query 0 span 1e\+20"):
        plrank_grad_hess_from_rankings(beyond[3:], labels[3:], np.array([[0, 1, 2]]), K=3)
