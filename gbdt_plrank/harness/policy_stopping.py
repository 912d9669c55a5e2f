"""Early stopping on a stochastic policy's own validation objective, in XGBoost and LightGBM.

The comparison harness stops on the validation NDCG@k of the ranking by score, which cannot see
the scale of the margins: a Plackett-Luce policy gets sharper as its margins grow while that
ranking stays the same, and the fair objective trades relevance against exposure through that
scale. :class:`PolicyStopping` watches what the PL-Rank policy is trained for instead, the
validation value of expected NDCG@k minus ``weight`` times EE-L
(:func:`.policy_eval.policy_objective`, with the same sampled streams every round), keeps the
margins of the prediction set at its best round, and stops after ``patience`` rounds without
improvement. It is passed to :func:`.training.train` as a library callback (its
:meth:`~PolicyStopping.callback`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._boosters import BACKENDS
from .._compat import require
from ..datasets import Split
from .policy_eval import policy_objective

__all__ = ["PolicyStopping", "round_callback"]


class PolicyStopping:
    """Track a policy's validation objective after every round; stop after ``patience`` more.

    Parameters
    ----------
    library : {"xgboost", "lightgbm"}
        The booster library of the training.
    vali : Split
        The validation split (queries without relevant documents are better left out).
    X_predict : array or CSR matrix
        Rows whose margins are kept at the best round (e.g. the test split's features).
    k, weight : int, float
        Cut-off and fairness weight of :func:`.policy_eval.policy_objective`.
    patience : int
        Rounds without improvement before training stops.
    n_samples, seed : int
        Rankings per validation query (even), and their seed (the same every round).
    n_jobs : int or None
        Threads for prediction and sampling.

    Attributes
    ----------
    best_round : int
        Rounds kept (1-based) at the best validation objective.
    best_value : float
        That objective.
    margins, vali_margins : ndarray
        Margins of ``X_predict`` and of the validation split at the best round.
    """

    def __init__(
        self, library: str, vali: Split, X_predict: Any, *, k: int, weight: float,
        patience: int, n_samples: int, seed: int, n_jobs: int | None,
    ) -> None:
        self.library = library
        self.backend = BACKENDS[library]
        self.vali = vali
        self.X_predict = X_predict
        self.options = {"k": k, "weight": weight, "n_samples": n_samples, "seed": seed,
                        "n_jobs": n_jobs}
        self.patience = patience
        self.n_jobs = n_jobs
        self.best_round = 0
        self.best_value = -np.inf
        self.margins: np.ndarray | None = None
        self.vali_margins: np.ndarray | None = None

    def after_round(self, booster: Any, iteration: int) -> bool:
        """Score round ``iteration`` (0-based); True when training should stop."""
        scores = self.backend.margins(booster, self.vali.X, n_threads=self.n_jobs)
        value = policy_objective(scores, self.vali, **self.options)
        if value > self.best_value:
            self.best_value, self.best_round = value, iteration + 1
            self.vali_margins = scores
            self.margins = self.backend.margins(booster, self.X_predict, n_threads=self.n_jobs)
        return iteration + 1 - self.best_round >= self.patience

    def callback(self) -> Any:
        """The library's callback object that calls :meth:`after_round` after every round."""
        return round_callback(self.library, self.after_round)


def round_callback(library: str, after_round: Callable[[Any, int], bool]) -> Any:
    """A callback for ``library`` that calls ``after_round(booster, iteration)`` after each round.

    Training stops when it returns True (XGBoost: the callback returns True; LightGBM: it raises
    ``EarlyStopException`` at the last round).
    """
    if library == "xgboost":
        xgboost = require("xgboost", purpose="policy early stopping")

        class _After(xgboost.callback.TrainingCallback):
            def after_iteration(self, model: Any, epoch: int, evals_log: Any) -> bool:
                return after_round(model, epoch)

        return _After()
    lightgbm = require("lightgbm", purpose="policy early stopping")

    def after(env: Any) -> None:
        if after_round(env.model, env.iteration):
            raise lightgbm.callback.EarlyStopException(
                env.iteration, env.evaluation_result_list
            )

    return after
