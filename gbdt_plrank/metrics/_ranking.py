"""Ranking metrics: the metric@k of the ranking by score, per query and over a dataset.

HIGH LEVEL. Each public function checks and converts its input once (contiguous ``float64``
labels and scores, ``int64`` query boundaries) and hands it to Numba kernels
(:mod:`gbdt_plrank._kernels.metrics`), which compute every metric from one rank-weighted sum.
The arguments and conventions the metrics share are those of :mod:`gbdt_plrank.metrics`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .._groups import resolve_groups
from .._kernels import metrics as _metric_kernels
from .._ranking_metric import GAINS, dcg_weights, gains, ranks_used
from .._util.docs import shared_entries
from .._util.validation import (
    as_finite_vector,
    check_choice,
    check_labels,
    check_positive_int,
    check_same_length,
    is_number,
)

__all__ = [
    "EMPTY_QUERY_VALUE",
    "GAINS",
    "average_relevance_position",
    "check_empty",
    "dataset_ndcg",
    "dcg",
    "mean_over_queries",
    "mrr",
    "ndcg",
    "precision_at_k",
    "recall_at_k",
]

FloatArray = npt.NDArray[np.float64]

#: What a query without relevant documents scores in NDCG@k, recall@k and MRR unless ``empty``
#: says otherwise: 1, as in XGBoost's ``ndcg@k`` and LightGBM's ``ndcg`` (the one owner of the
#: convention: the rankers' ``score`` and ``expected_metric`` and the training's eval metrics
#: read it from here).
EMPTY_QUERY_VALUE = 1.0

#: The numpydoc entries the metrics share, filled in for their ``.. metric-docs::`` lines.
_ENTRIES = {
    "labels": (
        "y_true, y_score : array-like (n,)\n    Labels (finite, ``>= 0``) and scores (finite)."
    ),
    "labels_gain": (
        "y_true, y_score : array-like (n,)\n"
        '    Labels (finite, ``>= 0``; ``<= 31`` with ``gain="exp"``; of any sign with\n'
        '    ``gain="linear"``) and scores (finite).'
    ),
    "fair_labels": (
        "y_true : array-like (n,)\n"
        "    Labels (finite, ``>= 0``; at most 31 with the exponential gain)."
    ),
    "group": (
        "group : array-like or None, default None\n"
        "    Per-row query ids, group sizes, or ``None`` for one query (see the module docstring)."
    ),
    "per_query": (
        "per_query : bool, default False\n"
        "    Return the per-query values ``(G,)`` instead of their mean."
    ),
    "returns": "\nReturns\n-------\nfloat or ndarray of shape (G,)",
    "raises_empty": (
        "\nRaises\n------\nValueError\n"
        "    As :func:`precision_at_k`, and for ``empty`` outside ``[0, 1]`` (NaN allowed)."
    ),
}


# --------------------------------------------------------------------------------------------
# Input checks and the call of the kernel
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Ranked:
    """Validated rows in grouped order: labels, scores and query boundaries."""

    y: FloatArray
    s: FloatArray
    ptr: npt.NDArray[np.int64]

    @property
    def sizes(self) -> npt.NDArray[np.int64]:
        return np.diff(self.ptr)


def _check_k(k: object) -> int | None:
    return None if k is None else check_positive_int("k", k)


def check_empty(empty: object) -> float:
    """``empty`` must be a number in [0, 1] or NaN."""
    if not is_number(empty) or not (math.isnan(empty) or 0.0 <= empty <= 1.0):
        raise ValueError(f"empty must be a number in [0, 1] or nan, but {empty!r} is given.")
    return float(empty)


def _ranked(
    y_true: object,
    y_score: object,
    group: object,
    *,
    exp_gain: bool = False,
    signed: bool | None = None,
) -> _Ranked:
    y = check_labels(y_true, gain="exp" if exp_gain else "linear", name="y_true", signed=signed)
    s = as_finite_vector("y_score", y_score)
    check_same_length(y_true=y, y_score=s)
    groups = resolve_groups(group, y.shape[0])
    return _Ranked(
        np.ascontiguousarray(y[groups.order]),
        np.ascontiguousarray(s[groups.order]),
        np.ascontiguousarray(groups.ptr, dtype=np.int64),
    )


def _relevant(y: FloatArray) -> FloatArray:
    """The relevance indicator ``y > 0`` as floats."""
    return (y > 0).astype(np.float64)


def _sums(
    r: _Ranked,
    gains: FloatArray,
    theta: FloatArray,
    *,
    first_only: bool = False,
    want_ideal: bool = False,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Per query: the rank-weighted sum, its ideal value (NaN unless asked) and the total gain."""
    G = r.ptr.shape[0] - 1
    value = np.empty(G)
    ideal = np.full(G, np.nan)
    total = np.empty(G)
    _metric_kernels.query_values(
        np.ascontiguousarray(gains, dtype=np.float64),
        r.s,
        r.ptr,
        np.ascontiguousarray(theta, dtype=np.float64),
        first_only,
        want_ideal,
        value,
        ideal,
        total,
    )
    return value, ideal, total


