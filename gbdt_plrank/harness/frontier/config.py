"""The description of a fairness frontier (``gbdt-plrank fairness CONFIG``): a validated TOML file.

.. code-block:: toml

    datasets = ["mq2008", "mq2007-agg"]
    folds = [1, 2, 3, 4, 5]
    seeds = 1                              # seeds 0 .. seeds-1
    k = 10                                 # metric cut-off, exposure cut-off, early stopping
    out = "runs/fairness"                  # default: runs/<name of the config file>
    plrank_method = "plrank-xgb"           # the PL-Rank method of both PL-Rank curves
    fairness = "group-disparity"           # the fair curve's loss and the report's measure
    protected = {feature = 41, quantile = 0.5}   # item groups (group-disparity needs them)
    web_groups = {share = 0.4, query_shift = 1.25}  # synthetic web data with a protected group
    fairness_weights = [0.3, 1, 3, 10]
    fair_start = {model = "lambdamart", temperature = 0.25}  # the fair curve's start (default:
                                           # none, from the library's base score)
    temperatures = [0.1, 0.25, 0.5, 1, 2, 4]
    group_offsets = [-2, -1, 0, 1, 2]      # post-hoc offsets of the protected group (with
                                           # protected)
    n_samples = 1000                       # Monte-Carlo rankings per query and policy
    ndcg_tolerance = 0.01                  # the report: a fair policy's post-hoc match at no
                                           # less NDCG may be this much less relevant
    standard_errors = 2                    # the report's verdicts: by more than 2 s.e.

    [trees]                                # as in a comparison
    [plrank]                               # PL-Rank options of both PL-Rank curves
    [params.lambdamart-xgb]                # native parameters of a method, as in a comparison

Unknown keys and values that break their rule raise :class:`~gbdt_plrank._util.schema.ConfigError`
naming the key, the value and the rule.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, field_validator, model_validator

from ..._fairness_terms import fairness_names, fairness_term
from ..._synthetic import WEB_VARIANTS, WebGroups
from ..._training.options import PLRankOptions
from ..._util.schema import ConfigError, Schema, registered, validate
from ..item_groups import ProtectedGroup
from ..methods import METHODS, PLRANK
from ..settings import (
    ExperimentConfig,
    PLRankSettings,
    check_objectives,
    items,
    method_options,
    objective_settings,
    read_config_table,
)

__all__ = ["BASELINES", "FairStart", "FrontierConfig", "load_frontier_config"]

#: The deterministic rankers randomised post hoc: LambdaMART (XGBoost) and LambdaRank (LightGBM).
BASELINES = {"lambdamart": "lambdamart-xgb", "lambdarank": "lambdarank-lgb"}

#: The PL-Rank booster methods at the ``[plrank]`` table's Hessian mode (no ablation).
_PLRANK_METHODS = tuple(
    n
    for n, m in METHODS.items()
    if m.objective == PLRANK and m.hessian is None and m.library in ("xgboost", "lightgbm")
)


def _web_groups(value: Any) -> Any:
    """A ``web_groups`` table as :class:`~gbdt_plrank._synthetic.WebGroups` (its own checks)."""
    if not isinstance(value, dict):
        return value
    unknown = sorted(set(value) - set(WebGroups.__dataclass_fields__))
    if unknown:
        raise ValueError(f"unknown key {unknown[0]!r}; allowed: share, query_shift")
    return WebGroups(**value)


class FairStart(Schema):
    r"""The ``fair_start`` table: the model the fair curve starts from, and its temperature.

    Every fair PL-Rank training then starts from the Plackett-Luce policy
    :math:`\pi(m / (T\sigma))` of the baseline's kept model :math:`m` (``model``, a key of
    :data:`BASELINES`), :math:`\sigma` the root mean within-query spread of its validation
    margins (as the post-hoc grids'), :math:`T` the ``temperature``: those margins are the base
    margins its trees are added to, on every split. The fair objective then moves a policy that
    already ranks well, in as many rounds as fairness needs, instead of learning relevance and
    fairness together from the start.
    """

    model: Literal[tuple(BASELINES)] = Field(  # type: ignore[valid-type]
        "lambdamart", description=f"one of {', '.join(map(repr, BASELINES))}"
    )
    temperature: float = Field(gt=0, allow_inf_nan=False, description="a finite number > 0")

    def describe(self) -> str:
        """The start in words, for the report."""
        return (
            f"the fair PL-Rank policies start from the {self.model} model's policy at temperature "
            f"T={self.temperature:g} (its margins over {self.temperature:g} times their "
            f"validation spread), to which their trees are added"
        )


Weight = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Temperature = Annotated[float, Field(gt=0, allow_inf_nan=False)]
Offset = Annotated[float, Field(allow_inf_nan=False)]


class FrontierConfig(ExperimentConfig):
    """A frontier: data, the PL-Rank method, the fairness loss and weights, the post-hoc grids.

    ``fairness`` is the fair curve's loss and the report's measure of fairness; ``protected``
    gives every document an item group (``item_groups``; needed by ``"group-disparity"``);
    ``group_offsets`` (needs ``protected``) are the post-hoc offsets :math:`b` of the protected
    group, in units of each model's validation spread, under every temperature.
    ``web_groups`` draws the synthetic web data (every entry of ``datasets`` one of
    :data:`~gbdt_plrank._synthetic.WEB_VARIANTS`) with a protected group whose share of the
    merit varies by query (:class:`~gbdt_plrank._synthetic.WebGroups`); ``protected`` must
    then read it back: ``{feature = n_features + 1, quantile = share}``.
    ``cross_validation`` reads the folds of a one-split entry (``mslr-sample``) as those of a
    query-level five-fold cross-validation of its pooled queries (each query a test query once,
    ``harness.data.cross_validation_fold``), named ``<name>-cv/Fold<k>``.
    ``ndcg_tolerance`` and ``standard_errors`` set the report's goal check (they change no
    training or evaluation): a fair policy's post-hoc match at no less expected NDCG may be
    ``ndcg_tolerance`` less relevant on validation, and a verdict needs a difference of more
    than ``standard_errors`` standard errors.
    ``fair_start`` (``FairStart``) starts every fair training from a baseline's kept
    model at a temperature; without it they start from the library's base score.
    ``drop_empty_queries`` leaves out the queries without a relevant document from the training
    and validation splits too (the test split's follow ``drop_empty_test_queries``), so that
    every model is trained, early-stopped and chosen on the kind of query it is judged on. No
    objective has a gradient on such queries unless the ``[plrank]`` table sets
    ``empty_queries = "uniform"`` (the expected exposure loss's target there, uniform exposure,
    which flattens the policy on the queries with relevant documents too).
    """

    datasets: items(str, rule="a non-empty list of distinct bundled names or folders")  # type: ignore[valid-type]
    seeds: int = Field(1, ge=1, description="an integer >= 1")
    k: int = Field(10, ge=1, description="an integer >= 1")
    out: str = Field("runs/fairness", min_length=1, description="a non-empty string")
    drop_empty_queries: bool = Field(False, description="true or false")
    cross_validation: bool = Field(False, description="true or false")
    plrank_method: Literal[_PLRANK_METHODS] = Field(  # type: ignore[valid-type]
        "plrank-xgb", description=f"one of {', '.join(map(repr, _PLRANK_METHODS))}"
    )
    fairness_weights: items(  # type: ignore[valid-type]
        Weight, rule="a non-empty list of distinct finite numbers >= 0"
    ) = (0.1, 0.3, 1.0, 3.0, 10.0)
    fair_start: FairStart | None = Field(None, description="a table {model, temperature}")
    temperatures: items(  # type: ignore[valid-type]
        Temperature, rule="a non-empty list of distinct finite numbers > 0"
    ) = (0.1, 0.25, 0.5, 1.0, 2.0, 4.0)
    fairness: registered(fairness_names) = Field(  # type: ignore[valid-type]
        "expected-exposure", description="a registered fairness term's name"
    )
    protected: ProtectedGroup | None = Field(None, description="a table")
    web_groups: Annotated[WebGroups | None, BeforeValidator(_web_groups)] = Field(
        None, description="a table {share, query_shift}"
    )
    group_offsets: items(  # type: ignore[valid-type]
        Offset, rule="a non-empty list of distinct finite numbers"
    ) = (0.0,)
    n_samples: int = Field(1000, ge=2, multiple_of=2, description="an even integer >= 2")
    ndcg_tolerance: float = Field(0.0, ge=0, allow_inf_nan=False, description="a number >= 0")
    standard_errors: float = Field(1.0, gt=0, allow_inf_nan=False, description="a number > 0")

    @field_validator("plrank")
    @classmethod
    def _relevance_only(cls, value: PLRankSettings) -> PLRankSettings:
        if value.fairness is not None:
            raise ValueError(
                "fairness is set by the command for the fair curve (fairness_weights) and must "
                "not be set here"
            )
        return value

    @model_validator(mode="after")
    def _groups_given(self) -> FrontierConfig:
        if self.web_groups is not None:
            self._check_web_groups(self.web_groups)
        if fairness_term(self.fairness).needs_item_groups and self.protected is None:
            raise ValueError(
                f"fairness = {self.fairness!r} needs item groups: give protected = "
                "{feature = F, quantile = q} (group 1: below the q-quantile of feature F on the "
                "training split) or protected = {feature = F} (a column of group ids)"
            )
        if self.group_offsets != (0.0,) and self.protected is None:
            raise ValueError(
                f"group_offsets shift the protected group and need a protected table, but "
                f"group_offsets = {list(self.group_offsets)} is given without one"
            )
        return self

    def _check_web_groups(self, groups: WebGroups) -> None:
        """Every dataset a web variant, and ``protected`` the group's attribute and share."""
        other = [d for d in self.datasets if d not in WEB_VARIANTS]
        if other:
            raise ValueError(
                f"web_groups draws the synthetic web data ({', '.join(WEB_VARIANTS)}), but "
                f"datasets holds {other[0]!r}"
            )
        feature = {WEB_VARIANTS[d].n_features + 1 for d in self.datasets}
        wanted = ProtectedGroup(feature=min(feature), quantile=groups.share)
        if len(feature) > 1 or self.protected != wanted:
            raise ValueError(
                f"web_groups puts the protected group's attribute in feature {min(feature)}, "
                f"its share {groups.share:g} of the documents below level "
                f"{groups.protected_levels}, so it needs {wanted.describe()}, but "
                + (
                    "no protected table is given"
                    if self.protected is None
                    else f"{self.protected.describe()} is given"
                )
            )

    @property
    def measure(self) -> str:
        """The name of the report's fairness measure: its term's column
        (``FairnessTerm.column``)."""
        return fairness_term(self.fairness).column

    @property
    def methods(self) -> tuple[str, ...]:
        """The comparison methods trained: the two baselines and the PL-Rank method."""
        return (*BASELINES.values(), self.plrank_method)

    def fair_options(self, weight: float) -> dict[str, Any]:
        """The PL-Rank method's native parameters with the fairness options of ``weight``."""
        native = dict(self.params.get(self.plrank_method, {}))
        native[PLRANK] = {
            **native.get(PLRANK, {}),
            "fairness": self.fairness,
            "fairness_weight": weight,
        }
        return native

    def trained_options(self) -> dict[str, PLRankOptions]:
        """The options of each PL-Rank training, as :func:`gbdt_plrank.harness.train` resolves them.

        ``"plrank"``: the relevance-only curve; ``"plrank-fair w=<w>"``: the fair curve at
        each weight of ``fairness_weights``.
        """
        method = METHODS[self.plrank_method]
        settings = objective_settings(self.plrank)
        params = {"plrank": self.params.get(self.plrank_method)}
        params.update((f"plrank-fair w={w:g}", self.fair_options(w)) for w in self.fairness_weights)
        return {
            name: method_options(method, settings, native, k=self.k)
            for name, native in params.items()
        }

    def settings(self) -> dict[str, Any]:
        """Everything that changes a stored training or evaluation, as JSON-able data."""
        return {
            **self.shared_settings(),
            "plrank_method": self.plrank_method,
            **({"drop_empty_queries": True} if self.drop_empty_queries else {}),
            **({"cross_validation": True} if self.cross_validation else {}),
            "k": self.k,
            "n_samples": self.n_samples,
            "fairness": self.fairness,
            "protected": None if self.protected is None else self.protected.model_dump(),
            **({} if self.web_groups is None else {"web_groups": asdict(self.web_groups)}),
            **({} if self.fair_start is None else {"fair_start": self.fair_start.model_dump()}),
        }


def load_frontier_config(
    path: str | Path, *, overrides: Mapping[str, Any] | None = None
) -> FrontierConfig:
    """Read and check a frontier's TOML file; ``overrides`` replace values by key path.

    Raises
    ------
    ConfigError
        On a missing or invalid file, an unknown key, a value that breaks its rule, or
        ``[params]`` for a method the frontier does not train.
    """
    path = Path(path)
    config = validate(
        FrontierConfig, read_config_table(path, overrides, schema=FrontierConfig), source=str(path)
    )
    unused = sorted(set(config.params) - set(config.methods))
    if unused:
        raise ConfigError(
            f"params must name the methods the frontier trains ({', '.join(config.methods)}), "
            f"but {unused[0]!r} is not one of them."
        )
    for weight in (0.0, *config.fairness_weights):
        options = {config.plrank_method: config.fair_options(weight)} if weight else config.params
        check_objectives(
            config.methods,
            objective_settings(config.plrank),
            options,
            k=config.k,
            item_groups=config.protected is not None,
        )
    return config
