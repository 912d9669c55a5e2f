"""Tests of gbdt_plrank.metrics: hand-computed tables, a slow reference, invariances, bad input,
and agreement with XGBoost, LightGBM and scikit-learn (ties included where they allow it)."""

from __future__ import annotations

import math
import time
from collections import defaultdict

import numpy as np
import pytest

from gbdt_plrank import metrics
from gbdt_plrank._kernels import metrics as _metric_kernels
from gbdt_plrank.metrics import (
    average_relevance_position,
    dataset_ndcg,
    dcg,
    mrr,
    ndcg,
    precision_at_k,
    recall_at_k,
)

D2 = 1.0 / math.log2(3.0)  # discount of rank 2
D3 = 0.5  # rank 3
D4 = 1.0 / math.log2(5.0)  # rank 4

# --------------------------------------------------------------------------------------------
# Hand-computed tables
# --------------------------------------------------------------------------------------------
# Query A: labels [3, 2, 0, 1], scores rank the documents 0, 2, 3, 1 (labels 3, 0, 1, 2).
A_Y = [3.0, 2.0, 0.0, 1.0]
A_S = [0.4, 0.1, 0.3, 0.2]
# Query T (all tied): ranked in input order, labels 0, 1, 2.
T_Y = [0.0, 1.0, 2.0]
T_S = [0.5, 0.5, 0.5]
# Query P (partial tie): scores [1, 2, 2, 0] rank documents 1, 2, 0, 3 (labels 0, 2, 1, 0).
P_Y = [1.0, 0.0, 2.0, 0.0]
P_S = [1.0, 2.0, 2.0, 0.0]
# Query Z: no relevant documents.
Z_Y = [0.0, 0.0, 0.0]
Z_S = [0.3, 0.2, 0.1]

TABLE = [
    # (id, function, kwargs, labels, scores, expected)
    ("dcg A k=1", dcg, {"k": 1}, A_Y, A_S, 7.0),
    ("dcg A k=2", dcg, {"k": 2}, A_Y, A_S, 7.0),
    ("dcg A k=4", dcg, {"k": 4}, A_Y, A_S, 7.0 + 1 * D3 + 3 * D4),
    ("dcg A k>D", dcg, {"k": 10}, A_Y, A_S, 7.0 + 1 * D3 + 3 * D4),
    ("dcg A k=None", dcg, {"k": None}, A_Y, A_S, 7.0 + 1 * D3 + 3 * D4),
    ("dcg A linear", dcg, {"k": 4, "gain": "linear"}, A_Y, A_S, 3.0 + 1 * D3 + 2 * D4),
    ("ndcg A k=2", ndcg, {"k": 2}, A_Y, A_S, 7.0 / (7.0 + 3 * D2)),
    ("ndcg A k>D", ndcg, {"k": 10}, A_Y, A_S, (7.0 + D3 + 3 * D4) / (7.0 + 3 * D2 + D3)),
    (
        "ndcg A linear",
        ndcg,
        {"k": 3, "gain": "linear"},
        A_Y,
        A_S,
        (3.0 + 0 * D2 + 1 * D3) / (3.0 + 2 * D2 + 1 * D3),
    ),
    ("ndcg ties k=1", ndcg, {"k": 1}, T_Y, T_S, 0.0),
    ("ndcg ties k=3", ndcg, {"k": 3}, T_Y, T_S, (1 * D2 + 3 * D3) / (3.0 + 1 * D2)),
    ("ndcg ties reversed", ndcg, {"k": 3}, T_Y[::-1], T_S, 1.0),
    ("ndcg partial tie k=2", ndcg, {"k": 2}, P_Y, P_S, 3 * D2 / (3.0 + 1 * D2)),
    ("ndcg no relevant", ndcg, {}, Z_Y, Z_S, 1.0),
    ("ndcg no relevant empty=0", ndcg, {"empty": 0.0}, Z_Y, Z_S, 0.0),
    ("dcg no relevant", dcg, {}, Z_Y, Z_S, 0.0),
    ("dataset_ndcg one query", dataset_ndcg, {"k": 2}, A_Y, A_S, 7.0 / (7.0 + 3 * D2)),
    ("dataset_ndcg no relevant", dataset_ndcg, {}, Z_Y, Z_S, 1.0),
    ("P@1 A", precision_at_k, {"k": 1}, A_Y, A_S, 1.0),
    ("P@2 A", precision_at_k, {"k": 2}, A_Y, A_S, 0.5),
    ("P@k>D A", precision_at_k, {"k": 10}, A_Y, A_S, 0.75),
    ("P@None A", precision_at_k, {"k": None}, A_Y, A_S, 0.75),
    ("P@1 ties", precision_at_k, {"k": 1}, T_Y, T_S, 0.0),
    ("P@2 partial tie", precision_at_k, {"k": 2}, P_Y, P_S, 0.5),
    ("P@2 no relevant", precision_at_k, {"k": 2}, Z_Y, Z_S, 0.0),
    ("R@2 A", recall_at_k, {"k": 2}, A_Y, A_S, 1.0 / 3.0),
    ("R@3 A", recall_at_k, {"k": 3}, A_Y, A_S, 2.0 / 3.0),
    ("R@k>D A", recall_at_k, {"k": 10}, A_Y, A_S, 1.0),
    ("R@2 ties", recall_at_k, {"k": 2}, T_Y, T_S, 0.5),
    ("R no relevant", recall_at_k, {}, Z_Y, Z_S, 1.0),
    ("R no relevant empty=0", recall_at_k, {"empty": 0.0}, Z_Y, Z_S, 0.0),
    ("RR A", mrr, {}, A_Y, A_S, 1.0),
    ("RR ties", mrr, {}, T_Y, T_S, 0.5),
    ("RR ties k=1", mrr, {"k": 1}, T_Y, T_S, 0.0),
    ("RR partial tie", mrr, {}, P_Y, P_S, 0.5),
    ("RR no relevant", mrr, {}, Z_Y, Z_S, 1.0),
    ("RR no relevant empty=0", mrr, {"empty": 0.0}, Z_Y, Z_S, 0.0),
    ("ARP A", average_relevance_position, {}, A_Y, A_S, (3 * 1 + 1 * 3 + 2 * 4) / 6.0),
    ("ARP ties", average_relevance_position, {}, T_Y, T_S, (1 * 2 + 2 * 3) / 3.0),
    ("ARP partial tie", average_relevance_position, {}, P_Y, P_S, (2 * 2 + 1 * 3) / 3.0),
    ("ARP no relevant", average_relevance_position, {}, Z_Y, Z_S, math.nan),
]


