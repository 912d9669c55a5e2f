"""Early stopping with a minimum number of rounds: the rule, its callbacks inside the real
boosters, and how ``"auto"`` reaches the rankers and the harness."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
from sklearn.model_selection import GroupKFold
from stopping import rounds_after_best

import gbdt_plrank
from gbdt_plrank import (
    PLRankRanker,
    lightgbm_early_stopping,
    min_rounds_for,
    xgboost_early_stopping,
)
from gbdt_plrank._backends._stopping import (
    EarlyStopper,
    catboost_stopping_callback,
    min_rounds_of,
)
from gbdt_plrank._util.schema import validate
from gbdt_plrank.harness import METHODS
from gbdt_plrank.harness import training as harness_training
from gbdt_plrank.harness.settings import PLRankSettings, TreeSettings

xgboost = pytest.importorskip("xgboost")
lightgbm = pytest.importorskip("lightgbm")


#: Each library's own test of a gain, written out (XGBoost 3.2's callback.EarlyStopping,
#: LightGBM 4.7's early_stopping): maximising, then minimising.
GAINS = {
    "xgboost": (lambda new, best, d: new - d > best, lambda new, best, d: best - d > new),
    "lightgbm": (lambda new, best, d: new > best + d, lambda new, best, d: new < best - d),
}


def reference_rule(
    curve: np.ndarray,
    patience: int,
    min_rounds: int,
    min_delta: float = 0.0,
    library: str = "lightgbm",
    maximize: bool = True,
    rate: float = 0.0,
) -> tuple[int, int]:
    """(0-based kept round, rounds run) by the definition: the first maximum (minimum) of the
    rounds from ``min_rounds`` on (1-based), training stopped ``patience`` rounds after the best
    so far, or ``rate`` times the rounds up to and with the best when that is longer. With
    ``min_delta``, the best so far changes only to a round that beats it by more, as
    ``library`` compares."""
    first = max(min_rounds - 1, 0)
    if curve.size <= first:
        return curve.size - 1, curve.size
    best = first
    gain = GAINS[library][0 if maximize else 1]
    for t in range(first, curve.size):
        if min_delta == 0.0:
            part = curve[first : t + 1]
            best = first + int(np.argmax(part) if maximize else np.argmin(part))
        elif gain(curve[t], curve[best], min_delta):
            best = t
        if t - best >= rounds_after_best(best, patience, rate):
            return best, t + 1
    return best, curve.size


@pytest.mark.parametrize("library", ["xgboost", "lightgbm"])
@pytest.mark.parametrize("seed", range(40))
def test_the_rule_matches_its_definition(seed: int, library: str) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    curve = np.round(rng.normal(size=n).cumsum() * 0.1 + rng.normal(size=n), 2)  # ties too
    patience, min_rounds = int(rng.integers(1, 10)), int(rng.integers(0, 40))
    min_delta = float(rng.choice([0.0, 0.01, 0.05, 0.1, 0.3]))
    rate = float(rng.choice([0.0, 0.0, 0.25, 0.5, 1.0, 2.0]))
    for maximize in (True, False):
        stopper = EarlyStopper(
            patience, min_rounds, min_delta, maximize=maximize, library=library, patience_rate=rate
        )
        ran = n
        for t, value in enumerate(curve):
            if stopper.update(t, value):
                ran = t + 1
                break
        expected = reference_rule(curve, patience, min_rounds, min_delta, library, maximize, rate)
        assert (stopper.kept_round, ran) == expected
        assert stopper.kept_value == curve[expected[0]]


def test_min_delta_is_refused_unless_a_finite_number_at_least_0() -> None:
    for bad in (-0.001, float("nan"), float("inf"), "0.1", True, None):
        with pytest.raises(ValueError, match=r"min_delta must be a finite number >= 0, but "):
            lightgbm_early_stopping(5, min_delta=bad)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match=r"min_delta must be a finite number >= 0, but "):
            PLRankRanker(min_delta=bad)._training(None, None)
    with pytest.raises(ValueError, match=r"min_delta must be a finite number >= 0, but -1"):
        xgboost_early_stopping(5, min_delta=-1)
    with pytest.raises(
        ValueError,
        match=r"trees.min_delta must be a finite number >= 0, but "
        r"-0.5 is given",
    ):
        validate(TreeSettings, {"min_delta": -0.5}, source="x.toml", prefix="trees")
    assert "min_delta" not in TreeSettings().model_dump(exclude_defaults=True)


def test_patience_rate_is_refused_unless_a_finite_number_at_least_0() -> None:
    for bad in (-0.5, float("nan"), float("inf"), "0.5", None):
        with pytest.raises(ValueError, match=r"patience_rate must be a finite number >= 0, but "):
            xgboost_early_stopping(5, patience_rate=bad)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match=r"patience_rate must be a finite number >= 0, but "):
            PLRankRanker(patience_rate=bad)._training(None, None)
    with pytest.raises(
        ValueError,
        match=r"trees.patience_rate must be a finite number >= 0, "
        r"but -1 is given",
    ):
        validate(TreeSettings, {"patience_rate": -1}, source="x.toml", prefix="trees")


def test_a_patience_rate_waits_out_a_plateau_that_a_fixed_patience_stops_on() -> None:
    # a curve that rises, sits on a plateau for 28 rounds and rises again (the deep-query shape)
    curve = np.concatenate(
        [np.linspace(0.3, 0.39, 60), np.full(28, 0.39), np.linspace(0.391, 0.42, 60)]
    )
    fixed = EarlyStopper(25, 40, 0.0)
    grown = EarlyStopper(25, 40, 0.0, patience_rate=0.5)
    ran = {}
    for name, stopper in (("fixed", fixed), ("grown", grown)):
        ran[name] = next((t + 1 for t, v in enumerate(curve) if stopper.update(t, v)), curve.size)
    assert (fixed.kept_round, ran["fixed"]) == (59, 85)  # stopped on the plateau
    assert (grown.kept_round, ran["grown"]) == (147, 148)  # waited ceil(0.5 * 60) = 30 rounds
    assert grown.wait == 74


@pytest.mark.parametrize("rate", [1e308, sys.float_info.max, 1e30])
def test_a_patience_rate_near_the_float_range_never_stops_and_never_overflows(
    xgb_sets, rate: float
) -> None:
    """A finite rate whose product with the round is infinite (or past any integer a training
    reaches) is patience without end: the stopper, both callbacks and the ranker train every
    round and keep the best, instead of dying mid-training on ceil(inf)."""
    stopper = EarlyStopper(2, 0, 0.0, patience_rate=rate)
    assert not any(stopper.update(t, v) for t, v in enumerate([0.5, 0.4, 0.3, 0.2, 0.1]))
    assert stopper.wait == sys.maxsize and stopper.kept_round == 0
    train, vali = xgb_sets
    history: dict = {}
    booster = xgboost.train(
        XGB_PARAMS,
        train,
        30,
        evals=[(vali, "v")],
        verbose_eval=False,
        evals_result=history,
        callbacks=[xgboost_early_stopping(2, patience_rate=rate)],
    )
    curve = np.array(history["v"]["ndcg@5"])
    assert curve.size == 30 and booster.best_iteration == int(np.argmax(curve))
    ltrain, _, lvalid = _lgb_sets()
    history = {}
    lbooster = lightgbm.train(
        LGB_PARAMS,
        ltrain,
        30,
        valid_sets=[lvalid],
        callbacks=[
            lightgbm.record_evaluation(history),
            lightgbm_early_stopping(2, patience_rate=rate),
        ],
    )
    lcurve = np.array(next(iter(history["valid_0"].values())))
    assert lcurve.size == 30 and lbooster.best_iteration == int(np.argmax(lcurve)) + 1
    X, y, qid = _queries(0)
    ranker = PLRankRanker(n_estimators=12, patience_rate=rate, min_rounds=0, n_jobs=1)
    Xv, yv, qv = _queries(1)
    ranker.fit(X, y, group=qid, eval_set=[(Xv, yv, qv)], early_stopping_rounds=1)
    watched = next(iter(ranker.evals_result_["valid_0"].values()))
    assert len(watched) == 12


def test_min_rounds_for_is_two_over_the_learning_rate() -> None:
    assert [min_rounds_for(r) for r in (0.05, 0.1, 0.3, 0.2, 1.0, 3.0)] == [40, 20, 7, 10, 2, 1]
    # the rate the library trains with, under any of its names, else the library's default
    assert min_rounds_of("auto", params={"learning_rate": 0.05}, library="lightgbm") == 40
    assert min_rounds_of("auto", params={"shrinkage_rate": 0.2}, library="lightgbm") == 10
    assert min_rounds_of("auto", params={"eta": 0.1, "max_depth": 3}, library="xgboost") == 20
    assert min_rounds_of("auto", params={"learning_rate": 0.5}, library="xgboost") == 4
    assert min_rounds_of("auto", params={}, library="xgboost") == 7  # eta 0.3
    assert min_rounds_of("auto", params={}, library="lightgbm") == 20  # 0.1
    assert min_rounds_of("auto", params={"learning_rate": 0.1}, library="catboost") == 20
    assert min_rounds_of("auto", params={}, library="catboost") == 0  # chosen in fit
    assert min_rounds_of("auto", params={"lr": 0.05}, library="torch") == 0  # epochs
    assert min_rounds_of(12, params={"eta": 0.05}, library="xgboost") == 12
    assert min_rounds_of("auto", params={"eta": "0.1"}, library="xgboost") == 20  # as XGBoost
    # two names set: the one the library trains with (the harness writes eta, params may add
    # the alias learning_rate, which XGBoost uses whatever the order)
    assert min_rounds_of("auto", params={"eta": 0.05, "learning_rate": 0.5}, library="xgboost") == 4
    assert (
        min_rounds_of("auto", params={"shrinkage_rate": 0.05, "eta": 0.5}, library="lightgbm") == 4
    )
    for not_a_rate in ("fast", -0.1, float("nan")):  # the library refuses it when it trains
        assert min_rounds_of("auto", params={"eta": not_a_rate}, library="xgboost") == 0
    for bad in (-1, 2.5, "many", True, None):  # refused where it is given
        with pytest.raises(ValueError, match=r"min_rounds must be 'auto' or an integer >= 0, "):
            PLRankRanker(min_rounds=bad)._training(None, None)
    for bad in (0, -0.1, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="learning_rate must be a finite number > 0"):
            min_rounds_for(bad)
    with pytest.raises(
        ValueError,
        match="min_rounds must be an integer >= 0 in a stopping callback, but 'auto' is given",
    ):
        xgboost_early_stopping(5, min_rounds="auto")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="min_rounds must be 'auto' or an integer >= 0, but -1"):
        xgboost_early_stopping(5, min_rounds=-1)
    with pytest.raises(ValueError, match="early_stopping_rounds must be an integer >= 1, but 0"):
        lightgbm_early_stopping(0)


def _queries(seed: int, n_queries: int = 40, docs: int = 12) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_queries * docs, 6))
    y = np.clip(np.round(X[:, 0] + 0.8 * rng.normal(size=X.shape[0])), 0, 3)
    return X, y, np.repeat(np.arange(n_queries), docs)


@pytest.fixture(scope="module")
def xgb_sets() -> tuple[object, object]:
    X, y, qid = _queries(0)
    Xv, yv, qv = _queries(1)
    return (xgboost.DMatrix(X, label=y, qid=qid), xgboost.DMatrix(Xv, label=yv, qid=qv))


PLANS = {"plrank": PLRankSettings()}
XGB_PARAMS = {
    "objective": "rank:ndcg",
    "eval_metric": "ndcg@5",
    "eta": 0.3,
    "nthread": 1,
    "seed": 0,
}


def test_xgboost_callback_without_a_minimum_is_xgboosts_own_early_stopping(xgb_sets) -> None:
    train, vali = xgb_sets
    for patience in (1, 3, 8):
        own = xgboost.train(
            XGB_PARAMS,
            train,
            200,
            evals=[(vali, "v")],
            verbose_eval=False,
            early_stopping_rounds=patience,
        )
        ours = xgboost.train(
            XGB_PARAMS,
            train,
            200,
            evals=[(vali, "v")],
            verbose_eval=False,
            callbacks=[xgboost_early_stopping(patience)],
        )
        assert ours.best_iteration == own.best_iteration
        assert ours.num_boosted_rounds() == own.num_boosted_rounds()


@pytest.mark.parametrize("min_delta", [0.005, 0.01])
def test_min_delta_is_the_libraries_own(xgb_sets, min_delta: float) -> None:
    """Without a minimum, ``min_delta`` stops as XGBoost's ``EarlyStopping(min_delta=)`` and
    LightGBM's ``early_stopping(min_delta=)`` do, and keeps the rounds they keep; it stops
    sooner than without."""
    train, vali = xgb_sets
    own = xgboost.train(
        XGB_PARAMS,
        train,
        300,
        evals=[(vali, "v")],
        verbose_eval=False,
        callbacks=[xgboost.callback.EarlyStopping(rounds=10, min_delta=min_delta, maximize=True)],
    )
    ours = xgboost.train(
        XGB_PARAMS,
        train,
        300,
        evals=[(vali, "v")],
        verbose_eval=False,
        callbacks=[xgboost_early_stopping(10, min_delta=min_delta)],
    )
    plain = xgboost.train(
        XGB_PARAMS,
        train,
        300,
        evals=[(vali, "v")],
        verbose_eval=False,
        callbacks=[xgboost_early_stopping(10)],
    )
    assert ours.best_iteration == own.best_iteration
    assert ours.num_boosted_rounds() == own.num_boosted_rounds() < plain.num_boosted_rounds()
    X, y, qid = _queries(0)
    Xv, yv, qv = _queries(1)
    params = {
        "objective": "lambdarank",
        "metric": "ndcg",
        "eval_at": [5],
        "learning_rate": 0.3,
        "num_threads": 1,
        "seed": 0,
        "verbose": -1,
        "deterministic": True,
        "force_row_wise": True,
    }
    sets = lightgbm.Dataset(X, y, group=np.bincount(qid))
    valid = lightgbm.Dataset(Xv, yv, group=np.bincount(qv), reference=sets)
    boosters = [
        lightgbm.train(params, sets, 300, valid_sets=[valid], callbacks=[callback])
        for callback in (
            lightgbm.early_stopping(10, min_delta=min_delta, verbose=False),
            lightgbm_early_stopping(10, min_delta=min_delta),
            lightgbm_early_stopping(10),
        )
    ]
    assert boosters[1].best_iteration == boosters[0].best_iteration
    assert boosters[1].current_iteration() == boosters[0].current_iteration()
    assert boosters[1].current_iteration() < boosters[2].current_iteration()


def test_xgboost_callback_keeps_no_round_before_the_minimum(xgb_sets) -> None:
    train, vali = xgb_sets
    history: dict = {}
    callback = xgboost_early_stopping(3, min_rounds=15)
    booster = xgboost.train(
        XGB_PARAMS,
        train,
        200,
        evals=[(vali, "v")],
        verbose_eval=False,
        evals_result=history,
        callbacks=[callback],
    )
    curve = np.array(history["v"]["ndcg@5"])
    kept, ran = reference_rule(curve, 3, 15)
    assert booster.best_iteration == kept >= 14 and curve.size == ran
    assert reference_rule(curve, 3, 0)[0] < 14  # the minimum mattered: without, an earlier round
    again = xgboost.train(
        XGB_PARAMS, train, 200, evals=[(vali, "v")], verbose_eval=False, callbacks=[callback]
    )  # a callback used twice starts afresh
    assert again.best_iteration == kept


def test_a_training_that_ends_before_the_minimum_keeps_its_last_round_and_score(xgb_sets) -> None:
    """XGBoost: best_iteration and best_score are the last round's, as LightGBM's callback
    reports the kept round's scores (never -inf or +inf)."""
    train, vali = xgb_sets
    for maximize, params in (
        (True, XGB_PARAMS),
        (False, {**XGB_PARAMS, "objective": "reg:squarederror", "eval_metric": "rmse"}),
    ):
        history: dict = {}
        booster = xgboost.train(
            params,
            train,
            10,
            evals=[(vali, "v")],
            verbose_eval=False,
            evals_result=history,
            callbacks=[xgboost_early_stopping(5, min_rounds=50, maximize=maximize)],
        )
        last = next(iter(history["v"].values()))[-1]
        assert booster.best_iteration == 9
        assert float(booster.attr("best_score")) == pytest.approx(last, rel=1e-12)
    lgb_train, _, lgb_vali = _lgb_sets()
    record: dict = {}
    short = lightgbm.train(
        LGB_PARAMS,
        lgb_train,
        10,
        valid_sets=[lgb_vali],
        callbacks=[lightgbm.record_evaluation(record), lightgbm_early_stopping(3, min_rounds=15)],
    )
    assert short.best_iteration == 10
    assert short.best_score["valid_0"]["ndcg@5"] == record["valid_0"]["ndcg@5"][-1]


