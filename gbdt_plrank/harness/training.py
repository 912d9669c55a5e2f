"""One training of a comparison method, through the package's backend layer.

The harness trains through the package's one backend layer and, for PL-Rank, its one run builder, by
one of two entries: :func:`~gbdt_plrank.harness.train` here, for a *method* of
:data:`~gbdt_plrank.harness.METHODS` (the comparison's and the fairness frontier's methods and the
clicks experiment's library anchors), which returns its scores and curves
(:class:`~gbdt_plrank.harness.Fit`); and :class:`~gbdt_plrank.PLRankRanker`, for the clicks
experiment's PL-Rank logging policy and learners, whose fitted policy the experiment deploys and
values (``sample_rankings``, ``expected_exposure``), which a ``Fit`` does not hold. The ranker's
``fit`` builds its plan with the same run builder and trains with the same backend; it draws the
objective's and the booster's seeds from ``random_state`` where ``train`` passes its ``seed`` to
both.

Every method trains on the train split, evaluates the validation split after each round, stops
early when what it watches has not improved for ``early_stopping_rounds`` rounds, keeping no
round before ``min_rounds`` (one rule for every library), and scores the test split at its best
round. The shared tree settings reach each library under its own names
(:data:`~gbdt_plrank._backends.NATIVE_NAMES`); a method's native parameters (``[params.<method>]``
or ``--params``) are applied last. The library objectives' methods watch the library's NDCG@k. The
PL-Rank methods are planned by the package's one run builder
(:func:`~gbdt_plrank._training.plrank_plan.plrank_plan`) from their settings
(:func:`.config.method_settings`: ``[plrank]``, the method's Hessian mode, its
``[params.<method>.plrank]`` table) and record NDCG@k with the package's metric, then their policy's
expected NDCG@k, which they stop on by default. The PiRank methods build
:func:`~gbdt_plrank.pirank_objective` from ``[pirank]`` the same way and watch the library's NDCG@k.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .._backends import BACKENDS, Backend, BoosterSettings, Plan, eval_name, metric_name
from .._ranking_metric import RankingMetric
from .._training.evaluation import RankingMetricEval
from .._training.pirank_objective import pirank_objective
from .._training.plrank_plan import plrank_plan
from .._util.compat import require
from .._util.schema import ConfigError
from ..datasets import Split
from .methods import METHODS, OWN_OBJECTIVES, PIRANK, PLRANK, Method
from .settings import (
    PiRankSettings,
    PLRankSettings,
    method_options,
    method_settings,
    objective_settings,
)

if TYPE_CHECKING:
    from ..datasets import LTRDataset
    from .settings import TreeSettings

__all__ = ["BASE_MARGIN_LIBRARIES", "TEST_CURVE_LIBRARIES", "Fit", "train"]

#: The libraries whose data start a training from the splits' base margins
#: (:attr:`~gbdt_plrank.datasets.Split.base_margin`: XGBoost's ``base_margin``, LightGBM's
#: ``init_score``).
BASE_MARGIN_LIBRARIES = ("xgboost", "lightgbm")

#: The libraries whose early stopping watches the last eval set only, so that
#: ``train(test_curve=True)`` can score the test split every round without stopping on it.
TEST_CURVE_LIBRARIES = ("xgboost", "torch")


@dataclass(frozen=True)
class Fit:
    """What one training produced.

    Attributes
    ----------
    curve : float array (rounds_run,)
        Validation NDCG@k after each round (the watched metric, with ``train(watch=)``).
    history : dict
        Every validation curve the training recorded, by metric name (``"ndcg@<k>"``, and
        ``"expected_ndcg@<k>"`` for a PL-Rank method stopped on its policy).
    watched : str
        The name of the curve early stopping watched.
    best_round : int
        Number of rounds kept (1-based): the round early stopping chose.
    test_scores : float array (n_test,)
        Scores of the test split's rows at ``best_round`` (its base margins included).
    train_seconds : float
        Wall time of the library's training call, validation included.
    vali_scores : float array (n_vali,)
        Scores of the validation split's rows at ``best_round``, its base margins included
        (e.g. to calibrate a temperature without looking at the test split).
    test_history : dict or None
        With ``train(test_curve=True)``: the test split's curves after each round, by the
        names of ``history``; else ``None``.
    train_scores : float array (n_train,) or None
        With ``train(score_train=True)``: the training split's scores at ``best_round``, its
        base margins included (e.g. to start another training from); else ``None``.
    """

    curve: np.ndarray
    history: dict[str, np.ndarray]
    watched: str
    best_round: int
    test_scores: np.ndarray
    train_seconds: float
    vali_scores: np.ndarray
    test_history: dict[str, np.ndarray] | None = None
    train_scores: np.ndarray | None = None


def _plan(
    method: Method,
    *,
    k: int,
    seed: int,
    trees: TreeSettings,
    settings: Mapping[str, Any],
    params: Mapping[str, Any],
    callbacks: Sequence[Any],
    watch: RankingMetric | None = None,
) -> Plan:
    """The method's plan: a library objective by name (watching ``watch`` if given), or one of
    the package's objectives."""
    rounds: dict[str, Any] = {
        "n_estimators": trees.rounds,
        "early_stopping_rounds": trees.early_stopping_rounds,
        "min_rounds": trees.min_rounds,
        "min_delta": trees.min_delta,
        "patience_rate": trees.patience_rate,
    }
    if method.objective not in OWN_OBJECTIVES:
        metrics = () if watch is None else (RankingMetricEval(watch),)
        return Plan(method.objective.format(k=k), k, callbacks=callbacks, metrics=metrics, **rounds)
    chosen = method_settings(method, settings, params)
    if method.objective == PLRANK:
        assert isinstance(chosen, PLRankSettings)
        return plrank_plan(
            method_options(method, settings, params, k=k),
            stopping_metric=chosen.stopping,
            seed=seed,
            n_jobs=trees.n_jobs,
            callbacks=callbacks,
            ranking=RankingMetric("ndcg", k, "exp"),
            **rounds,
        )
    assert method.objective == PIRANK and isinstance(chosen, PiRankSettings)
    objective = pirank_objective(K=k, tau=chosen.tau, hessian=chosen.hessian, n_jobs=trees.n_jobs)
    return Plan(objective, k, callbacks=callbacks, **rounds)


