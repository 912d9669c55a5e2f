"""PiRank: loss against a plain NeuralSort reference, analytic derivatives against finite
differences, the tau -> 0 limit, bad input, and learning inside the real boosters."""

from __future__ import annotations

import itertools

import lightgbm as lgb
import numpy as np
import pytest
import xgboost as xgb
from naive import neuralsort_loss
from test_objective import XGB_PARAMS

from gbdt_plrank import ndcg, pirank_objective
from gbdt_plrank._training.pirank_objective import pirank_loss_grad_hess


def queries(seed, sizes=(1, 2, 3, 5, 8)):
    rng = np.random.default_rng(seed)
    s = rng.normal(size=sum(sizes))
    y = rng.integers(0, 4, size=sum(sizes)).astype(float)
    ptr = np.concatenate(([0], np.cumsum(sizes)))
    return s, y, ptr


@pytest.mark.parametrize("K", [1, 3, 10])
@pytest.mark.parametrize("tau", [0.3, 1.0, 4.0])
def test_loss_equals_plain_neuralsort(K, tau):
    s, y, ptr = queries(K)
    loss, _, _ = pirank_loss_grad_hess(s, y, ptr, K=K, tau=tau)
    for q in range(len(ptr) - 1):
        lo, hi = ptr[q], ptr[q + 1]
        assert loss[q] == pytest.approx(neuralsort_loss(s[lo:hi], y[lo:hi], K, tau), abs=1e-12)


@pytest.mark.parametrize("K", [1, 3, 10])
@pytest.mark.parametrize("tau", [0.5, 2.0])
def test_gradient_and_hessian_match_finite_differences(K, tau):
    s, y, ptr = queries(10 + K)
    _, grad, hess = pirank_loss_grad_hess(s, y, ptr, K=K, tau=tau)
    h = 1e-6
    for m in range(len(s)):
        up, down = s.copy(), s.copy()
        up[m] += h
        down[m] -= h
        lu, gu, _ = pirank_loss_grad_hess(up, y, ptr, K=K, tau=tau)
        ld, gd, _ = pirank_loss_grad_hess(down, y, ptr, K=K, tau=tau)
        assert grad[m] == pytest.approx((lu.sum() - ld.sum()) / (2 * h), abs=1e-6)
        assert hess[m] == pytest.approx((gu[m] - gd[m]) / (2 * h), abs=1e-5)


def test_ties_give_a_one_sided_consistent_gradient():
    """At equal scores (round 0 of a booster) the gradient follows the gain minus the mean gain."""
    y = np.array([0.0, 1.0, 3.0, 0.0])
    _, grad, hess = pirank_loss_grad_hess(np.zeros(4), y, np.array([0, 4]), K=2, tau=1.0)
    assert grad[2] < 0 < grad[1] < grad[0]  # gains 7 and 1 against a mean of 2
    assert grad[0] == pytest.approx(grad[3])
    assert np.all(np.isfinite(hess))


def test_loss_tends_to_one_minus_ndcg_as_tau_goes_to_zero():
    rng = np.random.default_rng(3)
    for n, K in itertools.product([2, 5, 9], [1, 3, 5]):
        s = rng.permutation(n).astype(float) + rng.uniform(0, 0.5, size=n)  # gaps > 0.5
        y = rng.integers(0, 4, size=n).astype(float)
        y[0] = 2.0
        exact = 1.0 - ndcg(y, s, None, k=K)
        gaps = [
            abs(pirank_loss_grad_hess(s, y, np.array([0, n]), K=K, tau=t)[0][0] - exact)
            for t in (1.0, 0.1, 0.01)
        ]
        assert gaps[-1] < 1e-8
        assert gaps[2] <= gaps[1] <= gaps[0] + 1e-12


def test_hessian_modes():
    s, y, ptr = queries(7)
    _, _, raw = pirank_loss_grad_hess(s, y, ptr, K=3, hessian="raw")
    _, _, ab = pirank_loss_grad_hess(s, y, ptr, K=3, hessian="abs")
    _, _, const = pirank_loss_grad_hess(s, y, ptr, K=3, hessian="constant")
    assert (raw < 0).any()
    np.testing.assert_allclose(ab, np.abs(raw))
    for tau in (0.2, 1.0, 5.0):
        _, _, exact = pirank_loss_grad_hess(s, y, ptr, K=3, tau=tau, hessian="raw")
        _, _, bound = pirank_loss_grad_hess(s, y, ptr, K=3, tau=tau, hessian="bound")
        assert np.all(bound >= np.abs(exact) - 1e-12)
        assert bound.max() < 10 * np.abs(exact).max()  # a majorant, not a huge constant
    np.testing.assert_array_equal(const, 1.0)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"tau": 0.0}, "tau must be a finite number > 0, but 0.0 is given"),
        ({"tau": -1}, "tau must be a finite number > 0, but -1 is given"),
        ({"tau": float("nan")}, "tau must be a finite number > 0, but nan is given"),
        ({"tau": float("inf")}, "tau must be a finite number > 0, but inf is given"),
        ({"K": 0}, "K must be an integer >= 1, but 0 is given"),
        ({"hessian": "exact"}, "hessian must be one of"),
    ],
)
def test_bad_input(kwargs, message):
    with pytest.raises(ValueError, match=message):
        pirank_objective(**kwargs)
    with pytest.raises(ValueError, match=message):
        pirank_loss_grad_hess(np.zeros(2), np.ones(2), np.array([0, 2]), **kwargs)


def test_xgboost_learns(data):
    X, y, qid, _ = data
    dtrain = xgb.DMatrix(X, label=y, qid=qid)
    log: dict = {}
    params = {**XGB_PARAMS, "eval_metric": "ndcg@10", "nthread": 1}
    xgb.train(
        params,
        dtrain,
        20,
        obj=pirank_objective(K=10),
        evals=[(dtrain, "train")],
        evals_result=log,
        verbose_eval=False,
    )
    curve = log["train"]["ndcg@10"]
    assert curve[-1] > curve[0] + 0.03


def test_lightgbm_learns(data):
    X, y, _, sizes = data
    train = lgb.Dataset(X, label=y, group=sizes)
    log: dict = {}
    params = {
        "objective": pirank_objective(K=10),
        "metric": "ndcg",
        "eval_at": [10],
        "num_leaves": 7,
        "learning_rate": 0.3,
        "verbose": -1,
        "num_threads": 1,
    }
    lgb.train(
        params,
        train,
        20,
        valid_sets=[train],
        valid_names=["train"],
        callbacks=[lgb.record_evaluation(log)],
    )
    curve = log["train"]["ndcg@10"]
    assert curve[-1] > curve[0] + 0.03


def test_weights_scale_queries_and_missing_groups_are_refused(data):
    X, y, qid, sizes = data
    obj = pirank_objective()
    w = np.linspace(0.5, 2.0, len(sizes)).astype(np.float32)
    plain = obj(np.zeros(len(y)), xgb.DMatrix(X, label=y, qid=qid))
    weighted = obj(np.zeros(len(y)), xgb.DMatrix(X, label=y, qid=qid, weight=w))
    for a, b in zip(weighted, plain, strict=True):
        np.testing.assert_allclose(a, b * np.repeat(w, sizes), rtol=1e-12)
    with pytest.raises(ValueError, match="has no query groups"):
        obj(np.zeros(len(y)), xgb.DMatrix(X, label=y))
    grad, hess = obj.lgbm_ranker(y, np.zeros(len(y)), None, sizes)
    assert grad.shape == hess.shape == y.shape
