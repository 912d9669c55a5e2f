"""The one place where :mod:`gbdt_plrank.dask` meets the single-machine backend layer.

The native parameters and the result (best round, history, a standalone booster) come from the
single-machine backends of ``gbdt_plrank._backends``; only the training call is
``xgboost.dask.train`` / ``lightgbm.dask.DaskLGBMRanker`` instead. Prediction reuses the
single-machine backends block by block.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import dask.array as da
import numpy as np

from .._backends import (
    BACKENDS,
    BoosterSettings,
    LightGBMBackend,
    Plan,
    Trained,
    XGBoostBackend,
    eval_name,
)
from .._util.compat import require

__all__ = ["DaskQueries", "margins", "train"]


@dataclass(frozen=True)
class DaskQueries:
    """Rows in partitions of whole queries, each partition grouped by query.

    Attributes
    ----------
    X, y : dask arrays
    keys : float32 dask array
        Each row's global query index (non-decreasing within a partition: XGBoost's ``qid``).
    sizes : int64 dask array
        Query sizes, one chunk per partition of ``X`` (LightGBM's ``group``).
    item_groups : float32 dask array or None
        Each row's item group as the index of its id among the distinct ids, for group
        fairness (XGBoost's ``label_upper_bound``, as in one process).
    """

    X: da.Array
    y: da.Array
    keys: da.Array
    sizes: da.Array
    item_groups: da.Array | None = None


def _xgboost(
    client: Any,
    settings: BoosterSettings,
    data: DaskQueries,
    evals: Sequence[DaskQueries],
    plan: Plan,
) -> Trained:
    dxgb = require("xgboost.dask", purpose="DaskPLRankRanker(backend='xgboost')")
    backend = XGBoostBackend()
    params, obj = backend.params(settings, plan)

    def dmatrix(d: DaskQueries, **extra: Any) -> Any:
        qid = d.keys.astype(np.int64)
        return dxgb.DaskDMatrix(client, d.X, d.y, qid=qid, missing=np.nan, **extra)

    start = time.perf_counter()
    rows = {"label_lower_bound": data.keys}
    if data.item_groups is not None:
        rows[backend.item_groups_field] = data.item_groups
    out = dxgb.train(
        client,
        params,
        dmatrix(data, **rows),
        plan.n_estimators,
        evals=[(dmatrix(e), eval_name(i)) for i, e in enumerate(evals)],
        obj=obj,
        verbose_eval=plan.verbose or False,
        callbacks=backend.early_stopping(plan, params) or None,
    )
    return backend.trained(out["booster"], plan, out["history"], time.perf_counter() - start)


def _lightgbm(
    client: Any,
    settings: BoosterSettings,
    data: DaskQueries,
    evals: Sequence[DaskQueries],
    plan: Plan,
) -> Trained:
    lightgbm = require("lightgbm", purpose="DaskPLRankRanker(backend='lightgbm')")
    backend = LightGBMBackend()
    top = int(max(d.y.max() for d in (data, *evals)).compute())
    # LightGBM's Dask API hands the sample weights (the keys) to the four-argument form only.
    params = backend.params(
        settings, replace(plan, objective=plan.objective.lgbm_ranker), top_label=top
    )
    # lightgbm.dask gives each worker's booster that worker's threads, whatever num_threads says.
    params.pop("num_threads", None)
    start = time.perf_counter()
    model = lightgbm.DaskLGBMRanker(client=client, n_estimators=plan.n_estimators, **params)
    with warnings.catch_warnings():
        # DaskLGBMRanker passes its own n_jobs (None unless set) on, and lightgbm.dask then
        # warns on every fit that it ignores it: nothing the caller asked for.
        warnings.filterwarnings("ignore", "Parameter n_jobs will be ignored", UserWarning)
        model.fit(
            data.X,
            data.y,
            sample_weight=data.keys,
            group=data.sizes,
            eval_set=[(e.X, e.y) for e in evals] or None,
            eval_group=[e.sizes for e in evals] or None,
            eval_names=[eval_name(i) for i in range(len(evals))] or None,
            callbacks=[lightgbm.log_evaluation(plan.verbose)] if plan.verbose and evals else None,
        )
    return backend.trained(model.booster_, plan, model.evals_result_, time.perf_counter() - start)


_TRAIN = {"xgboost": _xgboost, "lightgbm": _lightgbm}


def train(
    backend: str,
    client: Any,
    settings: BoosterSettings,
    data: DaskQueries,
    evals: Sequence[DaskQueries],
    plan: Plan,
) -> Trained:
    """Train ``backend`` on the cluster of ``client`` with the keyed objective of ``plan``.

    ``plan.objective`` is a :class:`~gbdt_plrank.dask.KeyedPLRankObjective`.
    """
    return _TRAIN[backend](client, settings, data, evals, plan)


def _block_margins(block: np.ndarray, booster: Any, backend: str) -> np.ndarray:
    return BACKENDS[backend].margins(booster, block, n_threads=None)


def margins(backend: str, booster: Any, X: da.Array) -> da.Array:
    """Raw margins of ``booster`` for every row of ``X``, block by block (a dask array)."""
    return X.rechunk({1: -1}).map_blocks(
        _block_margins, booster, backend, drop_axis=1, meta=np.empty(0, dtype=np.float64)
    )
