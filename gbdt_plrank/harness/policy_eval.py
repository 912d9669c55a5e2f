r"""Relevance and exposure fairness of a ranking policy on a split, query by query.

A policy is the Plackett-Luce policy of a model's margins (Monte-Carlo), a deterministic ranking
by score, or the equal-exposure oracle. Per query (in the order of :func:`numpy.unique` of the
query ids):

- expected NDCG@k: :math:`\sum_d \hat E(d) (2^{\ell_d} - 1) / \mathrm{IDCG@k}` (1 when the ideal
  DCG is 0), exact for the Monte-Carlo exposure :math:`\hat E` with the DCG rank weights, since
  DCG is linear in exposure: it is the mean NDCG@k of the sampled rankings;
- the loss of every registered fairness term
  (:data:`~gbdt_plrank._fairness_terms.FAIRNESS_TERMS`: EE-L, the relevance-proportional
  disparity, and, when the split has item groups, the group disparity), each the
  :meth:`~gbdt_plrank._training.fairness_spec.FairnessSpec.loss` of its name. All are quadratic in
  the exposure, so :math:`f(\hat E)` is biased upwards by the estimate's variance. They are
  estimated without bias from two independent halves :math:`\hat E_A, \hat E_B` of the samples,
  :math:`2 f(\hat E) - (f(\hat E_A) + f(\hat E_B)) / 2`, which is the polarisation identity for
  the bilinear form :math:`f(\hat E_A, \hat E_B)` of a quadratic :math:`f` (its expectation is
  :math:`f(E)` since the halves are independent).

Every evaluation keeps its exposure (the two halves' estimates). A random mixture of policies
(each ranking drawn from one of them, at random with given shares) has the mixture of their
exposures, and :func:`mixture_values` measures it from theirs by the same estimates: exactly,
where the interpolation of the fairness losses, convex in the exposure, would overstate it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from .._fairness_terms import FAIRNESS_TERMS, ExposureRows, equal_exposure_target
from .._groups import resolve_groups, row_queries, within_query_spread
from .._ranking_metric import RankingMetric, dcg_weights
from .._training.evaluation import EVAL_ROUNDS, Halves, PolicyEvaluator, per_sample_metric
from .._training.fairness_spec import FairnessSpec
from .._training.policy_sample import sample_policy
from ..datasets import Split
from ..metrics import ndcg

__all__ = [
    "MixtureMeasure",
    "PolicyValues",
    "evaluate_oracle",
    "evaluate_policy",
    "evaluate_ranking",
    "mixture_values",
    "validation_scale",
]


@dataclass(frozen=True)
class PolicyValues:
    """Per query (in the order of ``qid``): expected NDCG@k and each fairness term's loss.

    ``values`` maps ``"ndcg"`` and the column of every registered fairness term
    (``FairnessTerm.column``: ``"ee_l"``, ``"disparity"``,
    ``"group_disparity"``) to its per-query values, in the registry's order; a term defined by
    item groups has None when the split has none.

    ``mc_mean`` and ``mc_var`` are the mean and variance over the sampled rankings of the
    dataset-mean NDCG@k of each sample (0 variance for an exact evaluation); ``n_samples``
    the number of samples (1 for an exact evaluation). ``exposures`` (2, rows): the exposure
    of each row estimated from each half of the sampled rankings (an exact evaluation's
    twice), from which :func:`mixture_values` measures mixtures.
    """

    qid: np.ndarray
    values: dict[str, np.ndarray | None]
    mc_mean: float
    mc_var: float
    n_samples: int
    exposures: np.ndarray

    @property
    def ndcg(self) -> np.ndarray:
        """Per query: the expected NDCG@k."""
        return self.values["ndcg"]


def _losses(
    split: Split,
    k: int,
    of: Callable[[Callable[[np.ndarray], np.ndarray]], np.ndarray],
    columns: Sequence[str] | None = None,
) -> dict[str, np.ndarray | None]:
    """Per query, each registered term's loss by its column (None for a term defined by item
    groups, without them); only those of ``columns`` if given.

    ``of`` evaluates a loss, a function of the exposure: at the exposure of an exact
    evaluation, or without bias from the halves of a sampled one
    (:meth:`~gbdt_plrank._training.evaluation.Halves.unbiased`).
    """
    return {
        term.column: None
        if term.needs_item_groups and split.item_groups is None
        else of(
            partial(
                FairnessSpec(name, 1.0).loss,
                split.y,
                group_ptr=split.group_ptr,
                K=k,
                gain="exp",
                item_groups=split.item_groups,
            )
        )
        for name, term in FAIRNESS_TERMS.items()
        if columns is None or term.column in columns
    }


def _value(split: Split, k: int, **options: Any) -> PolicyEvaluator:
    """The evaluation of ``split`` at cut-off ``k``."""
    return PolicyEvaluator(RankingMetric("ndcg", k, "exp"), None, split, **options)


def evaluate_policy(
    margins: np.ndarray,
    split: Split,
    *,
    k: int,
    n_samples: int,
    seed: int,
    n_jobs: int | None,
    monte_carlo: bool = True,
) -> PolicyValues:
    """Monte-Carlo evaluation of the PL policy of ``margins`` on ``split`` (module docstring).

    ``n_samples`` (even) rankings per query in two halves, the draws of
    :class:`~gbdt_plrank._training.evaluation.PolicyEvaluator` with ``seed``: their exposures give
    the values, their NDCG@k the Monte-Carlo mean and variance. Without ``monte_carlo`` (most of
    the cost: the NDCG of every sampled ranking) the mean is that of the values and the variance
    NaN.
    """
    value = _value(split, k, n_samples=n_samples, seed=seed, n_jobs=n_jobs)
    ndcg_k = value.metric
    h = value.halves(margins)
    groups = resolve_groups(split.qid, split.y.shape[0])
    ndcg_q = value.expected_metric(h.exposure)
    mc_mean, mc_var = float(ndcg_q.mean()), math.nan
    if monte_carlo:
        per_sample = np.concatenate(
            [
                per_sample_metric(
                    sample_policy(
                        margins,
                        groups,
                        K=k,
                        n_samples=n_samples // 2,
                        seed=seed,
                        n_jobs=n_jobs,
                        round_=r,
                    ),
                    split.y,
                    ndcg_k,
                )
                for r in EVAL_ROUNDS
            ]
        )
        mc_mean, mc_var = float(per_sample.mean()), float(per_sample.var(ddof=1))
    values = {"ndcg": ndcg_q, **_losses(split, k, h.unbiased)}
    exposures = np.stack([h.E_a, h.E_b])
    return PolicyValues(np.unique(split.qid), values, mc_mean, mc_var, n_samples, exposures)


def _exact_values(split: Split, exposure: np.ndarray, ndcg_q: np.ndarray, k: int) -> PolicyValues:
    values = {"ndcg": ndcg_q, **_losses(split, k, lambda loss: loss(exposure))}
    exposures = np.stack([exposure, exposure])
    return PolicyValues(np.unique(split.qid), values, float(ndcg_q.mean()), 0.0, 1, exposures)


def evaluate_ranking(scores: np.ndarray, split: Split, *, k: int) -> PolicyValues:
    """Exact values of the deterministic ranking by descending score (ties in input order)."""
    q = row_queries(split.group_ptr)
    n = scores.shape[0]
    order = np.lexsort((np.arange(n), -scores, q))
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n) - split.group_ptr[q[order]]
    theta = dcg_weights(k)
    exposure = np.where(rank < k, theta[np.minimum(rank, k - 1)], 0.0)
    return _exact_values(split, exposure, ndcg(split.y, scores, split.qid, k=k, per_query=True), k)


def evaluate_oracle(split: Split, *, k: int) -> PolicyValues:
    """Exact values of the equal-exposure oracle: exposure = the target, ideal order of grades."""
    exposure = equal_exposure_target(split.y, split.group_ptr, dcg_weights(k))
    value = _value(split, k, seed=0, n_jobs=None)
    return _exact_values(split, exposure, value.expected_metric(exposure), k)


class MixtureMeasure:
    """Measures random mixtures of policies on one split from their exposures' halves.

    A mixture's exposure, estimated from each half of the rankings, is the shares'
    combination of its policies' (:attr:`PolicyValues.exposures`: exposure is linear in the
    policy's distribution over rankings). Called with such exposures (m, 2, rows), it returns,
    for each of ``columns`` (``"ndcg"`` and terms' columns), an array (m, queries): expected
    NDCG@k of the exposure, and each loss from the halves without bias, as
    :func:`evaluate_policy` measures a policy; with one policy's exposures, its own values. The
    m mixtures are measured at once as m copies of the split's queries, read once
    (:meth:`~gbdt_plrank._fairness_terms.ExposureRows.tile`).

    Raises
    ------
    ValueError
        For a column that is not ``"ndcg"`` nor a registered term's, or a term defined by item
        groups on a split without them.
    """

    def __init__(self, split: Split, *, k: int, columns: Sequence[str] = ("ndcg",)) -> None:
        terms = {term.column: (name, term) for name, term in FAIRNESS_TERMS.items()}
        unknown = [c for c in columns if c != "ndcg" and c not in terms]
        if unknown:
            raise ValueError(
                f"columns must be 'ndcg' or fairness terms' columns ({', '.join(terms)}), but "
                f"{unknown[0]!r} is given."
            )
        for c in columns:
            if c in terms and terms[c][1].needs_item_groups and split.item_groups is None:
                raise ValueError(f"{c} needs the item groups of the split, but it has none.")
        self.split, self.k, self.columns = split, k, tuple(columns)
        self._specs = {c: FairnessSpec(terms[c][0], 1.0) for c in columns if c != "ndcg"}
        self._rows = ExposureRows(split.y, split.group_ptr, "exp", split.item_groups)
        self._tiled: dict[int, ExposureRows] = {}

    def _tile(self, m: int) -> ExposureRows:
        if m not in self._tiled:
            self._tiled = {m: self._rows.tile(m)}
        return self._tiled[m]

    def __call__(self, exposures: np.ndarray) -> dict[str, np.ndarray]:
        m, queries = exposures.shape[0], self.split.n_queries
        rows = self._tile(m)
        h = Halves(exposures[:, 0].ravel(), exposures[:, 1].ravel())
        out: dict[str, np.ndarray] = {}
        if "ndcg" in self.columns:
            tiled = Split(None, rows.labels, rows.row_query, rows.item_groups)
            out["ndcg"] = _value(tiled, self.k, seed=0, n_jobs=None).expected_metric(h.exposure)
        for column, spec in self._specs.items():
            out[column] = h.unbiased(partial(spec.loss_of, rows, K=self.k))
        return {name: values.reshape(m, queries) for name, values in out.items()}


def mixture_values(
    split: Split, exposures: np.ndarray, *, k: int, columns: Sequence[str] = ("ndcg",)
) -> dict[str, np.ndarray]:
    """:class:`MixtureMeasure` of ``split`` applied once to ``exposures`` (m, 2, rows)."""
    return MixtureMeasure(split, k=k, columns=columns)(exposures)


def validation_scale(scores: np.ndarray, split: Split) -> float:
    """Root mean within-query variance of ``scores`` over the queries of two or more rows.

    (:func:`~gbdt_plrank._groups.within_query_spread`); 1 when that is 0 (a constant model), so
    that dividing by it is always defined.
    """
    sigma = within_query_spread(scores, split.group_ptr)
    return sigma if sigma > 0 else 1.0
