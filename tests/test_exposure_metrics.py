"""Exposure metrics against exact enumeration of Plackett-Luce partial rankings."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from gbdt_plrank import metrics


def _theta(D: int, K: int) -> np.ndarray:
    t = np.zeros(D)
    t[: min(K, D)] = 1.0 / np.log2(np.arange(2, min(K, D) + 2))
    return t


def _pl_exposure(scores: np.ndarray, K: int) -> np.ndarray:
    """Exact E(d) by enumerating every top-min(K, D) ranking with its PL probability."""
    D = scores.shape[0]
    theta = _theta(D, K)
    w = np.exp(scores - scores.max())
    exposure = np.zeros(D)
    for prefix in itertools.permutations(range(D), min(K, D)):
        p, left = 1.0, w.sum()
        for d in prefix:
            p *= w[d] / left
            left -= w[d]
        for rank, d in enumerate(prefix):
            exposure[d] += p * theta[rank]
    return exposure


def _target(y: np.ndarray, K: int) -> np.ndarray:
    """Slow equal-exposure target: mean rank weight over each grade's ideal ranks."""
    theta = _theta(y.shape[0], K)
    ideal = np.sort(y)[::-1]
    return np.array([theta[ideal == g].mean() for g in y])


@pytest.mark.parametrize("D,K", [(3, 1), (4, 2), (5, 3), (5, 10), (6, 4)])
def test_parts_match_enumeration(D: int, K: int) -> None:
    rng = np.random.default_rng(D * 10 + K)
    y = rng.integers(0, 3, D).astype(float)
    s = rng.normal(size=D)
    e = _pl_exposure(s, K)
    eps = _target(y, K)
    parts = metrics.expected_exposure_parts(y, e, k=K)
    assert parts["ee_l"] == pytest.approx(((e - eps) ** 2).sum(), abs=1e-12)
    assert parts["ee_d"] == pytest.approx((e**2).sum(), abs=1e-12)
    assert parts["ee_r"] == pytest.approx((e * eps).sum(), abs=1e-12)
    identity = parts["ee_d"] - 2 * parts["ee_r"] + (eps**2).sum()
    assert parts["ee_l"] == pytest.approx(identity, abs=1e-12)
    # a deterministic ranking has the largest disparity: sum of theta^2
    deterministic = _theta(D, K)[np.argsort(np.argsort(-y, kind="stable"))]
    det = metrics.expected_exposure_parts(y, deterministic, k=K)
    assert det["ee_d"] == pytest.approx((_theta(D, K) ** 2).sum(), abs=1e-9)
    assert det["ee_d"] >= parts["ee_d"] - 1e-12


def test_shuffle_within_grades_is_fair() -> None:
    y = np.array([2.0, 0.0, 2.0, 1.0, 0.0, 2.0])
    K = 4
    theta = _theta(y.shape[0], K)
    exposure = np.zeros(y.shape[0])
    orders = [p for p in itertools.permutations(range(6)) if np.all(np.diff(y[list(p)]) <= 0)]
    for p in orders:
        exposure[list(p)] += theta / len(orders)
    assert metrics.expected_exposure_loss(y, exposure, k=K) == pytest.approx(0.0, abs=1e-15)
    assert (
        metrics.expected_exposure_loss(y, theta[np.argsort(np.argsort(-y, kind="stable"))], k=K) > 0
    )


def test_groups_and_mean() -> None:
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 9).astype(float)
    e = rng.uniform(0, 1, 9)
    qid = np.array([3, 1, 3, 1, 1, 3, 2, 2, 2])
    per = metrics.expected_exposure_loss(y, e, qid, k=2, per_query=True)
    expect = [metrics.expected_exposure_loss(y[qid == g], e[qid == g], k=2) for g in (1, 2, 3)]
    np.testing.assert_allclose(per, expect, atol=1e-14)
    assert metrics.expected_exposure_loss(y, e, qid, k=2) == pytest.approx(np.mean(expect))


def test_bad_input() -> None:
    with pytest.raises(ValueError, match="exposure must be >= 0"):
        metrics.expected_exposure_loss([1.0, 0.0], [0.5, -0.1])
    with pytest.raises(ValueError, match="k must be"):
        metrics.expected_exposure_loss([1.0, 0.0], [0.5, 0.1], k=0)


def test_relevance_proportional_disparity_pairwise() -> None:
    rng = np.random.default_rng(3)
    y = rng.integers(0, 4, 7).astype(float)
    e = _pl_exposure(rng.normal(size=7), 3)
    rho = 2**y - 1
    slow = sum(
        (e[i] * rho[j] - e[j] * rho[i]) ** 2 for i in range(7) for j in range(7) if i != j
    ) / (7 * 6)
    assert metrics.relevance_proportional_disparity(y, e) == pytest.approx(slow, rel=1e-12)
    # proportional exposure is perfectly fair; a single-document query scores 0
    assert metrics.relevance_proportional_disparity(y, 0.1 * rho) == pytest.approx(0.0, abs=1e-15)
    both = metrics.relevance_proportional_disparity(
        np.append(y, 2.0), np.append(e, 0.3), [7, 1], per_query=True
    )
    np.testing.assert_allclose(both, [slow, 0.0], rtol=1e-12)