def _scripted(curve: np.ndarray, maximize: bool | None = None):
    """A custom metric whose value after round t is ``curve[t]``, counted per data set:
    XGBoost's ``(name, value)`` form, or LightGBM's ``(name, value, maximize)``."""
    calls: dict[int, int] = {}

    def metric(preds, data):
        t = calls.get(id(data), 0)
        calls[id(data)] = t + 1
        value = float(curve[min(t, curve.size - 1)])
        return ("score", value) if maximize is None else ("score", value, maximize)

    return metric


#: A metric going 0.12 -> 0.13, a gain of exactly min_delta = 0.01 that floating point makes a
#: gain for XGBoost (0.13 - 0.01 > 0.12) and none for LightGBM (0.13 > 0.12 + 0.01 is false).
TIE = np.array([0.12, 0.13, 0.125, 0.12, 0.12, 0.12, 0.12, 0.12])
CURVES = [
    TIE,
    *(np.round(np.random.default_rng(s).normal(size=40).cumsum() * 0.01, 2) for s in range(6)),
]


@pytest.mark.parametrize("curve", CURVES, ids=["tie", *map(str, range(6))])
@pytest.mark.parametrize("maximize", [True, False])
def test_the_callbacks_stop_where_the_libraries_own_stop(xgb_sets, curve, maximize) -> None:
    """On the same curve, inside the real libraries, side by side: the rounds run, the best
    round and its score of xgboost_early_stopping and XGBoost's EarlyStopping, and of
    lightgbm_early_stopping and LightGBM's early_stopping, for every min_delta; on the tie
    XGBoost keeps round 1, LightGBM round 0 (each package callback as its library)."""
    train, vali = xgb_sets
    params = {**XGB_PARAMS, "disable_default_eval_metric": 1}
    lgb_params = {**LGB_PARAMS, "metric": "None"}
    lgb_train, lgb_vali, _ = _lgb_sets()
    for min_delta in (0.0, 0.01, 0.02):
        own, ours = (
            xgboost.train(
                params,
                train,
                curve.size,
                evals=[(vali, "v")],
                verbose_eval=False,
                custom_metric=_scripted(curve),
                callbacks=[callback],
            )
            for callback in (
                xgboost.callback.EarlyStopping(rounds=3, min_delta=min_delta, maximize=maximize),
                xgboost_early_stopping(3, min_delta=min_delta, maximize=maximize),
            )
        )
        assert ours.best_iteration == own.best_iteration
        assert ours.attr("best_score") == own.attr("best_score")
        assert ours.num_boosted_rounds() == own.num_boosted_rounds()
        own, ours = (
            lightgbm.train(
                lgb_params,
                lgb_train,
                curve.size,
                valid_sets=[lgb_vali],
                feval=_scripted(curve, maximize),
                callbacks=[callback],
            )
            for callback in (
                lightgbm.early_stopping(3, min_delta=min_delta, verbose=False),
                lightgbm_early_stopping(3, min_delta=min_delta),
            )
        )
        assert ours.best_iteration == own.best_iteration
        assert ours.best_score == own.best_score
        assert ours.current_iteration() == own.current_iteration()
    if curve is TIE and maximize:
        xgb_kept = xgboost.train(
            params,
            train,
            curve.size,
            evals=[(vali, "v")],
            verbose_eval=False,
            custom_metric=_scripted(curve),
            callbacks=[xgboost_early_stopping(3, min_delta=0.01)],
        )
        lgb_kept = lightgbm.train(
            lgb_params,
            lgb_train,
            curve.size,
            valid_sets=[lgb_vali],
            feval=_scripted(curve, True),
            callbacks=[lightgbm_early_stopping(3, min_delta=0.01)],
        )
        assert (xgb_kept.best_iteration, lgb_kept.best_iteration - 1) == (1, 0)


