"""The tree and stopping parameters of the rankers and the harness: each rule and default once.

As scikit-learn's ``_parameter_constraints`` declares the rule of every parameter of its
estimators once, this module declares each tree and stopping parameter once, as a type that
carries its rule (pydantic constraints and the rule in words) and its default: the shared tree
settings (``None``: the library's own default), the backend, the number of rounds and how early
stopping ends them. The schemas of the surfaces that take them are built from these types alone:
:class:`TreeRules` (the tree settings), :class:`Rounds` (the rounds and the libraries' own
stopping rule: the defaults of the stopping callbacks and of a
:class:`~gbdt_plrank._backends.Plan`), :class:`RankerParameters` (the defaults of
:class:`~gbdt_plrank.PLRankRanker`, whose signature reads them from :data:`RANKER`) and the
harness's ``[trees]`` table (:class:`gbdt_plrank.harness.TreeSettings`, its own defaults). A
surface that chooses another default writes it in its schema, once; nothing else checks these
parameters: ``gbdt_plrank._util.schema.validate`` checks a surface's values in one call,
its message naming the key, the value and the rule, and what it returns is trusted below.
"""

from __future__ import annotations

from functools import cache
from typing import Annotated, Any, Literal

from pydantic import Field

from .._util.schema import Schema, one_of, validate

__all__ = [
    "HELD_OUT_PATIENCE",
    "PARAMETERS",
    "PATIENCE_RATE",
    "RANKER",
    "RANKER_BACKENDS",
    "ROUNDS",
    "SHALLOW_QUERIES",
    "STOPPING_METRICS",
    "TREE_SETTINGS",
    "RankerParameters",
    "Rounds",
    "TreeRules",
    "check_parameter",
    "holds_out_automatically",
]

#: The backends that take a callable objective (CatBoost has no hook for one).
RANKER_BACKENDS = ("xgboost", "lightgbm")

#: What early stopping watches: the policy's expected metric@K (the objective's
#: ``expected_metric``), the metric@K of the ranking by score (``ranking_metric``), or the
#: expected metric@K of the policy of the standardised margins (``standardized_metric``).
STOPPING_METRICS = ("policy", "ranking", "standardized")

_FINITE_NON_NEGATIVE = Field(
    default=None, ge=0, allow_inf_nan=False, description="a finite number >= 0"
)
_FRACTION = Field(default=None, gt=0, le=1, description="a number in (0, 1]")

# The shared tree settings: None leaves the library's own default.
LearningRate = Annotated[
    float | None, Field(default=None, gt=0, allow_inf_nan=False, description="a finite number > 0")
]
MaxDepth = Annotated[int | None, Field(default=None, ge=1, description="an integer >= 1")]
NumLeaves = Annotated[int | None, Field(default=None, ge=2, description="an integer >= 2")]
MinChildWeight = Annotated[float | None, _FINITE_NON_NEGATIVE]
RegAlpha = Annotated[float | None, _FINITE_NON_NEGATIVE]
RegLambda = Annotated[float | None, _FINITE_NON_NEGATIVE]
MinSplitGain = Annotated[float | None, _FINITE_NON_NEGATIVE]
Subsample = Annotated[float | None, _FRACTION]
ColsampleBytree = Annotated[float | None, _FRACTION]

# The backend, the rounds and how early stopping ends them (the libraries' own rule by default).
Backend = Annotated[
    Literal[RANKER_BACKENDS],  # type: ignore[valid-type]
    Field(default="xgboost", description=one_of(RANKER_BACKENDS)),
]
NEstimators = Annotated[int, Field(default=100, ge=1, description="an integer >= 1")]
EarlyStoppingRounds = Annotated[
    int | None, Field(default=None, ge=1, description="an integer >= 1")
]
StoppingMetric = Annotated[
    Literal[("auto", *STOPPING_METRICS)],  # type: ignore[valid-type]
    Field(default="auto", description=one_of(("auto", *STOPPING_METRICS))),
]
MinRounds = Annotated[
    Annotated[int, Field(ge=0)] | Literal["auto"],
    Field(default=0, description="'auto' or an integer >= 0"),
]
_FINITE_NON_NEGATIVE_FROM_ZERO = Field(
    default=0.0, ge=0, allow_inf_nan=False, description="a finite number >= 0"
)
MinDelta = Annotated[float, _FINITE_NON_NEGATIVE_FROM_ZERO]
PatienceRate = Annotated[float, _FINITE_NON_NEGATIVE_FROM_ZERO]
EarlyStopping = Annotated[
    Literal["auto"] | Annotated[bool, Field(strict=True)],
    Field(default="auto", description="'auto', True or False"),
]
ValidationFraction = Annotated[
    float, Field(default=0.1, gt=0, lt=1, allow_inf_nan=False, description="a number in (0, 1)")
]

#: Each parameter's type, carrying its rule and its default: the one declaration of both.
PARAMETERS: dict[str, Any] = {
    "learning_rate": LearningRate,
    "max_depth": MaxDepth,
    "num_leaves": NumLeaves,
    "min_child_weight": MinChildWeight,
    "reg_alpha": RegAlpha,
    "reg_lambda": RegLambda,
    "min_split_gain": MinSplitGain,
    "subsample": Subsample,
    "colsample_bytree": ColsampleBytree,
    "backend": Backend,
    "n_estimators": NEstimators,
    "early_stopping_rounds": EarlyStoppingRounds,
    "stopping_metric": StoppingMetric,
    "min_rounds": MinRounds,
    "min_delta": MinDelta,
    "patience_rate": PatienceRate,
    "early_stopping": EarlyStopping,
    "validation_fraction": ValidationFraction,
}