#: Query groups of the training split that a probe of a native parameter trains on.
_PROBE_QUERIES = 8


def _library_error(err: BaseException, library: str) -> bool:
    """Whether ``err`` is the library's own error (raised by its native code or its checks of
    a parameter's type), rather than the package's or a callback's."""
    top = type(err).__module__.partition(".")[0].lstrip("_")
    return top == library or isinstance(err, TypeError)


def _probe_objective(library: str) -> str | None:
    """The first library objective of the methods of ``library`` (None for the network)."""
    return next(
        (
            m.objective
            for m in METHODS.values()
            if m.library == library and m.objective not in OWN_OBJECTIVES
        ),
        None,
    )


def _refused_param(
    method: Method, native: Mapping[str, Any], train_split: Split, err: BaseException
) -> tuple[str, str] | None:
    """The native parameter the library refused, found after a training failed with ``err``.

    Each native parameter is tried alone, through the same backend layer, for one round on
    the first queries of the training split with one of the library's own objectives: the first
    that the library refuses alone (where the same probe without parameters passes) is the
    culprit. Returns its name and the library's message, or None when ``err`` is not the
    library's or no parameter alone is refused (the failure is then not blamed on a
    parameter).
    """
    objective = _probe_objective(method.library)
    if not native or objective is None or not _library_error(err, method.library):
        return None
    end = int(train_split.group_ptr[min(_PROBE_QUERIES, train_split.n_queries)])
    head = Split(train_split.X[:end], train_split.y[:end], train_split.qid[:end])
    plan = Plan(objective.format(k=1), 1, n_estimators=1)
    backend = BACKENDS[method.library]

    def refusal(params: dict[str, Any]) -> str | None:
        try:
            backend.train(BoosterSettings(n_threads=1, params=params), head, [], plan)
        except Exception as probe:
            if _library_error(probe, method.library):
                return " ".join(str(probe).split())
        return None

    if refusal({}) is not None:  # the probe fails without parameters: it cannot tell
        return None
    return next(
        ((key, why) for key, value in native.items() if (why := refusal({key: value}))), None
    )


