r"""Numba kernels of the ranking metrics in :mod:`gbdt_plrank.metrics`.

LOW LEVEL. Nothing here validates its input: every array is contiguous, ``float64`` (values) or
``int64`` (boundaries), and the rows of each query are contiguous in the order the public
functions put them in. Shapes are ``(D,)`` for one query, ``(n,)`` for all rows, ``(G + 1,)`` for
the boundaries ``ptr`` of ``G`` queries and ``(K,)`` for the rank weights.

Every metric of the module is the one rank-weighted sum, with its own gains :math:`\rho` and rank
weights :math:`\theta` (as in the PL-Rank papers):

.. math::

    V = \sum_{r=1}^{\min(K, D)} \theta_r\, \rho_{\pi(r)},

where :math:`\pi(r)` is the document at rank :math:`r` of the ranking by descending score, ties
kept in the input order (a stable sort, as XGBoost and LightGBM do). DCG@K takes
:math:`\theta_r = 1/\log_2(r+1)`; hits@K takes :math:`\theta_r = 1`; the summed positions of ARP
take :math:`\theta_r = r`; the reciprocal rank takes :math:`\theta_r = 1/r` and keeps only the
first term with :math:`\rho > 0` (``first_only``). The same sum over the ranking by descending
gain is the ideal value (ideal DCG@K for NDCG).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(cache=True)
def rank_order(scores):
    """Document indices by descending score, ties in input order (stable), ``(D,)`` int64."""
    return np.argsort(-scores, kind="mergesort")


@njit(cache=True)
def _weighted_sum(gains, order, theta, first_only):
    """``sum_{r < min(K, D)} theta[r] * gains[order[r]]`` (only the first positive gain if
    ``first_only``)."""
    K = min(theta.shape[0], order.shape[0])
    total = 0.0
    for r in range(K):
        g = gains[order[r]]
        if first_only:
            if g > 0.0:
                return theta[r] * g
        else:
            total += theta[r] * g
    return total


@njit(cache=True)
def ranked_value(gains, scores, theta, first_only):
    """The rank-weighted sum of one query, ranked by ``scores``."""
    return _weighted_sum(gains, rank_order(scores), theta, first_only)


@njit(cache=True)
def ideal_value(gains, theta, first_only):
    """The rank-weighted sum of one query, ranked by descending gain (ties cannot matter)."""
    return _weighted_sum(gains, rank_order(gains), theta, first_only)


@njit(parallel=True, cache=True)
def query_values(gains, scores, ptr, theta, first_only, want_ideal, value, ideal, total):
    """Per query ``q``: ``value[q]`` ranked by score, ``ideal[q]`` ranked by gain (left untouched
    unless ``want_ideal``) and ``total[q]``, the sum of the query's gains.

    Each query writes only its own entries, so the loop runs in parallel without locks.
    """
    for q in prange(ptr.shape[0] - 1):
        a = ptr[q]
        b = ptr[q + 1]
        g = gains[a:b]
        value[q] = ranked_value(g, scores[a:b], theta, first_only)
        if want_ideal:
            ideal[q] = ideal_value(g, theta, first_only)
        s = 0.0
        for i in range(a, b):
            s += gains[i]
        total[q] = s


@njit(parallel=True, cache=True, error_model="numpy")
def ideal_normalise(rho, group_ptr, theta, out):
    """``out = rho / IDCG@K`` per group, the ideal DCG of rho's positive part (groups with IDCG
    0 keep 0): the NDCG normalisation, of signed rewards too (for rho >= 0, rho's own)."""
    for g in prange(group_ptr.shape[0] - 1):
        lo = group_ptr[g]
        hi = group_ptr[g + 1]
        ordered = np.sort(rho[lo:hi])[::-1]
        ideal = 0.0
        for k in range(min(theta.shape[0], hi - lo)):
            ideal += theta[k] * max(ordered[k], 0.0)
        for d in range(lo, hi):
            out[d] = rho[d] / ideal if ideal > 0.0 else 0.0
