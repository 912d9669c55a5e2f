"""The fairness frontier: policy evaluation against exact values, early stopping on the policy,
the configuration's errors, and the resumable ``gbdt-plrank fairness`` command."""

from __future__ import annotations

import csv
import json
import math
from dataclasses import replace
from pathlib import Path

import naive
import numpy as np
import pytest
from tiny_ltr import write_tiny_letor

from gbdt_plrank import metrics
from gbdt_plrank._fairness_terms import equal_exposure_target
from gbdt_plrank._ranking_metric import RankingMetric
from gbdt_plrank._synthetic import WebGroups
from gbdt_plrank._training.evaluation import Halves, PolicyEvaluator
from gbdt_plrank.cli import main
from gbdt_plrank.datasets import LTRDataset, Split, load_dataset
from gbdt_plrank.harness.frontier import report
from gbdt_plrank.harness.frontier import run as frontier
from gbdt_plrank.harness.frontier.config import load_frontier_config
from gbdt_plrank.harness.frontier.report import (
    Point,
    _best,
    _Candidates,
    _quadratic,
    compare_points,
    post_hoc_floor,
    training_times,
)
from gbdt_plrank.harness.frontier.run import EVAL_SEED, EvalKey, _evaluate
from gbdt_plrank.harness.item_groups import (
    ProtectedGroup,
    protected_rows,
    with_item_groups,
    without_item_groups,
)
from gbdt_plrank.harness.policy_eval import (
    MixtureMeasure,
    evaluate_oracle,
    evaluate_policy,
    evaluate_ranking,
    mixture_values,
    validation_scale,
)
from gbdt_plrank.harness.settings import ConfigError
from gbdt_plrank.harness.training import train

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
    runs = [
        evaluate_policy(margins, split, k=K, n_samples=20, seed=2 * s, n_jobs=1) for s in range(300)
    ]
    for name in ("ndcg", "ee_l", "disparity"):
        values = np.array([r.values[name] for r in runs])
        se = values.std(axis=0, ddof=1) / math.sqrt(len(runs))
        z = (values.mean(axis=0) - exact[name]) / se
        assert np.abs(z).max() < 5, (name, z)
    # the plain plug-in EE-L of 4 rankings is biased upwards; the estimate above is not
    plain, fixed = [], []
    for s in range(300):
        h = PolicyEvaluator(
            RankingMetric("ndcg", K, "exp"), None, split, n_samples=4, seed=2 * s, n_jobs=1
        ).halves(margins)
        plain.append(metrics.expected_exposure_loss(split.y, h.exposure, split.qid, k=K))
        fixed.append(
            evaluate_policy(margins, split, k=K, n_samples=4, seed=2 * s, n_jobs=1)
            .values["ee_l"]
            .mean()
        )
    exact_mean = exact["ee_l"].mean()
    assert np.mean(plain) - exact_mean > 5 * np.std(plain, ddof=1) / math.sqrt(300)
    assert abs(np.mean(fixed) - exact_mean) < 5 * np.std(fixed, ddof=1) / math.sqrt(300)


def test_polarisation_identity_is_exact():
    split = _split(3)
    rng = np.random.default_rng(4)
    a, b = rng.random(split.y.shape[0]), rng.random(split.y.shape[0])
    h = Halves(a, b)
    eps = equal_exposure_target(split.y, split.group_ptr, 1.0 / np.log2(np.arange(2, K + 2)))
    q = np.unique(split.qid, return_inverse=True)[1]
    bilinear = np.bincount(q, (a - eps) * (b - eps))
    got = h.unbiased(
        lambda x: metrics.expected_exposure_loss(split.y, x, split.qid, k=K, per_query=True)
    )
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
    np.testing.assert_allclose(
        det.ndcg, metrics.ndcg(split.y, scores, split.qid, k=K, per_query=True)
    )
    sharp = 40.0 * scores  # within 300 of each other, e^-40 apart: PL draws the ranking
    huge = evaluate_policy(sharp, split, k=K, n_samples=4, seed=0, n_jobs=1)
    for name in ("ndcg", "ee_l", "disparity"):  # a sharp policy is the ranking
        np.testing.assert_allclose(huge.values[name], det.values[name], atol=1e-12)
    oracle = evaluate_oracle(split, k=K)
    np.testing.assert_allclose(oracle.values["ee_l"], 0.0, atol=1e-15)
    np.testing.assert_allclose(oracle.ndcg, 1.0)
    assert oracle.mc_var == 0.0


def test_validation_scale():
    split = _split(9, sizes=(3, 1, 4))
    scores = np.array([1.0, 2.0, 3.0, 7.0, 0.0, 0.0, 2.0, 2.0])
    within = [np.var([1.0, 2.0, 3.0]), np.var([0.0, 0.0, 2.0, 2.0])]
    assert validation_scale(scores, split) == pytest.approx(math.sqrt(np.mean(within)))
    assert validation_scale(np.zeros(8), split) == 1.0


def _point(split, curve, weight, temperature, ndcg, unfair, offset=0.0, name="d"):
    queries = [(f"{name}/Fold1", q) for q in range(4)]
    noise = np.array([-0.01, 0.01, -0.02, 0.02])  # the same in every point: paired s.e. 0
    values = {
        "ndcg": dict(zip(queries, ndcg + noise)),
        "group_disparity": dict(zip(queries, unfair + 0 * noise)),
    }
    return Point(name, split, curve, weight, temperature, offset, 1, values, 0.0)


def _both(curve, weight, temperature, ndcg, unfair, offset=0.0):
    return [_point(s, curve, weight, temperature, ndcg, unfair, offset) for s in ("vali", "test")]


