r"""Wall time to a kept model: every GBDT ranker of the harness, the same settings, one process.

Each method trains through the comparison harness (:func:`gbdt_plrank.harness.training.train`) on
every requested fold at the harness's shared tree settings (eta 0.05, depth 6 / LightGBM's 31
leaves, min_child_weight 0.1, lambda 1; at most 1000 rounds, the harness's stopping rule on
validation: no round kept before ceil(2 / eta), patience 25), with its own watched metric: the
library objectives on the library's NDCG@k, the PL-Rank methods as the README's ``xgboost.train`` /
``lightgbm.train`` call does (``[plrank]``'s defaults; ``--stopping`` adds rows for other stopping
metrics, ``--plrank`` rows with other ``[plrank]`` options). What is timed is the library's training
call, evaluation and early stopping included, up to the kept model: the harness's
``Fit.train_seconds``. Within a fold the methods run one after the other, so that a change of the
machine's load falls on all of them, and the ratios to XGBoost's ``rank:ndcg`` are taken over the
same folds.

Quality is test NDCG@5 and NDCG@10 of the kept models (trained and stopped at k, default 10),
pooled over every test query of the folds (queries without a relevant document left out, as in
the README's headline) and compared query by query with ``rank:ndcg`` and with the booster's own
LambdaMART by the harness's paired tests (:func:`gbdt_plrank.harness.stats.paired`). With
several ``--seeds`` every method trains once per seed; a query's NDCG is then its mean over the
seeds (the expected quality of a model the method trains, for the methods a seed changes:
PL-Rank's sampled rankings, CatBoost's random strength), times add up over the seeds. A
summary table per dataset gives each method's difference from its booster's own LambdaMART
(seeds pooled, with its interval and verdict), its worst seed's difference, the spread
(max - min) of the seeds' differences and its time ratio; with several seeds, the last tables
give each seed's difference alone (against ``rank:ndcg`` and against the own LambdaMART) with
their spread, and the spread of the kept rounds across seeds in each fold.

A second measure of time, on validation only: every training records its ranking's validation
NDCG@k per round (for PL-Rank beside the standardised metric it stops on), and a table gives the
rounds each PL-Rank training and its own LambdaMART's (same fold and seed) take to first reach
the lower of their kept models' validation NDCG@k, with PL-Rank's time to it as a multiple of
LambdaMART's (:func:`quality_times`). Where LambdaMART stops early and PL-Rank trains on to a
better model, the time to a kept model compares models of different quality; this one compares
the time each needs for the same.

``--trees library-defaults`` trains every method at its library's own default tree settings
(:meth:`~gbdt_plrank.harness.TreeSettings.library_defaults`: none is passed) instead of the
harness's, with the same rounds cap and patience.

    python benchmarks/time_to_model.py                      # MQ2008 and MQ2007-agg, 5 folds
    python benchmarks/time_to_model.py --data mq2008 --folds 1 --methods lambdamart-xgb,plrank-xgb
    python benchmarks/time_to_model.py --data mq2008 --seeds 0,1,2  # quality averaged over seeds
    python benchmarks/time_to_model.py --data mq2008 --seeds 0,1,2 --trees library-defaults
    python benchmarks/time_to_model.py --data mq2008 --seeds 0,1,2 --patience-rate 0  # fixed
    python benchmarks/time_to_model.py --data mq2008 --seeds 0,1,2 --plrank 'N=25,noise=lattice' \\
        --methods lambdamart-xgb,plrank-xgb,lambdarank-lgb,plrank-lgb
    python benchmarks/time_to_model.py --data mslr-sample --folds 1 \\
        --out benchmarks/results/time_to_model_mslr-sample.md   # the bundled MSLR sample, one split

It prints the tables and writes them to ``benchmarks/results/time_to_model.md`` (``--out``),
with every training's record in ``time_to_model.json``.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

if __package__ in (None, ""):  # run as a script: this checkout's package, not an installed one
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

# gbdt_plrank first: its import sets the OpenMP wait before the boosters load OpenMP.
import gbdt_plrank  # noqa: F401  # isort: skip
import numpy as np

from benchmarks.harness import (
    append_record,
    command_line,
    environment,
    markdown_table,
    read_records,
    warm_up_data,
    write_section,
)
from gbdt_plrank import PATIENCE_RATE
from gbdt_plrank._backends import check_parameter, metric_name
from gbdt_plrank._util import compat as _compat
from gbdt_plrank._util.schema import toml_value
from gbdt_plrank.cli._argtypes import int_list
from gbdt_plrank.datasets import LTRDataset
from gbdt_plrank.harness.data import check_data, load
from gbdt_plrank.harness.methods import METHODS, PLRANK
from gbdt_plrank.harness.settings import PLRankSettings, TreeSettings
from gbdt_plrank.harness.stats import Paired, paired, seed_means
from gbdt_plrank.harness.training import train
from gbdt_plrank.metrics import ndcg

__all__ = ["Run", "main", "quality_times", "ranking_curve", "report", "run", "train_run"]

#: The methods timed by default: every GBDT ranker of the harness with its library's defaults.
METHOD_NAMES = (
    "lambdamart-xgb",
    "pairwise-xgb",
    "plrank-xgb",
    "lambdarank-lgb",
    "xendcg-lgb",
    "plrank-lgb",
    "yetirank-cb",
)
#: The reference every method's time and quality are measured against.
REFERENCE = "lambdamart-xgb"
#: The cut-offs of the quality columns.
CUTOFFS = (5, 10)
#: ``--trees``: the tree settings every method trains at, and how the report names them.
TREES = {
    "harness": "the harness's shared tree settings (eta 0.05, depth 6 / LightGBM's 31 leaves, "
    "min_child_weight 0.1, lambda 1), stopped on validation with patience 25 from "
    "round 40 (ceil(2 / eta)) on",
    "library-defaults": "each library's own default tree settings (XGBoost eta 0.3, depth 6, "
    "min_child_weight 1, lambda 1; LightGBM learning_rate 0.1, 31 leaves, "
    "min_sum_hessian_in_leaf 1e-3, lambda_l2 0; CatBoost's defaults), "
    "stopped on validation with patience 25 from round ceil(2 / eta) on "
    "(XGBoost 7, LightGBM 20, CatBoost 1: it chooses its rate in training)",
}


def tree_settings(
    name: str,
    *,
    rounds: int,
    n_jobs: int | None,
    min_delta: float = 0.0,
    patience_rate: float = PATIENCE_RATE,
) -> TreeSettings:
    """The harness's tree settings of ``--trees name``, at most ``rounds`` rounds, every
    method's early stopping with ``min_delta`` (``--min-delta``) and ``patience_rate``
    (``--patience-rate``)."""
    if name not in TREES:
        raise ValueError(f"trees must be one of {', '.join(TREES)}, but {name!r} is given.")
    stopping = {"min_delta": min_delta, "patience_rate": patience_rate}
    if name == "library-defaults":
        return TreeSettings.library_defaults(rounds=rounds, n_jobs=n_jobs, **stopping)
    return TreeSettings(rounds=rounds, n_jobs=n_jobs, **stopping)


@dataclass(frozen=True)
class Run:
    """One training: a row name (method, with ``@<stopping>`` for a non-default stopping metric)."""

    row: str
    method: str
    data: str
    fold: int
    seconds: float
    rounds_run: int
    best_round: int
    test: dict[int, dict[int, float]]  # cut-off -> query id -> NDCG
    seed: int = 0
    trees: str = "harness"  # a key of TREES
    min_delta: float = 0.0
    curve: tuple[float, ...] = ()  # the validation value early stopping watched, per round
    patience_rate: float = 0.0  # the stopping rule's (runs recorded before it: a fixed patience)
    vali: dict[int, float] | None = None  # cut-off -> mean validation NDCG of the kept model
    # The validation NDCG@k of the ranking by score per round: [] where ``curve`` is it (early
    # stopping watched it), None in records from before it was kept.
    ranking_curve: tuple[float, ...] | None = None


def _rows(
    methods: list[str], stoppings: list[str], variants: dict[str, PLRankSettings] | None = None
) -> list[tuple[str, str, PLRankSettings | None]]:
    """(row name, method, its ``[plrank]`` table or None for the default) in the order they run.

    A PL-Rank method gets a row ``<method>@<metric>`` per stopping metric other than the
    default, and ``<method>[<variant>]`` per variant: its text (``key=value`` pairs of the
    ``[plrank]`` table, comma-separated) -> its table (:func:`plrank_variant`).
    """
    default = PLRankSettings().stopping
    rows: list[tuple[str, str, PLRankSettings | None]] = []
    for name in methods:
        rows.append((name, name, None))
        if METHODS[name].objective == PLRANK:
            rows += [
                (f"{name}@{s}", name, PLRankSettings(stopping_metric=s))
                for s in stoppings
                if s != default
            ]
            rows += [(f"{name}[{v}]", name, table) for v, table in (variants or {}).items()]
    return rows


def plrank_variant(text: str) -> PLRankSettings:
    """The ``[plrank]`` table of ``key=value`` pairs, comma-separated (a value as TOML reads it,
    ``N=25`` an integer and ``query_subsample=0.5`` a float, else as the text).

    Raises
    ------
    ValueError
        For a pair without ``=``, and for an option or value the table refuses.
    """
    options: dict[str, object] = {}
    for pair in _items(text):
        key, sep, value = pair.partition("=")
        if not sep:
            raise ValueError(f"a --plrank variant is key=value pairs, but {pair!r} has no '='.")
        options[key.strip()] = toml_value(value.strip())
    return PLRankSettings(**options)


def run(
    *,
    datasets: list[str],
    folds: list[int],
    methods: list[str],
    stoppings: list[str],
    k: int,
    trees: str = "harness",
    rounds: int = 1000,
    n_jobs: int | None = None,
    seeds: tuple[int, ...] = (0,),
    echo=print,
    records: Path | None = None,
    variants: dict[str, PLRankSettings] | None = None,
    min_delta: float = 0.0,
    patience_rate: float = PATIENCE_RATE,
    warm: bool = True,
) -> list[Run]:
    """Train every row on every fold and seed, the rows of a fold and seed one after the other.

    ``trees`` names the tree settings (a key of :data:`TREES`, :func:`tree_settings`), whose
    early stopping counts a gain of at most ``min_delta`` as none and waits at least
    ``patience_rate`` times the best round after it, for every method;
    ``variants`` adds PL-Rank rows with other ``[plrank]`` tables (:func:`_rows`). Each
    finished training is also appended to the JSON-lines file ``records``, if given, so that an
    interrupted run keeps what it measured. With ``warm``, every row is first trained on the
    first fold, discarded (:func:`warm_up`).
    """
    settings = tree_settings(
        trees, rounds=rounds, n_jobs=n_jobs, min_delta=min_delta, patience_rate=patience_rate
    )
    rows = _rows(methods, stoppings, variants)
    runs = []
    for data in datasets:
        for fold in folds:
            ds = load(data, fold, drop_empty_test_queries=True)
            if warm and not runs:
                warm_up(ds, rows, data=data, trees=trees, settings=settings, k=k)
            for seed, (row, method, plrank) in itertools.product(seeds, rows):
                r = train_run(
                    ds,
                    Run(row, method, data, fold, 0.0, 0, 0, {}, seed, trees, min_delta),
                    settings=settings,
                    k=k,
                    plrank=plrank,
                )
                runs.append(r)
                if records is not None:
                    append_record(records, r.__dict__)
                echo(
                    f"{ds.name} {row} (seed {seed}): {r.seconds:.2f} s, "
                    f"{r.rounds_run} rounds (kept {r.best_round}), "
                    f"NDCG@10 {np.mean(list(r.test[10].values())):.4f}"
                )
    return runs


def warm_up(
    ds: LTRDataset,
    rows: list[tuple[str, str, PLRankSettings | None]],
    *,
    data: str,
    trees: str,
    settings: TreeSettings,
    k: int,
) -> None:
    """Train every row once on the first queries of ``ds`` (of ``data``, at the tree settings
    ``trees`` names; :func:`benchmarks.harness.warm_up_data`) and discard it, before the timed
    trainings."""
    small = warm_up_data(ds)
    for row, method, plrank in rows:
        warm = Run(row, method, data, 0, 0.0, 0, 0, {}, 0, trees)
        train_run(small, warm, settings=settings, k=k, plrank=plrank)


def train_run(
    ds: LTRDataset, run: Run, *, settings: TreeSettings, k: int, plrank: PLRankSettings | None
) -> Run:
    """``run`` (its row, method and seed) trained on ``ds``: its time, rounds and test NDCG per
    query filled in."""
    fit = train(run.method, ds, k=k, seed=run.seed, trees=settings, plrank=plrank)
    qids = np.unique(ds.test.qid)
    test = {
        c: dict(
            zip(
                qids.tolist(),
                ndcg(ds.test.y, fit.test_scores, ds.test.qid, k=c, per_query=True).tolist(),
            )
        )
        for c in CUTOFFS
    }
    vali = {
        c: float(ndcg(ds.vali.y, fit.vali_scores, ds.vali.qid, k=c, empty=float("nan")))
        for c in CUTOFFS
    }
    ranking = metric_name(k)
    return replace(
        run,
        seconds=fit.train_seconds,
        vali=vali,
        rounds_run=int(fit.curve.shape[0]),
        best_round=int(fit.best_round),
        test=test,
        curve=tuple(fit.history[fit.watched].tolist()),
        patience_rate=settings.patience_rate,
        ranking_curve=() if fit.watched == ranking else tuple(fit.history[ranking].tolist()),
    )


def read_runs(path: Path) -> list[Run]:
    """The trainings appended to ``path`` by :func:`run` (e.g. those of an interrupted run)."""
    return [
        Run(
            **{
                **r,
                "test": {
                    int(c): {int(q): v for q, v in per.items()} for c, per in r["test"].items()
                },
                "vali": None
                if r.get("vali") is None
                else {int(c): v for c, v in r["vali"].items()},
            }
        )
        for r in read_records(path)
    ]


def _pooled(runs: list[Run], cutoff: int) -> dict[tuple[int, int], float]:
    """(fold, query id) -> test NDCG@cutoff of the runs of one row and dataset, mean over seeds."""
    return seed_means(((r.fold, q), v) for r in runs for q, v in r.test[cutoff].items())


def _versus(a: list[Run], b: list[Run], cutoff: int) -> Paired:
    return paired(_pooled(a, cutoff), _pooled(b, cutoff))


def _verdict(p: Paired) -> str:
    word = p.verdict if p.verdict == "level" else f"{p.verdict} (p = {p.p_randomization:.3f})"
    return f"{p.interval}, {word}"


def _own_lambdamart(method: str) -> str:
    return {"xgboost": "lambdamart-xgb", "lightgbm": "lambdarank-lgb"}.get(
        METHODS[method].library, REFERENCE
    )


def _of_seed(runs: list[Run], seed: int) -> list[Run]:
    return [r for r in runs if r.seed == seed]


def seed_differences(a: list[Run], b: list[Run], cutoff: int = 10) -> dict[int, Paired]:
    """Seed -> the paired NDCG@cutoff difference ``a - b`` of that seed's runs alone, pooled
    over the folds, for every seed both ``a`` and ``b`` ran."""
    seeds = sorted({r.seed for r in a} & {r.seed for r in b})
    return {s: _versus(_of_seed(a, s), _of_seed(b, s), cutoff) for s in seeds}


def spread(values: list[float]) -> float:
    """The spread of ``values`` across seeds: max - min (0 for one value)."""
    return max(values) - min(values)


def kept_round_spreads(runs: list[Run]) -> dict[int, int]:
    """Fold -> the spread (max - min) across seeds of the kept rounds of one row's runs."""
    kept: dict[int, list[int]] = {}
    for r in runs:
        kept.setdefault(r.fold, []).append(r.best_round)
    return {fold: spread(k) for fold, k in sorted(kept.items())}


