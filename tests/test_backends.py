"""The backend layer: one table of native names, used by the ranker, the harness and the tuner."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tiny_ltr import write_tiny_letor

from gbdt_plrank import PLRankRanker, plrank_objective
from gbdt_plrank._backends import (
    BACKENDS,
    NATIVE_NAMES,
    BoosterSettings,
    Plan,
    backend_of_booster,
    backend_of_data,
    eval_name,
    metric_name,
)
from gbdt_plrank._backends._base import native_params
from gbdt_plrank._util.seeds import seeds_from
from gbdt_plrank.datasets import load_dataset
from gbdt_plrank.harness import PLRankSettings, TreeSettings, train


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_letor(tmp_path_factory.mktemp("data") / "tiny")


@pytest.mark.parametrize("library", ["xgboost", "lightgbm", "catboost"])
def test_every_setting_reaches_the_library_under_the_name_in_the_table(library: str) -> None:
    values = {
        "learning_rate": 0.3,
        "max_depth": 4,
        "num_leaves": 9,
        "min_child_weight": 0.5,
        "reg_alpha": 0.1,
        "reg_lambda": 2.0,
        "min_split_gain": 0.01,
        "subsample": 0.8,
        "colsample_bytree": 0.7,
        "n_threads": 1,
    }
    trees = {name: value for name, value in values.items() if name != "n_threads"}
    settings = BoosterSettings(trees=trees, n_threads=1, seed=7, params={"extra": 1})
    backend = BACKENDS[library]
    params = native_params(library, settings, reserved=backend.reserved, defaults={}, fixed={})
    for setting, value in {**values, "seed": 7}.items():
        native = getattr(NATIVE_NAMES[setting], library)
        if native is None:
            assert value not in [params.get(n) for n in ("max_leaves", "min_data_in_leaf")]
        else:
            assert params[native] == value, setting
    assert params["extra"] == 1


def test_num_leaves_is_xgboost_max_leaves_for_the_ranker_and_the_harness(tiny: Path) -> None:
    """One answer: a leaf limit reaches XGBoost from both (it did not from the harness)."""
    data = load_dataset(str(tiny))
    trees = TreeSettings(
        rounds=3, early_stopping_rounds=3, learning_rate=0.3, num_leaves=2, n_jobs=1
    )
    fit = train("lambdamart-xgb", data, k=3, seed=0, trees=trees, plrank=PLRankSettings())
    ranker = PLRankRanker(num_leaves=2, n_estimators=3, learning_rate=0.3, n_jobs=1, random_state=0)
    ranker.fit(data.train.X, data.train.y, group=data.train.qid)
    assert all(tree.count("leaf=") <= 2 for tree in ranker.booster_.get_dump())
    assert np.unique(fit.test_scores).shape[0] <= 2**3  # 3 trees of at most 2 leaves each


def _design_card_call(
    library: str, data, *, seed: int, rounds: int, patience: int, booster_seed: int | None = None
):
    """The README's call: plrank_objective in xgboost.train / lightgbm.train, early stopping on
    obj.standardized_metric with no round kept before 2 / eta, under the harness's tree settings."""
    import lightgbm
    import xgboost

    from gbdt_plrank import lightgbm_early_stopping, min_rounds_for, xgboost_early_stopping

    obj = plrank_objective(K=3, N=10, seed=seed, n_jobs=1)
    first = min_rounds_for(0.3)
    seed = seed if booster_seed is None else booster_seed
    if library == "xgboost":
        params = {
            "eta": 0.3,
            "max_depth": 6,
            "min_child_weight": 0.1,
            "lambda": 1.0,
            "subsample": 1.0,
            "nthread": 1,
            "seed": seed,
            "base_score": 0.0,
            "disable_default_eval_metric": 1,
        }
        dtrain = xgboost.DMatrix(data.train.X, data.train.y, qid=data.train.qid)
        dvali = xgboost.DMatrix(data.vali.X, data.vali.y, qid=data.vali.qid)
        bst = xgboost.train(
            params,
            dtrain,
            rounds,
            obj=obj,
            evals=[(dvali, "valid")],
            custom_metric=obj.standardized_metric,
            maximize=True,
            callbacks=[xgboost_early_stopping(patience, min_rounds=first)],
            verbose_eval=False,
        )
        return bst[: bst.best_iteration + 1].inplace_predict(data.test.X, predict_type="margin")
    params = {
        "objective": obj,
        "metric": "None",
        "learning_rate": 0.3,
        "max_depth": 6,
        "min_sum_hessian_in_leaf": 0.1,
        "lambda_l2": 1.0,
        "bagging_fraction": 1.0,
        "num_threads": 1,
        "seed": seed,
        "verbose": -1,
        "deterministic": True,
        "force_row_wise": True,
    }
    train = lightgbm.Dataset(data.train.X, data.train.y, group=data.train.group_sizes)
    vali = lightgbm.Dataset(data.vali.X, data.vali.y, group=data.vali.group_sizes, reference=train)
    bst = lightgbm.train(
        params,
        train,
        rounds,
        valid_sets=[vali],
        feval=obj.standardized_metric,
        callbacks=[lightgbm_early_stopping(patience, min_rounds=first)],
    )
    return bst.predict(data.test.X, raw_score=True)


