r"""Per-row rewards from a click log: one registry of estimators, one function over it.

Every estimator of :data:`REWARD_ESTIMATORS` gives row :math:`d` the reward

.. math::

    \hat r_d = b\,\hat\gamma_d + a\,\frac{\sum_s \big(c_{sd} - \theta_{\mathrm{rank}_s(d)}\,
               b\,\hat\gamma_d\big)}{E_d + \kappa},

with :math:`\hat\gamma` the regression (:func:`~gbdt_plrank.clicks.click_regression`),
:math:`b, a \in \{0, 1\}` whether the estimator starts from it and whether it adds the clicks'
correction, :math:`E_d` the row's expected observation over the log (its observation
:math:`\sum_s \theta_{\mathrm{rank}_s(d)}`, or :math:`S_q \rho_d` with the logging policy's
propensity) and :math:`\kappa` the shrinkage; the click-through rate is the correction with
:math:`\theta \equiv 1`. :func:`~gbdt_plrank.clicks.click_rewards`, the off-policy value and the
clicks experiment (its learners ``plrank-<name>``) all read the registry, so an estimator is
added in one place.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._util.docs import shared_entries
from .._util.validation import (
    as_finite_vector,
    check_choice,
    check_positive_int,
    is_number,
)
from ._log import (
    ClickLog,
    check_qid,
    check_rows,
    row_clicks,
    row_observation,
    sessions_per_row,
)
from ._position_bias import resolve_position_bias
from ._propensities import (
    DEFAULT_POLICY_SAMPLES,
    checked_propensities,
    no_samples_without_propensities,
    observation,
)
from ._regression import click_regression

__all__ = [
    "CLICK_PARAMETERS",
    "REWARD_ESTIMATORS",
    "RewardEstimator",
    "click_rewards",
    "estimator_entries",
    "reward_estimator",
    "reward_terms",
]


@dataclass(frozen=True)
class RewardEstimator:
    """One way to turn a click log into per-row rewards (an entry of :data:`REWARD_ESTIMATORS`).

    Attributes
    ----------
    name : str
        Its name (``estimator=`` of :func:`~gbdt_plrank.clicks.click_rewards`; the clicks
        experiment's learner ``plrank-<name>``).
    title : str
        Its name in sentences.
    summary : str
        What it is, in one sentence.
    position_bias : bool
        Whether it divides by the rows' observation under the position bias (otherwise by
        their displays: the click-through rate).
    regression : bool
        Whether it starts from the regression's estimate of every row's click probability.
    correction : bool
        Whether it adds the clicks' correction over the row's expected observation.
    """

    name: str
    title: str
    summary: str
    position_bias: bool
    regression: bool
    correction: bool

    @property
    def debiased(self) -> bool:
        """Whether its rewards estimate each row's click probability when seen (it accounts for
        the position bias), rather than the click-through rate."""
        return self.position_bias

    @property
    def signed(self) -> bool:
        """Whether its rewards can be negative (a regression corrected by the clicks)."""
        return self.regression and self.correction

    @property
    def values_policies(self) -> bool:
        """Whether it estimates a policy's value without bias where the logger's propensities
        are right (:func:`~gbdt_plrank.clicks.estimate_policy_value` takes it)."""
        return self.position_bias and self.correction

    @property
    def propensities(self) -> bool:
        """Whether the logging policy's propensities change its rewards."""
        return self.position_bias and self.correction

    def rewards(self, terms: RewardTerms, gamma: np.ndarray, shrinkage: float) -> np.ndarray:
        """Its rewards from the log's ``terms`` and the regression ``gamma`` (zeros where it
        uses none); inf where a division overflows."""
        base = gamma if self.regression else np.zeros(gamma.size)
        if not self.correction:
            return base
        # sum_s (c_sd - theta_s b_d) / (E_d + kappa); b_d where nothing is expected
        return base + _clicks_over(terms.clicks - terms.seen * base, terms.expected + shrinkage)


#: The reward estimators, by name, in the order of their documentation.
REWARD_ESTIMATORS: dict[str, RewardEstimator] = {
    e.name: e
    for e in (
        RewardEstimator(
            "policy-aware",
            "policy-aware",
            "A row's clicks over its expected observation (inverse propensity scoring; Joachims et "
            "al. 2017, Oosterhuis and de Rijke 2020): unbiased for every row the logger can show.",
            position_bias=True,
            regression=False,
            correction=True,
        ),
        RewardEstimator(
            "doubly-robust",
            "doubly robust",
            "The regression corrected by the policy-aware estimate of its error (Oosterhuis "
            "2023): unbiased where the propensities or the regression are right; signed.",
            position_bias=True,
            regression=True,
            correction=True,
        ),
        RewardEstimator(
            "naive",
            "naive",
            "The click-through rate, clicks over displays: lower for the rows the logger shows "
            "lower, whatever their relevance.",
            position_bias=False,
            regression=False,
            correction=True,
        ),
        RewardEstimator(
            "regression",
            "regression",
            "The regression's click probability when seen (the position-based model fitted on the "
            "features, cross-fitted by query): a row the logger never shows gets one too.",
            position_bias=True,
            regression=True,
            correction=False,
        ),
    )
}