def test_compare_points_verdicts():
    points = [
        *_both("plrank-fair", 0.1, 0.0, 0.60, 0.55),
        *_both("plrank-fair", 1.0, 0.0, 0.50, 0.45),
        *_both("plrank-fair", 0.0, 0.0, 0.90, 0.10),  # weight 0 is a relevance model: left out
        *_both("lambdamart", 0.0, 1.0, 0.55, 0.56),  # fair w=0.1 is fairer and better
        *_both("lambdamart", 0.0, 0.5, 0.70, 0.80),  # fair w=0.1 is fairer but worse
        *_both("lambdamart", 0.0, 4.0, 0.40, 0.40),  # no fair policy is as fair
        *_both("lambdamart", 0.0, 2.0, 0.53, 0.50),  # a half-half mixture is as fair and better
        *_both("lambdamart", 0.0, 2.0, 0.45, 0.60, offset=1.0),  # dominated: off the envelope
    ]
    comparisons = compare_points(points, measure="group_disparity")
    found = {(c.curve, c.temperature, c.offset): c for c in comparisons if c.side == "post hoc"}
    best = found["lambdamart", 1.0, 0.0]
    assert best.verdict == "above" and best.at_level.name == "w=0.1"
    assert best.at_level.ndcg_difference == pytest.approx(0.05)
    assert best.at_level.unfairness_difference == pytest.approx(-0.01)
    assert found["lambdamart", 0.5, 0.0].verdict == "not above"
    assert found["lambdamart", 0.5, 0.0].fairer_verdict == "not reached"
    assert found["lambdamart", 4.0, 0.0].verdict == "not reached"
    # at no less NDCG than 0.40, w=1 is the fairest, and less fair than the post-hoc point
    assert found["lambdamart", 4.0, 0.0].at_ndcg.name == "w=1"
    assert found["lambdamart", 4.0, 0.0].fairer_verdict == "not above"
    mixed = found["lambdamart", 2.0, 0.0].at_level
    assert mixed.name == "0.50 w=1 + 0.50 w=0.1" and mixed.unfairness == pytest.approx(0.50)
    assert mixed.ndcg == pytest.approx(0.55) and mixed.ndcg_difference == pytest.approx(0.02)
    # at no less NDCG than 0.55, the fairest is w=0.1 (0.55 < 0.56): fairer by 0.01
    assert found["lambdamart", 1.0, 0.0].fairer_verdict == "above"
    envelope = {k for k, c in found.items() if c.envelope}
    assert envelope == {("lambdamart", t, 0.0) for t in (0.5, 1.0, 2.0, 4.0)}
    # each fair policy against the post-hoc policies: w=0.1 (0.60 at 0.55) against the best
    # post-hoc mixture at no more unfairness, 5/6 of T=2 (0.53 at 0.50) and 1/6 of T=0.5
    # (0.70 at 0.80)
    fair = {c.weight: c for c in comparisons if c.side == "fair"}
    assert set(fair) == {0.1, 1.0}
    match = fair[0.1].at_level
    assert match.name == "0.83 lambdamart T=2 + 0.17 lambdamart T=0.5"
    assert match.ndcg_difference == pytest.approx(0.60 - (5 * 0.53 + 0.70) / 6)
    assert match.unfairness_difference == pytest.approx(0.0)
    assert fair[0.1].verdict == "above"
    # at no less NDCG than w=1's 0.50, the fairest post-hoc policy is 10/13 of T=2 (0.53 at
    # 0.50) and 3/13 of T=4 (0.40 at 0.40): NDCG 0.50 at 0.4769, less fair than w=1's 0.45
    match = fair[1.0].at_ndcg
    assert match.ndcg_difference == pytest.approx(0.0)
    assert match.unfairness_difference == pytest.approx(0.45 - (10 * 0.50 + 3 * 0.40) / 13)
    assert fair[1.0].fairer_verdict == "above"


def test_compare_points_chooses_on_validation():
    points = [
        *_both("plrank-fair", 0.1, 0.0, 0.60, 0.55),
        *_both("lambdamart", 0.0, 1.0, 0.55, 0.56),
        # best on validation, worst on test: chosen all the same, and the test figures say so
        _point("vali", "plrank-fair", 3.0, 0.0, 0.65, 0.50),
        _point("test", "plrank-fair", 3.0, 0.0, 0.40, 0.50),
    ]
    (c,) = [c for c in compare_points(points, measure="group_disparity") if c.side == "post hoc"]
    assert c.at_level.name == "w=3" and c.at_level.ndcg_difference == pytest.approx(-0.15)
    assert c.verdict == "not above"
    # more relevant on test, but the validation level of unfairness does not hold there
    points[-1] = _point("test", "plrank-fair", 3.0, 0.0, 0.70, 0.70)
    (c,) = [c for c in compare_points(points, measure="group_disparity") if c.side == "post hoc"]
    assert c.verdict == "more relevant, less fair"
    assert c.at_level.unfairness_difference == pytest.approx(0.14)


BASE = 'datasets = ["mq2008"]\n'


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (BASE + "colour = 1", "unknown key 'colour'"),
        (
            BASE + "fairness_weights = [1, -1]",
            "fairness_weights must be a non-empty list of "
            "distinct finite numbers >= 0, but -1 is given",
        ),
        (BASE + "fairness_weights = [1, 1]", "is repeated"),
        (
            BASE + "temperatures = [0, 1]",
            "temperatures must be a non-empty list of distinct finite numbers > 0",
        ),
        (BASE + "n_samples = 101", "n_samples must be an even integer >= 2, but 101"),
        (
            BASE + 'plrank_method = "plrank-xgb-raw"',
            "plrank_method must be one of 'plrank-xgb', 'plrank-lgb'",
        ),
        (BASE + '[plrank]\nfairness = "expected-exposure"', "fairness is set by the command"),
        (
            BASE + '[plrank]\nmetric = "precision"',
            "metric must be one of 'ndcg', 'dcg', but 'precision' is given",
        ),
        (BASE + "[params.pairwise-xgb]\neta = 0.1", "'pairwise-xgb' is not one of them"),
        (BASE + "[trees]\nrounds = 0", "trees.rounds must be an integer >= 1"),
        (
            BASE + 'fairness = "fair"',
            "fairness must be one of 'expected-exposure', "
            "'disparity', 'group-disparity', but 'fair' is given",
        ),
        (
            BASE + 'fairness = "group-disparity"',
            "fairness = 'group-disparity' needs item groups: "
            "give protected = {feature = F, quantile = q}",
        ),
        (
            BASE + "group_offsets = [-1, 1]",
            "group_offsets shift the protected group and need a "
            "protected table, but group_offsets = [-1.0, 1.0] is given without one",
        ),
        (
            BASE + "protected = {feature = 41, quantile = 1.5}",
            "protected.quantile must be a number in (0, 1), but 1.5 is given",
        ),
        (
            BASE + "protected = {feature = 41, quantile = 0}",
            "protected.quantile must be a number in (0, 1), but 0 is given",
        ),
        (
            BASE + "protected = {feature = 0}",
            "protected.feature must be a feature number >= 1 "
            "(as in the data files), but 0 is given",
        ),
        (BASE + "protected = {feature = 4, share = 0.5}", "unknown key 'protected.share'"),
        (
            BASE + "fair_start = {model = 'plrank', temperature = 0.25}",
            "fair_start.model must be one of 'lambdamart', 'lambdarank', but 'plrank' is given",
        ),
        (
            BASE + "fair_start = {model = 'lambdamart', temperature = 0}",
            "fair_start.temperature must be a finite number > 0, but 0 is given",
        ),
        (BASE + "fair_start = {model = 'lambdamart'}", "fair_start must set 'temperature'"),
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
    curves = {(r["split"], r["curve"], r["fairness_weight"], r["temperature"]) for r in rows}
    # on validation and test: 3 temperature curves, 2 fair weights as trained and under both
    # temperatures, deterministic LambdaMART; the oracle on test
    assert len(rows) == 2 * (3 * 2 + 2 * (1 + 2) + 1) + 1 == len(curves)
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


