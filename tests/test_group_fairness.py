"""The disparity losses end to end: the metrics against plain references, the policy's value,
the objective inside xgboost.train and lightgbm.train with item groups, and the bad inputs.

The estimator itself (unbiasedness by enumeration, the Gauss-Newton part) is tested with the
other losses in ``test_fairness.py``.
"""

from __future__ import annotations

import math
from dataclasses import replace

import lightgbm
import naive
import numpy as np
import pytest
import xgboost

from gbdt_plrank import metrics, plrank_grad_hess, plrank_objective
from gbdt_plrank._ranking_metric import RankingMetric, dcg_weights
from gbdt_plrank._training.evaluation import PolicyEvaluator
from gbdt_plrank._training.fairness_spec import FairnessSpec
from gbdt_plrank._util.seeds import seeds_from
from gbdt_plrank.datasets import Split

GROUP = "group-disparity"


def _queries(seed: int, sizes=(5, 1, 4, 6, 3)):
    """Labels, exposures, per-row query ids (shuffled rows) and item groups of a few queries."""
    rng = np.random.default_rng(seed)
    n = sum(sizes)
    qid = np.repeat(np.arange(len(sizes)) * 7 + 3, sizes)
    y = rng.integers(0, 3, size=n).astype(float)
    groups = rng.integers(0, 3, size=n) * 5  # ids need not be 0..G-1
    y[qid == 3 + 7 * 4] = 0.0  # a query without merit
    groups[qid == 3 + 7 * 2] = 10  # a query of one group
    exposure = rng.uniform(0, 1, size=n)
    order = rng.permutation(n)
    return y[order], exposure[order], qid[order], groups[order]


@pytest.mark.parametrize("gain", ["exp", "linear"])
def test_group_disparity_metric_matches_the_plain_sum_over_pairs(gain):
    y, e, qid, groups = _queries(1)
    got = metrics.group_disparity(y, e, qid, groups, gain=gain, per_query=True)
    expect = []
    for q in np.unique(qid):
        rows = qid == q
        g = 2.0 ** y[rows] - 1.0 if gain == "exp" else y[rows]
        expect.append(naive.group_disparity_loss(g, groups[rows]).value(e[rows]))
    np.testing.assert_allclose(got, expect, rtol=1e-12, atol=1e-15)
    assert got[2] == 0.0 and got[4] == 0.0  # one group; no merit
    assert metrics.group_disparity(y, e, qid, groups, gain=gain) == pytest.approx(np.mean(expect))
    # a query where only one group has merit scores 0 whatever the exposure
    assert metrics.group_disparity([1.0, 0.0, 0.0], [0.9, 0.1, 0.5], None, [0, 1, 1]) == 0.0


