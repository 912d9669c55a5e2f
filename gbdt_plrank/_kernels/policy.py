"""Numba kernel of a policy's exposure: every document's expected rank weight over sampled rankings.

Two estimates from the same rankings: *counting* averages the weight of the rank each document
took; *placement* averages, over the ranks of each ranking, the weight of the rank times the
probability that the document took it given the documents placed above it (the Plackett-Luce
policy's own placement probability, :math:`e^{m(d)} / \\sum_{d' \\text{ unplaced}} e^{m(d')}`).
Both are unbiased for :math:`\\mathbb{E}[\\theta_{\\mathrm{rank}(d)}]`; placement is positive for
every document that can be placed while the rank weights are positive (a Rao-Blackwellisation of
counting, rank by rank).

LOW LEVEL, as :mod:`gbdt_plrank._kernels.plrank`, whose rankings it draws: nothing here
validates its input (:func:`gbdt_plrank._training.policy_sample.sampled_exposure` does).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from .plrank import narrow_query_rankings, query_rankings
from .streams import _stream
from .wide_margins import is_wide

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


@njit(cache=True, error_model="numpy")
def _add_placement(scores, rankings, theta, out):
    """``out[d]`` (one query's rows) = the mean over the rankings of
    ``sum_r theta[r] * P(d at rank r | the ranking's first r documents)``.

    Each probability is computed in the frame of the largest unplaced margin (a ratio of
    exponentials of margins minus that maximum, each in (0, 1]), so no margin spread overflows.
    """
    out[:] = 0.0
    D = scores.shape[0]
    n_samples = rankings.shape[0]
    placed = np.zeros(D, dtype=np.bool_)
    for s in range(n_samples):
        placed[:] = False
        for r in range(rankings.shape[1]):
            if theta[r] != 0.0:
                top = -np.inf
                for d in range(D):
                    if not placed[d] and scores[d] > top:
                        top = scores[d]
                total = 0.0
                for d in range(D):
                    if not placed[d]:
                        total += math.exp(scores[d] - top)
                w = theta[r] / total
                for d in range(D):
                    if not placed[d]:
                        out[d] += w * math.exp(scores[d] - top)
            placed[rankings[s, r]] = True
    for d in range(D):
        out[d] /= n_samples


@njit(parallel=True, cache=True, error_model="numpy")
def sampled_exposure_groups(scores, ptr, keys, theta, n_samples, seed, round_, placement, out):
    """``out[d]``: d's exposure over ``n_samples`` PL rankings, ``theta`` the rank weights (0
    beyond), counted or from the placement probabilities (``placement``).

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
        if placement:
            _add_placement(scores[lo:hi], rankings, theta, out[lo:hi])
        else:
            _add_exposure(rankings, theta, out[lo:hi])


@njit(parallel=True, cache=True, error_model="numpy")
def sampled_exposure_narrow_groups(
    scores, ptr, keys, theta, n_samples, seed, round_, placement, out, wide
):
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
        if placement:
            _add_placement(scores[lo:hi], rankings, theta, out[lo:hi])
        else:
            _add_exposure(rankings, theta, out[lo:hi])
