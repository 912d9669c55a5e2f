"""LightGBM: ``lightgbm.train`` with a callable objective in ``params`` or one of LightGBM's own.

Every Dataset carries its ``group`` sizes, and a split's item groups, where the objective and its
metrics read them with the labels: LightGBM has no row field that keeps them as given (``position``
renumbers its values by their first appearance), so the backend's Datasets are of a class of their
own that holds them (``carrying_dataset``). The evaluation is LightGBM's NDCG@K, or the plan's own
metrics (``feval=``). Early stopping stops when any eval set has not improved for the given number
of rounds (LightGBM's rule), on its first metric: LightGBM's NDCG@K, or the last of the plan's
metrics, which goes first. The returned booster is rebuilt from its text form: it holds only the
kept rounds and no reference to a callable objective, so that pickling it and LightGBM's own save
and load round-trip exactly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

import numpy as np
import scipy.sparse as sp

from .._groups import Split
from .._ranking_metric import gains
from ._base import (
    BoosterSettings,
    LibraryBackend,
    Plan,
    QueryFields,
    Trained,
    eval_name,
    progress,
    timed,
)
from ._stopping import lightgbm_stopping_callback, plan_stopper

__all__ = ["LightGBMBackend", "carrying_dataset"]


#: What LightGBM stores for a weight of inf, or of 1e38 and more (``Common::AvoidInf`` when it
#: builds a Dataset; -1e38 for -inf); it stores NaN as 0.
_AVOID_INF = float(np.float32(1e38))


def _check_not_clamped(weights: Any) -> None:
    """Refuse the weights LightGBM made of infinite ones (read back as +-1e38 in float32).

    Raises
    ------
    ValueError
        Naming the row and saying what LightGBM did (a NaN weight, which it stores as 0, cannot
        be told from a 0 here: weights are checked before ``lightgbm.Dataset``, or by
        :class:`~gbdt_plrank.PLRankRanker`).
    """
    if weights is None:
        return
    w = np.asarray(weights, dtype=np.float64)
    clamped = np.flatnonzero(np.abs(w) >= _AVOID_INF)
    if clamped.size:
        i = int(clamped[0])
        raise ValueError(
            f"weights must be finite and >= 0, but row {i}'s weight is {float(w[i]):g}, what "
            f"LightGBM stores for an infinite weight (or one of 1e38 and more) when it builds "
            f"the Dataset; it stores NaN as 0, which drops the query unseen: check the weights "
            f"before lightgbm.Dataset (np.isfinite(weight).all())."
        )


@cache
def carrying_dataset(lightgbm: Any) -> type:
    """``lightgbm.Dataset`` with its rows' item groups (``QueryFields.item_groups``), of the
    ``lightgbm`` module given: the class of the Datasets the backend builds."""

    class CarryingDataset(lightgbm.Dataset):
        """A ``lightgbm.Dataset`` that carries the item groups of its rows (None: none)."""

        def __init__(self, *args: Any, item_groups: np.ndarray | None = None, **kwargs: Any):
            super().__init__(*args, **kwargs)
            self.item_groups = item_groups

    return CarryingDataset


class LightGBMBackend(LibraryBackend):
    """``lightgbm.train`` behind the :class:`~gbdt_plrank._backends.Backend` interface."""

    name, data_type, booster_type = "lightgbm", "Dataset", "Booster"
    reserved = frozenset(
        {
            "objective",
            "objective_type",
            "app",
            "application",
            "loss",
            "metric",
            "metrics",
            "metric_types",
            "eval_at",
            "ndcg_eval_at",
            "ndcg_at",
            "seed",
            "random_seed",
            "random_state",
            "num_iterations",
            "num_iteration",
            "n_iter",
            "num_tree",
            "num_trees",
            "num_round",
            "num_rounds",
            "nrounds",
            "num_boost_round",
            "n_estimators",
            "max_iter",
            "early_stopping_round",
            "early_stopping_rounds",
            "early_stopping",
            "n_iter_no_change",
        }
    )

    def query_fields(self, data: Any) -> QueryFields:
        """``group`` boundaries (None without groups), labels, weights (one per row) and the
        item groups of a Dataset the backend built (``carrying_dataset``)."""
        carried = isinstance(data, carrying_dataset(self.module()))
        weights = data.get_weight()
        _check_not_clamped(weights)
        return QueryFields(
            data.get_field("group"),
            data.get_label(),
            weights,
            data.item_groups if carried else None,
        )

    def boosted_rounds(self, booster: Any) -> int:
        """LightGBM's iteration count, which ``lightgbm.train(init_model=booster)`` counts on."""
        return int(booster.current_iteration())

    def continued_rounds(self, data: Any) -> int | None:
        """The rounds of ``lightgbm.train(init_model=booster)``'s booster (0 without one).

        LightGBM 4 hands the training Dataset (and, in ``lightgbm.cv``, every fold's subset)
        the predictor of ``init_model`` and sets the Dataset's ``init_score`` to its margins;
        the predictor counts the booster's iterations. None when the Dataset has no such
        attribute (another LightGBM version): then nothing is known.
        """
        if not hasattr(data, "_predictor"):
            return None
        predictor = data._predictor
        return 0 if predictor is None else int(predictor.current_iteration())

    def metric_result(self, name: str, value: float) -> tuple[str, float, bool]:
        return name, value, True

    def params(self, settings: BoosterSettings, plan: Plan, *, top_label: int) -> dict[str, Any]:
        """The native parameters of ``plan`` under ``settings`` (labels up to ``top_label``).

        NDCG@K with the plan's gain is the evaluation metric, or none when the plan brings its
        own metrics. Also used by :mod:`gbdt_plrank.dask` for ``lightgbm.dask``.
        """
        levels = np.arange(top_label + 1, dtype=np.float64)
        fixed: dict[str, Any] = {"objective": plan.objective, "metric": "None"}
        if not plan.metrics:
            fixed.update(metric="ndcg", eval_at=[plan.K], label_gain=list(gains(levels, plan.gain)))
        defaults: dict[str, Any] = {"verbose": -1, "deterministic": True, "force_row_wise": True}
        subsample = settings.tree("subsample")
        if subsample is not None and subsample < 1:
            defaults["bagging_freq"] = 1  # LightGBM ignores bagging_fraction without it
        return self.native_params(settings, defaults=defaults, fixed=fixed)

    def train(
        self, settings: BoosterSettings, data: Split, evals: Sequence[Split], plan: Plan
    ) -> Trained:
        lightgbm = self.module()
        top = max(int(np.max(d.y, initial=0)) for d in (data, *evals))
        params = self.params(settings, plan, top_label=top)
        train_set = self._training_set(data, params)
        valid_sets = [self._dataset(e, reference=train_set) for e in evals]
        history: dict[str, Any] = {}
        hooks = [lightgbm.record_evaluation(history)]
        stopper = plan_stopper(plan, params=params, library=self.name)
        if stopper is not None:
            hooks.append(lightgbm_stopping_callback(stopper))
        period, bar = progress(plan, len(valid_sets))
        if period:
            hooks.append(lightgbm.log_evaluation(period))
        if bar is not None:
            hooks.append(lambda env: bar.update(1))
        try:
            booster, seconds = timed(
                lambda: lightgbm.train(
                    params,
                    train_set,
                    plan.n_estimators,
                    valid_sets=valid_sets,
                    valid_names=[eval_name(i) for i in range(len(evals))],
                    feval=list(reversed(plan.metrics)) or None,  # the watched metric first
                    callbacks=[*hooks, *plan.callbacks],
                ),
                bar,
            )
        except lightgbm.basic.LightGBMError as error:
            raise _split_check_error(error, params) from error
        return self.trained(booster, plan, history, seconds)

    @classmethod
    def trained(cls, booster: Any, plan: Plan, history: Any, seconds: float) -> Trained:
        """The :class:`Trained` result of ``booster``: its kept rounds, rebuilt from text.

        Also used by :mod:`gbdt_plrank.dask` for the booster of ``lightgbm.dask``.
        """
        # early stopping records the best round in the booster (not with dart)
        stopped = plan.early_stopping_rounds is not None and booster.best_iteration > 0
        best = booster.best_iteration - 1 if stopped else None
        rounds = booster.current_iteration() if best is None else best + 1
        model = booster.model_to_string(num_iteration=rounds)
        order = {m.name: i for i, m in enumerate(plan.metrics)}  # fed in reverse: the plan's order
        ordered = {
            name: dict(sorted(per.items(), key=lambda item: order.get(item[0], -1)))
            for name, per in history.items()
        }
        return Trained(cls.module().Booster(model_str=model), best, ordered, seconds)

    @classmethod
    def _dataset(cls, data: Split, *, reference: Any = None, params: Any = None) -> Any:
        names = "auto" if data.feature_names is None else list(data.feature_names)
        weight = None if data.weights is None else np.repeat(data.weights, data.group_sizes)
        return carrying_dataset(cls.module())(
            data.X,
            data.y,
            weight=weight,
            group=data.group_sizes,
            init_score=data.base_margin,
            reference=reference,
            params=params,
            feature_name=names,
            item_groups=data.item_groups,
        )

    def _training_set(self, data: Split, params: Mapping[str, Any]) -> Any:
        """The constructed training Dataset, refused when no feature can be split on.

        LightGBM 4.7 drops features that are constant or cannot give two leaves of
        ``min_data_in_leaf`` rows; with none left, a callable objective stops it with
        "Check failed: (train_data->num_features()) > (0)". Say so in plain words instead.
        """
        # Built with the parameters lightgbm.train will use, so its binning is the same.
        train_set = self._dataset(data, params={**params, "objective": "none"}).construct()
        if not any(train_set.feature_num_bin(j) for j in range(train_set.num_feature())):
            raise ValueError(
                f"LightGBM finds no feature to split on in these {data.y.shape[0]} rows: every "
                f"feature is constant or has too few rows (min_data_in_leaf="
                f"{params.get('min_data_in_leaf', 20)}, min_data_in_bin="
                f"{params.get('min_data_in_bin', 3)}), and LightGBM cannot train without one. "
                f"Pass more rows, or lower them through params."
            )
        return train_set

    def margins(self, booster: Any, X: Any, *, n_threads: int | None) -> np.ndarray:
        if sp.issparse(X):
            X = sp.csr_matrix(X)  # LightGBM predicts sparse arrays only after a warning
        extra = {} if n_threads is None else {"num_threads": n_threads}
        return np.asarray(booster.predict(X, raw_score=True, **extra), dtype=np.float64)

    def total_gains(self, booster: Any, n_features: int) -> np.ndarray:
        return booster.feature_importance(importance_type="gain")


def _split_check_error(error: Exception, params: dict[str, Any]) -> Exception:
    """``error`` of ``lightgbm.train``, or for LightGBM's own split check (a split with an empty
    side, which it can choose when no Hessian sum bounds a leaf and an L2 penalty is set) a
    ``ValueError`` that says which settings lead there and what to change."""
    if "best_split_info" not in str(error):
        return error
    hessian = params.get("min_sum_hessian_in_leaf")
    return ValueError(
        f"LightGBM stopped on its own split check ({str(error).strip()}), which it can fail when "
        f"a leaf's Hessian sum has no lower bound (min_child_weight={hessian}, LightGBM's "
        f"min_sum_hessian_in_leaf) and an L2 penalty is set (reg_lambda="
        f"{params.get('lambda_l2')}): PL-Rank's Hessians are small and some are 0. Set "
        "min_child_weight above 0 (the ranker's default is 1.0; LightGBM's own 0.001), or "
        "reg_lambda=0."
    )
