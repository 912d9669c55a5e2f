r"""The first call: each ranker class at its defaults, fitted without an eval set.

A user with ranking data tries ``PLRankRanker().fit(X, y, group=qid)`` beside the boosters' own
rankers, everyone at their defaults: ``XGBRanker()``, ``LGBMRanker()``, ``PLRankRanker()`` and
``PLRankRanker(backend="lightgbm")``, each fitted on a training split with no eval set and
scored by the NDCG@5 and NDCG@10 of its ranking on the held-out queries. PL-Rank on XGBoost is
compared with ``XGBRanker()`` and PL-Rank on LightGBM with ``LGBMRanker()``, query by query
(the harness's paired tests), with the wall time of the fits (``fit`` as a user calls it).

The data:

- the synthetic web-shaped datasets (``web-linear``, ``web-nonlinear``, ``web-noisy``), one
  fit per draw (``--draws``), their held-out queries pooled;
- ``mslr-sample``, in a query-level five-fold cross-validation repeated ``--repeats`` times
  (each query's NDCG is its mean over the repeats);
- LETOR's ``mq2008`` and ``mq2007-agg``, five folds (every query is held out once).

Only queries with a relevant document are scored. ``--split vali`` scores the validation
queries instead of the test queries: defaults are chosen there, and the test split is read once.
``--plrank`` adds PL-Rank rows with other parameters (both backends), e.g.
``--plrank 'learning_rate=0.3 min_child_weight=0.1'``.

    python benchmarks/first_call.py                                  # every dataset (an hour)
    python benchmarks/first_call.py --data web-nonlinear --draws 1 --split vali
    python benchmarks/first_call.py --report-only

It writes the tables to ``benchmarks/results/first_call.md`` (``--out``) and every fit's record to
the ``.jsonl`` beside it as it finishes, a PL-Rank fit with the ranker's defaults it was made at.
A rerun skips the fits already recorded (a PL-Rank fit only at today's defaults), restoring the
records from the committed ``.jsonl.gz`` beside the tables where the ``.jsonl`` is missing; the
report shows a PL-Rank fit made at other defaults as a row of its own, named by the defaults it
did not override that differ from today's.
"""

from __future__ import annotations

import argparse
import ast
import shlex
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: this checkout's package, not an installed one
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import gbdt_plrank  # noqa: F401  # isort: skip
import numpy as np

from benchmarks.harness import (
    append_record,
    command_line,
    environment,
    markdown_table,
    read_records,
    warm_up_data,
)
from gbdt_plrank.cli._argtypes import int_list, text_list
from gbdt_plrank.datasets import SYNTHETIC, load_dataset
from gbdt_plrank.harness.data import cross_validation_fold, without_empty_queries
from gbdt_plrank.harness.stats import paired, seed_means
from gbdt_plrank.metrics import ndcg

__all__ = ["DATA", "REFERENCES", "defaults", "main", "report"]

#: Every dataset of the benchmark: the web draws, the real MSLR sample, LETOR.
DATA = (*SYNTHETIC, "mslr-sample", "mq2008", "mq2007-agg")
#: Each PL-Rank backend's reference: the booster's own ranker at its defaults.
REFERENCES = {"xgboost": "XGBRanker()", "lightgbm": "LGBMRanker()"}
CUTOFFS = (5, 10)
CV_FOLDS = 5
LETOR_FOLDS = (1, 2, 3, 4, 5)


def _parse_params(text: str) -> dict[str, Any]:
    """``'a=1 b=x'`` -> ``{"a": 1, "b": "x"}`` (Python literals, else strings)."""
    params = {}
    for item in shlex.split(text):
        name, _, value = item.partition("=")
        try:
            params[name] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            params[name] = value
    return params


def _row_name(backend: str, params: dict[str, Any]) -> str:
    given = ({"backend": backend} if backend != "xgboost" else {}) | params
    return "PLRankRanker(" + ", ".join(f"{k}={v!r}" for k, v in given.items()) + ")"


def rankers(variants: list[dict[str, Any]]) -> dict[str, tuple[str, dict[str, Any]]]:
    """Row name -> (backend, PLRankRanker parameters or the booster's own ranker): the boosters'
    rankers, then PL-Rank at its defaults and each variant, on both backends."""
    rows: dict[str, tuple[str, dict[str, Any]]] = {
        "XGBRanker()": ("xgboost-native", {}),
        "LGBMRanker()": ("lightgbm-native", {}),
    }
    for params in [{}, *variants]:
        for backend in ("xgboost", "lightgbm"):
            rows[_row_name(backend, params)] = (backend, params)
    return rows


