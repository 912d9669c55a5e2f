"""The one place a PL-Rank training run is assembled: stopping rule, objective, evaluation and plan.

:class:`~gbdt_plrank.PLRankRanker`, :class:`~gbdt_plrank.dask.DaskPLRankRanker`, the comparison
harness and the tuner translate their own options into a call of :func:`plrank_plan` and hand the
plan to a booster backend; the README's ``xgboost.train`` / ``lightgbm.train`` calls with
``custom_metric=obj.standardized_metric`` / ``feval=obj.standardized_metric`` are the same run.
What early stopping watches is resolved by :func:`stopping_rule` alone, for every way of training
(:data:`TRAINERS`): what ``stopping_metric="auto"`` means, and which metric cannot be watched.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .._backends import RANKER, ROUNDS, STOPPING_METRICS, EvalMetric, Plan
from .._ranking_metric import RankingMetric
from .._util.validation import check_choice
from .evaluation import RankingMetricEval
from .objective import PLRankObjective
from .options import PLRankOptions

__all__ = [
    "STOPPING_METRICS",
    "TRAINERS",
    "StoppingRule",
    "Trainer",
    "plrank_plan",
    "stopping_rule",
]


@dataclass(frozen=True)
class Trainer:
    """What one way of training a PL-Rank model can watch on its eval sets.

    Attributes
    ----------
    watches : tuple of str
        The stopping metrics its early stopping can watch (of
        :data:`~gbdt_plrank._backends._parameters.STOPPING_METRICS`).
    auto : str or None
        What ``stopping_metric="auto"`` watches; ``None``: ``"standardized"``, or ``"policy"``
        with fairness. The standardised policy's value is blind to the margins' scale, so early
        stopping on it does not wait for the rounds that only sharpen the policy; with a
        fairness term the scale is part of what is trained (how evenly the policy spreads
        exposure), so the policy's own value is watched.
    native : bool
        Whether the eval sets are scored by the library's own NDCG@K instead of the package's
        metrics (which are then not computed).
    refusal : str
        Where it cannot watch the other metrics and why, with the way out: the end of the error.
    """

    watches: tuple[str, ...]
    auto: str | None = None
    native: bool = False
    refusal: str = ""


#: The ways of training, by name: ``"booster"`` (:class:`~gbdt_plrank.PLRankRanker` and the
#: comparison harness, in one process), ``"network"``
#: (:class:`~gbdt_plrank.nn.PLRankMLPRanker`, whose early stopping watches its policy) and
#: ``"dask"`` (:class:`~gbdt_plrank.dask.DaskPLRankRanker`, scored on the workers).
TRAINERS: dict[str, Trainer] = {
    "booster": Trainer(STOPPING_METRICS),
    "network": Trainer(("policy",), auto="policy"),
    "dask": Trainer(
        ("ranking",),
        auto="ranking",
        native=True,
        refusal="on Dask: the policy's value of the eval set would have to be gathered from the "
        "workers every round. Use stopping_metric='ranking', or train in one process with "
        "PLRankRanker.",
    ),
}


@dataclass(frozen=True)
class StoppingRule:
    """What a training's early stopping watches (:func:`stopping_rule`).

    Attributes
    ----------
    metric : {"policy", "ranking", "standardized"}
        The stopping metric (:data:`~gbdt_plrank._backends._parameters.STOPPING_METRICS`).
    native : bool, default False
        Whether the library's own NDCG@K is recorded and watched instead of the package's
        metrics.
    """

    metric: str
    native: bool = False

    def eval_metrics(
        self, objective: PLRankObjective, ranked: EvalMetric
    ) -> tuple[EvalMetric, ...]:
        """The metrics recorded on the eval sets, the watched one last.

        ``ranked`` (the metric@K of the ranking), then with ``"policy"`` or ``"standardized"``
        the objective's ``expected_metric`` or ``standardized_metric``; none when ``native``
        (a plan without metrics records the library's NDCG@K).
        """
        if self.native:
            return ()
        watched = {
            "policy": objective.expected_metric,
            "standardized": objective.standardized_metric,
        }
        return (ranked, watched[self.metric]) if self.metric in watched else (ranked,)


def stopping_rule(
    stopping_metric: str = RANKER.stopping_metric,
    *,
    fairness: str | None,
    trainer: str = "booster",
    stops: bool = True,
) -> StoppingRule:
    """The stopping rule ``stopping_metric`` names for a training by ``trainer``.

    The one place ``"auto"`` is resolved (the trainer's ``auto``, :class:`Trainer`) and a
    metric that a way of training cannot watch is refused; the value itself was checked by its
    rule where it was given (:data:`~gbdt_plrank._backends._parameters.STOPPING_METRICS`).

    Parameters
    ----------
    stopping_metric : {"auto", "policy", "ranking", "standardized"}, default "auto"
    fairness : str or None
        The objective's fairness loss (``"auto"`` watches the policy with one).
    trainer : {"booster", "network", "dask"}, default "booster"
        The way of training (:data:`TRAINERS`).
    stops : bool, default True
        Whether the training stops early: without, a metric the trainer cannot watch is not
        refused (nothing is watched).

    Returns
    -------
    StoppingRule

    Raises
    ------
    ValueError
        For an unknown ``trainer``, or, with ``stops``, a metric the trainer cannot
        watch.
    """
    choice = stopping_metric
    kind = TRAINERS[check_choice("trainer", trainer, TRAINERS)]
    if choice == "auto":
        choice = kind.auto or ("standardized" if fairness is None else "policy")
    if choice not in kind.watches and stops:
        raise ValueError(f"stopping_metric={choice!r} is not supported {kind.refusal}")
    return StoppingRule(choice, kind.native)


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
    trainer: str = "booster",
    min_rounds: int | str = ROUNDS.min_rounds,
    min_delta: float = ROUNDS.min_delta,
    patience_rate: float = ROUNDS.patience_rate,
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
        metric@K (recorded alone); resolved by :func:`stopping_rule` for ``trainer`` and the
        options' fairness.
    seed : int
        Seed of the objective's sampled rankings (and of the expected metric's streams).
    n_jobs : int or None
        Threads of the objective and the evaluation.
    n_estimators, early_stopping_rounds, callbacks, verbose, min_rounds, min_delta, patience_rate
        As in :class:`~gbdt_plrank._backends.Plan` (defaults: no callbacks, quiet, and each
        library's own stopping rule).
    ranking : RankingMetric, optional
        The ranking metric recorded on the eval sets; default the objective's metric@K (the
        harness records NDCG@k, its comparison's measure, whatever the objective's metric).
    objective_type : callable, default PLRankObjective
        Builds the objective from ``(options, seed=, n_jobs=, device=)`` (Dask's keyed objective).
    device : {"cpu", "cuda"}, default "cpu"
        Where the objective's estimate is computed (:func:`~gbdt_plrank.plrank_objective`).
    trainer : {"booster", "network", "dask"}, default "booster"
        The way of training (:data:`TRAINERS`): what ``"auto"`` watches and what can be.

    Returns
    -------
    Plan

    Raises
    ------
    ValueError
        For a stopping metric :func:`stopping_rule` refuses.
    """
    rule = stopping_rule(
        stopping_metric,
        fairness=options.fairness,
        trainer=trainer,
        stops=early_stopping_rounds is not None,
    )
    objective = objective_type(options, seed=seed, n_jobs=n_jobs, device=device)
    ranked = objective.ranking_metric if ranking is None else RankingMetricEval(ranking)
    metrics = rule.eval_metrics(objective, ranked)
    return Plan(
        objective,
        options.K,
        options.gain,
        n_estimators,
        early_stopping_rounds,
        callbacks,
        metrics,
        verbose=verbose,
        min_rounds=min_rounds,
        min_delta=min_delta,
        patience_rate=patience_rate,
    )
