"""Dask collections whose partitions hold whole queries.

XGBoost and LightGBM train on each worker's local rows: a query whose rows lie in two partitions
would be scored as two queries, silently (XGBoost accepts such a split without a warning).
:func:`align_queries` moves rows so that every query lies in one partition; training checks the
layout with :func:`query_layout` and refuses a split query.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import dask
import dask.array as da
import numpy as np

from ._keyed import MAX_QUERIES

__all__ = ["QueryLayout", "align_queries", "as_dask_arrays", "query_keys", "query_layout"]


def _array(name: str, value: Any, ndim: int, where: str) -> da.Array:
    """A dask array with known chunk sizes from a dask array, DataFrame or Series."""
    if hasattr(value, "to_dask_array"):  # dask DataFrame or Series
        value = value.to_dask_array(lengths=True)
    if not isinstance(value, da.Array):
        raise TypeError(
            f"{name} of the {where} must be a dask array, DataFrame or Series, but a "
            f"{type(value).__module__}.{type(value).__name__} is given: for data in memory use "
            f"gbdt_plrank.PLRankRanker, or wrap it with dask.array.from_array."
        )
    if value.ndim != ndim:
        raise ValueError(
            f"{name} of the {where} must be {ndim}-dimensional, but has shape {value.shape}."
        )
    if any(np.isnan(c) for c in value.chunks[0]):
        value = value.compute_chunk_sizes()
    return value


def as_dask_arrays(X: Any, y: Any, qid: Any, *columns: Any, where: str) -> tuple[da.Array, ...]:
    """``X`` (2-d), ``y``, ``qid`` and further per-row ``columns`` as dask arrays of equal row
    chunks."""
    if qid is None:
        raise ValueError(
            f"the {where} has no query ids: pass group=qid (or (X, y, qid) in eval_set), a dask "
            f"array or Series of per-row query ids chunked like X, or every row would be scored "
            f"as one query."
        )
    X = _array("X", X, 2, where)
    y = _array("y", y, 1, where)
    qid = _array("group (query ids)", qid, 1, where)
    columns = tuple(_array(f"per-row column {i}", c, 1, where) for i, c in enumerate(columns))
    for i, column in enumerate(columns):
        if column.chunks[0] != X.chunks[0]:
            raise ValueError(
                f"per-row column {i} of the {where} must be split into the row chunks of X, "
                f"{X.chunks[0]}, but has {column.chunks[0]}: build it from the same DataFrame, or "
                f"align it with gbdt_plrank.dask.align_queries(X, y, qid, column)."
            )
    if not X.chunks[0] == y.chunks[0] == qid.chunks[0]:
        raise ValueError(
            f"X, y and the query ids of the {where} must be split into the same row chunks, but "
            f"X has {X.chunks[0]}, y {y.chunks[0]} and the query ids {qid.chunks[0]}: build them "
            f"from one DataFrame, or call X, y, qid = gbdt_plrank.dask.align_queries(X, y, qid)."
        )
    return (X.rechunk({1: -1}), y, qid, *columns)


def _summary(q: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]:
    ids, counts = np.unique(q, return_counts=True)
    return ids, counts, bool(np.all(q[1:] >= q[:-1]))


@dataclass(frozen=True)
class QueryLayout:
    """The queries of each partition of a dask array of query ids.

    Attributes
    ----------
    ids : list of arrays
        Sorted distinct query ids of each partition.
    counts : list of int arrays
        Rows of each of those queries.
    grouped : list of bool
        Whether the partition's ids are non-decreasing (its queries already contiguous).
    """

    ids: list[np.ndarray]
    counts: list[np.ndarray]
    grouped: list[bool]

    def split_query(self) -> tuple[Any, int, int] | None:
        """``(query id, partition, other partition)`` of the first query in two partitions."""
        every = np.concatenate(self.ids)
        part = np.repeat(np.arange(len(self.ids)), [len(i) for i in self.ids])
        order = np.argsort(every, kind="stable")
        twice = np.flatnonzero(every[order][1:] == every[order][:-1])
        if not twice.size:
            return None
        i = twice[0]
        return every[order][i].item(), int(part[order][i]), int(part[order][i + 1])

    def global_ids(self) -> np.ndarray:
        """All distinct query ids, sorted: query ``q``'s global index is its position here."""
        return np.unique(np.concatenate(self.ids))

    def check_aligned(self, where: str) -> None:
        """Refuse a query whose rows lie in two partitions, naming it and the fix."""
        split = self.split_query()
        if split is not None:
            q, a, b = split
            raise ValueError(
                f"query id {q!r} of the {where} has rows in partitions {a} and {b}; each worker "
                f"would train on it as two queries. Put every query in one partition first: "
                f"X, y, qid = gbdt_plrank.dask.align_queries(X, y, qid)."
            )


