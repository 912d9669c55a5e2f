"""The estimator against exact enumeration, the plain reference, and its own invariances."""

from __future__ import annotations

import itertools

import naive
import numpy as np
import pytest
from scipy import stats

from gbdt_plrank import plrank_grad_hess, plrank_grad_hess_from_rankings
from gbdt_plrank._kernels import samplers, streams
from gbdt_plrank._training.plrank_grad_hess import CURVATURE_FLOOR

CASES = [
    (D, K, metric, gain)
    for D in (2, 3, 4, 5, 6)
    for K in (1, 2, 3, 6)
    for metric, gain in (("ndcg", "exp"), ("dcg", "linear"), ("precision", "exp"))
    if not (D == 6 and K == 6 and metric != "ndcg")
]


def _query(D: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    scores = rng.normal(scale=1.5, size=D)
    labels = rng.integers(0, 3, size=D).astype(float)
    labels[rng.integers(D)] = 2.0
    return scores, labels


def _exact_expectation(scores, labels, K, metric, gain):
    """sum over every partial ranking of PL probability x the kernel's one-ranking estimate."""
    grad = np.zeros(len(scores))
    hess = np.zeros(len(scores))
    for y, p in naive.partial_rankings(scores, K):
        g, h = plrank_grad_hess_from_rankings(
            scores, labels, np.array([y]), K=K, metric=metric, gain=gain
        )
        grad += p * g
        hess += p * h
    return grad, hess


@pytest.mark.parametrize(("D", "K", "metric", "gain"), CASES)
def test_exact_expectation_equals_exact_derivatives(D, K, metric, gain):
    scores, labels = _query(D, seed=D * 10 + K)
    rho, theta = naive.rewards(labels, K=K, metric=metric, gain=gain)
    _, g_exact, h_exact = naive.exact_derivatives(scores, rho, theta[: min(K, D)])
    g, h = _exact_expectation(scores, labels, K, metric, gain)
    np.testing.assert_allclose(g, -g_exact, rtol=0, atol=1e-8)
    np.testing.assert_allclose(h, -h_exact, rtol=0, atol=1e-8)


@pytest.mark.parametrize("D", [2, 4, 5])
def test_exact_derivatives_match_finite_differences(D):
    """The enumeration reference itself agrees with central differences of the exact R."""
    scores, labels = _query(D, seed=D)
    rho, theta = naive.rewards(labels, K=3)
    theta = theta[: min(3, D)]
    R, g, h = naive.exact_derivatives(scores, rho, theta)
    step = 1e-4
    for d in range(D):
        up, down = scores.copy(), scores.copy()
        up[d] += step
        down[d] -= step
        r_up, r_down = (
            naive.expected_reward(up, rho, theta),
            naive.expected_reward(down, rho, theta),
        )
        assert abs((r_up - r_down) / (2 * step) - g[d]) < 1e-6
        assert abs((r_up - 2 * R + r_down) / step**2 - h[d]) < 1e-5


@pytest.mark.parametrize(("D", "K"), [(4, 6), (7, 3), (30, 5), (30, 30), (64, 10), (200, 12)])
@pytest.mark.parametrize(
    ("metric", "gain"), [("ndcg", "exp"), ("dcg", "linear"), ("precision", "exp")]
)
def test_kernel_equals_reference_given_rankings(D, K, metric, gain):
    rng = np.random.default_rng(D + K)
    scores = rng.normal(scale=2.0, size=D)
    labels = rng.integers(0, 5, size=D).astype(float)
    rankings = np.array([rng.permutation(D)[: min(K, D)] for _ in range(25)])
    g, h = plrank_grad_hess_from_rankings(scores, labels, rankings, K=K, metric=metric, gain=gain)
    rho, theta = naive.rewards(labels, K=K, metric=metric, gain=gain)
    g_ref, h_ref = naive.estimate(scores, rho, theta[: min(K, D)], rankings)
    np.testing.assert_allclose(g, g_ref, rtol=0, atol=1e-10)
    np.testing.assert_allclose(h, h_ref, rtol=0, atol=1e-10)


@pytest.mark.parametrize("noise", ["independent", "lattice"])
@pytest.mark.parametrize("sampler", ["tree", "race"])
def test_monte_carlo_mean_agrees_with_exact(sampler, noise):
    """Many copies of one query give independent estimates: their mean is within 5 SE of exact."""
    D, K, copies = 6, 3, 4000
    scores, labels = _query(D, seed=3)
    rho, theta = naive.rewards(labels, K=K)
    _, g_exact, h_exact = naive.exact_derivatives(scores, rho, theta[:K])
    ptr = np.arange(0, D * copies + 1, D)
    g, h = plrank_grad_hess(
        np.tile(scores, copies),
        np.tile(labels, copies),
        ptr,
        K=K,
        N=5,
        hessian="raw",
        sampler=sampler,
        noise=noise,
        seed=11,
    )
    for est, exact in ((g, -g_exact), (h, -h_exact)):
        per_copy = est.reshape(copies, D)
        z = (per_copy.mean(axis=0) - exact) / (per_copy.std(axis=0, ddof=1) / np.sqrt(copies))
        assert np.all(np.abs(z) < 5), z


def _draw_many(sampler: str, scores: np.ndarray, K: int, n: int) -> list[tuple[int, ...]]:
    e = np.empty(len(scores))
    samplers.shifted_exp(scores, e)
    state = np.array([streams.stream_state(5, 0, 0)], dtype=np.uint64)
    ranking = np.empty(K, dtype=np.int64)
    S = np.empty(K)
    P = samplers._tree_size(len(scores))
    tree = np.empty(2 * P)
    samplers._tree_build(tree, e, P)
    base = tree.copy()
    keys = np.empty(len(scores))
    out = []
    for _ in range(n):
        if sampler == "tree":
            samplers._draw_tree(
                tree, base, P, naive.independent_uniforms(state, 1, K)[0], ranking, S
            )
        else:
            u = naive.independent_uniforms(state, 1, len(scores))[0]
            samplers._draw_race(e, u, keys, ranking)
        out.append(tuple(ranking))
    return out


@pytest.mark.parametrize("sampler", ["tree", "race"])
@pytest.mark.parametrize(("D", "K"), [(4, 2), (5, 3), (4, 4)])
def test_samplers_follow_plackett_luce(sampler, D, K):
    """Chi-square of every top-K prefix's count against its exact PL probability."""
    scores = np.linspace(1.0, -1.0, D) + np.array([0.3, -0.2, 0.1, 0.0, 0.25])[:D]
    n = 30000
    counts: dict[tuple[int, ...], int] = {}
    for y in _draw_many(sampler, scores, K, n):
        counts[y] = counts.get(y, 0) + 1
    exact = naive.partial_rankings(scores, K)
    assert set(counts) <= {y for y, _ in exact}
    observed = np.array([counts.get(y, 0) for y, _ in exact])
    expected = np.array([p for _, p in exact]) * n
    assert stats.chisquare(observed, expected).pvalue > 1e-4


def test_tree_and_race_give_identical_estimates_for_identical_rankings():
    """The estimate depends on the rankings only: both samplers' S_k come from the same tree."""
    rng = np.random.default_rng(0)
    scores = rng.normal(size=40)
    labels = rng.integers(0, 3, size=40).astype(float)
    tree_rankings = np.array(_draw_many("tree", scores, 5, 50))
    race_rankings = np.array(_draw_many("race", scores, 5, 50))
    for rankings in (tree_rankings, race_rankings):
        a = plrank_grad_hess_from_rankings(scores, labels, rankings, K=5)
        b = plrank_grad_hess_from_rankings(scores, labels, rankings.copy(), K=5)
        np.testing.assert_array_equal(a[0], b[0])
    rho, theta = naive.rewards(labels, K=5)
    np.testing.assert_allclose(
        plrank_grad_hess_from_rankings(scores, labels, race_rankings, K=5)[0],
        naive.estimate(scores, rho, theta, race_rankings)[0],
        atol=1e-12,
    )


@pytest.mark.parametrize(("D", "K"), [(5, 3), (40, 40), (64, 10)])
def test_race_sampled_estimate_equals_the_estimate_of_its_rankings(D, K):
    """The race computes S_k directly (O(D)), the explicit path from the tree: same to 1e-10."""
    rng = np.random.default_rng(D)
    scores = rng.normal(scale=2.0, size=D)
    labels = rng.integers(0, 3, size=D).astype(float)
    seed, n = 9, 30
    g, h = plrank_grad_hess(
        scores, labels, [0, D], K=K, N=n, seed=seed, sampler="race", hessian="raw"
    )
    e = np.empty(D)
    samplers.shifted_exp(scores, e)
    state = np.array([streams.stream_state(seed, 0, 0)], dtype=np.uint64)
    keys = np.empty(D)
    rankings = np.empty((n, K), dtype=np.int64)
    U = naive.independent_uniforms(state, n, D)
    for s in range(n):
        samplers._draw_race(e, U[s], keys, rankings[s])
    g_ref, h_ref = plrank_grad_hess_from_rankings(scores, labels, rankings, K=K)
    np.testing.assert_allclose(g, g_ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(h, h_ref, rtol=1e-10, atol=1e-12)


def test_both_normalisers_agree_and_survive_dominant_documents():
    """S_k from the tree and from direct sums; the remaining mass may be 1e-100 of the total."""
    import math

    scores = np.log(np.array([1.0, 1e-100, 3e-100, 0.5, 2e-100, 1e-100]))
    ranking = np.array([0, 3, 2])
    e, tree, base, P = samplers._query_tree(scores)
    tree_S, direct_S = np.empty(3), np.empty(3)
    samplers._normalizers_of(ranking, tree, base, P, tree_S)
    samplers._normalizers_direct(ranking, e, np.zeros(6, dtype=np.bool_), direct_S)
    exact = [math.fsum(e[[d for d in range(6) if d not in ranking[:k]]]) for k in range(3)]
    assert exact[2] < 1e-99
    np.testing.assert_allclose(tree_S, exact, rtol=1e-14)
    np.testing.assert_allclose(direct_S, exact, rtol=1e-14)


def _dataset(n_queries: int = 40, seed: int = 0):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 60, size=n_queries)
    ptr = np.concatenate(([0], np.cumsum(sizes)))
    scores = rng.normal(size=ptr[-1])
    labels = rng.integers(0, 5, size=ptr[-1]).astype(float)
    return scores, labels, ptr


def test_same_seed_same_output_any_thread_count_and_other_seed_differs():
    scores, labels, ptr = _dataset()
    one = plrank_grad_hess(scores, labels, ptr, K=10, N=30, seed=4, n_jobs=1)
    two = plrank_grad_hess(scores, labels, ptr, K=10, N=30, seed=4, n_jobs=2)
    again = plrank_grad_hess(scores, labels, ptr, K=10, N=30, seed=4)
    for a, b in zip(one, two):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(one, again):
        np.testing.assert_array_equal(a, b)
    other = plrank_grad_hess(scores, labels, ptr, K=10, N=30, seed=5)
    assert not np.array_equal(one[0], other[0])


def test_adding_a_constant_to_a_query_changes_nothing():
    scores, labels, ptr = _dataset()
    shift = np.repeat(np.random.default_rng(1).normal(scale=50, size=len(ptr) - 1), np.diff(ptr))
    base = plrank_grad_hess(scores, labels, ptr, K=5, N=20, hessian="raw")
    moved = plrank_grad_hess(scores + shift, labels, ptr, K=5, N=20, hessian="raw")
    for a, b in zip(base, moved):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-11)


