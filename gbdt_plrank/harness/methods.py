"""The methods a comparison runs: one registry entry per name, one training path per library.

Every method trains on the train split, evaluates NDCG@k on the validation split after each
round, stops early when it has not improved for ``early_stopping_rounds`` rounds, and scores the
test split at its best round. The shared tree settings are passed under each library's names:

==================  ==================  =========================  =====================
setting             XGBoost             LightGBM                   CatBoost
==================  ==================  =========================  =====================
learning_rate       eta                 learning_rate              learning_rate
max_depth           max_depth           max_depth                  depth
num_leaves          (not used)          num_leaves                 (not used)
min_child_weight    min_child_weight    min_sum_hessian_in_leaf    (not used)
lambda              lambda              lambda_l2                  l2_leaf_reg
subsample           subsample           bagging_fraction           subsample (Bernoulli)
n_jobs              nthread             num_threads                thread_count
==================  ==================  =========================  =====================

A method's native parameters (``[params.<method>]`` or ``--params``) are applied last; their
``plrank`` sub-table, for the PL-Rank methods, replaces options of the objective (``N``,
``metric``, ``gain``, ``sampler`` and ``hessian``).
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

from .._compat import require
from .._objective import PLRankObjective, plrank_objective

if TYPE_CHECKING:
    from ..datasets import LTRDataset, Split
    from .config import PLRankSettings, TreeSettings

__all__ = ["METHODS", "PLRANK", "RESERVED_PARAMS", "Fit", "Method", "train"]

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

#: Native parameters the harness sets itself (with their common aliases), per library.
RESERVED_PARAMS: dict[str, frozenset[str]] = {
    "xgboost": frozenset({
        "objective", "eval_metric", "disable_default_eval_metric", "base_score", "seed",
        "random_state", "num_boost_round", "n_estimators", "early_stopping_rounds",
    }),
    "lightgbm": frozenset({
        "objective", "objective_type", "app", "application", "loss", "metric", "metrics",
        "metric_types", "eval_at", "ndcg_eval_at", "ndcg_at", "seed", "random_seed",
        "random_state", "num_iterations", "num_iteration", "n_iter", "num_tree", "num_trees",
        "num_round", "num_rounds", "nrounds", "num_boost_round", "n_estimators", "max_iter",
        "early_stopping_round", "early_stopping_rounds", "early_stopping", "n_iter_no_change",
    }),
    "catboost": frozenset({
        "loss_function", "objective", "eval_metric", "iterations", "num_boost_round",
        "n_estimators", "num_trees", "random_seed", "random_state", "od_type", "od_wait",
        "early_stopping_rounds", "use_best_model",
    }),
}


@dataclass(frozen=True)
class Fit:
    """What one training produced.

    Attributes
    ----------
    curve : float array (rounds_run,)
        Validation NDCG@k after each round, as the library computed it for early stopping.
    best_round : int
        Number of rounds kept (1-based): the round with the best validation NDCG@k.
    test_scores : float array (n_test,)
        Scores of the test split's rows at ``best_round``.
    train_seconds : float
        Wall time of the library's training call, validation included.
    """

    curve: np.ndarray
    best_round: int
    test_scores: np.ndarray
    train_seconds: float


Objective = PLRankObjective | str
Trainer = Callable[..., Fit]


def _purpose(method: Method) -> str:
    return f"method {method.name!r}"


def _train_xgboost(
    method: Method, data: LTRDataset, *, k: int, seed: int, trees: TreeSettings,
    objective: Objective, params: Mapping[str, Any], callbacks: Sequence[Any],
) -> Fit:
    xgb = require("xgboost", purpose=_purpose(method))
    native: dict[str, Any] = {
        "tree_method": "hist", "eta": trees.learning_rate, "max_depth": trees.max_depth,
        "min_child_weight": trees.min_child_weight, "lambda": trees.reg_lambda,
        "subsample": trees.subsample, "seed": seed, "eval_metric": f"ndcg@{k}",
    }
    if trees.n_jobs is not None:
        native["nthread"] = trees.n_jobs
    if isinstance(objective, str):
        native["objective"], obj = objective, None
    else:
        native["base_score"], obj = 0.0, objective
    native.update(params)

    def dmatrix(split: Split) -> Any:
        return xgb.DMatrix(split.X, label=split.y, group=split.group_sizes)

    history: dict[str, dict[str, list[float]]] = {}
    train_set, vali_set = dmatrix(data.train), dmatrix(data.vali)
    start = time.perf_counter()
    with xgb.config_context(verbosity=0):  # scoped: a "verbosity" param would change it for good
        booster = xgb.train(
            native, train_set, trees.rounds, evals=[(vali_set, "vali")], obj=obj,
            early_stopping_rounds=trees.early_stopping_rounds, evals_result=history,
            verbose_eval=False, callbacks=list(callbacks),
        )
    seconds = time.perf_counter() - start
    best = booster.best_iteration + 1
    scores = booster.predict(xgb.DMatrix(data.test.X), iteration_range=(0, best))
    return Fit(np.asarray(history["vali"][f"ndcg@{k}"]), best, scores, seconds)


def _train_lightgbm(
    method: Method, data: LTRDataset, *, k: int, seed: int, trees: TreeSettings,
    objective: Objective, params: Mapping[str, Any], callbacks: Sequence[Any],
) -> Fit:
    lgb = require("lightgbm", purpose=_purpose(method))
    native: dict[str, Any] = {
        "objective": objective, "metric": "ndcg", "eval_at": [k],
        "learning_rate": trees.learning_rate, "max_depth": trees.max_depth,
        "num_leaves": trees.num_leaves, "min_sum_hessian_in_leaf": trees.min_child_weight,
        "lambda_l2": trees.reg_lambda, "bagging_fraction": trees.subsample,
        "bagging_freq": int(trees.subsample < 1), "seed": seed, "deterministic": True,
        "force_row_wise": True, "verbosity": -1,
    }
    if trees.n_jobs is not None:
        native["num_threads"] = trees.n_jobs
    native.update(params)
    train_set = lgb.Dataset(data.train.X, data.train.y, group=data.train.group_sizes)
    vali_set = lgb.Dataset(
        data.vali.X, data.vali.y, group=data.vali.group_sizes, reference=train_set
    )
    history: dict[str, dict[str, list[float]]] = {}
    start = time.perf_counter()
    booster = lgb.train(
        native, train_set, trees.rounds, valid_sets=[vali_set], valid_names=["vali"],
        callbacks=[
            lgb.early_stopping(trees.early_stopping_rounds, verbose=False),
            lgb.record_evaluation(history),
            *callbacks,
        ],
    )
    seconds = time.perf_counter() - start
    best = booster.best_iteration
    scores = booster.predict(data.test.X, num_iteration=best)
    return Fit(np.asarray(history["vali"][f"ndcg@{k}"]), best, scores, seconds)


def _csr32(X: sp.csr_matrix) -> sp.csr_matrix:
    """The same matrix with int32 indices, which CatBoost requires."""
    return sp.csr_matrix(
        (X.data, X.indices.astype(np.int32), X.indptr.astype(np.int32)), shape=X.shape
    )


def _train_catboost(
    method: Method, data: LTRDataset, *, k: int, seed: int, trees: TreeSettings,
    objective: Objective, params: Mapping[str, Any], callbacks: Sequence[Any],
) -> Fit:
    cb = require("catboost", purpose=_purpose(method))
    eval_metric = f"NDCG:top={k};type=Exp"
    native: dict[str, Any] = {
        "loss_function": objective, "eval_metric": eval_metric, "iterations": trees.rounds,
        "learning_rate": trees.learning_rate, "depth": trees.max_depth,
        "l2_leaf_reg": trees.reg_lambda, "random_seed": seed, "od_type": "Iter",
        "od_wait": trees.early_stopping_rounds, "use_best_model": True, "verbose": False,
        "allow_writing_files": False,
    }
    if trees.subsample < 1:
        native.update(bootstrap_type="Bernoulli", subsample=trees.subsample)
    if trees.n_jobs is not None:
        native["thread_count"] = trees.n_jobs
    native.update(params)

    def pool(split: Split) -> Any:
        return cb.Pool(_csr32(split.X), label=split.y, group_id=split.qid)

    model = cb.CatBoost(native)
    train_set, vali_set = pool(data.train), pool(data.vali)
    start = time.perf_counter()
    model.fit(train_set, eval_set=vali_set, callbacks=list(callbacks))
    seconds = time.perf_counter() - start
    scores = model.predict(cb.Pool(_csr32(data.test.X)))
    curve = np.asarray(model.get_evals_result()["validation"][eval_metric])
    return Fit(curve, model.get_best_iteration() + 1, scores, seconds)


_TRAINERS: dict[str, Trainer] = {
    "xgboost": _train_xgboost,
    "lightgbm": _train_lightgbm,
    "catboost": _train_catboost,
}


def train(
    name: str,
    data: LTRDataset,
    *,
    k: int,
    seed: int,
    trees: TreeSettings,
    plrank: PLRankSettings,
    params: Mapping[str, Any] | None = None,
    callbacks: Sequence[Any] = (),
) -> Fit:
    """Train method ``name`` with early stopping on validation NDCG@k and score the test split.

    Parameters
    ----------
    name : str
        A key of :data:`METHODS`.
    data : LTRDataset
        Train, validation and test splits.
    k : int
        Cut-off of the validation metric, of the PL-Rank objective (its ``K``) and of
        CatBoost's StochasticRank.
    seed : int
        Seed of the booster and of the PL-Rank objective's sampled rankings.
    trees : TreeSettings
        The shared booster settings.
    plrank : PLRankSettings
        Options of the PL-Rank objective (``PLRANK`` methods only).
    params : mapping, optional
        The method's native parameters, applied last. A PL-Rank method's ``plrank`` entry, a
        mapping, replaces fields of ``plrank`` and, under ``"hessian"``, the method's Hessian mode.
    callbacks : sequence, default ()
        The library's own callbacks, called after each round (``xgboost.train(callbacks=)``,
        ``lightgbm.train(callbacks=)``, CatBoost's ``fit(callbacks=)``), e.g. Optuna's pruning
        callbacks.

    Returns
    -------
    Fit

    Raises
    ------
    ValueError
        When ``name`` is not a method.
    MissingDependencyError
        When the method's library is not installed.
    """
    if name not in METHODS:
        raise ValueError(f"name must be one of {', '.join(METHODS)}, but {name!r} is given.")
    method = METHODS[name]
    native = dict(params or {})
    options = dict(native.pop(PLRANK, {}))
    objective: Objective = method.objective.format(k=k)
    if method.objective == PLRANK:
        hessian = options.pop("hessian", method.hessian)
        plrank = replace(plrank, **options)
        objective = plrank_objective(
            K=k, N=plrank.N, metric=plrank.metric, gain=plrank.gain, hessian=hessian,
            seed=seed, sampler=plrank.sampler, n_jobs=trees.n_jobs,
        )
    return _TRAINERS[method.library](
        method, data, k=k, seed=seed, trees=trees, objective=objective, params=native,
        callbacks=callbacks,
    )
