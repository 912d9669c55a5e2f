"""deep_weight: the weights on the gradient of the documents a policy places deep."""

from __future__ import annotations

from itertools import pairwise

import lightgbm as lgb
import numpy as np
import pytest
import xgboost as xgb

from gbdt_plrank import PLRankRanker, plrank_objective
from gbdt_plrank._groups import boundaries
from gbdt_plrank._training.deep_weights import deep_weights, placement_weights
from gbdt_plrank._training.options import AUTO_DEEP_WEIGHT, PLRankOptions
from gbdt_plrank.nn import PLRankMLPRanker


def _reference(margins, grad, ptr, K, cap):
    """The weights query by query, in plain Python: softmax, clip, the total |g| kept."""
    out = np.empty_like(margins)
    for a, b in pairwise(ptr):
        if a == b:
            continue
        e = [np.exp(m - max(margins[a:b])) for m in margins[a:b]]
        rho = [v / sum(e) for v in e]
        places = min(K, b - a)
        w = [1.0 / min(max(places * r, 1.0 / cap), 1.0) for r in rho]
        size = [abs(g) for g in grad[a:b]]
        weighted = sum(wi * si for wi, si in zip(w, size, strict=True))
        scale = sum(size) / weighted if weighted > 0 else 1.0
        out[a:b] = [wi * scale for wi in w]
    return out


@pytest.fixture
def queries():
    rng = np.random.default_rng(5)
    sizes = np.array([1, 7, 0, 40, 12, 3])
    ptr = boundaries(sizes)
    margins = rng.normal(scale=3.0, size=ptr[-1])
    grad = rng.normal(size=ptr[-1])
    grad[ptr[4] : ptr[5]] = 0.0  # a query without gradient keeps weight 1
    return margins, grad, ptr


@pytest.mark.parametrize("cap", [1.0, 4.0, 16.0])
def test_weights_match_the_plain_reference(queries, cap):
    margins, grad, ptr = queries
    got = deep_weights(margins, grad, ptr, K=5, cap=cap)
    np.testing.assert_allclose(got, _reference(margins, grad, ptr, 5, cap), rtol=1e-12)
    if cap == 1.0:
        np.testing.assert_allclose(got, 1.0)


def test_weights_refuse_margins_that_do_not_match_the_queries(queries):
    """The kernels do not check their bounds: a margin too few or too many is refused first."""
    margins, grad, ptr = queries
    with pytest.raises(ValueError, match=r"one value per row of the 6 queries \(63 rows\)"):
        deep_weights(margins[:-1], grad[:-1], ptr, K=5, cap=4.0)
    with pytest.raises(ValueError, match=r"grad must have the shape of margins \(63,\)"):
        deep_weights(margins, grad[:-1], ptr, K=5, cap=4.0)
    with pytest.raises(ValueError, match=r"but its shape is \(64,\)"):
        placement_weights(np.append(margins, 0.0), ptr, K=5, cap=4.0)


def test_weights_keep_each_querys_total_and_favour_the_deep_documents(queries):
    margins, grad, ptr = queries
    w = deep_weights(margins, grad, ptr, K=5, cap=4.0)
    totals = np.add.reduceat(np.abs(grad), ptr[:-1][np.diff(ptr) > 0])
    kept = np.add.reduceat(w * np.abs(grad), ptr[:-1][np.diff(ptr) > 0])
    np.testing.assert_allclose(kept, totals, rtol=1e-12)
    np.testing.assert_array_equal(
        w[ptr[4] : ptr[5]], placement_weights(margins, ptr, K=5, cap=4.0)[ptr[4] : ptr[5]]
    )
    a, b = ptr[3], ptr[4]  # 40 documents: weights fall as the margin rises, within [1, 4] x scale
    raw = placement_weights(margins, ptr, K=5, cap=4.0)[a:b]
    order = np.argsort(margins[a:b])
    assert np.all(np.diff(raw[order]) <= 0) and raw.min() >= 1.0 and raw.max() <= 4.0
    assert raw.max() == 4.0 and raw.min() == 1.0


