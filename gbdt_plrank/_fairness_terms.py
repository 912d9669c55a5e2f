r"""The fairness terms: one registry of the losses of a policy's exposures.

A fairness term is a loss :math:`F(E)` of the expected exposures :math:`E(d)` of a query's
documents under a policy, with the DCG rank weights :math:`\theta_k = 1/\log_2(k+1)` up to the
cut-off K. The PL-Rank objective subtracts ``fairness_weight`` times it from the expected metric
(:mod:`gbdt_plrank._training.fairness_spec`), the metrics measure it
(:func:`gbdt_plrank.metrics.fairness_loss`) and the fairness frontier reports it. Each term is
one :class:`FairnessTerm` of :data:`FAIRNESS_TERMS`, which every one of them reads: its name
(the ``fairness`` option's value), the code of its slope :math:`\partial F/\partial E` in the
kernels (``loss_slope`` of ``gbdt_plrank._kernels.fairness``) and the per-row parameter that
slope takes, its curvature (the Gauss-Newton part of the objective's Hessian), its value per
query, and the names and columns under which the harness reports it.

The terms, each quadratic in :math:`E`, with :math:`g_d` the gain of d's label
(:func:`~gbdt_plrank._ranking_metric.gains`, not normalised) and :math:`n` the query's documents
(their sources and what each measures: :doc:`/guide/fairness`):

- ``"expected-exposure"``: EE-L :math:`= \sum_d (E(d) - \epsilon(d))^2`, :math:`\epsilon(d)`
  the mean rank weight over the ranks of d's grade in the ideal ranking
  (:func:`equal_exposure_target`);
- ``"disparity"``: :math:`D = \frac{1}{n(n-1)}\sum_{i \ne j} (E_i g_j - E_j g_i)^2` (0 for n < 2);
- ``"group-disparity"``: :math:`GD = \sum_{a<b,\ M_a, M_b > 0} (X_a/M_a - X_b/M_b)^2`,
  :math:`X_a` and :math:`M_a` the sums of :math:`E` and :math:`g` over item group :math:`a`; a
  query where fewer than two groups have merit, and a group without merit, contribute 0.

Curvature: the objective's Hessian gains :math:`w` times the Gauss-Newton part
:math:`\sum_{ij} A_{ij}\, \partial E(i)/\partial m(d)\, \partial E(j)/\partial m(d) \ge 0`
(:math:`A` the constant, positive semi-definite Hessian of :math:`F` in :math:`E`), of which
each term keeps the cheap non-negative part :math:`c_d v_d^2`, with
:math:`v_d = \partial E(d)/\partial m(d)` (``FairnessTerm.curvature``).

Adding a term: a branch of ``loss_slope`` in the kernels (or the code of an existing slope
with another per-row parameter), a :class:`FairnessTerm` registered here, its tests and its
documentation; the objective, the metrics, the options and the frontier read it from here.
References: Diaz et al. (CIKM 2020), Oosterhuis (SIGIR 2021), Singh and Joachims (KDD 2018).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ._groups import row_queries
from ._kernels import fairness as _fair_kernels
from ._ranking_metric import gains

__all__ = [
    "FAIRNESS_TERMS",
    "READS",
    "ExposureRows",
    "FairnessTerm",
    "equal_exposure_target",
    "fairness_names",
    "fairness_term",
    "query_members",
    "register",
]


def equal_exposure_target(
    labels: np.ndarray, group_ptr: np.ndarray, theta: np.ndarray
) -> np.ndarray:
    r"""The equal-expected-exposure target :math:`\epsilon(d)` of every row ``(n,)``.

    Per row of validated labels grouped by query (boundaries ``group_ptr``): the mean of the
    rank weights ``theta`` over the ranks its grade occupies in the ideal ranking, ranks beyond
    ``theta`` weighing 0 (Diaz et al. 2020: the documents of one grade share its ranks'
    exposure equally). The one wrapper of the kernel, for the loss, its metric and the harness's
    equal-exposure oracle.
    """
    out = np.empty(labels.shape[0])
    _fair_kernels.equal_exposure_target(labels, group_ptr, theta, out)
    return out


def query_members(item_groups: np.ndarray, group_ptr: np.ndarray) -> np.ndarray:
    """Each row's item group numbered 0.. within its query, in increasing order of the ids."""
    row_query = row_queries(group_ptr)
    pairs, pair = np.unique(np.stack([row_query, item_groups]), axis=1, return_inverse=True)
    first = np.searchsorted(pairs[0], np.arange(group_ptr.shape[0] - 1))
    return np.ascontiguousarray(pair.ravel() - first[row_query], dtype=np.int64)