@pytest.mark.parametrize(
    ("func", "kwargs", "y", "s", "expected"), [c[1:] for c in TABLE], ids=[c[0] for c in TABLE]
)
def test_hand_computed_single_query(func, kwargs, y, s, expected):
    got = func(y, s, **kwargs)
    assert isinstance(got, float)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
    # group=None, one id per row and one group size all mean "one query"
    np.testing.assert_allclose(func(y, s, [9] * len(y), **kwargs), expected, atol=1e-12)
    np.testing.assert_allclose(func(y, s, [len(y)], **kwargs), expected, atol=1e-12)


def _two_queries():
    """Queries A (id 7) and Z (id 3) interleaved, and the same rows grouped A-first."""
    y = np.array(A_Y + Z_Y)
    s = np.array(A_S + Z_S)
    qid = np.array([7, 7, 7, 7, 3, 3, 3])
    perm = np.array([4, 0, 5, 1, 2, 6, 3])  # keeps the order of the rows within each query
    return y, s, qid, perm


def test_several_queries_mean_per_query_and_dataset_normalisation():
    y, s, qid, _ = _two_queries()
    ndcg_a = 7.0 / (7.0 + 3 * D2)
    # per-query values come in the order of np.unique(ids): Z (id 3) first
    np.testing.assert_allclose(ndcg(y, s, qid, k=2, per_query=True), [1.0, ndcg_a], atol=1e-12)
    np.testing.assert_allclose(ndcg(y, s, qid, k=2), (1.0 + ndcg_a) / 2, atol=1e-12)
    np.testing.assert_allclose(ndcg(y, s, qid, k=2, empty=0.0), ndcg_a / 2, atol=1e-12)
    np.testing.assert_allclose(ndcg(y, s, qid, k=2, empty=math.nan), ndcg_a, atol=1e-12)
    per_q = ndcg(y, s, qid, k=2, empty=math.nan, per_query=True)
    assert math.isnan(per_q[0])
    # dataset normalisation: sum DCG / sum IDCG = 7 / (7 + 3 D2 + 0)
    np.testing.assert_allclose(dataset_ndcg(y, s, qid, k=2), ndcg_a / 1.0, atol=1e-12)
    mean_idcg = (7.0 + 3 * D2) / 2
    np.testing.assert_allclose(
        dataset_ndcg(y, s, qid, k=2, per_query=True), [0.0, 7.0 / mean_idcg], atol=1e-12
    )
    np.testing.assert_allclose(dcg(y, s, qid, k=2, per_query=True), [0.0, 7.0], atol=1e-12)
    np.testing.assert_allclose(
        average_relevance_position(y, s, qid, per_query=True), [math.nan, 14.0 / 6.0]
    )
    np.testing.assert_allclose(average_relevance_position(y, s, qid), 14.0 / 6.0)


