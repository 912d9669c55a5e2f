"""Reference estimators, written only to be timed against (and checked against) the library.

Two faithful Numba implementations of the published algorithms, parallel over queries with
``prange`` like :mod:`gbdt_plrank._kernels`, allocating per query and never per sample:

* :func:`plrank3_grad_hess`: PL-Rank-3 as Algorithm 1 of Oosterhuis (SIGIR 2022). Each sample is
  a Gumbel top-K over all D documents (Gumbel noise, quickselect, then a heap sort of the K
  winners), then the O(D) loop over every document computes its gradient term and, as in Kang,
  de Rijke and Oosterhuis (SIGIR 2024), its Hessian term directly (the formulas of
  :func:`gbdt_plrank.plrank_grad_hess`): nothing is collapsed. O(N (D + K log K)) per query
  (expected), which is the paper's O(N (D + K log D)).
* :func:`plrank2_grad`: PL-Rank-2 of Oosterhuis (SIGIR 2021): for each sample and each rank k,
  every document not placed before k receives its placement-probability term
  pi(d | y_{1:k-1}) (theta_k rho_d - PR_k). O(N K D) per query; gradient only, as in the paper.

Both return the derivatives of the loss ``-R`` averaged over the samples, with the library's
conventions (``e = exp(m - max m)``, without the library's floor at ``exp(-300)``; NDCG gains
divided by the ideal DCG@K; queries with fewer than two documents or no positive gain get 0), so
that, given the same rankings, they agree with
:func:`gbdt_plrank.plrank_grad_hess_from_rankings` to rounding. Normalisers follow Algorithm 1:
``S_1 = sum_d e(d)`` and ``S_{k+1} = S_k - e(y_k)``.

Random numbers: xorshift64* (Vigna 2016), a cheap generator so that the baselines' cost is the
algorithm's and not the generator's, with one stream per query keyed by ``(seed, query)``: the
output does not depend on the number of threads.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from gbdt_plrank._util.threads import numba_threads

__all__ = [
    "gumbel_rankings",
    "plrank2_from_rankings",
    "plrank2_grad",
    "plrank3_from_rankings",
    "plrank3_grad_hess",
    "rewards",
    "theta_dcg",
]

# xorshift64* multiplier, MurmurHash3 finaliser constants, and the scaling to doubles.
_XORSHIFT_MULT = np.uint64(0x2545F4914F6CDD1D)
_FMIX1 = np.uint64(0xFF51AFD7ED558CCD)
_FMIX2 = np.uint64(0xC4CEB9FE1A85EC53)
_ODD = np.uint64(0x9E3779B97F4A7C15)
_HALF_ULP = 0.5 / 9007199254740992.0  # 2^-54
_TO_UNIT = 1.0 / 9007199254740992.0  # 2^-53


# --------------------------------------------------------------------------------------------
# Gains and rank weights
# --------------------------------------------------------------------------------------------
def theta_dcg(K: int) -> np.ndarray:
    """DCG@K rank weights ``1 / log2(k + 1)``, k = 1..K."""
    return 1.0 / np.log2(np.arange(2, K + 2, dtype=np.float64))


@njit(parallel=True, cache=True)
def _normalise_by_ideal(gains, group_ptr, theta, out):
    """``out = gains / IDCG@K`` per query (0 where the ideal DCG is 0)."""
    for g in prange(group_ptr.shape[0] - 1):
        lo = group_ptr[g]
        hi = group_ptr[g + 1]
        ordered = np.sort(gains[lo:hi])
        ideal = 0.0
        for k in range(min(theta.shape[0], hi - lo)):
            ideal += theta[k] * ordered[hi - lo - 1 - k]
        for d in range(lo, hi):
            out[d] = gains[d] / ideal if ideal > 0.0 else 0.0


def rewards(
    labels: np.ndarray, group_ptr: np.ndarray, K: int, *, metric: str = "ndcg", gain: str = "exp"
) -> np.ndarray:
    """Per-document rewards rho: ``2^label - 1`` or ``label``, divided by IDCG@K for NDCG.

    Parameters
    ----------
    labels : array of shape (n,)
    group_ptr : int array of shape (n_queries + 1,)
    K : int
        Cutoff of the ideal DCG.
    metric : {"ndcg", "dcg"}
    gain : {"exp", "linear"}

    Returns
    -------
    float64 array of shape (n,)
    """
    y = np.ascontiguousarray(labels, dtype=np.float64)
    gains = np.exp2(y) - 1.0 if gain == "exp" else y.copy()
    if metric == "dcg":
        return gains
    if metric != "ndcg":
        raise ValueError(f"metric must be 'ndcg' or 'dcg', but {metric!r} is given.")
    out = np.empty_like(gains)
    _normalise_by_ideal(gains, np.ascontiguousarray(group_ptr, dtype=np.int64), theta_dcg(K), out)
    return out


# --------------------------------------------------------------------------------------------
# Gumbel top-K sampling (PL-Rank-3's Gumbel_Sample)
# --------------------------------------------------------------------------------------------
@njit(cache=True)
def _select_largest(keys, idx, K):
    """Permute ``idx`` so that ``idx[:K]`` index the K largest ``keys`` (any order).

    Quickselect with the middle element as pivot: O(D) expected for continuous random keys.
    """
    lo = 0
    hi = idx.shape[0] - 1
    target = K - 1
    while lo < hi:
        pivot = keys[idx[(lo + hi) // 2]]
        i = lo
        j = hi
        while i <= j:
            while keys[idx[i]] > pivot:
                i += 1
            while keys[idx[j]] < pivot:
                j -= 1
            if i <= j:
                idx[i], idx[j] = idx[j], idx[i]
                i += 1
                j -= 1
        if target <= j:
            hi = j
        elif target >= i:
            lo = i
        else:
            return


@njit(cache=True)
def _sift_min(keys, idx, size, i):
    """Restore the min-heap order of ``keys[idx[:size]]`` below position ``i``."""
    while True:
        c = 2 * i + 1
        if c >= size:
            return
        if c + 1 < size and keys[idx[c + 1]] < keys[idx[c]]:
            c += 1
        if keys[idx[c]] >= keys[idx[i]]:
            return
        idx[i], idx[c] = idx[c], idx[i]
        i = c


@njit(cache=True)
def _sort_descending(keys, idx, K):
    """Heap sort of ``idx[:K]`` by descending key, in place: O(K log K)."""
    for i in range(K // 2 - 1, -1, -1):
        _sift_min(keys, idx, K, i)
    for size in range(K - 1, 0, -1):
        idx[0], idx[size] = idx[size], idx[0]
        _sift_min(keys, idx, size, 0)


@njit(cache=True, inline="always")
def _open_unit(state):
    """xorshift64* (Vigna 2016): advance ``state`` and return a double in the open (0, 1)."""
    x = state[0]
    x ^= x >> np.uint64(12)
    x ^= x << np.uint64(25)
    x ^= x >> np.uint64(27)
    state[0] = x
    return ((x * _XORSHIFT_MULT) >> np.uint64(11)) * _TO_UNIT + _HALF_ULP


@njit(cache=True)
def _gumbel_top_k(scores, state, keys, idx, ranking):
    """One PL ranking: the K' largest ``m(d) + Gumbel`` keys in descending order.

    Gumbel noise is ``-log(-log(U))`` with U uniform on (0, 1) from ``state``.

    ``idx`` is any permutation of ``range(D)`` (it stays one); ``ranking`` has length K'.
    O(D + K log K) expected.
    """
    for d in range(scores.shape[0]):
        keys[d] = scores[d] - np.log(-np.log(_open_unit(state)))
    K = ranking.shape[0]
    _select_largest(keys, idx, K)
    _sort_descending(keys, idx, K)
    ranking[:] = idx[:K]


@njit(cache=True)
def _fmix64(z):
    """MurmurHash3's 64-bit finaliser: a bijective scrambling of ``z``."""
    z = (z ^ (z >> np.uint64(33))) * _FMIX1
    z = (z ^ (z >> np.uint64(33))) * _FMIX2
    return z ^ (z >> np.uint64(33))


