"""The comparison harness: configuration, every method, resume, and the output files."""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pytest
from tiny_ltr import write_tiny_letor

from gbdt_plrank import min_rounds_for, pirank_objective
from gbdt_plrank._backends import BACKENDS, Plan
from gbdt_plrank._ranking_metric import RankingMetric
from gbdt_plrank._training.evaluation import RankingMetricEval
from gbdt_plrank._training.plrank_plan import plrank_plan
from gbdt_plrank.clicks import click_rewards, estimate_position_bias
from gbdt_plrank.datasets import LTRDataset, load_dataset
from gbdt_plrank.harness import (
    COLUMNS,
    METHODS,
    ConfigError,
    FolderInUseError,
    PiRankSettings,
    PLRankSettings,
    ResultStore,
    TreeSettings,
    load_config,
    load_frontier_config,
    plan,
    read_params,
    run_comparison,
    run_frontier,
    train,
    write_report,
)
from gbdt_plrank.harness.clicks import run as clicks_run
from gbdt_plrank.harness.clicks.config import load_clicks_config
from gbdt_plrank.harness.clicks.run import run_clicks
from gbdt_plrank.harness.compare import run as runner_module
from gbdt_plrank.harness.compare.report import markdown_report
from gbdt_plrank.harness.data import (
    check_data,
    cross_validation_fold,
    dataset_label,
    family,
    load,
    without_empty_queries,
)
from gbdt_plrank.harness.frontier import run as frontier_run
from gbdt_plrank.harness.stats import paired, seed_means
from gbdt_plrank.harness.store import LOCK_FILE, RunKey, Table, locked_folder
from gbdt_plrank.harness.training import _refused_param
from gbdt_plrank.metrics import ndcg

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
FAST = TreeSettings(rounds=4, early_stopping_rounds=2, learning_rate=0.3, n_jobs=1)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_letor(tmp_path_factory.mktemp("data") / "tiny")


def write_config(folder: Path, text: str, name: str = "cmp.toml") -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def tiny_config(tmp_path: Path, tiny: Path, **top: str) -> Path:
    """A fast comparison of two methods x two seeds on the tiny data, into tmp_path/out."""
    lines = {
        "datasets": f"[{str(tiny)!r}]",
        "methods": '["plrank-xgb", "lambdarank-lgb"]',
        "seeds": "2",
        "k": "3",
        "out": repr(str(tmp_path / "out")),
        **top,
    }
    body = "\n".join(f"{key} = {value}" for key, value in lines.items())
    trees = "[trees]\nrounds = 4\nearly_stopping_rounds = 2\nlearning_rate = 0.3\nn_jobs = 1\n"
    return write_config(tmp_path, f"{body}\n{trees}")


# ------------------------------------------------------------------------------------------
# Configuration
# ------------------------------------------------------------------------------------------
def test_minimal_config_takes_the_defaults(tmp_path: Path) -> None:
    path = write_config(tmp_path, 'datasets = ["mq2008"]\nmethods = ["plrank-xgb"]\n', "mine.toml")
    config = load_config(path)
    assert config.datasets == ("mq2008",)
    assert config.methods == ("plrank-xgb",)
    assert config.folds == (1,) and config.k == (5,) and config.seeds == 5
    assert list(config.seed_values) == [0, 1, 2, 3, 4]
    assert config.out == str(Path("runs") / "mine")
    assert config.trees == TreeSettings() and config.plrank == PLRankSettings()
    assert config.pirank == PiRankSettings()
    assert dict(config.params) == {}


def test_shipped_configs_load() -> None:
    names = sorted(p.stem for p in CONFIGS.glob("*.toml"))
    assert {"demo", "mq2008", "mq2007-agg"} <= set(names)
    for path in CONFIGS.glob("*.toml"):
        if path.stem.startswith("fairness"):  # frontiers (gbdt-plrank fairness): test_frontier
            continue
        if path.stem.startswith("clicks"):  # gbdt-plrank clicks
            clicks = load_clicks_config(path)
            assert clicks.datasets and clicks.folds
            continue
        config = load_config(path)
        assert config.methods
        if path.stem in ("headline", "neural", "neural-defaults"):  # one seed, every query, paired
            assert config.folds == (1, 2, 3, 4, 5) and 10 in config.k
            assert set(config.datasets) == {"mq2008", "mq2007-agg"}
        else:
            assert config.seeds >= 2
    assert load_config(CONFIGS / "demo.toml").k == (5, 10)
    for name in ("mq2008", "mq2007-agg"):  # every query pooled, at least 3 seeds
        config = load_config(CONFIGS / f"{name}.toml")
        assert config.seeds >= 3 and config.folds == (1, 2, 3, 4, 5)


