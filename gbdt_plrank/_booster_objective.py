"""What every custom objective needs to be called by XGBoost and LightGBM as it is.

One callable type serves both boosters: ``objective(preds, data) -> (grad, hess)``, where ``data`` is
the training ``xgboost.DMatrix`` or ``lightgbm.Dataset``; the backend of its library reads the
query groups, labels and weights from it (:class:`~gbdt_plrank._boosters.Backend`). A dataset
without groups is refused, since both boosters would otherwise treat every row as one query.
Weights are per query (:func:`~gbdt_plrank._boosters.query_weights`): a query's weight scales its
gradient and Hessian. ``lgbm_ranker`` is the four-argument form that
``lightgbm.LGBMRanker(objective=...)`` calls with the groups. The per-row rewards (the metric's
normalised gains), the validated labels, group boundaries and weights are computed once per
training set and cached; a set whose labels, weights or groups were changed in place
(``set_label``, ``set_weight``) is read again.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._boosters import QueryFields, backend_of_data, query_weights
from ._cache import ReferenceCache
from ._groups import boundaries
from ._ranking_metric import RankingMetric
from ._validation import as_finite_vector, check_group_ptr, check_labels, check_same_length

__all__ = ["BoosterObjective"]


class BoosterObjective:
    """Base of the ranking objectives: the booster-facing calls and the per-training-set cache.

    A subclass sets ``metric`` (the :class:`~gbdt_plrank._ranking_metric.RankingMetric` it
    trains for: cut-off, metric, gain) and ``title`` (its name in messages), and implements
    :meth:`_grad_hess`; it may override :meth:`_new_training_set`, called with the training set when a
    call brings another one.
    """

    title = "ranking"
    metric: RankingMetric

    def __init__(self) -> None:
        self._training = ReferenceCache()
        self._ptr: np.ndarray | None = None
        self._rho: np.ndarray | None = None
        self._labels: np.ndarray | None = None
        self._weights: np.ndarray | None = None
        self._seen: QueryFields | None = None

    def __call__(self, preds: np.ndarray, data: Any) -> tuple[np.ndarray, np.ndarray]:
        """The XGBoost ``obj=`` and LightGBM ``params["objective"]`` form."""
        fields = backend_of_data(data).query_fields(data)
        if fields.group_ptr is None:
            raise ValueError(
                f"the training {type(data).__name__} has no query groups: set qid (XGBoost) or group "
                f"(LightGBM), or every row would be scored as one query."
            )
        return self._step(preds, data, fields)

    def lgbm_ranker(
        self, y_true: np.ndarray, y_pred: np.ndarray, weight: Any, group: Any
    ) -> tuple[np.ndarray, np.ndarray]:
        """The form for ``lightgbm.LGBMRanker(objective=obj.lgbm_ranker)``: four arguments.

        LightGBM's scikit-learn wrapper passes the groups (as sizes) only to four-argument
        functions; a three-argument one would silently receive the weights in their place.
        """
        if group is None:
            raise ValueError("LGBMRanker passed no groups: call fit(X, y, group=sizes).")
        return self._step(y_pred, y_true, QueryFields(boundaries(group), y_true, weight))

    def _step(
        self, preds: np.ndarray, key: Any, fields: QueryFields, keys: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """One round; ``key`` identifies the training set (a new one refreshes the cache).

        The cache is refreshed too when the set's labels, weights or groups differ from those it
        was filled from (a set changed in place, e.g. by ``set_label``): one vectorised
        comparison per round.

        ``keys`` are the queries' random-stream keys (default: their index in the groups).
        """
        if self._training.get(key) is None or not _same_fields(fields, self._seen):
            self._seen = QueryFields(*(None if f is None else np.array(f) for f in fields))
            y = check_labels(fields.labels, gain=self.metric.gain)
            self._ptr = check_group_ptr(fields.group_ptr, y.shape[0])
            self._weights = query_weights(fields._replace(group_ptr=self._ptr))
            self._rho = self.metric.rewards(y, self._ptr)
            self._labels = y
            self._training.clear()
            self._training.put(key, True)
            self._new_training_set(key)
        scores = as_finite_vector("preds", np.ravel(preds))
        check_same_length(preds=scores, labels=self._rho)
        return self._weighted(*self._grad_hess(scores, keys))

    def _weighted(self, grad: np.ndarray, hess: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``grad`` and ``hess`` with each query's rows scaled by its weight (in place)."""
        if self._weights is not None:
            per_row = np.repeat(self._weights, np.diff(self._ptr))
            grad *= per_row
            hess *= per_row
        return grad, hess

    def _new_training_set(self, key: Any) -> None:
        """Hook called after the cache was filled for another training set ``key``."""

    def _grad_hess(
        self, scores: np.ndarray, keys: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Gradient and Hessian of the loss at ``scores`` on the cached training set.

        ``keys``: the queries' stream keys, for objectives that sample (None: query indices).
        """
        raise NotImplementedError


def _same_fields(fields: QueryFields, seen: QueryFields | None) -> bool:
    """Whether ``fields`` hold the same labels, groups and weights as ``seen``."""
    if seen is None:
        return False
    for now, then in zip(fields, seen):
        if (now is None) != (then is None):
            return False
        if now is not None and not np.array_equal(np.asarray(now), then):
            return False
    return True
