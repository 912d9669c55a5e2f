"""Queries of two documents (pairwise preferences) and the curvature floor of the Hessian.

At equal margins a query of two documents has an expected metric linear in one sigmoid, whose
curvature is 0: without a floor its Hessian estimate is exactly 0 and neither booster splits.
"""

from __future__ import annotations

import warnings

import naive
import numpy as np
import pytest

from gbdt_plrank import PLRankRanker, ndcg, plrank_grad_hess
from gbdt_plrank._training.plrank_grad_hess import CURVATURE_FLOOR, degenerate_rows, finish_hessian


def _pairs(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``n`` two-document queries: feature 0 is higher on the preferred document (label 1)."""
    rng = np.random.default_rng(seed)
    y = np.zeros(2 * n)
    first = rng.random(n) < 0.5
    y[0::2] = first
    y[1::2] = ~first
    X = np.column_stack([y + rng.normal(scale=0.3, size=2 * n), rng.normal(size=2 * n)])
    return X, y, np.repeat(np.arange(n), 2)


@pytest.mark.parametrize("backend", ["xgboost", "lightgbm"])
def test_both_boosters_learn_two_document_queries_at_the_defaults(backend):
    """The reproduction: every margin starts equal, where the exact curvature is 0."""
    X, y, qid = _pairs(3000, seed=0)
    Xt, yt, qt = _pairs(1000, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "model has no split"
        ranker = PLRankRanker(backend=backend, n_jobs=1, random_state=0).fit(X, y, qid)
    constant = ndcg(yt, np.zeros(len(yt)), qt, k=5)  # ties in input order: 0.82
    assert constant < 0.85
    assert ranker.score(Xt, yt, qt) > 0.97


def test_the_estimated_hessian_of_a_pair_at_equal_margins_is_zero_without_the_floor():
    g, raw = plrank_grad_hess(np.zeros(2), np.array([1.0, 0.0]), [0, 2], K=5, hessian="raw")
    assert np.all(np.abs(raw) < 1e-15) and np.all(g != 0.0)
    for mode in ("abs", "clip"):
        g, h = plrank_grad_hess(np.zeros(2), np.array([1.0, 0.0]), [0, 2], K=5, hessian=mode)
        np.testing.assert_array_equal(h, CURVATURE_FLOOR * np.abs(g))


def test_the_floor_raises_a_degenerate_query_and_leaves_an_ordinary_one():
    """Per query: the first query's curvature vanishes as a whole (sum |h| = 0.03 < 0.05 * 0.9)
    and is floored row by row; the second has one row of tiny |h| (0.001 against |g| = 0.5)
    but curvature as a whole (sum |h| = 0.801 > 0.05 * 1.1), so it keeps its Hessian."""
    assert CURVATURE_FLOOR == 0.05
    grad = np.array([0.4, -0.3, 0.2, 0.5, -0.4, -0.2, 0.0, 0.0])
    hess = np.array([0.01, -0.02, 0.0, 0.001, -0.5, 0.3, 0.0, 0.2])
    ptr = np.array([0, 3, 6, 6, 8])  # the third query is empty; the fourth has no gradient
    absolute = finish_hessian(hess.copy(), "abs", grad=grad, group_ptr=ptr)
    np.testing.assert_allclose(absolute, [0.02, 0.02, 0.01, 0.001, 0.5, 0.3, 0.0, 0.2])
    clipped = finish_hessian(hess.copy(), "clip", grad=grad, group_ptr=ptr)  # clip's own: 5e-4
    np.testing.assert_allclose(clipped, [0.02, 0.015, 0.01, 0.001, 5e-4, 0.3, 0.0, 0.2])
    np.testing.assert_array_equal(
        degenerate_rows(grad, np.abs(hess), ptr), [True] * 3 + [False] * 5
    )
    np.testing.assert_array_equal(
        finish_hessian(hess.copy(), "raw", grad=grad, group_ptr=ptr), hess
    )
    np.testing.assert_array_equal(
        finish_hessian(hess.copy(), "constant", grad=grad, group_ptr=ptr), 1.0
    )
    np.testing.assert_array_equal(finish_hessian(hess.copy(), "abs"), np.abs(hess))
    with pytest.raises(TypeError, match="grad and group_ptr together"):
        finish_hessian(hess.copy(), "abs", grad=grad)


def test_an_ordinary_query_is_not_floored_at_any_row():
    """On ordinary queries rows of |h| < 0.05 |g| occur (the row rule would raise them); the
    query rule leaves every row of a query with curvature as a whole."""
    rng = np.random.default_rng(3)
    sizes = rng.integers(5, 40, size=30)
    ptr = np.concatenate(([0], np.cumsum(sizes)))
    scores = rng.normal(size=ptr[-1])
    labels = rng.integers(0, 3, size=ptr[-1]).astype(float)
    g, raw = plrank_grad_hess(scores, labels, ptr, K=10, N=50, hessian="raw")
    assert (np.abs(raw) < CURVATURE_FLOOR * np.abs(g)).sum() > 0
    assert not degenerate_rows(g, raw, ptr).any()
    _, h = plrank_grad_hess(scores, labels, ptr, K=10, N=50, hessian="abs")
    np.testing.assert_array_equal(h, np.abs(raw))


QUERIES = [
    (np.zeros(2), np.array([1.0, 0.0])),
    (np.array([0.3, 0.0]), np.array([0.0, 2.0])),
    (np.zeros(3), np.array([2.0, 0.0, 1.0])),
    (np.array([0.0, 0.0, 1.0]), np.array([1.0, 1.0, 0.0])),
    (np.array([-0.5, 0.2, 0.1]), np.array([0.0, 2.0, 1.0])),
    (np.array([0.0, 0.0, -6.0]), np.array([1.0, 0.0, 0.0])),  # a tied pair above a third:
    (np.array([0.0, 0.0, -6.0]), np.array([2.0, 0.0, 1.0])),  # degenerate as a whole
]


@pytest.mark.parametrize(("scores", "labels"), QUERIES)
@pytest.mark.parametrize("K", [1, 2, 5])
def test_the_floored_newton_step_raises_the_exact_expected_metric(scores, labels, K):
    """Exact derivatives by enumeration: the floored Hessian is positive wherever the gradient
    is not 0, and a small diagonal Newton step raises the exact expected NDCG@K."""
    rho, theta = naive.rewards(labels, K=K)
    theta = theta[: min(K, len(scores))]
    R0, dR, d2R = naive.exact_derivatives(scores, rho, theta)
    g, h = -dR, -d2R
    floored = finish_hessian(h.copy(), "abs", grad=g, group_ptr=np.array([0, len(scores)]))
    moving = np.abs(g) > 1e-15
    if np.abs(h).sum() < CURVATURE_FLOOR * np.abs(g).sum():  # degenerate: floored row by row
        assert np.all(floored[moving] >= CURVATURE_FLOOR * np.abs(g[moving]))
    else:
        np.testing.assert_array_equal(floored, np.abs(h))
    assert np.all(floored[moving] > 0)
    step = np.where(moving, -g / np.where(moving, floored, 1.0), 0.0)
    assert naive.expected_reward(scores + 0.05 * step, rho, theta) > R0
    # the sampled estimate at the defaults gives a step that raises it too
    g_s, h_s = plrank_grad_hess(scores, labels, [0, len(scores)], K=K, N=2000, seed=1)
    assert np.all(h_s[np.abs(g_s) > 0] > 0)
    step_s = np.where(h_s > 0, -g_s / np.where(h_s > 0, h_s, 1.0), 0.0)
    assert naive.expected_reward(scores + 0.05 * step_s, rho, theta) > R0


def test_a_model_without_a_split_at_a_small_min_child_weight_does_not_suggest_lowering_it():
    """The warning names what is left to check when min_child_weight is already small."""
    X = np.zeros((40, 2))
    y = np.tile([1.0, 0.0], 20)
    qid = np.repeat(np.arange(20), 2)
    with pytest.warns(UserWarning, match=r"min_child_weight=0.001 is already small") as caught:
        PLRankRanker(n_estimators=2, min_child_weight=0.001, n_jobs=1, random_state=0).fit(
            X, y, qid
        )
    assert "lower it" not in str(caught[0].message)