def test_permuting_whole_queries_permutes_the_output():
    """In distribution: a query's stream follows its index, so equality is up to Monte-Carlo error.

    Every permutation of three queries, each repeated many times, gives per-document means within
    5 standard errors of that query's exact gradient, wherever the query stands.
    """
    queries = [_query(D, seed=D) for D in (3, 4, 5)]
    exact = []
    for s, lab in queries:
        rho, theta = naive.rewards(lab, K=2)
        exact.append(-naive.exact_derivatives(s, rho, theta[:2])[1])
    copies = 2000
    for order in itertools.permutations(range(3)):
        scores = np.concatenate([queries[q][0] for q in order] * copies)
        labels = np.concatenate([queries[q][1] for q in order] * copies)
        ptr = np.concatenate(([0], np.cumsum([len(queries[q][0]) for q in order] * copies)))
        g, _ = plrank_grad_hess(scores, labels, ptr, K=2, N=4, hessian="raw")
        block = g.reshape(copies, -1)
        start = 0
        for q in order:
            part = block[:, start : start + len(queries[q][0])]
            z = (part.mean(axis=0) - exact[q]) / (part.std(axis=0, ddof=1) / np.sqrt(copies))
            assert np.all(np.abs(z) < 5), (order, q, z)
            start += part.shape[1]


