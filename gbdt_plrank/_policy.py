r"""Monte-Carlo summaries of the Plackett-Luce policy of a ranker's margins.

A query's margins :math:`m(d)` define the policy that places, at rank :math:`k`, an unplaced
document with probability :math:`e^{m(d)} / \sum_{d' \text{ unplaced}} e^{m(d')}`: the policy
whose expected metric the PL-Rank objective maximises. :func:`sample_policy` draws rankings from
it once, with :func:`gbdt_plrank._kernels.sample_groups`; the rankings, the exposure and the
metric of a :class:`PolicySample` are then all functions of the same draws, so that one seed gives
rankings, exposures and metric estimates that agree with each other exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from . import _kernels
from ._estimator import dcg_weights, numba_threads
from ._groups import Groups
from .metrics import ndcg

__all__ = ["PolicySample", "sample_policy"]

# Rows per call of the NDCG: samples are scored in blocks of about this many rows.
_BLOCK_ROWS = 1 << 20


@njit(parallel=True, cache=True)
def _exposure_groups(rankings, ptr, n_samples, theta, out):
    """``out[ptr[g] + d]``: mean over the samples of ``theta[r]`` where ``d`` sits at rank ``r``."""
    for g in prange(ptr.shape[0] - 1):
        lo = ptr[g]
        hi = ptr[g + 1]
        for d in range(lo, hi):
            out[d] = 0.0
        for s in range(n_samples):
            row = rankings[g * n_samples + s]
            for r in range(row.shape[0]):
                if row[r] < 0:
                    break
                out[lo + row[r]] += theta[r]
        for d in range(lo, hi):
            out[d] /= n_samples


@dataclass(frozen=True)
class PolicySample:
    """``n_samples`` PL rankings of every query of a set of rows.

    Attributes
    ----------
    groups : Groups
        The caller's query structure (:func:`~gbdt_plrank._groups.resolve_groups`).
    ptr : int64 array of shape (Q + 1,)
        Boundaries of the Q non-empty queries in the grouped row order (empty queries, zeros
        among group sizes, hold no rows and are not sampled).
    rankings : int64 array of shape (Q * n_samples, min(K, max D))
        Row ``q * n_samples + s`` is sample ``s`` of non-empty query ``q``: query-local indices
        of the documents at ranks 1, 2, ..., ``-1`` beyond ``min(K, D_q)``.
    n_samples : int
        Samples per query.
    """

    groups: Groups
    ptr: np.ndarray
    rankings: np.ndarray
    n_samples: int

    def per_query(self) -> list[np.ndarray]:
        """One int64 array ``(n_samples, min(K, D))`` of caller row indices per query.

        Queries in the order of their first appearance in the caller's ``group``; an empty
        query gives an array of width 0.
        """
        sizes = self.groups.sizes
        S = self.n_samples
        kept_index = np.cumsum(sizes > 0) - 1
        out = []
        for g in self.groups.first_seen:
            if sizes[g] == 0:
                out.append(np.empty((S, 0), dtype=np.int64))
                continue
            q = kept_index[g]
            k = min(self.rankings.shape[1], int(sizes[g]))
            local = self.rankings[q * S : (q + 1) * S, :k]
            out.append(self.groups.order[self.groups.ptr[g] + local])
        return out

    def exposure(self, *, n_jobs: int | None) -> np.ndarray:
        r"""Monte-Carlo exposure of every row, in the caller's row order.

        .. math::

            \hat{E}(d) = \frac{1}{S} \sum_{s=1}^{S} \sum_{k=1}^{\min(K, D)}
                \frac{\mathbb{1}[y^{(s)}_k = d]}{\log_2(k + 1)},

        Parameters
        ----------
        n_jobs : int or None
            Numba threads (the result does not depend on it).

        Returns
        -------
        float64 array of shape (n,)
        """
        grouped = np.empty(int(self.ptr[-1]))
        theta = dcg_weights(self.rankings.shape[1])
        with numba_threads(n_jobs):
            _exposure_groups(self.rankings, self.ptr, self.n_samples, theta, grouped)
        return self.groups.to_input(grouped)

    def ndcg_per_sample(self, labels: np.ndarray, *, K: int, gain: str) -> np.ndarray:
        r"""Mean NDCG@K over the queries of each sample :math:`s = 1..S`.

        .. math::

            X_s = \frac{1}{Q} \sum_{q=1}^{Q} \mathrm{NDCG@K}\big(y^{(q, s)}\big),

        computed by :func:`gbdt_plrank.metrics.ndcg` on scores that put the placed documents in
        their sampled order above every unplaced one (NDCG@K only sees the top K), for blocks of
        samples at once (each sample's copy of a query is a query of its own). The :math:`X_s`
        are independent and identically distributed: each query draws from its own random
        stream, one sample after another.

        Parameters
        ----------
        labels : float64 array of shape (n,)
            Labels in the caller's row order.
        K : int
            Cut-off; the rankings must have been drawn with this ``K``.
        gain : {"exp", "linear"}
            Gain of the NDCG.

        Returns
        -------
        float64 array of shape (n_samples,)
        """
        Q = self.ptr.shape[0] - 1
        S = self.n_samples
        width = self.rankings.shape[1]
        by_sample = self.rankings.reshape(Q, S, width).transpose(1, 0, 2)  # (S, Q, width)
        grouped_labels = self.groups.to_sorted(labels)
        n = grouped_labels.shape[0]
        qid = np.repeat(np.arange(Q), np.diff(self.ptr))
        step = max(1, _BLOCK_ROWS // n)
        out = np.empty(S)
        for first in range(0, S, step):
            block = by_sample[first : first + step]
            b = block.shape[0]
            placed = block >= 0
            copy = np.broadcast_to(np.arange(b)[:, None, None], block.shape)
            rank_score = np.broadcast_to(np.arange(width, 0, -1, dtype=np.float64), block.shape)
            scores = np.zeros((b, n))
            scores[copy[placed], (self.ptr[:-1, None] + block)[placed]] = rank_score[placed]
            copy_qid = (np.arange(b)[:, None] * Q + qid).ravel()
            per_query = ndcg(
                np.tile(grouped_labels, b), scores.ravel(), copy_qid, k=K, gain=gain, per_query=True
            )
            out[first : first + b] = per_query.reshape(b, Q).mean(axis=1)
        return out


def sample_policy(
    margins: np.ndarray,
    groups: Groups,
    *,
    K: int,
    n_samples: int,
    seed: int,
    n_jobs: int | None,
) -> PolicySample:
    """Draw ``n_samples`` PL rankings of length ``min(K, D)`` for every query.

    Parameters
    ----------
    margins : float64 array of shape (n,)
        Finite margins (log-scores) in the caller's row order.
    groups : Groups
        Their query structure.
    K, n_samples : int
        Ranking length and samples per query, both ``>= 1``.
    seed : int
        Non-negative seed: the ``q``-th non-empty query in grouped order draws from the stream
        ``(seed, 0, q)``, so the result does not depend on the number of threads.
    n_jobs : int or None
        Numba threads.

    Returns
    -------
    PolicySample
    """
    sizes = groups.sizes
    ptr = np.concatenate(([0], np.cumsum(sizes[sizes > 0]))).astype(np.int64)
    width = min(K, int(sizes.max(initial=0)))
    rankings = np.empty(((ptr.shape[0] - 1) * n_samples, width), dtype=np.int64)
    grouped = np.ascontiguousarray(groups.to_sorted(margins), dtype=np.float64)
    with numba_threads(n_jobs):
        _kernels.sample_groups(grouped, ptr, K, n_samples, seed, rankings)
    return PolicySample(groups, ptr, rankings, n_samples)