@pytest.mark.parametrize(
    "func", [dcg, ndcg, dataset_ndcg, precision_at_k, recall_at_k, mrr, average_relevance_position]
)
def test_unsorted_ids_sizes_and_ids_agree(func):
    y, s, qid, perm = _two_queries()
    grouped = func(y, s, [4, 3], per_query=True)  # A then Z, by sizes
    by_ids = func(y, s, qid, per_query=True)  # Z (id 3) then A (id 7)
    shuffled = func(y[perm], s[perm], qid[perm], per_query=True)
    np.testing.assert_allclose(by_ids, grouped[::-1], atol=1e-12)
    np.testing.assert_allclose(shuffled, by_ids, atol=1e-12)
    np.testing.assert_allclose(func(y[perm], s[perm], qid[perm]), func(y, s, [4, 3]), atol=1e-12)


def test_ties_follow_the_input_order_within_a_query_when_rows_are_interleaved():
    # query 1 holds labels 0, 1, 2 with tied scores, interleaved with query 2
    y = np.array([0.0, 5.0, 1.0, 0.0, 2.0])
    s = np.array([1.0, 3.0, 1.0, 2.0, 1.0])
    qid = np.array([1, 2, 1, 2, 1])
    expected = (1 * D2 + 3 * D3) / (3.0 + 1 * D2)
    np.testing.assert_allclose(ndcg(y, s, qid, k=3, per_query=True), [expected, 1.0], atol=1e-12)


# --------------------------------------------------------------------------------------------
# A slow, obvious reference (Python lists, Python's stable sort) on random data with ties
# --------------------------------------------------------------------------------------------
def _reference(name, y, s, qid, *, k, gain="exp", empty=1.0):
    rows = defaultdict(list)
    for i, q in enumerate(qid):
        rows[q].append(i)
    out = []
    for q in sorted(rows):
        labels = [y[i] for i in rows[q]]
        scores = [s[i] for i in rows[q]]
        D = len(labels)
        ranked = [labels[d] for d in sorted(range(D), key=lambda d: -scores[d])]
        cut = D if k is None else min(k, D)
        g = (lambda v: 2.0**v - 1.0) if gain == "exp" else (lambda v: v)
        rel = [1.0 if v > 0 else 0.0 for v in ranked]
        if name in ("dcg", "ndcg", "dataset_ndcg"):
            value = sum(g(v) / math.log2(r + 2) for r, v in enumerate(ranked[:cut]))
            ideal = sum(
                g(v) / math.log2(r + 2) for r, v in enumerate(sorted(labels, reverse=True)[:cut])
            )
            out.append((value, ideal) if name == "dataset_ndcg" else value)
            if name == "ndcg":
                out[-1] = value / ideal if ideal > 0 else empty
        elif name == "precision":
            out.append(sum(rel[:cut]) / max(cut, 1))
        elif name == "recall":
            out.append(sum(rel[:cut]) / sum(rel) if sum(rel) else empty)
        elif name == "mrr":
            first = next((r for r in range(cut) if rel[r]), None)
            out.append(empty if not sum(rel) else (0.0 if first is None else 1.0 / (first + 1)))
        elif name == "arp":
            total = sum(ranked)
            out.append(
                sum((r + 1) * v for r, v in enumerate(ranked)) / total if total else math.nan
            )
    if name == "dataset_ndcg":
        mean_ideal = sum(i for _, i in out) / len(out)
        return [v / mean_ideal if mean_ideal else 1.0 for v, _ in out]
    return out


