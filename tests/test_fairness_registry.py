"""One registry of fairness terms: a term registered there reaches every reader.

A small term is built here from the registry's parts and registered for one test at a time: the
squared distance of the exposures to equal exposure for every document of a query (the
expected exposure loss with a target that ignores the grades). It reuses the kernels' slope of
a squared distance, :math:`2 (E - a)`, with its own per-row parameter :math:`a`, so nothing
outside this file changes: the objective trains with it (its estimate is unbiased for the
exact gradient of the expected metric minus the weighted loss), the options and the frontier's
configuration accept its name, the metrics measure it, the eval metric is named after its
column, and the frontier's evaluations, CSV columns and report carry it.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import naive
import numpy as np
import pytest
from test_fairness import Case, _exact, _expectation
from tiny_ltr import write_tiny_letor

from gbdt_plrank import PLRankOptions, metrics, plrank_grad_hess, plrank_objective
from gbdt_plrank._fairness_terms import (
    FAIRNESS_TERMS,
    ExposureRows,
    FairnessTerm,
    fairness_term,
    register,
)
from gbdt_plrank._kernels import fairness as fair_kernels
from gbdt_plrank.cli import main
from gbdt_plrank.datasets import Split
from gbdt_plrank.harness.frontier.config import load_frontier_config
from gbdt_plrank.harness.frontier.report import csv_columns, measures
from gbdt_plrank.harness.policy_eval import evaluate_ranking


def _equal_share(rows: ExposureRows, theta: np.ndarray) -> np.ndarray:
    """Every document's equal share of its query's exposure: sum of theta over min(K, n) / n."""
    sizes = np.diff(rows.ptr)
    total = np.concatenate(([0.0], np.cumsum(theta)))[np.minimum(sizes, theta.shape[0])]
    return np.repeat(total / np.maximum(sizes, 1), sizes)


def _loss(rows: ExposureRows, exposure: np.ndarray, theta: np.ndarray) -> np.ndarray:
    share = _equal_share(rows, theta)
    return np.bincount(rows.row_query, (exposure - share) ** 2, minlength=rows.n_queries)


TOY = FairnessTerm(
    name="equal-exposure",
    column="eq_l",
    title="EQ-L",
    axis="EQ-L (lower is fairer)",
    kernel=fair_kernels.EXPECTED_EXPOSURE,
    aux=_equal_share,
    curvature=FAIRNESS_TERMS["expected-exposure"].curvature,
    loss=_loss,
    summary="the squared distance of the exposures to an equal share for every document",
    reads=frozenset({"cutoff"}),
)


@pytest.fixture
def toy():
    """The toy term, registered for one test."""
    register(TOY)
    try:
        yield TOY
    finally:
        del FAIRNESS_TERMS[TOY.name]


def test_a_term_is_refused_when_its_name_or_column_is_taken(toy):
    with pytest.raises(ValueError, match="clashes with the registered 'equal-exposure'"):
        register(TOY)
    with pytest.raises(ValueError, match="reads must be a subset of"):
        FairnessTerm(**{**TOY.__dict__, "reads": frozenset({"temperature"})})


def test_the_objective_estimates_the_gradient_of_the_registered_term_without_bias(toy):
    rng = np.random.default_rng(5)
    D, K, N = 4, 2, 2
    scores, labels = rng.normal(scale=1.2, size=D), rng.integers(0, 3, size=D).astype(float)
    rho, theta = naive.rewards(labels, K=K, metric="ndcg")
    theta = theta[:K]
    share = np.full(D, theta.sum() / D)
    case = Case(scores, labels, rho, theta, TOY.name, None, naive.ee_loss(share))
    grad, hess, slope = _expectation(case, 0.8, K, N)
    for got, want in zip((grad, hess, slope), _exact(case, 0.8)):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-8)
    # the public estimate trains toward it: another gradient than EE-L's on the same draws
    ptr = np.array([0, D])
    ours = plrank_grad_hess(scores, labels, ptr, K=K, N=8, seed=1, fairness=TOY.name)
    ee_l = plrank_grad_hess(scores, labels, ptr, K=K, N=8, seed=1, fairness="expected-exposure")
    assert not np.allclose(ours[0], ee_l[0])


def test_the_options_the_metrics_and_the_eval_metric_read_the_registered_term(toy):
    assert PLRankOptions.checked(fairness=TOY.name).fairness_spec.term is toy
    with pytest.raises(ValueError, match="needs fairness='expected-exposure', but fairness="):
        PLRankOptions.checked(fairness=TOY.name, empty_queries="uniform")
    objective = plrank_objective(K=5, fairness=TOY.name, fairness_weight=0.5)
    assert objective.expected_metric.name == "expected_ndcg@5-0.5*eq_l"
    y = np.array([2.0, 0.0, 1.0, 1.0, 0.0])
    exposure = np.array([0.6, 0.3, 0.2, 0.9, 0.1])
    qid = np.array([7, 7, 7, 3, 3])
    got = metrics.fairness_loss(y, exposure, qid, loss=TOY.name, k=2, per_query=True)
    # query 3 (rows 3, 4), then query 7 (rows 0-2): equal shares of 1 + 1/log2(3)
    total = 1.0 + 1.0 / np.log2(3.0)
    want = [((exposure[3:] - total / 2) ** 2).sum(), ((exposure[:3] - total / 3) ** 2).sum()]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    with pytest.raises(ValueError, match="item_groups are used only by the losses"):
        metrics.fairness_loss(y, exposure, qid, loss=TOY.name, item_groups=[0, 1, 0, 1, 0])


def test_the_frontier_evaluates_and_reports_the_registered_term(toy, tmp_path: Path):
    assert measures()[-1] == "eq_l" and csv_columns()[-2:] == ("eq_l", "eq_l_se")
    split = Split(None, np.array([2.0, 0.0, 1.0, 1.0, 0.0]), np.array([3, 3, 3, 7, 7]))
    scores = np.array([0.1, 0.7, 0.3, 0.2, 0.9])
    values = evaluate_ranking(scores, split, k=2).values
    exposure = np.array([1.0 / np.log2(3.0), 1.0, 0.0, 1.0 / np.log2(3.0), 1.0])
    np.testing.assert_allclose(
        values["eq_l"],
        metrics.fairness_loss(split.y, exposure, split.qid, loss=TOY.name, k=2, per_query=True),
    )
    data = write_tiny_letor(tmp_path / "tiny", queries=(12, 8, 8))
    config = tmp_path / "fair.toml"
    config.write_text(
        f"datasets = [{str(data)!r}]\nk = 3\nfairness = {TOY.name!r}\nfairness_weights = [2]\n"
        f"temperatures = [1]\nn_samples = 10\nout = {str(tmp_path / 'out')!r}\n"
        "[trees]\nrounds = 3\nearly_stopping_rounds = 1\nlearning_rate = 0.3\nn_jobs = 1\n"
        "[plrank]\nN = 4\n"
    )
    assert load_frontier_config(config).measure == "eq_l"
    assert main(["fairness", str(config)]) == 0
    out = tmp_path / "out"
    options = json.loads((out / "options.json").read_text())
    assert options["plrank-fair w=2"]["fairness"] == TOY.name
    records = [json.loads(r) for r in (out / "evaluations.jsonl").read_text().splitlines()]
    assert all(len(r["eq_l"]) == len(r["qid"]) for r in records)
    with (out / "frontier.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert {"eq_l", "eq_l_se"} <= set(rows[0]) and all(r["eq_l"] != "nan" for r in rows)
    report = (out / "frontier.md").read_text()
    assert "the fairness measure is eq_l" in report and "| EQ-L |" in report


def test_the_registry_is_what_the_readers_saw_before_the_toy_term():
    """The shipped terms, in their order, with the names, columns and slopes the results use."""
    assert [(t.name, t.column, t.kernel) for t in FAIRNESS_TERMS.values()] == [
        ("expected-exposure", "ee_l", fair_kernels.EXPECTED_EXPOSURE),
        ("disparity", "disparity", fair_kernels.DISPARITY),
        ("group-disparity", "group_disparity", fair_kernels.GROUP_DISPARITY),
    ]
    assert fairness_term("group-disparity").needs_item_groups
    assert [n for n, t in FAIRNESS_TERMS.items() if t.uniform_target] == ["expected-exposure"]
