"""The objectives inside the real boosters: what they receive, what they return, what they refuse."""

from __future__ import annotations

import re

import lightgbm as lgb
import numpy as np
import pytest
import xgboost as xgb

from gbdt_plrank import _kernels, plrank_grad_hess, plrank_objective, training_cutoff


def recorder(obj, calls):
    """A function (LightGBM deep-copies ``params``, functions stay shared) that logs each round."""

    def objective(preds, data):
        grad, hess = obj(preds, data)
        calls.append((np.array(preds, dtype=np.float64), grad.copy(), hess.copy()))
        return grad, hess

    return objective


XGB_PARAMS = {
    "tree_method": "hist",
    "base_score": 0.0,
    "eval_metric": "ndcg@5",
    "max_depth": 3,
    "eta": 0.3,
}


def test_xgboost_rounds_receive_fresh_samples_keyed_by_round(data):
    X, y, qid, sizes = data
    obj, calls = plrank_objective(K=5, N=20, seed=3), []
    xgb.train(XGB_PARAMS, xgb.DMatrix(X, y, qid=qid), 4, obj=recorder(obj, calls))
    assert len(calls) == 4 and obj.round == 4
    ptr = np.concatenate(([0], np.cumsum(sizes)))
    for r, (preds, grad, hess) in enumerate(calls):
        expected = _estimate_round(preds, y, ptr, seed=3, round_=r)
        np.testing.assert_array_equal(grad, expected[0])
        np.testing.assert_array_equal(hess, expected[1])
    assert not np.allclose(calls[0][1], _estimate_round(calls[0][0], y, ptr, seed=3, round_=1)[0])


def _estimate_round(preds, y, ptr, *, seed, round_):
    from gbdt_plrank._estimator import PLRankSpec, estimate

    spec = PLRankSpec.of(5, "ndcg", "exp", "abs")
    return estimate(
        np.asarray(preds, dtype=np.float64),
        spec.rho(y, ptr),
        ptr,
        spec,
        N=20,
        seed=seed,
        round_=round_,
        sampler="auto",
        n_jobs=None,
    )


def test_round_zero_equals_the_public_function(data):
    X, y, qid, sizes = data
    ptr = np.concatenate(([0], np.cumsum(sizes)))
    obj = plrank_objective(K=5, N=20, seed=3)
    grad, hess = obj(np.zeros(len(y), dtype=np.float32), xgb.DMatrix(X, y, qid=qid))
    expected = plrank_grad_hess(np.zeros(len(y)), y, ptr, K=5, N=20, seed=3)
    np.testing.assert_array_equal(grad, expected[0])
    np.testing.assert_array_equal(hess, expected[1])


def test_xgboost_same_seed_same_model_any_thread_count(data):
    X, y, qid, _ = data
    dtrain = xgb.DMatrix(X, y, qid=qid)
    preds = []
    for nthread, n_jobs in ((1, 1), (2, 2), (2, 1)):
        obj = plrank_objective(K=5, N=20, seed=7, n_jobs=n_jobs)
        bst = xgb.train({**XGB_PARAMS, "nthread": nthread}, dtrain, 5, obj=obj)
        preds.append(bst.predict(dtrain))
    np.testing.assert_array_equal(preds[0], preds[1])
    np.testing.assert_array_equal(preds[0], preds[2])
    other = xgb.train(XGB_PARAMS, dtrain, 5, obj=plrank_objective(K=5, N=20, seed=8)).predict(
        dtrain
    )
    assert not np.array_equal(preds[0], other)


def test_reusing_an_objective_restarts_on_a_new_training_set(data):
    X, y, qid, _ = data
    obj = plrank_objective(K=5, N=20, seed=1)
    first = xgb.train(XGB_PARAMS, xgb.DMatrix(X, y, qid=qid), 3, obj=obj).predict(xgb.DMatrix(X))
    again = xgb.train(XGB_PARAMS, xgb.DMatrix(X, y, qid=qid), 3, obj=obj).predict(xgb.DMatrix(X))
    np.testing.assert_array_equal(first, again)
    dtrain = xgb.DMatrix(X, y, qid=qid)
    xgb.train(XGB_PARAMS, dtrain, 3, obj=obj)
    obj.reset()
    np.testing.assert_array_equal(
        first, xgb.train(XGB_PARAMS, dtrain, 3, obj=obj).predict(xgb.DMatrix(X))
    )


def test_xgboost_learns_and_refuses_data_without_groups(data):
    X, y, qid, _ = data
    dtrain = xgb.DMatrix(X, y, qid=qid)
    res: dict = {}
    xgb.train(
        XGB_PARAMS,
        dtrain,
        20,
        obj=plrank_objective(K=5, N=50),
        evals=[(dtrain, "train")],
        evals_result=res,
        verbose_eval=False,
    )
    curve = res["train"]["ndcg@5"]
    assert curve[-1] > curve[0] + 0.05
    with pytest.raises(ValueError, match="has no query groups: set qid"):
        xgb.train(XGB_PARAMS, xgb.DMatrix(X, y), 1, obj=plrank_objective())
    with pytest.raises(ValueError, match="carries weights"):
        xgb.train(
            XGB_PARAMS, xgb.DMatrix(X, y, qid=qid, weight=np.ones(60)), 1, obj=plrank_objective()
        )