class _KeepModel(xgboost.callback.TrainingCallback if xgboost else object):
    """Keeps the model ``xgboost.cv`` trains (its folds' boosters)."""

    def after_training(self, model):
        self.model = model
        return model


@pytest.mark.parametrize("curve", CURVES[1:4], ids=map(str, range(3)))
def test_the_callbacks_inside_cv_stop_where_the_libraries_own_stop(curve) -> None:
    """xgboost.cv and lightgbm.cv (with the training folds scored too) stop on the mean over
    the folds: the package's callbacks give the results and best rounds of the libraries' own."""
    X, y, qid = _queries(0)
    dtrain = xgboost.DMatrix(X, label=y, qid=qid)
    params = {**XGB_PARAMS, "disable_default_eval_metric": 1}
    runs = []
    for callback in (
        xgboost.callback.EarlyStopping(rounds=3, min_delta=0.01, maximize=True),
        xgboost_early_stopping(3, min_delta=0.01),
    ):
        keep = _KeepModel()
        result = xgboost.cv(
            params,
            dtrain,
            curve.size,
            nfold=3,
            seed=0,
            as_pandas=False,
            custom_metric=_scripted(curve),
            callbacks=[callback, keep],
        )
        runs.append((result, keep.model.best_iteration, keep.model.best_score))
    assert runs[1] == runs[0]
    lgb_params = {**LGB_PARAMS, "metric": "None"}
    full = lightgbm.Dataset(X, y, group=np.bincount(qid), free_raw_data=False)
    folds = list(GroupKFold(3).split(X, y, qid))
    own, ours = (
        lightgbm.cv(
            lgb_params,
            full,
            curve.size,
            folds=folds,
            feval=_scripted(curve, True),
            eval_train_metric=True,
            return_cvbooster=True,
            callbacks=[callback],
        )
        for callback in (
            lightgbm.early_stopping(3, min_delta=0.01, verbose=False),
            lightgbm_early_stopping(3, min_delta=0.01),
        )
    )
    assert ours.pop("cvbooster").best_iteration == own.pop("cvbooster").best_iteration
    assert ours == own


