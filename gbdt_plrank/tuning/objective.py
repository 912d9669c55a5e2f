"""The value of a trial: validation NDCG@k of one training, pruned on its intermediate values.

A trial trains the method with the harness (:func:`~gbdt_plrank.harness.train`: early stopping
on validation NDCG@k) and returns the best validation NDCG@k. After every round the library's
Optuna pruning callback (from ``optuna-integration``) reports the round's validation NDCG@k, and
the trial stops as pruned when the study's pruner says so. CatBoost's callback cannot raise
inside CatBoost: it stops the training, and the trial is marked pruned after it.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._backends import CatBoostBackend, eval_name, metric_name
from .._util.compat import require
from ..harness.methods import METHODS
from ..harness.training import train

if TYPE_CHECKING:
    import optuna

    from ..datasets import LTRDataset
    from ..harness.settings import PiRankSettings, PLRankSettings, TreeSettings
    from .spaces import SearchSpace

__all__ = ["Pruning", "make_objective", "pruning_callback"]

PURPOSE = "tuning"


@dataclass(frozen=True)
class Pruning:
    """A library's pruning callback, and what to call once its training has returned."""

    callback: Any
    finish: Callable[[], None]


def _nothing() -> None:
    """Nothing to do after training: the callback raised ``TrialPruned`` itself."""


# The observation keys follow the backend layer: the validation set is eval_name(0), and
# each library computes NDCG@k under its own metric name.
def _xgboost(integration: Any, trial: optuna.Trial, k: int) -> Pruning:
    key = f"{eval_name(0)}-{metric_name(k)}"
    return Pruning(integration.XGBoostPruningCallback(trial, key), _nothing)


def _lightgbm(integration: Any, trial: optuna.Trial, k: int) -> Pruning:
    callback = integration.LightGBMPruningCallback(trial, metric_name(k), valid_name=eval_name(0))
    return Pruning(callback, _nothing)


def _catboost(integration: Any, trial: optuna.Trial, k: int) -> Pruning:
    optuna = require("optuna", purpose=PURPOSE)
    with warnings.catch_warnings():  # the callback is marked experimental since Optuna 3.0
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        callback = integration.CatBoostPruningCallback(trial, CatBoostBackend.eval_metric(k, "exp"))
    return Pruning(callback, callback.check_pruned)


def _torch(integration: Any, trial: optuna.Trial, k: int) -> Pruning:
    """The network backend calls ``callback(epoch, history)``: report, and stop if pruned."""
    optuna = require("optuna", purpose=PURPOSE)

    def callback(epoch: int, history: Mapping[str, Mapping[str, list[float]]]) -> None:
        trial.report(history[eval_name(0)][metric_name(k)][-1], epoch)
        if trial.should_prune():
            raise optuna.TrialPruned(f"trial was pruned at epoch {epoch}.")

    return Pruning(callback, _nothing)


_PRUNING: dict[str, Callable[[Any, optuna.Trial, int], Pruning]] = {
    "xgboost": _xgboost,
    "lightgbm": _lightgbm,
    "catboost": _catboost,
    "torch": _torch,
}


def pruning_callback(library: str, trial: optuna.Trial, *, k: int) -> Pruning:
    """The ``optuna-integration`` pruning callback of ``library`` on validation NDCG@k.

    Raises
    ------
    MissingDependencyError
        When ``optuna-integration`` is not installed.
    """
    integration = require("optuna_integration", purpose=PURPOSE)
    return _PRUNING[library](integration, trial, k)


def make_objective(
    space: SearchSpace,
    data: LTRDataset,
    *,
    k: int,
    seed: int,
    trees: TreeSettings,
    plrank: PLRankSettings,
    pirank: PiRankSettings,
    params: Mapping[str, Any],
) -> Callable[[optuna.Trial], float]:
    """The function a study maximises for method ``space.method``.

    Parameters
    ----------
    space : SearchSpace
        The method's search space.
    data : LTRDataset
        Its train split trains, its validation split decides; the test split is not looked at.
    k : int
        Cut-off of the validation NDCG (and of the package's objectives).
    seed : int
        Seed of every training (booster and sampled rankings): trials differ only in parameters.
    trees, plrank, pirank : TreeSettings, PLRankSettings, PiRankSettings
        The settings the trial's parameters are applied over.
    params : mapping
        Native parameters of the method applied under the trial's (as ``compare`` merges a
        params file over a configuration's ``[params]``: key by key).

    Returns
    -------
    callable
        ``objective(trial) -> float``: the best validation NDCG@k. The trial's parameters, as
        ``compare --params`` takes them, are kept in its user attribute ``"params"``, with
        ``"best_round"`` and ``"train_seconds"``.
    """
    library = METHODS[space.method].library

    def objective(trial: optuna.Trial) -> float:
        chosen = space.suggest(trial)
        trial.set_user_attr("params", chosen)
        pruning = pruning_callback(library, trial, k=k)
        fit = train(
            space.method,
            data,
            k=k,
            seed=seed,
            trees=trees,
            plrank=plrank,
            pirank=pirank,
            params={**params, **chosen},
            callbacks=[pruning.callback],
        )
        pruning.finish()
        trial.set_user_attr("best_round", int(fit.best_round))
        trial.set_user_attr("train_seconds", float(fit.train_seconds))
        return float(fit.curve[fit.best_round - 1])

    return objective
