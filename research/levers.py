r"""Measure the levers of PL-Rank GBDT quality on VALIDATION splits, paired over queries.

Each candidate PL-Rank setting trains XGBoost or LightGBM on every requested LETOR fold with
early stopping on validation NDCG@K (patience 50, at most 1000 rounds; eta 0.05, XGBoost depth 6 /
LightGBM 31 leaves, min_child_weight 0.1, lambda 1, one thread) and records each validation
query's NDCG@K after every round; the library's own LambdaMART (XGBoost ``rank:ndcg``) or
LambdaRank (LightGBM ``lambdarank``) does the same under the same settings. A query is read
**cross-fitted**: at the round that is best on the other half of its fold's validation queries
(the early stopper's own best round is the maximum of a noisy curve and flatters noisy curves).
The validation queries of the five folds pool, and every candidate is compared with the
library's LambdaMART and with PL-Rank's default ``abs`` by the comparison report's paired tests
(:mod:`gbdt_plrank.harness.stats`). Test splits are never read. Validation queries without a
relevant document are left out.

    nice -n 5 python research/levers.py --data mq2008,mq2007-agg --libs xgb,lgb \
        --k 5,10 --only 'abs (default);|g|, unit scale' --out benchmarks/results/quality_levers.md

Finished trainings are appended to a JSON-lines store (``--store``, default beside ``--out``), so
a rerun resumes and reports of other selections can share one store.

The levers (all built from the public objective, none of them an option of it):

- The Hessian modes of :func:`~gbdt_plrank.plrank_objective`: ``abs`` (default), ``raw``,
  ``constant`` (all ones).
- ``constant, gradient scale``: a constant equal to the round's mean :math:`|h|` over the
  documents of queries that contribute, i.e. no second-order information, but on the Hessian's
  scale (all ones is 10 to 40 times too small a curvature for the boosters' step sizes).
- ``|g|``: the Hessian replaced by :math:`|g_d|`. The exact diagonal of the Hessian is nearly
  proportional to the gradient (exactly :math:`h_d = (1 - 2 p_d) g_d` at K = 1,
  docs/research/hessian.md "Choosing the Hessian"), so :math:`|g|` keeps the curvature's scale
  without the Hessian estimate's extra noise.
- ``..., unit scale``: gradient and Hessian multiplied by one factor per round so that the mean
  Hessian over contributing documents is 1 (as with squared error), which puts ``lambda`` and
  ``min_child_weight`` on the scale the boosters' defaults assume.
- ``temperature T``: the objective of the sharper policy with margins :math:`T f` (gradient
  :math:`T g(Tf)`, Hessian :math:`T^2 h(Tf)`), closer to the deterministic ranking.
- ``after 20 LambdaMART rounds``: a warm start, 20 rounds of the library's LambdaMART, then
  PL-Rank with early stopping.
- ``K x2``, ``N=300``: a longer sampled ranking or more samples.
- ``stopped on the policy's expected NDCG``: the default objective, early-stopped (patience 50)
  on the validation expected NDCG@K of its Plackett-Luce policy (100 sampled rankings per query,
  the same streams every round; :class:`~gbdt_plrank._training.evaluation.PolicyEvaluator`) rather
  than on NDCG@K of the ranking by score: a smoothed validation curve, and the objective
  PL-Rank optimises. Its rounds are chosen, cross-fitted, on that curve too; what is scored is
  still the ranking's NDCG@K.
- ``policy-stopped, objective x4`` / ``x16``: the policy-stopped default with its gradient and
  Hessian multiplied by 4 / 16. A leaf's step :math:`-c\sum g / (c\sum h + \lambda)` is then
  that of ``lambda`` and ``min_child_weight`` divided by :math:`c`, and the rounds are exactly
  those of temperature :math:`\sqrt{c}` (2 / 4) with the policy's margins as the model's.
- ``policy-stopped, K x2``: the policy-stopped default trained at cut-off 2K and stopped on the
  expected NDCG at K (``PLRankRanker(train_K="auto")``, :func:`gbdt_plrank.training_cutoff`).
- ``reward-weighted Fisher``: a positive Gauss-Newton-like curvature,
  :math:`E\big[\sum_{k \le r_d} p_k(d)(1 - p_k(d))\,|\rho_d \theta_k - PR_k|\big]` (the softmax
  variance of every placement d took part in, weighted by how much placing d there would change
  the reward), from its own samples (:mod:`research.levers_gn_curvature`); ``raw/Fisher mix``
  averages it with the raw estimate.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# gbdt_plrank first: its import sets the OpenMP wait before the boosters load OpenMP.
import gbdt_plrank  # noqa: F401  # isort: skip
import lightgbm as lgb
import numpy as np
import xgboost as xgb

from gbdt_plrank import plrank_objective
from gbdt_plrank._ranking_metric import RankingMetric
from gbdt_plrank._training.evaluation import PolicyEvaluator
from gbdt_plrank.datasets import load_dataset
from gbdt_plrank.harness.stats import paired
from gbdt_plrank.metrics import ndcg

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run as a script: python research/levers.py
    sys.path.insert(0, str(REPO))

from benchmarks import harness  # noqa: E402
from research.levers_gn_curvature import gn_groups  # noqa: E402

ETA, DEPTH, LEAVES, MCW, LAMBDA = 0.05, 6, 31, 0.1, 1.0
ROUNDS, PATIENCE = 1000, 50
LIBS = ("xgb", "lgb")
#: The library's own LambdaMART, the baseline of every candidate (key ``base`` in the store).
BASELINE = {"xgb": "lambdamart (rank:ndcg)", "lgb": "lambdarank"}
REFERENCE = "abs (default)"


@dataclass(frozen=True)
class Candidate:
    """A PL-Rank setting: Hessian, N, K factor, temperature, warm start, stopping curve."""

    hessian: str = "abs"
    N: int = 100
    k_factor: int = 1
    temperature: float = 1.0
    warm: int = 0
    policy_stopping: bool = False
    scale: float = 1.0


CANDIDATES: dict[str, Candidate] = {
    REFERENCE: Candidate(),
    "raw": Candidate(hessian="raw"),
    "constant 1": Candidate(hessian="constant"),
    "constant, gradient scale": Candidate(hessian="scaled-constant"),
    "|g|": Candidate(hessian="grad"),
    "|g|, unit scale": Candidate(hessian="grad-unit"),
    "abs, unit scale": Candidate(hessian="abs-unit"),
    "abs, temperature 2": Candidate(hessian="abs-wrapped", temperature=2.0),
    "abs, temperature 4": Candidate(hessian="abs-wrapped", temperature=4.0),
    "abs after 20 LambdaMART rounds": Candidate(warm=20),
    "|g|, unit scale, after 20 LambdaMART rounds": Candidate(hessian="grad-unit", warm=20),
    "|g|, unit scale, K x2": Candidate(hessian="grad-unit", k_factor=2),
    "|g|, unit scale, N=300": Candidate(hessian="grad-unit", N=300),
    "reward-weighted Fisher": Candidate(hessian="fisher"),
    "raw/Fisher mix": Candidate(hessian="fisher-mix"),
    "stopped on the policy's expected NDCG": Candidate(policy_stopping=True),
    "policy-stopped, objective x4": Candidate(policy_stopping=True, scale=4.0),
    "policy-stopped, objective x16": Candidate(policy_stopping=True, scale=16.0),
    "policy-stopped, K x2": Candidate(policy_stopping=True, k_factor=2),
}

#: Sampled rankings per validation query, and their seed, of the policy stopping curve.
POLICY_SAMPLES, POLICY_SEED = 100, 2_000_003

#: Hessian modes the objective computes itself; the others replace its raw estimate.
_NATIVE = ("abs", "raw", "constant")


class Lever:
    """``obj(preds, data)``: PL-Rank's gradient with the candidate's Hessian and temperature."""

    def __init__(self, c: Candidate, K: int, seed: int) -> None:
        self.c = c
        self.seed = seed
        self.round = 0
        self.main = plrank_objective(K=K, N=c.N, train_K=K, hessian="raw", seed=seed, n_jobs=1)

    def __call__(self, preds: np.ndarray, data: Any) -> tuple[np.ndarray, np.ndarray]:
        T = self.c.temperature
        if T != 1.0:
            preds = np.asarray(preds, dtype=np.float64) * T
        grad, hess = self.main(preds, data)
        if T != 1.0:
            grad, hess = grad * T, hess * T**2
        grad, hess = self._hessian(np.ravel(preds), grad, hess)
        self.round += 1
        return grad * self.c.scale, hess * self.c.scale

    def _hessian(self, preds, grad, hess):
        mode = self.c.hessian
        live = grad != 0
        if mode == "abs" or mode == "abs-wrapped":
            return grad, np.abs(hess)
        if mode == "grad":
            return grad, np.abs(grad)
        if mode == "scaled-constant":
            level = np.abs(hess)[live].mean() if live.any() else 1.0
            return grad, np.full_like(hess, level)
        if mode in ("grad-unit", "abs-unit"):
            curvature = np.abs(grad if mode == "grad-unit" else hess)
            scale = 1.0 / max(curvature[live].mean(), 1e-300) if live.any() else 1.0
            return grad * scale, curvature * scale
        o = self.main
        fisher = np.empty_like(grad)
        margins = np.ascontiguousarray(preds, dtype=np.float64)
        gn_groups(
            margins, o._rho, o._ptr, o.metric.theta(o._ptr), 100, self.seed, self.round, fisher
        )
        return grad, (fisher if mode == "fisher" else 0.5 * hess + 0.5 * fisher)


def objective(name: str, K: int, seed: int) -> Any:
    """The candidate's ``obj``: the plain objective for a native mode, else a :class:`Lever`."""
    c = CANDIDATES[name]
    if c.hessian in _NATIVE and c.temperature == 1.0 and c.scale == 1.0:
        return plrank_objective(
            K=K, N=c.N, train_K=K * c.k_factor, hessian=c.hessian, seed=seed, n_jobs=1
        )
    return Lever(c, K * c.k_factor, seed)


