"""The backend layer: every training of the package goes through one backend per library.

:class:`~gbdt_plrank.PLRankRanker`, the comparison harness and the tuner train here. A backend
translates the shared settings into its library's names (:data:`NATIVE_NAMES`, one table), builds
the library's data objects with their query groups, trains with an evaluation (the library's NDCG@K
or the package's own metrics), early stopping and callbacks, and returns a :class:`Trained` booster
holding the rounds it predicts with, with the evaluation history under common names (``valid_<i>``
and ``ndcg@<K>``). The ``torch`` backend (``gbdt_plrank._backends._torch``) trains a neural network
with the PL-Rank gradient in place of trees: its data objects are the :class:`Split` s themselves
and its rounds are epochs.

In version 0.1.0 this package was named ``gbdt_plrank._boosters``, and a fitted
:class:`~gbdt_plrank.nn.PLRankMLPRanker` pickled by it names its network's class
``gbdt_plrank._boosters._torch.Network`` (the other rankers' pickles name no class of this
package): the old names of this package and of its ``_torch`` module stay registered in
``sys.modules`` as aliases, so that such pickles still load. Nothing of the project imports
them (``tests/test_layout.py``).
"""

import sys

from . import _torch
from ._base import (
    MAX_ITEM_GROUPS,
    NATIVE_NAMES,
    Backend,
    BoosterSettings,
    EvalMetric,
    History,
    LibraryBackend,
    Objective,
    Plan,
    QueryFields,
    Split,
    Trained,
    checked_queries,
    eval_name,
    group_indices,
    metric_name,
    progress,
    query_weights,
)
from ._catboost import CatBoostBackend
from ._lightgbm import LightGBMBackend
from ._parameters import (
    HELD_OUT_PATIENCE,
    RANKER,
    RANKER_BACKENDS,
    ROUNDS,
    SHALLOW_QUERIES,
    STOPPING_METRICS,
    TREE_SETTINGS,
    RankerParameters,
    Rounds,
    check_parameter,
    holds_out_automatically,
)
from ._stopping import EarlyStopper
from ._torch import TorchBackend
from ._xgboost import XGBoostBackend

__all__ = [
    "BACKENDS",
    "HELD_OUT_PATIENCE",
    "MAX_ITEM_GROUPS",
    "NATIVE_NAMES",
    "RANKER",
    "RANKER_BACKENDS",
    "ROUNDS",
    "SHALLOW_QUERIES",
    "STOPPING_METRICS",
    "TREE_SETTINGS",
    "Backend",
    "BoosterSettings",
    "CatBoostBackend",
    "EarlyStopper",
    "EvalMetric",
    "History",
    "LibraryBackend",
    "LightGBMBackend",
    "Objective",
    "Plan",
    "QueryFields",
    "RankerParameters",
    "Rounds",
    "Split",
    "TorchBackend",
    "Trained",
    "XGBoostBackend",
    "backend_of_booster",
    "backend_of_data",
    "check_parameter",
    "checked_queries",
    "eval_name",
    "group_indices",
    "holds_out_automatically",
    "metric_name",
    "progress",
    "query_weights",
]

#: Library name -> its backend.
BACKENDS: dict[str, Backend] = {
    "xgboost": XGBoostBackend(),
    "lightgbm": LightGBMBackend(),
    "catboost": CatBoostBackend(),
    "torch": TorchBackend(),
}

# Old pickles look their classes up under the package's former name (see the docstring).
sys.modules.setdefault("gbdt_plrank._boosters", sys.modules[__name__])
sys.modules.setdefault("gbdt_plrank._boosters._torch", _torch)


def _backend_holding(kind: str, obj: object, rule: str) -> Backend:
    for backend in BACKENDS.values():
        if getattr(backend, f"holds_{kind}")(obj):
            return backend
    raise TypeError(f"{rule}, but a {type(obj).__module__}.{type(obj).__name__} is given.")


def backend_of_data(data: object) -> Backend:
    """The backend whose library ``data`` (a training or evaluation set) belongs to.

    Raises
    ------
    TypeError
        When ``data`` is neither an ``xgboost.DMatrix``, a ``lightgbm.Dataset`` nor a
        :class:`Split` (the ``torch`` backend's data).
    """
    return _backend_holding(
        "data",
        data,
        "the objectives and metrics are called by xgboost.train with an "
        "xgboost.DMatrix or by lightgbm.train with a lightgbm.Dataset (or by the torch backend "
        "with a Split)",
    )


def backend_of_booster(booster: object) -> Backend:
    """The backend whose library trained ``booster``.

    Raises
    ------
    TypeError
        When ``booster`` is not a model of XGBoost, LightGBM or CatBoost.
    """
    return _backend_holding("booster", booster, f"booster must be a model of {', '.join(BACKENDS)}")