@pytest.mark.parametrize("scale", [1e3, 1e4])
def test_extreme_margins_stay_finite_and_correct(scale):
    """Two documents 1 apart at +scale, the rest near -scale: only the top two are ever drawn.

    The exact expectation (over the two rankings of non-zero probability) must equal the exact
    DCG@2 derivatives of the two-document query, and the far documents get (numerically) zero.
    """
    scores = np.array([scale, -scale, 0.0, scale - 1.0, -scale + 2.0, 1.0 - scale])
    labels = np.array([0, 2, 1, 1, 0, 2], dtype=float)
    for hessian in ("raw", "abs", "clip"):
        g, h = plrank_grad_hess(scores, labels, [0, 6], K=4, N=50, hessian=hessian)
        assert np.all(np.isfinite(g)) and np.all(np.isfinite(h))
    p_first = 1.0 / (1.0 + np.exp(-1.0))
    g = np.zeros(6)
    h = np.zeros(6)
    for ranking, p in (([0, 3], p_first), ([3, 0], 1.0 - p_first)):
        gg, hh = plrank_grad_hess_from_rankings(
            scores, labels, np.array([ranking]), K=2, metric="dcg"
        )
        g += p * gg
        h += p * hh
    rho, theta = naive.rewards(labels[[0, 3]], K=2, metric="dcg")
    _, g2, h2 = naive.exact_derivatives(np.array([scale, scale - 1.0]), rho, theta)
    np.testing.assert_allclose(g[[0, 3]], -g2, atol=1e-12)
    np.testing.assert_allclose(h[[0, 3]], -h2, atol=1e-12)
    assert np.all(np.abs(g[[1, 2, 4, 5]]) < 1e-100) and np.all(np.abs(h[[1, 2, 4, 5]]) < 1e-100)
    shifted = plrank_grad_hess(scores - scale, labels, [0, 6], K=4, N=50, hessian="raw")
    for a, b in zip(plrank_grad_hess(scores, labels, [0, 6], K=4, N=50, hessian="raw"), shifted):
        np.testing.assert_allclose(a, b, atol=1e-9)