@njit(cache=True)
def _query_state(seed, g):
    """A one-element xorshift state for query ``g`` of a run seeded with ``seed`` (never 0)."""
    state = np.empty(1, dtype=np.uint64)
    state[0] = _fmix64(_fmix64(np.uint64(seed) + _ODD) ^ (np.uint64(g) + _ODD)) | np.uint64(1)
    return state


# --------------------------------------------------------------------------------------------
# Per-sample estimators
# --------------------------------------------------------------------------------------------
@njit(cache=True)
def _placement_rewards(ranking, rho, theta, PR):
    """``PR[i] = sum_{k >= i} theta_k rho_{y_k}`` (0-based ranks), ``PR[K'] = 0``."""
    K = ranking.shape[0]
    PR[K] = 0.0
    for i in range(K - 1, -1, -1):
        PR[i] = PR[i + 1] + theta[i] * rho[ranking[i]]


@njit(cache=True)
def _plrank3_sample(ranking, e, S_total, rho, theta, rank_of, PR, prefix, grad, hess):
    """Add one ranking's gradient and Hessian terms to every document directly: O(D + K).

    ``prefix`` is a (5, K') work array holding RI, DR, DN, RS and DS per rank; ``rank_of`` is -1
    for every document on entry and on exit.
    """
    K = ranking.shape[0]
    _placement_rewards(ranking, rho, theta, PR)
    S = S_total
    RI = DR = DN = RS = DS = 0.0
    for i in range(K):
        inv = 1.0 / S
        RI += PR[i] * inv
        DR += theta[i] * inv
        DN += inv
        RS += PR[i] * inv * inv
        DS += theta[i] * inv * inv
        prefix[0, i] = RI
        prefix[1, i] = DR
        prefix[2, i] = DN
        prefix[3, i] = RS
        prefix[4, i] = DS
        d = ranking[i]
        rank_of[d] = i
        S -= e[d]
    for d in range(e.shape[0]):
        r = rank_of[d]
        if r >= 0:
            below = PR[r + 1]
            twice = 2.0
        else:
            r = K - 1
            below = 0.0
            twice = 1.0
        ed = e[d]
        rd = rho[d]
        dn = prefix[2, r]
        a = rd * prefix[1, r] - prefix[0, r]
        grad[d] += below + ed * a
        hess[d] += (
            below
            + ed * (twice * a - dn * below)
            + ed * ed * ((prefix[3, r] - rd * prefix[4, r]) - dn * a)
        )
    for i in range(K):
        rank_of[ranking[i]] = -1


