r"""HIGH LEVEL: the PL-Rank-3 gradient and estimated Hessian of the expected ranking metric.

A query's booster margins :math:`m(d)` define a Plackett-Luce policy that places, at rank
:math:`k`, an unplaced document with probability :math:`e^{m(d)} / S_k`. Its expected reward is

.. math::

    R(m) = \mathbb{E}_{y \sim \pi_m}\Big[\sum_{k=1}^{K} \theta_k\, \rho_{y_k}\Big],

with rank weights :math:`\theta_k = 1/\log_2(k+1)` (DCG@K; :math:`1/K` for precision@K) and gains
:math:`\rho_d = 2^{\ell_d} - 1` or :math:`\ell_d` (divided by the query's ideal DCG@K for NDCG).
Boosters minimise, so the functions here return the derivatives of the loss
:math:`L = -\sum_q R_q`: ``grad = -dR/dm`` and ``hess = -d^2R/dm^2`` (its diagonal), both estimated
without bias from :math:`N` sampled rankings (Oosterhuis, SIGIR 2022, Algorithm 1; Kang, de Rijke
and Oosterhuis, SIGIR 2024, Eq. 7-10).
"""

from __future__ import annotations

from itertools import pairwise

import numpy as np

from .._kernels import fairness as _fair_kernels
from .._kernels import plrank as _kernels
from .._ranking_metric import RankingMetric
from .._util.threads import numba_threads, thread_count
from .._util.validation import (
    as_finite_vector,
    check_group_ptr,
    check_labels,
    check_same_length,
    check_seed,
)
from .fairness import FairnessSpec, FairTerms, checked_item_groups
from .options import PLRankOptions

__all__ = [
    "CHUNK_WORK",
    "CLIP_FLOOR",
    "KERNEL_SAMPLERS",
    "estimate",
    "finish_hessian",
    "plrank_grad_hess",
    "plrank_grad_hess_from_rankings",
    "query_chunks",
]

#: A sampler's name -> its code in the kernels.
KERNEL_SAMPLERS = {
    "auto": _kernels.SAMPLER_AUTO,
    "tree": _kernels.SAMPLER_TREE,
    "race": _kernels.SAMPLER_RACE,
}

#: Lower bound of the ``"clip"`` Hessian, relative to the largest ``|h|`` of the batch.
CLIP_FLOOR = 1e-3

#: Rows times sampled rankings per thread that one call of a kernel estimates (one query may
#: hold more): about a third of a second of a thread's work. Python sees Ctrl-C only between
#: calls of compiled code, so a round cut into such calls is interrupted within about that long.
CHUNK_WORK = 2**23


def query_chunks(group_ptr: np.ndarray, rows: int) -> list[tuple[int, int]]:
    """Consecutive query ranges ``[a, b)`` covering every query, each of about ``rows`` rows.

    A range ends at the first query boundary at or past a multiple of ``rows``, so it holds at
    most ``rows`` rows plus those of its last query (a query is never split).
    """
    n_queries = group_ptr.shape[0] - 1
    targets = np.arange(rows, int(group_ptr[-1]), rows)
    ends = np.unique(np.searchsorted(group_ptr, targets, side="left"))
    ends = ends[(ends > 0) & (ends < n_queries)]
    bounds = [0, *ends.tolist(), n_queries]
    return list(pairwise(bounds))


def finish_hessian(hess: np.ndarray, mode: str) -> np.ndarray:
    """Turn the unbiased estimate of ``-d^2R/dm^2`` into what the booster receives.

    ``"raw"`` passes it unchanged (indefinite: about 40% of the entries are negative, and the
    exact trace is 0 at equal margins); ``"abs"`` takes :math:`|h|`; ``"clip"`` takes
    :math:`\\max(h, 10^{-3} \\max|h|)` (rows of queries that contribute nothing keep 0);
    ``"constant"`` is all ones (no second-order information: the ablation "GBDT w/o
    Hessian" of Kang et al. 2024).
    """
    if mode == "raw":
        return hess
    if mode == "abs":
        return np.abs(hess, out=hess)
    if mode == "clip":
        floor = CLIP_FLOOR * float(np.max(np.abs(hess), initial=0.0))
        return np.where(hess == 0.0, 0.0, np.maximum(hess, floor))
    return np.ones_like(hess)


