"""XGBoost: ``xgboost.train`` with a callable objective or one of XGBoost's own.

A callable objective gets ``base_score=0`` (margins are the policy's log-scores from round 0);
every DMatrix carries ``qid``, since XGBoost scores an evaluation DMatrix without it as a single
query, silently, and a split's item groups in ``label_upper_bound``
(``XGBoostBackend.item_groups_field``), where the objective and its metrics read them with the
labels. The evaluation is XGBoost's NDCG@K, or the plan's own metrics as a custom metric
(``custom_metric=``, ``maximize=True``). Early stopping watches the last metric of the last eval
set (XGBoost's rule), and the booster is sliced to its best round. ``XGBRanker`` cannot be used:
it refuses callable objectives.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .._groups import Split
from ._base import (
    BoosterSettings,
    EvalMetric,
    LibraryBackend,
    Plan,
    QueryFields,
    Trained,
    eval_name,
    group_indices,
    metric_name,
    progress,
    timed,
)
from ._stopping import plan_stopper, xgboost_stopping_callback

__all__ = ["XGBoostBackend"]


def _custom_metric(metrics: Sequence[EvalMetric]) -> Any:
    """One ``custom_metric`` that returns every metric's ``(name, value)``, in order."""

    def evaluate(preds: np.ndarray, data: Any) -> list[tuple[str, float]]:
        return [metric(preds, data) for metric in metrics]

    return evaluate


def _advance(xgboost: Any, bar: Any) -> Any:
    """An XGBoost callback that advances the progress ``bar`` after each round."""

    class Advance(xgboost.callback.TrainingCallback):
        def after_iteration(self, model: Any, epoch: int, evals_log: Any) -> bool:
            bar.update(1)
            return False

    return Advance()


