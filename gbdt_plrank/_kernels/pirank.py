"""Numba kernels of the PiRank loss: relaxed NDCG@K from the top rows of NeuralSort.

LOW LEVEL: no validation (the Python API in ``gbdt_plrank._training.pirank_objective`` checks every
input). Queries run in parallel (``prange``); each writes only its own slice of ``grad`` and
``hess`` and its own entry of ``loss``.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(cache=True)
def _tie_blocks(values, order):
    """For each sorted position, the first and one-past-last sorted positions of its tie block."""
    n = order.shape[0]
    first = np.empty(n, dtype=np.int64)
    last = np.empty(n, dtype=np.int64)
    p = 0
    while p < n:
        q = p + 1
        while q < n and values[order[q]] == values[order[p]]:
            q += 1
        for t in range(p, q):
            first[t] = p
            last[t] = q
        p = q
    return first, last


@njit(cache=True)
def _below_above(x, order, last, low, high, tie):
    """Per document m: sums of ``x`` over the documents scored strictly below, above, tied with
    m."""
    n = order.shape[0]
    run = 0.0
    p = 0
    while p < n:
        q = last[p]
        block = 0.0
        for t in range(p, q):
            block += x[order[t]]
        for t in range(p, q):
            low[order[t]] = run
            tie[order[t]] = block
        run += block
        p = q
    for t in range(n):
        m = order[t]
        high[m] = run - low[m] - tie[m]


@njit(cache=True)
def _query(s, rho, theta, tau, bound, grad, hess):
    """Loss, gradient and Hessian diagonal of ``1 - relaxed NDCG@K`` of one query; returns the loss.

    With ``bound`` the Hessian is replaced by its upper bound
    ``sum_i theta_i (max rho - min rho) Var_{p_i}(a)``, which is >= its absolute value.
    """
    n = s.shape[0]
    k = min(theta.shape[0], n)
    order = np.argsort(s, kind="mergesort")
    first, last = _tie_blocks(s, order)
    # B_m = sum_j |s_m - s_j| and S_m = sum_j sign(s_m - s_j) from the sorted order
    csum = np.zeros(n + 1)
    for t in range(n):
        csum[t + 1] = csum[t] + s[order[t]]
    B = np.empty(n)
    S = np.empty(n)
    for t in range(n):
        m = order[t]
        below = first[t]
        above = n - last[t]
        B[m] = s[m] * below - csum[below] + (csum[n] - csum[last[t]]) - s[m] * above
        S[m] = below - above
    p = np.empty(n)
    u = np.empty(n)
    plow = np.empty(n)
    phigh = np.empty(n)
    ptie = np.empty(n)
    ulow = np.empty(n)
    uhigh = np.empty(n)
    utie = np.empty(n)
    spread = rho.max() - rho.min()
    loss = 1.0
    for i in range(k):
        c = n - 1.0 - 2.0 * i  # n + 1 - 2 * rank, rank = i + 1
        zmax = -np.inf
        for m in range(n):
            p[m] = (c * s[m] - B[m]) / tau
            zmax = max(zmax, p[m])
        total = 0.0
        for m in range(n):
            p[m] = np.exp(p[m] - zmax)
            total += p[m]
        r = 0.0
        for m in range(n):
            p[m] /= total
            r += p[m] * rho[m]
        loss -= theta[i] * r
        for m in range(n):
            u[m] = p[m] * (rho[m] - r)
        _below_above(p, order, last, plow, phigh, ptie)
        _below_above(u, order, last, ulow, uhigh, utie)
        w = theta[i]
        for m in range(n):
            ua = (c * u[m] - u[m] * S[m] - ulow[m] + uhigh[m]) / tau
            pa = (c * p[m] - p[m] * S[m] - plow[m] + phigh[m]) / tau
            uaa = (u[m] * (c - S[m]) ** 2 + ulow[m] + uhigh[m]) / (tau * tau)
            grad[m] -= w * ua
            if bound:
                paa = (p[m] * (c - S[m]) ** 2 + plow[m] + phigh[m]) / (tau * tau)
                hess[m] += w * spread * (paa - pa * pa)
            else:
                hess[m] -= w * (uaa - 2.0 * ua * pa)
    return loss


@njit(cache=True, parallel=True)
def pirank_groups(scores, rho, group_ptr, theta, tau, bound, loss, grad, hess):
    """Fill ``loss[q]`` (0 for queries without relevant documents), ``grad`` and ``hess``.

    ``rho`` holds the gains already divided by the ideal DCG@K of their query.
    """
    for q in prange(group_ptr.shape[0] - 1):
        lo = group_ptr[q]
        hi = group_ptr[q + 1]
        grad[lo:hi] = 0.0
        hess[lo:hi] = 0.0
        relevant = False
        for d in range(lo, hi):
            relevant = relevant or rho[d] > 0.0
        if relevant:
            loss[q] = _query(scores[lo:hi], rho[lo:hi], theta, tau, bound, grad[lo:hi], hess[lo:hi])
        else:
            loss[q] = 0.0
