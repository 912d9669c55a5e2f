"""What every booster backend shares: the data, the settings, the result and the interface.

One table, :data:`NATIVE_NAMES`, says what each shared setting is called in each library; a setting
a library has no counterpart for is not passed to it. ``num_leaves`` is XGBoost's ``max_leaves``
(a limit on the leaves of a depth-wise tree, XGBoost's documented equivalent of LightGBM's
``num_leaves``): left unset (``None``), XGBoost grows up to ``max_depth`` and LightGBM keeps its
default of 31 leaves.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol, TypeVar

import numpy as np
from tqdm.auto import tqdm

from .._groups import Split
from .._ranking_metric import RankingMetric
from .._util.compat import require
from .._util.validation import check_group_ptr, check_item_groups, check_labels
from ._parameters import ROUNDS

__all__ = [
    "MAX_ITEM_GROUPS",
    "NATIVE_NAMES",
    "Backend",
    "BoosterSettings",
    "EvalMetric",
    "History",
    "LibraryBackend",
    "NativeNames",
    "Objective",
    "Plan",
    "QueryFields",
    "Split",
    "Trained",
    "checked_queries",
    "eval_name",
    "group_indices",
    "holds",
    "library",
    "metric_name",
    "native_params",
    "normalised",
    "progress",
    "query_weights",
    "timed",
]

T = TypeVar("T")

History = dict[str, dict[str, list[float]]]

#: A callable objective ``f(preds, data) -> (grad, hess)`` or the library's own objective name.
Objective = Callable[..., Any] | str


class NativeNames(NamedTuple):
    """A shared setting's name in each backend's library, by the backend's name (None: no
    counterpart, and the setting is not passed; a network has no trees)."""

    xgboost: str | None = None
    lightgbm: str | None = None
    catboost: str | None = None
    torch: str | None = None


#: Shared setting -> its name in XGBoost, LightGBM, CatBoost and the torch network backend.
NATIVE_NAMES: dict[str, NativeNames] = {
    "learning_rate": NativeNames(xgboost="eta", lightgbm="learning_rate", catboost="learning_rate"),
    "max_depth": NativeNames(xgboost="max_depth", lightgbm="max_depth", catboost="depth"),
    "num_leaves": NativeNames(xgboost="max_leaves", lightgbm="num_leaves"),
    "min_child_weight": NativeNames(xgboost="min_child_weight", lightgbm="min_sum_hessian_in_leaf"),
    "reg_alpha": NativeNames(xgboost="alpha", lightgbm="lambda_l1"),
    "reg_lambda": NativeNames(xgboost="lambda", lightgbm="lambda_l2", catboost="l2_leaf_reg"),
    "min_split_gain": NativeNames(xgboost="gamma", lightgbm="min_gain_to_split"),
    "subsample": NativeNames(
        xgboost="subsample", lightgbm="bagging_fraction", catboost="subsample"
    ),
    "colsample_bytree": NativeNames(xgboost="colsample_bytree", lightgbm="feature_fraction"),
    "n_threads": NativeNames(
        xgboost="nthread", lightgbm="num_threads", catboost="thread_count", torch="n_threads"
    ),
    "seed": NativeNames(xgboost="seed", lightgbm="seed", catboost="random_seed", torch="seed"),
}


def eval_name(i: int) -> str:
    """The name of the ``i``-th evaluation set in histories and callbacks: ``"valid_<i>"``."""
    return f"valid_{i}"


def metric_name(K: int) -> str:
    """The evaluation metric's name in every :class:`Trained` history: ``"ndcg@<K>"``.

    The name of NDCG@K (:attr:`~gbdt_plrank._ranking_metric.RankingMetric.name`), which is also
    the name of the libraries' own NDCG@K.
    """
    return RankingMetric("ndcg", K, "exp").name


@dataclass(frozen=True)
class BoosterSettings:
    """Shared booster settings by their common names; a setting left out keeps the library's
    default.

    ``trees`` holds shared tree settings (:data:`~gbdt_plrank._backends._parameters.TREE_SETTINGS`)
    as a surface's schema checked them (``None``: the library's default); ``n_threads`` is a
    positive thread count or ``None``; ``params`` are further native parameters, applied after
    the named settings.
    """

    trees: Mapping[str, Any] = field(default_factory=dict)
    n_threads: int | None = None
    seed: int = 0
    params: Mapping[str, Any] = field(default_factory=dict)

    def tree(self, name: str) -> Any:
        """The tree setting ``name``, or None (the library's default)."""
        return self.trees.get(name)

    def named(self) -> dict[str, Any]:
        """The settings that are set (not ``None``) except ``params``, by their common names."""
        named = {**self.trees, "n_threads": self.n_threads, "seed": self.seed}
        return {name: value for name, value in named.items() if value is not None}


#: An evaluation metric of the ranking objectives: ``f(preds, data)`` -> ``(name, value)`` for
#: ``xgboost.train(custom_metric=)``, ``(name, value, True)`` for ``lightgbm.train(feval=)``
#: (higher is better for both).
EvalMetric = Callable[[np.ndarray, Any], tuple[Any, ...]]


@dataclass(frozen=True)
class Plan:
    """What to train: the objective, the evaluation and the number of rounds.

    The rounds and the stopping values come checked by the schema of the surface that built the
    plan (:mod:`gbdt_plrank._backends._parameters`); their defaults are
    :data:`~gbdt_plrank._backends._parameters.ROUNDS`, the libraries' own rule. Early stopping is
    one rule for every library (``EarlyStopper``; :doc:`/guide/boosters`, "No round kept before
    2 / eta").

    Attributes
    ----------
    objective : callable or str
        A callable ``f(preds, data) -> (grad, hess)`` or the library's own objective name. The
        data objects a backend builds carry their splits' item groups
        (:attr:`QueryFields.item_groups`), which the objective reads with their labels.
    K : int
        Cut-off of the library's NDCG evaluated on every eval set after each round (when
        ``metrics`` is empty).
    gain : {"exp", "linear"}
        Gain of a label in that NDCG: ``2**label - 1`` or ``label``.
    n_estimators : int
        Boosting rounds (at most, with early stopping).
    early_stopping_rounds : int or None
        The patience: stop this many rounds after the best one and keep it; ``None`` trains
        every round.
    callbacks : sequence
        The library's own callbacks, called after each round.
    metrics : sequence of callables
        Evaluation metrics of the package (:data:`~gbdt_plrank._backends.EvalMetric`, e.g. a
        PL-Rank objective's ``ranking_metric`` and ``expected_metric``) computed on every eval
        set after each round, in place of the library's NDCG@K; early stopping watches the last.
    verbose : int
        0: quiet. N >= 1: print the eval sets' values every N rounds in the library's own format,
        or without eval sets show a progress bar (:func:`~gbdt_plrank._backends.progress`).
    min_rounds, min_delta, patience_rate : int or "auto", float, float
        With early stopping: the first round that may be kept (``"auto"``: ceil(2 / the learning
        rate the library trains with), ``min_rounds_of``), the least gain that makes a round the
        best, and the rate the patience grows at with the best round; 0 is each library's rule.
    """

    objective: Objective
    K: int
    gain: str = "exp"
    n_estimators: int = ROUNDS.n_estimators
    early_stopping_rounds: int | None = ROUNDS.early_stopping_rounds
    callbacks: Sequence[Any] = ()
    metrics: Sequence[EvalMetric] = ()
    verbose: int = 0
    min_rounds: int | str = ROUNDS.min_rounds
    min_delta: float = ROUNDS.min_delta
    patience_rate: float = ROUNDS.patience_rate


@dataclass(frozen=True)
class Trained:
    """A fitted booster and what training recorded.

    Attributes
    ----------
    booster : xgboost.Booster, lightgbm.Booster, catboost.CatBoost or _torch.Network
        Holds exactly the rounds used for prediction (up to the best round under early stopping).
    best_iteration : int or None
        0-based best round under early stopping, else ``None``.
    history : dict
        ``{eval_name(i): {metric_name(K): [value per round]}}`` for the i-th eval set; the
        library's record (any mappings of sequences of numbers) is stored as plain dicts of
        float lists.
    seconds : float
        Wall time of the library's training call, evaluation included.
    """

    booster: Any
    best_iteration: int | None
    history: History
    seconds: float

    def __post_init__(self) -> None:
        object.__setattr__(
            self,
            "history",
            {
                name: {metric: [float(v) for v in values] for metric, values in per.items()}
                for name, per in self.history.items()
            },
        )

    @property
    def rounds(self) -> int:
        """Rounds kept: the best round + 1 under early stopping, else every round run."""
        if self.best_iteration is not None:
            return self.best_iteration + 1
        curves = [c for per in self.history.values() for c in per.values()]
        return len(curves[0]) if curves else 0


class QueryFields(NamedTuple):
    """What a ranking objective or metric reads from a library's data object.

    The item groups travel with the rows as the labels do (as XGBoost's
    ``_wrap_evaluation_matrices`` builds every eval set with its metadata): each backend builds
    its data objects with their split's item groups (XGBoost's ``label_upper_bound``, a row
    field that reaches every Dask worker and that a callable objective leaves out of training;
    a LightGBM Dataset of the backend's own class; the torch backend's split itself) and reads
    them back here.
    """

    #: Query boundaries ``[0, ..., n]``, or None when the data has no query groups.
    group_ptr: np.ndarray | None
    #: Labels ``(n,)``.
    labels: np.ndarray
    #: The data's weights as the library stores them (None without), see
    #: :func:`gbdt_plrank._backends.query_weights`.
    weights: np.ndarray | None
    #: Each row's item group as the data carries it (None without): its id, or in XGBoost's
    #: float32 field the index of its id among the split's distinct ids (:func:`group_indices`),
    #: which orders a query's groups as the ids do.
    item_groups: np.ndarray | None = None

    def copy(self) -> QueryFields:
        """The fields as arrays of their own, not views of the library's buffers."""
        return QueryFields(*(None if f is None else np.array(f) for f in self))

    def same_as(self, other: QueryFields | None) -> bool:
        """Whether ``other`` holds the same boundaries, labels and weights (None: never).

        What a cache of a data object compares on every call, so that a set changed in place
        (``set_label``, ``set_weight``, ``set_group``) is read again: one vectorised
        comparison per field.
        """
        if other is None:
            return False
        for now, then in zip(self, other):
            if (now is None) != (then is None):
                return False
            if now is not None and not np.array_equal(np.asarray(now), then):
                return False
        return True


class Backend(Protocol):
    """What the rankers, the harness, the tuner and the objectives need from a booster library."""

    #: The library's name (``"xgboost"``, ``"lightgbm"``, ``"catboost"``, ``"torch"``).
    name: str
    #: Native parameters the backend sets itself (and their aliases): refused in ``params``.
    reserved: frozenset[str]

    def holds_data(self, data: object) -> bool:
        """Whether ``data`` is one of the library's training-data objects."""
        ...

    def holds_booster(self, booster: object) -> bool:
        """Whether ``booster`` is one of the library's trained models."""
        ...

    def query_fields(self, data: Any) -> QueryFields:
        """The query boundaries, labels, weights and item groups of one of the library's data
        objects."""
        ...

    def boosted_rounds(self, booster: Any) -> int:
        """The rounds ``booster`` holds: the index of the round that continuing it runs next."""
        ...

    def continued_rounds(self, data: Any) -> int | None:
        """The rounds of the booster a training on ``data`` continues, as the library records it
        on its data (0: a training from scratch); None where the library does not say."""
        ...

    def base_margins(self, data: Any) -> np.ndarray | None:
        """The margins ``data`` itself starts a training from (XGBoost's ``base_margin``), or
        None: none, or none told apart from a continued booster's (LightGBM keeps both in
        ``init_score``, and tells a continued training by :meth:`continued_rounds`)."""
        ...

    def metric_result(self, name: str, value: float) -> tuple[Any, ...]:
        """What the library's custom evaluation metrics return for ``value`` (higher is better)."""
        ...

    def train(
        self, settings: BoosterSettings, data: Split, evals: Sequence[Split], plan: Plan
    ) -> Trained:
        """Train on ``data``, evaluate ``evals`` after every round, as ``plan`` says."""
        ...

    def margins(self, booster: Any, X: Any, *, n_threads: int | None) -> np.ndarray:
        """Raw margins (float64) of ``booster`` for the rows of ``X``."""
        ...

    def importances(self, booster: Any, n_features: int) -> np.ndarray:
        """Total split gain of each feature, divided by the sum over features."""
        ...


class LibraryBackend:
    """The base of the tree libraries' backends: the library's module, objects and parameters.

    A subclass names its library (``name``, its module), the type names of its training data
    (``data_type``) and of its trained models (``booster_type``) and the native parameters it sets
    itself (``reserved``), and reports each feature's total gain (:meth:`total_gains`, normalised
    here); the rest of :class:`Backend` is the library's own.
    """

    name: str
    data_type: str
    booster_type: str
    reserved: frozenset[str]

    @classmethod
    def module(cls) -> Any:
        """The library's module, or an error saying how to install it (``library``)."""
        return library(cls.name)

    def native_params(
        self, settings: BoosterSettings, *, defaults: Mapping[str, Any], fixed: Mapping[str, Any]
    ) -> dict[str, Any]:
        """The library's parameters of ``settings`` (:func:`native_params`, with ``reserved``)."""
        return native_params(
            self.name, settings, reserved=self.reserved, defaults=defaults, fixed=fixed
        )

    def holds_data(self, data: object) -> bool:
        """Whether ``data`` is one of the library's training-data objects (``holds``)."""
        return holds(self.name, self.data_type, data)

    def holds_booster(self, booster: object) -> bool:
        """Whether ``booster`` is one of the library's trained models (``holds``)."""
        return holds(self.name, self.booster_type, booster)

    def continued_rounds(self, data: Any) -> int | None:
        """None: the library does not record on its data which booster a training continues."""
        return None

    def base_margins(self, data: Any) -> np.ndarray | None:
        """None: the library's data holds no starting margins of its own."""
        return None

    def importances(self, booster: Any, n_features: int) -> np.ndarray:
        """:meth:`total_gains` divided by their sum (all zeros stay zeros)."""
        return normalised(np.asarray(self.total_gains(booster, n_features), dtype=np.float64))

    def total_gains(self, booster: Any, n_features: int) -> np.ndarray:
        """Total split gain of each of the ``n_features`` features, as the library reports it."""
        raise NotImplementedError


def checked_queries(
    fields: QueryFields, *, gain: str, where: str, signed: bool | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]:
    """The labels, query boundaries (int64), query weights and item groups (int64, or None) of
    a data object, ``where``.

    Raises
    ------
    ValueError
        When the data has no query groups (``where`` names it), for labels that break
        :func:`~gbdt_plrank._util.validation.check_labels`' rules with ``gain`` and ``signed``,
        malformed boundaries, weights that break :func:`query_weights`' rules, or item groups
        that are not one integer >= 0 per row (the data may hold a part of the rows, of one
        group).
    """
    if fields.group_ptr is None:
        raise ValueError(
            f"{where} has no query groups: set qid (XGBoost) or group (LightGBM), or every row "
            f"would be scored as one query."
        )
    labels = check_labels(fields.labels, gain=gain, signed=signed)
    ptr = check_group_ptr(fields.group_ptr, labels.shape[0])
    ids = (
        None
        if fields.item_groups is None
        else check_item_groups(
            fields.item_groups, labels.shape[0], name=f"the item groups of {where}", part=True
        )
    )
    return labels, ptr, query_weights(fields._replace(group_ptr=ptr)), ids


#: Item groups ride in XGBoost's float32 row field as indices, exact below this.
MAX_ITEM_GROUPS = 2**24


def group_indices(item_groups: np.ndarray) -> np.ndarray:
    """Each row's item group as the index of its id among the distinct ids.

    The ids are :attr:`QueryFields.item_groups`.

    The order of the ids is kept, so the groups of a query compare (and are numbered) as the
    ids are: the fairness terms read the same groups.

    Raises
    ------
    ValueError
        For more than ``MAX_ITEM_GROUPS`` (:math:`2^{24}`) distinct ids.
    """
    ids, index = np.unique(item_groups, return_inverse=True)
    if ids.shape[0] > MAX_ITEM_GROUPS:
        raise ValueError(
            f"item_groups must hold at most {MAX_ITEM_GROUPS} distinct groups (the boosters' row "
            f"field holds their indices exactly up to there), but hold {ids.shape[0]}."
        )
    return index.ravel()


def query_weights(fields: QueryFields) -> np.ndarray | None:
    """One weight per query from a data object's weights, or None when it has none.

    XGBoost stores one weight per query group; LightGBM one per row, which must then be the same
    for every row of a query (LightGBM's own query weights are their mean). A ranking objective
    scales a query's gradient and Hessian by its weight; it has no use for per-document ones.

    Raises
    ------
    ValueError
        For weights that are not finite and >= 0, or that differ within a query.
    """
    w, ptr = fields.weights, fields.group_ptr
    if w is None or ptr is None:
        return None
    w = np.asarray(w, dtype=np.float64)
    G, n = ptr.shape[0] - 1, int(ptr[-1])
    bad = ~np.isfinite(w) | (w < 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"weights must be finite and >= 0, but weight {i} is {float(w[i])!r}.")
    if w.shape[0] == G:
        return w
    if w.shape[0] != n:
        raise ValueError(
            f"weights must be one per query ({G}) or one per row ({n}), but {w.shape[0]} are given."
        )
    sizes = np.diff(ptr)
    first = w[ptr[:-1][sizes > 0]]
    differs = np.flatnonzero(np.repeat(first, sizes[sizes > 0]) != w)
    if differs.size:
        row = int(differs[0])
        q = int(np.searchsorted(ptr, row, side="right") - 1)
        raise ValueError(
            f"weights must be one per query: the ranking objectives and metrics weigh whole "
            f"queries and have no per-document weights, but row {row} of query {q} has weight "
            f"{float(w[row])!r} where the query's first row has {float(w[ptr[q]])!r}."
        )
    out = np.zeros(G)
    out[sizes > 0] = first
    return out


def progress(plan: Plan, n_evals: int) -> tuple[int, Any]:
    """What a backend shows of a fit's progress: the period of its eval log, and a bar.

    The one rule of every backend: with ``plan.verbose`` = N >= 1 and eval sets, the library
    prints their values every N rounds (period N, no bar); with no eval set, a tqdm bar of the
    rounds on stderr (period 0), which the backend advances after each round and closes; with
    ``plan.verbose`` = 0 neither.

    Returns
    -------
    (int, tqdm or None)
        The period of the eval log (0: none) and the progress bar (None: none).
    """
    if not plan.verbose:
        return 0, None
    if n_evals:
        return plan.verbose, None
    return 0, tqdm(total=plan.n_estimators, desc="rounds", unit="round", disable=False)


def timed(fit: Callable[[], T], bar: Any = None) -> tuple[T, float]:
    """``fit()`` and its wall-clock seconds, the progress ``bar`` (:func:`progress`) closed after.

    The bar (None: none) is closed however the fit ends, an error included.
    """
    start = time.perf_counter()
    try:
        out = fit()
    finally:
        if bar is not None:
            bar.close()
    return out, time.perf_counter() - start


def holds(module: str, type_name: str, obj: object) -> bool:
    """Whether ``obj`` is a ``module.type_name``, without importing ``module``.

    An object can only be one of a library's types once the library is loaded, so the backends'
    ``holds_*`` need not import every library.
    """
    lib = sys.modules.get(module)
    return lib is not None and isinstance(obj, getattr(lib, type_name))


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
    params = dict(defaults)
    for setting, value in settings.named().items():
        native = getattr(NATIVE_NAMES[setting], backend)
        if native is not None:
            params[native] = value
    params.update(settings.params)
    params.update(fixed)
    return params


def normalised(gains: np.ndarray) -> np.ndarray:
    """Feature importances divided by their sum (all zeros stay zeros)."""
    total = float(gains.sum())
    return gains / total if total > 0 else gains