class Curves:
    """Each validation query's NDCG@K after every round, and the policy stopping's decision.

    ``ranking``: NDCG@K of the ranking by score, per query (NaN without a relevant document);
    ``expected``: for a policy-stopped candidate, its policy's expected NDCG@K per query.
    """

    def __init__(self, vali, K: int, *, policy: bool) -> None:
        self.vali, self.K, self.policy = vali, K, policy
        self.margin = np.zeros(vali.y.shape[0])
        self.ranking: list[np.ndarray] = []
        self.expected: list[np.ndarray] = []
        self.value = PolicyEvaluator(
            RankingMetric("ndcg", K, "exp"),
            None,
            vali,
            n_samples=POLICY_SAMPLES,
            seed=POLICY_SEED,
            n_jobs=1,
        )

    def add(self, increment: np.ndarray) -> bool:
        """Record a round's margins; True when a policy-stopped training should stop."""
        va = self.vali
        self.margin += increment
        self.ranking.append(
            ndcg(va.y, self.margin, va.qid, k=self.K, per_query=True, empty=float("nan"))
        )
        if not self.policy:
            return False
        self.expected.append(self.value.per_query(self.margin))
        return len(self.expected) - 1 - self.best() >= PATIENCE

    def best(self) -> int:
        """The round (0-based) of the highest mean expected NDCG@K over the kept queries."""
        kept = ~np.isnan(self.ranking[0])
        return int(np.argmax([e[kept].mean() for e in self.expected]))


