"""The booster layer: every training of the package goes through one backend per library.

:class:`~gbdt_plrank.PLRankRanker`, the comparison harness and the tuner train here. A backend
translates the shared settings into its library's names (:data:`NATIVE_NAMES`, one table), builds
the library's data objects with their query groups, trains with NDCG@K evaluation, early stopping
and callbacks, and returns a :class:`Trained` booster holding the rounds it predicts with, with
the evaluation history under common names (``valid_<i>`` and ``ndcg@<K>``).
"""

from ._base import (
    NATIVE_NAMES,
    Backend,
    BoosterSettings,
    History,
    Objective,
    Plan,
    QueryData,
    Trained,
    eval_name,
    metric_name,
)
from ._catboost import CatBoostBackend
from ._lightgbm import LightGBMBackend
from ._xgboost import XGBoostBackend

__all__ = [
    "BACKENDS",
    "NATIVE_NAMES",
    "Backend",
    "BoosterSettings",
    "CatBoostBackend",
    "History",
    "LightGBMBackend",
    "Objective",
    "Plan",
    "QueryData",
    "Trained",
    "XGBoostBackend",
    "eval_name",
    "metric_name",
]

#: Library name -> its backend.
BACKENDS: dict[str, Backend] = {
    "xgboost": XGBoostBackend(),
    "lightgbm": LightGBMBackend(),
    "catboost": CatBoostBackend(),
}
