"""Item groups reach a PL-Rank objective one way: :meth:`PLRankObjective.set_item_groups`.

``plrank_objective(item_groups=)`` is its short form for the training set, and the booster
layer hands the item groups of a ranker's (or the harness's) training and eval sets to it.
"""

from __future__ import annotations

import numpy as np
import pytest
import xgboost

from gbdt_plrank import PLRankObjective, PLRankRanker, plrank_objective
from gbdt_plrank._boosters import Plan
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
    groups = (X[:, 0] > 0).astype(np.int64)
    return X, y, qid, groups


@pytest.fixture
def given(monkeypatch: pytest.MonkeyPatch) -> list[tuple]:
    """Every call of ``PLRankObjective.set_item_groups``: (data, ids, checked)."""
    calls: list[tuple] = []
    original = PLRankObjective.set_item_groups

    def spy(self, data, item_groups, *, checked=False):
        calls.append((data, np.array(item_groups), checked))
        return original(self, data, item_groups, checked=checked)

    monkeypatch.setattr(PLRankObjective, "set_item_groups", spy)
    return calls


@pytest.mark.parametrize("backend", ["xgboost", "lightgbm"])
def test_the_ranker_hands_its_sets_item_groups_to_set_item_groups(given, backend) -> None:
    X, y, qid, groups = _data(0)
    Xv, yv, qv, gv = _data(1)
    order = np.random.default_rng(2).permutation(qid.size)  # the ranker sorts rows by query
    PLRankRanker(backend=backend, fairness=GROUP, N=4, n_estimators=2, n_jobs=1, random_state=0,
                 min_child_weight=0.01).fit(
        X[order], y[order], group=qid[order], item_groups=groups[order],
        eval_set=[(Xv, yv, qv, gv)],
    )
    assert [checked for *_, checked in given] == [True, True]  # checked as the ranker read them
    rows = np.argsort(qid[order], kind="stable")
    np.testing.assert_array_equal(given[0][1], groups[order][rows])
    np.testing.assert_array_equal(given[1][1], gv)


def test_plrank_objective_item_groups_are_set_item_groups_of_the_training_set(given) -> None:
    X, y, qid, groups = _data(0)
    obj = plrank_objective(K=3, N=4, n_jobs=1, fairness=GROUP, item_groups=groups)
    dtrain = xgboost.DMatrix(X, y, qid=qid)
    obj(np.zeros(y.size), dtrain)
    assert len(given) == 1 and given[0][0] is dtrain and given[0][2]
    assert obj.item_groups_of(dtrain, y.size) is obj.item_groups
    obj(np.zeros(y.size), dtrain)  # the same training set: kept, not given again
    assert len(given) == 1


def test_set_item_groups_checks_what_is_not_checked_yet() -> None:
    obj = plrank_objective(K=3, N=4, fairness=GROUP)
    key = Data()
    with pytest.raises(ValueError, match=r"item_groups must hold two or more distinct groups, "
                                         r"but holds \[0\]"):
        obj.set_item_groups(key, [0, 0, 0])
    obj.set_item_groups(key, [1, 0, 1.0])
    assert obj.item_groups_of(key, 3).tolist() == [1, 0, 1]
    ids = np.zeros(3, dtype=np.int64)  # a worker's rows may hold one group (Dask)
    obj.set_item_groups(key, ids, checked=True)
    assert obj.item_groups_of(key, 3) is ids
    with pytest.raises(ValueError, match="item_groups are used only by fairness in"):
        plrank_objective(K=3, N=4).set_item_groups(key, [0, 1, 1])


def test_the_plan_gives_item_groups_to_the_objective_that_takes_them() -> None:
    X, y, qid, groups = _data(0)
    split = Split(X, y, qid, groups)
    obj = plrank_objective(K=3, N=4, fairness=GROUP)
    key = Data()
    Plan(obj, 3).give_item_groups([(key, split), (Data(), Split(X, y, qid))])
    assert obj.item_groups_of(key, y.size) is groups
    with pytest.raises(ValueError, match="item groups were given, but the objective takes none"):
        Plan("rank:ndcg", 3).give_item_groups([(key, split)])
    with pytest.raises(ValueError, match="item_groups are used only by fairness in"):
        Plan(plrank_objective(K=3, fairness="disparity"), 3).give_item_groups([(key, split)])
