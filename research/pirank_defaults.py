"""Choose PiRank's default Hessian mode and temperature on VALIDATION splits, paired over queries.

Every candidate (Hessian mode, tau) trains the harness methods ``pirank-xgb`` and ``pirank-lgb``
through the comparison harness's own training path (:func:`gbdt_plrank.harness.train`, the
harness's default tree settings: eta 0.05, depth 6 / 31 leaves, min_child_weight 0.1, lambda 1,
early stopping after 50 rounds without gain in validation NDCG@K, at most 1000 rounds) on every
requested LETOR fold, next to the library's own LambdaMART / LambdaRank (``lambdamart-xgb``,
``lambdarank-lgb``). A callback records each validation query's NDCG@K after every round, and
each query is read at the round that is best on the other half of its fold's validation queries
(cross-fitting, :func:`research.levers.cross_fitted`: the early stopper's own best round
flatters noisy curves). The validation queries of all folds pool (each is a validation query once
across the five folds); candidates are paired per query with the comparison report's statistics
(:func:`gbdt_plrank.harness.stats.paired`). Test splits are never read. Validation queries without
a relevant document are left out (they score the same under every ranker).

PiRank and the trees are deterministic (no subsampling), so one seed is all there is. Finished
trainings are appended to ``OUT.jsonl`` as they end, so a rerun resumes.

    nice -n 10 python -m research.pirank_defaults --data mq2008 \\
        --out benchmarks/results/pirank_defaults_mq2008.md
"""

from __future__ import annotations

import argparse
import itertools
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import harness
from gbdt_plrank._training.pirank_objective import PIRANK_HESSIANS
from gbdt_plrank.datasets import Split, load_dataset
from gbdt_plrank.harness import METHODS, PiRankSettings, TreeSettings, train
from gbdt_plrank.harness.stats import paired
from gbdt_plrank.metrics import ndcg
from research.levers import cross_fitted

TREES = TreeSettings(n_jobs=1)
TAUS = (0.1, 0.3, 1.0, 3.0, 10.0)
PIRANK = {"xgboost": "pirank-xgb", "lightgbm": "pirank-lgb"}
#: Each library's own LambdaMART, trained beside the candidates.
LAMBDAMART = {"xgboost": "lambdamart-xgb", "lightgbm": "lambdarank-lgb"}


class Recorder:
    """Per-query validation NDCG@k after every round, from each round's newest tree."""

    def __init__(self, split: Split, k: int) -> None:
        self.split, self.k = split, k
        self.margin = np.zeros(split.y.shape[0])
        self.curves: list[np.ndarray] = []

    def add(self, tree_margin: np.ndarray) -> None:
        self.margin += tree_margin
        s = self.split
        self.curves.append(ndcg(s.y, self.margin, s.qid, k=self.k, per_query=True, empty=np.nan))

    def callback(self, library: str) -> Any:
        """The library's per-round callback that feeds :meth:`add`."""
        X = self.split.X
        if library == "lightgbm":
            return lambda env: self.add(
                env.model.predict(X, start_iteration=env.iteration, num_iteration=1, raw_score=True)
            )
        import xgboost

        dvali, add = xgboost.DMatrix(X), self.add

        class Callback(xgboost.callback.TrainingCallback):
            def after_iteration(self, model: Any, epoch: int, evals_log: Any) -> bool:
                add(model.predict(dvali, iteration_range=(epoch, epoch + 1), output_margin=True))
                return False

        return Callback()


