r"""Early stopping that keeps no round before a minimum, for XGBoost, LightGBM and CatBoost.

The rule (``EarlyStopper``): after each round the watched value is recorded; rounds before
``min_rounds`` are neither kept nor counted, the best round is the best from round
``min_rounds`` on, and training stops ``max(patience, ceil(patience_rate * (best + 1)))``
rounds after it. A round becomes the best only when it beats the best value by more than
``min_delta``, compared as the library the callback serves compares (:data:`IMPROVES`). With
``min_rounds=0``, ``min_delta=0`` and ``patience_rate=0`` it is each library's own early
stopping; the callbacks record the kept round on the booster, count a continued booster's
rounds on and watch the folds' mean inside ``xgboost.cv`` and ``lightgbm.cv``, as the
libraries' own do.

Why a minimum: after :math:`m` rounds at learning rate :math:`\eta` a tree ensemble has
taken about :math:`1 - (1 - \eta)^m` of a full step, and a stochastic objective's early
validation maximum is mostly noise; :func:`min_rounds_for` asks for
:math:`m = \lceil 2 / \eta \rceil` rounds, about 86 % of it. The measurements:
:doc:`/guide/boosters`, "No round kept before 2 / eta".
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .._util.schema import validate
from ._base import Plan, library
from ._parameters import ROUNDS, Rounds, check_parameter

__all__ = [
    "IMPROVES",
    "LIBRARY_LEARNING_RATES",
    "EarlyStopper",
    "catboost_stopping_callback",
    "lightgbm_early_stopping",
    "lightgbm_stopping_callback",
    "min_rounds_for",
    "min_rounds_of",
    "plan_stopper",
    "xgboost_early_stopping",
    "xgboost_stopping_callback",
]

#: ``min_rounds_for``'s multiple of ``1 / learning_rate``.
_STEPS = 2.0


def _callback_stopper(
    rounds: object,
    min_rounds: object,
    min_delta: object,
    patience_rate: object,
    *,
    library: str,
    maximize: bool = True,
) -> EarlyStopper:
    """The stopper of a public stopping callback, its arguments checked by their rules
    (:class:`~gbdt_plrank._backends._parameters.Rounds`); its ``min_rounds`` is a number of
    rounds, which ``"auto"`` names only with a learning rate."""
    stopping = validate(
        Rounds,
        {
            "early_stopping_rounds": rounds,
            "min_rounds": min_rounds,
            "min_delta": min_delta,
            "patience_rate": patience_rate,
        },
        source="the early stopping callback",
    )
    if stopping.early_stopping_rounds is None:  # the rule's None is a fit's "no stopping"
        raise ValueError(
            "rounds (the patience, early_stopping_rounds) must be an integer >= 1 in a stopping "
            "callback, but None is given: leave the callback out for no early stopping."
        )
    if stopping.min_rounds == "auto":
        raise ValueError(
            "min_rounds must be an integer >= 0 in a stopping callback, but 'auto' is given: it "
            "does not know the learning rate; pass min_rounds=min_rounds_for(learning_rate)."
        )
    return EarlyStopper(
        stopping.early_stopping_rounds,
        stopping.min_rounds,
        stopping.min_delta,
        maximize=maximize,
        library=library,
        patience_rate=stopping.patience_rate,
    )


def plan_stopper(
    plan: Plan, *, params: Mapping[str, Any], library: str, maximize: bool = True
) -> EarlyStopper | None:
    """The stopper of ``plan``'s early stopping for a training by ``library`` with the native
    ``params`` (its ``min_rounds`` resolved, :func:`min_rounds_of`), or None without.

    The plan's values were checked by the surface that built it.
    """
    if plan.early_stopping_rounds is None:
        return None
    return EarlyStopper(
        plan.early_stopping_rounds,
        min_rounds_of(plan.min_rounds, params=params, library=library),
        plan.min_delta,
        maximize=maximize,
        library=library if library in IMPROVES else "lightgbm",
        patience_rate=plan.patience_rate,
    )


def min_rounds_for(learning_rate: float) -> int:
    """The rounds early stopping waits for before it keeps one: ``ceil(2 / learning_rate)``.

    Parameters
    ----------
    learning_rate : float
        The booster's learning rate (shrinkage) :math:`\\eta > 0`.

    Returns
    -------
    int
        :math:`\\lceil 2 / \\eta \\rceil` (40 at 0.05, 20 at 0.1, 7 at XGBoost's default 0.3).

    Raises
    ------
    ValueError
        When ``learning_rate`` is not a finite number > 0.
    """
    if learning_rate is None:
        raise ValueError(
            "min_rounds_for needs the learning rate the booster trains with, but None (the "
            "library's default) is given: pass that default, e.g. 0.3 for XGBoost."
        )
    rate = check_parameter("learning_rate", learning_rate)
    return math.ceil(_STEPS / rate - 1e-9)


#: The learning rates the boosters use when none is set (their documented defaults). CatBoost
#: chooses its own from the data in ``fit``, and a network has no shrinkage: neither is here.
LIBRARY_LEARNING_RATES = {"xgboost": 0.3, "lightgbm": 0.1}

#: The names (with aliases) each library reads its learning rate under, in the library's own
#: precedence when several are set (XGBoost 3.2 and LightGBM 4.7 use ``learning_rate`` over its
#: aliases whatever their order; CatBoost refuses two): the first found is the rate trained with.
_LEARNING_RATE_NAMES = {
    "xgboost": ("learning_rate", "eta"),
    "lightgbm": ("learning_rate", "eta", "shrinkage_rate"),
    "catboost": ("learning_rate", "eta"),
}


def min_rounds_of(choice: object, *, params: Mapping[str, Any], library: str) -> int:
    """The minimum number of rounds ``choice`` names for a training by ``library``.

    Parameters
    ----------
    choice : int or "auto"
        An integer >= 0, or ``"auto"``: :func:`min_rounds_for` of the learning rate the
        training uses (checked by the rule of ``min_rounds`` where it was given).
    params : mapping
        The library's native parameters of the training, as it receives them: its learning
        rate is read there under any of the library's names for it (XGBoost's ``eta`` or
        ``learning_rate``, ...), so that a rate set in native ``params`` (a tuner's trial) is
        the one used; without one, the library's default (0.3 for XGBoost, 0.1 for LightGBM).
    library : str
        ``"xgboost"``, ``"lightgbm"``, ``"catboost"`` or ``"torch"``. ``"auto"`` is 0 for a
        network (its epochs are not shrunk steps) and for CatBoost without a learning rate
        (CatBoost chooses one from the data when it trains).
    """
    if choice != "auto":
        return int(choice)
    names = _LEARNING_RATE_NAMES.get(library, ())
    rate = next(
        (params[n] for n in names if params.get(n) is not None), LIBRARY_LEARNING_RATES.get(library)
    )
    try:
        value = float(rate)  # XGBoost also takes "0.1"
    except (TypeError, ValueError):  # none, or not a rate: the library refuses it when it trains
        return 0
    return min_rounds_for(value) if math.isfinite(value) and value > 0 else 0


def _xgboost_improves(new: float, best: float, delta: float, maximize: bool) -> bool:
    """XGBoost's ``callback.EarlyStopping``: ``new - delta > best`` (``best - delta > new``)."""
    return new - delta > best if maximize else best - delta > new


def _lightgbm_improves(new: float, best: float, delta: float, maximize: bool) -> bool:
    """LightGBM's ``early_stopping``: ``new > best + delta`` (``new < best - delta``)."""
    return new > best + delta if maximize else new < best - delta


#: Library -> whether a value ``new`` beats ``best`` by more than ``delta``, written as that
#: library's own early stopping writes it (XGBoost 3.2's ``callback.EarlyStopping``, LightGBM
#: 4.7's ``early_stopping``; CatBoost and the network backend use LightGBM's). In floating point
#: the two differ on a gain of exactly ``delta``: 0.12 -> 0.13 with ``delta=0.01`` is a gain for
#: XGBoost (0.13 - 0.01 = 0.12000000000000001 > 0.12) and none for LightGBM
#: (0.12 + 0.01 = 0.13, not above 0.13).
IMPROVES = {"xgboost": _xgboost_improves, "lightgbm": _lightgbm_improves}


@dataclass
class EarlyStopper:
    """The stopping rule, fed one watched value per round (:doc:`/guide/boosters`, "No round kept
    before 2 / eta").

    The values come checked by the rules of ``early_stopping_rounds``, ``min_rounds``,
    ``min_delta`` and ``patience_rate`` (:mod:`gbdt_plrank._backends._parameters`), where they
    were given: a stopping callback, a ranker, the harness.

    Parameters
    ----------
    patience : int
        Stop when the best round is this many rounds behind (>= 1).
    min_rounds : int
        Rounds ``0 .. min_rounds - 2`` (0-based) are neither kept nor counted: the first
        candidate is round ``min_rounds - 1``, the ``min_rounds``-th.
    min_delta : float
        A round becomes the best only when its value beats the best value by more than this
        (>= 0): smaller gains count as none, so a curve that has flattened out stops.
    maximize : bool, default True
        Whether higher values are better (``False``: a loss).
    library : {"lightgbm", "xgboost"}, default "lightgbm"
        Whose comparison decides a gain (``IMPROVES``).
    patience_rate : float, default 0.0
        Training stops :attr:`wait` ``= max(patience, ceil(patience_rate * (b + 1)))`` rounds
        after the best round ``b`` (0-based; the rate >= 0, 0 is a fixed patience, the
        libraries' own rule), as AutoGluon's adaptive early stopping (``AdaptiveES``) grows its
        patience.

    Attributes
    ----------
    best_round : int
        0-based best round so far (-1 before the first candidate).
    best_value : float
        Its watched value (NaN before the first candidate).
    """

    patience: int
    min_rounds: int
    min_delta: float
    maximize: bool = True
    library: str = "lightgbm"
    patience_rate: float = ROUNDS.patience_rate
    best_round: int = field(default=-1, init=False)
    best_value: float = field(default=math.nan, init=False)
    last_round: int = field(default=-1, init=False)
    last_value: float = field(default=math.nan, init=False)

    def __post_init__(self) -> None:
        if self.library not in IMPROVES:
            raise ValueError(
                f"library must be one of {', '.join(IMPROVES)}, but {self.library!r} is given."
            )

    def reset(self) -> None:
        """Forget every round (a new training)."""
        self.best_round, self.best_value = -1, math.nan
        self.last_round, self.last_value = -1, math.nan

    def update(self, round_: int, value: float) -> bool:
        """Record the watched ``value`` after 0-based round ``round_``; whether to stop now."""
        self.last_round, self.last_value = round_, float(value)
        if round_ + 1 < self.min_rounds:
            return False
        improves = IMPROVES[self.library]
        if self.best_round < 0 or improves(value, self.best_value, self.min_delta, self.maximize):
            self.best_round, self.best_value = round_, float(value)
        return round_ - self.best_round >= self.wait

    @property
    def wait(self) -> int:
        """The rounds training goes on after the best round before it stops:
        ``max(patience, ceil(patience_rate * (best_round + 1)))``, at most ``sys.maxsize``
        (which no training reaches: a rate so large never stops a training)."""
        grown = self.patience_rate * (self.best_round + 1) - 1e-9
        if grown >= sys.maxsize:  # also inf: the product of a rate near the float range's end
            return sys.maxsize
        return max(self.patience, math.ceil(grown))

    @property
    def kept_round(self) -> int:
        """The round to keep if training ended now: the best, or the last round while training
        has not reached ``min_rounds`` (-1 before any round)."""
        return self.last_round if self.best_round < 0 else self.best_round

    @property
    def kept_value(self) -> float:
        """The watched value of :attr:`kept_round` (NaN before any round)."""
        return self.last_value if self.best_round < 0 else self.best_value


#: XGBoost's own evaluation metrics that are minimised (losses and errors), by name prefix.
_XGBOOST_LOSSES = (
    "rmse",
    "rmsle",
    "mae",
    "mape",
    "mphe",
    "logloss",
    "error",
    "merror",
    "mlogloss",
    "poisson-nloglik",
    "gamma-nloglik",
    "cox-nloglik",
    "gamma-deviance",
    "tweedie-nloglik",
    "aft-nloglik",
)


def xgboost_early_stopping(
    rounds: int,
    *,
    min_rounds: int = ROUNDS.min_rounds,
    min_delta: float = ROUNDS.min_delta,
    patience_rate: float = ROUNDS.patience_rate,
    maximize: bool = True,
) -> Any:
    """An XGBoost callback: ``EarlyStopper`` on the last metric of the last eval set.

    Pass it in ``xgboost.train(callbacks=[...])`` or ``xgboost.cv(callbacks=[...])`` in place
    of ``early_stopping_rounds``. As XGBoost's ``callback.EarlyStopping`` it records
    ``best_iteration`` and ``best_score`` on the booster (each fold's in ``xgboost.cv``, whose
    results then end at the best round), compares as it does (a gain is ``new - min_delta >
    best``), watches the folds' mean in ``xgboost.cv`` and counts a continued booster's rounds
    (``xgb_model=``) on. The booster keeps every round: predict with ``iteration_range=(0,
    best_iteration + 1)``. A training that ends before ``min_rounds`` records its last round.
    The rule and why: :doc:`/guide/boosters`, "No round kept before 2 / eta".

    Parameters
    ----------
    rounds : int
        Patience: stop this many rounds after the best round (>= 1).
    min_rounds : int, default 0
        Keep no round before this one (:func:`min_rounds_for`), counted from the booster's
        first round.
    min_delta : float, default 0.0
        A round is a new best only when it beats the best value by more than this (>= 0).
    patience_rate : float, default 0.0
        Stop ``max(rounds, ceil(patience_rate * (b + 1)))`` rounds after the best round ``b``
        (0-based; >= 0): 0 is XGBoost's fixed patience, :data:`~gbdt_plrank.PATIENCE_RATE` the
        ranker's.
    maximize : bool, default True
        Whether higher values of the watched metric are better; ``False`` for a loss (watching
        one of XGBoost's own losses, ``rmse``, ``logloss``, ..., with ``True`` is refused).

    Returns
    -------
    xgboost.callback.TrainingCallback

    Raises
    ------
    ValueError
        For a value that breaks its rule (the message names it and the rule).
    """
    return xgboost_stopping_callback(
        _callback_stopper(
            rounds, min_rounds, min_delta, patience_rate, library="xgboost", maximize=maximize
        )
    )


def xgboost_stopping_callback(stopper: EarlyStopper) -> Any:
    """:func:`xgboost_early_stopping` with ``stopper`` (the XGBoost backend's, and Dask's)."""
    xgboost = library("xgboost")
    maximize = stopper.maximize

    # the base class of the library imported when called: no name to the checker
    class EarlyStopping(xgboost.callback.TrainingCallback):  # type: ignore[name-defined]
        start = 0

        def before_training(self, model: Any) -> Any:
            stopper.reset()
            self.start = model.num_boosted_rounds()  # a continued training counts on
            return model

        def after_iteration(self, model: Any, epoch: int, evals_log: Any) -> bool:
            if not evals_log:
                raise ValueError("early stopping needs an eval set: pass evals= to xgboost.train.")
            metrics = evals_log[next(reversed(evals_log))]
            name = next(reversed(metrics))
            if maximize and name.startswith(_XGBOOST_LOSSES):
                raise ValueError(
                    f"the watched metric {name!r} is a loss (lower is better), but maximize=True: "
                    f"pass maximize=False to xgboost_early_stopping."
                )
            score = metrics[name][-1]
            value = score[0] if isinstance(score, tuple) else score  # xgboost.cv: (mean, std)
            kept = stopper.kept_round
            stop = stopper.update(self.start + epoch, value)
            if stopper.kept_round != kept:  # as XGBoost's, recorded as it changes (cv reads it)
                model.set_attr(
                    best_iteration=str(stopper.kept_round), best_score=str(stopper.kept_value)
                )
            return stop

    return EarlyStopping()


def lightgbm_early_stopping(
    rounds: int,
    *,
    min_rounds: int = ROUNDS.min_rounds,
    min_delta: float = ROUNDS.min_delta,
    patience_rate: float = ROUNDS.patience_rate,
) -> Any:
    """A LightGBM callback: ``EarlyStopper`` on the first metric of the last eval set.

    Pass it in ``lightgbm.train(callbacks=[...])`` or ``lightgbm.cv(callbacks=[...])`` in
    place of ``lightgbm.early_stopping``; as that one, it sets the booster's
    ``best_iteration`` (1-based) and ``best_score``, compares as it does (a gain is
    ``new > best + min_delta``), watches the folds' mean inside ``lightgbm.cv`` and leaves the
    training data out (``lightgbm.cv``'s ``"train"`` with ``eval_train_metric=True``, or the
    training set given among ``valid_sets``). The first metric is the first of ``feval`` when
    ``params["metric"]`` is ``"None"``; a metric whose lower values are better is minimised. A
    training that ends before ``min_rounds`` keeps its last round, with that round's scores.

    Parameters
    ----------
    rounds, min_rounds : int
        The patience (>= 1) and the first round that may be kept (default 0), as in
        :func:`xgboost_early_stopping`.
    min_delta : float, default 0.0
        The least gain that makes a round the best (>= 0), as ``lightgbm.early_stopping``'s.
    patience_rate : float, default 0.0
        The rate the patience grows at with the best round, as in
        :func:`xgboost_early_stopping` (0: LightGBM's fixed patience).

    Returns
    -------
    callable
        ``callback(env)``, run after each round where ``lightgbm.early_stopping`` runs.

    Raises
    ------
    ValueError
        For a value that breaks its rule (the message names it and the rule).
    """
    return lightgbm_stopping_callback(
        _callback_stopper(rounds, min_rounds, min_delta, patience_rate, library="lightgbm")
    )


def lightgbm_stopping_callback(stopper: EarlyStopper) -> Any:
    """:func:`lightgbm_early_stopping` with ``stopper`` (the LightGBM backend's)."""
    lightgbm = library("lightgbm")
    best: list[Any] = []

    def training_data(name: str, model: Any) -> bool:
        """LightGBM's own test of an eval result on the training data."""
        if isinstance(model, lightgbm.CVBooster):
            return name == "train"
        return name == getattr(model, "_train_data_name", "training")

    def early_stopping(env: Any) -> None:
        if env.iteration == env.begin_iteration:
            stopper.reset()
        results = [
            r for r in env.evaluation_result_list or () if not training_data(r[0], env.model)
        ]
        if not results:
            raise ValueError(
                "early stopping needs an eval set besides the training data: pass valid_sets= "
                "to lightgbm.train."
            )
        _, _, value, higher_better = next(r for r in results if r[0] == results[-1][0])[:4]
        stopper.maximize = bool(higher_better)
        stop = stopper.update(env.iteration, value)
        if stopper.best_round == env.iteration:
            best[:] = [env.evaluation_result_list]
        if stop or env.iteration == env.end_iteration - 1:
            kept = stopper.kept_round
            scores = best[0] if kept == stopper.best_round else env.evaluation_result_list
            raise lightgbm.callback.EarlyStopException(kept, scores)

    early_stopping.order = 30  # type: ignore[attr-defined]  # where lightgbm.early_stopping runs
    return early_stopping


def catboost_stopping_callback(stopper: EarlyStopper, *, metric: str) -> Any:
    """A CatBoost callback: ``stopper`` on ``metric`` of the last eval set (the CatBoost
    backend's).

    CatBoost's own overfitting detector (``od_wait``) has no minimum: train with
    ``use_best_model=False`` and this callback in ``fit(callbacks=[...])``, then keep its
    ``kept + 1`` trees (``model.shrink``); ``min_delta`` compares as LightGBM's does.
    """

    class EarlyStopping:
        kept = -1

        def after_iteration(self, info: Any) -> bool:
            sets = [name for name in info.metrics if name.startswith("validation")]
            stop = stopper.update(info.iteration - 1, info.metrics[sets[-1]][metric][-1])
            self.kept = stopper.kept_round
            return not stop

    return EarlyStopping()