def query_layout(qid: da.Array) -> QueryLayout:
    """The :class:`QueryLayout` of ``qid`` (one pass over the ids, nothing else)."""
    parts = dask.compute(*[dask.delayed(_summary)(b) for b in qid.to_delayed().ravel()])
    return QueryLayout([p[0] for p in parts], [p[1] for p in parts], [p[2] for p in parts])


def _take_rows(a: np.ndarray, order: np.ndarray) -> np.ndarray:
    return a[order.ravel()]


def group_within_partitions(
    X: da.Array, y: da.Array, qid: da.Array, *columns: da.Array
) -> tuple[da.Array, ...]:
    """Sort each partition's rows stably by query id (XGBoost needs non-decreasing ``qid``).

    ``columns`` (per-row arrays chunked like ``qid``) move with the rows.
    """
    order = qid.map_blocks(np.argsort, kind="stable", dtype=np.int64)
    X = da.map_blocks(_take_rows, X, order[:, None], dtype=X.dtype)
    rows = (da.map_blocks(_take_rows, a, order, dtype=a.dtype) for a in (y, qid, *columns))
    return (X, *rows)


def _searchsorted(q: np.ndarray, ids: np.ndarray) -> np.ndarray:
    return np.searchsorted(ids, q).astype(np.float32)


def query_keys(qid: Any, layout: QueryLayout | None = None) -> da.Array:
    """Each row's global query index, float32, chunked like ``qid``: the keys of the objective.

    The global index of a query is the rank of its id among all distinct ids, so query streams
    do not depend on the partitioning and match single-process training on rows sorted by query
    id. Pass the result as ``label_lower_bound`` (XGBoost) or ``sample_weight`` (LightGBM) with
    :func:`~gbdt_plrank.dask.keyed_plrank_objective`.
    """
    qid = _array("qid", qid, 1, "query ids")
    ids = (layout or query_layout(qid)).global_ids()
    if ids.shape[0] > MAX_QUERIES:
        raise ValueError(
            f"the data holds {ids.shape[0]} queries, but the float32 key field carries exact "
            f"query indices only below {MAX_QUERIES}: train on fewer queries at once."
        )
    return qid.map_blocks(_searchsorted, ids, dtype=np.float32)


def align_queries(X: Any, y: Any, qid: Any, *columns: Any) -> tuple[da.Array, ...]:
    """Repartition ``X``, ``y``, ``qid`` so that every query lies in one partition.

    When no query spans two partitions, only each partition's rows are sorted by query id
    (stably). Otherwise the rows are shuffled: all queries, sorted by id, are cut into as many
    runs of whole queries as there were partitions, of about equal row counts, and each run
    becomes a partition (``dask.array.shuffle``). Either way the rows of a query keep their
    relative order and the query ids are non-decreasing within every partition, as XGBoost
    needs. The shuffle reads the query ids into the client (8 bytes per row).

    Parameters
    ----------
    X : dask array of shape (n, n_features) or dask DataFrame
    y : dask array or Series of shape (n,)
    qid : dask array or Series of shape (n,)
        Per-row query ids, chunked like ``X``.
    *columns : dask arrays or Series of shape (n,)
        Further per-row values chunked like ``X`` that move with the rows, e.g. the item groups
        of :meth:`DaskPLRankRanker.fit <gbdt_plrank.dask.DaskPLRankRanker.fit>`.

    Returns
    -------
    X, y, qid, *columns : dask arrays
        The same rows, in partitions of whole queries.
    """
    X, y, qid, *columns = as_dask_arrays(X, y, qid, *columns, where="data")
    if query_layout(qid).split_query() is None:
        return group_within_partitions(X, y, qid, *columns)
    q = qid.compute()
    order = np.argsort(q, kind="stable")
    starts = np.flatnonzero(np.r_[True, q[order][1:] != q[order][:-1]])  # first row of a query
    n_parts = len(X.chunks[0])
    cuts = np.unique(starts[np.searchsorted(starts, np.linspace(0, q.shape[0], n_parts + 1)[1:-1])])
    runs = [r.tolist() for r in np.split(order, cuts) if r.size]
    return tuple(da.shuffle(a, runs, axis=0) for a in (X, y, qid, *columns))