BASE = 'datasets = ["mq2008"]\nmethods = ["plrank-xgb"]\n'


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('methods = ["plrank-xgb"]', "must set 'datasets'"),
        (BASE + "colour = 1", "unknown key 'colour'"),
        (BASE + "[trees]\ndepth = 3", "unknown key 'trees.depth'"),
        (BASE + "[plrank]\nK = 3", "unknown key 'plrank.K'"),
        (
            'datasets = ["mq2008"]\nmethods = ["lambdamart"]',
            "but ['lambdamart'] is given ('lambdamart' is not a method)",
        ),
        ('datasets = ["mq2008"]\nmethods = ["pairwise-xgb", "pairwise-xgb"]', "is repeated"),
        ('datasets = ["mq2008"]\nmethods = []', "methods must be a non-empty list"),
        (BASE + "seeds = 0", "seeds must be an integer >= 1, but 0"),
        (BASE + "seeds = true", "but True is given"),
        (BASE + "k = [5, 0]", "k must be an integer >= 1"),
        (BASE + "folds = [6]", "folds must be an integer from 1 to 5"),
        (BASE + "[trees]\nsubsample = 1.5", "in (0, 1]"),
        (BASE + "[trees]\nlambda = -1", "trees.lambda must be"),
        (BASE + '[plrank]\ngain = "cubic"', "'exp', 'linear'"),
        (BASE + "trees = 3", "trees must be a table"),
        (BASE + "[params.ranknet]\neta = 0.1", "'ranknet' is not one"),
        (BASE + '[params.plrank-xgb]\nobjective = "x"', "plrank-xgb must not set 'objective'"),
        (BASE + "[params.lambdarank-lgb]\nnum_iterations = 9", "must not set 'num_iterations'"),
        (BASE + "[params.plrank-xgb]\neta = [1, 2]", "plrank-xgb.eta must be a string, number or"),
        (
            BASE + "[params.plrank-xgb.plrank]\nN = 0",
            'params.plrank-xgb.plrank.N must be "auto" or an integer >= 1, but 0',
        ),
        (BASE + "[params.plrank-xgb.plrank]\nK = 3", "unknown key 'params.plrank-xgb.plrank.K'"),
        (BASE + "[params.lambdamart-xgb.plrank]\nN = 3", "'lambdamart-xgb' is not a PL-Rank"),
        (
            BASE + '[params.plrank-xgb.plrank]\nhessian = "cubic"',
            "'abs', 'raw', 'clip', 'constant'",
        ),
        (BASE + "[pirank]\ntau = 0", "pirank.tau must be a finite number > 0, but 0 is given"),
        (
            BASE + "[pirank]\ntau = -1.5",
            "pirank.tau must be a finite number > 0, but -1.5 is given",
        ),
        (BASE + "[pirank]\ntau = nan", "pirank.tau must be a finite number > 0, but nan is given"),
        (BASE + "[pirank]\ntau = inf", "pirank.tau must be a finite number > 0, but inf is given"),
        (BASE + '[pirank]\ntau = "1"', "pirank.tau must be a finite number > 0, but '1' is given"),
        (BASE + '[pirank]\nhessian = "cubic"', "pirank.hessian must be one of 'bound', 'abs'"),
        (BASE + "[pirank]\nK = 3", "unknown key 'pirank.K'"),
        (
            BASE + "[params.pirank-xgb.pirank]\ntau = 0.0",
            "params.pirank-xgb.pirank.tau must be a finite",
        ),
        (BASE + "[params.pirank-xgb.pirank]\nN = 3", "unknown key 'params.pirank-xgb.pirank.N'"),
        (BASE + "[params.pirank-xgb.plrank]\nN = 3", "'pirank-xgb' is not a PL-Rank method"),
        (BASE + "[params.plrank-lgb.pirank]\ntau = 1.0", "'plrank-lgb' is not a PiRank method"),
        (
            BASE + '[plrank]\nfairness = "equal"',
            "plrank.fairness must be None or one of 'expected-exposure', 'disparity', "
            "'group-disparity', but 'equal'",
        ),
        (
            BASE + "[plrank]\nfairness_weight = -0.5",
            "plrank.fairness_weight must be a finite number >= 0, but -0.5",
        ),
        (
            BASE + "[plrank]\nfairness_weight = inf",
            "plrank.fairness_weight must be a finite number >= 0, but inf",
        ),
        (
            BASE + "[params.plrank-xgb.plrank]\nfairness_weight = nan",
            "fairness_weight must be a finite number >= 0, but nan",
        ),
        (
            BASE
            + '[plrank]\nmetric = "precision"\n'
            + '[params.plrank-xgb.plrank]\nfairness = "expected-exposure"',
            "the PL-Rank options of 'plrank-xgb' ([plrank] with [params.plrank-xgb.plrank]) break "
            "a rule: fairness='expected-exposure' measures exposure with the DCG rank weights",
        ),
        (BASE + '[plrank]\nN = 1\nfairness = "expected-exposure"', "N must be >= 2 with fairness="),
        (
            BASE + '[plrank]\nfairness = "group-disparity"',
            "fairness='group-disparity' needs item "
            "groups, which comparisons do not take; draw its frontier with gbdt-plrank fairness",
        ),
        (
            BASE + '[plrank]\nstopping_metric = "ndcg"',
            "plrank.stopping_metric must be one of 'auto', 'policy', 'ranking', 'standardized', "
            "but 'ndcg'",
        ),
        (BASE + "[plrank]\ntrain_K = 0", 'plrank.train_K must be "auto" or an integer >= 1, but 0'),
        (
            BASE + '[plrank]\ntrain_K = "k"',
            "plrank.train_K must be \"auto\" or an integer >= 1, but 'k'",
        ),
        ('datasets = ["mq2008"\n', "is not valid TOML"),
    ],
)
def test_config_errors_name_the_value_and_the_rule(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(write_config(tmp_path, text))
    assert message in str(info.value)


def test_unknown_key_lists_the_allowed_keys(tmp_path: Path) -> None:
    text = 'datasets = ["mq2008"]\nmethods = ["plrank-xgb"]\n[trees]\ndepth = 3'
    with pytest.raises(ConfigError) as info:
        load_config(write_config(tmp_path, text))
    assert "allowed at [trees]: rounds, learning_rate, max_depth" in str(info.value)


def test_missing_config_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such configuration file"):
        load_config(tmp_path / "nope.toml")


def test_overrides_replace_values_and_are_checked(tmp_path: Path) -> None:
    path = write_config(tmp_path, 'datasets = ["mq2008"]\nmethods = ["plrank-xgb"]\n')
    config = load_config(
        path, overrides={"methods": ["lambdamart-xgb"], "trees.rounds": 7, "k": [5, 10], "out": "x"}
    )
    assert config.methods == ("lambdamart-xgb",)
    assert config.trees.rounds == 7 and config.k == (5, 10) and config.out == "x"
    with pytest.raises(ConfigError, match=r"trees\.rounds must be an integer >= 1, but -1"):
        load_config(path, overrides={"trees.rounds": -1})


CONFIGS = Path(__file__).resolve().parents[1] / "configs"


@pytest.mark.parametrize(
    ("command", "good", "bad", "overrides", "message"),
    [
        (
            "compare",
            'methods = ["plrank-xgb", "lambdamart-xgb"]',
            'methods = ["plrank-xgb", "lambdamart-xbg"]',
            {"methods": ["plrank-xgb"]},
            r"methods must be a non-empty list of distinct methods from: .*'lambdamart-xbg' is not",
        ),
        (
            "compare",
            'methods = ["plrank-xgb"]\n[trees]\nrounds = 7',
            'methods = ["plrank-xgb"]\n[trees]\nrounds = -1',
            {"trees.rounds": 5},
            r"trees\.rounds must be an integer >= 1, but -1 is given",
        ),
        ("clicks", "sessions = [3, 10]", "sessions = [3, 0]", {"sessions": [3]}, r"sessions"),
        ("fairness", "folds = [1, 2]", "folds = [1, 7]", {"folds": [1]}, r"folds"),
    ],
)
def test_a_bad_value_in_the_file_is_refused_even_where_an_override_replaces_it(
    tmp_path: Path, command: str, good: str, bad: str, overrides: dict, message: str
) -> None:
    """The file is checked as written (a typo in its methods passed under --methods), the
    overrides filling only what it lacks; the same file with a good value takes the override."""
    from gbdt_plrank.harness.frontier.config import load_frontier_config

    load, template = {
        "compare": (load_config, 'datasets = ["mq2008"]\n{line}\n'),
        "clicks": (
            load_clicks_config,
            (CONFIGS / "clicks-tiny.toml").read_text().replace("sessions = [3, 10]", "{line}"),
        ),
        "fairness": (
            load_frontier_config,
            (CONFIGS / "fairness.toml").read_text().replace("folds = [1, 2, 3, 4, 5]", "{line}"),
        ),
    }[command]
    assert "{line}" in template
    path = write_config(tmp_path, template.replace("{line}", bad))
    with pytest.raises(ConfigError, match=message) as info:
        load(path, overrides=overrides)
    assert str(info.value).startswith(f"{path}, as written (before the overrides): ")
    path = write_config(tmp_path, template.replace("{line}", good), name="good.toml")
    config = load(path, overrides=overrides)
    key = next(iter(overrides))
    value = config.trees.rounds if key == "trees.rounds" else getattr(config, key)
    assert list(np.atleast_1d(value)) == list(np.atleast_1d(overrides[key]))
    # a file without the key, the override supplying it
    if command == "compare" and key == "methods":
        load(
            write_config(tmp_path, 'datasets = ["mq2008"]\n', name="bare.toml"), overrides=overrides
        )


def test_params_file_is_checked_and_merged_over_the_config(tmp_path: Path) -> None:
    config_text = (
        'datasets = ["mq2008"]\nmethods = ["plrank-xgb"]\n'
        "[params.plrank-xgb]\neta = 0.2\nmax_depth = 3\n"
    )
    path = write_config(tmp_path, config_text)
    params_text = "[plrank-xgb]\neta = 0.05\n[lambdarank-lgb]\nnum_leaves = 7\n"
    params = write_config(tmp_path, params_text, "p.toml")
    assert dict(read_params(params)["lambdarank-lgb"]) == {"num_leaves": 7}
    config = load_config(path, params_file=params)
    assert dict(config.params["plrank-xgb"]) == {"eta": 0.05, "max_depth": 3}
    assert dict(config.params["lambdarank-lgb"]) == {"num_leaves": 7}
    options = write_config(tmp_path, '[plrank-xgb.plrank]\nN = 7\nhessian = "clip"\n', "o.toml")
    config = load_config(path, params_file=options)
    assert dict(config.params["plrank-xgb"]["plrank"]) == {"N": 7, "hessian": "clip"}
    assert config.training_settings()["params"]["plrank-xgb"]["plrank"] == {
        "N": 7,
        "hessian": "clip",
    }
    bad = write_config(tmp_path, '[yetirank-cb]\nloss_function = "RMSE"\n', "bad.toml")
    with pytest.raises(ConfigError, match=r"bad.toml: yetirank-cb must not set 'loss_function'"):
        read_params(bad)


def test_every_plrank_option_reaches_the_settings(tmp_path: Path) -> None:
    plain = load_config(write_config(tmp_path, BASE, "plain.toml")).training_settings()
    assert plain["plrank"] == PLRankSettings().model_dump()
    assert plain["plrank"]["fairness"] is None and plain["plrank"]["train_K"] == "auto"
    fair = load_config(
        write_config(tmp_path, BASE + '[plrank]\nfairness = "expected-exposure"', "fair.toml")
    ).training_settings()
    assert fair["plrank"]["fairness"] == "expected-exposure"
    weight = load_config(
        write_config(tmp_path, BASE + "[plrank]\nfairness_weight = 0.5", "w.toml")
    ).training_settings()
    assert weight["plrank"]["fairness_weight"] == 0.5


def test_training_settings_leave_out_selection_and_threads(tmp_path: Path) -> None:
    path = write_config(tmp_path, 'datasets = ["mq2008"]\nmethods = ["plrank-xgb"]\n')
    a = load_config(path, overrides={"seeds": 2, "methods": ["lambdamart-xgb"], "trees.n_jobs": 1})
    b = load_config(path, overrides={"k": [10], "trees.n_jobs": 2})
    assert a.training_settings() == b.training_settings()
    c = load_config(path, overrides={"trees.rounds": 3})
    assert c.training_settings() != a.training_settings()


# ------------------------------------------------------------------------------------------
# Data
# ------------------------------------------------------------------------------------------
def test_data_labels_and_checks(tmp_path: Path, tiny: Path) -> None:
    assert dataset_label("mq2008", 3) == "mq2008/Fold3"
    assert dataset_label(str(tiny), 1) == "tiny"
    assert family("mq2008/Fold3") == "mq2008" and family("tiny") == "tiny"
    folds = tmp_path / "letor"
    (folds / "Fold2").mkdir(parents=True)
    assert dataset_label(str(folds), 2) == "letor/Fold2"
    check_data(["mq2008", str(tiny), "web-noisy"], [1])
    check_data(["web-linear"], [1, 2, 3])
    assert dataset_label("web-nonlinear", 2) == "web-nonlinear/Fold2"
    with pytest.raises(ConfigError, match="'nowhere' is neither"):
        check_data(["nowhere"], [1])
    with pytest.raises(ConfigError, match=r"folds must be \[1\] for"):
        check_data([str(tiny)], [1, 2])
    with pytest.raises(ConfigError, match="has no Fold1 subfolder"):
        check_data([str(folds)], [1, 2])


def test_dropping_test_queries_without_relevant_documents(tiny: Path) -> None:
    kept = load(str(tiny), 1, drop_empty_test_queries=False)
    dropped = load(str(tiny), 1, drop_empty_test_queries=True)
    ptr = kept.test.group_ptr
    relevant = np.maximum.reduceat(kept.test.y, ptr[:-1]) > 0
    assert 0 < relevant.sum() < kept.test.n_queries
    assert dropped.test.n_queries == relevant.sum()
    assert dropped.train.X.shape == kept.train.X.shape
    direct = without_empty_queries(kept.test)
    np.testing.assert_array_equal(direct.qid, dropped.test.qid)
    assert set(np.unique(direct.qid)) == set(np.unique(kept.test.qid)[relevant])


def test_cross_validation_tests_every_query_once_per_repeat() -> None:
    """Five folds of a repeat: each query a test query once, parts of near-equal size, train,
    validation and test disjoint, a query's rows whole and in order; another repeat shuffles."""
    data = load_dataset("mslr-sample")
    rows = {q: data.train.y[data.train.qid == q] for q in np.unique(data.train.qid)}
    tested: list[int] = []
    for fold in range(1, 6):
        cv = cross_validation_fold(data, fold=fold, repeat=4)
        parts = [set(np.unique(s.qid)) for s in (cv.train, cv.vali, cv.test)]
        assert cv.name == f"mslr-sample/cv4-fold{fold}"
        assert [len(p) for p in parts] == [54, 18, 18]
        assert not (parts[0] & parts[1] or parts[0] & parts[2] or parts[1] & parts[2])
        for q in parts[0] & set(rows):
            np.testing.assert_array_equal(cv.train.y[cv.train.qid == q], rows[q])
        tested += sorted(parts[2])
    assert sorted(tested) == sorted(set(tested)) and len(tested) == 90
    other = cross_validation_fold(data, fold=1, repeat=5)
    assert set(np.unique(other.test.qid)) != set(
        np.unique(cross_validation_fold(data, fold=1, repeat=4).test.qid)
    )
    with pytest.raises(ValueError, match="fold must be from 1 to folds"):
        cross_validation_fold(data, fold=6, repeat=0)
    shared = type(data)("shared", data.train, data.vali, data.train)
    with pytest.raises(ValueError, match="query ids must be distinct across the splits"):
        cross_validation_fold(shared, fold=1)


# ------------------------------------------------------------------------------------------
# Every method on a tiny dataset
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(METHODS))
def test_every_method_trains_with_early_stopping(tiny: Path, name: str) -> None:
    if METHODS[name].library == "catboost":
        pytest.importorskip("catboost")
    data = load_dataset(str(tiny))
    fit = train(name, data, k=3, seed=1, trees=FAST, plrank=PLRankSettings(N=20))
    assert 1 <= fit.curve.shape[0] <= FAST.rounds
    assert np.all((fit.curve >= 0) & (fit.curve <= 1))
    assert 1 <= fit.best_round <= fit.curve.shape[0]
    assert fit.test_scores.shape == (data.test.X.shape[0],)
    assert np.all(np.isfinite(fit.test_scores))
    assert fit.train_seconds > 0


