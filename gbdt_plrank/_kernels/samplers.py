"""Numba kernels: Plackett-Luce sampling of one query's rankings and their normalisers.

LOW LEVEL, as every module of :mod:`gbdt_plrank._kernels`: nothing here validates its input.
Rankings are drawn either sequentially from a sum tree over the PL weights (O(K log D) per
sample; eight samples at a time, their descents interleaved) or by an exponential race over all
documents (O(D + K log K) per sample, the Gumbel trick of PL-Rank-3); ``_draw`` draws a block
of samples with the sampler that ``_sampler`` chose, from the uniforms of
:mod:`gbdt_plrank._kernels.streams`. A query whose margins span more than ``LOG_FLOOR`` is
sampled in log space instead (:mod:`gbdt_plrank._kernels.wide_margins`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

# A query whose margins span at most LOG_FLOOR is "narrow": its PL weights e(d) = exp(m(d) - max m)
# lie in [e^-300, 1] (about 5e-131), so 1/S_k^2 stays below ~1e261 and every term of the estimator
# stays finite. A query whose margins span more is "wide" and takes the wide path
# (gbdt_plrank._kernels.wide_margins): its rankings are drawn by an exponential race in log space
# and its terms computed from ratios of normalisers, exactly at any spread.
LOG_FLOOR = 300.0

SAMPLER_TREE = 0
SAMPLER_RACE = 1
SAMPLER_AUTO = 2

#: A sampler's name (:data:`gbdt_plrank._training.options.SAMPLERS`) -> its code in the kernels.
SAMPLER_CODES = {"tree": SAMPLER_TREE, "race": SAMPLER_RACE, "auto": SAMPLER_AUTO}

# The exponential race costs a logarithm per document and sample, the tree three walks of log2(D)
# levels per placed document. "auto" draws full rankings of 32 or more documents by the race and
# every other ranking by the tree. The tree is the faster at every D and K measured, 3-4 times at
# full rankings (benchmarks/results/sampler_crossover.md), but drawing those by the tree too
# would change the rankings (same law, other draws) wherever K >= 32.
RACE_MIN_D = 32

_ONE = np.uint64(1)

# Nodes at the top of a sum tree (its first 6 levels) that a restore copies in one run, since the
# removed leaves' paths share them (measured: 64 and 128 equally fastest; all of the tree slower).
_RESTORE_TOP = 64

# Samples the tree sampler draws at once, in as many copies of the tree (:func:`_draw_tree_lanes`).
_LANES = 8


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
# The sampler of a query, and a block of its samples
# --------------------------------------------------------------------------------------------
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