@dataclass(frozen=True)
class ExposureRows:
    """Validated rows grouped by query: what every fairness term reads of them.

    Attributes
    ----------
    labels : float64 array of shape (n,)
        The labels, finite and >= 0 (their gains are the merits).
    ptr : int64 array of shape (G + 1,)
        The query boundaries.
    gain : {"exp", "linear"}
        The gain of a label.
    item_groups : int64 array of shape (n,) or None
        Each row's item group id (checked), for a term that reads them.
    """

    labels: np.ndarray
    ptr: np.ndarray
    gain: str
    item_groups: np.ndarray | None = None

    @property
    def n_queries(self) -> int:
        return self.ptr.shape[0] - 1

    @cached_property
    def row_query(self) -> np.ndarray:
        """Each row's query index."""
        return row_queries(self.ptr)

    @cached_property
    def gains(self) -> np.ndarray:
        """Each row's gain :math:`g_d`."""
        return gains(self.labels, self.gain)

    @cached_property
    def sizes(self) -> np.ndarray:
        """Each row's query size :math:`n`, as a float."""
        sizes = np.diff(self.ptr)
        return np.repeat(sizes, sizes).astype(np.float64)

    @cached_property
    def pair_weight(self) -> np.ndarray:
        """Each row's :math:`1 / (n(n-1))` (0 for n < 2)."""
        n = self.sizes
        return np.divide(1.0, n * (n - 1.0), out=np.zeros_like(n), where=n > 1)

    @cached_property
    def members(self) -> np.ndarray:
        """Each row's item group numbered 0.. within its query (zeros without item groups)."""
        if self.item_groups is None:
            return np.zeros(self.labels.shape[0], dtype=np.int64)
        return query_members(self.item_groups, self.ptr)

    def tile(self, m: int) -> ExposureRows:
        """``m`` copies of the rows one after the other, the queries numbered on: a loss of
        ``m`` exposures at once. The copies' item groups are numbered as this one's
        (:attr:`members`, computed once: the costly property)."""
        n = self.labels.shape[0]
        starts = (self.ptr[:-1][None, :] + n * np.arange(m)[:, None]).ravel()
        out = ExposureRows(
            np.tile(self.labels, m),
            np.append(starts, m * n).astype(np.int64),
            self.gain,
            None if self.item_groups is None else np.tile(self.item_groups, m),
        )
        out.__dict__["members"] = np.tile(self.members, m)  # the cached property, tiled
        return out


#: What a term reads of its rows besides the labels and exposures: the cut-off of the rank
#: weights, the gain of a label, the item groups.
READS = ("cutoff", "gain", "item_groups")


@dataclass(frozen=True)
class FairnessTerm:
    r"""One fairness term: a loss of a policy's exposures and everything read from it.

    Attributes
    ----------
    name : str
        The ``fairness`` option's value.
    column : str
        Its short name: in the eval metric's name (``expected_ndcg@10-1*<column>``), as the
        name of its per-query values and of the harness's columns.
    title : str
        Its name in a report's table header.
    axis : str
        Its name on a plot's axis.
    kernel : int
        The code of its slope :math:`\partial F / \partial E` in the kernels
        (``loss_slope`` of ``gbdt_plrank._kernels.fairness``).
    aux : callable
        ``aux(rows, theta) -> (n,)``: the per-row parameter that slope takes, at the rank
        weights ``theta`` of the training cut-off.
    curvature : callable
        ``curvature(rows) -> (n,)``: :math:`c_d` of the Gauss-Newton part
        :math:`w c_d v_d^2` of the objective's Hessian (module docstring).
    loss : callable
        ``loss(rows, exposure, theta) -> (G,)``: the loss of each query at the ``exposure`` of
        its rows (rows grouped) with the rank weights ``theta``.
    summary : str
        What it is, in words of reStructuredText that follow its name: the ``fairness``
        option's documentation and :func:`gbdt_plrank.metrics.fairness_loss`'s list.
    reads : frozenset of str
        What it reads besides the labels and exposures (of :data:`READS`).
    uniform_target : bool
        Whether it has a target on a query without a relevant document (equal exposure), so
        that ``empty_queries="uniform"`` can train such queries toward it.
    digits : int
        Decimals of its values in a report.
    """

    name: str
    column: str
    title: str
    axis: str
    kernel: int
    aux: Callable[[ExposureRows, np.ndarray], np.ndarray]
    curvature: Callable[[ExposureRows], np.ndarray]
    loss: Callable[[ExposureRows, np.ndarray, np.ndarray], np.ndarray]
    summary: str
    reads: frozenset[str] = frozenset()
    uniform_target: bool = False
    digits: int = 5

    def __post_init__(self) -> None:
        unknown = sorted(self.reads - set(READS))
        if unknown:
            raise ValueError(f"reads must be a subset of {READS}, but {unknown} is given.")

    @property
    def needs_item_groups(self) -> bool:
        """Whether it is defined by item groups."""
        return "item_groups" in self.reads