def estimator_entries(*, values_policies: bool = False) -> str:
    """The registered estimators (those that value policies, with ``values_policies``) as the
    docstrings list them, read when called: one line each, its name and summary."""
    return "\n".join(
        f'- ``"{e.name}"``: {e.summary}'
        for e in REWARD_ESTIMATORS.values()
        if e.values_policies or not values_policies
    )


#: The parameters that :func:`click_rewards` and :func:`estimate_policy_value` share, written
#: once and filled in where their docstrings say ``.. click-parameters::``.
CLICK_PARAMETERS = {
    "position_bias": r"""position_bias : array of shape (K,) or "estimate"
    :math:`\theta_k` = ``position_bias[k-1]``, the probability that rank ``k`` is seen, in
    (0, 1] for every logged rank (0 beyond); ``"estimate"``: :func:`estimate_position_bias` of
    the log without features, the same rule.""",
    "propensities": r"""propensities : array of shape (n_rows,) or None
    :math:`\rho_d`, the logging policy's expected observation of row :math:`d` per session,
    :math:`\sum_k P_{\pi_0}(\mathrm{rank}(d) = k)\, \theta_k` (a ranker's ``expected_exposure``
    with ``weights=theta``): finite, ``>= 0``, positive for a clicked row without
    ``propensity_samples``. Not with ``logging_policy``; None: the logged display frequencies.""",
    "propensity_samples": r"""propensity_samples : int or None, default None
    With a Monte-Carlo ``propensities``, its rankings per query :math:`M` (``>= 1``), pooled
    with the log's :math:`S_q` sessions of the row's query, :math:`\tilde\rho_d = (M \rho_d +
    \sum_s \theta_{\mathrm{rank}_s(d)}) / (M + S_q)`, positive for every clicked row; None:
    exact ``propensities``. With ``logging_policy``: its rankings per query (None: 1000).""",
    "logging_policy": r"""logging_policy : fitted ranker or None
    The policy that logged the clicks, in place of ``propensities``: a Plackett-Luce policy
    (with ``expected_exposure``, such as :class:`~gbdt_plrank.PLRankRanker`), whose placement
    probabilities are positive for every row it can show, or any model with ``predict``,
    deployed as its ranking by score. Needs ``X`` and ``qid``.""",
    "regression": r"""regression : array of shape (n_rows,) or None
    For the estimators that start from a regression: :math:`\hat\gamma`, finite, in place of
    :func:`click_regression`; unbiased doubly robust estimates need one that has not seen the
    clicks of a row's own query.""",
}


def reward_estimator(name: Any, *, values_policies: bool = False) -> RewardEstimator:
    """The registry's entry ``name`` (one that values policies, with ``values_policies``)."""
    names = [e.name for e in REWARD_ESTIMATORS.values() if e.values_policies or not values_policies]
    return REWARD_ESTIMATORS[check_choice("estimator", name, names)]


@dataclass(frozen=True)
class RewardTerms:
    """What the estimators read from a log, per row.

    Attributes
    ----------
    theta : float64 array
        The position bias (ones for an estimator without it).
    clicks, seen : float64 arrays of shape (n_rows,)
        Clicks, and observation :math:`\\sum_s \\theta_{\\mathrm{rank}_s(d)}`.
    expected : float64 array of shape (n_rows,)
        The expected observation the correction divides by.
    rho : float64 array of shape (n_rows,) or None
        The logging policy's propensity per session (None without ``qid``).
    sessions : float64 array of shape (n_rows,) or None
        The logged sessions of each row's query (None without ``qid``).
    source : str
        Where the propensities come from, in words (for the messages).
    """

    theta: np.ndarray
    clicks: np.ndarray
    seen: np.ndarray
    expected: np.ndarray
    rho: np.ndarray | None
    sessions: np.ndarray | None
    source: str


