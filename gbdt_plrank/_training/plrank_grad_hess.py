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

import warnings
from itertools import pairwise

import numpy as np

from .._groups import query_rows, recompute_queries, widest_query
from .._kernels import fairness as _fair_kernels
from .._kernels import plrank as _kernels
from .._kernels.samplers import SAMPLER_CODES
from .._kernels.streams import NOISE_CODES, kept_queries
from .._ranking_metric import RankingMetric
from .._util.threads import numba_threads, thread_count
from .._util.validation import (
    as_finite_vector,
    check_group_ptr,
    check_labels,
    check_same_length,
    check_seed,
)
from .fairness_spec import FairnessSpec, FairTerms, checked_item_groups
from .options import DEFAULTS, PLRankOptions, option_docs

__all__ = [
    "CHUNK_WORK",
    "CLIP_FLOOR",
    "CURVATURE_FLOOR",
    "HALF_B_ROUND",
    "MAX_EXACT_SPAN",
    "degenerate_rows",
    "estimate",
    "finish_hessian",
    "kept_query_counts",
    "plrank_grad_hess",
    "plrank_grad_hess_from_rankings",
    "pool_halves",
    "query_chunks",
    "warn_beyond_exact_span",
]

#: Lower bound of the ``"clip"`` Hessian, relative to the largest ``|h|`` of the batch.
CLIP_FLOOR = 1e-3

#: Rows times sampled rankings per thread that one call of a kernel estimates (one query may
#: hold more): about a third of a second of a thread's work. Python sees Ctrl-C only between
#: calls of compiled code, so a round cut into such calls is interrupted within about that long.
CHUNK_WORK = 2**23

#: The stream round of the second half of a ``hessian="denoised"`` round: half B of round
#: :math:`r` draws from the streams ``(seed, HALF_B_ROUND + r, key)``, which no training round
#: (:math:`r < 2^{61}`) and no evaluation (:data:`~gbdt_plrank._training.evaluation.EVAL_ROUNDS`,
#: from :math:`2^{62}`) draws from, while half A draws from the round's own ``(seed, r, key)``.
HALF_B_ROUND = 2**61


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


#: Least curvature of a degenerate query's ``"abs"`` and ``"clip"`` Hessians relative to its
#: gradient: where :math:`\sum_{d \in q} |h_d| < \tau \sum_{d \in q} |g_d|`, its rows are raised
#: to :math:`h_d \ge \tau |g_d|`, so that their diagonal Newton steps stay within
#: :math:`1/\tau` = 20 margin units (:func:`finish_hessian`).
CURVATURE_FLOOR = 0.05


def degenerate_rows(grad: np.ndarray, hess: np.ndarray, group_ptr: np.ndarray) -> np.ndarray:
    r"""The rows of the queries whose curvature vanishes against their gradient (a bool mask).

    Query :math:`q` is degenerate where :math:`\sum_{d \in q} |h_d| < \tau \sum_{d \in q} |g_d|`,
    :math:`\tau` = :data:`CURVATURE_FLOOR` (never where its gradient is 0). ``group_ptr`` may
    hold empty queries.
    """
    sizes = np.diff(group_ptr)
    filled = sizes > 0
    starts = group_ptr[:-1][filled]
    if starts.shape[0] == 0:
        return np.zeros(hess.shape[0], dtype=bool)
    h_sum = np.add.reduceat(np.abs(hess), starts)
    g_sum = np.add.reduceat(np.abs(grad), starts)
    return np.repeat(h_sum < CURVATURE_FLOOR * g_sum, sizes[filled])


