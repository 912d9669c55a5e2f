"""Slow, obvious references written from the estimator's formulas (plain NumPy and Python loops).

The formulas are those of :func:`gbdt_plrank.plrank_grad_hess` and docs/research/estimator.md:
the PL-Rank-3 gradient (Oosterhuis, SIGIR 2022) and the Hessian of Kang, de Rijke and Oosterhuis
(SIGIR 2024).

Normalisers S_k are summed afresh over the unplaced documents (``math.fsum``), never obtained by
subtraction, so the references stay exact when margins lie hundreds apart.

Nothing here shares code with the package: the gains, the rank weights, the normalisers and the
estimator are written out again from the formulas.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np


def rewards(labels, *, K, metric="ndcg", gain="exp"):
    """(rho, theta) of one query, straight from the definitions."""
    labels = np.asarray(labels, dtype=float)
    D = len(labels)
    if metric == "precision":  # precision@K of a query shorter than K divides by its length
        return (labels > 0) * K / min(K, D), np.full(K, 1.0 / K)
    theta = np.array([1.0 / math.log2(k + 1) for k in range(1, K + 1)])
    rho = 2.0**labels - 1.0 if gain == "exp" else labels.copy()
    if metric == "ndcg":
        ideal = sum(theta[k] * g for k, g in enumerate(sorted(rho, reverse=True)[: min(K, D)]))
        rho = rho / ideal if ideal > 0 else 0.0 * rho
    return rho, theta


def ranking_estimate(scores, rho, theta, ranking):
    """d R / d m and d^2 R / d m^2 (reward, not loss) of one ranking, document by document."""
    scores = np.asarray(scores, dtype=float)
    e = np.exp(scores - scores.max())
    D = len(e)
    K = len(ranking)
    S = [math.fsum(e[d] for d in range(D) if d not in ranking[:k]) for k in range(K)]
    PR = [sum(theta[j] * rho[ranking[j]] for j in range(i, K)) for i in range(K + 1)]
    grad = np.zeros(D)
    hess = np.zeros(D)
    for d in range(D):
        placed = d in ranking
        r = ranking.index(d) if placed else K - 1  # 0-based last rank included in the sums
        RI = sum(PR[k] / S[k] for k in range(r + 1))
        DR = sum(theta[k] / S[k] for k in range(r + 1))
        DN = sum(1.0 / S[k] for k in range(r + 1))
        RS = sum(PR[k] / S[k] ** 2 for k in range(r + 1))
        DS = sum(theta[k] / S[k] ** 2 for k in range(r + 1))
        PRd = PR[r + 1] if placed else 0.0
        a = rho[d] * DR - RI
        X1 = (1 + placed) * a - DN * PRd
        X2 = (RS - rho[d] * DS) - DN * a
        grad[d] = PRd + e[d] * a
        hess[d] = PRd + e[d] * X1 + e[d] ** 2 * X2
    return grad, hess


def estimate(scores, rho, theta, rankings):
    """Mean of :func:`ranking_estimate` over the rankings, as loss derivatives (negated)."""
    parts = [ranking_estimate(scores, rho, theta, list(r)) for r in rankings]
    return -np.mean([g for g, _ in parts], axis=0), -np.mean([h for _, h in parts], axis=0)


def remaining_softmax(scores, unplaced):
    """PL probabilities of the ``unplaced`` documents (0 elsewhere), about their own maximum.

    Exact at any spread of the margins: the largest remaining weight is 1, so the normaliser is
    at least 1 and nothing overflows; only probabilities below 1e-308 underflow to 0.
    """
    top = scores[unplaced].max()
    w = np.exp(np.where(unplaced, scores - top, -np.inf))
    return w / math.fsum(w)


def partial_rankings(scores, K):
    """Every partial ranking of length min(K, D) with its PL probability."""
    scores = np.asarray(scores, dtype=float)
    D = len(scores)
    out = []
    for y in itertools.permutations(range(D), min(K, D)):
        p = 1.0
        unplaced = np.ones(D, dtype=bool)
        for d in y:
            p *= remaining_softmax(scores, unplaced)[d]
            unplaced[d] = False
        out.append((y, p))
    return out


def exact_derivatives(scores, rho, theta):
    """Exact R, dR/dm and diag d^2R/dm^2 by enumeration and the score-function identities.

    dR/dm_d = E[r(y) dlog pi / dm_d];  d2R/dm_d^2 = E[r(y) ((dlog pi/dm_d)^2 + d2log pi/dm_d^2)],
    with dlog pi/dm_d = sum_k [1(y_k = d) - 1(d unplaced before k) e_d / S_k] and
    d2log pi/dm_d^2 = -sum_k 1(d unplaced before k) (e_d/S_k - e_d^2/S_k^2).
    """
    scores = np.asarray(scores, dtype=float)
    D = len(scores)
    R = 0.0
    grad = np.zeros(D)
    hess = np.zeros(D)
    for y, p in partial_rankings(scores, len(theta)):
        reward = sum(theta[k] * rho[d] for k, d in enumerate(y))
        g1 = np.zeros(D)
        g2 = np.zeros(D)
        unplaced = np.ones(D, dtype=bool)
        for d_k in y:
            q = remaining_softmax(scores, unplaced)
            g1 -= q
            g2 -= q - q**2
            g1[d_k] += 1.0
            unplaced[d_k] = False
        R += p * reward
        grad += p * reward * g1
        hess += p * reward * (g1**2 + g2)
    return R, grad, hess


def expected_reward(scores, rho, theta):
    """Exact R by enumeration (for finite differences)."""
    return sum(
        p * sum(theta[k] * rho[d] for k, d in enumerate(y))
        for y, p in partial_rankings(scores, len(theta))
    )


def neuralsort_loss(s, y, K, tau):
    """1 - relaxed NDCG@K from the full NeuralSort matrix (Grover et al. 2019, eq. 5), plainly."""
    n = len(s)
    A = np.abs(s[:, None] - s[None, :])
    B = A.sum(axis=1)
    g = 2.0**y - 1.0
    theta = 1.0 / np.log2(np.arange(2, n + 2))
    ideal = float(np.sum(theta[:K] * np.sort(g)[::-1][:K]))
    if ideal == 0:
        return 0.0
    out = 0.0
    for i in range(1, min(K, n) + 1):
        z = ((n + 1 - 2 * i) * s - B) / tau
        p = np.exp(z - z.max())
        p /= p.sum()
        out += theta[i - 1] * p @ g
    return 1.0 - out / ideal


def exact_exposure(scores, theta):
    """Exact E(d) = E_y[theta at d's rank] by enumeration (theta of length K)."""
    E = np.zeros(len(scores))
    for y, p in partial_rankings(scores, len(theta)):
        for k, d in enumerate(y):
            E[d] += p * theta[k]
    return E


def placement_exposure(scores, theta, ranking):
    """One ranking's placement-probability exposure: for each rank k of ``ranking``, theta[k]
    times every unplaced document's probability of taking it given the documents above."""
    scores = np.asarray(scores, dtype=float)
    out = np.zeros(len(scores))
    unplaced = np.ones(len(scores), dtype=bool)
    for k, d in enumerate(ranking):
        out += theta[k] * remaining_softmax(scores, unplaced)
        unplaced[d] = False
    return out


def counted_exposure(scores, theta, ranking):
    """One ranking's counted exposure: theta at each placed document's rank, 0 elsewhere."""
    out = np.zeros(len(scores))
    for k, d in enumerate(ranking):
        out[d] += theta[k]
    return out


def equal_exposure_target(labels, theta):
    """eps(d): mean of theta (0 beyond its length) over the ideal ranks of d's grade."""
    labels = np.asarray(labels, dtype=float)
    D = len(labels)
    weights = np.zeros(D)
    weights[: min(D, len(theta))] = theta[:D]
    ideal = np.sort(labels)[::-1]
    return np.array([weights[ideal == g].mean() for g in labels])


class Loss(NamedTuple):
    """A fairness loss of one query's exposures E: its value F(E) and its slope dF/dE (D,)."""

    value: Callable[[np.ndarray], float]
    slope: Callable[[np.ndarray], np.ndarray]


def ee_loss(target):
    """EE-L = sum_d (E(d) - target(d))^2."""
    t = np.asarray(target, dtype=float)
    return Loss(lambda E: float(np.sum((E - t) ** 2)), lambda E: 2.0 * (E - t))


def disparity_loss(g):
    """D = 1/(n(n-1)) sum_{i != j} (E_i g_j - E_j g_i)^2, whose slope in E_d is
    dD/dE_d = 4/(n(n-1)) sum_j g_j (E_d g_j - E_j g_d)."""
    g = np.asarray(g, dtype=float)
    n = len(g)
    pairs = [(i, j) for i in range(n) for j in range(n) if i != j]

    def value(E):
        return sum((E[i] * g[j] - E[j] * g[i]) ** 2 for i, j in pairs) / (n * (n - 1))

    def slope(E):
        return np.array(
            [
                4.0 / (n * (n - 1)) * sum(g[j] * (E[d] * g[j] - E[j] * g[d]) for j in range(n))
                for d in range(n)
            ]
        )

    return Loss(value, slope)


def group_disparity_loss(g, groups):
    """GD = sum over pairs a < b of groups with merit of (X_a/M_a - X_b/M_b)^2, X sums E and M
    sums g over a group; dGD/dE_d = 2 sum_{b != a(d), M_b > 0} (X_a/M_a - X_b/M_b) / M_a for d in
    a group a with merit, 0 otherwise."""
    g = np.asarray(g, dtype=float)
    groups = np.asarray(groups)
    ids = sorted(set(groups.tolist()))
    M = {a: g[groups == a].sum() for a in ids}
    merit = [a for a in ids if M[a] > 0]

    def share(E, a):
        return E[groups == a].sum() / M[a]

    def value(E):
        return sum((share(E, a) - share(E, b)) ** 2 for a, b in itertools.combinations(merit, 2))

    def slope(E):
        out = np.zeros(len(g))
        for d in range(len(g)):
            a = groups[d]
            if M[a] > 0:
                out[d] = sum(2.0 * (share(E, a) - share(E, b)) / M[a] for b in merit if b != a)
        return out

    return Loss(value, slope)


def fair_objective(scores, rho, loss, weight, theta):
    """Exact E[sum_k theta_k rho_{y_k}] - weight * F(E) for a :class:`Loss` F."""
    E = exact_exposure(scores, theta)
    return expected_reward(scores, rho, theta) - weight * loss.value(E)


def fair_estimate(scores, rho, loss, weight, theta, rankings, *, crossfit=True):
    """The fairness estimate written out: (loss grad, loss Hessian first part, dE(d)/dm(d)).

    The rankings' first half (N // 2 rows) and second half each give a Monte-Carlo exposure;
    with ``crossfit`` each half's terms use the rewards rho - weight dF/dE of the other half's
    exposure, without it every ranking uses the exposure of all N rankings (the same-sample
    estimate, which is biased).
    """
    rankings = [list(r) for r in rankings]
    N, D = len(rankings), len(scores)

    def exposure(rs):
        E = np.zeros(D)
        for r in rs:
            for k, d in enumerate(r):
                E[d] += theta[k]
        return E / len(rs)

    halves = [rankings[: N // 2], rankings[N // 2 :]]
    grad = np.zeros(D)
    hess = np.zeros(D)
    for h, own in enumerate(halves):
        source = halves[1 - h] if crossfit else rankings
        reward = np.asarray(rho, dtype=float) - weight * loss.slope(exposure(source))
        for r in own:
            g, hh = ranking_estimate(scores, reward, theta, r)
            grad -= g / N
            hess -= hh / N
    slope = np.zeros(D)
    for d in range(D):
        unit = np.zeros(D)
        unit[d] = 1.0
        slope[d] = np.mean([ranking_estimate(scores, unit, theta, r)[0][d] for r in rankings])
    return grad, hess, slope


# ------------------------------------------------------------------------------------------
# The samplers' uniforms: SplitMix64 (Steele, Lea and Flood 2014) and the shifted lattice
# ------------------------------------------------------------------------------------------
_MASK = 2**64 - 1
_GOLDEN = 0x9E3779B97F4A7C15


def uniform_at(start, j):
    """The j-th double of the SplitMix64 stream at state ``start``, in Python integers."""
    z = (int(start) + j * _GOLDEN) & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return ((z ^ (z >> 31)) >> 11) * 2.0**-53


def independent_uniforms(state, n, dims):
    """(n, dims) independent uniforms: the numbers 1 .. n dims of the stream ``state[0]``
    (a one-element uint64 array), which then moves past them."""
    start = int(state[0])
    U = np.array([[uniform_at(start, b * dims + j + 1) for j in range(dims)] for b in range(n)])
    state[0] = np.uint64((start + n * dims * _GOLDEN) & _MASK)
    return U.reshape(n, dims)


def lattice_uniforms(start, n, dims):
    """(n, dims): the randomly shifted rank-1 lattice of n points drawn from the stream ``start``.

    Number j: shift c_j = the (j+1)-th double, generator g_j = the first integer coprime to n
    from 1 + floor(u (n - 1)) on (u the (dims + j + 1)-th double), cyclically in [1, n);
    point i = frac(i g_j / n + c_j).
    """
    U = np.empty((n, dims))
    for j in range(dims):
        c = uniform_at(start, j + 1)
        g = 1
        if n > 2:
            g = 1 + int(uniform_at(start, dims + j + 1) * (n - 1))
            while math.gcd(g, n) != 1:
                g = g + 1 if g + 1 < n else 1
        for i in range(n):
            U[i, j] = ((i * g) % n) / n + c
            U[i, j] -= U[i, j] >= 1.0
    return U
