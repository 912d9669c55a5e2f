"""CUDA kernels (numba-cuda): the PL-Rank-3 gradient and Hessian estimate on a GPU.

LOW LEVEL. Nothing here validates its input: :mod:`gbdt_plrank._training.gpu` uploads contiguous
arrays of the dtypes named below. Importing this module imports ``numba.cuda`` (the ``gpu`` extra);
with ``NUMBA_ENABLE_CUDASIM=1`` set before that import, Numba's CUDA simulator runs the kernels on
the CPU, which is how they are tested without a GPU.

The estimate is that of ``gbdt_plrank._kernels.plrank.estimate_groups`` with the exponential-race
sampler (``SAMPLER_RACE``), on the same random streams: query ``g`` of round ``r`` draws from the
SplitMix64 counter keyed by ``(seed, r, keys[g])`` and sample ``s`` of a query of ``D`` documents
gives document ``d`` the key :math:`-\\log(1 - u) / e(d)` with the uniform the CPU kernels
draw: :math:`u_{sD + d + 1}` of the stream with independent noise, number ``d`` of point ``s`` of
the query's lattice with lattice noise (``gbdt_plrank._kernels.streams.noise_plan``). The same
seed therefore samples the same rankings on both, and the estimates agree
to rounding (the sums are added in another order: here in the order the threads finish, so the
last bits may differ from one call to the next).

One block of threads per query: its threads compute the PL weights :math:`e(d)` (the block's
maximum margin first), then draw the samples ``s = t, t + T, ...`` (thread ``t`` of ``T``), each
a ranking of the K smallest keys kept sorted in per-thread arrays while the PL weights of the
documents left out are summed (the normaliser below the ranking, positive terms only, as on the
CPU); each placed document's terms and sums are added with atomics, the unplaced sums of a sample
(``gbdt_plrank._kernels.plrank_terms._add_sample``) are summed per thread and then over the
block; finally every document's unplaced terms are applied
(``gbdt_plrank._kernels.plrank_terms._finish_query``). A document that every sample placed
gets no unplaced term, exactly, as on the CPU (where the two sums it would take the difference
of are equal): here a count of its placements says so, since sums added in another order need
not cancel exactly.
"""

from __future__ import annotations

import math
from functools import cache
from typing import Any

import numba
import numpy as np
from numba import cuda

from . import deep_weights, plrank, plrank_terms, streams, wide_margins
from .samplers import LOG_FLOOR
from .streams import NOISE_LATTICE
from .wide_margins import _E_MIN

__all__ = [
    "HESSIAN_CODES",
    "estimate_kernel",
    "finish_rows",
    "floor_queries",
    "pool_queries",
    "scale_queries",
    "widen",
]

HESSIAN_RAW = 0
HESSIAN_ABS = 1
HESSIAN_CLIP = 2
HESSIAN_CONSTANT = 3
HESSIAN_DENOISED = 4

#: ``hessian`` mode (:data:`gbdt_plrank._training.options.HESSIAN_MODES`) -> its code in
#: :func:`finish_rows` (see :func:`gbdt_plrank._training.plrank_grad_hess.finish_hessian`).
HESSIAN_CODES = {
    "raw": HESSIAN_RAW,
    "abs": HESSIAN_ABS,
    "clip": HESSIAN_CLIP,
    "constant": HESSIAN_CONSTANT,
    "denoised": HESSIAN_DENOISED,
}


def _device(cpu_kernel: Any, *, inline: bool = True) -> Any:
    """The CPU kernel's Python function compiled as a device function: one source for both.

    The functions it calls are CPU kernels too; numba-cuda compiles them for the device as well.
    Such a function uses ``math`` for ``exp`` and ``log1p``: numba-cuda does not compile ``np.exp``.
    """
    return cuda.jit(device=True, inline=inline)(cpu_kernel.py_func)


