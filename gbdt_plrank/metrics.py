r"""Ranking metrics per query and over a dataset, with XGBoost's and LightGBM's conventions.

HIGH LEVEL. Each public function checks and converts its input once (contiguous ``float64``
labels and scores, ``int64`` query boundaries) and hands it to Numba kernels, which compute
every metric from one rank-weighted sum.

Arguments shared by every function:

``y_true`` : array-like ``(n,)``
    Relevance labels, finite and ``>= 0`` (at most 31 with the exponential gain).
``y_score`` : array-like ``(n,)``
    Scores, finite; higher ranks first.
``group`` : array-like or None
    Per-row query ids (length ``n``, rows in any order), LightGBM-style group sizes (each ``>= 1``, a
    length other than ``n``, summing to ``n``), or ``None`` for one query.

Conventions
-----------
* **Ranking.** Documents are ranked by descending score; equal scores keep their input order
  (a stable sort). XGBoost (``ndcg@k``, ``pre@k``) and LightGBM (``ndcg``) rank the same way, so
  the values agree with theirs to rounding even when predictions tie (e.g. constant
  predictions, or a few shallow trees): both sort each query's indices with a stable sort on
  descending score (XGBoost ``common::ArgSort`` with ``std::greater`` in
  ``RankingCache::MakeRankOnCPU``, ``std::stable_sort`` or, with several threads,
  ``__gnu_parallel::stable_sort``; LightGBM ``std::stable_sort`` in ``DCGCalculator::CalDCG``).
  The tests check it on tied predictions of XGBoost 3.2 and LightGBM 4.7. With per-row query
  ids the rows of a query keep their relative input order, so "input order" is the order within
  the query.
* **Scores.** Compare with a booster on the predictions it evaluates: XGBoost's are
  ``float32`` (``Booster.predict`` returns them exactly), LightGBM's are ``float64``. Casting
  LightGBM's predictions to ``float32`` can merge scores that LightGBM still tells apart.
* **Queries without relevant documents** (ideal DCG 0) score ``empty`` in :func:`ndcg`
  (default :data:`EMPTY_QUERY_VALUE` = 1, as XGBoost's ``ndcg@k`` and LightGBM's ``ndcg`` count
  them; ``empty=0.0`` gives XGBoost's ``ndcg@k-`` and scikit-learn's ``ndcg_score``;
  ``empty=nan`` leaves them out of the mean, as the comparison harness's tables do by leaving
  them out of the test split). The same keyword, with the same default, serves
  :func:`recall_at_k`, :func:`mrr`, the rankers' ``score`` and ``expected_metric``; the eval
  metrics of training count such a query as 1 (a constant, which early stopping cannot see).
* **Cut-off.** ``k`` is an integer ``>= 1`` or ``None`` for the whole list; queries shorter than
  ``k`` are ranked in full. XGBoost's metrics named without ``@k`` (``ndcg``, ``pre``) are not
  whole-list metrics: they cut at 32 (the default of its ``LambdaRankParam``), so match them with
  ``k=32``.
* **Labels.** Any finite labels ``>= 0`` are accepted; the gain :math:`2^y - 1` is computed on
  the label as given. XGBoost and LightGBM accept only integer grades (up to 31) for it.
* **Means.** A dataset value is the unweighted mean over queries of the per-query values, NaN
  values left out (``nan`` when no value is left); ``per_query=True`` returns the per-query
  values instead, in the order of :func:`numpy.unique` of the query ids (per-row ids) or in the
  given order (group sizes). :func:`dataset_ndcg` normalises over the whole split instead.

References
----------
K. Järvelin and J. Kekäläinen. Cumulated gain-based evaluation of IR techniques. ACM
Transactions on Information Systems 20(4), 2002.

M. Ferrante, N. Ferro and N. Fuhr. Towards meaningful statements in IR evaluation: mapping
evaluation measures to interval scales. IEEE Access 9, 2021.

T. Joachims, A. Swaminathan and T. Schnabel. Unbiased learning-to-rank with biased feedback.
WSDM 2017.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ._fairness_terms import ExposureRows, equal_exposure_target, fairness_names, fairness_term
from ._groups import resolve_groups
from ._kernels import metrics as _metric_kernels
from ._ranking_metric import GAINS, dcg_weights, gains, ranks_used
from ._util.docs import shared_entries
from ._util.validation import (
    as_finite_vector,
    check_choice,
    check_item_groups,
    check_labels,
    check_positive_int,
    check_same_length,
    is_number,
)

__all__ = [
    "EMPTY_QUERY_VALUE",
    "GAINS",
    "average_relevance_position",
    "dataset_ndcg",
    "dcg",
    "expected_exposure_loss",
    "expected_exposure_parts",
    "fairness_loss",
    "group_disparity",
    "mrr",
    "ndcg",
    "precision_at_k",
    "recall_at_k",
    "relevance_proportional_disparity",
]

FloatArray = npt.NDArray[np.float64]

#: What a query without relevant documents scores in NDCG@k, recall@k and MRR unless ``empty``
#: says otherwise: 1, as in XGBoost's ``ndcg@k`` and LightGBM's ``ndcg`` (the one owner of the
#: convention: the rankers' ``score`` and ``expected_metric`` and the training's eval metrics
#: read it from here).
EMPTY_QUERY_VALUE = 1.0

#: The numpydoc entries the metrics share, filled in for their ``.. metric-docs::`` lines.
_ENTRIES = {
    "labels": "y_true, y_score : array-like (n,)\n    Labels (finite, ``>= 0``) and scores (finite).",
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


# --------------------------------------------------------------------------------------------
# Fairness of exposure: metrics of a stochastic policy's expected exposure per document
# --------------------------------------------------------------------------------------------
def _exposure_rows(
    y_true: object,
    exposure: object,
    group: object,
    *,
    gain: str = "linear",
    item_groups: object = None,
) -> tuple[ExposureRows, FloatArray]:
    """Validated rows grouped by query (labels for ``gain``, checked item groups if given) and
    their exposures, grouped alike."""
    y = check_labels(y_true, gain=gain, name="y_true")
    ids = None if item_groups is None else check_item_groups(item_groups, y.shape[0])
    e = as_finite_vector("exposure", exposure)
    check_same_length(y_true=y, exposure=e)
    if e.size and e.min() < 0:
        raise ValueError(f"exposure must be >= 0, but its minimum {e.min()!r} is given.")
    groups = resolve_groups(group, y.shape[0])
    rows = ExposureRows(
        y[groups.order], groups.ptr, gain, None if ids is None else ids[groups.order]
    )
    return rows, e[groups.order]


def fairness_loss(
    y_true: npt.ArrayLike,
    exposure: npt.ArrayLike,
    group: npt.ArrayLike | None = None,
    *,
    loss: str,
    k: int | None = 10,
    gain: str = "exp",
    item_groups: npt.ArrayLike | None = None,
    per_query: bool = False,
) -> float | FloatArray:
    r"""A fairness term's loss of a policy's expected exposures, lower is fairer.

    ``exposure[d]`` is a policy's expected exposure of document ``d``,
    :math:`E(d) = \mathbb{E}_y[\theta_{\mathrm{rank}(d)}]` with the DCG rank weights
    :math:`\theta_k = 1/\log_2(k+1)` for :math:`k \le K` and 0 after; ``loss`` names the term,
    the loss a PL-Rank objective with ``fairness=loss`` subtracts
    (:mod:`gbdt_plrank._fairness_terms` has their formulas):

    .. fairness-terms:: registered

    A dataset value is the unweighted mean over queries, as every metric of this module. The
    losses are quadratic in :math:`E`: for a Monte-Carlo estimate of the exposure they are biased
    upwards by its variance (see :func:`expected_exposure_parts`).

    Parameters
    ----------
    .. metric-docs:: fair_labels
    exposure : array-like (n,)
        Expected exposure per document (finite, ``>= 0``), with the rank weights cut at ``k``.
    .. metric-docs:: group
    loss : str
        The fairness term's name.
    k : int or None, default 10
        Cut-off :math:`K` of the rank weights, for a term defined by them (the equal-exposure
        target of ``"expected-exposure"``); ``None`` weights the whole list.
    gain : {"exp", "linear"}, default "exp"
        The merit :math:`g = 2^y - 1` or :math:`g = y` of a label, for a term that weighs
        merit (the labels are checked for it there).
    item_groups : array-like (n,) or None, default None
        Item group of every document (integers ``>= 0``, two or more distinct values), for a
        term defined by them (``"group-disparity"``) and only then.
    .. metric-docs:: per_query returns

    Raises
    ------
    ValueError
        For an unknown ``loss``, bad labels, exposures (negative or not finite), lengths,
        groups, ``k`` or ``gain``, and item groups missing for a term defined by them, given
        for another, or breaking their rules.
    """
    term = fairness_term(check_choice("loss", loss, fairness_names()))
    k = _check_k(k)
    gain = check_choice("gain", gain, GAINS)
    if (item_groups is not None) != term.needs_item_groups:
        grouped = [name for name in fairness_names() if fairness_term(name).needs_item_groups]
        raise ValueError(
            f"loss={loss!r} needs item_groups: one integer group id >= 0 per document."
            if term.needs_item_groups
            else f"item_groups are used only by the losses {grouped}, but loss={loss!r} is given."
        )
    rows, e = _exposure_rows(
        y_true,
        exposure,
        group,
        gain=gain if "gain" in term.reads else "linear",
        item_groups=item_groups,
    )
    return _result(term.loss(rows, e, dcg_weights(ranks_used(k, rows.ptr))), per_query)


def expected_exposure_parts(
    y_true: npt.ArrayLike,
    exposure: npt.ArrayLike,
    group: npt.ArrayLike | None = None,
    *,
    k: int | None = 10,
    per_query: bool = False,
) -> dict[str, float | FloatArray]:
    r"""Expected exposure loss EE-L and its parts EE-D and EE-R (Diaz et al. 2020).

    ``exposure[d]`` is a policy's expected exposure of document ``d``,
    :math:`E(d) = \mathbb{E}_y[\theta_{\mathrm{rank}(d)}]` with the DCG rank weights
    :math:`\theta_k = 1/\log_2(k+1)` for :math:`k \le K` and 0 after. The target is equal
    expected exposure: sort the query by grade; the grade that occupies ranks :math:`a..b` of the
    ideal ranking gives each of its documents
    :math:`\epsilon(d) = (\theta_a + \dots + \theta_b)/(b - a + 1)`. Per query,

    .. math::

        \text{EE-L} = \sum_d (E(d) - \epsilon(d))^2
                     = \text{EE-D} - 2\,\text{EE-R} + \sum_d \epsilon(d)^2,\quad
        \text{EE-D} = \sum_d E(d)^2,\quad \text{EE-R} = \sum_d E(d)\,\epsilon(d).

    EE-D (disparity) is largest, :math:`\sum_k \theta_k^2`, for a deterministic ranking;
    shuffling uniformly within grades gives :math:`E = \epsilon` and EE-L = 0.

    Values are **not normalised** (the squared distances of Diaz et al.'s definition, with
    the DCG browsing model in place of their RBP model); a dataset value is the unweighted mean
    over queries, as every metric of this module (Diaz et al. also average over queries).

    Standard error. When ``exposure`` is a Monte-Carlo estimate (mean over sampled rankings),
    EE-L and EE-D are biased upwards by the estimate's variance (they are quadratic in
    :math:`E`); EE-R is linear and unbiased. To get a standard error, compute the per-query
    values (``per_query=True``) for each of several independent exposure estimates and take
    the spread, or use the spread over queries, ``values.std(ddof=1) / sqrt(G)``, for the
    uncertainty of the dataset mean with respect to the queries.

    Parameters
    ----------
    y_true : array-like (n,)
        Labels (finite, ``>= 0``); only their order within a query matters.
    exposure : array-like (n,)
        Expected exposure per document (finite, ``>= 0``), with the same ``k``.
    .. metric-docs:: group
    k : int or None, default 10
        Cut-off :math:`K` of the rank weights; ``None`` weights the whole list.
    per_query : bool, default False
        Return per-query values ``(G,)`` instead of their means.

    Returns
    -------
    dict
        ``{"ee_l": ..., "ee_d": ..., "ee_r": ...}``, floats or arrays ``(G,)``.

    Raises
    ------
    ValueError
        For bad labels, exposures (negative or not finite), lengths, groups or ``k``.

    References
    ----------
    F. Diaz, B. Mitra, M. D. Ekstrand, A. J. Biega and B. Carterette. Evaluating stochastic
    rankings with expected exposure. CIKM 2020.
    """
    k = _check_k(k)
    rows, e = _exposure_rows(y_true, exposure, group)
    eps = equal_exposure_target(rows.labels, rows.ptr, dcg_weights(ranks_used(k, rows.ptr)))
    q, G = rows.row_query, rows.n_queries
    parts = {
        "ee_l": np.bincount(q, (e - eps) ** 2, minlength=G),
        "ee_d": np.bincount(q, e * e, minlength=G),
        "ee_r": np.bincount(q, e * eps, minlength=G),
    }
    return {name: _result(values, per_query) for name, values in parts.items()}


def expected_exposure_loss(
    y_true: npt.ArrayLike,
    exposure: npt.ArrayLike,
    group: npt.ArrayLike | None = None,
    *,
    k: int | None = 10,
    per_query: bool = False,
) -> float | FloatArray:
    r"""Expected exposure loss EE-L, lower is fairer: see :func:`expected_exposure_parts`
    (:func:`fairness_loss` with ``loss="expected-exposure"``)."""
    return fairness_loss(
        y_true, exposure, group, loss="expected-exposure", k=k, per_query=per_query
    )


def relevance_proportional_disparity(
    y_true: npt.ArrayLike,
    exposure: npt.ArrayLike,
    group: npt.ArrayLike | None = None,
    *,
    gain: str = "exp",
    per_query: bool = False,
) -> float | FloatArray:
    r"""Disparity from exposure proportional to relevance (Oosterhuis 2021), lower is fairer.

    The fairness measure of the 2021 PL-Rank experiments (Singh and Joachims' 2018 ideal:
    exposure proportional to relevance), with the gain :math:`\rho_d` of each label: per query
    of :math:`n` documents, the mean over ordered pairs of distinct documents of the squared
    disparity,

    .. math::

        \frac{1}{n(n-1)} \sum_{i \ne j} \big(E(i)\,\rho_j - E(j)\,\rho_i\big)^2
        = \frac{2}{n(n-1)}\Big(\sum_i E(i)^2 \sum_j \rho_j^2 - \big(\sum_i E(i)\rho_i\big)^2\Big),

    which is computed in the closed form on the right (Lagrange's identity). A query with one
    document, or without relevant documents, scores 0; the dataset value is the unweighted mean
    over all queries. Both follow ``utils/evaluate.py`` (``evaluate_fairness``, its squared
    value) of the paper's public code, github.com/HarrieO/2021-SIGIR-plackett-luce, which uses
    the exponential gain and the DCG rank weights without normalisation for ``exposure``.

    Parameters
    ----------
    .. metric-docs:: fair_labels
    exposure : array-like (n,)
        Expected exposure per document (finite, ``>= 0``), e.g. under DCG weights cut at ``k``.
    .. metric-docs:: group
    gain : {"exp", "linear"}, default "exp"
        :math:`\rho = 2^y - 1` (the paper's) or :math:`\rho = y`.
    per_query : bool, default False
        Return the per-query values ``(G,)`` instead of their mean; their spread gives a standard
        error over queries (see :func:`expected_exposure_parts`).
    .. metric-docs:: returns

    References
    ----------
    H. Oosterhuis. Computationally efficient optimization of Plackett-Luce ranking models for
    relevance and fairness. SIGIR 2021.

    A. Singh and T. Joachims. Fairness of exposure in rankings. KDD 2018.
    """
    return fairness_loss(y_true, exposure, group, loss="disparity", gain=gain, per_query=per_query)


def group_disparity(
    y_true: npt.ArrayLike,
    exposure: npt.ArrayLike,
    group: npt.ArrayLike | None,
    item_groups: npt.ArrayLike,
    *,
    gain: str = "exp",
    per_query: bool = False,
) -> float | FloatArray:
    r"""Group disparity of exposure per unit of merit (Singh and Joachims 2018), lower is fairer.

    Each item group :math:`a` of a query has the exposure :math:`X_a = \sum_{d \in a} E(d)` and
    the merit :math:`M_a = \sum_{d \in a} \rho_d` (:math:`\rho` the gain of the label); the
    groups' exposure per unit of merit should be equal. Per query, over the pairs of groups
    that have merit,

    .. math::

        \mathrm{GD} = \sum_{a < b,\ M_a > 0,\ M_b > 0}
            \Big(\frac{X_a}{M_a} - \frac{X_b}{M_b}\Big)^2
        = G \sum_a r_a^2 - \Big(\sum_a r_a\Big)^2, \quad r_a = X_a / M_a,

    computed in the closed form on the right (:math:`G` groups with merit). For two groups it is
    the square of Singh and Joachims' disparate treatment ratio difference. A query where fewer
    than two groups have merit scores 0 (exposure of a group without merit is not counted);
    the dataset value is the unweighted mean over all queries.

    Parameters
    ----------
    .. metric-docs:: fair_labels
    exposure : array-like (n,)
        Expected exposure per document (finite, ``>= 0``).
    group : array-like or None
        Per-row query ids, group sizes, or ``None`` for one query (see the module docstring).
    item_groups : array-like (n,)
        Item group id of every document: integers ``>= 0``, two or more distinct values.
    gain : {"exp", "linear"}, default "exp"
        :math:`\rho = 2^y - 1` or :math:`\rho = y`.
    .. metric-docs:: per_query returns

    Raises
    ------
    ValueError
        For bad labels, exposures, groups or item groups (lengths, NaN, negative or
        non-integer ids, a single group).

    References
    ----------
    A. Singh and T. Joachims. Fairness of exposure in rankings. KDD 2018.
    """
    return fairness_loss(
        y_true,
        exposure,
        group,
        loss="group-disparity",
        gain=gain,
        item_groups=item_groups,
        per_query=per_query,
    )


# The entries the metrics share, filled in where their docstrings say ``.. metric-docs::``.
for _metric in (globals()[name] for name in __all__):
    if ".. metric-docs::" in (getattr(_metric, "__doc__", None) or ""):
        shared_entries("metric-docs", _ENTRIES)(_metric)
# The registered fairness terms, listed where fairness_loss says ``.. fairness-terms::``.
shared_entries(
    "fairness-terms",
    {
        "registered": "\n".join(
            f'- ``"{name}"``: {fairness_term(name).summary}' for name in fairness_names()
        )
    },
)(fairness_loss)
