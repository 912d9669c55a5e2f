"""The kernels with signed per-document rewards: unbiased by exact enumeration."""

from __future__ import annotations

import re
from itertools import pairwise

import naive
import numpy as np
import pytest

from gbdt_plrank._kernels import plrank, samplers, streams
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
        plrank.estimate_from_rankings(scores, rho, theta, np.array([y], dtype=np.int64), g1, h1)
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
    plrank.estimate_groups(
        scores,
        rho,
        ptr,
        np.zeros(1, dtype=np.int64),
        dcg_weights(2),
        200,
        7,
        0,
        samplers.SAMPLER_AUTO,
        streams.NOISE_INDEPENDENT,
        grad,
        hess,
    )
    assert np.abs(grad).sum() > 0


def _signed_data(seed=0, n_queries=12, n_docs=6):
    rng = np.random.default_rng(seed)
    n = n_queries * n_docs
    X = rng.normal(size=(n, 3))
    y = X[:, 0] + 0.3 * rng.normal(size=n)  # rewards of both signs
    return X, y, np.repeat(np.arange(n_queries), n_docs)


def test_signed_ndcg_divides_by_the_ideal_dcg_of_the_positive_part():
    """NDCG of signed rewards: each query's rewards over the ideal DCG@K of their positive part
    (the rewards' own ideal DCG when none is negative); a query without a positive reward is
    skipped (0), as NDCG skips a query whose ideal DCG is 0; the metric of a ranking the same."""
    from gbdt_plrank._ranking_metric import RankingMetric
    from gbdt_plrank.metrics import ndcg

    y = np.array([2.0, -1.0, 0.5, -3.0, -0.5, 1.0, 0.0, 3.0])
    ptr = np.array([0, 3, 5, 8])
    theta = dcg_weights(2)
    rho = RankingMetric("ndcg", 2, "linear").rewards(y, ptr)
    ideal = [2.0 * theta[0] + 0.5 * theta[1], 0.0, 3.0 * theta[0] + 1.0 * theta[1]]
    np.testing.assert_allclose(
        rho,
        [
            2.0 / ideal[0],
            -1.0 / ideal[0],
            0.5 / ideal[0],
            0.0,
            0.0,
            1.0 / ideal[2],
            0.0,
            3.0 / ideal[2],
        ],
        rtol=1e-15,
    )
    # non-negative labels: the plain NDCG normaliser, bit for bit
    plain = np.abs(y)
    np.testing.assert_array_equal(
        RankingMetric("ndcg", 2, "linear").rewards(plain, ptr),
        plain
        / np.repeat(
            [np.sort(plain[a:b])[::-1][:2] @ theta for a, b in pairwise(ptr)], np.diff(ptr)
        ),
    )
    qid = np.repeat([0, 1, 2], np.diff(ptr))
    scores = np.array([0.0, 1.0, 2.0, 0.0, 1.0, 2.0, 1.0, 0.0])
    got = ndcg(y, scores, qid, k=2, gain="linear", per_query=True, empty=np.nan)
    want = [
        (0.5 * theta[0] - 1.0 * theta[1]) / ideal[0],
        np.nan,
        (1.0 * theta[0] + 0.0 * theta[1]) / ideal[2],
    ]
    np.testing.assert_allclose(got, want, rtol=1e-15)


@pytest.mark.parametrize("metric", ["dcg", "ndcg"])
@pytest.mark.parametrize("backend", ["xgboost", "lightgbm"])
def test_the_ranker_learns_from_signed_rewards_with_the_linear_gain(backend, metric):
    pytest.importorskip(backend)
    from gbdt_plrank import PLRankRanker
    from gbdt_plrank.metrics import dcg

    X, y, qid = _signed_data()
    Xv, yv, qv = _signed_data(seed=1)
    assert (y < 0).any() and (y > 0).any()
    ranker = PLRankRanker(
        backend=backend, metric=metric, gain="linear", n_estimators=20, N=10, random_state=0
    )
    ranker.fit(X, y, group=qid, eval_set=[(Xv, yv, qv)], early_stopping_rounds=5)
    # it orders by the rewards: better than the reverse ordering of the same model
    scores = ranker.predict(Xv)
    assert dcg(yv, scores, qv, k=5, gain="linear") > dcg(yv, -scores, qv, k=5, gain="linear")
    assert np.isfinite(ranker.score(Xv, yv, qv))
    assert np.isfinite(ranker.expected_metric(Xv, yv, qv, n_samples=4).mean)


@pytest.mark.parametrize(
    ("options", "where"),
    [
        (dict(metric="ndcg", gain="exp"), "labels"),
        (dict(metric="dcg", gain="exp"), "labels"),
        (dict(metric="precision", gain="linear"), "labels"),
    ],
)
def test_signed_rewards_are_refused_where_the_metric_has_no_meaning_for_them(options, where):
    from gbdt_plrank import PLRankRanker

    X, y, qid = _signed_data()
    i = int(np.argmin(y))
    message = (
        f"{where} must be >= 0, but {where}[{i}] is {float(y[i])!r} (negative rewards "
        f"are accepted with metric='dcg' or 'ndcg' and gain='linear', without fairness)."
    )
    with pytest.raises(ValueError, match=re.escape(message)):
        PLRankRanker(**options, n_estimators=2, N=4).fit(X, y, group=qid)


@pytest.mark.parametrize("metric", ["dcg", "ndcg"])
def test_plrank_objective_takes_signed_rewards_with_the_linear_gain(metric):
    xgb = pytest.importorskip("xgboost")
    from gbdt_plrank import plrank_objective

    X, y, qid = _signed_data()
    d = xgb.DMatrix(X, y, qid=qid)
    obj = plrank_objective(K=5, N=10, metric=metric, gain="linear")
    booster = xgb.train({"max_depth": 2, "nthread": 1}, d, 5, obj=obj)
    assert np.isfinite(booster.predict(d)).all()
    with pytest.raises(ValueError, match="must be >= 0, but"):
        xgb.train({"nthread": 1}, d, 1, obj=plrank_objective(K=5, N=10, metric=metric))
