r"""Evaluation of a ranker on labelled queries: its ranking's metric, its policy's value.

:func:`ranking_values` is the metric@K of the ranking by score, per query
(:mod:`gbdt_plrank.metrics`); :func:`per_sample_metric` that of sampled rankings, per sample.
:class:`PolicyEvaluator` evaluates the Plackett-Luce policy of the scores: its value (the
result of an off-policy estimate from clicks is :class:`gbdt_plrank.clicks.PolicyValue`). Per
query, from rankings sampled in two independent halves :math:`A, B` (the random streams of
rounds :data:`EVAL_ROUNDS`, which training never reaches, so the same draws serve every boosting
round and the value is smooth in the margins):

- the expected metric@K, :math:`\sum_d \hat E_\theta(d)\, \rho_d` with the metric's rank weights
  :math:`\theta` and rewards :math:`\rho` (:class:`~gbdt_plrank._ranking_metric.RankingMetric`):
  the metric is linear in the exposure, so this is exactly the mean metric@K of the sampled
  rankings (a query without relevant documents scores 1 for NDCG, as
  :func:`gbdt_plrank.metrics.ndcg`);
- with fairness, minus the weight times the fairness loss, quadratic in the exposure, so that
  :math:`f(\hat E)` is biased upwards by the estimate's variance; it is estimated without bias
  as :math:`2 f(\hat E) - (f(\hat E_A) + f(\hat E_B)) / 2`, the polarisation identity for the
  bilinear form :math:`f(\hat E_A, \hat E_B)` of a quadratic :math:`f` (its expectation is
  :math:`f(E)` since the halves are independent).

This is the value a PL-Rank objective trains for, at the cut-off its ranker is judged at:
:meth:`gbdt_plrank.PLRankObjective.expected_metric` reports it after every boosting round, so
that the boosters' own early stopping can watch it. :class:`EvalSet` holds what every round's
evaluation needs of a booster's evaluation data, read again when the data changes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .._backends import QueryFields, backend_of_data, checked_queries
from .._groups import Split, row_queries
from .._ranking_metric import RankingMetric
from .._util.cache import ReferenceCache
from .._util.validation import as_finite_vector, check_same_length
from ..metrics._ranking import EMPTY_QUERY_VALUE, dcg, mean_over_queries, ndcg, precision_at_k
from .fairness_spec import FairnessSpec
from .policy_sample import PolicySample, sampled_exposure

__all__ = [
    "EVAL_ROUNDS",
    "EVAL_SAMPLES",
    "STANDARDIZED_SAMPLES",
    "STANDARD_SPREAD",
    "EvalSet",
    "ExpectedMetric",
    "Halves",
    "PolicyEvaluator",
    "RankingMetricEval",
    "StandardizedMetric",
    "per_sample_metric",
    "ranking_values",
]

#: The stream rounds of the two halves of rankings an evaluation samples (never a training round).
EVAL_ROUNDS = (2**62, 2**62 + 1)

#: Rankings per query of an evaluation (two halves of 50).
EVAL_SAMPLES = 100

#: The standard deviation :class:`StandardizedMetric` scales an eval set's margins to: a policy
#: sharp enough that its value follows the top of the ranking (on the LETOR validation splits 2
#: and 3 kept better models than 1, 3 in fewer rounds).
STANDARD_SPREAD = 3.0

#: Rankings per query of :class:`StandardizedMetric` (two halves of 20): a stopping signal
#: compares rounds drawn from the same streams, and needs fewer than a reported value.
STANDARDIZED_SAMPLES = 40


@dataclass(frozen=True)
class Halves:
    """The exposures of two independent halves of a policy's sampled rankings."""

    E_a: np.ndarray
    E_b: np.ndarray

    @property
    def exposure(self) -> np.ndarray:
        """The exposure estimated from all the rankings."""
        return 0.5 * (self.E_a + self.E_b)

    def unbiased(self, f: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
        """:math:`f(E)` for a quadratic ``f`` of the exposure, without the variance's bias."""
        return 2.0 * f(self.exposure) - 0.5 * (f(self.E_a) + f(self.E_b))


class PolicyEvaluator:
    """Evaluates policies on labelled queries: a policy's expected metric@K, minus a weight
    times a fairness loss.

    The per-query constants of the queries (rewards, empty queries) are computed once; each call
    of :meth:`per_query` samples the policy of new margins from the same streams.

    Parameters
    ----------
    metric : RankingMetric
        The metric and its cut-off K (the length of the sampled rankings).
    fairness : FairnessSpec or None
        The fairness loss and its weight (its exposure has the metric's rank weights).
    queries : Split
        Labelled rows grouped by query (validated labels), with their item groups for group
        fairness.
    n_samples : int
        Rankings per query, even (two halves).
    seed : int
        Seed of the streams.
    n_jobs : int or None
        Numba threads.
    """

    def __init__(
        self,
        metric: RankingMetric,
        fairness: FairnessSpec | None,
        queries: Split,
        *,
        n_samples: int = EVAL_SAMPLES,
        seed: int,
        n_jobs: int | None,
    ) -> None:
        self.metric = metric
        self.fairness = fairness
        self.queries = queries
        self.options = {"n_samples": n_samples // 2, "seed": seed, "n_jobs": n_jobs}
        ptr = queries.group_ptr
        self._row_query = row_queries(ptr)
        self._rho = metric.rewards(queries.y, ptr)
        self._theta = metric.theta(ptr)
        relevant = np.bincount(self._row_query, self._rho > 0, minlength=queries.n_queries)
        self._empty = (relevant == 0) if metric.metric == "ndcg" else np.zeros(len(relevant), bool)

    @staticmethod
    def name_of(metric: RankingMetric, fairness: FairnessSpec | None) -> str:
        """``expected_<metric>@<K>``, with ``-<w>*<loss>`` appended for a weighted fairness loss."""
        name = f"expected_{metric.name}"
        if fairness is not None and fairness.weight > 0:
            name += f"-{fairness.weight:g}*{fairness.term.column}"
        return name

    def halves(self, margins: np.ndarray) -> Halves:
        """The exposures of the two halves of rankings of the policy of ``margins``."""
        E_a, E_b = (
            sampled_exposure(margins, self.queries.group_ptr, self._theta, round_=r, **self.options)
            for r in EVAL_ROUNDS
        )
        return Halves(E_a, E_b)

    def expected_metric(self, exposure: np.ndarray) -> np.ndarray:
        """Per query: the expected metric@K of the policy of ``exposure``."""
        values = np.bincount(
            self._row_query, exposure * self._rho, minlength=self.queries.n_queries
        )
        values[self._empty] = EMPTY_QUERY_VALUE
        return values

    def fairness_loss(self, exposure: np.ndarray) -> np.ndarray:
        """Per query: the fairness loss of ``exposure`` (biased for an estimate: see Halves)."""
        return self.fairness.loss(
            self.queries.y,
            exposure,
            self.queries.group_ptr,
            K=self.metric.K,
            gain=self.metric.gain,
            item_groups=self.queries.item_groups,
        )

    def per_query(self, margins: np.ndarray) -> np.ndarray:
        """Per query: the expected metric@K minus the weight times the fairness loss."""
        h = self.halves(margins)
        values = self.expected_metric(h.exposure)
        if self.fairness is not None and self.fairness.weight > 0:
            values -= self.fairness.weight * h.unbiased(self.fairness_loss)
        return values


def ranking_values(
    metric: RankingMetric,
    queries: Split,
    scores: np.ndarray,
    *,
    empty: float = EMPTY_QUERY_VALUE,
) -> np.ndarray:
    """Per query: the metric@K of the ranking by descending score (:mod:`gbdt_plrank.metrics`);
    a query without relevant documents scores ``empty`` in NDCG@K (precision@K and DCG@K are
    0 there)."""
    if metric.metric == "precision":
        return precision_at_k(queries.y, scores, queries.qid, k=metric.K, per_query=True)
    if metric.metric == "dcg":
        return dcg(queries.y, scores, queries.qid, k=metric.K, gain=metric.gain, per_query=True)
    return ndcg(
        queries.y, scores, queries.qid, k=metric.K, gain=metric.gain, empty=empty, per_query=True
    )


@dataclass(frozen=True)
class EvalSet:
    """A booster's evaluation data as read: its labelled queries and their weights.

    Attributes
    ----------
    queries : Split
        The labels grouped by query (no features; item groups for group fairness).
    weights : float64 array of shape (n_queries,) or None
        Per-query weights of the mean (:func:`~gbdt_plrank._backends.query_weights`).
    """

    queries: Split
    weights: np.ndarray | None

    @classmethod
    def read(cls, fields: QueryFields, *, gain: str, signed: bool | None = None) -> EvalSet:
        """The queries of a booster's eval set, labels checked, with the item groups it carries.

        ``fields`` come from :meth:`~gbdt_plrank._backends.Backend.query_fields`.

        Raises
        ------
        ValueError
            When the eval set has no query groups, or its labels, weights or item groups break
            their rules.
        """
        labels, ptr, weights, ids = checked_queries(
            fields, gain=gain, where="the evaluation set", signed=signed
        )
        return cls(Split(None, labels, row_queries(ptr), ids), weights)

    def scores(self, preds: np.ndarray) -> np.ndarray:
        """The booster's predictions as finite float64 scores of the rows."""
        scores = as_finite_vector("preds", np.ravel(preds))
        check_same_length(preds=scores, labels=self.queries.y)
        return scores

    def mean(self, per_query: np.ndarray) -> float:
        """The mean over the queries, weighted by their weights if the data has them."""
        if self.weights is None:
            return float(per_query.mean())
        return float(np.average(per_query, weights=self.weights))


class _BoosterMetric:
    """Base of the evaluation metrics the boosters call: ``f(preds, data)``.

    ``f(preds, dmatrix) -> (name, value)`` for ``xgboost.train(custom_metric=f, maximize=True)``,
    ``f(preds, dataset) -> (name, value, True)`` for ``lightgbm.train(feval=f)``. What an eval set
    needs every round is kept per data object (by identity), with the labels, groups and weights
    it was read from: every call reads those of the data again and compares them (a few tens of
    microseconds on a LETOR validation split, against milliseconds for the value), so a set
    changed in place (``set_label``, ``set_group``, ``set_weight``) is read again. A subclass
    sets :attr:`name` and implements :meth:`_value` (per query); the mean over the queries is
    weighted by their weights, if any.
    """

    name: str
    gain: str
    metric: RankingMetric

    def __init__(self) -> None:
        self._sets = ReferenceCache()

    def __call__(self, preds: np.ndarray, data: Any) -> tuple[Any, ...]:
        backend = backend_of_data(data)
        return backend.metric_result(self.name, self.of(preds, data, backend.query_fields(data)))

    def of(self, preds: np.ndarray, key: Any, fields: QueryFields) -> float:
        """The value for the eval set ``key``, whose labels, groups and weights are ``fields``.

        ``key`` is read again (:meth:`EvalSet.read`) when ``fields`` differ from those it was
        last read from, or when :meth:`_unchanged` says so.
        """
        found = self._sets.get(key)
        if found is None or not fields.same_as(found[0]) or not self._unchanged(key, found[1]):
            signed = self.metric.signed and getattr(self, "fairness", None) is None
            read = self._read(key, EvalSet.read(fields, gain=self.gain, signed=signed))
            found = self._sets.put(key, (fields.copy(), read))
        eval_set = found[1]
        return eval_set.mean(self._value(eval_set, eval_set.scores(preds)))

    def clear(self) -> None:
        """Forget every eval set read: the next call reads its data again."""
        self._sets.clear()

    def _read(self, key: Any, eval_set: EvalSet) -> EvalSet:
        """Hook: what a subclass adds to a newly read eval set ``key``."""
        return eval_set

    def _unchanged(self, key: Any, eval_set: EvalSet) -> bool:
        """Hook: whether what :meth:`_read` added to ``eval_set`` still holds for ``key``."""
        return True

    def _value(self, eval_set: EvalSet, scores: np.ndarray) -> np.ndarray:
        raise NotImplementedError


class RankingMetricEval(_BoosterMetric):
    """The metric@K of the ranking by score (:func:`ranking_values`), named ``<metric>@<K>``."""

    def __init__(self, metric: RankingMetric) -> None:
        super().__init__()
        self.metric = metric
        self.name = metric.name
        self.gain = metric.gain

    def _value(self, eval_set: EvalSet, scores: np.ndarray) -> np.ndarray:
        return ranking_values(self.metric, eval_set.queries, scores)


class ExpectedMetric(_BoosterMetric):
    """The value of the policy of the scores (:class:`PolicyEvaluator`), named by its ``name_of``.

    With group fairness an eval set's item groups are those given for it, which it asks
    ``item_groups(data, n_rows)`` for (its objective's
    :meth:`~gbdt_plrank._training.booster_objective.BoosterObjective.item_groups_of`), else those
    the data carries (:meth:`EvalSet.read`).
    """

    def __init__(
        self,
        metric: RankingMetric,
        fairness: FairnessSpec | None,
        *,
        seed: int,
        n_jobs: int | None,
        item_groups: Callable[[Any, int], np.ndarray | None],
    ) -> None:
        super().__init__()
        self.metric = metric
        self.fairness = fairness
        self.seed = seed
        self.n_jobs = n_jobs
        self.name = PolicyEvaluator.name_of(metric, fairness)
        self.gain = metric.gain
        self._policies = ReferenceCache()
        self._item_groups = item_groups

    def _read(self, key: Any, eval_set: EvalSet) -> EvalSet:
        if self.fairness is None or not self.fairness.term.needs_item_groups:
            return eval_set
        n = eval_set.queries.y.shape[0]
        ids = self._item_groups(key, n)
        if ids is None:
            ids = eval_set.queries.item_groups
        if ids is None:
            raise ValueError(
                f"fairness={self.fairness.name!r} needs the item groups of every eval set to "
                f"evaluate it: call obj.set_item_groups(data, item_groups) for this "
                f"{type(key).__name__} of {n} rows before training."
            )
        return replace(eval_set, queries=replace(eval_set.queries, item_groups=ids))

    def _unchanged(self, key: Any, eval_set: EvalSet) -> bool:
        """Whether the item groups given for ``key`` (if any) are still those ``eval_set`` was
        read with (those the data carries are compared with its fields)."""
        if self.fairness is None or not self.fairness.term.needs_item_groups:
            return True
        given = self._item_groups(key, eval_set.queries.y.shape[0])
        return given is None or given is eval_set.queries.item_groups

    def clear(self) -> None:
        super().clear()
        self._policies.clear()

    #: Rankings per query of each evaluation.
    n_samples = EVAL_SAMPLES

    def _value(self, eval_set: EvalSet, scores: np.ndarray) -> np.ndarray:
        policy = self._policies.get(eval_set)
        if policy is None:
            policy = self._policies.put(
                eval_set,
                PolicyEvaluator(
                    self.metric,
                    self.fairness,
                    eval_set.queries,
                    n_samples=self.n_samples,
                    seed=self.seed,
                    n_jobs=self.n_jobs,
                ),
            )
        return policy.per_query(scores)


class StandardizedMetric(ExpectedMetric):
    r"""The value of the policy of the standardised scores, named ``standardized_<expected name>``.

    The scores :math:`m` of the eval set's rows are divided by their standard deviation
    :math:`\sigma(m)` over the rows and multiplied by :data:`STANDARD_SPREAD` before the policy
    is sampled (:class:`PolicyEvaluator`, :data:`STANDARDIZED_SAMPLES` rankings per query, the same
    streams every round): the value of the policy of :math:`s\, m / \sigma(m)`. It is smooth
    in the margins as the policy's value is, but blind to their scale, as the ranking's metric
    is: boosting rounds that only sharpen the policy (scale the margins up) leave it unchanged,
    so early stopping on it stops when the order and the relative gaps of the scores stop
    improving, not when the policy stops sharpening. Scores that are all equal are left as
    they are.

    The spread over all rows also counts the gaps between the queries' mean scores, so a
    constant added to a query's scores (which changes neither its ranking nor its policy)
    changes this value; the root mean within-query variance would not. The two kept the same
    rounds on labelled data (MQ2008 Folds 1-3, MQ2007-agg Fold1, the README's settings), but
    on click rewards the within-query spread moved the kept rounds of the clicks experiment's
    learners (MQ2008 Fold1, 10 sessions per query: policy-aware 24 to 27 rounds, naive click
    rates 42 to 14), and every documented figure stops on this value, so the spread over the
    rows stays the default until the stopping rule is measured again across seeds.
    """

    n_samples = STANDARDIZED_SAMPLES

    def __init__(
        self,
        metric: RankingMetric,
        fairness: FairnessSpec | None,
        *,
        seed: int,
        n_jobs: int | None,
        item_groups: Callable[[Any, int], np.ndarray | None],
    ) -> None:
        super().__init__(metric, fairness, seed=seed, n_jobs=n_jobs, item_groups=item_groups)
        self.name = f"standardized_{self.name}"

    def _value(self, eval_set: EvalSet, scores: np.ndarray) -> np.ndarray:
        spread = float(scores.std())
        if spread > 0.0:
            scores = scores * (STANDARD_SPREAD / spread)
        return super()._value(eval_set, scores)


# Rows per call of the metric: samples are scored in blocks of about this many rows.
_BLOCK_ROWS = 1 << 20


def per_sample_metric(
    sample: PolicySample,
    labels: np.ndarray,
    metric: RankingMetric,
    *,
    empty: float = EMPTY_QUERY_VALUE,
) -> np.ndarray:
    r"""Mean metric@K over the queries of each sample :math:`s = 1..S`.

    .. math::

        X_s = \frac{1}{Q} \sum_{q=1}^{Q} \mathrm{metric@K}\big(y^{(q, s)}\big),

    computed by :func:`ranking_values` on scores that put the placed
    documents in their sampled order above every unplaced one (metric@K only sees the top K),
    for blocks of samples at once (each sample's copy of a query is a query of its own). The
    :math:`X_s` are independent and identically distributed: each query draws from its own
    random stream, one sample after another.

    Parameters
    ----------
    sample : PolicySample
        Rankings drawn with the cut-off ``metric.K``.
    labels : float64 array of shape (n,)
        Labels in the caller's row order.
    metric : RankingMetric
    empty : float, default EMPTY_QUERY_VALUE
        NDCG@K of a query without relevant documents; NaN leaves such queries out of
        :math:`X_s` (:func:`gbdt_plrank.metrics.ndcg`).

    Returns
    -------
    float64 array of shape (n_samples,)
    """
    ptr = sample.ptr
    Q = ptr.shape[0] - 1
    S = sample.n_samples
    width = sample.rankings.shape[1]
    by_sample = sample.rankings.reshape(Q, S, width).transpose(1, 0, 2)  # (S, Q, width)
    grouped_labels = sample.groups.to_sorted(labels)
    n = grouped_labels.shape[0]
    qid = row_queries(ptr)
    step = max(1, _BLOCK_ROWS // max(n, 1))
    out = np.empty(S)
    for first in range(0, S, step):
        block = by_sample[first : first + step]
        b = block.shape[0]
        placed = block >= 0
        copy = np.broadcast_to(np.arange(b)[:, None, None], block.shape)
        rank_score = np.broadcast_to(np.arange(width, 0, -1, dtype=np.float64), block.shape)
        scores = np.zeros((b, n))
        scores[copy[placed], (ptr[:-1, None] + block)[placed]] = rank_score[placed]
        copies = Split(None, np.tile(grouped_labels, b), (np.arange(b)[:, None] * Q + qid).ravel())
        per_query = ranking_values(metric, copies, scores.ravel(), empty=empty)
        out[first : first + b] = [mean_over_queries(values) for values in per_query.reshape(b, Q)]
    return out
