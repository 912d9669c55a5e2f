"""Numba kernels of the fairness-of-exposure objective: cross-fitted PL-Rank with signed rewards.

LOW LEVEL, as :mod:`gbdt_plrank._kernels`, whose sampling and estimator primitives these kernels
reuse: nothing here validates its input.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .plrank import has_reward
from .plrank_terms import _add_sample, _finish_query, _workspace
from .samplers import _draw, _normalizers_of, _query_tree, _sampler
from .streams import _stream, fill_uniforms, noise_plan
from .wide_margins import (
    _add_sample_wide,
    _log_normalizers,
    _sigmoid,
    is_wide,
    wide_candidates,
    wide_frame,
    wide_rankings,
)

#: The slopes :func:`loss_slope` computes (its ``kind``); each registered fairness term names
#: its own (``FairnessTerm.kernel`` in ``gbdt_plrank._fairness_terms``).
EXPECTED_EXPOSURE = 0
DISPARITY = 1
GROUP_DISPARITY = 2


@njit(cache=True, error_model="numpy")
def loss_slope(kind, E, aux, member, out):
    """``out[d] = dF/dE(d)`` of one query's fairness loss F at the exposures ``E`` (D,).

    Every F is quadratic in E, so this is linear in E. ``aux`` (D,) is the equal-exposure target
    eps for the expected exposure loss and the gain rho (not normalised) for the disparities;
    ``member`` (D,) numbers the query's item groups 0.. (used by the group disparity only).

    - expected exposure loss, F = sum_d (E_d - eps_d)^2: 2 (E_d - eps_d);
    - disparity, F = 1/(n(n-1)) sum_{i != j} (E_i rho_j - E_j rho_i)^2:
      4/(n(n-1)) (E_d sum_j rho_j^2 - rho_d sum_j rho_j E_j);
    - group disparity, F = sum_{g<h, M_g, M_h > 0} (a_g - a_h)^2 with a_g = X_g / M_g, X_g and
      M_g the sums of E and rho over group g: (2 / M_g) (G a_g - sum_h a_h) over the G groups
      with merit, for d in a group with merit; 0 in a group without (F does not depend on it).
      With G = 1 this is 0.
    """
    D = E.shape[0]
    if kind == EXPECTED_EXPOSURE:
        for d in range(D):
            out[d] = 2.0 * (E[d] - aux[d])
    elif kind == DISPARITY:
        s2 = 0.0
        s_re = 0.0
        for d in range(D):
            s2 += aux[d] * aux[d]
            s_re += aux[d] * E[d]
        c = 4.0 / (D * (D - 1.0))
        for d in range(D):
            out[d] = c * (E[d] * s2 - aux[d] * s_re)
    elif kind == GROUP_DISPARITY:
        X = np.zeros(D)
        M = np.zeros(D)
        for d in range(D):
            X[member[d]] += E[d]
            M[member[d]] += aux[d]
        G = 0
        total = 0.0
        for g in range(D):
            if M[g] > 0.0:
                G += 1
                total += X[g] / M[g]
        for d in range(D):
            g = member[d]
            out[d] = 2.0 / M[g] * (G * X[g] / M[g] - total) if M[g] > 0.0 else 0.0


@njit(cache=True, error_model="numpy")
def _placed_slopes(ranking, norm, m_c, e, theta, wide, slope):
    """Add one ranking's placed terms of dE(d)/dm(d) to ``slope``: e(d) sum_{k<=r} (theta_k -
    theta_r)/S_k for d at rank r, from the normalisers ``norm`` (S, or for a wide query the
    log-normalisers of :func:`~gbdt_plrank._kernels.wide_margins._log_normalizers`, as ratios in
    the units of S_r as :func:`~gbdt_plrank._kernels.wide_margins._add_sample_wide` keeps them)."""
    DR = DN = 0.0
    for i in range(ranking.shape[0]):
        d = ranking[i]
        if wide:
            if i > 0:
                r = _sigmoid(norm[i] - m_c[ranking[i - 1]])
                DR *= r
                DN *= r
            DR += theta[i]
            DN += 1.0
            slope[d] += _sigmoid(m_c[d] - norm[i + 1]) * (DR - theta[i] * DN)
        else:
            inv = 1.0 / norm[i]
            DR += theta[i] * inv
            DN += inv
            slope[d] += e[d] * (DR - theta[i] * DN)


@njit(cache=True, error_model="numpy")
def _fair_terms(
    rankings, norms, e, m_c, wide, rho, kind, aux, member, weight, theta, grad, hess, slope
):
    """The cross-fitted estimate of one query from stored rankings and their normalisers.

    ``norms`` (N, K) holds each ranking's normalisers S, or for a wide query (``wide``, margins
    ``m_c`` in the frame of :func:`~gbdt_plrank._kernels.wide_margins.wide_frame`) its
    log-normalisers (N, K + 1). Rows ``[0, N // 2)`` of ``rankings`` (N, K) form the first
    half, the rest the second. Each half's Monte-Carlo exposure hat E_h(d) (mean of ``theta``
    at d's rank) sets the signed rewards used with the *other* half's terms,

        reward_h(d) = rho(d) - weight dF/dE(d) at hat E_{other}   (:func:`loss_slope`),

    so that reward and terms are independent and, the estimator being linear in the reward and
    dF/dE linear in E, its expectation is the exact gradient (and Hessian part) of
    E[metric] - weight * F. Each half runs :func:`_add_sample` / :func:`_finish_query` with its
    own sums and both are averaged over all N samples (the halves may differ in size by one).

    ``slope[d]`` receives the PL-Rank estimate of dE(d)/dm(d) (the
    gradient with the reward 1 at d), from all N samples: e(d) sum_{k<=r} (theta_k - theta_r)/S_k
    for d at rank r, e(d) sum_{k<=K} theta_k / S_k for d unplaced.
    """
    N, K = rankings.shape
    D = e.shape[0]
    first = N // 2
    exposure = np.zeros((2, D))
    slope[:] = 0.0
    for s in range(N):
        half = 0 if s < first else 1
        for i in range(K):
            exposure[half, rankings[s, i]] += theta[i]
        _placed_slopes(rankings[s], norms[s], m_c, e, theta, wide, slope)
    exposure[0] /= first
    exposure[1] /= N - first
    reward = np.empty((2, D))
    for half in range(2):
        loss_slope(kind, exposure[1 - half], aux, member, reward[half])
        for d in range(D):
            reward[half, d] = rho[d] - weight * reward[half, d]
    _, PR, acc, own = _workspace(D, K)
    _, _, acc2, own2 = _workspace(D, K)
    grad2 = np.zeros(D)
    hess2 = np.zeros(D)
    grad[:] = 0.0
    hess[:] = 0.0
    for s in range(N):
        h = 0 if s < first else 1
        a, o, g, hs = (acc, own, grad, hess) if h == 0 else (acc2, own2, grad2, hess2)
        if wide:
            _add_sample_wide(rankings[s], norms[s], m_c, reward[h], theta, PR, a, o, g, hs)
        else:
            _add_sample(rankings[s], norms[s], e, reward[h], theta, PR, a, o, g, hs)
    for d in range(D):
        slope[d] = (slope[d] + e[d] * ((acc[0] - own[d, 0]) + (acc2[0] - own2[d, 0]))) / N
    _finish_query(e, reward[0], acc, own, N, grad, hess)
    _finish_query(e, reward[1], acc2, own2, N, grad2, hess2)
    for d in range(D):
        grad[d] += grad2[d]
        hess[d] += hess2[d]


@njit(cache=True, error_model="numpy")
def _wide_norms(scores, rankings):
    """``(m_c, e, L)`` of a wide query: its frame and every ranking's log-normalisers."""
    N, K = rankings.shape
    m_c, e = wide_frame(scores, K)
    L = np.empty((N, K + 1))
    placed = np.zeros(scores.shape[0], dtype=np.bool_)
    every = np.arange(scores.shape[0])
    for s in range(N):
        _log_normalizers(rankings[s], m_c, every, -np.inf, placed, L[s])
    return m_c, e, L


@njit(cache=True, error_model="numpy")
def _fair_query(
    scores,
    rho,
    kind,
    aux,
    member,
    weight,
    theta,
    n_samples,
    state,
    sampler,
    noise,
    grad,
    hess,
    slope,
):
    """Sample ``n_samples`` (>= 2) rankings of one query, then :func:`_fair_terms`.

    With lattice noise each half of the samples is a lattice of its own, so that the halves
    stay independent.
    """
    D = scores.shape[0]
    K = min(theta.shape[0], D)
    rankings = np.empty((n_samples, K), dtype=np.int64)
    if is_wide(scores):
        m_c, _ = wide_frame(scores, K)
        cand, _ = wide_candidates(m_c)
        wide_rankings(m_c, cand, noise_plan(noise, state, n_samples, True, D), state, rankings)
        m_c, e, L = _wide_norms(scores, rankings)
        _fair_terms(
            rankings,
            L,
            e,
            m_c,
            True,
            rho,
            kind,
            aux,
            member,
            weight,
            theta[:K],
            grad,
            hess,
            slope,
        )
        return
    e, trees, base, P, use_tree, keys, placed = _sampler(scores, K, n_samples, sampler)
    S_all = np.empty((n_samples, K))
    U = np.empty((n_samples, K if use_tree else D))
    fill_uniforms(noise_plan(noise, state, n_samples, True, U.shape[1]), state, 0, U)
    _draw(use_tree, trees, base, P, e, U, keys, placed, rankings, S_all)
    _fair_terms(
        rankings,
        S_all,
        e,
        e,
        False,
        rho,
        kind,
        aux,
        member,
        weight,
        theta[:K],
        grad,
        hess,
        slope,
    )


@njit(cache=True, error_model="numpy")
def fair_estimate_from_rankings(
    scores, rho, kind, aux, member, weight, theta, rankings, grad, hess, slope
):
    """:func:`_fair_terms` of one query from explicit rankings ``(N >= 2, min(K, D))``."""
    N, K = rankings.shape
    if is_wide(scores):
        m_c, e, L = _wide_norms(scores, rankings)
        _fair_terms(
            rankings,
            L,
            e,
            m_c,
            True,
            rho,
            kind,
            aux,
            member,
            weight,
            theta[:K],
            grad,
            hess,
            slope,
        )
        return
    e, tree, base, P = _query_tree(scores)
    S_all = np.empty((N, K))
    for s in range(N):
        _normalizers_of(rankings[s], tree, base, P, S_all[s])
    _fair_terms(
        rankings,
        S_all,
        e,
        e,
        False,
        rho,
        kind,
        aux,
        member,
        weight,
        theta[:K],
        grad,
        hess,
        slope,
    )


@njit(parallel=True, cache=True, error_model="numpy")
def fair_estimate_groups(
    scores,
    rho,
    kind,
    aux,
    member,
    weight,
    uniform_empty,
    group_ptr,
    keys,
    theta,
    n_samples,
    seed,
    round_,
    sampler,
    noise,
    grad,
    hess,
    slope,
):
    """:func:`estimate_groups` for the fairness objective (``n_samples >= 2``).

    ``kind``, ``aux`` and ``member`` (n,) describe the loss (:func:`loss_slope`). Groups with
    fewer than two documents get exactly 0, and so do groups without relevant documents (under
    the disparities their dF/dE is 0 at every E), unless ``uniform_empty`` (EE-L only): then
    such a group keeps its fairness reward toward its equal-exposure target. Streams are keyed
    as in :func:`estimate_groups`.
    """
    for g in prange(group_ptr.shape[0] - 1):
        lo = group_ptr[g]
        hi = group_ptr[g + 1]
        relevant = uniform_empty or has_reward(rho[lo:hi])
        if hi - lo < 2 or not relevant:
            grad[lo:hi] = 0.0
            hess[lo:hi] = 0.0
            slope[lo:hi] = 0.0
            continue
        _fair_query(
            scores[lo:hi],
            rho[lo:hi],
            kind,
            aux[lo:hi],
            member[lo:hi],
            weight,
            theta,
            n_samples,
            _stream(seed, round_, keys[g]),
            sampler,
            noise,
            grad[lo:hi],
            hess[lo:hi],
            slope[lo:hi],
        )


@njit(parallel=True, cache=True, error_model="numpy")
def equal_exposure_target(labels, group_ptr, theta, out):
    """Per row: the mean of ``theta`` over the ranks its grade occupies in the ideal ranking.

    Ranks beyond ``theta`` weigh 0. This is the equal-expected-exposure target of Diaz et al.
    (2020): documents of one grade share its ranks' exposure equally.
    """
    for g in prange(group_ptr.shape[0] - 1):
        lo = group_ptr[g]
        hi = group_ptr[g + 1]
        D = hi - lo
        ascending = np.sort(labels[lo:hi])
        cum = np.zeros(D + 1)  # cum[r]: sum of theta over the ideal ranks 0..r-1
        for r in range(D):
            cum[r + 1] = cum[r] + (theta[r] if r < theta.shape[0] else 0.0)
        for d in range(lo, hi):
            a = np.searchsorted(ascending, labels[d], side="left")
            b = np.searchsorted(ascending, labels[d], side="right")
            # ascending positions [a, b) are the ideal (descending) ranks D-b .. D-a-1
            out[d] = (cum[D - a] - cum[D - b]) / (b - a)