def finish_hessian(
    hess: np.ndarray,
    mode: str,
    *,
    grad: np.ndarray | None = None,
    group_ptr: np.ndarray | None = None,
) -> np.ndarray:
    r"""Turn the unbiased estimate of ``-d^2R/dm^2`` into what the booster receives.

    ``"raw"`` passes it unchanged (indefinite: about 40% of the entries are negative, and the
    exact trace is 0 at equal margins); ``"abs"`` takes :math:`|h|`; ``"clip"`` takes
    :math:`\max(h, 10^{-3} \max|h|)` (rows with :math:`h = 0` keep 0);
    ``"constant"`` is all ones (no second-order information: the ablation "GBDT w/o
    Hessian" of Kang et al. 2024); ``"denoised"`` takes :math:`|h|` of an estimate that
    :func:`estimate` pooled from two halves and already divided by each query's noise factor
    (``gbdt_plrank._kernels.plrank.pool_query``), so that the floor below applies after the
    division.

    With ``grad`` and ``group_ptr`` (the loss gradient of the same rows and their queries),
    ``"abs"``, ``"clip"`` and ``"denoised"`` then get the curvature floor: a query whose
    curvature vanishes against its gradient as a whole,
    :math:`\sum_{d \in q} |h_d| < \tau \sum_{d \in q} |g_d|` (:math:`\tau` =
    :data:`CURVATURE_FLOOR`, :func:`degenerate_rows`), has its rows raised to
    :math:`h_d \ge \tau |g_d|`; every other query keeps its Hessian bit for bit.

    Why per query: a booster's leaf value is :math:`-\sum g / (\sum h + \lambda)` over the rows
    of many queries, and a row's Newton step is bounded wherever its curvature sums with that
    of the rest of its query in the leaves; a single row of small :math:`|h|` in an ordinary
    query is the estimate's noise around a curvature that is there. What explodes, or never
    splits, is a query whose total curvature vanishes relative to its gradient. A query of two
    documents has :math:`R = B + (A - B)\,p` with :math:`p = \sigma(m_1 - m_2)` its probability
    of ranking document 1 first, so :math:`g_1 = -(A-B)\,p(1-p)` and
    :math:`h_1 = -(A-B)\,p(1-p)(1-2p) = (1 - 2p)\,g_1`, and the same for document 2:
    :math:`|h_d| = |1 - 2p|\,|g_d|` on both rows. At equal margins (every query at round 0)
    every estimate is 0 and a booster never splits: pairwise preference data never trained.
    The pair is degenerate while :math:`|1 - 2p| < \tau`; there the floor makes each row's
    diagonal Newton step :math:`-g_d/h_d` at most :math:`1/\tau` = 20 margin units, continuous
    with the plain step :math:`1/|1 - 2p|` of :math:`|h|` once it stops binding. Any positive
    Hessian keeps the step a descent direction of the loss,
    :math:`\sum_d g_d \Delta m_d = -\sum_d g_d^2/h_d < 0`. Rows with :math:`g = 0` keep their
    Hessian (0 for queries that contribute nothing). On MQ2008's training queries the floor
    binds on no query at round 0 nor in the first 50 rounds (the documentation's "Choosing the
    Hessian" page).
    """
    if (grad is None) != (group_ptr is None):
        raise TypeError("finish_hessian takes grad and group_ptr together, or neither.")
    if mode == "raw":
        return hess
    if mode == "constant":
        return np.ones_like(hess)
    if mode in ("abs", "denoised"):
        hess = np.abs(hess, out=hess)
    else:
        floor = CLIP_FLOOR * float(np.max(np.abs(hess), initial=0.0))
        hess = np.where(hess == 0.0, 0.0, np.maximum(hess, floor))
    if grad is not None:
        rows = degenerate_rows(grad, hess, group_ptr)
        if rows.any():
            hess[rows] = np.maximum(hess[rows], CURVATURE_FLOOR * np.abs(grad[rows]))
    return hess


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
    noise: str,
    n_jobs: int | None,
    keys: np.ndarray | None = None,
    fairness: FairnessSpec | None = None,
    terms: FairTerms | None = None,
    query_subsample: float = 1.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Run the parallel kernel on validated arrays; ``round_`` keys the fresh samples of a round.

    ``rho`` are ``metric``'s rewards of the rows
    (:meth:`~gbdt_plrank._ranking_metric.RankingMetric.rewards`); rankings have the length
    ``metric.K``. Query ``g`` draws from the stream ``(seed, round_, keys[g])``; ``keys`` defaults
    to the query index ``g`` (an int64 array of one non-negative key per query otherwise). With
    ``fairness``, ``terms`` holds the rows' terms of the loss
    (:meth:`~gbdt_plrank._training.fairness_spec.FairnessSpec.terms`) and the cross-fitted fairness
    kernel runs instead; its Gauss-Newton term is added to the Hessian estimate before ``hessian``
    finishes it (:func:`~gbdt_plrank._training.plrank_grad_hess.finish_hessian`).

    The queries are estimated in consecutive ranges of about :data:`CHUNK_WORK` rows times
    rankings per thread (:func:`query_chunks`; one range at ordinary sizes), one kernel call
    each, so that Ctrl-C takes effect between them; each query's estimate depends only on its
    rows and its stream, so the ranges change no bit of the result.

    With ``query_subsample`` below 1, only the queries that
    ``gbdt_plrank._kernels.streams.kept_queries`` keeps in this round are estimated, as
    they are without it (the Hessian finished over them), and every row of the others gets
    gradient and Hessian 0, whatever ``hessian`` is.

    With ``hessian="denoised"`` (``N >= 2``, ``N >= 4`` with ``fairness``), half A,
    ``N // 2`` rankings, is drawn from the streams ``(seed, round_, key)``
    and half B, the other rankings, from ``(seed, HALF_B_ROUND + round_, key)``
    (:data:`HALF_B_ROUND`): independent, keyed like every stream, so the result does not
    depend on how the queries are split into calls or partitions. Each half is estimated as
    ``"raw"`` (with ``fairness``, cross-fitted within the half), and the two are pooled and
    each query's Hessian divided by its noise factor (:func:`pool_halves`).
    """
    if keys is None:
        keys = np.arange(group_ptr.shape[0] - 1, dtype=np.int64)
    if query_subsample < 1.0:
        kept = np.flatnonzero(kept_queries(seed, round_, keys, query_subsample))
        rows, ptr = query_rows(group_ptr, kept)
        grad, hess = np.zeros_like(scores), np.zeros_like(scores)
        grad[rows], hess[rows] = estimate(
            scores[rows],
            rho[rows],
            ptr,
            metric,
            hessian=hessian,
            N=N,
            seed=seed,
            round_=round_,
            sampler=sampler,
            noise=noise,
            n_jobs=n_jobs,
            keys=keys[kept],
            fairness=fairness,
            terms=None if terms is None else terms.rows(rows),
        )
        return grad, hess
    if hessian == "denoised" and fairness is not None:
        n_a = N // 2
        half_a, half_b = (
            estimate(
                scores,
                rho,
                group_ptr,
                metric,
                hessian="raw",
                N=n,
                seed=seed,
                round_=r,
                sampler=sampler,
                noise=noise,
                n_jobs=n_jobs,
                keys=keys,
                fairness=fairness,
                terms=terms,
            )
            for n, r in ((n_a, round_), (N - n_a, HALF_B_ROUND + round_))
        )
        return pool_halves(half_a, half_b, n_a, N - n_a, group_ptr, n_jobs=n_jobs)
    warn_beyond_exact_span(scores, group_ptr)
    grad = np.empty_like(scores)
    hess = np.empty_like(scores)
    slope = None if fairness is None else np.empty_like(scores)
    theta = metric.theta(group_ptr)
    rows_per_call = max(1, CHUNK_WORK * thread_count(n_jobs) // N)
    with numba_threads(n_jobs):
        for a, b in query_chunks(group_ptr, rows_per_call):
            r = slice(group_ptr[a], group_ptr[b])
            ptr = group_ptr[a : b + 1] - group_ptr[a]
            if fairness is None:
                (_estimate_halves_groups if hessian == "denoised" else _estimate_groups)(
                    scores[r],
                    rho[r],
                    ptr,
                    keys[a:b],
                    theta,
                    N,
                    seed,
                    round_,
                    SAMPLER_CODES[sampler],
                    NOISE_CODES[noise],
                    grad[r],
                    hess[r],
                )
            else:
                _fair_kernels.fair_estimate_groups(
                    scores[r],
                    rho[r],
                    fairness.kind,
                    terms.aux[r],
                    terms.member[r],
                    fairness.weight,
                    fairness.trains_empty_queries,
                    ptr,
                    keys[a:b],
                    theta,
                    N,
                    seed,
                    round_,
                    SAMPLER_CODES[sampler],
                    NOISE_CODES[noise],
                    grad[r],
                    hess[r],
                    slope[r],
                )
    if fairness is not None:
        hess += fairness.gauss_newton(slope, terms)
    return grad, finish_hessian(hess, hessian, grad=grad, group_ptr=group_ptr)


def pool_halves(
    half_a: tuple[np.ndarray, np.ndarray],
    half_b: tuple[np.ndarray, np.ndarray],
    n_a: int,
    n_b: int,
    group_ptr: np.ndarray,
    *,
    n_jobs: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    r"""The ``hessian="denoised"`` estimate from the raw ``(grad, hess)`` of two independent
    halves of ``n_a`` and ``n_b`` rankings per query.

    The gradient is the pooled mean :math:`g = (n_a g_a + n_b g_b)/N`, :math:`N = n_a + n_b`
    (unbiased, not rescaled). The Hessian is the pooled mean :math:`h` the same way, divided per
    query :math:`q` by its noise factor

    .. math::

        \kappa_q = \sqrt{\frac{S_q}{\max(S_q - V_q,\; S_q / \kappa_{max}^2)}}, \quad
        S_q = \sum_{d \in q} h_d^2, \quad
        V_q = \frac{n_a n_b}{N^2} \sum_{d \in q} (h_{a,d} - h_{b,d})^2,

    (:math:`\kappa_q = 1` where :math:`S_q = 0`, :math:`\kappa_{max} = 10`), then finished as
    ``"denoised"`` by :func:`finish_hessian`: :math:`|h|/\kappa_q`, and the curvature floor
    after the division, so that no query's Hessian falls below the floor that ``"abs"``
    guarantees. With the per-ranking terms of a row of variance :math:`\sigma_d^2`,
    :math:`\mathbb{E}(h_{a,d} - h_{b,d})^2 = \sigma_d^2 N / (n_a n_b)` and
    :math:`\mathrm{Var}(h_d) = \sigma_d^2/N`, so :math:`V_q` estimates the noise
    :math:`\sum_d \mathrm{Var}(h_d)` in :math:`S_q` without bias, :math:`S_q - V_q` the energy
    :math:`\sum_d (\mathbb{E} h_d)^2` of the Hessian estimated, and :math:`\kappa_q` the
    factor by which the noise inflates its root mean square. Noisy estimates have
    :math:`\mathbb{E}|h_d| > |\mathbb{E} h_d|`, so :math:`|h|` alone overstates the curvature
    and shortens the booster's Newton steps; the estimate is Kang, de Rijke and Oosterhuis's
    (SIGIR 2024), this correction of its energy is the package's own. (With lattice noise the
    rankings of a half are not independent of one another, and :math:`V_q` estimates the
    variance that the halves show.)
    """
    grad = np.empty_like(half_a[0])
    hess = np.empty_like(half_a[1])
    with numba_threads(n_jobs):
        _kernels.pool_groups(*half_a, *half_b, group_ptr, n_a, n_b, grad, hess)
    return grad, finish_hessian(hess, "denoised", grad=grad, group_ptr=group_ptr)


def kept_query_counts(*, seed: int, rounds: int, n_queries: int, fraction: float) -> np.ndarray:
    """How many of ``n_queries`` queries (keys ``0 .. n_queries - 1``) each of the first
    ``rounds`` rounds estimates with ``query_subsample=fraction`` (:func:`estimate`'s choice,
    redrawn from the same streams): an int64 array of one count per round."""
    keys = np.arange(n_queries, dtype=np.int64)
    return np.array(
        [int(kept_queries(seed, r, keys, fraction).sum()) for r in range(rounds)],
        dtype=np.int64,
    )


#: The largest span of a query's margins (max minus min) at which the estimate is exact up to
#: its sampling, to 1e-4 of the gradient's scale. A query whose margins span more than
#: ``LOG_FLOOR`` takes the wide path, which works in log space with the margins themselves:
#: their rounding (a margin's own size times 2**-52) loses differences of order 1 between
#: margins far below the top, and the error grows with the span (measured against exact
#: enumeration: 1e-3 of the gradient at 1e12, 3% at 1e13, 7% at 1e14, and from about 1e18 on a
#: fixed error of several times the gradient).
MAX_EXACT_SPAN = 1e10


def warn_beyond_exact_span(scores: np.ndarray, group_ptr: np.ndarray) -> None:
    """A ``RuntimeWarning`` where a query's margins span more than ``MAX_EXACT_SPAN``
    (a training whose margins grow so far has diverged); O(n), mostly one min and max."""
    if not scores.size or float(scores.max()) - float(scores.min()) <= MAX_EXACT_SPAN:
        return
    q, span = widest_query(scores, group_ptr)
    if span > MAX_EXACT_SPAN:
        warnings.warn(
            f"the margins of query {q} span {span:.3g}: the PL-Rank estimate is exact only while "
            f"a query's margins span at most {MAX_EXACT_SPAN:g} (beyond, their rounding loses "
            f"the differences between margins far below the top, and the gradient is off: 7% "
            f"at 1e14, several times it from about 1e18). A training whose margins grow so far "
            f"has diverged: lower the learning rate or raise the L2 penalty.",
            RuntimeWarning,
            stacklevel=2,
        )


def _estimate_groups(
    scores: np.ndarray,
    rho: np.ndarray,
    group_ptr: np.ndarray,
    keys: np.ndarray,
    theta: np.ndarray,
    N: int,
    seed: int,
    round_: int,
    sampler: int,
    noise: int,
    grad: np.ndarray,
    hess: np.ndarray,
) -> None:
    """The kernel ``estimate_groups`` into ``grad`` and ``hess``, its wide path compiled only
    when a query needs it.

    ``estimate_narrow_groups`` estimates every narrow query and flags the wide ones (margins
    spanning more than ``LOG_FLOOR``); those alone, gathered, then go through
    ``estimate_groups``. Each query's estimate depends only on its rows, ``theta`` and its
    stream ``(seed, round_, key)``, so the result is that of one ``estimate_groups`` call, bit
    for bit.
    """
    wide = np.empty(group_ptr.shape[0] - 1, dtype=np.bool_)
    _kernels.estimate_narrow_groups(
        scores, rho, group_ptr, keys, theta, N, seed, round_, sampler, noise, grad, hess, wide
    )

    def whole(rows, ptr, queries, g, h):
        _kernels.estimate_groups(
            scores[rows],
            rho[rows],
            ptr,
            keys[queries],
            theta,
            N,
            seed,
            round_,
            sampler,
            noise,
            g,
            h,
        )

    recompute_queries(group_ptr, wide, whole, grad, hess)


def _estimate_halves_groups(
    scores: np.ndarray,
    rho: np.ndarray,
    group_ptr: np.ndarray,
    keys: np.ndarray,
    theta: np.ndarray,
    N: int,
    seed: int,
    round_: int,
    sampler: int,
    noise: int,
    grad: np.ndarray,
    hess: np.ndarray,
) -> None:
    """The pooled ``hessian="denoised"`` estimate of two independent halves into ``grad`` and
    ``hess`` (before :func:`finish_hessian`), as :func:`_estimate_groups` of each half and
    :func:`pool_halves` would give it, bit for bit.

    Half A draws ``N // 2`` rankings from the streams ``(seed, round_, key)``, half B the others
    from ``(seed, HALF_B_ROUND + round_, key)``. ``estimate_narrow_halves_groups`` estimates both
    halves of every narrow query in one pass, sharing each query's sampler, and flags the wide
    ones; those alone, gathered, go through ``estimate_groups`` once per half and are pooled.
    """
    n_a, n_b = N // 2, N - N // 2
    rounds = (round_, HALF_B_ROUND + round_)
    wide = np.empty(group_ptr.shape[0] - 1, dtype=np.bool_)
    _kernels.estimate_narrow_halves_groups(
        scores, rho, group_ptr, keys, theta, n_a, n_b, seed, *rounds, sampler, noise, grad, hess,
        wide,
    )  # fmt: skip

    def whole(rows, ptr, queries, g, h):
        halves = []
        for n, r in zip((n_a, n_b), rounds, strict=True):
            half = np.empty_like(g), np.empty_like(h)
            _kernels.estimate_groups(
                scores[rows], rho[rows], ptr, keys[queries], theta, n, seed, r, sampler, noise,
                *half,
            )  # fmt: skip
            halves.append(half)
        _kernels.pool_groups(*halves[0], *halves[1], ptr, n_a, n_b, g, h)

    recompute_queries(group_ptr, wide, whole, grad, hess)


def _options(K: object, N: object, **options: object) -> PLRankOptions:
    """The estimator's options: its ``K`` is the length of the rankings (their ``judged``)."""
    return PLRankOptions.checked(K=K, N=N, **options)


