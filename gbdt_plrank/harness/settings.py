"""The settings every experiment of the harness shares, read from TOML into validated models.

The tables ``[trees]`` (:class:`TreeSettings`, the booster settings of every method),
``[plrank]`` (:class:`PLRankSettings`) and ``[pirank]`` (:class:`PiRankSettings`), the per-method
native parameters (``[params.<method>]``, :func:`read_params`), and the rules that tie a method's
objective options together (:func:`check_objectives`). The comparison
(:mod:`.compare.config`), the fairness frontier (:mod:`.frontier.config`) and the experiment on
clicks (:mod:`.clicks.config`) build their configurations from them, on
:class:`ExperimentConfig`, the keys they share.

The models are pydantic schemas (:mod:`gbdt_plrank._util.schema`): an unknown key, or a value that
breaks its rule, raises :class:`ConfigError` naming the key, the value and the rule (or the allowed
keys).
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, Field

from .._backends import BACKENDS, TREE_SETTINGS, BoosterSettings
from .._backends._parameters import (
    PATIENCE_RATE,
    EarlyStoppingRounds,
    LearningRate,
    MaxDepth,
    MinChildWeight,
    MinDelta,
    MinRounds,
    NEstimators,
    NumLeaves,
    PatienceRate,
    RegLambda,
    StoppingMetric,
    Subsample,
)
from .._training.options import PLRankFields, PLRankOptions
from .._training.pirank_objective import PIRANK_HESSIANS, pirank_objective
from .._training.plrank_plan import stopping_rule
from .._util.schema import ConfigError, Schema, check_keys, one_of, read_toml, validate
from .methods import METHODS, OWN_OBJECTIVES, PIRANK, PLRANK, Method

__all__ = [
    "SETTINGS",
    "ConfigError",
    "CutOffs",
    "ExperimentConfig",
    "Folds",
    "PLRankSettings",
    "PiRankSettings",
    "PositiveInt",
    "Text",
    "TreeSettings",
    "check_objective_options",
    "check_objectives",
    "items",
    "method_options",
    "method_settings",
    "objective_settings",
    "read_config_table",
    "read_params",
]


def _as_tuple(value: Any) -> Any:
    """TOML arrays arrive as lists; the models hold tuples (and a single integer as one item)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return (value,)
    return tuple(value) if isinstance(value, list) else value


def _distinct(items: tuple[Any, ...]) -> tuple[Any, ...]:
    repeated = sorted({repr(v) for v in items if items.count(v) > 1})
    if repeated:
        raise ValueError(f"{', '.join(repeated)} is repeated")
    return items


def _known_methods(names: tuple[str, ...]) -> tuple[str, ...]:
    unknown = [n for n in names if n not in METHODS]
    if unknown:
        raise ValueError(f"{unknown[0]!r} is not a method")
    return names


def items(item: Any, *, rule: str, known: bool = False) -> Any:
    """A TOML array (or one integer) read as a non-empty tuple of distinct items."""
    names = _known_methods if known else _distinct
    return Annotated[
        tuple[item, ...],
        BeforeValidator(_as_tuple),
        AfterValidator(_distinct),
        AfterValidator(names),
        Field(min_length=1, description=rule),
    ]


PositiveInt = Annotated[int, Field(ge=1)]
Text = Annotated[str, Field(min_length=1)]
#: LETOR folds: one integer from 1 to 5 or a list of distinct ones.
Folds = items(
    Annotated[int, Field(ge=1, le=5)],
    rule="an integer from 1 to 5 or a non-empty list of distinct ones",
)
#: Cut-offs: one integer >= 1 or a list of distinct ones.
CutOffs = items(PositiveInt, rule="an integer >= 1 or a non-empty list of distinct ones")