REFERENCE_CASES = [
    ("dcg", dcg, {}),
    ("ndcg", ndcg, {}),
    ("ndcg", ndcg, {"gain": "linear"}),
    ("ndcg", ndcg, {"empty": 0.0}),
    ("dataset_ndcg", dataset_ndcg, {}),
    ("precision", precision_at_k, {}),
    ("recall", recall_at_k, {}),
    ("recall", recall_at_k, {"empty": 0.0}),
    ("mrr", mrr, {}),
    ("mrr", mrr, {"empty": 0.0}),
]
REFERENCE_PARAMS = [(*case, k) for case in REFERENCE_CASES for k in (1, 3, 7, None)]
REFERENCE_PARAMS.append(("arp", average_relevance_position, {}, None))  # ARP has no cut-off


@pytest.mark.parametrize(("name", "func", "kwargs", "k"), REFERENCE_PARAMS)
def test_matches_slow_reference_on_random_tied_data(name, func, kwargs, k):
    rng = np.random.default_rng(20240607)
    n = 300
    qid = rng.integers(0, 25, n)  # unsorted ids, queries of varied length
    y = rng.integers(0, 4, n).astype(float) * (rng.random(n) < 0.6)
    y[qid == 3] = 0.0  # one query without relevant documents
    s = rng.integers(0, 4, n).astype(np.float32)  # many ties
    if name != "arp":
        kwargs = {**kwargs, "k": k}
    expected = _reference(name, y, s, qid, **{"k": k, **kwargs})
    got = func(y, s, qid, per_query=True, **kwargs)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(func(y, s, qid, **kwargs), np.nanmean(expected), rtol=1e-12)


def test_rank_order_kernel_is_a_stable_descending_sort():
    rng = np.random.default_rng(3)
    s = rng.integers(0, 5, 200).astype(np.float64)
    got = _metric_kernels.rank_order(s)
    expected = sorted(range(200), key=lambda d: -s[d])
    np.testing.assert_array_equal(got, expected)


# --------------------------------------------------------------------------------------------
# Invariances
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "func", [dcg, ndcg, dataset_ndcg, precision_at_k, recall_at_k, mrr, average_relevance_position]
)
def test_invariances(func):
    rng = np.random.default_rng(11)
    n = 200
    qid = np.repeat(np.arange(10), 20)
    y = rng.integers(0, 3, n).astype(float)
    s = rng.integers(0, 6, n).astype(float)
    base = func(y, s, qid, per_query=True)
    # a strictly increasing transform of the scores keeps the ranking, ties included
    np.testing.assert_allclose(func(y, 3.0 * s - 7.0, qid, per_query=True), base, atol=1e-12)
    np.testing.assert_allclose(func(y, np.exp(s), qid, per_query=True), base, atol=1e-12)
    # shuffling whole queries changes nothing
    order = np.concatenate([np.flatnonzero(qid == q) for q in rng.permutation(10)])
    np.testing.assert_allclose(func(y[order], s[order], qid[order], per_query=True), base)
    # the mean of the per-query values is the scalar; int, float32 and list inputs agree
    np.testing.assert_allclose(func(y, s, qid), np.nanmean(base))
    np.testing.assert_allclose(
        func(y.astype(int).tolist(), s.astype(np.float32), list(qid)), np.nanmean(base)
    )


def test_normalised_metrics_lie_in_unit_interval_and_ideal_scores_one():
    rng = np.random.default_rng(5)
    n = 500
    qid = np.sort(rng.integers(0, 40, n))
    y = rng.integers(0, 5, n).astype(float)
    s = rng.normal(size=n)
    for func in (ndcg, precision_at_k, recall_at_k, mrr):
        v = func(y, s, qid, per_query=True)
        assert np.all((v >= 0) & (v <= 1.0 + 1e-12)), func.__name__
    # dataset-normalised values of single queries may exceed 1, their mean may not
    assert 0.0 <= dataset_ndcg(y, s, qid) <= 1.0
    assert dataset_ndcg(y, s, qid, per_query=True).max() > 1.0
    for k in (1, 5, None):
        assert ndcg(y, y, qid, k=k) == pytest.approx(1.0, abs=1e-12)
        assert dataset_ndcg(y, y, qid, k=k) == pytest.approx(1.0, abs=1e-12)
        assert mrr(y, y, qid, k=k) == pytest.approx(1.0, abs=1e-12)


def test_public_names():
    assert set(metrics.__all__) >= {
        "ndcg",
        "dcg",
        "dataset_ndcg",
        "precision_at_k",
        "recall_at_k",
        "mrr",
        "average_relevance_position",
    }
    for name in metrics.__all__:
        assert hasattr(metrics, name)


