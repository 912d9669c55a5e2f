"""The research scripts (``research/``): the pieces that decide what their tables say."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from marks import RANDOM_MARGINS

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


# --------------------------------------------------------------------------------------------
# The levers of quality (docs/research/levers.md)
# --------------------------------------------------------------------------------------------
def test_quality_lever_hessians_by_hand() -> None:
    from research import levers

    grad = np.array([0.5, -0.25, 0.0, 0.0])  # the last two rows: a query that contributes 0
    hess = np.array([-0.2, 0.4, 0.0, 0.0])

    def lever(mode: str) -> tuple[np.ndarray, np.ndarray]:
        return levers.Lever(levers.Candidate(hessian=mode), K=5, seed=0)._hessian(None, grad, hess)

    g, h = lever("grad")
    np.testing.assert_array_equal(g, grad)
    np.testing.assert_array_equal(h, [0.5, 0.25, 0.0, 0.0])
    np.testing.assert_array_equal(lever("abs-wrapped")[1], [0.2, 0.4, 0.0, 0.0])
    # The constant is the mean |h| of the contributing rows (0.3), on every row.
    np.testing.assert_allclose(lever("scaled-constant")[1], [0.3] * 4, rtol=1e-15)
    # Unit scale: both multiplied by 1 / mean curvature of the contributing rows.
    g, h = lever("grad-unit")  # mean |g| = 0.375
    np.testing.assert_allclose(g, grad / 0.375, rtol=1e-15)
    np.testing.assert_allclose(h, [4 / 3, 2 / 3, 0.0, 0.0], rtol=1e-15)
    g, h = lever("abs-unit")  # mean |h| = 0.3
    np.testing.assert_allclose(g, grad / 0.3, rtol=1e-15)
    np.testing.assert_allclose(h, [2 / 3, 4 / 3, 0.0, 0.0], rtol=1e-15)


@RANDOM_MARGINS
def test_quality_lever_temperature_is_the_sharper_policys_objective() -> None:
    import xgboost

    from gbdt_plrank import plrank_grad_hess
    from research import levers

    rng = np.random.default_rng(0)
    labels = rng.integers(0, 3, 12).astype(float)
    qid = np.repeat([0, 1], 6)
    preds = rng.normal(size=12).astype(np.float32)
    data = xgboost.DMatrix(np.zeros((12, 1)), labels, qid=qid)
    lever = levers.Lever(levers.Candidate(hessian="abs-wrapped", temperature=2.0), K=3, seed=4)
    grad, hess = lever(preds, data)
    g, h = plrank_grad_hess(
        2.0 * preds.astype(np.float64),
        labels,
        np.array([0, 6, 12]),
        K=3,
        N=100,
        seed=4,
        hessian="abs",
    )
    np.testing.assert_allclose(grad, 2.0 * g, rtol=1e-12)
    np.testing.assert_allclose(hess, 4.0 * h, rtol=1e-12)


def test_cross_fitted_ndcg_reads_each_query_at_the_other_halfs_best_round() -> None:
    from research import levers

    # Two queries, one per half: each is read at the round the other one prefers.
    curves = np.array([[0.5, 0.8], [0.9, 0.1]])  # rounds x queries
    np.testing.assert_array_equal(levers.cross_fitted(curves, seed=3), [0.5, 0.1])
    # A round best for every query is where every query is read.
    rising = np.linspace(0.1, 0.9, 12).reshape(3, 4)
    np.testing.assert_array_equal(levers.cross_fitted(rising, seed=0), rising[2])
    # With ``select``, the round is chosen on those curves and the NDCG read from ``curves``.
    np.testing.assert_array_equal(
        levers.cross_fitted(curves, seed=3, select=curves[::-1]), [0.9, 0.8]
    )


def test_quality_lever_policy_stopping_curve() -> None:
    from gbdt_plrank._ranking_metric import RankingMetric
    from gbdt_plrank._training.evaluation import PolicyEvaluator
    from gbdt_plrank.datasets import Split
    from research import levers

    y = np.array([2.0, 0.0, 1.0, 0.0, 0.0, 0.0])  # the second query has no relevant document
    vali = Split(np.zeros((6, 1)), y, np.repeat([1, 2], 3))
    rec = levers.Curves(vali, 2, policy=True)
    assert not rec.add(np.array([1.0, -1.0, 0.5, 0.0, 0.3, 0.1]))  # round 0: sharp, well ranked
    # The next rounds make the policy flatter (same ranking): its expected NDCG falls, the
    # ranking's NDCG stays, and training stops once PATIENCE rounds have not beaten round 0.
    stops = [
        rec.add(np.array([-0.01, 0.01, -0.005, 0.0, 0.0, 0.0])) for _ in range(levers.PATIENCE)
    ]
    assert stops == [False] * (levers.PATIENCE - 1) + [True] and rec.best() == 0
    assert np.isnan(rec.ranking[0][1]) and rec.ranking[-1][0] == rec.ranking[0][0] == 1.0
    value = PolicyEvaluator(
        RankingMetric("ndcg", 2, "exp"),
        None,
        vali,
        n_samples=levers.POLICY_SAMPLES,
        seed=levers.POLICY_SEED,
        n_jobs=1,
    )
    expected = value.per_query(rec.margin)
    np.testing.assert_array_equal(rec.expected[-1], expected)
    assert expected[0] < rec.expected[0][0]


# --------------------------------------------------------------------------------------------
# Fair policies against temperatures; the DELTR anchor
# --------------------------------------------------------------------------------------------
def test_fairness_dominance_envelope_interpolates_down_to_the_curves_floor() -> None:
    from research.fairness_dominance import envelope

    def point(ndcg: float, ee_l: float) -> tuple[np.ndarray, np.ndarray]:
        return np.array([ndcg, ndcg + 0.2]), np.array([ee_l, ee_l])

    # EE-L falls from T=0.5 to its floor at T=2 and rises after: T=4 is never on the envelope
    curve = {
        0.0: point(0.9, 2.0),
        0.5: point(0.7, 1.0),
        1.0: point(0.6, 0.6),
        2.0: point(0.5, 0.5),
        4.0: point(0.45, 0.55),
    }
    np.testing.assert_allclose(envelope(curve, 0.8), 0.5 * curve[0.5][0] + 0.5 * curve[1.0][0])
    np.testing.assert_allclose(envelope(curve, 0.52), 0.2 * curve[1.0][0] + 0.8 * curve[2.0][0])
    np.testing.assert_allclose(envelope(curve, 1.5), curve[0.5][0])  # fairer than needed: sharpest
    assert envelope(curve, 0.49) is None  # below the floor: the curve does not reach it


def test_fairness_dominance_retrains_a_cached_model_trained_with_other_options(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cached training is read back only by a job that would train it the same way: after an
    option changes (here the user's cut-off) it is trained again, not reused."""
    from gbdt_plrank.datasets import load_dataset
    from research import fairness_dominance as fd

    data = load_dataset("mq2008", fold=1)
    fits = []

    def fake_fit(data, weight, options, *, stop, seed):
        fits.append(weight)

        class Ranker:
            def predict(self, X):
                return np.zeros(X.shape[0])

        return Ranker(), {"seconds": 0.0, "best_round": 1}

    monkeypatch.setattr(fd, "_fit_plrank", fake_fit)
    monkeypatch.setattr(fd, "train", lambda *a, **k: pytest.fail("no LambdaMART job here"))
    jobs = {"weights": [3.0], "probe_weights": [], "probes": [], "seed": 0, "cache": tmp_path}
    # Only the user's job: the LambdaMART one is cached as if it had been trained with these.
    config = fd.configuration(0.0, None, stop=True, seed=0)
    np.savez(
        tmp_path / "mq2008_Fold1_lambdamart_w0_s0.npz",
        info="{}",
        config=config,
        vali=np.zeros(1),
        test=np.zeros(1),
    )
    fd.train_models(data, **jobs)
    fd.train_models(data, **jobs)
    assert fits == [3.0]  # trained once, then read from the cache
    before = fd.configuration(3.0, {}, stop=True, seed=0)
    monkeypatch.setitem(fd.USER, "K", 5)
    assert fd.configuration(3.0, {}, stop=True, seed=0) != before
    fd.train_models(data, **jobs)
    assert fits == [3.0, 3.0]  # the cache was trained otherwise: trained again