def run(method: str, data: Any, *, k: int, fold: int, hessian: str | None, tau: float | None):
    """One training; every validation query's NDCG@k, cross-fitted and at the best round."""
    recorder = Recorder(data.vali, k)
    settings = PiRankSettings() if hessian is None else PiRankSettings(tau=tau, hessian=hessian)
    start = time.perf_counter()
    fit = train(
        method,
        data,
        k=k,
        seed=0,
        trees=TREES,
        pirank=settings,
        callbacks=[recorder.callback(METHODS[method].library)],
    )
    seconds = time.perf_counter() - start
    curves = np.asarray(recorder.curves)
    kept = ~np.isnan(curves[0])
    return {
        "qid": np.unique(data.vali.qid)[kept].tolist(),
        "xfit": cross_fitted(curves[:, kept], seed=fold).tolist(),
        "best": curves[fit.best_round - 1, kept].tolist(),
        "best_round": int(fit.best_round),
        "seconds": seconds,
    }


def candidate_name(hessian: str | None, tau: float | None, library: str) -> str:
    return LAMBDAMART[library] if hessian is None else f"{hessian}, tau {tau:g}"


def _load(path: Path) -> dict[tuple[Any, ...], dict[str, Any]]:
    return {
        (r["data"], r["library"], r["k"], r["name"], r["fold"]): r
        for r in harness.read_records(path)
    }


def _pooled(runs: list[dict[str, Any]], field: str) -> dict[tuple[int, int], float]:
    return {(r["fold"], q): v for r in runs for q, v in zip(r["qid"], r[field], strict=True)}


def _cell_runs(done, data: str, library: str, k: int, folds: list[int]):
    """Candidate -> its runs on ``folds`` in one (library, k) cell, for those with every fold done.

    Every candidate of the log takes part, whichever run added it.
    """
    names = dict.fromkeys(n for (d, lib, kk, n, _) in done if (d, lib, kk) == (data, library, k))
    return {
        n: [done[data, library, k, n, f] for f in folds]
        for n in names
        if all((data, library, k, n, f) in done for f in folds)
    }


