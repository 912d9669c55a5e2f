"""One registry of click reward estimators: an estimator registered there reaches every reader.

Two small estimators are built here from the registry's parts and registered for one test at a
time: ``ips``, the policy-aware estimator under another name (its results must be the
policy-aware learner's, number for number), and ``ctr-regression``, the regression of the
click-through rate (the position-based model's regression without a position bias: a flag
combination no shipped estimator has). Nothing outside this file changes: the rewards and the
policy value read them, the docstrings list them, the experiment's configuration accepts their
learners, the experiment trains them and values their policies where their flags say so, and
its report carries them.
"""

from __future__ import annotations

import json
import re
import textwrap
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from tiny_ltr import write_tiny_letor

from gbdt_plrank.cli import main
from gbdt_plrank.clicks import (
    REWARD_ESTIMATORS,
    ClickLog,
    RewardEstimator,
    click_regression,
    click_rewards,
    estimate_policy_value,
)
from gbdt_plrank.clicks._rewards import CLICK_PARAMETERS, estimator_entries
from gbdt_plrank.harness.clicks.config import load_clicks_config
from gbdt_plrank.harness.settings import ConfigError

IPS = replace(
    REWARD_ESTIMATORS["policy-aware"],
    name="ips",
    title="IPS",
    summary="The policy-aware estimator under another name.",
)
CTR_REGRESSION = RewardEstimator(
    "ctr-regression",
    "click-through-rate regression",
    "The regression of the click-through rate on the features (no position bias).",
    position_bias=False,
    regression=True,
    correction=False,
)
TOYS = (IPS, CTR_REGRESSION)
CONFIG = Path(__file__).resolve().parents[1] / "configs" / "clicks-tiny.toml"


@pytest.fixture
def toys(monkeypatch: pytest.MonkeyPatch) -> tuple[RewardEstimator, ...]:
    """The toy estimators, registered for one test."""
    for toy in TOYS:
        monkeypatch.setitem(REWARD_ESTIMATORS, toy.name, toy)
    return TOYS


def _log() -> tuple[ClickLog, np.ndarray, np.ndarray]:
    """A small log of 2 queries, 3 rows each, 40 sessions, with features that predict the
    clicks."""
    rng = np.random.default_rng(3)
    qid = np.repeat([0, 1], 3)
    X = rng.normal(size=(6, 2))
    session, row, rank, click = [], [], [], []
    for s in range(40):
        q = s % 2
        for r, d in enumerate(rng.permutation(3) + 3 * q):
            session.append(s)
            row.append(d)
            rank.append(r + 1)
            click.append(int(rng.random() < (0.8 if X[d, 0] > 0 else 0.1) / (r + 1)))
    return ClickLog(session=session, row=row, rank=rank, click=click), X, qid


def test_the_rewards_and_the_policy_value_read_the_registered_estimators(toys) -> None:
    log, X, qid = _log()
    theta = np.array([1.0, 0.5, 1 / 3])
    ips = click_rewards(log, 6, position_bias=theta, estimator="ips")
    np.testing.assert_array_equal(ips, click_rewards(log, 6, position_bias=theta))
    ctr = click_rewards(log, 6, position_bias=theta, estimator="ctr-regression", X=X, qid=qid)
    unbiased = click_regression(log, X, qid, position_bias=np.ones(3))
    np.testing.assert_array_equal(ctr, unbiased)
    value = estimate_policy_value(log, np.full(6, 0.5), qid=qid, position_bias=theta)
    renamed = estimate_policy_value(
        log, np.full(6, 0.5), qid=qid, position_bias=theta, estimator="ips"
    )
    assert (renamed.value, renamed.stderr) == (value.value, value.stderr)
    with pytest.raises(ValueError, match="'policy-aware', 'doubly-robust', 'ips'"):
        estimate_policy_value(
            log, np.full(6, 0.5), qid=qid, position_bias=theta, estimator="ctr-regression"
        )


