"""Measure the levers of PL-Rank GBDT quality on VALIDATION splits, paired over queries.

Each candidate PL-Rank setting trains XGBoost on every requested LETOR fold with early stopping
on validation NDCG@5 and records each validation query's NDCG@5 at the best round; XGBoost's own
``rank:ndcg`` (LambdaMART) does the same under the same tree settings (the harness defaults: eta
0.05, max_depth 6, min_child_weight 0.1, lambda 1, patience 50, at most 1000 rounds). The
validation queries of all folds pool (each query is a validation query once across the five
folds) and every candidate is compared with LambdaMART over them with the paired statistics of
the comparison report (:mod:`gbdt_plrank.harness.stats`). Test splits are never read: choices are
made on validation. Validation queries without a relevant document are left out (they score the
same under every ranker).

Finished trainings are appended to a JSON-lines file as they end, so a rerun resumes.

    nice -n 10 python benchmarks/quality_levers.py --data mq2008 \\
        --out benchmarks/results/quality_levers.md

Some levers are compositions of the public objective, measured here before any becomes an option
of :func:`~gbdt_plrank.plrank_objective`:

- ``indep``: the gradient from one sample of N rankings, the Hessian from a second, independent
  sample (another seed), so the leaf value's numerator and denominator have independent noise.
- ``fisher``: each query's Hessian is shrunk toward a positive curvature of the same scale,
  :math:`h_d \\leftarrow (1-w) h_d + w\\, c_q\\, p_d (1 - p_d)` with :math:`p_d = e^{m_d}/\\sum_j
  e^{m_j}` the Plackett-Luce probability of placing d first (the diagonal of the Fisher
  information of the first placement) and :math:`c_q = \\sum_d |g_d| / \\sum_d p_d (1 - p_d)`
  putting it on the scale of the query's gradient.
- ``qnorm``: each query's |Hessian| divided by its mean over the query's documents (the Newton
  step keeps the within-query shape of the curvature, not its scale across queries).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import xgboost as xgb

from gbdt_plrank import plrank_objective
from gbdt_plrank.datasets import LTRDataset, Split, load_dataset
from gbdt_plrank.harness.stats import paired
from gbdt_plrank.metrics import ndcg

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run as a script: python benchmarks/quality_levers.py
    sys.path.insert(0, str(REPO))

from benchmarks import harness  # noqa: E402

K = 5
TREES = {
    "tree_method": "hist", "eta": 0.05, "max_depth": 6, "min_child_weight": 0.1, "lambda": 1.0,
    "eval_metric": f"ndcg@{K}", "nthread": 1,
}
ROUNDS, PATIENCE = 1000, 50
BASELINE = "lambdamart (rank:ndcg)"


@dataclass(frozen=True)
class Candidate:
    """A PL-Rank setting: objective options, XGBoost parameters over TREES, and a wrapper."""

    N: int = 100
    hessian: str = "abs"
    params: dict[str, Any] = field(default_factory=dict)
    wrap: str | None = None
    weight: float = 0.5


CANDIDATES: dict[str, Candidate] = {
    "abs (default)": Candidate(),
    "raw": Candidate(hessian="raw"),
    "clip": Candidate(hessian="clip"),
    "constant": Candidate(hessian="constant"),
    "raw, max_delta_step 1": Candidate(hessian="raw", params={"max_delta_step": 1.0}),
    "raw, max_delta_step 0.5": Candidate(hessian="raw", params={"max_delta_step": 0.5}),
    "raw, max_delta_step 2": Candidate(hessian="raw", params={"max_delta_step": 2.0}),
    "abs, N=200": Candidate(N=200),
    "raw, N=200, max_delta_step 1": Candidate(N=200, hessian="raw", params={"max_delta_step": 1.0}),
    "abs, min_child_weight 0.01": Candidate(params={"min_child_weight": 0.01}),
    "abs, lambda 0.1": Candidate(params={"lambda": 0.1}),
    "abs, eta 0.1": Candidate(params={"eta": 0.1}),
    "fisher w=0.5 (raw shrunk)": Candidate(hessian="raw", wrap="fisher", weight=0.5),
    "fisher w=0.2 (raw shrunk)": Candidate(hessian="raw", wrap="fisher", weight=0.2),
    "indep raw, max_delta_step 1": Candidate(
        hessian="raw", wrap="indep", params={"max_delta_step": 1.0}
    ),
    "indep abs": Candidate(wrap="indep"),
    "qnorm abs": Candidate(wrap="qnorm"),
    "abs, min_child_weight 1": Candidate(params={"min_child_weight": 1.0}),
    "abs, eta 0.02": Candidate(params={"eta": 0.02}),
}


def _per_query_sums(values: np.ndarray, ptr: np.ndarray) -> np.ndarray:
    return np.add.reduceat(values, ptr[:-1]) if values.size else values


def _fisher(preds: np.ndarray, grad: np.ndarray, hess: np.ndarray, ptr: np.ndarray, w: float):
    sizes = np.diff(ptr)
    m = preds.astype(np.float64)
    m = m - np.repeat(np.maximum.reduceat(m, ptr[:-1]), sizes)
    e = np.exp(m)
    p = e / np.repeat(_per_query_sums(e, ptr), sizes)
    fisher = p * (1.0 - p)
    f_sum = _per_query_sums(fisher, ptr)
    scale = np.divide(
        _per_query_sums(np.abs(grad), ptr), f_sum, out=np.zeros_like(f_sum), where=f_sum > 0
    )
    return (1.0 - w) * hess + w * np.repeat(scale, sizes) * fisher


def _qnorm(hess: np.ndarray, ptr: np.ndarray) -> np.ndarray:
    sizes = np.diff(ptr)
    h = np.abs(hess)
    mean = _per_query_sums(h, ptr) / sizes
    return np.divide(h, np.repeat(mean, sizes), out=np.zeros_like(h), where=np.repeat(mean, sizes) > 0)


def objective(c: Candidate, seed: int):
    """The candidate's objective for ``xgboost.train(obj=...)``."""
    main = plrank_objective(K=K, N=c.N, hessian=c.hessian, seed=seed, n_jobs=1)
    if c.wrap is None:
        return main
    second = plrank_objective(K=K, N=c.N, hessian=c.hessian, seed=seed + 7919, n_jobs=1)

    def obj(preds: np.ndarray, dtrain: xgb.DMatrix):
        grad, hess = main(preds, dtrain)
        ptr = np.asarray(dtrain.get_uint_info("group_ptr"), dtype=np.int64)
        if c.wrap == "indep":
            return grad, second(preds, dtrain)[1]
        if c.wrap == "fisher":
            return grad, _fisher(preds, grad, hess, ptr, c.weight)
        return grad, _qnorm(hess, ptr)

    return obj