def cell_table(done, data: str, library: str, k: int, folds: list[int]):
    """Rows of one (library, k) cell: each candidate paired with the cell's best and LambdaMART."""
    runs = _cell_runs(done, data, library, k, folds)
    if LAMBDAMART[library] not in runs or len(runs) < 2:
        return [], {}
    pooled = {n: _pooled(r, "xfit") for n, r in runs.items()}
    means = {n: float(np.mean(list(v.values()))) for n, v in pooled.items()}
    best = max((n for n in means if n != LAMBDAMART[library]), key=means.get)
    lines = [
        f"| candidate | NDCG@{k} | minus {best} [95% CI] | p | verdict | minus "
        f"{LAMBDAMART[library]} [95% CI] | p | verdict | best round | s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name in sorted(means, key=means.get, reverse=True):
        cells = [name, f"{means[name]:.4f}"]
        for ref in (best, LAMBDAMART[library]):
            r = paired(pooled[name], pooled[ref]) if ref != name else None
            cells += (
                ["", "", ""] if r is None else [r.interval, f"{r.p_randomization:.3g}", r.verdict]
            )
        cells += [
            f"{np.mean([r['best_round'] for r in runs[name]]):.0f}",
            f"{np.mean([r['seconds'] for r in runs[name]]):.1f}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines, means


def report(done, data: str, libraries, ks, folds, command: str, versus: str | None) -> str:
    parts = [
        f"# PiRank defaults on validation: {data}, folds {folds}",
        "",
        f"Last command: `{command}`. The tables cover every candidate of the log "
        f"(`{data}` in the `.jsonl` file beside this one), whichever run added it.",
        "",
        __doc__.split("\n\n")[1].replace("\n", " "),
        "",
        "Per-query validation NDCG@K, cross-fitted, pooled over the folds. Each candidate is "
        "paired with the cell's best candidate and with the library's LambdaMART: mean "
        "difference [95% CI], paired randomization p and its verdict at 0.05.",
        "",
    ]
    overall: dict[str, list[float]] = {}
    for library, k in itertools.product(libraries, ks):
        lines, means = cell_table(done, data, library, k, folds)
        if not lines:
            continue
        parts += [f"## {PIRANK[library]}, NDCG@{k}", "", *lines, ""]
        for name, mean in means.items():
            if name not in LAMBDAMART.values():
                overall.setdefault(name, []).append(mean)
    cells = max((len(v) for v in overall.values()), default=0)
    ranked = sorted(
        (n for n, v in overall.items() if len(v) == cells), key=lambda n: -np.mean(overall[n])
    )
    parts += [
        f"## Mean over the {cells} cells",
        "",
        "| candidate | mean validation NDCG@K |",
        "|---|---|",
        *[f"| {n} | {np.mean(overall[n]):.4f} |" for n in ranked],
        "",
    ]
    if ranked:
        reference = versus if versus in ranked else ranked[0]
        others = [n for n in ranked if n != reference]
        parts += head_to_head(done, data, libraries, ks, folds, reference, others)
    return "\n".join(parts)


def head_to_head(
    done, data: str, libraries, ks, folds, winner: str, others: list[str]
) -> list[str]:
    """Candidate ``winner`` against each of ``others``, paired per query in every cell."""
    cells = list(itertools.product(libraries, ks))
    runs = {cell: _cell_runs(done, data, *cell, folds) for cell in cells}
    lines = [
        f"## {winner} against each candidate, per cell",
        "",
        f"Mean paired difference ({winner} minus the row) of cross-fitted validation NDCG@K, "
        "with the randomization test's verdict for the row's side.",
        "",
        "| candidate | " + " | ".join(f"{PIRANK[lib]} @{k}" for lib, k in cells) + " |",
        "|---" * (len(cells) + 1) + "|",
    ]
    for name in others:
        row = []
        for cell in cells:
            r = paired(_pooled(runs[cell][winner], "xfit"), _pooled(runs[cell][name], "xfit"))
            row.append(f"{r.mean:+.4f} ({r.verdict})")
        lines.append(f"| {name} | " + " | ".join(row) + " |")
    return [*lines, ""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default="mq2008")
    parser.add_argument("--folds", default="1,2,3,4,5")
    parser.add_argument("--k", default="5,10")
    parser.add_argument("--libraries", default="xgboost,lightgbm")
    parser.add_argument("--modes", default=",".join(PIRANK_HESSIANS))
    parser.add_argument("--taus", default=",".join(f"{t:g}" for t in TAUS))
    parser.add_argument("--out", default="benchmarks/results/pirank_defaults.md")
    parser.add_argument(
        "--versus", help="the candidate paired with every other one (default: the best mean)"
    )
    args = parser.parse_args()
    folds = [int(f) for f in args.folds.split(",")]
    ks = [int(k) for k in args.k.split(",")]
    libraries = args.libraries.split(",")
    grid = [(m, float(t)) for m in args.modes.split(",") for t in args.taus.split(",")]
    out = Path(args.out)
    log = out.with_suffix(".jsonl")
    done = _load(log)
    command = harness.command_line("nice -n 10 python -m research.pirank_defaults")

    for fold in folds:
        ds = load_dataset(args.data, fold=fold)
        for library, k in itertools.product(libraries, ks):
            for hessian, tau in [(None, None), *grid]:
                name = candidate_name(hessian, tau, library)
                key = (args.data, library, k, name, fold)
                if key in done:
                    continue
                method = PIRANK[library] if hessian is not None else LAMBDAMART[library]
                r = {"data": args.data, "library": library, "k": k, "name": name, "fold": fold}
                r |= run(method, ds, k=k, fold=fold, hessian=hessian, tau=tau)
                harness.append_record(log, r)
                done[key] = r
                print(
                    f"{args.data} fold {fold} {library} @{k} {name}: round {r['best_round']} "
                    f"{r['seconds']:.1f}s xfit {np.mean(r['xfit']):.4f}",
                    flush=True,
                )
    text = report(done, args.data, libraries, ks, folds, command, args.versus)
    out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
