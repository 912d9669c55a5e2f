"""What every custom objective needs to be called by XGBoost and LightGBM as it is.

One callable type serves both boosters: ``objective(preds, data) -> (grad, hess)``, where ``data`` is
the training ``xgboost.DMatrix`` or ``lightgbm.Dataset``. The query groups are read from it
(``group_ptr`` / ``group``); a dataset without groups is refused, since both boosters would
otherwise treat every row as one query, and so is one with weights, which the ranking objectives do
not use. ``lgbm_ranker`` is the four-argument form that ``lightgbm.LGBMRanker(objective=...)`` calls
with the groups. The per-row rewards (the normalised gains of the metric), the validated labels and
group boundaries are computed once per training set and cached.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from ._estimator import PLRankSpec
from ._validation import as_finite_vector, check_group_ptr, check_labels, check_same_length

__all__ = ["BoosterObjective"]


def _groups_and_labels(data: Any) -> tuple[np.ndarray | None, np.ndarray, np.ndarray | None]:
    """(group_ptr or None, labels, weights or None) of an XGBoost DMatrix or LightGBM Dataset."""
    kind = type(data).__module__.split(".")[0]
    if kind == "xgboost":
        ptr = data.get_uint_info("group_ptr")
        weight = data.get_weight()
        return (ptr if ptr.size else None), data.get_label(), (weight if weight.size else None)
    if kind == "lightgbm":
        return data.get_field("group"), data.get_label(), data.get_weight()
    raise TypeError(
        f"the objective is called by xgboost.train with an xgboost.DMatrix or by lightgbm.train with "
        f"a lightgbm.Dataset, but received a {type(data).__module__}.{type(data).__name__}."
    )


class BoosterObjective:
    """Base of the ranking objectives: the booster-facing calls and the per-training-set cache.

    A subclass sets ``spec`` (a :class:`~gbdt_plrank._estimator.PLRankSpec`: cut-off, metric,
    gain, Hessian mode) and ``title`` (its name in messages), and implements :meth:`_grad_hess`;
    it may override :meth:`_new_training_set`, called when a call brings another training set.
    """

    title = "ranking"
    spec: PLRankSpec

    def __init__(self) -> None:
        self._key: weakref.ref | None = None
        self._ptr: np.ndarray | None = None
        self._rho: np.ndarray | None = None
        self._labels: np.ndarray | None = None

    def __call__(self, preds: np.ndarray, data: Any) -> tuple[np.ndarray, np.ndarray]:
        """The XGBoost ``obj=`` and LightGBM ``params["objective"]`` form."""
        ptr, labels, weight = _groups_and_labels(data)
        if ptr is None:
            raise ValueError(
                f"the training {type(data).__name__} has no query groups: set qid (XGBoost) or group "
                f"(LightGBM), or every row would be scored as one query."
            )
        if weight is not None:
            raise ValueError(
                f"the training data carries weights, which the {self.title} objective does not use; "
                "build the training set without them."
            )
        return self._step(preds, data, labels, ptr)

    def lgbm_ranker(
        self, y_true: np.ndarray, y_pred: np.ndarray, weight: Any, group: Any
    ) -> tuple[np.ndarray, np.ndarray]:
        """The form for ``lightgbm.LGBMRanker(objective=obj.lgbm_ranker)``: four arguments.

        LightGBM's scikit-learn wrapper passes the groups (as sizes) only to four-argument
        functions; a three-argument one would silently receive the weights in their place.
        """
        if group is None:
            raise ValueError("LGBMRanker passed no groups: call fit(X, y, group=sizes).")
        if weight is not None:
            raise ValueError(f"sample weights are not supported by the {self.title} objective.")
        ptr = np.concatenate(([0], np.cumsum(np.asarray(group, dtype=np.int64))))
        return self._step(y_pred, y_true, y_true, ptr)

    def _step(
        self, preds: np.ndarray, key: Any, labels: Any, ptr: Any, keys: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """One round; ``key`` identifies the training set (a new one refreshes the cache).

        ``keys`` are the queries' random-stream keys (default: their index in ``ptr``).
        """
        if self._key is None or self._key() is not key:
            y = check_labels(labels, gain=self.spec.gain)
            self._ptr = check_group_ptr(ptr, y.shape[0])
            self._rho = self.spec.rho(y, self._ptr)
            self._labels = y
            self._key = weakref.ref(key)
            self._new_training_set()
        scores = as_finite_vector("preds", np.ravel(preds))
        check_same_length(preds=scores, labels=self._rho)
        return self._grad_hess(scores, keys)

    def _new_training_set(self) -> None:
        """Hook called after the cache was filled for another training set."""

    def _grad_hess(
        self, scores: np.ndarray, keys: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Gradient and Hessian of the loss at ``scores`` on the cached training set.

        ``keys``: the queries' stream keys, for objectives that sample (None: query indices).
        """
        raise NotImplementedError
