"""The one place a PL-Rank training run is assembled: objective, evaluation and plan.

:class:`~gbdt_plrank.PLRankRanker`, :class:`~gbdt_plrank.dask.DaskPLRankRanker`, the comparison
harness and the tuner translate their own options into a call of :func:`plrank_plan` and hand the
plan to a booster backend; the README's ``xgboost.train`` / ``lightgbm.train`` calls with
``custom_metric=obj.standardized_metric`` / ``feval=obj.standardized_metric`` are the same run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .._boosters import Plan
from .._ranking_metric import RankingMetric
from .evaluation import RankingMetricEval
from .objective import PLRankObjective
from .options import PLRankOptions

__all__ = ["STOPPING_METRICS", "default_stopping_metric", "plrank_plan"]

#: What early stopping watches: the policy's expected metric@K (the objective's
#: ``expected_metric``), the metric@K of the ranking by score (``ranking_metric``), or the
#: expected metric@K of the policy of the standardised margins (``standardized_metric``).
STOPPING_METRICS = ("policy", "ranking", "standardized")


def default_stopping_metric(*, fairness: str | None) -> str:
    """What ``stopping_metric="auto"`` watches: ``"standardized"``, ``"policy"`` with fairness.

    The standardised policy's value is blind to the margins' scale, so early stopping on it
    does not wait for the rounds that only sharpen the policy. With a fairness term the scale is
    part of what is trained (how evenly the policy spreads exposure), so the policy's own value
    is watched.
    """
    return "standardized" if fairness is None else "policy"


def plrank_plan(
    options: PLRankOptions,
    *,
    stopping_metric: str,
    seed: int,
    n_jobs: int | None,
    n_estimators: int,
    early_stopping_rounds: int | None,
    callbacks: Sequence[Any] = (),
    ranking: RankingMetric | None = None,
    objective_type: Callable[..., PLRankObjective] = PLRankObjective,
    device: str = "cpu",
    verbose: int = 0,
) -> Plan:
    """The plan of a PL-Rank training: its objective, evaluation metrics and rounds.

    Parameters
    ----------
    options : PLRankOptions
        The objective's options; ``options.K`` is the cut-off the model is judged at.
    stopping_metric : {"auto", "policy", "ranking", "standardized"}
        What the booster's early stopping watches on the eval sets: the objective's
        ``expected_metric`` (the policy's value) or ``standardized_metric`` (that of the
        standardised margins), each recorded after the ranking's metric, or its ranking's
        metric@K (recorded alone); ``"auto"`` is :func:`default_stopping_metric` of the
        options' fairness.
    seed : int
        Seed of the objective's sampled rankings (and of the expected metric's streams).
    n_jobs : int or None
        Threads of the objective and the evaluation.
    n_estimators, early_stopping_rounds, callbacks
        As in :class:`~gbdt_plrank._boosters.Plan`.
    ranking : RankingMetric, optional
        The ranking metric recorded on the eval sets; default the objective's metric@K (the
        harness records NDCG@k, its comparison's measure, whatever the objective's metric).
    objective_type : callable, default PLRankObjective
        Builds the objective from ``(options, seed=, n_jobs=, device=)`` (Dask's keyed objective).
    device : {"cpu", "cuda"}, default "cpu"
        Where the objective's estimate is computed (:func:`~gbdt_plrank.plrank_objective`).
    verbose : int, default 0
        Report the fit's progress every ``verbose`` rounds (0: quiet), as
        :class:`~gbdt_plrank._boosters.Plan` says.

    Returns
    -------
    Plan
    """
    if stopping_metric == "auto":
        stopping_metric = default_stopping_metric(fairness=options.fairness)
    objective = objective_type(options, seed=seed, n_jobs=n_jobs, device=device)
    ranked = objective.ranking_metric if ranking is None else RankingMetricEval(ranking)
    watched = {"policy": objective.expected_metric, "standardized": objective.standardized_metric}
    metrics = (ranked, watched[stopping_metric]) if stopping_metric in watched else (ranked,)
    fair = options.fairness_spec
    groups = objective._keep_item_groups if fair is not None and fair.needs_item_groups else None
    return Plan(
        objective, options.K, options.gain, n_estimators, early_stopping_rounds, callbacks,
        metrics, groups, verbose,
    )