# --------------------------------------------------------------------------------------------
# Bad input: a ValueError naming the value and the rule
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (
            {"y_true": [1, 0, 2], "y_score": [0.1, 0.2]},
            r"lengths must agree.*y_true has 3.*y_score has 2",
        ),
        ({"y_score": [0.1, np.nan, 0.3]}, r"y_score must be finite.*y_score\[1\] is nan"),
        ({"y_score": [0.1, np.inf, 0.3]}, r"y_score must be finite.*y_score\[1\] is inf"),
        ({"y_true": [1, np.nan, 0]}, r"y_true must be finite.*y_true\[1\] is nan"),
        ({"y_true": [1, -1, 0]}, r"y_true must be >= 0, but y_true\[1\] is -1\.0"),
        ({"y_true": [1, 32, 0]}, r"<= 31 with the exponential gain.*y_true\[1\] is 32\.0.*linear"),
        ({"k": 0}, r"k must be an integer >= 1, but 0 is given"),
        ({"k": 2.5}, r"k must be an integer >= 1, but 2\.5 is given"),
        ({"k": True}, r"k must be an integer >= 1, but True is given"),
        (
            {"group": [1, 1]},
            r"group must be per-row query ids \(length 3\).*summing to 3.*length 2",
        ),
        ({"group": [2, 2]}, r"summing to 3, but has length 2 and sum 4"),
        ({"group": [[1, 2, 3]]}, r"group must be one-dimensional"),
        ({"y_score": [[0.1, 0.2, 0.3]]}, r"y_score must be one-dimensional"),
        ({"gain": "log"}, r"gain must be one of 'exp', 'linear', but 'log' is given"),
        ({"empty": 2.0}, r"empty must be a number in \[0, 1\] or nan, but 2\.0 is given"),
        ({"empty": "zero"}, r"empty must be a number in \[0, 1\] or nan, but 'zero' is given"),
    ],
)
def test_bad_input_is_refused_with_a_clear_message(kwargs, match):
    args = {"y_true": [1, 0, 2], "y_score": [0.1, 0.2, 0.3], **kwargs}
    with pytest.raises(ValueError, match=match):
        ndcg(args.pop("y_true"), args.pop("y_score"), **args)


def test_large_labels_are_fine_with_the_linear_gain_and_in_other_metrics():
    y, s = [40.0, 0.0, 7.0], [0.1, 0.3, 0.2]
    assert ndcg(y, s, gain="linear", k=3) == pytest.approx(
        (7 * D2 + 40 * D3) / (40 + 7 * D2), abs=1e-12
    )
    assert precision_at_k(y, s, k=2) == 0.5
    assert mrr(y, s) == 0.5
    with pytest.raises(ValueError, match="k must be"):
        mrr(y, s, k=-1)
    with pytest.raises(ValueError, match="y_true"):
        average_relevance_position([1, -2, 0], s)


# --------------------------------------------------------------------------------------------
# Agreement with the boosters and scikit-learn
# --------------------------------------------------------------------------------------------
KS = (1, 3, 5, 10, 1000)


@pytest.fixture(scope="module")
def mq2008():
    from gbdt_plrank.datasets import load_dataset

    ds = load_dataset("mq2008")
    return ds.vali, ds.test  # train on the small vali split, evaluate on test


XGB_MODELS = {
    "constant": {"learning_rate": 0.0, "max_depth": 1},  # every prediction equal
    "stumps": {"max_depth": 1},  # one stump: two distinct values
    "depth3": {"max_depth": 3},
}


# XGBoost's names without "@k" ("ndcg", "pre") are not whole-list metrics: they cut at 32, the
# default of the metric's own LambdaRankParam (pair method "topk", 32 pairs), whatever the
# objective's lambdarank_* parameters (checked on xgboost 3.2).
XGB_DEFAULT_TOPK = 32


def _xgb_eval(bst, dmat):
    return {
        name.removeprefix("eval-"): float(value)
        for name, value in (item.split(":") for item in bst.eval(dmat).split("\t")[1:])
    }


def _xgb_k(name):
    return int(name.split("@")[1].rstrip("-")) if "@" in name else XGB_DEFAULT_TOPK


# ties: "constant" (all equal) and "stumps" (two values); "depth3": few ties
XGB_CASES = [("constant", 1, True), ("stumps", 1, True), ("stumps", 1, False), ("depth3", 3, True)]


