"""Ranking metrics per query and over a dataset, with XGBoost's and LightGBM's conventions.

HIGH LEVEL. Each public function checks and converts its input once (contiguous ``float64``
labels and scores, ``int64`` query boundaries) and hands it to Numba kernels, which compute
every metric from one rank-weighted sum. Two families: the ranking metrics of the ranking by
score (``metrics._ranking``: DCG, NDCG, precision, recall, MRR, ARP) and the
fairness-of-exposure metrics of a stochastic policy's expected exposures
(``metrics._exposure``).

Arguments shared by every function:

``y_true`` : array-like ``(n,)``
    Relevance labels, finite and ``>= 0`` (at most 31 with the exponential gain).
``y_score`` : array-like ``(n,)``
    Scores, finite; higher ranks first.
``group`` : array-like or None
    Per-row query ids (length ``n``, rows in any order), LightGBM-style group sizes (each
    ``>= 1``, a length other than ``n``, summing to ``n``), or ``None`` for one query.

Conventions, as XGBoost's and LightGBM's (the details: :doc:`/guide/ranker`, "Metrics"):
documents are ranked by descending score, equal scores in their input order within the
query (a stable sort); a query without a relevant document scores ``empty`` (default
:data:`EMPTY_QUERY_VALUE` = 1); ``k`` is an integer ``>= 1``, or ``None`` for the whole
list; a dataset value is the unweighted mean of the per-query values, NaN values left out
(``nan`` when none is left), and ``per_query=True`` returns the per-query values, in the
order of :func:`numpy.unique` of the ids (or of the given group sizes).
"""

from __future__ import annotations

from ._exposure import (
    expected_exposure_loss,
    expected_exposure_parts,
    fairness_loss,
    group_disparity,
    relevance_proportional_disparity,
)
from ._ranking import (
    EMPTY_QUERY_VALUE,
    GAINS,
    average_relevance_position,
    dataset_ndcg,
    dcg,
    mrr,
    ndcg,
    precision_at_k,
    recall_at_k,
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
