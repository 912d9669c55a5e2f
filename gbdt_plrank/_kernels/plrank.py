"""Numba kernels: the PL-Rank-3 gradient / Hessian estimate of every query group, and its rankings.

LOW LEVEL. Nothing here validates its input: every array is contiguous and of the dtype the
public functions in :mod:`gbdt_plrank._training.plrank_grad_hess` converted it to. Shapes are
written ``(D,)`` for one query of ``D`` documents, ``(n,)`` for all documents of a dataset.

The drivers of the estimator: each query group, in parallel, draws its rankings from its own
random stream (:mod:`gbdt_plrank._kernels.streams`) with a sampler
(:mod:`gbdt_plrank._kernels.samplers`) and adds their terms
(:mod:`gbdt_plrank._kernels.plrank_terms`); a query whose margins span more than
``LOG_FLOOR`` (a sharp policy) takes the wide path (:mod:`gbdt_plrank._kernels.wide_margins`).
Two independent halves of a query's rankings are pooled here too (the Hessian mode
"denoised").

Every kernel compiles with ``error_model="numpy"``: no divisor here can be 0 on valid input
(normalisers, sample counts and PL weights are positive), and without Numba's check for a zero
divisor before every division the estimator's loops run 6-9% faster.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from .plrank_terms import _add_sample, _finish_query, _workspace
from .samplers import (
    _LANES,
    SAMPLER_TREE,
    _draw,
    _normalizers_of,
    _query_tree,
    _sampler,
)
from .streams import NOISE_INDEPENDENT, _stream, fill_uniforms, noise_plan
from .wide_margins import (
    _add_sample_wide,
    _estimate_query_wide,
    _log_normalizers,
    is_wide,
    wide_candidates,
    wide_frame,
    wide_rankings,
)


@njit(cache=True, error_model="numpy")
def _estimate_query(scores, rho, theta, n_samples, state, sampler, noise, grad, hess):
    """Sample ``n_samples`` PL rankings of one query and write the loss gradient and Hessian."""
    if is_wide(scores):
        _estimate_query_wide(scores, rho, theta, n_samples, state, noise, grad, hess)
    else:
        _estimate_narrow_query(scores, rho, theta, n_samples, state, sampler, noise, grad, hess)


@njit(cache=True, error_model="numpy")
def _estimate_narrow_query(scores, rho, theta, n_samples, state, sampler, noise, grad, hess):
    """:func:`_estimate_query` of a narrow query (not :func:`is_wide`)."""
    K = min(theta.shape[0], scores.shape[0])
    drawer = _sampler(scores, K, n_samples, sampler)
    _sample_terms(drawer, rho, theta, K, n_samples, state, noise, grad, hess)


@njit(cache=True, error_model="numpy")
def _sample_terms(drawer, rho, theta, K, n_samples, state, noise, grad, hess):
    """Draw ``n_samples`` rankings of length ``K`` with the sampler ``drawer`` (what
    ``_sampler`` returned for the query) from the stream ``state``, and write the query's loss
    gradient and Hessian estimate.

    Rankings are drawn :data:`_LANES` at a time (:func:`_draw`) and added in the order drawn.
    """
    e, trees, base, P, use_tree, keys, placed = drawer
    D = e.shape[0]
    rankings = np.empty((_LANES, K), dtype=np.int64)
    S = np.empty((_LANES, K))
    dims = K if use_tree else D
    plan = noise_plan(noise, state, n_samples, False, dims)
    U = np.empty((_LANES, dims))
    _, PR, acc, own = _workspace(D, K)
    grad[:] = 0.0
    hess[:] = 0.0
    for first in range(0, n_samples, _LANES):
        block = min(_LANES, n_samples - first)
        fill_uniforms(plan, state, first, U[:block])
        _draw(use_tree, trees, base, P, e, U[:block], keys, placed, rankings[:block], S[:block])
        for b in range(block):
            _add_sample(rankings[b], S[b], e, rho, theta[:K], PR, acc, own, grad, hess)
    _finish_query(e, rho, acc, own, n_samples, grad, hess)


@njit(cache=True, error_model="numpy")
def estimate_from_rankings(scores, rho, theta, rankings, grad, hess):
    """The estimate of one query from explicit rankings ``(N, min(K, D))``; deterministic."""
    K = rankings.shape[1]
    if is_wide(scores):
        m_c, e = wide_frame(scores, K)
        L = np.empty(K + 1)
        placed = np.zeros(scores.shape[0], dtype=np.bool_)
        _, PR, acc, own = _workspace(scores.shape[0], K)
        grad[:] = 0.0
        hess[:] = 0.0
        every = np.arange(scores.shape[0])
        for s in range(rankings.shape[0]):
            _log_normalizers(rankings[s], m_c, every, -np.inf, placed, L)
            _add_sample_wide(rankings[s], L, m_c, rho, theta[:K], PR, acc, own, grad, hess)
        _finish_query(e, rho, acc, own, rankings.shape[0], grad, hess)
        return
    e, tree, base, P = _query_tree(scores)
    S, PR, acc, own = _workspace(scores.shape[0], K)
    grad[:] = 0.0
    hess[:] = 0.0
    for s in range(rankings.shape[0]):
        _normalizers_of(rankings[s], tree, base, P, S)
        _add_sample(rankings[s], S, e, rho, theta[:K], PR, acc, own, grad, hess)
    _finish_query(e, rho, acc, own, rankings.shape[0], grad, hess)


@njit(parallel=True, cache=True, error_model="numpy")
def estimate_groups(
    scores, rho, group_ptr, keys, theta, n_samples, seed, round_, sampler, noise, grad, hess
):
    """All query groups in parallel; group g's stream is keyed by (seed, round_, keys[g]).

    ``keys`` (int64, non-negative) is ``arange(G)`` unless the queries carry keys that do not
    depend on how the data is split (the global query index of :mod:`gbdt_plrank.dask`).

    Groups with fewer than two documents, or whose documents all have one reward (``rho`` all 0,
    or all one label), get exactly 0 (:func:`rewards_differ`); ``rho`` may be signed (fairness
    rewards): every formula is linear in ``rho``.
    """
    for g in prange(group_ptr.shape[0] - 1):
        lo = group_ptr[g]
        hi = group_ptr[g + 1]
        if not rewards_differ(rho[lo:hi]):
            grad[lo:hi] = 0.0
            hess[lo:hi] = 0.0
            continue
        _estimate_query(
            scores[lo:hi],
            rho[lo:hi],
            theta,
            n_samples,
            _stream(seed, round_, keys[g]),
            sampler,
            noise,
            grad[lo:hi],
            hess[lo:hi],
        )


@njit(parallel=True, cache=True, error_model="numpy")
def estimate_narrow_groups(
    scores, rho, group_ptr, keys, theta, n_samples, seed, round_, sampler, noise, grad, hess, wide
):
    """:func:`estimate_groups` of the narrow queries; ``wide[g]``: whether group g is wide.

    A wide group's rows (:func:`is_wide`, with rewards that differ) are left as they are, for
    :func:`estimate_groups` to estimate; every other group's are those of
    :func:`estimate_groups`, bit for bit. Compiled without the wide path, which a training whose
    queries all stay narrow never runs (benchmarks/results/compile_time.md).
    """
    for g in prange(group_ptr.shape[0] - 1):
        lo = group_ptr[g]
        hi = group_ptr[g + 1]
        wide[g] = False
        if not rewards_differ(rho[lo:hi]):
            grad[lo:hi] = 0.0
            hess[lo:hi] = 0.0
        elif is_wide(scores[lo:hi]):
            wide[g] = True
        else:
            _estimate_narrow_query(
                scores[lo:hi],
                rho[lo:hi],
                theta,
                n_samples,
                _stream(seed, round_, keys[g]),
                sampler,
                noise,
                grad[lo:hi],
                hess[lo:hi],
            )


@njit(parallel=True, cache=True, error_model="numpy")
def estimate_narrow_halves_groups(
    scores,
    rho,
    group_ptr,
    keys,
    theta,
    n_a,
    n_b,
    seed,
    round_a,
    round_b,
    sampler,
    noise,
    grad,
    hess,
    wide,
):
    """The pooled estimate of two independent halves (the Hessian mode "denoised") of every
    narrow query; ``wide[g]``: whether group g is wide (left as it is, as in
    :func:`estimate_narrow_groups`).

    Half A of group g draws ``n_a`` rankings from the stream ``(seed, round_a, keys[g])`` and
    half B ``n_b`` from ``(seed, round_b, keys[g])``, as two :func:`estimate_narrow_groups`
    calls would; the halves share the query's sampler (its PL weights and sum tree), which
    does not depend on the stream, and are pooled by :func:`pool_query`: bit for bit the result
    of the two calls and ``pool_groups``, at one sampler set-up per query instead of two.
    """
    grad_b = np.empty_like(grad)
    hess_b = np.empty_like(hess)
    for g in prange(group_ptr.shape[0] - 1):
        lo = group_ptr[g]
        hi = group_ptr[g + 1]
        wide[g] = False
        if not rewards_differ(rho[lo:hi]):
            grad[lo:hi] = 0.0
            hess[lo:hi] = 0.0
        elif is_wide(scores[lo:hi]):
            wide[g] = True
        else:
            K = min(theta.shape[0], hi - lo)
            drawer = _sampler(scores[lo:hi], K, min(n_a, n_b), sampler)
            _sample_terms(
                drawer,
                rho[lo:hi],
                theta,
                K,
                n_a,
                _stream(seed, round_a, keys[g]),
                noise,
                grad[lo:hi],
                hess[lo:hi],
            )
            _sample_terms(
                drawer,
                rho[lo:hi],
                theta,
                K,
                n_b,
                _stream(seed, round_b, keys[g]),
                noise,
                grad_b[lo:hi],
                hess_b[lo:hi],
            )
            pool_query(grad, hess, grad_b, hess_b, lo, hi, n_a, n_b, grad, hess)


@njit(cache=True, error_model="numpy", inline="always")
def rewards_differ(rho):
    r"""Whether two documents of a query have different rewards (never with fewer than two
    documents, whose only ranking has one value). Where all have one reward :math:`c` (all 0,
    or every document of one label) every ranking has the same value,
    :math:`\sum_d \rho_d\,\theta_{\mathrm{rank}(d)} = c \sum_{k \le \min(K, D)} \theta_k`, so the
    exact gradient and Hessian are 0, which the estimate then is (its samples would give
    zero-mean noise)."""
    for d in range(1, rho.shape[0]):
        if rho[d] != rho[0]:
            return True
    return False


@njit(parallel=True, cache=True, error_model="numpy")
def differing_groups(rho, group_ptr, out):
    """``out[g]``: whether group g has two or more documents whose rewards differ (the groups
    :func:`estimate_groups` estimates; the others get exactly 0)."""
    for g in prange(group_ptr.shape[0] - 1):
        lo = group_ptr[g]
        hi = group_ptr[g + 1]
        out[g] = rewards_differ(rho[lo:hi])


@njit(cache=True, error_model="numpy", inline="always")
def has_reward(rho):
    """Whether any document of a query has a non-zero reward (else its estimate is exactly 0)."""
    for d in range(rho.shape[0]):
        if rho[d] != 0.0:
            return True
    return False


@njit(cache=True, error_model="numpy")
def query_rankings(scores, K, n_samples, state):
    """``n_samples`` rankings ``(n_samples, min(K, D))`` of one query (D >= 1): the tree
    sampler's, or the log-space race's for a wide query (:func:`is_wide`); independent draws."""
    if is_wide(scores):
        D = scores.shape[0]
        k = min(K, D)
        m_c, _ = wide_frame(scores, k)
        cand, _ = wide_candidates(m_c)
        rankings = np.empty((n_samples, k), dtype=np.int64)
        plan = noise_plan(np.int64(NOISE_INDEPENDENT), state, n_samples, False, D)
        wide_rankings(m_c, cand, plan, state, rankings)
        return rankings
    return narrow_query_rankings(scores, K, n_samples, state)


@njit(cache=True, error_model="numpy")
def narrow_query_rankings(scores, K, n_samples, state):
    """:func:`query_rankings` of a narrow query (not :func:`is_wide`): the tree sampler's."""
    k = min(K, scores.shape[0])
    # The sampler code as a variable, not the constant: Numba would compile _sampler once more
    # for the literal value.
    tree = np.int64(SAMPLER_TREE)
    e, trees, base, P, _, keys, placed = _sampler(scores, k, n_samples, tree)
    rankings = np.empty((n_samples, k), dtype=np.int64)
    S = np.empty((n_samples, k))
    U = np.empty((n_samples, k))
    fill_uniforms(noise_plan(np.int64(NOISE_INDEPENDENT), state, n_samples, False, k), state, 0, U)
    _draw(True, trees, base, P, e, U, keys, placed, rankings, S)
    return rankings


