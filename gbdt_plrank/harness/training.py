"""One training of a comparison method, through the package's booster layer.

Every method trains on the train split, evaluates NDCG@k on the validation split after each
round, stops early when it has not improved for ``early_stopping_rounds`` rounds, and scores the
test split at its best round. The shared tree settings reach each library under its own names
(:data:`~gbdt_plrank._boosters.NATIVE_NAMES`); a method's native parameters
(``[params.<method>]`` or ``--params``) are applied last. The methods of the package's own
objectives (:data:`~gbdt_plrank.harness.methods.OWN_OBJECTIVES`) build theirs from its settings
table (``[plrank]``, ``[pirank]``), their Hessian mode and their own sub-table of ``params``
(``plrank``: ``N``, ``metric``, ``gain``, ``sampler``, ``hessian``, ``fairness``,
``fairness_weight``; ``pirank``: ``tau``, ``hessian``), in that order
(:func:`~gbdt_plrank.harness.config.objective_options`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .._boosters import BACKENDS, Objective, Plan, QueryData, eval_name, metric_name
from .._compat import require
from .._policy_value import PolicyStopping
from .config import PiRankSettings, PLRankSettings, objective_options, objective_settings
from .data import without_empty_queries
from .methods import METHODS, OWN_OBJECTIVES, PLRANK, Method

if TYPE_CHECKING:
    from ..datasets import LTRDataset, Split
    from .config import TreeSettings
    from .schema import Schema

__all__ = ["Fit", "train"]


@dataclass(frozen=True)
class Fit:
    """What one training produced.

    Attributes
    ----------
    curve : float array (rounds_run,)
        Validation NDCG@k after each round, as the library computed it for early stopping.
    best_round : int
        Number of rounds kept (1-based): the round with the best validation NDCG@k.
    test_scores : float array (n_test,)
        Scores of the test split's rows at ``best_round``.
    train_seconds : float
        Wall time of the library's training call, validation included.
    vali_scores : float array (n_vali,)
        Scores of the validation split's rows at ``best_round`` (e.g. to calibrate a
        temperature without looking at the test split).
    """

    curve: np.ndarray
    best_round: int
    test_scores: np.ndarray
    train_seconds: float
    vali_scores: np.ndarray


def _query_data(split: Split) -> QueryData:
    return QueryData(split.X, split.y, split.group_sizes)


def _objective(
    method: Method,
    *,
    k: int,
    seed: int,
    n_jobs: int | None,
    settings: Mapping[str, Schema],
    params: Mapping[str, Any],
) -> Objective:
    """The method's objective: the library's own by name, or one of the package's built."""
    own = OWN_OBJECTIVES.get(method.objective)
    if own is None:
        return method.objective.format(k=k)
    chosen = objective_options(method, settings, params)
    if own.sampled:
        chosen["seed"] = seed
    if method.objective == PLRANK:
        k = settings[PLRANK].training_cutoff(k, chosen.get("fairness"))  # type: ignore[attr-defined]
    return own.build(K=k, n_jobs=n_jobs, **chosen)


#: The policy stopping of training seed s samples its rankings with STOP_SEED + 2 s (and + 1).
STOP_SEED = 2_000_003


def train(
    name: str,
    data: LTRDataset,
    *,
    k: int,
    seed: int,
    trees: TreeSettings,
    plrank: PLRankSettings | None = None,
    pirank: PiRankSettings | None = None,
    params: Mapping[str, Any] | None = None,
    callbacks: Sequence[Any] = (),
    stopping: Any = None,
) -> Fit:
    """Train method ``name`` with early stopping on validation and score the test split.

    Parameters
    ----------
    name : str
        A key of :data:`~gbdt_plrank.harness.methods.METHODS`.
    data : LTRDataset
        Train, validation and test splits.
    k : int
        Cut-off of the validation metric, of the package's objectives (their ``K``) and of
        CatBoost's StochasticRank.
    seed : int
        Seed of the booster and of the PL-Rank objective's sampled rankings.
    trees : TreeSettings
        The shared booster settings.
    plrank : PLRankSettings, optional
        Options of the PL-Rank objective (``PLRANK`` methods only; default: the schema's).
    pirank : PiRankSettings, optional
        Options of the PiRank objective (``PIRANK`` methods only; default: the schema's).
    params : mapping, optional
        The method's native parameters, applied last. The entry named after the method's
        objective (``"plrank"``, ``"pirank"``), a mapping, replaces fields of that objective's
        settings and, under ``"hessian"``, the method's Hessian mode.
    callbacks : sequence, default ()
        The library's own callbacks, called after each round (``xgboost.train(callbacks=)``,
        ``lightgbm.train(callbacks=)``, CatBoost's ``fit(callbacks=)``), e.g. Optuna's pruning
        callbacks; the validation set is named ``valid_0`` (:func:`~gbdt_plrank._boosters.eval_name`).
    stopping : object, optional
        Early stopping on another criterion than validation NDCG@k, replacing it (a
        :class:`~gbdt_plrank._boosters.Plan`'s ``stopping``, e.g.
        :class:`~gbdt_plrank._policy_value.PolicyStopping` on the policy's validation objective).
        Without it, the PL-Rank methods stop on their policy when ``plrank.stopping_metric`` is
        ``"policy"``.

    Returns
    -------
    Fit

    Raises
    ------
    ValueError
        When ``name`` is not a method.
    MissingDependencyError
        When the method's library is not installed.
    """
    if name not in METHODS:
        raise ValueError(f"name must be one of {', '.join(METHODS)}, but {name!r} is given.")
    method = METHODS[name]
    require(method.library, purpose=f"method {name!r}")
    native = dict(params or {})
    settings_tables = objective_settings(plrank, pirank)
    objective = _objective(
        method, k=k, seed=seed, n_jobs=trees.n_jobs, settings=settings_tables, params=native,
    )
    backend = BACKENDS[method.library]
    policy = method.objective == PLRANK and settings_tables[PLRANK].stopping_metric == "policy"
    if stopping is None and policy:
        # validation queries without a relevant document are left out, as in the frontier
        stopping = PolicyStopping.for_objective(
            backend, without_empty_queries(data.vali), objective, k=k,
            patience=trees.early_stopping_rounds, seed=STOP_SEED + 2 * seed, n_jobs=trees.n_jobs,
        )
    if method.objective in OWN_OBJECTIVES:
        native.pop(method.objective, None)
    plan = Plan(
        objective, k, n_estimators=trees.rounds,
        early_stopping_rounds=trees.early_stopping_rounds, callbacks=callbacks, stopping=stopping,
    )
    settings = trees.booster_settings(seed=seed, params=native)
    trained = backend.train(settings, _query_data(data.train), [_query_data(data.vali)], plan)
    scores = backend.margins(trained.booster, data.test.X, n_threads=trees.n_jobs)
    vali = backend.margins(trained.booster, data.vali.X, n_threads=trees.n_jobs)
    curve = np.asarray(trained.history[eval_name(0)][metric_name(k)])
    return Fit(curve, trained.rounds, scores, trained.seconds, vali)