def reward_terms(
    log: ClickLog,
    n_rows: int,
    spec: RewardEstimator,
    *,
    position_bias: Any,
    propensities: Any,
    propensity_samples: Any,
    logging_policy: Any,
    qid: np.ndarray | None,
    X: Any,
    seed: int,
) -> RewardTerms:
    """The position bias and the per-row counts and propensities of ``spec`` (arguments
    checked as :func:`~gbdt_plrank.clicks.click_rewards` says)."""
    clicks = row_clicks(log, n_rows)
    if not spec.position_bias:
        theta = np.ones(max(int(log.rank.max(initial=1)), 1))
    else:
        theta = resolve_position_bias(position_bias, log)
    seen = row_observation(log, n_rows, theta)
    given = [
        n
        for n, v in (("propensities", propensities), ("logging_policy", logging_policy))
        if v is not None
    ]
    if given and not spec.propensities:
        raise ValueError(
            f"{given[0]} weigh the rows' observation under the logging policy, "
            f"which the {spec.title} estimator does not use, but they are given."
        )
    if len(given) == 2:
        raise ValueError(
            "propensities and logging_policy are two sources of the same "
            "propensities: give one, but both are given."
        )
    if not given:
        no_samples_without_propensities(propensity_samples)
        sessions = None if qid is None else sessions_per_row(log, qid)
        rho = (
            None
            if sessions is None
            else np.divide(seen, sessions, out=np.zeros(n_rows), where=sessions > 0)
        )
        return RewardTerms(
            theta, clicks, seen, seen, rho, sessions, "the logged display frequencies"
        )
    if qid is None:
        raise ValueError(
            f"qid must be given with {given[0]} (the sessions are counted per "
            f"query), but it is None."
        )
    sessions = sessions_per_row(log, qid)
    if logging_policy is not None:
        n = (
            DEFAULT_POLICY_SAMPLES
            if propensity_samples is None
            else check_positive_int("propensity_samples", propensity_samples)
        )
        rho = observation(
            "logging_policy", logging_policy, X=X, qid=qid, theta=theta, n_samples=n, seed=seed
        )
        blind = np.flatnonzero((clicks > 0) & (rho <= 0))
        if blind.size:
            d = int(blind[0])
            raise ValueError(
                f"logging_policy must show every clicked row, but row {d} has "
                f"{int(clicks[d])} click(s) and the policy's expected observation "
                f"of it is {float(rho[d])!r}: the log is not this policy's."
            )
        source = "the logging policy's placement probabilities"
    else:
        rho = checked_propensities(
            propensities, propensity_samples, clicks=clicks, seen=seen, sessions=sessions
        )
        source = (
            "propensities"
            if propensity_samples is None
            else f"propensities pooled with the log's displays ({propensity_samples} sampled "
            f"rankings per query and the log's sessions)"
        )
    return RewardTerms(theta, clicks, seen, sessions * rho, rho, sessions, source)


def check_shrinkage(shrinkage: Any, spec: RewardEstimator) -> float:
    """``shrinkage`` as a float: finite, ``>= 0``, and 0 but for a corrected regression."""
    if not is_number(shrinkage) or not math.isfinite(shrinkage) or shrinkage < 0:
        raise ValueError(f"shrinkage must be a finite number >= 0, but {shrinkage!r} is given.")
    if shrinkage and not spec.signed:
        raise ValueError(
            f"shrinkage pulls the doubly robust rewards towards their regression "
            f"and must be 0 with estimator {spec.name!r}, but {shrinkage!r} is "
            f"given."
        )
    return float(shrinkage)


def regression_estimate(
    log: ClickLog,
    n_rows: int,
    spec: RewardEstimator,
    regression: Any,
    *,
    X: Any,
    qid: np.ndarray | None,
    theta: np.ndarray,
    seed: int,
) -> np.ndarray:
    """The estimator's :math:`\\hat\\gamma`: given, or :func:`click_regression`; zeros for an
    estimator without one (``regression`` is then refused)."""
    if not spec.regression:
        if regression is not None:
            users = ", ".join(repr(e.name) for e in REWARD_ESTIMATORS.values() if e.regression)
            raise ValueError(
                f"regression is read by the estimators that start from one "
                f"({users}) and must be None with estimator {spec.name!r}, but "
                f"it is given."
            )
        return np.zeros(n_rows)
    if regression is not None:
        gamma = as_finite_vector("regression", regression)
        if gamma.shape != (n_rows,):
            raise ValueError(
                f"regression must have shape ({n_rows},) (one per row), but has "
                f"shape {gamma.shape}."
            )
        return gamma
    if X is None or qid is None:
        missing = " and ".join(n for n, v in (("X", X), ("qid", qid)) if v is None)
        raise ValueError(
            f"the {spec.title} estimator fits its regression on the rows' features "
            f"and queries: {missing} must be given (or regression=), but "
            f"{'they are' if ' and ' in missing else 'it is'} None."
        )
    return click_regression(log, X, qid, position_bias=theta, seed=seed)


