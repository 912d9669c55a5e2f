"""The methods a comparison runs: one registry entry per name.

A method is a booster library and an objective: one of the package's own objectives
(``OWN_OBJECTIVES``: PL-Rank, :func:`~gbdt_plrank.plrank_objective`, or PiRank,
:func:`~gbdt_plrank.pirank_objective`) or one of the library's own ranking objectives. How a
method is trained is :mod:`.training`'s job, through the package's one backend layer.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["METHODS", "OWN_OBJECTIVES", "PIRANK", "PLRANK", "Method"]

#: The ``objective`` of the methods that use :func:`~gbdt_plrank.plrank_objective`.
PLRANK = "plrank"

#: The ``objective`` of the methods that use :func:`~gbdt_plrank.pirank_objective`.
PIRANK = "pirank"

#: A method's ``objective`` -> the title of the package's objective it names; also the names of
#: the settings tables of a configuration and of a method's option sub-tables
#: (``[params.<method>.<name>]``).
OWN_OBJECTIVES: dict[str, str] = {PLRANK: "PL-Rank", PIRANK: "PiRank"}


@dataclass(frozen=True)
class Method:
    """A named way to train a ranker.

    Attributes
    ----------
    name : str
        The name used in configurations and results.
    library : {"xgboost", "lightgbm", "catboost", "torch"}
        The booster library, or ``"torch"``: a neural network trained by the PL-Rank gradient
        (the network's options are its native parameters, ``[params.plrank-nn]``).
    objective : str
        A key of ``OWN_OBJECTIVES``, or the library's own objective; ``{k}`` in it is
        replaced by the cut-off.
    hessian : str or None
        The Hessian mode that defines the method (``OWN_OBJECTIVES`` methods only), over
        the objective's settings table; None keeps the table's.
    baseline : str or None
        The method the report measures this one against, paired by dataset and seed.
    references : tuple of str
        Further methods the report pairs this one with, when they ran too.
    """

    name: str
    library: str
    objective: str
    hessian: str | None = None
    baseline: str | None = None
    references: tuple[str, ...] = ()


METHODS: dict[str, Method] = {
    m.name: m
    for m in (
        Method("plrank-xgb", "xgboost", PLRANK, baseline="lambdamart-xgb"),
        Method("plrank-xgb-raw", "xgboost", PLRANK, "raw", baseline="plrank-xgb"),
        Method("plrank-xgb-nohess", "xgboost", PLRANK, "constant", baseline="plrank-xgb"),
        Method("plrank-lgb", "lightgbm", PLRANK, baseline="lambdarank-lgb"),
        Method("plrank-lgb-nohess", "lightgbm", PLRANK, "constant", baseline="plrank-lgb"),
        Method(
            "plrank-nn",
            "torch",
            PLRANK,
            baseline="plrank-xgb",
            references=("plrank-xgb-nohess", "lambdamart-xgb"),
        ),
        Method(
            "pirank-xgb", "xgboost", PIRANK, baseline="lambdamart-xgb", references=("plrank-xgb",)
        ),
        Method(
            "pirank-lgb", "lightgbm", PIRANK, baseline="lambdarank-lgb", references=("plrank-lgb",)
        ),
        Method("lambdamart-xgb", "xgboost", "rank:ndcg"),
        Method("pairwise-xgb", "xgboost", "rank:pairwise"),
        Method("lambdarank-lgb", "lightgbm", "lambdarank"),
        Method("xendcg-lgb", "lightgbm", "rank_xendcg"),
        Method("yetirank-cb", "catboost", "YetiRank"),
        Method("stochasticrank-cb", "catboost", "StochasticRank:metric=NDCG;top={k};type=Exp"),
    )
}
