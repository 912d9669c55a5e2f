r"""PiRank: 1 - relaxed NDCG@K from the NeuralSort relaxation, as a booster objective.

For a query with scores :math:`s \in \mathbb{R}^n`, NeuralSort (Grover et al., ICLR 2019)
relaxes the permutation matrix that sorts :math:`s` in decreasing order into the
row-stochastic matrix

.. math::

    \hat P_{i\cdot} = \operatorname{softmax}\bigl((c_i\, s - B) / \tau\bigr), \qquad
    c_i = n + 1 - 2i, \qquad B_j = \textstyle\sum_k |s_j - s_k|,

and PiRank (Swezey et al., NeurIPS 2021, section 3, eq. 12) scores its top :math:`K` rows
with the exponential gains :math:`g = 2^y - 1`:

.. math::

    \mathcal{L}(s) = 1 - \frac{1}{\mathrm{IDCG@K}} \sum_{i=1}^{\min(K, n)}
    \frac{\hat P_{i\cdot}\, g}{\log_2(i + 1)}.

As :math:`\tau \to 0` (distinct scores) :math:`\mathcal{L}` tends to :math:`1 -
\mathrm{NDCG@K}`. The gradient and the Hessian diagonal are analytic and cost
:math:`O(n \log n + K n)` per query after one sort, not the :math:`O(n^2)` of the full
matrix: the derivation is in :doc:`/guide/pirank`, "The loss and its derivatives".
"""

from __future__ import annotations

import numpy as np

from .._kernels import pirank as _pirank_kernels
from .._ranking_metric import RankingMetric
from .._util.threads import numba_threads
from .._util.validation import (
    as_finite_vector,
    check_choice,
    check_group_ptr,
    check_labels,
    check_positive_int,
    check_positive_number,
    check_same_length,
)
from .booster_objective import BoosterObjective
from .options import FINISHED_HESSIANS
from .plrank_grad_hess import finish_hessian

__all__ = ["PIRANK_HESSIANS", "PiRankObjective", "pirank_loss_grad_hess", "pirank_objective"]

#: Hessian modes: the majorising ``"bound"``, then those of one estimate of the PL-Rank objective
#: (PiRank's gradient is deterministic: it has no halves to denoise).
PIRANK_HESSIANS = ("bound", *FINISHED_HESSIANS)


def _metric(K: object) -> RankingMetric:
    """NDCG@K with exponential gains, the metric PiRank relaxes."""
    return RankingMetric("ndcg", check_positive_int("K", K), "exp")


