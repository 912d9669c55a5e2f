"""Tests of gbdt_plrank.dask: query alignment, partition-independent keys, training on a cluster.

The cluster is a LocalCluster of 2 single-threaded worker processes (LightGBM's network is
global to a process, so its workers need processes of their own); it starts once per module.
"""

from __future__ import annotations

import sys
import warnings

import numpy as np
import pytest
from stopping import rounds_after_best

pytest.importorskip("distributed")
xgboost = pytest.importorskip("xgboost")
pytest.importorskip("xgboost.dask")
lightgbm = pytest.importorskip("lightgbm")

import cloudpickle  # noqa: E402
import dask.array as da  # noqa: E402
from distributed import Client, LocalCluster  # noqa: E402
from marks import RANDOM_MARGINS  # noqa: E402

from gbdt_plrank import PLRankRanker, plrank_objective  # noqa: E402
from gbdt_plrank.dask import (  # noqa: E402
    DaskPLRankRanker,
    align_queries,
    keyed_plrank_objective,
    query_keys,
)
from gbdt_plrank.dask._align import query_layout  # noqa: E402
from gbdt_plrank.dask._ranker import _queries  # noqa: E402
from gbdt_plrank.dask._workers import check_workers  # noqa: E402

# The recording objective below is defined here; workers receive it by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])


