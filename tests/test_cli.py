"""The ``gbdt-plrank`` command line."""

from __future__ import annotations

import csv
import json
import os
import runpy
import sys
from pathlib import Path

import pytest
from tiny_ltr import write_tiny_letor

from gbdt_plrank import cli
from gbdt_plrank.cli import SUBCOMMANDS, main
from gbdt_plrank.harness.bundled import resolve_config
from gbdt_plrank.harness.store import locked_folder

DEMO = Path(__file__).resolve().parents[1] / "configs" / "demo.toml"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_letor(tmp_path_factory.mktemp("data") / "tiny")


def block_matplotlib(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make matplotlib (and its figure module) fail to import, as when it is not installed."""
    for name in ("matplotlib", "matplotlib.figure"):
        monkeypatch.setitem(sys.modules, name, None)


def wrote(printed: str) -> list[str]:
    """The files the command's last "wrote" line names."""
    line = [line for line in printed.splitlines() if line.startswith("wrote ")][-1]
    return line.removeprefix("wrote ").split(", ")


def fast_flags(tiny: Path, out: Path) -> list[str]:
    return [
        "--data",
        str(tiny),
        "--methods",
        "plrank-lgb,lambdarank-lgb",
        "--seeds",
        "2",
        "--k",
        "3,5",
        "--rounds",
        "3",
        "--n-jobs",
        "1",
        "--out",
        str(out),
    ]


def test_compare_writes_the_output_files(tmp_path: Path, tiny: Path, capsys) -> None:
    out = tmp_path / "out"
    assert main(["compare", str(DEMO), *fast_flags(tiny, out)]) == 0
    printed = capsys.readouterr().out
    assert "8 of 8 trainings to run" in printed
    assert "## tiny, NDCG@3" in printed and "## tiny, NDCG@5" in printed
    assert "| plrank-lgb |" in printed and "| lambdarank-lgb |" in printed
    assert "Command: `gbdt-plrank compare" in printed
    for name in ("results.csv", "results.md", "curves.png", "curves.jsonl", "settings.json"):
        assert (out / name).is_file()
    with (out / "results.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 8 and {r["k"] for r in rows} == {"3", "5"}
    assert {r["method"] for r in rows} == {"plrank-lgb", "lambdarank-lgb"}
    # The same command again trains nothing and reports the same table.
    assert main(["compare", str(DEMO), *fast_flags(tiny, out)]) == 0
    assert "0 of 8 trainings to run" in capsys.readouterr().out


def test_the_neural_comparison_runs_with_its_shipped_config(
    tmp_path: Path, tiny: Path, capsys
) -> None:
    """configs/neural.toml as shipped (its methods, the network among them), on tiny data."""
    neural = DEMO.with_name("neural.toml")
    out = tmp_path / "out"
    flags = [
        "--data",
        str(tiny),
        "--folds",
        "1",
        "--seeds",
        "1",
        "--k",
        "3",
        "--rounds",
        "3",
        "--n-jobs",
        "1",
        "--out",
        str(out),
    ]
    assert main(["compare", str(neural), *flags]) == 0
    printed = capsys.readouterr().out
    for method in ("plrank-nn", "plrank-xgb", "plrank-xgb-nohess", "lambdamart-xgb"):
        assert f"| {method} |" in printed
    assert "| plrank-nn | plrank-xgb |" in printed  # paired with its baseline


def test_changed_settings_are_refused(tmp_path: Path, tiny: Path, capsys) -> None:
    out = tmp_path / "out"
    flags = fast_flags(tiny, out)
    assert main(["compare", str(DEMO), *flags, "--seeds", "1", "--k", "3"]) == 0
    params = tmp_path / "best_params.toml"
    params.write_text("[lambdarank-lgb]\nnum_leaves = 3\n")
    assert main(["compare", str(DEMO), *flags, "--params", str(params)]) == 2
    assert "holds results made with other settings (params" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["compare", str(DEMO), "--colour", "1"], "argument '--colour'; allowed flags: --help"),
        (["compare", str(DEMO), "--round", "3"], "unknown argument '--round'"),
        (["compare", str(DEMO), "extra.toml"], "unknown argument 'extra.toml'"),
        (["compare", str(DEMO), "--methods", "plrank-xgb,ranknet"], "'ranknet' is not a method"),
        (["compare", str(DEMO), "--seeds", "0"], "seeds must be an integer >= 1, but 0 is given"),
        (["compare", str(DEMO), "--k", "5,x"], "expected an integer or comma-separated integers"),
        (["compare", str(DEMO), "--data", "no/such/folder"], "'no/such/folder' is neither"),
        (
            ["compare", "no/such.toml"],
            "no such configuration file: no/such.toml; bundled compare configurations: demo,",
        ),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
        ([], "a command is required: compare"),
    ],
)
def test_bad_input_is_one_clear_error(argv: list[str], message: str, capsys) -> None:
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_params_file_errors_name_the_file(tmp_path: Path, capsys) -> None:
    params = tmp_path / "p.toml"
    params.write_text("[plrank-xgb]\nseed = 3\n")
    assert main(["compare", str(DEMO), "--params", str(params)]) == 2
    assert "p.toml: plrank-xgb must not set 'seed'" in capsys.readouterr().err


