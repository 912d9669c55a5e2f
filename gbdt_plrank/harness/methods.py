"""The methods a comparison runs: one registry entry per name.

A method is a booster library and an objective: PL-Rank (:func:`~gbdt_plrank.plrank_objective`,
with a Hessian mode) or one of the library's own ranking objectives. How a method is trained is
:mod:`.training`'s job, through the package's one booster layer.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass

from .._objective import plrank_objective

__all__ = ["DEFAULT_HESSIAN", "METHODS", "PLRANK", "Method"]

#: The ``objective`` of the methods that use :func:`~gbdt_plrank.plrank_objective`.
PLRANK = "plrank"

#: The Hessian mode of :func:`~gbdt_plrank.plrank_objective` when none is given.
DEFAULT_HESSIAN = inspect.signature(plrank_objective).parameters["hessian"].default


@dataclass(frozen=True)
class Method:
    """A named way to train a ranker.

    Attributes
    ----------
    name : str
        The name used in configurations and results.
    library : {"xgboost", "lightgbm", "catboost"}
        The booster library.
    objective : str
        ``PLRANK``, or the library's own objective; ``{k}`` in it is replaced by the cut-off.
    hessian : str or None
        The PL-Rank Hessian mode (``PLRANK`` methods only).
    baseline : str or None
        The method the report measures this one against, paired by dataset and seed.
    """

    name: str
    library: str
    objective: str
    hessian: str | None = None
    baseline: str | None = None


METHODS: dict[str, Method] = {
    m.name: m
    for m in (
        Method("plrank-xgb", "xgboost", PLRANK, DEFAULT_HESSIAN, baseline="lambdamart-xgb"),
        Method("plrank-xgb-raw", "xgboost", PLRANK, "raw", baseline="plrank-xgb"),
        Method("plrank-xgb-nohess", "xgboost", PLRANK, "constant", baseline="plrank-xgb"),
        Method("plrank-lgb", "lightgbm", PLRANK, DEFAULT_HESSIAN, baseline="lambdarank-lgb"),
        Method("plrank-lgb-nohess", "lightgbm", PLRANK, "constant", baseline="plrank-lgb"),
        Method("lambdamart-xgb", "xgboost", "rank:ndcg"),
        Method("pairwise-xgb", "xgboost", "rank:pairwise"),
        Method("lambdarank-lgb", "lightgbm", "lambdarank"),
        Method("xendcg-lgb", "lightgbm", "rank_xendcg"),
        Method("yetirank-cb", "catboost", "YetiRank"),
        Method("stochasticrank-cb", "catboost", "StochasticRank:metric=NDCG;top={k};type=Exp"),
    )
}