def test_the_docstrings_list_the_registry(toys) -> None:
    every = estimator_entries()
    assert f'- ``"ctr-regression"``: {CTR_REGRESSION.summary}' in every.splitlines()
    assert f'- ``"ips"``: {IPS.summary}' in estimator_entries(values_policies=True).splitlines()
    assert "ctr-regression" not in estimator_entries(values_policies=True)
    # the docstrings were filled at import with the same lines, for the shipped estimators
    shipped = [line for line in every.splitlines() if not any(t.name in line for t in toys)]
    assert len(shipped) == 4
    for line in shipped:
        assert f"        {line}\n" in click_rewards.__doc__
    for name in ("policy-aware", "doubly-robust"):
        assert f'- ``"{name}"``: {REWARD_ESTIMATORS[name].summary}' in (
            estimate_policy_value.__doc__
        )
    assert '- ``"naive"``' not in estimate_policy_value.__doc__


def test_the_shared_click_parameters_are_filled_in_both_docstrings() -> None:
    for entry in CLICK_PARAMETERS.values():
        for doc in (click_rewards.__doc__, estimate_policy_value.__doc__):
            assert textwrap.indent(entry, "    ") in doc
    assert ".. click-parameters::" not in click_rewards.__doc__ + estimate_policy_value.__doc__


def _config(tmp_path: Path, data: Path) -> Path:
    """configs/clicks-tiny.toml on ``data``: one session count, no exploration, the reference
    learner and the toys' learners, a short off-policy table."""
    top = (
        f"datasets = [{str(data)!r}]\nout = {str(tmp_path / 'out')!r}\nope_sessions = 5\n"
        "learners = ['plrank-policy-aware', 'plrank-ips', 'plrank-ctr-regression']\n"
    )
    text = (
        CONFIG.read_text()
        .replace('datasets = ["mq2008"]\n', top)
        .replace("sessions = [3, 10]", "sessions = [10]")
        .replace("exploration_rounds = 2", "exploration_rounds = 0")
    )
    assert top in text
    config = tmp_path / "clicks.toml"
    config.write_text(text)
    return config


def test_the_experiment_refuses_a_learner_on_no_registered_estimator(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="learners must be a non-empty list of distinct"):
        load_clicks_config(_config(tmp_path, tmp_path / "data"))


def test_the_experiment_trains_values_and_reports_the_registered_estimators(
    toys, tmp_path: Path
) -> None:
    data = write_tiny_letor(tmp_path / "tiny", queries=(14, 8, 8))
    config = _config(tmp_path, data)
    assert load_clicks_config(config).learners[1:] == ("plrank-ips", "plrank-ctr-regression")
    assert main(["clicks", str(config)]) == 0
    out = tmp_path / "out"
    records = {
        r["learner"]: r
        for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())
        if r["sessions"] == 10
    }
    ips, reference = records["plrank-ips"], records["plrank-policy-aware"]
    assert ips["ndcg"] == reference["ndcg"] and ips["best_round"] == reference["best_round"]
    # the flags decide: a debiased estimator's learner records its bias by grade
    assert ips["by_grade"] == reference["by_grade"]
    assert "by_grade" not in records["plrank-ctr-regression"]
    assert records["plrank-ctr-regression"]["qid"] == reference["qid"]
    # an estimator that values policies values every model; the others value none
    ope = [json.loads(line) for line in (out / "ope.jsonl").read_text().splitlines()]
    by = {(r["learner"], r["estimator"]): r["value"] for r in ope if r["sessions"] == 10}
    assert {e for _, e in by} == {"policy-aware", "doubly-robust", "ips"}
    for learner in records:
        assert by[learner, "ips"] == by[learner, "policy-aware"]
    report = (out / "clicks.md").read_text()
    assert "| plrank-ctr-regression |" in report and "| plrank-ips |" in report
    assert "PL-Rank on IPS rewards minus each learner" in report
    assert "PL-Rank on click-through-rate regression rewards minus" not in report
    assert "| ips |" in report  # its off-policy rows


def test_the_clicks_guide_lists_every_configuration_key() -> None:
    """The guide's configuration block (the config module's docstring links it) names every key
    of :class:`ClicksConfig` and no other."""
    from gbdt_plrank.harness.clicks.config import ClicksConfig

    page = (Path(__file__).resolve().parents[1] / "docs" / "guide" / "clicks.md").read_text()
    section = page[page.index("### The configuration") :]
    block = section[section.index("```toml") : section.index("```\n", 7)]
    keys = set(re.findall(r"^([a-z_]+) =", block, re.MULTILINE))
    tables = {t.split(".")[0] for t in re.findall(r"^\[([a-z_.-]+)\]", block, re.MULTILINE)}
    assert keys | tables == set(ClicksConfig.model_fields)
