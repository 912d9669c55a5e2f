"""Comparisons on a Dask cluster: the same results as a sequential run, resumable."""

from __future__ import annotations

import csv
import importlib.metadata
import json
from pathlib import Path

import pytest
from tiny_ltr import write_tiny_letor

from gbdt_plrank.cli import main
from gbdt_plrank.dask._workers import check_workers

DEMO = Path(__file__).resolve().parents[1] / "configs" / "demo.toml"
TIMING = {"train_seconds", "seconds_per_round"}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_letor(tmp_path_factory.mktemp("data") / "tiny")


def flags(tiny: Path, out: Path) -> list[str]:
    return [
        "--data",
        str(tiny),
        "--methods",
        "plrank-xgb,plrank-lgb,lambdarank-lgb",
        "--seeds",
        "2",
        "--k",
        "3",
        "--rounds",
        "4",
        "--n-jobs",
        "1",
        "--out",
        str(out),
    ]


def results(out: Path) -> dict[tuple[str, ...], dict[str, str]]:
    with (out / "results.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    return {
        (r["dataset"], r["method"], r["seed"], r["k"]): {
            c: v for c, v in r.items() if c not in TIMING
        }
        for r in rows
    }


def curves(out: Path) -> dict[tuple[str, ...], list[float]]:
    records = [json.loads(line) for line in (out / "curves.jsonl").read_text().splitlines()]
    return {(r["dataset"], r["method"], str(r["seed"]), str(r["k"])): r["curve"] for r in records}


def test_two_workers_give_the_sequential_results_and_resume(tmp_path: Path, tiny: Path) -> None:
    sequential, spread = tmp_path / "sequential", tmp_path / "spread"
    assert main(["compare", str(DEMO), *flags(tiny, sequential)]) == 0
    # Half of the parallel run is already there: only the rest is trained.
    first = [*flags(tiny, spread)]
    first[first.index("--seeds") + 1] = "1"
    assert main(["compare", str(DEMO), *first]) == 0
    assert len(results(spread)) == 3
    assert main(["compare", str(DEMO), *flags(tiny, spread), "--workers", "2"]) == 0
    assert results(spread) == results(sequential)
    assert curves(spread) == curves(sequential)


class _Client:
    """Answers ``client.run`` as two workers would: one with the package, one as given."""

    def __init__(self, second: object) -> None:
        self.second = second

    def run(self, function, *args, on_error):
        assert function is importlib.metadata.version and on_error == "return"
        return {"tcp://127.0.0.1:1": function(*args), "tcp://127.0.0.1:2": self.second}


@pytest.mark.parametrize(
    ("second", "says"),
    [
        (importlib.metadata.PackageNotFoundError("gbdt_plrank"), "has no gbdt_plrank installed"),
        ("0.0.9", "has gbdt_plrank 0.0.9"),
        (OSError("lost"), r"cannot report its gbdt_plrank version \(OSError: lost\)"),
    ],
)
def test_a_worker_without_the_package_or_with_another_version_is_named(second, says) -> None:
    local = importlib.metadata.version("gbdt_plrank")
    with pytest.raises(
        RuntimeError,
        match=rf"Dask worker tcp://127.0.0.1:2 {says}, but this "
        rf"client runs gbdt_plrank {local}: install",
    ):
        check_workers(_Client(second), ("gbdt_plrank",))
    check_workers(_Client(local), ("gbdt_plrank",))


def test_workers_and_scheduler_exclude_each_other(capsys) -> None:
    assert main(["compare", str(DEMO), "--workers", "2", "--scheduler", "tcp://x:1"]) == 2
    assert "not allowed with argument" in capsys.readouterr().err