def _normalised(value: FloatArray, norm: FloatArray, empty: float) -> FloatArray:
    """``value / norm``, and ``empty`` where ``norm`` is 0."""
    out = np.full(value.shape[0], empty)
    ok = norm > 0
    out[ok] = value[ok] / norm[ok]
    return out


def _result(per_query_values: FloatArray, per_query: bool) -> float | FloatArray:
    return per_query_values if per_query else mean_over_queries(per_query_values)


def mean_over_queries(per_query_values: FloatArray) -> float:
    """The unweighted mean of per-query values, NaN values left out (NaN when none is left)."""
    kept = per_query_values[~np.isnan(per_query_values)]
    return float(kept.mean()) if kept.size else math.nan


def _checked(
    y_true: object,
    y_score: object,
    group: object,
    k: object,
    *,
    exp_gain: bool = False,
    signed: bool | None = None,
) -> tuple[_Ranked, int]:
    """The validated rows and the length of their rank weights: ``k`` capped at the longest query.

    ``k`` is checked before the rows, as every metric's errors say.
    """
    k = _check_k(k)
    r = _ranked(y_true, y_score, group, exp_gain=exp_gain, signed=signed)
    return r, ranks_used(k, r.ptr)


def _dcg_parts(
    y_true: object,
    y_score: object,
    group: object,
    k: object,
    gain: object,
    *,
    signed: bool = False,
) -> tuple[FloatArray, FloatArray]:
    """Per-query DCG@k and ideal DCG@k (``signed``: negative labels allowed with the linear
    gain; the ideal DCG is that of the gains' positive part, the gains' own when none is
    negative)."""
    gain = check_choice("gain", gain, GAINS)
    r, K = _checked(
        y_true,
        y_score,
        group,
        k,
        exp_gain=gain == "exp",
        signed=True if signed and gain == "linear" else None,
    )
    g, theta = gains(r.y, gain), dcg_weights(K)
    value, ideal, _ = _sums(r, g, theta, want_ideal=True)
    if g.size and g.min() < 0:
        _, ideal, _ = _sums(r, np.maximum(g, 0.0), theta, want_ideal=True)
    return value, ideal


# --------------------------------------------------------------------------------------------
# Public metrics
# --------------------------------------------------------------------------------------------
def dcg(
    y_true: npt.ArrayLike,
    y_score: npt.ArrayLike,
    group: npt.ArrayLike | None = None,
    *,
    k: int | None = 10,
    gain: str = "exp",
    per_query: bool = False,
) -> float | FloatArray:
    r"""Discounted cumulative gain at ``k`` (Järvelin and Kekäläinen 2002), mean over queries.

    .. math::

        \mathrm{DCG@}k = \sum_{r=1}^{\min(k, D)} \frac{2^{y_{\pi(r)}} - 1}{\log_2(r + 1)},

    where :math:`\pi(r)` is the document at rank :math:`r` by descending score (ties in input
    order) among the query's :math:`D` documents; the gain is :math:`y_{\pi(r)}` itself with
    ``gain="linear"``.

    Parameters
    ----------
    y_true, y_score : array-like (n,)
        Labels (finite, ``>= 0``; ``<= 31`` with ``gain="exp"``; of any sign with
        ``gain="linear"``, e.g. doubly robust click rewards) and scores (finite).
    .. metric-docs:: group
    k : int or None, default 10
        Cut-off ``>= 1``; ``None`` ranks whole queries.
    gain : {"exp", "linear"}, default "exp"
        ``2**y - 1`` (XGBoost's and LightGBM's default) or ``y`` (XGBoost's
        ``ndcg_exp_gain=False``; LightGBM's ``label_gain=[0, 1, 2, ...]``).
    .. metric-docs:: per_query returns

    Raises
    ------
    ValueError
        On non-finite labels, negative labels with ``gain="exp"``, non-finite scores, lengths
        that differ, ``k < 1``, an unknown ``gain`` or a ``group`` that is neither ids nor sizes.
    """
    value, _ = _dcg_parts(y_true, y_score, group, k, gain, signed=True)
    return _result(value, per_query)


