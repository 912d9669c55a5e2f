r"""HIGH LEVEL: the fairness-of-exposure term of the PL-Rank objective and what the estimator needs.

With ``fairness="expected-exposure"`` the PL-Rank objective maximises, per query,

.. math::

    J(m) = \mathbb{E}_{y \sim \pi_m}\Big[\sum_k \theta_k \rho_{y_k}\Big]
           - w \sum_d \big(E(d) - \epsilon(d)\big)^2,
    \qquad E(d) = \mathbb{E}_{y \sim \pi_m}\Big[\sum_k \theta_k \mathbb{1}[y_k = d]\Big],

the expected metric@K (``rho`` normalised by the ideal DCG for NDCG) minus ``w`` =
``fairness_weight`` times the expected exposure loss EE-L of Diaz et al. (2020) against the
equal-expected-exposure target :math:`\epsilon(d)`: the mean rank weight over the ranks that
d's grade occupies in the ideal ranking (Diaz et al. 2020;
:func:`gbdt_plrank.metrics.expected_exposure_loss` measures it). Its gradient is PL-Rank's with
the signed per-document reward :math:`\rho_d - 2w(E(d) - \epsilon(d))` (Oosterhuis 2021, the
fairness form of PL-Rank); the kernels estimate :math:`E` and the PL-Rank terms from independent
halves of the samples (:func:`gbdt_plrank._fair_kernels.fair_estimate_groups`).

Hessian (loss :math:`L = -J`): the PL-Rank Hessian estimate with the same signed reward, plus the
Gauss-Newton part :math:`2w\sum_i (\partial E(i)/\partial m(d))^2 \ge 0`, of which
:func:`FairnessSpec.gauss_newton` uses the lower bound
:math:`2w\,\frac{D}{D-1}\,(\partial E(d)/\partial m(d))^2`: the exposures of a query sum to a
constant, so :math:`\sum_{i \ne d} \partial E(i)/\partial m(d) = -\partial E(d)/\partial m(d)`,
and by Cauchy-Schwarz :math:`\sum_{i \ne d} (\partial E(i)/\partial m(d))^2 \ge
(\partial E(d)/\partial m(d))^2 / (D-1)` (equality for D = 2).

References
----------
F. Diaz, B. Mitra, M. D. Ekstrand, A. J. Biega and B. Carterette. Evaluating stochastic
rankings with expected exposure. CIKM 2020.

H. Oosterhuis. Computationally efficient optimization of Plackett-Luce ranking models for
relevance and fairness. SIGIR 2021.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import _fair_kernels

__all__ = ["FAIRNESS", "FairnessSpec"]

#: The fairness losses the objective can subtract from the expected metric.
FAIRNESS = ("expected-exposure",)

#: The metrics whose rank weights define exposure (DCG's; precision's are flat over the top K).
FAIR_METRICS = ("ndcg", "dcg")


@dataclass(frozen=True)
class FairnessSpec:
    """The fairness term: its name (one of :data:`FAIRNESS`) and its weight ``w >= 0``.

    Built from validated options (:attr:`gbdt_plrank._options.PLRankOptions.fairness_spec`).
    """

    name: str
    weight: float

    @property
    def loss_name(self) -> str:
        """The loss's short name in metric names: ``"ee_l"`` for the expected exposure loss."""
        return "ee_l"

    @staticmethod
    def target(labels: np.ndarray, group_ptr: np.ndarray, theta: np.ndarray) -> np.ndarray:
        r"""The equal-expected-exposure target :math:`\epsilon(d)` of every row ``(n,)``."""
        out = np.empty(labels.shape[0])
        _fair_kernels.equal_exposure_target(labels, group_ptr, theta, out)
        return out

    def gauss_newton(self, slope: np.ndarray, group_ptr: np.ndarray) -> np.ndarray:
        r""":math:`2w\,\frac{D}{D-1}\,\widehat{\partial E(d)/\partial m(d)}^2` per row (0 if D = 1)."""
        sizes = np.diff(group_ptr).astype(np.float64)
        factor = np.divide(sizes, sizes - 1.0, out=np.zeros_like(sizes), where=sizes > 1)
        return 2.0 * self.weight * np.repeat(factor, np.diff(group_ptr)) * slope * slope
