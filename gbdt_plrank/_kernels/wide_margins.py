"""Numba kernels: the wide path, for queries whose margins span more than ``LOG_FLOOR``.

LOW LEVEL, as every module of :mod:`gbdt_plrank._kernels`: nothing here validates its input. A query
whose margins span more than ``LOG_FLOOR`` (a sharp policy) has its rankings drawn by the
exponential race in log space and the estimator's terms (:mod:`gbdt_plrank._kernels.plrank_terms`)
computed from ratios of normalisers, exact at any spread.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .plrank_terms import (
    _add_unplaced_sums,
    _enter_rank,
    _finish_query,
    _placed_terms,
    _rescale,
    _rewards_below,
    _workspace,
)
from .samplers import LOG_FLOOR, _smallest_keys
from .streams import fill_uniforms, noise_plan

# The wide path's exponential variables E = -log(1 - u) are raised to at least _E_MIN (u = 0 only,
# probability 2^-53), so that log E lies in [log 2^-54, log(53 log 2)] = [-37.43, 3.61]: a race
# key log E - m(d) lies within WIDE_REACH of -m(d). A document more than WIDE_REACH above the
# K-th largest margin then beats all but fewer than K - 1 documents: every sample places it.
_E_MIN = 2.0**-54
WIDE_REACH = 42.0


# --------------------------------------------------------------------------------------------
# The wide path: queries whose margins span more than LOG_FLOOR
# --------------------------------------------------------------------------------------------
# Margins are taken relative to c, the K-th largest margin of the query (K = min(K, D)). Before
# every rank k <= K at least one of the K documents of largest margin is unplaced, so every
# normaliser S_k is >= 1 in that frame and the sums of 1/S_k and 1/S_k^2 cannot overflow; the
# ratios e(y_i)/S_i and S_i/S_{i-1} that the placed terms need are logistic functions of
# differences of log-normalisers, which cannot overflow either. Nothing is floored: a ranking is
# drawn from the policy of the margins as they are, at any spread.
@njit(cache=True, error_model="numpy")
def is_wide(scores):
    """Whether a query's margins span more than :data:`LOG_FLOOR` (then the wide path runs)."""
    top = scores[0]
    low = scores[0]
    for d in range(1, scores.shape[0]):
        top = max(top, scores[d])
        low = min(low, scores[d])
    return top - low > LOG_FLOOR


@njit(cache=True, error_model="numpy")
def wide_frame(scores, K):
    """``(m_c, e)`` of a wide query whose rankings place ``K <= D`` documents.

    ``m_c = m - c`` with c the K-th largest margin; ``e = exp(min(m_c, LOG_FLOOR))``, the PL
    weights in that frame, used for the terms of unplaced documents only. The cap changes none
    of them: a document more than :data:`WIDE_REACH` above c is placed by every sample of the
    race (so its unplaced terms are exactly 0 whatever its weight).
    """
    c = np.sort(scores)[scores.shape[0] - K]
    m_c = scores - c
    return m_c, np.exp(np.minimum(m_c, LOG_FLOOR))


@njit(cache=True, error_model="numpy")
def wide_candidates(m_c):
    """``(cand, log_out)``: the documents a wide query's race can place, and the others' log-mass.

    A race key log E - m_c(d) lies in [-37.43 - m_c(d), 3.61 - m_c(d)] (:data:`_E_MIN`), and
    the K documents with m_c >= 0 have keys <= 3.61; a document with m_c < -:data:`WIDE_REACH`
    has a key > 4.57, so it is never placed and its key need not be drawn. ``log_out`` is the
    log of those documents' summed weight (-inf if none), unplaced in every sample.
    """
    D = m_c.shape[0]
    n = 0
    top = -np.inf
    for d in range(D):
        if m_c[d] >= -WIDE_REACH:
            n += 1
        else:
            top = max(top, m_c[d])
    cand = np.empty(n, dtype=np.int64)
    rest = 0.0
    n = 0
    for d in range(D):
        if m_c[d] >= -WIDE_REACH:
            cand[n] = d
            n += 1
        else:
            rest += np.exp(m_c[d] - top)
    return cand, (top + np.log(rest) if n < D else -np.inf)


@njit(cache=True, error_model="numpy")
def _draw_race_wide(m_c, cand, u, keys, ranking):
    """:func:`_draw_race` in log space: key(d) = log max(Exp(1), 2^-54) - m_c(d).

    The same uniforms as the race (document d takes ``u[d]``); the logarithm is
    increasing, so these keys order the documents as Exp(1) / e(d) would in exact arithmetic,
    at any spread of the margins. Only the candidates ``cand`` (:func:`wide_candidates`) draw a
    key: the others cannot be placed.
    """
    n = cand.shape[0]
    for i in range(n):
        d = cand[i]
        keys[i] = np.log(max(-np.log(1.0 - u[d]), _E_MIN)) - m_c[d]
    _smallest_keys(keys[:n], ranking)
    for k in range(ranking.shape[0]):
        ranking[k] = cand[ranking[k]]