def ndcg(
    y_true: npt.ArrayLike,
    y_score: npt.ArrayLike,
    group: npt.ArrayLike | None = None,
    *,
    k: int | None = 10,
    gain: str = "exp",
    empty: float = EMPTY_QUERY_VALUE,
    per_query: bool = False,
) -> float | FloatArray:
    r"""Normalised DCG at ``k`` (Järvelin and Kekäläinen 2002), mean over queries.

    Each query's DCG@k is divided by its ideal DCG@k, the DCG@k of its documents ranked by
    descending label:

    .. math::

        \mathrm{NDCG@}k = \frac{\mathrm{DCG@}k(\pi)}{\mathrm{DCG@}k(\pi^*)},
        \qquad \frac{1}{G} \sum_{q=1}^{G} \mathrm{NDCG@}k_q \text{ over the } G \text{ queries.}

    A query without relevant documents (ideal DCG 0) scores ``empty``. The default matches
    XGBoost's ``ndcg@k`` and LightGBM's ``ndcg`` (``eval_at=[k]``) to rounding, ties included.
    With ``gain="linear"`` the labels may be signed rewards (the doubly robust click rewards of
    :func:`gbdt_plrank.clicks.click_rewards`): the ideal DCG@k is then that of their positive
    part, and a query without a positive label scores ``empty``.

    Parameters
    ----------
    .. metric-docs:: labels_gain group
    k : int or None, default 10
        Cut-off ``>= 1``; ``None`` ranks whole queries (XGBoost's ``ndcg`` without ``@k``
        is ``k=32``).
    gain : {"exp", "linear"}, default "exp"
        ``2**y - 1`` or ``y`` (see :func:`dcg`).
    empty : float, default 1.0
        Score of a query without relevant documents: ``1.0`` as XGBoost's ``ndcg@k`` and
        LightGBM, ``0.0`` as XGBoost's ``ndcg@k-`` and :func:`sklearn.metrics.ndcg_score`,
        ``nan`` to leave such queries out of the mean.
    .. metric-docs:: per_query returns

    Raises
    ------
    ValueError
        As :func:`dcg`, and for ``empty`` outside ``[0, 1]`` (NaN allowed).
    """
    empty = check_empty(empty)
    value, ideal = _dcg_parts(y_true, y_score, group, k, gain, signed=True)
    return _result(_normalised(value, ideal, empty), per_query)


def dataset_ndcg(
    y_true: npt.ArrayLike,
    y_score: npt.ArrayLike,
    group: npt.ArrayLike | None = None,
    *,
    k: int | None = 10,
    gain: str = "exp",
    per_query: bool = False,
) -> float | FloatArray:
    r"""NDCG@k normalised over the dataset: each DCG@k divided by the mean ideal DCG@k.

    The normalisation of the PL-Rank papers (after Ferrante, Ferro and Fuhr 2021): every query's
    DCG@k is divided by the mean ideal DCG@k of all :math:`G` queries of the split, so that every
    query is measured on the same scale and queries without relevant documents count as 0:

    .. math::

        \frac{1}{G} \sum_{q=1}^{G}
            \frac{\mathrm{DCG@}k_q}{\frac{1}{G}\sum_{q'=1}^{G} \mathrm{IDCG@}k_{q'}}
        = \frac{\sum_q \mathrm{DCG@}k_q}{\sum_q \mathrm{IDCG@}k_q}.

    Parameters
    ----------
    y_true, y_score, group, k, gain
        As in :func:`ndcg`.
    per_query : bool, default False
        Return each query's :math:`\mathrm{DCG@}k_q / \overline{\mathrm{IDCG@}k}` (their mean
        is the dataset value) instead of the mean.
    .. metric-docs:: returns
        1.0 for every query when no query of the split has a relevant document.

    Raises
    ------
    ValueError
        As :func:`dcg`.
    """
    value, ideal = _dcg_parts(y_true, y_score, group, k, gain)
    mean_ideal = float(ideal.mean()) if ideal.size else 0.0
    scaled = value / mean_ideal if mean_ideal > 0 else np.ones_like(value)
    return _result(scaled, per_query)


def precision_at_k(
    y_true: npt.ArrayLike,
    y_score: npt.ArrayLike,
    group: npt.ArrayLike | None = None,
    *,
    k: int | None = 10,
    per_query: bool = False,
) -> float | FloatArray:
    r"""Fraction of relevant documents (label > 0) among the top ``k``, mean over queries.

    .. math::

        \mathrm{P@}k = \frac{1}{\min(k, D)} \sum_{r=1}^{\min(k, D)} [y_{\pi(r)} > 0].

    A query shorter than ``k`` is divided by its length :math:`D`, as XGBoost's ``pre@k`` does
    (the PL-Rank precision reward divides by :math:`k` instead; the two differ only on such
    queries). A query without documents scores 0.

    Parameters
    ----------
    .. metric-docs:: labels group
    k : int or None, default 10
        Cut-off ``>= 1``; ``None`` ranks whole queries.
    .. metric-docs:: per_query returns

    Raises
    ------
    ValueError
        On non-finite or negative labels, non-finite scores, lengths that differ, ``k < 1`` or a
        ``group`` that is neither ids nor sizes.
    """
    r, K = _checked(y_true, y_score, group, k)
    hits, _, _ = _sums(r, _relevant(r.y), np.ones(K))
    # a query is shown to min(k, D) = min(K, D): K is k capped at the longest query
    return _result(hits / np.maximum(np.minimum(r.sizes, K), 1), per_query)