@pytest.mark.parametrize("spread", [10.0, 30.0, 90.0, 300.0])
def test_margins_far_apart_do_not_blow_up(spread):
    """Regression: the collapsed form once added and took back terms of size 1/S_k ~ 1e38 for
    placed documents, leaving Hessians of 5e24 at a spread of 90 (exact values are below 0.01).
    """
    scores = np.array([0.0, -spread / 2, -spread, -spread])
    labels = np.array([0.0, 1.0, 2.0, 1.0])
    rho, theta = naive.rewards(labels, K=4, metric="dcg")
    _, g_exact, h_exact = naive.exact_derivatives(scores, rho, theta)
    copies = 400
    g, h = plrank_grad_hess(
        np.tile(scores, copies),
        np.tile(labels, copies),
        np.arange(0, 4 * copies + 1, 4),
        K=5,
        N=10,
        metric="dcg",
        hessian="raw",
    )
    for est, exact in ((g, -g_exact), (h, -h_exact)):
        per_copy = est.reshape(copies, 4)
        assert np.abs(per_copy).max() < 1.0
        se = per_copy.std(axis=0, ddof=1) / np.sqrt(copies)
        # + 1e-5: the top documents' exact values (~1e-7) come from orderings of probability
        # ~e^-15 that no sample draws, so the sample SE understates their spread
        assert np.all(np.abs(per_copy.mean(axis=0) - exact) <= 5 * se + 1e-5)


def test_repeating_one_ranking_gives_its_own_estimate():
    """N copies of one ranking: the collapsed sums must cancel exactly for placed documents."""
    scores = np.array([0.0, -45.0, -90.0, -90.0, -3.0])
    labels = np.array([0.0, 1.0, 2.0, 1.0, 1.0])
    ranking = np.array([[0, 4, 1]])
    one = plrank_grad_hess_from_rankings(scores, labels, ranking, K=3, metric="dcg")
    many = plrank_grad_hess_from_rankings(
        scores, labels, np.repeat(ranking, 100, axis=0), K=3, metric="dcg"
    )
    for a, b in zip(one, many):
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-15)


