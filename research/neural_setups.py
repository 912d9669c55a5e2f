"""Choose the PL-Rank network's defaults among the papers' setups, on VALIDATION splits only.

Every candidate trains the harness method ``plrank-nn`` through the comparison harness's own
training path (:func:`gbdt_plrank.harness.train`: the policy's validation expected NDCG@K is
what early stopping watches, the best epoch's weights are kept) with its network options and
PL-Rank's ``N`` as the method's native parameters, at most ``--epochs`` epochs with patience
``--patience`` (the 2024 paper tuned with 200 and 20). Its validation scores at the best epoch
give every validation query's NDCG@K; the validation queries of all folds pool (each is a
validation query once across the five LETOR folds) and every candidate is paired per query with
the current defaults (:func:`gbdt_plrank.harness.stats.paired`, the comparison report's test).
The policy's expected NDCG@K at the best epoch is averaged over the folds. Test splits are never
scored. Both values are read at the epoch early stopping chose on validation, so both flatter
every candidate a little, alike.

Finished trainings are appended to ``OUT.jsonl`` as they end, so a rerun resumes.

    python -m research.neural_setups --data mq2008 mq2007-agg --folds 1,2,3,4,5 1,2 \\
        --out benchmarks/results/nn_setups.md
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import harness
from gbdt_plrank import nn
from gbdt_plrank.datasets import load_dataset
from gbdt_plrank.harness import TreeSettings, train
from gbdt_plrank.harness.stats import paired
from gbdt_plrank.metrics import ndcg

#: Candidate name -> the native parameters of ``plrank-nn`` (network options, ``plrank.N``).
#: ``defaults`` is :class:`~gbdt_plrank.nn.PLRankMLPRanker` as shipped; the others vary one or
#: two of its choices towards the papers' setups (the 2024 code: SGD at lr 0.00113, 64 queries
#: a step, N = 200; PL-Rank-3: 2 x 32 sigmoid units, 256 queries a step), or to the boosted
#: trees' N = 50.
SETUPS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "adam lr 0.003": {"lr": 0.003},
    "adam batch 64": {"batch_size": 64},
    "adam N 50": {"plrank": {"N": 50}},
    "adam N 200": {"plrank": {"N": 200}},
    "sgd lr 0.00113, batch 64, N 200": {
        "optimizer": "sgd",
        "lr": 0.00113,
        "batch_size": 64,
        "plrank": {"N": 200},
    },
    "sgd lr 0.01, batch 64": {"optimizer": "sgd", "lr": 0.01, "batch_size": 64},
}
REFERENCE = "defaults"


def run(name: str, data: Any, *, k: int, epochs: int, patience: int) -> dict[str, Any]:
    """One training of candidate ``name``: its validation values at the best epoch."""
    trees = TreeSettings(rounds=epochs, early_stopping_rounds=patience, n_jobs=1)
    params = {"progress": False, **SETUPS[name]}
    start = time.perf_counter()
    fit = train("plrank-nn", data, k=k, seed=0, trees=trees, params=params)
    seconds = time.perf_counter() - start
    vali = data.vali
    per_query = ndcg(vali.y, fit.vali_scores, vali.qid, k=k, per_query=True)
    return {
        "qid": np.unique(vali.qid).tolist(),
        "ndcg": per_query.tolist(),
        "expected": float(fit.history[fit.watched][fit.best_round - 1]),
        "best_epoch": int(fit.best_round),
        "seconds": seconds,
    }


def table(
    done: dict[tuple[Any, ...], dict[str, Any]], data: str, k: int, folds: list[int]
) -> list[str]:
    """The rows of one dataset: each candidate with all folds done, paired with the defaults."""
    runs = {
        name: [done[data, k, name, f] for f in folds]
        for name in SETUPS
        if all((data, k, name, f) in done for f in folds)
    }
    if REFERENCE not in runs:
        return []
    pooled = {
        name: {(r["fold"], q): v for r in rs for q, v in zip(r["qid"], r["ndcg"], strict=True)}
        for name, rs in runs.items()
    }
    lines = [
        f"| setup | validation NDCG@{k} | expected NDCG@{k} | minus {REFERENCE} [95% CI] | p "
        f"| verdict | best epoch | s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, rs in runs.items():
        cells = [
            name,
            f"{np.mean(list(pooled[name].values())):.4f}",
            f"{np.mean([r['expected'] for r in rs]):.4f}",
        ]
        r = paired(pooled[name], pooled[REFERENCE]) if name != REFERENCE else None
        cells += ["", "", ""] if r is None else [r.interval, f"{r.p_randomization:.3g}", r.verdict]
        cells += [
            f"{np.mean([r['best_epoch'] for r in rs]):.0f}",
            f"{np.mean([r['seconds'] for r in rs]):.1f}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def report(
    done, folds: dict[str, list[int]], k: int, command: str, epochs: int, patience: int
) -> str:
    defaults = nn.PLRankMLPRanker()
    parts = [
        "# The PL-Rank network's setups on validation",
        "",
        f"Last command: `{command}`. The tables cover every training of the log (the "
        f"`.jsonl` file of the same name), whichever run added it.",
        "",
        __doc__.split("\n\n")[1].replace("\n", " "),
        "",
        f"At most {epochs} epochs, patience {patience}, seed 0, K = {k}. "
        f"`defaults`: {defaults.n_layers} {defaults.activation} layers of {defaults.units} units, "
        f"{defaults.optimizer} at lr {defaults.lr:g}, {defaults.batch_size} queries a step, "
        f"N = {defaults._options().training_N}; each other setup changes what its name says. "
        f"Validation NDCG@{k}: "
        f"mean over the pooled validation queries (a query without relevant documents scores 1). "
        f"Expected NDCG@{k}: the policy's, what early stopping watched, mean over folds. Paired: "
        f"mean per-query difference with the defaults, its 95% CI, the randomization test's p "
        f"and verdict at 0.05. s: seconds per training.",
        "",
    ]
    for data, data_folds in folds.items():
        lines = table(done, data, k, data_folds)
        if lines:
            parts += [f"## {Path(data).name}, folds {data_folds}", "", *lines, ""]
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", nargs="+", default=["mq2008", "mq2007-agg"])
    parser.add_argument(
        "--folds",
        nargs="+",
        default=["1,2,3,4,5", "1,2,3,4,5"],
        help="folds of each dataset, comma-separated, in the order of --data",
    )
    parser.add_argument("--setups", nargs="+", choices=list(SETUPS), default=list(SETUPS))
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--epochs", type=int, default=200)
    parser.add_argument("--patience", type=int, default=20)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/nn_setups.md"))
    args = parser.parse_args(argv)
    if len(args.folds) != len(args.data):
        parser.error(
            f"--folds needs one list per dataset ({len(args.data)}), "
            f"but {len(args.folds)} are given"
        )
    folds = {d: [int(f) for f in spec.split(",")] for d, spec in zip(args.data, args.folds)}
    log = args.out.with_suffix(".jsonl")
    done = {(r["data"], r["k"], r["name"], r["fold"]): r for r in harness.read_records(log)}
    for data_name in args.data:
        for fold in folds[data_name]:
            data = load_dataset(data_name, fold=fold)
            for name in args.setups:
                if (data_name, args.k, name, fold) in done:
                    continue
                record = {
                    "data": data_name,
                    "k": args.k,
                    "name": name,
                    "fold": fold,
                    **run(name, data, k=args.k, epochs=args.epochs, patience=args.patience),
                }
                harness.append_record(log, record)
                done[data_name, args.k, name, fold] = record
                print(
                    f"{data_name} fold {fold} {name}: best epoch {record['best_epoch']}, "
                    f"{record['seconds']:.0f} s",
                    flush=True,
                )
    command = harness.command_line("python -m research.neural_setups", argv)
    args.out.write_text(
        report(done, folds, args.k, command, args.epochs, args.patience),
        encoding="utf-8",
    )


if __name__ == "__main__":
    main()