#: How a report's axis says which way is fairer.
_LOWER = "lower is fairer"

#: The registered terms, by name, in the order the options and reports list them.
FAIRNESS_TERMS: dict[str, FairnessTerm] = {}


def register(term: FairnessTerm) -> FairnessTerm:
    """Add ``term`` to :data:`FAIRNESS_TERMS` under its name; an error for a name or column
    taken."""
    for other in FAIRNESS_TERMS.values():
        if term.name == other.name or term.column == other.column:
            raise ValueError(
                f"a fairness term named {term.name!r} (column {term.column!r}) clashes with the "
                f"registered {other.name!r} (column {other.column!r})."
            )
    FAIRNESS_TERMS[term.name] = term
    return term


def fairness_names() -> tuple[str, ...]:
    """The registered terms' names."""
    return tuple(FAIRNESS_TERMS)


def fairness_term(name: str) -> FairnessTerm:
    """The registered term ``name`` (checked by the caller's rules: a KeyError else)."""
    return FAIRNESS_TERMS[name]


# --------------------------------------------------------------------------------------------
# The expected exposure loss (Diaz et al. 2020)
# --------------------------------------------------------------------------------------------
def _ee_aux(rows: ExposureRows, theta: np.ndarray) -> np.ndarray:
    """The equal-exposure target at the training cut-off."""
    return equal_exposure_target(rows.labels, rows.ptr, theta)


def _ee_curvature(rows: ExposureRows) -> np.ndarray:
    r""":math:`c_d = 2\frac{n}{n-1}` (:math:`A = 2I`), a lower bound: the exposures of a query
    sum to a constant, so :math:`\sum_{i \ne d} \partial E(i)/\partial m(d) = -v_d` and by
    Cauchy-Schwarz :math:`\sum_{i \ne d} (\partial E(i)/\partial m(d))^2 \ge v_d^2/(n-1)`
    (equality for n = 2)."""
    n = rows.sizes
    return 2.0 * n * n * rows.pair_weight


def _ee_loss(rows: ExposureRows, exposure: np.ndarray, theta: np.ndarray) -> np.ndarray:
    r"""Per query :math:`\sum_d (E(d) - \epsilon(d))^2`."""
    eps = equal_exposure_target(rows.labels, rows.ptr, theta)
    return np.bincount(rows.row_query, (exposure - eps) ** 2, minlength=rows.n_queries)


register(
    FairnessTerm(
        name="expected-exposure",
        column="ee_l",
        title="EE-L",
        digits=4,
        uniform_target=True,
        axis=f"EE-L (expected exposure loss, {_LOWER})",
        kernel=_fair_kernels.EXPECTED_EXPOSURE,
        aux=_ee_aux,
        curvature=_ee_curvature,
        loss=_ee_loss,
        reads=frozenset({"cutoff"}),
        summary=" ".join(
            [
                "the expected exposure loss EE-L of Diaz et al. (2020) against equal expected",
                "exposure within relevance grades, which only a stochastic ranker can bring to 0",
            ]
        ),
    )
)


# --------------------------------------------------------------------------------------------
# The disparity of the 2021 PL-Rank experiments (Oosterhuis 2021; Singh and Joachims 2018)
# --------------------------------------------------------------------------------------------
def _merit(rows: ExposureRows, theta: np.ndarray) -> np.ndarray:
    """The gain of each row's label, not normalised."""
    return rows.gains


