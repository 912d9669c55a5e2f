"""The kernels with signed per-document rewards: unbiased by exact enumeration."""

from __future__ import annotations

import naive
import numpy as np
import pytest

from gbdt_plrank._kernels import plrank as _kernels
from gbdt_plrank._ranking_metric import dcg_weights


@pytest.mark.parametrize(("D", "K"), [(2, 1), (3, 2), (4, 4), (5, 3), (6, 2)])
def test_signed_rewards_exact_expectation(D, K):
    rng = np.random.default_rng(100 + D * 7 + K)
    scores = rng.normal(scale=1.5, size=D)
    rho = rng.normal(size=D)  # signed, some queries wholly negative
    if D == 3:
        rho = -np.abs(rho)
    theta = dcg_weights(min(K, D))
    grad = np.zeros(D)
    hess = np.zeros(D)
    g1 = np.empty(D)
    h1 = np.empty(D)
    for y, p in naive.partial_rankings(scores, K):
        _kernels.estimate_from_rankings(scores, rho, theta, np.array([y], dtype=np.int64), g1, h1)
        grad += p * g1
        hess += p * h1
    _, g_exact, h_exact = naive.exact_derivatives(scores, rho, theta)
    np.testing.assert_allclose(grad, -g_exact, rtol=0, atol=1e-8)
    np.testing.assert_allclose(hess, -h_exact, rtol=0, atol=1e-8)


def test_negative_only_query_is_not_skipped():
    scores = np.array([0.3, -0.2, 1.0])
    rho = np.array([-1.0, 0.0, -0.5])
    ptr = np.array([0, 3], dtype=np.int64)
    grad = np.zeros(3)
    hess = np.zeros(3)
    _kernels.estimate_groups(
        scores, rho, ptr, np.zeros(1, dtype=np.int64), dcg_weights(2), 200, 7, 0,
        _kernels.SAMPLER_AUTO, grad, hess,
    )
    assert np.abs(grad).sum() > 0