def _seconds_ratio(runs: list[Run], ref: list[Run] | None) -> str:
    return (
        "" if ref is None else f"{sum(r.seconds for r in runs) / sum(r.seconds for r in ref):.2f}x"
    )


def ranking_curve(run: Run) -> tuple[float, ...] | None:
    """The validation NDCG@k of ``run``'s ranking by score per round, or None where its record
    does not hold it."""
    if run.ranking_curve is None:
        return None
    return run.ranking_curve or run.curve


def _kept_quality(run: Run) -> float:
    """The validation NDCG@k of ``run``'s kept model: its ranking curve at the kept round."""
    return ranking_curve(run)[run.best_round - 1]


def _reach(run: Run, target: float) -> int:
    """The first round (1-based) whose validation NDCG@k of the ranking reaches ``target``."""
    return int(np.flatnonzero(np.asarray(ranking_curve(run)) >= target)[0]) + 1


def quality_times(of: dict[str, list[Run]]) -> list[list[object]]:
    """A row per PL-Rank row with its own LambdaMART: the time each takes to a quality both reach.

    Each PL-Rank training is paired with the LambdaMART training of the same fold and seed. The
    quality both reach is the lower of their kept models' validation NDCG@k (their ranking
    curves at their kept rounds), and each reaches it at the first round its curve is as high,
    at the latest at its kept round. The time to a round is the training's seconds times the
    share of its rounds run up to it (rounds cost alike), so neither side counts the rounds its
    stopping rule waits after. The threshold is a kept value on either side, so a method is not
    held to the other's validation maximum alone, whose selection overstates it. Validation
    only; the records of both must hold the ranking's curve.
    """
    table = []
    for row, rs in of.items():
        base = _own_lambdamart(rs[0].method)
        if METHODS[rs[0].method].objective != PLRANK or base not in of:
            continue
        theirs = {(r.fold, r.seed): r for r in of[base]}
        pairs = [(r, theirs[r.fold, r.seed]) for r in rs if (r.fold, r.seed) in theirs]
        if not pairs or any(ranking_curve(r) is None or ranking_curve(b) is None for r, b in pairs):
            continue
        mine, own, ahead, reached = 0.0, 0.0, 0, []
        for r, b in pairs:
            target = min(_kept_quality(r), _kept_quality(b))
            t, u = _reach(r, target), _reach(b, target)
            mine += r.seconds * t / r.rounds_run
            own += b.seconds * u / b.rounds_run
            ahead += _kept_quality(r) > target
            reached.append((t, u))
        table.append(
            [
                row,
                base,
                f"{ahead} of {len(pairs)}",
                ", ".join(str(t) for t, u in reached),
                ", ".join(str(u) for t, u in reached),
                f"{mine / own:.2f}x",
            ]
        )
    return table