def _curves_xgb(name: str, ds, K: int, seed: int, rec: Curves) -> int:
    tr, va = ds.train, ds.vali
    dtr = xgb.DMatrix(tr.X, tr.y, qid=tr.qid)
    dva = xgb.DMatrix(va.X, va.y, qid=va.qid)
    params = {
        "tree_method": "hist",
        "eta": ETA,
        "max_depth": DEPTH,
        "min_child_weight": MCW,
        "lambda": LAMBDA,
        "eval_metric": f"ndcg@{K}",
        "nthread": 1,
        "seed": seed,
    }

    class Record(xgb.callback.TrainingCallback):
        def after_iteration(self, model, epoch, evals_log):
            return rec.add(
                model.predict(dva, iteration_range=(epoch, epoch + 1), output_margin=True)
            )

    common = {"evals": [(dva, "v")], "verbose_eval": False}
    if name == "base":
        bst = xgb.train(
            {**params, "objective": "rank:ndcg"},
            dtr,
            ROUNDS,
            callbacks=[Record()],
            early_stopping_rounds=PATIENCE,
            **common,
        )
        return int(bst.best_iteration)
    warm = CANDIDATES[name].warm
    init = None
    if warm:
        init = xgb.train(
            {**params, "objective": "rank:ndcg"}, dtr, warm, callbacks=[Record()], **common
        )
    bst = xgb.train(
        {**params, "base_score": 0.0},
        dtr,
        ROUNDS,
        obj=objective(name, K, seed),
        early_stopping_rounds=None if rec.policy else PATIENCE,
        callbacks=[Record()],
        xgb_model=init,
        **common,
    )
    return rec.best() if rec.policy else int(bst.best_iteration)