def fit_predict(kind: str, params: dict[str, Any], train, held_out, *, seed: int, threads: int):
    """Fit one ranker class at its defaults (plus ``params``) on ``train`` without an eval set;
    its scores of ``held_out`` and the seconds ``fit`` took."""
    if kind == "xgboost-native":
        import xgboost

        model = xgboost.XGBRanker(n_jobs=threads, random_state=seed)
        fit = lambda: model.fit(train.X, train.y, qid=train.qid)  # noqa: E731
    elif kind == "lightgbm-native":
        import lightgbm

        model = lightgbm.LGBMRanker(n_jobs=threads, random_state=seed, verbose=-1)
        fit = lambda: model.fit(train.X, train.y, group=train.group_sizes)  # noqa: E731
    else:
        from gbdt_plrank import PLRankRanker

        model = PLRankRanker(backend=kind, n_jobs=threads, random_state=seed, **params)
        fit = lambda: model.fit(train.X, train.y, group=train.qid)  # noqa: E731
    start = time.perf_counter()
    fit()
    seconds = time.perf_counter() - start
    return np.asarray(model.predict(held_out.X), dtype=np.float64), seconds


def warm_up(rows: dict[str, tuple[str, dict[str, Any]]], ds, *, threads: int) -> None:
    """Fit every ranker of ``rows`` once on the first queries of ``ds``, discarded
    (:func:`benchmarks.harness.warm_up_data`)."""
    small = warm_up_data(ds)
    for kind, params in rows.values():
        fit_predict(kind, params, small.train, small.test, seed=0, threads=threads)


def units(data: str, *, draws: list[int], repeats: int) -> Iterator[tuple[str, Any]]:
    """(unit label, dataset whose ``train`` is fitted and whose ``split`` is scored) of ``data``."""
    if data in SYNTHETIC:
        for draw in draws:
            yield f"draw{draw}", load_dataset(data, fold=draw)
    elif data == "mslr-sample":
        full = load_dataset(data)
        for repeat in range(repeats):
            for fold in range(1, CV_FOLDS + 1):
                ds = cross_validation_fold(full, fold=fold, repeat=repeat, folds=CV_FOLDS)
                yield f"cv{repeat}-fold{fold}", ds
    else:
        for fold in LETOR_FOLDS:
            yield f"fold{fold}", load_dataset(data, fold=fold)


def _query_key(data: str, unit: str, qid: int) -> str:
    """A held-out query's key across units: a web draw's queries are its own; LETOR's and the
    cross-validation's are the same queries in every fold or repeat (seed-averaged)."""
    return f"{unit}/{qid}" if data in SYNTHETIC else str(qid)


def defaults() -> dict[str, Any]:
    """``PLRankRanker``'s defaults today: a record fitted at other defaults is another row."""
    from gbdt_plrank._backends import RANKER
    from gbdt_plrank.ranker import DEEP_WEIGHT

    return {**RANKER.model_dump(), "deep_weight": DEEP_WEIGHT}


def row_of(record: dict[str, Any], today: dict[str, Any]) -> str:
    """The report's row of ``record``: its ranker, and for a PL-Rank fit made at other defaults
    than ``today``'s, the ones it did not override, as they were (``[defaults: ...]``)."""
    name = record["ranker"]
    if not name.startswith("PLRankRanker"):
        return name
    then = record.get("defaults")
    if then is None:
        return f"{name} [earlier defaults]"
    from gbdt_plrank import PLRankRanker

    # a parameter added since: the record was fitted at the value that trained as before it
    then = {**PLRankRanker._EARLIER_VALUES, **then}
    given = _parse_params(name.removeprefix("PLRankRanker(").removesuffix(")").replace(",", ""))
    moved = [f"{k}={v!r}" for k, v in then.items() if k not in given and today.get(k) != v]
    return f"{name} [defaults: {', '.join(moved)}]" if moved else name


def run(args: argparse.Namespace, records: Path, echo) -> None:
    """Fit every ranker on every unit of every dataset not yet recorded in ``records`` at
    today's :func:`defaults`; before the first timed fit, every ranker once on the first
    queries of that unit (:func:`benchmarks.harness.warm_up_data`), discarded."""
    today = defaults()
    done = {(r["data"], r["unit"], row_of(r, today), r["split"]) for r in read_records(records)}
    rows = rankers([_parse_params(p) for p in args.plrank])
    warm = False
    for data in args.data:
        for unit, ds in units(data, draws=args.draws, repeats=args.repeats):
            held_out = without_empty_queries(getattr(ds, args.split))
            seed = int("".join(c for c in unit if c.isdigit()) or 0)
            for name, (kind, params) in rows.items():
                if (data, unit, name, args.split) in done:
                    continue
                if not warm:
                    warm_up(rows, ds, threads=args.threads)
                    warm = True
                scores, seconds = fit_predict(
                    kind, params, ds.train, held_out, seed=seed, threads=args.threads
                )
                per_query = {
                    k: ndcg(held_out.y, scores, held_out.qid, k=k, per_query=True).tolist()
                    for k in CUTOFFS
                }
                qids = np.unique(held_out.qid).tolist()  # per_query is in sorted-id order
                append_record(
                    records,
                    {
                        "data": data,
                        "unit": unit,
                        "ranker": name,
                        "split": args.split,
                        **({"defaults": today} if name.startswith("PLRankRanker") else {}),
                        "seconds": seconds,
                        "ndcg": {
                            str(k): {
                                _query_key(data, unit, q): v for q, v in zip(qids, per_query[k])
                            }
                            for k in CUTOFFS
                        },
                    },
                )
                echo(f"{data} {unit} {name}: {seconds:.1f} s, NDCG@10 {np.mean(per_query[10]):.4f}")


