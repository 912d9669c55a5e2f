"""The fairness-of-exposure objective: cross-fitted estimate against exact enumeration.

The objective per query is J(m) = E[sum_k theta_k rho_{y_k}] - w sum_d (E(d) - eps(d))^2; the
tests compute J, E and their derivatives exactly by enumerating every partial ranking (D <= 6),
and the exact expectation of the estimator by enumerating every pair (N = 2) or triple (N = 3)
of rankings, weighted by their PL probabilities.
"""

from __future__ import annotations

import hashlib
import itertools
import json

import naive
import numpy as np
import pytest

from gbdt_plrank import _fair_kernels, plrank_grad_hess, plrank_grad_hess_from_rankings
from gbdt_plrank._ranking_metric import dcg_weights

FAIR = "expected-exposure"


def _query(D: int, K: int, seed: int, metric: str = "ndcg"):
    rng = np.random.default_rng(seed)
    scores = rng.normal(scale=1.2, size=D)
    labels = rng.integers(0, 3, size=D).astype(float)
    rho, theta = naive.rewards(labels, K=K, metric=metric)
    theta = theta[: min(K, D)]
    return scores, labels, rho, theta, naive.equal_exposure_target(labels, theta)


def _unit(D: int, d: int) -> np.ndarray:
    u = np.zeros(D)
    u[d] = 1.0
    return u


def _exact(scores, rho, target, w, theta):
    """Exact loss gradient, Hessian first part (signed-reward PL-Rank) and dE(d)/dm(d)."""
    D = scores.shape[0]
    E = naive.exact_exposure(scores, theta)
    _, g, h = naive.exact_derivatives(scores, rho - 2.0 * w * (E - target), theta)
    slope = np.array([naive.exact_derivatives(scores, _unit(D, d), theta)[1][d] for d in range(D)])
    return -g, -h, slope


def _expectation(scores, rho, target, w, theta, K, N):
    """Exact expectation of the kernel's (grad, hess without Gauss-Newton, slope) for N samples."""
    D = scores.shape[0]
    out = [np.zeros(D) for _ in range(3)]
    g, h, s = np.empty(D), np.empty(D), np.empty(D)
    rankings = naive.partial_rankings(scores, K)
    for draw in itertools.product(rankings, repeat=N):
        p = np.prod([q for _, q in draw])
        rk = np.array([y for y, _ in draw], dtype=np.int64)
        _fair_kernels.fair_estimate_from_rankings(scores, rho, target, w, theta, rk, g, h, s)
        for acc, v in zip(out, (g, h, s)):
            acc += p * v
    return out


@pytest.mark.parametrize(
    ("D", "K", "N", "metric"),
    [(2, 1, 2, "ndcg"), (3, 2, 2, "dcg"), (4, 4, 2, "ndcg"), (5, 3, 2, "ndcg"), (6, 2, 2, "ndcg"),
     (6, 3, 2, "dcg"), (4, 2, 3, "ndcg")],
)
def test_crossfit_is_unbiased(D, K, N, metric):
    scores, _, rho, theta, target = _query(D, K, seed=10 * D + K + N, metric=metric)
    w = 0.8
    grad, hess, slope = _expectation(scores, rho, target, w, theta, K, N)
    g_exact, h_exact, s_exact = _exact(scores, rho, target, w, theta)
    np.testing.assert_allclose(grad, g_exact, rtol=0, atol=1e-8)
    np.testing.assert_allclose(hess, h_exact, rtol=0, atol=1e-8)
    np.testing.assert_allclose(slope, s_exact, rtol=0, atol=1e-8)
    # the exact gradient is that of the combined objective J (finite differences of exact J)
    step = 1e-5
    J = [
        naive.fair_objective(scores + step * sign * _unit(D, d), rho, target, w, theta)
        for d in range(D) for sign in (1, -1)
    ]
    fd = -(np.array(J[0::2]) - np.array(J[1::2])) / (2 * step)
    np.testing.assert_allclose(g_exact, fd, rtol=0, atol=1e-8)