def _data(n_queries=40, seed=0, n_features=5):
    """Rows of queries with shuffled, non-contiguous ids; each query's rows in input order."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(3, 25, n_queries)
    ids = rng.permutation(n_queries) * 3 + 11
    qid = np.repeat(ids, sizes)
    X = rng.normal(size=(qid.shape[0], n_features))
    y = np.clip(np.round(X[:, 0] + rng.normal(size=qid.shape[0])), 0, 4)
    return X, y, qid


def _dask(X, y, qid, chunk):
    return (
        da.from_array(X, chunks=(chunk, X.shape[1])),
        da.from_array(y, chunks=chunk),
        da.from_array(qid, chunks=chunk),
    )


def _spread(client, *arrays):
    """``arrays`` with partition ``i`` held by the ``i mod w``-th of the ``w`` workers."""
    workers = sorted(client.scheduler_info()["workers"])
    return [
        da.concatenate(
            [
                client.persist(a.blocks[i], workers=[workers[i % len(workers)]])
                for i in range(a.numblocks[0])
            ]
        )
        for a in arrays
    ]


@pytest.fixture(scope="module")
def client():
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        Client(cluster) as c,
    ):
        yield c


# --------------------------------------------------------------------------------------------
# Alignment (dask's local scheduler, no cluster)
# --------------------------------------------------------------------------------------------
def test_align_queries_puts_each_query_in_one_partition_keeping_row_order():
    X, y, qid = _data()
    Xd, yd, qd = _dask(X, y, qid, 97)
    assert query_layout(qd).split_query() is not None
    column = np.arange(qid.shape[0])  # a further per-row column moves with the rows
    Xa, ya, qa, ca = align_queries(Xd, yd, qd, da.from_array(column, chunks=97))
    assert Xa.chunks[0] == ya.chunks[0] == qa.chunks[0] == ca.chunks[0]
    layout = query_layout(qa)
    assert layout.split_query() is None and all(layout.grouped)
    Xa, ya, qa, ca = (a.compute() for a in (Xa, ya, qa, ca))
    order = np.argsort(qid, kind="stable")  # sorted by id, input order within a query
    np.testing.assert_array_equal(qa, qid[order])
    np.testing.assert_array_equal(Xa, X[order])
    np.testing.assert_array_equal(ya, y[order])
    np.testing.assert_array_equal(ca, column[order])
    with pytest.raises(
        ValueError,
        match=r"per-row column 0 of the data must be split into the "
        r"row chunks of X",
    ):
        align_queries(Xd, yd, qd, da.from_array(column, chunks=50))


def test_align_queries_without_split_only_groups_each_partition():
    X, y, qid = _data()
    rows = np.arange(qid.shape[0])
    # two partitions holding whole queries, interleaved inside each partition
    half = int(np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]])[5])
    part = (rows >= half).astype(int)
    rng = np.random.default_rng(1)
    perm = np.concatenate([rng.permutation(rows[part == p]) for p in (0, 1)])
    X, y, qid = X[perm], y[perm], qid[perm]
    Xd, yd, qd = _dask(X, y, qid, half)
    if len(Xd.chunks[0]) != 2:
        Xd, yd, qd = (a.rechunk({0: (half, qid.shape[0] - half)}) for a in (Xd, yd, qd))
    Xa, _, qa = align_queries(Xd, yd, qd)
    assert Xa.chunks[0] == Xd.chunks[0]  # no shuffle
    q = qa.compute()
    for lo, hi in [(0, half), (half, qid.shape[0])]:
        order = np.argsort(qid[lo:hi], kind="stable")
        np.testing.assert_array_equal(q[lo:hi], qid[lo:hi][order])
        np.testing.assert_array_equal(Xa.compute()[lo:hi], X[lo:hi][order])


def test_query_keys_are_global_query_indices_whatever_the_chunks():
    X, y, qid = _data()
    expected = np.searchsorted(np.unique(qid), qid)
    for chunk in (qid.shape[0], 50):
        _, _, qd = _dask(X, y, qid, chunk)
        np.testing.assert_array_equal(query_keys(qd).compute(), expected)


# --------------------------------------------------------------------------------------------
# Keys: the same gradients however the rows are split
# --------------------------------------------------------------------------------------------
def _sorted(X, y, qid):
    order = np.argsort(qid, kind="stable")
    return X[order], y[order], qid[order]


def _local_parts(qid, cuts, order):
    """Row index arrays of worker-local data: partitions cut at ``cuts``, joined in ``order``."""
    parts = np.split(np.arange(qid.shape[0]), cuts)
    return np.concatenate([parts[i] for i in order])


@RANDOM_MARGINS
@pytest.mark.parametrize("layout", [([], [0]), ([300], [1, 0]), ([120, 400], [2, 0, 1])])
def test_keyed_xgboost_gradients_do_not_depend_on_partitioning(layout):
    X, y, qid = _sorted(*_data())
    starts = np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]])
    cuts = [int(starts[np.searchsorted(starts, c)]) for c in layout[0]]
    keys = np.searchsorted(np.unique(qid), qid).astype(np.float32)
    preds = np.random.default_rng(3).normal(size=qid.shape[0]).astype(np.float32)
    whole = plrank_objective(K=3, N=7, seed=5)
    dwhole = xgboost.DMatrix(X, y, qid=qid)
    rows = _local_parts(qid, cuts, layout[1])
    keyed = keyed_plrank_objective(K=3, N=7, seed=5)
    # local qid: non-decreasing per worker, as xgboost.dask builds it from the partitions' ids
    local_qid = np.cumsum(np.r_[0, np.diff(keys[rows]) != 0])
    dlocal = xgboost.DMatrix(X[rows], y[rows], qid=local_qid, label_lower_bound=keys[rows])
    for _ in range(2):  # rounds 0 and 1
        g, h = whole(preds, dwhole)
        gl, hl = keyed(preds[rows], dlocal)
        np.testing.assert_array_equal(gl, g[rows])
        np.testing.assert_array_equal(hl, h[rows])


def _item_groups(X):
    """A protected group per row: the first feature below its median."""
    return (X[:, 0] < np.median(X[:, 0])).astype(np.int64)


@RANDOM_MARGINS
def test_keyed_group_fair_gradients_read_item_groups_from_label_upper_bound():
    """Group disparity on a worker's rows, item groups in label_upper_bound = one process."""
    X, y, qid = _sorted(*_data())
    groups = _item_groups(X)
    starts = np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]])
    rows = _local_parts(qid, [int(starts[12])], [1, 0])
    keys = np.searchsorted(np.unique(qid), qid).astype(np.float32)
    preds = np.random.default_rng(6).normal(size=qid.shape[0]).astype(np.float32)
    fair = {"K": 3, "N": 8, "seed": 5, "fairness": "group-disparity", "fairness_weight": 2.0}
    whole = plrank_objective(**fair, item_groups=groups)
    local_qid = np.cumsum(np.r_[0, np.diff(keys[rows]) != 0])
    dlocal = xgboost.DMatrix(
        X[rows],
        y[rows],
        qid=local_qid,
        label_lower_bound=keys[rows],
        label_upper_bound=groups[rows].astype(np.float32),
    )
    keyed = keyed_plrank_objective(**fair)
    g, h = whole(preds, xgboost.DMatrix(X, y, qid=qid))
    gl, hl = keyed(preds[rows], dlocal)
    np.testing.assert_array_equal(gl, g[rows])
    np.testing.assert_array_equal(hl, h[rows])
    relevance, _ = plrank_objective(K=3, N=8, seed=5)(preds, xgboost.DMatrix(X, y, qid=qid))
    assert not np.allclose(g, relevance)  # the groups reached the gradient
    no_groups = xgboost.DMatrix(X, y, qid=qid, label_lower_bound=keys)
    with pytest.raises(ValueError, match="needs the item groups of the training rows"):
        keyed_plrank_objective(**fair)(preds, no_groups)
    halves = xgboost.DMatrix(
        X,
        y,
        qid=qid,
        label_lower_bound=keys,
        label_upper_bound=np.where(groups == 1, 0.5, 0.0).astype(np.float32),
    )
    with pytest.raises(
        ValueError,
        match=r"the item groups of the training DMatrix must hold "
        r"integers, but .*\[\d+\] is 0.5",
    ):
        keyed_plrank_objective(**fair)(preds, halves)