def quality_time_section(of: dict[str, list[Run]]) -> list[str]:
    """The lines of :func:`quality_times`' table, or none where no row has it."""
    table = quality_times(of)
    if not table:
        return []
    return [
        "\nTime to a common quality, on validation: each PL-Rank training and its own "
        "LambdaMART's of the same fold and seed, the rounds each takes to first reach the lower "
        "of their kept models' validation NDCG@10 (PL-Rank's kept model is the higher in the "
        "trainings counted), and PL-Rank's time to it as a multiple of LambdaMART's (the rounds "
        "the stopping rules wait after left out on both sides):\n",
        markdown_table(
            [
                "method",
                "own LambdaMART",
                "PL-Rank's kept model higher",
                "PL-Rank's rounds to it",
                "LambdaMART's rounds to it",
                "x its time",
            ],
            table,
        ),
    ]


def _summary(of: dict[str, list[Run]], ref: list[Run] | None) -> list[list[object]]:
    """A row per method that has its own LambdaMART in the run (and is not it)."""
    table = []
    for row, rs in of.items():
        base = _own_lambdamart(rs[0].method)
        if base == row or base not in of:
            continue
        per_seed = seed_differences(rs, of[base])
        worst = min(per_seed, key=lambda s: per_seed[s].mean)
        table.append(
            [
                row,
                base,
                _verdict(_versus(rs, of[base], 10)),
                f"seed {worst}: {_verdict(per_seed[worst])}",
                f"{spread([p.mean for p in per_seed.values()]):.4f}",
                _seconds_ratio(rs, ref),
            ]
        )
    return table


