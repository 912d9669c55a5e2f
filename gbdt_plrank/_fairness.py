r"""HIGH LEVEL: the options of the fairness-of-exposure objective and what the estimator needs.

With ``fairness="expected-exposure"`` the PL-Rank objective maximises, per query,

.. math::

    J(m) = \mathbb{E}_{y \sim \pi_m}\Big[\sum_k \theta_k \rho_{y_k}\Big]
           - w \sum_d \big(E(d) - \epsilon(d)\big)^2,
    \qquad E(d) = \mathbb{E}_{y \sim \pi_m}\Big[\sum_k \theta_k \mathbb{1}[y_k = d]\Big],

the expected metric@K (``rho`` normalised by the ideal DCG for NDCG) minus ``w`` =
``fairness_weight`` times the expected exposure loss EE-L of Diaz et al. (2020) against the
equal-expected-exposure target :math:`\epsilon(d)`: the mean rank weight over the ranks that
d's grade occupies in the ideal ranking (DESIGN.md section 8;
:func:`gbdt_plrank.metrics.expected_exposure_loss` measures it). Its gradient is PL-Rank's with
the signed per-document reward :math:`\rho_d - 2w(E(d) - \epsilon(d))` (Oosterhuis 2021, the
fairness form of PL-Rank); the kernels estimate :math:`E` and the PL-Rank terms from independent
halves of the samples (:func:`gbdt_plrank._kernels.fair_estimate_groups`).

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

import math
from dataclasses import dataclass

import numpy as np

from . import _kernels
from ._validation import check_choice, is_number

__all__ = ["FAIRNESS", "FairnessSpec"]

#: The fairness losses the objective can subtract from the expected metric.
FAIRNESS = ("expected-exposure",)

#: The metrics whose rank weights define exposure (DCG's; precision's are flat over the top K).
FAIR_METRICS = ("ndcg", "dcg")


def check_fairness_weight(value: object) -> float:
    """``fairness_weight`` must be a finite number >= 0."""
    if not is_number(value) or not math.isfinite(value) or value < 0:
        raise ValueError(f"fairness_weight must be a finite number >= 0, but {value!r} is given.")
    return float(value)


@dataclass(frozen=True)
class FairnessSpec:
    """The validated fairness options: the loss's name and its weight ``w``."""

    name: str
    weight: float

    @classmethod
    def of(
        cls, fairness: object, fairness_weight: object, *, metric: str, N: int | None
    ) -> FairnessSpec | None:
        """Validate the options; ``None`` when ``fairness`` is None (relevance only).

        ``fairness_weight`` is checked either way. ``N`` (rankings per query; None when the
        rankings are given) must be >= 2, since the rankings are split into two halves.

        Raises
        ------
        ValueError
            For a weight that is negative or not finite, an unknown name, the precision metric,
            or ``N < 2``; the message names the value and the rule.
        """
        weight = check_fairness_weight(fairness_weight)
        if fairness is None:
            return None
        name = check_choice("fairness", fairness, FAIRNESS)
        if metric not in FAIR_METRICS:
            raise ValueError(
                f"fairness={name!r} measures exposure with the DCG rank weights 1/log2(rank+1), "
                f"so metric must be one of {', '.join(map(repr, FAIR_METRICS))}, but "
                f"{metric!r} is given."
            )
        if N is not None and N < 2:
            raise ValueError(
                f"N must be >= 2 with fairness={name!r} (exposure and gradient terms come from "
                f"two halves of the N rankings), but {N!r} is given."
            )
        return cls(name, weight)

    @staticmethod
    def target(labels: np.ndarray, group_ptr: np.ndarray, theta: np.ndarray) -> np.ndarray:
        r"""The equal-expected-exposure target :math:`\epsilon(d)` of every row ``(n,)``."""
        out = np.empty(labels.shape[0])
        _kernels.equal_exposure_target(labels, group_ptr, theta, out)
        return out

    def gauss_newton(self, slope: np.ndarray, group_ptr: np.ndarray) -> np.ndarray:
        r""":math:`2w\,\frac{D}{D-1}\,\widehat{\partial E(d)/\partial m(d)}^2` per row (0 if D = 1)."""
        sizes = np.diff(group_ptr).astype(np.float64)
        factor = np.divide(sizes, sizes - 1.0, out=np.zeros_like(sizes), where=sizes > 1)
        return 2.0 * self.weight * np.repeat(factor, np.diff(group_ptr)) * slope * slope