@RANDOM_MARGINS
def test_keyed_lightgbm_form_matches_single_process_gradients():
    _, y, qid = _sorted(*_data())
    keys = np.searchsorted(np.unique(qid), qid).astype(np.float32)
    sizes = np.unique(qid, return_counts=True)[1]
    preds = np.random.default_rng(4).normal(size=qid.shape[0])
    g, h = plrank_objective(K=4, N=9, seed=2).lgbm_ranker(y, preds, None, sizes)
    half = int(sizes[:17].sum())
    keyed = keyed_plrank_objective(K=4, N=9, seed=2)
    rows = np.r_[half : qid.shape[0], 0:half]  # the second partition first
    gl, hl = keyed.lgbm_ranker(y[rows], preds[rows], keys[rows], np.r_[sizes[17:], sizes[:17]])
    np.testing.assert_array_equal(gl, g[rows])
    np.testing.assert_array_equal(hl, h[rows])


def test_keyed_objective_refuses_missing_or_inconsistent_keys():
    X, y, qid = _sorted(*_data(n_queries=5))
    keyed = keyed_plrank_objective()
    with pytest.raises(ValueError, match="label_lower_bound field, but the training data has none"):
        keyed(np.zeros(qid.shape[0], np.float32), xgboost.DMatrix(X, y, qid=qid))
    bad = np.searchsorted(np.unique(qid), qid).astype(np.float32)
    bad[1] += 1
    with pytest.raises(ValueError, match="row 1 of the local training data carries the query key"):
        keyed(
            np.zeros(qid.shape[0], np.float32),
            xgboost.DMatrix(X, y, qid=qid, label_lower_bound=bad),
        )


def _train_pair(field_kwargs):
    """Predictions of xgboost.train / lightgbm.train with a fixed objective, with extra fields."""
    X, y, qid = _sorted(*_data())
    sizes = np.unique(qid, return_counts=True)[1]

    def obj(p, d):
        return p - d.get_label(), np.ones_like(p)

    dx = xgboost.DMatrix(X, y, qid=qid, **field_kwargs[0])
    bx = xgboost.train({"base_score": 0.0, "eval_metric": "ndcg@5"}, dx, 4, obj=obj)
    dl = lightgbm.Dataset(X, y, group=sizes, **field_kwargs[1])
    bl = lightgbm.train({"objective": obj, "verbose": -1, "deterministic": True}, dl, 4)
    return bx.predict(xgboost.DMatrix(X)), bl.predict(X)


def test_key_fields_do_not_change_the_trees():
    _, _, qid = _sorted(*_data())
    keys = np.searchsorted(np.unique(qid), qid).astype(np.float32)
    plain = _train_pair(({}, {}))
    keyed = _train_pair(({"label_lower_bound": keys}, {"weight": keys}))
    np.testing.assert_array_equal(plain[0], keyed[0])
    np.testing.assert_array_equal(plain[1], keyed[1])


# --------------------------------------------------------------------------------------------
# Training on the cluster
# --------------------------------------------------------------------------------------------
class _Recording:
    """A keyed objective that also writes each call's (keys, grad) to ``folder``."""

    def __init__(self, folder, **kw):
        self.folder = folder
        self.objective = keyed_plrank_objective(**kw)
        self.calls = 0

    def __call__(self, preds, dtrain):
        import os

        grad, hess = self.objective(preds, dtrain)
        keys = dtrain.get_float_info("label_lower_bound")
        np.savez(
            f"{self.folder}/{os.getpid()}-{id(self)}-{self.calls}.npz",
            keys=keys,
            grad=grad,
            round=self.calls,
        )
        self.calls += 1
        return grad, hess


