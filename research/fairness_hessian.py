"""Choose the Hessian of the fairness objective on VALIDATION splits, paired over queries.

For every fold, Hessian mode and fairness weight, PL-Rank with ``fairness="expected-exposure"``
trains through the comparison harness (:func:`gbdt_plrank.harness.training.train`, the harness's
tree settings) and is early-stopped on its policy's validation objective, expected NDCG@10 minus
the weight times EE-L (:class:`gbdt_plrank._training.evaluation.PolicyEvaluator`). The
validation queries (with a relevant document) are split in two halves A and B by query id; the
round is chosen on one half and the other half is read at that round (cross-fitting: the best
round of a noisy curve flatters it on the queries that chose it). Each held-out query's objective
comes from :func:`gbdt_plrank.harness.policy_eval.evaluate_policy` (1000 rankings). Queries pool
over the folds (each is a validation query once) and every mode is compared with ``abs`` by the
report's paired tests (:func:`gbdt_plrank.harness.stats.paired`). Test splits are never read.

Finished trainings are appended to a JSON-lines file, so a rerun resumes.

    nice -n 10 python research/fairness_hessian.py --data mq2008 \\
        --out benchmarks/results/fairness_hessian_mq2008.md
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import xgboost as xgb

from gbdt_plrank._ranking_metric import RankingMetric
from gbdt_plrank._training.evaluation import PolicyEvaluator
from gbdt_plrank._training.fairness_spec import FairnessSpec
from gbdt_plrank.datasets import Split
from gbdt_plrank.harness.data import load, without_empty_queries
from gbdt_plrank.harness.policy_eval import evaluate_policy
from gbdt_plrank.harness.settings import PLRankSettings, TreeSettings
from gbdt_plrank.harness.stats import paired
from gbdt_plrank.harness.training import train

K = 10
MODES = ("abs", "clip", "constant", "raw")
SAMPLES, STOP_SAMPLES = 1000, 100


def _halves(split: Split) -> tuple[Split, Split]:
    """The split's queries with even / odd rank of their query id."""
    ids = np.unique(split.qid)
    first = np.isin(split.qid, ids[::2])
    return (
        Split(split.X[first], split.y[first], split.qid[first]),
        Split(split.X[~first], split.y[~first], split.qid[~first]),
    )


class _HalfStopper:
    """The round of the best validation objective on ``chosen``; ``other``'s margins there."""

    def __init__(
        self,
        chosen: Split,
        other: Split,
        *,
        weight: float,
        patience: int,
        seed: int,
        n_jobs: int | None,
    ) -> None:
        self.value = PolicyEvaluator(
            RankingMetric("ndcg", K, "exp"),
            FairnessSpec("expected-exposure", weight),
            chosen,
            n_samples=STOP_SAMPLES,
            seed=seed,
            n_jobs=n_jobs,
        )
        self.chosen, self.other = xgb.DMatrix(chosen.X), xgb.DMatrix(other.X)
        self.patience = patience
        self.best_value, self.best_round = -np.inf, 0
        self.margins: np.ndarray | None = None

    def after_round(self, model: Any, epoch: int) -> bool:
        margins = np.asarray(model.predict(self.chosen, output_margin=True), dtype=np.float64)
        value = float(self.value.per_query(margins).mean())
        if value > self.best_value:
            self.best_value, self.best_round = value, epoch + 1
            self.margins = np.asarray(model.predict(self.other, output_margin=True), np.float64)
        return epoch + 1 - self.best_round >= self.patience