@pytest.mark.parametrize(
    ("library", "method"), [("xgboost", "plrank-xgb"), ("lightgbm", "plrank-lgb")]
)
def test_the_harness_the_ranker_and_the_readme_call_train_the_same_model(
    tiny: Path, library: str, method: str
) -> None:
    """One run builder: the harness's PL-Rank method, PLRankRanker and the design card's call of
    xgboost.train / lightgbm.train with the boosters' own early stopping on the standardised
    policy."""
    data = load_dataset(str(tiny))
    trees = TreeSettings(rounds=25, early_stopping_rounds=3, learning_rate=0.3, n_jobs=1)
    fit = train(method, data, k=3, seed=4, trees=trees, plrank=PLRankSettings(N=10))
    assert fit.watched == "standardized_expected_ndcg@3" and fit.best_round < 25
    by_hand = _design_card_call(library, data, seed=4, rounds=25, patience=3)
    np.testing.assert_allclose(fit.test_scores, by_hand, rtol=1e-6, atol=1e-6)
    ranker = PLRankRanker(
        backend=library,
        K=3,
        N=10,
        n_estimators=25,
        learning_rate=0.3,
        max_depth=6,
        min_child_weight=0.1,
        reg_lambda=1.0,
        subsample=1.0,
        deep_weight=1.0,  # the design card's objective trains PL-Rank's own gradient
        n_jobs=1,
        random_state=0,
    )
    ranker.fit(
        data.train.X,
        data.train.y,
        data.train.qid,
        eval_set=[(data.vali.X, data.vali.y, data.vali.qid)],
        early_stopping_rounds=3,
    )
    objective_seed, booster_seed = seeds_from(0, 2)
    by_hand = _design_card_call(
        library, data, seed=objective_seed, rounds=25, patience=3, booster_seed=booster_seed
    )
    np.testing.assert_allclose(ranker.predict(data.test.X), by_hand, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("library", ["xgboost", "lightgbm", "catboost"])
def test_best_round_margins_and_history_under_common_names(library: str, tiny: Path) -> None:
    data = load_dataset(str(tiny))
    objective = {"xgboost": "rank:ndcg", "lightgbm": "lambdarank", "catboost": "YetiRank"}[library]
    backend = BACKENDS[library]
    plan = Plan(objective, 3, n_estimators=40, early_stopping_rounds=3)
    trained = backend.train(
        BoosterSettings(trees={"learning_rate": 0.5, "max_depth": 3}, n_threads=1),
        data.train,
        [data.vali],
        plan,
    )
    curve = trained.history[eval_name(0)][metric_name(3)]
    assert trained.best_iteration is not None
    assert curve[trained.best_iteration] == max(curve)
    assert trained.rounds == trained.best_iteration + 1
    margins = backend.margins(trained.booster, data.test.X, n_threads=1)
    assert margins.shape == (data.test.y.shape[0],) and np.isfinite(margins).all()
    assert backend.importances(trained.booster, data.train.X.shape[1]).sum() == pytest.approx(1.0)


@pytest.mark.parametrize("library", ["xgboost", "lightgbm", "catboost"])
def test_reserved_parameters_are_refused(library: str) -> None:
    backend = BACKENDS[library]
    name = sorted(backend.reserved)[0]
    settings = BoosterSettings(params={name: 1})
    with pytest.raises(ValueError, match=f"params must not set '{name}'"):
        native_params(library, settings, reserved=backend.reserved, defaults={}, fixed={})


def test_catboost_refuses_a_callable_objective(tiny: Path) -> None:
    data = load_dataset(str(tiny))
    with pytest.raises(ValueError, match="CatBoost loss name"):
        BACKENDS["catboost"].train(
            BoosterSettings(), data.train, [], Plan(plrank_objective(K=3), 3)
        )


def test_catboost_refuses_the_package_metrics(tiny: Path) -> None:
    data = load_dataset(str(tiny))
    metric = plrank_objective(K=3).expected_metric
    with pytest.raises(ValueError, match="metrics must be empty for the catboost backend"):
        BACKENDS["catboost"].train(
            BoosterSettings(), data.train, [], Plan("YetiRank", 3, metrics=(metric,))
        )


def test_each_object_finds_its_backend() -> None:
    import lightgbm
    import xgboost

    X, y = np.zeros((4, 2)), np.array([1.0, 0.0, 1.0, 0.0])
    assert backend_of_data(xgboost.DMatrix(X, y)).name == "xgboost"
    assert backend_of_data(lightgbm.Dataset(X, y)).name == "lightgbm"
    booster = xgboost.train({}, xgboost.DMatrix(X, y), 1)
    assert backend_of_booster(booster).name == "xgboost"
    with pytest.raises(TypeError, match=r"but a builtins\.list is given"):
        backend_of_data([1, 2])
    with pytest.raises(TypeError, match=r"booster must be a model of xgboost, lightgbm, catboost"):
        backend_of_booster(object())


def test_timed_closes_the_progress_bar_however_the_fit_ends() -> None:
    from gbdt_plrank._backends._base import timed

    class Bar:
        closed = 0

        def close(self) -> None:
            self.closed += 1

    bar = Bar()
    out, seconds = timed(lambda: "model", bar)
    assert out == "model" and seconds >= 0 and bar.closed == 1
    with pytest.raises(RuntimeError, match="boom"):
        timed(lambda: (_ for _ in ()).throw(RuntimeError("boom")), bar)
    assert bar.closed == 2
    assert timed(lambda: 3)[0] == 3  # no bar


def test_the_tree_backends_share_one_base_that_finds_their_objects() -> None:
    from gbdt_plrank._backends import LibraryBackend

    types = {
        name: (b.data_type, b.booster_type)
        for name, b in BACKENDS.items()
        if isinstance(b, LibraryBackend)
    }
    assert types == {
        "xgboost": ("DMatrix", "Booster"),
        "lightgbm": ("Dataset", "Booster"),
        "catboost": ("Pool", "CatBoost"),
    }


def test_trained_keeps_the_library_record_as_plain_float_lists() -> None:
    from gbdt_plrank._backends import Trained

    record = {"eval_0": {"ndcg@3": np.array([0.5, 0.75], dtype=np.float32)}}
    trained = Trained(None, None, record, 0.0)
    assert trained.history == {"eval_0": {"ndcg@3": [0.5, 0.75]}}
    assert all(type(v) is float for v in trained.history["eval_0"]["ndcg@3"])
    assert trained.rounds == 2


def test_the_base_normalises_each_library_s_total_gains() -> None:
    from gbdt_plrank._backends import LibraryBackend

    class Gains(LibraryBackend):
        def __init__(self, gains: list[int]) -> None:
            self.gains = gains

        def total_gains(self, booster: object, n_features: int) -> list[int]:
            return self.gains

    out = Gains([1, 3, 0]).importances(None, 3)
    assert out.dtype == np.float64 and out.tolist() == [0.25, 0.75, 0.0]
    assert Gains([0, 0]).importances(None, 2).tolist() == [0.0, 0.0]
