"""Numba kernels: Plackett-Luce sampling and the PL-Rank-3 gradient / Hessian estimate.

LOW LEVEL. Nothing here validates its input: every array is contiguous and of the dtype the
public functions in :mod:`gbdt_plrank._training.plrank` converted it to. Shapes are written
``(D,)`` for one query of ``D`` documents, ``(n,)`` for all documents of a dataset.

The estimator is PL-Rank-3's gradient (Oosterhuis 2022) and the Hessian estimate of Kang, de Rijke
and Oosterhuis (2024), in a collapsed form (the documentation's "The estimator" notes): the terms of documents that
a sampled ranking does not place depend on the ranking only through four sums, which are
accumulated over the samples and applied to every document once, so a sample costs O(K) and not
O(D). Rankings are drawn either sequentially from a sum tree (O(K log D) per sample; eight
samples at a time, their descents interleaved) or by an exponential race over all documents
(O(D + K log K) per sample, the Gumbel trick of PL-Rank-3). A query whose margins span more
than ``LOG_FLOOR`` (a sharp policy) takes the wide path: the race in log space and terms
computed from ratios of normalisers, exact at any spread.

Every kernel compiles with ``error_model="numpy"``: no divisor here can be 0 on valid input
(normalisers, sample counts and PL weights are positive), and without Numba's check for a zero
divisor before every division the estimator's loops run 6-9% faster.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

# A query whose margins span at most LOG_FLOOR is "narrow": its PL weights e(d) = exp(m(d) - max m)
# lie in [e^-300, 1] (about 5e-131), so 1/S_k^2 stays below ~1e261 and every term of the
# estimator stays finite. A query whose margins span more is "wide" and takes the wide path
# (below): its rankings are drawn by an exponential race in log space and its terms computed
# from ratios of normalisers, exactly at any spread.
LOG_FLOOR = 300.0

# The wide path's exponential variables E = -log(1 - u) are raised to at least _E_MIN (u = 0 only,
# probability 2^-53), so that log E lies in [log 2^-54, log(53 log 2)] = [-37.43, 3.61]: a race
# key log E - m(d) lies within WIDE_REACH of -m(d). A document more than WIDE_REACH above the
# K-th largest margin then beats all but fewer than K - 1 documents: every sample places it.
_E_MIN = 2.0**-54
WIDE_REACH = 42.0

SAMPLER_TREE = 0
SAMPLER_RACE = 1
SAMPLER_AUTO = 2

#: A sampler's name (:data:`gbdt_plrank._training.options.SAMPLERS`) -> its code in the kernels.
SAMPLER_CODES = {"tree": SAMPLER_TREE, "race": SAMPLER_RACE, "auto": SAMPLER_AUTO}

NOISE_INDEPENDENT = 0
NOISE_LATTICE = 1

#: A noise's name (:data:`gbdt_plrank._training.options.NOISES`) -> its code in the kernels.
NOISE_CODES = {"independent": NOISE_INDEPENDENT, "lattice": NOISE_LATTICE}

# The exponential race costs a logarithm per document and sample, the tree three walks of log2(D)
# levels per placed document. "auto" draws full rankings of 32 or more documents by the race and
# every other ranking by the tree. The tree is the faster at every D and K measured, 3-4 times at
# full rankings (benchmarks/results/sampler_crossover.md), but drawing those by the tree too
# would change the rankings (same law, other draws) wherever K >= 32.
RACE_MIN_D = 32

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_TO_UNIT = 1.0 / 9007199254740992.0  # 2^-53
_ONE = np.uint64(1)

# Nodes at the top of a sum tree (its first 6 levels) that a restore copies in one run, since the
# removed leaves' paths share them (measured: 64 and 128 equally fastest; all of the tree slower).
_RESTORE_TOP = 64

# Samples the tree sampler draws at once, in as many copies of the tree (:func:`_draw_tree_lanes`).
_LANES = 8


# --------------------------------------------------------------------------------------------
# Random numbers: SplitMix64 (Steele, Lea and Flood 2014), one independent stream per query,
# keyed by (seed, round, query index) so that results never depend on thread scheduling.
# :mod:`gbdt_plrank._kernels.cuda` compiles these same functions for the device, so that the GPU
# draws the same doubles.
# --------------------------------------------------------------------------------------------
@njit(cache=True, error_model="numpy", inline="always")
def _mix64(z):
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


@njit(cache=True, error_model="numpy")
def stream_state(seed, round_, group):
    """Initial state of the random stream of one query (all three keys are non-negative)."""
    s = _mix64(np.uint64(seed) + _GOLDEN)
    s = _mix64(s ^ (np.uint64(round_) + _GOLDEN))
    return _mix64(s ^ (np.uint64(group) + _GOLDEN))


@njit(cache=True, error_model="numpy", inline="always")
def _stream(seed, round_, group):
    """A one-element state array holding :func:`stream_state` (what :func:`_uniform` advances)."""
    state = np.empty(1, dtype=np.uint64)
    state[0] = stream_state(seed, round_, group)
    return state


@njit(cache=True, error_model="numpy", inline="always")
def _uniform_at(start, j):
    """The ``j``-th double (from 1) that :func:`_uniform` returns from the state ``start``.

    SplitMix64 is a counter: its j-th output needs no earlier one, so that interleaved samplers
    can draw the numbers of several samples in any order.
    """
    return (_mix64(start + np.uint64(j) * _GOLDEN) >> np.uint64(11)) * _TO_UNIT


@njit(cache=True, error_model="numpy", inline="always")
def _uniform(state):
    """Advance ``state`` (a one-element uint64 array) and return a double in [0, 1)."""
    state[0] += _GOLDEN
    return _uniform_at(state[0], 0)


@njit(cache=True, error_model="numpy")
def kept_queries(seed, round_, keys, fraction):
    """Which queries a round subsampled to ``fraction`` of them estimates (a bool per query).

    Query ``g`` is kept where number 0 of its stream ``(seed, round_, keys[g])`` is below
    ``fraction``: a number no sampler draws (theirs start at number 1), so each query is kept
    with probability ``fraction``, independently of the others and of its own rankings, and
    the same queries are kept whatever their order, the threads or the data's partitions.
    """
    kept = np.empty(keys.shape[0], dtype=np.bool_)
    for g in range(keys.shape[0]):
        kept[g] = _uniform_at(stream_state(seed, round_, keys[g]), 0) < fraction
    return kept


# --------------------------------------------------------------------------------------------
# The uniforms of a query's samples. A sampler reads sample s's uniforms from a row U[s] of
# ``dims`` numbers: one per rank (the tree) or per document (the races). Independent noise takes
# them from the query's stream in order (sample s, number j is the (s dims + j + 1)-th). Lattice
# noise takes sample i of n from a randomly shifted rank-1 lattice (Cranley and Patterson 1976;
# L'Ecuyer and Lemieux 2000): U[i, j] = frac(i g_j / n + c_j), with c_j uniform and g_j coprime
# to n, both drawn per query and number from the stream. Each sample's numbers are then
# independent uniforms (the c_j are), so each ranking is a Plackett-Luce draw and the estimate
# stays unbiased; across the n samples every number j takes each of n equal strata once, so the
# samples cover the policy more evenly than independent draws (the first rank exactly in
# proportion to its probabilities, up to 1/n).
# --------------------------------------------------------------------------------------------
@njit(cache=True, error_model="numpy", inline="always")
def _gcd(a, b):
    while b:
        a, b = b, a % b
    return a


@njit(cache=True, error_model="numpy", inline="always")
def lattice_shift(start, j):
    """The shift c_j of number j of a lattice drawn from the stream state ``start``.

    Also compiled for the device.
    """
    return _uniform_at(start, j + 1)


@njit(cache=True, error_model="numpy", inline="always")
def lattice_generator(start, j, dims, n):
    """The generator g_j of number j (of ``dims``) of a lattice of ``n`` points drawn from the
    stream state ``start``: the first integer coprime to n from 1 + floor(u (n - 1)) on, cyclically
    in [1, n) (1 for n <= 2). Also compiled for the device."""
    if n <= 2:
        return 1
    g = 1 + int(_uniform_at(start, dims + j + 1) * (n - 1))
    while _gcd(g, n) != 1:
        g = g + 1 if g + 1 < n else 1
    return g


@njit(cache=True, error_model="numpy", inline="always")
def _lattice_unit(r, n, shift):
    """frac(r / n + shift) in [0, 1), for the residue r = i g mod n of point i."""
    u = r / n + shift
    return u - 1.0 if u >= 1.0 else u


@njit(cache=True, error_model="numpy", inline="always")
def lattice_point(i, g, shift, n):
    """frac(i g / n + shift) in [0, 1): number j of point i of a lattice of n points (g = g_j,
    shift = c_j). Also compiled for the device."""
    return _lattice_unit((i * g) % n, n, shift)


@njit(cache=True, error_model="numpy", inline="always")
def noise_plan(noise, state, n_samples, halves, dims):
    """How a query's ``n_samples`` samples of ``dims`` numbers each take their uniforms.

    Returns ``(noise, gen, shift, bounds)``: samples ``bounds[h] .. bounds[h + 1]`` form lattice
    h, with generators ``gen[h]`` and shifts ``shift[h]`` (:func:`lattice_generator`,
    :func:`lattice_shift`, lattice h drawn from the stream after lattice h - 1); ``halves``
    makes two independent lattices of the first ``n_samples // 2`` samples and the rest (the
    fairness estimate's halves must be independent). With independent noise the arrays are
    empty and the stream is left for :func:`fill_uniforms` to advance.
    """
    H = 2 if halves else 1
    bounds = np.empty(H + 1, dtype=np.int64)
    bounds[0] = 0
    bounds[H] = n_samples
    if halves:
        bounds[1] = n_samples // 2
    lattice = noise == NOISE_LATTICE
    gen = np.zeros((H if lattice else 0, dims), dtype=np.int64)
    shift = np.zeros((H if lattice else 0, dims))
    if lattice:
        for h in range(H):
            start = state[0]
            n = bounds[h + 1] - bounds[h]
            for j in range(dims):
                shift[h, j] = lattice_shift(start, j)
                gen[h, j] = lattice_generator(start, j, dims, n)
            state[0] = start + np.uint64(2 * dims) * _GOLDEN
    return noise, gen, shift, bounds


@njit(cache=True, error_model="numpy", inline="always")
def fill_uniforms(plan, state, first, U):
    """``U[b]``: the uniforms of sample ``first + b`` of the query (``plan`` of :func:`noise_plan`).

    Independent noise reads the stream in order and advances it, as :func:`_uniform` would one
    number at a time.
    """
    noise, gen, shift, bounds = plan
    n, dims = U.shape
    if noise == NOISE_LATTICE:
        # the rows of each lattice in turn; along a lattice the residue i g mod n grows by g
        # (one division per number and block, not per point: :func:`lattice_point`'s values)
        h = 0
        b = 0
        while b < n:
            while first + b >= bounds[h + 1]:
                h += 1
            size = bounds[h + 1] - bounds[h]
            end = min(n, bounds[h + 1] - first)
            for j in range(dims):
                g = gen[h, j]
                r = ((first + b - bounds[h]) * g) % size
                for row in range(b, end):
                    U[row, j] = _lattice_unit(r, size, shift[h, j])
                    r += g
                    if r >= size:
                        r -= size
            b = end
    else:
        start = state[0]
        for b in range(n):
            for j in range(dims):
                U[b, j] = _uniform_at(start, b * dims + j + 1)
        state[0] = start + np.uint64(n * dims) * _GOLDEN


# --------------------------------------------------------------------------------------------
# Per-query preparation
# --------------------------------------------------------------------------------------------
@njit(cache=True, error_model="numpy")
def shifted_exp(scores, out):
    """``out[d] = exp(max(m(d) - max m, -LOG_FLOOR))``: the PL weights, invariant to shifts.

    The floor never binds on the narrow path (a query spanning more takes the wide path,
    :func:`is_wide`); it only keeps the weights of a wide query positive where this is called.
    """
    top = scores[0]
    for d in range(1, scores.shape[0]):
        if scores[d] > top:
            top = scores[d]
    for d in range(scores.shape[0]):
        out[d] = np.exp(max(scores[d] - top, -LOG_FLOOR))


@njit(cache=True, error_model="numpy")
def _tree_size(D):
    """Leaves P of the sum tree over D documents: a power of two >= D, and >= 2 (the root is then
    never a leaf, and every descent takes at least one step)."""
    P = 2
    while P < D:
        P *= 2
    return P


@njit(cache=True, error_model="numpy")
def _tree_build(tree, e, P):
    """Leaves ``tree[P + d] = e[d]`` (padding leaves 0) and every node the sum of its children."""
    D = e.shape[0]
    for i in range(P):
        tree[P + i] = e[i] if i < D else 0.0
    for i in range(P - 1, 0, -1):
        tree[i] = tree[2 * i] + tree[2 * i + 1]


@njit(cache=True, error_model="numpy", inline="always")
def _tree_set(tree, P, d, value):
    """Set leaf ``d`` and recompute its ancestors from their children (no drift).

    The new sum is carried up in a register (IEEE addition commutes, so ``v + sibling`` is
    bit-identical to ``left + right``) instead of being stored and loaded back at every level.
    Node indices are unsigned here and in the samplers below: Numba then skips the wraparound of
    negative indices (measured: the estimator 10% faster).
    """
    i = np.uint64(P + d)
    tree[i] = value
    v = value
    while i > _ONE:
        v = v + tree[i ^ _ONE]
        i >>= _ONE
        tree[i] = v


@njit(cache=True, error_model="numpy", inline="always")
def _tree_find(tree, P, x):
    """The leaf whose cumulative interval holds ``x`` in [0, root); never an empty leaf.

    Branch-free descent (a random walk defeats branch prediction): go right when ``x`` is past
    the left subtree and the right subtree is not empty.
    """
    i = 1
    while i < P:
        left = tree[2 * i]
        right = (x >= left) & (tree[2 * i + 1] > 0.0)
        x -= left * right
        i = 2 * i + right
    return i - P


@njit(cache=True, error_model="numpy", inline="always")
def _descend(tree, i, x):
    """One level of :func:`_tree_find` without its empty-subtree check: ``(child, x - skipped)``.

    The check costs a load per level; it matters only when rounding carried ``x`` past a left
    sum into a right subtree of sum 0, and then the unchecked descent ends on an empty leaf
    (see :func:`_take`).
    """
    left = tree[i + i]
    right = x >= left
    if right:
        x -= left
    return i + i + np.uint64(right), x


@njit(cache=True, error_model="numpy", inline="always")
def _tree_restore(tree, base, P, ranking):
    """Undo the removals of ``ranking``: copy its leaves' paths back from the pristine ``base``.

    The top :data:`_RESTORE_TOP` nodes, which the paths share, are copied in one run; each path
    is then copied only below them.
    """
    top = min(_RESTORE_TOP, 2 * P)
    for i in range(1, top):
        tree[i] = base[i]
    for k in range(ranking.shape[0]):
        i = np.uint64(P + ranking[k])
        while i >= np.uint64(top):
            tree[i] = base[i]
            i >>= _ONE


@njit(cache=True, error_model="numpy")
def _query_tree(scores):
    """PL weights ``e`` of one query, the sum tree over them, a pristine copy and its size P."""
    D = scores.shape[0]
    e = np.empty(D)
    shifted_exp(scores, e)
    P = _tree_size(D)
    tree = np.empty(2 * P)
    _tree_build(tree, e, P)
    return e, tree, tree.copy(), P


@njit(cache=True, error_model="numpy", inline="always")
def _normalizers_of(ranking, tree, base, P, S):
    """``S[k]``: the PL normaliser before rank k, read off the tree while removing the ranking.

    Every sampler and the explicit-rankings path compute ``S`` this way, so that the same ranking
    always gives bit-identical estimates.
    """
    for k in range(ranking.shape[0]):
        S[k] = tree[1]
        _tree_set(tree, P, ranking[k], 0.0)
    _tree_restore(tree, base, P, ranking)


@njit(cache=True, error_model="numpy", inline="always")
def _target(tree, u, S, k):
    """``S[k]`` = the root (the normaliser before rank k) and the descent target u S[k]."""
    S[k] = tree[1]
    return u * S[k]


@njit(cache=True, error_model="numpy", inline="always")
def _take(tree, P, leaf, x, ranking, k):
    """Place the document at ``leaf``, where the unchecked descent for ``x`` ended, at rank k.

    An unchecked descent that ends on a non-empty leaf never entered an empty subtree (all of
    whose leaves are 0), so it took the path of :func:`_tree_find`; on an empty leaf it is
    redone with the check. The rankings are those of :func:`_tree_find`, bit for bit.
    """
    d = np.int64(leaf - np.uint64(P))
    if tree[leaf] == 0.0:
        d = _tree_find(tree, P, x)
    ranking[k] = d
    _tree_set(tree, P, d, 0.0)


@njit(cache=True, error_model="numpy", inline="always")
def _draw_tree(tree, base, P, u, ranking, S):
    """Sequential PL draw: at each rank pick an unplaced document with probability e(d) / S_k,
    the one at ``u[k]`` of the cumulative weights."""
    for k in range(ranking.shape[0]):
        x = _target(tree, u[k], S, k)
        leaf, y = _ONE, x
        while leaf < np.uint64(P):
            leaf, y = _descend(tree, leaf, y)
        _take(tree, P, leaf, x, ranking, k)
    _tree_restore(tree, base, P, ranking)


@njit(cache=True, error_model="numpy", inline="always")
def _targets4(ts, U, first, S, k):
    """:func:`_target` at rank k of samples ``first .. first + 3``, drawn in the trees ``ts``."""
    return (
        _target(ts[0], U[first, k], S[first], k),
        _target(ts[1], U[first + 1, k], S[first + 1], k),
        _target(ts[2], U[first + 2, k], S[first + 2], k),
        _target(ts[3], U[first + 3, k], S[first + 3], k),
    )


@njit(cache=True, error_model="numpy", inline="always")
def _descend4(ts, ls, ys):
    """One level of :func:`_descend` in each of the four trees ``ts``."""
    l0, y0 = _descend(ts[0], ls[0], ys[0])
    l1, y1 = _descend(ts[1], ls[1], ys[1])
    l2, y2 = _descend(ts[2], ls[2], ys[2])
    l3, y3 = _descend(ts[3], ls[3], ys[3])
    return (l0, l1, l2, l3), (y0, y1, y2, y3)


@njit(cache=True, error_model="numpy", inline="always")
def _take4(ts, P, ls, xs, rankings, first, k):
    """:func:`_take` at rank k of samples ``first .. first + 3``, drawn in the trees ``ts``."""
    _take(ts[0], P, ls[0], xs[0], rankings[first], k)
    _take(ts[1], P, ls[1], xs[1], rankings[first + 1], k)
    _take(ts[2], P, ls[2], xs[2], rankings[first + 2], k)
    _take(ts[3], P, ls[3], xs[3], rankings[first + 3], k)


@njit(cache=True, error_model="numpy")
def _draw_tree_lanes(trees, base, P, U, rankings, S):
    """4 or 8 successive :func:`_draw_tree` samples at once: ``rankings[b]`` drawn in ``trees[b]``.

    A descent is a chain of dependent loads; independent descents interleaved level by level let
    the processor overlap their latencies (8 lanes measured 10% faster than 4, 4 about twice as
    fast as 1). Sample b takes the uniforms ``U[b]``, as :func:`_draw_tree` would, so the
    rankings are the same, bit for bit.
    """
    n, K = rankings.shape
    lo = (trees[0], trees[1], trees[2], trees[3])
    hi = (trees[4], trees[5], trees[6], trees[7])
    root = (_ONE, _ONE, _ONE, _ONE)
    for k in range(K):  # the first level is taken before the loops test (P >= 2)
        xa = _targets4(lo, U, 0, S, k)
        la, ya = _descend4(lo, root, xa)
        if n == 8:
            xb = _targets4(hi, U, 4, S, k)
            lb, yb = _descend4(hi, root, xb)
            while la[0] < np.uint64(P):  # all trees have the same depth
                la, ya = _descend4(lo, la, ya)
                lb, yb = _descend4(hi, lb, yb)
            _take4(hi, P, lb, xb, rankings, 4, k)
        else:
            while la[0] < np.uint64(P):
                la, ya = _descend4(lo, la, ya)
        _take4(lo, P, la, xa, rankings, 0, k)
    for b in range(n):
        _tree_restore(trees[b], base, P, rankings[b])


@njit(cache=True, error_model="numpy", inline="always")
def _sift_down(keys, idx, size, i):
    """Restore the max-heap order of ``keys[idx[:size]]`` below position ``i``."""
    while True:
        c = 2 * i + 1
        if c >= size:
            return
        if c + 1 < size and keys[idx[c + 1]] > keys[idx[c]]:
            c += 1
        if keys[idx[c]] <= keys[idx[i]]:
            return
        idx[i], idx[c] = idx[c], idx[i]
        i = c


@njit(cache=True, error_model="numpy", inline="always")
def _smallest_keys(keys, ranking):
    """``ranking`` = the indices of the K smallest ``keys``, smallest first (K = its length).

    A max-heap of the K best keys seen gives O(D log K); the heap is then sorted in place.
    """
    D = keys.shape[0]
    K = ranking.shape[0]
    for i in range(K):
        ranking[i] = i
    for i in range(K // 2 - 1, -1, -1):
        _sift_down(keys, ranking, K, i)
    for d in range(K, D):
        if keys[d] < keys[ranking[0]]:
            ranking[0] = d
            _sift_down(keys, ranking, K, 0)
    for size in range(K - 1, 0, -1):
        ranking[0], ranking[size] = ranking[size], ranking[0]
        _sift_down(keys, ranking, size, 0)


@njit(cache=True, error_model="numpy")
def _draw_race(e, u, keys, ranking):
    """PL draw by an exponential race: key(d) = Exp(1) / e(d), with Exp(1) = -log(1 - u[d]); the
    K smallest keys, in order.

    Equivalent to PL-Rank-3's Gumbel top-K (Gumbel(m) = -log Exp(1) + m).
    """
    for d in range(e.shape[0]):
        keys[d] = -np.log(1.0 - u[d]) / e[d]
    _smallest_keys(keys, ranking)


@njit(cache=True, error_model="numpy")
def _normalizers_direct(ranking, e, placed, S):
    """``S[k]`` in O(D + K): the unplaced documents' sum, then suffix sums over the ranking.

    Only positive terms are added, so no cancellation; the race sampler already pays O(D) per
    sample. Agrees with :func:`_normalizers_of` to rounding (about 1e-16 relative).
    """
    K = ranking.shape[0]
    for k in range(K):
        placed[ranking[k]] = True
    rest = 0.0
    for d in range(e.shape[0]):
        if not placed[d]:
            rest += e[d]
    for k in range(K - 1, -1, -1):
        rest += e[ranking[k]]
        S[k] = rest
        placed[ranking[k]] = False


# --------------------------------------------------------------------------------------------
# The estimator
# --------------------------------------------------------------------------------------------
@njit(cache=True, error_model="numpy", inline="always")
def _add_sample(ranking, S, e, rho, theta, PR, acc, own, grad, hess):
    """Add one sampled ranking's placed terms to ``grad``/``hess``, and its sums to the totals.

    With PR_i = sum_{k>=i} theta_k rho_{y_k}, RI_i = sum_{k<=i} PR_k/S_k, DR_i = sum theta_k/S_k,
    DN_i = sum 1/S_k, RS_i = sum PR_k/S_k^2 and DS_i = sum theta_k/S_k^2 (Kang et al. 2024, eq. 7-10), a
    document d at rank r contributes, with a = rho_d DR_r - RI_r,

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
    ``(DR, RI, RS + DN RI, DS + DN DR)`` over the samples that did not place it (:func:`_add_sample`).
    Also compiled for the device."""
    g = ed * (rd * dr - ri)
    return g, g + ed * ed * (rs - rd * ds)


@njit(cache=True, error_model="numpy")
def _workspace(D, K):
    """Per-query buffers: S (K,), PR (K+1,), the totals acc (4,) and the placed sums own (D, 4)."""
    return np.empty(K), np.empty(K + 1), np.zeros(4), np.zeros((D, 4))


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
    """:func:`_add_sample` of a wide query, from its log-normalisers ``L`` (:func:`_log_normalizers`).

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