def test_subcommands_are_a_registry() -> None:
    assert [sub.name for sub in SUBCOMMANDS] == [
        "compare",
        "tune",
        "fairness",
        "clicks",
        "configs",
        "compile",
    ]


CLICKS = DEMO.with_name("clicks-tiny.toml")


def test_a_bundled_configuration_runs_by_name_from_any_folder(
    tmp_path: Path, tiny: Path, monkeypatch, capsys
) -> None:
    """``compare demo`` from a folder without configs/: the bundled file, written to runs/demo
    in the current folder."""
    monkeypatch.chdir(tmp_path)
    flags = [
        "--data",
        str(tiny),
        "--methods",
        "plrank-lgb",
        "--seeds",
        "1",
        "--k",
        "3",
        "--rounds",
        "2",
        "--n-jobs",
        "1",
    ]
    assert main(["compare", "demo", *flags]) == 0
    printed = capsys.readouterr().out
    assert f"the bundled configuration 'demo' ({DEMO})" in printed
    assert (tmp_path / "runs" / "demo" / "results.md").is_file()
    assert (
        main(["clicks", "clicks-tiny", "--data", str(tiny), "--sessions", "3", "--out", "mine"])
        == 0
    )
    assert (tmp_path / "mine" / "clicks.md").is_file()


