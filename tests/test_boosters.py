"""The booster layer: one table of native names, used by the ranker, the harness and the tuner."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from tiny_ltr import write_tiny_letor

from gbdt_plrank import PLRankRanker, plrank_objective, training_cutoff
from gbdt_plrank._boosters import (
    BACKENDS,
    NATIVE_NAMES,
    BoosterSettings,
    Plan,
    QueryData,
    eval_name,
    metric_name,
)
from gbdt_plrank._boosters._base import native_params
from gbdt_plrank.datasets import load_dataset
from gbdt_plrank.harness import PLRankSettings, TreeSettings, train


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_letor(tmp_path_factory.mktemp("data") / "tiny")


def query_data(split) -> QueryData:
    return QueryData(split.X, split.y, split.group_sizes)


@pytest.mark.parametrize("library", ["xgboost", "lightgbm", "catboost"])
def test_every_setting_reaches_the_library_under_the_name_in_the_table(library: str) -> None:
    column = ["xgboost", "lightgbm", "catboost"].index(library)
    values = {
        "learning_rate": 0.3, "max_depth": 4, "num_leaves": 9, "min_child_weight": 0.5,
        "reg_alpha": 0.1, "reg_lambda": 2.0, "min_split_gain": 0.01, "subsample": 0.8,
        "colsample_bytree": 0.7, "n_threads": 1,
    }
    settings = BoosterSettings(**values, seed=7, params={"extra": 1})
    backend = BACKENDS[library]
    params = native_params(library, settings, reserved=backend.reserved, defaults={}, fixed={})
    for setting, value in {**values, "seed": 7}.items():
        native = NATIVE_NAMES[setting][column]
        if native is None:
            assert value not in [params.get(n) for n in ("max_leaves", "min_data_in_leaf")]
        else:
            assert params[native] == value, setting
    assert params["extra"] == 1


def test_num_leaves_is_xgboost_max_leaves_for_the_ranker_and_the_harness(tiny: Path) -> None:
    """One answer: a leaf limit reaches XGBoost from both (it did not from the harness)."""
    data = load_dataset(str(tiny))
    trees = TreeSettings(rounds=3, early_stopping_rounds=3, learning_rate=0.3, num_leaves=2, n_jobs=1)
    fit = train("lambdamart-xgb", data, k=3, seed=0, trees=trees, plrank=PLRankSettings())
    ranker = PLRankRanker(num_leaves=2, n_estimators=3, learning_rate=0.3, n_jobs=1, random_state=0)
    ranker.fit(data.train.X, data.train.y, group=data.train.qid)
    assert all(tree.count("leaf=") <= 2 for tree in ranker.booster_.get_dump())
    assert np.unique(fit.test_scores).shape[0] <= 2 ** 3  # 3 trees of at most 2 leaves each


def test_the_harness_and_the_ranker_train_the_same_model(tiny: Path) -> None:
    """Same settings, same objective and seed: the harness's test scores are the ranker's."""
    data = load_dataset(str(tiny))
    trees = TreeSettings(rounds=5, early_stopping_rounds=5, learning_rate=0.3, n_jobs=1)
    for library, method in (("xgboost", "plrank-xgb"), ("lightgbm", "plrank-lgb")):
        ndcg_stopping = PLRankSettings(N=10, stopping_metric="ndcg")
        fit = train(method, data, k=3, seed=4, trees=trees, plrank=ndcg_stopping)
        backend = BACKENDS[library]
        settings = trees.booster_settings(seed=4, params={})
        objective = plrank_objective(K=training_cutoff(3), N=10, seed=4, n_jobs=1)  # 2k
        plan = Plan(objective, 3, n_estimators=5, early_stopping_rounds=5)
        trained = backend.train(settings, query_data(data.train), [query_data(data.vali)], plan)
        scores = backend.margins(trained.booster, data.test.X, n_threads=1)
        np.testing.assert_array_equal(scores, fit.test_scores)
        assert trained.history[eval_name(0)][metric_name(3)] == list(fit.curve)


@pytest.mark.parametrize("library", ["xgboost", "lightgbm", "catboost"])
def test_best_round_margins_and_history_under_common_names(library: str, tiny: Path) -> None:
    data = load_dataset(str(tiny))
    objective = {"xgboost": "rank:ndcg", "lightgbm": "lambdarank", "catboost": "YetiRank"}[library]
    backend = BACKENDS[library]
    plan = Plan(objective, 3, n_estimators=40, early_stopping_rounds=3)
    trained = backend.train(
        BoosterSettings(learning_rate=0.5, max_depth=3, n_threads=1),
        query_data(data.train), [query_data(data.vali)], plan,
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
            BoosterSettings(), query_data(data.train), [], Plan(plrank_objective(K=3), 3)
        )


def test_catboost_refuses_another_stopping_rule(tiny: Path) -> None:
    data = load_dataset(str(tiny))
    with pytest.raises(ValueError, match="stopping must be None for the catboost backend"):
        BACKENDS["catboost"].train(
            BoosterSettings(), query_data(data.train), [], Plan("YetiRank", 3, stopping=object())
        )


@pytest.mark.parametrize("library", ["xgboost", "lightgbm"])
def test_margin_tracker_gives_every_rounds_margins_exactly(library: str) -> None:
    """Tracked round by round (only the new trees), the margins are those of predicting every
    tree; for LightGBM also when a round is skipped (then it predicts every round)."""
    data = load_dataset("mq2008", fold=2)
    backend = BACKENDS[library]
    seen: list[tuple[int, np.ndarray, np.ndarray]] = []
    tracker = backend.margin_tracker(data.vali.X, n_threads=1)
    skipped = backend.margin_tracker(data.vali.X, n_threads=1)

    def after(booster: Any, iteration: int) -> bool:
        seen.append((iteration, tracker(booster, iteration),
                     backend.margins(booster, data.vali.X, n_threads=1)))
        if iteration % 3 == 0:  # every third round only
            np.testing.assert_array_equal(skipped(booster, iteration), seen[-1][2])
        return False

    stop = SimpleNamespace(after_round=after, best_round=30, best_value=0.0, name="test")
    plan = Plan(plrank_objective(K=5, N=20, seed=0, n_jobs=1), 5, n_estimators=30,
                early_stopping_rounds=30, stopping=stop)
    backend.train(BoosterSettings(learning_rate=0.1, n_threads=1), query_data(data.train),
                  [query_data(data.vali)], plan)
    assert [iteration for iteration, _, _ in seen] == list(range(30))
    for _, tracked, predicted in seen:
        np.testing.assert_array_equal(tracked, predicted)
    assert not np.array_equal(seen[0][1], seen[-1][1])
