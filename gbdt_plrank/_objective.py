"""PL-Rank objectives that ``xgboost.train`` and ``lightgbm.train`` accept as they are.

The booster-facing calls (groups and labels read from the training set, weights refused, the
``lgbm_ranker`` form, the per-training-set cache) are those of
:class:`~gbdt_plrank._booster_objective.BoosterObjective`.
"""

from __future__ import annotations

import numpy as np

from ._booster_objective import BoosterObjective
from ._estimator import SAMPLERS, PLRankSpec, estimate
from ._fairness import FairnessSpec
from ._validation import check_choice, check_positive_int, check_seed, is_int

__all__ = ["TRAIN_K_FACTOR", "PLRankObjective", "plrank_objective", "training_cutoff"]

#: ``train_K="auto"`` trains a ranker judged at the cut-off K on rankings this many times longer.
TRAIN_K_FACTOR = 2


class PLRankObjective(BoosterObjective):
    """A PL-Rank objective: estimated gradient and Hessian of the negative expected metric@K.

    Each call is one boosting round and draws fresh rankings: round ``r`` (counted from the first
    call on a training set) samples query ``q`` from the stream keyed by ``(seed, r, q)``, so the
    same seed gives the same model whatever the number of threads. The count restarts when the
    objective sees another training set, and on :meth:`reset`. With ``fairness`` the expected
    exposure loss is subtracted (:mod:`gbdt_plrank._fairness`). Build it with
    :func:`plrank_objective`.
    """

    title = "PL-Rank"

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
        fairness: str | None = None,
        fairness_weight: float = 1.0,
    ) -> None:
        super().__init__()
        self.spec = PLRankSpec.of(K, metric, gain, hessian)
        self.N = check_positive_int("N", N)
        self.fairness = FairnessSpec.of(
            fairness, fairness_weight, metric=self.spec.metric, N=self.N
        )
        self.seed = check_seed("seed", seed)
        self.sampler = check_choice("sampler", sampler, SAMPLERS)
        self.n_jobs = n_jobs
        self.round = 0
        self._target: np.ndarray | None = None

    def __repr__(self) -> str:
        s = self.spec
        fair = self.fairness
        extra = "" if fair is None else f", fairness={fair.name!r}, fairness_weight={fair.weight!r}"
        return (
            f"plrank_objective(K={s.K}, N={self.N}, metric={s.metric!r}, gain={s.gain!r}, "
            f"hessian={s.hessian!r}, seed={self.seed}, sampler={self.sampler!r}{extra})"
        )

    def reset(self) -> None:
        """Restart the round count: the next call is round 0 again."""
        self.round = 0
        self._key = None

    def _new_training_set(self) -> None:
        self.round = 0
        if self.fairness is not None:
            self._target = self.fairness.target(self._labels, self._ptr, self.spec.theta())

    def _grad_hess(
        self, scores: np.ndarray, keys: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """One round: fresh rankings from the stream ``(seed, round, keys[q])`` of each query."""
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
            fairness=self.fairness,
            target=self._target,
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
    fairness: str | None = None,
    fairness_weight: float = 1.0,
) -> PLRankObjective:
    """A PL-Rank objective for ``xgboost.train(obj=...)`` and ``lightgbm.train``.

    .. code-block:: python

        obj = plrank_objective(K=5, N=100)
        xgboost.train({"base_score": 0.0, "eval_metric": "ndcg@5"}, dtrain, 300, obj=obj)
        lightgbm.train({"objective": obj, "metric": "ndcg", "eval_at": [5]}, dataset, 300)
        lightgbm.LGBMRanker(objective=obj.lgbm_ranker).fit(X, y, group=sizes)
        fair = plrank_objective(K=10, N=100, fairness="expected-exposure", fairness_weight=0.5)

    Every round returns :func:`~gbdt_plrank.plrank_grad_hess` of the current margins with fresh
    samples. With XGBoost set ``base_score=0.0`` and an ``eval_metric`` (the default is rmse).

    Parameters
    ----------
    K, N, metric, gain, hessian, sampler, n_jobs, fairness, fairness_weight
        As in :func:`~gbdt_plrank.plrank_grad_hess`: ``fairness="expected-exposure"`` maximises
        the expected metric@K minus ``fairness_weight`` times the expected exposure loss.
    seed : int, default 0
        Seed of the sampled rankings; round r of query q draws from the stream (seed, r, q).

    Returns
    -------
    PLRankObjective
    """
    return PLRankObjective(
        K, N, metric=metric, gain=gain, hessian=hessian, seed=seed, sampler=sampler, n_jobs=n_jobs,
        fairness=fairness, fairness_weight=fairness_weight,
    )


def training_cutoff(K: object, train_K: object = "auto", *, fairness: str | None = None) -> int:
    r"""The cut-off the objective trains at, for a ranker judged by its metric@K.

    ``train_K="auto"`` is :data:`TRAIN_K_FACTOR` :math:`\times K` without fairness: the
    rankings sampled for training are longer than the cut-off the ranker is judged at, so the
    documents just below it (the ones a better model lifts into the top K) also get gradient.
    The libraries' LambdaMART objectives do the same: XGBoost ``rank:ndcg`` builds its pairs from
    the top 32 documents of every query and LightGBM ``lambdarank`` from the top 30
    (``lambdarank_truncation_level``), whatever the evaluation cut-off. On the LETOR validation
    splits PL-Rank trained at 2K ranks better at K than trained at K (README, "Levers measured
    on validation"). With fairness, ``"auto"`` is K: the expected exposure loss is defined by
    the exposure at the cut-off K, so training at another cut-off would optimise another
    fairness. An integer ``train_K`` is used as given.

    Raises
    ------
    ValueError
        When ``K`` is not an integer >= 1, or ``train_K`` is neither ``"auto"`` nor one.
    """
    K = check_positive_int("K", K)
    if isinstance(train_K, str) and train_K == "auto":
        return K if fairness is not None else TRAIN_K_FACTOR * K
    if not is_int(train_K) or train_K < 1:  # type: ignore[operator]
        raise ValueError(f'train_K must be "auto" or an integer >= 1, but {train_K!r} is given.')
    return int(train_K)  # type: ignore[arg-type]