class TreeSettings(Schema):
    """Booster settings shared by every method of a comparison.

    Each field has the rule of its parameter, declared once for the rankers and the harness
    (``gbdt_plrank._backends._parameters``; ``rounds`` is ``n_estimators``), and this table's
    own default. Each library reads them under its own names (the backend layer's table
    ``NATIVE_NAMES``); a setting a library has no counterpart for is not passed to it. A tree
    setting that is ``None`` is not passed either: the library keeps its own default.
    ``num_leaves`` is unset by default (XGBoost: no limit besides ``max_depth``; LightGBM: 31);
    :meth:`library_defaults` unsets every tree setting.

    Every method stops by the same rule, the stopping callbacks' and the ranker's: the best
    validation round from round ``min_rounds`` on (``"auto"``: ``ceil(2 / learning_rate)``, none
    for CatBoost, which chooses its rate in training), a gain counted only above ``min_delta``,
    and a stop ``max(early_stopping_rounds, ceil(patience_rate * (best round + 1)))`` rounds
    after it (:data:`~gbdt_plrank.PATIENCE_RATE` by default). The rule and how its defaults were
    chosen: :doc:`/guide/boosters`, "No round kept before 2 / eta".
    """

    rounds: NEstimators = 1000
    learning_rate: LearningRate = 0.05
    max_depth: MaxDepth = 6
    num_leaves: NumLeaves
    min_child_weight: MinChildWeight = 0.1
    reg_lambda: RegLambda = Field(1.0, alias="lambda")
    subsample: Subsample = 1.0
    early_stopping_rounds: EarlyStoppingRounds = 25
    min_rounds: MinRounds = "auto"
    min_delta: MinDelta
    patience_rate: PatienceRate = PATIENCE_RATE
    n_jobs: int | None = Field(None, ge=1, description="an integer >= 1")

    @classmethod
    def library_defaults(cls, **settings: Any) -> TreeSettings:
        """Every tree setting unset: each library trains at its own default tree settings.

        XGBoost at eta 0.3, depth 6, min_child_weight 1, lambda 1; LightGBM at learning_rate
        0.1, 31 leaves, no depth limit, min_sum_hessian_in_leaf 1e-3, lambda_l2 0; CatBoost at
        its own defaults. ``settings`` sets the others (``rounds``, ``early_stopping_rounds``,
        ``n_jobs``) and may set a tree setting back.
        """
        unset = dict.fromkeys(cls._trees(), None)
        return cls(**{**unset, **settings})

    @classmethod
    def _trees(cls) -> tuple[str, ...]:
        """The shared tree settings this table holds."""
        return tuple(name for name in cls.model_fields if name in TREE_SETTINGS)

    def booster_settings(self, *, seed: int, params: Mapping[str, Any]) -> BoosterSettings:
        """The backend layer's settings for one training with ``seed`` and native ``params``."""
        return BoosterSettings(
            trees={name: getattr(self, name) for name in self._trees()},
            n_threads=self.n_jobs,
            seed=seed,
            params=dict(params),
        )

    def native_params(self, library: str, *, seed: int = 0) -> dict[str, Any]:
        """The tree settings, threads and ``seed`` as ``library``'s own parameters.

        For a training outside the harness (``xgboost.train``, ``lightgbm.train``) at the
        harness's trees: the names come from the backend layer's one table
        (:data:`~gbdt_plrank._backends.NATIVE_NAMES`), and a setting that is ``None`` or has no
        counterpart in ``library`` is left out. Objective, metric and rounds are the caller's.

        Raises
        ------
        ValueError
            When ``library`` is not one of the backends' libraries.
        """
        if library not in BACKENDS:
            raise ValueError(f"library must be {one_of(tuple(BACKENDS))}, but {library!r} is given")
        settings = self.booster_settings(seed=seed, params={})
        return BACKENDS[library].native_params(settings, defaults={}, fixed={})