@njit(cache=True)
def _plrank2_sample(ranking, e, S_total, rho, theta, alive, PR, grad):
    """Add one ranking's PL-Rank-2 gradient terms: O(K D).

    At rank k every document still unplaced before k (``alive[d] = 1``) receives
    ``e(d) / S_k (theta_k rho_d - PR_k)``, and the document placed at k receives ``PR_{k+1}``.
    ``alive`` is all ones on entry and on exit.
    """
    K = ranking.shape[0]
    D = e.shape[0]
    _placement_rewards(ranking, rho, theta, PR)
    S = S_total
    for k in range(K):
        inv = 1.0 / S
        tk = theta[k]
        pk = PR[k]
        for d in range(D):
            grad[d] += alive[d] * (e[d] * inv) * (tk * rho[d] - pk)
        placed = ranking[k]
        grad[placed] += PR[k + 1]
        alive[placed] = 0.0
        S -= e[placed]
    for k in range(K):
        alive[ranking[k]] = 1.0


@njit(cache=True)
def _weights(scores, e):
    """``e = exp(m - max m)`` and its sum S_1."""
    top = scores.max()
    total = 0.0
    for d in range(scores.shape[0]):
        e[d] = np.exp(scores[d] - top)
        total += e[d]
    return total


@njit(cache=True)
def _worth_estimating(rho):
    if rho.shape[0] < 2:
        return False
    for d in range(rho.shape[0]):
        if rho[d] > 0.0:
            return True
    return False


# --------------------------------------------------------------------------------------------
# Whole queries
# --------------------------------------------------------------------------------------------
@njit(cache=True)
def _plrank3_query(scores, rho, theta, n_samples, state, grad, hess):
    D = scores.shape[0]
    K = min(theta.shape[0], D)
    e = np.empty(D)
    S_total = _weights(scores, e)
    keys = np.empty(D)
    idx = np.arange(D)
    rank_of = np.full(D, -1, dtype=np.int64)
    ranking = np.empty(K, dtype=np.int64)
    PR = np.empty(K + 1)
    prefix = np.empty((5, K))
    grad[:] = 0.0
    hess[:] = 0.0
    for _ in range(n_samples):
        _gumbel_top_k(scores, state, keys, idx, ranking)
        _plrank3_sample(ranking, e, S_total, rho, theta, rank_of, PR, prefix, grad, hess)
    scale = -1.0 / n_samples
    for d in range(D):
        grad[d] *= scale
        hess[d] *= scale