def test_same_seed_same_model_other_seed_other_model(tiny: Path) -> None:
    data = load_dataset(str(tiny))
    plrank = PLRankSettings(N=20)
    a, b, c = (train("plrank-lgb", data, k=3, seed=s, trees=FAST, plrank=plrank) for s in (0, 0, 1))
    np.testing.assert_array_equal(a.test_scores, b.test_scores)
    assert not np.array_equal(a.test_scores, c.test_scores)


def test_native_params_reach_the_booster(tiny: Path) -> None:
    data = load_dataset(str(tiny))
    stumps = train(
        "lambdamart-xgb",
        data,
        k=3,
        seed=0,
        trees=FAST,
        plrank=PLRankSettings(),
        params={"max_depth": 1},
    )
    deep = train("lambdamart-xgb", data, k=3, seed=0, trees=FAST, plrank=PLRankSettings())
    assert not np.array_equal(stumps.test_scores, deep.test_scores)


def spy_on_plans(monkeypatch: pytest.MonkeyPatch) -> list[dict]:
    """The options and keyword arguments of every PL-Rank plan the harness builds."""
    from gbdt_plrank.harness import training

    made: list[dict] = []

    def plan(options, **kwargs):
        made.append({"options": options, **kwargs})
        return plrank_plan(options, **kwargs)

    monkeypatch.setattr(training, "plrank_plan", plan)
    return made


def test_a_plrank_table_in_params_sets_the_objective_options(tiny: Path, monkeypatch) -> None:
    made = spy_on_plans(monkeypatch)
    data = load_dataset(str(tiny))
    params = {"num_leaves": 7, "plrank": {"N": 7, "metric": "dcg", "hessian": "clip"}}
    train("plrank-lgb", data, k=3, seed=0, trees=FAST, plrank=PLRankSettings(N=20), params=params)
    train("plrank-lgb", data, k=3, seed=0, trees=FAST, plrank=PLRankSettings(N=20))
    fair = {"plrank": {"fairness": "expected-exposure", "fairness_weight": 0.3}}
    train("plrank-xgb", data, k=3, seed=0, trees=FAST, plrank=PLRankSettings(N=20), params=fair)
    options = [m["options"] for m in made]
    assert (options[0].N, options[0].metric, options[0].hessian) == (7, "dcg", "clip")
    assert (options[1].N, options[1].metric, options[1].hessian) == (20, "ndcg", "auto")
    assert options[1].fairness is None
    assert (options[2].fairness, options[2].fairness_weight) == ("expected-exposure", 0.3)
    assert [o.K for o in options] == [3, 3, 3]  # judged at k
    assert [o.training_K for o in options] == [6, 6, 3]  # train_K "auto": 2k, k with fairness
    assert [m["seed"] for m in made] == [0, 0, 0]  # the training's seed
    assert params["plrank"] == {"N": 7, "metric": "dcg", "hessian": "clip"}  # not consumed


def test_plrank_methods_train_at_train_K_and_stop_on_their_policy_at_k(
    tiny: Path, monkeypatch
) -> None:
    made = spy_on_plans(monkeypatch)
    data = load_dataset(str(tiny))
    trees = TreeSettings(
        rounds=30, early_stopping_rounds=3, learning_rate=0.3, n_jobs=1, patience_rate=0
    )  # a fixed patience: the curve's end tells the best
    policy = PLRankSettings(N=20, stopping_metric="policy")
    fit = train("plrank-xgb", data, k=3, seed=2, trees=trees, plrank=policy)
    assert fit.watched == "expected_ndcg@3" and list(fit.history) == ["ndcg@3", "expected_ndcg@3"]
    curve = np.round(fit.history["expected_ndcg@3"], 6)  # XGBoost records 6 decimals
    assert fit.best_round == int(np.argmax(curve)) + 1 == curve.shape[0] - 3
    fit = train(
        "plrank-xgb", data, k=3, seed=2, trees=trees, plrank=PLRankSettings(N=20, train_K=5)
    )
    assert fit.watched == "standardized_expected_ndcg@3"  # the default: the README's path
    assert [m["options"].training_K for m in made] == [6, 5]
    assert [m["stopping_metric"] for m in made] == ["policy", "standardized"]


def test_plrank_methods_stop_on_their_fair_policy_by_default(tiny: Path) -> None:
    data = load_dataset(str(tiny))
    trees = TreeSettings(
        rounds=30, early_stopping_rounds=3, learning_rate=0.3, n_jobs=1, min_rounds=0
    )
    policy, ranking = PLRankSettings(N=20), PLRankSettings(N=20, stopping_metric="ranking")
    assert policy.stopping_metric == "auto"  # the default: the policy's value with fairness
    assert policy.stopping == "standardized"
    assert PLRankSettings(fairness="expected-exposure").stopping == "policy"
    # with fairness, the value watched is the fair objective's: expected NDCG@3 - 0.4 EE-L
    fair = {"plrank": {"fairness": "expected-exposure", "fairness_weight": 0.4}}
    by_policy = train("plrank-xgb", data, k=3, seed=2, trees=trees, plrank=policy, params=fair)
    assert by_policy.watched == "expected_ndcg@3-0.4*ee_l"
    curve = np.round(by_policy.history[by_policy.watched], 6)
    assert by_policy.best_round == int(np.argmax(curve)) + 1
    by_ranking = train("plrank-xgb", data, k=3, seed=2, trees=trees, plrank=ranking, params=fair)
    assert by_ranking.watched == "ndcg@3" and list(by_ranking.history) == ["ndcg@3"]
    assert by_ranking.best_round != by_policy.best_round
    # the other methods keep the library's validation NDCG@k: the same model either way
    base = [
        train("lambdamart-xgb", data, k=3, seed=2, trees=trees, plrank=s) for s in (policy, ranking)
    ]
    assert base[0].best_round == base[1].best_round
    np.testing.assert_array_equal(base[0].test_scores, base[1].test_scores)


def test_pirank_methods_take_the_pirank_settings_and_their_own_table(
    tiny: Path, monkeypatch
) -> None:
    from gbdt_plrank.harness import training

    made: list[dict] = []

    def build(**kwargs):
        made.append(kwargs)
        return pirank_objective(**kwargs)

    monkeypatch.setattr(training, "pirank_objective", build)
    data = load_dataset(str(tiny))
    settings = PiRankSettings(tau=2.0, hessian="abs")
    train(
        "pirank-xgb",
        data,
        k=3,
        seed=5,
        trees=FAST,
        pirank=settings,
        params={"pirank": {"tau": 0.5}},
    )
    train("pirank-lgb", data, k=4, seed=5, trees=FAST, pirank=settings)
    train("pirank-xgb", data, k=3, seed=0, trees=FAST)
    assert made[0] == {"K": 3, "n_jobs": 1, "tau": 0.5, "hessian": "abs"}  # deterministic: no seed
    assert made[1] == {"K": 4, "n_jobs": 1, "tau": 2.0, "hessian": "abs"}
    defaults = PiRankSettings()
    assert made[2] == {"K": 3, "n_jobs": 1, "tau": defaults.tau, "hessian": defaults.hessian}
    assert repr(pirank_objective()) == (
        f"pirank_objective(K=10, tau={defaults.tau!r}, hessian={defaults.hessian!r})"
    )


