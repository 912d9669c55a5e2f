"""The tuner: search spaces, studies on the tiny data, resume, pruning, budgets, outputs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from types import MappingProxyType

import pytest
from tiny_ltr import write_tiny_letor

optuna = pytest.importorskip("optuna")
pytest.importorskip("optuna_integration")

from gbdt_plrank._backends import BACKENDS  # noqa: E402
from gbdt_plrank.cli import _tune_command as command  # noqa: E402
from gbdt_plrank.harness import (  # noqa: E402
    METHODS,
    ConfigError,
    PLRankSettings,
    TreeSettings,
    load_config,
    read_params,
    run_comparison,
)
from gbdt_plrank.harness.methods import OWN_OBJECTIVES, PIRANK, PLRANK  # noqa: E402
from gbdt_plrank.tuning import (  # noqa: E402
    Choice,
    Range,
    SearchSpace,
    load_spaces,
    objective,
    output,
    tune,
)
from gbdt_plrank.tuning.study import Budget  # noqa: E402

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
FAST = TreeSettings(rounds=6, early_stopping_rounds=3, n_jobs=1)
PL = PLRankSettings(N=10)
COMPLETE, PRUNED, FAIL, RUNNING = (
    optuna.trial.TrialState.COMPLETE,
    optuna.trial.TrialState.PRUNED,
    optuna.trial.TrialState.FAIL,
    optuna.trial.TrialState.RUNNING,
)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(write_tiny_letor(tmp_path_factory.mktemp("data") / "tiny"))


def quick(tiny: str, out: Path, method: str = "lambdarank-lgb", **options) -> optuna.Study:
    """A few trials on the tiny data, without pruning unless asked, quietly."""
    given = {
        "k": 3,
        "trials": 3,
        "out": out,
        "trees": FAST,
        "plrank": PL,
        "pruner": optuna.pruners.NopPruner(),
        "echo": lambda _: None,
        **options,
    }
    return tune(tiny, method, **given)


def states(study: optuna.Study) -> list[str]:
    return [t.state.name for t in study.get_trials(deepcopy=False)]


def write(folder: Path, text: str, name: str = "space.toml") -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


# ------------------------------------------------------------------------------------------
# Search spaces
# ------------------------------------------------------------------------------------------
def test_default_spaces_cover_every_method() -> None:
    spaces = load_spaces()
    assert list(spaces) == list(METHODS)
    required = {PLRANK: {"plrank.N", "plrank.metric"}, PIRANK: {"pirank.tau", "pirank.hessian"}}
    for name, space in spaces.items():
        for kind in OWN_OBJECTIVES:
            options = {n for n in space.entries if n.startswith(f"{kind}.")}
            assert required[kind] <= options if METHODS[name].objective == kind else not options
    assert spaces["plrank-xgb"].entries["plrank.hessian"] == Choice(
        choices=("denoised", "abs", "clip")
    )
    assert spaces["pirank-lgb"].entries["pirank.tau"] == Range(low=0.1, high=100.0, log=True)
    assert spaces["pirank-xgb"].entries["pirank.hessian"] == Choice(
        choices=("clip", "abs", "constant")
    )
    assert "plrank.hessian" not in spaces["plrank-xgb-raw"].entries  # its identity
    # The paper's XGBoost space, widened: every range holds the paper's.
    paper = {"eta": (1e-3, 1e-2), "max_depth": (3, 8), "min_child_weight": (2, 10)}
    paper |= {name: (1e-8, 1.0) for name in ("gamma", "lambda", "alpha")}
    for name, (low, high) in paper.items():
        entry = spaces["lambdamart-xgb"].entries[name]
        assert isinstance(entry, Range) and entry.low <= low and entry.high >= high
    assert spaces["xendcg-lgb"].entries["bagging_freq"] == 1  # bagging takes effect
    for name, space in spaces.items():  # nothing the harness sets itself
        assert not set(space.entries) & BACKENDS[METHODS[name].library].reserved


def test_shipped_space_files_load() -> None:
    spaces = load_spaces(CONFIGS / "spaces" / "paper.toml")
    assert spaces["plrank-xgb-raw"].entries["plrank.N"] == 200
    assert spaces["plrank-xgb-raw"].entries["eta"] == Range(low=1e-3, high=1e-2, log=True)
    assert spaces["lambdarank-lgb"] == load_spaces()["lambdarank-lgb"]


def test_a_users_file_changes_entries_key_by_key(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "[xgboost]\neta = 0.1\n[plrank]\nmetric = 'dcg'\ngain = 'linear'\n"
        "[plrank-xgb]\nmax_depth = { low = 2, high = 4 }\n"
        "plrank.hessian = { choices = ['clip'] }\n",
    )
    spaces, defaults = load_spaces(path), load_spaces()
    xgb = spaces["plrank-xgb"].entries
    assert xgb["eta"] == 0.1 and xgb["max_depth"] == Range(low=2, high=4)
    assert xgb["plrank.metric"] == "dcg" and xgb["plrank.gain"] == "linear"
    assert xgb["plrank.hessian"] == Choice(choices=("clip",))
    assert xgb["gamma"] == defaults["plrank-xgb"].entries["gamma"]
    assert spaces["lambdamart-xgb"].entries["max_depth"] == Range(low=3, high=10)
    assert spaces["lambdamart-xgb"].entries["eta"] == 0.1
    assert spaces["plrank-lgb"].entries["plrank.metric"] == "dcg"


def test_a_users_file_changes_the_pirank_options(tmp_path: Path) -> None:
    path = write(tmp_path, "[pirank]\ntau = 0.5\n[pirank-lgb]\npirank.hessian = 'abs'\n")
    spaces, defaults = load_spaces(path), load_spaces()
    assert spaces["pirank-xgb"].entries["pirank.tau"] == 0.5
    assert (
        spaces["pirank-xgb"].entries["pirank.hessian"]
        == defaults["pirank-xgb"].entries["pirank.hessian"]
    )
    assert spaces["pirank-lgb"].entries["pirank.hessian"] == "abs"
    assert spaces["plrank-lgb"] == defaults["plrank-lgb"]


def test_a_space_suggests_what_train_takes() -> None:
    space = SearchSpace(
        "plrank-lgb",
        {
            "learning_rate": Range(low=0.01, high=0.1, log=True),
            "num_leaves": Range(low=2, high=8),
            "bagging_fraction": Range(low=0.5, high=1.0, step=0.25),
            "bagging_freq": 1,
            "plrank.N": Choice(choices=(10, 20)),
            "plrank.hessian": "clip",
        },
    )
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    params = space.suggest(study.ask())
    assert set(params) == {
        "learning_rate",
        "num_leaves",
        "bagging_fraction",
        "bagging_freq",
        "plrank",
    }
    assert 0.01 <= params["learning_rate"] <= 0.1 and isinstance(params["num_leaves"], int)
    assert params["bagging_fraction"] in (0.5, 0.75, 1.0) and params["bagging_freq"] == 1
    assert params["plrank"]["N"] in (10, 20) and params["plrank"]["hessian"] == "clip"
    space = SearchSpace(
        "pirank-xgb",
        {"eta": 0.1, "pirank.tau": Range(low=0.1, high=10.0, log=True), "pirank.hessian": "abs"},
    )
    params = space.suggest(study.ask())
    assert set(params) == {"eta", "pirank"} and params["pirank"]["hessian"] == "abs"
    assert 0.1 <= params["pirank"]["tau"] <= 10.0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[ranknet]\neta = 0.1", "unknown table [ranknet]"),
        ("[xgboost]\ncolour = 0.1", "unknown parameter 'colour' in [xgboost]"),
        ("[plrank-xgb]\netaa = 0.1", "unknown parameter 'etaa' in [plrank-xgb]"),
        ("[plrank]\nK = 3", "unknown key 'plrank.K'"),
        ("[plrank-xgb]\nplrank.colour = 3", "unknown key 'plrank-xgb.plrank.colour'"),
        ("[lambdamart-xgb]\nplrank.N = 3", "'lambdamart-xgb' is not a PL-Rank method"),
        ("[xgboost]\neta = { low = 0.3, high = 0.1 }", "xgboost.eta must have numbers low < high"),
        ("[xgboost]\neta = { low = 0.1, high = 0.1 }", "low=0.1, high=0.1 is given"),
        ("[xgboost]\neta = { low = 0.1 }", "xgboost.eta must set 'high'"),
        ("[xgboost]\neta = { low = 0, high = 1, log = true }", "low > 0 on a log scale"),
        ("[xgboost]\neta = { low = 0.1, high = 1, log = true, step = 0.1 }", "both log and step"),
        ("[xgboost]\neta = { low = 0.1, high = 1, step = -1 }", "step must be a number > 0"),
        (
            "[xgboost]\neta = { lo = 0.1, high = 1 }",
            "unknown key 'xgboost.eta.lo' in the space file; allowed at [xgboost.eta]: low, high",
        ),
        ("[xgboost]\neta = { choices = [] }", "choices must be a non-empty list"),
        ("[xgboost]\neta = { choices = [1, 1] }", "but [1, 1] is given (1 is repeated)"),
        (
            "[xgboost]\neta = { choices = [1], low = 0 }",
            "unknown key 'xgboost.eta.low' in the space file; allowed at [xgboost.eta]: choices",
        ),
        ("[xgboost]\neta = [0.1]", "xgboost.eta must be a value, a range"),
        (
            "[plrank]\nN = { low = 0, high = 10 }",
            'plrank.N must be "auto" or an integer >= 1, but 0',
        ),
        ("[plrank-xgb]\nplrank.hessian = { choices = ['abs', 'cubic'] }", "but 'cubic' is given"),
        ("[plrank]\nmetric = 'ndgc'", "plrank.metric must be one of 'ndcg', 'dcg'"),
        (
            "[pirank]\ntau = { low = 0.0, high = 1.0 }",
            "pirank.tau must be a finite number > 0, but 0.0",
        ),
        ("[pirank]\ntau = -1.0", "pirank.tau must be a finite number > 0, but -1.0 is given"),
        ("[pirank]\ntau = inf", "pirank.tau must be a finite number > 0, but inf is given"),
        ("[pirank]\nN = 3", "unknown key 'pirank.N'"),
        ("[pirank-xgb]\npirank.hessian = { choices = ['clip', 'cubic'] }", "but 'cubic' is given"),
        ("[pirank-xgb]\nplrank.N = 3", "'pirank-xgb' is not a PL-Rank method"),
        ("[plrank-lgb]\npirank.tau = 3.0", "'plrank-lgb' is not a PiRank method"),
        ("[pirank-lgb]\npirank = 3", "pirank-lgb.pirank must be a table of PiRank options"),
        ("[xgboost\n", "is not valid TOML"),
    ],
)
def test_space_errors_name_the_file_the_value_and_the_rule(
    tmp_path: Path, text: str, message: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_spaces(path)
    assert message in str(info.value) and str(path) in str(info.value)


def test_a_missing_space_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such search space file"):
        load_spaces(tmp_path / "nope.toml")


# ------------------------------------------------------------------------------------------
# Bad arguments
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"method": "ranknet"}, "method must be one of plrank-xgb, "),
        ({"trials": 0}, "trials must be an integer >= 1, but 0 is given"),
        ({"trials": 2.5}, "trials must be an integer >= 1, but 2.5 is given"),
        ({"trials": None}, "a budget is required"),
        ({"timeout": -1.0}, "timeout must be a number of seconds > 0, but -1.0"),
        ({"k": 0}, "k must be an integer >= 1, but 0 is given"),
        ({"seed": -1}, "seed must be an integer >= 0"),
        ({"data": "no/such/folder"}, "'no/such/folder' is neither"),
        ({"space": SearchSpace("plrank-xgb", {})}, "space must be 'lambdarank-lgb''s"),
        ({"storage": "tune.db"}, "storage must be an Optuna storage URL such as"),
    ],
)
def test_bad_arguments_are_clear_errors(tmp_path: Path, tiny: str, options, message) -> None:
    args = {"data": tiny, "method": "lambdarank-lgb", "trials": 3, **options}
    data, method = args.pop("data"), args.pop("method")
    with pytest.raises(ConfigError) as info:
        tune(data, method, out=tmp_path, **args)
    assert message in str(info.value)
    assert not (tmp_path / "optuna.db").exists()


# ------------------------------------------------------------------------------------------
# A tiny study and its outputs
# ------------------------------------------------------------------------------------------
def test_tiny_study_writes_best_params_plots_and_summary(tmp_path: Path, tiny: str) -> None:
    printed: list[str] = []
    study = quick(tiny, tmp_path, "plrank-lgb", trials=4, echo=printed.append)
    assert states(study) == ["COMPLETE"] * 4
    assert study.study_name == "plrank-lgb" and (tmp_path / "optuna.db").is_file()
    best = study.best_trial
    assert 0 < best.value <= 1 and 1 <= best.user_attrs["best_round"] <= FAST.rounds
    params = read_params(tmp_path / "best_params.toml")
    comments = (tmp_path / "best_params.toml").read_text().split("\n\n")[0]
    assert f"# plrank-lgb: best validation NDCG@3 {best.value:.4f}" in comments
    assert list(params) == ["plrank-lgb"]
    written = {k: dict(v) if k == PLRANK else v for k, v in params["plrank-lgb"].items()}
    assert written == best.user_attrs["params"]
    assert written[PLRANK]["hessian"] in ("denoised", "abs", "clip")
    assert written["bagging_freq"] == 1
    for name in ("history.png", "importances.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    text = "\n".join(printed)
    assert "plrank-lgb: 4 trial(s) left on tiny, NDCG@3" in text
    assert f"best validation NDCG@3 {best.value:.4f} (trial {best.number}" in text
    assert "plrank.N = " in text and "learning_rate = " in text and "best_params.toml" in text


def test_toml_tables_read_back_as_written() -> None:
    tomllib = pytest.importorskip("tomllib")
    tables = {
        "plrank-xgb": {
            "eta": 1e-05,
            "max_depth": 6,
            "flag": True,
            "name": 'a "b"\n',
            "odd key": 1.5e300,
            "plrank": {"N": 7, "metric": "dcg"},
        },
        "lambdarank-lgb": {"lambda_l1": 0.1},
    }
    assert tomllib.loads(output.toml_tables(tables)) == tables


def test_best_params_round_trip_into_compare(tmp_path: Path, tiny: str) -> None:
    for method in ("plrank-lgb", "lambdarank-lgb"):
        quick(tiny, tmp_path / "tune", method, trials=2)
    best = tmp_path / "tune" / "best_params.toml"
    config_path = write(
        tmp_path,
        f"datasets = [{tiny!r}]\nmethods = ['plrank-lgb', 'lambdarank-lgb']\nseeds = 1\nk = 3\n"
        f"out = {str(tmp_path / 'cmp')!r}\n[trees]\nrounds = 6\nearly_stopping_rounds = 3\n"
        f"n_jobs = 1\n[params.lambdarank-lgb]\nnum_leaves = 3\n",
        "cmp.toml",
    )
    config = load_config(config_path, params_file=best)
    tuned = read_params(best)
    assert config.params["lambdarank-lgb"] == tuned["lambdarank-lgb"]
    assert config.params["plrank-lgb"] == tuned["plrank-lgb"]
    store = run_comparison(config, echo=lambda _: None)
    assert {key.method for key in store.rows()} == {"plrank-lgb", "lambdarank-lgb"}


def test_tuned_params_reach_the_training(tmp_path: Path, tiny: str, monkeypatch) -> None:
    seen: list[dict] = []
    real = objective.train

    def spy(name, data, **kwargs):
        seen.append({"name": name, **kwargs})
        return real(name, data, **kwargs)

    monkeypatch.setattr(objective, "train", spy)
    base = {"max_bin": 15, "plrank": MappingProxyType({"gain": "linear"})}  # as from a config
    study = quick(tiny, tmp_path, "plrank-lgb", trials=2, params=base)
    assert len(seen) == 2
    assert study.user_attrs["settings"]["params"] == {"max_bin": 15, "plrank": {"gain": "linear"}}
    for call, trial in zip(seen, study.trials):
        assert call["params"] == {"max_bin": 15, **trial.user_attrs["params"]}
        assert call["params"]["plrank"]["N"] == trial.params["plrank.N"]
        assert call["k"] == 3 and call["seed"] == 0 and call["trees"] == FAST
        assert len(call["callbacks"]) == 1


# ------------------------------------------------------------------------------------------
# Reproducibility, budgets, resume
# ------------------------------------------------------------------------------------------
def test_same_seed_same_trials_other_seed_other_trials(tmp_path: Path, tiny: str) -> None:
    storage = f"sqlite:///{tmp_path / 'elsewhere.db'}"  # any storage URL
    runs = [
        quick(tiny, tmp_path / "a", seed=7),
        quick(tiny, tmp_path / "b", seed=7, storage=storage),
        quick(tiny, tmp_path / "c", seed=8),
    ]
    assert (tmp_path / "elsewhere.db").is_file() and not (tmp_path / "b" / "optuna.db").exists()
    assert (tmp_path / "b" / "best_params.toml").is_file()
    a, b, c = ([(t.params, t.value) for t in study.trials] for study in runs)
    assert a == b
    assert [p for p, _ in a] != [p for p, _ in c]


def test_the_trial_budget_counts_earlier_runs(tmp_path: Path, tiny: str, monkeypatch) -> None:
    quick(tiny, tmp_path, trials=3)

    def no_training(*args, **kwargs):
        raise AssertionError("a trial ran beyond the budget")

    monkeypatch.setattr(objective, "train", no_training)
    printed: list[str] = []
    study = quick(tiny, tmp_path, trials=3, echo=printed.append)
    assert states(study) == ["COMPLETE"] * 3
    assert "0 trial(s) left" in printed[0]


def test_the_time_budget_is_respected(tmp_path: Path, tiny: str) -> None:
    study = quick(tiny, tmp_path, trials=None, timeout=1.0)
    trials = study.get_trials(deepcopy=False)
    assert all(t.state == COMPLETE for t in trials)
    used = [(t.datetime_complete - t.datetime_start).total_seconds() for t in trials]
    assert len(trials) >= 2 or used[0] >= 1.0  # another trial starts while budget is left
    assert sum(used[:-1]) < 1.0  # no trial starts once the budget is used up
    assert Budget.left(study, trials=None, timeout=1.0).seconds == pytest.approx(
        max(1.0 - sum(used), 0.0)
    )


def test_an_interrupted_study_resumes_and_keeps_its_trials(tmp_path: Path, tiny: str) -> None:
    def stop_after_two(study: optuna.Study, trial: optuna.trial.FrozenTrial) -> None:
        if len(study.trials) == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        quick(tiny, tmp_path, trials=4, callbacks=[stop_after_two])
    study = optuna.load_study(
        study_name="lambdarank-lgb", storage=f"sqlite:///{tmp_path}/optuna.db"
    )
    before = [(t.number, t.params, t.value) for t in study.trials]
    assert states(study) == ["COMPLETE", "COMPLETE"]
    study.ask()  # a trial left RUNNING, as by a process killed mid-trial
    printed: list[str] = []
    resumed = quick(tiny, tmp_path, trials=4, echo=printed.append)
    assert states(resumed) == ["COMPLETE", "COMPLETE", "FAIL", "COMPLETE", "COMPLETE"]
    assert [(t.number, t.params, t.value) for t in resumed.trials[:2]] == before
    assert "1 trial(s) cut off by an interrupted run marked FAIL" in printed[0]
    assert "2 trial(s) left" in printed[1]
    new = [t.params for t in resumed.trials[3:]]
    assert all(p not in [b for _, b, _ in before] for p in new)  # no first draws again


def test_a_trial_interrupted_inside_training_is_not_counted(
    tmp_path: Path, tiny: str, monkeypatch
) -> None:
    real, calls = objective.train, []

    def interrupted(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(objective, "train", interrupted)
    with pytest.raises(KeyboardInterrupt):
        quick(tiny, tmp_path, trials=2)
    study = quick(tiny, tmp_path, trials=2)
    assert states(study) == ["COMPLETE", "FAIL", "COMPLETE"]


def test_other_settings_are_not_mixed_into_a_storage(tmp_path: Path, tiny: str) -> None:
    quick(tiny, tmp_path, trials=1)
    with pytest.raises(ConfigError, match=r"study 'lambdarank-lgb' tuned with other settings \(k"):
        quick(tiny, tmp_path, trials=1, k=5)
    with pytest.raises(ConfigError, match=r"other settings \(trees differs\)"):
        quick(tiny, tmp_path, "xendcg-lgb", trials=1, trees=TreeSettings(rounds=7, n_jobs=1))
    other_space = load_spaces()["xendcg-lgb"].entries | {"num_leaves": 3}
    quick(tiny, tmp_path, "xendcg-lgb", trials=1, space=SearchSpace("xendcg-lgb", other_space))
    assert set(read_params(tmp_path / "best_params.toml")) == {"lambdarank-lgb", "xendcg-lgb"}
    storage = f"sqlite:///{tmp_path}/optuna.db"
    optuna.create_study(study_name="foreign", storage=storage)
    quick(tiny, tmp_path, trials=1)  # an empty study without settings mixes nothing
    optuna.load_study(study_name="foreign", storage=storage).ask()
    with pytest.raises(ConfigError, match="holds a study 'foreign' not made by gbdt-plrank tune"):
        quick(tiny, tmp_path, trials=1)


# ------------------------------------------------------------------------------------------
# Pruning
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["lambdamart-xgb", "lambdarank-lgb", "yetirank-cb", "plrank-nn"])
def test_pruning_stops_trainings_early(tmp_path: Path, tiny: str, method: str) -> None:
    if METHODS[method].library == "catboost":
        pytest.importorskip("catboost")
    # Every intermediate NDCG is below 2: each trial is pruned at its first report.
    study = quick(
        tiny, tmp_path, method, trials=2, pruner=optuna.pruners.ThresholdPruner(lower=2.0)
    )
    assert states(study) == ["PRUNED", "PRUNED"]
    assert all(list(t.intermediate_values) == [0] for t in study.trials)


def test_the_median_pruner_prunes_poor_trials(tmp_path: Path, tiny: str) -> None:
    study = quick(tiny, tmp_path, trials=8, pruner=optuna.pruners.MedianPruner(n_startup_trials=2))
    pruned = [t for t in study.trials if t.state == PRUNED]
    assert pruned
    # Pruned below the median of the complete trials at some round, hence below the best.
    assert all(max(t.intermediate_values.values()) < study.best_value for t in pruned)


# ------------------------------------------------------------------------------------------
# The command line (the `tune` subcommand's own parser)
# ------------------------------------------------------------------------------------------
def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="gbdt-plrank tune", exit_on_error=False)
    command.configure(parser)
    return parser.parse_args(argv)


def test_command_tunes_several_methods_with_equal_budgets(
    tmp_path: Path, tiny: str, capsys
) -> None:
    out = tmp_path / "out"
    argv = [
        "--data",
        tiny,
        "--methods",
        "lambdarank-lgb,xendcg-lgb",
        "--trials",
        "2",
        "--k",
        "3",
        "--rounds",
        "5",
        "--n-jobs",
        "1",
        "--out",
        str(out),
        "--seed",
        "3",
        "--no-pruning",
    ]
    assert command.run(parse(argv)) == 0
    printed = capsys.readouterr().out
    assert "lambdarank-lgb: 2 trial(s) left" in printed and "xendcg-lgb: 2 trial(s) left" in printed
    storage = f"sqlite:///{out}/optuna.db"
    for method in ("lambdarank-lgb", "xendcg-lgb"):
        study = optuna.load_study(study_name=method, storage=storage)
        assert len(study.trials) == 2
        settings = study.user_attrs["settings"]
        assert settings["trees"]["rounds"] == 5 and settings["seed"] == 3 and settings["k"] == 3
    assert set(read_params(out / "best_params.toml")) == {"lambdarank-lgb", "xendcg-lgb"}


def test_command_takes_the_settings_of_a_comparison_config(tmp_path: Path, tiny: str) -> None:
    out = tmp_path / "out"
    argv = ["--data", tiny, "--method", "lambdarank-lgb", "--trials", "1", "--k", "3"]
    argv += ["--config", str(CONFIGS / "demo.toml"), "--rounds", "4", "--out", str(out)]
    assert command.run(parse(argv)) == 0
    settings = optuna.load_study(
        study_name="lambdarank-lgb", storage=f"sqlite:///{out}/optuna.db"
    ).user_attrs["settings"]
    demo = load_config(CONFIGS / "demo.toml")
    assert settings["trees"]["learning_rate"] == demo.trees.learning_rate
    assert settings["trees"]["early_stopping_rounds"] == demo.trees.early_stopping_rounds
    assert settings["trees"]["rounds"] == 4


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--method", "ranknet"], "'ranknet' is not a method; allowed: plrank-xgb"),
        (["--methods", "lambdarank-lgb,ranknet"], "'ranknet' is not a method"),
        (["--rounds", "0"], "expected an integer >= 1, but '0' is given"),
    ],
)
def test_command_argument_errors(argv: list[str], message: str) -> None:
    with pytest.raises(argparse.ArgumentError, match=message):
        parse(["--data", "mq2008", *argv])


def test_command_checks_its_input_before_tuning(tmp_path: Path, tiny: str) -> None:
    args = parse(["--data", tiny, "--method", "lambdarank-lgb", "--out", str(tmp_path)])
    with pytest.raises(ConfigError, match="a budget is required"):
        command.run(args)
    bad = write(tmp_path, "[lightgbm]\nnum_leaves = { low = 9, high = 3 }\n")
    argv = ["--data", tiny, "--methods", "lambdarank-lgb,xendcg-lgb", "--trials", "1"]
    with pytest.raises(ConfigError, match=r"lightgbm\.num_leaves must have numbers low < high"):
        command.run(parse([*argv, "--out", str(tmp_path), "--space", str(bad)]))
    assert not (tmp_path / "optuna.db").exists()


def test_command_interrupted_says_how_to_resume(
    tmp_path: Path, tiny: str, monkeypatch, capsys
) -> None:
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(objective, "train", interrupted)
    args = parse(
        ["--data", tiny, "--method", "lambdarank-lgb", "--trials", "2", "--out", str(tmp_path)]
    )
    assert command.run(args) == 130
    assert "run the same command again to resume" in capsys.readouterr().err


def test_budget_text() -> None:
    assert str(Budget(3, None)) == "3 trial(s)"
    assert str(Budget(None, 12.4)) == "12 s of trials"
    assert (
        Budget(0, 5.0).exhausted and Budget(None, 0.0).exhausted and not Budget(1, None).exhausted
    )


# ------------------------------------------------------------------------------------------
# Without matplotlib: the pictures are skipped, the trials and best_params.toml kept
# ------------------------------------------------------------------------------------------
def block_matplotlib(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("matplotlib", "matplotlib.figure"):
        monkeypatch.setitem(sys.modules, name, None)


def test_tuning_without_matplotlib_returns_the_study(
    tmp_path: Path, tiny: str, monkeypatch
) -> None:
    block_matplotlib(monkeypatch)
    printed: list[str] = []
    study = quick(tiny, tmp_path, trials=2, echo=printed.append)
    assert states(study) == ["COMPLETE"] * 2
    assert set(read_params(tmp_path / "best_params.toml")) == {"lambdarank-lgb"}
    assert not any(tmp_path.glob("*.png"))
    text = "\n".join(printed)
    assert "history.png and importances.png are not drawn: drawing them needs matplotlib" in text
    assert printed[-1] == f"wrote {tmp_path / 'best_params.toml'}"


def test_command_without_matplotlib_tunes_every_method(
    tmp_path: Path, tiny: str, monkeypatch, capsys
) -> None:
    block_matplotlib(monkeypatch)
    out = tmp_path / "out"
    argv = [
        "--data",
        tiny,
        "--methods",
        "lambdarank-lgb,xendcg-lgb",
        "--trials",
        "1",
        "--k",
        "3",
        "--rounds",
        "3",
        "--n-jobs",
        "1",
        "--out",
        str(out),
        "--no-pruning",
    ]
    assert command.run(parse(argv)) == 0
    assert capsys.readouterr().out.count("are not drawn") == 2
    storage = f"sqlite:///{out}/optuna.db"
    for method in ("lambdarank-lgb", "xendcg-lgb"):
        assert states(optuna.load_study(study_name=method, storage=storage)) == ["COMPLETE"]
    assert set(read_params(out / "best_params.toml")) == {"lambdarank-lgb", "xendcg-lgb"}