@njit(cache=True)
def _plrank2_query(scores, rho, theta, n_samples, state, grad):
    D = scores.shape[0]
    K = min(theta.shape[0], D)
    e = np.empty(D)
    S_total = _weights(scores, e)
    keys = np.empty(D)
    idx = np.arange(D)
    alive = np.ones(D)
    ranking = np.empty(K, dtype=np.int64)
    PR = np.empty(K + 1)
    grad[:] = 0.0
    for _ in range(n_samples):
        _gumbel_top_k(scores, state, keys, idx, ranking)
        _plrank2_sample(ranking, e, S_total, rho, theta, alive, PR, grad)
    scale = -1.0 / n_samples
    for d in range(D):
        grad[d] *= scale


@njit(parallel=True, cache=True)
def _plrank3_groups(scores, rho, group_ptr, theta, n_samples, seed, grad, hess):
    for g in prange(group_ptr.shape[0] - 1):
        lo = group_ptr[g]
        hi = group_ptr[g + 1]
        if not _worth_estimating(rho[lo:hi]):
            grad[lo:hi] = 0.0
            hess[lo:hi] = 0.0
            continue
        state = _query_state(seed, g)
        _plrank3_query(scores[lo:hi], rho[lo:hi], theta, n_samples, state, grad[lo:hi], hess[lo:hi])


@njit(parallel=True, cache=True)
def _plrank2_groups(scores, rho, group_ptr, theta, n_samples, seed, grad):
    for g in prange(group_ptr.shape[0] - 1):
        lo = group_ptr[g]
        hi = group_ptr[g + 1]
        if not _worth_estimating(rho[lo:hi]):
            grad[lo:hi] = 0.0
            continue
        state = _query_state(seed, g)
        _plrank2_query(scores[lo:hi], rho[lo:hi], theta, n_samples, state, grad[lo:hi])


@njit(cache=True)
def _plrank3_rankings(scores, rho, theta, rankings, grad, hess):
    D = scores.shape[0]
    K = rankings.shape[1]
    e = np.empty(D)
    S_total = _weights(scores, e)
    rank_of = np.full(D, -1, dtype=np.int64)
    PR = np.empty(K + 1)
    prefix = np.empty((5, K))
    grad[:] = 0.0
    hess[:] = 0.0
    for s in range(rankings.shape[0]):
        _plrank3_sample(rankings[s], e, S_total, rho, theta[:K], rank_of, PR, prefix, grad, hess)
    scale = -1.0 / rankings.shape[0]
    for d in range(D):
        grad[d] *= scale
        hess[d] *= scale


@njit(cache=True)
def _plrank2_rankings(scores, rho, theta, rankings, grad):
    D = scores.shape[0]
    K = rankings.shape[1]
    e = np.empty(D)
    S_total = _weights(scores, e)
    alive = np.ones(D)
    PR = np.empty(K + 1)
    grad[:] = 0.0
    for s in range(rankings.shape[0]):
        _plrank2_sample(rankings[s], e, S_total, rho, theta[:K], alive, PR, grad)
    scale = -1.0 / rankings.shape[0]
    for d in range(D):
        grad[d] *= scale


@njit(cache=True)
def _gumbel_rankings(scores, n_samples, seed, out):
    D = scores.shape[0]
    keys = np.empty(D)
    idx = np.arange(D)
    state = _query_state(seed, 0)
    for s in range(n_samples):
        _gumbel_top_k(scores, state, keys, idx, out[s])