def _run(
    scores: np.ndarray,
    rho: np.ndarray,
    ptr: np.ndarray,
    metric: RankingMetric,
    tau: float,
    hessian: str,
    n_jobs: int | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Loss per query, gradient and Hessian; ``"bound"`` is computed by the kernel, passed as is."""
    loss = np.empty(ptr.shape[0] - 1)
    grad = np.empty_like(scores)
    hess = np.empty_like(scores)
    bound = hessian == "bound"
    with numba_threads(n_jobs):
        _pirank_kernels.pirank_groups(
            scores, rho, ptr, metric.theta(ptr), tau, bound, loss, grad, hess
        )
    return loss, grad, finish_hessian(hess, "raw" if bound else hessian)


def pirank_loss_grad_hess(
    scores: np.ndarray,
    labels: np.ndarray,
    group_ptr: np.ndarray,
    *,
    K: int = 10,
    tau: float = 0.3,
    hessian: str = "raw",
    n_jobs: int | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""PiRank loss per query, its gradient and Hessian diagonal with respect to ``scores``.

    Parameters
    ----------
    scores, labels : ndarray of shape (n_docs,)
        Model scores and graded relevance labels (gain :math:`2^y - 1`).
    group_ptr : ndarray of shape (n_queries + 1,)
        Query boundaries ``[0, ..., n_docs]``.
    K : int, default 10
        Cut-off of the relaxed NDCG.
    tau : float, default 0.3
        NeuralSort temperature, finite and > 0.
    hessian : {"raw", "bound", "abs", "clip", "constant"}, default "raw"
        ``"raw"`` is the exact diagonal :math:`h` (indefinite), ``"abs"`` :math:`|h|`, ``"clip"``
        :math:`\max(h, 10^{-3}\max|h|)`, ``"constant"`` all ones. ``"bound"`` is the
        Gauss-Newton-like majorant :math:`\sum_i \theta_i \Delta \operatorname{Var}_{p_i}(a)
        \ge |h_m|`, with :math:`\Delta` the range of :math:`g'` in the query: the row term of
        :math:`h_m` is :math:`-\theta_i \operatorname{Cov}_{p_i}(g', (a - \bar a)^2)`, and a
        covariance with a non-negative variable is at most :math:`\Delta` times its mean.
    n_jobs : int or None
        Numba threads (None: Numba's default).

    Returns
    -------
    loss : ndarray of shape (n_queries,)
        :math:`1 - \text{relaxed NDCG@K}` per query (0 for queries without a relevant document).
    grad, hess : ndarray of shape (n_docs,)
    """
    metric = _metric(K)
    hessian = check_choice("hessian", hessian, PIRANK_HESSIANS)
    tau = check_positive_number("tau", tau)
    y = check_labels(labels, gain="exp")
    s = as_finite_vector("scores", scores)
    check_same_length(scores=s, labels=y)
    ptr = check_group_ptr(group_ptr, y.shape[0])
    return _run(s, metric.rewards(y, ptr), ptr, metric, tau, hessian, n_jobs)


class PiRankObjective(BoosterObjective):
    """The PiRank objective (``1 - relaxed NDCG@K``) for XGBoost and LightGBM.

    Deterministic: every call returns the exact gradient and (transformed) Hessian diagonal of
    :func:`pirank_loss_grad_hess` at the current margins. Build it with :func:`pirank_objective`.
    """

    title = "PiRank"

    def __init__(self, K: int, tau: float, *, hessian: str, n_jobs: int | None) -> None:
        super().__init__()
        self.metric = _metric(K)
        self.hessian = check_choice("hessian", hessian, PIRANK_HESSIANS)
        self.tau = check_positive_number("tau", tau)
        self.n_jobs = n_jobs

    def __repr__(self) -> str:
        return f"pirank_objective(K={self.metric.K}, tau={self.tau!r}, hessian={self.hessian!r})"

    def _grad_hess(
        self, scores: np.ndarray, keys: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray]:
        _, grad, hess = _run(
            scores, self._rho, self._ptr, self.metric, self.tau, self.hessian, self.n_jobs
        )
        return grad, hess


def pirank_objective(
    K: int = 10,
    tau: float = 0.3,
    *,
    hessian: str = "constant",
    n_jobs: int | None = None,
) -> PiRankObjective:
    """A PiRank objective for ``xgboost.train(obj=...)`` and ``lightgbm.train``.

    .. code-block:: python

        obj = pirank_objective(K=10)
        xgboost.train({"base_score": 0.0, "eval_metric": "ndcg@10"}, dtrain, 300, obj=obj)
        lightgbm.train({"objective": obj, "metric": "ndcg", "eval_at": [10]}, dataset, 300)
        lightgbm.LGBMRanker(objective=obj.lgbm_ranker).fit(X, y, group=sizes)

    Parameters
    ----------
    K : int, default 10
        Cut-off of the relaxed NDCG@K.
    tau : float, default 0.3
        NeuralSort temperature (same unit as the margins), finite and > 0. The gradient scales
        as :math:`1/\tau` and every Hessian mode but ``"constant"`` as :math:`1/\tau^2`, so
        Newton steps scale as :math:`\tau` and, up to the booster's regularisation (``lambda``,
        ``min_child_weight``), the learned ranking does not depend on ``tau``; with
        ``"constant"`` the step is the gradient's, and ``tau`` sets its size.
    hessian : {"constant", "clip", "abs", "bound", "raw"}, default "constant"
        What the booster receives as Hessian, see :func:`pirank_loss_grad_hess`.
    n_jobs : int or None
        Numba threads.

    Returns
    -------
    PiRankObjective

    Notes
    -----
    The defaults were chosen on validation splits of MQ2008 and MQ2007-agg, never on test
    splits (``python -m research.pirank_defaults`` writes the tables): the constant Hessian at
    tau 0.3 was behind no other candidate in any of the eight cells (2 datasets x 2 boosters
    x NDCG@5 and @10).
    """
    return PiRankObjective(K, tau, hessian=hessian, n_jobs=n_jobs)
