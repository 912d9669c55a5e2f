"""The fairness frontier: policy evaluation against exact values, early stopping on the policy,
the configuration's errors, and the resumable ``gbdt-plrank fairness`` command."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import naive
import numpy as np
import pytest
from tiny_ltr import write_tiny_letor

from gbdt_plrank import metrics
from gbdt_plrank._evaluation import Halves, PolicyValue
from gbdt_plrank._fairness import FairnessSpec
from gbdt_plrank._ranking_metric import RankingMetric
from gbdt_plrank.cli import main
from gbdt_plrank.datasets import Split
from gbdt_plrank.harness.config import ConfigError
from gbdt_plrank.harness.frontier_config import load_frontier_config
from gbdt_plrank.harness.frontier_report import Point, compare_points
from gbdt_plrank.harness.policy_eval import (
    evaluate_oracle,
    evaluate_policy,
    evaluate_ranking,
    validation_scale,
)

K = 3


def _split(seed: int = 0, sizes=(4, 5, 3)) -> Split:
    rng = np.random.default_rng(seed)
    n = sum(sizes)
    y = rng.integers(0, 3, size=n).astype(float)
    for start in np.cumsum((0, *sizes[:-1])):
        y[start] = 2.0  # every query has a relevant document
    qid = np.repeat(np.arange(len(sizes)) + 10, sizes)
    return Split(np.zeros((n, 1)), y, qid)


def _exact(split: Split, margins: np.ndarray):
    """Exact per-query expected NDCG@K, EE-L and disparity by enumeration."""
    theta = 1.0 / np.log2(np.arange(2, K + 2))
    out = {"ndcg": [], "ee_l": [], "disparity": []}
    for q in np.unique(split.qid):
        rows = split.qid == q
        y, m = split.y[rows], margins[rows]
        E = naive.exact_exposure(m, theta[: min(K, len(y))])
        rho, _ = naive.rewards(y, K=K, metric="ndcg")
        out["ndcg"].append(float(E @ rho))
        out["ee_l"].append(float(metrics.expected_exposure_loss(y, E, k=K)))
        out["disparity"].append(float(metrics.relevance_proportional_disparity(y, E)))
    return {name: np.array(v) for name, v in out.items()}


def test_policy_evaluation_is_unbiased():
    split = _split()
    margins = np.random.default_rng(1).normal(size=split.y.shape[0])
    exact = _exact(split, margins)
    runs = [evaluate_policy(margins, split, k=K, n_samples=20, seed=2 * s, n_jobs=1)
            for s in range(300)]
    for name in ("ndcg", "ee_l", "disparity"):
        values = np.array([getattr(r, name) for r in runs])
        se = values.std(axis=0, ddof=1) / math.sqrt(len(runs))
        z = (values.mean(axis=0) - exact[name]) / se
        assert np.abs(z).max() < 5, (name, z)
    # the plain plug-in EE-L of 4 rankings is biased upwards; the estimate above is not
    plain, fixed = [], []
    for s in range(300):
        h = PolicyValue(RankingMetric("ndcg", K, "exp"), None, split, n_samples=4, seed=2 * s,
                        n_jobs=1).halves(margins)
        plain.append(metrics.expected_exposure_loss(split.y, h.exposure, split.qid, k=K))
        fixed.append(evaluate_policy(margins, split, k=K, n_samples=4, seed=2 * s,
                                     n_jobs=1).ee_l.mean())
    exact_mean = exact["ee_l"].mean()
    assert np.mean(plain) - exact_mean > 5 * np.std(plain, ddof=1) / math.sqrt(300)
    assert abs(np.mean(fixed) - exact_mean) < 5 * np.std(fixed, ddof=1) / math.sqrt(300)


def test_polarisation_identity_is_exact():
    split = _split(3)
    rng = np.random.default_rng(4)
    a, b = rng.random(split.y.shape[0]), rng.random(split.y.shape[0])
    h = Halves(a, b)
    eps = FairnessSpec.target(split.y, split.group_ptr, 1.0 / np.log2(np.arange(2, K + 2)))
    q = np.unique(split.qid, return_inverse=True)[1]
    bilinear = np.bincount(q, (a - eps) * (b - eps))
    got = h.unbiased(lambda x: metrics.expected_exposure_loss(split.y, x, split.qid, k=K,
                                                              per_query=True))
    np.testing.assert_allclose(got, bilinear, rtol=0, atol=1e-12)


def test_mean_of_sampled_ndcg_equals_the_exposure_form():
    split = _split(5, sizes=(6, 2, 7, 4))
    margins = np.random.default_rng(6).normal(size=split.y.shape[0])
    v = evaluate_policy(margins, split, k=K, n_samples=40, seed=9, n_jobs=1)
    assert v.mc_mean == pytest.approx(v.ndcg.mean(), abs=1e-12)
    assert v.mc_var > 0 and v.n_samples == 40


def test_deterministic_ranking_and_oracle():
    split = _split(7)
    n = split.y.shape[0]
    scores = np.random.default_rng(8).permutation(n).astype(float)  # distinct, 1 apart
    det = evaluate_ranking(scores, split, k=K)
    np.testing.assert_allclose(det.ndcg, metrics.ndcg(split.y, scores, split.qid, k=K,
                                                     per_query=True))
    sharp = 40.0 * scores  # within 300 of each other, e^-40 apart: PL draws the ranking
    huge = evaluate_policy(sharp, split, k=K, n_samples=4, seed=0, n_jobs=1)
    for name in ("ndcg", "ee_l", "disparity"):  # a sharp policy is the ranking
        np.testing.assert_allclose(getattr(huge, name), getattr(det, name), atol=1e-12)
    oracle = evaluate_oracle(split, k=K)
    np.testing.assert_allclose(oracle.ee_l, 0.0, atol=1e-15)
    np.testing.assert_allclose(oracle.ndcg, 1.0)
    assert oracle.mc_var == 0.0


def test_validation_scale():
    split = _split(9, sizes=(3, 1, 4))
    scores = np.array([1.0, 2.0, 3.0, 7.0, 0.0, 0.0, 2.0, 2.0])
    within = [np.var([1.0, 2.0, 3.0]), np.var([0.0, 0.0, 2.0, 2.0])]
    assert validation_scale(scores, split) == pytest.approx(math.sqrt(np.mean(within)))
    assert validation_scale(np.zeros(8), split) == 1.0


def test_compare_points_verdicts():
    def point(curve, weight, temperature, ndcg, ee_l):
        queries = [("d/Fold1", q) for q in range(4)]
        offsets = np.array([-0.01, 0.01, -0.02, 0.02])
        return Point("d", curve, weight, temperature, 1,
                     dict(zip(queries, ndcg + offsets)), dict(zip(queries, ee_l + 0 * offsets)),
                     dict(zip(queries, 0 * offsets)), 0.0)

    points = [
        point("plrank-fair", 0.1, 0.0, 0.60, 0.55), point("plrank-fair", 1.0, 0.0, 0.50, 0.45),
        point("lambdamart", 0.0, 1.0, 0.55, 0.56),   # fair w=0.1 is fairer and better
        point("lambdamart", 0.0, 0.5, 0.70, 0.80),   # fair w=0.1 is fairer but worse
        point("lambdamart", 0.0, 4.0, 0.40, 0.40),   # no fair policy is as fair
        point("lambdamart", 0.0, 2.0, 0.53, 0.50),   # a half-half mixture is as fair and better
    ]
    verdicts = {(c.curve, c.temperature): c for c in compare_points(points)}
    assert verdicts["lambdamart", 1.0].verdict == "higher by > 1 s.e."
    assert verdicts["lambdamart", 1.0].fair == "w=0.1"
    assert verdicts["lambdamart", 1.0].difference == pytest.approx(0.05)
    assert verdicts["lambdamart", 0.5].verdict == "not higher by > 1 s.e."
    assert verdicts["lambdamart", 4.0].verdict == "not reached"
    mixed = verdicts["lambdamart", 2.0]
    assert mixed.fair == "0.50 w=1 + 0.50 w=0.1" and mixed.fair_ee_l == pytest.approx(0.50)
    assert mixed.fair_ndcg == pytest.approx(0.55) and mixed.difference == pytest.approx(0.02)
    assert mixed.verdict == "higher by > 1 s.e."
    # a fair policy under a temperature competes with the deterministic rankers' points, not
    # with the relevance-only PL-Rank's (the weight-0 policy under the same temperatures)
    sharp = point("plrank-fair", 0.1, 0.25, 0.75, 0.85)
    points += [sharp, point("plrank", 0.0, 0.25, 0.74, 0.85)]
    verdicts = {(c.curve, c.temperature): c for c in compare_points(points)}
    assert verdicts["lambdamart", 0.5].fair == "0.17 w=0.1 + 0.83 w=0.1 T=0.25"
    assert verdicts["lambdamart", 0.5].verdict == "higher by > 1 s.e."
    assert verdicts["plrank", 0.25].fair == "w=0.1"
    assert verdicts["plrank", 0.25].verdict == "not higher by > 1 s.e."


BASE = 'datasets = ["mq2008"]\n'


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (BASE + "colour = 1", "unknown key 'colour'"),
        (BASE + "fairness_weights = [1, -1]", "fairness_weights must be a non-empty list of "
         "distinct finite numbers >= 0, but -1 is given"),
        (BASE + "fairness_weights = [1, 1]", "is repeated"),
        (BASE + "temperatures = [0, 1]", "temperatures must be a non-empty list of distinct "
         "finite numbers > 0"),
        (BASE + "n_samples = 101", "n_samples must be an even integer >= 2, but 101"),
        (BASE + 'plrank_method = "plrank-xgb-raw"', "plrank_method must be one of 'plrank-xgb', "
         "'plrank-lgb'"),
        (BASE + '[plrank]\nfairness = "expected-exposure"', "fairness is set by the command"),
        (BASE + '[plrank]\nmetric = "precision"', "metric must be one of 'ndcg', 'dcg', but "
         "'precision' is given"),
        (BASE + "[params.pairwise-xgb]\neta = 0.1", "'pairwise-xgb' is not one of them"),
        (BASE + "[trees]\nrounds = 0", "trees.rounds must be an integer >= 1"),
    ],
)
def test_config_errors(tmp_path: Path, text: str, message: str):
    path = tmp_path / "f.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_frontier_config(path)
    assert message in str(info.value)


def test_fairness_command_writes_the_frontier_and_resumes(tmp_path: Path, capsys):
    data = write_tiny_letor(tmp_path / "tiny")
    config = tmp_path / "fair.toml"
    config.write_text(
        f"datasets = [{str(data)!r}]\nk = 3\nfairness_weights = [0.5, 2]\n"
        f"temperatures = [0.5, 2]\nn_samples = 20\n"
        f"out = {str(tmp_path / 'out')!r}\n"
        "[trees]\nrounds = 6\nearly_stopping_rounds = 2\nlearning_rate = 0.3\nn_jobs = 1\n"
        "[plrank]\nN = 10\n"
    )
    assert main(["fairness", str(config)]) == 0
    out = tmp_path / "out"
    for name in ("frontier.csv", "frontier.md", "frontier.png", "trainings.jsonl"):
        assert (out / name).is_file()
    with (out / "frontier.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    curves = {(r["curve"], r["fairness_weight"], r["temperature"]) for r in rows}
    # 3 temperature curves, 2 fair weights as trained and under both temperatures, 2 points
    assert len(rows) == 3 * 2 + 2 * (1 + 2) + 2 == len(curves)
    trainings = (out / "trainings.jsonl").read_text().splitlines()
    assert len(trainings) == 5
    records = [json.loads(line) for line in trainings]
    fair = [r for r in records if r["curve"] == "plrank-fair"]
    assert all("validation_objective" in r for r in fair)
    # interrupted while writing the last training's line: it and the evaluations after it are
    # lost, and the rerun trains that one again, to the same margins and values
    evaluations = out / "evaluations.jsonl"
    done = evaluations.read_text().splitlines()
    (out / "trainings.jsonl").write_text("\n".join(trainings[:-1]) + '\n{"dataset": "ti')
    evaluations.write_text("\n".join(done[:-2]) + "\n")
    capsys.readouterr()
    assert main(["fairness", str(config)]) == 0
    assert "1 of 5 trainings to run or evaluate" in capsys.readouterr().out
    again = (out / "trainings.jsonl").read_text().splitlines()
    assert len(again) == 5 and json.loads(again[-1])["margins"] == records[-1]["margins"]
    redone = evaluations.read_text().splitlines()
    assert [json.loads(r)["ndcg"] for r in redone] == [json.loads(r)["ndcg"] for r in done]
    # other settings are refused once results exist
    config.write_text(config.read_text().replace("n_samples = 20", "n_samples = 40"))
    assert main(["fairness", str(config)]) == 2
    assert "n_samples differs" in capsys.readouterr().err


def test_shipped_frontier_config_loads():
    config = load_frontier_config(Path(__file__).resolve().parents[1] / "configs" / "fairness.toml")
    assert config.datasets == ("mq2008", "mq2007-agg") and config.folds == (1, 2, 3, 4, 5)
    assert config.k == 10 and len(config.fairness_weights) >= 5 and len(config.temperatures) >= 5