def _recorded_round(folder, round_):
    """Gradients of one round from every worker, in global (key, in-query) order."""
    keys, grads = [], []
    for f in sorted(folder.glob("*.npz")):
        z = np.load(f)
        if int(z["round"]) == round_:
            keys.append(z["keys"])
            grads.append(z["grad"])
    keys, grads = np.concatenate(keys), np.concatenate(grads)
    return grads[np.argsort(keys, kind="stable")]


@pytest.mark.parametrize("chunk", [10_000, 150])
def test_xgboost_dask_gradients_equal_single_process(client, tmp_path, chunk):
    """Round 0 (margins 0) on 1 partition / several partitions on 2 workers = one process."""
    X, y, qid = _data()
    Xa, ya, qa = align_queries(*_dask(X, y, qid, chunk))
    assert (len(Xa.chunks[0]) == 1) == (chunk == 10_000)
    keys = query_keys(qa)
    dtrain = xgboost.dask.DaskDMatrix(
        client, Xa, ya, qid=keys.astype(np.int64), label_lower_bound=keys
    )
    params = {"base_score": 0.0, "eval_metric": "ndcg@5", "max_depth": 3}
    xgboost.dask.train(client, params, dtrain, 2, obj=_Recording(str(tmp_path), K=5, N=11, seed=9))
    Xs, ys, qs = _sorted(X, y, qid)
    grad, _ = plrank_objective(K=5, N=11, seed=9)(
        np.zeros(qs.shape[0], np.float32), xgboost.DMatrix(Xs, ys, qid=qs)
    )
    np.testing.assert_array_equal(_recorded_round(tmp_path, 0), grad)


class _RecordingLGBM:
    """The keyed objective's LightGBM form, also writing each call's (keys, grad) to ``folder``."""

    def __init__(self, folder, **kw):
        self.folder = folder
        self.objective = keyed_plrank_objective(**kw)
        self.calls = 0

    def __call__(self, y_true, y_pred, weight, group):
        import os

        grad, hess = self.objective.lgbm_ranker(y_true, y_pred, weight, group)
        np.savez(
            f"{self.folder}/{os.getpid()}-{id(self)}-{self.calls}.npz",
            keys=weight,
            grad=grad,
            round=self.calls,
        )
        self.calls += 1
        return grad, hess


@pytest.mark.parametrize("chunk", [10_000, 150])
def test_lightgbm_dask_gradients_equal_single_process(client, tmp_path, chunk):
    """Round 0 through lightgbm.dask on 1 partition / on both workers = one process."""
    X, y, qid = _data()
    Xa, ya, qa = align_queries(*_dask(X, y, qid, chunk))
    Xa, ya, qa = _spread(client, Xa, ya, qa)
    d = _queries(Xa, ya, qa, where="training data", gain="exp")
    model = lightgbm.DaskLGBMRanker(
        client=client,
        objective=_RecordingLGBM(str(tmp_path), K=5, N=11, seed=9),
        n_estimators=2,
        verbose=-1,
        min_child_samples=2,
    )
    model.fit(d.X, d.y, sample_weight=d.keys, group=d.sizes)
    workers = {f.name.split("-")[0] for f in tmp_path.glob("*.npz")}
    assert len(workers) == (1 if chunk == 10_000 else 2)
    _, ys, qs = _sorted(X, y, qid)
    sizes = np.unique(qs, return_counts=True)[1]
    grad, _ = plrank_objective(K=5, N=11, seed=9).lgbm_ranker(
        ys, np.zeros(qs.shape[0]), None, sizes
    )
    np.testing.assert_array_equal(_recorded_round(tmp_path, 0), grad)


def test_fit_refuses_split_queries_missing_ids_and_bad_chunks(client):
    X, y, qid = _data()
    Xd, yd, qd = _dask(X, y, qid, 97)
    with pytest.raises(
        ValueError, match=r"query id \d+ of the training data has rows in partitions"
    ):
        DaskPLRankRanker(n_estimators=2).fit(Xd, yd, group=qd)
    with pytest.raises(ValueError, match="the training data has no query ids"):
        DaskPLRankRanker(n_estimators=2).fit(Xd, yd)
    for bad in [(Xd, yd.rechunk(50), qd), (Xd.rechunk((50, 5)), yd, qd), (Xd, yd, qd.rechunk(60))]:
        with pytest.raises(
            ValueError,
            match=r"training data must be split into the same row "
            r"chunks.*align_queries",
        ):
            DaskPLRankRanker(n_estimators=2).fit(bad[0], bad[1], group=bad[2])
    Xa, ya, qa = align_queries(Xd, yd, qd)
    with pytest.raises(ValueError, match=r"eval_set\[0\] must be a tuple \(X, y, qid\)"):
        DaskPLRankRanker(n_estimators=2).fit(Xa, ya, group=qa, eval_set=[(Xa, ya)])
    with pytest.raises(ValueError, match=r"the eval_set\[0\] has no query ids: pass"):
        DaskPLRankRanker(n_estimators=2).fit(Xa, ya, group=qa, eval_set=[(Xa, ya, None)])
    with pytest.raises(ValueError, match=r"eval_set\[0\] must be split into the same row chunks"):
        DaskPLRankRanker(n_estimators=2).fit(Xa, ya, group=qa, eval_set=[(Xa, ya, qa.rechunk(40))])
    with pytest.raises(ValueError, match=r"query id \d+ of the eval_set\[0\] has rows"):
        DaskPLRankRanker(n_estimators=2).fit(Xa, ya, group=qa, eval_set=[(Xd, yd, qd)])
    with pytest.raises(TypeError, match="must be a dask array, DataFrame or Series"):
        DaskPLRankRanker(n_estimators=2).fit(X, y, group=qid)