@njit(parallel=True, cache=True, error_model="numpy")
def sample_groups(scores, group_ptr, K, n_samples, seed, round_, out):
    """``out[g * n_samples + s, :min(K, D_g)]``: sampled rankings (group-local indices), -1 padded.

    Group ``g`` draws from the stream ``(seed, round_, g)``. The rows of empty groups are left
    as they are.

    Used by the ranker to expose its stochastic policy; the tree sampler draws the same law.
    """
    for g in prange(group_ptr.shape[0] - 1):
        lo = group_ptr[g]
        hi = group_ptr[g + 1]
        if hi == lo:
            continue
        rankings = query_rankings(scores[lo:hi], K, n_samples, _stream(seed, round_, g))
        k = rankings.shape[1]
        for s in range(n_samples):
            out[g * n_samples + s, :k] = rankings[s]
            out[g * n_samples + s, k:] = -1


# --------------------------------------------------------------------------------------------
# Two independent halves of a query's rankings: their pooled estimate and its noise factor
# (the Hessian mode "denoised", gbdt_plrank._training.plrank_grad_hess.estimate). The CUDA
# kernels compile pool_query for the device.
# --------------------------------------------------------------------------------------------
#: The largest factor by which :func:`pool_query` divides a query's Hessian.
NOISE_FACTOR_MAX = 10.0


