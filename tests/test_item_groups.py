"""Item groups travel with the data, as its labels do.

Every data object the backend layer builds carries its split's item groups (XGBoost's
``label_upper_bound`` row field, as their indices; a LightGBM Dataset of the backend's own class;
the torch backend's data is the split), and the objective and its metrics read them with the labels
(``QueryFields.item_groups``). Nothing hands them over on the side: the rankers and the harness
never call ``set_item_groups``, which remains the way for data objects built without them.
"""

from __future__ import annotations

import inspect

import lightgbm
import numpy as np
import pytest
import xgboost

from gbdt_plrank import PLRankObjective, PLRankRanker, plrank_grad_hess, plrank_objective
from gbdt_plrank._backends import BACKENDS, Plan, group_indices
from gbdt_plrank.datasets import Split

GROUP = "group-disparity"


class Data:
    """A stand-in for a data object, recognised by identity."""


def _data(seed: int, n_queries: int = 12, size: int = 6):
    rng = np.random.default_rng(seed)
    n = n_queries * size
    X = rng.normal(size=(n, 3))
    y = rng.integers(0, 3, size=n).astype(float)
    qid = np.repeat(np.arange(n_queries), size)
    groups = np.where(X[:, 0] > 0, 9, 4).astype(np.int64)
    return X, y, qid, groups


@pytest.mark.parametrize("backend", ["xgboost", "lightgbm"])
def test_the_data_objects_carry_their_splits_item_groups(backend) -> None:
    X, y, qid, groups = _data(0)
    library = BACKENDS[backend]
    data = (
        library._dataset(Split(X, y, qid, groups))
        if backend == "lightgbm"
        else (library._dmatrix(Split(X, y, qid, groups)))
    )
    if backend == "lightgbm":
        data.construct()
    carried = library.query_fields(data).item_groups
    if backend == "xgboost":  # a float32 field: the ids' indices, 4 -> 0 and 9 -> 1
        np.testing.assert_array_equal(carried, (groups == 9).astype(np.float32))
        np.testing.assert_array_equal(group_indices(groups), carried)
    else:
        assert carried is groups
    bare = (
        library._dataset(Split(X, y, qid))
        if backend == "lightgbm"
        else (library._dmatrix(Split(X, y, qid)))
    )
    if backend == "lightgbm":
        bare.construct()
    assert library.query_fields(bare).item_groups is None
    assert BACKENDS["torch"].query_fields(Split(X, y, qid, groups)).item_groups is groups


