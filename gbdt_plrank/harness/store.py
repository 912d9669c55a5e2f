"""The output folder of an experiment: its settings and its finished results, appended at once.

Every experiment of the harness keeps its results in one :class:`ResultStore`, whose
:class:`Table` s say what differs: the files, the fields that identify a record (its key) and,
for a CSV file, the columns.

- ``settings.json``: the settings that change results (e.g.
  :meth:`~gbdt_plrank.harness.compare.config.CompareConfig.training_settings`); a folder holding
  results made under other settings is refused rather than mixed.
- one file per table, one record per line (JSON lines, or CSV rows under a header): a record is
  appended with one write followed by a flush to disk as soon as it exists, so an interruption
  loses at most the work under way. A line cut short by an interruption (no final newline) is
  removed when the folder is opened again. A record of a table written ``after`` another counts
  only once the other holds its key (the comparison writes a training's curve and per-query values
  first and its row last, the row marking it done).
- arrays (``.npy``), each written whole under a temporary name, then renamed.
- ``.lock``: held by the run writing to the folder (:func:`locked_folder`), so that a second
  run started on the same folder is refused rather than mixed in.

The comparison's tables (:data:`COMPARISON`, the default):

- ``results.csv``: one row per finished training (:data:`COLUMNS`), the record of what is done;
- ``curves.jsonl``: one line per finished training, its validation curve;
- ``queries.jsonl``: one line per finished training, its test NDCG@k of every test query, by the
  query ids of the data files (the unit of the paired tests of the report).
"""

from __future__ import annotations

import csv
import io
import json
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, NamedTuple, get_type_hints

import numpy as np

from .._training.options import PLRankOptions
from .._util.schema import ConfigError

#: The file of a results folder that records the options of its PL-Rank trainings.
OPTIONS_FILE = "options.json"

__all__ = [
    "COLUMNS",
    "COMPARISON",
    "LOCK_FILE",
    "OPTIONS_FILE",
    "FolderInUseError",
    "ResultStore",
    "RunKey",
    "Table",
    "append_line",
    "check_settings",
    "drop_partial_line",
    "locked_folder",
    "output_folder",
    "write_options",
]

#: The lock file of an output folder (:func:`locked_folder`).
LOCK_FILE = ".lock"

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


class FolderInUseError(RuntimeError):
    """Another run holds the output folder's lock."""


def _try_lock(fd: int) -> bool:
    """Take the exclusive lock of the open file ``fd`` without waiting; whether it was free.

    The operating system releases it when the file is closed or the process ends, however it
    ends, so a lock is never left behind by a run that died.
    """
    if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
        import msvcrt

        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _holder(fd: int) -> str:
    """The process id written in the lock file ``fd``, or ``"unknown"``."""
    try:
        return os.read(fd, 64).decode("ascii", "replace").strip() or "unknown"
    except OSError:  # pragma: no cover - a locked region cannot be read on Windows
        return "unknown"


@contextmanager
def locked_folder(path: str | Path) -> Iterator[Path]:
    """The output folder ``path`` (created if missing), locked for the run inside the block.

    Every resumable experiment writes its output folder under this lock: a second run on the
    same folder, in this process or another, is refused while the first holds it, rather than
    mixing its rows in or training everything twice. The lock is the folder's
    :data:`LOCK_FILE`, which holds the process id of its holder; it is released when the block
    ends, however it ends (an interruption included), and by the operating system when the
    process dies.

    Raises
    ------
    ConfigError
        When ``path`` exists and is not a folder.
    FolderInUseError
        When another run holds the folder, naming the folder and the process.
    """
    folder = output_folder(path)
    lock = folder / LOCK_FILE
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if not _try_lock(fd):
            holder = _holder(fd)
            raise FolderInUseError(
                f"{folder} is in use by another run (process {holder}, lock file {lock}); wait "
                f"for it to finish and run the same command again to resume, or choose another "
                f"output folder (--out)."
            )
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode("ascii"))
        yield folder
    finally:
        os.close(fd)  # releases the lock


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