@pytest.mark.parametrize("name", ["lambdamart-xgb", "lambdarank-lgb", "yetirank-cb", "plrank-nn"])
def test_callbacks_are_called_after_every_round(tiny: Path, name: str) -> None:
    rounds: list[int] = []
    if METHODS[name].library == "xgboost":
        import xgboost

        class Callback(xgboost.callback.TrainingCallback):
            def after_iteration(self, model, epoch, evals_log) -> bool:
                rounds.append(epoch)
                return False

        callback = Callback()
    elif METHODS[name].library == "lightgbm":
        callback = lambda env: rounds.append(env.iteration)  # noqa: E731
    elif METHODS[name].library == "torch":
        callback = lambda epoch, history: rounds.append(epoch)  # noqa: E731
    else:
        pytest.importorskip("catboost")

        class Callback:
            def after_iteration(self, info) -> bool:
                rounds.append(info.iteration)
                return True

        callback = Callback()
    data = load_dataset(str(tiny))
    fit = train(name, data, k=3, seed=0, trees=FAST, plrank=PLRankSettings(), callbacks=[callback])
    assert len(rounds) == fit.curve.shape[0]


@pytest.mark.parametrize("name", ["plrank-xgb", "lambdamart-xgb", "plrank-nn"])
def test_test_curve_scores_the_test_split_without_changing_the_training(
    tiny: Path, name: str
) -> None:
    data = load_dataset(str(tiny))
    trees = TreeSettings(rounds=6, early_stopping_rounds=2, learning_rate=0.3, n_jobs=1)
    plain = train(name, data, k=3, seed=0, trees=trees, plrank=PLRankSettings(N=20))
    both = train(name, data, k=3, seed=0, trees=trees, plrank=PLRankSettings(N=20), test_curve=True)
    assert plain.test_history is None
    np.testing.assert_array_equal(both.test_scores, plain.test_scores)
    assert both.best_round == plain.best_round
    for metric, curve in plain.history.items():
        np.testing.assert_array_equal(both.history[metric], curve)
        assert both.test_history[metric].shape == curve.shape
    at_best = both.test_history["ndcg@3"][both.best_round - 1]  # the test scores' round
    assert at_best == pytest.approx(ndcg(data.test.y, both.test_scores, data.test.qid, k=3))


@pytest.mark.parametrize("name", ["lambdamart-xgb", "lambdarank-lgb", "plrank-xgb", "plrank-lgb"])
def test_base_margins_start_the_training_and_reach_the_scores(tiny: Path, name: str) -> None:
    """A split's base margins are part of its scores and where its training starts: one base
    margin on every row (which no ranking objective sees) adds itself to every split's scores
    and changes no tree; margins that vary within the training queries change the trees."""
    data = load_dataset(str(tiny))
    kw = {"k": 3, "seed": 0, "trees": FAST, "plrank": PLRankSettings(N=20), "score_train": True}

    def started(train_margin: np.ndarray, other: float) -> LTRDataset:
        return replace(
            data,
            train=replace(data.train, base_margin=train_margin),
            **{
                s: replace(getattr(data, s), base_margin=np.full(getattr(data, s).y.size, other))
                for s in ("vali", "test")
            },
        )

    plain = train(name, data, **kw)
    shifted = train(name, started(np.full(data.train.y.size, 0.5), 0.5), **kw)
    for part in ("train_scores", "vali_scores", "test_scores"):
        np.testing.assert_allclose(getattr(shifted, part), getattr(plain, part) + 0.5, atol=1e-5)
    assert shifted.best_round == plain.best_round
    rng = np.random.default_rng(0)
    moved = train(name, started(rng.normal(size=data.train.y.size), 0.0), **kw)
    assert np.max(np.abs(moved.test_scores - plain.test_scores)) > 1e-3
    assert train(name, data, **{**kw, "score_train": False}).train_scores is None


def test_base_margins_are_refused_by_the_network(tiny: Path) -> None:
    data = load_dataset(str(tiny))
    started = replace(data, test=replace(data.test, base_margin=np.zeros(data.test.y.shape[0])))
    message = (
        "base margins on the test split need a method of xgboost or lightgbm, but 'plrank-nn' "
        "trains with torch."
    )
    with pytest.raises(ValueError, match=re.escape(message)):
        train("plrank-nn", started, k=3, seed=0, trees=FAST)


def test_test_curve_is_refused_where_early_stopping_watches_every_eval_set(tiny: Path) -> None:
    with pytest.raises(ValueError, match="'lambdarank-lgb' trains with lightgbm"):
        train("lambdarank-lgb", load_dataset(str(tiny)), k=3, seed=0, trees=FAST, test_curve=True)


@pytest.mark.parametrize("name", ["lambdamart-xgb", "lambdarank-lgb"])
def test_watch_stops_on_the_given_metric_as_a_hand_built_plan_does(tiny: Path, name: str) -> None:
    """train(watch=) is the hand-built plan of a library objective that watches a package metric
    (the clicks experiment's anchors): the same rounds, curve and test scores."""
    data = load_dataset(str(tiny))
    watch = RankingMetric("dcg", 3, "linear")
    trees = TreeSettings(rounds=8, early_stopping_rounds=2, learning_rate=0.3, n_jobs=1)
    fit = train(name, data, k=3, seed=0, trees=trees, watch=watch)
    method = METHODS[name]
    backend = BACKENDS[method.library]
    plan = Plan(
        method.objective,
        3,
        n_estimators=8,
        early_stopping_rounds=2,
        metrics=(RankingMetricEval(watch),),
        min_rounds=min_rounds_for(0.3),
    )
    hand = backend.train(trees.booster_settings(seed=0, params={}), data.train, [data.vali], plan)
    assert fit.watched == watch.name and set(fit.history) == {watch.name}
    np.testing.assert_array_equal(fit.curve, hand.history["valid_0"][watch.name])
    assert fit.best_round == hand.rounds
    np.testing.assert_array_equal(
        fit.test_scores, backend.margins(hand.booster, data.test.X, n_threads=1)
    )
    plain = train(name, data, k=3, seed=0, trees=trees)
    assert plain.watched == "ndcg@3" and watch.name not in plain.history


#: Each library's default tree settings, written out (LightGBM's "no depth limit" as a depth its
#: 31 leaves cannot reach on the tiny set).
_WRITTEN_DEFAULTS = {
    "lambdamart-xgb": {
        "learning_rate": 0.3,
        "max_depth": 6,
        "min_child_weight": 1.0,
        "reg_lambda": 1.0,
        "subsample": 1.0,
    },
    "lambdarank-lgb": {
        "learning_rate": 0.1,
        "max_depth": 100,
        "num_leaves": 31,
        "min_child_weight": 1e-3,
        "reg_lambda": 0.0,
        "subsample": 1.0,
    },
}


def test_native_params_reach_the_boosters_under_their_own_names(tiny: Path) -> None:
    """TreeSettings.native_params: the shared settings under each library's names, the unset
    ones left out, and the booster trains at them; an unknown library is refused by name."""
    import lightgbm as lgb
    import xgboost as xgb

    trees = TreeSettings(learning_rate=0.3, max_depth=2, min_child_weight=None, n_jobs=1)
    xgb_params = trees.native_params("xgboost", seed=4)
    assert xgb_params == {
        "eta": 0.3,
        "max_depth": 2,
        "lambda": 1.0,
        "subsample": 1.0,
        "nthread": 1,
        "seed": 4,
    }
    train_split = load_dataset(str(tiny)).train
    dtrain = xgb.DMatrix(train_split.X, train_split.y, qid=train_split.qid)
    config = json.loads(xgb.train(xgb_params, dtrain, 1).save_config())["learner"]
    updater = config["gradient_booster"]["tree_train_param"]
    assert float(updater["eta"]) == pytest.approx(0.3)  # stored in single precision
    assert (int(updater["max_depth"]), config["generic_param"]["seed"]) == (2, "4")
    lgb_params = trees.native_params("lightgbm")
    assert lgb_params == {
        "learning_rate": 0.3,
        "max_depth": 2,
        "lambda_l2": 1.0,
        "bagging_fraction": 1.0,
        "num_threads": 1,
        "seed": 0,
    }
    booster = lgb.train(
        {**lgb_params, "objective": "lambdarank", "verbosity": -1},
        lgb.Dataset(train_split.X, train_split.y, group=train_split.group_sizes),
        1,
    )
    assert booster.params["max_depth"] == 2 and booster.params["learning_rate"] == 0.3
    with pytest.raises(ValueError, match=r"library must be one of .*'sklearn' is given"):
        trees.native_params("sklearn")


