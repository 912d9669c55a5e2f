"""What every booster backend shares: the data, the settings, the result and the interface.

One table, :data:`NATIVE_NAMES`, says what each shared setting is called in each library; a setting
a library has no counterpart for is not passed to it. ``num_leaves`` is XGBoost's ``max_leaves``
(a limit on the leaves of a depth-wise tree, XGBoost's documented equivalent of LightGBM's
``num_leaves``): left unset (``None``), XGBoost grows up to ``max_depth`` and LightGBM keeps its
default of 31 leaves.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Protocol

import numpy as np
import scipy.sparse as sp

from .._compat import require
from .._groups import Groups

__all__ = [
    "NATIVE_NAMES",
    "Backend",
    "BoosterSettings",
    "History",
    "Objective",
    "Plan",
    "QueryData",
    "Trained",
    "eval_name",
    "library",
    "metric_name",
    "native_params",
    "normalised",
    "plain_history",
]

History = dict[str, dict[str, list[float]]]

#: A callable objective ``f(preds, data) -> (grad, hess)`` or the library's own objective name.
Objective = Callable[..., Any] | str

#: Shared setting -> its name in XGBoost, LightGBM and CatBoost (None: no counterpart, not passed).
NATIVE_NAMES: dict[str, tuple[str | None, str | None, str | None]] = {
    #                    XGBoost             LightGBM                   CatBoost
    "learning_rate":    ("eta",              "learning_rate",           "learning_rate"),
    "max_depth":        ("max_depth",        "max_depth",               "depth"),
    "num_leaves":       ("max_leaves",       "num_leaves",              None),
    "min_child_weight": ("min_child_weight", "min_sum_hessian_in_leaf", None),
    "reg_alpha":        ("alpha",            "lambda_l1",               None),
    "reg_lambda":       ("lambda",           "lambda_l2",               "l2_leaf_reg"),
    "min_split_gain":   ("gamma",            "min_gain_to_split",       None),
    "subsample":        ("subsample",        "bagging_fraction",        "subsample"),
    "colsample_bytree": ("colsample_bytree", "feature_fraction",        None),
    "n_threads":        ("nthread",          "num_threads",             "thread_count"),
    "seed":             ("seed",             "seed",                    "random_seed"),
}  # fmt: skip

_COLUMN = {"xgboost": 0, "lightgbm": 1, "catboost": 2}


def eval_name(i: int) -> str:
    """The name of the ``i``-th evaluation set in histories and callbacks: ``"valid_<i>"``."""
    return f"valid_{i}"


def metric_name(K: int) -> str:
    """The evaluation metric's name in every :class:`Trained` history: ``"ndcg@<K>"``."""
    return f"ndcg@{K}"


@dataclass(frozen=True)
class QueryData:
    """Rows grouped by query, as every booster needs them.

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
    """Shared booster settings by their common names; ``None`` leaves the library's default.

    ``n_threads`` is a positive thread count or ``None``; ``params`` are further native
    parameters, applied after the named settings.
    """

    learning_rate: float | None = None
    max_depth: int | None = None
    num_leaves: int | None = None
    min_child_weight: float | None = None
    reg_alpha: float | None = None
    reg_lambda: float | None = None
    min_split_gain: float | None = None
    subsample: float | None = None
    colsample_bytree: float | None = None
    n_threads: int | None = None
    seed: int = 0
    params: Mapping[str, Any] = field(default_factory=dict)

    def named(self) -> dict[str, Any]:
        """The settings that are set (not ``None``) except ``params``, by their common names."""
        return {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if f.name != "params" and getattr(self, f.name) is not None
        }


@dataclass(frozen=True)
class Plan:
    """What to train: the objective, the evaluation and the number of rounds.

    Attributes
    ----------
    objective : callable or str
        A callable ``f(preds, data) -> (grad, hess)`` or the library's own objective name.
    K : int
        Cut-off of the NDCG evaluated on every eval set after each round.
    gain : {"exp", "linear"}
        Gain of a label in that NDCG: ``2**label - 1`` or ``label``.
    n_estimators : int
        Boosting rounds (at most, with early stopping).
    early_stopping_rounds : int or None
        Stop when NDCG@K has not improved for this many rounds (each library's rule), keep the
        best round; ``None`` trains every round.
    callbacks : sequence
        The library's own callbacks, called after each round.
    stopping : object or None
        Early stopping on another criterion than NDCG@K, e.g.
        :class:`~gbdt_plrank._policy_value.PolicyStopping`: its ``after_round(booster, iteration)``
        is called after each round (0-based) and stops training by returning True; the booster
        keeps its first ``best_round`` rounds (``best_value`` is the criterion there, ``name``
        its name). It replaces the library's early stopping (``early_stopping_rounds`` is then
        not used).
    """

    objective: Objective
    K: int
    gain: str = "exp"
    n_estimators: int = 100
    early_stopping_rounds: int | None = None
    callbacks: Sequence[Any] = ()
    stopping: Any = None

    @property
    def library_early_stopping(self) -> int | None:
        """The library's own early stopping rounds: None under :attr:`stopping`."""
        return None if self.stopping is not None else self.early_stopping_rounds

    @property
    def stops_early(self) -> bool:
        """Whether training stops early (by the library's rule or :attr:`stopping`)."""
        return self.stopping is not None or self.early_stopping_rounds is not None