CONFIGS = Path(__file__).resolve().parents[1] / "configs"


def test_shipped_frontier_config_loads():
    config = load_frontier_config(CONFIGS / "fairness.toml")
    assert config.datasets == ("mq2008", "mq2007-agg") and config.folds == (1, 2, 3, 4, 5)
    assert config.drop_empty_queries and config.out == "benchmarks/results/fairness_ee"
    assert config.k == 10 and len(config.fairness_weights) >= 5 and len(config.temperatures) >= 5
    assert config.fairness == "expected-exposure" and config.protected is None


@pytest.mark.parametrize(
    ("name", "fairness", "datasets", "feature", "quantile"),
    [
        ("fairness_group", "group-disparity", ("mq2008",), 41, 0.5),
        ("fairness_disparity", "disparity", ("mq2008", "mq2007-agg"), None, None),
    ],
)
def test_shipped_group_and_disparity_configs_load(name, fairness, datasets, feature, quantile):
    config = load_frontier_config(CONFIGS / f"{name}.toml")
    assert config.fairness == fairness and config.datasets == datasets
    assert config.out == f"benchmarks/results/{name}" and config.k == 10
    assert config.fairness_weights == (0.0, 0.3, 1.0, 3.0, 10.0)
    if feature is None:
        assert config.protected is None and config.group_offsets == (0.0,)
    else:
        assert (config.protected.feature, config.protected.quantile) == (feature, quantile)
        assert config.group_offsets == (-2.0, -1.0, 0.0, 1.0, 2.0)


def test_shipped_mslr_cv_group_config_cross_validates():
    config = load_frontier_config(CONFIGS / "fairness_group_mslr_cv.toml")
    assert config.datasets == ("mslr-sample",) and config.cross_validation
    assert config.folds == (1, 2, 3, 4, 5) and config.settings()["cross_validation"] is True
    assert config.protected == ProtectedGroup(feature=133, quantile=0.4)
    assert config.out == "benchmarks/results/fairness_group_mslr_cv"
    assert (config.ndcg_tolerance, config.standard_errors) == (0.01, 2.0)
    labels = frontier.fold_sources(config)
    assert list(labels) == [f"mslr-sample-cv/Fold{k}" for k in range(1, 6)]
    # every query is a test query once, and the groups come from each fold's training split
    tests = []
    for k in range(1, 6):
        fold = frontier.load_fold(config, "mslr-sample", k)
        assert fold.name == f"mslr-sample-cv/Fold{k}"
        # the test split without its queries lacking a relevant document
        assert (fold.train.n_queries, fold.vali.n_queries) == (54, 18)
        assert fold.test.n_queries <= 18 and fold.test.item_groups is not None
        tests.append(np.unique(fold.test.qid))
    everyone = np.concatenate(tests)
    pooled = load_dataset("mslr-sample")
    relevant = np.concatenate(
        [np.unique(s.qid[s.y > 0]) for s in (pooled.train, pooled.vali, pooled.test)]
    )
    assert everyone.size == np.unique(everyone).size == relevant.size


def test_cross_validation_needs_one_split(tmp_path: Path):
    path = tmp_path / "f.toml"
    path.write_text(BASE + "cross_validation = true\nfolds = [1, 2]\n")
    with pytest.raises(ConfigError, match="'mq2008' has folds of its own"):
        frontier.run_frontier(load_frontier_config(path), echo=lambda _: None)