def test_a_continued_training_counts_its_rounds_on_from_the_booster(xgb_sets) -> None:
    """xgb_model=booster: best_iteration counts from the booster's first round, as XGBoost's own
    EarlyStopping (its starting round); min_rounds counts the model's rounds."""
    train, vali = xgb_sets
    first = xgboost.train(XGB_PARAMS, train, 4)
    own, ours = (
        xgboost.train(
            XGB_PARAMS,
            train,
            200,
            evals=[(vali, "v")],
            verbose_eval=False,
            xgb_model=first,
            callbacks=[callback],
        )
        for callback in (
            xgboost.callback.EarlyStopping(rounds=3, maximize=True),
            xgboost_early_stopping(3),
        )
    )
    assert ours.best_iteration == own.best_iteration >= 4
    assert ours.num_boosted_rounds() == own.num_boosted_rounds()
    history: dict = {}
    later = xgboost.train(
        XGB_PARAMS,
        train,
        100,
        evals=[(vali, "v")],
        verbose_eval=False,
        evals_result=history,
        xgb_model=first,
        callbacks=[xgboost_early_stopping(3, min_rounds=9)],
    )
    curve = np.array(history["v"]["ndcg@5"])  # rounds 4, 5, ...: the 9th round is curve[4]
    kept, ran = reference_rule(curve, 3, 9 - 4)
    assert (later.best_iteration, later.num_boosted_rounds()) == (4 + kept, 4 + ran)