def test_group_fair_fit_refuses_item_groups_that_break_the_rules(client):
    X, y, qid = _data()
    Xa, ya, qa, ga = align_queries(*_dask(X, y, qid, 97), da.from_array(_item_groups(X), chunks=97))
    fair = DaskPLRankRanker(n_estimators=2, fairness="group-disparity")
    with pytest.raises(ValueError, match="fairness='group-disparity' needs item_groups"):
        fair.fit(Xa, ya, group=qa)
    with pytest.raises(ValueError, match="item_groups are used only by fairness in"):
        DaskPLRankRanker(n_estimators=2).fit(Xa, ya, group=qa, item_groups=ga)
    with pytest.raises(ValueError, match="not supported with backend='lightgbm' on Dask"):
        DaskPLRankRanker(n_estimators=2, fairness="group-disparity", backend="lightgbm").fit(
            Xa, ya, group=qa, item_groups=ga
        )
    with pytest.raises(
        ValueError,
        match=r"item_groups of the training data \(distinct values\) "
        r"must be >= 0",
    ):
        fair.fit(Xa, ya, group=qa, item_groups=ga - 1)
    with pytest.raises(ValueError, match=r"must hold two or more distinct groups"):
        fair.fit(Xa, ya, group=qa, item_groups=ga * 0)
    with pytest.raises(ValueError, match=r"per-row column 0 of the training data must be split"):
        fair.fit(Xa, ya, group=qa, item_groups=ga.rechunk(40))


@pytest.mark.parametrize(
    ("label", "gain", "message"),
    [
        (
            -1.0,
            "exp",
            r"labels of the training data must be finite and >= 0, but the smallest is -1",
        ),
        (np.inf, "linear", r"labels of the training data must be finite, but the largest is inf"),
        (
            32.0,
            "exp",
            r"labels of the training data must be <= 31 with the exponential gain "
            r"2\*\*label - 1, but the largest is 32.0; use gain='linear'",
        ),
    ],
)
def test_dask_labels_that_break_the_gain_rule_are_refused(label, gain, message):
    X, y, qid = _data()
    y[5] = label
    Xa, ya, qa = align_queries(*_dask(X, y, qid, 97))
    with pytest.raises(ValueError, match=message):
        _queries(Xa, ya, qa, where="training data", gain=gain)


def test_dask_labels_above_31_pass_with_the_linear_gain():
    X, y, qid = _data()
    y[5] = 40.0
    d = _queries(*align_queries(*_dask(X, y, qid, 97)), where="training data", gain="linear")
    assert d.y.max().compute() == 40.0


def _hide_gbdt_plrank():
    """On a worker: take every sys.path entry holding gbdt_plrank's metadata off the path."""
    import importlib.metadata
    import sys

    def holds(path):
        return any(
            d.metadata["Name"] == "gbdt_plrank"
            for d in importlib.metadata.distributions(path=[path])
        )

    hidden = {i: p for i, p in enumerate(sys.path) if holds(p)}
    sys.path[:] = [p for i, p in enumerate(sys.path) if i not in hidden]
    return hidden


def _restore_gbdt_plrank(hidden):
    import sys

    for i, p in sorted(hidden.items()):
        sys.path.insert(i, p)