class PLRankSettings(PLRankFields):
    """The ``[plrank]`` table: the PL-Rank methods' objective options and how they stop.

    Every option of :class:`~gbdt_plrank.PLRankOptions` but ``K``, which is the comparison's
    ``k`` (``train_K="auto"`` trains at 2k, k with fairness), and ``stopping_metric``: what the
    PL-Rank methods' early stopping watches on the validation split, ``"standardized"`` the
    expected NDCG@k of the policy of their standardised margins
    (:attr:`~gbdt_plrank.PLRankObjective.standardized_metric`), ``"policy"`` their policy's
    expected NDCG@k (minus the fairness weight times the fairness loss;
    :attr:`~gbdt_plrank.PLRankObjective.expected_metric`), ``"ranking"`` NDCG@k of the ranking
    by score, as every other method; ``"auto"`` (default) is the README's path,
    ``"standardized"``, or ``"policy"`` with fairness
    (:func:`~gbdt_plrank._training.plrank_plan.stopping_rule`).
    """

    stopping_metric: StoppingMetric

    @property
    def stopping(self) -> str:
        """The stopping metric, with ``"auto"`` resolved."""
        return stopping_rule(self.stopping_metric, fairness=self.fairness).metric

    def options(self, k: int) -> PLRankOptions:
        """The objective's options at the comparison's cut-off ``k``."""
        return PLRankOptions.checked(K=k, **self.model_dump(exclude={"stopping_metric"}))


#: The defaults of :func:`~gbdt_plrank.pirank_objective`, which ``[pirank]`` starts from.
_PIRANK_DEFAULTS = {
    name: p.default for name, p in inspect.signature(pirank_objective).parameters.items()
}


class PiRankSettings(Schema):
    """Options of :func:`~gbdt_plrank.pirank_objective` (its ``K`` is the comparison's ``k``)."""

    tau: float = Field(
        _PIRANK_DEFAULTS["tau"], gt=0, allow_inf_nan=False, description="a finite number > 0"
    )
    hessian: Literal[PIRANK_HESSIANS] = Field(
        _PIRANK_DEFAULTS["hessian"], description=one_of(PIRANK_HESSIANS)
    )


#: A key of :data:`~gbdt_plrank.harness.methods.OWN_OBJECTIVES` -> the schema of its settings.
SETTINGS: dict[str, type[Schema]] = {PLRANK: PLRankSettings, PIRANK: PiRankSettings}


class ExperimentConfig(Schema):
    """The keys every experiment's configuration shares, with the same rules and defaults.

    The LETOR ``folds``, ``drop_empty_test_queries`` and the tables ``[trees]``, ``[plrank]``
    and ``[params]`` (method name -> its native parameters, read by :func:`read_params`' rules)
    of a comparison (:mod:`.compare.config`), a fairness frontier (:mod:`.frontier.config`) and
    the experiment on clicks (:mod:`.clicks.config`).
    """

    folds: Folds = (1,)
    drop_empty_test_queries: bool = Field(True, description="true or false")
    trees: TreeSettings = Field(default_factory=TreeSettings, description="a table")
    plrank: PLRankSettings = Field(default_factory=PLRankSettings, description="a table")
    params: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="a table of method name -> table of parameters"
    )

    def shared_settings(self) -> dict[str, Any]:
        """What of these keys changes a trained model or its score, as plain JSON-able data.

        Every key but ``folds`` (which selects runs) and ``trees.n_jobs`` (which changes only
        their speed); ``trees.min_rounds``, ``trees.min_delta`` and ``trees.patience_rate`` only
        when they are not 0, so that the settings of a folder written before they existed (the
        rule with 0) stay the same.
        """
        unchanged = {
            name
            for name in ("min_rounds", "min_delta", "patience_rate")
            if getattr(self.trees, name) == 0
        }
        return {
            "trees": self.trees.model_dump(by_alias=True, exclude={"n_jobs", *unchanged}),
            "plrank": self.plrank.model_dump(),
            "params": {m: self.params[m] for m in sorted(self.params)},
            "drop_empty_test_queries": self.drop_empty_test_queries,
        }


def check_objective_options(objective: str, key: str, value: Any) -> dict[str, Any]:
    """The options of ``objective`` set in ``value`` (a table at key path ``key``), checked.

    Each option is checked by its rule, over the defaults of the other options.

    Raises
    ------
    ConfigError
        On an unknown option (listing the allowed ones) or a value that breaks its rule.
    """
    model = SETTINGS[objective]
    if not isinstance(value, dict):
        raise ConfigError(f"{key} must be a table, but {value!r} is given.")
    checked = validate(model, {**model().model_dump(), **value}, source=f"[{key}]", prefix=key)
    return {name: getattr(checked, name) for name in value}