def _seed_table(
    of: dict[str, list[Run]], minus: dict[str, str], seeds: list[int]
) -> list[list[object]]:
    """A row per method of ``minus`` (row -> the row subtracted): each seed's NDCG@10 difference
    with the spread of the seeds' differences."""
    table = []
    for row, base in minus.items():
        per_seed = seed_differences(of[row], of[base])
        table.append(
            [
                row,
                *(_verdict(per_seed[s]) if s in per_seed else "" for s in seeds),
                f"{spread([p.mean for p in per_seed.values()]):.4f}",
            ]
        )
    return table


def _trees_line(runs: list[Run]) -> str:
    names = list(dict.fromkeys(r.trees for r in runs))
    deltas = sorted({r.min_delta for r in runs} - {0.0})
    rules = "".join(
        f"; a round is the best only when it beats the best validation value by more than {d:g}"
        for d in deltas
    ) + "".join(
        f"; the patience grows to {rate:g} times the best round when that is longer"
        for rate in sorted({r.patience_rate for r in runs} - {0.0})
    )
    return "Trained at " + "; ".join(TREES.get(n, n) for n in names) + rules + ".\n"


def report(runs: list[Run], command: str) -> str:
    """The markdown tables of each dataset: a row per method, a summary against the booster's
    own LambdaMART, the paired differences, and with several seeds each seed's alone."""
    lines = [f"## Time to a kept model\n\nWritten by `{command}`.\n", _trees_line(runs)]
    for data in dict.fromkeys(r.data for r in runs):
        of = {
            row: [r for r in runs if r.data == data and r.row == row]
            for row in dict.fromkeys(r.row for r in runs if r.data == data)
        }
        folds = sorted({r.fold for r in runs if r.data == data})
        ref = of.get(REFERENCE)
        table = []
        for row, rs in of.items():
            seconds = sum(r.seconds for r in rs)
            rounds = sum(r.rounds_run for r in rs)
            worst = (
                ""
                if ref is None
                else (f"{max(r.seconds / s.seconds for r, s in zip(rs, ref)):.2f}x")
            )
            means = [np.mean(list(_pooled(rs, c).values())) for c in CUTOFFS]
            diff = "" if ref is None or row == REFERENCE else _verdict(_versus(rs, ref, 10))
            kept = {}
            for r in rs:
                kept.setdefault(r.fold, []).append(str(r.best_round))
            table.append(
                [
                    row,
                    f"{seconds:.1f}",
                    _seconds_ratio(rs, ref),
                    worst,
                    rounds,
                    ", ".join("/".join(k) for k in kept.values()),
                    f"{1e3 * seconds / rounds:.1f}",
                    *(f"{m:.4f}" for m in means),
                    diff,
                ]
            )
        seeds = sorted({r.seed for r in runs if r.data == data})
        n = len(_pooled(next(iter(of.values())), 10))
        lines.append(
            f"### {data}, folds {', '.join(map(str, folds))} ({n} test queries with a relevant "
            f"document)"
            + (
                ""
                if len(seeds) == 1
                else f", seeds {', '.join(map(str, seeds))}: NDCG is each query's mean "
                f"over the seeds, times and rounds add up over them"
            )
            + "\n"
        )
        lines.append(
            markdown_table(
                [
                    "method",
                    "s to kept model",
                    f"x {REFERENCE}",
                    "worst training",
                    "rounds run",
                    "kept rounds",
                    "ms/round",
                    "NDCG@5",
                    "NDCG@10",
                    f"NDCG@10 - {REFERENCE}",
                ],
                table,
            )
        )
        summary = _summary(of, ref)
        if summary:
            lines.append(
                "\nSummary: NDCG@10 minus the booster's own LambdaMART, paired per query (each "
                "query's mean over the seeds), the seed whose own difference is lowest, the "
                "spread (max - min) of the seeds' differences, and the time to the kept model "
                f"as a multiple of {REFERENCE}'s:\n"
            )
            lines.append(
                markdown_table(
                    [
                        "method",
                        "own LambdaMART",
                        "NDCG@10 - own LambdaMART",
                        "worst seed",
                        "spread of seeds",
                        f"x {REFERENCE}",
                    ],
                    summary,
                )
            )
        own = []
        for row, rs in of.items():
            base = _own_lambdamart(rs[0].method)
            if METHODS[rs[0].method].objective == PLRANK and base in of and base != REFERENCE:
                own.append([row, base, *(_verdict(_versus(rs, of[base], c)) for c in CUTOFFS)])
        if own:
            lines.append("\nAgainst the booster's own LambdaMART, paired:\n")
            lines.append(markdown_table(["method", "minus", "NDCG@5", "NDCG@10"], own))
        lines += quality_time_section(of)
        if len(seeds) > 1:
            lines += _seed_tables(of, ref, seeds)
        lines.append("")
    return "\n".join(lines)