@njit(cache=True, error_model="numpy")
def wide_rankings(m_c, cand, plan, state, rankings):
    """Every row of ``rankings`` drawn by :func:`_draw_race_wide`, row s from the uniforms of
    sample s of ``plan`` (:func:`noise_plan` over the query's D documents)."""
    keys = np.empty(cand.shape[0])
    U = np.empty((1, m_c.shape[0]))
    for s in range(rankings.shape[0]):
        fill_uniforms(plan, state, s, U)
        _draw_race_wide(m_c, cand, U[0], keys, rankings[s])


@njit(cache=True, error_model="numpy", inline="always")
def _log_add(a, b):
    """``log(exp(a) + exp(b))``; either may be -inf. Also compiled for the device (hence
    ``math``, which numba-cuda compiles where it does not compile ``np.exp``)."""
    hi = max(a, b)
    lo = min(a, b)
    if lo == -math.inf:
        return hi
    return hi + math.log1p(math.exp(lo - hi))


@njit(cache=True, error_model="numpy", inline="always")
def _sigmoid(x):
    """``1 / (1 + exp(-x))``: 0 and 1 at the far ends, never NaN. Also compiled for the device."""
    return 1.0 / (1.0 + math.exp(-x))


@njit(cache=True, error_model="numpy")
def _log_normalizers(ranking, m_c, cand, log_out, placed, L):
    """``L[k] = log S_k`` for k < K and ``L[K]`` the log of the unplaced mass (-inf if none).

    The unplaced documents among ``cand`` (every document that the ranking may place) summed
    about their own maximum and added to ``log_out`` (the log-mass of the others), then
    log-additions up the ranking (positive terms only, as :func:`_normalizers_direct`); no term
    overflows or underflows whatever the spread. ``placed`` (D,) is False on entry and on
    return.
    """
    K = ranking.shape[0]
    for k in range(K):
        placed[ranking[k]] = True
    top = -np.inf
    for i in range(cand.shape[0]):
        if not placed[cand[i]]:
            top = max(top, m_c[cand[i]])
    L[K] = log_out
    if top > -np.inf:
        rest = 0.0
        for i in range(cand.shape[0]):
            if not placed[cand[i]]:
                rest += np.exp(m_c[cand[i]] - top)
        L[K] = _log_add(log_out, top + np.log(rest))
    for k in range(K - 1, -1, -1):
        L[k] = _log_add(L[k + 1], m_c[ranking[k]])
        placed[ranking[k]] = False


@njit(cache=True, error_model="numpy")
def _add_sample_wide(ranking, L, m_c, rho, theta, PR, acc, own, grad, hess):
    """:func:`_add_sample` of a wide query, from ``L``, its :func:`_log_normalizers`.

    The running sums are kept in units of the current normaliser, T_i = S_i DR_i and so on:
    T_i = T_{i-1} S_i/S_{i-1} + theta_i (squared ratios for RS and DS), with
    S_i/S_{i-1} = sigmoid(L_i - m(y_{i-1})), and a document placed at rank i enters with
    q = e(d)/S_i = sigmoid(m(d) - L_{i+1}) <= 1, so that e(d) DR_i = q T_i and
    e(d)^2 DS_i = q^2 T_i. The unplaced sums are those of :func:`_add_sample` in the frame of c,
    where S_K >= 1.
    """
    K = ranking.shape[0]
    _rewards_below(ranking, rho, theta, PR)
    RI = DR = DN = RS = DS = 0.0
    for i in range(K):
        if i > 0:
            r = _sigmoid(L[i] - m_c[ranking[i - 1]])
            RI, DR, DN, RS, DS = _rescale(r, RI, DR, DN, RS, DS)
        RI, DR, DN, RS, DS = _enter_rank(PR[i], theta[i], 1.0, RI, DR, DN, RS, DS)
        d = ranking[i]
        q = _sigmoid(m_c[d] - L[i + 1])
        g, h = _placed_terms(q, rho[d], PR[i + 1], RI, DR, DN, RS, DS)
        grad[d] += g
        hess[d] += h
    RI, DR, DN, RS, DS = _rescale(np.exp(-L[K - 1]), RI, DR, DN, RS, DS)
    _add_unplaced_sums(ranking, RI, DR, DN, RS, DS, acc, own)


@njit(cache=True, error_model="numpy")
def _estimate_query_wide(scores, rho, theta, n_samples, state, noise, grad, hess):
    """:func:`_estimate_query` of a wide query: the log-space race, then the wide terms."""
    D = scores.shape[0]
    K = min(theta.shape[0], D)
    m_c, e = wide_frame(scores, K)
    cand, log_out = wide_candidates(m_c)
    ranking = np.empty(K, dtype=np.int64)
    L = np.empty(K + 1)
    keys = np.empty(cand.shape[0])
    placed = np.zeros(D, dtype=np.bool_)
    _, PR, acc, own = _workspace(D, K)
    plan = noise_plan(noise, state, n_samples, False, D)
    U = np.empty((1, D))
    grad[:] = 0.0
    hess[:] = 0.0
    for s in range(n_samples):
        fill_uniforms(plan, state, s, U)
        _draw_race_wide(m_c, cand, U[0], keys, ranking)
        _log_normalizers(ranking, m_c, cand, log_out, placed, L)
        _add_sample_wide(ranking, L, m_c, rho, theta[:K], PR, acc, own, grad, hess)
    _finish_query(e, rho, acc, own, n_samples, grad, hess)
