r"""The logging policy's propensities, and a policy's expected observation of every row.

A policy :math:`\pi` observes row :math:`d` per session of its query with probability
:math:`w_\pi(d) = \mathbb{E}_{y\sim\pi}[\theta_{\mathrm{rank}_y(d)}]` (:math:`\theta_k = 0`
beyond the display): the logging policy's is the propensity :math:`\rho_d` that the rewards
divide by, a new policy's is what its off-policy value weighs. For a Plackett-Luce policy it is
estimated from its placement probabilities (``expected_exposure(method="placement")``), positive
for every row the policy can show; for a ranker deployed by its scores it is :math:`\theta` at
the row's rank. Given as an array, it is checked, and a Monte-Carlo estimate by counting is
pooled with the log's own displays (``propensity_samples``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._util.validation import as_finite_vector, check_at_least, check_positive_int
from ._log import check_qid

__all__ = [
    "DEFAULT_POLICY_SAMPLES",
    "checked_propensities",
    "no_samples_without_propensities",
    "observation",
]

#: Rankings per query of a Plackett-Luce policy's placement-probability observation.
DEFAULT_POLICY_SAMPLES = 1000


def checked_propensities(
    propensities: Any,
    propensity_samples: Any,
    *,
    clicks: np.ndarray,
    seen: np.ndarray,
    sessions: np.ndarray,
) -> np.ndarray:
    r"""Given propensities :math:`\rho_d` as the estimators divide by them.

    ``propensities`` checked (float64, one per row, finite and ``>= 0``) and taken as exact,
    so a clicked row's 0 is refused; or, with ``propensity_samples`` :math:`M`, taken as the
    Monte-Carlo mean over :math:`M` rankings of the logging policy and pooled with the
    :math:`S_q` logged sessions of the row's query (``sessions``), rankings of the same policy,

    .. math::

        \tilde\rho_d = \frac{M \rho_d + \sum_{s=1}^{S_q} \theta_{\mathrm{rank}_s(d)}}
                             {M + S_q}

    (``seen`` holds the sums over the log): positive for every clicked row, and unbiased but
    for the rows none of the :math:`M + S_q` rankings shows (the Notes of
    :func:`~gbdt_plrank.clicks.click_rewards` prove it).
    """
    n_rows = clicks.size
    rho = as_finite_vector("propensities", propensities)
    if rho.shape != (n_rows,):
        raise ValueError(
            f"propensities must have shape ({n_rows},) (one per row), but has shape {rho.shape}."
        )
    check_at_least("propensities", rho, 0)
    if propensity_samples is not None:
        M = check_positive_int("propensity_samples", propensity_samples)
        return (M * rho + seen) / (M + sessions)
    unseen = np.flatnonzero((clicks > 0) & (rho <= 0))
    if unseen.size:
        d = int(unseen[0])
        raise ValueError(
            f"propensities must be > 0 for every clicked row, but row {d} has "
            f"{int(clicks[d])} click(s) and propensities[{d}] is {float(rho[d])!r} "
            f"(a Monte-Carlo estimate such as expected_exposure's: give its "
            f"n_samples as propensity_samples to pool it with the log's displays, "
            f"or the logging policy itself as logging_policy)."
        )
    return rho


def no_samples_without_propensities(propensity_samples: Any) -> None:
    """``propensity_samples`` counts the rankings behind given propensities: refused alone."""
    if propensity_samples is not None:
        raise ValueError(
            f"propensity_samples counts the logging policy's rankings behind "
            f"propensities, but propensities is None (propensity_samples="
            f"{propensity_samples!r})."
        )


def _ranking_observation(scores: np.ndarray, qid: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """``theta`` at every row's rank in the ranking of its query by descending score (ties in
    row order), 0 beyond ``theta``."""
    order = np.lexsort((np.arange(scores.size), -scores, qid))
    q = qid[order]
    starts = np.flatnonzero(np.r_[True, q[1:] != q[:-1]])
    rank = np.arange(q.size) - np.repeat(starts, np.diff(np.r_[starts, q.size]))
    w = np.zeros(scores.size)
    w[order] = np.where(rank < theta.size, theta[np.minimum(rank, theta.size - 1)], 0.0)
    return w


def observation(
    name: str,
    policy: Any,
    *,
    X: Any,
    qid: np.ndarray,
    theta: np.ndarray,
    n_samples: int,
    seed: int,
) -> np.ndarray:
    r"""Every row's expected observation per session under ``policy`` (given as ``name``).

    A Plackett-Luce policy (an object with ``expected_exposure``, such as
    :class:`~gbdt_plrank.PLRankRanker`): its placement-probability exposure with ``theta`` as
    rank weights from ``n_samples`` rankings per query; any other fitted model with ``predict``:
    the ranking by its scores, deployed as it is, :math:`\theta` at each row's rank. ``X`` is
    required for either.

    Raises
    ------
    ValueError
        Without ``X``, or naming what ``policy`` is when it is neither.
    """
    if not hasattr(policy, "predict"):
        raise ValueError(
            f"{name} must be a fitted ranker (a Plackett-Luce policy with "
            f"expected_exposure, such as PLRankRanker, or a model with predict, "
            f"ranked by its scores), but a {type(policy).__name__} is given."
        )
    if X is None:
        raise ValueError(
            f"X must be given with a ranker as {name} (its expected observation), but it is None."
        )
    if hasattr(policy, "expected_exposure"):
        return policy.expected_exposure(
            X, qid, n_samples=n_samples, weights=theta, random_state=seed, method="placement"
        )
    scores = as_finite_vector(f"{name}.predict(X)", policy.predict(X))
    check_qid(qid, scores.shape[0])
    return _ranking_observation(scores, qid, theta)
