"""PL-Rank objectives that ``xgboost.train`` and ``lightgbm.train`` accept as they are.

One callable type serves both boosters: ``objective(preds, data) -> (grad, hess)``, where ``data`` is
the training ``xgboost.DMatrix`` or ``lightgbm.Dataset``. The query groups are read from it
(``group_ptr`` / ``group``); a dataset without groups is refused, since both boosters would
otherwise treat every row as one query. ``lgbm_ranker`` is the four-argument form that
``lightgbm.LGBMRanker(objective=...)`` calls with the groups.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from ._estimator import SAMPLERS, PLRankSpec, estimate
from ._validation import (
    as_finite_vector,
    check_choice,
    check_group_ptr,
    check_labels,
    check_positive_int,
    check_same_length,
    check_seed,
)

__all__ = ["PLRankObjective", "plrank_objective"]


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


class PLRankObjective:
    """A PL-Rank objective: estimated gradient and Hessian of the negative expected metric@K.

    Each call is one boosting round and draws fresh rankings: round ``r`` (counted from the first
    call on a training set) samples query ``q`` from the stream keyed by ``(seed, r, q)``, so the
    same seed gives the same model whatever the number of threads. The count restarts when the
    objective sees another training set, and on :meth:`reset`. Build it with
    :func:`plrank_objective`.
    """

    def __init__(
        self,
        K: int,
        N: int,
        *,
        metric: str,
        gain: str,
        hessian: str,
        seed: int,
        sampler: str,
        n_jobs: int | None,
    ) -> None:
        self.spec = PLRankSpec.of(K, metric, gain, hessian)
        self.N = check_positive_int("N", N)
        self.seed = check_seed("seed", seed)
        self.sampler = check_choice("sampler", sampler, SAMPLERS)
        self.n_jobs = n_jobs
        self.round = 0
        self._key: weakref.ref | None = None
        self._ptr: np.ndarray | None = None
        self._rho: np.ndarray | None = None

    def __repr__(self) -> str:
        s = self.spec
        return (
            f"plrank_objective(K={s.K}, N={self.N}, metric={s.metric!r}, gain={s.gain!r}, "
            f"hessian={s.hessian!r}, seed={self.seed}, sampler={self.sampler!r})"
        )

    def reset(self) -> None:
        """Restart the round count: the next call is round 0 again."""
        self.round = 0
        self._key = None

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
                "the training data carries weights, which the PL-Rank objective does not use; "
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
            raise ValueError("sample weights are not supported by the PL-Rank objective.")
        ptr = np.concatenate(([0], np.cumsum(np.asarray(group, dtype=np.int64))))
        return self._step(y_pred, y_true, y_true, ptr)

    def _step(
        self, preds: np.ndarray, key: Any, labels: Any, ptr: Any, keys: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """One round; ``key`` identifies the training set (a new one restarts the count).

        ``keys`` are the queries' stream keys (default: their index in ``ptr``).
        """
        if self._key is None or self._key() is not key:
            y = check_labels(labels, gain=self.spec.gain)
            self._ptr = check_group_ptr(ptr, y.shape[0])
            self._rho = self.spec.rho(y, self._ptr)
            self._key = weakref.ref(key)
            self.round = 0
        scores = as_finite_vector("preds", np.ravel(preds))
        check_same_length(preds=scores, labels=self._rho)
        grad, hess = estimate(
            scores,
            self._rho,
            self._ptr,
            self.spec,
            N=self.N,
            seed=self.seed,
            round_=self.round,
            sampler=self.sampler,
            n_jobs=self.n_jobs,
            keys=keys,
        )
        self.round += 1
        return grad, hess


def plrank_objective(
    K: int = 5,
    N: int = 100,
    *,
    metric: str = "ndcg",
    gain: str = "exp",
    hessian: str = "abs",
    seed: int = 0,
    sampler: str = "auto",
    n_jobs: int | None = None,
) -> PLRankObjective:
    """A PL-Rank objective for ``xgboost.train(obj=...)`` and ``lightgbm.train``.

    .. code-block:: python

        obj = plrank_objective(K=5, N=100)
        xgboost.train({"base_score": 0.0, "eval_metric": "ndcg@5"}, dtrain, 300, obj=obj)
        lightgbm.train({"objective": obj, "metric": "ndcg", "eval_at": [5]}, dataset, 300)
        lightgbm.LGBMRanker(objective=obj.lgbm_ranker).fit(X, y, group=sizes)

    Every round returns :func:`~gbdt_plrank.plrank_grad_hess` of the current margins with fresh
    samples. With XGBoost set ``base_score=0.0`` and an ``eval_metric`` (the default is rmse).

    Parameters
    ----------
    K, N, metric, gain, hessian, sampler, n_jobs
        As in :func:`~gbdt_plrank.plrank_grad_hess`.
    seed : int, default 0
        Seed of the sampled rankings; round r of query q draws from the stream (seed, r, q).

    Returns
    -------
    PLRankObjective
    """
    return PLRankObjective(
        K, N, metric=metric, gain=gain, hessian=hessian, seed=seed, sampler=sampler, n_jobs=n_jobs
    )