def test_a_bare_name_is_bundled_and_a_path_is_a_file(tmp_path: Path, monkeypatch, capsys) -> None:
    """One rule: a bare name names a bundled configuration, even beside a file of that name
    (given by its path, ./demo); a path with a folder or .toml is a file."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "demo").write_text("methods = ['plrank-xgb']\n")
    (tmp_path / "mine.toml").write_text("methods = ['plrank-xgb']\n")
    assert resolve_config("demo", command="compare") == (DEMO, "demo")
    for path in ("./demo", "mine.toml", str(tmp_path / "mine.toml")):
        assert main(["compare", path]) == 2
        assert "must set 'datasets'" in capsys.readouterr().err
    assert main(["compare", "mine"]) == 2
    assert "'mine' is not the name of a bundled configuration; bundled compare" in (
        capsys.readouterr().err
    )
    assert main(["compare", "./nope"]) == 2
    assert "no such configuration file: ./nope; bundled compare configurations: demo" in (
        capsys.readouterr().err
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["compare", "nope"],
            "'nope' is not the name of a bundled configuration; bundled "
            "compare configurations: demo, headline,",
        ),
        (
            ["compare", "fairness_group"],
            "'fairness_group' is a bundled configuration of `gbdt-plrank fairness`, not of compare",
        ),
        (["configs", "nope"], "'nope' is not a bundled configuration; they are: clicks-mq2007-agg"),
    ],
)
def test_an_unknown_bundled_name_lists_the_names(
    tmp_path: Path, monkeypatch, argv, message, capsys
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["compare", "demo.toml"],
            "no such configuration file: demo.toml; the bundled "
            "configuration 'demo' is named without a folder or .toml: `gbdt-plrank compare demo`",
        ),
        (
            ["compare", "configs/headline.toml"],
            "no such configuration file: "
            "configs/headline.toml; the bundled configuration 'headline' is named without a "
            "folder or .toml: `gbdt-plrank compare headline`",
        ),
        (["fairness", "fairness_group.toml"], "`gbdt-plrank fairness fairness_group`"),
        (["clicks", "configs/clicks-tiny.toml"], "`gbdt-plrank clicks clicks-tiny`"),
        (
            ["tune", "--data", "x", "--method", "plrank-xgb", "--config", "demo.toml"],
            "no such configuration file: demo.toml; the bundled configuration 'demo' is named",
        ),
        (
            ["tune", "--data", "x", "--method", "plrank-xgb", "--space", "paper.toml"],
            "`gbdt-plrank tune --space paper`",
        ),
        (
            ["configs", "demo.toml"],
            "'demo.toml' is a path, but configs prints a bundled "
            "configuration, named without a folder or .toml: `gbdt-plrank configs demo`",
        ),
    ],
)
def test_a_missing_toml_path_is_refused_the_same_way_by_every_command(
    tmp_path: Path, monkeypatch, argv, message, capsys
) -> None:
    """A path with .toml (or a folder) that does not exist is refused by every command, naming the
    bundled configuration of that name: ``compare demo.toml`` ran the bundled demo while
    ``configs demo.toml`` refused it."""
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err


def test_configs_lists_every_bundled_configuration_and_prints_one(capsys) -> None:
    shipped = sorted(p.stem for p in DEMO.parent.rglob("*.toml"))
    assert main(["configs"]) == 0
    printed = capsys.readouterr().out
    assert all(f"\n  {name}\n" in printed for name in shipped), printed
    assert "gbdt-plrank fairness NAME:\n  fairness\n" in printed
    assert "The demo (`make demo`): PL-Rank GBDT next to LambdaMART" in printed
    assert main(["configs", "fairness_group"]) == 0
    assert capsys.readouterr().out == DEMO.with_name("fairness_group.toml").read_text()


def test_help_lists_the_bundled_configurations(capsys) -> None:
    for command, names in [
        ("compare", "demo, headline"),
        ("fairness", "fairness,"),
        ("clicks", "clicks-mq2007-agg,"),
    ]:
        assert main([command, "--help"]) == 0
        help_text = " ".join(capsys.readouterr().out.split())
        assert f"the name of a bundled one: {names}" in help_text, help_text
        assert "writes to runs/NAME in the current folder unless --out is given" in help_text


def test_clicks_writes_its_report_and_resumes(tmp_path: Path, tiny: Path, capsys) -> None:
    """configs/clicks-tiny.toml on tiny data: every learner, the report, and a resumed run."""
    out = tmp_path / "clicks"
    flags = ["--data", str(tiny), "--out", str(out)]
    assert main(["clicks", str(CLICKS), *flags]) == 0
    printed = capsys.readouterr().out
    # 2 session counts x 7 learners on clicks, full labels, logger, 2 arms x 2 rounds
    assert "20 of 20 results to compute" in printed
    for learner in (
        "plrank-policy-aware",
        "plrank-doubly-robust",
        "plrank-naive",
        "plrank-regression",
        "plrank-deterministic",
        "lambdamart-unbiased-xgb",
        "lambdarank-position-lgb",
        "plrank-full-labels",
        "logger",
    ):
        assert f"| {learner} |" in printed
    assert "### tiny: test NDCG@5" in printed and "### tiny: test NDCG@10" in printed
    assert "position bias estimated from the stochastic log" in printed
    assert "| rank | simulated | 3 sessions/query | error of the mean |" in printed
    assert "The estimate took" in printed and "s per log on average." in printed
    assert "### tiny: training seconds, mean over folds" in printed
    assert "### tiny: exploration" in printed
    assert "### tiny: reward bias by grade" in printed
    assert "### tiny: off-policy value" in printed and "Coverage of the 95% intervals" in printed
    assert "PL-Rank on doubly robust rewards minus each learner" in printed
    assert "Command: `gbdt-plrank clicks" in printed
    for name in ("results.jsonl", "ope.jsonl", "clicks.md", "clicks.png", "settings.json"):
        assert (out / name).is_file()
    lines = (out / "results.jsonl").read_text().splitlines()
    assert len(lines) == 20
    # 5 PL-Rank learners on clicks x 2 session counts, full labels and the logger; 2 estimators
    ope = (out / "ope.jsonl").read_text().splitlines()
    assert len(ope) == 2 * (2 * 5 + 2)
    # an interruption that cut the last line short: that result alone is computed again (here
    # without matplotlib: the picture is skipped, and not claimed written)
    (out / "results.jsonl").write_text("\n".join(lines[:-1]) + "\n" + lines[-1][:20])
    (out / "clicks.png").unlink()
    with pytest.MonkeyPatch.context() as patch:
        block_matplotlib(patch)
        assert main(["clicks", str(CLICKS), *flags]) == 0
    printed = capsys.readouterr().out
    assert "1 of 20 results to compute" in printed
    assert (out / "clicks.md").read_text() in printed
    assert "clicks.png is not drawn" in printed and not (out / "clicks.png").exists()
    assert wrote(printed) == [str(out / "results.jsonl"), str(out / "clicks.md")]
    # other settings are refused rather than mixed
    assert main(["clicks", str(CLICKS), *flags, "--rounds", "3"]) == 2
    assert (
        "holds results made with other settings (trees.rounds differs)" in capsys.readouterr().err
    )


def test_the_time_table_against_the_records_by_hand() -> None:
    """Each learner's seconds, its rewards' added, as a multiple of the first learner's: the
    mean over two folds; the logger (not trained here) has none; a learner trained once per
    fold fills every session count."""
    from gbdt_plrank.harness.clicks.config import load_clicks_config
    from gbdt_plrank.harness.clicks.report import _time_table

    config = load_clicks_config(
        CLICKS,
        overrides={
            "learners": [
                "plrank-regression",
                "lambdamart-unbiased-xgb",
                "plrank-full-labels",
                "logger",
            ],
            "sessions": [3, 10],
            "exploration_rounds": 0,
        },
    )
    results = {
        ("plrank-regression", 3): [
            {"seconds": 10.0, "rewards_seconds": 2.0},
            {"seconds": 14.0, "rewards_seconds": 0.0},
        ],
        ("lambdamart-unbiased-xgb", 3): [{"seconds": 3.0}, {"seconds": 3.0}],
        ("plrank-full-labels", 0): [{"seconds": 24.0}],
        ("logger", 0): [{"seconds": 0.0}],
    }
    text = _time_table(config, "d", results)
    assert "| plrank-regression | 13.0 (1.00x) |  |" in text
    assert "| lambdamart-unbiased-xgb | 3.0 (0.23x) |  |" in text
    assert "| plrank-full-labels | 24.0 (1.85x) | 24.0 |" in text
    assert "| logger |" not in text


def test_the_off_policy_summary_against_a_count_by_hand() -> None:
    """Two logs of three models: the means, the spread of the logs' mean standardised errors
    and the discordant pairs, each computed here from the definition."""
    from gbdt_plrank.harness.clicks.report import ope_summary

    truth = [1.0, 2.0, 3.0]
    logs = {0: [1.1, 1.9, 3.2], 1: [2.5, 2.0, 3.1]}  # log 1 orders models 0 and 1 wrongly
    records = [
        {
            "dataset": "d/Fold1",
            "seed": 0,
            "log": log,
            "estimator": "policy-aware",
            "value": v,
            "truth": t,
            "stderr": 0.1 * (i + 1),
        }
        for log, values in logs.items()
        for i, (v, t) in enumerate(zip(values, truth))
    ]
    z = {
        log: [(v - t) / (0.1 * (i + 1)) for i, (v, t) in enumerate(zip(values, truth))]
        for log, values in logs.items()
    }
    means = [sum(zs) / 3 for zs in z.values()]
    spread = abs(means[0] - means[1]) / 2**0.5  # the sample standard deviation of two values
    mean_abs = sum(abs(x) for zs in z.values() for x in zs) / 6
    (line,) = ope_summary(records)
    assert line == (
        f"policy-aware: mean stderr 0.2000, mean abs(error)/stderr {mean_abs:.2f}; standard "
        f"deviation over the 2 logs of a log's mean (error/stderr) {spread:.2f}; a log's models "
        "out of the simulated order in 1 of 6 pairs."
    )


def test_the_off_policy_summary_takes_a_zero_standard_error_as_an_infinite_error() -> None:
    """An estimate whose standard error is 0 and which misses the simulated value is infinitely
    far from it in standard errors, as the coverage column counts it: not a division error."""
    from gbdt_plrank.harness.clicks.report import ope_summary

    records = [
        {
            "dataset": "d/Fold1",
            "seed": 0,
            "log": 0,
            "estimator": "naive",
            "value": v,
            "truth": 1.0,
            "stderr": se,
        }
        for v, se in ((1.5, 0.0), (1.1, 0.1))
    ]
    (line,) = ope_summary(records)
    assert "mean abs(error)/stderr inf;" in line and "(error/stderr) n/a (one log)" in line


def test_clicks_values_every_model_on_each_of_ope_logs(tmp_path: Path, tiny: Path, capsys) -> None:
    """ope_logs = 3: three estimates per model and estimator, the first the estimate of the
    one-log run (the same log, regression and propensities), the others on other logs; the
    report counts the independent logs."""
    base = CLICKS.read_text().replace("exploration_rounds = 2", "exploration_rounds = 0")
    base = "learners = ['plrank-policy-aware']\nsessions = [10]\n" + base.replace(
        "sessions = [3, 10]\n", ""
    )
    runs = {}
    for logs in (1, 3):
        config = tmp_path / f"c{logs}.toml"
        config.write_text(f"ope_logs = {logs}\n" + base)
        out = tmp_path / f"out{logs}"
        assert main(["clicks", str(config), "--data", str(tiny), "--out", str(out)]) == 0
        runs[logs] = [json.loads(line) for line in (out / "ope.jsonl").read_text().splitlines()]
    printed = capsys.readouterr().out
    assert "logger's 3 independent logs" in printed and "these are 3 independent logs" in printed
    assert "standard deviation over the 3 logs of a log's mean (error/stderr)" in printed
    one = {(r["learner"], r["estimator"]): r for r in runs[1]}
    assert len(runs[1]) == 2 and len(runs[3]) == 3 * 2  # one model, 2 estimators
    assert sorted(r["log"] for r in runs[3]) == sorted([0, 1, 2] * len(runs[1]))
    for r in runs[3]:
        first = one[r["learner"], r["estimator"]]
        assert (r["value"] == first["value"]) == (r["log"] == 0), r
        assert r["truth"] == first["truth"]  # the position bias is known: one truth


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ("[plrank]\ngain = 'exp'\n", "need gain 'linear'"),
        ("learners = ['plrank-naive', 'ranknet']\n", "learners must be a non-empty list of"),
        ("[params.plrank-xgb]\nmax_bin = 64\n", "params must name the anchors' methods"),
        (
            "exploration_rounds = 2\nlearners = ['plrank-naive']\n",
            "need 'plrank-policy-aware' among the learners",
        ),
        ("top_k = 40\n", "top_k must be an integer from 1 to 32, but 40 is given"),
        (
            "[plrank]\nmetric = 'precision'\n",
            "'plrank-doubly-robust' trains on rewards of either sign, which need metric 'dcg' or "
            "'ndcg'",
        ),
        ("ope_sessions = -1\n", "ope_sessions must be an integer >= 0, but -1 is given"),
        ("ope_logs = 0\n", "ope_logs must be an integer >= 1, but 0 is given"),
        ("sessions = [0]\n", "sessions must be an integer >= 1 or a non-empty list"),
    ],
)
def test_clicks_config_errors_are_one_line(
    tmp_path: Path, table: str, message: str, capsys
) -> None:
    config = tmp_path / "c.toml"
    config.write_text("datasets = ['mq2008']\n" + table)
    assert main(["clicks", str(config)]) == 2
    err = capsys.readouterr().err
    assert message in err, err
    assert err.count("\n") == 1


def test_module_entry_point(monkeypatch, capsys) -> None:
    monkeypatch.setattr(sys, "argv", ["gbdt_plrank", "compare", "--help"])
    with pytest.raises(SystemExit) as exit_:
        runpy.run_module("gbdt_plrank", run_name="__main__")
    assert exit_.value.code == 0
    printed = capsys.readouterr().out
    assert "--methods" in printed and "--params" in printed and "--k" in printed


def test_failures_a_newcomer_meets_are_one_line_without_traceback(
    tmp_path: Path, tiny: Path, capsys
) -> None:
    taken = tmp_path / "taken"
    taken.write_text("not a folder")
    bad_data = tmp_path / "bad"
    bad_data.mkdir()
    for split in ("train", "vali", "test"):
        (bad_data / f"{split}.txt").write_text("1 qid:1 1:0.5\n1 qid:abc 1:0.5\n")
    cases = [
        (["compare", str(DEMO), "--out", str(taken)], f"but {taken} is a file; choose another"),
        (["compare", str(tmp_path)], f"the configuration file must be a file, but {tmp_path}"),
        (["compare", str(DEMO), "--params", str(tmp_path / "no.toml")], "no such parameter file"),
        (["compare", str(DEMO), "--data", str(taken)], "is neither"),
        (
            ["compare", str(DEMO), "--data", str(bad_data), "--out", str(tmp_path / "o")],
            "line 2 ('1 qid:abc 1:0.5') is not a LETOR line",
        ),
        (
            [
                "tune",
                "--data",
                str(tiny),
                "--method",
                "lambdarank-lgb",
                "--trials",
                "1",
                "--out",
                str(taken),
            ],
            f"but {taken} is a file",
        ),
    ]
    for argv, message in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert message in err, (argv, err)
        assert "Traceback" not in err and err.count("\n") == 1, err


def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    taken = tmp_path / "taken"
    taken.write_text("not a folder")
    with pytest.raises(ValueError, match="is a file"):
        main(["--debug", "compare", str(DEMO), "--out", str(taken)])


def test_an_unexpected_error_keeps_its_traceback(monkeypatch) -> None:
    def broken(config, **kwargs):
        raise TypeError("a bug")

    monkeypatch.setattr(cli._compare_command, "run_comparison", broken)
    with pytest.raises(TypeError, match="a bug"):
        main(["compare", str(DEMO)])


def test_compare_without_matplotlib_skips_the_curves(
    tmp_path: Path, tiny: Path, monkeypatch, capsys
) -> None:
    block_matplotlib(monkeypatch)
    out = tmp_path / "out"
    flags = [*fast_flags(tiny, out), "--methods", "lambdarank-lgb", "--seeds", "1", "--k", "3"]
    assert main(["compare", str(DEMO), *flags]) == 0
    printed = capsys.readouterr().out
    assert "curves.png is not drawn" in printed and "gbdt_plrank[plot]" in printed
    assert not (out / "curves.png").exists()
    assert wrote(printed) == [str(out / "results.csv"), str(out / "results.md")]


def test_fairness_without_matplotlib_skips_the_picture(
    tmp_path: Path, tiny: Path, monkeypatch, capsys
) -> None:
    block_matplotlib(monkeypatch)
    out = tmp_path / "out"
    config = tmp_path / "fair.toml"
    config.write_text(
        f"datasets = [{str(tiny)!r}]\nk = 3\nfairness_weights = [1]\ntemperatures = [1]\n"
        f"n_samples = 10\nout = {str(out)!r}\n"
        "[trees]\nrounds = 3\nearly_stopping_rounds = 2\nn_jobs = 1\n[plrank]\nN = 5\n"
    )
    assert main(["fairness", str(config)]) == 0
    printed = capsys.readouterr().out
    assert "frontier.png is not drawn" in printed and not (out / "frontier.png").exists()
    assert wrote(printed) == [str(out / "frontier.csv"), str(out / "frontier.md")]


@pytest.mark.parametrize(
    ("table", "message"),
    [
        (
            '[lambdamart-xgb]\neta = "fast"\n',
            "lambdamart-xgb's native parameter eta = 'fast' is refused by xgboost: Some trailing "
            "characters could not be parsed",
        ),
        (
            "[lambdarank-lgb]\nnum_leaves = -3\n",
            "lambdarank-lgb's native parameter num_leaves = -3 is refused by lightgbm: "
            "Check failed: (num_leaves) > (1)",
        ),
        (
            '[lambdarank-lgb]\nlearning_rate = "fast"\n',
            "lambdarank-lgb's native parameter learning_rate = 'fast' is refused by lightgbm",
        ),
    ],
)
def test_a_bad_native_parameter_names_the_method_and_the_parameter(
    tmp_path: Path, tiny: Path, table: str, message: str, capsys
) -> None:
    method = table.split("]")[0][1:]
    params = tmp_path / "p.toml"
    params.write_text(table)
    flags = [*fast_flags(tiny, tmp_path / "out"), "--methods", method, "--seeds", "1", "--k", "3"]
    assert main(["compare", str(DEMO), *flags, "--params", str(params)]) == 2
    err = capsys.readouterr().err
    assert message in err, err
    assert "Traceback" not in err and err.count("\n") == 1, err


def test_a_missing_data_file_is_an_input_error(tmp_path: Path, tiny: Path, capsys) -> None:
    data = tmp_path / "novali"
    data.mkdir()
    for split in ("train", "test"):
        (data / f"{split}.txt").write_bytes((tiny / f"{split}.txt").read_bytes())
    out = tmp_path / "out"
    assert main(["compare", str(DEMO), *fast_flags(data, out)]) == 2
    assert "must hold train.txt, vali.txt and test.txt (or .txt.gz), but vali is missing" in (
        capsys.readouterr().err
    )
    assert not out.exists()  # refused before anything is trained or written


def test_compare_on_a_folder_in_use_is_refused(tmp_path: Path, tiny: Path, capsys) -> None:
    out = tmp_path / "out"
    with locked_folder(out):
        assert main(["compare", str(DEMO), *fast_flags(tiny, out)]) == 1
    err = capsys.readouterr().err
    assert f"{out} is in use by another run (process {os.getpid()}" in err
    assert "run the same command again to resume, or choose another output folder" in err
    assert not (out / "results.csv").exists()


@pytest.mark.parametrize(
    ("command", "config", "runner", "kept"),
    [
        ("fairness", "fairness", "run_frontier", "the finished trainings and evaluations"),
        ("clicks", "clicks-tiny", "run_clicks", "the finished results"),
    ],
)
def test_an_interrupted_experiment_says_what_is_kept_and_exits_130(
    command: str,
    config: str,
    runner: str,
    kept: str,
    tmp_path: Path,
    tiny: Path,
    monkeypatch,
    capsys,
) -> None:
    """Both experiment commands run through one runner: flags override the configuration, and
    an interruption names what its folder keeps."""
    seen = {}

    def interrupted(config, echo):
        seen.update(out=config.out, datasets=config.datasets)
        raise KeyboardInterrupt

    monkeypatch.setattr(getattr(cli, f"_{command}_command"), runner, interrupted)
    out = tmp_path / "out"
    assert main([command, config, "--data", str(tiny), "--out", str(out)]) == 130
    assert str(seen["out"]) == str(out) and [str(d) for d in seen["datasets"]] == [str(tiny)]
    err = capsys.readouterr().err
    assert err == f"interrupted: {kept} are kept in {out}; run the same command again to resume.\n"