def _curves_lgb(name: str, ds, K: int, seed: int, rec: Curves) -> int:
    tr, va = ds.train, ds.vali
    dtr = lgb.Dataset(tr.X, tr.y, group=tr.group_sizes, free_raw_data=False)
    dva = lgb.Dataset(va.X, va.y, group=va.group_sizes, reference=dtr, free_raw_data=False)
    params = {
        "learning_rate": ETA,
        "num_leaves": LEAVES,
        "min_sum_hessian_in_leaf": MCW,
        "lambda_l2": LAMBDA,
        "metric": "ndcg",
        "eval_at": [K],
        "num_threads": 1,
        "seed": seed,
        "verbose": -1,
        "force_row_wise": True,
    }

    def record(env):
        stop = rec.add(
            env.model.predict(va.X, start_iteration=env.iteration, num_iteration=1, raw_score=True)
        )
        if stop:
            raise lgb.callback.EarlyStopException(env.iteration, env.evaluation_result_list)

    stop = [] if rec.policy else [lgb.early_stopping(PATIENCE, verbose=False)]
    if name == "base":
        bst = lgb.train(
            {**params, "objective": "lambdarank"},
            dtr,
            ROUNDS,
            valid_sets=[dva],
            callbacks=[record, *stop],
        )
        return int(bst.best_iteration) - 1
    warm = CANDIDATES[name].warm
    init = None
    if warm:
        init = lgb.train(
            {**params, "objective": "lambdarank"}, dtr, warm, valid_sets=[dva], callbacks=[record]
        )
    bst = lgb.train(
        {**params, "objective": objective(name, K, seed)},
        dtr,
        ROUNDS,
        valid_sets=[dva],
        init_model=init,
        callbacks=[record, *stop],
    )
    return rec.best() if rec.policy else int(bst.best_iteration) - 1