def objective_settings(
    plrank: PLRankSettings | None = None, pirank: PiRankSettings | None = None
) -> dict[str, Schema]:
    """Each of the package's objectives -> its settings table (the defaults where ``None``)."""
    return {PLRANK: plrank or PLRankSettings(), PIRANK: pirank or PiRankSettings()}


def method_settings(
    method: Method, settings: Mapping[str, Schema], params: Mapping[str, Any] | None
) -> Schema:
    """The settings of the package's objective that ``method`` trains with.

    Its settings table (``settings[method.objective]``: ``[plrank]``, ``[pirank]``), then the
    method's Hessian mode, then its own sub-table of the native parameters ``params`` (if any),
    each over the ones before.

    Raises
    ------
    ConfigError
        When the combination breaks a rule that ties options together.
    """
    table = settings[method.objective]
    chosen = table.model_dump()
    if method.hessian is not None:
        chosen["hessian"] = method.hessian
    chosen.update((params or {}).get(method.objective, {}))
    where = f"[{method.objective}] with [params.{method.name}.{method.objective}]"
    return validate(type(table), chosen, source=where)


def method_options(
    method: Method, settings: Mapping[str, Schema], params: Mapping[str, Any] | None, *, k: int
) -> PLRankOptions:
    """The PL-Rank options a PL-Rank ``method`` trains with at the cut-off ``k``.

    :func:`method_settings` at ``k``; a network's (``plrank-nn``) with ``N="auto"`` resolved for
    a network (:meth:`~gbdt_plrank.PLRankOptions.for_network`), as
    :class:`~gbdt_plrank.nn.PLRankMLPRanker` does.
    """
    options = method_settings(method, settings, params).options(k)
    return options.for_network() if method.library == "torch" else options


def _scalar(value: Any) -> bool:
    return isinstance(value, (str, int, float, bool))


def _params(value: Any, *, key: str) -> dict[str, dict[str, Any]]:
    """Method name -> table of native parameters (scalars), none of them set by the harness.

    A method of one of the package's objectives may hold a sub-table of its options, named
    after the objective (``plrank``, ``pirank``).
    """
    if not isinstance(value, dict):
        raise ConfigError(
            f"{key or 'the file'} must be a table of method name -> table of parameters, "
            f"but {value!r} is given."
        )
    out = {}
    for name, table in value.items():
        if name not in METHODS:
            raise ConfigError(
                f"{key or 'the tables'} must be named after methods, but {name!r} is not one; "
                f"allowed: {', '.join(METHODS)}."
            )
        where = f"{key}.{name}" if key else name
        if not isinstance(table, dict):
            raise ConfigError(
                f"{where} must be a table of native parameters, but {table!r} is given."
            )
        method = METHODS[name]
        checked = {}
        for param, v in table.items():
            if param in OWN_OBJECTIVES and method.objective == param:
                checked[param] = check_objective_options(param, f"{where}.{param}", v)
            elif param in OWN_OBJECTIVES:
                raise ConfigError(
                    f"{where}.{param} must not be set: {name!r} is not a "
                    f"{OWN_OBJECTIVES[param]} method."
                )
            elif param in BACKENDS[method.library].reserved:
                raise ConfigError(
                    f"{where} must not set {param!r}: the objective, evaluation metric, seed, "
                    f"rounds and early stopping are the harness's (set seeds, k, trees.rounds "
                    f"and trees.early_stopping_rounds in the configuration)."
                )
            elif not _scalar(v):
                raise ConfigError(
                    f"{where}.{param} must be a string, number or boolean, but {v!r} is given."
                )
            else:
                checked[param] = v
        out[name] = checked
    return out


