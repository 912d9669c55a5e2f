"""The benchmark suite runs and writes its outputs; its baselines compute the library's numbers.

Nothing here asserts that anything is fast: timings are the benchmark's business, not CI's.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import gbdt_plrank

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import baselines  # noqa: E402

from benchmarks import synthetic  # noqa: E402

SECTION_FILES = (
    "round_vs_xgboost",
    "pirank_objective",
    "table2",
    "threads_memory",
    "compile_time",
    "nn_epoch",
    "dask_scaling",
)
TOL = {"rtol": 1e-10, "atol": 1e-10}


def _query(D: int, seed: int, scale: float = 1.5) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 5, size=D).astype(float)
    labels[rng.integers(D)] = 3.0  # at least one relevant document
    return scale * rng.standard_normal(D), labels


def _random_rankings(D: int, K: int, N: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.array([rng.permutation(D)[: min(K, D)] for _ in range(N)])


# --------------------------------------------------------------------------------------------
# The smoke run
# --------------------------------------------------------------------------------------------
@pytest.mark.slow  # a subprocess that runs the benchmark suite's quick mode
def test_quick_benchmark_runs_and_writes_every_output(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            str(REPO / "benchmarks" / "bench_round.py"),
            "--quick",
            "--out",
            str(tmp_path),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    for name in SECTION_FILES:
        md = (tmp_path / f"{name}.md").read_text()
        assert md.startswith("## ") and "|---|" in md, name
        assert md in proc.stdout, f"{name} was not printed"
        json.loads((tmp_path / f"{name}.json").read_text())
    assert (tmp_path / "summary.md").read_text().startswith("# gbdt_plrank benchmark")
    env = json.loads((tmp_path / "environment.json").read_text())
    assert env["quick"] is True

    table2 = json.loads((tmp_path / "table2.json").read_text())
    Ks, Ns = table2["config"]["Ks"], table2["config"]["Ns"]
    for key in ("mslr", "long"):
        cells = {(c["method"], c["N"], c["K"]) for c in table2[key]["cells"]}
        assert len(cells) == 5 * len(Ks) * len(Ns)

    rnd = json.loads((tmp_path / "round_vs_xgboost.json").read_text())
    assert rnd["ratio_objective_to_xgboost_round"] > 0
    assert rnd["train_K"] == 2 * rnd["config"]["K"]  # the ranker's default train_K is timed
    assert rnd["plrank_full_round_at_train_K"]["median"] > 0
    assert rnd["ratio_objective_at_train_K_to_xgboost_round"] > 0
    assert 20 in Ks  # the ranker's default train_K for a model judged at 10
    pirank = json.loads((tmp_path / "pirank_objective.json").read_text())
    assert [g["length"] for g in pirank["growth"]] == list(pirank["config"]["list_lengths"])
    assert all(pirank[key]["pirank"]["median"] > 0 for key in ("mslr", "long"))
    threads = json.loads((tmp_path / "threads_memory.json").read_text())
    assert {r["n_jobs"] for r in threads["runs"]} == {1, 2}
    assert all(r["peak_kb"] is None or r["peak_kb"] > 0 for r in threads["runs"])
    compiled = json.loads((tmp_path / "compile_time.json").read_text())
    assert compiled["no_cache"]["cache_files_after"] > 0
    first = compiled["first_training_no_cache"]
    # the default (denoised) Hessian's two halves are drawn in one pass
    assert "gbdt_plrank._kernels.plrank.estimate_narrow_halves_groups" in first["kernels"]
    assert first["specialisations"] >= len(first["kernels"]) > 0


# --------------------------------------------------------------------------------------------
# The baselines give the library's numbers for the same rankings
# --------------------------------------------------------------------------------------------
CASES = [(7, 3, 0), (30, 10, 1), (12, 12, 2), (5, 9, 3), (60, 5, 4), (2, 1, 5)]


@pytest.mark.parametrize(("D", "K", "seed"), CASES)
@pytest.mark.parametrize(("metric", "gain"), [("ndcg", "exp"), ("dcg", "linear")])
def test_plrank3_baseline_equals_library(D: int, K: int, seed: int, metric: str, gain: str) -> None:
    scores, labels = _query(D, seed)
    for rankings in (
        baselines.gumbel_rankings(scores, K, 50, seed=seed),
        _random_rankings(D, K, 17, seed),
    ):
        g, h = gbdt_plrank.plrank_grad_hess_from_rankings(
            scores, labels, rankings, K=K, metric=metric, gain=gain, hessian="raw"
        )
        g3, h3 = baselines.plrank3_from_rankings(
            scores, labels, rankings, K=K, metric=metric, gain=gain
        )
        np.testing.assert_allclose(g3, g, **TOL)
        np.testing.assert_allclose(h3, h, **TOL)


@pytest.mark.parametrize(("D", "K", "seed"), CASES)
@pytest.mark.parametrize(("metric", "gain"), [("ndcg", "exp"), ("dcg", "linear")])
def test_plrank2_baseline_equals_library(D: int, K: int, seed: int, metric: str, gain: str) -> None:
    scores, labels = _query(D, seed)
    for rankings in (
        baselines.gumbel_rankings(scores, K, 50, seed=seed),
        _random_rankings(D, K, 17, seed),
    ):
        g, _ = gbdt_plrank.plrank_grad_hess_from_rankings(
            scores, labels, rankings, K=K, metric=metric, gain=gain, hessian="raw"
        )
        g2 = baselines.plrank2_from_rankings(
            scores, labels, rankings, K=K, metric=metric, gain=gain
        )
        np.testing.assert_allclose(g2, g, **TOL)


def test_sampled_baselines_estimate_from_their_own_gumbel_rankings() -> None:
    """Query 0 of the parallel baselines draws exactly ``gumbel_rankings(seed)``."""
    scores, labels = _query(40, 7)
    ptr = np.array([0, 40])
    rankings = baselines.gumbel_rankings(scores, 10, 30, seed=11)
    g, h = gbdt_plrank.plrank_grad_hess_from_rankings(scores, labels, rankings, K=10)
    g3, h3 = baselines.plrank3_grad_hess(scores, labels, ptr, K=10, N=30, seed=11, n_jobs=1)
    g2 = baselines.plrank2_grad(scores, labels, ptr, K=10, N=30, seed=11, n_jobs=2)
    np.testing.assert_allclose(g3, g, **TOL)
    np.testing.assert_allclose(h3, h, **TOL)
    np.testing.assert_allclose(g2, g, **TOL)


def test_baselines_skip_queries_like_the_library() -> None:
    """One-document queries and queries without a relevant document get exactly 0."""
    rng = np.random.default_rng(3)
    labels = np.array([2.0, 0, 0, 0, 1, 3, 0, 0, 0, 0])
    ptr = np.array([0, 1, 4, 10])
    scores = rng.standard_normal(10)
    g3, h3 = baselines.plrank3_grad_hess(scores, labels, ptr, K=3, N=20)
    g2 = baselines.plrank2_grad(scores, labels, ptr, K=3, N=20)
    g, h = gbdt_plrank.plrank_grad_hess(scores, labels, ptr, K=3, N=20, hessian="raw")
    for arr in (g3, h3, g2, g, h):
        assert np.all(arr[:4] == 0.0)
        assert np.any(arr[4:] != 0.0)


def test_gumbel_sampler_draws_the_plackett_luce_law() -> None:
    """Frequencies of the top-2 prefixes against their PL probabilities (z-scores)."""
    scores = np.array([0.5, -0.3, 1.2, 0.0])
    N = 40000
    rankings = baselines.gumbel_rankings(scores, 2, N, seed=5)
    assert rankings.shape == (N, 2)
    assert np.all(rankings[:, 0] != rankings[:, 1])
    e = np.exp(scores)
    for a in range(4):
        for b in range(4):
            if a == b:
                continue
            p = e[a] / e.sum() * e[b] / (e.sum() - e[a])
            freq = np.mean((rankings[:, 0] == a) & (rankings[:, 1] == b))
            assert abs(freq - p) < 5 * np.sqrt(p * (1 - p) / N), (a, b, freq, p)


def test_synthetic_data_is_seeded_and_mslr_shaped() -> None:
    a = synthetic.mslr_like(n_queries=300, seed=4)
    b = synthetic.mslr_like(n_queries=300, seed=4, features=False)
    np.testing.assert_array_equal(a.y, b.y)
    np.testing.assert_array_equal(a.group_ptr, b.group_ptr)
    assert a.X.shape == (a.n_docs, 136) and a.X.dtype == np.float32 and b.X is None
    s = a.summary()
    assert 60 < s["docs_per_query_mean"] < 200 and s["docs_per_query_max"] <= 1300
    assert set(s["label_share"]) == {0, 1, 2, 3, 4} and s["label_share"][0] > 0.4
    informative = max(abs(np.corrcoef(a.X[:, j], a.y)[0, 1]) for j in range(136))
    assert informative > 0.3
    long = synthetic.long_lists(n_queries=20, features=False)
    assert 500 < long.sizes.mean() < 2000


@pytest.mark.slow  # compiles the kernels of two revisions (minutes of CPU on a cold cache)
def test_kernel_revisions_loads_a_revision_and_the_worktree() -> None:
    from benchmarks import kernel_revisions

    rows = kernel_revisions.compare(
        ["HEAD", "WORKTREE"], Ks=[3], N=5, queries=4, reps=1, sampler="tree"
    )
    assert [r["revision"] for r in rows] == ["HEAD", "WORKTREE"]
    assert rows[0]["identical"] and rows[0]["ratio"] == 1.0


def test_kernel_revisions_reads_the_kernels_folder_and_the_single_file_of_older_revisions(
    tmp_path: Path,
) -> None:
    from benchmarks import kernel_revisions

    worktree = kernel_revisions.kernel_sources("WORKTREE")
    assert {"plrank.py", "fairness.py", "policy.py"} <= set(worktree)
    assert "def estimate_groups" in worktree["plrank.py"]
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(tmp_path)]
    subprocess.run([*git, "init", "-q"], check=True)
    (tmp_path / "gbdt_plrank").mkdir()
    (tmp_path / "gbdt_plrank" / "_kernels.py").write_text("OLD = 1\n")
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "one file"], check=True)
    (tmp_path / "gbdt_plrank" / "_kernels.py").unlink()
    (tmp_path / "gbdt_plrank" / "_kernels").mkdir()
    (tmp_path / "gbdt_plrank" / "_kernels" / "plrank.py").write_text("NEW = 1\n")
    (tmp_path / "gbdt_plrank" / "_kernels" / "policy.py").write_text("from .plrank import NEW\n")
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "a folder"], check=True)
    assert kernel_revisions.kernel_sources("HEAD~1", repo=tmp_path) == {"plrank.py": "OLD = 1\n"}
    assert kernel_revisions.kernel_sources("HEAD", repo=tmp_path) == {
        "plrank.py": "NEW = 1\n",
        "policy.py": "from .plrank import NEW\n",
    }
    module = kernel_revisions.load_kernels(str(tmp_path / "gbdt_plrank" / "_kernels"), tmp_path)
    assert module.NEW == 1


def test_kernel_revisions_finds_the_codes_before_and_after_the_estimator_was_split(
    tmp_path: Path,
) -> None:
    from benchmarks import kernel_revisions

    worktree = kernel_revisions.load_kernels("WORKTREE", tmp_path)
    assert not hasattr(worktree, "SAMPLER_RACE")  # the samplers' module owns it
    assert kernel_revisions.kernel_code(worktree, "SAMPLER_RACE") == 1
    assert kernel_revisions.kernel_code(worktree, "NOISE_INDEPENDENT") == 0
    one_file = tmp_path / "plrank.py"
    one_file.write_text("SAMPLER_RACE = 7\n")
    old = kernel_revisions.load_kernels(str(one_file), tmp_path)
    assert kernel_revisions.kernel_code(old, "SAMPLER_RACE") == 7
    assert kernel_revisions.kernel_code(old, "NOISE_INDEPENDENT") is None


def test_warm_up_data_keeps_the_first_queries_of_each_split(tmp_path: Path) -> None:
    from tiny_ltr import write_tiny_letor

    from benchmarks.harness import warm_up_data
    from gbdt_plrank.datasets import load_dataset

    tiny = load_dataset(str(write_tiny_letor(tmp_path / "tiny")))
    small = warm_up_data(tiny, queries=2)
    for name in ("train", "vali", "test"):
        split, cut = getattr(tiny, name), getattr(small, name)
        assert cut.n_queries == 2
        rows = split.group_ptr[2]
        np.testing.assert_array_equal(cut.X.toarray(), split.X[:rows].toarray())
        np.testing.assert_array_equal(cut.y, split.y[:rows])
    assert warm_up_data(tiny, queries=10_000).train.n_queries == tiny.train.n_queries


def test_read_records_restores_the_records_from_their_archive(tmp_path: Path) -> None:
    import gzip

    from benchmarks.harness import append_record, read_records

    path = tmp_path / "runs.jsonl"
    assert read_records(path) == []
    append_record(path, {"fold": 1})
    append_record(path, {"fold": 2})
    (tmp_path / "runs.jsonl.gz").write_bytes(gzip.compress(path.read_bytes()))
    path.unlink()
    assert read_records(path) == [{"fold": 1}, {"fold": 2}]
    # restored beside the archive: a rerun appends to it, and the archive is not read again
    append_record(path, {"fold": 3})
    assert read_records(path) == [{"fold": 1}, {"fold": 2}, {"fold": 3}]


# --------------------------------------------------------------------------------------------
# Time to a kept model
# --------------------------------------------------------------------------------------------
def test_time_to_model_times_every_row_and_pairs_the_test_queries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tiny_ltr import write_tiny_letor

    from benchmarks import time_to_model as ttm

    tiny = str(write_tiny_letor(tmp_path / "tiny"))
    out = tmp_path / "ttm.md"
    trained: list[str] = []
    train_run = ttm.train_run

    def counted(ds, run, **kw):
        trained.append(run.row)
        return train_run(ds, run, **kw)

    monkeypatch.setattr(ttm, "train_run", counted)
    ttm.main(
        [
            "--data",
            tiny,
            "--folds",
            "1",
            "--methods",
            "lambdamart-xgb,plrank-xgb",
            "--stopping",
            "ranking,standardized",
            "--plrank",
            "N=3,noise=lattice",
            "--rounds",
            "3",
            "--out",
            str(out),
        ]
    )
    text = out.read_text()
    raw = json.loads(out.with_suffix(".json").read_text())
    runs = {r["row"]: r for r in raw["runs"]}
    # The default stopping metric gets no second row; another one does, and so does a variant.
    assert list(runs) == [
        "lambdamart-xgb",
        "plrank-xgb",
        "plrank-xgb@ranking",
        "plrank-xgb[N=3,noise=lattice]",
    ]
    # each row trained once, discarded, before the timed trainings
    assert trained == list(runs) * 2
    assert ttm.plrank_variant("N=25,noise=lattice").model_dump()["N"] == 25  # an integer
    assert ttm.plrank_variant("query_subsample=0.5").query_subsample == 0.5  # a float
    assert all(
        0 < r["rounds_run"] <= 3 and 1 <= r["best_round"] <= r["rounds_run"] and r["seconds"] > 0
        for r in runs.values()
    )
    ratio = runs["plrank-xgb"]["seconds"] / runs["lambdamart-xgb"]["seconds"]
    line = next(s for s in text.splitlines() if s.startswith("| plrank-xgb |"))
    assert f"| {ratio:.2f}x |" in line
    assert "Written by `python benchmarks/time_to_model.py --data" in text
    # PL-Rank watched its standardised metric, so its ranking's curve is kept beside it; a
    # method that watched the ranking keeps it once, as its curve.
    assert runs["lambdamart-xgb"]["ranking_curve"] == []
    assert runs["plrank-xgb@ranking"]["ranking_curve"] == []
    assert len(runs["plrank-xgb"]["ranking_curve"]) == runs["plrank-xgb"]["rounds_run"]
    assert runs["plrank-xgb"]["ranking_curve"] != runs["plrank-xgb"]["curve"]
    # Every training was recorded as it finished; the tables can be rebuilt from the records.
    recorded = ttm.read_runs(out.with_suffix(".jsonl"))
    assert [r.row for r in recorded] == list(runs)
    again = tmp_path / "again.md"
    again.with_suffix(".jsonl").write_text(out.with_suffix(".jsonl").read_text())
    ttm.main(["--report-only", "--out", str(again)])
    table = [s for s in text.splitlines() if s.startswith("| ")]
    assert [s for s in again.read_text().splitlines() if s.startswith("| ")] == table


def test_time_to_model_stops_every_method_with_the_least_gain() -> None:
    """``--min-delta`` and ``--patience-rate`` reach every method's early stopping, at either
    tree settings, and the report says so."""
    from benchmarks import time_to_model as ttm

    for trees in ttm.TREES:
        assert ttm.tree_settings(trees, rounds=3, n_jobs=1, min_delta=0.002).min_delta == 0.002
        assert ttm.tree_settings(trees, rounds=3, n_jobs=1).min_delta == 0.0
        assert ttm.tree_settings(trees, rounds=3, n_jobs=1, patience_rate=0).patience_rate == 0
        assert ttm.tree_settings(trees, rounds=3, n_jobs=1).patience_rate == ttm.PATIENCE_RATE
    with pytest.raises(SystemExit):
        ttm.main(["--patience-rate", "-1", "--data", "mq2008"])
    runs = _seed_runs()
    assert "beats the best validation value" not in ttm._trees_line(runs)
    least = [replace(r, min_delta=0.002) for r in runs]
    assert ttm._trees_line(least).endswith(
        "; a round is the best only when it beats the best validation value by more than 0.002.\n"
    )


def test_quality_times_time_both_to_the_lower_of_their_kept_qualities() -> None:
    """Each PL-Rank training and its own LambdaMART's of the same fold and seed: the rounds to
    the lower kept validation value (ranking curves, kept rounds), times up to those rounds; no
    row where a record lacks the ranking's curve."""
    from benchmarks import time_to_model as ttm

    def run(
        row: str,
        fold: int,
        curve: list[float],
        best: int,
        seconds: float,
        ranking: list[float] | None,
    ) -> ttm.Run:
        return ttm.Run(
            row,
            row,
            "d",
            fold,
            seconds,
            len(curve),
            best,
            {},
            fold,
            curve=tuple(curve),
            ranking_curve=None if ranking is None else tuple(ranking),
        )

    lm = [
        run("lambdamart-xgb", 1, [0.3, 0.5, 0.4, 0.4], 2, 8.0, []),
        run("lambdamart-xgb", 2, [0.6, 0.7, 0.6, 0.6], 2, 4.0, []),
    ]
    # PL-Rank keeps round 9 of 10 by its own watched curve; its ranking is the other curve.
    pl = [
        run("plrank-xgb", 1, [9.0] * 10, 9, 20.0, [0.1, 0.2, 0.4, 0.5, 0.6] + [0.6] * 5),
        run("plrank-xgb", 2, [9.0] * 10, 9, 10.0, [0.5, 0.6, 0.65] + [0.6] * 7),
    ]
    table = ttm.quality_times({"lambdamart-xgb": lm, "plrank-xgb": pl})
    # Fold 1: PL-Rank keeps 0.6 > 0.5, both to 0.5: PL-Rank round 4 of 10 (8 s of 20),
    # LambdaMART round 2 of 4 (4 s of 8). Fold 2: PL-Rank keeps 0.6 < 0.7, both to 0.6:
    # PL-Rank round 2 (2 s of 10), LambdaMART round 1 (1 s of 4). (8 + 2) / (4 + 1) = 2.
    assert table == [["plrank-xgb", "lambdamart-xgb", "1 of 2", "4, 2", "2, 1", "2.00x"]]
    section = "\n".join(ttm.quality_time_section({"lambdamart-xgb": lm, "plrank-xgb": pl}))
    assert "| plrank-xgb | lambdamart-xgb | 1 of 2 | 4, 2 | 2, 1 | 2.00x |" in section
    old = [replace(r, ranking_curve=None) for r in pl]
    assert ttm.quality_times({"lambdamart-xgb": lm, "plrank-xgb": old}) == []
    assert ttm.quality_time_section({"lambdamart-xgb": lm, "plrank-xgb": old}) == []


