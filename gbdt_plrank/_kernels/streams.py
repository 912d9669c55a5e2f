"""Numba kernels: the random numbers of the estimator, one stream per query, and lattice noise.

LOW LEVEL, as every module of :mod:`gbdt_plrank._kernels`: nothing here validates its input.
A query's stream is SplitMix64 keyed by (seed, round, query key), so that results never depend on
thread scheduling; a sampler reads each sample's uniforms from a row filled by
``fill_uniforms``, independently or from a randomly shifted lattice (``noise_plan``).
:mod:`gbdt_plrank._kernels.cuda` compiles these same functions for the device.
"""

from __future__ import annotations

import numpy as np
from numba import njit

NOISE_INDEPENDENT = 0
NOISE_LATTICE = 1

#: A noise's name (:data:`gbdt_plrank._training.options.NOISES`) -> its code in the kernels.
NOISE_CODES = {"independent": NOISE_INDEPENDENT, "lattice": NOISE_LATTICE}

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_TO_UNIT = 1.0 / 9007199254740992.0  # 2^-53


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
