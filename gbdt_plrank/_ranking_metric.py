r"""The ranking metric: one owner of the gain, the rank weights and the per-document rewards.

A ranking :math:`y` of a query scores :math:`\sum_{k=1}^{\min(K, D)} \theta_k\, \rho_{y_k}`:

- DCG@K: :math:`\theta_k = 1/\log_2(k+1)` and :math:`\rho_d = g(\ell_d)`, the gain of the label,
  :math:`2^{\ell} - 1` (``"exp"``, the default of XGBoost, LightGBM and the papers) or
  :math:`\ell` (``"linear"``);
- NDCG@K: DCG@K with :math:`\rho_d` divided by the query's ideal DCG@K (0 when that is 0),
  the ideal DCG of the gains' positive part :math:`\max(\rho, 0)` (the gains themselves
  unless they are signed rewards);
- precision@K: :math:`\theta_k = 1/K` and :math:`\rho_d = [\ell_d > 0]\, K / \min(K, D)`, so that
  a query shorter than K is divided by its length (XGBoost's ``pre@K``).

The PL-Rank objective maximises the expected score of a Plackett-Luce policy, which is
:math:`\sum_d E_\theta(d)\, \rho_d` with the policy's exposure :math:`E_\theta(d)` (the expected
:math:`\theta` at d's rank); the metrics of :mod:`gbdt_plrank.metrics` and every evaluation of
the package read gains and rank weights from here.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ._kernels import metrics as _metric_kernels

__all__ = ["GAINS", "METRICS", "RankingMetric", "dcg_weights", "gains", "ranks_used"]

#: The metrics a PL-Rank objective can maximise.
METRICS = ("ndcg", "dcg", "precision")

#: The gains of a label: ``2**label - 1`` or ``label``.
GAINS = ("exp", "linear")


def gains(labels: np.ndarray, gain: str) -> np.ndarray:
    """Per-document gains ``(n,)`` of validated labels: ``2**label - 1`` or ``label``."""
    return np.exp2(labels) - 1.0 if gain == "exp" else np.array(labels, dtype=np.float64)


def dcg_weights(K: int) -> np.ndarray:
    r"""DCG rank weights :math:`\theta_k = 1/\log_2(k+1)`, :math:`k = 1..K`, shape ``(K,)``."""
    return 1.0 / np.log2(np.arange(2, K + 2, dtype=np.float64))


def ranks_used(K: int | None, group_ptr: np.ndarray) -> int:
    r"""The ranks a cut-off ``K`` can reach on the queries of ``group_ptr``: min(K, longest query).

    A query of D documents is ranked to :math:`\min(K, D)`, so no rank below the longest query
    is ever weighed, sampled or stored: every array sized by a cut-off is sized by this, and a
    cut-off of 10**9 costs what the longest query costs. ``K=None``: the longest query.
    """
    longest = int(np.diff(group_ptr).max(initial=0))
    return longest if K is None else min(K, longest)


@dataclass(frozen=True)
class RankingMetric:
    """A metric at a cut-off with a gain, validated by the caller (the options' schema).

    Attributes
    ----------
    metric : {"ndcg", "dcg", "precision"}
    K : int
        Cut-off, >= 1.
    gain : {"exp", "linear"}
        Gain of a label (precision counts labels > 0 and does not use it).
    """

    metric: str
    K: int
    gain: str

    @property
    def name(self) -> str:
        """``"<metric>@<K>"``, as the metric is named in evaluation histories."""
        return f"{self.metric}@{self.K}"

    def at(self, K: int) -> RankingMetric:
        """The same metric at the cut-off ``K``."""
        return replace(self, K=K)

    @property
    def signed(self) -> bool:
        """Whether labels of any sign keep the metric meaningful: DCG and NDCG with the linear
        gain (an expected DCG linear in the labels; NDCG divides each query's by the ideal DCG
        of its labels' positive part, skipping a query with none). Precision counts
        ``label > 0``."""
        return self.metric in ("dcg", "ndcg") and self.gain == "linear"

    def theta(self, group_ptr: np.ndarray) -> np.ndarray:
        """Rank weights of the ranks the queries of ``group_ptr`` reach (:func:`ranks_used`).

        1/log2(k+1) for DCG and NDCG, 1/K for precision; shape ``(min(K, longest query),)``.
        """
        n = ranks_used(self.K, group_ptr)
        if self.metric == "precision":
            return np.full(n, 1.0 / self.K)
        return dcg_weights(n)

    def rewards(self, labels: np.ndarray, group_ptr: np.ndarray) -> np.ndarray:
        r"""Per-document rewards :math:`\rho` ``(n,)`` of validated labels (module docstring)."""
        if self.metric == "precision":
            sizes = np.diff(group_ptr)
            scale = self.K / np.maximum(np.minimum(sizes, self.K), 1)
            return (labels > 0) * np.repeat(scale, sizes)
        rho = gains(labels, self.gain)
        if self.metric == "dcg":
            return rho
        out = np.empty_like(rho)
        _metric_kernels.ideal_normalise(rho, group_ptr, self.theta(group_ptr), out)
        return out