def train(name: str, ds, dmats: dict[str, xgb.DMatrix], seed: int, fold: int) -> dict[str, Any]:
    """One training; the per-query validation NDCG@5 at its best round and cross-fitted."""
    params = {**TREES, "seed": seed, "base_score": 0.0}
    obj = None
    if name == BASELINE:
        params["objective"] = "rank:ndcg"
    else:
        c = CANDIDATES[name]
        params.update(c.params)
        obj = objective(c, seed)
    start = time.perf_counter()
    bst = xgb.train(
        params, dmats["train"], ROUNDS, obj=obj, evals=[(dmats["vali"], "vali")],
        early_stopping_rounds=PATIENCE, verbose_eval=False,
    )
    seconds = time.perf_counter() - start
    curves = per_round_ndcg(bst, dmats["vali"], ds.vali)
    qids = np.unique(ds.vali.qid)
    kept = ~np.isnan(curves[0])
    best = bst.best_iteration
    return {
        "qid": qids[kept].tolist(), "ndcg": curves[best, kept].tolist(),
        "ndcg_xfit": cross_fitted(curves[:, kept], seed=fold).tolist(),
        "best_round": int(best) + 1, "seconds": seconds,
    }


def per_round_ndcg(bst: xgb.Booster, dvali: xgb.DMatrix, vali) -> np.ndarray:
    """Per-query NDCG@K after every round, shape (rounds, queries); nan without relevant docs.

    Tree r's margins are added one round at a time (``base_score`` is 0, so no constant piles
    up).
    """
    margin = np.zeros(vali.y.shape[0], dtype=np.float64)
    out = []
    for r in range(bst.num_boosted_rounds()):
        margin += bst.predict(dvali, iteration_range=(r, r + 1), output_margin=True)
        out.append(ndcg(vali.y, margin, vali.qid, k=K, per_query=True, empty=float("nan")))
    return np.asarray(out)


def cross_fitted(curves: np.ndarray, *, seed: int) -> np.ndarray:
    """Each query's NDCG at the round that is best on the OTHER half of the queries.

    The round an early stopper picks is the maximum of a noisy curve, so the NDCG at it is
    biased upward, the more so the noisier the curve. Splitting the queries at random into two
    halves, choosing the round on one and scoring the other removes that bias.
    """
    half = np.random.default_rng(seed).permutation(curves.shape[1]) % 2 == 0
    out = np.empty(curves.shape[1])
    for scored in (half, ~half):
        best = int(np.argmax(curves[:, ~scored].mean(axis=1)))
        out[scored] = curves[best, scored]
    return out


def sorted_by_qid(ds) -> LTRDataset:
    """The dataset with each split's rows stably sorted by query id (XGBoost needs it)."""
    def split(part: Split) -> Split:
        order = np.argsort(part.qid, kind="stable")
        return Split(part.X[order], part.y[order], part.qid[order])

    return dataclasses.replace(ds, **{s: split(getattr(ds, s)) for s in ("train", "vali")})


def load_done(path: Path) -> dict[tuple[str, str, int, int], dict[str, Any]]:
    return {(r["data"], r["name"], r["fold"], r["seed"]): r for r in harness.read_records(path)}