def _family(data: str) -> str:
    return "mslr-sample CV" if data == "mslr-sample" else data


def _time_ratio(records: list[dict[str, Any]], name: str, ref: str) -> float:
    """The fit seconds of ``name`` over those of ``ref``, on the units both were fitted on."""
    seconds = {
        n: {r["unit"]: r["seconds"] for r in records if r["ranker"] == n} for n in (name, ref)
    }
    units = seconds[name].keys() & seconds[ref].keys()
    return sum(seconds[name][u] for u in units) / sum(seconds[ref][u] for u in units)


def report(records: list[dict[str, Any]], *, split: str) -> str:
    """The tables: each dataset's mean NDCG@5 / @10 and fit time per ranker, and each PL-Rank
    row minus its booster's own ranker, paired per held-out query (the queries both scored),
    with the ratio of their fit times over the units both fitted (:func:`row_of` names the
    rows)."""
    today = defaults()
    records = [r | {"ranker": row_of(r, today)} for r in records if r["split"] == split]
    lines = []
    for data in dict.fromkeys(r["data"] for r in records):
        of_data = [r for r in records if r["data"] == data]
        names = list(dict.fromkeys(r["ranker"] for r in of_data))
        by = {
            (name, k): seed_means(
                (q, v) for r in of_data if r["ranker"] == name for q, v in r["ndcg"][str(k)].items()
            )
            for name in names
            for k in CUTOFFS
        }
        seconds = {n: sum(r["seconds"] for r in of_data if r["ranker"] == n) for n in names}
        fits = {n: sum(1 for r in of_data if r["ranker"] == n) for n in names}
        table = []
        for name in names:
            backend = "lightgbm" if "backend='lightgbm'" in name else "xgboost"
            cells: list[object] = [
                name,
                fits[name],
                *(f"{np.mean(list(by[name, k].values())):.4f}" for k in CUTOFFS),
            ]
            ref = REFERENCES[backend]
            if name.startswith("PLRankRanker") and ref in names:
                for k in CUTOFFS:
                    p = paired(by[name, k], by[ref, k])
                    cells.append(f"{p.mean:+.4f} [{p.low:+.4f}, {p.high:+.4f}] {p.verdict}")
                cells.append(f"{_time_ratio(of_data, name, ref):.2f}x")
            else:
                cells += ["", "", ""]
            cells.append(f"{seconds[name]:.1f}")
            table.append(cells)
        queries = len(by[names[0], 10])
        lines += [
            f"## {_family(data)} ({queries} {split} queries with a relevant document)",
            "",
            markdown_table(
                [
                    "ranker",
                    "fits",
                    "NDCG@5",
                    "NDCG@10",
                    "minus own ranker, @5",
                    "minus own ranker, @10",
                    "fit time vs own",
                    "fit seconds",
                ],
                table,
            ),
            "",
        ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=text_list, default=list(DATA))
    parser.add_argument("--draws", type=int_list, default=[1, 2, 3])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--split", choices=("test", "vali"), default="test")
    parser.add_argument("--plrank", action="append", default=[], metavar="'NAME=VALUE ...'")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/first_call.md"))
    parser.add_argument("--report-only", action="store_true")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.data) - set(DATA))
    if unknown:
        parser.error(f"--data must name datasets of {', '.join(DATA)}, but {unknown} is given.")
    records = args.out.with_suffix(".jsonl")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    if not args.report_only:
        run(args, records, echo=lambda line: print(line, flush=True))
    env = environment()
    header = (
        "# The first call: each ranker class at its defaults, no eval set\n\n"
        f"Command: `{command_line('python benchmarks/first_call.py', argv)}`; "
        f"{env['cpu_count']} cores, {args.threads} threads per fit, load average "
        f"{env['load_average'][0]:.1f} at the report, xgboost {env['xgboost']}.\n\n"
        "Held-out NDCG of the ranking by score; 'minus own ranker' is the PL-Rank row minus "
        "XGBRanker() (XGBoost backend) or LGBMRanker() (LightGBM backend), paired per query, "
        "with its 95% interval and the randomization test's verdict at p < 0.05.\n\n"
    )
    args.out.write_text(header + report(read_records(records), split=args.split))
    print(args.out.read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
