r"""The semi-synthetic click protocol: position-biased clicks on displayed rankings.

Two click models. The position-based model (:func:`simulate_clicks`): rank :math:`k` is seen
with probability :math:`\theta_k = (1/k)^\eta` (Joachims et al., 2017), a seen document clicked
with a probability that depends on its relevance label (Oosterhuis & de Rijke, 2020), optionally
with trust bias (Agarwal et al., 2019). The cascade model (:func:`simulate_cascade_clicks`;
Craswell et al., 2008; Guo et al., 2009): the user reads down the list, clicks a read document
with the same probability, leaves after a click with a probability (satisfied) and after any
document with another (abandonment), so what is read depends on the clicks above.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._util.validation import (
    as_int_vector,
    check_labels,
    check_positive_int,
    check_seed,
    is_number,
)
from ._log import ClickLog

__all__ = [
    "cascade_position_bias",
    "pbm_position_bias",
    "seen_click_probability",
    "simulate_cascade_clicks",
    "simulate_clicks",
]


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


def _checked_rankings(rankings: Sequence[Any], n_rows: int) -> list[np.ndarray]:
    """Each query's rankings as a 2-d int64 array (one row per session), rows in range."""
    blocks = []
    for i, ranking in enumerate(rankings):
        block = np.asarray(ranking)
        if block.ndim == 1:
            block = block[None, :]
        if block.ndim != 2:
            raise ValueError(
                f"rankings[{i}] must be one ranking or a 2-d array of rankings "
                f"(one per session), but has shape {block.shape}."
            )
        block = as_int_vector(f"rankings[{i}]", block.ravel()).reshape(block.shape)
        if block.size and (block.min() < 0 or block.max() >= n_rows):
            bad = block.min() if block.min() < 0 else block.max()
            raise ValueError(
                f"rankings[{i}] must hold row indices in [0, {n_rows}) (rows of "
                f"y), but holds {bad}."
            )
        blocks.append(block)
    return blocks