def test_same_sample_estimate_is_biased():
    """Exposure and terms from the same rankings: E[r_hat g_hat] != r g, so the test can fail."""
    D, K, w = 4, 2, 1.5
    scores, _, rho, theta, target = _query(D, K, seed=3)
    crossfit = np.zeros(D)
    same = np.zeros(D)
    rankings = naive.partial_rankings(scores, K)
    for (y1, p1), (y2, p2) in itertools.product(rankings, repeat=2):
        crossfit += p1 * p2 * naive.fair_estimate(scores, rho, target, w, theta, [y1, y2])[0]
        same += p1 * p2 * naive.fair_estimate(
            scores, rho, target, w, theta, [y1, y2], crossfit=False
        )[0]
    exact, _, _ = _exact(scores, rho, target, w, theta)
    np.testing.assert_allclose(crossfit, exact, rtol=0, atol=1e-10)
    assert np.abs(same - exact).max() > 1e-3


@pytest.mark.parametrize(("D", "K", "N", "seed"), [(5, 3, 5, 1), (7, 7, 6, 2), (9, 4, 9, 3)])
def test_kernel_matches_naive_reference(D, K, N, seed):
    scores, labels, rho, theta, target = _query(D, K, seed=seed)
    rng = np.random.default_rng(seed)
    rankings = np.array([rng.permutation(D)[: min(K, D)] for _ in range(N)], dtype=np.int64)
    w = 0.6
    g_ref, h_ref, s_ref = naive.fair_estimate(scores, rho, target, w, theta, rankings)
    g, h, s = np.empty(D), np.empty(D), np.empty(D)
    _fair_kernels.fair_estimate_from_rankings(scores, rho, target, w, theta, rankings, g, h, s)
    np.testing.assert_allclose(g, g_ref, rtol=0, atol=1e-10)
    np.testing.assert_allclose(h, h_ref, rtol=0, atol=1e-10)
    np.testing.assert_allclose(s, s_ref, rtol=0, atol=1e-10)
    # the public function adds the Gauss-Newton bound 2 w D/(D-1) slope^2 before the mode
    grad, hess = plrank_grad_hess_from_rankings(
        scores, labels, rankings, K=K, fairness=FAIR, fairness_weight=w
    )
    np.testing.assert_allclose(grad, g_ref, rtol=0, atol=1e-10)
    np.testing.assert_allclose(hess, h_ref + 2 * w * D / (D - 1) * s_ref**2, rtol=0, atol=1e-10)


@pytest.mark.parametrize("D", [2, 3, 5])
def test_gauss_newton_lower_bound(D):
    """The exact Hessian diagonal of -J is the signed-reward part plus 2 w sum_i (dE_i/dm_d)^2,
    and D/(D-1) (dE_d/dm_d)^2 bounds that sum from below (with equality for D = 2)."""
    K, w = 3, 0.9
    scores, _, rho, theta, target = _query(D, K, seed=40 + D)
    _, h_part, slope = _exact(scores, rho, target, w, theta)
    jac = np.array([  # jac[i, d] = dE(i)/dm(d)
        naive.exact_derivatives(scores, _unit(D, i), theta)[1] for i in range(D)
    ])
    gn = (jac**2).sum(axis=0)
    step = 1e-4
    J0 = naive.fair_objective(scores, rho, target, w, theta)
    second = np.array([
        (naive.fair_objective(scores + step * _unit(D, d), rho, target, w, theta) - 2 * J0
         + naive.fair_objective(scores - step * _unit(D, d), rho, target, w, theta)) / step**2
        for d in range(D)
    ])
    np.testing.assert_allclose(-second, h_part + 2 * w * gn, rtol=0, atol=1e-6)
    np.testing.assert_allclose(np.diag(jac), slope, rtol=0, atol=1e-12)
    bound = D / (D - 1) * slope**2
    assert np.all(bound <= gn + 1e-15)
    if D == 2:
        np.testing.assert_allclose(bound, gn, rtol=1e-12)


def test_target_matches_reference():
    rng = np.random.default_rng(5)
    sizes = [1, 4, 7, 12]
    ptr = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    labels = rng.integers(0, 3, size=ptr[-1]).astype(float)
    for K in (1, 3, 5, 20):
        theta = dcg_weights(K)
        out = np.empty(ptr[-1])
        _fair_kernels.equal_exposure_target(labels, ptr, theta, out)
        ref = np.concatenate([
            naive.equal_exposure_target(labels[a:b], theta) for a, b in itertools.pairwise(ptr)
        ])
        np.testing.assert_allclose(out, ref, rtol=0, atol=1e-15)


