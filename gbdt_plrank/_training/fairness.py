r"""HIGH LEVEL: the fairness-of-exposure term of the PL-Rank objective and what the estimator needs.

With a fairness loss :math:`F` the PL-Rank objective maximises, per query,

.. math::

    J(m) = \mathbb{E}_{y \sim \pi_m}\Big[\sum_k \theta_k \rho_{y_k}\Big] - w\, F(E),
    \qquad E(d) = \mathbb{E}_{y \sim \pi_m}\Big[\sum_k \theta_k \mathbb{1}[y_k = d]\Big],

the expected metric@K (``rho`` normalised by the ideal DCG for NDCG) minus ``w`` =
``fairness_weight`` times a loss of the exposures at the cut-off K with the DCG rank weights.
Three losses (:data:`FAIRNESS`), each quadratic in :math:`E`, with :math:`g_d` the gain of d's
label (:func:`~gbdt_plrank._ranking_metric.gains`, not normalised) and :math:`n` the query's
documents:

- ``"expected-exposure"``: EE-L :math:`= \sum_d (E(d) - \epsilon(d))^2` against the
  equal-expected-exposure target :math:`\epsilon(d)`, the mean rank weight over the ranks that
  d's grade occupies in the ideal ranking (Diaz et al. 2020;
  :func:`gbdt_plrank.metrics.expected_exposure_loss`);
- ``"disparity"``: the individual disparity of the 2021 PL-Rank experiments (exposure
  proportional to merit, Singh and Joachims 2018),
  :math:`D = \frac{1}{n(n-1)}\sum_{i \ne j} (E_i g_j - E_j g_i)^2`
  (:func:`gbdt_plrank.metrics.relevance_proportional_disparity`; 0 for n < 2);
- ``"group-disparity"``: with item groups, exposure per unit of merit equal across groups,
  :math:`GD = \sum_{a<b,\ M_a, M_b > 0} (X_a/M_a - X_b/M_b)^2`, :math:`X_a` and :math:`M_a`
  the sums of :math:`E` and :math:`g` over group :math:`a` (Singh and Joachims 2018, for two
  groups their squared disparate treatment; :func:`gbdt_plrank.metrics.group_disparity`). A
  query where fewer than two groups have merit contributes 0, and so do documents of a group
  without merit.

The gradient of :math:`J` is PL-Rank's with the signed per-document reward
:math:`\rho_d - w\, \partial F/\partial E(d)` (Oosterhuis 2021, the fairness form of PL-Rank);
the kernels estimate :math:`E` and the PL-Rank terms from independent halves of the samples
(``fair_estimate_groups`` in ``gbdt_plrank._kernels.fairness``), and since
:math:`\partial F/\partial E` is linear in :math:`E` the estimate is unbiased.

Hessian (loss :math:`L = -J`): the PL-Rank Hessian estimate with the same signed reward, plus
:math:`w` times the Gauss-Newton part :math:`\sum_{ij} A_{ij}\, \partial E(i)/\partial m(d)\,
\partial E(j)/\partial m(d) \ge 0` (:math:`A` the constant, positive semi-definite Hessian of
:math:`F` in :math:`E`), of which :meth:`FairnessSpec.gauss_newton` keeps a cheap non-negative
part through :math:`v_d = \partial E(d)/\partial m(d)` alone: :math:`c_d v_d^2`, with

- EE-L (:math:`A = 2I`): :math:`c_d = 2\frac{n}{n-1}`, a lower bound: the exposures of a query
  sum to a constant, so :math:`\sum_{i \ne d} \partial E(i)/\partial m(d) = -v_d` and by
  Cauchy-Schwarz :math:`\sum_{i \ne d} (\partial E(i)/\partial m(d))^2 \ge v_d^2/(n-1)`
  (equality for n = 2);
- the disparities: the diagonal term :math:`c_d = A_{dd}`,
  :math:`\frac{4}{n(n-1)}(\sum_j g_j^2 - g_d^2)` for D and :math:`2(G-1)/M_{a(d)}^2` for GD
  (:math:`G` groups with merit; 0 in a group without). This is the Gauss-Newton form with the
  other documents' exposures held still, not a bound: for GD the members of d's group can
  cancel its change of :math:`X_a`.

References
----------
F. Diaz, B. Mitra, M. D. Ekstrand, A. J. Biega and B. Carterette. Evaluating stochastic
rankings with expected exposure. CIKM 2020.

H. Oosterhuis. Computationally efficient optimization of Plackett-Luce ranking models for
relevance and fairness. SIGIR 2021.

A. Singh and T. Joachims. Fairness of exposure in rankings. KDD 2018.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._groups import resolve_groups, row_queries
from .._kernels import fairness as _fair_kernels
from .._ranking_metric import gains
from .._util.validation import check_item_groups
from ..metrics import expected_exposure_loss, group_disparity, relevance_proportional_disparity

__all__ = [
    "EMPTY_QUERIES",
    "FAIRNESS",
    "FAIR_METRICS",
    "GROUP_FAIRNESS",
    "LOSS_NAMES",
    "FairTerms",
    "FairnessSpec",
]

#: The fairness losses the objective can subtract from the expected metric.
FAIRNESS = ("expected-exposure", "disparity", "group-disparity")

#: The losses that need item groups.
GROUP_FAIRNESS = ("group-disparity",)

#: What the fairness term does with a query without a relevant document: leave it out, or (EE-L
#: only) train its exposure toward EE-L's target there, equal exposure for every document.
EMPTY_QUERIES = ("skip", "uniform")

#: The metrics whose rank weights define exposure (DCG's; precision's are flat over the top K).
FAIR_METRICS = ("ndcg", "dcg")

#: Each loss's short name: in metric names and as the name of its per-query values.
LOSS_NAMES = {
    "expected-exposure": "ee_l",
    "disparity": "disparity",
    "group-disparity": "group_disparity",
}


@dataclass(frozen=True)
class FairTerms:
    """What the kernels need of a training set's rows for one loss (all arrays ``(n,)``).

    Attributes
    ----------
    aux : float64 array
        The equal-exposure target for EE-L, the label's gain for the disparities.
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