def read_params(path: str | Path) -> dict[str, dict[str, Any]]:
    """Per-method native parameters from a TOML file of ``[method-name]`` tables.

    The format ``compare --params FILE`` reads (and a tuner writes)::

        [plrank-xgb]
        eta = 0.03
        max_depth = 5

        [plrank-xgb.plrank]  # objective options of a PL-Rank method
        N = 200

        [pirank-xgb.pirank]  # objective options of a PiRank method
        tau = 0.5

    Raises
    ------
    ConfigError
        When the file is missing, is not TOML, names an unknown method or sets a parameter the
        harness sets itself.
    """
    path = Path(path)
    raw = read_toml(path, what="parameter file")
    try:
        return _params(raw, key="")
    except ConfigError as err:
        raise ConfigError(f"{path}: {err}") from None


def read_config_table(
    path: Path, overrides: Mapping[str, Any] | None, *, schema: type[Schema]
) -> dict[str, Any]:
    """A configuration file's table with ``overrides`` applied and ``params`` checked.

    ``out`` defaults to ``runs/<file name without extension>``; ``overrides`` replace values by
    key path (``"trees.rounds"``); ``params`` is read by the rules of :func:`read_params`. A
    value of the file that an override replaces is checked by its rule in ``schema`` first
    (:func:`~gbdt_plrank._util.schema.check_keys`), so that it is refused even where the
    override hides it (a typo in the file's ``methods`` under ``--methods``).

    Raises
    ------
    ConfigError
        Naming the file, the key, the value and the rule.
    """
    raw = read_toml(path)
    raw.setdefault("out", str(Path("runs") / path.stem))
    raw["params"] = _params(raw.get("params", {}), key="params")
    hidden = [k for k in overrides or {} if k.rsplit(".", 1)[-1] in _table_of(raw, k, make=False)]
    if hidden:
        written = copy.deepcopy(raw)
        for dotted, value in (overrides or {}).items():
            _table_of(written, dotted).setdefault(dotted.rsplit(".", 1)[-1], value)
        try:
            check_keys(schema, written, hidden, source=str(path))
        except ConfigError as err:
            raise ConfigError(f"{path}, as written (before the overrides): {err}") from None
    for dotted, value in (overrides or {}).items():
        _table_of(raw, dotted)[dotted.rsplit(".", 1)[-1]] = value
    return raw


def _table_of(raw: dict[str, Any], dotted: str, *, make: bool = True) -> dict[str, Any]:
    """The (sub)table of ``raw`` that holds the key path ``dotted``'s last key (made if none,
    else an empty table where ``make`` is False)."""
    table = raw
    for section in dotted.split(".")[:-1]:
        if not make and not isinstance(table.get(section), dict):
            return {}
        table = table.setdefault(section, {})
    return table


def check_objectives(
    methods: Sequence[str],
    settings: Mapping[str, Schema],
    params: Mapping[str, Mapping[str, Any]],
    *,
    k: int,
    item_groups: bool = False,
) -> None:
    """Check the combined objective options of every method of the package's objectives.

    Each table is valid on its own; this checks the rules that tie options together (e.g.
    ``fairness`` needs ``metric`` "ndcg" or "dcg" and ``N >= 2``), after the settings table
    (:func:`objective_settings`) and a method's own sub-table are combined, at the cut-off ``k``.
    A group fairness loss needs item groups, which only a fairness frontier with a ``protected``
    table gives (``item_groups=True``).

    Raises
    ------
    ConfigError
        Naming the method and the rule.
    """
    for name in methods:
        method = METHODS[name]
        if method.objective not in OWN_OBJECTIVES:
            continue
        try:
            chosen = method_settings(method, settings, params.get(name))
            if isinstance(chosen, PLRankSettings):
                spec = chosen.options(k).fairness_spec
                if spec is not None and spec.term.needs_item_groups and not item_groups:
                    raise ValueError(
                        f"fairness={chosen.fairness!r} needs item groups, which comparisons do "
                        "not take; draw its frontier with gbdt-plrank fairness and a protected "
                        "table, or train with PLRankRanker.fit(..., item_groups=g)"
                    )
        except ValueError as err:
            objective = method.objective
            raise ConfigError(
                f"the {OWN_OBJECTIVES[objective]} options of {name!r} "
                f"([{objective}] with [params.{name}.{objective}]) break a rule: {err}"
            ) from None