def test_xgboost_callback_needs_an_eval_set(xgb_sets) -> None:
    with pytest.raises(ValueError, match="early stopping needs an eval set: pass evals="):
        xgboost.train(XGB_PARAMS, xgb_sets[0], 3, callbacks=[xgboost_early_stopping(2)])


def test_xgboost_callback_minimises_a_loss_when_told_and_refuses_to_maximise_it(xgb_sets) -> None:
    train, vali = xgb_sets
    params = {**XGB_PARAMS, "objective": "reg:squarederror", "eval_metric": "rmse"}
    with pytest.raises(ValueError, match=r"'rmse' is a loss .* pass maximize=False"):
        xgboost.train(
            params,
            train,
            3,
            evals=[(vali, "v")],
            verbose_eval=False,
            callbacks=[xgboost_early_stopping(2)],
        )
    for patience in (1, 4):
        own = xgboost.train(
            params,
            train,
            200,
            evals=[(vali, "v")],
            verbose_eval=False,
            early_stopping_rounds=patience,
        )
        ours = xgboost.train(
            params,
            train,
            200,
            evals=[(vali, "v")],
            verbose_eval=False,
            callbacks=[xgboost_early_stopping(patience, maximize=False)],
        )
        assert ours.best_iteration == own.best_iteration
        assert ours.num_boosted_rounds() == own.num_boosted_rounds()
        assert float(ours.attr("best_score")) == pytest.approx(float(own.attr("best_score")))