@pytest.mark.parametrize(("model", "rounds", "exp_gain"), XGB_CASES)
def test_agrees_with_xgboost(mq2008, model, rounds, exp_gain):
    xgb = pytest.importorskip("xgboost")
    train, test = mq2008
    names = [f"ndcg@{k}" for k in KS] + [f"ndcg@{k}-" for k in KS] + ["ndcg", "ndcg-"]
    params = {
        "objective": "rank:ndcg",
        "ndcg_exp_gain": exp_gain,
        "eval_metric": names,
        "nthread": 2,
        "seed": 0,
        **XGB_MODELS[model],
    }
    bst = xgb.train(params, xgb.DMatrix(train.X, train.y, qid=train.qid), rounds)
    dtest = xgb.DMatrix(test.X, test.y, qid=test.qid)
    reported = _xgb_eval(bst, dtest)
    pred = bst.predict(dtest)
    assert pred.dtype == np.float32
    if model != "depth3":
        assert np.unique(pred).size <= 2  # the tie cases really tie
    gain = "exp" if exp_gain else "linear"
    for name in names:
        empty = 0.0 if name.endswith("-") else 1.0
        got = ndcg(test.y, pred, test.qid, k=_xgb_k(name), gain=gain, empty=empty)
        assert got == pytest.approx(reported[name], abs=1e-6), name
    # group sizes (LightGBM style) give the same values as the ids
    assert ndcg(test.y, pred, test.group_sizes, k=5, gain=gain) == pytest.approx(
        reported["ndcg@5"], abs=1e-6
    )
    if model == "depth3":  # queries longer than 32 make k=None differ from XGBoost's "ndcg"
        assert np.diff(test.group_ptr).max() > XGB_DEFAULT_TOPK
        assert ndcg(test.y, pred, test.qid, k=None, gain=gain) != pytest.approx(
            reported["ndcg"], abs=1e-6
        )


def test_precision_agrees_with_xgboost_pre(mq2008):
    xgb = pytest.importorskip("xgboost")
    train, test = mq2008
    yb = (test.y > 0).astype(float)  # XGBoost's pre@k takes binary labels only
    names = [f"pre@{k}" for k in KS] + ["pre"]
    bst = xgb.train(
        {"objective": "rank:ndcg", "max_depth": 1, "nthread": 2, "eval_metric": names},
        xgb.DMatrix(train.X, train.y, qid=train.qid),
        1,
    )
    dtest = xgb.DMatrix(test.X, yb, qid=test.qid)
    reported = _xgb_eval(bst, dtest)
    pred = bst.predict(dtest)
    assert np.unique(pred).size <= 2
    for name in names:
        got = precision_at_k(test.y, pred, test.qid, k=_xgb_k(name))
        assert got == pytest.approx(reported[name], abs=1e-6), name


LGB_MODELS = {
    "constant": {"min_data_in_leaf": 100000},  # no split is allowed: all predictions equal
    "stump": {"num_leaves": 2},
    "leaves7": {"num_leaves": 7},
}


LGB_CASES = [("constant", 1, True), ("stump", 1, True), ("stump", 1, False), ("leaves7", 3, True)]


@pytest.mark.parametrize(("model", "rounds", "exp_gain"), LGB_CASES)
def test_agrees_with_lightgbm(mq2008, model, rounds, exp_gain):
    lgb = pytest.importorskip("lightgbm")
    train, test = mq2008
    params = {
        "objective": "lambdarank",
        "metric": "ndcg",
        "eval_at": list(KS),
        "verbose": -1,
        "num_threads": 2,
        "seed": 0,
        **LGB_MODELS[model],
    }
    if not exp_gain:
        params["label_gain"] = [0.0, 1.0, 2.0]
    dtrain = lgb.Dataset(train.X, train.y, group=train.group_sizes, params={"verbose": -1})
    dtest = lgb.Dataset(test.X, test.y, group=test.group_sizes, reference=dtrain)
    record: dict = {}
    booster = lgb.train(
        params,
        dtrain,
        rounds,
        valid_sets=[dtest],
        valid_names=["test"],
        callbacks=[lgb.record_evaluation(record)],
    )
    pred = booster.predict(test.X)  # float64, the scores LightGBM evaluates
    if model != "leaves7":
        assert np.unique(pred).size <= 2  # the tie cases really tie
    gain = "exp" if exp_gain else "linear"
    for k in KS:
        reported = record["test"][f"ndcg@{k}"][-1]
        assert ndcg(test.y, pred, test.group_sizes, k=k, gain=gain) == pytest.approx(
            reported, abs=1e-6
        )
        assert ndcg(test.y, pred, test.qid, k=k, gain=gain) == pytest.approx(reported, abs=1e-6)