def test_relevance_proportional_disparity_is_the_disparity_loss():
    """The one owner of D: exactly 1/(n(n-1)) sum_{i != j} (E_i g_j - E_j g_i)^2 per query."""
    y, e, qid, _ = _queries(2)
    got = metrics.relevance_proportional_disparity(y, e, qid, per_query=True)
    expect = [
        naive.disparity_loss(2.0 ** y[qid == q] - 1.0).value(e[qid == q])
        if (qid == q).sum() > 1
        else 0.0
        for q in np.unique(qid)
    ]
    np.testing.assert_allclose(got, expect, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize(
    ("item_groups", "message"),
    [
        ([0, 1], "item_groups must hold one group id per document (3), but holds 2"),
        ([0, np.nan, 1], "item_groups must hold integers, but item_groups[1] is nan"),
        ([0.5, 1, 1], "item_groups must hold integers, but item_groups[0] is 0.5"),
        ([0, -1, 1], "item_groups must be >= 0, but item_groups[1] is -1"),
        ([2, 2, 2], "item_groups must hold two or more distinct groups, but holds [2]"),
        (["a", "b", "a"], "item_groups must hold integers, but has dtype <U1"),
    ],
)
def test_bad_item_groups_are_named(item_groups, message):
    y = np.array([0.0, 1.0, 2.0])
    with pytest.raises(ValueError, match=_escaped(message)):
        plrank_grad_hess(np.zeros(3), y, [0, 3], fairness=GROUP, item_groups=item_groups)
    with pytest.raises(ValueError, match=_escaped(message)):
        metrics.group_disparity(y, np.zeros(3), None, item_groups)


def _escaped(message: str) -> str:
    return "".join("\\" + c if c in "()[]." else c for c in message)


def test_item_groups_and_group_fairness_go_together():
    y = np.array([0.0, 1.0, 2.0])
    with pytest.raises(
        ValueError,
        match="item_groups are used only by fairness in "
        r"\('group-disparity',\), but fairness='disparity' is given",
    ):
        plrank_grad_hess(np.zeros(3), y, [0, 3], fairness="disparity", item_groups=[0, 1, 1])
    with pytest.raises(ValueError, match="fairness=None is given"):
        plrank_objective(item_groups=[0, 1, 1])
    with pytest.raises(ValueError, match="fairness='group-disparity' needs item_groups"):
        plrank_grad_hess(np.zeros(3), y, [0, 3], fairness=GROUP)


def test_groups_are_compared_within_each_query():
    """Renaming the ids of one query's groups changes nothing; a query's groups are its own."""
    rng = np.random.default_rng(3)
    ptr = np.array([0, 6, 11])
    scores = rng.normal(size=11)
    y = rng.integers(0, 3, size=11).astype(float)
    groups = np.array([0, 1, 0, 1, 1, 0, 4, 4, 7, 7, 4])
    kw = {"K": 3, "N": 8, "seed": 2, "fairness": GROUP}
    base = plrank_grad_hess(scores, y, ptr, item_groups=groups, **kw)
    renamed = groups.copy()
    renamed[6:] = np.where(groups[6:] == 4, 0, 1)
    for a, b in zip(base, plrank_grad_hess(scores, y, ptr, item_groups=renamed, **kw)):
        np.testing.assert_array_equal(a, b)


def _exact_values(split: Split, margins, groups, K: int, spec: FairnessSpec) -> np.ndarray:
    theta = dcg_weights(K)
    out = []
    for q in range(split.n_queries):
        lo, hi = split.group_ptr[q], split.group_ptr[q + 1]
        m, y = margins[lo:hi], split.y[lo:hi]
        E = naive.exact_exposure(m, theta[: min(K, hi - lo)])
        g = 2.0**y - 1.0
        ideal = float(np.sort(g)[::-1][:K] @ theta[: min(K, hi - lo)])
        value = float(E @ g) / ideal if ideal > 0 else 1.0
        loss = (
            naive.disparity_loss(g)
            if spec.name == "disparity"
            else naive.group_disparity_loss(g, groups[lo:hi])
        )
        out.append(value - spec.weight * loss.value(E))
    return np.array(out)


@pytest.mark.parametrize("kind", ["disparity", GROUP])
def test_policy_value_subtracts_the_loss_without_bias(kind):
    K = 3
    rng = np.random.default_rng(4)
    sizes = [4, 5, 3, 6]
    qid = np.repeat(np.arange(len(sizes)), sizes)
    y = rng.integers(0, 3, size=qid.size).astype(float)
    groups = rng.integers(0, 2, size=qid.size)
    split = Split(None, y, qid)
    margins = rng.normal(size=qid.size)
    spec = FairnessSpec(kind, 2.0)
    exact = _exact_values(split, margins, groups, K, spec)
    ids = groups if kind == GROUP else None
    runs = np.array(
        [
            PolicyEvaluator(
                RankingMetric("ndcg", K, "exp"),
                spec,
                replace(split, item_groups=ids),
                n_samples=4,
                seed=s,
                n_jobs=1,
            ).per_query(margins)
            for s in range(300)
        ]
    )
    z = (runs.mean(axis=0) - exact) / (runs.std(axis=0, ddof=1) / math.sqrt(len(runs)))
    assert np.abs(z).max() < 5, z


@pytest.fixture(scope="module")
def grouped(data):
    """40 queries to train on, 20 to stop on, item groups from the sign of a feature."""
    X, y, qid, _ = data
    groups = (X[:, 2] > 0).astype(np.int64)
    train, vali = qid < 40, qid >= 40
    return (
        Split(X[train], y[train], qid[train]),
        groups[train],
        Split(X[vali], y[vali], qid[vali]),
        groups[vali],
    )


def _group_objective(g_train):
    return plrank_objective(
        K=5, N=10, seed=1, n_jobs=1, fairness=GROUP, fairness_weight=0.5, item_groups=g_train
    )


def _recorded(obj, calls):
    def objective(preds, data):
        grad, hess = obj(preds, data)
        calls.append((np.array(preds, dtype=np.float64), grad.copy()))
        return grad, hess

    return objective


@pytest.mark.parametrize("library", ["xgboost", "lightgbm"])
def test_group_fair_objective_trains_and_stops_inside_the_boosters(grouped, library):
    """Each round's gradient is the estimator's with the training rows' item groups, and the
    booster's own early stopping watches the group-fair policy value of the eval set."""
    train, g_train, vali, g_vali = grouped
    obj, calls = _group_objective(g_train), []
    rounds, patience = 40, 3
    if library == "xgboost":
        dtrain = xgboost.DMatrix(train.X, train.y, qid=train.qid)
        dvali = xgboost.DMatrix(vali.X, vali.y, qid=vali.qid)
        obj.set_item_groups(dvali, g_vali)
        params = {
            "eta": 0.3,
            "max_depth": 3,
            "nthread": 1,
            "base_score": 0.0,
            "disable_default_eval_metric": 1,
        }
        booster = xgboost.train(
            params,
            dtrain,
            rounds,
            obj=_recorded(obj, calls),
            evals=[(dvali, "valid")],
            custom_metric=obj.expected_metric,
            maximize=True,
            early_stopping_rounds=patience,
            verbose_eval=False,
        )
        best = float(booster.attr("best_score"))
        margins = (
            booster[: booster.best_iteration + 1]
            .inplace_predict(vali.X, predict_type="margin")
            .astype(np.float64)
        )
    else:
        dtrain = lightgbm.Dataset(train.X, train.y, group=train.group_sizes)
        dvali = lightgbm.Dataset(vali.X, vali.y, group=vali.group_sizes, reference=dtrain)
        obj.set_item_groups(dvali, g_vali)
        params = {
            "objective": _recorded(obj, calls),
            "metric": "None",
            "learning_rate": 0.3,
            "num_leaves": 8,
            "num_threads": 1,
            "verbose": -1,
            "min_data_in_leaf": 5,
        }
        booster = lightgbm.train(
            params,
            dtrain,
            rounds,
            valid_sets=[dvali],
            feval=obj.expected_metric,
            callbacks=[lightgbm.early_stopping(patience, verbose=False)],
        )
        best = booster.best_score["valid_0"]["expected_ndcg@5-0.5*group_disparity"]
        margins = booster.predict(vali.X, num_iteration=booster.best_iteration, raw_score=True)
    preds, grad = calls[0]
    expected, _ = plrank_grad_hess(
        preds,
        train.y,
        train.group_ptr,
        K=5,
        N=10,
        seed=1,
        fairness=GROUP,
        fairness_weight=0.5,
        item_groups=g_train,
    )
    np.testing.assert_array_equal(grad, expected)
    value = PolicyEvaluator(
        RankingMetric("ndcg", 5, "exp"),
        FairnessSpec(GROUP, 0.5),
        replace(vali, item_groups=g_vali),
        seed=1,
        n_jobs=1,
    )
    assert best == pytest.approx(float(value.per_query(margins).mean()), abs=1e-6)


@pytest.mark.parametrize("library", ["xgboost", "lightgbm"])
def test_the_training_set_is_scored_with_the_objectives_item_groups(grouped, library):
    """The training set as an eval set uses the item groups given to plrank_objective, also
    through LightGBM's deep copy of the objective (the copy learns the training set)."""
    train, g_train, _, _ = grouped
    obj = _group_objective(g_train)
    if library == "xgboost":
        dtrain = xgboost.DMatrix(train.X, train.y, qid=train.qid)
        history = {}
        booster = xgboost.train(
            {"base_score": 0.0, "nthread": 1, "disable_default_eval_metric": 1},
            dtrain,
            2,
            obj=obj,
            evals=[(dtrain, "train")],
            custom_metric=obj.expected_metric,
            evals_result=history,
            verbose_eval=False,
        )
        curve = history["train"]["expected_ndcg@5-0.5*group_disparity"]
        margins = booster.predict(dtrain, output_margin=True)
    else:
        dtrain = lightgbm.Dataset(train.X, train.y, group=train.group_sizes)
        history = {}
        booster = lightgbm.train(
            {"objective": obj, "metric": "None", "num_threads": 1, "verbose": -1},
            dtrain,
            2,
            valid_sets=[dtrain],
            feval=obj.expected_metric,
            callbacks=[lightgbm.record_evaluation(history)],
        )
        curve = history["training"]["expected_ndcg@5-0.5*group_disparity"]
        margins = booster.predict(train.X, raw_score=True)
    value = PolicyEvaluator(
        RankingMetric("ndcg", 5, "exp"),
        FairnessSpec(GROUP, 0.5),
        replace(train, item_groups=g_train),
        seed=1,
        n_jobs=1,
    )
    assert len(curve) == 2
    assert curve[-1] == pytest.approx(
        float(value.per_query(margins.astype(np.float64)).mean()), abs=1e-6
    )


def test_eval_sets_need_their_item_groups(grouped):
    train, g_train, vali, g_vali = grouped
    dtrain = xgboost.DMatrix(train.X, train.y, qid=train.qid)
    dvali = xgboost.DMatrix(vali.X, vali.y, qid=vali.qid)
    params = {"base_score": 0.0, "disable_default_eval_metric": 1, "nthread": 1}
    obj = _group_objective(g_train)
    with pytest.raises(
        ValueError,
        match=r"needs the item groups of every eval set to evaluate "
        r"it: call obj.set_item_groups\(data, item_groups\) for this DMatrix",
    ):
        xgboost.train(
            params, dtrain, 1, obj=obj, evals=[(dvali, "valid")], custom_metric=obj.expected_metric
        )
    obj = _group_objective(g_train)  # the training set is its own eval set without a call
    res: dict = {}
    xgboost.train(
        params,
        dtrain,
        2,
        obj=obj,
        evals=[(dtrain, "train")],
        custom_metric=obj.expected_metric,
        evals_result=res,
        verbose_eval=False,
    )
    assert len(res["train"]["expected_ndcg@5-0.5*group_disparity"]) == 2
    obj = _group_objective(g_train)
    obj.set_item_groups(dvali, g_vali[:-1])
    with pytest.raises(
        ValueError,
        match=r"item_groups must hold one group id per row of the "
        rf"DMatrix they are given for \({g_vali.size}\), but hold {g_vali.size - 1}",
    ):
        xgboost.train(
            params, dtrain, 1, obj=obj, evals=[(dvali, "valid")], custom_metric=obj.expected_metric
        )
    with pytest.raises(
        ValueError,
        match=r"item_groups must hold one group id per row of the "
        rf"DMatrix they are given for \({g_train.size}\), but hold {g_vali.size}",
    ):
        xgboost.train(params, dtrain, 1, obj=_group_objective(g_vali))
    with pytest.raises(
        ValueError, match="fairness='group-disparity' needs the item groups of the training rows"
    ):
        xgboost.train(params, dtrain, 1, obj=plrank_objective(fairness=GROUP))
    with pytest.raises(ValueError, match="item_groups are used only by fairness"):
        plrank_objective(fairness="disparity").set_item_groups(dvali, g_vali)


def test_group_fairness_moves_exposure_toward_merit():
    """One query, two groups of equal merit, group 1 ranked below: the fair gradient pushes
    group 1 up and group 0 down relative to the relevance-only gradient."""
    scores = np.array([2.0, 1.5, 1.0, -1.0, -1.5, -2.0])
    y = np.array([1.0, 1.0, 0.0, 1.0, 1.0, 0.0])
    groups = np.array([0, 0, 0, 1, 1, 1])
    ptr = np.array([0, 6])
    kw = {"K": 3, "N": 2000, "seed": 0, "hessian": "raw"}
    relevance, _ = plrank_grad_hess(scores, y, ptr, **kw)
    fair, _ = plrank_grad_hess(
        scores, y, ptr, fairness=GROUP, fairness_weight=5.0, item_groups=groups, **kw
    )
    shift = fair - relevance  # loss gradients: negative raises a margin
    assert shift[[3, 4]].max() < 0 < shift[[0, 1]].min()


def _ranker(**options):
    from gbdt_plrank import PLRankRanker

    common = {
        "K": 5,
        "N": 10,
        "n_estimators": 8,
        "learning_rate": 0.3,
        "max_depth": 3,
        "num_leaves": 8,
        "random_state": 0,
        "n_jobs": 1,
        "params": {"min_data_in_leaf": 5},
    }
    return PLRankRanker(**{**common, **options})


@pytest.mark.parametrize("backend", ["xgboost", "lightgbm"])
def test_ranker_takes_item_groups_for_training_and_eval_sets(grouped, backend):
    """The item groups follow the rows when the ranker sorts them by query: whole queries
    shuffled give the model of sorted rows, and the eval set's history is the group-fair policy
    value."""
    train, g_train, vali, g_vali = grouped
    options = {"backend": backend, "fairness": GROUP, "fairness_weight": 0.5}
    if backend == "xgboost":
        options["params"] = {}
    fitted = _ranker(**options).fit(
        train.X,
        train.y,
        group=train.qid,
        item_groups=g_train,
        eval_set=[(vali.X, vali.y, vali.qid, g_vali)],
        early_stopping_rounds=3,
    )
    queries = np.random.default_rng(5).permutation(np.unique(train.qid))
    order = np.concatenate([np.flatnonzero(train.qid == q) for q in queries])  # whole queries
    shuffled = _ranker(**options).fit(
        train.X[order],
        train.y[order],
        group=train.qid[order],
        item_groups=g_train[order],
        eval_set=[(vali.X, vali.y, vali.qid, g_vali)],
        early_stopping_rounds=3,
    )
    np.testing.assert_array_equal(fitted.predict(vali.X), shuffled.predict(vali.X))
    history = fitted.evals_result_["valid_0"]["expected_ndcg@5-0.5*group_disparity"]
    value = PolicyEvaluator(
        RankingMetric("ndcg", 5, "exp"),
        FairnessSpec(GROUP, 0.5),
        replace(vali, item_groups=g_vali),
        seed=seeds_from(0, 2)[0],
        n_jobs=1,
    )
    assert max(history) == pytest.approx(
        float(value.per_query(fitted.predict(vali.X)).mean()), abs=1e-6
    )


@pytest.mark.parametrize("backend", ["xgboost", "lightgbm"])
def test_the_rankers_item_groups_are_checked_once(grouped, monkeypatch, backend):
    """Each set's item groups are checked where the ranker reads the set; the objective keeps
    them as they are."""
    from gbdt_plrank._training import fairness_spec as _fairness

    checked = []
    check = _fairness.check_item_groups
    monkeypatch.setattr(
        _fairness,
        "check_item_groups",
        lambda ids, *a, **k: checked.append(len(ids)) or check(ids, *a, **k),
    )
    train, g_train, vali, g_vali = grouped
    _ranker(backend=backend, fairness=GROUP, n_estimators=2).fit(
        train.X,
        train.y,
        group=train.qid,
        item_groups=g_train,
        eval_set=[(vali.X, vali.y, vali.qid, g_vali)],
    )
    assert checked == [g_train.size, g_vali.size]


def test_ranker_names_missing_and_unwanted_item_groups(grouped):
    train, g_train, vali, g_vali = grouped
    fair = _ranker(fairness=GROUP, params={})
    with pytest.raises(ValueError, match="fairness='group-disparity' needs item_groups"):
        fair.fit(train.X, train.y, group=train.qid)
    with pytest.raises(ValueError, match=r"needs eval_set\[0\] item_groups"):
        fair.fit(
            train.X,
            train.y,
            group=train.qid,
            item_groups=g_train,
            eval_set=[(vali.X, vali.y, vali.qid)],
        )
    with pytest.raises(
        ValueError,
        match=r"eval_set\[0\] item_groups must hold one group id per "
        rf"document \({g_vali.size}\), but holds 3",
    ):
        fair.fit(
            train.X,
            train.y,
            group=train.qid,
            item_groups=g_train,
            eval_set=[(vali.X, vali.y, vali.qid, g_vali[:3])],
        )
    with pytest.raises(
        ValueError,
        match="item_groups are used only by fairness in "
        r"\('group-disparity',\), but fairness='expected-exposure' is given",
    ):
        _ranker(fairness="expected-exposure", params={}).fit(
            train.X, train.y, group=train.qid, item_groups=g_train
        )
    with pytest.raises(
        ValueError,
        match=r"eval_set\[0\] must be a tuple \(X, y, group\) or "
        r"\(X, y, group, item_groups\), but a tuple of length 5",
    ):
        fair.fit(
            train.X,
            train.y,
            group=train.qid,
            item_groups=g_train,
            eval_set=[(vali.X, vali.y, vali.qid, g_vali, None)],
        )