@pytest.fixture
def handed(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every data object handed to ``PLRankObjective.set_item_groups``."""
    calls: list[object] = []
    original = PLRankObjective.set_item_groups

    def spy(self, data, item_groups):
        calls.append(data)
        return original(self, data, item_groups)

    monkeypatch.setattr(PLRankObjective, "set_item_groups", spy)
    return calls


@pytest.mark.parametrize("backend", ["xgboost", "lightgbm"])
def test_the_rankers_item_groups_reach_the_objective_with_the_data(handed, backend) -> None:
    """Training and eval sets' groups arrive with their rows; the model is the one of the
    same groups given by hand to ``xgboost.train`` / ``lightgbm.train``."""
    X, y, qid, groups = _data(0)
    Xv, yv, qv, gv = _data(1)
    read: list[np.ndarray] = []
    original = PLRankObjective._training_item_groups

    def spy(self, key):
        ids = original(self, key)
        read.append(ids)
        return ids

    fit = {
        "backend": backend,
        "fairness": GROUP,
        "N": 4,
        "n_estimators": 3,
        "n_jobs": 1,
        "random_state": 0,
        "min_child_weight": 0.01,
        "stopping_metric": "policy",
    }
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(PLRankObjective, "_training_item_groups", spy)
        ranker = PLRankRanker(**fit).fit(
            X,
            y,
            group=qid,
            item_groups=groups,
            eval_set=[(Xv, yv, qv, gv)],
            early_stopping_rounds=3,
        )
    assert handed == []  # nothing on the side
    carried = group_indices(groups) if backend == "xgboost" else groups  # as in the data
    np.testing.assert_array_equal(read[0], carried)
    curve = ranker.evals_result_["valid_0"]["expected_ndcg@5-1*group_disparity"]
    assert len(curve) == 3
    # by hand: the same objective and groups through set_item_groups
    plan = PLRankRanker(**fit)._training([(Xv, yv, qv, gv)], 3)[2]
    obj = plan.objective
    if backend == "xgboost":
        dtrain, dvali = xgboost.DMatrix(X, y, qid=qid), xgboost.DMatrix(Xv, yv, qid=qv)
    else:
        dtrain = lightgbm.Dataset(X, y, group=np.bincount(qid), params={"verbose": -1})
        dvali = lightgbm.Dataset(Xv, yv, group=np.bincount(qv), reference=dtrain.construct())
        dvali.construct()
    obj.set_item_groups(dtrain, groups)
    obj.set_item_groups(dvali, gv)
    value = obj.expected_metric(ranker.predict(Xv), dvali)[1]
    assert value == pytest.approx(curve[ranker.best_iteration_], abs=1e-6)  # XGBoost logs 6 digits
    assert handed == [dtrain, dvali]


def test_item_groups_given_by_hand_come_before_those_the_data_carries() -> None:
    X, y, qid, groups = _data(0)
    carried = BACKENDS["xgboost"]._dmatrix(Split(X, y, qid, groups))
    preds = np.random.default_rng(3).normal(size=y.size)
    obj = plrank_objective(K=3, N=4, seed=1, fairness=GROUP)
    g_data, _ = obj(preds, carried)
    ptr = np.r_[0, np.cumsum(np.bincount(qid))]
    want, _ = plrank_grad_hess(preds, y, ptr, K=3, N=4, seed=1, fairness=GROUP, item_groups=groups)
    np.testing.assert_allclose(g_data, want, rtol=1e-12, atol=1e-15)
    swapped = plrank_objective(K=3, N=4, seed=1, fairness=GROUP)
    swapped.set_item_groups(carried, 13 - groups)  # the same groups, ids in the other order
    np.testing.assert_allclose(swapped(preds, carried)[0], g_data, rtol=1e-12, atol=1e-15)
    other = plrank_objective(K=3, N=4, seed=1, fairness=GROUP)
    other.set_item_groups(carried, qid % 2)
    assert not np.allclose(other(preds, carried)[0], g_data)


def test_plrank_objective_item_groups_serve_a_training_set_without_its_own() -> None:
    X, y, qid, groups = _data(0)
    obj = plrank_objective(K=3, N=4, n_jobs=1, fairness=GROUP, item_groups=groups)
    dtrain = xgboost.DMatrix(X, y, qid=qid)
    obj(np.zeros(y.size), dtrain)
    assert obj.item_groups_of(dtrain, y.size) is obj.item_groups  # scored as an eval set too
    with pytest.raises(
        ValueError,
        match="item_groups must hold one group id per row of the DMatrix they are given for",
    ):
        obj(np.zeros(6), xgboost.DMatrix(X[:6], y[:6], qid=qid[:6]))


def test_set_item_groups_checks_the_ids() -> None:
    obj = plrank_objective(K=3, N=4, fairness=GROUP)
    key = Data()
    with pytest.raises(
        ValueError,
        match=r"item_groups must hold two or more distinct groups, "
        r"but holds \[0\]",
    ):
        obj.set_item_groups(key, [0, 0, 0])
    obj.set_item_groups(key, [1, 0, 1.0])
    assert obj.item_groups_of(key, 3).tolist() == [1, 0, 1]
    with pytest.raises(ValueError, match="item_groups are used only by fairness in"):
        plrank_objective(K=3, N=4).set_item_groups(key, [0, 1, 1])


def test_no_side_channel_is_left() -> None:
    """The plan hands nothing over; no backend looks for a method by name to do it."""
    assert not any("item_groups" in name for name in vars(Plan))
    for backend in BACKENDS.values():
        source = inspect.getsource(type(backend).train)
        assert "item_groups" not in source and "getattr" not in source, backend.name
