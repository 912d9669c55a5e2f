"""CatBoost: ``CatBoost.fit`` with one of CatBoost's own ranking losses.

CatBoost has no hook for a callable ranking objective or metric, so this backend takes
only loss names (``"YetiRank"``, ``"StochasticRank:metric=NDCG;top=5;type=Exp"``); it is here so
that the comparison trains every method through one layer. Query groups go in as ``group_id``;
early stopping is the package's rule (``catboost_stopping_callback``: CatBoost's own detector has
no minimum number of rounds), and the model is shrunk to its best round.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NoReturn

import numpy as np
import scipy.sparse as sp

from .._groups import Split
from ._base import BoosterSettings, LibraryBackend, Plan, Trained, eval_name, metric_name, timed
from ._stopping import catboost_stopping_callback, plan_stopper

__all__ = ["CatBoostBackend"]

_NO_CALLABLES = (
    "CatBoost calls no callable ranking objective or metric: train the package's objectives "
    "and metrics with xgboost.train or lightgbm.train."
)


def _pool_features(X: Any) -> Any:
    """CSR input with the int32 indices CatBoost requires; dense input unchanged."""
    if not sp.issparse(X):
        return X
    X = sp.csr_matrix(X)
    return sp.csr_matrix(
        (X.data, X.indices.astype(np.int32), X.indptr.astype(np.int32)), shape=X.shape
    )


class CatBoostBackend(LibraryBackend):
    """``catboost.CatBoost`` behind the :class:`~gbdt_plrank._backends.Backend` interface."""

    name, data_type, booster_type = "catboost", "Pool", "CatBoost"
    reserved = frozenset(
        {
            "loss_function",
            "objective",
            "eval_metric",
            "iterations",
            "num_boost_round",
            "n_estimators",
            "num_trees",
            "random_seed",
            "random_state",
            "od_type",
            "od_wait",
            "early_stopping_rounds",
            "use_best_model",
        }
    )

    def query_fields(self, data: Any) -> NoReturn:
        raise TypeError(_NO_CALLABLES)

    def boosted_rounds(self, booster: Any) -> int:
        return int(booster.tree_count_)

    def metric_result(self, name: str, value: float) -> NoReturn:
        raise TypeError(_NO_CALLABLES)

    def train(
        self, settings: BoosterSettings, data: Split, evals: Sequence[Split], plan: Plan
    ) -> Trained:
        if plan.metrics:
            raise ValueError(
                f"metrics must be empty for the catboost backend (its early stopping watches "
                f"its own NDCG@K), but {len(plan.metrics)} metric(s) are given."
            )
        if not isinstance(plan.objective, str):
            raise ValueError(
                f"objective must be a CatBoost loss name for the catboost backend (CatBoost has "
                f"no hook for callable ranking objectives), but {plan.objective!r} is given."
            )
        catboost = self.module()
        metric = self.eval_metric(plan.K, plan.gain)
        fixed: dict[str, Any] = {
            "loss_function": plan.objective,
            "eval_metric": metric,
            "iterations": plan.n_estimators,
        }
        if plan.early_stopping_rounds is not None:
            fixed.update(use_best_model=False)  # the package's rule keeps the best round
        # CatBoost's own log every plan.verbose rounds (its learn and eval values), or none
        defaults: dict[str, Any] = {"verbose": plan.verbose or False, "allow_writing_files": False}
        subsample = settings.tree("subsample")
        if subsample is not None and subsample < 1:
            defaults["bootstrap_type"] = "Bernoulli"  # the default bootstrap has no subsample
        params = self.native_params(settings, defaults=defaults, fixed=fixed)
        if subsample is not None and subsample >= 1:
            params.pop("subsample")  # 1 is no subsampling, which every bootstrap type allows
        stopper = plan_stopper(plan, params=params, library=self.name)
        stopping = [] if stopper is None else [catboost_stopping_callback(stopper, metric=metric)]
        model = catboost.CatBoost(params)
        eval_sets = [self._pool(e) for e in evals]
        _, seconds = timed(
            lambda: model.fit(
                self._pool(data),
                eval_set=eval_sets or None,
                callbacks=[*stopping, *plan.callbacks] or None,  # CatBoost stops at a False
            )
        )
        results = model.get_evals_result()
        history = {
            eval_name(i): {metric_name(plan.K): results[name][metric]}
            for i, name in enumerate(n for n in results if n != "learn")
        }
        best = None
        if stopping:
            best = stopping[0].kept
            model.shrink(best + 1)
        return Trained(model, best, history, seconds)

    @staticmethod
    def eval_metric(K: int, gain: str) -> str:
        """CatBoost's name of NDCG@K with the given gain (its callbacks observe this name)."""
        return f"NDCG:top={K};type={'Exp' if gain == 'exp' else 'Base'}"

    @classmethod
    def _pool(cls, data: Split) -> Any:
        return cls.module().Pool(_pool_features(data.X), label=data.y, group_id=data.qid)

    def margins(self, booster: Any, X: Any, *, n_threads: int | None) -> np.ndarray:
        pool = self.module().Pool(_pool_features(X))
        extra = {} if n_threads is None else {"thread_count": n_threads}
        return np.asarray(booster.predict(pool, prediction_type="RawFormulaVal", **extra))

    def total_gains(self, booster: Any, n_features: int) -> np.ndarray:
        # The default type for ranking losses (LossFunctionChange) needs the training data.
        return booster.get_feature_importance(type="PredictionValuesChange")
