r"""A new policy's value, estimated from another (logging) policy's click log.

:func:`estimate_policy_value` averages, over the logged sessions, the new policy's expected
observation of each row times a reward estimator's terms (:data:`REWARD_ESTIMATORS`, those that
value policies); :class:`PolicyValue` holds the estimate, its standard error and its interval.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._util.docs import shared_entries
from .._util.validation import as_finite_vector, check_positive_int, check_seed, is_number
from ._log import ClickLog, check_rows
from ._propensities import DEFAULT_POLICY_SAMPLES, observation
from ._rewards import (
    CLICK_PARAMETERS,
    RewardEstimator,
    estimator_entries,
    regression_estimate,
    reward_estimator,
    reward_terms,
)

__all__ = ["PolicyValue", "estimate_policy_value"]


@dataclass(frozen=True)
class PolicyValue:
    """A policy's estimated expected clicks per session, with its standard error.

    Attributes
    ----------
    value : float
        The estimate.
    stderr : float
        Its standard error (over the sessions, the log's queries fixed).
    estimator : str
        The reward estimator's name (:data:`REWARD_ESTIMATORS`: one that values policies).
    n_sessions : int
        The logged sessions it averages.
    """

    value: float
    stderr: float
    estimator: str
    n_sessions: int

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        """The normal interval ``value -+ z stderr`` at ``level`` in (0, 1)."""
        from scipy.stats import norm

        if not is_number(level) or not 0 < level < 1:
            raise ValueError(f"level must be a number in (0, 1), but {level!r} is given.")
        z = float(norm.ppf(0.5 + level / 2))
        return self.value - z * self.stderr, self.value + z * self.stderr


def estimate_policy_value(
    log: ClickLog,
    policy: Any,
    *,
    X: Any = None,
    qid: Any,
    position_bias: Any,
    propensities: Any = None,
    propensity_samples: int | None = None,
    logging_policy: Any = None,
    estimator: str = "policy-aware",
    regression: Any = None,
    n_samples: int = DEFAULT_POLICY_SAMPLES,
    seed: int = 0,
) -> PolicyValue:
    r"""A new policy's expected clicks per session, estimated from another (logging) policy's log.

    Under the position-based model a policy that observes row :math:`d` with probability
    :math:`w_\pi(d)` per session gets :math:`V(\pi) = \sum_q S_q \sum_{d \in q} w_\pi(d)\,
    \gamma_d / \sum_q S_q` clicks per session (:math:`S_q` sessions logged for query :math:`q`),
    estimated by the mean over the logged sessions of :math:`w_\pi` times the estimator's terms.
    The formula, when it is unbiased, the standard error: :doc:`/guide/clicks`, "The value of a
    new policy, estimated from the log".

    Parameters
    ----------
    log : ClickLog
        The logging policy's clicks.
    policy : fitted ranker or array of shape (n_rows,)
        A Plackett-Luce policy (its placement probabilities from ``n_samples`` rankings per
        query), any model with ``predict`` (its ranking by score), or :math:`w_\pi` in [0, 1].
    X : array-like, DataFrame or sparse matrix of shape (n_rows, n_features) or None
        The rows' features (by position), for a ranker and the doubly robust regression.
    qid : array of shape (n_rows,)
        The rows' query ids.
    .. click-parameters:: position_bias propensities propensity_samples logging_policy regression
    estimator : str, default "policy-aware"
        A name of :data:`REWARD_ESTIMATORS` that values policies:

        .. reward-estimators:: policy-values
    n_samples, seed : int, default 1000 and 0
        Rankings per query of a Plackett-Luce policy's observation; the seed of those rankings,
        of ``logging_policy``'s and of the regression's query folds.

    Returns
    -------
    PolicyValue
        The estimate, its standard error and its intervals.

    Raises
    ------
    ValueError
        For a row the new policy observes and the logger never shows (:math:`\rho_d = 0`), a bad
        policy, an empty log, and bad values as :func:`click_rewards`, naming them.
    """
    spec = reward_estimator(estimator, values_policies=True)
    n_samples = check_positive_int("n_samples", n_samples)
    seed = check_seed("seed", seed)
    qid = np.asarray(qid)
    if qid.ndim != 1:
        raise ValueError(f"qid must be one-dimensional, but has shape {qid.shape}.")
    n_rows = qid.shape[0]
    check_rows(log, n_rows)
    log.check_queries(qid)
    if len(log) == 0:
        raise ValueError(
            "the log must have sessions to estimate a policy's value from, but it is empty."
        )
    terms = reward_terms(
        log,
        n_rows,
        spec,
        position_bias=position_bias,
        propensities=propensities,
        propensity_samples=propensity_samples,
        logging_policy=logging_policy,
        qid=qid,
        X=X,
        seed=seed,
    )
    w = _new_observation(policy, X=X, qid=qid, theta=terms.theta, n_samples=n_samples, seed=seed)
    rho = terms.rho
    blind = np.flatnonzero((w > 0) & (rho <= 0) & (terms.sessions > 0))
    if blind.size:
        d = int(blind[0])
        hint = (
            ""
            if propensity_samples is None or logging_policy is not None
            else ", and more propensity_samples find the rows it shows rarely"
        )
        raise ValueError(
            f"the new policy observes row {d} (expected observation "
            f"{float(w[d])!r}) that the logging policy never shows (its propensity "
            f"from {terms.source} is {float(rho[d])!r}): nothing in the log "
            f"estimates its clicks; the logging policy must show every row the new "
            f"one can (a stochastic logger){hint}."
        )
    gamma = regression_estimate(
        log, n_rows, spec, regression, X=X, qid=qid, theta=terms.theta, seed=seed
    )
    return _session_mean(log, qid, spec, w=w, gamma=gamma, theta=terms.theta, rho=rho)


def _new_observation(
    policy: Any, *, X: Any, qid: np.ndarray, theta: np.ndarray, n_samples: int, seed: int
) -> np.ndarray:
    """The new policy's expected observation of every row per session (checked when given)."""
    if hasattr(policy, "predict"):
        return observation(
            "policy", policy, X=X, qid=qid, theta=theta, n_samples=n_samples, seed=seed
        )
    if not _numbers(policy):
        raise ValueError(
            f"policy must be a fitted ranker (a Plackett-Luce policy with "
            f"expected_exposure, such as PLRankRanker, or a model with predict, "
            f"ranked by its scores) or one expected observation per row, but a "
            f"{type(policy).__name__} is given."
        )
    n_rows = qid.shape[0]
    w = as_finite_vector("policy", policy)
    if w.shape != (n_rows,):
        raise ValueError(
            f"policy must be a ranker or one expected observation per row, "
            f"shape ({n_rows},), but has shape {w.shape}."
        )
    bad = np.flatnonzero((w < 0) | (w > 1))
    if bad.size:
        i = int(bad[0])
        raise ValueError(
            f"policy must hold expected observations in [0, 1] (the probability "
            f"that a session sees the row), but policy[{i}] is {float(w[i])!r}."
        )
    return w


def _numbers(values: Any) -> bool:
    """Whether ``values`` is a sequence or array of numbers (not a string, a mapping, a set)."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
        return False
    try:
        return np.asarray(values).dtype.kind in "biuf"
    except ValueError:  # a ragged list
        return False


def _session_mean(
    log: ClickLog,
    qid: np.ndarray,
    spec: RewardEstimator,
    *,
    w: np.ndarray,
    gamma: np.ndarray,
    theta: np.ndarray,
    rho: np.ndarray,
) -> PolicyValue:
    """The mean of the sessions' values and its standard error (the queries held fixed)."""
    _, q = np.unique(qid, return_inverse=True)
    # per session: the regression's value of its query plus the weighted corrections
    s_ids, s = np.unique(log.session, return_inverse=True)
    s_query = np.empty(s_ids.size, np.int64)
    s_query[s] = q[log.row]
    base = np.bincount(q, weights=w * gamma, minlength=q.max() + 1)
    d = log.row
    with np.errstate(divide="ignore", invalid="ignore"):
        term = np.where(
            w[d] > 0,
            w[d] * (log.click - theta[log.rank - 1] * gamma[d]) / np.where(rho[d] > 0, rho[d], 1.0),
            0.0,
        )
    v = base[s_query] + np.bincount(s, weights=term, minlength=s_ids.size)
    if not np.all(np.isfinite(v)):
        raise ValueError(
            "propensities must be large enough for finite session values, but a "
            "session's value overflows float64."
        )
    n_q = np.bincount(s_query, minlength=q.max() + 1).astype(np.float64)
    mean_q = np.divide(
        np.bincount(s_query, weights=v, minlength=n_q.size),
        n_q,
        out=np.zeros(n_q.size),
        where=n_q > 0,
    )
    sq = np.bincount(s_query, weights=(v - mean_q[s_query]) ** 2, minlength=n_q.size)
    several = n_q > 1
    var_q = np.divide(sq, n_q - 1, out=np.zeros(n_q.size), where=several)
    if several.any():
        var_q[(n_q == 1)] = sq[several].sum() / (n_q[several] - 1).sum()
    else:
        var_q[:] = float(np.var(v, ddof=1)) if v.size > 1 else 0.0
    S = float(v.size)
    return PolicyValue(
        float(v.mean()), float(math.sqrt((n_q * var_q).sum()) / S), spec.name, int(S)
    )


# The estimators that value policies and the shared parameters, listed where
# estimate_policy_value says ``.. reward-estimators::`` and ``.. click-parameters::``.
shared_entries("reward-estimators", {"policy-values": estimator_entries(values_policies=True)})(
    estimate_policy_value
)
shared_entries("click-parameters", CLICK_PARAMETERS)(estimate_policy_value)