@njit(cache=True, error_model="numpy", inline="always")
def pool_query(grad_a, hess_a, grad_b, hess_b, lo, hi, n_a, n_b, grad, hess):
    r"""Pool rows ``lo:hi`` (one query) of two independent estimates from ``n_a`` and ``n_b``
    rankings into ``grad`` and ``hess``, the Hessian divided by the query's noise factor
    :math:`\kappa`.

    With :math:`N = n_a + n_b`, :math:`g = (n_a g_a + n_b g_b)/N` and
    :math:`h = (n_a h_a + n_b h_b)/N` are the means over all :math:`N` rankings. Each row's
    estimate is a mean of per-ranking terms of variance :math:`\sigma_d^2`, so
    :math:`\mathrm{Var}(h_d) = \sigma_d^2/N` and
    :math:`\mathbb{E}(h_{a,d} - h_{b,d})^2 = \sigma_d^2 (1/n_a + 1/n_b)
    = \sigma_d^2 N/(n_a n_b)`: :math:`V = \frac{n_a n_b}{N^2} \sum_d (h_{a,d} - h_{b,d})^2`
    estimates the noise :math:`\sum_d \mathrm{Var}(h_d)` in :math:`S = \sum_d h_d^2` without
    bias (1/4 of the sum for equal halves), and :math:`S - V` the energy of the exact Hessian.
    :math:`\kappa = \sqrt{S / \max(S - V, S/\kappa_{max}^2)}`, at most
    :math:`\kappa_{max}` = :data:`NOISE_FACTOR_MAX` (1 where :math:`S = 0`), is the factor by
    which the noise inflates the Hessian's root mean square; ``hess`` receives :math:`h/\kappa`.
    """
    n = n_a + n_b
    w_a = n_a / n
    w_b = n_b / n
    S = 0.0
    V = 0.0
    for d in range(lo, hi):
        h_a = hess_a[d]  # read before writing: half A may be held in grad and hess themselves
        h_b = hess_b[d]
        grad[d] = w_a * grad_a[d] + w_b * grad_b[d]
        h = w_a * h_a + w_b * h_b
        hess[d] = h
        S += h * h
        diff = h_a - h_b
        V += diff * diff
    V *= w_a * w_b
    if S > 0.0:
        kappa = math.sqrt(S / max(S - V, S / (NOISE_FACTOR_MAX * NOISE_FACTOR_MAX)))
        for d in range(lo, hi):
            hess[d] /= kappa


@njit(parallel=True, cache=True, error_model="numpy")
def pool_groups(grad_a, hess_a, grad_b, hess_b, group_ptr, n_a, n_b, grad, hess):
    """:func:`pool_query` of every query group in parallel (empty groups have no rows)."""
    for g in prange(group_ptr.shape[0] - 1):
        pool_query(
            grad_a, hess_a, grad_b, hess_b, group_ptr[g], group_ptr[g + 1], n_a, n_b, grad, hess
        )