def _seed_tables(of: dict[str, list[Run]], ref: list[Run] | None, seeds: list[int]) -> list[str]:
    """Each seed's pooled NDCG@10 difference against rank:ndcg and against the booster's own
    LambdaMART, with their spread, and the spread of the kept rounds across seeds (where a fold
    has several)."""
    lines = []
    heads = [*(f"seed {s}" for s in seeds), "spread"]
    if ref is not None:
        lines.append(
            f"\nEach seed alone, NDCG@10 minus {REFERENCE} of the same seed, and the "
            "spread (max - min) of those differences:\n"
        )
        lines.append(
            markdown_table(
                ["method", *heads],
                _seed_table(of, {row: REFERENCE for row in of if row != REFERENCE}, seeds),
            )
        )
    own = {row: _own_lambdamart(rs[0].method) for row, rs in of.items()}
    own = {row: base for row, base in own.items() if base not in (row, REFERENCE) and base in of}
    if own:
        lines.append(
            "\nEach seed alone, NDCG@10 minus the booster's own LambdaMART of the same "
            "seed (where it is not " + REFERENCE + "):\n"
        )
        lines.append(
            markdown_table(
                ["method", "minus", *heads],
                [[row, own[row], *cells] for row, *cells in _seed_table(of, own, seeds)],
            )
        )
    folds = sorted({r.fold for rs in of.values() for r in rs})
    if all(len({r.seed for r in rs if r.fold == f}) < 2 for rs in of.values() for f in folds):
        return lines  # one seed per fold (a deep-query draw is its own seed): no spread to show
    lines.append(
        "\nKept rounds across seeds: their spread (max - min) in each fold, and its "
        "mean over the folds:\n"
    )
    lines.append(
        markdown_table(
            ["method", *(f"fold {f}" for f in folds), "mean"],
            [
                [
                    row,
                    *(spreads.get(f, "") for f in folds),
                    f"{np.mean(list(spreads.values())):.1f}",
                ]
                for row, spreads in ((row, kept_round_spreads(rs)) for row, rs in of.items())
            ],
        )
    )
    return lines