# SplitMix64 and the estimator's scalar steps, those of the CPU kernels (streams, plrank_terms,
# wide_margins, plrank): the device draws the CPU kernels' doubles, bit for bit, and adds the same
# terms.
stream_state = _device(streams.stream_state, inline=False)
uniform_at = _device(streams._uniform_at)
lattice_shift = _device(streams.lattice_shift)
lattice_generator = _device(streams.lattice_generator)
lattice_point = _device(streams.lattice_point)
_log_add = _device(wide_margins._log_add)
_sigmoid = _device(wide_margins._sigmoid)
_enter_rank = _device(plrank_terms._enter_rank)
_rescale = _device(plrank_terms._rescale)
_placed_terms = _device(plrank_terms._placed_terms)
_unplaced_terms = _device(plrank_terms._unplaced_terms)
_pool_query = _device(plrank.pool_query)
_query_weights = _device(deep_weights.query_weights)


@cuda.jit(device=True)
def _block_reduce(buf, value, largest):
    """The sum of ``value`` over the block's threads (a power of two of them), or with
    ``largest`` their maximum, in every thread."""
    t = cuda.threadIdx.x
    buf[t] = value
    cuda.syncthreads()
    step = cuda.blockDim.x // 2
    while step > 0:
        if t < step:
            buf[t] = max(buf[t], buf[t + step]) if largest else buf[t] + buf[t + step]
        cuda.syncthreads()
        step //= 2
    total = buf[0]
    cuda.syncthreads()
    return total


@cuda.jit(device=True)
def _kth_largest(scores, lo, hi, K, top_k):
    """The K-th largest of ``scores[lo:hi]`` (K <= hi - lo), by insertion into ``top_k``."""
    n = 0
    for d in range(lo, hi):
        x = scores[d]
        if n < K:
            i = n
            n += 1
        elif x > top_k[K - 1]:
            i = K - 1
        else:
            continue
        while i > 0 and top_k[i - 1] < x:
            top_k[i] = top_k[i - 1]
            i -= 1
        top_k[i] = x
    return top_k[K - 1]


#: The registers a thread of the estimate kernel may use. Uncapped it takes 138, which leaves
#: room for 3 blocks of 128 threads on an H200's SM (19% occupancy, by Nsight Compute); at 96
#: the call at 3.57 million documents took 17.8 against 19.3 ms (K=10, N=100) and 19.1 against
#: 21.8 ms (K=20, N=50) in one run, the estimate equal to rounding.
_MAX_REGISTERS = 96

#: The compiler options of the estimate kernel (the simulator, which compiles nothing, takes none).
_SIMULATED = numba.config.ENABLE_CUDASIM  # type: ignore[attr-defined]  # numba.config sets it at import
_ESTIMATE_OPTIONS = {} if _SIMULATED else {"max_registers": _MAX_REGISTERS}