@njit(cache=True, error_model="numpy")
def _uses_tree(D, K, sampler):
    if sampler == SAMPLER_TREE:
        return True
    if sampler == SAMPLER_RACE:
        return False
    return K < D or D < RACE_MIN_D


@njit(cache=True, error_model="numpy")
def _sampler(scores, K, n_samples, sampler):
    """One query's PL weights ``e``, the sampler's buffers, and which sampler draws.

    Returns ``(e, trees, base, P, use_tree, keys, placed)``. When the tree draws, ``base`` is the
    pristine sum tree over P leaves and the rows of ``trees`` are its working copies:
    :data:`_LANES` of them for :func:`_draw_tree_lanes` when the draws outweigh copying the tree
    that often (``P <= 8 n_samples K``, measured), else one. When the race draws, ``keys`` (D,)
    and ``placed`` (D,) are its buffers. The other sampler's buffers are empty.
    """
    D = scores.shape[0]
    e = np.empty(D)
    shifted_exp(scores, e)
    P = _tree_size(D)
    use_tree = _uses_tree(D, K, sampler)
    size = 2 * P if use_tree else 0
    base = np.empty(size)
    trees = np.empty((_LANES if P <= 8 * n_samples * K else 1, size))
    if use_tree:
        _tree_build(base, e, P)
        for b in range(trees.shape[0]):  # element by element: the row assignment
            for i in range(size):  # compiles three times as long
                trees[b, i] = base[i]
    keys = np.empty(0 if use_tree else D)
    placed = np.zeros(0 if use_tree else D, dtype=np.bool_)
    return e, trees, base, P, use_tree, keys, placed


