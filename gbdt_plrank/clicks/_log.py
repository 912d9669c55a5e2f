"""The click log: one entry per displayed document per session, checked once.

:class:`ClickLog` holds the four columns; the functions below check a log against the feature
rows and query ids it refers to and count what every estimator reads from it (a row's clicks,
its displays, its observation under a position bias, the sessions of its query).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._util.validation import as_int_vector, check_at_least, check_same_length

__all__ = [
    "ClickLog",
    "check_qid",
    "check_rows",
    "row_clicks",
    "row_observation",
    "row_shows",
    "sessions_per_row",
]

_COLUMNS = ("session", "row", "rank", "click")


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
        arrays = {
            name: as_int_vector(name, value).copy()
            for name, value in zip(_COLUMNS, (session, row, rank, click))
        }
        check_same_length(**arrays)
        check_at_least("row", arrays["row"], 0)
        check_at_least("rank", arrays["rank"], 1, rule=" (ranks are 1-based)")
        bad = np.flatnonzero((arrays["click"] != 0) & (arrays["click"] != 1))
        if bad.size:
            i = int(bad[0])
            raise ValueError(f"click must be 0 or 1, but click[{i}] is {arrays['click'][i]}.")
        for name, rule in (
            ("rank", "a session shows one document per rank"),
            ("row", "a session shows a document once"),
        ):
            repeat = _first_repeat(arrays["session"], arrays[name])
            if repeat is not None:
                sid, value, count = repeat
                raise ValueError(
                    f"{name} must be distinct within a session ({rule}), but "
                    f"session {sid} shows {name} {value} {count} times."
                )
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
            raise ValueError(
                f"the frame must have the columns {', '.join(_COLUMNS)}, but {missing} are missing."
            )
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
        if not self.row.size:  # nothing to check (and no first row to read)
            return
        if self.row.max() >= qid.shape[0]:
            i = int(np.argmax(self.row))
            raise ValueError(
                f"row must be < n_rows = {qid.shape[0]}, but row[{i}] is {self.row[i]}."
            )
        order = np.argsort(self.session, kind="stable")
        s, q = self.session[order], qid[self.row[order]]
        starts = np.flatnonzero(np.r_[True, s[1:] != s[:-1]])
        first = np.repeat(q[starts], np.diff(np.r_[starts, s.size]))
        bad = np.flatnonzero(q != first)
        if bad.size:
            j = int(bad[0])
            raise ValueError(
                f"the rows of a session must belong to one query, but session "
                f"{s[j]} shows rows of queries {first[j].item()!r} and {q[j].item()!r}."
            )


def check_rows(log: ClickLog, n_rows: int) -> None:
    """Every row of ``log`` in ``range(n_rows)``."""
    if log.row.size and log.row.max() >= n_rows:
        i = int(np.argmax(log.row))
        raise ValueError(f"row must be < n_rows = {n_rows}, but row[{i}] is {log.row[i]}.")


def check_qid(qid: Any, n_rows: int) -> np.ndarray:
    """``qid`` as an array of one query id per row."""
    qid = np.asarray(qid)
    if qid.shape != (n_rows,):
        raise ValueError(
            f"qid must have shape ({n_rows},) (one query id per row), but has shape {qid.shape}."
        )
    return qid


def row_clicks(log: ClickLog, n_rows: int) -> np.ndarray:
    """Every row's clicks over the log (float64, shape (n_rows,))."""
    return np.bincount(log.row, weights=log.click, minlength=n_rows)


def row_shows(log: ClickLog, n_rows: int) -> np.ndarray:
    """Every row's displays over the log (int64, shape (n_rows,))."""
    return np.bincount(log.row, minlength=n_rows)


def row_observation(log: ClickLog, n_rows: int, theta: np.ndarray) -> np.ndarray:
    r"""Every row's observation over the log, :math:`\sum_s \theta_{\mathrm{rank}_s(d)}`
    (float64, shape (n_rows,); ``theta`` covers the logged ranks)."""
    return np.bincount(log.row, weights=theta[log.rank - 1], minlength=n_rows)


def sessions_per_row(log: ClickLog, qid: np.ndarray) -> np.ndarray:
    """The number of logged sessions of every row's query (float64, shape (n_rows,))."""
    _, q = np.unique(qid, return_inverse=True)
    _, first = np.unique(log.session, return_index=True)
    return np.bincount(q[log.row[first]], minlength=q.max() + 1)[q].astype(np.float64)