# --------------------------------------------------------------------------------------------
# Item groups from a configuration, group offsets and the group frontier
# --------------------------------------------------------------------------------------------
def _grouped_dataset(train_x, vali_x, test_x) -> LTRDataset:
    def split(x):
        x = np.asarray(x, dtype=float)
        return Split(
            np.column_stack([np.ones_like(x), x]),
            np.ones_like(x),
            np.repeat(np.arange(len(x) // 2), 2),
        )

    return LTRDataset("d", split(train_x), split(vali_x), split(test_x))


def test_protected_group_threshold_comes_from_the_training_split():
    data = _grouped_dataset(np.arange(10), [4, 5, 9, 8], [100, -1])
    grouped = with_item_groups(data, ProtectedGroup(feature=2, quantile=0.5))  # t = 4.5
    np.testing.assert_array_equal(grouped.train.item_groups, [1] * 5 + [0] * 5)
    # validation's own median (6.5) would group 5 with the protected documents: it does not
    np.testing.assert_array_equal(grouped.vali.item_groups, [1, 0, 0, 0])
    np.testing.assert_array_equal(grouped.test.item_groups, [0, 1])
    np.testing.assert_array_equal(protected_rows(grouped.vali), [1.0, 0.0, 0.0, 0.0])
    ids = with_item_groups(_grouped_dataset([0, 2] * 2, [1, 0], [3, 0]), ProtectedGroup(feature=2))
    np.testing.assert_array_equal(ids.train.item_groups, [0, 2, 0, 2])
    assert without_item_groups(grouped).test.item_groups is None


@pytest.mark.parametrize(
    ("data", "protected", "message"),
    [
        (
            _grouped_dataset(np.arange(4), [0, 3], [0, 3]),
            ProtectedGroup(feature=3, quantile=0.5),
            "protected.feature must be a feature of d (1 to 2), but 3 is given",
        ),
        (
            _grouped_dataset(np.arange(4), [0, 3], [2, 3]),
            ProtectedGroup(feature=2, quantile=0.5),
            "with the threshold 1.5 (below it: group 1) the test split of d holds only group 0",
        ),
        (
            _grouped_dataset(np.arange(4), [0, 3], [0, 3]),
            ProtectedGroup(feature=1, quantile=0.5),
            "the train split of d holds only group 0; choose another feature or quantile",
        ),
        (
            _grouped_dataset([0, 1, 0, 1], [0, 0.5], [0, 1]),
            ProtectedGroup(feature=2),
            "protected = {feature = 2} reads feature 2 as item group ids (integers >= 0), but the "
            "vali split of d holds 0.5",
        ),
    ],
)
def test_protected_group_errors(data, protected, message):
    with pytest.raises(ConfigError) as info:
        with_item_groups(data, protected)
    assert message in str(info.value)


def test_group_offset_policy_shifts_the_protected_documents(tmp_path: Path):
    path = tmp_path / "f.toml"
    path.write_text(
        BASE + 'fairness = "group-disparity"\nprotected = {feature = 2}\n'
        "group_offsets = [-1, 0, 1]\nn_samples = 20\n"
    )
    config = load_frontier_config(path)
    split = replace(_split(), item_groups=np.tile([0, 1], 6))
    margins = np.random.default_rng(3).normal(size=12)
    key = EvalKey("d", "lambdamart", 0.0, 0.5, 1.5, "test", 0)
    got = _evaluate(key, margins, 2.0, split, config)
    # pi((m + b sigma a) / (T sigma)) with b = 1.5, sigma = 2, T = 0.5
    want = evaluate_policy(
        (margins + 3.0 * np.tile([0, 1], 6)) / 1.0,
        split,
        k=10,
        n_samples=20,
        seed=EVAL_SEED,
        n_jobs=1,
    )
    for name in ("ndcg", "ee_l", "disparity", "group_disparity"):
        np.testing.assert_array_equal(got.values[name], want.values[name])


def naive_exposure(split: Split, margins: np.ndarray) -> np.ndarray:
    """The exact exposure at cut-off K of the PL policy of ``margins`` (enumeration)."""
    theta = 1.0 / np.log2(np.arange(2, K + 2))
    out = np.empty_like(margins)
    for q in np.unique(split.qid):
        rows = split.qid == q
        out[rows] = naive.exact_exposure(margins[rows], theta[: min(K, int(rows.sum()))])
    return out


def test_group_disparity_of_a_policy_is_unbiased():
    split = replace(_split(), item_groups=np.tile([0, 1, 1], 4))
    margins = np.random.default_rng(1).normal(size=split.y.shape[0])
    exact = metrics.group_disparity(
        split.y, naive_exposure(split, margins), split.qid, split.item_groups, per_query=True
    )
    runs = np.array(
        [
            evaluate_policy(
                margins, split, k=K, n_samples=8, seed=2 * s, n_jobs=1, monte_carlo=False
            ).values["group_disparity"]
            for s in range(300)
        ]
    )
    z = (runs.mean(axis=0) - exact) / (runs.std(axis=0, ddof=1) / math.sqrt(300) + 1e-15)
    assert np.abs(z).max() < 5, z


def test_group_frontier_end_to_end(tmp_path: Path, monkeypatch):
    data = write_tiny_letor(tmp_path / "tiny")
    config = tmp_path / "group.toml"
    config.write_text(
        f"datasets = [{str(data)!r}]\nk = 3\nfairness = 'group-disparity'\n"
        "protected = {feature = 41, quantile = 0.5}\nfairness_weights = [0, 2]\n"
        f"temperatures = [0.5, 2]\ngroup_offsets = [-1, 0, 1]\nn_samples = 20\n"
        f"out = {str(tmp_path / 'out')!r}\n"
        "[trees]\nrounds = 4\nearly_stopping_rounds = 2\nlearning_rate = 0.3\nn_jobs = 1\n"
        "[plrank]\nN = 10\n"
    )
    seen = []

    def recording_train(name, dataset, **kwargs):
        seen.append(
            (
                name,
                kwargs["params"],
                dataset.train.item_groups is not None,
                dataset.vali.item_groups is not None,
            )
        )
        return train(name, dataset, **kwargs)

    monkeypatch.setattr(frontier, "train", recording_train)
    assert main(["fairness", str(config)]) == 0
    # the item groups reach the group-fair trainings (objective and early stopping), only them
    for _name, params, train_groups, vali_groups in seen:
        fair = params.get("plrank", {}).get("fairness") == "group-disparity"
        assert train_groups == vali_groups == fair
    assert sum(train_groups for *_, train_groups, _ in seen) == 2
    with (tmp_path / "out" / "frontier.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    post = [r for r in rows if r["curve"] in ("lambdamart", "lambdarank", "plrank")]
    assert len(post) == 2 * 3 * 2 * 3  # splits x curves x temperatures x offsets
    assert all(math.isfinite(float(r["group_disparity"])) for r in rows)
    text = (tmp_path / "out" / "frontier.md").read_text()
    assert "post-hoc envelope" in text and "group_disparity" in text
    assert "Post-hoc floor (chosen on validation, test values)" in text
    assert "### Training time" in text and "| 1.00x |" in text
    # every evaluation keeps its exposures, from which mixtures are measured
    assert "is measured from the mixture of their exposures" in text
    for line in (tmp_path / "out" / "evaluations.jsonl").read_text().splitlines():
        record = json.loads(line)
        exposures = np.load(tmp_path / "out" / record["exposures"])
        assert exposures.shape[0] == 2 and np.all(exposures >= 0)


def test_fair_start_trains_from_the_baseline_policy(tmp_path: Path, monkeypatch):
    """With fair_start, LambdaMART's training-split margins are stored with its training and
    every fair training starts, on every split, from its margins over T times their validation
    scale; the other trainings start from nothing; the report says where the fair curve
    started."""
    data = write_tiny_letor(tmp_path / "tiny")
    config = tmp_path / "start.toml"
    config.write_text(
        f"datasets = [{str(data)!r}]\nk = 3\nfairness = 'group-disparity'\n"
        "protected = {feature = 41, quantile = 0.5}\nfairness_weights = [2, 5]\n"
        "fair_start = {model = 'lambdamart', temperature = 0.5}\n"
        f"temperatures = [0.5, 2]\nn_samples = 20\nout = {str(tmp_path / 'out')!r}\n"
        "[trees]\nrounds = 4\nearly_stopping_rounds = 2\nlearning_rate = 0.3\nn_jobs = 1\n"
        "[plrank]\nN = 10\n"
    )
    seen = []

    def recording_train(name, dataset, **kwargs):
        fit = train(name, dataset, **kwargs)
        seen.append((name, kwargs, dataset, fit))
        return fit

    monkeypatch.setattr(frontier, "train", recording_train)
    assert main(["fairness", str(config)]) == 0
    out = tmp_path / "out"
    records = {
        (r["curve"], r["weight"]): r
        for r in map(json.loads, (out / "trainings.jsonl").read_text().splitlines())
    }
    lambdamart = records["lambdamart", 0.0]
    start = {
        name: np.load(out / lambdamart["margins"][name]) / (0.5 * lambdamart["scale"])
        for name in ("train", "vali", "test")
    }
    fair = [
        (kw, d, fit) for _, kw, d, fit in seen if kw["params"].get("plrank", {}).get("fairness")
    ]
    assert len(fair) == 2 and len(seen) == 5
    for kwargs, dataset, fit in fair:
        for name in ("train", "vali", "test"):
            np.testing.assert_array_equal(getattr(dataset, name).base_margin, start[name])
        assert not kwargs["score_train"]
        # its policy: the start's margins plus its trees'
        weight = kwargs["params"]["plrank"]["fairness_weight"]
        stored = np.load(out / records["plrank-fair", weight]["margins"]["vali"])
        np.testing.assert_array_equal(stored, fit.vali_scores)
        assert not np.array_equal(stored, start["vali"])
    for name, kwargs, dataset, _ in seen:
        if not kwargs["params"].get("plrank", {}).get("fairness"):
            assert dataset.train.base_margin is None and dataset.test.base_margin is None
            assert kwargs["score_train"] == (name == "lambdamart-xgb")
    assert sorted(lambdamart["margins"]) == ["test", "train", "vali"]
    settings = json.loads((out / "settings.json").read_text())
    assert settings["fair_start"] == {"model": "lambdamart", "temperature": 0.5}
    text = (out / "frontier.md").read_text()
    assert (
        "Fair curve: the fair PL-Rank policies start from the lambdamart model's policy at " in text
    )
    seen.clear()
    assert main(["fairness", str(config)]) == 0  # resumes: nothing to train again
    assert seen == []


def test_drop_empty_queries_trains_and_stops_on_the_judged_queries(tmp_path: Path, monkeypatch):
    """With drop_empty_queries every split the frontier trains and stops on holds only queries
    with a relevant document, as the test split it is judged on; the stored settings say so."""
    data = write_tiny_letor(tmp_path / "tiny")
    base = (
        f"datasets = [{str(data)!r}]\nk = 3\nfairness_weights = [0, 1]\ntemperatures = [1]\n"
        "n_samples = 4\n[trees]\nrounds = 2\nn_jobs = 1\n[plrank]\nN = 4\n"
    )
    seen = []

    def recording_train(name, dataset, **kwargs):
        for split in (dataset.train, dataset.vali, dataset.test):
            ptr = split.group_ptr
            seen.append(bool((np.maximum.reduceat(split.y, ptr[:-1]) > 0).all()))
        return train(name, dataset, **kwargs)

    monkeypatch.setattr(frontier, "train", recording_train)
    for drop in (False, True):
        seen.clear()
        config = tmp_path / f"drop_{drop}.toml"
        config.write_text(
            f"out = {str(tmp_path / str(drop))!r}\n"
            f"drop_empty_queries = {str(drop).lower()}\n" + base
        )
        assert main(["fairness", str(config)]) == 0
        settings = json.loads((tmp_path / str(drop) / "settings.json").read_text())
        assert settings.get("drop_empty_queries", False) is drop
        train_vali = [s for i, s in enumerate(seen) if i % 3 != 2]
        assert all(seen[2::3])  # the test split: drop_empty_test_queries
        assert all(train_vali) is drop


# --------------------------------------------------------------------------------------------
# Random mixtures of policies: their group disparity is exact, not the interpolation
# --------------------------------------------------------------------------------------------
def _grouped_split() -> Split:
    groups = np.tile([0, 1, 1], 4)
    return replace(_split(4), item_groups=groups)


class _Source:
    """A MixtureSource in memory: one fold's split, the exposures by name."""

    def __init__(self, split: Split) -> None:
        self.the_split, self.arrays, self.pairs = split, {}, {}
        self.config = type("Config", (), {"k": K})()

    def split(self, fold: str, split: str) -> Split:
        assert fold == "d/Fold1"
        return self.the_split

    def exposures(self, name: str) -> np.ndarray:
        return self.arrays[name]

    def measure(self, fold: str, split: str, column: str) -> MixtureMeasure:
        return MixtureMeasure(self.split(fold, split), k=K, columns=(column,))


def _evaluated_point(source, curve, margins, *, weight=0.0, temperature=1.0, split="test"):
    values = evaluate_policy(margins, source.the_split, k=K, n_samples=40, seed=7, n_jobs=1)
    queries = [("d/Fold1", int(q)) for q in values.qid]
    name = f"{curve} {weight} {temperature} {len(source.arrays)}"
    source.arrays[name] = values.exposures
    return Point(
        "d",
        split,
        curve,
        weight,
        temperature,
        0.0,
        1,
        {m: dict(zip(queries, v)) for m, v in values.values.items() if v is not None},
        0.0,
        {("d/Fold1", 0): name},
    )


def test_mixture_values_are_those_of_the_mixed_exposure():
    """A random mixture's exposure is the mixture of the exposures, and its losses are the
    (unbiased) losses of that mixed exposure: lower than the interpolation, each loss being
    convex, and far lower for two policies that favour opposite groups. One policy's are its
    own."""
    split = _grouped_split()
    margins = np.random.default_rng(5).normal(size=split.y.shape[0])
    shift = 3.0 * protected_rows(split)
    up, down = (
        evaluate_policy(margins + s, split, k=K, n_samples=40, seed=7, n_jobs=1)
        for s in (shift, -shift)
    )
    columns = ("ndcg", "ee_l", "disparity", "group_disparity")
    own = mixture_values(split, np.stack([up.exposures, down.exposures]), k=K, columns=columns)
    for name in columns:
        np.testing.assert_allclose(own[name][0], up.values[name], atol=1e-12)
        np.testing.assert_allclose(own[name][1], down.values[name], atol=1e-12)
    value = PolicyEvaluator(
        RankingMetric("ndcg", K, "exp"), None, split, n_samples=40, seed=7, n_jobs=1
    )
    h_up, h_down = value.halves(margins + shift), value.halves(margins - shift)
    for share in (0.3, 0.5):
        mixed = Halves(
            share * h_up.E_a + (1 - share) * h_down.E_a, share * h_up.E_b + (1 - share) * h_down.E_b
        )
        got = mixture_values(
            split,
            share * up.exposures[None] + (1 - share) * down.exposures[None],
            k=K,
            columns=columns,
        )
        want = mixed.unbiased(
            lambda e: metrics.group_disparity(
                split.y, e, split.qid, split.item_groups, per_query=True
            )
        )
        np.testing.assert_allclose(got["group_disparity"][0], want, atol=1e-12)
        np.testing.assert_allclose(
            got["ndcg"][0], share * up.values["ndcg"] + (1 - share) * down.values["ndcg"]
        )
    half = mixture_values(split, 0.5 * (up.exposures + down.exposures)[None], k=K, columns=columns)
    for name in columns[1:]:
        assert np.all(half[name][0] <= 0.5 * (up.values[name] + down.values[name]) + 1e-12)
    interpolated = 0.5 * (up.values["group_disparity"] + down.values["group_disparity"])
    assert np.sum(half["group_disparity"][0] < 0.25 * interpolated) == 2


def test_candidates_measure_mixtures_from_the_exposures():
    """The report's candidates: with a source, a mixture's measure is that of the mixed
    exposure (and each pair's half-half mixture for the choice); without, the interpolation."""
    split = _grouped_split()
    source = _Source(split)
    margins = np.random.default_rng(5).normal(size=split.y.shape[0])
    shift = 3.0 * protected_rows(split)
    up, down = (_evaluated_point(source, "lambdamart", margins + s) for s in (shift, -shift))
    queries = list(up.ndcg)
    exact = _Candidates([up, down], queries, "group_disparity", split="test", source=source)
    loose = _Candidates([up, down], queries, "group_disparity", split="test")
    assert exact.exact and not loose.exact and loose.cost_mid() is None
    want = mixture_values(
        split,
        0.3 * source.arrays[up.exposures["d/Fold1", 0]][None]
        + 0.7 * source.arrays[down.exposures["d/Fold1", 0]][None],
        k=K,
        columns=("group_disparity",),
    )["group_disparity"][0]
    np.testing.assert_allclose(exact.mixed({0: 0.3, 1: 0.7})["group_disparity"], want)
    np.testing.assert_allclose(
        loose.mixed({0: 0.3, 1: 0.7})["group_disparity"], 0.3 * exact.cost[0] + 0.7 * exact.cost[1]
    )
    mid = exact.cost_mid()
    assert mid[0, 1] == pytest.approx(exact.mixed({0: 0.5, 1: 0.5})["group_disparity"].mean())
    np.testing.assert_allclose(np.diag(mid), exact.cost.mean(axis=1))


def test_a_mixture_fairer_than_both_policies_is_chosen():
    """Two post-hoc policies favouring opposite groups mix to a policy fairer than either: the
    fair policy's post-hoc match at no more group disparity is that mixture (with the
    interpolation no post-hoc policy qualifies), at its exact disparity."""
    groups = np.tile([0, 1], 6)
    split = Split(
        np.zeros((12, 1)), np.tile([1.0, 1.0, 2.0, 2.0], 3), np.repeat([1, 2, 3], 4), groups
    )
    source = _Source(split)
    a = groups.astype(float)
    up = _evaluated_point(source, "lambdamart", 4.0 * a)
    down = _evaluated_point(source, "lambdamart", -4.0 * a, temperature=2.0)
    fair = _evaluated_point(source, "plrank-fair", 1.0 * a, weight=1.0, temperature=0.0)
    unfair = [float(np.mean(list(p.values["group_disparity"].values()))) for p in (up, down, fair)]
    assert unfair[2] < min(unfair[:2])
    both = _Candidates([up, down], list(up.ndcg), "group_disparity", split="test", source=source)
    assert both.mixed({0: 0.5, 1: 0.5})["group_disparity"].mean() < unfair[2]
    points = [replace(p, split=s) for p in (up, down, fair) for s in ("vali", "test")]

    def fair_side(**options):
        (c,) = [
            c
            for c in compare_points(points, measure="group_disparity", **options)
            if c.side == "fair"
        ]
        return c

    c = fair_side(source=source)
    assert c.at_level is not None and "+" in c.at_level.name
    # the chosen mixture meets the fair policy's level exactly (validation = test here)
    assert c.at_level.unfairness == pytest.approx(c.unfairness, abs=1e-9)
    assert c.at_level.unfairness_difference == pytest.approx(0.0, abs=1e-9)
    assert fair_side().at_level is None  # the interpolation: no post-hoc policy as fair


def test_best_mixture_against_a_grid():
    """_best over quadratic costs and values: no share of any pair on a fine grid does better."""
    rng = np.random.default_rng(11)
    for _ in range(20):
        n = 5
        value, cost = rng.normal(size=n), rng.normal(size=n)
        # quadratic mixtures: the half-half point below the interpolation (convex costs)
        cost_mid = (cost[:, None] + cost[None, :]) / 2 - rng.uniform(0, 1, (n, n))
        cost_mid = (cost_mid + cost_mid.T) / 2
        np.fill_diagonal(cost_mid, cost)
        value_mid = (value[:, None] + value[None, :]) / 2
        level = float(rng.normal())
        chosen = _best(value, cost, level, cost_mid=cost_mid)
        grid = np.linspace(0, 1, 2001)
        best = -np.inf
        for i in range(n):
            for j in range(n):
                a, b, c = _quadratic(cost[i], cost[j], cost_mid[i, j])
                ok = a * grid**2 + b * grid + c <= level
                v = grid * value[i] + (1 - grid) * value[j]
                best = max(best, v[ok].max(initial=-np.inf))
        if chosen is None:
            assert best == -np.inf
            continue
        got = sum(s * value[i] for i, s in chosen.items())
        assert got >= best - 1e-9
        i, j = (*chosen, *chosen)[:2]
        share = chosen[i]
        if len(chosen) == 2:
            a, b, c = _quadratic(cost[i], cost[j], cost_mid[i, j])
            assert a * share**2 + b * share + c <= level + 1e-9
        del value_mid


def test_ndcg_tolerance_and_standard_errors_of_the_goal_check():
    """ndcg_tolerance lets a fair policy's post-hoc match at no less NDCG be that much less
    relevant on validation; standard_errors sets how far a difference must go for a verdict."""
    points = [
        *_both("plrank-fair", 1.0, 0.0, 0.60, 0.50),
        *_both("lambdamart", 0.0, 1.0, 0.61, 0.70),
        *_both("lambdamart", 0.0, 2.0, 0.595, 0.45),  # 0.005 less relevant, fairer
    ]

    def fair(points, **options):
        measure = "group_disparity"
        return next(
            c for c in compare_points(points, measure=measure, **options) if c.side == "fair"
        )

    # at no less NDCG (0.60): a third of T=1 and two thirds of T=2, less fair than 0.50
    strict = fair(points)
    assert strict.at_ndcg.name == "0.33 lambdamart T=1 + 0.67 lambdamart T=2"
    assert strict.at_ndcg.unfairness_difference == pytest.approx(0.50 - (0.70 + 2 * 0.45) / 3)
    # the mixture's NDCG equals the fair policy's: a tie, not the rounding of 1/3 (-5.6e-17 with
    # numpy 2.4), which read as "less relevant"
    assert strict.at_ndcg.ndcg_difference == 0.0 and strict.at_ndcg.ndcg_se == 0.0
    assert strict.fairer_verdict == "above"
    # 0.01 less relevant may be chosen: T=2 alone, fairer than the fair policy
    loose = fair(points, ndcg_tolerance=0.01)
    assert loose.at_ndcg.name == "lambdamart T=2" and loose.fairer_verdict == "not above"
    # the fair policy's disparity with noise of its own: one standard error passes, two do not
    noise = np.array([-0.03, 0.03, -0.03, 0.03])
    noisy = [
        replace(
            p,
            values={
                **p.values,
                "group_disparity": {
                    q: v + noise[i] * (p.curve == "plrank-fair")
                    for i, (q, v) in enumerate(p.values["group_disparity"].items())
                },
            },
        )
        for p in points
    ]
    one, two = (fair(noisy, standard_errors=z) for z in (1, 2))
    assert one.at_ndcg.unfairness_se == pytest.approx(0.03 * math.sqrt(4 / 3) / 2)
    assert one.fairer_verdict == "above" and two.fairer_verdict == "not above"


def test_post_hoc_floor_is_read_on_validation():
    points = [
        *_both("lambdamart", 0.0, 0.1, 0.70, 0.60),
        *_both("lambdarank", 0.0, 0.1, 0.695, 0.40),
        *_both("plrank", 0.0, 1.0, 0.60, 0.10),
        # the most relevant on test, not on validation
        _point("vali", "lambdamart", 0.0, 0.5, 0.65, 0.5),
        _point("test", "lambdamart", 0.0, 0.5, 0.90, 0.5),
        *_both("plrank-fair", 1.0, 0.0, 0.99, 0.0),  # not post hoc
    ]
    best, fairest = post_hoc_floor(points, measure="group_disparity")["d"]
    assert best.split == fairest.split == "test"
    assert (best.curve, best.temperature) == ("lambdamart", 0.1) and fairest is best
    _, fairest = post_hoc_floor(points, measure="group_disparity", ndcg_tolerance=0.01)["d"]
    assert fairest.curve == "lambdarank"


def test_training_times_over_lambdamart(tmp_path: Path):
    path = tmp_path / "f.toml"
    path.write_text(BASE + "folds = [1, 2]\nfairness_weights = [1]\n")
    config = load_frontier_config(path)
    records = {}
    for fold, (lm, pl, fair) in zip((1, 2), ((10.0, 20.0, 40.0), (30.0, 40.0, 20.0))):
        for curve, weight, seconds in (
            ("lambdamart", 0.0, lm),
            ("plrank", 0.0, pl),
            ("plrank-fair", 1.0, fair),
        ):
            key = frontier.TrainingKey(f"mq2008/Fold{fold}", curve, weight, 0)
            records[key] = {
                "dataset": key.dataset,
                "seed": 0,
                "train_seconds": seconds,
                "best_round": 10 * fold,
                "rounds_run": 20 * fold,
            }
    times = {(t.curve, t.weight): t for t in training_times(records, config)}
    assert set(times) == {("lambdamart", 0.0), ("plrank", 0.0), ("plrank-fair", 1.0)}
    fair = times["plrank-fair", 1.0]
    assert fair.trainings == 2 and fair.seconds == 30.0 and fair.over_lambdamart == 1.5
    assert fair.best_round == 15 and fair.rounds_run == 30
    assert (
        times["plrank", 0.0].over_lambdamart == 1.5
        and times["lambdamart", 0.0].over_lambdamart == 1.0
    )


WEB = (
    'datasets = ["web-nonlinear"]\nfairness = "group-disparity"\n'
    "web_groups = {share = 0.4, query_shift = 1.25}\n"
)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            WEB + "protected = {feature = 137, quantile = 0.5}",
            "web_groups puts the protected group's attribute in feature 137, its share 0.4 of "
            "the documents below level 4, so it needs protected = {feature = 137, quantile = "
            "0.4}, but protected = {feature = 137, quantile = 0.5} is given",
        ),
        (WEB, "so it needs protected = {feature = 137, quantile = 0.4}, but no protected table"),
        (
            WEB.replace('"web-nonlinear"', '"web-nonlinear", "mq2008"')
            + "protected = {feature = 137, quantile = 0.4}",
            "web_groups draws the synthetic web data (web-linear, web-nonlinear, web-noisy), but "
            "datasets holds 'mq2008'",
        ),
        (
            WEB.replace("share = 0.4", "share = 0.45"),
            "web_groups must be a table {share, query_shift}, but {'share': 0.45, 'query_shift': "
            "1.25} is given (share must be a multiple of 0.1 in (0, 1), but 0.45 is given)",
        ),
        (
            WEB.replace("share = 0.4,", "share = 0.4, shift = 1,"),
            "(unknown key 'shift'; allowed: share, query_shift)",
        ),
        (BASE + "ndcg_tolerance = -0.01", "ndcg_tolerance must be a number >= 0, but -0.01"),
        (BASE + "standard_errors = 0", "standard_errors must be a number > 0, but 0 is given"),
    ],
)
def test_web_groups_and_goal_check_config_errors(tmp_path: Path, text: str, message: str):
    path = tmp_path / "f.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_frontier_config(path)
    assert message in str(info.value)