def recall_at_k(
    y_true: npt.ArrayLike,
    y_score: npt.ArrayLike,
    group: npt.ArrayLike | None = None,
    *,
    k: int | None = 10,
    empty: float = EMPTY_QUERY_VALUE,
    per_query: bool = False,
) -> float | FloatArray:
    r"""Fraction of a query's relevant documents (label > 0) found in the top ``k``.

    .. math::

        \mathrm{R@}k = \frac{\sum_{r=1}^{\min(k, D)} [y_{\pi(r)} > 0]}{\sum_{d=1}^{D} [y_d > 0]}.

    Parameters
    ----------
    .. metric-docs:: labels group
    k : int or None, default 10
        Cut-off ``>= 1``; ``None`` ranks whole queries (recall 1 wherever defined).
    empty : float, default 1.0
        Score of a query without relevant documents (as in :func:`ndcg`; ``nan`` leaves it out).
    .. metric-docs:: per_query returns raises_empty
    """
    empty = check_empty(empty)
    r, K = _checked(y_true, y_score, group, k)
    hits, _, n_relevant = _sums(r, _relevant(r.y), np.ones(K))
    return _result(_normalised(hits, n_relevant, empty), per_query)


def mrr(
    y_true: npt.ArrayLike,
    y_score: npt.ArrayLike,
    group: npt.ArrayLike | None = None,
    *,
    k: int | None = None,
    empty: float = EMPTY_QUERY_VALUE,
    per_query: bool = False,
) -> float | FloatArray:
    r"""Mean reciprocal rank of the first relevant document (label > 0).

    .. math::

        \mathrm{RR@}k = \max_{r \le \min(k, D)} \frac{[y_{\pi(r)} > 0]}{r},

    0 when no relevant document is in the top ``k``. By default (``k=None``) the whole ranking
    counts, the classical definition; ``k=10`` gives ``MRR@10``.

    Parameters
    ----------
    .. metric-docs:: labels group
    k : int or None, default None
        Cut-off ``>= 1``; ``None`` ranks whole queries.
    empty : float, default 1.0
        Score of a query without relevant documents (as in :func:`ndcg`: the ideal ranking
        cannot score either; ``0.0`` is the usual IR convention, ``nan`` leaves it out).
    .. metric-docs:: per_query returns raises_empty
    """
    empty = check_empty(empty)
    r, K = _checked(y_true, y_score, group, k)
    theta = 1.0 / np.arange(1, K + 1, dtype=np.float64)
    rr, _, n_relevant = _sums(r, _relevant(r.y), theta, first_only=True)
    return _result(_normalised(rr, np.minimum(n_relevant, 1.0), empty), per_query)


def average_relevance_position(
    y_true: npt.ArrayLike,
    y_score: npt.ArrayLike,
    group: npt.ArrayLike | None = None,
    *,
    per_query: bool = False,
) -> float | FloatArray:
    r"""Average relevance position (ARP): mean rank of the relevant documents, lower is better.

    The rank of each document in the whole ranking, weighted by its label (the unbiased
    learning-to-rank measure of Joachims, Swaminathan and Schnabel 2017, there with binary
    labels; graded labels weight it by relevance):

    .. math::

        \mathrm{ARP} = \frac{\sum_{r=1}^{D} r\, y_{\pi(r)}}{\sum_{d=1}^{D} y_d}.

    With binary labels it is the mean rank of the relevant documents. A query without relevant
    documents has no ARP: its value is NaN and the mean leaves it out.

    Parameters
    ----------
    .. metric-docs:: labels group per_query returns

    Raises
    ------
    ValueError
        As :func:`precision_at_k` (without ``k``).
    """
    r, K = _checked(y_true, y_score, group, None)
    positions = np.arange(1, K + 1, dtype=np.float64)
    weighted, _, total = _sums(r, r.y, positions)
    return _result(_normalised(weighted, total, math.nan), per_query)


# The entries the metrics share, filled in where their docstrings say ``.. metric-docs::``.
for _metric in (globals()[name] for name in __all__):
    if ".. metric-docs::" in (getattr(_metric, "__doc__", None) or ""):
        shared_entries("metric-docs", _ENTRIES)(_metric)