@njit(cache=True, error_model="numpy", inline="always")
def _draw(use_tree, trees, base, P, e, U, keys, placed, rankings, S):
    """PL rankings into the rows of ``rankings`` and their normalisers into ``S``, row s from the
    uniforms ``U[s]``.

    The same rankings as one :func:`_draw_tree` (or :func:`_draw_race`) per row in turn; with its
    :data:`_LANES` working copies, the tree draws eight rows at a time, then four, then one
    (:func:`_draw_tree_lanes`).
    """
    n = rankings.shape[0]
    if use_tree:
        first = 0
        while n - first >= 4 and trees.shape[0] == _LANES:
            lanes = 8 if n - first >= 8 else 4
            _draw_tree_lanes(
                trees,
                base,
                P,
                U[first : first + lanes],
                rankings[first : first + lanes],
                S[first : first + lanes],
            )
            first += lanes
        for s in range(first, n):
            _draw_tree(trees[0], base, P, U[s], rankings[s], S[s])
    else:
        for s in range(n):
            _draw_race(e, U[s], keys, rankings[s])
            _normalizers_direct(rankings[s], e, placed, S[s])


@njit(cache=True, error_model="numpy")
def _estimate_query(scores, rho, theta, n_samples, state, sampler, noise, grad, hess):
    """Sample ``n_samples`` PL rankings of one query and write the loss gradient and Hessian."""
    if is_wide(scores):
        _estimate_query_wide(scores, rho, theta, n_samples, state, noise, grad, hess)
    else:
        _estimate_narrow_query(scores, rho, theta, n_samples, state, sampler, noise, grad, hess)