@pytest.mark.parametrize("k", [1, 3, 10, None])
@pytest.mark.parametrize("gain", ["linear", "exp"])
def test_agrees_with_sklearn_ndcg_score_when_empty_scores_zero(k, gain):
    from sklearn.metrics import ndcg_score

    rng = np.random.default_rng(7)
    G, D = 30, 12
    y = rng.integers(0, 4, (G, D)).astype(float) * (rng.random((G, D)) < 0.5)
    y[:3] = 0.0  # queries without relevant documents: sklearn scores them 0
    s = rng.normal(size=(G, D))  # no ties: sklearn averages tied documents instead
    sk_gains = y if gain == "linear" else 2.0**y - 1.0  # sklearn's gain is the label itself
    expected = ndcg_score(sk_gains, s, k=k)
    qid = np.repeat(np.arange(G), D)
    got = ndcg(y.ravel(), s.ravel(), qid, k=k, gain=gain, empty=0.0)
    assert got == pytest.approx(expected, abs=1e-12)
    per_query = ndcg(y.ravel(), s.ravel(), qid, k=k, gain=gain, empty=0.0, per_query=True)
    for q in range(3, G):
        assert per_query[q] == pytest.approx(ndcg_score(sk_gains[q : q + 1], s[q : q + 1], k=k))


def test_a_million_documents_evaluate():
    rng = np.random.default_rng(0)
    n = 1_000_000
    y = rng.integers(0, 5, n).astype(float)
    s = rng.normal(size=n).astype(np.float32)
    sizes = np.full(10_000, 100)
    ndcg(y[:1000], s[:1000], sizes[:10])  # compile (or load from the cache) first
    start = time.perf_counter()
    value = ndcg(y, s, sizes, k=10)
    elapsed = time.perf_counter() - start
    print(f"ndcg@10 of 10^6 documents in 10^4 queries: {elapsed:.3f} s")  # not asserted
    assert 0.0 < value < 1.0


def test_an_empty_query_is_refused_by_every_metric_and_the_ranker():
    """A group size of 0 is no query: one rule (a clear error) for the metrics and ``score``."""
    from gbdt_plrank import PLRankRanker, metrics

    y, s, sizes = np.array([1.0, 0.0, 2.0, 1.0]), np.array([0.3, 0.2, 0.1, 0.4]), [2, 0, 2]
    message = r"group sizes must be >= 1 .* but group 1 has size 0"
    for metric in (metrics.ndcg, metrics.mrr, metrics.precision_at_k):
        with pytest.raises(ValueError, match=message):
            metric(y, s, sizes)
    X = np.random.default_rng(0).normal(size=(4, 2))
    ranker = PLRankRanker(n_estimators=1).fit(X, y, group=[2, 2])
    with pytest.raises(ValueError, match=message):
        ranker.score(X, y, group=sizes)


def test_shared_docstring_entries_are_filled_in_once_written():
    from gbdt_plrank._util.docs import fill_entries

    group = metrics._ranking._ENTRIES["group"].splitlines()[1].strip()
    for name in metrics.__all__:
        doc = getattr(metrics, name).__doc__ or ""
        if callable(getattr(metrics, name)):
            assert ".. metric-docs::" not in doc, name
    for func in (ndcg, dcg, mrr, recall_at_k, precision_at_k, average_relevance_position):
        assert "    group : array-like or None, default None\n        " + group in func.__doc__
        assert "\n    Returns\n    -------\n    float or ndarray of shape (G,)\n" in func.__doc__
    doc = "A.\n\n    .. x-docs:: a b\n"
    assert fill_entries(doc, "x-docs", {"a": "a : int\n    One.", "b": "\nB"}) == (
        "A.\n\n    a : int\n        One.\n\n    B\n"
    )
    with pytest.raises(KeyError, match="'c' is not a shared x-docs entry"):
        fill_entries("    .. x-docs:: a c\n", "x-docs", {"a": "a"})
    with pytest.raises(ValueError, match=r"no '\.\. x-docs::' line"):
        fill_entries("nothing", "x-docs", {})