def _disparity_curvature(rows: ExposureRows) -> np.ndarray:
    r"""The diagonal term :math:`c_d = A_{dd} = \frac{4}{n(n-1)}(\sum_j g_j^2 - g_d^2)`: the
    Gauss-Newton form with the other documents' exposures held still, not a bound."""
    g = rows.gains
    squares = np.bincount(rows.row_query, g * g, minlength=rows.n_queries)[rows.row_query]
    return 4.0 * rows.pair_weight * (squares - g * g)


def _disparity_loss(rows: ExposureRows, exposure: np.ndarray, theta: np.ndarray) -> np.ndarray:
    r"""Per query, in the closed form of Lagrange's identity,
    :math:`\frac{2}{n(n-1)}(\sum_i E(i)^2 \sum_j g_j^2 - (\sum_i E(i) g_i)^2)`."""
    q, G, rho, e = rows.row_query, rows.n_queries, rows.gains, exposure
    n = np.bincount(q, minlength=G).astype(np.float64)
    lagrange = np.bincount(q, e * e, minlength=G) * np.bincount(q, rho * rho, minlength=G)
    lagrange -= np.bincount(q, e * rho, minlength=G) ** 2
    out = np.zeros(G)
    ok = n > 1
    out[ok] = 2.0 * np.maximum(lagrange[ok], 0.0) / (n[ok] * (n[ok] - 1.0))
    return out


register(
    FairnessTerm(
        name="disparity",
        column="disparity",
        title="disparity",
        reads=frozenset({"gain"}),
        axis=f"relevance-proportional disparity ({_LOWER})",
        kernel=_fair_kernels.DISPARITY,
        aux=_merit,
        curvature=_disparity_curvature,
        loss=_disparity_loss,
        summary=" ".join(
            [
                "the individual disparity of the 2021 PL-Rank experiments,",
                r":math:`\frac{1}{n(n-1)}\sum_{i \ne j}(E_i g_j - E_j g_i)^2` with :math:`g` the",
                "label's gain (not normalised)",
            ]
        ),
    )
)


# --------------------------------------------------------------------------------------------
# The group disparity (Singh and Joachims 2018)
# --------------------------------------------------------------------------------------------
def _group_curvature(rows: ExposureRows) -> np.ndarray:
    r""":math:`c_d = 2(G-1)/M_{a(d)}^2` (:math:`G` groups with merit; 0 in a group without):
    the diagonal term, not a bound, since the members of d's group can cancel its change of
    :math:`X_a`."""
    g, member = rows.gains, rows.members
    start = np.repeat(rows.ptr[:-1], np.diff(rows.ptr))
    merit = np.zeros(rows.labels.shape[0])
    np.add.at(merit, start + member, g)
    row_merit = merit[start + member]
    with_merit = np.bincount(rows.row_query, merit > 0, minlength=rows.n_queries)[rows.row_query]
    return np.divide(
        2.0 * (with_merit - 1.0),
        row_merit**2,
        out=np.zeros_like(row_merit),
        where=row_merit > 0,
    )


def _group_loss(rows: ExposureRows, exposure: np.ndarray, theta: np.ndarray) -> np.ndarray:
    r"""Per query, in the closed form :math:`G \sum_a r_a^2 - (\sum_a r_a)^2` with
    :math:`r_a = X_a / M_a` over the :math:`G` groups with merit; 0 where G < 2."""
    member = rows.members
    width = int(member.max()) + 1 if member.size else 1
    cell = rows.row_query * width + member
    size = rows.n_queries * width
    merit = np.bincount(cell, rows.gains, minlength=size)
    share = np.divide(
        np.bincount(cell, exposure, minlength=size),
        merit,
        out=np.zeros_like(merit),
        where=merit > 0,
    ).reshape(-1, width)
    count = (merit > 0).reshape(-1, width).sum(axis=1)
    total = share.sum(axis=1)
    out = count * (share * share).sum(axis=1) - total * total
    return np.where(count > 1, np.maximum(out, 0.0), 0.0)


register(
    FairnessTerm(
        name="group-disparity",
        column="group_disparity",
        title="group disparity",
        axis=f"group disparity ({_LOWER})",
        kernel=_fair_kernels.GROUP_DISPARITY,
        aux=_merit,
        curvature=_group_curvature,
        loss=_group_loss,
        reads=frozenset({"gain", "item_groups"}),
        summary=" ".join(
            [
                "the squared differences of exposure per unit of merit between item groups (it",
                "needs every document's item group, ``item_groups``; a query where fewer than two",
                "groups have merit contributes 0)",
            ]
        ),
    )
)