def test_trivial_queries_contribute_exactly_zero_and_long_K_is_fine():
    scores = np.array([0.3, 1.0, -1.0, 0.5, 2.0, 0.1, -0.4, 0.8, 1.5])
    labels = np.array([2.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 2.0, 0.0])
    # one document; no relevant document; one label (every ranking scores the same); a normal one
    ptr = np.array([0, 1, 4, 7, 9])
    for hessian in ("raw", "abs", "clip"):
        g, h = plrank_grad_hess(scores, labels, ptr, K=50, N=10, hessian=hessian)
        assert np.all(g[:7] == 0.0) and np.all(h[:7] == 0.0)
        assert np.all(g[7:] != 0.0)
    _, h = plrank_grad_hess(scores, labels, ptr, K=50, N=10, hessian="constant")
    np.testing.assert_array_equal(h, np.ones(9))


def test_raw_hessian_trace_is_zero_at_equal_margins():
    """At round 0 the exact trace vanishes: raw node sums are noise (docs/research/hessian.md)."""
    labels = np.array([2.0, 0.0, 1.0, 0.0, 1.0])
    rho, theta = naive.rewards(labels, K=3)
    _, _, h_exact = naive.exact_derivatives(np.zeros(5), rho, theta[:3])
    assert abs(h_exact.sum()) < 1e-12 and np.abs(h_exact).max() > 0.01
    copies = 4000
    _, h = plrank_grad_hess(
        np.zeros(5 * copies),
        np.tile(labels, copies),
        np.arange(0, 5 * copies + 1, 5),
        K=3,
        N=10,
        hessian="raw",
    )
    per_query = h.reshape(copies, 5).sum(axis=1)
    z = per_query.mean() / (per_query.std(ddof=1) / np.sqrt(copies))
    assert abs(z) < 5 and per_query.std() > 0.01


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_exact_hessian_is_the_gradient_times_one_minus_twice_p_at_k_one(seed):
    """At K = 1, d2R/dm_d^2 = (1 - 2 p_d) dR/dm_d exactly (docs/research/hessian.md).

    With R = sum_d p_d rho_d and p the softmax of the margins, dR/dm_d = p_d (rho_d - rho_bar)
    and its derivative is p_d (rho_d - rho_bar)(1 - 2 p_d): the diagonal Newton step
    -g_d / h_d = -1 / (1 - 2 p_d) carries no information about rho, only its sign convention.
    """
    rng = np.random.default_rng(seed)
    scores = rng.normal(size=6)
    labels = np.array([2.0, 0.0, 1.0, 0.0, 1.0, 0.0])
    rho, theta = naive.rewards(labels, K=1)
    _, g, h = naive.exact_derivatives(scores, rho, theta)
    p = np.exp(scores) / np.exp(scores).sum()
    np.testing.assert_allclose(h, (1.0 - 2.0 * p) * g, atol=1e-14)
    np.testing.assert_allclose(g, p * (rho - p @ rho), atol=1e-14)


def test_hessian_modes():
    scores, labels, ptr = _dataset()
    g_raw, raw = plrank_grad_hess(scores, labels, ptr, K=5, hessian="raw")
    assert (raw < 0).any() and (raw > 0).any(), "the raw estimate is indefinite"
    g_abs, absolute = plrank_grad_hess(scores, labels, ptr, K=5, hessian="abs")
    _, clipped = plrank_grad_hess(scores, labels, ptr, K=5, hessian="clip")
    np.testing.assert_array_equal(g_raw, g_abs)
    # rows of small curvature, but no degenerate query: the curvature floor leaves them
    assert (np.abs(raw) < CURVATURE_FLOOR * np.abs(g_raw)).any()
    np.testing.assert_array_equal(absolute, np.abs(raw))
    plain = np.where(raw == 0, 0, np.maximum(raw, 1e-3 * np.abs(raw).max()))
    # clipping a query's negative curvature can leave it degenerate: those queries are floored
    floored = 0
    for a, b in itertools.pairwise(ptr):
        q = slice(a, b)
        if plain[q].sum() < CURVATURE_FLOOR * np.abs(g_raw[q]).sum():
            plain[q] = np.maximum(plain[q], CURVATURE_FLOOR * np.abs(g_raw[q]))
            floored += 1
    assert 0 < floored < 0.1 * (ptr.shape[0] - 1)
    np.testing.assert_allclose(clipped, plain)
    assert (clipped > 0).sum() == (raw != 0).sum()