def test_time_to_model_pairs_queries_across_folds() -> None:
    from benchmarks import time_to_model as ttm

    def run(row: str, fold: int, values: list[float]) -> ttm.Run:
        test = {c: dict(enumerate(values)) for c in ttm.CUTOFFS}
        return ttm.Run(row, row, "d", fold, 1.0, 10, 5, test)

    # The same query ids in two folds are different queries: four pairs, not two.
    a = [run("plrank-xgb", 1, [0.5, 0.6]), run("plrank-xgb", 2, [0.7, 0.9])]
    b = [run("lambdamart-xgb", 1, [0.4, 0.6]), run("lambdamart-xgb", 2, [0.7, 0.8])]
    p = ttm._versus(a, b, 10)
    assert p.n == 4 and p.mean == pytest.approx(0.05)


def test_time_to_model_averages_a_query_over_seeds_and_reports_each_seed() -> None:
    from benchmarks import time_to_model as ttm

    def run(row: str, seed: int, values: list[float], seconds: float) -> ttm.Run:
        test = {c: dict(enumerate(values)) for c in ttm.CUTOFFS}
        return ttm.Run(row, row, "d", 1, seconds, 10, 5 + seed, test, seed)

    runs = [
        run("lambdamart-xgb", 0, [0.5, 0.5], 1.0),
        run("plrank-xgb", 0, [0.4, 0.5], 2.0),
        run("lambdamart-xgb", 1, [0.5, 0.5], 1.0),
        run("plrank-xgb", 1, [0.8, 0.5], 4.0),
    ]
    # Each query is one pair, its mean over the seeds against the reference's: 0.6 - 0.5 and 0.
    p = ttm._versus(runs[1::2], runs[0::2], 10)
    assert p.n == 2 and p.mean == pytest.approx(0.05)
    text = ttm.report(runs, "cmd")
    line = next(s for s in text.splitlines() if s.startswith("| plrank-xgb | 6.0 | 3.00x |"))
    assert "| 5/6 |" in line  # kept rounds of a fold, one per seed
    assert "seeds 0, 1: NDCG is each query's mean over the seeds" in text
    each = text.split("Each seed alone")[1].splitlines()
    seeds = next(s for s in each if s.startswith("| plrank-xgb |"))
    assert seeds.startswith("| plrank-xgb | -0.0500 [") and "| +0.1500 [" in seeds


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--seeds", "0,x", "expected an integer or comma-separated integers, but '0,x' is given"),
        ("--seeds", "0,1,0", "--seeds must be distinct, but 0,1,0 repeats one."),
        (
            "--plrank",
            "N=25,noise",
            "a --plrank variant is key=value pairs, but 'noise' has no '='.",
        ),
        ("--plrank", "noise=sobol", "--plrank 'noise=sobol': "),
        (
            "--min-delta",
            "-0.001",
            "--min-delta: min_delta must be a finite number >= 0, but -0.001",
        ),
        ("--min-delta", "nan", "--min-delta: min_delta must be a finite number >= 0, but nan"),
    ],
)
def test_time_to_model_refuses_bad_seeds_and_variants_naming_them(
    option: str, value: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from benchmarks import time_to_model as ttm

    with pytest.raises(SystemExit):
        ttm.main(["--data", "mq2008", "--folds", "1", option, value])
    assert message in capsys.readouterr().err


def _seed_runs() -> list:
    """Three seeds, two folds of two queries: rank:ndcg at 0.5 everywhere; plrank-xgb +0.1, 0 and
    -0.1 against it by seed; lambdarank-lgb at 0.6; plrank-lgb at 0.6, 0.65 and 0.7 by seed."""
    from benchmarks import time_to_model as ttm

    values = {
        "lambdamart-xgb": {0: [0.5, 0.5], 1: [0.5, 0.5], 2: [0.5, 0.5]},
        "plrank-xgb": {0: [0.6, 0.6], 1: [0.5, 0.5], 2: [0.3, 0.5]},
        "lambdarank-lgb": {0: [0.6, 0.6], 1: [0.6, 0.6], 2: [0.6, 0.6]},
        "plrank-lgb": {0: [0.6, 0.6], 1: [0.6, 0.7], 2: [0.7, 0.7]},
    }
    seconds = {"lambdamart-xgb": 1.0, "plrank-xgb": 2.0, "lambdarank-lgb": 1.5, "plrank-lgb": 3.0}
    kept = {(1, 0): 10, (1, 1): 14, (1, 2): 12, (2, 0): 20, (2, 1): 20, (2, 2): 21}  # plrank-xgb
    return [
        ttm.Run(
            row,
            row,
            "d",
            fold,
            seconds[row],
            30,
            kept[fold, seed] if row == "plrank-xgb" else 7,
            {c: dict(enumerate(v[seed])) for c in ttm.CUTOFFS},
            seed,
            "library-defaults",
        )
        for fold in (1, 2)
        for seed in (0, 1, 2)
        for row, v in values.items()
    ]


def _line(text: str, start: str) -> str:
    return next(s for s in text.splitlines() if s.startswith(start))


def test_time_to_model_reports_the_seeds_spread_and_the_summary(tmp_path: Path) -> None:
    from benchmarks import time_to_model as ttm
    from benchmarks.harness import append_record

    runs = _seed_runs()
    of = {row: [r for r in runs if r.row == row] for row in dict.fromkeys(r.row for r in runs)}
    # Each seed's difference pooled over both folds' queries, and their spread, by hand.
    per_seed = ttm.seed_differences(of["plrank-xgb"], of["lambdamart-xgb"])
    assert {s: p.n for s, p in per_seed.items()} == {0: 4, 1: 4, 2: 4}
    assert [per_seed[s].mean for s in (0, 1, 2)] == pytest.approx([0.1, 0.0, -0.1])
    assert ttm.spread([p.mean for p in per_seed.values()]) == pytest.approx(0.2)
    own = ttm.seed_differences(of["plrank-lgb"], of["lambdarank-lgb"])
    assert [own[s].mean for s in (0, 1, 2)] == pytest.approx([0.0, 0.05, 0.1])
    assert ttm.kept_round_spreads(of["plrank-xgb"]) == {1: 4, 2: 1}

    text = ttm.report(runs, "cmd")
    assert "Trained at each library's own default tree settings" in text
    summary = text.split("Summary:")[1].split("Against the booster's own")[0]
    # Seeds pooled: plrank-xgb's query means 0.4667 and 0.5333 against 0.5; worst seed 2.
    assert _line(summary, "| plrank-xgb |").startswith("| plrank-xgb | lambdamart-xgb | +0.0000 [")
    assert "| seed 2: -0.1000 [" in _line(summary, "| plrank-xgb |")
    assert _line(summary, "| plrank-xgb |").endswith("| 0.2000 | 2.00x |")
    lgb = _line(summary, "| plrank-lgb |")
    assert lgb.startswith("| plrank-lgb | lambdarank-lgb | +0.0500 [")
    assert "| seed 0: +0.0000 [" in lgb and lgb.endswith("| 0.1000 | 3.00x |")
    rows = [s.split(" | ")[0] for s in summary.splitlines() if s.startswith("| ")]
    assert rows == ["| method", "| plrank-xgb", "| plrank-lgb"]  # not the LambdaMARTs themselves

    versus_ref = text.split("Each seed alone, NDCG@10 minus lambdamart-xgb")[1]
    assert _line(versus_ref, "| plrank-xgb |").startswith("| plrank-xgb | +0.1000 [")
    assert _line(versus_ref, "| plrank-xgb |").endswith("| 0.2000 |")
    assert _line(versus_ref, "| plrank-lgb |").endswith("| 0.1000 |")  # +0.1, +0.15, +0.2
    versus_own = text.split("minus the booster's own LambdaMART of the same seed")[1]
    assert _line(versus_own, "| plrank-lgb |").startswith("| plrank-lgb | lambdarank-lgb | +0.0000")
    assert _line(versus_own, "| plrank-lgb |").endswith("| 0.1000 |")
    assert "| plrank-xgb |" not in versus_own.split("Kept rounds")[0]
    kept = text.split("Kept rounds across seeds")[1]
    assert _line(kept, "| plrank-xgb |") == "| plrank-xgb | 4 | 1 | 2.5 |"
    assert _line(kept, "| lambdamart-xgb |") == "| lambdamart-xgb | 0 | 0 | 0.0 |"

    # --report-only rebuilds the same tables from the records.
    out = tmp_path / "ttm.md"
    for r in runs:
        append_record(out.with_suffix(".jsonl"), r.__dict__)
    ttm.main(["--report-only", "--out", str(out)])
    rebuilt = out.read_text()
    assert [s for s in rebuilt.splitlines() if s.startswith("| ")] == [
        s for s in text.splitlines() if s.startswith("| ")
    ]


def test_time_to_model_trains_at_the_library_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tiny_ltr import write_tiny_letor

    from benchmarks import time_to_model as ttm

    seen = []

    def recording(*args, **kwargs):
        seen.append(kwargs["trees"])
        return train(*args, **kwargs)

    train = ttm.train
    monkeypatch.setattr(ttm, "train", recording)
    tiny = str(write_tiny_letor(tmp_path / "tiny"))
    out = tmp_path / "ttm.md"
    ttm.main(
        [
            "--data",
            tiny,
            "--folds",
            "1",
            "--methods",
            "lambdamart-xgb,plrank-xgb",
            "--rounds",
            "3",
            "--trees",
            "library-defaults",
            "--out",
            str(out),
        ]
    )
    assert [t.rounds for t in seen] == [3, 3] * 2  # each method's warm-up, then its training
    assert all(t.learning_rate is None and t.min_child_weight is None for t in seen)
    assert {r.trees for r in ttm.read_runs(out.with_suffix(".jsonl"))} == {"library-defaults"}
    text = out.read_text()
    assert "--trees library-defaults" in text and "each library's own default tree" in text


# --------------------------------------------------------------------------------------------
# Deep queries
# --------------------------------------------------------------------------------------------
def test_deep_queries_pairs_a_query_by_its_mean_over_the_repeats() -> None:
    """In the repeated cross-validation each query is a test query once per repeat: it is one
    pair, its mean over the repeats against the reference's, whichever fold tested it."""
    from benchmarks import deep_queries as dq
    from benchmarks import time_to_model as ttm

    def run(row: str, fold: int, repeat: int, values: dict[int, float]) -> ttm.Run:
        return ttm.Run(
            row,
            row,
            dq.CV_DATA,
            fold,
            2.0 if "plrank" in row else 1.0,
            10,
            4,
            {c: values for c in ttm.CUTOFFS},
            repeat,
        )

    runs = [
        # repeat 0: queries 1, 2 in fold 1, query 3 in fold 2; repeat 1 shuffles the folds
        run("lambdamart-xgb", 1, 0, {1: 0.5, 2: 0.5}),
        run("lambdamart-xgb", 2, 0, {3: 0.5}),
        run("lambdamart-xgb", 1, 1, {3: 0.5}),
        run("lambdamart-xgb", 2, 1, {1: 0.5, 2: 0.5}),
        run("plrank-xgb", 1, 0, {1: 0.6, 2: 0.4}),
        run("plrank-xgb", 2, 0, {3: 0.9}),
        run("plrank-xgb", 1, 1, {3: 0.7}),
        run("plrank-xgb", 2, 1, {1: 0.8, 2: 0.4}),
    ]
    text = dq.cross_validation_report(runs)
    assert "repeated 2 times (3 test queries" in text
    line = next(s for s in text.splitlines() if s.startswith("| plrank-xgb |"))
    # Query means 0.7, 0.4, 0.8 against 0.5 each: +0.1333 over three pairs, not six.
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[1:5] == ["8.0", "2.00x", "40", "4"]
    assert cells[5] == cells[6] == "0.6333"
    assert cells[7].startswith("+0.1333 [")
    assert cells[8] == ""  # its own LambdaMART is rank:ndcg: one column says it
    reference = next(s for s in text.splitlines() if s.startswith("| lambdamart-xgb |"))
    assert "| 0.5000 | 0.5000 |" in reference


def test_deep_queries_report_only_reads_the_draws_and_methods_asked_for(tmp_path: Path) -> None:
    """An interrupted run's records rebuild the tables of the draws named (a draw cut short is
    left out), of the methods named; the repeats of the cross-validation up to --repeats."""
    from benchmarks import deep_queries as dq
    from benchmarks import time_to_model as ttm
    from benchmarks.harness import append_record

    records = tmp_path / "deep.jsonl"
    rng = np.random.default_rng(0)
    for data, fold in [
        ("web-linear", 1),
        ("web-linear", 2),
        ("web-linear", 3),
        (dq.CV_DATA, 1),
        (dq.CV_DATA, 2),
    ]:
        for row in ("lambdamart-xgb", "plrank-xgb", "lambdarank-lgb"):
            if (fold, row) == (3, "plrank-xgb"):
                continue  # draw 3 was cut short
            values = {q: float(rng.uniform()) for q in range(10 * fold, 10 * fold + 10)}
            run = ttm.Run(
                row,
                row,
                data,
                fold,
                1.0,
                10,
                4,
                {c: values for c in ttm.CUTOFFS},
                fold if data != dq.CV_DATA else 0,
                curve=(0.1,) * 10,
            )
            append_record(records, run.__dict__)
    dq.main(
        [
            "--report-only",
            "--variants",
            "web-linear",
            "--draws",
            "1,2",
            "--repeats",
            "1",
            "--methods",
            "lambdamart-xgb,plrank-xgb",
            "--out",
            str(tmp_path / "deep.md"),
        ]
    )
    text = (tmp_path / "deep.md").read_text()
    assert "### web-linear, folds 1, 2 (" in text and "lambdarank-lgb" not in text
    assert "Kept rounds across seeds" not in text  # one seed per draw: no spread to show
    assert "mslr-sample, query-level 5-fold cross-validation repeated 1 times (20 test" in text


@pytest.mark.slow  # ten trainings on mslr-sample (about a minute on two busy cores)
def test_deep_queries_cross_validates_mslr_sample_and_rebuilds_its_tables(
    tmp_path: Path,
) -> None:
    """A whole run of the real-data part (three rounds): every fold of the repeat trains every
    method, every query of mslr-sample with a relevant document is tested once, and the report
    rebuilt from the records is the same."""
    from benchmarks import deep_queries as dq
    from benchmarks import time_to_model as ttm
    from gbdt_plrank.datasets import load_dataset
    from gbdt_plrank.harness.data import without_empty_queries

    out = tmp_path / "deep.md"
    dq.main(
        [
            "--variants",
            "",
            "--repeats",
            "1",
            "--methods",
            "lambdamart-xgb,plrank-xgb",
            "--rounds",
            "3",
            "--threads",
            "1",
            "--out",
            str(out),
        ]
    )
    runs = ttm.read_runs(out.with_suffix(".jsonl"))
    assert sorted((r.row, r.fold) for r in runs) == sorted(
        (m, f) for m in ("lambdamart-xgb", "plrank-xgb") for f in range(1, dq.CV_FOLDS + 1)
    )
    data = load_dataset("mslr-sample")
    tested = [q for r in runs if r.row == "plrank-xgb" for q in r.test[10]]
    relevant = sum(without_empty_queries(s).n_queries for s in (data.train, data.vali, data.test))
    assert len(tested) == len(set(tested)) == relevant  # each once
    text = out.read_text()
    assert f"repeated 1 times ({relevant} test queries" in text
    again = tmp_path / "again.md"
    again.with_suffix(".jsonl").write_text(out.with_suffix(".jsonl").read_text())
    dq.main(["--report-only", "--out", str(again)])
    table = [s for s in text.splitlines() if s.startswith("| ")]
    assert [s for s in again.read_text().splitlines() if s.startswith("| ")] == table


def test_deep_queries_trains_every_part_at_the_tree_settings_asked_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--trees library-defaults`` reaches every training, of the web data and of the
    cross-validation: each gets the libraries' own settings (no shared learning rate) and its
    record names them, so that the report says which trees it compares at."""
    from benchmarks import deep_queries as dq
    from benchmarks import time_to_model as ttm

    seen = []
    real = ttm.train_run

    def spy(ds, run, *, settings, **kwargs):
        seen.append((run.data, run.trees, settings.learning_rate, settings.min_child_weight))
        return real(ds, run, settings=settings, **kwargs)

    monkeypatch.setattr(ttm, "train_run", spy)
    out = tmp_path / "deep.md"
    dq.main(
        [
            "--variants",
            "web-linear",
            "--draws",
            "1",
            "--repeats",
            "1",
            "--methods",
            "lambdamart-xgb",
            "--rounds",
            "2",
            "--threads",
            "1",
            "--trees",
            "library-defaults",
            "--out",
            str(out),
        ]
    )
    assert sorted({data for data, *_ in seen}) == [dq.CV_DATA, "web-linear"]
    # the method's warm-up on the first web draw (none again before the cross-validation),
    # then one training a draw and a fold
    assert [data for data, *_ in seen] == ["web-linear"] * 2 + [dq.CV_DATA] * dq.CV_FOLDS
    assert {(trees, rate, weight) for _, trees, rate, weight in seen} == {
        ("library-defaults", None, None)
    }
    assert {r.trees for r in ttm.read_runs(out.with_suffix(".jsonl"))} == {"library-defaults"}
    assert ttm.TREES["library-defaults"] in out.read_text()
    alone = tmp_path / "cv.md"  # the cross-validation alone names its trees too
    dq.main(
        [
            "--variants",
            "",
            "--repeats",
            "1",
            "--methods",
            "lambdamart-xgb",
            "--rounds",
            "2",
            "--threads",
            "1",
            "--trees",
            "library-defaults",
            "--out",
            str(alone),
        ]
    )
    assert ttm.TREES["library-defaults"] in alone.read_text()
    # alone, the cross-validation warms the method up on its first fold
    assert [data for data, *_ in seen[2 + dq.CV_FOLDS :]] == [dq.CV_DATA] * (1 + dq.CV_FOLDS)


@pytest.mark.slow  # six rankers fitted at their defaults
def test_first_call_fits_each_class_at_its_defaults_and_pairs_it_with_its_own_ranker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tiny_ltr import write_tiny_letor

    from benchmarks import first_call as fc
    from gbdt_plrank.datasets import load_dataset

    tiny = load_dataset(str(write_tiny_letor(tmp_path / "tiny")))
    monkeypatch.setattr(fc, "units", lambda data, **_: iter([("fold1", tiny)]))
    fits: list[tuple[str, int]] = []
    fit_predict = fc.fit_predict

    def counted(kind, params, train, held_out, **kw):
        fits.append((kind, train.n_queries))
        return fit_predict(kind, params, train, held_out, **kw)

    monkeypatch.setattr(fc, "fit_predict", counted)
    out = tmp_path / "fc.md"
    argv = ["--data", "mq2008", "--plrank", "n_estimators=3 learning_rate=0.5", "--out", str(out)]
    assert fc.main([*argv, "--threads", "1"]) == 0
    # every ranker was fitted once (on the first 200 queries: all of these), discarded, before
    # the timed fits
    kinds = ["xgboost-native", "lightgbm-native", *["xgboost", "lightgbm"] * 2]
    assert fits == [(k, tiny.train.n_queries) for k in kinds] * 2
    assert len(out.with_suffix(".jsonl").read_text().splitlines()) == len(kinds)
    monkeypatch.setattr(fc, "fit_predict", fit_predict)
    # the command the file names reruns as written: a --plrank of two options keeps its quotes
    command = out.read_text().split("`")[1]
    assert shlex.split(command) == ["python", "benchmarks/first_call.py", *argv, "--threads", "1"]
    records = [json.loads(line) for line in out.with_suffix(".jsonl").read_text().splitlines()]
    names = [r["ranker"] for r in records]
    assert names == [
        "XGBRanker()",
        "LGBMRanker()",
        "PLRankRanker()",
        "PLRankRanker(backend='lightgbm')",
        "PLRankRanker(n_estimators=3, learning_rate=0.5)",
        "PLRankRanker(backend='lightgbm', n_estimators=3, learning_rate=0.5)",
    ]
    assert all(("defaults" in r) == r["ranker"].startswith("PLRank") for r in records)
    assert all(r["defaults"] == fc.defaults() for r in records[2:])
    # Each PL-Rank row is paired per query with its own booster's ranker.
    by = {r["ranker"]: r["ndcg"]["10"] for r in records}
    lgb = by["PLRankRanker(backend='lightgbm')"]
    diff = np.mean([lgb[q] - by["LGBMRanker()"][q] for q in lgb])
    row = next(line for line in out.read_text().splitlines() if "(backend='lightgbm')" in line)
    assert row.split("|")[6].strip().startswith(f"{diff:+.4f}")
    # A rerun fits nothing recorded at today's defaults; a record at other defaults is refit.
    lines = out.with_suffix(".jsonl").read_text().splitlines()
    stale = json.loads(lines[2]) | {"defaults": {**fc.defaults(), "learning_rate": 0.01}}
    out.with_suffix(".jsonl").write_text("\n".join([*lines[:2], json.dumps(stale)]) + "\n")
    fitted: list[str] = []
    monkeypatch.setattr("builtins.print", lambda line, **_: fitted.append(str(line)))
    fc.main([*argv, "--threads", "1"])
    assert [f.split(":")[0] for f in fitted[:-1]] == [f"mq2008 fold1 {n}" for n in names[2:]]
    # the fit at other defaults is a row of its own, named by the default that moved
    assert "| PLRankRanker() [defaults: learning_rate=0.01] | 1 |" in out.read_text()
    variant = stale | {"ranker": "PLRankRanker(learning_rate=0.5)"}
    assert fc.row_of(variant, fc.defaults()) == "PLRankRanker(learning_rate=0.5)"
    assert fc.row_of(stale | {"defaults": None}, {}) == "PLRankRanker() [earlier defaults]"
    # a record made before deep_weight existed was fitted at 1.0, not at today's default
    before = {k: v for k, v in fc.defaults().items() if k != "deep_weight"}
    named = fc.row_of(stale | {"defaults": before}, fc.defaults())
    assert named == "PLRankRanker() [defaults: deep_weight=1.0]"


@pytest.mark.slow  # four rankers fitted in a fresh process
def test_openmp_wait_fits_each_ranker_in_a_process_started_with_the_wait(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tiny_ltr import write_tiny_letor

    from benchmarks import openmp_wait as ow

    tiny = str(write_tiny_letor(tmp_path / "tiny"))
    seconds, seen = ow.measure_wait(tiny, {"GOMP_SPINCOUNT": "50"}, repeats=1, busy=1)
    assert sorted(seconds) == sorted(ow.RANKERS) and all(s > 0 for s in seconds.values())
    assert seen == {"GOMP_SPINCOUNT": "50"}  # the user's wait kept, the package's not added
    _, package = ow.measure_wait(tiny, {}, repeats=1, busy=0)
    assert package == {"GOMP_SPINCOUNT": "1000", "KMP_BLOCKTIME": "0"}
    # the report: a row per dataset and wait, with the variables the fits ran under
    monkeypatch.setattr(
        ow, "measure_wait", lambda data, wait, **_: (dict.fromkeys(ow.RANKERS, 1.5), wait)
    )
    out = tmp_path / "wait.md"
    ow.main(["--data", "mq2008", "--busy", "2", "--out", str(out)])
    text = out.read_text()
    assert text.startswith("# The OpenMP wait, on a busy machine")
    assert "| mq2008 | OMP_WAIT_POLICY=PASSIVE | OMP_WAIT_POLICY=PASSIVE | 1.50 |" in text
    assert len([line for line in text.splitlines() if line.startswith("| mq2008 |")]) == 3


def _running(pid: int) -> bool:
    """Whether process ``pid`` is alive and not a zombie (Linux's ``/proc``)."""
    try:
        return "zombie" not in Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads Linux's /proc")
def test_openmp_wait_leaves_no_spinner_behind_a_killed_run() -> None:
    """A busy run killed outright (SIGKILL: no ``finally`` runs) stops its spinners too."""
    code = (
        f"import sys; sys.path.insert(0, {str(REPO)!r})\n"
        "from benchmarks.openmp_wait import spinner\n"
        "print(spinner().pid, flush=True)\n"
        "import time; time.sleep(60)\n"
    )
    run = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert run.stdout is not None
    pid = int(run.stdout.readline())
    try:
        run.kill()  # at once: the spinner may not have started its loop yet
        run.wait()
        deadline = time.monotonic() + 10.0
        while _running(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _running(pid)
    finally:
        if _running(pid):
            os.kill(pid, signal.SIGKILL)