def _lgb_sets() -> tuple[object, ...]:
    out = []
    for seed in (0, 1, 2):
        X, y, qid = _queries(seed)
        out.append(lightgbm.Dataset(X, y, group=np.bincount(qid), free_raw_data=False))
    return tuple(out)


LGB_PARAMS = {
    "objective": "lambdarank",
    "metric": "ndcg",
    "eval_at": [5],
    "learning_rate": 0.3,
    "num_threads": 1,
    "verbose": -1,
    "min_data_in_leaf": 5,
    "seed": 0,
}


def test_lightgbm_callback_without_a_minimum_is_lightgbms_own_early_stopping() -> None:
    train, vali, _ = _lgb_sets()
    for patience in (1, 3, 8):
        own = lightgbm.train(
            LGB_PARAMS,
            train,
            200,
            valid_sets=[vali],
            callbacks=[lightgbm.early_stopping(patience, verbose=False)],
        )
        ours = lightgbm.train(
            LGB_PARAMS, train, 200, valid_sets=[vali], callbacks=[lightgbm_early_stopping(patience)]
        )
        assert ours.best_iteration == own.best_iteration
        assert ours.current_iteration() == own.current_iteration()
        assert ours.best_score == own.best_score


def test_lightgbm_callback_keeps_no_round_before_the_minimum_on_the_last_eval_set() -> None:
    train, first, last = _lgb_sets()
    history: dict = {}
    booster = lightgbm.train(
        LGB_PARAMS,
        train,
        200,
        valid_sets=[first, last],
        valid_names=["a", "b"],
        callbacks=[lightgbm.record_evaluation(history), lightgbm_early_stopping(3, min_rounds=15)],
    )
    curve = np.array(history["b"]["ndcg@5"])
    kept, ran = reference_rule(curve, 3, 15)
    assert booster.best_iteration == kept + 1 and curve.size == ran  # LightGBM counts from 1
    assert booster.best_score["b"]["ndcg@5"] == curve[kept]
    short = lightgbm.train(
        LGB_PARAMS,
        train,
        10,
        valid_sets=[last],
        callbacks=[lightgbm_early_stopping(3, min_rounds=15)],
    )
    assert short.best_iteration == 10  # ended before the minimum: every round is kept


