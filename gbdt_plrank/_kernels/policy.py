"""Numba kernel of a policy's exposure: every document's mean rank weight over sampled rankings.

LOW LEVEL, as :mod:`gbdt_plrank._kernels.plrank`, whose sampler it draws with: nothing here
validates its input (:func:`gbdt_plrank._training.policy.sampled_exposure` does).
"""

from __future__ import annotations

from numba import njit, prange

from .plrank import _stream, is_wide, narrow_query_rankings, query_rankings

__all__ = ["sampled_exposure_groups", "sampled_exposure_narrow_groups"]


@njit(cache=True, error_model="numpy")
def _add_exposure(rankings, theta, out):
    """``out[d]`` (one query's rows) = the mean of ``theta`` at d's rank (0 beyond)."""
    out[:] = 0.0
    n_samples = rankings.shape[0]
    for s in range(n_samples):
        for r in range(rankings.shape[1]):
            out[rankings[s, r]] += theta[r]
    for d in range(out.shape[0]):
        out[d] /= n_samples


@njit(parallel=True, cache=True, error_model="numpy")
def sampled_exposure_groups(scores, ptr, keys, theta, n_samples, seed, round_, out):
    """``out[d]``: mean over ``n_samples`` PL rankings of ``theta`` at d's rank (0 beyond).

    Query ``g`` draws from the stream ``(seed, round_, keys[g])`` with the tree sampler (the
    log-space race for a query whose margins span more than ``LOG_FLOOR``), the draws of
    :func:`~gbdt_plrank._kernels.plrank.sample_groups` with the same round where ``keys`` is
    ``arange(G)``.
    """
    for g in prange(ptr.shape[0] - 1):
        lo = ptr[g]
        hi = ptr[g + 1]
        if hi - lo == 0:
            continue
        rankings = query_rankings(
            scores[lo:hi], theta.shape[0], n_samples, _stream(seed, round_, keys[g])
        )
        _add_exposure(rankings, theta, out[lo:hi])


@njit(parallel=True, cache=True, error_model="numpy")
def sampled_exposure_narrow_groups(scores, ptr, keys, theta, n_samples, seed, round_, out, wide):
    """:func:`sampled_exposure_groups` of the narrow queries; ``wide[g]``: whether group g is
    wide (its rows left for :func:`sampled_exposure_groups`). Compiled without the wide path."""
    for g in prange(ptr.shape[0] - 1):
        lo = ptr[g]
        hi = ptr[g + 1]
        wide[g] = hi > lo and is_wide(scores[lo:hi])
        if wide[g] or hi - lo == 0:
            continue
        rankings = narrow_query_rankings(
            scores[lo:hi], theta.shape[0], n_samples, _stream(seed, round_, keys[g])
        )
        _add_exposure(rankings, theta, out[lo:hi])