# --------------------------------------------------------------------------------------------
# Python entry points
# --------------------------------------------------------------------------------------------
def _vector(values: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(values, dtype=np.float64)


def plrank3_grad_hess(
    scores: np.ndarray,
    labels: np.ndarray,
    group_ptr: np.ndarray,
    *,
    K: int,
    N: int,
    seed: int = 0,
    metric: str = "ndcg",
    gain: str = "exp",
    n_jobs: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """PL-Rank-3 (Oosterhuis, SIGIR 2022, Algorithm 1) with the Kang et al. (2024) Hessian.

    Every query draws ``N`` Gumbel top-K rankings over all its documents and computes the
    gradient and Hessian terms of every document for every sample, directly:
    O(N (D + K log D)) per query. Queries run in parallel.

    Parameters
    ----------
    scores, labels : arrays of shape (n,)
        Margins and graded labels.
    group_ptr : int array of shape (n_queries + 1,)
        Query boundaries.
    K, N : int
        Ranking length (metric cutoff) and samples per query.
    seed : int, default 0
        Query g draws from its own random stream keyed by ``(seed, g)``.
    metric, gain : str
        As in :func:`rewards`.
    n_jobs : int or None
        Numba threads.

    Returns
    -------
    grad, hess : float64 arrays of shape (n,)
        Derivatives of the loss ``-R`` (raw Hessian, not made positive).

    References
    ----------
    H. Oosterhuis. Learning-to-Rank at the Speed of Sampling: Plackett-Luce Gradient Estimation
    with Minimal Computational Complexity. SIGIR 2022.
    J. Kang, M. de Rijke, H. Oosterhuis. Estimating the Hessian Matrix of Ranking Objectives for
    Stochastic Learning to Rank with Gradient Boosted Trees. SIGIR 2024.
    """
    ptr = np.ascontiguousarray(group_ptr, dtype=np.int64)
    m = _vector(scores)
    grad = np.empty_like(m)
    hess = np.empty_like(m)
    with numba_threads(n_jobs):
        rho = rewards(labels, ptr, K, metric=metric, gain=gain)
        _plrank3_groups(m, rho, ptr, theta_dcg(K), N, seed, grad, hess)
    return grad, hess


def plrank2_grad(
    scores: np.ndarray,
    labels: np.ndarray,
    group_ptr: np.ndarray,
    *,
    K: int,
    N: int,
    seed: int = 0,
    metric: str = "ndcg",
    gain: str = "exp",
    n_jobs: int | None = None,
) -> np.ndarray:
    """PL-Rank-2 (Oosterhuis, SIGIR 2021): the gradient from ``N`` Gumbel samples, O(N K D).

    Parameters and conventions as in :func:`plrank3_grad_hess`; returns the gradient of the
    loss ``-R`` only (PL-Rank-2 has no Hessian).

    References
    ----------
    H. Oosterhuis. Computationally Efficient Optimization of Plackett-Luce Ranking Models for
    Relevance and Fairness. SIGIR 2021.
    """
    ptr = np.ascontiguousarray(group_ptr, dtype=np.int64)
    m = _vector(scores)
    grad = np.empty_like(m)
    with numba_threads(n_jobs):
        rho = rewards(labels, ptr, K, metric=metric, gain=gain)
        _plrank2_groups(m, rho, ptr, theta_dcg(K), N, seed, grad)
    return grad


def _one_query(
    scores: np.ndarray, labels: np.ndarray, rankings: np.ndarray, K: int, metric: str, gain: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    m = _vector(scores)
    ptr = np.array([0, m.shape[0]], dtype=np.int64)
    rho = rewards(labels, ptr, K, metric=metric, gain=gain)
    rk = np.ascontiguousarray(rankings, dtype=np.int64)
    return m, rho, rk, bool(m.shape[0] >= 2 and rho.max() > 0.0)


def plrank3_from_rankings(
    scores: np.ndarray,
    labels: np.ndarray,
    rankings: np.ndarray,
    *,
    K: int,
    metric: str = "ndcg",
    gain: str = "exp",
) -> tuple[np.ndarray, np.ndarray]:
    """The PL-Rank-3 estimate of :func:`plrank3_grad_hess` for one query and given rankings.

    ``rankings`` has shape (N, min(K, D)); O(N (D + K)).
    """
    m, rho, rk, worth = _one_query(scores, labels, rankings, K, metric, gain)
    grad = np.zeros_like(m)
    hess = np.zeros_like(m)
    if worth:
        _plrank3_rankings(m, rho, theta_dcg(K), rk, grad, hess)
    return grad, hess


def plrank2_from_rankings(
    scores: np.ndarray,
    labels: np.ndarray,
    rankings: np.ndarray,
    *,
    K: int,
    metric: str = "ndcg",
    gain: str = "exp",
) -> np.ndarray:
    """The PL-Rank-2 gradient of :func:`plrank2_grad` for one query and given rankings: O(N K D)."""
    m, rho, rk, worth = _one_query(scores, labels, rankings, K, metric, gain)
    grad = np.zeros_like(m)
    if worth:
        _plrank2_rankings(m, rho, theta_dcg(K), rk, grad)
    return grad


def gumbel_rankings(scores: np.ndarray, K: int, N: int, seed: int = 0) -> np.ndarray:
    """``N`` rankings of one query drawn by the baselines' Gumbel top-K: shape (N, min(K, D))."""
    m = _vector(scores)
    out = np.empty((N, min(K, m.shape[0])), dtype=np.int64)
    _gumbel_rankings(m, N, seed, out)
    return out
