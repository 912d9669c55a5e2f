r"""Weights that lengthen the boosting step of the documents a policy places deep.

PL-Rank's gradient for a document is proportional to its chance of being placed: a relevant
document the policy ranks deep gets a small gradient, and boosting lifts it slowly (the "softmax
gravity well" of policy gradients, Mei et al., NeurIPS 2020). ``deep_weight`` (the option
:class:`~gbdt_plrank._training.options.PLRankOptions` documents) multiplies each document's
gradient estimate by

.. math::

    w_d = \frac{s_q}{\operatorname{clip}(K' \rho_d, 1/A, 1)}, \qquad
    \rho_d = \frac{e^{m_d}}{\sum_{d' \in q} e^{m_{d'}}},

with :math:`m` the margins, :math:`K'` the training cut-off, or the query's number of documents
where that is smaller (the places its rankings have; :math:`K' \rho_d` is roughly the document's
chance of one of them), :math:`A` = ``deep_weight`` and
:math:`s_q > 0` the query's scale that keeps its total :math:`\sum_d w_d |g_d| = \sum_d |g_d|`.
The Hessian is left as it is. The weights are positive and per document, so the weighted
gradient is a preconditioned ascent direction of the same expected metric: its stationary
points, the estimate itself and the policy it trains toward are PL-Rank's
(:doc:`/research/per-round`, "At the first call's settings", has the measurements).
"""

from __future__ import annotations

import numpy as np

from .._kernels import deep_weights as _kernels

__all__ = ["deep_weights", "placement_weights"]


def _checked(margins: np.ndarray, group_ptr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``margins`` and ``group_ptr`` as the kernels take them, one margin per row (the kernels
    do not check their bounds); ``K`` and ``cap`` are the option's, checked where it is set."""
    margins = np.ascontiguousarray(margins, dtype=np.float64)
    group_ptr = np.ascontiguousarray(group_ptr, dtype=np.int64)
    if margins.shape != (group_ptr[-1],):
        raise ValueError(
            f"margins must have one value per row of the {group_ptr.shape[0] - 1} queries "
            f"({group_ptr[-1]} rows), but its shape is {margins.shape}."
        )
    return margins, group_ptr


def placement_weights(
    margins: np.ndarray, group_ptr: np.ndarray, *, K: int, cap: float
) -> np.ndarray:
    r""":math:`1 / \operatorname{clip}(K_q \rho_d, 1/A, 1)` with :math:`A` = ``cap``,
    :math:`\rho_d` the softmax of ``margins`` within its query and :math:`K_q = \min(K, D_q)`
    the places a ranking of query :math:`q` has: 1 for the documents the policy likely places in
    the top ``K``, up to ``cap`` for the ones it places deep."""
    margins, group_ptr = _checked(margins, group_ptr)
    out = np.empty_like(margins)
    _kernels.query_weights_groups(margins, margins, group_ptr, K, float(cap), False, out)
    return out


def deep_weights(
    margins: np.ndarray, grad: np.ndarray, group_ptr: np.ndarray, *, K: int, cap: float
) -> np.ndarray:
    r"""The weights :math:`w_d` of the module's formula: :func:`placement_weights` scaled within
    each query so that :math:`\sum_d w_d |g_d| = \sum_d |g_d|` for ``grad`` :math:`g` (the
    scale is 1 in a query whose gradient is 0)."""
    margins, group_ptr = _checked(margins, group_ptr)
    grad = np.ascontiguousarray(grad, dtype=np.float64)
    if grad.shape != margins.shape:
        raise ValueError(f"grad must have the shape of margins {margins.shape}, not {grad.shape}.")
    out = np.empty_like(margins)
    _kernels.query_weights_groups(margins, grad, group_ptr, K, float(cap), True, out)
    return out