def test_a_worker_without_gbdt_plrank_is_named_before_training(client):
    X, y, qid = _data()
    Xa, ya, qa = align_queries(*_dask(X, y, qid, 200))
    worker = sorted(client.scheduler_info()["workers"])[1]
    hidden = client.run(_hide_gbdt_plrank, workers=[worker])[worker]
    try:
        assert hidden
        with pytest.raises(
            RuntimeError,
            match=rf"Dask worker {worker} has no gbdt_plrank "
            rf"installed.*install gbdt_plrank==0.1.0 on every",
        ):
            DaskPLRankRanker(n_estimators=2).fit(Xa, ya, group=qa)
    finally:
        client.run(_restore_gbdt_plrank, hidden, workers=[worker])
    check_workers(client, ("gbdt_plrank", "xgboost"))  # restored


def test_lightgbm_refuses_early_stopping_before_any_work():
    X, y, qid = _data(n_queries=5)
    with pytest.raises(
        ValueError,
        match=r"early_stopping_rounds=3 is not supported with "
        r"backend='lightgbm': lightgbm.dask has no early",
    ):
        DaskPLRankRanker(backend="lightgbm").fit(
            *_dask(X, y, qid, 20), early_stopping_rounds=3, eval_set=[_dask(X, y, qid, 20)]
        )


def test_early_stopping_without_an_eval_set_is_refused_before_any_work():
    """early_stopping=True holds out training queries in one process; on Dask it needs an eval
    set (and with LightGBM, which has no early stopping there, it is refused as
    early_stopping_rounds is)."""
    X, y, qid = _data(n_queries=5)
    with pytest.raises(ValueError, match=r"early_stopping=True needs an eval_set on Dask"):
        DaskPLRankRanker(early_stopping=True).fit(*_dask(X, y, qid, 20))
    with pytest.raises(
        ValueError, match=r"early_stopping=True is not supported with backend='lightgbm'"
    ):
        DaskPLRankRanker(backend="lightgbm", early_stopping=True).fit(
            *_dask(X, y, qid, 20), eval_set=[_dask(X, y, qid, 20)]
        )


def test_auto_early_stopping_trains_every_round_on_dask(client):
    """early_stopping="auto" holds nothing out on Dask: on 200 shallow queries, where one
    process holds out a tenth and stops, the Dask ranker trains all its rounds."""
    X, y, qid = _data(n_queries=200)
    options = {"K": 5, "N": 5, "n_estimators": 25, "learning_rate": 0.5, "random_state": 0}
    local = PLRankRanker(**options).fit(X, y, group=qid)
    assert local.do_early_stopping_ and local.booster_.num_boosted_rounds() < 25
    Xa, ya, qa = _spread(client, *align_queries(*_dask(X, y, qid, 800)))
    ranker = DaskPLRankRanker(**options).fit(Xa, ya, group=qa)
    assert ranker.early_stopping == "auto" and not ranker.do_early_stopping_
    assert ranker.best_iteration_ is None and ranker.booster_.num_boosted_rounds() == 25


def test_policy_stopping_is_refused_before_any_work():
    X, y, qid = _data(n_queries=5)
    with pytest.raises(ValueError, match=r"stopping_metric='policy' is not supported on Dask"):
        DaskPLRankRanker(stopping_metric="policy").fit(
            *_dask(X, y, qid, 20), early_stopping_rounds=3, eval_set=[_dask(X, y, qid, 20)]
        )


def test_default_early_stopping_watches_ndcg(client):
    """stopping_metric="auto" is "ndcg" on Dask: the default early-stops on the library's NDCG@K
    (where PLRankRanker's "auto" watches the policy, which Dask refuses)."""
    X, y, qid = _data(n_queries=60)
    Xa, ya, qa = _spread(client, *align_queries(*_dask(X, y, qid, 200)))
    for min_rounds, first in (("auto", 3), (12, 11)):  # "auto": ceil(2 / 0.5) = 4 rounds
        ranker = DaskPLRankRanker(
            K=5, N=20, n_estimators=40, learning_rate=0.5, random_state=0, min_rounds=min_rounds
        )
        ranker.fit(Xa, ya, group=qa, eval_set=[(Xa, ya, qa)], early_stopping_rounds=2)
        curve = ranker.evals_result_["valid_0"]["ndcg@5"]
        assert ranker.best_iteration_ == first + int(np.argmax(curve[first:]))
        best = ranker.best_iteration_
        assert len(curve) == best + 1 + rounds_after_best(best, 2) or len(curve) == 40