def _items(text: str) -> list[str]:
    return [t for t in text.split(",") if t]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data",
        default="mq2008,mq2007-agg",
        help="bundled datasets or LETOR folders, comma-separated",
    )
    parser.add_argument("--folds", type=int_list, default=[1, 2, 3, 4, 5])
    parser.add_argument("--methods", default=",".join(METHOD_NAMES))
    parser.add_argument(
        "--stopping",
        default="",
        help="extra PL-Rank rows stopped on these metrics (policy, ranking)",
    )
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
        choices=tuple(TREES),
        default="harness",
        help="tree settings: the harness's shared ones, or each library's own "
        "defaults (same rounds cap and patience)",
    )
    parser.add_argument(
        "--min-delta",
        type=float,
        default=0.0,
        help="every method's early stopping: a round is the best only when it "
        "beats the best validation value by more than this",
    )
    parser.add_argument(
        "--patience-rate",
        type=float,
        default=PATIENCE_RATE,
        help="every method's early stopping: the patience grows to this times the best "
        f"round when that is longer (default {PATIENCE_RATE:g}; 0 a fixed patience)",
    )
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--seeds",
        type=int_list,
        default=[0],
        help="seeds, comma-separated: each method trains once per seed",
    )
    parser.add_argument("--out", default="benchmarks/results/time_to_model.md")
    parser.add_argument(
        "--report-only",
        action="store_true",
        help="train nothing: write the tables of the records beside --out",
    )
    args = parser.parse_args(argv)
    out = Path(args.out)
    records = out.with_suffix(".jsonl")
    if args.report_only:
        runs = read_runs(records)
        command = command_line("python benchmarks/time_to_model.py", argv)
        markdown = report(runs, command) + (
            f"\nThe {len(runs)} trainings recorded in `{records.name}`; "
            f"{sum(r.seconds for r in runs):.0f} s of training.\n"
        )
        out.write_text(markdown)
        print(markdown)
        return
    datasets, folds = _items(args.data), args.folds
    if len(set(args.seeds)) != len(args.seeds):
        parser.error(f"--seeds must be distinct, but {','.join(map(str, args.seeds))} repeats one.")
    check_data(datasets, folds)
    try:
        check_parameter("min_delta", args.min_delta)
    except ValueError as error:
        parser.error(f"--min-delta: {error}")
    try:
        check_parameter("patience_rate", args.patience_rate)
    except ValueError as error:
        parser.error(f"--patience-rate: {error}")
    variants = {}
    for v in (v for v in args.plrank.split(";") if v):
        try:
            variants[v] = plrank_variant(v)
        except ValueError as error:  # pydantic's ValidationError is one
            parser.error(f"--plrank {v!r}: {error}")
    methods = []
    for name in _items(args.methods):
        if name not in METHODS:
            parser.error(f"--methods must name harness methods, but {name!r} is not one.")
        if _compat.is_installed(METHODS[name].library):
            methods.append(name)
        else:
            print(f"skipped {name}: {METHODS[name].library} is not installed")
    out.parent.mkdir(parents=True, exist_ok=True)
    records.write_text("")
    start = time.perf_counter()
    runs = run(
        datasets=datasets,
        folds=folds,
        methods=methods,
        stoppings=_items(args.stopping),
        k=args.k,
        trees=args.trees,
        rounds=args.rounds,
        n_jobs=args.threads,
        seeds=tuple(args.seeds),
        records=records,
        variants=variants,
        min_delta=args.min_delta,
        patience_rate=args.patience_rate,
    )
    wall = time.perf_counter() - start
    command = command_line("python benchmarks/time_to_model.py", argv)
    markdown = report(runs, command) + (
        f"\nOne process, {args.threads} threads per training; the whole run took {wall:.0f} s.\n"
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