def test_deltr_anchor_is_skipped_cleanly_without_fairsearchdeltr(tmp_path: Path) -> None:
    import importlib.util

    if importlib.util.find_spec("fairsearchdeltr") is not None:
        pytest.skip("fairsearchdeltr is installed here")
    out = tmp_path / "deltr.md"
    proc = subprocess.run(
        [sys.executable, str(REPO / "research" / "fairness_dominance_deltr.py"), "--out", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "fairsearchdeltr is not installed: skipped" in proc.stdout
    assert not out.exists()


# --------------------------------------------------------------------------------------------
# The network's setups and curves (docs/research/neural.md)
# --------------------------------------------------------------------------------------------
def test_reciprocal_ranks_keep_absent_entries_absent(tmp_path: Path) -> None:
    from tiny_ltr import write_tiny_letor

    from gbdt_plrank.datasets import load_dataset
    from research import neural_reciprocal_ranks

    tiny = write_tiny_letor(tmp_path / "tiny")
    neural_reciprocal_ranks.main([str(tmp_path / "rr"), "--data", str(tiny)])
    before, after = load_dataset(str(tiny)), load_dataset(str(tmp_path / "rr"), fold=3)
    for a, b in zip(
        (before.train, before.vali, before.test), (after.train, after.vali, after.test)
    ):
        np.testing.assert_array_equal(a.qid, b.qid)
        np.testing.assert_array_equal(a.y, b.y)
        x = a.X.tocsr(copy=True)
        x.eliminate_zeros()
        np.testing.assert_array_equal(x.indices, b.X.indices)
        np.testing.assert_allclose(b.X.data, 1.0 / x.data, rtol=1e-6)


def test_network_research_scripts_write_their_tables(tmp_path: Path) -> None:
    from tiny_ltr import write_tiny_letor

    from research import neural_curves, neural_setups

    tiny = str(write_tiny_letor(tmp_path / "tiny"))
    setups = tmp_path / "setups.md"
    neural_setups.main(
        [
            "--data",
            tiny,
            "--folds",
            "1",
            "--setups",
            "defaults",
            "adam lr 0.003",
            "--epochs",
            "2",
            "--patience",
            "1",
            "--out",
            str(setups),
        ]
    )
    text = setups.read_text()
    assert "| defaults |" in text and "| adam lr 0.003 |" in text
    curves = tmp_path / "curves.md"
    neural_curves.main(
        ["--data", tiny, "--folds", "1", "--epochs", "3", "--rounds", "2", "--out", str(curves)]
    )
    text = curves.read_text()
    for method in (neural_curves.NETWORK, *neural_curves.TREES):
        assert f"| {method} | 1 |" in text
    records = [json.loads(line) for line in curves.with_suffix(".jsonl").read_text().splitlines()]
    assert {len(r["test"]) for r in records} == {2, 3}
    assert curves.with_suffix(".png").is_file()


def test_fairness_samples_compares_n_50_with_the_default(tmp_path: Path) -> None:
    from tiny_ltr import write_tiny_letor

    from research import fairness_samples

    out = tmp_path / "samples.md"
    fairness_samples.main(
        [
            "--data",
            str(write_tiny_letor(tmp_path / "tiny")),
            "--fold",
            "1",
            "--rounds",
            "2",
            "--samples",
            "20",
            "--out",
            str(out),
        ]
    )
    rows = [line for line in out.read_text().splitlines() if line.startswith("| N =")]
    assert [row.split(" | ")[1:3] for row in rows] == [
        ["50", "as trained"],
        ["50", "0.05"],
        ["50", "0.1"],
        ["100", "as trained"],
        ["100", "0.05"],
        ["100", "0.1"],
    ]


def test_fairness_levers_reads_a_finished_frontier_on_validation(tmp_path: Path) -> None:
    """Every fair policy of the run gets a row, its matches chosen and measured on validation
    (the run's test values do not enter: changed, the table stays the same)."""
    from tiny_ltr import write_tiny_letor

    from gbdt_plrank.cli import main as cli
    from research import fairness_levers

    config = tmp_path / "group.toml"
    config.write_text(
        f"datasets = [{str(write_tiny_letor(tmp_path / 'tiny'))!r}]\nk = 3\n"
        "fairness = 'group-disparity'\nprotected = {feature = 41, quantile = 0.5}\n"
        "fairness_weights = [2]\ntemperatures = [0.5, 2]\ngroup_offsets = [-1, 0, 1]\n"
        f"n_samples = 20\nndcg_tolerance = 0.01\nout = {str(tmp_path / 'out')!r}\n"
        "[trees]\nrounds = 3\nearly_stopping_rounds = 2\nlearning_rate = 0.3\nn_jobs = 1\n"
        "[plrank]\nN = 10\n"
    )
    assert cli(["fairness", str(config)]) == 0
    out = tmp_path / "levers.md"
    fairness_levers.main([str(config), "--out", str(out)])
    text = out.read_text()
    rows = [line for line in text.splitlines() if line.startswith("| tiny | w=")]
    assert [row.split(" | ")[1] for row in rows] == ["w=2", "w=2 T=0.5", "w=2 T=2"]
    assert "post hoc at no less NDCG (-0.01)" in text
    # test values changed: the validation table is the same
    evaluations = tmp_path / "out" / "evaluations.jsonl"
    records = [json.loads(line) for line in evaluations.read_text().splitlines()]
    for r in records:
        if r["split"] == "test":
            r["ndcg"] = [0.0 for _ in r["ndcg"]]
    evaluations.write_text("".join(json.dumps(r) + "\n" for r in records))
    fairness_levers.main([str(config), "--out", str(tmp_path / "again.md")])
    assert (tmp_path / "again.md").read_text().replace("again.md", "levers.md") == text


# --------------------------------------------------------------------------------------------
# How click rewards order the documents (docs/guide/clicks.md)
# --------------------------------------------------------------------------------------------
def test_click_reward_order_by_hand() -> None:
    from research.clicks_reward_order import reward_order

    # two queries: rows 0-3 of grades 2, 1, 0, 0 and rows 4-5 of grades 1, 2
    y = np.array([2, 1, 0, 0, 1, 2.0])
    rewards = np.array([0.3, 0.5, 0.1, 0.5, 0.2, 0.2])
    ptr = np.array([0, 4, 6])
    binary = reward_order(rewards, y, ptr, by_grade=False)
    assert list(binary) == [
        "mean reward, relevant",
        "mean reward, non-relevant",
        "wrongly ordered pairs",
    ]
    np.testing.assert_allclose(binary["mean reward, relevant"], (1.2, 4))
    np.testing.assert_allclose(binary["mean reward, non-relevant"], (0.6, 2))
    # relevant against non-relevant, query 1 only: 0.3 <= 0.5 and 0.5 <= 0.5 are wrong
    assert binary["wrongly ordered pairs"] == (2, 4)
    graded = reward_order(rewards, y, ptr, by_grade=True)
    assert list(graded) == [
        "mean reward, grade 0",
        "mean reward, grade 1",
        "mean reward, grade 2",
        "wrongly ordered, grade 2 vs grade 1",
        "wrongly ordered, grade 2 vs grade 0",
        "wrongly ordered, grade 1 vs grade 0",
    ]
    np.testing.assert_allclose(graded["mean reward, grade 2"], (0.5, 2))
    assert graded["wrongly ordered, grade 2 vs grade 1"] == (2, 2)  # 0.3 <= 0.5; a tie 0.2
    assert graded["wrongly ordered, grade 2 vs grade 0"] == (1, 2)  # 0.3 <= 0.5
    assert graded["wrongly ordered, grade 1 vs grade 0"] == (1, 2)  # 0.5 <= 0.5


def test_click_reward_order_runs_on_the_experiment_logs(tmp_path, monkeypatch) -> None:
    """The script builds the experiment's own training logs (``_Fold``) and writes one row per
    session count and estimator: it broke once when ``_Fold.rewards`` gained an argument."""
    from research import clicks_reward_order

    out = tmp_path / "order.md"
    monkeypatch.setattr(
        sys, "argv", ["clicks_reward_order.py", "configs/clicks-tiny.toml", "--out", str(out)]
    )
    clicks_reward_order.main()
    rows = [
        line.split(" | ")[:3]
        for line in out.read_text().splitlines()
        if line.startswith("| clicks-tiny.toml")
    ]
    assert rows == [
        ["| clicks-tiny.toml", str(s), e] for s in (3, 10) for e in ("naive", "policy-aware")
    ]


# Where the rounds go (docs/guide/performance.md)


def test_rounds_script_writes_a_row_per_round_read_and_the_peaks(tmp_path: Path) -> None:
    from tiny_ltr import write_tiny_letor

    from research import rounds

    folder = write_tiny_letor(tmp_path / "tiny")
    out = tmp_path / "rounds.md"
    rounds.main(["--data", str(folder), "--rounds", "12", "--out", str(out)])
    rows = [line for line in out.read_text().splitlines() if line.startswith("| ")]
    assert [row.split(" | ")[0] for row in rows[1:]] == [
        "| 1",
        "| 5",
        "| 10",
        "| 12",
        "| peak at round",
    ]
    values = np.array([[float(x) for x in row.strip("| ").split(" | ")[1:]] for row in rows[1:5]])
    assert np.all((values[:, :3] >= 0.0) & (values[:, :3] <= 1.0))
    assert np.all(np.diff(values[:, 3]) > 0.0)  # the margins spread as the trees add up
    peaks = rows[-1].strip("| ").split(" | ")[1:]
    assert peaks[3] == "12"


# --------------------------------------------------------------------------------------------
# The spread of the standardised stopping signal (benchmarks/results/standardized_scale.md)
# --------------------------------------------------------------------------------------------
def test_standardized_scale_stops_as_xgboost_early_stopping_does() -> None:
    from research import standardized_scale as s

    rising = [0.1, 0.3, 0.2]
    assert s.stopped(rising + [0.3] * (s.PATIENCE - 2)) is None  # 49 rounds after the best
    assert s.stopped(rising + [0.3] * (s.PATIENCE - 1)) == 1  # ties do not improve: the first
    assert s.stopped(rising + [0.2] * (s.PATIENCE - 2) + [0.4]) is None  # a better round: wait


# --------------------------------------------------------------------------------------------
# Stopping rules chosen offline on recorded curves (benchmarks/results/stopping_rules.md)
# --------------------------------------------------------------------------------------------
def test_stopping_rules_keep_and_run_the_rounds_they_say() -> None:
    from research.stopping_rules import Rule

    # An early noisy peak at round 3, then a plateau below it, then a later best at round 80.
    curve = np.full(200, 0.5)
    curve[2] = 0.9
    curve[79] = 0.95
    # Patience 50 as XGBoost counts it: stops at round 53, 50 rounds after the peak, keeps 3.
    assert Rule("p50").apply(curve) == (3, 53)
    # No round before 40 is kept: from round 40 on, round 80 is best and comes within patience.
    assert Rule("min", min_rounds=40).apply(curve) == (80, 130)
    # ... but not within a patience of 25: the plateau's first round is kept.
    assert Rule("min, p25", min_rounds=40, patience=25).apply(curve) == (40, 65)
    # Ties do not improve: the first of equal values is kept.
    assert Rule("flat").apply(np.full(60, 0.5)) == (1, 51)
    # A training that never stops runs every round.
    assert Rule("up").apply(np.arange(30.0)) == (30, 30)
    # The trailing mean of 2 rounds peaks where the two best neighbours are.
    smooth = np.array([0.0, 1.0, 0.0, 0.8, 0.8, 0.0] + [0.0] * 60)
    assert Rule("ma2", window=2).apply(smooth)[0] == 5
    # Tolerance keeps the last round within it of the best before the stop.
    near = np.array([0.0, 1.0, 0.999, 0.5] + [0.0] * 60)
    assert Rule("tol", tolerance=0.002).apply(near) == (3, 52)
    # A patience growing to half the best round waits out the plateau after round 80.
    late = 0.5 + 0.005 * np.minimum(np.arange(200), 79)  # rises to round 80, then flat
    late[110] = 0.97
    assert Rule("p25", min_rounds=40, patience=25).apply(late) == (80, 105)
    assert Rule("grown", min_rounds=40, patience=25, patience_rate=0.5).apply(late) == (111, 167)


def test_plateau_stops_replays_both_rules_and_flags_a_stop_while_rising(tmp_path: Path) -> None:
    from gbdt_plrank._backends._stopping import EarlyStopper
    from research.plateau_stops import _deep, report, study

    # rises to round 60, sits on a plateau for 28 rounds, then rises again; and a noisy flat one
    rising = np.concatenate(
        [np.linspace(0.3, 0.39, 60), np.full(28, 0.39), np.linspace(0.391, 0.45, 100)]
    )
    flat = 0.4 + np.random.default_rng(0).normal(0, 1e-3, 188)
    lines = []
    for name, curve in (("web", rising), ("letor", flat)):
        stopper = EarlyStopper(25, 40, 0.0, patience_rate=0.5)
        ran = next((t + 1 for t, v in enumerate(curve) if stopper.update(t, v)), curve.size)
        lines.append(
            json.dumps(
                {
                    "row": "plrank-xgb",
                    "data": name,
                    "fold": 1,
                    "seed": 0,
                    "curve": curve[:ran].tolist(),
                    "best_round": stopper.kept_round + 1,
                    "rounds_run": ran,
                    "patience_rate": 0.5,
                }
            )
        )
    path = tmp_path / "records.jsonl"
    path.write_text("\n".join(lines) + "\n")
    trainings, rate = _deep(path)
    rows = study(trainings, patience=25, min_rounds=40, rate=rate)
    assert [r["rising"] for r in rows] == [True, False]
    assert rows[0]["fixed"][1] < 90 < rows[0]["grown"][1]  # fixed stopped on the plateau
    assert "| plrank-xgb | 2 | " in report(rows, patience=25, min_rounds=40, rate=rate)
    with pytest.raises(
        ValueError, match="was not trained with patience 25, min_rounds 40 and patience_rate 0"
    ):
        study(trainings, patience=25, min_rounds=40, rate=0.0)


# --------------------------------------------------------------------------------------------
# Doubly robust click rewards (benchmarks/results/dr_regressions_*.md, dr_ranker.md)
# --------------------------------------------------------------------------------------------
def test_reward_errors_by_grade_and_within_query_by_hand() -> None:
    from research import dr_regressions

    r = np.array([1.0, 0.0, 0.5, 0.5])
    gamma = np.array([1.0, 0.1, 0.1, 0.1])
    y = np.array([1.0, 0.0, 0.0, 0.0])
    qid = np.array([3, 3, 8, 8])
    out = dr_regressions.errors(r, gamma, y, qid)
    assert out["grade 1"] == (0.0, 1)
    assert out["grade 0"][0] == pytest.approx(0.01 + 0.16 + 0.16) and out["grade 0"][1] == 3
    # query 3's errors (0, -0.1) less their mean; query 8's (0.4, 0.4) are a common shift: 0
    assert out["within query"][0] == pytest.approx(2 * 0.05**2)


def test_the_oracle_variant_is_the_unshrunk_rewards_on_the_true_click_probability() -> None:
    """dr_ranker.py's ``oracle``: the doubly robust rewards with the simulated click probability
    when seen of the split's labels as the regression (the run's shrinkage dropped)."""
    from types import SimpleNamespace

    from gbdt_plrank.clicks import ClickLog, click_rewards
    from research import dr_ranker

    log = ClickLog(session=[0, 0, 1, 1], row=[0, 1, 1, 2], rank=[1, 2, 1, 2], click=[1, 0, 0, 1])
    X, y, qid = np.zeros((3, 2)), np.array([1.0, 0.0, 2.0]), np.zeros(3)
    rewards = dr_ranker.variant_rewards(
        "oracle", {id(X): y}, SimpleNamespace(noise=0.2, graded=False)
    )
    options = dict(
        position_bias=[1.0, 0.5], estimator="doubly-robust", qid=qid, propensities=[0.9, 0.8, 0.3]
    )
    expected = click_rewards(log, 3, **options, regression=[1.0, 0.2, 1.0])
    np.testing.assert_array_equal(rewards(log, 3, **options, X=X, shrinkage=0.0), expected)
    assert not np.array_equal(expected, click_rewards(log, 3, **options, regression=[0.5] * 3))


def test_the_cross_fitted_candidates_never_fit_on_a_rows_own_query() -> None:
    from research import dr_regressions

    qid = np.repeat(np.arange(10), 3)
    seen_by: dict[int, set] = {}

    def fit(train: np.ndarray):
        def predict(test: np.ndarray) -> np.ndarray:
            for row in test:
                seen_by[int(row)] = set(qid[train].tolist())
            return np.zeros(test.size)

        return predict

    dr_regressions.cross_fit(fit, qid, seed=0)
    assert sorted(seen_by) == list(range(30))
    assert all(qid[row] not in queries and queries for row, queries in seen_by.items())


# --------------------------------------------------------------------------------------------
# Clicks from a deterministic ranker (benchmarks/results/deterministic_routes.md,
# position_bias_features.md, first_policy_temperature.md)
# --------------------------------------------------------------------------------------------
def test_the_route_variants_normalise_and_clip_as_they_say() -> None:
    from gbdt_plrank.clicks import ClickLog, click_rewards
    from research import deterministic_routes as routes

    np.testing.assert_allclose(
        routes.ideal_dcg(np.array([1.0, 3.0, 2.0, 0.0, 0.5]), np.array([0, 0, 0, 1, 1]), 2),
        [3 + 2 / np.log2(3)] * 3 + [0.5] * 2,
        rtol=1e-15,
    )
    log = ClickLog(session=[0, 0, 1, 1], row=[0, 1, 0, 1], rank=[1, 2, 1, 2], click=[1, 1, 0, 1])
    qid, theta = np.zeros(3), np.array([1.0, 0.04])
    plain = click_rewards(log, 3, position_bias=theta, qid=qid)
    positive = routes.variant_rewards("norm-positive", 2)(log, 3, position_bias=theta, qid=qid)
    np.testing.assert_allclose(positive, plain / routes.ideal_dcg(plain, qid, 2))
    clipped = routes.variant_rewards("clip-0.1", 2)(log, 3, position_bias=theta, qid=qid)
    np.testing.assert_allclose(clipped, [0.5, 2 / (2 * 0.1), 0.0])


def test_the_route_twins_are_the_non_negative_learners_norm_positive_minus_none() -> None:
    """The summary's training-noise table pairs ``norm-positive`` with ``none`` per query for the
    learners whose rewards are non-negative, never for the signed doubly robust ones."""
    from research import deterministic_routes as routes

    queries = [("eta1", "mq2008/Fold1", q) for q in range(6)]
    routes_ = {
        ("none", "plrank-regression"): dict(zip(queries, [0.5, 0.6, 0.7, 0.8, 0.9, 1.0])),
        ("norm-positive", "plrank-regression"): dict(zip(queries, [0.6, 0.7, 0.8, 0.9, 1.0, 1.0])),
        ("none", "plrank-doubly-robust"): dict(zip(queries, [0.5] * 6)),
        ("norm-positive", "plrank-doubly-robust"): dict(zip(queries, [0.9] * 6)),
    }
    rows = [line for line in routes._twins(routes_, 5) if line.startswith("| plrank-")]
    assert len(rows) == 1 and rows[0].startswith("| plrank-regression | 0.7500 | 0.8333 | +0.0833")
    assert routes._twins({("none", "plrank-doubly-robust"): {}}, 5) == []


def test_the_joint_fit_of_the_position_bias_recovers_a_known_one() -> None:
    """The research script's joint fit (the choice the validation logs turned down) on a
    deterministic log whose rows are shown at different ranks by a noisy score of their feature."""
    from gbdt_plrank.clicks import ClickLog, pbm_position_bias
    from research.position_bias_features import joint_fit

    rng = np.random.default_rng(0)
    n_q, n_d, n_s = 300, 5, 20
    x = rng.normal(size=(n_q * n_d, 1))
    gamma = 1 / (1 + np.exp(-2 * x[:, 0]))
    score = x[:, 0] + rng.normal(size=x.shape[0])
    order = np.concatenate(
        [q * n_d + np.argsort(-score[q * n_d : (q + 1) * n_d]) for q in range(n_q)]
    )
    row = np.tile(order.reshape(n_q, n_d), (1, n_s)).ravel()
    rank = np.tile(np.arange(1, n_d + 1), n_q * n_s)
    session = np.repeat(np.arange(n_q * n_s), n_d)
    truth = pbm_position_bias(n_d, eta=1.0)
    click = (rng.random(row.size) < truth[rank - 1] * gamma[row]).astype(int)
    theta = joint_fit(
        ClickLog(session=session, row=row, rank=rank, click=click), x, max_depth=1, n_rounds=300
    )
    np.testing.assert_allclose(theta / truth, 1.0, atol=0.12)


def test_the_identification_study_measures_the_rules_verdict_and_tabulates_it(
    tmp_path: Path,
) -> None:
    """research/position_bias_identification.py: a simulated deterministic log of features that
    carry the logger's relevance is taken with a small error, one of noise is refused near the
    click-through ratio's error; the report reads the records (a rerun skips them)."""
    from research import position_bias_identification as study

    log, X, qid, theta = study.simulated_log(60, 1.0, 0)
    assert np.unique(log.rank).tolist() == [1, 2, 3, 4, 5] and theta[1] == 0.5
    for r in np.unique(log.row):  # a deterministic logger: one rank per row
        assert np.unique(log.rank[log.row == r]).size == 1
    good = study.measure(log, X, qid, 1.0)
    noise = study.measure(log, np.random.default_rng(1).normal(size=X.shape), qid, 1.0)
    assert good["taken"] and good["error"] < 0.3 < good["ctr_error"]
    assert not noise["taken"] and noise["z"] < 2 and noise["error"] > 0.5
    records = [
        {"key": "sim/50/1.0/0", "queries_drawn": 50, "rho": 1.0, **good},
        {"key": "sim/50/1.0/1", "queries_drawn": 50, "rho": 1.0, **noise},
    ]
    text = study.report(records, "cmd")
    assert "| 50, 1 | 1 of 2 |" in text and "Command: `cmd`" in text


def test_a_temperatures_cost_is_the_ranking_by_score_minus_the_expected_ndcg() -> None:
    """At a temperature near 0 the policy is its ranking by score (cost 0) where no scores tie
    (tied ones it shuffles); at 1 it costs NDCG; a query without a positive gain is left out
    (NaN)."""
    from types import SimpleNamespace

    from gbdt_plrank import PLRankRanker
    from gbdt_plrank.datasets import load_dataset
    from research.first_policy_temperature import by_score, expected_ndcg

    data = load_dataset("mq2008")
    rows = int(data.test.group_ptr[8])
    split = SimpleNamespace(X=data.test.X[:rows], y=data.test.y[:rows], qid=data.test.qid[:rows])
    model = PLRankRanker(n_estimators=5, N=5, hessian="abs", n_jobs=1, random_state=0)
    model.fit(split.X, split.y, group=split.qid)
    gains = 2.0**split.y - 1
    top = by_score(model, split, gains, 5)
    sharp = expected_ndcg(model, split, gains, k=5, temperature=1e-6, n_samples=3)
    flat = expected_ndcg(model, split, gains, k=5, temperature=1.0, n_samples=50)
    scores = model.predict(split.X)
    untied = np.array(
        [
            np.unique(scores[split.qid == q]).size == (split.qid == q).sum()
            for q in np.unique(split.qid)
        ]
    )
    assert untied.sum() >= 4
    np.testing.assert_allclose(sharp[untied], top[untied], atol=1e-9)
    assert np.nanmean(top - flat) > 0
    assert np.array_equal(np.isnan(top), np.isnan(flat))


# --------------------------------------------------------------------------------------------
# The noise in |h| (docs/research/hessian.md)
# --------------------------------------------------------------------------------------------
def test_hessian_noise_ratios_see_abs_overstate_and_denoised_correct_the_curvature() -> None:
    """On deep queries of spread margins the absolute value of an N = 50 estimate sums to well
    over the reference's |h|, and the denoised estimate to near it."""
    from research import hessian_noise

    rng = np.random.default_rng(0)
    y = rng.choice([0.0, 1.0, 2.0, 3.0, 4.0], p=[0.5, 0.3, 0.13, 0.05, 0.02], size=8 * 100)
    ptr = np.arange(0, y.size + 1, 100)
    abs_ratio, denoised = hessian_noise.ratios(y, ptr, K=20, spread=2.0, repeats=2)
    assert abs_ratio > 1.5
    assert abs(denoised - 1.0) < abs(abs_ratio - 1.0) / 2


# --------------------------------------------------------------------------------------------
# The scripts behind the performance and clicks pages run and write their tables
# --------------------------------------------------------------------------------------------
def _run(monkeypatch, script: str, *args: str) -> None:
    """``python research/<script>.py ARGS``, in this process (as the reward-order test runs its
    script), so that the kernels compiled by one script are not compiled again by the next."""
    import importlib

    monkeypatch.setattr(sys, "argv", [f"{script}.py", *args])
    importlib.import_module(f"research.{script}").main()


def test_noise_variance_writes_every_noise_and_n(tmp_path: Path, monkeypatch) -> None:
    from tiny_ltr import write_tiny_letor

    out = tmp_path / "noise.md"
    _run(
        monkeypatch,
        "noise_variance",
        "--data",
        str(write_tiny_letor(tmp_path / "tiny")),
        "--N",
        "10,50",
        "--seeds",
        "2",
        "--rounds",
        "2",
        "--repeats",
        "1",
        "--out",
        str(out),
    )
    rows = [
        line.split(" | ")[:2]
        for line in out.read_text().splitlines()
        if line.startswith(("| independent", "| lattice"))
    ]
    assert rows == [
        ["| independent", "10"],
        ["| lattice", "10"],
        ["| independent", "50"],
        ["| lattice", "50"],
    ]


def test_placement_variance_writes_the_exact_and_the_logger_tables(
    tmp_path: Path, monkeypatch
) -> None:
    out = tmp_path / "placement.md"
    _run(
        monkeypatch,
        "placement_variance",
        "configs/clicks-tiny.toml",
        "--samples",
        "20",
        "--repeats",
        "2",
        "--queries",
        "5",
        "--out",
        str(out),
    )
    text = out.read_text()
    assert "### Exact, 5 random queries" in text and text.count("\n| ") > 4


def test_stopping_rules_read_the_curves_stopping_curves_records(
    tmp_path: Path, monkeypatch
) -> None:
    from tiny_ltr import write_tiny_letor

    from research.stopping_rules import RULES

    tiny = str(write_tiny_letor(tmp_path / "tiny"))
    curves, out = tmp_path / "curves", tmp_path / "rules.md"
    _run(
        monkeypatch,
        "stopping_curves",
        "--data",
        tiny,
        "--folds",
        "1",
        "--libs",
        "xgb",
        "--seeds",
        "0",
        "--rounds",
        "3",
        "--out",
        str(curves),
    )
    _run(
        monkeypatch,
        "stopping_rules",
        "--data",
        tiny,
        "--folds",
        "1",
        "--libs",
        "xgb",
        "--seeds",
        "0",
        "--curves",
        str(curves),
        "--out",
        str(out),
    )
    text = out.read_text()
    assert all(f"| {rule.name} |" in text for rule in RULES)


def test_deep_rates_writes_both_tables_and_scales_the_hessian(tmp_path: Path, monkeypatch) -> None:
    from research import deep_rates

    out = tmp_path / "rates.md"
    _run(
        monkeypatch,
        "deep_rates",
        "--queries",
        "30,10,10",
        "--rounds",
        "4",
        "--every",
        "2",
        "--start",
        "2",
        "--more",
        "2",
        "--variants",
        '{"hessian_scale": 0.5}',
        "--out",
        str(out),
    )
    rows = [
        line.split(" | ")[:2]
        for line in out.read_text().splitlines()
        if line.startswith(("| rank:ndcg", "| plrank", "| default", '| {"'))
    ]
    assert rows[:4] == [
        ["| rank:ndcg", "2"],
        ["| rank:ndcg", "4"],
        ["| plrank", "2"],
        ["| plrank", "4"],
    ]
    assert [name for name, _ in rows[4:]] == [
        "| rank:ndcg",
        "| default",
        "| default, another stream",
        '| {"hessian_scale": 0.5}',
    ]
    assert all(gain[0] in "+-" for _, gain in rows[4:])
    ds = deep_rates.dataset("web-nonlinear", 1, [5, 2, 2])
    d = deep_rates.xgb.DMatrix(ds.train.X, ds.train.y, qid=ds.train.qid)
    margins = np.linspace(-1, 1, ds.train.y.size)
    g, h = deep_rates.objective({"K": 5}, seed=3, n_jobs=1)(margins, d)
    g2, h2 = deep_rates.objective({"K": 5, "hessian_scale": 0.5}, seed=3, n_jobs=1)(margins, d)
    np.testing.assert_array_equal(g2, g)
    np.testing.assert_allclose(h2, 0.5 * h, rtol=1e-15)


def test_pirank_defaults_tabulates_every_candidate_and_resumes(tmp_path: Path, monkeypatch) -> None:
    from tiny_ltr import write_tiny_letor

    from gbdt_plrank._training.pirank_objective import PIRANK_HESSIANS

    tiny, out = str(write_tiny_letor(tmp_path / "tiny")), tmp_path / "pirank.md"
    args = (
        "--data",
        tiny,
        "--folds",
        "1",
        "--k",
        "5",
        "--libraries",
        "xgboost",
        "--modes",
        PIRANK_HESSIANS[0],
        "--taus",
        "0.1,1",
        "--out",
        str(out),
    )
    _run(monkeypatch, "pirank_defaults", *args)
    records = out.with_suffix(".jsonl").read_text().splitlines()
    text = out.read_text()
    assert len(records) == 3  # LambdaMART and the two candidates
    for name in (
        "lambdamart-xgb",
        f"{PIRANK_HESSIANS[0]}, tau 0.1",
        f"{PIRANK_HESSIANS[0]}, tau 1",
    ):
        assert f"| {name} | " in text
    _run(monkeypatch, "pirank_defaults", *args)  # every training is in the log: none again
    assert out.with_suffix(".jsonl").read_text().splitlines() == records


def test_hessian_probe_writes_the_ratio_and_scale_tables(tmp_path: Path, monkeypatch) -> None:
    """Its "PL-Rank abs" row trains with ``hessian="abs"`` whatever the default is."""
    from tiny_ltr import write_tiny_letor

    from research import hessian_probe

    seen: list[str] = []
    objective = hessian_probe.plrank_objective
    monkeypatch.setattr(
        hessian_probe,
        "plrank_objective",
        lambda **kw: seen.append(kw.get("hessian", "default")) or objective(**kw),
    )
    out, tiny = tmp_path / "probe.md", str(write_tiny_letor(tmp_path / "tiny"))
    _run(monkeypatch, "hessian_probe", "--data", tiny, "--samples", "50", "--out", str(out))
    text = out.read_text()
    assert "N=50," in text
    assert [
        line.split(" | ")[1]
        for line in text.splitlines()
        if line.startswith(f"| {tiny} | ") and "PL-Rank" in line
    ] == ["PL-Rank abs", "PL-Rank constant 1"]
    assert seen == ["abs", "constant"]


def test_fairness_hessian_pairs_every_mode_with_abs_and_resumes(
    tmp_path: Path, monkeypatch
) -> None:
    from tiny_ltr import write_tiny_letor

    out = tmp_path / "fair.md"
    args = (
        "--data",
        str(write_tiny_letor(tmp_path / "tiny")),
        "--folds",
        "1",
        "--weights",
        "1",
        "--modes",
        "abs,constant",
        "--out",
        str(out),
    )
    _run(monkeypatch, "fairness_hessian", *args)
    records = out.with_suffix(".jsonl").read_text().splitlines()
    rows = [line.split(" | ") for line in out.read_text().splitlines() if line.startswith("| 1 |")]
    assert len(records) == 2 and [row[1] for row in rows] == ["abs", "constant"]
    assert rows[0][7] == "" and rows[1][7].startswith(("+", "-"))  # constant minus abs
    _run(monkeypatch, "fairness_hessian", *args)
    assert out.with_suffix(".jsonl").read_text().splitlines() == records


def test_first_policy_temperature_measures_the_configured_logger(
    tmp_path: Path, monkeypatch
) -> None:
    """--learner logger: the configuration's own PL-Rank logger is the policy (no training on
    clicks), on the grid --temperatures gives."""
    out = tmp_path / "temperature.md"
    _run(
        monkeypatch,
        "first_policy_temperature",
        "configs/clicks-tiny.toml",
        "--learner",
        "logger",
        "--sessions",
        "3",
        "--samples",
        "20",
        "--temperatures",
        "0.05,1",
        "--out",
        str(out),
    )
    text = out.read_text()
    assert (
        "--temperatures 0.05,1 --out" in text and "The logger of `configs/clicks-tiny.toml`" in text
    )
    rows = {
        line.split("|")[1].strip(): [float(c) for c in line.split("|")[2:5]]
        for line in text.splitlines()
        if line.startswith(("| 0.05 |", "| 1 |"))
    }
    assert set(rows) == {"0.05", "1"}
    # validation labels: the sharper policy is the closer to the ranking by score
    assert abs(rows["0.05"][0]) < abs(rows["1"][0])


def test_regression_route_sets_every_variant_against_the_run(tmp_path: Path, monkeypatch) -> None:
    """research/regression_route.py on a tiny deterministic-logger run: every variant's row on
    validation and test, paired against the run's learners on the same queries; a second call
    resumes from the records."""
    from tiny_ltr import write_tiny_letor

    from gbdt_plrank.harness.clicks import load_clicks_config, run_clicks
    from research.regression_route import KEYS, VARIANTS

    tiny = write_tiny_letor(tmp_path / "tiny", queries=(12, 6, 6))
    config_path = tmp_path / "c.toml"
    text = (Path(__file__).resolve().parents[1] / "configs" / "clicks-tiny.toml").read_text()
    text = text.replace('datasets = ["mq2008"]', f'datasets = ["{tiny}"]').replace(
        "sessions = [3, 10]", "sessions = [3]"
    )
    text = text.replace("exploration_rounds = 2", "exploration_rounds = 0")
    config_path.write_text(
        'logger = "lambdamart"\nope_sessions = 0\nposition_bias = "known"\n'
        f'out = "{tmp_path / "run"}"\n'
        'learners = ["plrank-regression", "plrank-naive", "lambdarank-position-lgb"]\n' + text
    )
    run_clicks(load_clicks_config(config_path), echo=lambda _: None)
    out = tmp_path / "route.md"
    args = ["--sessions", "3", "--against", str(tmp_path / "run"), "--out", str(out)]
    _run(monkeypatch, "regression_route", str(config_path), *args)
    text = out.read_text()
    for variant in VARIANTS:
        assert text.count(f"| {variant} |") == 4  # validation and test, NDCG@5 and @10
    assert "| run: lambdarank-position-lgb |" in text and "- plrank-naive" in text
    records = out.with_suffix(".jsonl").read_text().splitlines()
    assert len(records) == len(VARIANTS)
    _run(monkeypatch, "regression_route", str(config_path), *args)
    # --regression-rounds: each variant at each of the regression's rounds, its own records
    rounds = tmp_path / "rounds.md"
    args = [*args[:-1], str(rounds), "--variants", "centred", "--regression-rounds", "2,40"]
    _run(monkeypatch, "regression_route", str(config_path), *args)
    text = rounds.read_text()
    records = [json.loads(line) for line in rounds.with_suffix(".jsonl").read_text().splitlines()]
    centred = KEYS["centred"]
    assert [r["variant"] for r in records] == [
        f"{centred}, 2 regression rounds",
        f"{centred}, 40 regression rounds",
    ]
    for r in records:
        assert text.count(f"| {r['variant']} |") == 4
    assert records[0]["vali_ndcg"] != records[1]["vali_ndcg"]
    assert "--regression-rounds 2,40" in text


# --------------------------------------------------------------------------------------------
# Learning per round on deep queries (docs/research/per-round.md)
# --------------------------------------------------------------------------------------------
def test_per_round_xe_ndcg_is_the_softmax_minus_the_noisy_gain_shares_per_query() -> None:
    from research.per_round import xe_ndcg_grad_hess

    labels = np.array([0.0, 2.0, 1.0, 3.0, 3.0, 1.0, 0.0, 4.0, 2.0])
    ptr = np.array([0, 3, 5, 9])  # the middle query's labels are equal: no gradient
    margins = np.array([0.3, -1.0, 2.0, 0.5, 0.1, -0.2, 1.5, 0.0, 0.7])
    g, h = xe_ndcg_grad_hess(margins, labels, ptr, np.random.default_rng(5))
    u = np.random.default_rng(5).random(labels.size)
    for a, b in itertools.pairwise(ptr):
        if np.ptp(labels[a:b]) == 0:
            assert not g[a:b].any() and not h[a:b].any()
            continue
        e = np.exp(margins[a:b])
        rho = e / e.sum()
        phi = 2.0 ** labels[a:b] - u[a:b]
        np.testing.assert_allclose(g[a:b], rho - phi / phi.sum(), rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(h[a:b], rho * (1 - rho), rtol=1e-12)
        assert abs(g[a:b].sum()) < 1e-12


def test_per_round_mean_kl_of_the_top1_policies_by_hand() -> None:
    from research.per_round import mean_kl

    ptr = np.array([0, 2, 5])
    before = np.array([0.0, 1.0, 0.5, -0.5, 2.0])
    after = np.array([1.0, 0.0, 0.5, 0.5, 1.0])

    def kl(p: np.ndarray, q: np.ndarray) -> float:
        p, q = np.exp(p) / np.exp(p).sum(), np.exp(q) / np.exp(q).sum()
        return float((p * np.log(p / q)).sum())

    expected = (kl(before[:2], after[:2]) + kl(before[2:], after[2:])) / 2
    assert mean_kl(before, after, ptr) == pytest.approx(expected, rel=1e-12)
    shifted = before + np.array([3.0, 3.0, -7.0, -7.0, -7.0])  # a constant per query
    assert mean_kl(before, shifted, ptr) == pytest.approx(0.0, abs=1e-12)


def test_per_round_schedules_and_the_leaf_rules_booster() -> None:
    from research.per_round import Candidate

    switch, anneal = Candidate("xgboost", xe_rounds=20), Candidate("xgboost", anneal=50)
    assert [switch.xe_weight(r) for r in (0, 19, 20, 99)] == [1.0, 1.0, 0.0, 0.0]
    assert [anneal.xe_weight(r) for r in (0, 25, 50, 80)] == [1.0, 0.5, 0.0, 0.0]
    assert Candidate("xgboost", xe_rounds=float("inf")).xe_weight(10**6) == 1.0
    with pytest.raises(ValueError, match="set_leaf_output"):
        Candidate("xgboost", leaves=("kl", 0.01))


@pytest.mark.parametrize("leaves", [("kl", 0.03), ("secant", 0.25, 4.0), ("line search",)])
def test_per_round_leaf_rules_keep_the_objectives_margins_the_boosters(leaves) -> None:
    """LightGBM's training score cache misses set_leaf_output: the objective must add the
    difference, so that the margins it sees are the rescaled model's."""
    from research.per_round import Candidate, dataset, fit

    ds = dataset("web-nonlinear", 1, [20, 5, 5])
    booster, objective, rule, _, _ = fit(
        Candidate("lightgbm", leaves=leaves), ds, rounds=3, every=3, n_jobs=1
    )
    assert rule.stats and any(v != 1.0 for v in rule.stats)  # the rule changed the trees
    np.testing.assert_allclose(
        objective.margins, booster.predict(ds.train.X, raw_score=True, num_iteration=2), atol=1e-9
    )


def test_per_round_temperature_keeps_1_at_a_flat_policy_and_steps_on_the_sharper_one() -> None:
    from gbdt_plrank import plrank_grad_hess
    from research.per_round import CANDIDATES, PLRANK, TAUS, Objective, dataset, policy_value

    tr = dataset("web-nonlinear", 1, [20, 5, 5]).train
    candidate = CANDIDATES["xgboost", "PL-Rank, learned temperature"]
    flat = Objective(candidate, tr, n_jobs=1)
    flat(np.zeros(tr.y.size), None)
    assert flat.stats == [1.0]
    objective = Objective(candidate, tr, n_jobs=1)
    f = np.random.default_rng(0).normal(size=tr.y.size)
    g, h = objective(f, None)
    value = policy_value(tr, 10, 1)
    tau = objective.tau
    assert value(tau * f) == max(value(t * f) for t in TAUS)
    g0, h0 = plrank_grad_hess(tau * f, tr.y, tr.group_ptr, seed=1000, n_jobs=1, **PLRANK)
    np.testing.assert_allclose(g, tau * g0, rtol=1e-12)
    np.testing.assert_allclose(h, tau**2 * h0, rtol=1e-12)


def test_per_round_writes_every_candidate_and_resumes(tmp_path: Path, monkeypatch) -> None:
    from research.per_round import CANDIDATES, REFERENCE

    out = tmp_path / "per_round.md"
    args = (
        "--data",
        "web-nonlinear",
        "--draws",
        "1",
        "--queries",
        "30,10,10",
        "--rounds",
        "4",
        "--every",
        "2",
        "--out",
        str(out),
    )
    _run(monkeypatch, "per_round", *args)
    records = out.with_suffix(".jsonl").read_text().splitlines()
    assert len(records) == 1 + len(CANDIDATES)  # the gradient-noise table and every training
    text = out.read_text()
    rows = {
        line.split(" | ")[0][2:]: line.split(" | ")
        for line in text.split("by the query's number of relevant documents")[0].splitlines()
        if line.startswith("| ") and not line.startswith(("| candidate", "|---"))
    }
    assert set(rows) == {name for _, name in CANDIDATES}
    assert rows[REFERENCE][4] == ""  # paired with itself: no cell
    assert rows["XE-NDCG"][4][0] in "+-" and rows["XE-NDCG"][6] in ("ahead", "behind", "level")
    assert "| 1 | flat | 0.000 | 10 |" in text
    # the differences by the query's number of relevant documents: every validation query
    by = text.split("by the query's number of relevant documents")[1].split("###")[0]
    counts = [int(c.split("(")[1].split()[0]) for c in by.splitlines()[2].split(" | ")[1:]]
    assert sum(counts) == len(json.loads(records[1])["qid"])
    # and the sharpened policies' values, a row per candidate and temperature
    sharp = text.split("of the validation policy PL(tau f)")[1].split("###")[0]
    rows_tau = [line.split(" | ")[:2] for line in sharp.splitlines() if line.startswith("| PL")]
    assert ["| PL-Rank", "1"] in rows_tau and ["| PL-Rank", "16"] in rows_tau
    _run(monkeypatch, "per_round", *args)  # every training is in the log: none again
    assert out.with_suffix(".jsonl").read_text().splitlines() == records


def test_patience_pairs_sets_each_methods_second_rule_against_its_first(tmp_path: Path) -> None:
    """Two stopping rules' records of the same methods: the rounds each ran, and the second's
    test NDCG minus the first's, each query's mean over the seeds, paired per query."""
    from benchmarks.harness import append_record
    from benchmarks.time_to_model import Run, read_runs
    from research.patience_pairs import table

    def write(name: str, rounds: int, lift: float) -> Path:
        path = tmp_path / name
        for seed in (0, 1):
            test = {10: {q: 0.5 + 0.01 * q + lift + 0.002 * seed * (q % 2) for q in range(6)}}
            append_record(path, Run("m", "m", "d", 1, 1.0, rounds, rounds - 5, test, seed).__dict__)
        return path

    first, second = write("fixed.jsonl", 40, 0.0), write("growing.jsonl", 60, 0.01)
    lines = table(read_runs(first), read_runs(second), k=10).splitlines()
    assert lines[0].startswith("| method | rounds run, first | rounds run, second |")
    assert lines[2].startswith("| m | 80 | 120 | 1.50x | +0.0100 [+0.0100, +0.0100] ahead")


# --------------------------------------------------------------------------------------------
# Where the group disparity lies (docs/guide/fairness.md, deep queries)
# --------------------------------------------------------------------------------------------
def test_concentration_merits_and_query_feature_by_hand() -> None:
    """Each query's merit of the protected group (item group 1) and of the others: the sums of
    2^y - 1; the query-level feature is the last column's value on a query's first row."""
    from gbdt_plrank.datasets import Split
    from research import fairness_web_concentration as concentration

    y = np.array([0.0, 2, 1, 3, 0, 1])
    qid = np.array([0, 0, 0, 1, 1, 1])
    X = np.column_stack([np.arange(6.0), [7.0, 7, 7, -1, -1, -1]])
    split = Split(X, y, qid, item_groups=np.array([1, 0, 1, 0, 0, 1]))
    protected, other = concentration._merits(split)
    np.testing.assert_array_equal(protected, [0 + 1, 1])
    np.testing.assert_array_equal(other, [3, 7 + 0])
    np.testing.assert_array_equal(concentration._context(split), [7.0, -1.0])


def test_per_round_less_sharpening_is_the_chain_rule_of_the_capped_objective() -> None:
    """Projecting out the sharpening direction leaves no component along a query's centred
    margins, and the capped objective's gradient is its finite differences."""
    from research.per_round import centred, through_cap, unsharpened

    rng = np.random.default_rng(3)
    ptr = np.array([0, 5, 12, 13, 16])  # a one-row query, and one of equal margins
    f = rng.normal(size=16) * 3.0
    f[13:16] = 0.7
    weights = rng.normal(size=16)
    fc = centred(f, ptr)
    g = unsharpened(rng.normal(size=16), f, ptr)
    for a, b in itertools.pairwise(ptr):
        assert abs(g[a:b] @ fc[a:b]) < 1e-12

    def value(x: np.ndarray) -> float:  # a smooth objective of each query's softmax
        total = 0.0
        for a, b in itertools.pairwise(ptr):
            e = np.exp(x[a:b] - x[a:b].max())
            total += float(weights[a:b] @ e) / float(e.sum())
        return total

    def gradient(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        eye = np.eye(x.size) * 1e-6
        return np.array([(value(x + e) - value(x - e)) / 2e-6 for e in eye]), np.ones(x.size)

    def factors(x: np.ndarray) -> np.ndarray:  # each row's min(1, spread / its query's std)
        sigma = np.array([np.std(x[a:b]) for a, b in itertools.pairwise(ptr)])
        return np.repeat(np.minimum(1.0, spread / np.maximum(sigma, 1e-300)), np.diff(ptr))

    spread = 1.0
    g, h = through_cap(gradient, f, ptr, spread)
    c = factors(f)
    assert c[0] < 1 and c[5] < 1 and np.all(c[12:] == 1)  # the first two queries are capped
    eye = np.eye(16) * 1e-6
    expected = [
        (value(factors(f + e) * (f + e)) - value(factors(f - e) * (f - e))) / 2e-6 for e in eye
    ]
    np.testing.assert_allclose(g, expected, atol=1e-7)
    np.testing.assert_allclose(h, c**2)


def test_per_round_lambdamart_start_is_rank_ndcg_then_plrank_on_one_booster() -> None:
    import xgboost as xgb

    from research.per_round import Candidate, dataset, fit, xgboost_params

    with pytest.raises(ValueError, match="rank:ndcg"):
        Candidate("lightgbm", native_rounds=2)
    ds = dataset("web-nonlinear", 1, [20, 5, 5])
    candidate = Candidate("xgboost", native_rounds=2)
    booster, objective, _, curve, _ = fit(candidate, ds, rounds=4, every=2, n_jobs=1)
    assert booster.num_boosted_rounds() == 4 and len(curve.ndcg) == 2
    assert objective.round == 2  # PL-Rank trained the last two rounds
    native = Candidate("xgboost", native="rank:ndcg")
    start = xgb.train(
        xgboost_params(native, n_jobs=1), xgb.DMatrix(ds.train.X, ds.train.y, qid=ds.train.qid), 2
    )
    X = xgb.DMatrix(ds.vali.X)
    np.testing.assert_allclose(
        booster.predict(X, output_margin=True, iteration_range=(0, 2)),
        start.predict(X, output_margin=True),
        atol=1e-6,
    )


def test_per_round_deep_weights_favour_the_deep_documents_and_keep_each_querys_total() -> None:
    from research.per_round import K, deep_weights

    rng = np.random.default_rng(4)
    ptr = np.array([0, 40, 100, 130])
    f = rng.normal(size=130) * 2.0
    g = rng.normal(size=130)
    g[100:] = 0.0  # a query without gradient keeps its weights' scale
    for mass in (True, False):
        w = deep_weights(f, g, ptr, cap=4.0, mass=mass)
        for a, b in itertools.pairwise(ptr):
            e = np.exp(f[a:b] - f[a:b].max())
            rho = e / e.sum()
            order = np.argsort(-rho)
            assert np.all(np.diff(w[a:b][order]) >= -1e-12)  # the less likely placed, the more
            assert w[a:b].max() / w[a:b].min() <= 4.0 + 1e-9
            raw = 1.0 / np.clip(K * rho, 0.25, 1.0)
            np.testing.assert_allclose(w[a:b] / w[a:b].max(), raw / raw.max(), rtol=1e-12)
            if mass and g[a:b].any():
                assert np.abs(w[a:b] * g[a:b]).sum() == pytest.approx(np.abs(g[a:b]).sum())
            elif not mass:
                assert w[a:b].mean() == pytest.approx(1.0)


def test_per_round_selective_weights_reach_only_the_chosen_documents() -> None:
    """The top-worthy documents: a positive label at least the query's K-th largest; the
    weights on them are the deep weights', 1 elsewhere, the query's total kept."""
    from research.per_round import K, placement_weights, selective_weights, top_worthy

    labels = np.array([0.0] * 5 + [1.0] * 8 + [2.0] * 4 + [4.0] * 2 + [0.0] * 3 + [1.0])
    ptr = np.array([0, 19, 23])  # the second query has fewer documents than K
    chosen = top_worthy(labels, ptr, K)
    # first query: the 10th largest label is 1, so every relevant document; second: the one
    np.testing.assert_array_equal(chosen, labels > 0)
    labels[5:13] = 0.0  # now the 10th largest of the first query is 0: the 6 graded ones
    np.testing.assert_array_equal(top_worthy(labels, ptr, K)[:19], labels[:19] > 0)
    labels[5:13] = [1.0] * 4 + [3.0] * 4  # 2, 4, 3 (10 documents): the 10th largest is 2
    np.testing.assert_array_equal(top_worthy(labels, ptr, K)[:19], labels[:19] >= 2)
    rng = np.random.default_rng(3)
    f, g = rng.normal(size=23) * 2.0, rng.normal(size=23)
    reached = top_worthy(labels, ptr, K)
    w = selective_weights(f, g, ptr, reached, cap=4.0)
    deep = placement_weights(f, ptr, K=K, cap=4.0)
    for a, b in itertools.pairwise(ptr):
        assert np.abs(w[a:b] * g[a:b]).sum() == pytest.approx(np.abs(g[a:b]).sum())
        scale = w[a:b][~reached[a:b]]
        assert np.allclose(scale, scale[0])  # 1 times the query's scale
        np.testing.assert_allclose(w[a:b][reached[a:b]], scale[0] * deep[a:b][reached[a:b]])


def test_per_round_query_scale_multiplies_each_querys_estimate() -> None:
    from research.per_round import Candidate, Objective, dataset

    tr = dataset("web-nonlinear", 1, [20, 5, 5]).train
    f = np.random.default_rng(0).normal(size=tr.y.size)
    g0, h0 = Objective(Candidate("xgboost", deep=("amplified", 4.0)), tr, n_jobs=1)(f, None)
    relevant = np.add.reduceat((tr.y > 0).astype(float), tr.group_ptr[:-1])
    c = np.repeat(np.sqrt(relevant) / np.sqrt(relevant).mean(), np.diff(tr.group_ptr))
    for hessian in (False, True):
        candidate = Candidate(
            "xgboost", deep=("amplified", 4.0), query_power=0.5, query_hessian=hessian
        )
        g, h = Objective(candidate, tr, n_jobs=1)(f, None)
        np.testing.assert_allclose(g, c * g0, rtol=1e-12)
        np.testing.assert_allclose(h, c * h0 if hessian else h0, rtol=1e-12)


def test_per_round_grades_count_the_top_k_and_split_its_ndcg_by_hand() -> None:
    """Two queries and one without a relevant document (left out): the grades in the ranking's
    top K (ties in input order) and each grade's share of the NDCG@K, by hand."""
    import scipy.sparse as sp

    from gbdt_plrank._groups import Split
    from research.per_round import Curve, K

    y = np.array([0.0] * 9 + [2.0, 1.0, 3.0] + [1.0, 0.0] + [0.0, 0.0])
    qid = np.repeat([1, 2, 3], [12, 2, 2])
    margins = np.concatenate([np.arange(12.0), [0.0, 1.0], [0.0, 0.0]])
    curve = Curve(Split(sp.csr_matrix(np.zeros((16, 1))), y, qid), n_jobs=1)
    curve.last = margins
    got = curve.grades()
    # query 1: the top 10 by margin are rows 11 down to 2 (labels 3, 1, 2, then 7 zeros)
    assert got["top"] == [[7, 1, 1, 1], [1, 1, 0, 0]]
    disc = 1 / np.log2(np.arange(2, K + 2))
    ideal = 7 * disc[0] + 3 * disc[1] + 1 * disc[2]
    np.testing.assert_allclose(
        got["share"][0], [0, 1 * disc[1] / ideal, 3 * disc[2] / ideal, 7 * disc[0] / ideal]
    )
    # query 2: the irrelevant document is ranked first
    np.testing.assert_allclose(got["share"][1], [0, disc[1], 0, 0])


@pytest.mark.parametrize("hessian", [False, True])
def test_per_round_label_weights_favour_the_top_grades_and_keep_each_querys_total(
    hessian: bool,
) -> None:
    from research.per_round import Candidate, Objective, dataset, label_weights

    tr = dataset("web-nonlinear", 1, [20, 5, 5]).train
    f = np.random.default_rng(0).normal(size=tr.y.size)
    deep = ("amplified", 4.0)
    g0, h0 = Objective(Candidate("xgboost", deep=deep), tr, n_jobs=1)(f, None)
    candidate = Candidate("xgboost", deep=deep, label_power=0.5, label_hessian=hessian)
    g, h = Objective(candidate, tr, n_jobs=1)(f, None)
    w = label_weights(tr.y, g0, tr.group_ptr, power=0.5)
    np.testing.assert_allclose(g, w * g0, rtol=1e-12)
    np.testing.assert_allclose(h, w * h0 if hessian else h0, rtol=1e-12)
    for a, b in itertools.pairwise(tr.group_ptr):
        assert np.abs(g[a:b]).sum() == pytest.approx(np.abs(g0[a:b]).sum())
        # within the query, the weights are 2^(l/2) times one scale
        np.testing.assert_allclose(w[a:b] / np.exp2(0.5 * tr.y[a:b]), w[a] / np.exp2(0.5 * tr.y[a]))
    assert len(np.unique(tr.y)) > 1


@pytest.mark.parametrize("centre", ["mean", "newton"])
def test_per_round_shift_taken_out_leaves_each_query_unmoved_and_an_ascent(centre: str) -> None:
    """Without its shift, the weighted estimate sums to 0 in each query (its mean taken out), or
    moves no query in a Newton step (its Hessian-weighted mean); what is taken out is the
    shift alone, so the direction keeps its product with any gradient that sums to 0."""
    from research.per_round import Candidate, Objective, dataset

    tr = dataset("web-nonlinear", 1, [20, 5, 5]).train
    f = np.random.default_rng(0).normal(size=tr.y.size)
    deep = ("amplified", 4.0)
    g0, h0 = Objective(Candidate("xgboost", deep=deep), tr, n_jobs=1)(f, None)
    g, h = Objective(Candidate("xgboost", deep=deep, centre=centre), tr, n_jobs=1)(f, None)
    np.testing.assert_array_equal(h, h0)
    starts = tr.group_ptr[:-1]
    assert np.abs(np.add.reduceat(g0, starts)).max() > 1e-3  # the weights gave it a shift
    np.testing.assert_allclose(np.add.reduceat(g, starts), 0.0, atol=1e-12)
    shift = (g0 - g) / (h0 if centre == "newton" else 1.0)
    for a, b in itertools.pairwise(tr.group_ptr):
        np.testing.assert_allclose(shift[a:b], shift[a], rtol=1e-9)
    u = np.random.default_rng(1).normal(size=tr.y.size)
    u -= np.repeat(np.add.reduceat(u, starts) / np.diff(tr.group_ptr), np.diff(tr.group_ptr))
    if centre == "mean":
        assert u @ g == pytest.approx(u @ g0, rel=1e-9)


def test_per_round_sharpened_policy_is_the_chain_rule_from_its_round_on() -> None:
    from research.per_round import Candidate, Objective, dataset

    tr = dataset("web-nonlinear", 1, [20, 5, 5]).train
    f = np.random.default_rng(0).normal(size=tr.y.size)
    deep = ("amplified", 4.0)
    sharp = Objective(Candidate("xgboost", deep=deep, sharpen=(1, 2.0)), tr, n_jobs=1)
    plain = Objective(Candidate("xgboost", deep=deep), tr, n_jobs=1)
    for r in range(2):  # round 0 as plain PL-Rank; round 1 at the policy PL(2f)
        g, h = sharp(f, None)
        g0, h0 = plain(2.0 * f if r else f, None)
        np.testing.assert_allclose(g, 2.0 * g0 if r else g0, rtol=1e-12)
        np.testing.assert_allclose(h, 4.0 * h0 if r else h0, rtol=1e-12)


@pytest.mark.parametrize("kind", ["amplified", "re-weighted"])
def test_per_round_deep_candidates_weigh_plranks_estimate(kind: str) -> None:
    from gbdt_plrank import plrank_grad_hess
    from research.per_round import PLRANK, Candidate, Objective, dataset, deep_weights

    tr = dataset("web-nonlinear", 1, [20, 5, 5]).train
    f = np.random.default_rng(0).normal(size=tr.y.size)
    g, h = Objective(Candidate("xgboost", deep=(kind, 4.0)), tr, n_jobs=1)(f, None)
    g0, h0 = plrank_grad_hess(f, tr.y, tr.group_ptr, seed=1000, n_jobs=1, **PLRANK)
    w = deep_weights(f, g0, tr.group_ptr, cap=4.0, mass=kind == "amplified")
    assert np.ptp(w) > 0.5
    np.testing.assert_allclose(g, w * g0, rtol=1e-12)
    np.testing.assert_allclose(h, h0 if kind == "amplified" else w * h0, rtol=1e-12)


def test_per_round_annealed_deep_weights_fall_to_plranks_estimate() -> None:
    from gbdt_plrank import plrank_grad_hess
    from research.per_round import PL_SEED, PLRANK, Candidate, Objective, dataset, deep_weights

    tr = dataset("web-nonlinear", 1, [20, 5, 5]).train
    f = np.random.default_rng(0).normal(size=tr.y.size)
    objective = Objective(Candidate("xgboost", deep=("amplified", 4.0, 2)), tr, n_jobs=1)
    for r, share in enumerate([1.0, 0.5, 0.0, 0.0]):  # the weights' share in round r of R = 2
        g, h = objective(f, None)
        g0, h0 = plrank_grad_hess(f, tr.y, tr.group_ptr, seed=PL_SEED + r, n_jobs=1, **PLRANK)
        w = 1.0 + (deep_weights(f, g0, tr.group_ptr, cap=4.0, mass=True) - 1.0) * share
        np.testing.assert_allclose(g, w * g0, rtol=1e-12)
        np.testing.assert_allclose(h, h0, rtol=1e-12)


def test_per_round_setting_changes_every_candidate_but_its_own_choices() -> None:
    from research.per_round import CANDIDATES, Setting, record_key, xgboost_params

    setting = Setting(0.2, 30)
    plain = setting.of(CANDIDATES["xgboost", "PL-Rank"])
    assert xgboost_params(plain, n_jobs=1)["eta"] == 0.2 and dict(plain.plrank)["K"] == 30
    own_cutoff = setting.of(CANDIDATES["xgboost", "PL-Rank, cut-off 20"])
    assert dict(setting.of(CANDIDATES["xgboost", "PL-Rank, N=100"]).plrank) == {"K": 30, "N": 100}
    assert dict(own_cutoff.plrank)["K"] == 20  # its own
    lgb_defaults = CANDIDATES["lightgbm", "lambdarank at LightGBM's defaults (learning rate 0.1)"]
    assert dict(setting.of(lgb_defaults).trees)["learning_rate"] == 0.1
    assert dict(setting.of(CANDIDATES["lightgbm", "PL-Rank"]).trees)["learning_rate"] == 0.2
    # records written before the setting existed are the default setting's
    old = {"kind": "training", "data": "d", "draw": 1, "booster": "xgboost", "name": "PL-Rank"}
    old |= {"rounds": 100, "every": 10}
    assert record_key(old) == record_key(old | {"learning_rate": 0.3, "cutoff": 10})
    assert record_key(old) != record_key(old | {"learning_rate": 0.2, "cutoff": 20})


def test_per_round_falling_rate_steps_each_round_at_its_rate() -> None:
    import xgboost as xgb

    from research.per_round import Candidate, dataset, falling, fit

    rates = falling(0.35, 0.05, 150)
    assert rates[0] == 0.35 and rates[-1] == pytest.approx(0.05)
    assert np.mean(rates) == pytest.approx(0.2)
    with pytest.raises(ValueError, match="schedule of rates"):
        Candidate("lightgbm", rates=(0.3, 0.1))
    with pytest.raises(ValueError, match="cannot follow a LambdaMART start"):
        Candidate("xgboost", native_rounds=20, rates=(0.3, 0.1))
    ds = dataset("web-nonlinear", 1, [20, 5, 5])
    X = xgb.DMatrix(ds.vali.X)

    def margins(candidate: Candidate, last: int) -> np.ndarray:
        booster = fit(candidate, ds, rounds=2, every=2, n_jobs=1)[0]
        return booster.predict(X, output_margin=True, iteration_range=(0, last))

    plain = Candidate("xgboost")  # eta 0.3
    np.testing.assert_allclose(
        margins(Candidate("xgboost", rates=(0.3, 0.3)), 2), margins(plain, 2)
    )
    falling_run = Candidate("xgboost", rates=(0.3, 0.1))
    np.testing.assert_allclose(margins(falling_run, 1), margins(plain, 1))  # round 1 at 0.3
    assert not np.allclose(margins(falling_run, 2), margins(plain, 2))  # round 2 at 0.1