@cache
def estimate_kernel(k_max: int, threads: int) -> Any:
    """The estimate kernel for rankings of at most ``k_max`` documents and blocks of ``threads``.

    ``threads`` is a power of two; ``k_max`` sizes the per-thread arrays (compiled once per
    value). Launched as ``kernel[G, threads](...)`` with the arguments

    ``scores, rho`` float64 (n,); ``group_ptr`` int64 (G + 1,); ``keys`` int64 (G,), the streams'
    keys; ``active`` bool (G,), whether a query has two or more documents whose rewards differ
    (``plrank.differing_groups``; else it gets 0); ``theta`` float64 (k_max,); ``n_samples``,
    ``seed``, ``round_`` integers; ``noise`` its code (``NOISE_CODES``); ``hess_max`` float64 (1,),
    raised to the largest ``|hess|``;
    work arrays ``e`` float64 (n,), ``own`` float64 (n, 4), ``count`` int32 (n,), ``gen``
    int64 (n,) and ``shift`` float64 (n,) (each document's lattice generator and shift, drawn
    once per query and read by every sample; used with lattice noise only); outputs
    ``grad, hess`` float64 (n,), the loss's (not yet finished) gradient and Hessian.
    """
    k_pr = k_max + 1  # the length of PR: array sizes must be compile-time constants

    @cuda.jit(**_ESTIMATE_OPTIONS)
    def kernel(
        scores,
        rho,
        group_ptr,
        keys,
        active,
        theta,
        n_samples,
        seed,
        round_,
        noise,
        hess_max,
        e,
        own,
        count,
        gen,
        shift,
        grad,
        hess,
    ):
        buf = cuda.shared.array(threads, dtype=np.float64)
        g = cuda.blockIdx.x
        t = cuda.threadIdx.x
        lo = group_ptr[g]
        hi = group_ptr[g + 1]
        if not active[g]:  # the whole block returns
            for d in range(lo + t, hi, threads):
                grad[d] = 0.0
                hess[d] = 0.0
            return
        D = hi - lo
        K = min(theta.shape[0], D)

        # PL weights e(d) = exp(m(d) - max m), as shifted_exp, or for a wide query (is_wide)
        # exp(min(m(d) - c, LOG_FLOOR)) with c the K-th largest margin, as wide_frame
        top = -math.inf
        low = math.inf
        for d in range(lo + t, hi, threads):
            top = max(top, scores[d])
            low = min(low, scores[d])
        top = _block_reduce(buf, top, True)
        low = -_block_reduce(buf, -low, True)
        wide = top - low > LOG_FLOOR
        rank = cuda.local.array(k_max, dtype=np.int64)
        key = cuda.local.array(k_max, dtype=np.float64)
        c = top
        if wide:
            if t == 0:
                buf[0] = _kth_largest(scores, lo, hi, K, key)
            cuda.syncthreads()
            c = buf[0]
            cuda.syncthreads()
        # the query's stream (typed: the simulator's stream_state returns a Python int)
        state0 = np.uint64(stream_state(seed, round_, keys[g]))
        lattice = noise == NOISE_LATTICE
        for d in range(lo + t, hi, threads):
            if lattice:  # number d - lo of the query's lattice, as noise_plan draws it
                gen[d] = lattice_generator(state0, d - lo, D, n_samples)
                shift[d] = lattice_shift(state0, d - lo)
            if wide:
                e[d] = math.exp(min(scores[d] - c, LOG_FLOOR))
            else:
                e[d] = math.exp(max(scores[d] - top, -LOG_FLOOR))
            grad[d] = 0.0
            hess[d] = 0.0
            count[d] = 0
            for j in range(4):
                own[d, j] = 0.0
        cuda.syncthreads()

        S = cuda.local.array(k_max, dtype=np.float64)
        PR = cuda.local.array(k_pr, dtype=np.float64)
        L = cuda.local.array(k_pr, dtype=np.float64)
        acc0 = acc1 = acc2 = acc3 = 0.0
        for s in range(t, n_samples, threads):
            # the race: the K smallest keys in order; ``rest`` sums e over the others (a wide
            # query: the log-space race of _draw_race_wide, the others' log-sum-exp about
            # their running maximum ``rest_top``)
            placed = 0
            rest = 0.0
            rest_top = -math.inf
            first = s * D + 1
            for d in range(D):
                ed = e[lo + d]
                if lattice:
                    u = lattice_point(s, gen[lo + d], shift[lo + d], n_samples)
                else:
                    u = uniform_at(state0, first + d)
                if wide:
                    x = math.log(max(-math.log(1.0 - u), _E_MIN)) - (scores[lo + d] - c)
                else:
                    x = -math.log(1.0 - u) / ed
                out = -1
                if placed < K:
                    i = placed
                    placed += 1
                elif x < key[K - 1]:
                    out = rank[K - 1]
                    i = K - 1
                else:
                    out = d
                if out >= 0:
                    if wide:
                        y = scores[lo + out] - c
                        if y > rest_top:
                            rest = rest * math.exp(rest_top - y) + 1.0
                            rest_top = y
                        else:
                            rest += math.exp(y - rest_top)
                    else:
                        rest += e[lo + out]
                    if out == d:
                        continue
                while i > 0 and key[i - 1] > x:
                    key[i] = key[i - 1]
                    rank[i] = rank[i - 1]
                    i -= 1
                key[i] = x
                rank[i] = d
            PR[K] = 0.0
            for i in range(K - 1, -1, -1):
                PR[i] = PR[i + 1] + theta[i] * rho[lo + rank[i]]
            RI = DR = DN = RS = DS = 0.0
            if wide:
                # log-normalisers (as _log_normalizers), then the terms of _add_sample_wide
                L[K] = rest_top + math.log(rest) if rest_top > -math.inf else -math.inf
                for k in range(K - 1, -1, -1):
                    L[k] = _log_add(L[k + 1], scores[lo + rank[k]] - c)
                for i in range(K):
                    if i > 0:
                        r = _sigmoid(L[i] - (scores[lo + rank[i - 1]] - c))
                        RI, DR, DN, RS, DS = _rescale(r, RI, DR, DN, RS, DS)
                    RI, DR, DN, RS, DS = _enter_rank(PR[i], theta[i], 1.0, RI, DR, DN, RS, DS)
                    row = lo + rank[i]
                    q = _sigmoid((scores[row] - c) - L[i + 1])
                    g_in, h_in = _placed_terms(q, rho[row], PR[i + 1], RI, DR, DN, RS, DS)
                    cuda.atomic.add(grad, row, g_in)
                    cuda.atomic.add(hess, row, h_in)
                RI, DR, DN, RS, DS = _rescale(math.exp(-L[K - 1]), RI, DR, DN, RS, DS)
            else:
                # normalisers S_k (as _normalizers_direct), then the terms of _add_sample
                for k in range(K - 1, -1, -1):
                    rest += e[lo + rank[k]]
                    S[k] = rest
                for i in range(K):
                    RI, DR, DN, RS, DS = _enter_rank(
                        PR[i], theta[i], 1.0 / S[i], RI, DR, DN, RS, DS
                    )
                    row = lo + rank[i]
                    g_in, h_in = _placed_terms(e[row], rho[row], PR[i + 1], RI, DR, DN, RS, DS)
                    cuda.atomic.add(grad, row, g_in)
                    cuda.atomic.add(hess, row, h_in)
            c_rs = RS + DN * RI
            c_ds = DS + DN * DR
            acc0 += DR
            acc1 += RI
            acc2 += c_rs
            acc3 += c_ds
            for i in range(K):
                row = lo + rank[i]
                cuda.atomic.add(own, (row, 0), DR)
                cuda.atomic.add(own, (row, 1), RI)
                cuda.atomic.add(own, (row, 2), c_rs)
                cuda.atomic.add(own, (row, 3), c_ds)
                cuda.atomic.add(count, row, 1)
        acc0 = _block_reduce(
            buf, acc0, False
        )  # also orders the atomics above before the reads below
        acc1 = _block_reduce(buf, acc1, False)
        acc2 = _block_reduce(buf, acc2, False)
        acc3 = _block_reduce(buf, acc3, False)

        # the unplaced terms with each document's own sums (0 when every sample placed it)
        scale = -1.0 / n_samples
        largest = 0.0
        for d in range(lo + t, hi, threads):
            if count[d] == n_samples:
                g_out = h_out = 0.0
            else:
                g_out, h_out = _unplaced_terms(
                    e[d],
                    rho[d],
                    acc0 - own[d, 0],
                    acc1 - own[d, 1],
                    acc2 - own[d, 2],
                    acc3 - own[d, 3],
                )
            grad[d] = (grad[d] + g_out) * scale
            h = (hess[d] + h_out) * scale
            hess[d] = h
            largest = max(largest, abs(h))
        largest = _block_reduce(buf, largest, True)
        if t == 0:
            cuda.atomic.max(hess_max, 0, largest)

    return kernel


