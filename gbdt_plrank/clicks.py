r"""Learning to rank from clicks: click logs, position bias, and unbiased per-row rewards.

A click log holds one entry per displayed document per session. Under the position-based model
(PBM; Craswell et al., 2008) a document :math:`d` shown at rank :math:`k` is clicked with
probability :math:`\theta_k \, \gamma_d`: it is seen with probability :math:`\theta_k` and, when
seen, clicked with probability :math:`\gamma_d`. Counting clicks (the click-through rate) mixes
the two: a document the logging policy shows lower is seen less and so clicked less, whatever its
relevance. Inverse propensity scoring divides a row's clicks by its expected observation
(Joachims et al., 2017); policy-aware scoring takes that expectation under the logging policy,
which with a top-:math:`K` display is positive only for the rows the policy can show
(Oosterhuis & de Rijke, 2020). Over :math:`S` logged sessions of the query of :math:`d`,

.. math::

    \hat r_d = \frac{\sum_s c_{sd}}{\sum_s \theta_{\mathrm{rank}_s(d)}}
    \qquad\text{or}\qquad
    \hat r_d = \frac{\sum_s c_{sd}}{S\, \rho_d},
    \quad \rho_d = \sum_{k=1}^{K} P_{\pi_0}(\mathrm{rank}(d) = k)\, \theta_k,

(:math:`c_{sd} = 0` and :math:`\theta_{\mathrm{rank}_s(d)} = 0` where session :math:`s` does not
show :math:`d`) so that :math:`\hat r_d` estimates :math:`\gamma_d` for every row the logger
:math:`\pi_0` shows with positive probability. A stochastic Plackett-Luce logger shows every row
with some probability; a deterministic top-:math:`K` logger never shows the rows below its cut,
and no reweighting recovers them. The expected DCG of a policy is linear in the gains, so a
ranker trained with ``gain="linear"`` on :math:`\hat r` maximises, in expectation, the DCG of
the click probabilities when seen.

References
----------
Craswell, Zoeter, Taylor and Ramsey (2008). An experimental comparison of click position-bias
models. WSDM.

Joachims, Swaminathan and Schnabel (2017). Unbiased learning-to-rank with biased feedback. WSDM.

Wang, Golbandi, Bendersky, Metzler and Najork (2018). Position bias estimation for unbiased
learning to rank in personal search. WSDM.

Agarwal, Zaitsev, Wang, Li, Najork and Joachims (2019). Addressing trust bias for unbiased
learning-to-rank. WWW.

Oosterhuis and de Rijke (2020). Policy-aware unbiased learning to rank for top-k rankings.
SIGIR.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._util.validation import (
    as_finite_vector,
    as_int_vector,
    check_at_least,
    check_choice,
    check_labels,
    check_positive_int,
    check_positive_number,
    check_same_length,
    check_seed,
    is_number,
)

__all__ = [
    "ClickLog",
    "PolicyValue",
    "click_regression",
    "click_rewards",
    "estimate_policy_value",
    "estimate_position_bias",
    "pbm_position_bias",
    "seen_click_probability",
    "simulate_clicks",
]

_COLUMNS = ("session", "row", "rank", "click")
_ESTIMATORS = ("policy-aware", "naive", "doubly-robust")
_VALUE_ESTIMATORS = ("policy-aware", "doubly-robust")


def _first_repeat(session: np.ndarray, other: np.ndarray) -> tuple[int, int, int] | None:
    """The first (session, value) pair that occurs more than once, and how often; or None."""
    order = np.lexsort((other, session))
    s, o = session[order], other[order]
    repeated = np.flatnonzero((s[1:] == s[:-1]) & (o[1:] == o[:-1]))
    if not repeated.size:
        return None
    sid, value = s[repeated[0]], o[repeated[0]]
    return int(sid), int(value), int(np.count_nonzero((session == sid) & (other == value)))


@dataclass(frozen=True, init=False, eq=False)
class ClickLog:
    """A click log: one entry per displayed document per session.

    Parameters
    ----------
    session : array-like of int, shape (n_entries,)
        Session id of each entry (any integers in the int64 range; a session is one displayed
        ranking).
    row : array-like of int, shape (n_entries,)
        Index of the displayed document into the feature rows, ``>= 0``; distinct within a
        session.
    rank : array-like of int, shape (n_entries,)
        1-based position at which it was shown; distinct within a session.
    click : array-like of 0/1, shape (n_entries,)
        Whether it was clicked.

    Raises
    ------
    ValueError
        Naming the first bad value and its rule: arrays of other lengths, not one-dimensional,
        or holding other than integers (fractions, NaN, infinity, strings, values outside the
        int64 range [-2**63, 2**63) such as float ids of 2**63 or more); a negative row; a
        rank below 1; a click other than 0 or 1; a rank or a row repeated within a session.
        That the rows of each session belong to one query is checked where the queries are
        known (:meth:`check_queries`, :func:`click_rewards` with ``qid``).

    Notes
    -----
    The arrays are stored as read-only int64 copies, in the given order; the arrays passed in
    are left as they are (writable).
    """

    session: np.ndarray
    row: np.ndarray
    rank: np.ndarray
    click: np.ndarray

    def __init__(self, *, session: Any, row: Any, rank: Any, click: Any) -> None:
        # copies: the log's arrays are made read-only, the caller's stay as they are
        arrays = {name: as_int_vector(name, value).copy() for name, value in
                  zip(_COLUMNS, (session, row, rank, click))}
        check_same_length(**arrays)
        check_at_least("row", arrays["row"], 0)
        check_at_least("rank", arrays["rank"], 1, rule=" (ranks are 1-based)")
        bad = np.flatnonzero((arrays["click"] != 0) & (arrays["click"] != 1))
        if bad.size:
            i = int(bad[0])
            raise ValueError(f"click must be 0 or 1, but click[{i}] is {arrays['click'][i]}.")
        for name, rule in (("rank", "a session shows one document per rank"),
                           ("row", "a session shows a document once")):
            repeat = _first_repeat(arrays["session"], arrays[name])
            if repeat is not None:
                sid, value, count = repeat
                raise ValueError(f"{name} must be distinct within a session ({rule}), but "
                                 f"session {sid} shows {name} {value} {count} times.")
        for name, arr in arrays.items():
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)

    @classmethod
    def from_frame(cls, df: Any) -> ClickLog:
        """A click log from a data frame with the columns ``session``, ``row``, ``rank``, ``click``.

        Raises
        ------
        ValueError
            Naming the missing columns, or as :class:`ClickLog` does for a bad value.
        """
        missing = [c for c in _COLUMNS if c not in df.columns]
        if missing:
            raise ValueError(f"the frame must have the columns {', '.join(_COLUMNS)}, but "
                             f"{missing} are missing.")
        return cls(**{c: np.asarray(df[c]) for c in _COLUMNS})

    def __len__(self) -> int:
        return int(self.row.size)

    def check_queries(self, qid: Any) -> None:
        """Check the log against the query ids ``qid`` of the feature rows.

        Raises
        ------
        ValueError
            When a row is not in ``range(len(qid))``, or a session shows rows of two queries,
            naming them.
        """
        qid = np.asarray(qid)
        if self.row.size and self.row.max() >= qid.shape[0]:
            i = int(np.argmax(self.row))
            raise ValueError(f"row must be < n_rows = {qid.shape[0]}, but row[{i}] is "
                             f"{self.row[i]}.")
        order = np.argsort(self.session, kind="stable")
        s, q = self.session[order], qid[self.row[order]]
        starts = np.flatnonzero(np.r_[True, s[1:] != s[:-1]])
        first = np.repeat(q[starts], np.diff(np.r_[starts, s.size]))
        bad = np.flatnonzero(q != first)
        if bad.size:
            j = int(bad[0])
            raise ValueError(f"the rows of a session must belong to one query, but session "
                             f"{s[j]} shows rows of queries {first[j].item()!r} and {q[j].item()!r}.")


def pbm_position_bias(K: int, *, eta: float = 1.0) -> np.ndarray:
    r"""The position bias :math:`\theta_k = (1/k)^\eta` of ranks :math:`k = 1..K`.

    The observation probabilities of the semi-synthetic protocol (Joachims et al., 2017):
    :math:`\eta = 0` sees every rank, a larger :math:`\eta` sees the lower ranks less.

    Parameters
    ----------
    K : int
        Number of ranks, ``>= 1``.
    eta : float, default 1.0
        Severity, finite and ``>= 0``.

    Returns
    -------
    float64 array of shape (K,)
        ``theta[k-1]`` for rank ``k``; ``theta[0] == 1``.
    """
    K = check_positive_int("K", K)
    if not is_number(eta) or not math.isfinite(eta) or eta < 0:
        raise ValueError(f"eta must be a finite number >= 0, but {eta!r} is given.")
    return (1.0 / np.arange(1, K + 1)) ** float(eta)


def _check_position_bias(name: str, theta: Any, log: ClickLog) -> np.ndarray:
    """``theta`` (given as ``name``) as a float64 vector of observation probabilities, one per
    rank, each finite and in (0, 1], covering every rank of ``log``; the one rule of a given
    position bias and of an estimated one."""
    theta = as_finite_vector(name, theta)
    if theta.size == 0:
        raise ValueError(f"{name} must hold one probability per rank, but is empty.")
    bad = np.flatnonzero((theta <= 0) | (theta > 1))
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"{name} must be in (0, 1], but {name}[{i}] is {float(theta[i])!r}.")
    if log.rank.size and log.rank.max() > theta.size:
        raise ValueError(f"{name} must cover every logged rank, but rank {log.rank.max()} is "
                         f"logged and {theta.size} ranks are given.")
    return theta


def _position_bias(position_bias: Any, log: ClickLog) -> np.ndarray:
    """``position_bias`` checked against ``log``, or estimated from it (``"estimate"``) and
    checked by the same rule."""
    if isinstance(position_bias, str):
        check_choice("position_bias", position_bias, ("estimate",))
        return _check_position_bias("estimate_position_bias(log)", estimate_position_bias(log),
                                    log)
    return _check_position_bias("position_bias", position_bias, log)


def click_rewards(
    log: ClickLog, n_rows: int, *, position_bias: Any, estimator: str = "policy-aware",
    propensities: Any = None, propensity_samples: int | None = None, qid: Any = None,
    X: Any = None, regression: Any = None, shrinkage: float = 0.0, seed: int = 0,
) -> np.ndarray:
    r"""Per-row reward estimates from a click log, to train on as labels (``gain="linear"``).

    Parameters
    ----------
    log : ClickLog
        The clicks; its rows index the ``n_rows`` feature rows.
    n_rows : int
        Number of feature rows, ``>= 1``.
    position_bias : array of shape (K,) or "estimate"
        :math:`\theta_k` = ``position_bias[k-1]``, the probability that rank ``k`` is seen, in
        (0, 1], for every logged rank; ``"estimate"`` estimates it from ``log``
        (:func:`estimate_position_bias`), which obeys the same rule. Not used by
        ``estimator="naive"``.
    estimator : {"policy-aware", "naive", "doubly-robust"}
        ``"policy-aware"``: a row's clicks over its expected observation,
        :math:`\hat r_d = \sum_s c_{sd} / \sum_s \theta_{\mathrm{rank}_s(d)}` from the logged
        displays, or :math:`\hat r_d = \sum_s c_{sd} / (S_q\, \rho_d)` with ``propensities``
        :math:`\rho_d` and :math:`S_q` the number of sessions of the query of row :math:`d`;
        its expectation is :math:`\gamma_d`, the probability that :math:`d` is clicked when
        seen (up to sampling, for the display frequencies). ``"naive"``: the click-through
        rate, clicks over displays, whose expectation :math:`\gamma_d\,
        \mathbb{E}[\theta_{\mathrm{rank}(d)} \mid d\ \text{shown}]` is lower for the rows the
        logger shows lower. ``"doubly-robust"`` (Oosterhuis, 2023): a regression estimate
        :math:`\hat\gamma_d` of every row's click probability when seen, corrected by the
        policy-aware estimate of its error,

        .. math::

            \hat r_d = \hat\gamma_d + \frac{\sum_s \big(c_{sd} - \theta_{\mathrm{rank}_s(d)}
            \hat\gamma_d\big)}{S_q\, \rho_d}

        (:math:`\theta_{\mathrm{rank}_s(d)} = 0` where session :math:`s` does not show
        :math:`d`). Its expectation is :math:`\gamma_d` when :math:`\rho_d` is the logging
        policy's propensity, whatever :math:`\hat\gamma` (as long as it does not depend on the
        clicks of :math:`d`'s own query: the regression is cross-fitted by query), and also
        when :math:`\hat\gamma = \gamma`, whatever :math:`\rho`. Its variance is that of
        :math:`c - \theta\hat\gamma` rather than of :math:`c`: lower wherever the regression
        is close, and a row the logger never showed gets :math:`\hat\gamma_d` rather than 0.
        The rewards are not clipped and can be negative (train on them with
        ``metric="dcg", gain="linear"``); without ``propensities`` (the display frequencies)
        a shown row's reward equals the policy-aware one and only never-shown rows gain.
    propensities : array of shape (n_rows,) or None
        :math:`\rho_d`, the expected observation of row :math:`d` per session of its query under
        the logging policy: :math:`\sum_k P_{\pi_0}(\mathrm{rank}(d) = k)\, \theta_k`, which is
        the logging :class:`~gbdt_plrank.PLRankRanker`'s
        ``expected_exposure(X, qid, weights=theta, n_samples=M)`` (then give ``M`` as
        ``propensity_samples``). Finite and ``>= 0``; without ``propensity_samples``, ``> 0``
        for every clicked row; large enough that a reward is a finite float64 (a clicked row's
        propensity of 1e-320 is refused). None: the logged display frequencies.
    propensity_samples : int or None, default None
        With ``propensities`` a Monte-Carlo estimate, the number :math:`M` (``>= 1``) of the
        logging policy's rankings per query it averages (``expected_exposure``'s
        ``n_samples``, drawn independently of the log): those rankings are pooled with the
        log's own sessions, which the same policy drew,
        :math:`\tilde\rho_d = (M \rho_d + \sum_s \theta_{\mathrm{rank}_s(d)}) / (M + S_q)`,
        and the rewards divide by :math:`\tilde\rho_d`. A clicked row then always has a
        positive propensity (the log proves it displayed), even where no sampled ranking shows
        it, as under a sharp logger. A reward's expectation is :math:`\gamma_d\, f_d` (doubly
        robust: :math:`\hat\gamma_d + (\gamma_d - \hat\gamma_d)\, f_d`) with
        :math:`f_d = 1 - (1 - p_d)^{M + S_q}`, :math:`p_d` the probability that the logger
        shows :math:`d`: unbiased but for the chance that none of the :math:`M + S_q` rankings
        shows the row, and consistent as :math:`M` grows (see Notes). None: ``propensities`` are
        taken as exact.
    qid : array of shape (n_rows,) or None
        Query id of every row: checks that each session shows the rows of one query; required
        with ``propensities`` (the sessions are counted per query) and by the doubly robust
        estimator's regression.
    X : array-like or sparse matrix of shape (n_rows, n_features) or None
        The rows' features, for the doubly robust estimator's regression
        (:func:`click_regression`); not used otherwise, nor with ``regression``.
    regression : array of shape (n_rows,) or None
        ``"doubly-robust"`` only: :math:`\hat\gamma`, finite, in place of
        :func:`click_regression` (cross-fitted by query on ``X``); it must not have seen the
        clicks of a row's own query for the rewards to stay unbiased.
    shrinkage : float, default 0.0
        ``"doubly-robust"`` only: :math:`\kappa \ge 0`, finite, pseudo-observations added to
        the correction's denominator,

        .. math::

            \hat r_d = \hat\gamma_d + \frac{\sum_s \big(c_{sd} - \theta_{\mathrm{rank}_s(d)}
            \hat\gamma_d\big)}{E_d + \kappa},

        :math:`E_d` the row's expected observation (:math:`S_q\, \rho_d`, or
        :math:`\sum_s \theta_{\mathrm{rank}_s(d)}` without ``propensities``, when the reward is
        :math:`(\sum_s c_{sd} + \kappa\hat\gamma_d) / (\sum_s \theta_{\mathrm{rank}_s(d)} +
        \kappa)`: the row's clicks and observation with :math:`\kappa` observations clicked at
        the rate :math:`\hat\gamma_d`). The reward's expectation is
        :math:`\hat\gamma_d + (\gamma_d - \hat\gamma_d)\, E_d / (E_d + \kappa)` (given the
        displays without ``propensities``; over them with the logging policy's exact
        :math:`\rho`, as a Monte-Carlo one without ``propensity_samples`` is taken): shrunk
        towards the regression by the share :math:`\kappa / (E_d + \kappa)`, which is large
        for the rows a short log barely observes and vanishes as the sessions grow (and no bias
        at all where :math:`\hat\gamma = \gamma`). The correction of a barely observed row,
        the noisiest term, is bounded by :math:`1/\kappa` per click. 0 (the default): the
        unbiased rewards above.
    seed : int, default 0
        The doubly robust estimator's regression: the seed of the query folds.

    Returns
    -------
    float64 array of shape (n_rows,)
        The rewards, finite; ``>= 0`` but for the doubly robust ones. Rows never shown
        (without propensities: no display; with them: :math:`\rho_d = 0` or a query without
        sessions) get 0 (the doubly robust estimator: :math:`\hat\gamma_d`): nothing is known of
        them, and the estimate is unbiased only for rows the logger shows with positive
        probability.

    Raises
    ------
    ValueError
        For a row outside ``range(n_rows)``, a session mixing queries, a position bias (given
        or estimated) outside (0, 1] or shorter than the logged ranks, bad propensities (a
        clicked row's exact propensity of 0 among them), ``propensity_samples`` other than an
        integer ``>= 1`` or without ``propensities``, a reward too large for float64 (a clicked
        row's observation below about 1e-308), an unknown estimator, ``shrinkage`` other than a
        finite number ``>= 0`` or positive with another estimator, or for the doubly robust
        estimator a missing ``qid`` / ``X`` (without ``regression``) or a bad ``regression``,
        naming the value and the rule.

    Notes
    -----
    Why the pooled propensities of ``propensity_samples`` keep the rewards unbiased. Let the
    :math:`M` sampled rankings be drawn from the logging policy independently of the log, with
    ``weights`` equal to ``position_bias``. The :math:`n = M + S_q` observations
    :math:`X_i = \theta_{\mathrm{rank}_i(d)}` of row :math:`d` in the sampled and the logged
    rankings are then independent draws of one distribution, hence exchangeable, and
    :math:`\tilde\rho_d = \frac1n\sum_i X_i`. Under the position-based model a logged
    session's click has mean :math:`X_s\gamma_d` given all the rankings, so

    .. math::

        \mathbb{E}\Big[\frac{c_{sd}}{\tilde\rho_d}\Big]
        = \gamma_d\, n\, \mathbb{E}\Big[\frac{X_s}{\sum_i X_i}\Big]
        = \gamma_d\, \mathbb{E}\Big[\frac{\sum_i X_i}{\sum_i X_i}\Big]
        = \gamma_d\, \big(1 - (1 - p_d)^{n}\big)

    (0/0 read as 0; the middle step because the :math:`n` ratios :math:`X_i / \sum_j X_j` have
    equal means), :math:`p_d` the probability that the logger shows :math:`d`. The doubly robust
    correction :math:`(c_{sd} - X_s\hat\gamma_d)/\tilde\rho_d`, with :math:`\hat\gamma`
    cross-fitted and so independent of the query's rankings, has mean
    :math:`(\gamma_d - \hat\gamma_d)(1 - (1-p_d)^n)`. The bias, at most
    :math:`|\gamma_d - \hat\gamma_d|\, e^{-n p_d}` (:math:`\hat\gamma = 0` for the
    policy-aware rewards), is that of a row none of the :math:`n` rankings shows, which nothing
    computed from them can avoid; and :math:`\tilde\rho_d \to \rho_d` as :math:`M` grows,
    so the rewards are consistent. With :math:`M = 0` the pooled propensity is the display
    frequency, and its rewards have the same expectation. The Monte-Carlo estimate alone is 0
    with probability :math:`(1-p_d)^M > 0`, and a logged click on such a row (one a sharp logger
    rarely shows) would be divided by 0: those rewards have no finite expectation.

    Examples
    --------
    >>> log = ClickLog(session=[0, 0, 1], row=[0, 1, 0], rank=[1, 2, 1], click=[1, 1, 0])
    >>> click_rewards(log, 3, position_bias=[1.0, 0.25])
    array([0.5, 4. , 0. ])
    >>> click_rewards(log, 3, position_bias=[1.0, 0.25], estimator="naive")
    array([0.5, 1. , 0. ])
    >>> click_rewards(log, 3, position_bias=[1.0, 0.25], estimator="doubly-robust",
    ...               propensities=[0.8, 0.5, 0.3], qid=[0, 0, 0], regression=[0.5, 0.5, 0.5])
    array([0.5  , 1.375, 0.5  ])
    """
    check_choice("estimator", estimator, _ESTIMATORS)
    n_rows = check_positive_int("n_rows", n_rows)
    shrinkage = _check_shrinkage(shrinkage, estimator)
    _check_rows(log, n_rows)
    if qid is not None:
        qid = _check_qid(qid, n_rows)
        log.check_queries(qid)
    clicks = np.bincount(log.row, weights=log.click, minlength=n_rows)
    if estimator == "naive":
        shows = np.bincount(log.row, minlength=n_rows)
        return np.divide(clicks, shows, out=np.zeros(n_rows), where=shows > 0)
    theta = _position_bias(position_bias, log)
    seen = np.bincount(log.row, weights=theta[log.rank - 1], minlength=n_rows)
    if propensities is None:
        _no_samples_without_propensities(propensity_samples)
        expected = seen
    else:
        if qid is None:
            raise ValueError("qid must be given with propensities (the sessions are counted per "
                             "query), but it is None.")
        sessions = _sessions_per_row(log, qid)
        rho = _logging_propensities(propensities, propensity_samples, clicks=clicks, seen=seen,
                                    sessions=sessions)
        expected = sessions * rho
    if estimator == "doubly-robust":
        gamma = _regression(log, n_rows, regression, X=X, qid=qid, theta=theta, seed=seed)
        # sum_s (c_sd - theta_s gamma_d) / (S rho_d + kappa); gamma_d where nothing is expected
        rewards = gamma + _clicks_over(clicks - seen * gamma, expected + shrinkage)
    else:
        rewards = _clicks_over(clicks, expected)
    infinite = np.flatnonzero(~np.isfinite(rewards))
    if infinite.size:
        d = int(infinite[0])
        if propensities is None:
            raise ValueError(f"position_bias must be large enough for a finite reward, clicks / "
                             f"(the position bias summed over the row's displays), but row {d} "
                             f"has {int(clicks[d])} click(s) and a sum of {float(seen[d])!r}.")
        used = "propensities" if propensity_samples is None else "the pooled propensities"
        raise ValueError(f"propensities must be large enough for a finite reward, clicks / "
                         f"(sessions x propensity), but row {d} has {int(clicks[d])} click(s) "
                         f"in {int(sessions[d])} session(s) and {used}[{d}] is "
                         f"{float(rho[d])!r}.")
    return rewards


def _check_shrinkage(shrinkage: Any, estimator: str) -> float:
    """``shrinkage`` as a float: finite, ``>= 0``, and 0 but for the doubly robust estimator."""
    if not is_number(shrinkage) or not math.isfinite(shrinkage) or shrinkage < 0:
        raise ValueError(f"shrinkage must be a finite number >= 0, but {shrinkage!r} is given.")
    if shrinkage and estimator != "doubly-robust":
        raise ValueError(f"shrinkage pulls the doubly robust rewards towards their regression "
                         f"and must be 0 with estimator {estimator!r}, but {shrinkage!r} is "
                         f"given.")
    return float(shrinkage)


def _check_rows(log: ClickLog, n_rows: int) -> None:
    """Every row of ``log`` in ``range(n_rows)``."""
    if log.row.size and log.row.max() >= n_rows:
        i = int(np.argmax(log.row))
        raise ValueError(f"row must be < n_rows = {n_rows}, but row[{i}] is {log.row[i]}.")


def _check_qid(qid: Any, n_rows: int) -> np.ndarray:
    """``qid`` as an array of one query id per row."""
    qid = np.asarray(qid)
    if qid.shape != (n_rows,):
        raise ValueError(f"qid must have shape ({n_rows},) (one query id per row), but has "
                         f"shape {qid.shape}.")
    return qid


def _logging_propensities(
    propensities: Any, propensity_samples: Any, *, clicks: np.ndarray, seen: np.ndarray,
    sessions: np.ndarray,
) -> np.ndarray:
    r"""The logging policy's propensities :math:`\rho_d` that both estimators divide by.

    ``propensities`` checked (float64, one per row, finite and ``>= 0``) and taken as exact,
    so a clicked row's 0 is refused; or, with ``propensity_samples`` :math:`M`, taken as the
    Monte-Carlo mean over :math:`M` rankings of the logging policy and pooled with the
    :math:`S_q` logged sessions of the row's query (``sessions``), rankings of the same policy,

    .. math::

        \tilde\rho_d = \frac{M \rho_d + \sum_{s=1}^{S_q} \theta_{\mathrm{rank}_s(d)}}
                             {M + S_q}

    (``seen`` holds the sums over the log): positive for every clicked row, and unbiased but
    for the rows none of the :math:`M + S_q` rankings shows (the Notes of
    :func:`click_rewards` prove it).
    """
    n_rows = clicks.size
    rho = as_finite_vector("propensities", propensities)
    if rho.shape != (n_rows,):
        raise ValueError(f"propensities must have shape ({n_rows},) (one per row), but has "
                         f"shape {rho.shape}.")
    check_at_least("propensities", rho, 0)
    if propensity_samples is not None:
        M = check_positive_int("propensity_samples", propensity_samples)
        return (M * rho + seen) / (M + sessions)
    unseen = np.flatnonzero((clicks > 0) & (rho <= 0))
    if unseen.size:
        d = int(unseen[0])
        raise ValueError(f"propensities must be > 0 for every clicked row, but row {d} has "
                         f"{int(clicks[d])} click(s) and propensities[{d}] is {float(rho[d])!r} "
                         f"(a Monte-Carlo estimate such as expected_exposure's: give its "
                         f"n_samples as propensity_samples to pool it with the log's displays).")
    return rho


def _no_samples_without_propensities(propensity_samples: Any) -> None:
    """``propensity_samples`` counts the rankings behind given propensities: refused alone."""
    if propensity_samples is not None:
        raise ValueError(f"propensity_samples counts the logging policy's rankings behind "
                         f"propensities, but propensities is None (propensity_samples="
                         f"{propensity_samples!r}).")


def _sessions_per_row(log: ClickLog, qid: np.ndarray) -> np.ndarray:
    """The number of logged sessions of every row's query (float64, shape (n_rows,))."""
    _, q = np.unique(qid, return_inverse=True)
    _, first = np.unique(log.session, return_index=True)
    return np.bincount(q[log.row[first]], minlength=q.max() + 1)[q].astype(np.float64)


def _regression(
    log: ClickLog, n_rows: int, regression: Any, *, X: Any, qid: np.ndarray | None,
    theta: np.ndarray, seed: int,
) -> np.ndarray:
    """The doubly robust estimator's :math:`\\hat\\gamma`: given, or :func:`click_regression`."""
    if regression is not None:
        gamma = as_finite_vector("regression", regression)
        if gamma.shape != (n_rows,):
            raise ValueError(f"regression must have shape ({n_rows},) (one per row), but has "
                             f"shape {gamma.shape}.")
        return gamma
    if X is None or qid is None:
        missing = " and ".join(n for n, v in (("X", X), ("qid", qid)) if v is None)
        raise ValueError(f"the doubly robust estimator fits its regression on the rows' features "
                         f"and queries: {missing} must be given (or regression=), but "
                         f"{'they are' if ' and ' in missing else 'it is'} None.")
    return click_regression(log, X, qid, position_bias=theta, seed=seed)


def click_regression(
    log: ClickLog, X: Any, qid: Any, *, position_bias: Any, n_folds: int = 2,
    n_rounds: int = 100, max_depth: int = 3, learning_rate: float = 0.1, seed: int = 0,
    n_jobs: int = 1,
) -> np.ndarray:
    r"""Every row's click probability when seen, regressed on its features, cross-fitted by query.

    The position-based model's likelihood of the log with the observation probability as a
    known factor: a row :math:`d` shown at rank :math:`k` is clicked with probability
    :math:`\theta_k\, \sigma(f(x_d))`, and :math:`f` is a small gradient-boosted model
    (XGBoost, Fisher scoring on that Bernoulli likelihood) fitted on the displays and clicks of
    the other queries: the queries are split into ``n_folds`` folds at random, and each fold's
    rows are predicted by the model fitted on the other folds, so that no row's estimate has
    seen the clicks of its own query (what keeps the doubly robust rewards of
    :func:`click_rewards` unbiased). Rows never displayed count in no fit but are predicted.

    Parameters
    ----------
    log : ClickLog
        The clicks.
    X : array-like or sparse matrix of shape (n_rows, n_features)
        The rows' features.
    qid : array of shape (n_rows,)
        The rows' query ids.
    position_bias : array of shape (K,) or "estimate"
        As in :func:`click_rewards`.
    n_folds : int, default 2
        Query folds, ``>= 2``.
    n_rounds, max_depth, learning_rate : int, int, float
        The booster's rounds (``>= 1``), tree depth (``>= 1``) and step (``> 0``).
    seed : int, default 0
        Seed of the query folds (the booster itself is deterministic).
    n_jobs : int, default 1
        The booster's threads.

    Returns
    -------
    float64 array of shape (n_rows,)
        :math:`\hat\gamma_d = \sigma(f(x_d))` in (0, 1); a fold whose other folds hold no display
        gets 0 (its doubly robust rewards are then the policy-aware ones).

    Raises
    ------
    ValueError
        For a bad value, naming it; ``MissingDependencyError`` without xgboost.

    Notes
    -----
    Cost: ``n_folds`` boosters of ``n_rounds`` trees on the displayed rows (one training row per
    displayed feature row, its displays and clicks per rank aggregated), so it grows with the
    rows, not with the sessions.
    """
    from ._util.compat import require

    xgb = require("xgboost", purpose="the doubly robust estimator's regression")
    n_folds = check_positive_int("n_folds", n_folds)
    if n_folds < 2:
        raise ValueError(f"n_folds must be >= 2 (cross-fitting), but {n_folds} is given.")
    n_rounds = check_positive_int("n_rounds", n_rounds)
    max_depth = check_positive_int("max_depth", max_depth)
    learning_rate = check_positive_number("learning_rate", learning_rate)
    seed = check_seed("seed", seed)
    n_rows = int(X.shape[0])
    qid = _check_qid(qid, n_rows)
    _check_rows(log, n_rows)
    log.check_queries(qid)
    theta = _position_bias(position_bias, log)
    K = theta.size
    shows = np.zeros((n_rows, K))
    hits = np.zeros((n_rows, K))
    np.add.at(shows, (log.row, log.rank - 1), 1.0)
    np.add.at(hits, (log.row, log.rank - 1), log.click)
    queries, q = np.unique(qid, return_inverse=True)
    fold = np.random.default_rng(seed).permutation(queries.size) % n_folds
    row_fold = fold[q]
    shown = shows.sum(axis=1) > 0
    gamma = np.zeros(n_rows)
    for f in range(n_folds):
        train = np.flatnonzero(shown & (row_fold != f))
        test = np.flatnonzero(row_fold == f)
        if not train.size or not test.size:
            continue
        n, c = shows[train], hits[train]
        pooled = float(np.clip(c.sum() / (n @ theta).sum(), 1e-3, 1 - 1e-3))
        base = math.log(pooled / (1 - pooled))

        def objective(margin: np.ndarray, _: Any, n: np.ndarray = n, c: np.ndarray = c) -> Any:
            s = 1.0 / (1.0 + np.exp(-margin))[:, None]
            ts = np.minimum(theta * s, 1 - 1e-12)
            # -d/df log-likelihood, and its Fisher information (positive)
            grad = -(c * (1 - s) - (n - c) * theta * s * (1 - s) / (1 - ts)).sum(axis=1)
            hess = (n * theta * s * (1 - s) ** 2 / (1 - ts)).sum(axis=1)
            return grad, np.maximum(hess, 1e-12)

        dtrain = xgb.DMatrix(X[train], base_margin=np.full(train.size, base))
        booster = xgb.train(
            {"max_depth": max_depth, "eta": learning_rate, "nthread": n_jobs,
             "min_child_weight": 1e-3, "lambda": 1.0},
            dtrain, num_boost_round=n_rounds, obj=objective,
        )
        margin = booster.predict(xgb.DMatrix(X[test], base_margin=np.full(test.size, base)),
                                 output_margin=True)
        gamma[test] = 1.0 / (1.0 + np.exp(-margin.astype(np.float64)))
    return gamma


def _clicks_over(clicks: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """``clicks / expected`` where ``expected > 0``, 0 elsewhere; inf where it overflows."""
    with np.errstate(over="ignore"):
        return np.divide(clicks, expected, out=np.zeros(clicks.size), where=expected > 0)


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
        ``"policy-aware"`` or ``"doubly-robust"``.
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
    log: ClickLog, policy: Any, *, X: Any = None, qid: Any, position_bias: Any,
    propensities: Any = None, propensity_samples: int | None = None,
    estimator: str = "policy-aware", regression: Any = None, n_samples: int = 1000,
    seed: int = 0,
) -> PolicyValue:
    r"""A new policy's expected clicks per session, estimated from another (logging) policy's log.

    Off-policy evaluation under the position-based model: a policy :math:`\pi` that observes row
    :math:`d` with probability :math:`w_\pi(d) = \mathbb{E}_{y \sim \pi}[\theta_{\mathrm{rank}_y
    (d)}]` per session of its query is clicked :math:`V(\pi) = \sum_q S_q \sum_{d \in q}
    w_\pi(d)\, \gamma_d / \sum_q S_q` times per session, the log's queries weighted by their
    logged sessions :math:`S_q`. Each logged session :math:`s` of query :math:`q` gives

    .. math::

        v_s = \sum_{d \in q} w_\pi(d)\, \hat\gamma_d
              + \sum_{d\ \text{shown in}\ s} w_\pi(d)\,
                \frac{c_{sd} - \theta_{\mathrm{rank}_s(d)}\, \hat\gamma_d}{\rho_d},

    with :math:`\hat\gamma = 0` (``"policy-aware"``, inverse propensity scoring) or the
    cross-fitted regression of :func:`click_regression` (``"doubly-robust"``), and the estimate
    is their mean. Its expectation is :math:`V(\pi)` when :math:`\rho` is the logging policy's
    propensity and :math:`\rho_d > 0` wherever :math:`w_\pi(d) > 0` (a stochastic logger,
    such as a Plackett-Luce policy, gives that), and for the doubly robust estimate also when
    :math:`\hat\gamma = \gamma`. The standard error is
    :math:`\sqrt{\sum_q S_q\, s_q^2} / \sum_q S_q` with :math:`s_q^2` the variance of
    :math:`v_s` over the sessions of query :math:`q` (the pooled within-query variance for a
    query with one session): the sampling error of the clicks, the queries held fixed
    (the cross-fitted regression's dependence on other queries' clicks is left out).

    Parameters
    ----------
    log : ClickLog
        The logging policy's clicks.
    policy : PLRankRanker or array of shape (n_rows,)
        The new policy: a fitted ranker (its Plackett-Luce policy's expected observation
        ``policy.expected_exposure(X, qid, weights=theta, n_samples=n_samples)``), or every row's
        expected observation per session :math:`w_\pi(d)`, finite and ``>= 0``.
    X : array-like or sparse matrix of shape (n_rows, n_features) or None
        The rows' features: for a ranker, and for the doubly robust regression.
    qid : array of shape (n_rows,)
        The rows' query ids.
    position_bias : array of shape (K,) or "estimate"
        As in :func:`click_rewards`; rank ``k`` of the new policy is seen with probability
        ``position_bias[k-1]`` (0 beyond).
    propensities : array of shape (n_rows,) or None
        The logging policy's :math:`\rho_d`, as in :func:`click_rewards`; None: the logged
        display frequencies (consistent, not unbiased, and any row the new policy can show but
        the log never shows is refused).
    propensity_samples : int or None, default None
        As in :func:`click_rewards`: ``propensities`` are the Monte-Carlo mean over that many
        rankings of the logging policy, pooled with the log's sessions
        (:math:`\tilde\rho_d`), so that the estimate is the policy's expected observation
        times the rewards of :func:`click_rewards` with the same arguments,
        :math:`\frac{1}{\sum_q S_q}\sum_q S_q \sum_{d \in q} w_\pi(d)\, \hat r_d`, and
        has their expectation (unbiased but for the rows none of the sampled or logged
        rankings shows). A row the new policy observes that none of them shows is refused.
    estimator : {"policy-aware", "doubly-robust"}
    regression : array of shape (n_rows,) or None
        ``"doubly-robust"``: :math:`\hat\gamma` in place of :func:`click_regression`.
    n_samples : int, default 1000
        Rankings per query of a ranker's expected observation.
    seed : int, default 0
        Seed of those rankings and of the regression's query folds.

    Returns
    -------
    PolicyValue
        ``.value``, ``.stderr`` and ``.interval(level)``.

    Raises
    ------
    ValueError
        Where the new policy observes a row with positive probability that the logging
        policy never shows (:math:`\rho_d = 0`, or :math:`\tilde\rho_d = 0`: nothing in the log
        speaks for it), and for bad values as :func:`click_rewards` does, naming them.
    """
    check_choice("estimator", estimator, _VALUE_ESTIMATORS)
    n_samples = check_positive_int("n_samples", n_samples)
    seed = check_seed("seed", seed)
    qid = np.asarray(qid)
    if qid.ndim != 1:
        raise ValueError(f"qid must be one-dimensional, but has shape {qid.shape}.")
    n_rows = qid.shape[0]
    qid = _check_qid(qid, n_rows)
    _check_rows(log, n_rows)
    log.check_queries(qid)
    theta = _position_bias(position_bias, log)
    if hasattr(policy, "expected_exposure"):
        if X is None:
            raise ValueError("X must be given with a ranker as the policy (its expected "
                             "observation), but it is None.")
        w = policy.expected_exposure(X, qid, n_samples=n_samples, weights=theta,
                                     random_state=seed)
    else:
        w = as_finite_vector("policy", policy)
        if w.shape != (n_rows,):
            raise ValueError(f"policy must be a ranker or one expected observation per row, "
                             f"shape ({n_rows},), but has shape {w.shape}.")
        if w.size and w.min() < 0:
            i = int(np.argmin(w))
            raise ValueError(f"policy must hold expected observations >= 0, but policy[{i}] is "
                             f"{float(w[i])!r}.")
    if len(log) == 0:
        raise ValueError("the log must have sessions to estimate a policy's value from, but it "
                         "is empty.")
    clicks = np.bincount(log.row, weights=log.click, minlength=n_rows)
    sessions = _sessions_per_row(log, qid)
    seen = np.bincount(log.row, weights=theta[log.rank - 1], minlength=n_rows)
    if propensities is None:
        _no_samples_without_propensities(propensity_samples)
        rho = np.divide(seen, sessions, out=np.zeros(n_rows), where=sessions > 0)
        source = "the logged display frequencies"
    else:
        rho = _logging_propensities(propensities, propensity_samples, clicks=clicks, seen=seen,
                                    sessions=sessions)
        source = ("propensities" if propensity_samples is None else
                  f"propensities pooled with the log's displays ({propensity_samples} sampled "
                  f"rankings per query and the log's sessions)")
    hint = ("" if propensity_samples is None else
            ", and more propensity_samples find the rows it shows rarely")
    _, q = np.unique(qid, return_inverse=True)
    logged = sessions > 0
    blind = np.flatnonzero((w > 0) & (rho <= 0) & logged)
    if blind.size:
        d = int(blind[0])
        raise ValueError(f"the new policy observes row {d} (expected observation "
                         f"{float(w[d])!r}) that the logging policy never shows (its propensity "
                         f"from {source} is {float(rho[d])!r}): nothing in the log estimates its "
                         f"clicks; the logging policy must show every row the new one can "
                         f"(a stochastic logger){hint}.")
    gamma = (np.zeros(n_rows) if estimator == "policy-aware" else
             _regression(log, n_rows, regression, X=X, qid=qid, theta=theta, seed=seed))
    # per session: the regression's value of its query plus the weighted corrections
    s_ids, s = np.unique(log.session, return_inverse=True)
    s_query = np.empty(s_ids.size, np.int64)
    s_query[s] = q[log.row]
    base = np.bincount(q, weights=w * gamma, minlength=q.max() + 1)
    d = log.row
    with np.errstate(divide="ignore", invalid="ignore"):
        term = np.where(w[d] > 0, w[d] * (log.click - theta[log.rank - 1] * gamma[d])
                        / np.where(rho[d] > 0, rho[d], 1.0), 0.0)
    v = base[s_query] + np.bincount(s, weights=term, minlength=s_ids.size)
    if not np.all(np.isfinite(v)):
        raise ValueError("propensities must be large enough for finite session values, but a "
                         "session's value overflows float64.")
    n_q = np.bincount(s_query, minlength=q.max() + 1).astype(np.float64)
    mean_q = np.divide(np.bincount(s_query, weights=v, minlength=n_q.size), n_q,
                       out=np.zeros(n_q.size), where=n_q > 0)
    sq = np.bincount(s_query, weights=(v - mean_q[s_query]) ** 2, minlength=n_q.size)
    several = n_q > 1
    var_q = np.divide(sq, n_q - 1, out=np.zeros(n_q.size), where=several)
    if several.any():
        var_q[(n_q == 1)] = sq[several].sum() / (n_q[several] - 1).sum()
    else:
        var_q[:] = float(np.var(v, ddof=1)) if v.size > 1 else 0.0
    S = float(v.size)
    return PolicyValue(float(v.mean()), float(math.sqrt((n_q * var_q).sum()) / S), estimator,
                       int(S))


def estimate_position_bias(log: ClickLog, *, n_iter: int = 200, tol: float = 1e-8) -> np.ndarray:
    r"""The position-based model's observation probabilities, estimated from a log by EM.

    The position-based model clicks row :math:`d` at rank :math:`k` with probability
    :math:`\theta_k \gamma_d`. Expectation-maximisation (Wang et al., 2018) alternates: given
    :math:`(\theta, \gamma)`, an entry without a click was seen with probability
    :math:`\theta_k(1-\gamma_d)/(1-\theta_k\gamma_d)` and relevant with probability
    :math:`(1-\theta_k)\gamma_d/(1-\theta_k\gamma_d)` (a clicked entry was both); then
    :math:`\theta_k` becomes the mean of the seen posteriors over the entries at rank
    :math:`k`, and :math:`\gamma_d` the mean of the relevant posteriors over the entries of row
    :math:`d` (one relevance per row, as the log holds no features). The product
    :math:`\theta_k \gamma_d` is identifiable up to a scale only when rows are shown at several
    ranks, which a stochastic logger does and a deterministic one does not. The scale is fixed
    by :math:`\max_k \theta_k = 1`: the most seen logged rank is taken to be always seen, the
    largest scale at which every :math:`\theta_k` is a probability. That rank is usually rank 1
    (then :math:`\theta_1 = 1`), but not in every log (a banner above the results, a grid).
    A common factor in :math:`\theta` divides every reward of :func:`click_rewards` by it, so
    it changes neither the ordering a ranker learns from them nor a policy's estimated
    clicks (its observation scales by the same factor).

    Parameters
    ----------
    log : ClickLog
        The clicks.
    n_iter : int, default 200
        Most iterations.
    tol : float, default 1e-8
        Stops when no parameter moves by more than this in an iteration.

    Returns
    -------
    float64 array of shape (max logged rank,)
        ``theta[k-1]`` for rank ``k``, in (0, 1], divided by the largest over the logged ranks
        (so ``theta.max() == 1``, and ``theta[0] == 1`` when rank 1 is the most seen); a rank
        never logged gets 1. It passes :func:`click_rewards`'s rule for a given position bias.

    Raises
    ------
    ValueError
        For an empty log, or bad ``n_iter`` / ``tol``.
    """
    n_iter = check_positive_int("n_iter", n_iter)
    tol = check_positive_number("tol", tol)
    if len(log) == 0:
        raise ValueError("the log must have entries to estimate the position bias from, but it "
                         "is empty.")
    _, d = np.unique(log.row, return_inverse=True)
    k = log.rank - 1
    K = int(k.max()) + 1
    c = log.click.astype(np.float64)
    n_k = np.bincount(k, minlength=K).astype(np.float64)
    n_d = np.bincount(d).astype(np.float64)
    theta = np.full(K, 0.5)
    gamma = np.full(n_d.size, 0.5)
    for _ in range(n_iter):
        t, g = theta[k], gamma[d]
        den = np.maximum(1.0 - t * g, 1e-12)
        seen = c + (1 - c) * t * (1 - g) / den
        relevant = c + (1 - c) * (1 - t) * g / den
        new_theta = np.divide(np.bincount(k, seen, K), n_k, out=np.ones(K), where=n_k > 0)
        new_theta = np.clip(new_theta, 1e-6, 1 - 1e-6)
        new_gamma = np.clip(np.bincount(d, relevant) / n_d, 1e-6, 1 - 1e-6)
        delta = max(np.abs(new_theta - theta).max(), np.abs(new_gamma - gamma).max())
        theta, gamma = new_theta, new_gamma
        if delta < tol:
            break
    logged = n_k > 0
    return np.where(logged, theta / theta[logged].max(), 1.0)


def _checked_rankings(rankings: Sequence[Any], n_rows: int) -> list[np.ndarray]:
    """Each query's rankings as a 2-d int64 array (one row per session), rows in range."""
    blocks = []
    for i, ranking in enumerate(rankings):
        block = np.asarray(ranking)
        if block.ndim == 1:
            block = block[None, :]
        if block.ndim != 2:
            raise ValueError(f"rankings[{i}] must be one ranking or a 2-d array of rankings "
                             f"(one per session), but has shape {block.shape}.")
        block = as_int_vector(f"rankings[{i}]", block.ravel()).reshape(block.shape)
        if block.size and (block.min() < 0 or block.max() >= n_rows):
            bad = block.min() if block.min() < 0 else block.max()
            raise ValueError(f"rankings[{i}] must hold row indices in [0, {n_rows}) (rows of "
                             f"y), but holds {bad}.")
        blocks.append(block)
    return blocks


def _grade_share(label: np.ndarray, top: float) -> np.ndarray:
    r""":math:`(2^{l}-1)/(2^{t}-1)` for labels :math:`0 \le l \le t`, :math:`t \ge 1`, without
    overflow: :math:`2^{l-t}\,(1-2^{-l})/(1-2^{-t})`, each factor in [0, 1] (exact 0 at
    :math:`l = 0`, 1 at :math:`l = t`), so a label of 1024 or more gives no inf / inf."""
    return (np.exp2(label - top) * -np.expm1(-label * math.log(2.0))
            / -math.expm1(-top * math.log(2.0)))


def seen_click_probability(y: Any, *, noise: float = 0.1, graded: bool = False) -> np.ndarray:
    r"""The probability that :func:`simulate_clicks` clicks a row when it is seen (no trust bias).

    1 for a relevant row (``y > 0``) and ``noise`` otherwise; with ``graded``
    :math:`\epsilon + (1-\epsilon)(2^{y}-1)/(2^{y_{\max}}-1)`, :math:`\epsilon` = ``noise``,
    ``y_max`` the largest label (at least 1). The :math:`\gamma_d` that the rewards of
    :func:`click_rewards` estimate, and that a policy's true expected clicks per session weigh.

    Parameters
    ----------
    y : array of shape (n_rows,)
        True relevance labels, finite and ``>= 0``.
    noise : float, default 0.1
        In [0, 1].
    graded : bool, default False

    Returns
    -------
    float64 array of shape (n_rows,)
    """
    if not is_number(noise) or not 0 <= noise <= 1:
        raise ValueError(f"noise must be a number in [0, 1], but {noise!r} is given.")
    y = check_labels(y, name="y")
    if graded:
        return noise + (1 - noise) * _grade_share(y, max(y.max(initial=0.0), 1.0))
    return np.where(y > 0, 1.0, float(noise))


def simulate_clicks(
    rankings: Sequence[Any], y: Any, *, eta: float = 1.0, noise: float = 0.1,
    top_k: int | None = None, graded: bool = False, trust: tuple[float, float] | None = None,
    seed: int,
) -> ClickLog:
    r"""Simulate position-biased clicks on displayed rankings (the semi-synthetic protocol).

    Rank :math:`k` is seen with probability :math:`\theta_k = (1/k)^\eta`
    (:func:`pbm_position_bias`). A seen row is clicked with probability 1 if relevant
    (``y > 0``) and ``noise`` otherwise; with ``graded=True`` with probability
    :math:`\epsilon + (1-\epsilon)(2^{y}-1)/(2^{y_{\max}}-1)`, :math:`\epsilon` = ``noise``,
    computed without overflow for any label (``y_max`` taken as at least 1)
    (Joachims et al., 2017; Oosterhuis & de Rijke, 2020). ``trust=(eps_plus, eps_minus)`` adds
    trust bias (Agarwal et al., 2019): below rank 1 a seen relevant row's click probability is
    multiplied by ``eps_plus`` and a seen non-relevant row is clicked with probability
    ``eps_minus``.

    Parameters
    ----------
    rankings : sequence of int arrays of shape (n_sessions_q, k_q)
        As :meth:`gbdt_plrank.PLRankRanker.sample_rankings` returns them: one array per query,
        one row per session, row indices into ``y``, top rank first (a 1-d array is one
        session).
    y : array of shape (n_rows,)
        True relevance labels, finite and ``>= 0``.
    eta : float, default 1.0
        Severity of the position bias, finite and ``>= 0``.
    noise : float, default 0.1
        Click probability of a seen non-relevant row, in [0, 1].
    top_k : int or None
        Only the first ``top_k`` ranks are displayed (None: all given ranks).
    graded : bool, default False
        Click probabilities that grow with the grade.
    trust : (float, float) or None
        ``(eps_plus, eps_minus)``, each in [0, 1].
    seed : int
        Seed of the random generator.

    Returns
    -------
    ClickLog
        One entry per displayed row and session; the sessions numbered ``0, 1, ...`` query
        after query, in the order of ``rankings``.

    Raises
    ------
    ValueError
        For a value outside its rule, naming it; a ranking that shows a row twice is refused
        by :class:`ClickLog`.
    """
    pbm_position_bias(1, eta=eta)  # checks eta
    if not is_number(noise) or not 0 <= noise <= 1:
        raise ValueError(f"noise must be a number in [0, 1], but {noise!r} is given.")
    if top_k is not None:
        top_k = check_positive_int("top_k", top_k)
    if trust is not None:
        if len(trust) != 2 or not all(is_number(e) and 0 <= e <= 1 for e in trust):
            raise ValueError(f"trust must be a pair (eps_plus, eps_minus) of numbers in [0, 1], "
                             f"but {trust!r} is given.")
    seed = check_seed("seed", seed)
    y = check_labels(y, name="y")
    blocks = _checked_rankings(rankings, y.size)
    if top_k is not None:
        blocks = [b[:, :top_k] for b in blocks]
    starts = np.cumsum([0] + [b.shape[0] for b in blocks])
    session = np.concatenate([np.zeros(0, np.int64)] + [
        np.repeat(np.arange(a, a + b.shape[0]), b.shape[1]) for a, b in zip(starts, blocks)])
    row = np.concatenate([np.zeros(0, np.int64)] + [b.ravel() for b in blocks])
    rank = np.concatenate([np.zeros(0, np.int64)] + [
        np.tile(np.arange(1, b.shape[1] + 1), b.shape[0]) for b in blocks])
    rng = np.random.default_rng(seed)
    seen = rng.random(row.size) < pbm_position_bias(max(rank.max(initial=1), 1), eta=eta)[rank - 1]
    rel = y[row]
    p = seen_click_probability(y, noise=noise, graded=graded)[row]
    if trust is not None:
        eps_plus, eps_minus = trust
        below = rank > 1
        p = np.where(below & (rel > 0), p * eps_plus, p)
        p = np.where(below & (rel <= 0), eps_minus, p)
    click = (seen & (rng.random(row.size) < p)).astype(np.int64)
    return ClickLog(session=session, row=row, rank=rank, click=click)