@pytest.mark.parametrize("rate", [0.5, 1.0, 3.0])
def test_the_callbacks_grow_the_patience_inside_the_boosters(xgb_sets, rate: float) -> None:
    train, vali = xgb_sets
    history: dict = {}
    booster = xgboost.train(
        XGB_PARAMS,
        train,
        200,
        evals=[(vali, "v")],
        verbose_eval=False,
        evals_result=history,
        callbacks=[xgboost_early_stopping(2, patience_rate=rate)],
    )
    curve = np.array(history["v"]["ndcg@5"])
    assert (booster.best_iteration, curve.size) == reference_rule(curve, 2, 0, rate=rate)
    ltrain, _, lvalid = _lgb_sets()
    history = {}
    booster = lightgbm.train(
        LGB_PARAMS,
        ltrain,
        200,
        valid_sets=[lvalid],
        callbacks=[
            lightgbm.record_evaluation(history),
            lightgbm_early_stopping(2, patience_rate=rate),
        ],
    )
    lcurve = np.array(next(iter(history["valid_0"].values())))
    kept, ran = reference_rule(lcurve, 2, 0, rate=rate)
    assert (booster.best_iteration, lcurve.size) == (kept + 1, ran)
    if rate == 3.0:  # the rate mattered: a fixed patience of 2 stops both earlier
        assert reference_rule(curve, 2, 0)[1] < curve.size
        assert reference_rule(lcurve, 2, 0)[1] < lcurve.size


def test_catboost_callback_without_a_minimum_is_catboosts_own_detector() -> None:
    catboost = pytest.importorskip("catboost")
    X, y, qid = _queries(0)
    Xv, yv, qv = _queries(1)
    metric = "NDCG:top=5;type=Exp"
    params = {
        "loss_function": "YetiRank",
        "eval_metric": metric,
        "iterations": 200,
        "learning_rate": 0.3,
        "verbose": False,
        "allow_writing_files": False,
        "random_seed": 0,
        "thread_count": 1,
    }
    train, vali = catboost.Pool(X, y, group_id=qid), catboost.Pool(Xv, yv, group_id=qv)
    own = catboost.CatBoost({**params, "od_type": "Iter", "od_wait": 5, "use_best_model": True})
    own.fit(train, eval_set=vali)
    callback = catboost_stopping_callback(EarlyStopper(5, 0, 0.0), metric=metric)
    ours = catboost.CatBoost({**params, "use_best_model": False})
    ours.fit(train, eval_set=vali, callbacks=[callback])
    assert callback.kept == own.get_best_iteration()
    curve = np.array(ours.get_evals_result()["validation"][metric])
    assert reference_rule(curve, 5, 0) == (callback.kept, curve.size)


