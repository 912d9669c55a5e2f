r"""HIGH LEVEL: the fairness term of the PL-Rank objective and what the estimator needs.

With a fairness loss :math:`F` the PL-Rank objective maximises, per query,

.. math::

    J(m) = \mathbb{E}_{y \sim \pi_m}\Big[\sum_k \theta_k \rho_{y_k}\Big] - w\, F(E),
    \qquad E(d) = \mathbb{E}_{y \sim \pi_m}\Big[\sum_k \theta_k \mathbb{1}[y_k = d]\Big],

the expected metric@K (``rho`` normalised by the ideal DCG for NDCG) minus ``w`` =
``fairness_weight`` times a loss of the exposures at the cut-off K with the DCG rank weights.
The losses, each quadratic in :math:`E`, are the registered fairness terms
(:data:`~gbdt_plrank._fairness_terms.FAIRNESS_TERMS`, which has their formulas).

The gradient of :math:`J` is PL-Rank's with the signed per-document reward
:math:`\rho_d - w\, \partial F/\partial E(d)` (Oosterhuis 2021, the fairness form of PL-Rank);
the kernels estimate :math:`E` and the PL-Rank terms from independent halves of the samples
(``fair_estimate_groups`` in ``gbdt_plrank._kernels.fairness``), and since
:math:`\partial F/\partial E` is linear in :math:`E` the estimate is unbiased.

Hessian (loss :math:`L = -J`): the PL-Rank Hessian estimate with the same signed reward, plus
:math:`w` times the Gauss-Newton part :math:`\sum_{ij} A_{ij}\, \partial E(i)/\partial m(d)\,
\partial E(j)/\partial m(d) \ge 0` (:math:`A` the constant, positive semi-definite Hessian of
:math:`F` in :math:`E`), of which :meth:`FairnessSpec.gauss_newton` keeps a cheap non-negative
part through :math:`v_d = \partial E(d)/\partial m(d)` alone: :math:`c_d v_d^2`, with each
term's :math:`c_d` (``FairnessTerm.curvature``).

References
----------
H. Oosterhuis. Computationally efficient optimization of Plackett-Luce ranking models for
relevance and fairness. SIGIR 2021.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._fairness_terms import ExposureRows, FairnessTerm, fairness_names, fairness_term
from .._ranking_metric import dcg_weights, ranks_used
from .._util.validation import check_item_groups

__all__ = [
    "EMPTY_QUERIES",
    "FAIR_METRICS",
    "FairTerms",
    "FairnessSpec",
    "checked_item_groups",
    "item_groups_needed",
]

#: What the fairness term does with a query without a relevant document: leave it out, or (a
#: term with a target there, EE-L) train its exposure toward that target, equal exposure for
#: every document.
EMPTY_QUERIES = ("skip", "uniform")

#: The metrics whose rank weights define exposure (DCG's; precision's are flat over the top K).
FAIR_METRICS = ("ndcg", "dcg")


@dataclass(frozen=True)
class FairTerms:
    """What the kernels need of a training set's rows for one loss (all arrays ``(n,)``).

    Attributes
    ----------
    aux : float64 array
        The term's per-row parameter of its slope (``FairnessTerm.aux``: the equal-exposure
        target for EE-L, the label's gain for the disparities).
    member : int64 array
        The row's item group numbered 0.. within its query (zeros without item groups).
    curvature : float64 array
        :math:`c_d` of the Gauss-Newton part :math:`w c_d v_d^2` (module docstring).
    """

    aux: np.ndarray
    member: np.ndarray
    curvature: np.ndarray

    def rows(self, rows: np.ndarray) -> FairTerms:
        """The terms of ``rows`` (whole queries: the terms are per query)."""
        return FairTerms(self.aux[rows], self.member[rows], self.curvature[rows])


@dataclass(frozen=True)
class FairnessSpec:
    """The fairness term: its name (a registered term's,
    :data:`~gbdt_plrank._fairness_terms.FAIRNESS_TERMS`), its weight ``w >= 0`` and what it
    does with the queries without a relevant document (one of :data:`EMPTY_QUERIES`).

    Built from validated options (:attr:`gbdt_plrank.PLRankOptions.fairness_spec`).

    A query without a relevant document has no expected metric to gain, and the disparities are
    0 on it whatever its exposure. EE-L is not: its target there is equal exposure for every
    document, so it pulls the query's margins together. The trees are shared by all queries, and
    on data where such queries are common (26 to 28% of MQ2008's training queries) that pull
    flattens the policy of the queries that have relevant documents too. ``"skip"`` (the
    default) leaves these queries out of the fairness term, in training (their gradient and
    Hessian are 0) and in :meth:`loss` (0); ``"uniform"`` trains EE-L toward their
    equal-exposure target, Diaz et al.'s definition taken over every query.
    """

    name: str
    weight: float
    empty_queries: str = "skip"

    @property
    def term(self) -> FairnessTerm:
        """The registered term of ``name``."""
        return fairness_term(self.name)

    @property
    def kind(self) -> int:
        """The code of the loss's slope in the kernels (``FairnessTerm.kernel``)."""
        return self.term.kernel

    @property
    def trains_empty_queries(self) -> bool:
        """Whether queries without a relevant document have a fairness term (``"uniform"``)."""
        return self.term.uniform_target and self.empty_queries == "uniform"

    def terms(
        self,
        labels: np.ndarray,
        group_ptr: np.ndarray,
        theta: np.ndarray,
        *,
        gain: str,
        item_groups: np.ndarray | None,
    ) -> FairTerms:
        """The kernels' per-row terms of validated labels (and item groups, for group fairness)
        at the rank weights ``theta`` of the training cut-off."""
        rows = ExposureRows(labels, group_ptr, gain, item_groups)
        term = self.term
        return FairTerms(term.aux(rows, theta), rows.members, term.curvature(rows))

    def gauss_newton(self, slope: np.ndarray, terms: FairTerms) -> np.ndarray:
        r""":math:`w\, c_d\, \widehat{\partial E(d)/\partial m(d)}^2` per row (module docstring)."""
        return self.weight * terms.curvature * slope * slope

    def loss(
        self,
        labels: np.ndarray,
        exposure: np.ndarray,
        group_ptr: np.ndarray,
        *,
        K: int,
        gain: str,
        item_groups: np.ndarray | None,
    ) -> np.ndarray:
        """Per query: the loss of ``exposure`` at the cut-off ``K`` (validated rows grouped by
        query, boundaries ``group_ptr``; ``FairnessTerm.loss``).

        A query without a relevant document has the loss 0 unless :attr:`trains_empty_queries`.
        """
        return self.loss_of(ExposureRows(labels, group_ptr, gain, item_groups), exposure, K=K)

    def loss_of(self, rows: ExposureRows, exposure: np.ndarray, *, K: int) -> np.ndarray:
        """:meth:`loss` of rows read once (:class:`~gbdt_plrank._fairness_terms.ExposureRows`:
        a caller measuring many exposures of the same rows builds them once)."""
        values = self.term.loss(rows, exposure, dcg_weights(ranks_used(K, rows.ptr)))
        if not self.trains_empty_queries:
            relevant = np.bincount(rows.row_query, rows.labels > 0, minlength=values.shape[0])
            values[relevant == 0] = 0.0
        return values


def item_groups_needed(
    fairness: FairnessSpec | None,
    given: bool,
    *,
    name: str = "item_groups",
    required: bool = True,
) -> bool:
    """Whether the loss needs item groups; an error when they are given without a group loss,
    or missing with one (unless not ``required`` yet).

    Raises
    ------
    ValueError
        When ``given`` disagrees with ``fairness``.
    """
    needed = fairness is not None and fairness.term.needs_item_groups
    if given and not needed:
        grouped = tuple(n for n in fairness_names() if fairness_term(n).needs_item_groups)
        raise ValueError(
            f"{name} are used only by fairness in {grouped}, but fairness="
            f"{None if fairness is None else fairness.name!r} is given."
        )
    if needed and not given and required:
        raise ValueError(
            f"fairness={fairness.name!r} needs {name}: one integer group id >= 0 per document, "
            "with two or more groups."
        )
    return needed


def checked_item_groups(
    fairness: FairnessSpec | None,
    item_groups: object,
    n: int | None,
    *,
    name: str = "item_groups",
    required: bool = True,
) -> np.ndarray | None:
    """``item_groups`` checked for ``n`` rows (None: any) when the loss needs them; else an error.

    Raises
    ------
    ValueError
        When item groups are given without a group fairness loss, or missing with one (unless
        not ``required`` yet) (:func:`item_groups_needed`), or break the rules of
        :func:`~gbdt_plrank._util.validation.check_item_groups`.
    """
    given = item_groups is not None
    needed = item_groups_needed(fairness, given, name=name, required=required)
    return check_item_groups(item_groups, n, name=name) if needed and given else None
