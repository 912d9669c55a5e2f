"""The one place where :mod:`gbdt_plrank.dask` meets the single-machine booster layer.

It takes the ranker's setting names, their native names and the fixed evaluation parameters
from ``gbdt_plrank._boosters`` and trains with ``xgboost.dask`` / ``lightgbm.dask``; prediction
and feature importances reuse the single-machine backends as they are.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import dask.array as da
import numpy as np

from .._boosters import (
    BACKENDS,
    BoosterSettings,
    LightGBMBackend,
    Plan,
    Trained,
    XGBoostBackend,
    eval_name,
)
from .._boosters._base import plain_history
from .._compat import require
from ._keyed import KeyedPLRankObjective

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
    """

    X: da.Array
    y: da.Array
    keys: da.Array
    sizes: da.Array


def _xgboost(
    client: Any, settings: BoosterSettings, data: DaskQueries, evals: Sequence[DaskQueries], *,
    objective: KeyedPLRankObjective, K: int, gain: str, n_estimators: int,
    early_stopping_rounds: int | None,
) -> Trained:
    dxgb = require("xgboost.dask", purpose="DaskPLRankRanker(backend='xgboost')")
    plan = Plan(objective, K, gain, n_estimators, early_stopping_rounds)
    params, _ = XGBoostBackend().params(settings, plan)

    def dmatrix(d: DaskQueries, **extra: Any) -> Any:
        qid = d.keys.astype(np.int64)
        return dxgb.DaskDMatrix(client, d.X, d.y, qid=qid, missing=np.nan, **extra)

    start = time.perf_counter()
    out = dxgb.train(
        client, params, dmatrix(data, label_lower_bound=data.keys), n_estimators,
        evals=[(dmatrix(e), eval_name(i)) for i, e in enumerate(evals)], obj=objective,
        early_stopping_rounds=early_stopping_rounds, verbose_eval=False,
    )
    seconds = time.perf_counter() - start
    booster, best = out["booster"], None
    if early_stopping_rounds is not None:
        best = int(booster.attr("best_iteration"))
        booster = booster[: best + 1]
    return Trained(booster, best, plain_history(out["history"], {}), seconds)


def _lightgbm(
    client: Any, settings: BoosterSettings, data: DaskQueries, evals: Sequence[DaskQueries], *,
    objective: KeyedPLRankObjective, K: int, gain: str, n_estimators: int,
    early_stopping_rounds: int | None,
) -> Trained:
    lightgbm = require("lightgbm", purpose="DaskPLRankRanker(backend='lightgbm')")
    if early_stopping_rounds is not None:
        raise ValueError(
            f"early_stopping_rounds={early_stopping_rounds} is not supported with backend="
            f"'lightgbm': lightgbm.dask does not stop early. Use backend='xgboost', or pass "
            f"early_stopping_rounds=None."
        )
    top = int(max(d.y.max() for d in (data, *evals)).compute())
    plan = Plan(objective.lgbm_ranker, K, gain, n_estimators)
    params = LightGBMBackend().params(settings, plan, top_label=top)
    start = time.perf_counter()
    model = lightgbm.DaskLGBMRanker(client=client, n_estimators=n_estimators, **params)
    model.fit(
        data.X, data.y, sample_weight=data.keys, group=data.sizes,
        eval_set=[(e.X, e.y) for e in evals] or None,
        eval_group=[e.sizes for e in evals] or None,
        eval_names=[eval_name(i) for i in range(len(evals))] or None,
    )
    seconds = time.perf_counter() - start
    # Rebuilt from its text form: no reference to the objective, as the single-machine backend.
    booster = lightgbm.Booster(model_str=model.booster_.model_to_string())
    return Trained(booster, None, plain_history(model.evals_result_, {}), seconds)


_TRAIN = {"xgboost": _xgboost, "lightgbm": _lightgbm}


def train(backend: str, client: Any, settings: BoosterSettings, data: DaskQueries,
          evals: Sequence[DaskQueries], **options: Any) -> Trained:
    """Train ``backend`` on the cluster of ``client``; ``options`` as the local backends take."""
    return _TRAIN[backend](client, settings, data, evals, **options)


def _block_margins(block: np.ndarray, booster: Any, backend: str) -> np.ndarray:
    return BACKENDS[backend].margins(booster, block, n_threads=None)


def margins(backend: str, booster: Any, X: da.Array) -> da.Array:
    """Raw margins of ``booster`` for every row of ``X``, block by block (a dask array)."""
    return X.rechunk({1: -1}).map_blocks(
        _block_margins, booster, backend, drop_axis=1, meta=np.empty(0, dtype=np.float64)
    )


def importances(backend: str, booster: Any, n_features: int) -> np.ndarray:
    """Normalised total-gain importances, as the single-machine ranker reports them."""
    return BACKENDS[backend].importances(booster, n_features)