def train(
    name: str,
    data: LTRDataset,
    *,
    k: int,
    seed: int,
    trees: TreeSettings,
    plrank: PLRankSettings | None = None,
    pirank: PiRankSettings | None = None,
    params: Mapping[str, Any] | None = None,
    callbacks: Sequence[Any] = (),
    test_curve: bool = False,
    watch: RankingMetric | None = None,
    backend: Backend | None = None,
    score_train: bool = False,
) -> Fit:
    """Train method ``name`` with early stopping on validation and score the test split.

    The protocol: :doc:`/guide/comparison`, "How a comparison runs".

    Parameters
    ----------
    name : str
        A key of :data:`~gbdt_plrank.harness.METHODS`.
    data : LTRDataset
        Train, validation and test splits.
    k : int
        Cut-off of the validation metric, of the package's objectives (their ``K``) and of
        CatBoost's StochasticRank.
    seed : int
        Seed of the booster and of the PL-Rank objective's sampled rankings.
    trees : TreeSettings
        The shared booster settings.
    plrank, pirank : PLRankSettings, PiRankSettings, optional
        Settings of the PL-Rank and the PiRank methods (default: the schema's).
    params : mapping, optional
        The method's native parameters, applied last. The entry named after the method's
        objective (``"plrank"``, ``"pirank"``), a mapping, replaces fields of that objective's
        settings and, under ``"hessian"``, the method's Hessian mode.
    callbacks : sequence, default ()
        The library's own callbacks, called after each round (e.g. Optuna's pruning callbacks);
        the validation set is named ``valid_0`` (``valid_1`` with ``test_curve``).
    test_curve : bool, default False
        Also score the test split after every round (``Fit.test_history``, for learning
        curves); early stopping still watches the validation split alone, and the test scores
        and the best round are those without it. Refused by the methods whose library's early
        stopping watches every eval set.
    watch : RankingMetric, optional
        For a method of a library objective: the package's metric of the ranking by score that
        early stopping watches, in place of the library's NDCG@k (e.g. DCG@k with linear gain,
        for labels that are rewards).
    backend : Backend, optional
        The backend to train with, in place of the library's default one.
    score_train : bool, default False
        Also score the training split at the best round (``Fit.train_scores``).

    Returns
    -------
    Fit

    Raises
    ------
    ValueError
        When ``name`` is not a method, for ``test_curve`` or ``watch`` where it refuses them,
        or for base margins (``Split.base_margin``) outside ``BASE_MARGIN_LIBRARIES``.
    ConfigError
        When the library refuses a native parameter (named with its method, value and reason).
    MissingDependencyError
        When the method's library is not installed.
    """
    if name not in METHODS:
        raise ValueError(f"name must be one of {', '.join(METHODS)}, but {name!r} is given.")
    method = METHODS[name]
    if test_curve and method.library not in TEST_CURVE_LIBRARIES:
        raise ValueError(
            f"test_curve needs a method whose early stopping watches the last eval set only "
            f"(libraries {', '.join(TEST_CURVE_LIBRARIES)}), but {name!r} trains with "
            f"{method.library}."
        )
    if watch is not None and method.objective in OWN_OBJECTIVES:
        raise ValueError(
            f"watch needs a method of a library objective, but {name!r} trains with the "
            f"{OWN_OBJECTIVES[method.objective]} objective, which watches its own metrics."
        )
    started = [s for s in ("train", "vali", "test") if getattr(data, s).base_margin is not None]
    if started and method.library not in BASE_MARGIN_LIBRARIES:
        raise ValueError(
            f"base margins on the {started[0]} split need a method of "
            f"{' or '.join(BASE_MARGIN_LIBRARIES)}, but {name!r} trains with {method.library}."
        )
    require(method.library, purpose=f"method {name!r}")
    native = dict(params or {})
    plan = _plan(
        method,
        k=k,
        seed=seed,
        trees=trees,
        settings=objective_settings(plrank, pirank),
        params=native,
        callbacks=callbacks,
        watch=watch,
    )
    native.pop(method.objective, None)
    backend = BACKENDS[method.library] if backend is None else backend
    settings = trees.booster_settings(seed=seed, params=native)
    evals = [data.test, data.vali] if test_curve else [data.vali]
    try:
        trained = backend.train(settings, data.train, evals, plan)
    except Exception as err:
        refused = _refused_param(method, native, data.train, err)
        if refused is None:
            raise
        key, why = refused
        raise ConfigError(
            f"{name}'s native parameter {key} = {native[key]!r} is refused by "
            f"{method.library}: {why}"
        ) from err

    def margins(split: Split) -> np.ndarray:
        own = backend.margins(trained.booster, split.X, n_threads=trees.n_jobs)
        return own if split.base_margin is None else split.base_margin + own

    scores, vali = margins(data.test), margins(data.vali)
    curves = [
        {m: np.asarray(v) for m, v in trained.history[eval_name(i)].items()}
        for i in range(len(evals))
    ]
    history = curves[-1]
    watched = plan.metrics[-1].name if plan.metrics else metric_name(k)
    return Fit(
        history[metric_name(k) if watch is None else watched],
        history,
        watched,
        trained.rounds,
        scores,
        trained.seconds,
        vali,
        curves[0] if test_curve else None,
        margins(data.train) if score_train else None,
    )