@dataclass(frozen=True)
class Table:
    """One append-only file of an output folder: one record per line, identified by its key.

    Attributes
    ----------
    file : str
        The file's name in the folder.
    key : NamedTuple class
        The key of a record: its fields are the record's fields that identify it, read with
        the types of the class's annotations; a key written twice keeps its last record.
    columns : mapping or None, default None
        A CSV file's columns, in order, with the type of their values (the header, written
        when the file is new and checked when it exists); None: JSON lines.
    after : str or None, default None
        The table whose record marks a key finished, written after this table's: until it
        holds the key, this table's records of the key are left out.
    """

    file: str
    key: type[tuple]
    columns: Mapping[str, type] | None = None
    after: str | None = None
    _types: tuple[tuple[str, type], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        hints = get_type_hints(self.key)
        fields = self.key._fields
        object.__setattr__(self, "_types", tuple((f, hints[f]) for f in fields))

    def key_of(self, record: Mapping[str, Any]) -> tuple:
        """The key of ``record``, its fields read with the key's types; a field the record lacks
        is the key's default for it (a field added to the key after the record was written)."""
        defaults = self.key._field_defaults
        return self.key(
            *(
                kind(record[name]) if name in record or name not in defaults else defaults[name]
                for name, kind in self._types
            )
        )

    def line(self, record: Mapping[str, Any]) -> str:
        """``record`` as one line of the file.

        Raises
        ------
        ValueError
            When a CSV record lacks a column.
        """
        if self.columns is None:
            return json.dumps(dict(record)) + "\n"
        missing = [c for c in self.columns if c not in record]
        if missing:
            raise ValueError(
                f"row must have every column of {self.file}, but lacks {', '.join(missing)}."
            )
        text = io.StringIO()
        csv.writer(text).writerow([record[c] for c in self.columns])
        return text.getvalue()

    def header(self) -> str:
        """A CSV file's header line."""
        assert self.columns is not None
        return ",".join(self.columns) + "\r\n"

    def read(self, text: str) -> Iterator[dict[str, Any]]:
        """The records of the file's ``text`` (lines only; a CSV file's header left out)."""
        if self.columns is None:
            for line in text.splitlines():
                yield json.loads(line)
            return
        columns = self.columns
        for values in csv.reader(io.StringIO(text, newline="")):
            yield {c: columns[c](v) for c, v in zip(columns, values)}


class ResultStore:
    """An experiment's output folder: its settings and its finished results (see the module
    docstring), read once on opening and appended to at once.

    Parameters
    ----------
    folder : Path
        The output folder; created if missing.
    settings : mapping
        What changes the experiment's results, e.g. the comparison's
        :meth:`~gbdt_plrank.harness.compare.config.CompareConfig.training_settings`.
    tables : mapping, optional
        Table name -> table (``gbdt_plrank.harness.store.Table``: its file, key and, for a
        CSV file, columns); the first table's file is :attr:`results_path`. Default: the
        comparison's (``results.csv``, ``curves.jsonl``, ``queries.jsonl``).

    Raises
    ------
    ConfigError
        When the folder holds results made under other settings, or a CSV file with other
        columns.
    """

    def __init__(
        self,
        folder: str | Path,
        *,
        settings: Mapping[str, Any],
        tables: Mapping[str, Table] | None = None,
    ) -> None:
        self.folder = output_folder(folder)
        self.tables = dict(COMPARISON if tables is None else tables)
        self._records: dict[str, dict[tuple, dict[str, Any]]] = {}
        for name, table in self.tables.items():
            path = self.path(name)
            drop_partial_line(path)
            text = path.read_text(encoding="utf-8") if path.is_file() else ""
            if table.columns is not None:
                text = self._checked_header(table, path, text)
            self._records[name] = {table.key_of(r): r for r in table.read(text)}
        finished = any(self.records(name) for name in self.tables)
        check_settings(self.folder, settings, has_results=finished)

    @classmethod
    @contextmanager
    def locked(
        cls,
        folder: str | Path,
        *,
        settings: Mapping[str, Any],
        tables: Mapping[str, Table] | None = None,
    ) -> Iterator[ResultStore]:
        """The store of ``folder``, which the run inside the block holds: a second run on the
        same folder, in this process or another, is refused until the block ends.

        Raises
        ------
        ConfigError
            As the class does, and when ``folder`` is a file.
        FolderInUseError
            When another run holds the folder.
        """
        with locked_folder(folder) as path:
            yield cls(path, settings=settings, tables=tables)

    @staticmethod
    def _checked_header(table: Table, path: Path, text: str) -> str:
        """The rows of a CSV file's ``text`` after its header, written first if missing."""
        if not text:
            append_line(path, table.header())
            return ""
        head, _, rows = text.partition("\n")
        header = next(csv.reader([head]))
        if header != list(table.columns or ()):
            raise ConfigError(
                f"{path} must have the columns {', '.join(table.columns or ())}, but has "
                f"{', '.join(header)}; choose another output folder."
            )
        return rows

    @property
    def results_path(self) -> Path:
        """The first table's file: the record of what is finished."""
        return self.path(next(iter(self.tables)))

    def path(self, table: str) -> Path:
        """The file of ``table``."""
        return self.folder / self.tables[table].file

    def records(self, table: str) -> Mapping[tuple, dict[str, Any]]:
        """The finished records of ``table`` by key (read-only), as a resumed run reads them."""
        records = self._records[table]
        after = self.tables[table].after
        if after is None:
            return MappingProxyType(records)
        done = self._records[after]
        return {key: record for key, record in records.items() if key in done}

    def append(self, table: str, record: Mapping[str, Any]) -> None:
        """Append ``record`` to ``table`` (one write, flushed to disk); its key is its fields'.

        Raises
        ------
        ValueError
            When a CSV record lacks a column.
        """
        spec = self.tables[table]
        line = spec.line(record)
        append_line(self.path(table), line)
        (stored,) = spec.read(line)  # as it reads back
        self._records[table][spec.key_of(stored)] = stored

    def save_array(self, name: str, values: Any) -> str:
        """Write ``values`` as the float64 array ``name`` (a path in the folder, ending ``.npy``):
        whole, under a temporary name, then renamed. Returns ``name``."""
        path = self.folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".partial.npy")
        np.save(partial, np.asarray(values, dtype=np.float64))
        os.replace(partial, path)
        return name

    def load_array(self, name: str) -> np.ndarray:
        """The array ``name`` written by :meth:`save_array`."""
        return np.load(self.folder / name)

    # The comparison's tables (COMPARISON) -------------------------------------------------------
    def add(
        self, row: Mapping[str, Any], curve: Sequence[float], queries: Mapping[int, float]
    ) -> None:
        """Record one finished training of a comparison: its curve, its per-query values, then
        its row.

        ``queries`` maps each test query id to the training's test NDCG@k of that query; the
        row marks the training done.

        Raises
        ------
        ValueError
            When ``row`` lacks a column of :data:`COLUMNS`.
        """
        self.tables["results"].line(row)  # every column, checked before anything is written
        key = self.tables["results"].key_of(row)._asdict()
        self.append("curves", {**key, "curve": [float(v) for v in curve]})
        ids = sorted(queries)
        self.append("queries", {**key, "qid": ids, "ndcg": [float(queries[q]) for q in ids]})
        self.append("results", row)

    def rows(self) -> dict[RunKey, dict[str, Any]]:
        """The finished trainings' rows, typed, by key (a key written twice keeps its last row)."""
        return dict(self.records("results"))

    def curves(self) -> dict[RunKey, np.ndarray]:
        """The validation curves of the finished trainings, by key."""
        return {
            key: np.asarray(record["curve"], dtype=np.float64)
            for key, record in self.records("curves").items()
        }

    def queries(self) -> dict[RunKey, dict[int, float]]:
        """The per-query test NDCG@k of the finished trainings, by key (query id -> value)."""
        return {
            key: dict(zip(record["qid"], record["ndcg"]))
            for key, record in self.records("queries").items()
        }


#: The comparison's tables: ``results.csv`` (:data:`COLUMNS`, the record of what is done), then
#: each training's validation curve and per-query test NDCG@k, written before its row.
COMPARISON: dict[str, Table] = {
    "results": Table("results.csv", RunKey, columns=COLUMNS),
    "curves": Table("curves.jsonl", RunKey, after="results"),
    "queries": Table("queries.jsonl", RunKey, after="results"),
}


def write_options(folder: Path, options: Mapping[str, PLRankOptions]) -> None:
    """Record in ``folder/options.json`` the resolved options of each PL-Rank training, by name.

    :meth:`~gbdt_plrank.PLRankOptions.resolved`: ``"auto"`` values as the run resolved them, so
    that a documented figure says which options it was measured with, and a later change of a
    default shows against it (``tests/test_defaults.py``).
    """
    record = {name: options[name].resolved() for name in options}
    (folder / OPTIONS_FILE).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