class TreeRules(Schema):
    """The shared tree settings, each ``None`` (the library's default) or within its rule."""

    learning_rate: LearningRate
    max_depth: MaxDepth
    num_leaves: NumLeaves
    min_child_weight: MinChildWeight
    reg_alpha: RegAlpha
    reg_lambda: RegLambda
    min_split_gain: MinSplitGain
    subsample: Subsample
    colsample_bytree: ColsampleBytree


#: The shared tree settings' names (what :class:`~gbdt_plrank._backends.BoosterSettings` holds).
TREE_SETTINGS = tuple(TreeRules.model_fields)


class Rounds(Schema):
    """The rounds and each library's own early stopping: the defaults of the stopping callbacks
    and of a :class:`~gbdt_plrank._backends.Plan` (no early stopping, ``min_rounds=0``,
    ``min_delta=0``, ``patience_rate=0``)."""

    n_estimators: NEstimators
    early_stopping_rounds: EarlyStoppingRounds
    min_rounds: MinRounds
    min_delta: MinDelta
    patience_rate: PatienceRate


#: The rate the patience grows at with the best round (``patience_rate``;
#: :class:`~gbdt_plrank._backends._stopping.EarlyStopper`), the ranker's and the harness's
#: default (docs/guide/boosters.md, "No round kept before 2 / eta").
PATIENCE_RATE = 0.5


#: The patience of ``early_stopping=True`` when ``fit`` gets no ``early_stopping_rounds``
#: (scikit-learn's ``HistGradientBoosting*`` default ``n_iter_no_change``); the patience grows
#: with the best round by ``patience_rate`` as with an eval set.
HELD_OUT_PATIENCE = 10


#: ``early_stopping="auto"`` holds out a share of the training queries when there are at least
#: ``queries`` of them (so that the held-out tenth holds at least 20) and they hold at most
#: ``mean_documents`` documents each on average: shallow queries, as LETOR's (20 and 41), where
#: PL-Rank peaks within the default rounds; web-shaped queries (100 and more) are still improving
#: at the last round, so a held-out share costs them more than it saves
#: (:doc:`/guide/performance`, "The first call").
SHALLOW_QUERIES = {"queries": 200, "mean_documents": 64}


def holds_out_automatically(*, n_queries: int, n_documents: int) -> bool:
    """Whether ``early_stopping="auto"`` holds out a share of ``n_queries`` training queries of
    ``n_documents`` documents in all: at least ``SHALLOW_QUERIES["queries"]`` queries of at most
    ``SHALLOW_QUERIES["mean_documents"]`` documents on average."""
    return (
        n_queries >= SHALLOW_QUERIES["queries"]
        and n_documents <= SHALLOW_QUERIES["mean_documents"] * n_queries
    )


class RankerParameters(TreeRules, Rounds):
    """The tree and stopping parameters of :class:`~gbdt_plrank.PLRankRanker`, with its
    defaults (``n_estimators=150``, ``learning_rate=0.2``, ``min_child_weight=1.0``,
    ``reg_lambda=1.0``, ``min_rounds="auto"``, ``patience_rate=PATIENCE_RATE``,
    ``early_stopping="auto"``): checked at
    once by ``fit``, with ``fit``'s ``early_stopping_rounds``. The rounds, rate and leaf
    penalties and the automatic early stopping were chosen on validation against ``XGBRanker()``
    and ``LGBMRanker()`` at their defaults (:doc:`/guide/performance`, "The first call")."""

    backend: Backend
    n_estimators: NEstimators = 150
    learning_rate: LearningRate = 0.2
    min_child_weight: MinChildWeight = 1.0
    reg_lambda: RegLambda = 1.0
    stopping_metric: StoppingMetric
    min_rounds: MinRounds = "auto"
    patience_rate: PatienceRate = PATIENCE_RATE
    early_stopping: EarlyStopping
    validation_fraction: ValidationFraction

    @classmethod
    def checked(cls, **values: Any) -> RankerParameters:
        """The parameters, or a ``ValueError`` naming the first value that breaks its rule."""
        return validate(cls, values, source="the ranker's parameters")


#: The libraries' own rounds and stopping rule, by default.
ROUNDS = Rounds()

#: The ranker's defaults, the one source of its signature's (``n_estimators=RANKER.n_estimators``).
RANKER = RankerParameters()


@cache
def _schema_of(name: str) -> type[Schema]:
    """The schema of the parameter ``name`` alone."""
    return type(
        name, (Schema,), {"__annotations__": {name: PARAMETERS[name]}, "__module__": __name__}
    )


def check_parameter(name: str, value: Any) -> Any:
    """``value`` of the parameter ``name`` checked by its rule alone (``PARAMETERS``).

    Raises
    ------
    ValueError
        Naming the parameter, the value and the rule.
    """
    return getattr(validate(_schema_of(name), {name: value}, source=name), name)
