"""Tests of gbdt_plrank.dask: query alignment, partition-independent keys, training on a cluster.

The cluster is a LocalCluster of 2 single-threaded worker processes (LightGBM's network is
global to a process, so its workers need processes of their own); it starts once per module.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

pytest.importorskip("distributed")
xgboost = pytest.importorskip("xgboost")
pytest.importorskip("xgboost.dask")
lightgbm = pytest.importorskip("lightgbm")

import cloudpickle  # noqa: E402
import dask.array as da  # noqa: E402
from distributed import Client, LocalCluster  # noqa: E402

from gbdt_plrank import PLRankRanker, plrank_objective  # noqa: E402
from gbdt_plrank.dask import (  # noqa: E402
    DaskPLRankRanker,
    align_queries,
    keyed_plrank_objective,
    query_keys,
)
from gbdt_plrank.dask._align import query_layout  # noqa: E402
from gbdt_plrank.dask._ranker import check_workers  # noqa: E402

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
    return (da.from_array(X, chunks=(chunk, X.shape[1])), da.from_array(y, chunks=chunk),
            da.from_array(qid, chunks=chunk))


@pytest.fixture(scope="module")
def client():
    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster, Client(cluster) as c:
        yield c


# --------------------------------------------------------------------------------------------
# Alignment (dask's local scheduler, no cluster)
# --------------------------------------------------------------------------------------------
def test_align_queries_puts_each_query_in_one_partition_keeping_row_order():
    X, y, qid = _data()
    Xd, yd, qd = _dask(X, y, qid, 97)
    assert query_layout(qd).split_query() is not None
    Xa, ya, qa = align_queries(Xd, yd, qd)
    assert Xa.chunks[0] == ya.chunks[0] == qa.chunks[0]
    layout = query_layout(qa)
    assert layout.split_query() is None and all(layout.grouped)
    Xa, ya, qa = (a.compute() for a in (Xa, ya, qa))
    order = np.argsort(qid, kind="stable")  # sorted by id, input order within a query
    np.testing.assert_array_equal(qa, qid[order])
    np.testing.assert_array_equal(Xa, X[order])
    np.testing.assert_array_equal(ya, y[order])


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
    """Row index arrays of worker-local data: partitions cut at ``cuts``, concatenated in ``order``."""
    parts = np.split(np.arange(qid.shape[0]), cuts)
    return np.concatenate([parts[i] for i in order])


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


def test_keyed_lightgbm_form_matches_single_process_gradients():
    _, y, qid = _sorted(*_data())
    keys = np.searchsorted(np.unique(qid), qid).astype(np.float32)
    sizes = np.unique(qid, return_counts=True)[1]
    preds = np.random.default_rng(4).normal(size=qid.shape[0])
    g, h = plrank_objective(K=4, N=9, seed=2).lgbm_ranker(y, preds, None, sizes)
    half = int(sizes[:17].sum())
    keyed = keyed_plrank_objective(K=4, N=9, seed=2)
    rows = np.r_[half:qid.shape[0], 0:half]  # the second partition first
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
        keyed(np.zeros(qid.shape[0], np.float32),
              xgboost.DMatrix(X, y, qid=qid, label_lower_bound=bad))


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
        np.savez(f"{self.folder}/{os.getpid()}-{id(self)}-{self.calls}.npz", keys=keys, grad=grad,
                 round=self.calls)
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


def test_fit_refuses_split_queries_missing_ids_and_bad_chunks(client):
    X, y, qid = _data()
    Xd, yd, qd = _dask(X, y, qid, 97)
    with pytest.raises(ValueError, match=r"query id \d+ of the training data has rows in partitions"):
        DaskPLRankRanker(n_estimators=2).fit(Xd, yd, group=qd)
    with pytest.raises(ValueError, match="the training data has no query ids"):
        DaskPLRankRanker(n_estimators=2).fit(Xd, yd)
    with pytest.raises(ValueError, match="must be split into the same row chunks"):
        DaskPLRankRanker(n_estimators=2).fit(Xd, yd.rechunk(50), group=qd)
    Xa, ya, qa = align_queries(Xd, yd, qd)
    with pytest.raises(ValueError, match=r"eval_set\[0\] must be a tuple \(X, y, qid\)"):
        DaskPLRankRanker(n_estimators=2).fit(Xa, ya, group=qa, eval_set=[(Xa, ya)])
    with pytest.raises(ValueError, match=r"query id \d+ of the eval_set\[0\] has rows"):
        DaskPLRankRanker(n_estimators=2).fit(Xa, ya, group=qa, eval_set=[(Xd, yd, qd)])
    with pytest.raises(TypeError, match="must be a dask array, DataFrame or Series"):
        DaskPLRankRanker(n_estimators=2).fit(X, y, group=qid)


def test_worker_without_a_module_is_named(client):
    with pytest.raises(RuntimeError, match=r"cannot import gbdt_plrank_not_installed .*pip install"):
        check_workers(client, ("gbdt_plrank", "gbdt_plrank_not_installed"))


@pytest.mark.parametrize("backend", ["xgboost", "lightgbm"])
def test_fit_predict_to_local(client, backend):
    X, y, qid = _data(n_queries=60)
    Xa, ya, qa = align_queries(*_dask(X, y, qid, 200))
    ranker = DaskPLRankRanker(backend=backend, K=5, N=20, n_estimators=5, random_state=0)
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


@pytest.mark.slow
def test_mq2008_two_workers_within_seed_spread_of_single_machine(client):
    """Test NDCG@5 with 2 workers (4 partitions) is that of single-machine training, to 0.01.

    XGBoost, 30 rounds of depth 4. The gradients are the same (tested above) and one partition
    gives the single-machine model exactly, but XGBoost's distributed quantile sketch and
    histogram sums depend on how rows are split over workers. Measured on 2026-11-22: single
    machine 0.7722 / 0.7731 / 0.7716 (seeds 0-2, spread 0.0015); 2 workers with 2 partitions
    0.7706 / 0.7731, with 4 partitions 0.7690 / 0.7704 / 0.7662 (seeds 0, 1, and 0 on another
    placement of partitions). The partitioning moves the score more than the seed does, so the
    band is 0.01 around the single-machine mean rather than the seed spread itself.
    """
    from gbdt_plrank.datasets import load_dataset
    from gbdt_plrank.metrics import ndcg

    data = load_dataset("mq2008", fold=1)
    options = {"K": 5, "N": 50, "n_estimators": 30, "learning_rate": 0.1, "max_depth": 4,
               "n_jobs": 1}
    tr, te = data.train, data.test
    local = []
    for seed in (0, 1, 2):
        ranker = PLRankRanker(**options, random_state=seed).fit(tr.X, tr.y, group=tr.qid)
        local.append(ndcg(te.y, ranker.predict(te.X).astype(np.float32), te.qid, k=5))
    chunk = -(-tr.qid.shape[0] // 4)
    Xa, ya, qa = align_queries(*_dask(tr.X, tr.y, tr.qid, chunk))
    assert len(Xa.chunks[0]) == 4
    ranker = DaskPLRankRanker(**options, random_state=0).fit(Xa, ya, group=qa)
    distributed = ndcg(te.y, ranker.to_local().predict(te.X).astype(np.float32), te.qid, k=5)
    print(f"single machine {np.round(local, 4)}, 2 workers {distributed:.4f}")
    assert abs(distributed - np.mean(local)) <= 0.01


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