@pytest.mark.parametrize(
    "name",
    [
        "fairness_group_web",
        "fairness_group_web_start",
        "fairness_ee_web",
        "fairness_ee_web_start",
    ],
)
def test_shipped_web_configs_load(name):
    config = load_frontier_config(CONFIGS / f"{name}.toml")
    assert config.datasets == ("web-nonlinear",) and config.folds == (1, 2, 3)
    assert config.out == f"benchmarks/results/{name}" and config.k == 10
    assert (config.ndcg_tolerance, config.standard_errors) == (0.01, 2.0)
    started = name.endswith("_start")
    assert (config.fair_start is not None) == started
    if started:  # the same post-hoc side as the frontier started from nothing
        plain = load_frontier_config(CONFIGS / f"{name.removesuffix('_start')}.toml")
        start = 0.25 if name.startswith("fairness_group_web") else 0.5
        assert config.settings() == {
            **plain.settings(),
            "fair_start": {"model": "lambdamart", "temperature": start},
        }
        assert (config.temperatures, config.group_offsets) == (
            plain.temperatures,
            plain.group_offsets,
        )
    if name.startswith("fairness_group_web"):
        assert config.web_groups == WebGroups(share=0.4, query_shift=1.25)
        assert config.protected == ProtectedGroup(feature=137, quantile=0.4)
        assert config.settings()["web_groups"] == {"share": 0.4, "query_shift": 1.25}
    else:
        assert config.fairness == "expected-exposure" and config.drop_empty_queries
        assert config.web_groups is None and config.protected is None
    # every setting the figures depend on is written out, not left to a default
    text = (CONFIGS / f"{name}.toml").read_text()
    for key in (
        "rounds",
        "learning_rate",
        "max_depth",
        "min_child_weight",
        "lambda",
        "early_stopping_rounds",
        "patience_rate",
        "min_rounds",
        "N",
        "train_K",
        "hessian",
        "stopping_metric",
    ):
        assert f"\n{key} = " in text, key