def test_monte_carlo_mean_agrees_with_exact():
    """The sampled path (both samplers): mean over seeds within 5 standard errors of exact."""
    D, K, w = 6, 3, 0.7
    scores, labels, rho, theta, target = _query(D, K, seed=8)
    exact, _, _ = _exact(scores, rho, target, w, theta)
    ptr = np.array([0, D])
    for sampler in ("tree", "race"):
        draws = np.array([
            plrank_grad_hess(scores, labels, ptr, K=K, N=10, seed=s, sampler=sampler,
                             fairness=FAIR, fairness_weight=w)[0]
            for s in range(400)
        ])
        z = (draws.mean(axis=0) - exact) / (draws.std(axis=0, ddof=1) / np.sqrt(len(draws)))
        assert np.abs(z).max() < 5, (sampler, z)


def test_queries_without_relevant_documents_contribute():
    scores = np.array([0.5, -0.3, 1.2, 0.0, 2.0])
    labels = np.array([0.0, 0.0, 0.0, 1.0, 0.0])
    ptr = np.array([0, 3, 5])
    g_rel, _ = plrank_grad_hess(scores, labels, ptr, K=2, N=50)
    g_fair, _ = plrank_grad_hess(scores, labels, ptr, K=2, N=50, fairness=FAIR)
    assert np.all(g_rel[:3] == 0.0)
    assert np.abs(g_fair[:3]).sum() > 0
    # a query of one document contributes nothing either way
    g_one, h_one = plrank_grad_hess(np.array([1.0]), np.array([1.0]), [0, 1], fairness=FAIR)
    assert g_one[0] == 0.0 and h_one[0] == 0.0


def test_weight_zero_is_the_relevance_gradient_in_expectation():
    D, K = 5, 3
    scores, _, rho, theta, target = _query(D, K, seed=12)
    grad, hess, _ = _expectation(scores, rho, target, 0.0, theta, K, 2)
    _, g, h = naive.exact_derivatives(scores, rho, theta)
    np.testing.assert_allclose(grad, -g, rtol=0, atol=1e-10)
    np.testing.assert_allclose(hess, -h, rtol=0, atol=1e-10)


def test_deterministic_and_thread_independent():
    rng = np.random.default_rng(0)
    ptr = np.array([0, 10, 30, 31, 45])
    scores = rng.normal(size=45)
    labels = rng.integers(0, 3, size=45).astype(float)
    kw = {"K": 5, "N": 20, "seed": 3, "fairness": FAIR, "fairness_weight": 0.4}
    one = plrank_grad_hess(scores, labels, ptr, n_jobs=1, **kw)
    two = plrank_grad_hess(scores, labels, ptr, n_jobs=2, **kw)
    for a, b in zip(one, two):
        assert np.array_equal(a, b)
    shifted = plrank_grad_hess(scores + 100.0, labels, ptr, n_jobs=1, **kw)
    np.testing.assert_allclose(shifted[0], one[0], rtol=0, atol=1e-12)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"fairness_weight": -0.5}, "fairness_weight must be a finite number >= 0, but -0.5"),
        ({"fairness_weight": float("nan")}, "fairness_weight must be a finite number >= 0, but nan"),
        ({"fairness_weight": float("inf")}, "fairness_weight must be a finite number >= 0, but inf"),
        ({"fairness_weight": "1"}, "fairness_weight must be a finite number >= 0, but '1'"),
        ({"fairness": "equal"}, "fairness must be None or one of 'expected-exposure', but 'equal'"),
        ({"fairness": FAIR, "metric": "precision"}, "metric must be one of 'ndcg', 'dcg', but "
         "'precision' is given"),
        ({"fairness": FAIR, "N": 1}, "N must be >= 2 with fairness='expected-exposure'"),
    ],
)
def test_bad_fairness_options(options, message):
    scores = np.zeros(3)
    labels = np.array([0.0, 1.0, 2.0])
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        plrank_grad_hess(scores, labels, [0, 3], **options)


