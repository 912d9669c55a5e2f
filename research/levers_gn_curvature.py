r"""A positive, Gauss-Newton-like curvature for PL-Rank: the reward-weighted Fisher diagonal.

For a sampled ranking :math:`y` (length :math:`K' = \min(K, D)`) with normalisers :math:`S_k` and
:math:`PR_k = \sum_{i \ge k} \theta_i \rho_{y_i}`, document :math:`d` took part in the placements
:math:`k \le r_d` (its own rank, or :math:`K'` when it is not placed), each a softmax in which it
had probability :math:`p_k(d) = e(d)/S_k`. The curvature

.. math::

    c_d = \mathbb{E}_y\Big[\sum_{k \le r_d} p_k(d)\,(1 - p_k(d))\,|\rho_d \theta_k - PR_k|\Big]

weights the variance of each of those softmaxes by how much placing :math:`d` at rank :math:`k`
instead of what was placed would change the reward (the factor of :math:`p_k(d)` in PL-Rank-3's
gradient term). It is positive, like LambdaMART's :math:`\sum |\Delta| \sigma (1 - \sigma)`.

A measurement prototype for ``research/levers.py`` (not part of the library): plain
O(N K D) per query, rankings drawn by an exponential race from their own streams, keyed
``(seed + 1000003, round, query)`` so that they are independent of the gradient's samples.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from gbdt_plrank._kernels.samplers import shifted_exp
from gbdt_plrank._kernels.streams import _uniform, stream_state

__all__ = ["gn_groups"]


@njit(cache=True)
def _gn_query(m, rho, theta, N, state, h):
    D = m.shape[0]
    K = min(theta.shape[0], D)
    e = np.empty(D)
    shifted_exp(m, e)
    keys = np.empty(D)
    S = np.empty(K)
    PR = np.empty(K + 1)
    pos = np.full(D, -1)
    h[:] = 0.0
    for _ in range(N):
        for d in range(D):
            keys[d] = -np.log(1.0 - _uniform(state)) / e[d]
        order = np.argsort(keys)[:K]
        total = e.sum()
        for k in range(K):
            S[k] = total
            total -= e[order[k]]
            pos[order[k]] = k
        PR[K] = 0.0
        for k in range(K - 1, -1, -1):
            PR[k] = PR[k + 1] + theta[k] * rho[order[k]]
        for d in range(D):
            r = pos[d] if pos[d] >= 0 else K - 1
            acc = 0.0
            for k in range(r + 1):
                p = e[d] / S[k]
                acc += p * (1.0 - p) * abs(rho[d] * theta[k] - PR[k])
            h[d] += acc
        for k in range(K):
            pos[order[k]] = -1
    for d in range(D):
        h[d] /= N


@njit(parallel=True, cache=True)
def gn_groups(m, rho, ptr, theta, N, seed, round_, h):
    """``h``: the curvature of every document; queries with one document or rho all 0 get 0."""
    for g in prange(ptr.shape[0] - 1):
        lo, hi = ptr[g], ptr[g + 1]
        relevant = False
        for d in range(lo, hi):
            if rho[d] != 0.0:
                relevant = True
        if hi - lo < 2 or not relevant:
            h[lo:hi] = 0.0
            continue
        state = np.empty(1, dtype=np.uint64)
        state[0] = stream_state(seed + 1000003, round_, g)
        _gn_query(m[lo:hi], rho[lo:hi], theta, N, state, h[lo:hi])