@njit(cache=True, error_model="numpy")
def _estimate_narrow_query(scores, rho, theta, n_samples, state, sampler, noise, grad, hess):
    """:func:`_estimate_query` of a narrow query (not :func:`is_wide`).

    Rankings are drawn :data:`_LANES` at a time (:func:`_draw`) and added in the order drawn.
    """
    D = scores.shape[0]
    K = min(theta.shape[0], D)
    e, trees, base, P, use_tree, keys, placed = _sampler(scores, K, n_samples, sampler)
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

    Groups with fewer than two documents or with ``rho`` all 0 get exactly 0; ``rho`` may be
    signed (fairness rewards): every formula is linear in ``rho``.
    """
    for g in prange(group_ptr.shape[0] - 1):
        lo = group_ptr[g]
        hi = group_ptr[g + 1]
        if hi - lo < 2 or not has_reward(rho[lo:hi]):
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

    A wide group's rows (:func:`is_wide`, with two or more documents and a reward) are left as
    they are, for :func:`estimate_groups` to estimate; every other group's are those of
    :func:`estimate_groups`, bit for bit. Compiled without the wide path, which a training whose
    queries all stay narrow never runs (benchmarks/results/compile_time.md).
    """
    for g in prange(group_ptr.shape[0] - 1):
        lo = group_ptr[g]
        hi = group_ptr[g + 1]
        wide[g] = False
        if hi - lo < 2 or not has_reward(rho[lo:hi]):
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
# (the Hessian mode "denoised", gbdt_plrank._training.plrank.estimate). The CUDA kernels compile
# pool_query for the device.
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
        grad[d] = w_a * grad_a[d] + w_b * grad_b[d]
        h = w_a * hess_a[d] + w_b * hess_b[d]
        hess[d] = h
        S += h * h
        diff = hess_a[d] - hess_b[d]
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


# --------------------------------------------------------------------------------------------
# Gains and rank weights
# --------------------------------------------------------------------------------------------
@njit(parallel=True, cache=True, error_model="numpy")
def ideal_normalise(rho, group_ptr, theta, out):
    """``out = rho / IDCG@K`` per group, the ideal DCG of rho's positive part (groups with IDCG
    0 keep 0): the NDCG normalisation, of signed rewards too (for rho >= 0, rho's own)."""
    for g in prange(group_ptr.shape[0] - 1):
        lo = group_ptr[g]
        hi = group_ptr[g + 1]
        ordered = np.sort(rho[lo:hi])[::-1]
        ideal = 0.0
        for k in range(min(theta.shape[0], hi - lo)):
            ideal += theta[k] * max(ordered[k], 0.0)
        for d in range(lo, hi):
            out[d] = rho[d] / ideal if ideal > 0.0 else 0.0