def test_the_goal_check_takes_the_fair_policy_chosen_on_validation():
    """frontier.md's goal lines name the fair policy best on validation and give its test
    comparison, even where another fair policy does better on test."""
    points = [
        *_both("lambdamart", 0.0, 1.0, 0.60, 0.60),
        # w=1: fairer on validation than w=3, less fair on test
        _point("vali", "plrank-fair", 1.0, 0.0, 0.60, 0.40),
        _point("test", "plrank-fair", 1.0, 0.0, 0.60, 0.55),
        _point("vali", "plrank-fair", 3.0, 0.0, 0.60, 0.50),
        _point("test", "plrank-fair", 3.0, 0.0, 0.60, 0.30),
    ]
    measure = "group_disparity"
    text = report.markdown(
        points,
        compare_points(points, measure=measure),
        None,
        measure=measure,
        validation=compare_points(points, measure=measure, judged_on="vali"),
    )
    line = next(x for x in text.splitlines() if x.startswith("- fairest against"))
    assert "on validation: w=1 (group_disparity -0.20000" in line
    assert "on test against lambdamart T=1: NDCG +0.0000" in line
    assert "group_disparity -0.05000" in line


def test_mixture_measure_measures_many_at_once_as_one_at_a_time():
    """m exposures measured at once (the split's rows tiled, their item groups numbered once)
    give each one's values measured alone, for every term; bad columns are refused."""
    split = _grouped_split()
    rng = np.random.default_rng(2)
    columns = ("ndcg", "ee_l", "disparity", "group_disparity")
    exposures = np.stack(
        [
            evaluate_policy(
                rng.normal(size=12), split, k=K, n_samples=20, seed=s, n_jobs=1
            ).exposures
            for s in range(3)
        ]
    )
    together = MixtureMeasure(split, k=K, columns=columns)(exposures)
    for i in range(3):
        alone = mixture_values(split, exposures[i : i + 1], k=K, columns=columns)
        for name in columns:
            np.testing.assert_allclose(together[name][i], alone[name][0], rtol=1e-12, atol=1e-15)
    with pytest.raises(ValueError, match="columns must be 'ndcg' or fairness terms' columns"):
        MixtureMeasure(split, k=K, columns=("unfair",))
    with pytest.raises(ValueError, match="group_disparity needs the item groups of the split"):
        MixtureMeasure(replace(split, item_groups=None), k=K, columns=("group_disparity",))
