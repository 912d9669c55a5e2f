"""XGBoost: ``xgboost.train`` with a callable objective or one of XGBoost's own.

A callable objective gets ``base_score=0`` (margins are the policy's log-scores from round 0);
every DMatrix carries ``qid``, since XGBoost scores an evaluation DMatrix without it as a single
query, silently. Early stopping watches the last eval set (XGBoost's rule), and the booster is
sliced to its best round. ``XGBRanker`` cannot be used: it refuses callable objectives.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ._base import (
    BoosterSettings,
    Plan,
    QueryData,
    Trained,
    eval_name,
    library,
    metric_name,
    native_params,
    normalised,
    plain_history,
)

__all__ = ["XGBoostBackend"]


class XGBoostBackend:
    """``xgboost.train`` behind the :class:`~gbdt_plrank._boosters.Backend` interface."""

    name = "xgboost"
    reserved = frozenset({
        "objective", "obj", "eval_metric", "disable_default_eval_metric", "base_score", "seed",
        "random_state", "num_boost_round", "n_estimators", "early_stopping_rounds",
    })

    def params(self, settings: BoosterSettings, plan: Plan) -> tuple[dict[str, Any], Any]:
        """The native parameters of ``plan`` under ``settings``, and the ``obj=`` callable or None.

        A callable objective gets ``base_score=0`` and an unused named objective; NDCG@K is the
        only evaluation metric. Also used by :mod:`gbdt_plrank.dask` for ``xgboost.dask.train``.
        """
        fixed: dict[str, Any] = {
            "eval_metric": metric_name(plan.K),
            "ndcg_exp_gain": plan.gain == "exp",
            "disable_default_eval_metric": 1,
        }
        if isinstance(plan.objective, str):
            fixed["objective"], obj = plan.objective, None
        else:  # the callable supplies the gradients; the named objective is not used
            fixed.update(objective="reg:squarederror", base_score=0.0)
            obj = plan.objective
        params = native_params(
            self.name, settings, reserved=self.reserved, defaults={}, fixed=fixed
        )
        return params, obj

    def train(
        self, settings: BoosterSettings, data: QueryData, evals: Sequence[QueryData], plan: Plan
    ) -> Trained:
        xgboost = library(self.name)
        params, obj = self.params(settings, plan)
        history: dict[str, Any] = {}
        train_set = self._dmatrix(data)
        eval_sets = [(self._dmatrix(e), eval_name(i)) for i, e in enumerate(evals)]
        callbacks = list(plan.callbacks)
        if plan.stopping is not None:
            callbacks.append(self.stopping_callback(plan.stopping))
        start = time.perf_counter()
        booster = xgboost.train(
            params, train_set, plan.n_estimators, evals=eval_sets, obj=obj,
            early_stopping_rounds=plan.library_early_stopping, evals_result=history,
            verbose_eval=False, callbacks=callbacks,
        )
        seconds = time.perf_counter() - start
        return self.trained(booster, plan, history, seconds)

    @staticmethod
    def trained(booster: Any, plan: Plan, history: Any, seconds: float) -> Trained:
        """The :class:`Trained` result of ``booster``, sliced to its best round under early stopping.

        Also used by :mod:`gbdt_plrank.dask` for the booster of ``xgboost.dask.train``.
        """
        best = None
        if plan.stops_early:  # the stopping callbacks record the best round in the booster
            best = int(booster.attr("best_iteration"))
        if best is not None:
            booster = booster[: best + 1]
        return Trained(booster, best, plain_history(history, {}), seconds)

    @staticmethod
    def stopping_callback(stopping: Any) -> Any:
        """A training callback stopping when ``stopping.after_round(booster, iteration)`` is True.

        As XGBoost's own early stopping, it keeps every round and records the best one in the
        booster's ``best_iteration`` (0-based, from ``stopping.best_round``) and ``best_score``
        (``stopping.best_value``) attributes.
        """
        xgboost = library("xgboost")

        class _Stopping(xgboost.callback.TrainingCallback):
            def after_iteration(self, model: Any, epoch: int, evals_log: Any) -> bool:
                return bool(stopping.after_round(model, epoch))

            def after_training(self, model: Any) -> Any:
                if stopping.best_round > 0:
                    model.set_attr(best_iteration=str(stopping.best_round - 1),
                                   best_score=str(stopping.best_value))
                return model

        return _Stopping()

    @staticmethod
    def _dmatrix(data: QueryData) -> Any:
        return library("xgboost").DMatrix(data.X, label=data.y, qid=data.qid, missing=np.nan)

    def margins(self, booster: Any, X: Any, *, n_threads: int | None) -> np.ndarray:
        if n_threads is not None:
            booster.set_param({"nthread": n_threads})
        out = booster.inplace_predict(X, predict_type="margin", missing=np.nan)
        return np.asarray(out, dtype=np.float64)

    def margin_tracker(self, X: Any, *, n_threads: int | None) -> Callable[[Any, int], np.ndarray]:
        """``f(booster, iteration)``: the margins of ``X`` after round ``iteration`` of a training.

        Called after every round, it adds only the new trees: XGBoost caches the predictions of a
        DMatrix in the booster, the same float32 sums as :meth:`margins` of the first
        ``iteration + 1`` rounds (a test checks every round). :meth:`margins` would predict every
        tree again, a cost that grows with the rounds.
        """
        dmatrix = library(self.name).DMatrix(X, missing=np.nan)

        def margins(booster: Any, iteration: int) -> np.ndarray:
            if n_threads is not None:
                booster.set_param({"nthread": n_threads})
            return np.asarray(booster.predict(dmatrix, output_margin=True), dtype=np.float64)

        return margins

    def importances(self, booster: Any, n_features: int) -> np.ndarray:
        gains = np.zeros(n_features)
        for name, gain in booster.get_score(importance_type="total_gain").items():
            gains[int(name[1:])] = gain  # default feature names f0, f1, ...
        return normalised(gains)
