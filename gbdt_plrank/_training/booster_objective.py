"""What every custom objective needs to be called by XGBoost and LightGBM as it is.

One callable type serves both boosters: ``objective(preds, data) -> (grad, hess)``, where ``data``
is the training ``xgboost.DMatrix`` or ``lightgbm.Dataset``; the backend of its library reads the
query groups, labels and weights from it (:class:`~gbdt_plrank._backends.Backend`). A dataset
without groups is refused, since both boosters would otherwise treat every row as one query. Weights
are per query (:func:`~gbdt_plrank._backends.query_weights`): a query's weight scales its gradient
and Hessian. ``lgbm_ranker`` is the four-argument form that ``lightgbm.LGBMRanker(objective=...)``
calls with the groups. The per-row rewards (the metric's normalised gains), the validated labels,
group boundaries and weights are computed once per training set and kept (:class:`TrainingSet`), for
every training set the objective is called with while that set lives: inside ``xgboost.cv`` and
``lightgbm.cv`` the folds take turns, and each keeps what was read for it and what a subclass keeps
per set (a sampling objective's round count). A set whose labels, weights or groups were changed in
place (``set_label``, ``set_weight``) is read again. Item groups travel with the data, read with its
labels (:attr:`~gbdt_plrank._backends.QueryFields.item_groups`: the data objects the backend layer
builds carry them); for a data object built without them, the objective keeps those it is given
(:meth:`BoosterObjective.item_groups_of`), and its evaluation metrics ask it for them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._backends import QueryFields, backend_of_data, checked_queries
from .._groups import boundaries
from .._ranking_metric import RankingMetric
from .._util.cache import ReferenceCache
from .._util.validation import as_finite_vector, check_same_length

__all__ = ["BoosterObjective", "TrainingSet"]


@dataclass(eq=False)
class TrainingSet:
    """What an objective read from one training set, and what it keeps for it between calls.

    Deep copies of an objective share it (LightGBM deep-copies a callable objective): it is
    returned itself by ``copy.deepcopy``.

    Attributes
    ----------
    fields : QueryFields
        A copy of the query fields it was read from (a set changed in place is read again).
    labels : float64 array of shape (n,)
        The validated labels.
    ptr : int64 array of shape (G + 1,)
        The query boundaries.
    weights : float64 array of shape (G,) or None
        The query weights.
    rho : float64 array of shape (n,)
        The per-row rewards of the objective's metric.
    item_groups : int64 array of shape (n,) or None
        The item groups the data carries (checked).
    state : object
        What the objective keeps for this set (:meth:`BoosterObjective._new_training_set`).
    """

    fields: QueryFields
    labels: np.ndarray
    ptr: np.ndarray
    weights: np.ndarray | None
    rho: np.ndarray
    item_groups: np.ndarray | None = None
    state: Any = None

    def __deepcopy__(self, memo: dict[int, Any]) -> TrainingSet:
        return self


class BoosterObjective:
    """Base of the ranking objectives: the booster-facing calls and the per-training-set cache.

    A subclass sets ``metric`` (the :class:`~gbdt_plrank._ranking_metric.RankingMetric` it
    trains for: cut-off, metric, gain) and ``title`` (its name in messages), and implements
    :meth:`_grad_hess` (a boosting round); it may override :meth:`_new_training_set`, called
    when a training set is read, whose return value the set keeps (``self._state`` while that
    set is trained on), and :meth:`_first_call`, called with the margins of the first call on a
    training set. An objective that can estimate on a batch
    of queries implements :meth:`estimate`, so that a trainer other than a booster (the torch
    backend) calls :meth:`prepare` with its training set, then :meth:`estimate` per batch.

    The item groups given for data objects that do not carry their own (checked ids, one per
    row) are kept by identity of the data object, in a cache that deep copies share: LightGBM
    deep-copies a callable objective, and what its copy learns about the training set the
    original's evaluation metric needs.
    """

    title = "ranking"
    metric: RankingMetric

    def __init__(self) -> None:
        self._training = ReferenceCache()
        self._current: TrainingSet | None = None
        self._item_groups = ReferenceCache(shared=True)

    def __getstate__(self) -> dict[str, Any]:
        """A pickled objective keeps no training set (as its cache of them comes back empty)."""
        return {**self.__dict__, "_current": None}

    # The training set the objective works on now (the last one :meth:`prepare` was given).
    @property
    def _ptr(self) -> np.ndarray | None:
        return None if self._current is None else self._current.ptr

    @property
    def _rho(self) -> np.ndarray | None:
        return None if self._current is None else self._current.rho

    @property
    def _labels(self) -> np.ndarray | None:
        return None if self._current is None else self._current.labels

    @property
    def _weights(self) -> np.ndarray | None:
        return None if self._current is None else self._current.weights

    @property
    def _state(self) -> Any:
        return None if self._current is None else self._current.state

    def __call__(self, preds: np.ndarray, data: Any) -> tuple[np.ndarray, np.ndarray]:
        """The XGBoost ``obj=`` and LightGBM ``params["objective"]`` form."""
        return self._step(preds, data, backend_of_data(data).query_fields(data))

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

    def signed_labels(self) -> bool | None:
        """Whether the training labels may be negative (``check_labels``' ``signed``); None: no
        option of this objective accepts them."""
        return None

    def _step(
        self, preds: np.ndarray, key: Any, fields: QueryFields, keys: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """One round; ``key`` identifies the training set (:meth:`prepare`).

        ``keys`` are the queries' random-stream keys (default: their index in the groups).
        """
        first = self._training.get(key) is None
        self.prepare(key, fields)
        scores = self._margins(np.ravel(preds))
        check_same_length(preds=scores, labels=self._rho)
        if first:
            self._first_call(key, scores)
        return self._weighted(*self._grad_hess(scores, keys))

    def _margins(self, preds: np.ndarray) -> np.ndarray:
        """The booster's margins as the round takes them: checked finite, as float64."""
        return as_finite_vector("preds", preds)

    def _weighted(self, grad: np.ndarray, hess: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``grad`` and ``hess`` with each query's rows scaled by its weight (in place)."""
        if self._weights is not None:
            per_row = np.repeat(self._weights, np.diff(self._ptr))
            grad *= per_row
            hess *= per_row
        return grad, hess

    def prepare(self, data: Any, fields: QueryFields) -> None:
        """Read the training set ``data`` from its query fields, unless the cache holds it.

        A new set is read (validated labels, group boundaries, query weights, rewards: a
        :class:`~gbdt_plrank._training.booster_objective.TrainingSet`, kept while ``data``
        lives), and so is a set whose labels, weights or groups differ from those it was read
        from (a set changed in place, e.g. by ``set_label``): one vectorised comparison per
        call. The set becomes the one the objective works on.
        """
        kept = self._training.get(data)
        if kept is not None and fields.same_as(kept.fields):
            self._current = kept
            return
        y, ptr, weights, ids = checked_queries(
            fields,
            gain=self.metric.gain,
            where=f"the training {type(data).__name__}",
            signed=self.signed_labels(),
        )
        self._current = TrainingSet(
            fields.copy(), y, ptr, weights, self.metric.rewards(y, ptr), ids
        )
        self._training.put(data, self._current)
        self._current.state = self._new_training_set(data)

    def estimate(
        self,
        scores: np.ndarray,
        queries: np.ndarray | None = None,
        *,
        round_: int,
        keys: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Gradient and Hessian of the loss on the prepared training set (:meth:`prepare`).

        ``scores`` are those of its rows, or with ``queries`` (query indices) of the rows of
        those queries only, query after query (:func:`~gbdt_plrank._groups.query_rows`).
        ``round_`` and ``keys`` (one per query estimated; default: the queries' indices in the
        training set) key the random streams of an objective that samples. Query weights are
        not applied (the booster-facing calls apply them).
        """
        raise NotImplementedError(f"the {self.title} objective does not estimate on batches.")

    def item_groups_of(self, data: Any, n_rows: int) -> np.ndarray | None:
        """The item groups given for ``data`` (of ``n_rows`` rows), or None.

        Raises
        ------
        ValueError
            When they do not hold one group id per row.
        """
        ids = self._item_groups.get(data)
        if ids is not None and ids.shape[0] != n_rows:
            raise ValueError(
                f"item_groups must hold one group id per row of the {type(data).__name__} they "
                f"are given for ({n_rows}), but hold {ids.shape[0]}."
            )
        return ids

    def _new_training_set(self, key: Any) -> Any:
        """Hook called when the training set ``key`` was read; returns what the set keeps for
        the objective (``self._state``), None here."""
        return None

    def _first_call(self, key: Any, scores: np.ndarray) -> None:
        """Hook called with the margins of the first call on the training set ``key``."""

    def _grad_hess(
        self, scores: np.ndarray, keys: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Gradient and Hessian of the loss at ``scores`` on the cached training set.

        ``keys``: the queries' stream keys, for objectives that sample (None: query indices).
        """
        raise NotImplementedError
