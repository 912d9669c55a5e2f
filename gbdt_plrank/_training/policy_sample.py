r"""Monte-Carlo summaries of the Plackett-Luce policy of a ranker's margins.

A query's margins :math:`m(d)` define the policy that places, at rank :math:`k`, an unplaced
document with probability :math:`e^{m(d)} / \sum_{d' \text{ unplaced}} e^{m(d')}`: the policy
whose expected metric the PL-Rank objective maximises. :func:`sample_policy` draws rankings from
it once, with :func:`gbdt_plrank._kernels.plrank.sample_groups`, and keeps them in a
:class:`PolicySample`.
:func:`sampled_exposure` draws rankings and keeps only the exposure they give, the quantity every
expected metric and fairness measure of a policy is a function of.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._groups import Groups, boundaries, recompute_queries
from .._kernels import plrank as _kernels
from .._kernels.policy import sampled_exposure_groups, sampled_exposure_narrow_groups
from .._util.threads import numba_threads

__all__ = ["PolicySample", "sample_policy", "sampled_exposure"]


def sampled_exposure(
    margins: np.ndarray,
    group_ptr: np.ndarray,
    theta: np.ndarray,
    *,
    n_samples: int,
    seed: int,
    round_: int,
    n_jobs: int | None,
    placement: bool = False,
) -> np.ndarray:
    r"""Monte-Carlo exposure of every row under the PL policy of ``margins``.

    .. math::

        \hat{E}(d) = \frac{1}{S} \sum_{s=1}^{S} \theta_{\mathrm{rank}_s(d)}
        \qquad\text{or (placement)}\qquad
        \hat{E}(d) = \frac{1}{S} \sum_{s=1}^{S} \sum_{k} \theta_k\,
        \frac{e^{m(d)}\, [d \notin y^{(s)}_{1:k-1}]}{\sum_{d' \notin y^{(s)}_{1:k-1}} e^{m(d')}}

    over :math:`S` = ``n_samples`` rankings :math:`y^{(s)}` of length ``min(len(theta), D)`` of
    each query, ``theta[r]`` the weight of rank ``r + 1`` (0 beyond). Both are unbiased: the
    placement term of rank :math:`k` is the expectation of the counting term given the first
    :math:`k-1` documents. Query ``g`` draws from the stream ``(seed, round_, g)``, whatever the
    number of threads, so both read the same rankings.

    Parameters
    ----------
    margins : float64 array of shape (n,)
        Finite margins, rows grouped by query.
    group_ptr : int64 array of shape (G + 1,)
        Query boundaries.
    theta : float64 array of shape (K,)
        Rank weights.
    n_samples, seed, round_ : int
        Rankings per query (>= 1) and the streams' keys (>= 0).
    n_jobs : int or None
        Numba threads.
    placement : bool, default False
        The placement-probability estimate rather than counting.

    Returns
    -------
    float64 array of shape (n,)
    """
    margins = np.ascontiguousarray(margins, dtype=np.float64)
    theta = np.ascontiguousarray(theta, dtype=np.float64)
    out = np.empty(margins.shape[0])
    keys = np.arange(group_ptr.shape[0] - 1, dtype=np.int64)
    wide = np.empty(keys.shape[0], dtype=np.bool_)

    def whole(rows, ptr, queries, part):
        sampled_exposure_groups(
            margins[rows], ptr, keys[queries], theta, n_samples, seed, round_, placement, part
        )

    with numba_threads(n_jobs):
        # The wide path compiles only when a query needs it: the wide queries, gathered, go
        # through the whole kernel with their own streams (the same numbers, bit for bit).
        sampled_exposure_narrow_groups(
            margins, group_ptr, keys, theta, n_samples, seed, round_, placement, out, wide
        )
        recompute_queries(group_ptr, wide, whole, out)
    return out


@dataclass(frozen=True)
class PolicySample:
    """``n_samples`` PL rankings of every query of a set of rows.

    Attributes
    ----------
    groups : Groups
        The caller's query structure (:func:`~gbdt_plrank._groups.resolve_groups`).
    ptr : int64 array of shape (Q + 1,)
        Boundaries of the Q non-empty queries in the grouped row order (empty queries, zeros
        among group sizes, hold no rows and are not sampled).
    rankings : int64 array of shape (Q * n_samples, min(K, max D))
        Row ``q * n_samples + s`` is sample ``s`` of non-empty query ``q``: query-local indices
        of the documents at ranks 1, 2, ..., ``-1`` beyond ``min(K, D_q)``.
    n_samples : int
        Samples per query.
    """

    groups: Groups
    ptr: np.ndarray
    rankings: np.ndarray
    n_samples: int

    def per_query(self) -> list[np.ndarray]:
        """One int64 array ``(n_samples, min(K, D))`` of caller row indices per query.

        Queries in the order of their first appearance in the caller's ``group``; an empty
        query gives an array of width 0.
        """
        sizes = self.groups.sizes
        S = self.n_samples
        kept_index = np.cumsum(sizes > 0) - 1
        out = []
        for g in self.groups.first_seen:
            if sizes[g] == 0:
                out.append(np.empty((S, 0), dtype=np.int64))
                continue
            q = kept_index[g]
            k = min(self.rankings.shape[1], int(sizes[g]))
            local = self.rankings[q * S : (q + 1) * S, :k]
            out.append(self.groups.order[self.groups.ptr[g] + local])
        return out


def sample_policy(
    margins: np.ndarray,
    groups: Groups,
    *,
    K: int,
    n_samples: int,
    seed: int,
    n_jobs: int | None,
    round_: int = 0,
) -> PolicySample:
    """Draw ``n_samples`` PL rankings of length ``min(K, D)`` for every query.

    Parameters
    ----------
    margins : float64 array of shape (n,)
        Finite margins (log-scores) in the caller's row order.
    groups : Groups
        Their query structure.
    K, n_samples : int
        Ranking length and samples per query, both ``>= 1``.
    seed : int
        Non-negative seed: the ``q``-th non-empty query in grouped order draws from the stream
        ``(seed, round_, q)``, so the result does not depend on the number of threads.
    n_jobs : int or None
        Numba threads.
    round_ : int, default 0
        The streams' round key (an evaluation's:
        :data:`gbdt_plrank._training.evaluation.EVAL_ROUNDS`).

    Returns
    -------
    PolicySample
    """
    sizes = groups.sizes
    ptr = boundaries(sizes[sizes > 0])
    width = min(K, int(sizes.max(initial=0)))
    rankings = np.empty(((ptr.shape[0] - 1) * n_samples, width), dtype=np.int64)
    grouped = np.ascontiguousarray(groups.to_sorted(margins), dtype=np.float64)
    with numba_threads(n_jobs):
        _kernels.sample_groups(grouped, ptr, K, n_samples, seed, round_, rankings)
    return PolicySample(groups, ptr, rankings, n_samples)
