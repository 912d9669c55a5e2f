r"""Ranking metrics per query and over a dataset, with XGBoost's and LightGBM's conventions.

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