def test_objective_weights_its_estimate_inside_both_boosters(data):
    """The objective's gradient is the deep weights (at the training cut-off, of the round's
    margins) times PL-Rank's estimate; the Hessian is the estimate's; 1.0 is PL-Rank's own."""
    X, y, qid, sizes = data
    ptr = boundaries(sizes)
    dtrain = xgb.DMatrix(X, y, qid=qid)
    margins = np.random.default_rng(1).normal(size=len(y)).astype(np.float32)
    zero = np.zeros(len(y), dtype=np.float32)
    rounds = []
    for a in (1.0, 4.0, 1.0):
        obj = plrank_objective(K=5, N=20, seed=3, deep_weight=a)
        obj(zero, dtrain)  # round 0 from the base score, as a training starts
        rounds.append(obj(margins, dtrain))
    plain, weighted, same = rounds
    w = deep_weights(margins.astype(np.float64), plain[0], ptr, K=10, cap=4.0)
    np.testing.assert_allclose(weighted[0], w * plain[0], rtol=1e-12)
    np.testing.assert_array_equal(weighted[1], plain[1])
    assert not np.allclose(weighted[0], plain[0])
    np.testing.assert_array_equal(same[0], plain[0])

    params = {"tree_method": "hist", "base_score": 0.0, "max_depth": 3, "eta": 0.3}
    models = [
        xgb.train(
            params, dtrain, 4, obj=plrank_objective(K=5, N=20, seed=7, deep_weight=a)
        ).predict(dtrain)
        for a in (1.0, 4.0)
    ]
    assert np.all(np.isfinite(models[1])) and not np.allclose(models[0], models[1])
    ltrain = lgb.Dataset(X, y, group=sizes)
    lgb_models = [
        lgb.train(
            {
                "objective": plrank_objective(K=5, N=20, seed=7, deep_weight=a),
                "verbose": -1,
                "min_data_in_leaf": 5,
            },
            ltrain,
            4,
        ).predict(X)
        for a in (1.0, 4.0)
    ]
    assert np.all(np.isfinite(lgb_models[1])) and not np.allclose(lgb_models[0], lgb_models[1])


def test_auto_is_four_for_the_ranker_without_fairness_and_one_else(data):
    """``"auto"``: 4 without fairness, 1 with it and for a network; the ranker's default, while
    the objective's is PL-Rank's own gradient."""
    assert PLRankOptions.checked(deep_weight="auto").training_deep_weight == AUTO_DEEP_WEIGHT == 4
    fair = PLRankOptions.checked(deep_weight="auto", fairness="disparity")
    assert fair.training_deep_weight == 1.0
    assert PLRankOptions.checked(deep_weight="auto").for_network().deep_weight == 1.0
    assert PLRankOptions.checked(deep_weight=2.5).resolved()["deep_weight"] == 2.5
    assert PLRankRanker().get_params()["deep_weight"] == "auto"
    assert plrank_objective().deep_weight == 1.0
    assert plrank_objective(deep_weight="auto").deep_weight == 4.0
    X, y, qid, _ = data
    ranker = PLRankRanker(n_estimators=2, random_state=0).fit(X, y, group=qid)
    assert ranker._options().resolved()["deep_weight"] == 4.0


def test_ranker_passes_deep_weight_to_its_objective(data):
    X, y, qid, _ = data
    fits = [
        PLRankRanker(deep_weight=a, n_estimators=4, random_state=0).fit(X, y, group=qid)
        for a in (1.0, 4.0)
    ]
    assert fits[1].get_params()["deep_weight"] == 4.0
    assert not np.allclose(fits[0].predict(X), fits[1].predict(X))


@pytest.mark.parametrize("bad", [0.5, 0.0, float("nan"), float("inf")])
def test_deep_weight_below_one_or_not_finite_is_refused(bad):
    with pytest.raises(ValueError, match=r'deep_weight must be "auto" or a finite number >= 1'):
        PLRankOptions.checked(deep_weight=bad)


def test_deep_weight_is_refused_for_a_network():
    with pytest.raises(ValueError, match=r"deep_weight .* boosted trees only.* 2.0 is given"):
        PLRankOptions.checked(deep_weight=2.0).for_network()
    assert PLRankMLPRanker().get_params().get("deep_weight") is None