@option_docs(
    K="The metric's cut-off and the length of the sampled rankings; longer than a query is fine."
)
def plrank_grad_hess(
    scores: np.ndarray,
    labels: np.ndarray,
    group_ptr: np.ndarray,
    *,
    K: int = DEFAULTS.K,
    N: int | str = DEFAULTS.N,
    metric: str = DEFAULTS.metric,
    gain: str = DEFAULTS.gain,
    hessian: str = DEFAULTS.hessian,
    seed: int = 0,
    sampler: str = DEFAULTS.sampler,
    noise: str = DEFAULTS.noise,
    query_subsample: float = DEFAULTS.query_subsample,
    n_jobs: int | None = None,
    fairness: str | None = DEFAULTS.fairness,
    fairness_weight: float = DEFAULTS.fairness_weight,
    empty_queries: str = DEFAULTS.empty_queries,
    item_groups: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    r"""PL-Rank gradient and diagonal Hessian of :math:`L = -\sum_q \mathbb{E}[\mathrm{metric@K}]`.

    For every query :math:`q` (rows ``group_ptr[q]:group_ptr[q+1]``), ``N`` rankings of length
    :math:`\min(K, D_q)` from the Plackett-Luce policy of ``scores``, drawn from the stream
    ``(seed, 0, q)`` whatever the threads, give the PL-Rank-3 gradient (Oosterhuis, SIGIR 2022)
    and Hessian diagonal (Kang et al., SIGIR 2024) in O(D + N K log D): :doc:`/research/estimator`.

    Parameters
    ----------
    scores : array of shape (n,)
        Raw margins (log-scores of the policy), finite; a query whose margins span more than
        1e10 (``MAX_EXACT_SPAN``) gets a ``RuntimeWarning`` (its estimate loses precision).
    labels : array of shape (n,)
        Graded relevance, finite and >= 0 (<= 31 with the exponential gain).
    group_ptr : array of shape (n_queries + 1,)
        Query boundaries ``[0, ..., n]``, non-decreasing.
    .. plrank-options:: K N metric gain hessian
    seed : int, default 0
        Seed of the sampled rankings.
    .. plrank-options:: sampler noise query_subsample
    n_jobs : int or None, default None
        Threads; None uses Numba's default, negative values count back from it.
    .. plrank-options:: fairness fairness_weight empty_queries
    item_groups : array of shape (n,) or None, default None
        With ``fairness="group-disparity"`` only: every document's item group (integer ids >= 0).

    Returns
    -------
    grad, hess : float64 arrays of shape (n,)
        Exactly 0 (the Hessian 1 with ``"constant"``) where every ranking has the same metric
        (one document; none relevant, unless ``empty_queries="uniform"``; without fairness, one
        reward for all) or ``query_subsample`` leaves the query out; the curvature floor:
        :func:`~gbdt_plrank._training.plrank_grad_hess.finish_hessian`.

    Raises
    ------
    ValueError
        For bad scores, labels, ``group_ptr`` or ``item_groups`` (missing with group fairness,
        given without it), or an option that breaks its rule (:class:`PLRankOptions`).
    """
    options = _options(
        K,
        N,
        metric=metric,
        gain=gain,
        hessian=hessian,
        sampler=sampler,
        noise=noise,
        query_subsample=query_subsample,
        fairness=fairness,
        fairness_weight=fairness_weight,
        empty_queries=empty_queries,
    )
    seed = check_seed("seed", seed)
    m = as_finite_vector("scores", scores)
    y = check_labels(labels, gain=options.gain, signed=options.signed_labels)
    check_same_length(scores=m, labels=y)
    ptr = check_group_ptr(group_ptr, m.shape[0])
    metric_K = options.judged
    fair = options.fairness_spec
    ids = checked_item_groups(fair, item_groups, m.shape[0])
    terms = (
        None
        if fair is None
        else fair.terms(y, ptr, metric_K.theta(ptr), gain=options.gain, item_groups=ids)
    )
    return estimate(
        m,
        metric_K.rewards(y, ptr),
        ptr,
        metric_K,
        hessian=options.training_hessian,
        N=options.training_N,
        seed=seed,
        round_=0,
        sampler=options.sampler,
        noise=options.noise,
        n_jobs=n_jobs,
        fairness=fair,
        terms=terms,
        query_subsample=options.query_subsample,
    )


def plrank_grad_hess_from_rankings(
    scores: np.ndarray,
    labels: np.ndarray,
    rankings: np.ndarray,
    *,
    K: int = DEFAULTS.K,
    metric: str = DEFAULTS.metric,
    gain: str = DEFAULTS.gain,
    hessian: str = "raw",
    fairness: str | None = DEFAULTS.fairness,
    fairness_weight: float = DEFAULTS.fairness_weight,
    empty_queries: str = DEFAULTS.empty_queries,
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
        As in :func:`plrank_grad_hess` (``item_groups`` of shape (D,)); ``hessian`` defaults to
        ``"raw"`` (unbiased without ``fairness``). With ``fairness``, the first ``N // 2`` rows form
        the first half. With ``hessian="denoised"``, the first ``N // 2`` rows are half A and the
        others half B (:func:`~gbdt_plrank._training.plrank_grad_hess.pool_halves`); with
        ``fairness`` too, each half is split in two in turn.

    Returns
    -------
    grad, hess : float64 arrays of shape (D,)
    """
    rk = np.asarray(rankings)
    options = _options(  # N: the rows of ``rankings`` (its shape is checked below)
        K,
        rk.shape[0] if rk.ndim == 2 and rk.shape[0] >= 1 else "auto",
        metric=metric,
        gain=gain,
        hessian=hessian,
        fairness=fairness,
        fairness_weight=fairness_weight,
        empty_queries=empty_queries,
    )
    metric_K = options.judged
    fair = options.fairness_spec
    m = as_finite_vector("scores", scores)
    y = check_labels(labels, gain=options.gain, signed=options.signed_labels)
    check_same_length(scores=m, labels=y)
    D = m.shape[0]
    warn_beyond_exact_span(m, np.array([0, D]))
    ids = checked_item_groups(fair, item_groups, D)
    width = min(metric_K.K, D)
    mode = options.training_hessian
    splits = [
        name
        for name, halves in (
            ("hessian='denoised'", mode == "denoised"),
            ("fairness", fair is not None),
        )
        if halves
    ]
    least = 2 ** len(splits)
    if rk.ndim != 2 or rk.shape[1] != width or rk.shape[0] < least:
        raise ValueError(
            f"rankings must have shape (N >= {least}, min(K, D) = {width}), but has shape "
            f"{rk.shape}" + (f" (halved by {', then by '.join(splits)})." if splits else ".")
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
    terms = None if fair is None else fair.terms(y, ptr, theta, gain=options.gain, item_groups=ids)

    def raw(rankings: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        grad = np.zeros(D)
        hess = np.zeros(D)
        if D >= 2 and fair is not None and (fair.trains_empty_queries or rho.max() > 0):
            slope = np.empty(D)
            _fair_kernels.fair_estimate_from_rankings(
                m,
                rho,
                fair.kind,
                terms.aux,
                terms.member,
                fair.weight,
                theta,
                rankings,
                grad,
                hess,
                slope,
            )
            hess += fair.gauss_newton(slope, terms)
        elif D >= 2 and rho.max() > 0:
            _kernels.estimate_from_rankings(m, rho, theta, rankings, grad, hess)
        return grad, hess

    if mode == "denoised":
        n_a = rk.shape[0] // 2
        return pool_halves(raw(rk[:n_a]), raw(rk[n_a:]), n_a, rk.shape[0] - n_a, ptr)
    grad, hess = raw(rk)
    return grad, finish_hessian(hess, mode, grad=grad, group_ptr=ptr)
