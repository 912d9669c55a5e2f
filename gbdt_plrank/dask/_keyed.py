"""The PL-Rank objective with stream keys that do not depend on how the data is partitioned.

On a Dask worker the booster calls the objective with the worker's local rows only, so a
query's index inside that local data changes with the partitioning. :func:`keyed_plrank_objective`
keys query ``q``'s random stream by its global query index instead: the rank of its query id
among all query ids, which is also its index in single-process training on rows sorted by query
id (the default keys of :func:`~gbdt_plrank.plrank_objective` and of
:class:`~gbdt_plrank.PLRankRanker`). The same seed then gives the same per-document gradients on
one worker, on several workers and in one process.

The index travels with the rows in a per-row field that the booster carries to every worker and
that does not enter tree building with a callable objective (both checked in the tests):

- XGBoost: ``label_lower_bound`` (read only by the ``survival:aft`` objective and metrics);
- LightGBM: the sample ``weight`` (a callable objective applies weights itself, and this one
  reads them as keys; the ranker evaluates only its eval sets, which carry no weights).

With group fairness the item groups travel in XGBoost's ``label_upper_bound``, the field every
XGBoost data object of the backend layer carries them in (``XGBoostBackend.item_groups_field``),
read with the labels as in one process; ``lightgbm.dask``
carries no second such field. Both fields are float32, so the index is exact below
:data:`MAX_QUERIES` queries (or groups).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._backends import QueryFields, backend_of_data
from .._groups import boundaries
from .._training.objective import PLRankObjective, plrank_objective
from .._training.options import DEFAULTS

__all__ = ["MAX_QUERIES", "KeyedPLRankObjective", "keyed_plrank_objective"]

#: float32 holds every integer below 2**24 exactly.
MAX_QUERIES = 2**24


def _query_keys(row_keys: np.ndarray | None, ptr: np.ndarray, field: str) -> np.ndarray:
    """One int64 key per query from per-row keys; every row of a query must carry the same."""
    n = int(ptr[-1])
    if row_keys is None or row_keys.shape[0] != n:
        raise ValueError(
            f"the keyed PL-Rank objective reads each row's global query index from the "
            f"{field} field, but the training data has none: build it with "
            f"gbdt_plrank.dask.query_keys(qid) in that field (DaskPLRankRanker does this)."
        )
    keys = np.asarray(row_keys, dtype=np.float64)
    first = keys[ptr[:-1]]
    sizes = np.diff(ptr)
    bad = np.flatnonzero(np.repeat(first, sizes) != keys)
    if bad.size or (first < 0).any() or not np.all(first == np.round(first)):
        row = int(bad[0]) if bad.size else int(ptr[np.flatnonzero(first < 0)[0]])
        raise ValueError(
            f"row {row} of the local training data carries the query key {keys[row]!r}, which is "
            f"not the non-negative integer key of the other rows of its query: the {field} field "
            f"must hold gbdt_plrank.dask.query_keys(qid)."
        )
    return first.astype(np.int64)


class KeyedPLRankObjective(PLRankObjective):
    """:class:`~gbdt_plrank.PLRankObjective` keyed by the global query index the data carries.

    Build it with :func:`keyed_plrank_objective`.
    """

    def __repr__(self) -> str:
        return "keyed_" + super().__repr__()

    def __call__(self, preds: np.ndarray, data: Any) -> tuple[np.ndarray, np.ndarray]:
        """The XGBoost ``obj=`` form: keys from ``label_lower_bound`` (the item groups come with
        the labels, from ``label_upper_bound``)."""
        backend = backend_of_data(data)
        if backend.name != "xgboost":
            raise TypeError(
                "with LightGBM pass keyed_plrank_objective(...).lgbm_ranker as the objective "
                "(the keys travel as sample weights), not the objective itself."
            )
        fields = backend.query_fields(data)
        if fields.group_ptr is None:
            return super().__call__(preds, data)  # its error for data without query groups
        bounds = data.get_float_info("label_lower_bound")
        keys = _query_keys(bounds if bounds.size else None, fields.group_ptr, "label_lower_bound")
        return self._step(preds, data, fields, keys)

    def lgbm_ranker(
        self, y_true: np.ndarray, y_pred: np.ndarray, weight: Any, group: Any
    ) -> tuple[np.ndarray, np.ndarray]:
        """The four-argument LightGBM form: keys from the sample weights."""
        if group is None:
            raise ValueError("LightGBM passed no groups: fit with group=sizes.")
        ptr = boundaries(group)
        keys = _query_keys(None if weight is None else np.asarray(weight), ptr, "sample weight")
        return self._step(y_pred, y_true, QueryFields(ptr, y_true, None), keys)


def keyed_plrank_objective(
    K: int = DEFAULTS.K, N: int | str = DEFAULTS.N, **options: Any
) -> KeyedPLRankObjective:
    """A PL-Rank objective for ``xgboost.dask`` / ``lightgbm.dask`` that is partition-independent.

    .. code-block:: python

        X, y, qid = align_queries(X, y, qid)
        keys = query_keys(qid)
        dtrain = xgboost.dask.DaskDMatrix(client, X, y, qid=keys.astype("int64"),
                                          label_lower_bound=keys)
        xgboost.dask.train(client, params, dtrain, 100, obj=keyed_plrank_objective(K=5))

        obj = keyed_plrank_objective(K=5)
        lightgbm.dask.DaskLGBMRanker(objective=obj.lgbm_ranker).fit(
            X, y, group=sizes, sample_weight=keys)

    Takes the arguments of :func:`~gbdt_plrank.plrank_objective`. Round ``r`` of query ``q``
    draws from the stream ``(seed, r, key(q))`` with ``key(q)`` the global query index of
    :func:`~gbdt_plrank.dask.query_keys`.
    """
    plain = plrank_objective(K, N, **options)
    return KeyedPLRankObjective(
        plain.options, seed=plain.seed, n_jobs=plain.n_jobs, device=plain.device
    )