@pytest.mark.parametrize("backend", ["xgboost", "lightgbm"])
def test_fit_predict_to_local(client, backend):
    X, y, qid = _data(n_queries=60)
    # Both workers hold rows: XGBoost's metric over a cluster with an empty worker is not the
    # metric of the data (CI caught 0.7903 reported for a model whose NDCG@5 is 0.7868).
    Xa, ya, qa = _spread(client, *align_queries(*_dask(X, y, qid, 200)))
    ranker = DaskPLRankRanker(backend=backend, K=5, N=20, n_estimators=5, n_jobs=1, random_state=0)
    with warnings.catch_warnings():  # LightGBM's "Parameter n_jobs will be ignored" among them
        warnings.filterwarnings("error", "Parameter .* will be ignored")
        ranker.fit(Xa, ya, group=qa, eval_set=[(Xa, ya, qa)])
    scores = ranker.predict(Xa)
    assert isinstance(scores, da.Array)
    local = ranker.to_local()
    assert type(local) is PLRankRanker
    np.testing.assert_array_equal(scores.compute(), local.predict(Xa.compute()))
    curve = ranker.evals_result_["valid_0"]["ndcg@5"]
    assert len(curve) == 5 and curve[-1] > curve[0]
    if backend == "xgboost":  # XGBoost sums the metric over workers; LightGBM reports one worker's
        score = local.score(Xa.compute(), ya.compute(), qa.compute())
        assert score == pytest.approx(curve[-1], abs=1e-6)


# hessian="abs": six seeds at the default, "denoised", gave 2 workers -0.0040 [-0.0082, +0.0001]
# (level) against a seed-to-seed standard deviation of 0.0039, at the edge of the bound the test
# below asserts, where 20 seeds (research/dask_quality.py, at the defaults) give -0.0008
# [-0.0031, +0.0015]; with "abs" the six seeds sit well inside it
@pytest.fixture(scope="module")
def mq2008_options():
    """The options of ``research/dask_quality.py``'s trainings, with ``hessian="abs"``."""
    from research.dask_quality import OPTIONS

    return {**OPTIONS, "hessian": "abs"}