@cuda.jit
def finish_rows(hess, mode, hess_max, floor):
    """:func:`gbdt_plrank._training.plrank_grad_hess.finish_hessian` per row: ``mode`` a code of
    :data:`HESSIAN_CODES`; ``"clip"`` raises a non-zero entry to ``floor * hess_max[0]``;
    ``"denoised"`` takes the absolute value of what :func:`pool_queries` divided."""
    d = cuda.grid(1)
    if d >= hess.shape[0]:
        return
    h = hess[d]
    if mode == HESSIAN_ABS or mode == HESSIAN_DENOISED:
        hess[d] = abs(h)
    elif mode == HESSIAN_CLIP:
        if h != 0.0:
            hess[d] = max(h, floor * hess_max[0])
    elif mode == HESSIAN_CONSTANT:
        hess[d] = 1.0


@cuda.jit
def floor_queries(grad, hess, group_ptr, curvature):
    """The curvature floor of :func:`gbdt_plrank._training.plrank_grad_hess.finish_hessian`, one
    thread per query: where ``sum |hess| < curvature * sum |grad|`` over the query's rows, each
    of its rows is raised to ``curvature * |grad|``; other queries are left as they are."""
    q = cuda.grid(1)
    if q >= group_ptr.shape[0] - 1:
        return
    lo = group_ptr[q]
    hi = group_ptr[q + 1]
    h_sum = 0.0
    g_sum = 0.0
    for d in range(lo, hi):
        h_sum += abs(hess[d])
        g_sum += abs(grad[d])
    if h_sum < curvature * g_sum:
        for d in range(lo, hi):
            hess[d] = max(hess[d], curvature * abs(grad[d]))