def _displays(
    rankings: Sequence[Any], n_rows: int, top_k: int | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The session, row and 1-based rank of every displayed entry, session after session
    (query after query, in the order of ``rankings``), ranks ascending within a session."""
    blocks = _checked_rankings(rankings, n_rows)
    if top_k is not None:
        blocks = [b[:, :top_k] for b in blocks]
    starts = np.cumsum([0] + [b.shape[0] for b in blocks])
    session = np.concatenate(
        [np.zeros(0, np.int64)]
        + [np.repeat(np.arange(a, a + b.shape[0]), b.shape[1]) for a, b in zip(starts, blocks)]
    )
    row = np.concatenate([np.zeros(0, np.int64)] + [b.ravel() for b in blocks])
    rank = np.concatenate(
        [np.zeros(0, np.int64)]
        + [np.tile(np.arange(1, b.shape[1] + 1), b.shape[0]) for b in blocks]
    )
    return session, row, rank


def _grade_share(label: np.ndarray, top: float) -> np.ndarray:
    r""":math:`(2^{l}-1)/(2^{t}-1)` for labels :math:`0 \le l \le t`, :math:`t \ge 1`, without
    overflow: :math:`2^{l-t}\,(1-2^{-l})/(1-2^{-t})`, each factor in [0, 1] (exact 0 at
    :math:`l = 0`, 1 at :math:`l = t`), so a label of 1024 or more gives no inf / inf."""
    return (
        np.exp2(label - top) * -np.expm1(-label * math.log(2.0)) / -math.expm1(-top * math.log(2.0))
    )


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
    rankings: Sequence[Any],
    y: Any,
    *,
    eta: float = 1.0,
    noise: float = 0.1,
    top_k: int | None = None,
    graded: bool = False,
    trust: tuple[float, float] | None = None,
    seed: int,
) -> ClickLog:
    r"""Simulate position-biased clicks on displayed rankings (the semi-synthetic protocol).

    Rank :math:`k` is seen with probability :math:`\theta_k = (1/k)^\eta`
    (:func:`pbm_position_bias`); a seen row is clicked with probability 1 if relevant
    (``y > 0``) and ``noise`` otherwise. The protocol and its sources: :doc:`/guide/clicks`,
    "The experiment".

    Parameters
    ----------
    rankings : sequence of int arrays of shape (n_sessions_q, k_q)
        As :meth:`gbdt_plrank.PLRankRanker.sample_rankings` returns them: one array per query,
        one row per session, row indices into ``y``, top rank first (1-d: one session).
    y : array of shape (n_rows,)
        True relevance labels, finite and ``>= 0``.
    eta : float, default 1.0
        Severity of the position bias, finite and ``>= 0``.
    noise : float, default 0.1
        Click probability of a seen non-relevant row, in [0, 1].
    top_k : int or None
        Only the first ``top_k`` ranks are displayed (None: all given ranks).
    graded : bool, default False
        Click probabilities that grow with the grade, :math:`\epsilon + (1-\epsilon)(2^{y}-1)
        /(2^{y_{\max}}-1)` with :math:`\epsilon` = ``noise`` (``y_max`` at least 1; no overflow).
    trust : (float, float) or None
        ``(eps_plus, eps_minus)`` in [0, 1]: below rank 1, trust bias multiplies a seen relevant
        row's click probability by ``eps_plus`` and clicks a seen non-relevant one at ``eps_minus``.
    seed : int
        Seed of the random generator.

    Returns
    -------
    ClickLog
        One entry per displayed row and session, sessions numbered ``0, 1, ...`` query after
        query, in the order of ``rankings``.

    Raises
    ------
    ValueError
        For a value outside its rule, naming it (a row shown twice in a session: ClickLog's).
    """
    pbm_position_bias(1, eta=eta)  # checks eta
    if not is_number(noise) or not 0 <= noise <= 1:
        raise ValueError(f"noise must be a number in [0, 1], but {noise!r} is given.")
    if top_k is not None:
        top_k = check_positive_int("top_k", top_k)
    if trust is not None:
        if len(trust) != 2 or not all(is_number(e) and 0 <= e <= 1 for e in trust):
            raise ValueError(
                f"trust must be a pair (eps_plus, eps_minus) of numbers in [0, 1], "
                f"but {trust!r} is given."
            )
    seed = check_seed("seed", seed)
    y = check_labels(y, name="y")
    session, row, rank = _displays(rankings, y.size, top_k)
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


def _check_probability(name: str, value: Any, *, below_one: bool = False) -> float:
    """``value`` as a float in [0, 1] (in [0, 1) with ``below_one``), or a ValueError naming it."""
    top_ok = (lambda v: v < 1) if below_one else (lambda v: v <= 1)
    if not is_number(value) or not math.isfinite(value) or value < 0 or not top_ok(value):
        rule = "[0, 1)" if below_one else "[0, 1]"
        raise ValueError(f"{name} must be a number in {rule}, but {value!r} is given.")
    return float(value)


def cascade_position_bias(K: int, *, stop: float = 0.2) -> np.ndarray:
    r"""The cascade model's probability that rank :math:`k` is read, absent satisfied clicks:
    :math:`(1 - \mathrm{stop})^{k-1}` for :math:`k = 1..K`.

    Under :func:`simulate_cascade_clicks` with ``satisfaction=0`` the user leaves after each
    document with probability ``stop`` whatever was clicked, so this is exactly the position
    bias of a position-based model, what :func:`click_rewards` divides by; with
    ``satisfaction > 0`` a satisfied click above also ends the reading, and a rank is read less
    often than this.

    Parameters
    ----------
    K : int
        Number of ranks, ``>= 1``.
    stop : float, default 0.2
        Probability of leaving after a document, in [0, 1).

    Returns
    -------
    float64 array of shape (K,)
        ``theta[k-1]`` for rank ``k``; ``theta[0] == 1``.
    """
    K = check_positive_int("K", K)
    stop = _check_probability("stop", stop, below_one=True)
    return (1.0 - stop) ** np.arange(K, dtype=np.float64)


def simulate_cascade_clicks(
    rankings: Sequence[Any],
    y: Any,
    *,
    stop: float = 0.2,
    satisfaction: float = 0.0,
    noise: float = 0.1,
    top_k: int | None = None,
    graded: bool = False,
    seed: int,
) -> ClickLog:
    r"""Simulate cascade clicks on displayed rankings: the user reads down the list.

    The user reads rank 1; a read document is clicked with the probability of
    :func:`seen_click_probability` (1 if relevant, ``noise`` if not; graded with ``graded``);
    after a click the user leaves (satisfied) with probability ``satisfaction``, and otherwise
    with probability ``stop`` before the next rank: :math:`P(\text{read } k+1 \mid \text{read }
    k,\ c_k) = (1 - \mathrm{stop})\,(1 - \mathrm{satisfaction}\; c_k)`. With ``satisfaction = 0``
    it is the position-based model of :func:`cascade_position_bias`; the other special cases
    and the sources: :doc:`/guide/clicks`, "Click logs and rewards".

    Parameters
    ----------
    rankings : sequence of int arrays of shape (n_sessions_q, k_q)
        As for :func:`simulate_clicks`: one array per query, one row per session.
    y : array of shape (n_rows,)
        True relevance labels, finite and ``>= 0``.
    stop, satisfaction : float, default 0.2 and 0.0
        The probabilities of leaving after a document, in [0, 1), and after a click, in [0, 1].
    noise : float, default 0.1
        Click probability of a read non-relevant row, in [0, 1].
    top_k : int or None
        Only the first ``top_k`` ranks are displayed (None: all given ranks).
    graded : bool, default False
        Click probabilities that grow with the grade (as :func:`seen_click_probability`).
    seed : int
        Seed of the random generator.

    Returns
    -------
    ClickLog
        One entry per displayed row and session (read or not), numbered as by
        :func:`simulate_clicks`.

    Raises
    ------
    ValueError
        For a value outside its rule, naming it (a row shown twice in a session: ClickLog's).
    """
    stop = _check_probability("stop", stop, below_one=True)
    satisfaction = _check_probability("satisfaction", satisfaction)
    if top_k is not None:
        top_k = check_positive_int("top_k", top_k)
    seed = check_seed("seed", seed)
    p = seen_click_probability(y, noise=noise, graded=graded)  # checks noise and y
    session, row, rank = _displays(rankings, p.size, top_k)
    rng = np.random.default_rng(seed)
    attracted = rng.random(row.size) < p[row]
    leaves = (rng.random(row.size) < stop) | (attracted & (rng.random(row.size) < satisfaction))
    # an entry is read when no earlier entry of its session made the user leave (the entries
    # of a session are contiguous, ranks ascending)
    before = np.cumsum(leaves) - leaves
    first = np.flatnonzero(np.r_[True, session[1:] != session[:-1]]) if row.size else row
    start = np.repeat(before[first], np.diff(np.r_[first, row.size]))
    click = (attracted & (before == start)).astype(np.int64)
    return ClickLog(session=session, row=row, rank=rank, click=click)