def test_the_ranker_and_the_harness_resolve_auto_from_the_learning_rate() -> None:
    X, y, qid = _queries(0)
    Xv, yv, qv = _queries(1)
    for backend in ("xgboost", "lightgbm"):
        ranker = PLRankRanker(
            backend=backend,
            K=5,
            N=8,
            n_estimators=60,
            learning_rate=0.25,
            min_child_weight=0.01,
            n_jobs=1,
            random_state=0,
        )
        assert ranker.get_params()["min_rounds"] == "auto"
        ranker.fit(X, y, group=qid, eval_set=[(Xv, yv, qv)], early_stopping_rounds=2)
        assert ranker.best_iteration_ >= min_rounds_for(0.25) - 1 == 7
        curve = next(iter(ranker.evals_result_["valid_0"].values()))
        watched = list(ranker.evals_result_["valid_0"].values())[-1]
        kept, ran = reference_rule(np.array(watched), 2, 8, rate=gbdt_plrank.PATIENCE_RATE)
        assert len(curve) == ran and ranker.best_iteration_ == kept
    with pytest.raises(ValueError, match="min_rounds must be 'auto' or an integer >= 0, but -2"):
        PLRankRanker(min_rounds=-2).fit(
            X, y, group=qid, eval_set=[(Xv, yv, qv)], early_stopping_rounds=2
        )
    trees = TreeSettings(rounds=50, learning_rate=0.05)
    assert (trees.min_rounds, trees.early_stopping_rounds, trees.min_delta) == ("auto", 25, 0.0)
    assert trees.patience_rate == gbdt_plrank.PATIENCE_RATE == PLRankRanker().patience_rate
    for name in ("plrank-xgb", "lambdamart-xgb", "lambdarank-lgb", "yetirank-cb", "plrank-nn"):
        for min_delta in (0.0, 0.002):
            plan = harness_training._plan(
                METHODS[name],
                k=5,
                seed=0,
                trees=trees.model_copy(update={"min_delta": min_delta}),
                settings=PLANS,
                params={},
                callbacks=(),
            )
            assert plan.min_rounds == "auto", name  # resolved by the backend from its parameters
            assert plan.min_delta == min_delta, name
            assert plan.patience_rate == gbdt_plrank.PATIENCE_RATE, name
    # a gain no round reaches: the first candidate is kept, training stops a patience later
    ranker = PLRankRanker(
        K=5,
        N=8,
        n_estimators=60,
        learning_rate=0.25,
        min_child_weight=0.01,
        n_jobs=1,
        random_state=0,
        min_delta=1.0,
    )
    ranker.fit(X, y, group=qid, eval_set=[(Xv, yv, qv)], early_stopping_rounds=2)
    watched = np.array(list(ranker.evals_result_["valid_0"].values())[-1])
    assert (ranker.best_iteration_, watched.size) == (7, 12)  # max(2, ceil(0.5 * 8)) = 4 after
    # a rate set among the native parameters (a tuner's trial, [params.<method>]) is the one used
    ranker = PLRankRanker(
        K=5,
        N=8,
        n_estimators=60,
        learning_rate=0.05,
        params={"eta": 0.25},
        min_child_weight=0.01,
        n_jobs=1,
        random_state=0,
    )
    ranker.fit(X, y, group=qid, eval_set=[(Xv, yv, qv)], early_stopping_rounds=2)
    watched = np.array(list(ranker.evals_result_["valid_0"].values())[-1])
    assert (ranker.best_iteration_, watched.size) == reference_rule(
        watched, 2, 8, rate=gbdt_plrank.PATIENCE_RATE
    )
    public = {
        "min_rounds_for",
        "xgboost_early_stopping",
        "lightgbm_early_stopping",
        "PATIENCE_RATE",
    }
    assert public <= set(gbdt_plrank.__all__)


def test_auto_reads_the_learning_rate_each_library_trains_with() -> None:
    """Where several of a library's names for the learning rate are set, ``min_rounds_of`` reads
    the one the library itself uses (checked inside the library, not assumed)."""
    X, y, _ = _queries(0)
    for first, second in (
        ({"eta": 0.05}, {"learning_rate": 0.5}),
        ({"learning_rate": 0.5}, {"eta": 0.05}),
    ):
        params = {**first, **second}
        booster = xgboost.train({**params, "nthread": 1}, xgboost.DMatrix(X, label=y), 1)
        used = float(
            json.loads(booster.save_config())["learner"]["gradient_booster"]["tree_train_param"][
                "eta"
            ]
        )
        assert min_rounds_of("auto", params=params, library="xgboost") == min_rounds_for(used)
    for params in ({"eta": 0.5, "shrinkage_rate": 0.05}, {"learning_rate": 0.05, "eta": 0.5}):
        booster = lightgbm.train(
            {**params, "objective": "regression", "verbose": -1, "num_threads": 1},
            lightgbm.Dataset(X, y),
            1,
        )
        used = float(booster.model_to_string().split("[learning_rate: ")[1].split("]")[0])
        assert min_rounds_of("auto", params=params, library="lightgbm") == min_rounds_for(used)
