"""LightGBM: ``lightgbm.train`` with a callable objective in ``params`` or one of LightGBM's own.

Every Dataset carries its ``group`` sizes. Early stopping stops when any eval set has not improved
for the given number of rounds (LightGBM's rule). The returned booster is rebuilt from its text
form: it holds only the kept rounds and no reference to a callable objective, so that pickling it
and LightGBM's own save and load round-trip exactly.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from ._base import (
    BoosterSettings,
    Plan,
    QueryData,
    Trained,
    eval_name,
    library,
    native_params,
    normalised,
    plain_history,
)

__all__ = ["LightGBMBackend"]


class LightGBMBackend:
    """``lightgbm.train`` behind the :class:`~gbdt_plrank._boosters.Backend` interface."""

    name = "lightgbm"
    reserved = frozenset({
        "objective", "objective_type", "app", "application", "loss", "metric", "metrics",
        "metric_types", "eval_at", "ndcg_eval_at", "ndcg_at", "seed", "random_seed",
        "random_state", "num_iterations", "num_iteration", "n_iter", "num_tree", "num_trees",
        "num_round", "num_rounds", "nrounds", "num_boost_round", "n_estimators", "max_iter",
        "early_stopping_round", "early_stopping_rounds", "early_stopping", "n_iter_no_change",
    })

    def params(self, settings: BoosterSettings, plan: Plan, *, top_label: int) -> dict[str, Any]:
        """The native parameters of ``plan`` under ``settings`` (labels up to ``top_label``).

        NDCG@K with the plan's gain is the evaluation metric. Also used by
        :mod:`gbdt_plrank.dask` for ``lightgbm.dask``.
        """
        gains = [2.0**i - 1.0 if plan.gain == "exp" else float(i) for i in range(top_label + 1)]
        fixed = {
            "objective": plan.objective, "metric": "ndcg", "eval_at": [plan.K], "label_gain": gains,
        }
        defaults: dict[str, Any] = {"verbose": -1, "deterministic": True, "force_row_wise": True}
        if settings.subsample is not None and settings.subsample < 1:
            defaults["bagging_freq"] = 1  # LightGBM ignores bagging_fraction without it
        return native_params(
            self.name, settings, reserved=self.reserved, defaults=defaults, fixed=fixed
        )

    def train(
        self, settings: BoosterSettings, data: QueryData, evals: Sequence[QueryData], plan: Plan
    ) -> Trained:
        lightgbm = library(self.name)
        top = max(int(np.max(d.y, initial=0)) for d in (data, *evals))
        params = self.params(settings, plan, top_label=top)
        train_set = self._training_set(data, params)
        history: dict[str, Any] = {}
        hooks = [lightgbm.record_evaluation(history)]
        if plan.library_early_stopping is not None:
            hooks.append(lightgbm.early_stopping(plan.library_early_stopping, verbose=False))
        if plan.stopping is not None:
            hooks.append(self.stopping_callback(plan.stopping))
        start = time.perf_counter()
        booster = lightgbm.train(
            params, train_set, plan.n_estimators,
            valid_sets=[self._dataset(e, reference=train_set) for e in evals],
            valid_names=[eval_name(i) for i in range(len(evals))],
            callbacks=[*hooks, *plan.callbacks],
        )
        seconds = time.perf_counter() - start
        return self.trained(booster, plan, history, seconds)

    @staticmethod
    def trained(booster: Any, plan: Plan, history: Any, seconds: float) -> Trained:
        """The :class:`Trained` result of ``booster``: its kept rounds, rebuilt from text.

        Also used by :mod:`gbdt_plrank.dask` for the booster of ``lightgbm.dask``.
        """
        # the stopping callbacks record the best round in the booster (LightGBM's own: not dart)
        stopped = plan.stops_early and booster.best_iteration > 0
        best = booster.best_iteration - 1 if stopped else None
        rounds = booster.current_iteration() if best is None else best + 1
        model = booster.model_to_string(num_iteration=rounds)
        return Trained(library("lightgbm").Booster(model_str=model), best,
                       plain_history(history, {}), seconds)

    @staticmethod
    def stopping_callback(stopping: Any) -> Any:
        """A training callback stopping when ``stopping.after_round(booster, iteration)`` is True.

        As LightGBM's own early stopping, it raises an ``EarlyStopException`` with the best
        round (from ``stopping.best_round``) when it stops and at the last round, which
        ``lightgbm.train`` records as the booster's ``best_iteration`` (1-based) and
        ``best_score["valid"][stopping.name]``. It runs after LightGBM's own callbacks
        (``record_evaluation`` has order 20, ``early_stopping`` 30), so that the history also
        holds the round it stops at.
        """
        lightgbm = library("lightgbm")

        def after(env: Any) -> None:
            stop = stopping.after_round(env.model, env.iteration)
            if stop or env.iteration == env.end_iteration - 1:
                raise lightgbm.callback.EarlyStopException(
                    stopping.best_round - 1,
                    [("valid", stopping.name, stopping.best_value, True)],
                )

        after.order = 40  # type: ignore[attr-defined]
        return after

    @staticmethod
    def _dataset(data: QueryData, *, reference: Any = None, params: Any = None) -> Any:
        return library("lightgbm").Dataset(
            data.X, data.y, group=data.sizes, reference=reference, params=params
        )

    def _training_set(self, data: QueryData, params: Mapping[str, Any]) -> Any:
        """The constructed training Dataset, refused when no feature can be split on.

        LightGBM 4.7 drops features that are constant or cannot give two leaves of
        ``min_data_in_leaf`` rows; with none left, a callable objective stops it with
        "Check failed: (train_data->num_features()) > (0)". Say so in plain words instead.
        """
        # Built with the parameters lightgbm.train will use, so its binning is the same.
        train_set = self._dataset(data, params={**params, "objective": "none"}).construct()
        if not any(train_set.feature_num_bin(j) for j in range(train_set.num_feature())):
            raise ValueError(
                f"LightGBM finds no feature to split on in these {data.y.shape[0]} rows: every "
                f"feature is constant or has too few rows (min_data_in_leaf="
                f"{params.get('min_data_in_leaf', 20)}, min_data_in_bin="
                f"{params.get('min_data_in_bin', 3)}), and LightGBM cannot train without one. "
                f"Pass more rows, or lower them through params."
            )
        return train_set

    @staticmethod
    def _prediction_input(X: Any, n_threads: int | None) -> tuple[Any, dict[str, Any]]:
        """``X`` as LightGBM predicts it, and the ``predict`` options of ``n_threads``."""
        if sp.issparse(X):
            X = sp.csr_matrix(X)  # LightGBM predicts sparse arrays only after a warning
        return X, ({} if n_threads is None else {"num_threads": n_threads})

    def margins(self, booster: Any, X: Any, *, n_threads: int | None) -> np.ndarray:
        X, extra = self._prediction_input(X, n_threads)
        return np.asarray(booster.predict(X, raw_score=True, **extra), dtype=np.float64)

    def margin_tracker(self, X: Any, *, n_threads: int | None) -> Callable[[Any, int], np.ndarray]:
        """``f(booster, iteration)``: the margins of ``X`` after round ``iteration`` of a training.

        Called after every round, it predicts only the new round's trees and adds them to the
        running sum, in the order LightGBM sums them, so the values are :meth:`margins` of the
        first ``iteration + 1`` rounds (a test checks every round); a call out of turn predicts
        every round. :meth:`margins` would predict every tree again, a cost that grows with the
        rounds.
        """
        X, extra = self._prediction_input(X, n_threads)
        running = {"margins": np.zeros(X.shape[0]), "rounds": 0}

        def margins(booster: Any, iteration: int) -> np.ndarray:
            if iteration == running["rounds"]:
                new = booster.predict(X, start_iteration=iteration, num_iteration=1,
                                      raw_score=True, **extra)
                total = running["margins"] + new
            else:
                total = booster.predict(X, num_iteration=iteration + 1, raw_score=True, **extra)
            running.update(margins=np.asarray(total, dtype=np.float64), rounds=iteration + 1)
            return running["margins"]

        return margins

    def importances(self, booster: Any, n_features: int) -> np.ndarray:
        gains = np.asarray(booster.feature_importance(importance_type="gain"), dtype=np.float64)
        return normalised(gains)