def run(data: str, fold: int, mode: str, weight: float, seed: int, trees: TreeSettings) -> dict:
    dataset = load(data, fold, drop_empty_test_queries=True)
    vali = without_empty_queries(dataset.vali)
    a, b = _halves(vali)
    stoppers = [
        _HalfStopper(
            chosen,
            other,
            weight=weight,
            patience=trees.early_stopping_rounds,
            seed=11 + seed,
            n_jobs=trees.n_jobs,
        )
        for chosen, other in ((a, b), (b, a))
    ]

    class BothStopped(xgb.callback.TrainingCallback):  # both have run out of patience
        def after_iteration(self, model: Any, epoch: int, evals_log: Any) -> bool:
            return all([s.after_round(model, epoch) for s in stoppers])

    params = {
        "plrank": {"fairness": "expected-exposure", "fairness_weight": weight, "hessian": mode}
    }
    start = time.perf_counter()
    no_harness_stop = trees.model_copy(update={"early_stopping_rounds": trees.rounds})
    train(
        "plrank-xgb",
        dataset,
        k=K,
        seed=seed,
        trees=no_harness_stop,
        plrank=PLRankSettings(stopping_metric="ranking"),
        params=params,
        callbacks=[BothStopped()],
    )
    out: dict[str, Any] = {"qid": [], "objective": [], "ndcg": [], "ee_l": [], "rounds": []}
    for stopper, held_out in zip(stoppers, (b, a)):
        v = evaluate_policy(
            stopper.margins, held_out, k=K, n_samples=SAMPLES, seed=7, n_jobs=trees.n_jobs
        )
        out["qid"] += [f"{fold}:{q}" for q in v.qid]
        out["ndcg"] += v.ndcg.tolist()
        out["ee_l"] += v.values["ee_l"].tolist()
        out["objective"] += (v.ndcg - weight * v.values["ee_l"]).tolist()
        out["rounds"].append(stopper.best_round)
    out["seconds"] = time.perf_counter() - start
    return out


def report(done: dict, data: str, weights: list[float], command: str) -> str:
    lines = [
        f"## {data}: fairness objective, validation (cross-fitted round), paired vs abs",
        "",
        f"`{command}`",
        "",
        "| weight | hessian | queries | objective | expected NDCG@10 | EE-L | rounds "
        "(mean) | objective - abs (95% CI) | p (randomization) | verdict |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for w in weights:
        pooled = {}
        for mode in MODES:
            runs = [r for (m, ww, _), r in done.items() if m == mode and ww == w]
            if not runs:
                continue
            qids = [q for r in runs for q in r["qid"]]
            pooled[mode] = {
                name: dict(zip(qids, [v for r in runs for v in r[name]]))
                for name in ("objective", "ndcg", "ee_l")
            }
            pooled[mode]["rounds"] = float(np.mean([n for r in runs for n in r["rounds"]]))
        for mode, v in pooled.items():
            cells = [f"{w:g}", mode, str(len(v["objective"]))]
            cells += [f"{np.mean(list(v[n].values())):.4f}" for n in ("objective", "ndcg", "ee_l")]
            cells.append(f"{v['rounds']:.0f}")
            if mode != "abs" and "abs" in pooled:
                r = paired(v["objective"], pooled["abs"]["objective"])
                cells += [r.interval, f"{r.p_randomization:.3g}", r.verdict]
            else:
                cells += ["", "", ""]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="mq2008")
    parser.add_argument("--folds", default="1,2,3,4,5")
    parser.add_argument("--weights", default="0.3,1")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--out", default="benchmarks/results/fairness_hessian.md")
    args = parser.parse_args()
    folds = [int(f) for f in args.folds.split(",")]
    weights = [float(w) for w in args.weights.split(",")]
    modes = args.modes.split(",")
    out = Path(args.out)
    log = out.with_suffix(".jsonl")
    done = {}
    if log.is_file():
        for line in log.read_text().splitlines():
            r = json.loads(line)
            done[r["mode"], r["weight"], r["fold"]] = r
    trees = TreeSettings(n_jobs=1)
    for w in weights:
        for fold in folds:
            for mode in modes:
                if (mode, w, fold) in done:
                    continue
                r = {
                    "mode": mode,
                    "weight": w,
                    "fold": fold,
                    **run(args.data, fold, mode, w, 0, trees),
                }
                with log.open("a") as fh:
                    fh.write(json.dumps(r) + "\n")
                done[mode, w, fold] = r
                print(
                    f"{args.data} fold {fold} w={w:g} {mode}: rounds {r['rounds']}, "
                    f"{r['seconds']:.0f} s",
                    flush=True,
                )
    command = (
        f"python research/fairness_hessian.py --data {args.data} --folds {args.folds} "
        f"--weights {args.weights} --modes {args.modes} --out {args.out}"
    )
    text = report(done, args.data, weights, command)
    out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
