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

from .._groups import filled_queries, row_queries

__all__ = ["deep_weights", "log_softmax", "placement_weights"]


def log_softmax(margins: np.ndarray, group_ptr: np.ndarray) -> np.ndarray:
    r"""Each row's :math:`\log \rho_d`, its query's softmax of ``margins`` (the probability that
    the Plackett-Luce policy places it first)."""
    q = row_queries(group_ptr)
    filled, starts = filled_queries(group_ptr)
    top = np.zeros(group_ptr.shape[0] - 1)
    top[filled] = np.maximum.reduceat(margins, starts)
    shifted = margins - top[q]
    total = np.ones_like(top)
    total[filled] = np.add.reduceat(np.exp(shifted), starts)
    return shifted - np.log(total)[q]


def placement_weights(
    margins: np.ndarray, group_ptr: np.ndarray, *, K: int, cap: float
) -> np.ndarray:
    r""":math:`1 / \operatorname{clip}(K_q \rho_d, 1/A, 1)` with :math:`A` = ``cap`` and
    :math:`K_q = \min(K, D_q)` the places a ranking of query :math:`q` has: 1 for the documents
    the policy likely places in the top ``K``, up to ``cap`` for the ones it places deep."""
    rho = np.exp(log_softmax(margins, group_ptr))
    places = np.minimum(K, np.diff(group_ptr))[row_queries(group_ptr)]
    return 1.0 / np.clip(places * rho, 1.0 / cap, 1.0)


def deep_weights(
    margins: np.ndarray, grad: np.ndarray, group_ptr: np.ndarray, *, K: int, cap: float
) -> np.ndarray:
    r"""The weights :math:`w_d` of the module's formula: :func:`placement_weights` scaled within
    each query so that :math:`\sum_d w_d |g_d| = \sum_d |g_d|` for ``grad`` :math:`g` (1 in a
    query whose gradient is 0)."""
    w = placement_weights(margins, group_ptr, K=K, cap=cap)
    q = row_queries(group_ptr)
    n_queries = group_ptr.shape[0] - 1
    size = np.abs(grad)
    total = np.bincount(q, size, minlength=n_queries)
    weighted = np.bincount(q, w * size, minlength=n_queries)
    scale = np.divide(total, weighted, out=np.ones_like(total), where=weighted > 0)
    return w * scale[q]