BAD_INPUT = [
    (dict(scores=[0.0, np.nan]), r"scores must be finite, but scores\[1\] is nan"),
    (dict(scores=[0.0, np.inf]), r"scores\[1\] is inf"),
    (dict(labels=[1.0, np.nan]), r"labels\[1\] is nan"),
    (dict(labels=[1.0, -1.0]), r"labels must be >= 0, but labels\[1\] is -1.0"),
    (dict(labels=[40.0, 0.0]), r"labels must be <= 31 .* labels\[0\] is 40.0"),
    (dict(scores=[0.0, 1.0, 2.0]), r"lengths must agree, but scores has 3, labels has 2"),
    (dict(group_ptr=[1, 2]), r"group_ptr must start at 0, but starts at 1"),
    (dict(group_ptr=[0, 3]), r"must end at the number of documents 2, but ends at 3"),
    (dict(group_ptr=[0, 2, 1, 2]), r"never decrease, but group_ptr\[1\] = 2 > group_ptr\[2\] = 1"),
    (dict(group_ptr=[0]), r"at least two entries"),
    (dict(K=0), r"K must be an integer >= 1, but 0 is given"),
    (dict(N=0), r"N must be \"auto\" or an integer >= 1, but 0 is given"),
    (dict(N=2.5), r"N must be \"auto\" or an integer >= 1, but 2.5 is given"),
    (dict(metric="map"), r"metric must be one of 'ndcg', 'dcg', 'precision', but 'map' is given"),
    (dict(gain="log"), r"gain must be one of 'exp', 'linear', but 'log' is given"),
    (dict(hessian="diag"), r"hessian must be one of .*'raw'.*, but 'diag' is given"),
    (
        dict(sampler="gumbel"),
        r"sampler must be one of 'auto', 'tree', 'race', but 'gumbel' is given",
    ),
    (dict(seed=-1), r"seed must be an integer in \[0, 2\*\*63\), but -1 is given"),
]


@pytest.mark.parametrize(("change", "message"), BAD_INPUT)
def test_bad_input_names_the_value_and_the_rule(change, message):
    args = dict(scores=[0.0, 1.0], labels=[1.0, 0.0], group_ptr=[0, 2])
    options = {k: change.pop(k) for k in list(change) if k not in args}
    args.update(change)
    with pytest.raises(ValueError, match=message):
        plrank_grad_hess(args["scores"], args["labels"], args["group_ptr"], **options)


def test_large_linear_labels_are_fine():
    g, _ = plrank_grad_hess([0.0, 1.0], [40.0, 0.0], [0, 2], gain="linear")
    assert np.all(np.isfinite(g))


@pytest.mark.parametrize(
    ("rankings", "message"),
    [
        (np.array([[0, 1], [1, 1]]), r"distinct documents, but row 1 is \[1 1\]"),
        (np.array([[0, 3]]), r"index documents in \[0, 3\), but holds 0..3"),
        (np.array([[0, 1, 2]]), r"shape \(N >= 1, min\(K, D\) = 2\), but has shape \(1, 3\)"),
        (np.array([[0.0, 1.0]]), r"must hold integers, but has dtype float64"),
    ],
)
def test_bad_rankings(rankings, message):
    with pytest.raises(ValueError, match=message):
        plrank_grad_hess_from_rankings([0.0, 1.0, 2.0], [1.0, 0.0, 2.0], rankings, K=2)


def test_query_chunks_cover_every_query_once_without_splitting_one():
    from gbdt_plrank._training.plrank_grad_hess import query_chunks

    ptr = np.array([0, 3, 3, 10, 11, 30, 31, 32, 40])
    for rows in (1, 2, 5, 8, 13, 40, 1000):
        chunks = query_chunks(ptr, rows)
        assert chunks[0][0] == 0 and chunks[-1][1] == ptr.shape[0] - 1
        assert all(b == c for (_, b), (c, _) in itertools.pairwise(chunks))
        assert all(a < b for a, b in chunks)
        # at most `rows` rows, plus those of the range's last query
        assert all(ptr[b - 1] - ptr[a] < rows for a, b in chunks[:-1])
    assert query_chunks(ptr, 1000) == [(0, 8)]


