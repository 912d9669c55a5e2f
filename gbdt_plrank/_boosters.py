"""The two boosters behind :class:`~gbdt_plrank.PLRankRanker`, behind one small interface.

Each backend turns the ranker's named settings into its native parameters, trains with a
:class:`~gbdt_plrank.PLRankObjective` and NDCG@K evaluation (early stopping optional), and returns
a standalone booster that holds only the rounds it predicts with and no reference to the
objective, so that pickling it and the booster's own save/load both round-trip exactly.

- XGBoost: ``xgboost.train(..., obj=objective)`` with ``base_score=0``, ``eval_metric="ndcg@K"``
  and ``qid`` on every DMatrix (``XGBRanker`` refuses callable objectives). Early stopping watches
  the last eval set (XGBoost's rule); the model is sliced to its best round.
- LightGBM: ``lightgbm.train({"objective": objective, "metric": "ndcg", "eval_at": [K]})`` with
  ``group`` sizes on every Dataset. Early stopping stops when any eval set has not improved for
  the given number of rounds (LightGBM's rule); the model is cut at its best round.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, ClassVar, Protocol

import numpy as np
import scipy.sparse as sp

from ._compat import require
from ._groups import Groups

__all__ = ["BACKENDS", "Backend", "BoosterSettings", "QueryData", "Trained"]

History = dict[str, dict[str, list[float]]]


@dataclass(frozen=True)
class QueryData:
    """Rows grouped by query, as both boosters need them.

    Attributes
    ----------
    X : array or CSR matrix of shape (n, n_features)
        Rows sorted by query (stable within a query).
    y : float64 array of shape (n,)
        Labels in the same order.
    sizes : int64 array of shape (n_queries,)
        Positive query sizes, in order.
    """

    X: np.ndarray | sp.csr_matrix
    y: np.ndarray
    sizes: np.ndarray

    @classmethod
    def grouped(cls, X: np.ndarray | sp.csr_matrix, y: np.ndarray, groups: Groups) -> QueryData:
        """The rows of ``X``, ``y`` in the grouped order of ``groups`` (empty groups dropped)."""
        sizes = groups.sizes
        return cls(X[groups.order], groups.to_sorted(y), sizes[sizes > 0].astype(np.int64))

    @property
    def qid(self) -> np.ndarray:
        """Non-decreasing per-row query ids 0, 0, ..., 1, ... (XGBoost's ``qid``)."""
        return np.repeat(np.arange(self.sizes.shape[0], dtype=np.int64), self.sizes)


@dataclass(frozen=True)
class BoosterSettings:
    """The ranker's booster settings; ``None`` leaves the booster's own default.

    ``n_threads`` is a positive thread count or ``None``; ``params`` are further native
    parameters, applied last.
    """

    learning_rate: float
    max_depth: int | None
    num_leaves: int | None
    min_child_weight: float | None
    reg_alpha: float | None
    reg_lambda: float | None
    min_split_gain: float | None
    subsample: float | None
    colsample_bytree: float | None
    n_threads: int | None
    seed: int
    params: Mapping[str, Any]

    def named(self) -> dict[str, Any]:
        """The settings that are set (not ``None``) except ``params``, by the ranker's names."""
        return {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if f.name != "params" and getattr(self, f.name) is not None
        }


@dataclass(frozen=True)
class Trained:
    """A fitted booster and what training recorded.

    Attributes
    ----------
    booster : xgboost.Booster or lightgbm.Booster
        Holds exactly the rounds used for prediction.
    best_iteration : int or None
        0-based best round under early stopping, else ``None``.
    history : dict
        ``{"valid_i": {"ndcg@K": [value per round]}}`` for the i-th eval set.
    """

    booster: Any
    best_iteration: int | None
    history: History


class Backend(Protocol):
    """What the ranker needs from a booster library."""

    name: str

    def train(
        self,
        settings: BoosterSettings,
        data: QueryData,
        evals: Sequence[QueryData],
        *,
        objective: Callable[..., Any],
        K: int,
        gain: str,
        n_estimators: int,
        early_stopping_rounds: int | None,
    ) -> Trained: ...

    def margins(self, booster: Any, X: Any, *, n_threads: int | None) -> np.ndarray: ...

    def importances(self, booster: Any, n_features: int) -> np.ndarray: ...


def _native_params(
    backend: str,
    settings: BoosterSettings,
    names: Mapping[str, str],
    defaults: Mapping[str, Any],
    fixed: Mapping[str, Any],
    reserved: Sequence[str] = (),
) -> dict[str, Any]:
    """Defaults, then the named settings in native names, then ``settings.params``, then ``fixed``.

    ``fixed`` and ``reserved`` are what the ranker itself controls; ``settings.params`` may not
    touch them.
    """
    controlled = [*fixed, *reserved]
    clash = sorted(set(settings.params) & set(controlled))
    if clash:
        raise ValueError(
            f"params must not set {', '.join(map(repr, clash))}: the ranker sets "
            f"{', '.join(map(repr, controlled))} for {backend} itself (use K, N, metric, gain, "
            f"hessian, n_estimators and early_stopping_rounds instead)."
        )
    params = dict(defaults)
    params.update({names[k]: v for k, v in settings.named().items()})
    params.update(settings.params)
    params.update(fixed)
    return params


def _library(name: str) -> Any:
    """The booster library, or an error saying how to install it."""
    return require(name, purpose=f"PLRankRanker(backend={name!r})")


def _normalised(gains: np.ndarray) -> np.ndarray:
    total = float(gains.sum())
    return gains / total if total > 0 else gains


class XGBoostBackend:
    """``xgboost.train`` with a callable objective."""

    name = "xgboost"
    NAMES: ClassVar[dict[str, str]] = {
        "learning_rate": "eta",
        "max_depth": "max_depth",
        "num_leaves": "max_leaves",
        "min_child_weight": "min_child_weight",
        "reg_alpha": "alpha",
        "reg_lambda": "lambda",
        "min_split_gain": "gamma",
        "subsample": "subsample",
        "colsample_bytree": "colsample_bytree",
        "n_threads": "nthread",
        "seed": "seed",
    }

    def train(
        self,
        settings: BoosterSettings,
        data: QueryData,
        evals: Sequence[QueryData],
        *,
        objective: Callable[..., Any],
        K: int,
        gain: str,
        n_estimators: int,
        early_stopping_rounds: int | None,
    ) -> Trained:
        xgboost = _library(self.name)
        fixed = {
            "objective": "reg:squarederror",  # unused: obj= supplies the gradients
            "base_score": 0.0,
            "eval_metric": f"ndcg@{K}",
            "ndcg_exp_gain": gain == "exp",
            "disable_default_eval_metric": 1,
        }
        params = _native_params(self.name, settings, self.NAMES, {}, fixed)
        history: History = {}
        booster = xgboost.train(
            params,
            self._dmatrix(data),
            n_estimators,
            evals=[(self._dmatrix(e), f"valid_{i}") for i, e in enumerate(evals)],
            obj=objective,
            early_stopping_rounds=early_stopping_rounds,
            evals_result=history,
            verbose_eval=False,
        )
        best = None
        if early_stopping_rounds is not None:
            best = int(booster.attr("best_iteration"))
            booster = booster[: best + 1]
        return Trained(booster, best, _plain(history))

    @staticmethod
    def _dmatrix(data: QueryData) -> Any:
        return _library("xgboost").DMatrix(data.X, label=data.y, qid=data.qid, missing=np.nan)

    def margins(self, booster: Any, X: Any, *, n_threads: int | None) -> np.ndarray:
        if n_threads is not None:
            booster.set_param({"nthread": n_threads})
        out = booster.inplace_predict(X, predict_type="margin", missing=np.nan)
        return np.asarray(out, dtype=np.float64)

    def importances(self, booster: Any, n_features: int) -> np.ndarray:
        gains = np.zeros(n_features)
        for name, gain in booster.get_score(importance_type="total_gain").items():
            gains[int(name[1:])] = gain  # default feature names f0, f1, ...
        return _normalised(gains)


class LightGBMBackend:
    """``lightgbm.train`` with a callable objective in ``params``."""

    name = "lightgbm"
    NAMES: ClassVar[dict[str, str]] = {
        "learning_rate": "learning_rate",
        "max_depth": "max_depth",
        "num_leaves": "num_leaves",
        "min_child_weight": "min_sum_hessian_in_leaf",
        "reg_alpha": "lambda_l1",
        "reg_lambda": "lambda_l2",
        "min_split_gain": "min_gain_to_split",
        "subsample": "bagging_fraction",
        "colsample_bytree": "feature_fraction",
        "n_threads": "num_threads",
        "seed": "seed",
    }

    def train(
        self,
        settings: BoosterSettings,
        data: QueryData,
        evals: Sequence[QueryData],
        *,
        objective: Callable[..., Any],
        K: int,
        gain: str,
        n_estimators: int,
        early_stopping_rounds: int | None,
    ) -> Trained:
        lightgbm = _library(self.name)
        top = max(int(np.max(d.y, initial=0)) for d in (data, *evals))
        fixed = {
            "objective": objective,
            "metric": "ndcg",
            "eval_at": [K],
            "label_gain": [2.0**i - 1.0 if gain == "exp" else float(i) for i in range(top + 1)],
        }
        defaults = {"verbose": -1, "deterministic": True}
        if settings.subsample is not None:
            defaults["bagging_freq"] = 1  # LightGBM ignores bagging_fraction without it
        rounds_keys = ("num_iterations", "early_stopping_round")
        params = _native_params(self.name, settings, self.NAMES, defaults, fixed, rounds_keys)
        train_set = self._training_set(data, params)
        history: dict[str, Any] = {}
        callbacks = [lightgbm.record_evaluation(history)]
        if early_stopping_rounds is not None:
            callbacks.append(lightgbm.early_stopping(early_stopping_rounds, verbose=False))
        booster = lightgbm.train(
            params,
            train_set,
            n_estimators,
            valid_sets=[self._dataset(e, reference=train_set) for e in evals],
            valid_names=[f"valid_{i}" for i in range(len(evals))],
            callbacks=callbacks,
        )
        stopped = early_stopping_rounds is not None and booster.best_iteration > 0  # not in dart
        best = booster.best_iteration - 1 if stopped else None
        rounds = booster.current_iteration() if best is None else best + 1
        # Rebuilt from its text form: only the kept rounds, and no reference to the objective.
        standalone = lightgbm.Booster(model_str=booster.model_to_string(num_iteration=rounds))
        return Trained(standalone, best, _plain(history))

    @staticmethod
    def _dataset(data: QueryData, *, reference: Any = None, params: Any = None) -> Any:
        return _library("lightgbm").Dataset(
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
                f"{params.get('min_data_in_bin', 3)}), and LightGBM cannot train a callable "
                f"objective without one. Pass more rows, or lower them through params."
            )
        return train_set

    def margins(self, booster: Any, X: Any, *, n_threads: int | None) -> np.ndarray:
        extra = {} if n_threads is None else {"num_threads": n_threads}
        if sp.issparse(X):
            X = sp.csr_matrix(X)  # LightGBM predicts sparse arrays only after a warning
        return np.asarray(booster.predict(X, raw_score=True, **extra), dtype=np.float64)

    def importances(self, booster: Any, n_features: int) -> np.ndarray:
        gains = np.asarray(booster.feature_importance(importance_type="gain"), dtype=np.float64)
        return _normalised(gains)


def _plain(history: Mapping[str, Mapping[str, Sequence[float]]]) -> History:
    """Plain dicts of float lists (both libraries' records, in one form)."""
    return {
        name: {metric: [float(v) for v in values] for metric, values in per.items()}
        for name, per in history.items()
    }


BACKENDS: dict[str, Backend] = {"xgboost": XGBoostBackend(), "lightgbm": LightGBMBackend()}