@pytest.mark.parametrize("name", list(_WRITTEN_DEFAULTS))
def test_library_default_trees_train_at_the_library_defaults(tiny: Path, name: str) -> None:
    """TreeSettings.library_defaults() passes no tree setting: the library's defaults, written
    out, train the same model (and the harness's own settings another one)."""
    data = load_dataset(str(tiny))
    fixed = {"rounds": 5, "early_stopping_rounds": 5, "n_jobs": 1}
    unset = TreeSettings.library_defaults(**fixed)
    assert all(getattr(unset, n) is None for n in _WRITTEN_DEFAULTS["lambdarank-lgb"])
    assert unset.booster_settings(seed=0, params={}).named() == {"n_threads": 1, "seed": 0}
    fit = train(name, data, k=3, seed=0, trees=unset)
    written = train(name, data, k=3, seed=0, trees=TreeSettings(**fixed, **_WRITTEN_DEFAULTS[name]))
    np.testing.assert_array_equal(fit.test_scores, written.test_scores)
    harness = train(name, data, k=3, seed=0, trees=TreeSettings(**fixed))
    assert not np.array_equal(fit.test_scores, harness.test_scores)
    assert TreeSettings.library_defaults(learning_rate=0.2).learning_rate == 0.2


def test_train_uses_the_backend_it_is_given(tiny: Path) -> None:
    calls = []

    class Recording(type(BACKENDS["lightgbm"])):
        def train(self, *args, **kwargs):
            calls.append(args[1].y.shape[0])
            return super().train(*args, **kwargs)

    data = load_dataset(str(tiny))
    fit = train("lambdarank-lgb", data, k=3, seed=0, trees=FAST, backend=Recording())
    assert calls == [data.train.y.shape[0]]
    plain = train("lambdarank-lgb", data, k=3, seed=0, trees=FAST)
    np.testing.assert_array_equal(fit.test_scores, plain.test_scores)


def test_watch_is_refused_for_the_package_objectives(tiny: Path) -> None:
    with pytest.raises(ValueError, match="'plrank-xgb' trains with the PL-Rank objective"):
        train(
            "plrank-xgb",
            load_dataset(str(tiny)),
            k=3,
            seed=0,
            trees=FAST,
            watch=RankingMetric("dcg", 3, "linear"),
        )


def test_unknown_method_name_lists_the_allowed(tiny: Path) -> None:
    with pytest.raises(ValueError, match="plrank-xgb, plrank-xgb-raw"):
        train("ranknet", load_dataset(str(tiny)), k=3, seed=0, trees=FAST, plrank=PLRankSettings())