def train(lib: str, name: str, ds, K: int, seed: int) -> dict[str, Any]:
    """One training; each validation query's NDCG@K at the best round and cross-fitted."""
    rec = Curves(ds.vali, K, policy=name != "base" and CANDIDATES[name].policy_stopping)
    start = time.perf_counter()
    best = (_curves_xgb if lib == "xgb" else _curves_lgb)(name, ds, K, seed, rec)
    seconds = time.perf_counter() - start
    c = np.asarray(rec.ranking)
    kept = ~np.isnan(c[0])
    select = np.asarray(rec.expected)[:, kept] if rec.policy else None
    return {
        "qid": np.unique(ds.vali.qid)[kept].tolist(),
        "ndcg": c[best, kept].tolist(),
        "xfit": cross_fitted(c[:, kept], seed=0, select=select).tolist(),
        "best": best + 1,
        "secs": seconds,
    }


def cross_fitted(curves: np.ndarray, *, seed: int, select: np.ndarray | None = None) -> np.ndarray:
    """Each query's NDCG at the round that is best on the OTHER half of the queries.

    The round an early stopper picks is the maximum of a noisy curve, so the NDCG at it is
    biased upward, the more so the noisier the curve. Splitting the queries at random into two
    halves, choosing the round on one and scoring the other removes that bias. ``select``: the
    per-query curves the round is chosen on (default ``curves`` themselves).
    """
    select = curves if select is None else select
    half = np.random.default_rng(seed).permutation(curves.shape[1]) % 2 == 0
    out = np.empty(curves.shape[1])
    for scored in (half, ~half):
        best = int(np.argmax(select[:, ~scored].mean(axis=1)))
        out[scored] = curves[best, scored]
    return out


Key = tuple[str, str, int, str, int, int]


def load_done(path: Path) -> dict[Key, dict[str, Any]]:
    """Finished trainings by (data, lib, K, name, fold, seed)."""
    return {
        (r["data"], r["lib"], r["K"], r["name"], r["fold"], r["seed"]): r
        for r in harness.read_records(path)
    }


def _pooled(done, data, lib, K, name, folds, seeds) -> dict[tuple[int, int], float] | None:
    """Query -> cross-fitted NDCG, seeds averaged; None until every (fold, seed) is done.

    The baselines are deterministic (no subsampling), so they run with the first seed only.
    """
    values: dict[tuple[int, int], list[float]] = {}
    for fold in folds:
        for seed in seeds[:1] if name == "base" else seeds:
            r = done.get((data, lib, K, name, fold, seed))
            if r is None:
                return None
            for q, v in zip(r["qid"], r["xfit"], strict=True):
                values.setdefault((fold, q), []).append(v)
    return {q: float(np.mean(v)) for q, v in values.items()}


def _runs(done, data, lib, K, name, folds, seeds) -> list[dict[str, Any]]:
    return [
        done[(data, lib, K, name, f, s)]
        for f in folds
        for s in seeds
        if (data, lib, K, name, f, s) in done
    ]


def table(done, data: str, lib: str, K: int, folds, seeds, names) -> list[str]:
    """Markdown rows: each candidate against the library's LambdaMART and against ``abs``."""
    base = _pooled(done, data, lib, K, "base", folds, seeds)
    ref = _pooled(done, data, lib, K, REFERENCE, folds, seeds)
    if base is None:
        return ["(the baseline has not finished)"]
    first = _runs(done, data, lib, K, "base", folds, seeds[:1])
    lines = [
        f"| setting | NDCG@{K} | minus {BASELINE[lib]} [95% CI], p, verdict "
        f"| minus abs [95% CI], p, verdict | best round | s / training |",
        "|---|---|---|---|---|---|",
        f"| {BASELINE[lib]} | {np.mean(list(base.values())):.4f} | | | "
        f"{np.mean([r['best'] for r in first]):.0f} | "
        f"{np.mean([r['secs'] for r in first]):.1f} |",
    ]
    for name in names:
        cand = _pooled(done, data, lib, K, name, folds, seeds)
        if cand is None:
            continue
        vs = [paired(cand, b) for b in (base, ref) if b is not None]
        cells = [f"{p.interval}, {p.p_randomization:.2g}, {p.verdict}" for p in vs]
        if name == REFERENCE:
            cells = [*cells[:1], ""]
        runs = _runs(done, data, lib, K, name, folds, seeds)
        label = name.replace("|", "\\|")  # a markdown cell cannot hold a bare "|"
        lines.append(
            f"| {label} | {np.mean(list(cand.values())):.4f} | {' | '.join(cells)} | "
            f"{np.mean([r['best'] for r in runs]):.0f} | {np.mean([r['secs'] for r in runs]):.1f} |"
        )
    return lines


