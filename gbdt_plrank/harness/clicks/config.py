"""The description of a learning-from-clicks experiment (``gbdt-plrank clicks CONFIG``).

.. code-block:: toml

    datasets = ["mq2008"]
    folds = [1, 2, 3, 4, 5]
    top_k = 5                         # ranks displayed per session (the learners' cut-off too)
    logger = "plrank"                 # the logging policy: "plrank", "lambdamart" or "feature"
    sessions = [10, 100, 1000]        # sessions per query (training and validation) of each point
    learners = ["plrank-policy-aware", "plrank-naive"]  # default: every learner

    [trees]                           # booster settings of every learner (as in a comparison)
    [plrank]                          # PL-Rank options of the learners on clicks

Every key, its default and what it does: :doc:`/guide/clicks`, "The configuration".

The tables are read by the rules of :mod:`.settings`; an unknown key, or a value that breaks its
rule, raises :class:`~gbdt_plrank._util.schema.ConfigError` naming the key, the value and the rule.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BeforeValidator, Field, field_validator, model_validator

from ..._training.options import PLRankOptions
from ..._util.schema import ConfigError, one_of, registered, validate
from ...clicks import (
    REWARD_ESTIMATORS,
    ClickLog,
    cascade_position_bias,
    pbm_position_bias,
    simulate_cascade_clicks,
    simulate_clicks,
)
from ...clicks._click_model import REGRESSION_FEATURES
from ..settings import (
    CutOffs,
    ExperimentConfig,
    PLRankSettings,
    PositiveInt,
    items,
    read_config_table,
)

__all__ = [
    "ANCHORS",
    "CLICK_MODELS",
    "DISPLAYS",
    "LOGGERS",
    "OTHER_LEARNERS",
    "POSITION_BIAS_FROM",
    "PROPENSITIES",
    "ClicksConfig",
    "estimator_learners",
    "learner_names",
    "load_clicks_config",
]


def estimator_learners() -> dict[str, str]:
    """The learners on a reward estimator of :data:`~gbdt_plrank.clicks.REWARD_ESTIMATORS` -> its
    name: PL-Rank on that estimator's rewards of the logger's log (the stochastic one of a
    Plackett-Luce logger, the deterministic one of a LambdaMART logger). Read from the registry
    when called, so that an estimator registered after import has its learner."""
    return {f"plrank-{name}": name for name in REWARD_ESTIMATORS}


#: The learners of the experiment that are not on a reward estimator, in the report's order.
OTHER_LEARNERS = (
    "plrank-deterministic",  # PL-Rank on policy-aware rewards of a deterministic top-k logger
    "lambdamart-unbiased-xgb",  # XGBoost rank:ndcg, lambdarank_unbiased=True, the same log
    "lambdarank-position-lgb",  # LightGBM lambdarank with Dataset(position=), the same log
    "plrank-full-labels",  # PL-Rank on the true labels of every training query (ceiling)
    "logger",  # the logging policy's ranking by score
)


def learner_names() -> tuple[str, ...]:
    """The learners of the experiment, in the report's order: those on a reward estimator
    (:func:`estimator_learners`), then :data:`OTHER_LEARNERS`."""
    return (*estimator_learners(), *OTHER_LEARNERS)


#: The logging policies: a PL-Rank model deployed as its Plackett-Luce policy (and, for
#: ``plrank-deterministic``, as its top-k), or a deterministic ranking, the log a team with a
#: deterministic ranker already has: a LambdaMART (XGBoost ``rank:ndcg``) deployed as its
#: ranking by score, or the ranking by one feature (``logger_feature``, descending: the
#: production ranker of LightGBM's position-bias test).
LOGGERS = ("plrank", "lambdamart", "feature")

#: What a session displays: the logger's top ``top_k``, or every document of the query.
DISPLAYS = ("top-k", "full")

#: The simulated users: the position-based model (:func:`~gbdt_plrank.clicks.simulate_clicks`)
#: or the cascade model (:func:`~gbdt_plrank.clicks.simulate_cascade_clicks`).
CLICK_MODELS = ("pbm", "cascade")

#: The propensities the policy-aware rewards divide by: the logged display frequencies, or the
#: Plackett-Luce logger's expected observation, counted over ``propensity_samples`` rankings per
#: query and pooled with the log's sessions (``"policy"``) or from the same rankings' placement
#: probabilities (``"placement"``).
PROPENSITIES = ("logged", "policy", "placement")

#: What an estimated position bias is estimated from: each row's clicks at the ranks it was
#: shown (``"rows"``, EM over one relevance per row), the rows' features (``"features"``), or
#: ``"auto"``: rows for a stochastic logger's log, features for a deterministic one's (which
#: identifies it no other way). :func:`~gbdt_plrank.clicks.estimate_position_bias` either way.
POSITION_BIAS_FROM = ("auto", "rows", "features")

#: The learners on the library's own unbiased objectives -> the comparison method they train.
ANCHORS = {"lambdamart-unbiased-xgb": "lambdamart-xgb", "lambdarank-position-lgb": "lambdarank-lgb"}

Probability = Annotated[float, Field(ge=0, le=1)]


def _as_pair(value: Any) -> Any:
    """A TOML array of two items read as a tuple (strict models take tuples only)."""
    if isinstance(value, list):
        if len(value) != 2:
            raise ValueError(f"it holds {len(value)} item{'' if len(value) == 1 else 's'}")
        return tuple(value)
    return value


class ClicksConfig(ExperimentConfig):
    """A learning-from-clicks experiment: data, logging, click model, learners, exploration.

    ``[plrank]`` holds the PL-Rank options of the learners on clicks; they train on rewards, so
    ``gain`` is ``"linear"`` (the default here, with ``metric = "dcg"``: the expected DCG is
    linear in the rewards; ``metric = "ndcg"`` divides each query's by the ideal DCG of its
    rewards' positive part). The full-label model and the logger use the same options with
    ``gain = "exp"`` and ``metric = "ndcg"``.
    """

    datasets: items(str, rule="a non-empty list of distinct bundled names or folders")  # type: ignore[valid-type]
    seeds: int = Field(1, ge=1, description="an integer >= 1")
    k: CutOffs = (5, 10)
    out: str = Field("runs/clicks", min_length=1, description="a non-empty string")
    top_k: int = Field(5, ge=1, le=32, description="an integer from 1 to 32")
    display: Literal[DISPLAYS] = Field("top-k", description=one_of(DISPLAYS))  # type: ignore[valid-type]
    logger: Literal[LOGGERS] = Field("plrank", description=one_of(LOGGERS))  # type: ignore[valid-type]
    logging_queries: int = Field(20, ge=1, description="an integer >= 1")
    logging_rounds: int = Field(20, ge=1, description="an integer >= 1")
    logger_feature: int | None = Field(
        None, ge=1, description="a feature number >= 1 (as in the data files)"
    )
    logger_temperature: float = Field(
        1.0, gt=0, allow_inf_nan=False, description="a finite number > 0"
    )
    sessions: items(  # type: ignore[valid-type]
        PositiveInt, rule="an integer >= 1 or a non-empty list of distinct ones"
    ) = (10, 100, 1000)
    anchor_max_sessions: int = Field(100, ge=0, description="an integer >= 0")
    click_model: Literal[CLICK_MODELS] = Field("pbm", description=one_of(CLICK_MODELS))  # type: ignore[valid-type]
    eta: float = Field(1.0, ge=0, allow_inf_nan=False, description="a finite number >= 0")
    stop: float = Field(0.2, ge=0, lt=1, allow_inf_nan=False, description="a number in [0, 1)")
    satisfaction: float = Field(0.0, ge=0, le=1, description="a number in [0, 1]")
    noise: float = Field(0.1, ge=0, le=1, description="a number in [0, 1]")
    graded: bool = Field(False, description="true or false")
    trust: Annotated[tuple[Probability, Probability] | None, BeforeValidator(_as_pair)] = Field(
        None, description="a pair [eps_plus, eps_minus] of numbers in [0, 1]"
    )
    position_bias: Literal["known", "estimate"] = Field(
        "known", description=one_of(("known", "estimate"))
    )
    position_bias_from: Literal[POSITION_BIAS_FROM] = Field(  # type: ignore[valid-type]
        "auto", description=one_of(POSITION_BIAS_FROM)
    )
    propensities: Literal[PROPENSITIES] = Field(  # type: ignore[valid-type]
        "logged", description=one_of(PROPENSITIES)
    )
    propensity_samples: int = Field(1000, ge=1, description="an integer >= 1")
    shrinkage: float = Field(0.0, ge=0, allow_inf_nan=False, description="a finite number >= 0")
    regression_features: Literal[REGRESSION_FEATURES] = Field(  # type: ignore[valid-type]
        "raw", description=one_of(REGRESSION_FEATURES)
    )
    regression_rounds: int = Field(100, ge=1, description="an integer >= 1")
    learners: items(  # type: ignore[valid-type]
        registered(
            learner_names,
            rule=lambda names: f"a non-empty list of distinct learners from: {', '.join(names)}",
        ),
        rule="a non-empty list of distinct learners",
    ) = Field(default_factory=learner_names)
    exploration_rounds: int = Field(0, ge=0, description="an integer >= 0")
    exploration_sessions: int = Field(100, ge=1, description="an integer >= 1")
    ope_sessions: int = Field(100, ge=0, description="an integer >= 0")
    ope_logs: int = Field(1, ge=1, description="an integer >= 1")
    plrank: PLRankSettings = Field(
        default_factory=lambda: PLRankSettings(gain="linear", metric="dcg"), description="a table"
    )

    @field_validator("plrank", mode="before")
    @classmethod
    def _reward_defaults(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return {"gain": "linear", "metric": "dcg", **value}
        return value

    @field_validator("plrank")
    @classmethod
    def _on_rewards(cls, value: PLRankSettings) -> PLRankSettings:
        if value.gain != "linear":
            raise ValueError("the learners on clicks train on rewards, which need gain 'linear'")
        if value.fairness is not None:
            raise ValueError("fairness is not part of this experiment and must not be set here")
        return value

    @model_validator(mode="after")
    def _checks(self) -> ClicksConfig:
        unused = sorted(set(self.params) - set(ANCHORS.values()))
        if unused:
            raise ValueError(
                f"params must name the anchors' methods ({', '.join(ANCHORS.values())}), but "
                f"{unused[0]!r} is not one of them"
            )
        signed = [
            learner
            for learner, name in estimator_learners().items()
            if REWARD_ESTIMATORS[name].signed and learner in self.learners
        ]
        if signed and self.plrank.metric not in ("dcg", "ndcg"):
            raise ValueError(
                f"{signed[0]!r} trains on rewards of either sign, which need metric "
                f"'dcg' or 'ndcg' in [plrank], but it is {self.plrank.metric!r}"
            )
        if self.exploration_rounds and "plrank-policy-aware" not in self.learners:
            raise ValueError(
                "exploration_rounds retrain PL-Rank on policy-aware rewards and need "
                "'plrank-policy-aware' among the learners"
            )
        for key, given, rule in (
            ("stop", self.click_model != "cascade", "is the cascade model's"),
            ("satisfaction", self.click_model != "cascade", "is the cascade model's"),
            ("eta", self.click_model != "pbm", "is the position-based model's"),
        ):
            if given and key in self.model_fields_set:
                raise ValueError(
                    f"{key} {rule} and must not be set with click_model {self.click_model!r}"
                )
        if self.click_model == "cascade" and self.trust is not None:
            raise ValueError(
                "trust is the position-based model's and must not be set with click_model 'cascade'"
            )
        if self.logger_temperature != 1 and (self.logger != "plrank" or self.exploration_rounds):
            raise ValueError(
                "logger_temperature deploys a PL-Rank logger's policy at a temperature and needs "
                "logger 'plrank' and exploration_rounds 0 (the loop deploys its own models)"
            )
        if (self.logger == "feature") != (self.logger_feature is not None):
            raise ValueError(
                "logger_feature names the feature a 'feature' logger ranks by: it must be set "
                f"with logger 'feature' and only then (logger is {self.logger!r})"
            )
        if self.logger != "plrank":
            for key, value, rule in (
                (
                    "learners",
                    "plrank-deterministic" in self.learners,
                    "must not hold 'plrank-deterministic' (every learner reads the deterministic "
                    "log)",
                ),
                (
                    "exploration_rounds",
                    self.exploration_rounds > 0,
                    "must be 0 (the loop deploys PL-Rank policies, starting from the logger's)",
                ),
                (
                    "ope_sessions",
                    self.ope_sessions > 0,
                    "must be 0 (a deterministic logger never shows the rows below its display, so "
                    "its log cannot value a policy that does)",
                ),
            ):
                if value:
                    raise ValueError(f"{key} {rule} with logger {self.logger!r}")
        return self

    @property
    def position_based(self) -> bool:
        """Whether the simulated clicks follow a position-based model: rank ``k`` seen with a
        probability of its own (:meth:`simulated_position_bias`), a seen document clicked for
        its relevance alone (no trust bias, no cascade's satisfied click)."""
        return self.trust is None and (self.click_model == "pbm" or self.satisfaction == 0)

    def simulated_position_bias(self, K: int) -> np.ndarray:
        """The simulated probability that rank ``k`` is seen, ``k = 1..K``: ``(1/k)**eta``, or the
        cascade's ``(1 - stop)**(k-1)`` (read absent a satisfied click above: the position bias
        exactly where ``satisfaction`` is 0)."""
        if self.click_model == "cascade":
            return cascade_position_bias(K, stop=self.stop)
        return pbm_position_bias(K, eta=self.eta)

    def simulate(self, rankings: Any, y: np.ndarray, *, top_k: int | None, seed: int) -> ClickLog:
        """Clicks of the configured users on ``rankings`` of the rows labelled ``y``."""
        if self.click_model == "cascade":
            return simulate_cascade_clicks(
                rankings,
                y,
                stop=self.stop,
                satisfaction=self.satisfaction,
                noise=self.noise,
                top_k=top_k,
                graded=self.graded,
                seed=seed,
            )
        return simulate_clicks(
            rankings,
            y,
            eta=self.eta,
            noise=self.noise,
            top_k=top_k,
            graded=self.graded,
            trust=self.trust,
            seed=seed,
        )

    def learner_options(self, *, labels: bool, stopped: bool = True) -> dict[str, Any]:
        """Keyword arguments of :class:`~gbdt_plrank.PLRankRanker` for a learner.

        ``labels``: for the true labels (the full-label model, the logger: gain ``"exp"``,
        metric ``"ndcg"``) rather than rewards. ``stopped``: for a fit with early stopping,
        whose rule (``min_rounds``, ``min_delta``, ``patience_rate``) and watched value
        (``stopping_metric``) the options then carry; the logger trains a fixed number of rounds
        without an eval set, so without them (the ranker warns of each it would not use).
        """
        unused = {"fairness", "fairness_weight"} | (set() if stopped else {"stopping_metric"})
        options = self.plrank.model_dump(exclude=unused)
        if labels:
            options.update(gain="exp", metric="ndcg")
        trees = self.trees
        stopping = (
            {
                "min_rounds": trees.min_rounds,
                "min_delta": trees.min_delta,
                "patience_rate": trees.patience_rate,
            }
            if stopped
            else {}
        )
        return {
            **options,
            "K": self.top_k,
            "n_estimators": trees.rounds,
            "learning_rate": trees.learning_rate,
            "max_depth": trees.max_depth,
            "num_leaves": trees.num_leaves,
            "min_child_weight": trees.min_child_weight,
            "reg_lambda": trees.reg_lambda,
            "subsample": trees.subsample,
            "n_jobs": trees.n_jobs,
            **stopping,
        }

    def trained_options(self) -> dict[str, PLRankOptions]:
        """The options of the PL-Rank trainings: ``"on rewards"`` (the learners on clicks, the
        exploration rounds) and ``"on labels"`` (the logger and the full-label model)."""
        return {
            name: PLRankOptions.checked(
                **{
                    k: v
                    for k, v in self.learner_options(labels=labels).items()
                    if k in PLRankOptions.model_fields
                }
            )
            for name, labels in (("on rewards", False), ("on labels", True))
        }

    def settings(self) -> dict[str, Any]:
        """Everything that changes a stored result, as JSON-able data.

        The click model's ``graded`` and ``trust`` appear only when set, so that the settings
        of a run with binary clicks and no trust bias are the same with or without them;
        ``ope_sessions`` and ``ope_logs`` only when not their defaults (100 and 1), so that a
        folder made before the off-policy table existed, or before it could read several
        logs, stays valid; likewise ``logger``, ``logger_feature``, ``display``,
        ``logger_temperature``, ``click_model``, ``regression_features``,
        ``regression_rounds`` and ``position_bias_from`` only when not their defaults, and the
        cascade's ``stop`` and ``satisfaction`` only with it.
        """
        clicks: dict[str, Any] = {}
        if self.graded:
            clicks["graded"] = True
        if self.trust is not None:
            clicks["trust"] = list(self.trust)
        if self.ope_sessions != 100:  # the default: absent, as before the table existed
            clicks["ope_sessions"] = self.ope_sessions
        if self.ope_logs != 1:  # the default: absent, as before there could be several
            clicks["ope_logs"] = self.ope_logs
        for key in (
            "logger",
            "logger_feature",
            "display",
            "logger_temperature",
            "click_model",
            "regression_features",
            "regression_rounds",
            "position_bias_from",
        ):
            # absent at their defaults, as before they existed
            if getattr(self, key) != type(self).model_fields[key].default:
                clicks[key] = getattr(self, key)
        if self.click_model == "cascade":
            clicks.update(stop=self.stop, satisfaction=self.satisfaction)
        return {
            **self.shared_settings(),
            **self.model_dump(
                include={
                    "top_k",
                    "logging_queries",
                    "logging_rounds",
                    "eta",
                    "noise",
                    "position_bias",
                    "propensities",
                    "propensity_samples",
                    "shrinkage",
                    "exploration_sessions",
                    "k",
                }
            ),
            **clicks,
            # the logs hold max(sessions) sessions per query, of which each point takes a prefix
            "max_sessions": max(self.sessions),
        }


def load_clicks_config(
    path: str | Path, *, overrides: Mapping[str, Any] | None = None
) -> ClicksConfig:
    """Read and check a learning-from-clicks TOML file; ``overrides`` replace values by key path.

    Raises
    ------
    ConfigError
        On a missing or invalid file, an unknown key or a value that breaks its rule.
    """
    path = Path(path)
    config = validate(
        ClicksConfig, read_config_table(path, overrides, schema=ClicksConfig), source=str(path)
    )
    try:
        config.plrank.options(config.top_k)
    except ValueError as err:
        raise ConfigError(
            f"the [plrank] options break a rule at top_k = {config.top_k}: {err}"
        ) from None
    return config