@cuda.jit
def pool_queries(grad_a, hess_a, grad_b, hess_b, group_ptr, n_a, n_b, grad, hess):
    """``gbdt_plrank._kernels.plrank.pool_groups`` on the device, one thread per query: the
    two halves' estimates (from ``n_a`` and ``n_b`` rankings) pooled, each query's Hessian
    divided by its noise factor (``gbdt_plrank._kernels.plrank.pool_query``)."""
    q = cuda.grid(1)
    if q >= group_ptr.shape[0] - 1:
        return
    _pool_query(
        grad_a, hess_a, grad_b, hess_b, group_ptr[q], group_ptr[q + 1], n_a, n_b, grad, hess
    )


@cuda.jit
def widen(src, dst, bad):
    """``dst[i] = src[i]``: float32 margins as float64 (exact), one thread per row; ``bad[0]``
    (int32, 0 before) becomes 1 where a margin is NaN or infinite."""
    i = cuda.grid(1)
    if i < dst.shape[0]:
        x = src[i]
        dst[i] = x
        if not math.isfinite(x):
            bad[0] = 1


@cuda.jit
def scale_queries(grad, hess, group_ptr, weight):
    """``grad[d] *= weight[q]`` and ``hess[d] *= weight[q]`` for every row ``d`` of query ``q``,
    one thread per query: each query's rows by its weight."""
    q = cuda.grid(1)
    if q >= group_ptr.shape[0] - 1:
        return
    w = weight[q]
    for d in range(group_ptr[q], group_ptr[q + 1]):
        grad[d] *= w
        hess[d] *= w


@cuda.jit
def weigh_deep_queries(margins, grad, group_ptr, K, cap, out):
    """``grad[d] *= w_d``, the weights of ``deep_weight`` = ``cap`` at the training cut-off
    ``K`` (``gbdt_plrank._kernels.deep_weights.query_weights``, scaled to keep each query's
    sum of ``|grad|``), one thread per query; ``out`` (float64, ``(n,)``) holds the weights."""
    q = cuda.grid(1)
    if q >= group_ptr.shape[0] - 1:
        return
    lo = group_ptr[q]
    hi = group_ptr[q + 1]
    _query_weights(margins, grad, lo, hi, K, cap, True, out)
    for d in range(lo, hi):
        grad[d] *= out[d]
