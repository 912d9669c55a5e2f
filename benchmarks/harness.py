"""Timing, tables and result files shared by the benchmark scripts.

Every time is wall-clock ``time.perf_counter``; a measurement is the median of several calls made
after one discarded warm-up call, except for calls longer than the time budget, which are run once
(their kernels were compiled beforehand on a tiny input, so that one call is not a compilation).
"""

from __future__ import annotations

import gzip
import json
import os
import platform
import shlex
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from gbdt_plrank._util.threads import USER_WAIT
from gbdt_plrank.datasets import LTRDataset

__all__ = [
    "Timing",
    "append_record",
    "command_line",
    "environment",
    "markdown_table",
    "measure",
    "measure_interleaved",
    "read_records",
    "warm_up_data",
    "write_section",
]


@dataclass
class Timing:
    """Wall-clock seconds of the measured calls (warm-up excluded) and their median.

    Attributes
    ----------
    median : float
        Median over ``times``.
    times : list of float
        Every measured call.
    warmup : float or None
        The discarded warm-up call, or None when the single call was kept (too slow to repeat).
    """

    median: float
    times: list[float] = field(default_factory=list)
    warmup: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _clock(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def measure(fn: Callable[[], object], *, reps: int = 5, budget: float = 3.0) -> Timing:
    """Time ``fn()``: a warm-up call, then as many calls as fit in ``budget`` seconds.

    After the warm-up call (time t), ``min(reps, max(1, budget // t))`` calls are measured and
    their median reported, so that a cell costs at most about ``t + budget``. When the warm-up
    alone took longer than ``budget``, that one call is the measurement (the code it runs must
    have been compiled beforehand).
    """
    first = _clock(fn)
    if first > budget:
        return Timing(median=first, times=[first], warmup=None)
    count = min(reps, max(1, int(budget // max(first, 1e-9))))
    times = [_clock(fn) for _ in range(count)]
    return Timing(median=statistics.median(times), times=times, warmup=first)


def measure_interleaved(
    fns: dict[str, Callable[[], object]], *, reps: int = 5
) -> dict[str, Timing]:
    """Time several functions in turns: one warm-up call each, then ``reps`` rounds of one each.

    A change of the machine's load during the measurement then falls on every function alike,
    so their ratios are steadier than those of back-to-back :func:`measure` calls.
    """
    warmup = {name: _clock(fn) for name, fn in fns.items()}
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(reps):
        for name, fn in fns.items():
            times[name].append(_clock(fn))
    return {
        name: Timing(median=statistics.median(t), times=t, warmup=warmup[name])
        for name, t in times.items()
    }


#: The queries of each split that a discarded warm-up training takes (:func:`warm_up_data`).
WARM_UP_QUERIES = 200


def warm_up_data(ds: LTRDataset, *, queries: int = WARM_UP_QUERIES) -> LTRDataset:
    """``ds`` cut to the first ``queries`` queries of each split, to train every method once,
    discarded, before the timed trainings.

    The first training in a process loads the Numba kernels from their cache, or compiles them
    when it is empty (0.2 s, but 4.7 s for one PL-Rank training on a cold disk on this
    project's 2-core machine), and starts the boosters' thread pools: no timed training should
    pay that alone.
    """

    def cut(split):
        return split.take_queries(np.arange(min(queries, split.n_queries)))

    return LTRDataset(ds.name, cut(ds.train), cut(ds.vali), cut(ds.test))


def command_line(program: str, argv: Sequence[str] | None = None) -> str:
    """The shell command a result file was written by, quoted so that it reruns as written.

    ``program`` is how the script is run (``"python benchmarks/first_call.py"``, ``"python -m
    research.fairness_levers"``) and ``argv`` its arguments (``sys.argv[1:]`` when None), so that
    ``--plrank 'a=1 b=2'`` is recorded with its quotes.
    """
    return shlex.join([*shlex.split(program), *(sys.argv[1:] if argv is None else argv)])


def environment() -> dict[str, Any]:
    """Machine and library versions, and the load average (the timings' noise indicator)."""
    import numba
    import numpy
    import xgboost

    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "numba_threads": numba.config.NUMBA_NUM_THREADS,
        **{name: os.environ.get(name) for name in USER_WAIT},
        "numpy": numpy.__version__,
        "numba": numba.__version__,
        "xgboost": xgboost.__version__,
        "load_average": os.getloadavg(),
        "time": time.strftime("%Y-%m-%d %H:%M:%S"),
    }


def _cell(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 1000 else f"{value:.0f}"
    return str(value)


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A GitHub-flavoured Markdown table; floats get three significant digits."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def write_section(out_dir: Path, name: str, markdown: str, raw: dict[str, Any]) -> None:
    """Print ``markdown`` and write it to ``out_dir/name.md``, and ``raw`` to ``name.json``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    print(markdown, flush=True)
    (out_dir / f"{name}.md").write_text(markdown + "\n")
    (out_dir / f"{name}.json").write_text(json.dumps(raw, indent=2, default=_jsonable) + "\n")


def append_record(path: Path, record: dict[str, Any]) -> None:
    """Append ``record`` as one JSON line to ``path`` and flush it to disk (a finished result)."""
    with path.open("a") as fh:
        fh.write(json.dumps(record) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def read_records(path: Path) -> list[dict[str, Any]]:
    """The records of a JSON-lines file of :func:`append_record` (none if it is missing).

    Where ``path`` is missing and its gzip archive (``path`` + ``.gz``, the records a results
    file was written from, committed beside it) is there, ``path`` is restored from the archive
    first, so that a rerun skips those records and appends to them. The archive is written by
    hand after a run whose tables are committed (``gzip -9 -n -c <records> > <records>.gz``): a
    stale one only makes a rerun fit again what it lacks. A last line cut short by an
    interruption is removed from the file first.
    """
    archive = path.with_name(path.name + ".gz")
    if not path.is_file() and archive.is_file():
        path.write_bytes(gzip.decompress(archive.read_bytes()))
    if not path.is_file():
        return []
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        path.write_bytes(data[: data.rfind(b"\n") + 1])
    return [json.loads(line) for line in path.read_text().splitlines()]


def _jsonable(value: object) -> object:
    if hasattr(value, "tolist"):
        return value.tolist()
    if hasattr(value, "as_dict"):
        return value.as_dict()
    raise TypeError(f"cannot write {type(value).__name__} to JSON")
