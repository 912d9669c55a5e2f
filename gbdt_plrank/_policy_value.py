r"""A Plackett-Luce policy's value on labelled queries, and early stopping on it.

Per query (in the order of :func:`numpy.unique` of the query ids), from ``n_samples`` sampled
rankings in two independent halves :math:`A, B` (seeds ``seed`` and ``seed + 1``):

- expected NDCG@k: :math:`\sum_d \hat E(d) (2^{\ell_d} - 1) / \mathrm{IDCG@k}` (1 when the ideal
  DCG is 0), exact for the Monte-Carlo exposure :math:`\hat E` with the DCG rank weights, since
  DCG is linear in exposure: it is the mean NDCG@k of the sampled rankings;
- EE-L (:func:`gbdt_plrank.metrics.expected_exposure_loss`), quadratic in the exposure, so that
  :math:`f(\hat E)` is biased upwards by the estimate's variance; it is estimated without bias as
  :math:`2 f(\hat E) - (f(\hat E_A) + f(\hat E_B)) / 2`, the polarisation identity for the
  bilinear form :math:`f(\hat E_A, \hat E_B)` of a quadratic :math:`f` (its expectation is
  :math:`f(E)` since the halves are independent).

:class:`PolicyStopping` watches :func:`policy_objective`, expected NDCG@k minus a fairness weight
times EE-L, on a validation set after every boosting round, with the same sampled streams every
round. NDCG@k of the ranking by score cannot see the scale of the margins, which sets how random
the policy is, and it is a step function of the margins, noisy from round to round; the policy's
value is smooth in them.

Queries are anything with per-row labels ``y`` and query ids ``qid`` (rows of a query
contiguous): a :class:`~gbdt_plrank.datasets.Split` or a booster layer's
:class:`~gbdt_plrank._boosters.QueryData`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ._groups import resolve_groups
from ._policy import PolicySample, sample_policy
from .metrics import dcg, expected_exposure_loss

__all__ = [
    "STOPPING_METRICS",
    "STOPPING_SAMPLES",
    "Halves",
    "PolicyStopping",
    "expected_ndcg",
    "exposure_loss",
    "policy_objective",
]


#: What early stopping can watch: the ranking's NDCG@K, or the policy's value.
STOPPING_METRICS = ("ndcg", "policy")

#: Rankings per validation query of the policy stopping (two halves of 50).
STOPPING_SAMPLES = 100


class Queries(Protocol):
    """Labelled rows grouped by query."""

    @property
    def y(self) -> np.ndarray: ...

    @property
    def qid(self) -> np.ndarray: ...


def expected_ndcg(queries: Queries, exposure: np.ndarray, k: int) -> np.ndarray:
    """Per query: expected DCG@k from the exposure, over the ideal DCG@k (1 when that is 0)."""
    q = np.unique(queries.qid, return_inverse=True)[1]
    ideal = dcg(queries.y, queries.y, queries.qid, k=k, per_query=True)
    expected = np.bincount(q, exposure * (np.exp2(queries.y) - 1.0), minlength=ideal.shape[0])
    return np.where(ideal > 0, expected / np.where(ideal > 0, ideal, 1.0), 1.0)


def exposure_loss(queries: Queries, exposure: np.ndarray, k: int) -> np.ndarray:
    """Per query: EE-L of the exposure (biased upwards for an estimate; see :class:`Halves`)."""
    return expected_exposure_loss(queries.y, exposure, queries.qid, k=k, per_query=True)


@dataclass(frozen=True)
class Halves:
    """Two independent halves of the sampled rankings of a policy, and their exposures."""

    samples: tuple[PolicySample, PolicySample]
    E_a: np.ndarray
    E_b: np.ndarray

    @classmethod
    def draw(
        cls, margins: np.ndarray, queries: Queries, *, k: int, n_samples: int, seed: int,
        n_jobs: int | None,
    ) -> Halves:
        """``n_samples // 2`` rankings of length ``k`` per query in each half."""
        groups = resolve_groups(queries.qid, queries.y.shape[0])
        samples = tuple(
            sample_policy(margins, groups, K=k, n_samples=n_samples // 2, seed=seed + i,
                          n_jobs=n_jobs)
            for i in (0, 1)
        )
        E_a, E_b = (s.exposure(n_jobs=n_jobs) for s in samples)
        return cls(samples, E_a, E_b)  # type: ignore[arg-type]

    @property
    def exposure(self) -> np.ndarray:
        return 0.5 * (self.E_a + self.E_b)

    def unbiased(self, f: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
        """:math:`f(E)` for a quadratic ``f`` of the exposure, without the variance's bias."""
        return 2.0 * f(self.exposure) - 0.5 * (f(self.E_a) + f(self.E_b))


def policy_objective(
    margins: np.ndarray, queries: Queries, *, k: int, weight: float, n_samples: int, seed: int,
    n_jobs: int | None, per_query: bool = False,
) -> float | np.ndarray:
    """Mean over queries of expected NDCG@k minus ``weight`` times EE-L (Monte-Carlo).

    The objective of the fair PL-Rank policy (``weight`` 0: of the relevance-only one). With
    ``per_query``, each query's value (in the order of :func:`numpy.unique` of the query ids)
    instead of their mean.
    """
    h = Halves.draw(margins, queries, k=k, n_samples=n_samples, seed=seed, n_jobs=n_jobs)
    values = expected_ndcg(queries, h.exposure, k)
    if weight:
        values = values - weight * h.unbiased(lambda x: exposure_loss(queries, x, k))
    return values if per_query else float(values.mean())


class PolicyStopping:
    """Track a policy's validation objective after every round; stop after ``patience`` more.

    Passed as a :class:`~gbdt_plrank._boosters.Plan`'s ``stopping``: the backend calls
    :meth:`after_round` after every round, stops training when it returns True and keeps the
    booster's first :attr:`best_round` rounds.

    Parameters
    ----------
    backend : Backend
        The booster backend of the training (XGBoost or LightGBM): its ``margin_tracker`` gives
        the validation margins after each round, its ``margins`` those of ``X_predict``.
    vali : Queries with features ``X``
        The validation rows.
    X_predict : array, CSR matrix or None
        Rows whose margins are kept at the best round (e.g. a test split's features), or None.
    k, weight : int, float
        Cut-off and fairness weight of :func:`policy_objective`.
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
    name : str
        Its name: ``expected_ndcg@k``, with ``-{weight}*ee_l`` appended when ``weight > 0``.
    margins, vali_margins : ndarray
        Margins of ``X_predict`` (None without it) and of the validation rows at the best round.
    """

    def __init__(
        self, backend: Any, vali: Any, X_predict: Any = None, *, k: int, weight: float,
        patience: int, n_samples: int, seed: int, n_jobs: int | None,
    ) -> None:
        self.backend = backend
        self.vali = vali
        self.X_predict = X_predict
        self.vali_margins_after = backend.margin_tracker(vali.X, n_threads=n_jobs)
        self.options = {"k": k, "weight": weight, "n_samples": n_samples, "seed": seed,
                        "n_jobs": n_jobs}
        self.patience = patience
        self.n_jobs = n_jobs
        self.name = f"expected_ndcg@{k}" + (f"-{weight:g}*ee_l" if weight > 0 else "")
        self.best_round = 0
        self.best_value = -np.inf
        self.margins: np.ndarray | None = None
        self.vali_margins: np.ndarray | None = None

    @classmethod
    def for_objective(
        cls, backend: Any, vali: Any, objective: Any, *, k: int | None = None, patience: int,
        seed: int, n_jobs: int | None,
    ) -> PolicyStopping:
        """Stopping on the value a PL-Rank ``objective`` trains for, at the cut-off ``k``.

        ``k`` defaults to the objective's ``K`` (a ranker trained at a longer cut-off than it is
        judged at passes its own); the objective's fairness weight (0 without fairness),
        ``STOPPING_SAMPLES`` rankings per validation query.
        """
        weight = objective.fairness.weight if objective.fairness is not None else 0.0
        return cls(
            backend, vali, k=objective.spec.K if k is None else k, weight=weight,
            patience=patience, n_samples=STOPPING_SAMPLES, seed=seed, n_jobs=n_jobs,
        )

    def after_round(self, booster: Any, iteration: int) -> bool:
        """Score round ``iteration`` (0-based); True when training should stop."""
        scores = self.vali_margins_after(booster, iteration)
        value = float(policy_objective(scores, self.vali, **self.options))
        if value > self.best_value:
            self.best_value, self.best_round = value, iteration + 1
            self.vali_margins = scores
            if self.X_predict is not None:
                self.margins = self.backend.margins(
                    booster, self.X_predict, n_threads=self.n_jobs
                )
        return iteration + 1 - self.best_round >= self.patience