def report(done, datas, libs, ks, folds, seeds, names, command: str) -> str:
    """The markdown of every (data, library, K) cell that has results."""
    out = [
        "# PL-Rank quality levers on validation queries (cross-fitted)",
        "",
        f"Command: `{command}`",
        "",
        f"Folds {folds}, seeds {seeds} (the baselines are deterministic and run once). Each "
        "query's validation NDCG@K is read at the round best on the other half of its fold's "
        "validation queries, averaged over seeds, and pooled over the folds; differences are "
        "per query with a 95% CI, the paired randomization test's p and its verdict at 0.05. "
        "Best round: the early stopper's, mean over trainings.",
        "",
    ]
    for data in datas:
        for lib in libs:
            for K in ks:
                out += [
                    f"## {data}, {'XGBoost' if lib == 'xgb' else 'LightGBM'}, NDCG@{K}",
                    "",
                    *table(done, data, lib, K, folds, seeds, names),
                    "",
                ]
    return "\n".join(out)


def _items(text: str, sep: str = ",") -> list[str]:
    return [t for t in text.split(sep) if t]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default="mq2008")
    parser.add_argument("--libs", default="xgb,lgb")
    parser.add_argument("--k", default="5,10")
    parser.add_argument("--folds", default="1,2,3,4,5")
    parser.add_argument("--seeds", default="0")
    parser.add_argument("--only", default="", help="semicolon-separated candidates (default all)")
    parser.add_argument("--out", default="benchmarks/results/quality_levers.md")
    parser.add_argument("--store", default="", help="JSON-lines store (default: --out as .jsonl)")
    args = parser.parse_args()
    datas, libs = _items(args.data), _items(args.libs)
    unknown = [lib for lib in libs if lib not in LIBS]
    names = _items(args.only, ";") or list(CANDIDATES)
    unknown += [n for n in names if n not in CANDIDATES]
    if unknown:
        parser.error(
            f"unknown: {', '.join(map(repr, unknown))}; libraries are {LIBS}, "
            f"candidates {list(CANDIDATES)}"
        )
    ks = [int(k) for k in _items(args.k)]
    folds = [int(f) for f in _items(args.folds)]
    seeds = [int(s) for s in _items(args.seeds)]
    out = Path(args.out)
    log = Path(args.store) if args.store else out.with_suffix(".jsonl")
    done = load_done(log)
    command = "python research/levers.py " + " ".join(
        f"--{k} '{v}'" for k, v in vars(args).items() if v
    )
    for data in datas:
        for fold in folds:
            ds = load_dataset(data, fold=fold)
            for lib in libs:
                for K in ks:
                    for name in ["base", *names]:
                        for seed in seeds[:1] if name == "base" else seeds:
                            key = (data, lib, K, name, fold, seed)
                            if key in done:
                                continue
                            r = {
                                "data": data,
                                "lib": lib,
                                "K": K,
                                "name": name,
                                "fold": fold,
                                "seed": seed,
                                **train(lib, name, ds, K, seed),
                            }
                            harness.append_record(log, r)
                            done[key] = r
                            print(
                                f"{data} fold {fold} {lib} @{K} {name} seed {seed}: best "
                                f"{r['best']} {r['secs']:.1f}s",
                                flush=True,
                            )
        out.write_text(report(done, datas, libs, ks, folds, seeds, names, command))
    print(report(done, datas, libs, ks, folds, seeds, names, command))


if __name__ == "__main__":
    main()