@pytest.mark.parametrize(
    "options",
    [
        {"hessian": "raw"},
        {"hessian": "clip", "sampler": "race"},
        {"fairness": "expected-exposure", "fairness_weight": 0.5, "hessian": "clip"},
        {"fairness": "group-disparity", "fairness_weight": 2.0},
    ],
)
def test_a_round_cut_into_kernel_calls_is_bit_identical(monkeypatch, options):
    """The queries of a round are estimated in ranges (so that Ctrl-C is seen between the
    kernel calls): ranges of a few rows give exactly the estimate of one call."""
    import gbdt_plrank._training.plrank_grad_hess as plrank

    rng = np.random.default_rng(9)
    sizes = rng.integers(1, 30, size=40)
    ptr = np.concatenate(([0], np.cumsum(sizes)))
    scores = rng.normal(size=ptr[-1])
    labels = rng.integers(0, 4, size=ptr[-1]).astype(float)
    if options.get("fairness") == "group-disparity":
        options = {**options, "item_groups": rng.integers(0, 2, size=ptr[-1])}
    whole = plrank_grad_hess(scores, labels, ptr, K=5, N=20, seed=4, n_jobs=2, **options)
    monkeypatch.setattr(plrank, "CHUNK_WORK", 20 * 7 // 2)  # about 7 rows a call on 2 threads
    assert len(plrank.query_chunks(ptr, 7)) > 10
    cut = plrank_grad_hess(scores, labels, ptr, K=5, N=20, seed=4, n_jobs=2, **options)
    np.testing.assert_array_equal(cut[0], whole[0])
    np.testing.assert_array_equal(cut[1], whole[1])


@pytest.mark.parametrize(("n", "dims"), [(1, 3), (2, 4), (8, 5), (25, 20), (50, 7), (64, 3)])
def test_sample_uniforms_are_the_reference_stream_and_lattice(n, dims):
    """Independent noise: the stream's numbers in order (the state moves past them); lattice
    noise: the shifted lattice of the reference, one point per stratum of width 1/n in every
    number, and two halves that are lattices of their own."""
    start = streams.stream_state(3, 1, n + dims)
    state = np.array([start], dtype=np.uint64)
    U = np.empty((n, dims))
    plan = streams.noise_plan(streams.NOISE_INDEPENDENT, state, n, False, dims)
    for first in range(0, n, 8):  # blocks of at most 8 rows, as the estimator fills them
        streams.fill_uniforms(plan, state, first, U[first : first + 8])
    ref_state = np.array([start], dtype=np.uint64)
    np.testing.assert_array_equal(U, naive.independent_uniforms(ref_state, n, dims))
    assert state[0] == ref_state[0]

    state = np.array([start], dtype=np.uint64)
    plan = streams.noise_plan(streams.NOISE_LATTICE, state, n, False, dims)
    streams.fill_uniforms(plan, state, 0, U)
    np.testing.assert_allclose(U, naive.lattice_uniforms(start, n, dims), rtol=0, atol=1e-15)
    assert np.all((U >= 0) & (U < 1))
    assert all(sorted(np.floor(U[:, j] * n).astype(int)) == list(range(n)) for j in range(dims))

    if n >= 2:
        state = np.array([start], dtype=np.uint64)
        plan = streams.noise_plan(streams.NOISE_LATTICE, state, n, True, dims)
        streams.fill_uniforms(plan, state, 0, U)
        half = n // 2
        second = int((int(start) + 2 * dims * 0x9E3779B97F4A7C15) % 2**64)
        np.testing.assert_allclose(U[:half], naive.lattice_uniforms(start, half, dims), atol=1e-15)
        np.testing.assert_allclose(
            U[half:], naive.lattice_uniforms(second, n - half, dims), atol=1e-15
        )


@pytest.mark.parametrize("sampler", ["tree", "race"])
def test_lattice_noise_lowers_the_variance_of_the_estimate(sampler):
    """On 1000 copies of a 30-document query (50 rankings of 10 each), lattice noise gives the
    gradient at most 0.7 times and the Hessian at most 0.85 times the variance of independent
    noise's (measured: 0.49 and 0.64 for the tree, 0.28 and 0.52 for the race), and the same
    mean (within 5 standard errors)."""
    D, K, copies, N = 30, 10, 1000, 50
    scores, labels = _query(D, seed=4)
    ptr = np.arange(0, D * copies + 1, D)
    est = {
        noise: plrank_grad_hess(
            np.tile(scores, copies),
            np.tile(labels, copies),
            ptr,
            K=K,
            N=N,
            hessian="raw",
            sampler=sampler,
            noise=noise,
            seed=2,
        )
        for noise in ("independent", "lattice")
    }
    for part, most in ((0, 0.7), (1, 0.85)):
        a, b = (est[noise][part].reshape(copies, D) for noise in ("independent", "lattice"))
        assert b.var(axis=0).sum() <= most * a.var(axis=0).sum()
        se = np.sqrt((a.var(axis=0) + b.var(axis=0)) / copies)
        assert np.all(np.abs(a.mean(axis=0) - b.mean(axis=0)) < 5 * se + 1e-12)


# ------------------------------------------------------------------------------------------
# Query subsampling
# ------------------------------------------------------------------------------------------
def test_kept_queries_are_number_zero_of_each_querys_stream():
    """Query g is kept where number 0 of its stream (the reference SplitMix64), which no sampler
    draws, is below the share: close to the share of 4000 queries, other queries in another
    round, the same queries in any order, every query at 1.0."""
    keys = np.arange(4000, dtype=np.int64) * 7 + 3
    kept = streams.kept_queries(5, 2, keys, 0.3)
    expected = [naive.uniform_at(streams.stream_state(5, 2, k), 0) < 0.3 for k in keys[:300]]
    assert kept[:300].tolist() == expected
    assert abs(kept.mean() - 0.3) < 4 * np.sqrt(0.3 * 0.7 / keys.size)
    assert not np.array_equal(kept, streams.kept_queries(5, 3, keys, 0.3))
    order = np.random.default_rng(0).permutation(keys.size)
    np.testing.assert_array_equal(streams.kept_queries(5, 2, keys[order], 0.3), kept[order])
    assert streams.kept_queries(5, 2, keys, 1.0).all()


@pytest.mark.parametrize(
    ("hessian", "options"),
    [
        ("abs", {}),
        ("raw", {}),
        ("constant", {}),
        ("clip", {}),
        ("abs", {"noise": "lattice"}),
        ("abs", {"fairness": "expected-exposure", "N": 20}),
    ],
)
def test_query_subsample_estimates_the_kept_queries_as_without_it(hessian, options):
    """A kept query's rows are the estimate without subsampling, bit for bit (with "clip" the
    gradient only: its floor is relative to the kept queries' largest |h|); every row of a
    query left out is exactly 0, whatever the Hessian mode; the same at any thread count."""
    rng = np.random.default_rng(8)
    sizes = rng.integers(2, 25, size=300)
    ptr = np.concatenate(([0], np.cumsum(sizes)))
    scores, labels = rng.normal(size=ptr[-1]), rng.integers(0, 3, ptr[-1]).astype(float)
    run = {"K": 5, "seed": 6, "hessian": hessian, **options}
    whole = plrank_grad_hess(scores, labels, ptr, **run)
    half = plrank_grad_hess(scores, labels, ptr, query_subsample=0.5, n_jobs=2, **run)
    kept = np.repeat(streams.kept_queries(6, 0, np.arange(sizes.size), 0.5), sizes)
    assert 0.4 < kept.mean() < 0.6
    np.testing.assert_array_equal(half[0][kept], whole[0][kept])
    if hessian != "clip":
        np.testing.assert_array_equal(half[1][kept], whole[1][kept])
    assert np.all(half[0][~kept] == 0.0) and np.all(half[1][~kept] == 0.0)
    one = plrank_grad_hess(scores, labels, ptr, query_subsample=0.5, n_jobs=1, **run)
    np.testing.assert_array_equal(one[0], half[0])
    np.testing.assert_array_equal(one[1], half[1])
