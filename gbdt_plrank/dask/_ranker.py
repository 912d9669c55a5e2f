"""``DaskPLRankRanker``: :class:`~gbdt_plrank.PLRankRanker` trained on a Dask cluster."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import dask.array as da
import numpy as np

from .._groups import drop_group_column, ranker_group
from .._training.fairness_spec import item_groups_needed
from .._training.options import PLRankOptions
from .._util.compat import require
from .._util.validation import MAX_EXP_LABEL, check_item_groups
from ..ranker import PLRankRanker
from ._align import as_dask_arrays, group_within_partitions, query_keys, query_layout
from ._keyed import MAX_QUERIES, KeyedPLRankObjective
from ._native import DaskQueries, margins, train
from ._workers import check_workers

__all__ = ["DaskPLRankRanker"]


def _client() -> Any:
    distributed = require("distributed", purpose="DaskPLRankRanker")
    try:
        return distributed.default_client()
    except ValueError as err:
        raise ValueError(
            "DaskPLRankRanker needs a running distributed Client: create one first, e.g. "
            "client = distributed.Client(distributed.LocalCluster(n_workers=2)) or "
            "distributed.Client('scheduler-address:8786')."
        ) from err


def _dense_groups(item_groups: da.Array, where: str) -> da.Array:
    """Item groups checked by :func:`~gbdt_plrank._util.validation.check_item_groups`' rules, as
    float32 indices of their distinct values (exact in the booster's float32 row field)."""
    ids = da.unique(item_groups).compute()  # each partition's distinct ids, merged
    name = f"item_groups of the {where} (distinct values)"
    check_item_groups(ids, None, name=name)
    if ids.shape[0] > MAX_QUERIES:
        raise ValueError(
            f"{name} holds {ids.shape[0]} groups, but the float32 row field carries exact group "
            f"indices only below {MAX_QUERIES}."
        )
    return item_groups.map_blocks(_dense, ids, dtype=np.float32)


def _dense(block: np.ndarray, ids: np.ndarray) -> np.ndarray:
    return np.searchsorted(ids, block).astype(np.float32)


def _queries(
    X: Any, y: Any, qid: Any, item_groups: Any = None, *, where: str, gain: str
) -> DaskQueries:
    """Checked dask data of whole-query partitions, grouped by query, with global keys.

    The labels follow :func:`~gbdt_plrank._util.validation.check_labels`' rules for ``gain``;
    ``item_groups`` (per-row, chunked like ``X``) move with the rows.
    """
    columns = () if item_groups is None else (item_groups,)
    X, y, qid, *columns = as_dask_arrays(X, y, qid, *columns, where=where)
    layout = query_layout(qid)
    layout.check_aligned(where)
    if not all(layout.grouped):
        X, y, qid, *columns = group_within_partitions(X, y, qid, *columns)
    sizes = np.concatenate(layout.counts).astype(np.int64)
    chunks = (tuple(len(ids) for ids in layout.ids),)
    low, high = da.compute(y.min(), y.max())
    if not np.isfinite(low) or low < 0:
        raise ValueError(
            f"labels of the {where} must be finite and >= 0, but the smallest is {low}."
        )
    if not np.isfinite(high):
        raise ValueError(f"labels of the {where} must be finite, but the largest is {high}.")
    if gain == "exp" and high > MAX_EXP_LABEL:
        raise ValueError(
            f"labels of the {where} must be <= {MAX_EXP_LABEL} with the exponential gain "
            f"2**label - 1, but the largest is {high}; use gain='linear' for larger grades."
        )
    groups = _dense_groups(columns[0], where) if columns else None
    return DaskQueries(
        X,
        y.astype(np.float64),
        query_keys(qid, layout),
        da.from_array(sizes, chunks=chunks),
        groups,
    )


class DaskPLRankRanker(PLRankRanker):
    """:class:`~gbdt_plrank.PLRankRanker` trained with ``xgboost.dask`` or ``lightgbm.dask``.

    Same parameters as :class:`~gbdt_plrank.PLRankRanker`; it trains on the cluster of the
    current ``distributed`` client. Each worker runs the PL-Rank objective on its local rows, so
    every query must lie in one partition (:func:`~gbdt_plrank.dask.align_queries`); training
    refuses data that splits a query. Query ``q``'s random stream is keyed by its global query
    index, so the same ``random_state`` gives the same gradients on any number of workers as in
    one process. The trees can still differ: XGBoost merges the workers' quantile summaries of
    each feature approximately (a summary holds ``8 * max_bin`` values), so a feature with more
    distinct values gets other cut points than in one process; with ``params={"max_bin": m}``
    and ``8 * m`` at least every feature's number of distinct values, the cut points and the
    model are the single-machine ones. LightGBM's data-parallel training differs from one
    process as well. On MQ2008 both stay within the seed-to-seed spread of single-machine
    training (:doc:`/guide/dask`).

    ``n_jobs`` sets the threads of each worker's booster and objective (``None``: the worker's
    threads); with ``backend="lightgbm"`` it sets the objective's only, since ``lightgbm.dask``
    gives each worker's booster that worker's threads. Eval sets are scored with the library's own
    NDCG@K, computed on the workers (the package's metrics would see only a worker's local rows), so
    early stopping watches it: ``stopping_metric="auto"`` is ``"ranking"`` here, ``"policy"`` and
    ``"standardized"`` are refused, and eval sets need ``metric="ndcg"``. With
    ``fairness="group-disparity"`` the item groups travel to the workers with their rows
    (``fit(item_groups=)``, XGBoost only). Nothing is held out of the training queries:
    ``early_stopping=True`` needs an eval set, and ``"auto"`` trains every round without one.
    With ``backend="lightgbm"`` early stopping is not
    available (``lightgbm.dask`` has none), and ``evals_result_`` holds what ``lightgbm.dask``
    reports: NDCG@K of the eval rows held by the worker whose model is returned, not of the whole
    eval set (XGBoost's is of the whole set).

    :meth:`predict` of a dask array returns a dask array; :meth:`to_local` returns a fitted
    :class:`~gbdt_plrank.PLRankRanker` with the same booster for everything in memory.
    """

    _objective_type = KeyedPLRankObjective
    _trainer = "dask"

    def _holds_out(self, eval_set: object, options: PLRankOptions) -> bool:
        """Never: ``early_stopping=True`` needs an ``eval_set`` on Dask (``"auto"`` trains
        every round without one)."""
        if self.early_stopping is True and not eval_set:
            raise ValueError(
                "early_stopping=True needs an eval_set on Dask: holding out a share of the "
                "training queries would split the workers' partitions, so pass "
                "eval_set=[(X_val, y_val, qid_val)] of dask collections."
            )
        return False

    def fit(
        self,
        X: Any,
        y: Any,
        group: Any = None,
        *,
        item_groups: Any = None,
        eval_set: Sequence[tuple[Any, ...]] | None = None,
        early_stopping_rounds: int | None = None,
    ) -> DaskPLRankRanker:
        """Train on the cluster.

        Parameters
        ----------
        X : dask array of shape (n_samples, n_features) or dask DataFrame
        y : dask array or Series of shape (n_samples,)
            Graded relevance labels, chunked like ``X``.
        group : dask array or Series of shape (n_samples,), or str
            Per-row query ids, chunked like ``X``; no query may span two partitions. With a
            dask DataFrame ``X``, the name of its column of query ids (not a feature then:
            :meth:`predict` drops it). Required: ``None`` raises.
        item_groups : dask array or Series of shape (n_samples,) or None, default None
            With ``fairness="group-disparity"`` (and only then; XGBoost only): each row's item
            group, as in :meth:`~gbdt_plrank.PLRankRanker.fit`, chunked like ``X``
            (``align_queries(X, y, qid, item_groups)`` moves them with the rows). They reach
            each worker's objective in XGBoost's ``label_upper_bound`` field, which a callable
            objective leaves out of tree building.
        eval_set : list of (X, y, group) tuples of dask collections, default None
            Validation sets, each with its query ids (or the name of their column) and aligned
            like the training set (scored by the ranking's NDCG@K, so they need no item groups).
        early_stopping_rounds : int or None, default None
            As in :meth:`~gbdt_plrank.PLRankRanker.fit` (XGBoost only).

        Returns
        -------
        self : DaskPLRankRanker
            Fitted; :meth:`to_local` gives a ranker of the same booster for data in memory.
        """
        backend, settings, plan, options, _ = self._training(eval_set, early_stopping_rounds)
        item_groups_needed(options.fairness_spec, item_groups is not None)
        if item_groups is not None and backend == "lightgbm":
            raise ValueError(
                "item_groups are not supported with backend='lightgbm' on Dask: lightgbm.dask "
                "carries one spare per-row field to the workers, the sample weights, and it holds "
                "the query keys. Use backend='xgboost', or train in one process with PLRankRanker."
            )
        if eval_set and options.metric != "ndcg":
            raise ValueError(
                f"eval_set needs metric='ndcg' on Dask, but {options.metric!r} is given: eval sets "
                f"are scored with the library's NDCG@K on the workers. Train without eval_set, "
                f"or in one process with PLRankRanker."
            )
        if backend == "lightgbm" and plan.early_stopping_rounds is not None:
            given = (
                "early_stopping=True"
                if early_stopping_rounds is None
                else f"early_stopping_rounds={early_stopping_rounds}"
            )
            raise ValueError(
                f"{given} is not supported with backend="
                f"'lightgbm': lightgbm.dask has no early stopping (LightGBM 4.7). Use "
                f"backend='xgboost', or pass early_stopping_rounds=None and choose the number of "
                f"rounds from evals_result_."
            )
        client = _client()
        check_workers(client, ("gbdt_plrank", backend))
        column = group if isinstance(group, str) else None
        X, group = ranker_group(X, group)  # None: as_dask_arrays refuses it
        data = _queries(X, y, group, item_groups, where="training data", gain=options.gain)
        evals = []
        for i, item in enumerate(eval_set or ()):
            if not isinstance(item, (tuple, list)) or len(item) != 3:
                raise ValueError(
                    f"eval_set[{i}] must be a tuple (X, y, qid) of dask collections: every eval "
                    f"set needs its query ids, but {type(item).__name__} "
                    f"{'of length ' + str(len(item)) if isinstance(item, (tuple, list)) else ''}"
                    f" is given."
                )
            X_i, y_i, group_i = item
            X_i, group_i = ranker_group(
                X_i, group_i, where=f" of eval_set[{i}]", fitted_column=column
            )
            evals.append(_queries(X_i, y_i, group_i, where=f"eval_set[{i}]", gain=options.gain))
        self.n_features_in_ = int(data.X.shape[1])
        trained = train(backend, client, settings, data, evals, plan)
        self.group_column_ = column
        self._keep(trained, plan=plan, n_queries=int(data.sizes.shape[0]))
        return self

    def predict(self, X: Any) -> Any:
        """Raw margins: a dask array for a dask collection, else as
        :meth:`~gbdt_plrank.PLRankRanker.predict`."""
        if not (isinstance(X, da.Array) or hasattr(X, "to_dask_array")):
            return super().predict(X)
        booster = self._fitted_model()
        X = drop_group_column(X, getattr(self, "group_column_", None))
        X = X.to_dask_array(lengths=True) if hasattr(X, "to_dask_array") else X
        if X.ndim != 2 or X.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X must have shape (n, {self.n_features_in_}) as in fit, but has shape {X.shape}."
            )
        return margins(self.backend, booster, X)

    def to_local(self) -> PLRankRanker:
        """A fitted :class:`~gbdt_plrank.PLRankRanker` holding the same booster."""
        self._fitted_model()
        local = PLRankRanker(**self.get_params())
        for name in (
            "n_features_in_",
            "booster_",
            "best_iteration_",
            "evals_result_",
            "feature_importances_",
            "group_column_",
        ):
            setattr(local, name, getattr(self, name))
        return local