@dataclass(frozen=True)
class Trained:
    """A fitted booster and what training recorded.

    Attributes
    ----------
    booster : xgboost.Booster, lightgbm.Booster or catboost.CatBoost
        Holds exactly the rounds used for prediction (up to the best round under early stopping).
    best_iteration : int or None
        0-based best round under early stopping, else ``None``.
    history : dict
        ``{eval_name(i): {metric_name(K): [value per round]}}`` for the i-th eval set.
    seconds : float
        Wall time of the library's training call, evaluation included.
    """

    booster: Any
    best_iteration: int | None
    history: History
    seconds: float

    @property
    def rounds(self) -> int:
        """Rounds kept: the best round + 1 under early stopping, else every round run."""
        if self.best_iteration is not None:
            return self.best_iteration + 1
        curves = [c for per in self.history.values() for c in per.values()]
        return len(curves[0]) if curves else 0


class Backend(Protocol):
    """What the ranker, the harness and the tuner need from a booster library."""

    name: str
    #: Native parameters the backend sets itself (and their aliases): refused in ``params``.
    reserved: frozenset[str]

    def train(
        self, settings: BoosterSettings, data: QueryData, evals: Sequence[QueryData], plan: Plan
    ) -> Trained: ...

    def margins(self, booster: Any, X: Any, *, n_threads: int | None) -> np.ndarray: ...

    def importances(self, booster: Any, n_features: int) -> np.ndarray: ...


def library(name: str) -> Any:
    """The booster library, or an error saying how to install it."""
    return require(name, purpose=f"the {name} backend")


def native_params(
    backend: str,
    settings: BoosterSettings,
    *,
    reserved: frozenset[str],
    defaults: Mapping[str, Any],
    fixed: Mapping[str, Any],
) -> dict[str, Any]:
    """Defaults, then the named settings in native names, then ``settings.params``, then ``fixed``.

    ``fixed`` and the ``reserved`` names (with their aliases) are the backend's own; ``params``
    may not touch them.

    Raises
    ------
    ValueError
        When ``settings.params`` sets a reserved parameter.
    """
    clash = sorted(set(settings.params) & (reserved | set(fixed)))
    if clash:
        raise ValueError(
            f"params must not set {', '.join(map(repr, clash))}: the objective, the evaluation "
            f"metric, the seed, the number of rounds and early stopping are set by gbdt_plrank "
            f"for {backend} itself."
        )
    column = _COLUMN[backend]
    params = dict(defaults)
    for setting, value in settings.named().items():
        native = NATIVE_NAMES[setting][column]
        if native is not None:
            params[native] = value
    params.update(settings.params)
    params.update(fixed)
    return params


def normalised(gains: np.ndarray) -> np.ndarray:
    """Feature importances divided by their sum (all zeros stay zeros)."""
    total = float(gains.sum())
    return gains / total if total > 0 else gains


def plain_history(history: Mapping[str, Mapping[str, Sequence[float]]], rename: Mapping[str, str]) -> History:
    """Plain dicts of float lists, metric names mapped through ``rename`` (others kept)."""
    return {
        name: {rename.get(metric, metric): [float(v) for v in values] for metric, values in per.items()}
        for name, per in history.items()
    }