def query_members(item_groups: np.ndarray, group_ptr: np.ndarray) -> np.ndarray:
    """Each row's item group numbered 0.. within its query, in increasing order of the ids."""
    row_query = row_queries(group_ptr)
    pairs, pair = np.unique(np.stack([row_query, item_groups]), axis=1, return_inverse=True)
    first = np.searchsorted(pairs[0], np.arange(group_ptr.shape[0] - 1))
    return np.ascontiguousarray(pair.ravel() - first[row_query], dtype=np.int64)


@dataclass(frozen=True)
class FairnessSpec:
    """The fairness term: its name (one of :data:`FAIRNESS`), its weight ``w >= 0`` and what it
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
    def kind(self) -> int:
        """The loss's code in the kernels (``FAIRNESS_CODES`` of ``gbdt_plrank._kernels.fairness``)."""
        return _fair_kernels.FAIRNESS_CODES[self.name]

    @property
    def needs_item_groups(self) -> bool:
        """Whether the loss is defined by item groups (:data:`GROUP_FAIRNESS`)."""
        return self.name in GROUP_FAIRNESS

    @property
    def trains_empty_queries(self) -> bool:
        """Whether queries without a relevant document have a fairness term (EE-L, ``"uniform"``)."""
        return self.name == "expected-exposure" and self.empty_queries == "uniform"

    @property
    def loss_name(self) -> str:
        """The loss's short name in metric names: ``"ee_l"``, ``"disparity"``, ``"group_disparity"``."""
        return LOSS_NAMES[self.name]

    @staticmethod
    def target(labels: np.ndarray, group_ptr: np.ndarray, theta: np.ndarray) -> np.ndarray:
        r"""The equal-expected-exposure target :math:`\epsilon(d)` of every row ``(n,)``."""
        out = np.empty(labels.shape[0])
        _fair_kernels.equal_exposure_target(labels, group_ptr, theta, out)
        return out

    def terms(
        self, labels: np.ndarray, group_ptr: np.ndarray, theta: np.ndarray, *, gain: str,
        item_groups: np.ndarray | None,
    ) -> FairTerms:
        """The kernels' per-row terms of validated labels (and item groups, for group fairness)."""
        sizes = np.diff(group_ptr)
        n = np.repeat(sizes, sizes).astype(np.float64)
        pairs = np.divide(1.0, n * (n - 1.0), out=np.zeros_like(n), where=n > 1)
        member = np.zeros(labels.shape[0], dtype=np.int64)
        if self.name == "expected-exposure":
            return FairTerms(self.target(labels, group_ptr, theta), member, 2.0 * n * n * pairs)
        g = gains(labels, gain)
        row_query = row_queries(group_ptr)
        if self.name == "disparity":
            squares = np.bincount(row_query, g * g, minlength=sizes.shape[0])[row_query]
            return FairTerms(g, member, 4.0 * pairs * (squares - g * g))
        member = query_members(item_groups, group_ptr)
        start = np.repeat(group_ptr[:-1], sizes)
        merit = np.zeros(labels.shape[0])
        np.add.at(merit, start + member, g)
        row_merit = merit[start + member]
        with_merit = np.bincount(row_query, merit > 0, minlength=sizes.shape[0])[row_query]
        curvature = np.divide(
            2.0 * (with_merit - 1.0), row_merit**2, out=np.zeros_like(row_merit),
            where=row_merit > 0,
        )
        return FairTerms(g, member, curvature)

    def gauss_newton(self, slope: np.ndarray, terms: FairTerms) -> np.ndarray:
        r""":math:`w\, c_d\, \widehat{\partial E(d)/\partial m(d)}^2` per row (module docstring)."""
        return self.weight * terms.curvature * slope * slope

    def loss(
        self, labels: np.ndarray, exposure: np.ndarray, row_query: np.ndarray, *, K: int,
        gain: str, item_groups: np.ndarray | None,
    ) -> np.ndarray:
        """Per query: the loss of ``exposure`` (:mod:`gbdt_plrank.metrics`; rows grouped).

        A query without a relevant document has the loss 0 unless :attr:`trains_empty_queries`.
        """
        if self.name == "expected-exposure":
            values = expected_exposure_loss(labels, exposure, row_query, k=K, per_query=True)
            if not self.trains_empty_queries:
                groups = resolve_groups(row_query, labels.shape[0])
                relevant = np.bincount(
                    row_queries(groups.ptr), labels[groups.order] > 0, minlength=values.shape[0]
                )
                values[relevant == 0] = 0.0
            return values
        if self.name == "disparity":
            return relevance_proportional_disparity(
                labels, exposure, row_query, gain=gain, per_query=True
            )
        return group_disparity(labels, exposure, row_query, item_groups, gain=gain, per_query=True)


def item_groups_needed(
    fairness: FairnessSpec | None, given: bool, *, name: str = "item_groups",
    required: bool = True,
) -> bool:
    """Whether the loss needs item groups; an error when they are given without a group loss,
    or missing with one (unless not ``required`` yet).

    Raises
    ------
    ValueError
        When ``given`` disagrees with ``fairness``.
    """
    needed = fairness is not None and fairness.needs_item_groups
    if given and not needed:
        raise ValueError(
            f"{name} are used only by fairness in {GROUP_FAIRNESS}, but fairness="
            f"{None if fairness is None else fairness.name!r} is given."
        )
    if needed and not given and required:
        raise ValueError(
            f"fairness={fairness.name!r} needs {name}: one integer group id >= 0 per document, "
            "with two or more groups."
        )
    return needed


def checked_item_groups(
    fairness: FairnessSpec | None, item_groups: object, n: int | None, *,
    name: str = "item_groups", required: bool = True,
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
