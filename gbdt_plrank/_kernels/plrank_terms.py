"""Numba kernels: the PL-Rank-3 estimator's terms, one sampled ranking at a time.

LOW LEVEL, as every module of :mod:`gbdt_plrank._kernels`: nothing here validates its input.
The estimator is PL-Rank-3's gradient (Oosterhuis 2022) and the Hessian estimate of Kang, de Rijke
and Oosterhuis (2024), in a collapsed form (the documentation's "The estimator" notes): the terms
of documents that a sampled ranking does not place depend on the ranking only through four sums,
which are accumulated over the samples and applied to every document once, so a sample costs
O(K) and not O(D). ``_add_sample`` adds a ranking's terms from its normalisers,
``_finish_query`` applies the unplaced terms; the wide path
(:mod:`gbdt_plrank._kernels.wide_margins`) and the CUDA kernels use the same scalar steps.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, error_model="numpy", inline="always")
def _add_sample(ranking, S, e, rho, theta, PR, acc, own, grad, hess):
    """Add one sampled ranking's placed terms to ``grad``/``hess``, and its sums to the totals.

    With PR_i = sum_{k>=i} theta_k rho_{y_k}, RI_i = sum_{k<=i} PR_k/S_k, DR_i = sum theta_k/S_k,
    DN_i = sum 1/S_k, RS_i = sum PR_k/S_k^2 and DS_i = sum theta_k/S_k^2 (Kang et al. 2024,
    eq. 7-10), a document d at rank r contributes, with a = rho_d DR_r - RI_r,

        gradient  PR_{r+1} + e(d) a
        Hessian   PR_{r+1} + e(d) [2a - DN_r PR_{r+1}] + e(d)^2 [RS_r - rho_d DS_r - DN_r a]

    and an unplaced document the same with r = K, PR = 0 and 2a replaced by a. The unplaced form
    is linear in the sums ``(DR_K, RI_K, RS_K + DN_K RI_K, DS_K + DN_K DR_K)``, which are added to
    ``acc`` (all samples) and to ``own[d]`` for each placed d; :func:`_finish_query` applies the
    unplaced form with ``acc - own[d]``, the sums over the samples that did not place d.

    Placed documents never receive an unplaced term that is then taken back: with a tiny
    remaining mass (margins far apart) those terms reach 1e18 and their rounding would swamp the
    estimate. A document placed in every sample gets ``acc - own[d] = 0`` exactly, since both
    sums add the same numbers in the same order. Document indices are unsigned, as the tree's
    node indices (:func:`_tree_set`).
    """
    K = ranking.shape[0]
    _rewards_below(ranking, rho, theta, PR)
    RI = DR = DN = RS = DS = 0.0
    for i in range(K):
        inv = 1.0 / S[i]
        RI, DR, DN, RS, DS = _enter_rank(PR[i], theta[i], inv, RI, DR, DN, RS, DS)
        d = np.uint64(ranking[i])
        g, h = _placed_terms(e[d], rho[d], PR[i + 1], RI, DR, DN, RS, DS)
        grad[d] += g
        hess[d] += h
    _add_unplaced_sums(ranking, RI, DR, DN, RS, DS, acc, own)


@njit(cache=True, error_model="numpy", inline="always")
def _rewards_below(ranking, rho, theta, PR):
    """``PR[i] = sum_{k>=i} theta_k rho_{y_k}`` over the ranking, and ``PR[K] = 0``."""
    K = ranking.shape[0]
    PR[K] = 0.0
    for i in range(K - 1, -1, -1):
        PR[i] = PR[i + 1] + theta[i] * rho[np.uint64(ranking[i])]


@njit(cache=True, error_model="numpy", inline="always")
def _enter_rank(pr, t, inv, RI, DR, DN, RS, DS):
    """The running sums after rank i: ``pr = PR_i``, ``t = theta_i`` and ``inv = 1/S_i``.

    The wide path keeps its sums in units of the normaliser (:func:`_add_sample_wide`), where
    ``inv`` is 1 (a product by 1 is exact, so its sums are those of adding ``pr`` and ``t``).
    Also compiled for the device (:mod:`gbdt_plrank._kernels.cuda`).
    """
    inv2 = inv * inv
    return RI + pr * inv, DR + t * inv, DN + inv, RS + pr * inv2, DS + t * inv2


@njit(cache=True, error_model="numpy", inline="always")
def _rescale(r, RI, DR, DN, RS, DS):
    """The running sums times ``r`` (``RS`` and ``DS`` times ``r^2``): a change of units."""
    r2 = r * r
    return RI * r, DR * r, DN * r, RS * r2, DS * r2


@njit(cache=True, error_model="numpy", inline="always")
def _placed_terms(w, rd, below, RI, DR, DN, RS, DS):
    """``(gradient, Hessian)`` terms of a placed document of weight ``w = e(d)/S`` and gain ``rd``.

    ``below = PR_{r+1}``; the formulas of :func:`_add_sample`. Also compiled for the device.
    """
    a = rd * DR - RI
    return below + w * a, below + w * (2.0 * a - DN * below) + w * w * ((RS - rd * DS) - DN * a)


@njit(cache=True, error_model="numpy", inline="always")
def _add_unplaced_sums(ranking, RI, DR, DN, RS, DS, acc, own):
    """Add a sample's unplaced sums to the totals ``acc`` and to ``own[d]`` of each placed d."""
    c_rs = RS + DN * RI
    c_ds = DS + DN * DR
    acc[0] += DR
    acc[1] += RI
    acc[2] += c_rs
    acc[3] += c_ds
    for i in range(ranking.shape[0]):
        d = np.uint64(ranking[i])
        own[d, 0] += DR
        own[d, 1] += RI
        own[d, 2] += c_rs
        own[d, 3] += c_ds


@njit(cache=True, error_model="numpy")
def _finish_query(e, rho, acc, own, n_samples, grad, hess):
    """Apply the unplaced terms with each document's own sums; negate and average (loss = -R)."""
    scale = -1.0 / n_samples
    for d in range(e.shape[0]):
        g_out, h_out = _unplaced_terms(
            e[d],
            rho[d],
            acc[0] - own[d, 0],
            acc[1] - own[d, 1],
            acc[2] - own[d, 2],
            acc[3] - own[d, 3],
        )
        grad[d] = (grad[d] + g_out) * scale
        hess[d] = (hess[d] + h_out) * scale


@njit(cache=True, error_model="numpy", inline="always")
def _unplaced_terms(ed, rd, dr, ri, rs, ds):
    """``(gradient, Hessian)`` terms of a document of weight ``ed`` and gain ``rd`` from the sums
    ``(DR, RI, RS + DN RI, DS + DN DR)`` over the samples that did not place it
    (:func:`_add_sample`). Also compiled for the device."""
    g = ed * (rd * dr - ri)
    return g, g + ed * ed * (rs - rd * ds)


@njit(cache=True, error_model="numpy")
def _workspace(D, K):
    """Per-query buffers: S (K,), PR (K+1,), the totals acc (4,) and the placed sums own (D, 4)."""
    return np.empty(K), np.empty(K + 1), np.zeros(4), np.zeros((D, 4))
