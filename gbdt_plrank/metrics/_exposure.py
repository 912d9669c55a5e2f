"""Fairness-of-exposure metrics: losses of a stochastic policy's expected exposure per document.

HIGH LEVEL, as the ranking metrics: each public function checks its input once (labels,
exposures, query groups, item groups) and computes the loss of a registered fairness term
(:mod:`gbdt_plrank._fairness_terms`). The arguments and conventions the metrics share are those
of :mod:`gbdt_plrank.metrics`.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from .._fairness_terms import ExposureRows, equal_exposure_target, fairness_names, fairness_term
from .._groups import resolve_groups
from .._ranking_metric import GAINS, dcg_weights, ranks_used
from .._util.docs import shared_entries
from .._util.validation import (
    as_finite_vector,
    check_choice,
    check_item_groups,
    check_labels,
    check_same_length,
)
from ._ranking import _ENTRIES, FloatArray, _check_k, _result

__all__ = [
    "expected_exposure_loss",
    "expected_exposure_parts",
    "fairness_loss",
    "group_disparity",
    "relevance_proportional_disparity",
]


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
    expected exposure: the grade that occupies ranks :math:`a..b` of the ideal ranking gives each
    of its documents :math:`\epsilon(d) = (\theta_a + \dots + \theta_b)/(b - a + 1)`. Per query,

    .. math::

        \text{EE-L} = \sum_d (E(d) - \epsilon(d))^2,\quad
        \text{EE-D} = \sum_d E(d)^2,\quad \text{EE-R} = \sum_d E(d)\,\epsilon(d),

    not normalised; a dataset value is the unweighted mean over queries. A Monte-Carlo
    ``exposure`` biases EE-L and EE-D upwards (not EE-R). The decomposition, the extremes and
    standard errors: :doc:`/guide/fairness`, "Measuring exposure".

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
        error over queries (:doc:`/guide/fairness`, "Measuring exposure").
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

        \mathrm{GD} = \sum_{a < b,\ M_a > 0,\ M_b > 0} \Big(\frac{X_a}{M_a} - \frac{X_b}{M_b}\Big)^2
        = G \sum_a r_a^2 - \Big(\sum_a r_a\Big)^2, \quad r_a = X_a / M_a,

    computed in the closed form on the right (:math:`G` groups with merit; for two groups, the
    square of Singh and Joachims' disparate treatment ratio difference). A query where fewer than
    two groups have merit scores 0 (a group without merit is not counted); the dataset value is
    the unweighted mean over all queries.

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
