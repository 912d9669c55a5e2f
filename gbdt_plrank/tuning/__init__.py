"""Optuna tuning of the comparison harness's methods, with equal budgets, resumable.

``gbdt-plrank tune`` (``gbdt_plrank.cli``) and :func:`tune` (``tuner``) give each method a study
(``study``) whose trials train it with parameters drawn from its search space (``spaces``)
and score the best validation NDCG@k, pruned on intermediate values (``objective``); the best
parameters go to ``best_params.toml`` for ``gbdt-plrank compare --params`` (``output``).
"""

from .spaces import DEFAULT_SPACES, Choice, Range, SearchSpace, load_spaces
from .tuner import DEFAULT_PRUNER, tune

__all__ = [
    "DEFAULT_PRUNER",
    "DEFAULT_SPACES",
    "Choice",
    "Range",
    "SearchSpace",
    "load_spaces",
    "tune",
]