def test_lightgbm_train_receives_groups_and_learns(data):
    X, y, _, sizes = data
    calls: list = []
    res: dict = {}
    train = lgb.Dataset(X, y, group=sizes)
    lgb.train(
        {
            "objective": recorder(plrank_objective(K=5, N=20, seed=2), calls),
            "metric": "ndcg",
            "eval_at": [5],
            "verbosity": -1,
            "min_data_in_leaf": 5,
        },
        train,
        20,
        valid_sets=[train],
        callbacks=[lgb.record_evaluation(res)],
    )
    assert len(calls) == 20
    ptr = np.concatenate(([0], np.cumsum(sizes)))
    preds, grad, _ = calls[3]
    expected = _estimate_round(preds, y, ptr, seed=2, round_=3)
    np.testing.assert_array_equal(grad, expected[0])
    curve = res["training"]["ndcg@5"]
    assert curve[-1] > curve[0] + 0.05
    with pytest.raises(ValueError, match="has no query groups"):
        lgb.train({"objective": plrank_objective(), "verbosity": -1}, lgb.Dataset(X, y), 1)


def test_lgbm_ranker_form_receives_the_groups(data):
    """LGBMRanker with obj.lgbm_ranker fits the same model as lightgbm.train with the objective."""
    X, y, _, sizes = data
    params = {"n_estimators": 5, "min_child_samples": 5, "verbosity": -1, "random_state": 0}
    ranker = lgb.LGBMRanker(objective=plrank_objective(K=5, N=20, seed=4).lgbm_ranker, **params)
    ranker.fit(X, y, group=sizes)
    booster = lgb.train(
        {
            "objective": plrank_objective(K=5, N=20, seed=4),
            "min_data_in_leaf": 5,
            "verbosity": -1,
            "seed": 0,
        },
        lgb.Dataset(X, y, group=sizes),
        5,
    )
    np.testing.assert_allclose(
        ranker.predict(X, raw_score=True), booster.predict(X, raw_score=True), atol=1e-12
    )


def test_three_argument_trap_is_not_possible():
    """The LightGBM form has exactly four parameters, so LGBMRanker passes the groups."""
    import inspect

    assert len(inspect.signature(plrank_objective().lgbm_ranker).parameters) == 4
    with pytest.raises(ValueError, match="passed no groups"):
        plrank_objective().lgbm_ranker(np.zeros(3), np.zeros(3), None, None)


def test_objective_refuses_other_data_and_bad_options():
    with pytest.raises(TypeError, match=r"received a numpy\.ndarray"):
        plrank_objective()(np.zeros(3), np.zeros(3))
    with pytest.raises(ValueError, match="K must be an integer >= 1, but 0 is given"):
        plrank_objective(K=0)
    with pytest.raises(ValueError, match="hessian must be one of"):
        plrank_objective(hessian="exact")


def test_preds_must_be_finite(data):
    X, y, qid, _ = data
    preds = np.zeros(len(y))
    preds[4] = np.nan
    with pytest.raises(ValueError, match=r"preds must be finite, but preds\[4\] is nan"):
        plrank_objective()(preds, xgb.DMatrix(X, y, qid=qid))


def test_compiled_kernels_are_cached_on_disk():
    """cache=True on every kernel, so a fresh process loads machine code instead of compiling."""
    dispatchers = [v for v in vars(_kernels).values() if hasattr(v, "_cache")]
    assert dispatchers and all(type(d._cache).__name__ != "NullCache" for d in dispatchers)


@pytest.mark.parametrize(
    ("K", "train_K", "fairness", "cutoff"),
    [(5, "auto", None, 10), (1, "auto", None, 2), (5, "auto", "expected-exposure", 5),
     (5, 3, None, 3), (5, np.int64(20), "expected-exposure", 20)],
)
def test_training_cutoff(K, train_K, fairness, cutoff):
    assert training_cutoff(K, train_K, fairness=fairness) == cutoff


@pytest.mark.parametrize(
    ("K", "train_K", "message"),
    [(0, "auto", "K must be an integer >= 1, but 0 is given."),
     (5, 0, 'train_K must be "auto" or an integer >= 1, but 0 is given.'),
     (5, "twice", "train_K must be \"auto\" or an integer >= 1, but 'twice' is given."),
     (5, 7.0, 'train_K must be "auto" or an integer >= 1, but 7.0 is given.')],
)
def test_training_cutoff_names_bad_values(K, train_K, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        training_cutoff(K, train_K)
