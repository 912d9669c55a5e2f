"""The output folder of a comparison: finished results, appended as soon as they exist.

- ``settings.json``: the settings that change results (:meth:`CompareConfig.training_settings`);
  a folder holding results made under other settings is refused rather than mixed.
- ``curves.jsonl``: one line per finished training, its validation curve.
- ``queries.jsonl``: one line per finished training, its test NDCG@k of every test query, by the
  query ids of the data files (the unit of the paired tests of the report).
- ``results.csv``: one row per finished training, the record of what is done.

Each training's curve and per-query values are appended first and its row last, each with one
write followed by a flush to disk, so an interruption loses at most the training under way. A line cut short by an
interruption (no final newline) is removed when the folder is opened again.
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from .._training.options import PLRankOptions
from .._util.schema import ConfigError

#: The file of a results folder that records the options of its PL-Rank trainings.
OPTIONS_FILE = "options.json"

__all__ = [
    "COLUMNS",
    "OPTIONS_FILE",
    "ResultStore",
    "RunKey",
    "append_line",
    "check_settings",
    "drop_partial_line",
    "output_folder",
    "write_options",
]

#: Columns of ``results.csv``, in order, with the type of their values.
COLUMNS: dict[str, type] = {
    "dataset": str,
    "method": str,
    "seed": int,
    "k": int,
    "ndcg": float,
    "ndcg_dataset": float,
    "best_round": int,
    "rounds_run": int,
    "train_seconds": float,
    "seconds_per_round": float,
    "test_queries": int,
}


class RunKey(NamedTuple):
    """What identifies one training."""

    dataset: str
    method: str
    seed: int
    k: int


def output_folder(path: str | Path) -> Path:
    """The output folder ``path``, created if missing.

    Raises
    ------
    ConfigError
        When ``path`` exists and is not a folder.
    """
    folder = Path(path)
    if folder.exists() and not folder.is_dir():
        raise ConfigError(
            f"the output folder must be a folder, but {folder} is a file; choose another (--out)."
        )
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _key(record: Mapping[str, Any]) -> RunKey:
    return RunKey(
        str(record["dataset"]), str(record["method"]), int(record["seed"]), int(record["k"])
    )


def drop_partial_line(path: Path) -> None:
    """Cut a file back to its last complete line."""
    if not path.is_file():
        return
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        with path.open("r+b") as fh:
            fh.truncate(data.rfind(b"\n") + 1)


def append_line(path: Path, text: str) -> None:
    """Append ``text`` (whole lines) with one write, flushed to disk before returning."""
    with path.open("a", encoding="utf-8", newline="") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())


def _first_difference(old: Any, new: Any, path: str = "") -> str | None:
    """The key path of the first difference between two JSON values, or None."""
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(old) | set(new)):
            where = f"{path}.{key}" if path else key
            if key not in old or key not in new:
                return where
            found = _first_difference(old[key], new[key], where)
            if found is not None:
                return found
        return None
    return None if old == new else path


def check_settings(folder: Path, settings: Mapping[str, Any], *, has_results: bool) -> None:
    """Refuse other settings than ``folder/settings.json`` once results exist; else (re)write it.

    Raises
    ------
    ConfigError
        Naming the first setting that differs.
    """
    path = folder / "settings.json"
    settings = json.loads(json.dumps(settings))
    if path.is_file() and has_results:
        where = _first_difference(json.loads(path.read_text(encoding="utf-8")), settings)
        if where is not None:
            raise ConfigError(
                f"{folder} holds results made with other settings ({where} differs); "
                f"choose another output folder (--out) or delete {folder}."
            )
    else:
        path.write_text(json.dumps(settings, indent=2, sort_keys=True) + "\n", encoding="utf-8")


class ResultStore:
    """Finished trainings in an output folder (see the module docstring).

    Parameters
    ----------
    folder : Path
        The output folder; created if missing.
    settings : mapping
        The comparison's :meth:`~gbdt_plrank.harness.config.CompareConfig.training_settings`.

    Raises
    ------
    ConfigError
        When the folder holds results made under other settings, or a ``results.csv`` with
        other columns.
    """

    def __init__(self, folder: str | Path, *, settings: Mapping[str, Any]) -> None:
        self.folder = output_folder(folder)
        self.results_path = self.folder / "results.csv"
        self.curves_path = self.folder / "curves.jsonl"
        self.queries_path = self.folder / "queries.jsonl"
        for path in (self.results_path, self.curves_path, self.queries_path):
            drop_partial_line(path)
        if not self.results_path.is_file() or self.results_path.stat().st_size == 0:
            append_line(self.results_path, ",".join(COLUMNS) + "\r\n")
        with self.results_path.open(encoding="utf-8", newline="") as fh:
            header = next(csv.reader(fh))
        if header != list(COLUMNS):
            raise ConfigError(
                f"{self.results_path} must have the columns {', '.join(COLUMNS)}, but has "
                f"{', '.join(header)}; choose another output folder."
            )
        check_settings(self.folder, settings, has_results=bool(self.rows()))

    def add(
        self, row: Mapping[str, Any], curve: Sequence[float], queries: Mapping[int, float]
    ) -> None:
        """Record one finished training: its curve, its per-query values, then its row.

        ``queries`` maps each test query id to the training's test NDCG@k of that query; the
        row marks the training done.
        """
        missing = [c for c in COLUMNS if c not in row]
        if missing:
            raise ValueError(
                f"row must have every column of results.csv, but lacks {', '.join(missing)}."
            )
        key = _key(row)._asdict()
        curve_record = {**key, "curve": [float(v) for v in curve]}
        append_line(self.curves_path, json.dumps(curve_record) + "\n")
        ids = sorted(queries)
        query_record = {**key, "qid": ids, "ndcg": [float(queries[q]) for q in ids]}
        append_line(self.queries_path, json.dumps(query_record) + "\n")
        line = io.StringIO()
        csv.writer(line).writerow([row[c] for c in COLUMNS])
        append_line(self.results_path, line.getvalue())

    def rows(self) -> dict[RunKey, dict[str, Any]]:
        """The finished trainings' rows, typed, by key (a key written twice keeps its last row)."""
        with self.results_path.open(encoding="utf-8", newline="") as fh:
            rows = ({c: COLUMNS[c](v) for c, v in r.items()} for r in csv.DictReader(fh))
            return {_key(r): r for r in rows}

    def _records(self, path: Path) -> dict[RunKey, dict[str, Any]]:
        """The JSON lines of ``path`` that belong to finished trainings (the last one per key)."""
        done = self.rows()
        out = {}
        if path.is_file():
            with path.open(encoding="utf-8") as fh:
                for line in fh:
                    record = json.loads(line)
                    if _key(record) in done:
                        out[_key(record)] = record
        return out

    def curves(self) -> dict[RunKey, np.ndarray]:
        """The validation curves of the finished trainings, by key."""
        return {
            key: np.asarray(record["curve"], dtype=np.float64)
            for key, record in self._records(self.curves_path).items()
        }

    def queries(self) -> dict[RunKey, dict[int, float]]:
        """The per-query test NDCG@k of the finished trainings, by key (query id -> value)."""
        return {
            key: dict(zip(record["qid"], record["ndcg"]))
            for key, record in self._records(self.queries_path).items()
        }


def write_options(folder: Path, options: Mapping[str, PLRankOptions]) -> None:
    """Record in ``folder/options.json`` the resolved options of each PL-Rank training, by name.

    :meth:`~gbdt_plrank.PLRankOptions.resolved`: ``"auto"`` values as the run resolved them, so
    that a documented figure says which options it was measured with, and a later change of a
    default shows against it (``tests/test_defaults.py``).
    """
    record = {name: options[name].resolved() for name in options}
    (folder / OPTIONS_FILE).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