def test_one_ranking_is_refused_with_fairness():
    with pytest.raises(ValueError, match=r"N must be >= 2 with fairness='expected-exposure'"):
        plrank_grad_hess_from_rankings(
            np.zeros(3), np.array([0.0, 1.0, 2.0]), np.array([[0, 1]]), K=2, fairness=FAIR
        )


#: sha256 of every (metric, hessian, sampler, K) output of the script below for NDCG and DCG, and
#: of the rankings' estimate, computed with the code of main at 5051e10, before the fairness
#: objective existed.
GOLDEN = "455981e39d78e6ca7abd239bda049f4577fe186b94d744599bad9ba0a335d32b"
GOLDEN_RANKINGS = "6e89d78ea9493a36d5fd5c7fcafadea66683aa1d09c88ce7120d37fa2cf4f93f"
#: The same for precision, since its reward of a query shorter than K divides by the query's
#: length (XGBoost's pre@K); before, it divided by K.
GOLDEN_PRECISION = "d066a7468844d1b777f0412f16e9f4c326b9e1a99eb2ec4c0b0c0e7897c1a87a"


def _digest(out: dict) -> str:
    listing = json.dumps(sorted((str(k), v) for k, v in out.items()))
    return hashlib.sha256(listing.encode()).hexdigest()


def test_without_fairness_results_are_bit_identical_to_before():
    rng = np.random.default_rng(2024)
    sizes = [1, 2, 5, 9, 40, 3, 33, 7]
    ptr = np.concatenate(([0], np.cumsum(sizes)))
    n = ptr[-1]
    scores = rng.normal(scale=2.0, size=n)
    labels = rng.integers(0, 5, size=n).astype(float)
    labels[ptr[2] : ptr[3]] = 0
    digests = []
    for metrics in (("ndcg", "dcg"), ("precision",)):
        out = {}
        for metric in metrics:
            for hessian in ("abs", "raw", "clip", "constant"):
                for sampler in ("auto", "tree", "race"):
                    for K in (3, 10, 50):
                        g, h = plrank_grad_hess(
                            scores, labels, ptr, K=K, N=17, metric=metric, hessian=hessian,
                            sampler=sampler, seed=5, n_jobs=2,
                        )
                        digest = hashlib.sha256(g.tobytes() + h.tobytes()).hexdigest()[:16]
                        out[metric, hessian, sampler, K] = digest
        digests.append(_digest(out))
    rk = np.array([rng.permutation(9)[:4] for _ in range(6)])
    g, h = plrank_grad_hess_from_rankings(scores[3:12], labels[3:12], rk, K=4)
    rankings = hashlib.sha256(g.tobytes() + h.tobytes()).hexdigest()
    assert digests == [GOLDEN, GOLDEN_PRECISION]
    assert rankings == GOLDEN_RANKINGS


def test_keyed_dask_objective_takes_the_fairness_options():
    """gbdt_plrank.dask's partition-independent objective: with fairness, each worker's local
    rows get the single-process gradients (its queries keep their stream keys)."""
    pytest.importorskip("distributed")
    from gbdt_plrank import plrank_objective
    from gbdt_plrank.dask import keyed_plrank_objective

    rng = np.random.default_rng(11)
    sizes = rng.integers(1, 15, size=30)
    y = rng.integers(0, 3, size=sizes.sum()).astype(float)
    preds = rng.normal(size=sizes.sum())
    keys = np.repeat(np.arange(30), sizes).astype(np.float32)
    kw = {"K": 4, "N": 8, "seed": 2, "fairness": FAIR, "fairness_weight": 0.7}
    g, h = plrank_objective(**kw).lgbm_ranker(y, preds, None, sizes)
    half = int(sizes[:12].sum())
    rows = np.r_[half : sizes.sum(), 0:half]  # the second partition first
    keyed = keyed_plrank_objective(**kw)
    gl, hl = keyed.lgbm_ranker(y[rows], preds[rows], keys[rows], np.r_[sizes[12:], sizes[:12]])
    np.testing.assert_array_equal(gl, g[rows])
    np.testing.assert_array_equal(hl, h[rows])
    assert "fairness='expected-exposure'" in repr(keyed)
