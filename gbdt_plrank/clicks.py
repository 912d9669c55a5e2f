r"""Learning to rank from clicks: click logs, position bias, and unbiased per-row rewards.

A click log holds one entry per displayed document per session. Under the position-based model
(PBM) a document ``d`` shown at rank ``k`` is clicked with probability
:math:`\theta_k \, \gamma_d`: it is seen with probability :math:`\theta_k` and clicked when seen
with probability :math:`\gamma_d`. Policy-aware inverse propensity scoring (Oosterhuis & de Rijke,
SIGIR 2020) divides a row's clicks by its expected observation under the logging policy,

.. math::

    \hat r_d = \frac{\sum_s c_{sd}}{\sum_s \theta_{\mathrm{rank}_s(d)}},

so that :math:`\hat r_d` estimates :math:`\gamma_d` whenever the logger shows ``d`` with positive
probability (a stochastic Plackett-Luce logger does; a deterministic top-k logger does not).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "ClickLog",
    "click_rewards",
    "estimate_position_bias",
    "simulate_clicks",
]


def _int_array(name: str, value: Any) -> np.ndarray:
    arr = np.asarray(value)
    if arr.ndim != 1:
        raise ValueError(f"{name} should be one-dimensional, but shape {arr.shape} is given")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        as_int = arr.astype(np.int64)
        if not np.array_equal(as_int, arr):
            bad = arr[np.flatnonzero(as_int != arr)[0]]
            raise ValueError(f"{name} should hold integers, but {bad.item()!r} is given")
        arr = as_int
    return arr.astype(np.int64)


@dataclass(frozen=True, init=False)
class ClickLog:
    """A click log: one entry per displayed document per session.

    Parameters
    ----------
    session : array-like of int, shape (n_entries,)
        Session id of each entry.
    row : array-like of int, shape (n_entries,)
        Index of the displayed document into the feature rows, ``>= 0``.
    rank : array-like of int, shape (n_entries,)
        1-based position at which it was shown; distinct within a session.
    click : array-like of 0/1, shape (n_entries,)
        Whether it was clicked.
    """

    session: np.ndarray
    row: np.ndarray
    rank: np.ndarray
    click: np.ndarray

    def __init__(self, *, session: Any, row: Any, rank: Any, click: Any) -> None:
        arrays = {name: _int_array(name, v) for name, v in
                  (("session", session), ("row", row), ("rank", rank), ("click", click))}
        n = {a.size for a in arrays.values()}
        if len(n) != 1:
            sizes = {k: a.size for k, a in arrays.items()}
            raise ValueError(f"session, row, rank and click should have one length, but {sizes}")
        if arrays["row"].size and arrays["row"].min() < 0:
            raise ValueError(f"row should be >= 0, but {arrays['row'].min()} is given")
        if arrays["rank"].size and arrays["rank"].min() < 1:
            raise ValueError(f"rank should be >= 1 (1-based), but {arrays['rank'].min()} is given")
        bad = ~np.isin(arrays["click"], (0, 1))
        if bad.any():
            raise ValueError(f"click should be 0 or 1, but {arrays['click'][bad][0]} is given")
        pairs = np.stack([arrays["session"], arrays["rank"]], axis=1)
        uniq, counts = np.unique(pairs, axis=0, return_counts=True)
        if (counts > 1).any():
            s, k = uniq[np.argmax(counts > 1)]
            raise ValueError(
                f"ranks within a session should be distinct, but session {s} shows rank {k} "
                f"{counts.max()} times")
        for k, a in arrays.items():
            a.setflags(write=False)
            object.__setattr__(self, k, a)

    @classmethod
    def from_frame(cls, df: Any) -> ClickLog:
        """Build from a data frame with columns ``session``, ``row``, ``rank``, ``click``."""
        missing = [c for c in ("session", "row", "rank", "click") if c not in df.columns]
        if missing:
            raise ValueError(f"the frame should have columns session, row, rank, click, "
                             f"but {missing} are missing")
        return cls(session=np.asarray(df["session"]), row=np.asarray(df["row"]),
                   rank=np.asarray(df["rank"]), click=np.asarray(df["click"]))

    def __len__(self) -> int:
        return int(self.row.size)

    def check_queries(self, qid: Any) -> None:
        """Check that every row is in ``range(len(qid))`` and every session within one query."""
        qid = np.asarray(qid)
        if self.row.size and self.row.max() >= qid.size:
            raise ValueError(f"row should be < n_rows = {qid.size}, but {self.row.max()} is given")
        _, q = np.unique(qid, return_inverse=True)
        q = q[self.row]
        _, s = np.unique(self.session, return_inverse=True)
        lo = np.full(s.max(initial=-1) + 1, np.iinfo(np.int64).max)
        hi = np.full_like(lo, -1)
        np.minimum.at(lo, s, q)
        np.maximum.at(hi, s, q)
        bad = np.flatnonzero(lo != hi)
        if bad.size:
            sid = self.session[np.argmax(s == bad[0])]
            raise ValueError(f"the rows of one session should be in one query, but session "
                             f"{sid} shows rows of several queries")


def _theta(position_bias: Any, log: ClickLog) -> np.ndarray:
    theta = np.asarray(position_bias, dtype=np.float64)
    if theta.ndim != 1 or theta.size == 0:
        raise ValueError(f"position_bias should be a non-empty 1-d array, but shape "
                         f"{theta.shape} is given")
    if not np.all((theta > 0) & (theta <= 1)):
        raise ValueError(f"position_bias should be in (0, 1], but {theta} is given")
    if log.rank.size and log.rank.max() > theta.size:
        raise ValueError(f"position_bias should cover every logged rank, but rank "
                         f"{log.rank.max()} is logged and {theta.size} ranks are given")
    return theta


def click_rewards(
    log: ClickLog, n_rows: int, *, position_bias: Any, estimator: str = "policy-aware",
    propensities: Any = None, qid: Any = None,
) -> np.ndarray:
    r"""Per-row reward estimates from a click log, to train on as labels (``gain="linear"``).

    Parameters
    ----------
    log : ClickLog
    n_rows : int
        Number of feature rows; rows never shown get reward 0 (nothing is known of them, and the
        policy-aware estimator is unbiased only for rows the logger shows with positive
        probability).
    position_bias : array of shape (K,) or "estimate"
        :math:`\theta_k` = ``position_bias[k-1]``, the probability that rank ``k`` is seen;
        ``"estimate"`` uses :func:`estimate_position_bias`.
    estimator : {"policy-aware", "naive"}
        ``"policy-aware"``: :math:`\sum_s c_{sd} / \sum_s \theta_{\mathrm{rank}_s(d)}` from the
        logged display frequencies, or :math:`\sum_s c_{sd} / (S_q\, \rho_d)` with given
        ``propensities`` :math:`\rho_d` (expected observation of row ``d`` per session of its
        query under the logging policy) and :math:`S_q` the sessions of its query.
        ``"naive"``: the click-through rate, clicks over displays.
    propensities : array of shape (n_rows,) or None
    qid : array of shape (n_rows,) or None
        Query of every row: checks that each session stays within one query; required with
        ``propensities``.
    """
    if estimator not in ("policy-aware", "naive"):
        raise ValueError(f"estimator should be 'policy-aware' or 'naive', but {estimator!r} "
                         "is given")
    if log.row.size and log.row.max() >= n_rows:
        raise ValueError(f"row should be < n_rows = {n_rows}, but {log.row.max()} is given")
    if qid is not None:
        if np.asarray(qid).shape != (n_rows,):
            raise ValueError(f"qid should have shape ({n_rows},), but "
                             f"{np.asarray(qid).shape} is given")
        log.check_queries(qid)
    clicks = np.bincount(log.row, weights=log.click, minlength=n_rows)
    if estimator == "naive":
        shows = np.bincount(log.row, minlength=n_rows)
        return np.divide(clicks, shows, out=np.zeros(n_rows), where=shows > 0)
    if isinstance(position_bias, str):
        if position_bias != "estimate":
            raise ValueError(f"position_bias should be an array or 'estimate', but "
                             f"{position_bias!r} is given")
        position_bias = estimate_position_bias(log)
    theta = _theta(position_bias, log)
    if propensities is None:
        denom = np.bincount(log.row, weights=theta[log.rank - 1], minlength=n_rows)
        return np.divide(clicks, denom, out=np.zeros(n_rows), where=denom > 0)
    if qid is None:
        raise ValueError("qid should be given with propensities (sessions are counted per query)")
    rho = np.asarray(propensities, dtype=np.float64)
    if rho.shape != (n_rows,) or not np.all(np.isfinite(rho)) or rho.min(initial=0) < 0:
        raise ValueError(f"propensities should be finite, >= 0 and of shape ({n_rows},)")
    _, q = np.unique(np.asarray(qid), return_inverse=True)
    first = np.unique(log.session, return_index=True)[1]
    n_sessions = np.bincount(q[log.row[first]], minlength=q.max(initial=-1) + 1)[q]
    denom = n_sessions * rho
    if np.any((clicks > 0) & (denom <= 0)):
        d = np.flatnonzero((clicks > 0) & (denom <= 0))[0]
        raise ValueError(f"propensities should be > 0 for clicked rows, but row {d} has "
                         f"{rho[d]}")
    return np.divide(clicks, denom, out=np.zeros(n_rows), where=denom > 0)


def estimate_position_bias(log: ClickLog, *, n_iter: int = 200, tol: float = 1e-8) -> np.ndarray:
    r"""Position-based model's observation probabilities by expectation-maximisation.

    The PBM (Wang et al., WSDM 2018, "Position Bias Estimation for Unbiased Learning to Rank in
    Personal Search") clicks row ``d`` at rank ``k`` with probability
    :math:`\theta_k \gamma_d`. Given the current :math:`(\theta, \gamma)`, an unclicked entry was
    seen with probability :math:`\theta_k(1-\gamma_d)/(1-\theta_k\gamma_d)` and relevant with
    probability :math:`(1-\theta_k)\gamma_d/(1-\theta_k\gamma_d)`; each parameter is updated to
    the mean of its posterior over the entries. It is identifiable when rows are shown at several
    ranks (a stochastic logger). Returns ``theta`` (``theta[k-1]`` for rank ``k``) divided by
    :math:`\theta_1`.
    """
    if len(log) == 0:
        raise ValueError("the log should have entries, but it is empty")
    if (log.rank == 1).sum() == 0:
        raise ValueError("the log should show rank 1 at least once (theta is relative to it)")
    rows, d = np.unique(log.row, return_inverse=True)
    k = log.rank - 1
    K = int(k.max()) + 1
    c = log.click.astype(np.float64)
    n_k = np.bincount(k, minlength=K).astype(np.float64)
    n_d = np.bincount(d).astype(np.float64)
    theta = np.full(K, 0.5)
    gamma = np.full(rows.size, 0.5)
    for _ in range(n_iter):
        t, g = theta[k], gamma[d]
        den = np.maximum(1.0 - t * g, 1e-12)
        seen = c + (1 - c) * t * (1 - g) / den
        rel = c + (1 - c) * (1 - t) * g / den
        new_theta = np.divide(np.bincount(k, seen, K), n_k, out=np.ones(K), where=n_k > 0)
        new_gamma = np.bincount(d, rel) / n_d
        new_theta = np.clip(new_theta, 1e-6, 1 - 1e-6)
        new_gamma = np.clip(new_gamma, 1e-6, 1 - 1e-6)
        delta = max(np.abs(new_theta - theta).max(), np.abs(new_gamma - gamma).max())
        theta, gamma = new_theta, new_gamma
        if delta < tol:
            break
    return theta / theta[0]


def simulate_clicks(
    rankings: Any, y: Any, *, eta: float = 1.0, noise: float = 0.1, top_k: int | None = None,
    graded: bool = False, trust: tuple[float, float] | None = None, seed: int,
) -> ClickLog:
    r"""Simulate position-biased clicks on displayed rankings (semi-synthetic protocol).

    Rank ``k`` is seen with probability :math:`\theta_k = (1/k)^\eta`. A seen row is clicked with
    probability 1 if relevant (``y > 0``) and ``noise`` otherwise; with ``graded=True`` with
    probability :math:`\epsilon + (1-\epsilon)(2^{y}-1)/(2^{y_{max}}-1)`, :math:`\epsilon` =
    ``noise``. ``trust=(eps_plus, eps_minus)`` adds trust bias (Agarwal et al., WWW 2019): below
    rank 1 a seen relevant row's click probability is multiplied by ``eps_plus`` and a seen
    non-relevant row is clicked with probability ``eps_minus``.

    Parameters
    ----------
    rankings : list of int arrays of shape (n_sessions_q, k_q)
        As :meth:`~gbdt_plrank.PLRankRanker.sample_rankings` returns them: row indices, top rank first; each
        ranking is one session.
    y : array of shape (n_rows,)
        True relevance labels.
    top_k : int or None
        Only the first ``top_k`` ranks are displayed.
    seed : int
        Seed of the random generator.
    """
    if eta < 0 or not np.isfinite(eta):
        raise ValueError(f"eta should be finite and >= 0, but {eta} is given")
    if not 0 <= noise <= 1:
        raise ValueError(f"noise should be in [0, 1], but {noise} is given")
    y = np.asarray(y, dtype=np.float64)
    blocks = [np.atleast_2d(np.asarray(r, dtype=np.int64)) for r in rankings]
    if top_k is not None:
        if top_k < 1:
            raise ValueError(f"top_k should be >= 1, but {top_k} is given")
        blocks = [b[:, :top_k] for b in blocks]
    rng = np.random.default_rng(seed)
    sessions, rows, ranks = [], [], []
    start = 0
    for b in blocks:
        n, k = b.shape
        sessions.append(np.repeat(np.arange(start, start + n), k))
        rows.append(b.ravel())
        ranks.append(np.tile(np.arange(1, k + 1), n))
        start += n
    session = np.concatenate(sessions) if sessions else np.zeros(0, np.int64)
    row = np.concatenate(rows) if rows else np.zeros(0, np.int64)
    rank = np.concatenate(ranks) if ranks else np.zeros(0, np.int64)
    seen = rng.random(row.size) < (1.0 / rank) ** eta
    rel = y[row]
    if graded:
        top = max(y.max(initial=0.0), 1.0)
        p = noise + (1 - noise) * (2.0 ** rel - 1) / (2.0 ** top - 1)
    else:
        p = np.where(rel > 0, 1.0, noise)
    if trust is not None:
        eps_plus, eps_minus = trust
        below = rank > 1
        p = np.where(below & (rel > 0), p * eps_plus, p)
        p = np.where(below & (rel <= 0), eps_minus, p)
    click = (seen & (rng.random(row.size) < p)).astype(np.int64)
    return ClickLog(session=session, row=row, rank=rank, click=click)