def _table(done, data: str, folds: list[int], seeds: list[int], field: str) -> list[str]:
    """One row per setting with every (fold, seed) done: ``field`` paired against the baseline."""

    def runs(name: str) -> list[dict[str, Any]] | None:
        found = [done.get((data, name, f, s)) for f in folds for s in seeds]
        return None if any(r is None for r in found) else found

    def pooled(found: list[dict[str, Any]]) -> dict[tuple[int, int], float]:
        values: dict[tuple[int, int], list[float]] = {}
        for r in found:  # each query's seeds averaged first
            for q, v in zip(r["qid"], r[field], strict=True):
                values.setdefault((r["fold"], q), []).append(v)
        return {query: float(np.mean(v)) for query, v in values.items()}

    lines = [
        f"| setting | NDCG@{K} | minus LambdaMART [95% CI] | t-test p | randomization p "
        "| verdict | best round | s / training |",
        "|---|---|---|---|---|---|---|---|",
    ]
    base_runs = runs(BASELINE)
    if base_runs is None:
        return [*lines, "", "(the baseline has not finished)"]
    base = pooled(base_runs)
    for name in [BASELINE, *CANDIDATES]:
        found = runs(name)
        if found is None:
            continue
        cand = pooled(found)
        p = paired(cand, base)
        diff = (
            "" if name == BASELINE else f"{p.mean:+.4f} [{p.low:+.4f}, {p.high:+.4f}] "
            f"| {p.p_t:.3g} | {p.p_randomization:.3g} | {p.verdict}"
        )
        lines.append(
            f"| {name} | {np.mean(list(cand.values())):.4f} | {diff or ' | | | '} "
            f"| {np.mean([r['best_round'] for r in found]):.0f} "
            f"| {np.mean([r['seconds'] for r in found]):.1f} |"
        )
    return lines


def report(done, data: str, folds: list[int], seeds: list[int], command: str) -> str:
    """The markdown of the results for ``folds`` x ``seeds``."""
    trees = {k: v for k, v in TREES.items() if k not in ("eval_metric", "nthread")}
    return "\n".join([
        f"# PL-Rank quality levers: {data}, validation NDCG@{K}", "",
        f"Command: `{command}`", "",
        f"XGBoost, early stopping on validation NDCG@{K} (patience {PATIENCE}, at most {ROUNDS} "
        f"rounds), tree settings {trees} unless a row says otherwise; folds {folds}, seeds "
        f"{seeds}. Per-query validation NDCG@{K} (queries with a relevant document), averaged "
        f"over seeds per query, pooled over the folds. Difference: setting minus {BASELINE} per "
        f"query, mean [95% CI], paired t-test p and paired randomization p (the verdict, at "
        f"0.05). Test splits are not used. Best round: the early stopper's, mean over trainings.", "",
        "## Cross-fitted (the unbiased measure)", "",
        "Each fold's validation queries are split at random into two halves; a query's NDCG is "
        "read at the round best on the other half. The NDCG at the early stopper's own best "
        "round (next table) is biased upward, more for noisier curves.", "",
        *_table(done, data, folds, seeds, "ndcg_xfit"), "",
        "## At the early stopper's best round (optimistic)", "",
        *_table(done, data, folds, seeds, "ndcg"), "",
    ])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default="mq2008")
    parser.add_argument("--folds", default="1,2,3,4,5")
    parser.add_argument("--seeds", default="0")
    parser.add_argument("--only", default="", help="semicolon-separated candidate names (default all)")
    parser.add_argument("--out", default="benchmarks/results/quality_levers.md")
    args = parser.parse_args()
    folds = [int(f) for f in args.folds.split(",")]
    seeds = [int(s) for s in args.seeds.split(",")]
    names = [n for n in args.only.split(";") if n] or list(CANDIDATES)
    out = Path(args.out)
    log = out.with_suffix(".jsonl")
    done = load_done(log)
    command = "nice -n 10 python benchmarks/quality_levers.py " + " ".join(
        f"--{k} '{v}'" for k, v in vars(args).items() if v
    )
    for fold in folds:
        ds = sorted_by_qid(load_dataset(args.data, fold=fold))
        dmats = {
            s: xgb.DMatrix(getattr(ds, s).X, getattr(ds, s).y, qid=getattr(ds, s).qid)
            for s in ("train", "vali")
        }
        for name in [BASELINE, *names]:
            for seed in seeds:
                key = (args.data, name, fold, seed)
                if key in done:
                    continue
                r = {"data": args.data, "name": name, "fold": fold, "seed": seed}
                r.update(train(name, ds, dmats, seed, fold))
                harness.append_record(log, r)
                done[key] = r
                print(f"{args.data} fold {fold} {name} seed {seed}: best {r['best_round']} "
                      f"{r['seconds']:.1f}s mean {np.mean(r['ndcg']):.4f}", flush=True)
        out.write_text(report(done, args.data, folds[: folds.index(fold) + 1], seeds, command))
    print(report(done, args.data, folds, seeds, command))


if __name__ == "__main__":
    main()
