r"""Deep, web-shaped queries: the README's path against each booster's own LambdaMART.

LETOR 4.0's queries are shallow (about 19 documents in MQ2008, 41 in MQ2007-agg, three grades);
web search data have about 120 documents a query with a long tail, five grades and 2 to 3 % of
the documents in the top two. This benchmark trains the harness's methods (by default XGBoost's
``rank:ndcg``, PL-Rank on XGBoost, LightGBM's ``lambdarank`` and PL-Rank on LightGBM: the
README's path) at the harness's shared tree settings (``--trees``: or at each library's own, as
:mod:`benchmarks.time_to_model` names them) and stopping rule on such data, each timed to its
kept model (evaluation and early stopping included) as :mod:`benchmarks.time_to_model` does:

1. the synthetic web-shaped datasets of :func:`gbdt_plrank.load_dataset` (``"web-linear"``,
   ``"web-nonlinear"``, ``"web-noisy"``; :mod:`gbdt_plrank._synthetic` has the model), one
   training per draw (``--draws``, each an independent dataset of 1,500 / 300 / 300 queries,
   trained with the seed of its draw); the test queries of the draws are pooled, each a unit of
   the paired tests;
2. the bundled ``mslr-sample`` (90 real MSLR-WEB queries of about 102 documents), in a
   query-level five-fold cross-validation repeated ``--repeats`` times
   (:func:`gbdt_plrank.harness.data.cross_validation_fold`; repeat r trains with seed r), so that
   every query is a test query once per repeat: its NDCG is its mean over the repeats.

Quality is test NDCG@5 and NDCG@10, compared query by query with ``rank:ndcg`` and with the
booster's own LambdaMART by the harness's paired tests; time is the sum over the trainings of
the library's training call up to the kept model.

    python benchmarks/deep_queries.py                          # every part (about 2 hours)
    python benchmarks/deep_queries.py --variants web-nonlinear --draws 1 --repeats 0
    python benchmarks/deep_queries.py --plrank 'N=100'         # a PL-Rank variant's rows too
    python benchmarks/deep_queries.py --trees library-defaults # at each library's own trees

It writes the tables to ``benchmarks/results/deep_queries.md`` (``--out``), every training's
record to ``deep_queries.jsonl`` as it finishes (``--report-only`` rebuilds the tables from it).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: this checkout's package, not an installed one
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import gbdt_plrank  # noqa: F401  # isort: skip
import numpy as np

from benchmarks import time_to_model as ttm
from benchmarks.harness import (
    append_record,
    command_line,
    environment,
    markdown_table,
    write_section,
)
from gbdt_plrank.cli._argtypes import int_list, text_list
from gbdt_plrank.datasets import SYNTHETIC, load_dataset
from gbdt_plrank.harness.data import cross_validation_fold, without_empty_queries
from gbdt_plrank.harness.methods import METHODS
from gbdt_plrank.harness.stats import paired, seed_means

__all__ = ["CV_DATA", "METHOD_NAMES", "cross_validation_report", "main"]

#: The methods trained by default: the README's path on each booster and its own LambdaMART.
METHOD_NAMES = ("lambdamart-xgb", "plrank-xgb", "lambdarank-lgb", "plrank-lgb")
#: The real deep-query data, cross-validated: its name in the records.
CV_DATA = "mslr-sample-cv"
#: The cross-validation's folds.
CV_FOLDS = 5


def _cross_validation(
    *,
    methods: list[str],
    repeats: int,
    k: int,
    trees: str,
    rounds: int,
    n_jobs: int,
    variants,
    records: Path,
    echo,
    warm: bool,
) -> list[ttm.Run]:
    """Every method on every fold of ``repeats`` repeated cross-validations of mslr-sample, at
    the tree settings ``--trees trees`` names (:func:`benchmarks.time_to_model.tree_settings`),
    as :func:`benchmarks.time_to_model.run` trains the web data; with ``warm``, every method is
    first trained on the first fold, discarded (:func:`benchmarks.time_to_model.warm_up`)."""
    settings = ttm.tree_settings(trees, rounds=rounds, n_jobs=n_jobs)
    data = load_dataset("mslr-sample")
    rows = ttm._rows(methods, [], variants)
    runs = []
    for repeat in range(repeats):
        for fold in range(1, CV_FOLDS + 1):
            ds = cross_validation_fold(data, fold=fold, repeat=repeat, folds=CV_FOLDS)
            ds = type(ds)(ds.name, ds.train, ds.vali, without_empty_queries(ds.test))
            if warm and not runs:
                ttm.warm_up(ds, rows, data=CV_DATA, trees=trees, settings=settings, k=k)
            for row, method, plrank in rows:
                r = ttm.train_run(
                    ds,
                    ttm.Run(row, method, CV_DATA, fold, 0.0, 0, 0, {}, repeat, trees),
                    settings=settings,
                    k=k,
                    plrank=plrank,
                )
                runs.append(r)
                append_record(records, r.__dict__)
                echo(
                    f"{ds.name} {row}: {r.seconds:.2f} s, {r.rounds_run} rounds "
                    f"(kept {r.best_round}), NDCG@10 {np.mean(list(r.test[10].values())):.4f}"
                )
    return runs


def _by_query(runs: list[ttm.Run], cutoff: int) -> dict[int, float]:
    """Query id -> its test NDCG@cutoff, the mean over the repeats (each tests it once)."""
    return seed_means((q, v) for r in runs for q, v in r.test[cutoff].items())


def cross_validation_report(runs: list[ttm.Run]) -> str:
    """The repeated cross-validation's table: each method's time, rounds and test NDCG, paired
    per query (its mean over the repeats) against ``rank:ndcg`` and its own LambdaMART."""
    of = {row: [r for r in runs if r.row == row] for row in dict.fromkeys(r.row for r in runs)}
    ref = of.get(ttm.REFERENCE)
    table = []
    for row, rs in of.items():
        base = ttm._own_lambdamart(rs[0].method)
        cells = []
        for other in (ttm.REFERENCE, base):
            if (
                other == row
                or other not in of
                or (other == base and base == ttm.REFERENCE and cells)
            ):
                cells.append("")
                continue
            p = paired(_by_query(rs, 10), _by_query(of[other], 10))
            cells.append(ttm._verdict(p))
        seconds = sum(r.seconds for r in rs)
        table.append(
            [
                row,
                f"{seconds:.1f}",
                ttm._seconds_ratio(rs, ref),
                sum(r.rounds_run for r in rs),
                int(np.median([r.best_round for r in rs])),
                *(f"{np.mean(list(_by_query(rs, c).values())):.4f}" for c in ttm.CUTOFFS),
                *cells,
            ]
        )
    repeats = len({r.seed for r in runs})
    n = len(_by_query(next(iter(of.values())), 10))
    return "\n".join(
        [
            f"### mslr-sample, query-level {CV_FOLDS}-fold cross-validation repeated {repeats} "
            f"times ({n} test queries with a relevant document; a query's NDCG is its mean over "
            "the repeats)\n",
            markdown_table(
                [
                    "method",
                    "s to kept model",
                    f"x {ttm.REFERENCE}",
                    "rounds run",
                    "median kept round",
                    "NDCG@5",
                    "NDCG@10",
                    f"NDCG@10 - {ttm.REFERENCE}",
                    "NDCG@10 - own LambdaMART",
                ],
                table,
            ),
            *ttm.quality_time_section(of),
            "",
        ]
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--variants",
        default=",".join(SYNTHETIC),
        help="synthetic web-shaped datasets, comma-separated ('' for none)",
    )
    parser.add_argument(
        "--draws",
        type=int_list,
        default=[1, 2, 3],
        help="the draws of each synthetic dataset (its folds), comma-separated",
    )
    parser.add_argument(
        "--repeats", type=int, default=3, help="repeats of mslr-sample's cross-validation (0: none)"
    )
    parser.add_argument("--methods", type=text_list, default=",".join(METHOD_NAMES))
    parser.add_argument(
        "--plrank",
        default="",
        help="extra PL-Rank rows with these [plrank] options: key=value pairs, "
        "comma-separated, one row per ';'-separated variant",
    )
    parser.add_argument("--k", type=int, default=10, help="cut-off of training and stopping")
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument(
        "--trees",
        choices=tuple(ttm.TREES),
        default="harness",
        help="the tree settings every method trains at (time_to_model.py's)",
    )
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", default="benchmarks/results/deep_queries.md")
    parser.add_argument(
        "--report-only",
        action="store_true",
        help="train nothing: write the tables of the records beside --out",
    )
    args = parser.parse_args(argv)
    command = command_line("python benchmarks/deep_queries.py", argv)
    out = Path(args.out)
    records = out.with_suffix(".jsonl")
    args.variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = [v for v in args.variants if v not in SYNTHETIC]
    if unknown:
        parser.error(f"--variants must be among {', '.join(SYNTHETIC)}, but {unknown[0]!r} is not.")
    if args.repeats < 0:
        parser.error(f"--repeats must be an integer >= 0, but {args.repeats} is given.")
    for name in args.methods:
        if name not in METHODS:
            parser.error(f"--methods must name harness methods, but {name!r} is not one.")
    variants = {}
    for v in (v for v in args.plrank.split(";") if v):
        try:
            variants[v] = ttm.plrank_variant(v)
        except ValueError as error:
            parser.error(f"--plrank {v!r}: {error}")
    start = time.perf_counter()
    if args.report_only:  # the records of the variants, draws and methods asked for
        runs = [
            r
            for r in ttm.read_runs(records)
            if r.method in args.methods
            and (
                (r.data == CV_DATA and r.seed < args.repeats)
                or (r.data in args.variants and r.fold in args.draws)
            )
        ]
    else:
        out.parent.mkdir(parents=True, exist_ok=True)
        records.write_text("")
        runs = []
        for draw in args.draws:  # draw by draw: an interrupted run has every variant alike
            for variant in args.variants:
                runs += ttm.run(
                    datasets=[variant],
                    folds=[draw],
                    methods=args.methods,
                    stoppings=[],
                    k=args.k,
                    trees=args.trees,
                    rounds=args.rounds,
                    n_jobs=args.threads,
                    seeds=(draw,),
                    records=records,
                    variants=variants,
                    warm=not runs,
                )
        if args.repeats:
            runs += _cross_validation(
                methods=args.methods,
                repeats=args.repeats,
                k=args.k,
                trees=args.trees,
                rounds=args.rounds,
                n_jobs=args.threads,
                variants=variants,
                records=records,
                echo=print,
                warm=not runs,
            )
    wall = time.perf_counter() - start
    web = [r for r in runs if r.data != CV_DATA]
    cv = [r for r in runs if r.data == CV_DATA]
    cv_only = f"## Deep queries\n\nWritten by `{command}`.\n" + (
        f"\n{ttm._trees_line(cv)}" if cv else ""
    )  # the web report names the trees otherwise
    markdown = "\n".join(
        part
        for part in (
            ttm.report(web, command).replace("## Time to a kept model", "## Deep queries", 1)
            if web
            else cv_only,
            cross_validation_report(cv) if cv else "",
        )
        if part
    )
    if not args.report_only:
        markdown += (
            f"\nOne process, {args.threads} threads per training; the whole run took "
            f"{wall:.0f} s.\n"
        )
    raw = {
        "environment": environment(),
        "command": command,
        "wall_seconds": wall,
        "runs": [{**r.__dict__, "test": None} for r in runs],
    }
    write_section(out.parent, out.stem, markdown, raw)


if __name__ == "__main__":
    main()