def _clicks_over(clicks: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """``clicks / expected`` where ``expected > 0``, 0 elsewhere; inf where it overflows."""
    with np.errstate(over="ignore"):
        return np.divide(clicks, expected, out=np.zeros(clicks.size), where=expected > 0)


def click_rewards(
    log: ClickLog,
    n_rows: int,
    *,
    position_bias: Any,
    estimator: str = "policy-aware",
    propensities: Any = None,
    propensity_samples: int | None = None,
    logging_policy: Any = None,
    qid: Any = None,
    X: Any = None,
    regression: Any = None,
    shrinkage: float = 0.0,
    seed: int = 0,
) -> np.ndarray:
    r"""Per-row reward estimates from a click log, to train on as labels (``gain="linear"``).

    Each estimates :math:`\gamma_d`, row :math:`d`'s click probability when seen (e.g. the
    policy-aware :math:`\hat r_d = \sum_s c_{sd} / (S_q\, \rho_d)` over its query's sessions);
    their formulas, expectations and proofs: :doc:`/guide/clicks`, "Click logs and rewards".

    Parameters
    ----------
    log : ClickLog
        The clicks; its rows index the ``n_rows`` feature rows.
    n_rows : int
        Number of feature rows, ``>= 1``.
    estimator : str, default "policy-aware"
        A name of :data:`REWARD_ESTIMATORS` (``"naive"`` uses no position bias):

        .. reward-estimators:: every
    .. click-parameters:: position_bias propensities propensity_samples logging_policy regression
    qid : array of shape (n_rows,) or None
        The rows' query ids: required with propensities, a logging policy or a regression.
    X : array-like, DataFrame or sparse matrix of shape (n_rows, n_features) or None
        The rows' features (by position), for :func:`click_regression` and ``logging_policy``.
    shrinkage : float, default 0.0
        ``"doubly-robust"`` only: :math:`\kappa \ge 0` pseudo-observations in the correction's
        denominator, pulling a barely observed row towards :math:`\hat\gamma_d` (0: unbiased).
    seed : int, default 0
        The seed of the regression's query folds and of ``logging_policy``'s rankings.

    Returns
    -------
    float64 array of shape (n_rows,)
        Finite, ``>= 0`` but the doubly robust ones; a row never shown (no display,
        :math:`\rho_d = 0`, no session) gets 0 (doubly robust: :math:`\hat\gamma_d`).

    Raises
    ------
    ValueError
        For a value that breaks its rule, naming it: rows, sessions mixing queries, the position
        bias, propensities (or a reward too large for float64), an option the estimator does not
        use, a logging policy that never shows a clicked row.
    """
    spec = reward_estimator(estimator)
    n_rows = check_positive_int("n_rows", n_rows)
    shrinkage = check_shrinkage(shrinkage, spec)
    check_rows(log, n_rows)
    if qid is not None:
        qid = check_qid(qid, n_rows)
        log.check_queries(qid)
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
    gamma = regression_estimate(
        log, n_rows, spec, regression, X=X, qid=qid, theta=terms.theta, seed=seed
    )
    rewards = spec.rewards(terms, gamma, shrinkage)
    infinite = np.flatnonzero(~np.isfinite(rewards))
    if infinite.size:
        d = int(infinite[0])
        if terms.expected is terms.seen:
            raise ValueError(
                f"position_bias must be large enough for a finite reward, clicks / "
                f"(the position bias summed over the row's displays), but row {d} "
                f"has {int(terms.clicks[d])} click(s) and a sum of "
                f"{float(terms.seen[d])!r}."
            )
        name, used = (
            ("logging_policy", "its propensity of it")
            if logging_policy is not None
            else ("propensities", f"propensities[{d}]")
            if propensity_samples is None
            else ("propensities", f"the pooled propensities[{d}]")
        )
        raise ValueError(
            f"{name} must be large enough for a finite reward, clicks / (sessions "
            f"x propensity), but row {d} has {int(terms.clicks[d])} click(s) in "
            f"{int(terms.sessions[d])} session(s) and {used} is "
            f"{float(terms.rho[d])!r}."
        )
    return rewards


# The registered estimators and the shared parameters, listed where click_rewards says
# ``.. reward-estimators::`` and ``.. click-parameters::``.
shared_entries("reward-estimators", {"every": estimator_entries()})(click_rewards)
shared_entries("click-parameters", CLICK_PARAMETERS)(click_rewards)
