r"""Numba kernels: the weights ``deep_weight`` puts on the gradient of the documents a policy
places deep (:mod:`gbdt_plrank._training.deep_weights` has the formula and validates the input).

LOW LEVEL, as every module of :mod:`gbdt_plrank._kernels`: ``margins`` and ``grad`` are
contiguous ``float64`` of shape ``(n,)``, ``group_ptr`` the ``(G + 1,)`` int64 boundaries of the
``G`` query groups, ``out`` a ``float64`` buffer of shape ``(n,)`` that the kernels fill. Each
query is one pass over its rows, every query in parallel. :func:`query_weights` is also
compiled for the device (:mod:`gbdt_plrank._kernels.cuda`), so that the GPU weighs as the CPU.
"""

from __future__ import annotations

import math

from numba import njit, prange


@njit(cache=True, error_model="numpy", inline="always")
def query_weights(margins, grad, lo, hi, K, cap, scaled, out):
    r"""The weights of the query of rows ``lo:hi`` into ``out[lo:hi]``:
    ``1 / clip(K' rho_d, 1/cap, 1)``, with ``rho`` the softmax of its ``margins`` and
    ``K' = min(K, hi - lo)``; with ``scaled``, times the query's ``s_q`` that keeps
    :math:`\sum_d w_d |g_d| = \sum_d |g_d|` of ``grad`` (``s_q = 1`` where the gradient is 0).
    Nothing for an empty query."""
    if hi == lo:
        return
    top = margins[lo]
    for d in range(lo + 1, hi):
        top = max(top, margins[d])
    total = 0.0
    for d in range(lo, hi):
        out[d] = math.exp(margins[d] - top)
        total += out[d]
    places = min(K, hi - lo) / total
    floor = 1.0 / cap
    size = 0.0
    weighted = 0.0
    for d in range(lo, hi):
        w = 1.0 / min(max(places * out[d], floor), 1.0)
        out[d] = w
        if scaled:
            g = abs(grad[d])
            size += g
            weighted += w * g
    if scaled and weighted > 0.0:
        scale = size / weighted
        for d in range(lo, hi):
            out[d] *= scale


@njit(parallel=True, cache=True, error_model="numpy")
def query_weights_groups(margins, grad, group_ptr, K, cap, scaled, out):
    """:func:`query_weights` of every query group (``grad`` is read only with ``scaled``)."""
    for g in prange(group_ptr.shape[0] - 1):
        query_weights(margins, grad, group_ptr[g], group_ptr[g + 1], K, cap, scaled, out)
