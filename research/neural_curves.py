"""Learning curves without early stopping: the PL-Rank network's epochs against boosting rounds.

The 2024 paper's Figures 2-3: trained on past their best, neural networks peak early and then
degrade, while GBDTs keep improving. Every method trains through the comparison harness's own
training path (:func:`gbdt_plrank.harness.train` with ``test_curve=True``, which also scores
the test split after every round, the data of ``gbdt-plrank compare``: test queries without a
relevant document left out) with a patience as long as the run, so that no run stops early:
``plrank-nn`` (:class:`~gbdt_plrank.nn.PLRankMLPRanker`'s defaults) for ``--epochs`` epochs,
``plrank-xgb``, ``plrank-xgb-nohess`` and ``lambdamart-xgb`` (the trees of
``configs/headline.toml``: eta 0.05, depth 6, min_child_weight 0.1, lambda 1) for ``--rounds``
rounds. The curves are NDCG@K of the ranking by score after each epoch or round, averaged over
the folds run; the table reads them at the validation curve's peak (what early stopping would
keep) and at the end.

Finished trainings are appended to ``OUT.jsonl`` as they end, so a rerun resumes.

    python -m research.neural_curves --data mq2008 mq2007-agg --folds 1,2,3,4,5 1 \\
        --epochs 500 --rounds 1000 --out benchmarks/results/neural/learning_curves.md
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import harness
from gbdt_plrank.harness import PLRankSettings, TreeSettings, train
from gbdt_plrank.harness.data import load

NETWORK = "plrank-nn"
TREES = ("plrank-xgb", "plrank-xgb-nohess", "lambdamart-xgb")
PLRANK = PLRankSettings(N=100)  # configs/headline.toml's [plrank]


def run(method: str, data: Any, *, k: int, rounds: int) -> dict[str, Any]:
    """One training without early stopping: its validation and test NDCG@k after every round."""
    trees = TreeSettings(rounds=rounds, early_stopping_rounds=rounds, n_jobs=1)
    params = {"progress": False} if method == NETWORK else None
    start = time.perf_counter()
    fit = train(
        method, data, k=k, seed=0, trees=trees, plrank=PLRANK, params=params, test_curve=True
    )
    assert fit.test_history is not None
    name = f"ndcg@{k}"
    return {
        "vali": fit.history[name].tolist(),
        "test": fit.test_history[name].tolist(),
        "seconds": time.perf_counter() - start,
    }


def mean_curves(records: list[dict[str, Any]]) -> tuple[np.ndarray, np.ndarray]:
    """Validation and test curves averaged over the records (folds)."""
    return (
        np.mean([r["vali"] for r in records], axis=0),
        np.mean([r["test"] for r in records], axis=0),
    )


def table(
    done: dict[tuple[Any, ...], dict[str, Any]], data: str, k: int, folds: list[int]
) -> list[str]:
    """One row per method with every fold done: the mean curves at their peak and at the end."""
    lines = [
        f"| method | runs | peak validation NDCG@{k} (at) | test there | validation at the end "
        f"| test at the end | test: end minus peak | s per run |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for method in (NETWORK, *TREES):
        records = [done[data, method, f] for f in folds if (data, method, f) in done]
        if len(records) < len(folds):
            continue
        vali, test = mean_curves(records)
        best = int(np.argmax(vali))
        lines.append(
            f"| {method} | {len(records)} | {vali[best]:.4f} ({best + 1}) | {test[best]:.4f} "
            f"| {vali[-1]:.4f} | {test[-1]:.4f} | {test[-1] - test[best]:+.4f} "
            f"| {np.mean([r['seconds'] for r in records]):.0f} |"
        )
    return lines


def plot(done, datasets: list[str], folds: dict[str, list[int]], k: int, path: Path) -> None:
    """Rows: datasets; left the network over epochs, right the GBDTs over rounds (if they ran)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 3.8 * len(datasets)), layout="constrained")
    axes = fig.subplots(len(datasets), 2, squeeze=False, sharey="row")
    for row, data in enumerate(datasets):
        for col, (methods, unit) in enumerate((((NETWORK,), "epoch"), (TREES, "boosting round"))):
            ax = axes[row, col]
            for i, method in enumerate(methods):
                records = [done[data, method, f] for f in folds[data] if (data, method, f) in done]
                if len(records) < len(folds[data]):
                    continue
                vali, test = mean_curves(records)
                x = np.arange(1, vali.shape[0] + 1)
                color = f"C{i + col}"
                ax.plot(x, vali, color=color, label=f"{method} validation")
                ax.plot(x, test, color=color, linestyle="--", label=f"{method} test")
            if not ax.lines:  # no method of this panel ran on every fold
                ax.set_axis_off()
                continue
            fold_list = ",".join(map(str, folds[data]))
            ax.set(title=f"{Path(data).name}, folds {fold_list}", xlabel=unit, ylabel=f"NDCG@{k}")
            ax.grid(alpha=0.3)
            ax.legend(fontsize="small")
    fig.suptitle(f"NDCG@{k} without early stopping (solid: validation, dashed: test)")
    fig.savefig(path, dpi=110)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", nargs="+", default=["mq2008", "mq2007-agg"])
    parser.add_argument(
        "--folds",
        nargs="+",
        default=["1,2,3,4,5", "1"],
        help="folds of each dataset, comma-separated, in the order of --data",
    )
    parser.add_argument(
        "--methods",
        nargs="+",
        choices=(NETWORK, *TREES),
        default=[NETWORK, *TREES],
        help="methods to train (the tables and the "
        "figure show every method of the log with all the folds)",
    )
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--epochs", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument(
        "--out", type=Path, default=Path("benchmarks/results/neural/learning_curves.md")
    )
    args = parser.parse_args(argv)
    if len(args.folds) != len(args.data):
        parser.error(
            f"--folds needs one list per dataset ({len(args.data)}), "
            f"but {len(args.folds)} are given"
        )
    folds = {d: [int(f) for f in spec.split(",")] for d, spec in zip(args.data, args.folds)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    log = args.out.with_suffix(".jsonl")
    done = {
        (r["data"], r["method"], r["fold"]): r
        for r in harness.read_records(log)
        if r["k"] == args.k
        and r["rounds"] == (args.epochs if r["method"] == NETWORK else args.rounds)
    }
    for data_name in args.data:
        for fold in folds[data_name]:
            data = load(data_name, fold, drop_empty_test_queries=True)
            for method in args.methods:
                if (data_name, method, fold) in done:
                    continue
                rounds = args.epochs if method == NETWORK else args.rounds
                record = {
                    "data": data_name,
                    "method": method,
                    "fold": fold,
                    "k": args.k,
                    "rounds": rounds,
                    **run(method, data, k=args.k, rounds=rounds),
                }
                harness.append_record(log, record)
                done[data_name, method, fold] = record
                print(f"{data_name} fold {fold} {method}: {record['seconds']:.0f} s", flush=True)
    command = harness.command_line("python -m research.neural_curves", argv)
    figure = args.out.with_suffix(".png")
    plot(done, args.data, folds, args.k, figure)
    parts = [
        "# Learning curves without early stopping",
        "",
        f"Last command: `{command}`. The tables cover every training of the log (the "
        f"`.jsonl` file of the same name), whichever run added it.",
        "",
        __doc__.split("\n\n")[1].replace("\n", " "),
        "",
        f"Network: {args.epochs} epochs; trees: {args.rounds} rounds; seed 0; K = "
        f"{args.k}. Figure: `{figure.name}` (solid validation, dashed test). Peak: the epoch or "
        f"round where the fold-averaged validation curve is highest.",
        "",
    ]
    for data_name in args.data:
        parts += [
            f"## {Path(data_name).name}, folds {folds[data_name]}",
            "",
            *table(done, data_name, args.k, folds[data_name]),
            "",
        ]
    args.out.write_text("\n".join(parts), encoding="utf-8")


if __name__ == "__main__":
    main()