# ------------------------------------------------------------------------------------------
# The loop: output files, resume, interruption
# ------------------------------------------------------------------------------------------
def read_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def test_comparison_writes_results_and_report(tmp_path: Path, tiny: Path) -> None:
    config = load_config(tiny_config(tmp_path, tiny, k="[3, 5]"))
    store = run_comparison(config, echo=lambda _: None)
    rows = read_rows(store.results_path)
    assert len(rows) == 2 * 2 * 2
    required = ["dataset", "method", "seed", "k", "ndcg", "ndcg_dataset", "best_round"]
    required.append("train_seconds")
    assert set(required) <= set(rows[0]) and list(rows[0]) == list(COLUMNS)
    assert {(r["method"], r["seed"], r["k"]) for r in rows} == {
        (m, s, k) for m in ("plrank-xgb", "lambdarank-lgb") for s in "01" for k in "35"
    }
    for r in rows:
        assert r["dataset"] == "tiny"
        assert 0 <= float(r["ndcg"]) <= 1 and 0 <= float(r["ndcg_dataset"]) <= 1
        assert 1 <= int(r["best_round"]) <= int(r["rounds_run"]) <= 4
        assert int(r["test_queries"]) == 10  # 2 of the 12 have no relevant document
    curves = store.curves()
    assert set(curves) == set(store.rows())
    text = write_report(config, store, plan(config).keys, command="gbdt-plrank x")
    out = Path(config.out)
    assert (out / "results.md").read_text() == text
    assert "## tiny, NDCG@3" in text and "## tiny, NDCG@5" in text
    assert "| plrank-xgb |" in text and "| lambdarank-lgb |" in text
    assert "Command: `gbdt-plrank x`" in text and "left out" in text
    assert (
        "; the PL-Rank methods on the validation expected NDCG@k of the policy of their "
        "standardised margins," in text
    )
    assert "The PL-Rank methods train at the cut-off 2k (k with fairness)." in text
    assert (out / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    ranking = config.model_copy(update={"plrank": PLRankSettings(stopping_metric="ranking")})
    other = markdown_report(ranking, store.rows(), store.queries(), plan(config).keys)
    assert "(early stopping on validation NDCG@k, patience" in other
    at = config.model_copy(update={"plrank": PLRankSettings(train_K=20)})
    text = markdown_report(at, store.rows(), store.queries(), plan(config).keys)
    assert "The PL-Rank methods train at the cut-off 20." in text
    assert "counted as none" not in text
    least = config.model_copy(
        update={"trees": config.trees.model_copy(update={"min_delta": 0.001})}
    )
    text = markdown_report(least, store.rows(), store.queries(), plan(config).keys)
    assert ", a gain of at most 0.001 counted as none, at most" in text


def test_report_without_matplotlib_says_so(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    path = write_config(
        tmp_path, f'datasets = ["mq2008"]\nmethods = ["plrank-xgb"]\nout = "{tmp_path}"'
    )
    config = load_config(path)
    text = write_report(config, ResultStore(config.out, settings={}), [])
    assert "curves.png is not drawn" in text and "gbdt_plrank[plot]" in text
    assert not (tmp_path / "curves.png").exists()


def test_rerun_trains_nothing_that_is_done(tmp_path: Path, tiny: Path, monkeypatch) -> None:
    config = load_config(tiny_config(tmp_path, tiny))
    run_comparison(config, echo=lambda _: None)
    before = Path(config.out, "results.csv").read_bytes()

    def no_training(*args, **kwargs):
        raise AssertionError("a finished training was run again")

    monkeypatch.setattr(runner_module, "train", no_training)
    messages: list[str] = []
    run_comparison(config, echo=messages.append)
    assert "0 of 4 trainings to run" in messages[-1]
    assert Path(config.out, "results.csv").read_bytes() == before


def test_interrupted_comparison_resumes(tmp_path: Path, tiny: Path, monkeypatch) -> None:
    config = load_config(tiny_config(tmp_path, tiny))
    real_train = runner_module.train
    calls: list[tuple[str, int]] = []

    def interrupted(name, data, **kwargs):
        if len(calls) == 3:
            raise KeyboardInterrupt
        calls.append((name, kwargs["seed"]))
        return real_train(name, data, **kwargs)

    monkeypatch.setattr(runner_module, "train", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run_comparison(config, echo=lambda _: None)
    assert len(read_rows(Path(config.out, "results.csv"))) == 3
    # A row cut short by the interruption is dropped on reopening and its training rerun.
    with Path(config.out, "results.csv").open("a") as fh:
        fh.write("tiny,lambdarank-lgb,1,3,0.5")

    resumed: list[tuple[str, int]] = []

    def counting(name, data, **kwargs):
        resumed.append((name, kwargs["seed"]))
        return real_train(name, data, **kwargs)

    monkeypatch.setattr(runner_module, "train", counting)
    run_comparison(config, echo=lambda _: None)
    assert resumed == [("lambdarank-lgb", 1)]
    rows = read_rows(Path(config.out, "results.csv"))
    assert len(rows) == 4
    assert len({(r["method"], r["seed"]) for r in rows}) == 4


def test_other_settings_are_not_mixed_into_a_folder(tmp_path: Path, tiny: Path) -> None:
    config = load_config(tiny_config(tmp_path, tiny, seeds="1", methods='["lambdarank-lgb"]'))
    run_comparison(config, echo=lambda _: None)
    changed = load_config(tiny_config(tmp_path, tiny), overrides={"trees.learning_rate": 0.1})
    with pytest.raises(ConfigError, match=r"other settings \(trees\.learning_rate differs\)"):
        run_comparison(changed, echo=lambda _: None)
    more_seeds = load_config(tiny_config(tmp_path, tiny, seeds="2", methods='["lambdarank-lgb"]'))
    messages: list[str] = []
    run_comparison(more_seeds, echo=messages.append)
    assert "1 of 2 trainings to run" in messages[-1]


def test_store_refuses_rows_without_every_column(tmp_path: Path) -> None:
    store = ResultStore(tmp_path, settings={})
    with pytest.raises(ValueError, match="lacks ndcg"):
        store.add({"dataset": "d", "method": "m", "seed": 0, "k": 5}, [0.5], {1: 0.5})


def test_settings_may_change_until_a_result_exists(tmp_path: Path) -> None:
    ResultStore(tmp_path, settings={"a": 1})
    store = ResultStore(tmp_path, settings={"a": 2})
    row = {c: (0 if t is int else 0.5 if t is float else "x") for c, t in COLUMNS.items()}
    store.add(row, [0.5], {1: 0.5})
    assert ResultStore(tmp_path, settings={"a": 2}).rows()
    with pytest.raises(ConfigError, match=r"other settings \(a differs\)"):
        ResultStore(tmp_path, settings={"a": 3})


def test_methods_of_a_missing_library_are_skipped(tmp_path: Path, tiny: Path, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "catboost", None)  # import catboost now fails
    methods = '["lambdarank-lgb", "yetirank-cb", "stochasticrank-cb"]'
    config = load_config(tiny_config(tmp_path, tiny, seeds="1", methods=methods))
    work = plan(config)
    assert set(work.skipped) == {"yetirank-cb", "stochasticrank-cb"}
    assert "pip install 'gbdt_plrank[catboost]'" in work.skipped["yetirank-cb"]
    messages: list[str] = []
    store = run_comparison(config, echo=messages.append)
    assert sum("skipped" in m and "catboost" in m for m in messages) == 2
    assert {key.method for key in store.rows()} == {"lambdarank-lgb"}


# ------------------------------------------------------------------------------------------
# The paired per-query statistics
# ------------------------------------------------------------------------------------------
def test_paired_statistics_by_hand() -> None:
    """d = 1, 2, 3, 4: t = 3.873 on 3 degrees of freedom; 2 of the 16 sign flips reach 2.5."""
    a = {q: float(q) for q in (1, 2, 3, 4)}
    r = paired(a, dict.fromkeys(a, 0.0))
    assert r.n == 4 and r.mean == pytest.approx(2.5)
    half = 3.182446305284263 * np.std([1, 2, 3, 4], ddof=1) / 2
    assert (r.low, r.high) == pytest.approx((2.5 - half, 2.5 + half))
    assert r.p_t == pytest.approx(0.030466, abs=1e-6)
    assert r.p_randomization == pytest.approx(2 / 16)  # exact: every sign pattern
    assert r.verdict == "level"  # the randomization test decides, not the t-test
    assert (
        r.interval
        == f"+2.5000 [{2.5 - half:+.4f}, {2.5 + half:+.4f}]"
        == "+2.5000 [+0.4457, +4.5543]"
    )


def test_paired_verdicts_and_shared_queries() -> None:
    rng = np.random.default_rng(0)
    base = {q: float(rng.uniform()) for q in range(200)}
    better = {q: v + 0.05 + rng.normal(0, 0.05) for q, v in base.items()}
    assert paired(better, base).verdict == "ahead"
    assert paired(base, better).verdict == "behind"
    same = {q: v + rng.normal(0, 0.05) for q, v in base.items()}
    assert paired(same, base).verdict == "level"
    assert paired({**better, 999: 5.0}, base).n == 200  # only shared queries are paired
    with pytest.raises(ValueError, match="at least 2 shared queries"):
        paired({1: 0.5}, {1: 0.4, 2: 0.3})


def test_seed_means_average_each_query_over_the_runs_that_scored_it() -> None:
    # Two seeds score ("f1", 7); one scores ("f2", 7): the same id in another fold is another query.
    means = seed_means([(("f1", 7), 0.25), (("f2", 7), 0.5), (("f1", 7), 0.75)])
    assert means == {("f1", 7): 0.5, ("f2", 7): 0.5}
    assert list(means) == [("f1", 7), ("f2", 7)]


def test_report_pools_folds_and_averages_seeds_per_query_first(tmp_path: Path) -> None:
    path = write_config(
        tmp_path,
        'datasets = ["mq2008"]\nmethods = ["plrank-xgb", "lambdamart-xgb"]\nfolds = [1, 2]\n'
        f"seeds = 2\nout = {str(tmp_path / 'o')!r}\n",
    )
    config = load_config(path)
    queries = {}
    for fold, ids in ((1, (10, 11)), (2, (20, 21))):
        for seed in (0, 1):
            queries[RunKey(f"mq2008/Fold{fold}", "lambdamart-xgb", seed, 5)] = dict.fromkeys(
                ids, 0.5
            )
            # plrank: +0.1 and +0.3 on the two seeds, so +0.2 per query once averaged
            queries[RunKey(f"mq2008/Fold{fold}", "plrank-xgb", seed, 5)] = dict.fromkeys(
                ids, 0.6 + 0.2 * seed
            )
    row = {c: (0 if t is int else 0.5 if t is float else "x") for c, t in COLUMNS.items()}
    rows = {key: {**row, **key._asdict()} for key in queries}
    text = markdown_report(config, rows, queries, list(queries))
    assert "| plrank-xgb | lambdamart-xgb | 4 | +0.2000 |" in text
    assert "| ahead |" not in text  # 4 queries: the randomization test cannot reach 0.05


def test_report_pairs_a_method_with_its_baseline_and_its_references(tmp_path: Path) -> None:
    methods = ["pirank-xgb", "plrank-xgb", "lambdamart-xgb"]
    path = write_config(
        tmp_path,
        f'datasets = ["mq2008"]\nmethods = {methods}\nseeds = 1\nout = {str(tmp_path)!r}\n',
    )
    level = {"lambdamart-xgb": 0.5, "plrank-xgb": 0.4, "pirank-xgb": 0.45}
    queries = {
        RunKey("mq2008/Fold1", m, 0, 5): {q: v + 0.01 * (q % 3) for q in range(9)}
        for m, v in level.items()
    }
    row = {c: (0 if t is int else 0.5 if t is float else "x") for c, t in COLUMNS.items()}
    rows = {key: {**row, **key._asdict()} for key in queries}
    text = markdown_report(load_config(path), rows, queries, list(queries))
    assert "| pirank-xgb | lambdamart-xgb | 9 | -0.0500 |" in text
    assert "| pirank-xgb | plrank-xgb | 9 | +0.0500 |" in text
    assert "| plrank-xgb | lambdamart-xgb | 9 | -0.1000 |" in text
    alone = load_config(path, overrides={"methods": ["pirank-xgb", "lambdamart-xgb"]})
    assert "| pirank-xgb | plrank-xgb |" not in markdown_report(alone, rows, queries, list(queries))


def test_store_keeps_per_query_values_of_finished_trainings(tmp_path: Path) -> None:
    store = ResultStore(tmp_path, settings={})
    row = {c: (0 if t is int else 0.5 if t is float else "x") for c, t in COLUMNS.items()}
    store.add(row, [0.5], {7: 0.25, 3: 1.0})
    (key,) = store.rows()
    # An interruption after the per-query line and before the row: that training is not done.
    with store.path("queries").open("a") as fh:
        fh.write('{"dataset": "x", "method": "x", "seed": 1, "k": 0, "qid": [1], "ndcg": [0.1]}\n')
        fh.write('{"dataset": "x", "method"')  # cut short
    reopened = ResultStore(tmp_path, settings={})
    assert reopened.queries() == {key: {3: 1.0, 7: 0.25}}
    assert reopened.path("queries").read_text().endswith("\n")


class _Key(NamedTuple):
    name: str
    weight: float
    seed: int


def test_a_store_holds_in_memory_what_a_resumed_run_reads(tmp_path: Path) -> None:
    """One store class for every experiment: its tables' records by typed key, the last one per
    key, a table written ``after`` another counting only the keys the other holds, a line cut
    short dropped; what it holds after an append is what reopening the folder reads."""
    tables = {
        "done": Table("done.jsonl", _Key),
        "parts": Table("parts.jsonl", _Key, after="done"),
    }
    store = ResultStore(tmp_path, settings={"a": 1}, tables=tables)
    assert store.results_path == tmp_path / "done.jsonl"
    store.append("parts", {"name": "x", "weight": 1, "seed": 0, "v": (1, 2)})
    assert dict(store.records("parts")) == {}  # not finished yet
    store.append("done", {"name": "x", "weight": 1, "seed": 0, "v": 1})
    store.append("done", {"name": "x", "weight": 1.0, "seed": 0, "v": 2})
    store.append("parts", {"name": "y", "weight": 0, "seed": 1, "v": [3]})  # not finished
    with store.path("parts").open("a") as fh:
        fh.write('{"name": "z", "weight"')  # cut short by an interruption
    key = _Key("x", 1.0, 0)
    expected = {
        "done": {key: {"name": "x", "weight": 1.0, "seed": 0, "v": 2}},
        "parts": {key: {"name": "x", "weight": 1, "seed": 0, "v": [1, 2]}},
    }
    assert {name: dict(store.records(name)) for name in tables} == expected
    reopened = ResultStore(tmp_path, settings={"a": 1}, tables=tables)
    assert {name: dict(reopened.records(name)) for name in tables} == expected
    assert type(next(iter(reopened.records("done")))) is _Key
    assert reopened.path("parts").read_text().endswith("\n")
    with pytest.raises(ConfigError, match=r"other settings \(a differs\)"):
        ResultStore(tmp_path, settings={"a": 2}, tables=tables)
    name = store.save_array("arrays/x.npy", [1, 2.5])
    np.testing.assert_array_equal(reopened.load_array(name), [1.0, 2.5])
    assert not list((tmp_path / "arrays").glob("*.partial.npy"))


class _LaterKey(NamedTuple):
    name: str
    part: int = 0  # a field added to the key after records were written


def test_a_key_field_a_record_lacks_reads_as_its_default(tmp_path: Path) -> None:
    """A record written before its table's key gained a field is that field's default's: the
    clicks experiment's off-policy lines from before they named their test log are log 0."""
    (tmp_path / "t.jsonl").write_text('{"name": "a", "v": 1}\n{"name": "a", "part": 2, "v": 3}\n')
    store = ResultStore(tmp_path, settings={}, tables={"t": Table("t.jsonl", _LaterKey)})
    assert dict(store.records("t")) == {
        _LaterKey("a", 0): {"name": "a", "v": 1},
        _LaterKey("a", 2): {"name": "a", "part": 2, "v": 3},
    }
    with pytest.raises(KeyError):  # a field without a default is still required
        Table("t.jsonl", _Key).key_of({"name": "a", "weight": 1.0})


def test_the_store_reads_the_files_of_earlier_runs(tmp_path: Path) -> None:
    """Folders written before the experiments shared one store class resume: the frontier's and
    the clicks experiment's lines, as their own stores wrote them, are read by typed key."""
    frontier = tmp_path / "frontier"
    (frontier / "margins").mkdir(parents=True)
    np.save(frontier / "margins" / "d__plrank__w0__s0.vali.npy", np.array([0.5, -0.5]))
    (frontier / "trainings.jsonl").write_text(
        '{"dataset": "d", "curve": "plrank", "weight": 0.0, "seed": 0, "best_round": 3, '
        '"rounds_run": 5, "train_seconds": 0.1, "scale": 0.5, '
        '"margins": {"vali": "margins/d__plrank__w0__s0.vali.npy"}}\n'
    )
    (frontier / "evaluations.jsonl").write_text(
        '{"dataset": "d", "curve": "oracle", "weight": 0.0, "temperature": 0.0, "offset": 0.0, '
        '"split": "test", "seed": 0, "qid": [1], "ndcg": [1.0], "ee_l": [0.0], '
        '"disparity": [0.0], "group_disparity": null, "mc_mean": null, "mc_var": null, '
        '"n_samples": 0}\n'
    )
    (frontier / "settings.json").write_text('{"k": 10}\n')
    store = ResultStore(frontier, settings={"k": 10}, tables=frontier_run.TABLES)
    key = frontier_run.TrainingKey("d", "plrank", 0.0, 0)
    assert list(store.records("trainings")) == [key]
    np.testing.assert_array_equal(frontier_run.stored_margins(store, key, "vali"), [0.5, -0.5])
    assert list(store.records("evaluations")) == [
        frontier_run.EvalKey("d", "oracle", 0.0, 0.0, 0.0, "test", 0)
    ]
    clicks = tmp_path / "clicks"
    clicks.mkdir()
    (clicks / "results.jsonl").write_text(
        '{"dataset": "d", "learner": "logger", "sessions": 0, "seed": 0, "qid": [1], '
        '"ndcg": {"5": [0.5]}, "best_round": 5, "seconds": 0.0}\n'
    )
    (clicks / "settings.json").write_text('{"top_k": 5}\n')
    store = ResultStore(clicks, settings={"top_k": 5}, tables=clicks_run.TABLES)
    assert list(store.records("results")) == [clicks_run.ResultKey("d", "logger", 0, 0)]
    with pytest.raises(ConfigError, match=r"other settings \(top_k differs\)"):
        ResultStore(clicks, settings={"top_k": 3}, tables=clicks_run.TABLES)


def test_every_training_stores_its_per_query_test_ndcg(tmp_path: Path, tiny: Path) -> None:
    config = load_config(tiny_config(tmp_path, tiny, seeds="1"))
    store = run_comparison(config, echo=lambda _: None)
    test = load_dataset(str(tiny)).test
    relevant = {int(q) for q in np.unique(test.qid) if test.y[test.qid == q].max() > 0}
    for key, row in store.rows().items():
        per_query = store.queries()[key]
        assert set(per_query) == relevant
        assert np.mean(list(per_query.values())) == pytest.approx(row["ndcg"])


# ------------------------------------------------------------------------------------------
# One run at a time per output folder
# ------------------------------------------------------------------------------------------
def _frontier_config(tmp_path: Path, tiny: Path):
    path = write_config(
        tmp_path,
        f"datasets = [{str(tiny)!r}]\nk = 3\nout = {str(tmp_path / 'out')!r}\n",
        name="fair.toml",
    )
    return load_frontier_config(path)


def _clicks_config(tmp_path: Path, tiny: Path):
    return load_clicks_config(
        CONFIGS / "clicks-tiny.toml",
        overrides={"datasets": [str(tiny)], "out": str(tmp_path / "out")},
    )


def test_clicks_policy_propensities_count_every_logged_display(tmp_path: Path, tiny: Path) -> None:
    """The logger's Monte-Carlo propensities from one ranking per query miss rows that its log
    shows clicked (as 1000 rankings of a sharp logger did on MQ2008 Fold2): the rewards on the
    logger's propensities, doubly robust included, and the off-policy table pool the sampled
    rankings with the log's displays and are finite rather than refused."""
    config = load_clicks_config(
        CONFIGS / "clicks-tiny.toml",
        overrides={
            "datasets": [str(tiny)],
            "out": str(tmp_path / "out"),
            "sessions": [20],
            "propensity_samples": 1,
        },
    )
    data = load(str(tiny), 1, drop_empty_test_queries=True)
    fold = clicks_run._Fold(config, data, 0)
    logs = fold.logs(True, 20)
    theta = clicks_run._theta(config, logs["train"], data.train, stochastic=True)
    sampled = fold.propensities(data.train, theta, n_samples=1)
    assert sampled["propensity_samples"] == 1
    clicks = np.bincount(
        logs["train"].row, weights=logs["train"].click, minlength=data.train.y.size
    )
    assert ((clicks > 0) & (sampled["propensities"] == 0)).any()  # what crashed
    for estimator in ("policy-aware", "doubly-robust"):
        rewards = fold.rewards(logs, estimator=estimator, policy=True, stochastic=True)
        assert all(np.isfinite(rewards[name]).all() for name in ("train", "vali"))
    _, ope = fold.run(clicks_run.ResultKey("tiny", "logger", 0, 0))
    assert [line["estimator"] for line in ope] == ["policy-aware", "doubly-robust"]
    assert all(np.isfinite(line["value"]) and line["stderr"] > 0 for line in ope)


@pytest.mark.parametrize("shrinkage", [0.0, 2.0])
def test_clicks_doubly_robust_learner_trains_on_the_configured_shrinkage(
    tmp_path: Path, tiny: Path, shrinkage: float
) -> None:
    """``shrinkage`` reaches the doubly robust rewards: shrunk, on the display frequencies
    (``propensities = "logged"``); unshrunk, on the logger's propensities (the display
    frequencies would make them the policy-aware rewards on every shown row). Either way the
    learner stops on the policy-aware validation rewards."""
    config = load_clicks_config(
        CONFIGS / "clicks-tiny.toml",
        overrides={
            "datasets": [str(tiny)],
            "out": str(tmp_path / "out"),
            "sessions": [10],
            "shrinkage": shrinkage,
        },
    )
    data = load(str(tiny), 1, drop_empty_test_queries=True)
    fold = clicks_run._Fold(config, data, 0)
    logs = fold.logs(True, 10)
    theta = clicks_run._theta(config, logs["train"], data.train, stochastic=True)
    rho = fold.propensities(data.train, theta, n_samples=config.propensity_samples)
    r = fold.learner_rewards("plrank-doubly-robust", logs, stochastic=True)
    expected = click_rewards(
        logs["train"],
        data.train.y.size,
        position_bias=theta,
        estimator="doubly-robust",
        qid=data.train.qid,
        X=data.train.X,
        seed=0,
        shrinkage=shrinkage,
        **({} if shrinkage else rho),
    )
    np.testing.assert_array_equal(r["train"], expected)
    pa = fold.learner_rewards("plrank-policy-aware", logs, stochastic=True)
    np.testing.assert_array_equal(r["vali"], pa["vali"])
    assert not np.array_equal(r["train"], pa["train"])


def _deterministic_config(tmp_path: Path, tiny: Path, **overrides):
    return load_clicks_config(
        CONFIGS / "clicks-tiny.toml",
        overrides={
            "datasets": [str(tiny)],
            "out": str(tmp_path / "out"),
            "logger": "lambdamart",
            "exploration_rounds": 0,
            "ope_sessions": 0,
            "position_bias": "estimate",
            "learners": [
                "plrank-policy-aware",
                "plrank-regression",
                "plrank-naive",
                "lambdarank-position-lgb",
            ],
            **overrides,
        },
    )


@pytest.fixture(scope="module")
def tiny_deep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """MQ2008 Fold1's first 200 training queries: a deterministic logger's log of them
    identifies the position bias through the features (the 24 of ``tiny`` are too few)."""
    return write_tiny_letor(tmp_path_factory.mktemp("data") / "tiny", queries=(200, 12, 12))


@pytest.mark.parametrize("display", ["top-k", "full"])
def test_clicks_from_a_deterministic_lambdamart_logger(
    tmp_path: Path, tiny_deep: Path, display: str
) -> None:
    """logger = "lambdamart": an XGBRanker shows its ranking by score in every session (its top
    top_k, or every document), every learner reads that log, the position bias is estimated
    through the features (a log that identifies it no other way), and every record carries the
    validation queries' NDCG the routes are chosen on."""
    import xgboost

    tiny = tiny_deep
    config = _deterministic_config(tmp_path, tiny, display=display, sessions=[20])
    data = load(str(tiny), 1, drop_empty_test_queries=True)
    fold = clicks_run._Fold(config, data, 0)
    assert isinstance(fold.logger, xgboost.XGBRanker) and not fold.stochastic
    logs = fold.logs(False, 20)
    log, split = logs["train"], data.train
    order = clicks_run.top_k_rankings(
        fold.logger.predict(split.X), split, k=config.top_k if display == "top-k" else None, n=1
    )
    shown = np.concatenate([o[0] for o in order])
    assert set(log.row.tolist()) == set(shown.tolist())
    for r in np.unique(log.row):  # every session shows a row at the same rank
        assert np.unique(log.rank[log.row == r]).size == 1
    if display == "full":
        assert set(log.row.tolist()) == set(range(split.y.size))
    theta = fold.theta(logs, stochastic=False)
    np.testing.assert_array_equal(theta, estimate_position_bias(log, X=split.X, qid=split.qid))
    assert fold.theta(logs, stochastic=False) is theta  # estimated once per log
    record, ope = fold.run(clicks_run.ResultKey("tiny", "plrank-regression", 20, 0))
    assert ope == [] and set(record["vali_ndcg"]) == {"5", "10"}
    assert record["vali_qid"] == [int(q) for q in np.unique(data.vali.qid)]
    record, _ = fold.run(clicks_run.ResultKey("tiny", "lambdarank-position-lgb", 20, 0))
    assert len(record["vali_ndcg"]["5"]) == len(record["vali_qid"])


@pytest.mark.parametrize(
    ("key", "value", "rule"),
    [
        ("learners", ["plrank-deterministic"], "learners must not hold 'plrank-deterministic'"),
        ("exploration_rounds", 1, "exploration_rounds must be 0"),
        (
            "ope_sessions",
            10,
            "ope_sessions must be 0 (a deterministic logger never shows the rows below its display",
        ),
    ],
)
def test_a_deterministic_logger_refuses_what_needs_a_stochastic_one(
    tmp_path: Path, tiny: Path, key, value, rule
) -> None:
    with pytest.raises(ConfigError, match=re.escape(rule)):
        _deterministic_config(tmp_path, tiny, **{key: value})


def test_clicks_placement_propensities_are_the_loggers_placement_exposure(
    tmp_path: Path, tiny: Path
) -> None:
    """propensities = "placement": the policy-aware rewards divide by the logger's placement
    probabilities, taken as they are (no pooling), and the off-policy table reads them."""
    config = load_clicks_config(
        CONFIGS / "clicks-tiny.toml",
        overrides={
            "datasets": [str(tiny)],
            "out": str(tmp_path / "out"),
            "sessions": [10],
            "propensities": "placement",
            "propensity_samples": 50,
        },
    )
    assert config.settings()["propensities"] == "placement"
    data = load(str(tiny), 1, drop_empty_test_queries=True)
    fold = clicks_run._Fold(config, data, 0)
    logs = fold.logs(True, 10)
    theta = fold.theta(logs, stochastic=True)
    rho = fold.propensities(data.train, theta, n_samples=50)
    assert set(rho) == {"propensities"} and (rho["propensities"] > 0).all()
    np.testing.assert_array_equal(
        rho["propensities"],
        fold.logger.expected_exposure(
            data.train.X,
            data.train.qid,
            n_samples=50,
            weights=theta,
            random_state=clicks_run._PROPENSITY_SEED,
            method="placement",
        ),
    )
    r = fold.learner_rewards("plrank-policy-aware", logs, stochastic=True)
    np.testing.assert_array_equal(
        r["train"],
        click_rewards(
            logs["train"], data.train.y.size, position_bias=theta, qid=data.train.qid, **rho
        ),
    )
    _, ope = fold.run(clicks_run.ResultKey("tiny", "logger", 0, 0))
    assert all(np.isfinite(line["value"]) and line["stderr"] > 0 for line in ope)


def test_clicks_shrinkage_is_a_setting_and_named_when_bad(tmp_path: Path, tiny: Path) -> None:
    base = {"datasets": [str(tiny)], "out": str(tmp_path / "out")}
    config = load_clicks_config(CONFIGS / "clicks-tiny.toml", overrides=base)
    assert config.settings()["shrinkage"] == 0.0
    with pytest.raises(ConfigError, match="shrinkage"):
        load_clicks_config(CONFIGS / "clicks-tiny.toml", overrides={**base, "shrinkage": -1})


@pytest.mark.parametrize(
    ("run", "configure"),
    [
        (run_comparison, lambda tmp_path, tiny: load_config(tiny_config(tmp_path, tiny))),
        (run_frontier, _frontier_config),
        (run_clicks, _clicks_config),
    ],
    ids=["compare", "fairness", "clicks"],
)
def test_a_second_run_on_a_folder_in_use_is_refused(
    tmp_path: Path, tiny: Path, run, configure
) -> None:
    config = configure(tmp_path, tiny)
    with locked_folder(config.out) as folder:
        with pytest.raises(FolderInUseError) as info:
            run(config, echo=lambda _: None)
        assert f"{folder} is in use by another run (process {os.getpid()}" in str(info.value)
        assert "choose another output folder (--out)" in str(info.value)
        assert sorted(p.name for p in folder.iterdir()) == [LOCK_FILE]  # nothing written


def test_the_lock_is_released_however_the_run_ends(tmp_path: Path) -> None:
    with pytest.raises(KeyboardInterrupt), locked_folder(tmp_path):
        raise KeyboardInterrupt
    with locked_folder(tmp_path), pytest.raises(FolderInUseError):
        with locked_folder(tmp_path):
            pass
    with locked_folder(tmp_path) as folder:  # free again
        assert (folder / LOCK_FILE).read_text() == f"{os.getpid()}\n"


def test_a_run_in_another_process_holds_the_folder_until_it_dies(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from gbdt_plrank.harness.store import locked_folder\n"
            f"with locked_folder({str(tmp_path)!r}):\n    print('held', flush=True)\n"
            "    sys.stdin.read()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
    )
    try:
        assert holder.stdout.readline() == "held\n"
        with pytest.raises(FolderInUseError, match=f"process {holder.pid}, lock file"):
            with locked_folder(tmp_path):
                pass
    finally:
        holder.kill()  # dies holding the lock: the operating system releases it
        holder.wait()
    with locked_folder(tmp_path):
        pass


# ------------------------------------------------------------------------------------------
# Native parameters the library refuses
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("method", "params", "message"),
    [
        (
            "lambdamart-xgb",
            {"max_depth": 3, "eta": "fast"},
            "lambdamart-xgb's native parameter eta = 'fast' is refused by xgboost: Some trailing",
        ),
        (
            "plrank-xgb",
            {"max_depth": "deep"},
            "plrank-xgb's native parameter max_depth = 'deep' is refused by xgboost: Invalid",
        ),
        (
            "lambdarank-lgb",
            {"num_leaves": -3},
            "lambdarank-lgb's native parameter num_leaves = -3 is refused by lightgbm: "
            "Check failed",
        ),
        (
            "plrank-lgb",
            {"min_data_in_leaf": 2, "learning_rate": "fast"},
            "plrank-lgb's native parameter learning_rate = 'fast' is refused by lightgbm",
        ),
    ],
)
def test_a_refused_native_parameter_is_named(
    tiny: Path, method: str, params: dict, message: str
) -> None:
    pytest.importorskip(METHODS[method].library)
    data = load(str(tiny), 1, drop_empty_test_queries=False)
    trees = TreeSettings(rounds=2, n_jobs=1)
    with pytest.raises(ConfigError) as info:
        train(method, data, k=3, seed=0, trees=trees, params=params)
    assert message in str(info.value)


def test_a_failure_no_parameter_explains_is_not_blamed_on_one(tiny: Path, monkeypatch) -> None:
    xgboost = pytest.importorskip("xgboost")
    data = load(str(tiny), 1, drop_empty_test_queries=False)
    method = METHODS["lambdamart-xgb"]
    failure = xgboost.core.XGBoostError("out of memory")
    assert _refused_param(method, {"eta": 0.1, "max_depth": 3}, data.train, failure) is None
    key, why = _refused_param(method, {"eta": 0.1, "max_depth": "deep"}, data.train, failure)
    assert key == "max_depth" and "expect int" in why
    # an error of the package's own, or of a callback, is never blamed on a parameter
    assert _refused_param(method, {"max_depth": "deep"}, data.train, KeyError("x")) is None
    # a failure of the backend layer itself, whatever the parameters, is not blamed on one
    backend = BACKENDS["xgboost"]

    def broken(*args, **kwargs):
        raise TypeError("a bug")

    monkeypatch.setattr(backend, "train", broken)
    assert _refused_param(method, {"eta": 0.1}, data.train, TypeError("a bug")) is None


def test_the_plrank_tables_hessian_reaches_the_plrank_methods_and_ablations_keep_theirs() -> None:
    """``[plrank] hessian`` is what plrank-xgb and plrank-lgb train with (it was overridden by the
    default "abs", silently); the ablations keep the mode that defines them."""
    from gbdt_plrank.harness.settings import method_options, objective_settings

    settings = objective_settings(PLRankSettings(hessian="denoised"))
    chosen = {
        name: method_options(METHODS[name], settings, None, k=5).hessian
        for name in ("plrank-xgb", "plrank-lgb", "plrank-xgb-raw", "plrank-xgb-nohess")
    }
    assert chosen == {
        "plrank-xgb": "denoised",
        "plrank-lgb": "denoised",
        "plrank-xgb-raw": "raw",
        "plrank-xgb-nohess": "constant",
    }
    default = method_options(METHODS["plrank-xgb"], objective_settings(), None, k=5)
    assert (default.hessian, default.training_hessian) == ("auto", "denoised")