class XGBoostBackend(LibraryBackend):
    """``xgboost.train`` behind the :class:`~gbdt_plrank._backends.Backend` interface."""

    name, data_type, booster_type = "xgboost", "DMatrix", "Booster"
    #: The DMatrix field that carries each row's item group (``QueryFields.item_groups``): read
    #: only by the ``survival:aft`` objective and metrics, so a callable objective trains as
    #: without it; it reaches every Dask worker with the rows (:mod:`gbdt_plrank.dask`).
    item_groups_field = "label_upper_bound"
    reserved = frozenset(
        {
            "objective",
            "obj",
            "eval_metric",
            "disable_default_eval_metric",
            "base_score",
            "seed",
            "random_state",
            "num_boost_round",
            "n_estimators",
            "early_stopping_rounds",
        }
    )

    def query_fields(self, data: Any) -> QueryFields:
        """``group_ptr`` (None without ``qid``), labels, weights (one per query group) and item
        groups (:attr:`item_groups_field`)."""
        ptr = data.get_uint_info("group_ptr")
        weight = data.get_weight()
        groups = data.get_float_info(self.item_groups_field)
        return QueryFields(
            ptr if ptr.size else None,
            data.get_label(),
            weight if weight.size else None,
            groups if groups.size else None,
        )

    def boosted_rounds(self, booster: Any) -> int:
        return int(booster.num_boosted_rounds())

    def base_margins(self, data: Any) -> np.ndarray | None:
        """The DMatrix's ``base_margin`` (None without): a training's first margins are the base
        score plus it. XGBoost does not record on a DMatrix whether a training continues a
        booster (``xgb_model=``), so ``continued_rounds`` is None."""
        margins = data.get_base_margin()
        return np.asarray(margins, dtype=np.float64) if margins.size else None

    def metric_result(self, name: str, value: float) -> tuple[str, float]:
        return name, value

    def params(self, settings: BoosterSettings, plan: Plan) -> tuple[dict[str, Any], Any]:
        """The native parameters of ``plan`` under ``settings``, and the ``obj=`` callable or None.

        A callable objective gets ``base_score=0`` and an unused named objective. The evaluation
        metric is NDCG@K, or none when the plan brings its own metrics. Also used by
        :mod:`gbdt_plrank.dask` for ``xgboost.dask.train``.
        """
        fixed: dict[str, Any] = {"disable_default_eval_metric": 1}
        if not plan.metrics:
            fixed.update(eval_metric=metric_name(plan.K), ndcg_exp_gain=plan.gain == "exp")
        if isinstance(plan.objective, str):
            fixed["objective"], obj = plan.objective, None
        else:  # the callable supplies the gradients; the named objective is not used
            fixed.update(objective="reg:squarederror", base_score=0.0)
            obj = plan.objective
        return self.native_params(settings, defaults={}, fixed=fixed), obj

    def train(
        self, settings: BoosterSettings, data: Split, evals: Sequence[Split], plan: Plan
    ) -> Trained:
        xgboost = self.module()
        params, obj = self.params(settings, plan)
        history: dict[str, Any] = {}
        train_set = self._dmatrix(data)
        eval_sets = [(self._dmatrix(e), eval_name(i)) for i, e in enumerate(evals)]
        own = (
            {"custom_metric": _custom_metric(plan.metrics), "maximize": True}
            if plan.metrics
            else {}
        )
        period, bar = progress(plan, len(eval_sets))
        hooks = [] if bar is None else [_advance(xgboost, bar)]
        booster, seconds = timed(
            lambda: xgboost.train(
                params,
                train_set,
                plan.n_estimators,
                evals=eval_sets,
                obj=obj,
                evals_result=history,
                verbose_eval=period or False,
                callbacks=[*plan.callbacks, *self.early_stopping(plan, params), *hooks],
                **own,
            ),
            bar,
        )
        return self.trained(booster, plan, history, seconds)

    def early_stopping(self, plan: Plan, params: Mapping[str, Any]) -> list[Any]:
        """The plan's early stopping as an XGBoost callback (none without), its minimum number of
        rounds resolved from the native ``params``. Also used by :mod:`gbdt_plrank.dask`."""
        stopper = plan_stopper(plan, params=params, library=self.name)
        return [] if stopper is None else [xgboost_stopping_callback(stopper)]

    @staticmethod
    def trained(booster: Any, plan: Plan, history: Any, seconds: float) -> Trained:
        """The :class:`Trained` result of ``booster``, cut at its best round under early stopping.

        Also used by :mod:`gbdt_plrank.dask` for the booster of ``xgboost.dask.train``.
        """
        best = None
        if plan.early_stopping_rounds is not None:  # the callback records the best round
            best = int(booster.attr("best_iteration"))
            booster = booster[: best + 1]
        return Trained(booster, best, history, seconds)

    @classmethod
    def _dmatrix(cls, data: Split) -> Any:
        """The DMatrix of ``data``: its rows, labels, query ids, weights, base margins and item
        groups."""
        names = None if data.feature_names is None else list(data.feature_names)
        groups = (
            {}
            if data.item_groups is None
            else {cls.item_groups_field: group_indices(data.item_groups).astype(np.float32)}
        )
        return cls.module().DMatrix(
            data.X,
            label=data.y,
            qid=data.qid,
            weight=data.weights,
            base_margin=data.base_margin,
            missing=np.nan,
            feature_names=names,
            **groups,
        )

    def margins(self, booster: Any, X: Any, *, n_threads: int | None) -> np.ndarray:
        if n_threads is not None:
            booster.set_param({"nthread": n_threads})
        out = booster.inplace_predict(X, predict_type="margin", missing=np.nan)
        return np.asarray(out, dtype=np.float64)

    def total_gains(self, booster: Any, n_features: int) -> np.ndarray:
        gains = np.zeros(n_features)
        names = booster.feature_names or [f"f{j}" for j in range(n_features)]  # XGBoost's default
        column = {name: j for j, name in enumerate(names)}
        for name, gain in booster.get_score(importance_type="total_gain").items():
            gains[column[name]] = gain
        return gains