@pytest.fixture(scope="module")
def mq2008(client):
    """MQ2008 Fold1, and its training rows in 2 partitions of whole queries, one per worker."""
    from gbdt_plrank.datasets import load_dataset

    data = load_dataset("mq2008", fold=1)
    tr = data.train
    X = tr.X.toarray()
    parts = _spread(client, *align_queries(*_dask(X, tr.y, tr.qid, -(-X.shape[0] // 2))))
    assert len(parts[0].chunks[0]) == 2
    return data, parts


def _test_ndcg(data, scores):
    from gbdt_plrank.metrics import ndcg

    return ndcg(data.test.y, scores.astype(np.float32), data.test.qid, k=5, per_query=True)


@pytest.mark.slow
def test_mq2008_two_workers_within_seed_spread_of_single_machine(mq2008, mq2008_options):
    """The issue's target: test NDCG@5 on 2 workers within single-machine training's seed spread.

    XGBoost with its defaults (``hist``, ``max_bin`` 256), 30 rounds of depth 4, seeds 0-5 on
    each side. Within the spread: the 2-worker mean over the seeds lies within one seed-to-seed
    standard deviation of the single-machine mean, and the paired per-query test (each query's
    NDCG@5 averaged over the seeds) finds them level. The models are not the same: XGBoost merges
    the workers' quantile sketches approximately, so 15 of the 46 features get other cut points
    (``research/dask_quality.py``, at the defaults; 20 seeds there: single machine 0.7800 +-
    0.0054, 2 workers 0.7792 +- 0.0039, paired difference -0.0008 [-0.0031, +0.0015], level).
    Measured here, with ``hessian="abs"``: single machine 0.7712 +- 0.0039, 2 workers 0.7720,
    paired +0.0009 (p 0.78).
    """
    from gbdt_plrank.harness.stats import paired

    data, parts = mq2008
    tr, te = data.train, data.test
    single, two = [], []
    for seed in range(6):
        ranker = PLRankRanker(**mq2008_options, random_state=seed).fit(tr.X, tr.y, group=tr.qid)
        single.append(_test_ndcg(data, ranker.predict(te.X)))
        ranker = DaskPLRankRanker(**mq2008_options, random_state=seed).fit(*parts)
        two.append(_test_ndcg(data, ranker.to_local().predict(te.X)))
    single_means, two_means = np.mean(single, axis=1), np.mean(two, axis=1)
    spread = single_means.std(ddof=1)
    test = paired(dict(enumerate(np.mean(two, axis=0))), dict(enumerate(np.mean(single, axis=0))))
    print(
        f"single machine {np.round(single_means, 4)}, 2 workers {np.round(two_means, 4)}, "
        f"paired {test}"
    )
    assert abs(two_means.mean() - single_means.mean()) <= spread
    assert test.verdict == "level"


@pytest.mark.slow
def test_mq2008_two_workers_with_exact_sketches_train_the_single_machine_model(
    mq2008, mq2008_options
):
    """With ``8 * max_bin`` at least every feature's number of distinct values, XGBoost's
    quantile summaries are exact on each worker, the merged cut points are the single-machine
    ones, and the 2-worker model predicts exactly as the single-machine model (the histogram
    sums of float32 gradients in double precision do not depend on the order of addition here).
    """
    data, parts = mq2008
    tr, te = data.train, data.test
    X = tr.X.toarray()
    distinct = max(np.unique(X[:, j]).shape[0] for j in range(X.shape[1]))
    options = {**mq2008_options, "params": {"max_bin": -(-distinct // 8)}, "random_state": 0}
    single = PLRankRanker(**options).fit(tr.X, tr.y, group=tr.qid).predict(te.X)
    two = DaskPLRankRanker(**options).fit(*parts).to_local().predict(te.X)
    np.testing.assert_array_equal(two, single)


def test_group_fair_two_workers_train_the_single_machine_model(client):
    """Item groups (ids 3 and 7, rows shuffled across partitions) follow their rows to the
    workers: with exact sketches the 2-worker group-fair model is the one-process model."""
    X, y, qid = _data(n_queries=60)
    groups = np.where(_item_groups(X) == 1, 7, 3)
    Xa, ya, qa, ga = _spread(
        client, *align_queries(*_dask(X, y, qid, 200), da.from_array(groups, chunks=200))
    )
    distinct = max(np.unique(X[:, j]).shape[0] for j in range(X.shape[1]))
    options = {
        "K": 5,
        "N": 20,
        "n_estimators": 5,
        "random_state": 0,
        "n_jobs": 1,
        "fairness": "group-disparity",
        "fairness_weight": 3.0,
        "params": {"max_bin": -(-distinct // 8)},
    }
    single = PLRankRanker(**options).fit(X, y, group=qid, item_groups=groups).predict(X)
    two = DaskPLRankRanker(**options).fit(Xa, ya, group=qa, item_groups=ga)
    np.testing.assert_array_equal(two.to_local().predict(X), single)
    relevance = (
        PLRankRanker(**{**options, "fairness": None, "fairness_weight": 1.0})
        .fit(X, y, group=qid)
        .predict(X)
    )
    assert not np.allclose(single, relevance)


def test_align_queries_accepts_a_dask_dataframe_and_series():
    import dask.dataframe as dd
    import pandas as pd

    X, y, qid = _data()
    frame = dd.from_pandas(pd.DataFrame(X).assign(y=y, qid=qid), npartitions=3)
    Xa, ya, qa = align_queries(frame[list(range(X.shape[1]))], frame["y"], frame["qid"])
    assert query_layout(qa).split_query() is None
    order = np.argsort(qid, kind="stable")
    np.testing.assert_array_equal(qa.compute(), qid[order])
    np.testing.assert_array_equal(ya.compute(), y[order])
    np.testing.assert_array_equal(Xa.compute(), X[order])


def test_a_query_id_column_is_read_by_name_and_never_a_feature(client):
    """group="qid" reads a dask DataFrame's column as the query ids and leaves it out of the
    features; predict drops it, on the cluster and after to_local."""
    import dask.dataframe as dd
    import pandas as pd

    X, y, qid = _data(n_queries=30)
    order = np.argsort(qid, kind="stable")
    X, y, qid = X[order], y[order], qid[order]
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])]).assign(qid=qid)
    framed = dd.from_pandas(frame, npartitions=1)
    ys = dd.from_pandas(pd.Series(y), npartitions=1)
    options = {"K": 5, "N": 10, "n_estimators": 3, "n_jobs": 1, "random_state": 0}
    by_name = DaskPLRankRanker(**options).fit(framed, ys, group="qid")
    plain = DaskPLRankRanker(**options).fit(*_dask(X, y, qid, X.shape[0]))
    assert by_name.group_column_ == "qid" and by_name.n_features_in_ == X.shape[1]
    expected = plain.predict(da.from_array(X)).compute()
    np.testing.assert_array_equal(by_name.predict(framed).compute(), expected)
    np.testing.assert_array_equal(by_name.to_local().predict(frame), expected)
    with pytest.raises(ValueError, match="group='query' must name a column of X"):
        DaskPLRankRanker(**options).fit(framed, ys, group="query")