def estimate(
    scores: np.ndarray,
    rho: np.ndarray,
    group_ptr: np.ndarray,
    metric: RankingMetric,
    *,
    hessian: str,
    N: int,
    seed: int,
    round_: int,
    sampler: str,
    n_jobs: int | None,
    keys: np.ndarray | None = None,
    fairness: FairnessSpec | None = None,
    terms: FairTerms | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Run the parallel kernel on validated arrays; ``round_`` keys the fresh samples of a round.

    ``rho`` are ``metric``'s rewards of the rows (:meth:`~gbdt_plrank._ranking_metric.RankingMetric.rewards`); rankings have
    the length ``metric.K``. Query ``g`` draws from the stream ``(seed, round_, keys[g])``;
    ``keys`` defaults to the query index ``g`` (an int64 array of one non-negative key per query
    otherwise). With ``fairness``, ``terms`` holds the rows' terms of the loss
    (:meth:`~gbdt_plrank._training.fairness.FairnessSpec.terms`) and the cross-fitted fairness kernel runs instead; its
    Gauss-Newton term is added to the Hessian estimate before ``hessian`` finishes it
    (:func:`~gbdt_plrank._training.plrank.finish_hessian`).

    The queries are estimated in consecutive ranges of about :data:`CHUNK_WORK` rows times
    rankings per thread (:func:`query_chunks`; one range at ordinary sizes), one kernel call
    each, so that Ctrl-C takes effect between them; each query's estimate depends only on its
    rows and its stream, so the ranges change no bit of the result.
    """
    grad = np.empty_like(scores)
    hess = np.empty_like(scores)
    slope = None if fairness is None else np.empty_like(scores)
    if keys is None:
        keys = np.arange(group_ptr.shape[0] - 1, dtype=np.int64)
    theta = metric.theta(group_ptr)
    rows_per_call = max(1, CHUNK_WORK * thread_count(n_jobs) // N)
    with numba_threads(n_jobs):
        for a, b in query_chunks(group_ptr, rows_per_call):
            r = slice(group_ptr[a], group_ptr[b])
            ptr = group_ptr[a : b + 1] - group_ptr[a]
            if fairness is None:
                _kernels.estimate_groups(
                    scores[r], rho[r], ptr, keys[a:b], theta, N, seed, round_,
                    KERNEL_SAMPLERS[sampler], grad[r], hess[r],
                )
            else:
                _fair_kernels.fair_estimate_groups(
                    scores[r], rho[r], fairness.kind, terms.aux[r], terms.member[r],
                    fairness.weight, fairness.trains_empty_queries, ptr, keys[a:b], theta, N,
                    seed, round_, KERNEL_SAMPLERS[sampler], grad[r], hess[r], slope[r],
                )
    if fairness is not None:
        hess += fairness.gauss_newton(slope, terms)
    return grad, finish_hessian(hess, hessian)


def _options(K: object, N: object, **options: object) -> PLRankOptions:
    """The estimator's options: its ``K`` is the length of the rankings (their ``judged``)."""
    return PLRankOptions.checked(K=K, N=N, **options)


def plrank_grad_hess(
    scores: np.ndarray,
    labels: np.ndarray,
    group_ptr: np.ndarray,
    *,
    K: int = 5,
    N: int = 100,
    metric: str = "ndcg",
    gain: str = "exp",
    hessian: str = "abs",
    seed: int = 0,
    sampler: str = "auto",
    n_jobs: int | None = None,
    fairness: str | None = None,
    fairness_weight: float = 1.0,
    empty_queries: str = "skip",
    item_groups: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    r"""Estimated gradient and diagonal Hessian of :math:`L = -\sum_q \mathbb{E}[\mathrm{metric@K}]`.

    For every query :math:`q` (documents ``group_ptr[q]:group_ptr[q+1]``), ``N`` rankings of length
    :math:`\min(K, D_q)` are drawn from the Plackett-Luce policy of ``scores`` and the PL-Rank-3
    estimate of the gradient and the Kang et al. (2024) estimate of the Hessian diagonal are
    computed in O(D + N K log D) (Oosterhuis 2022, section 5: the terms of the documents a
    ranking leaves out are shared, and rankings are drawn from a sum tree). Queries run in
    parallel; query ``q``
    draws from a random stream keyed by ``(seed, 0, q)``, so the output does not depend on the
    number of threads.

    Parameters
    ----------
    scores : array of shape (n,)
        Raw margins (log-scores of the policy). Any finite values; the estimate is invariant to a
        constant added to a query's scores.
    labels : array of shape (n,)
        Graded relevance, finite and >= 0 (<= 31 with the exponential gain).
    group_ptr : array of shape (n_queries + 1,)
        Query boundaries ``[0, ..., n]``, non-decreasing.
    K : int, default 5
        Metric cutoff and length of the sampled rankings; longer than a query is fine.
    N : int, default 100
        Rankings sampled per query.
    metric : {"ndcg", "dcg", "precision"}, default "ndcg"
        DCG@K; DCG@K divided by the query's ideal DCG@K; precision@K (documents with label > 0).
    gain : {"exp", "linear"}, default "exp"
        :math:`2^\ell - 1` or :math:`\ell` (not used by precision).
    hessian : {"abs", "raw", "clip", "constant"}, default "abs"
        What the booster receives as Hessian. The raw estimate is
        indefinite and its sum over a tree node is mostly noise, so boosting with it stalls or
        lags; :math:`|h|` keeps the curvature's scale (the documentation's "Choosing the
        Hessian" page has the measurements).
    seed : int, default 0
        Seed of the sampled rankings.
    sampler : {"auto", "tree", "race"}, default "auto"
        Sequential sum-tree draws, or an exponential race (PL-Rank-3's Gumbel sampling), or the
        cheaper of the two for each query. Identical rankings give identical estimates.
    n_jobs : int or None, default None
        Threads; None uses Numba's default, negative values count back from it.
    fairness : {None, "expected-exposure", "disparity", "group-disparity"}, default None
        None: the expected metric alone. Otherwise the loss is
        :math:`-\sum_q (\mathbb{E}[\mathrm{metric@K}] - w\,F_q)` with :math:`F` a loss of the
        exposures at K with the metric's DCG rank weights (the fairness guide has
        the formulas): ``"expected-exposure"`` the expected exposure loss of Diaz et al. (2020)
        against equal exposure within grades; ``"disparity"`` the individual disparity of the
        2021 PL-Rank experiments, :math:`\frac{1}{n(n-1)}\sum_{i \ne j}(E_i g_j - E_j g_i)^2`
        with :math:`g` the label's gain (not normalised); ``"group-disparity"`` the squared
        differences of exposure per unit of merit between ``item_groups`` (a query where fewer
        than two groups have merit contributes 0). The gradient is PL-Rank's with the signed
        reward :math:`\rho_d - w\,\partial F/\partial E(d)`, exposure and terms estimated
        from two independent halves of the ``N`` rankings (unbiased); the Hessian estimate
        gains a non-negative Gauss-Newton part :math:`w c_d (\partial E(d)/\partial m(d))^2`
        before ``hessian`` applies. Needs ``N >= 2`` and ``metric`` "ndcg" or "dcg".
    fairness_weight : float, default 1.0
        :math:`w \ge 0`, finite; used only with ``fairness``.
    empty_queries : {"skip", "uniform"}, default "skip"
        With ``fairness``: ``"skip"`` gives the queries without a relevant document exactly 0,
        as without fairness; ``"uniform"`` (``"expected-exposure"`` only) trains their
        exposure toward EE-L's target there, equal exposure for every document. The trees are
        shared across queries, so that target flattens the policy of the queries with
        relevant documents as well (:class:`~gbdt_plrank._training.fairness.FairnessSpec`). The
        disparities are 0 on such queries either way.
    item_groups : array of shape (n,) or None, default None
        With ``fairness="group-disparity"`` (and only then): every document's item group, an
        integer id >= 0, two or more distinct ids. Groups are compared within each query.

    Returns
    -------
    grad, hess : float64 arrays of shape (n,)
        Queries with one document, or without a relevant document (unless
        ``empty_queries="uniform"``), get exactly 0 (1 for the Hessian in ``"constant"`` mode).

    Raises
    ------
    ValueError
        For non-finite scores or labels, negative labels, labels too large for the exponential
        gain, lengths that disagree, a malformed ``group_ptr``, ``K < 1``, ``N < 1`` or an
        unknown option name, and for the fairness rules above (a negative or non-finite
        ``fairness_weight``, ``metric="precision"``, ``N < 2``, ``item_groups`` missing with
        group fairness or given without it, of the wrong length, NaN, negative or non-integer
        ids, a single group).

    References
    ----------
    H. Oosterhuis. Learning-to-Rank at the Speed of Sampling: Plackett-Luce Gradient Estimation
    with Minimal Computational Complexity. SIGIR 2022.
    J. Kang, M. de Rijke, H. Oosterhuis. Estimating the Hessian Matrix of Ranking Objectives for
    Stochastic Learning to Rank with Gradient Boosted Trees. SIGIR 2024.
    """
    options = _options(
        K, N, metric=metric, gain=gain, hessian=hessian, sampler=sampler, fairness=fairness,
        fairness_weight=fairness_weight, empty_queries=empty_queries,
    )
    seed = check_seed("seed", seed)
    m = as_finite_vector("scores", scores)
    y = check_labels(labels, gain=options.gain, signed=options.signed_labels)
    check_same_length(scores=m, labels=y)
    ptr = check_group_ptr(group_ptr, m.shape[0])
    metric_K = options.judged
    fair = options.fairness_spec
    ids = checked_item_groups(fair, item_groups, m.shape[0])
    terms = None if fair is None else fair.terms(
        y, ptr, metric_K.theta(ptr), gain=options.gain, item_groups=ids
    )
    return estimate(
        m, metric_K.rewards(y, ptr), ptr, metric_K, hessian=options.hessian, N=options.N,
        seed=seed, round_=0, sampler=options.sampler, n_jobs=n_jobs, fairness=fair, terms=terms,
    )


def plrank_grad_hess_from_rankings(
    scores: np.ndarray,
    labels: np.ndarray,
    rankings: np.ndarray,
    *,
    K: int = 5,
    metric: str = "ndcg",
    gain: str = "exp",
    hessian: str = "raw",
    fairness: str | None = None,
    fairness_weight: float = 1.0,
    empty_queries: str = "skip",
    item_groups: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The estimate of :func:`plrank_grad_hess` for one query, from explicit rankings.

    Deterministic: the same rankings always give the same numbers, whichever sampler drew them.
    This is how the estimator is compared with other implementations and fed by other samplers.

    Parameters
    ----------
    scores, labels : arrays of shape (D,)
        One query's margins and labels (rules as in :func:`plrank_grad_hess`).
    rankings : int array of shape (N, min(K, D))
        Each row lists distinct document indices in ``[0, D)``, top first.
    K, metric, gain, hessian, fairness, fairness_weight, empty_queries, item_groups
        As in :func:`plrank_grad_hess` (``item_groups`` of shape (D,)); ``hessian`` defaults to ``"raw"`` (unbiased without
        ``fairness``). With ``fairness``, the first ``N // 2`` rows form the first half.

    Returns
    -------
    grad, hess : float64 arrays of shape (D,)
    """
    rk = np.asarray(rankings)
    options = _options(
        K, max(rk.shape[0], 1) if rk.ndim == 2 else 1, metric=metric, gain=gain, hessian=hessian,
        fairness=fairness, fairness_weight=fairness_weight, empty_queries=empty_queries,
    )
    metric_K = options.judged
    fair = options.fairness_spec
    m = as_finite_vector("scores", scores)
    y = check_labels(labels, gain=options.gain, signed=options.signed_labels)
    check_same_length(scores=m, labels=y)
    D = m.shape[0]
    ids = checked_item_groups(fair, item_groups, D)
    width = min(metric_K.K, D)
    least = 1 if fair is None else 2
    if rk.ndim != 2 or rk.shape[1] != width or rk.shape[0] < least:
        raise ValueError(
            f"rankings must have shape (N >= {least}, min(K, D) = {width}), but has shape "
            f"{rk.shape}" + ("." if fair is None else " (fairness splits them in two halves).")
        )
    if not np.issubdtype(rk.dtype, np.integer):
        raise ValueError(f"rankings must hold integers, but has dtype {rk.dtype}.")
    rk = np.ascontiguousarray(rk, dtype=np.int64)
    if rk.min() < 0 or rk.max() >= D:
        raise ValueError(
            f"rankings must index documents in [0, {D}), but holds {rk.min()}..{rk.max()}."
        )
    dup = np.flatnonzero((np.diff(np.sort(rk, axis=1), axis=1) == 0).any(axis=1))
    if dup.size:
        raise ValueError(
            f"each ranking must place distinct documents, but row {dup[0]} is {rk[dup[0]]}."
        )
    ptr = np.array([0, D], dtype=np.int64)
    rho = metric_K.rewards(y, ptr)
    theta = metric_K.theta(ptr)
    grad = np.zeros(D)
    hess = np.zeros(D)
    if D >= 2 and fair is not None and (fair.trains_empty_queries or rho.max() > 0):
        slope = np.empty(D)
        terms = fair.terms(y, ptr, theta, gain=options.gain, item_groups=ids)
        _fair_kernels.fair_estimate_from_rankings(
            m, rho, fair.kind, terms.aux, terms.member, fair.weight, theta, rk, grad, hess, slope
        )
        hess += fair.gauss_newton(slope, terms)
    elif D >= 2 and rho.max() > 0:
        _kernels.estimate_from_rankings(m, rho, theta, rk, grad, hess)
    return grad, finish_hessian(hess, options.hessian)
