"""The benchmark suite (``make bench``): what one boosting round of PL-Rank costs.

Sections, each printed and written to ``OUT/<name>.md`` with its raw numbers in ``OUT/<name>.json``
(and everything together in ``OUT/summary.md``):

``round``
    The PL-Rank objective (K=10, N=100) on MSLR-shaped data, at round 0 and on the margins of a
    few boosting rounds, against one XGBoost ``rank:ndcg`` round and one full PL-Rank round;
    the objective and the round at the ranker's default ``train_K`` (K=20); the fairness
    objective (``fairness="expected-exposure"``) on the same margins and its round.
``pirank``
    The PiRank objective (K=10) next to the PL-Rank objective and one XGBoost ``rank:ndcg``
    round on the MSLR-shaped data and on ~1,000-document lists, and the growth of both
    objectives' time with the list length at a fixed number of documents.
``table2``
    The shape of Table 2 of Oosterhuis (SIGIR 2022): seconds per round, K x N, for the library's
    samplers and the PL-Rank-3 and PL-Rank-2 baselines (:mod:`baselines`).
``threads``
    1 and 2 threads, and the peak memory of one call, each in a fresh process.
``compile``
    First-call time in a fresh process, without and with Numba's on-disk cache.
``nn``
    Seconds per epoch of the PL-Rank neural network (the ``torch`` backend of ``plrank-nn``:
    2 sigmoid layers of 32 units, Adam, 256 and 64 queries per step) against one XGBoost
    PL-Rank round and one ``rank:ndcg`` round on the same MSLR-shaped data (K=10, N=100).
``dask``
    Seconds per boosting round of PL-Rank and LambdaMART on 1 and 2 local Dask workers, on a
    synthetic MSLR-shaped set of 20,000 queries (about 2.4M documents;
    :mod:`benchmarks.dask_scaling`).

Times are wall-clock medians after a warm-up call (:func:`benchmarks.harness.measure`); they are
as noisy as the machine is busy, so the load average is recorded with each section.

    python benchmarks/bench_round.py [--quick] [--out DIR] [--sections round table2 ...]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

# gbdt_plrank first: its import sets the OpenMP wait before xgboost loads its OpenMP
# runtime (which reads the variable once).
import gbdt_plrank  # isort: skip
import numpy as np
import xgboost

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks import harness, synthetic  # noqa: E402
from benchmarks.probes import METHODS, estimator  # noqa: E402
from gbdt_plrank._training.evaluation import EVAL_SAMPLES  # noqa: E402

#: The objective's Hessian mode at its defaults, which every objective timed here uses.
HESSIAN = gbdt_plrank.PLRankOptions().hessian
SECTIONS = ("round", "pirank", "table2", "threads", "compile", "nn", "dask")
LABELS = {
    "library-auto": "library, sampler=auto",
    "library-tree": "library, sampler=tree",
    "library-race": "library, sampler=race",
    "plrank3": "PL-Rank-3 baseline (Gumbel, direct)",
    "plrank2": "PL-Rank-2 baseline (gradient only)",
}
NOISE_NOTE = (
    "Wall-clock times on a shared machine: noisy. Load average (1, 5, 15 min) at the start of "
    "the section: {load}; cores: {cores}."
)


@dataclass(frozen=True)
class Config:
    """Sizes of one benchmark run; :meth:`quick` is the seconds-long smoke configuration."""

    threads: int = 2
    mslr_queries: int = 2000
    long_queries: int = 200
    Ks: tuple[int, ...] = (5, 10, 20, 25, 50, 100)
    Ns: tuple[int, ...] = (100, 1000)
    round_k: int = 10
    round_n: int = 100
    warm_rounds: int = 5
    list_lengths: tuple[int, ...] = (120, 1000, 5000, 20000)
    growth_docs: int = 240_000
    xgb_rounds: int = 20
    reps: int = 5
    budget: float = 2.0
    max_cell_seconds: float = 60.0
    dask_queries: int = 20_000
    dask_rounds: int = 8
    dask_partitions: int = 8
    nn_epochs: int = 6
    probe_methods: tuple[tuple[str, str], ...] = (
        ("mslr", "library-auto"),
        ("mslr", "plrank3"),
        ("mslr", "plrank2"),
        ("long", "library-auto"),
        ("long", "plrank3"),
    )

    @classmethod
    def quick(cls) -> Config:
        return cls(
            mslr_queries=40,
            long_queries=4,
            Ks=(5, 10, 20),
            Ns=(10, 50),
            round_n=20,
            warm_rounds=2,
            list_lengths=(120, 1000),
            growth_docs=6000,
            xgb_rounds=3,
            reps=2,
            budget=0.2,
            max_cell_seconds=5.0,
            dask_queries=200,
            dask_rounds=3,
            dask_partitions=4,
            nn_epochs=3,
            probe_methods=(("mslr", "library-auto"), ("mslr", "plrank3")),
        )


class Workspace:
    """The datasets, DMatrices and warm margins, built once and shared by the sections."""

    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg
        self._data: dict[str, synthetic.RankingData] = {}
        self._dmatrix: dict[str, Any] = {}
        self._margins: dict[str, np.ndarray] = {}

    def data(self, key: str) -> synthetic.RankingData:
        if key not in self._data:
            if key == "mslr":
                self._data[key] = synthetic.mslr_like(n_queries=self.cfg.mslr_queries)
            else:
                self._data[key] = synthetic.long_lists(n_queries=self.cfg.long_queries)
        return self._data[key]

    def dmatrix(self, key: str) -> Any:
        if key not in self._dmatrix:
            self._dmatrix[key] = self.data(key).dmatrix()
        return self._dmatrix[key]

    def plrank_params(self) -> dict[str, Any]:
        return {
            "tree_method": "hist",
            "nthread": self.cfg.threads,
            "seed": 0,
            "base_score": 0.0,
            "eval_metric": f"ndcg@{self.cfg.round_k}",
        }

    def margins(self, key: str) -> np.ndarray:
        """Margins after ``warm_rounds`` PL-Rank rounds (K=10, N=100): a realistic input."""
        if key not in self._margins:
            obj = gbdt_plrank.plrank_objective(
                self.cfg.round_k,
                self.cfg.round_n,
                train_K=self.cfg.round_k,
                n_jobs=self.cfg.threads,
            )
            bst = xgboost.train(
                self.plrank_params(), self.dmatrix(key), self.cfg.warm_rounds, obj=obj
            )
            margins = bst.predict(self.dmatrix(key), output_margin=True)
            self._margins[key] = np.asarray(margins, dtype=np.float64)
        return self._margins[key]


def _noise_note(cfg: Config) -> str:
    load = ", ".join(f"{v:.2f}" for v in os.getloadavg())
    return NOISE_NOTE.format(load=load, cores=os.cpu_count())


def _data_line(data: synthetic.RankingData) -> str:
    s = data.summary()
    return (
        f"Data: {s['name']}: {s['documents']} documents, {s['features']} features, documents per "
        f"query mean {s['docs_per_query_mean']:.0f} / median {s['docs_per_query_median']:.0f} / "
        f"max {s['docs_per_query_max']}, label shares {s['label_share']}."
    )


# --------------------------------------------------------------------------------------------
# Section 1: the objective against an XGBoost round
# --------------------------------------------------------------------------------------------
def _time_rounds(step: Any, rounds: int) -> dict[str, Any]:
    """Round 0 (which also sketches the feature quantiles) apart, then ``rounds`` more rounds."""
    start = time.perf_counter()
    step(0)
    first = time.perf_counter() - start
    times = []
    for i in range(1, rounds + 1):
        start = time.perf_counter()
        step(i)
        times.append(time.perf_counter() - start)
    return {
        "first_round_s": first,
        "times": times,
        "median": float(np.median(times)),
        "mean": float(np.mean(times)),
    }


def section_round(cfg: Config, ws: Workspace) -> tuple[str, dict[str, Any]]:
    """Objective time per round against one XGBoost ``rank:ndcg`` round and one PL-Rank round."""
    note = _noise_note(cfg)
    data, dtrain = ws.data("mslr"), ws.dmatrix("mslr")
    K, N, threads = cfg.round_k, cfg.round_n, cfg.threads
    obj = gbdt_plrank.plrank_objective(K, N, train_K=K, n_jobs=threads)
    warm = ws.margins("mslr").astype(np.float32)
    zero = np.zeros(data.n_docs, dtype=np.float32)
    obj(zero, dtrain)  # compile (or load from cache) and cache the rewards
    t_zero = harness.measure(lambda: obj(zero, dtrain), reps=cfg.reps, budget=cfg.budget)
    t_warm = harness.measure(lambda: obj(warm, dtrain), reps=cfg.reps, budget=cfg.budget)
    # what PLRankRanker(K=K) trains with by default: the objective at train_K="auto"
    train_K = gbdt_plrank.training_cutoff(K)
    train_obj = gbdt_plrank.plrank_objective(K, N, train_K=train_K, n_jobs=threads)
    train_obj(zero, dtrain)
    t_train = harness.measure(lambda: train_obj(warm, dtrain), reps=cfg.reps, budget=cfg.budget)

    common = {"tree_method": "hist", "nthread": threads, "seed": 0}
    ndcg_params = {**common, "objective": "rank:ndcg", "eval_metric": f"ndcg@{K}"}
    lambdamart = xgboost.Booster(ndcg_params, [dtrain])
    xgb = _time_rounds(lambda i: lambdamart.update(dtrain, i), cfg.xgb_rounds)

    pl_obj = gbdt_plrank.plrank_objective(K, N, train_K=K, n_jobs=threads)
    plrank = xgboost.Booster(ws.plrank_params(), [dtrain])
    full = _time_rounds(lambda i: plrank.update(dtrain, i, fobj=pl_obj), cfg.xgb_rounds)
    long_obj = gbdt_plrank.plrank_objective(K, N, train_K=train_K, n_jobs=threads)
    long_plrank = xgboost.Booster(ws.plrank_params(), [dtrain])
    full_long = _time_rounds(lambda i: long_plrank.update(dtrain, i, fobj=long_obj), cfg.xgb_rounds)

    fair_obj = gbdt_plrank.plrank_objective(K, N, n_jobs=threads, fairness="expected-exposure")
    fair_obj(zero, dtrain)
    t_fair = harness.measure(lambda: fair_obj(warm, dtrain), reps=cfg.reps, budget=cfg.budget)
    fair_booster = xgboost.Booster(ws.plrank_params(), [dtrain])
    fair_round_obj = gbdt_plrank.plrank_objective(
        K, N, n_jobs=threads, fairness="expected-exposure"
    )
    fair_full = _time_rounds(
        lambda i: fair_booster.update(dtrain, i, fobj=fair_round_obj), cfg.xgb_rounds
    )

    # early stopping's work after each round, on a validation set a third the training set's
    # size: LambdaMART's NDCG@K of it (XGBoost's own), PL-Rank's default policy stopping
    vali = synthetic.mslr_like(n_queries=max(cfg.mslr_queries // 3, 2), seed=1)
    dvali = vali.dmatrix()
    stopped_lambdamart = xgboost.Booster(ndcg_params, [dtrain, dvali])
    xgb_eval = _time_rounds(
        lambda i: (stopped_lambdamart.update(dtrain, i), stopped_lambdamart.eval(dvali)),
        cfg.xgb_rounds,
    )
    stopped_plrank = xgboost.Booster(ws.plrank_params(), [dtrain, dvali])
    pl_stop_obj = gbdt_plrank.plrank_objective(K, N, n_jobs=threads)
    full_stop = _time_rounds(
        lambda i: (
            stopped_plrank.update(dtrain, i, fobj=pl_stop_obj),
            stopped_plrank.eval_set([(dvali, "valid")], i, feval=pl_stop_obj.expected_metric),
        ),
        cfg.xgb_rounds,
    )

    grad, hess = obj(warm, dtrain)
    fixed = xgboost.Booster(ws.plrank_params(), [dtrain])
    trees = _time_rounds(lambda i: fixed.boost(dtrain, i, grad=grad, hess=hess), cfg.xgb_rounds)

    rows = [
        [
            "PL-Rank objective `obj(preds, dtrain)`, round-0 margins (all 0)",
            t_zero.median,
            t_zero.median / xgb["median"],
            t_zero.median / full["median"],
        ],
        [
            f"PL-Rank objective, margins after {cfg.warm_rounds} rounds",
            t_warm.median,
            t_warm.median / xgb["median"],
            t_warm.median / full["median"],
        ],
        [
            f"PL-Rank objective trained at K={train_K} (`PLRankRanker(K={K})`'s default "
            "`train_K`), same margins",
            t_train.median,
            t_train.median / xgb["median"],
            t_train.median / full["median"],
        ],
        [
            "PL-Rank fairness objective (`fairness='expected-exposure'`), same margins",
            t_fair.median,
            t_fair.median / xgb["median"],
            t_fair.median / full["median"],
        ],
        [
            "XGBoost tree building only (`Booster.boost` with fixed grad/hess)",
            trees["median"],
            trees["median"] / xgb["median"],
            trees["median"] / full["median"],
        ],
        [
            "full PL-Rank round (`Booster.update(fobj=obj)`: objective + tree)",
            full["median"],
            full["median"] / xgb["median"],
            1.0,
        ],
        [
            f"full PL-Rank round trained at K={train_K} (`PLRankRanker(K={K})`'s default "
            "`train_K`)",
            full_long["median"],
            full_long["median"] / xgb["median"],
            full_long["median"] / full["median"],
        ],
        [
            "full PL-Rank fairness round (objective + tree)",
            fair_full["median"],
            fair_full["median"] / xgb["median"],
            fair_full["median"] / full["median"],
        ],
        [
            "XGBoost `rank:ndcg` round (`Booster.update`)",
            xgb["median"],
            1.0,
            xgb["median"] / full["median"],
        ],
        [
            f"full PL-Rank round trained at K={train_K} + policy stopping (the ranker's defaults: "
            f"the validation policy's expected NDCG@{K}, {EVAL_SAMPLES} rankings per query)",
            full_stop["median"],
            full_stop["median"] / xgb["median"],
            full_stop["median"] / full["median"],
        ],
        [
            f"XGBoost `rank:ndcg` round + NDCG@{K} of the validation set (its early stopping)",
            xgb_eval["median"],
            xgb_eval["median"] / xgb["median"],
            xgb_eval["median"] / full["median"],
        ],
    ]
    md = "\n\n".join(
        [
            f"## Objective time per round vs one XGBoost round (K={K}, N={N}, {threads} threads)",
            _data_line(data),
            f"Round times are medians over rounds 1..{cfg.xgb_rounds} (round 0, which also "
            f"sketches the feature quantiles, is left out); tree_method=hist, nthread={threads}, "
            "default depth 6. The objective is `plrank_objective(K, N, train_K=K)` (NDCG, "
            f"hessian={HESSIAN!r}, the default). The fairness rows add "
            "`fairness='expected-exposure'` (weight 1): "
            f"the objective costs {t_fair.median / t_warm.median:.2f}x the relevance objective "
            "here (goal: at most 1.3x; it also runs queries without relevant documents, which the "
            "relevance objective skips). A ranker judged at NDCG@K trains at "
            f'K={train_K} by default (`train_K="auto"`): its objective costs '
            f"{t_train.median / xgb['median']:.2f}x a LambdaMART round, and its round "
            f"{full_long['median'] / xgb['median']:.2f}x. The last two rows add "
            f"each method's early stopping on a validation set of {vali.n_queries} MSLR-shaped "
            "queries after every round: with the ranker's defaults a PL-Rank round costs "
            f"{full_stop['median'] / xgb_eval['median']:.2f}x a LambdaMART round.",
            harness.markdown_table(
                ["what", "seconds", "/ XGBoost rank:ndcg round", "/ full PL-Rank round"], rows
            ),
            note,
        ]
    )
    raw = {
        "config": {
            "K": K,
            "N": N,
            "threads": threads,
            "warm_rounds": cfg.warm_rounds,
            "rounds": cfg.xgb_rounds,
            "xgboost_params": ndcg_params,
        },
        "data": data.summary(),
        "objective_round0": t_zero,
        "objective_warm": t_warm,
        "objective_warm_at_train_K": t_train,
        "xgboost_rank_ndcg_round": xgb,
        "plrank_full_round": full,
        "tree_building_only": trees,
        "train_K": train_K,
        "plrank_full_round_at_train_K": full_long,
        "fairness_objective_warm": t_fair,
        "fairness_full_round": fair_full,
        "plrank_round_with_policy_stopping": full_stop,
        "xgboost_round_with_ndcg_evaluation": xgb_eval,
        "ratio_stopped_plrank_to_stopped_xgboost_round": full_stop["median"] / xgb_eval["median"],
        "ratio_fairness_to_relevance_objective": t_fair.median / t_warm.median,
        "ratio_objective_to_xgboost_round": t_warm.median / xgb["median"],
        "ratio_objective_to_plrank_round": t_warm.median / full["median"],
        "ratio_objective_at_train_K_to_xgboost_round": t_train.median / xgb["median"],
        "ratio_round_at_train_K_to_xgboost_round": full_long["median"] / xgb["median"],
        "load_average": os.getloadavg(),
    }
    return md, raw


# --------------------------------------------------------------------------------------------
# Section 1b: the PiRank objective
# --------------------------------------------------------------------------------------------
def _equal_lists(cfg: Config, length: int) -> synthetic.RankingData:
    """About ``cfg.growth_docs`` documents in queries of exactly ``length`` documents."""
    return synthetic.make_dataset(
        n_queries=max(1, cfg.growth_docs // length),
        mean_docs=float(length),
        sigma=1e-9,
        max_docs=length,
        features=False,
        name=f"{length} docs/query",
    )


def _objectives_vs_round(
    cfg: Config, ws: Workspace, key: str, pirank: Any, plrank: Any
) -> tuple[list[list[object]], dict[str, Any]]:
    """The two objectives on warm margins of data ``key`` and one XGBoost ``rank:ndcg`` round."""
    data, dtrain = ws.data(key), ws.dmatrix(key)
    warm = ws.margins(key).astype(np.float32)
    timed = harness.measure_interleaved(
        {"pirank": lambda: pirank(warm, dtrain), "plrank": lambda: plrank(warm, dtrain)},
        reps=cfg.reps,
    )
    t_pi, t_pl = timed["pirank"], timed["plrank"]
    params = {"tree_method": "hist", "nthread": cfg.threads, "seed": 0, "objective": "rank:ndcg"}
    lambdamart = xgboost.Booster(params, [dtrain])
    xgb = _time_rounds(lambda i: lambdamart.update(dtrain, i), cfg.xgb_rounds)
    name = data.summary()["name"]
    rows = [
        [
            name,
            f"PiRank objective (tau {pirank.tau:g})",
            t_pi.median,
            t_pi.median / xgb["median"],
            t_pi.median / t_pl.median,
        ],
        [
            name,
            f"PL-Rank objective (N={plrank.options.training_N})",
            t_pl.median,
            t_pl.median / xgb["median"],
            1.0,
        ],
        [name, "XGBoost `rank:ndcg` round", xgb["median"], 1.0, xgb["median"] / t_pl.median],
    ]
    return rows, {"data": data.summary(), "pirank": t_pi, "plrank": t_pl, "xgboost_round": xgb}


def section_pirank(cfg: Config, ws: Workspace) -> tuple[str, dict[str, Any]]:
    """PiRank's objective next to PL-Rank's and a LambdaMART round; its growth with list length."""
    note = _noise_note(cfg)
    K, N, threads = cfg.round_k, cfg.round_n, cfg.threads
    pirank_of = partial(gbdt_plrank.pirank_objective, K, n_jobs=threads)
    tau = pirank_of().tau
    plrank_of = partial(gbdt_plrank.plrank_objective, K, N, train_K=K, n_jobs=threads)
    rows, raw = [], {}
    for key in ("mslr", "long"):
        found, raw[key] = _objectives_vs_round(cfg, ws, key, pirank_of(), plrank_of())
        rows += found
    growth, raw["growth"] = [], []
    rng = np.random.default_rng(0)
    calls = {}
    lists = {length: _equal_lists(cfg, length) for length in cfg.list_lengths}
    for length, data in lists.items():  # the booster's call form, rewards cached as in training
        scores = rng.standard_normal(data.n_docs)
        for name, make in (("pirank", pirank_of), ("plrank", plrank_of)):
            calls[name, length] = partial(make().lgbm_ranker, data.y, scores, None, data.sizes)
    timed = harness.measure_interleaved(
        {f"{name} {length}": fn for (name, length), fn in calls.items()}, reps=cfg.reps
    )
    for length, data in lists.items():
        t_pi, t_pl = timed[f"pirank {length}"], timed[f"plrank {length}"]
        ns = 1e9 / data.n_docs
        growth.append(
            [length, data.n_queries, t_pi.median, ns * t_pi.median, t_pl.median, ns * t_pl.median]
        )
        raw["growth"].append(
            {"length": length, "data": data.summary(), "pirank": t_pi, "plrank": t_pl}
        )
    first = growth[0]
    exponents = [
        [
            f"{first[0]} -> {row[0]}",
            float(np.log((row[2] / row[1]) / (first[2] / first[1])) / np.log(row[0] / first[0])),
        ]
        for row in growth[1:]
    ]
    md = "\n\n".join(
        [
            f"## PiRank objective time (K={K}, tau {tau:g}, {threads} threads)",
            f"Seconds per call on margins after {cfg.warm_rounds} PL-Rank rounds, next to the "
            f"PL-Rank objective (K={K}, N={N}, hessian={HESSIAN!r}) and one XGBoost "
            "`rank:ndcg` round "
            f"(median over rounds 1..{cfg.xgb_rounds}, tree_method=hist, depth 6). PiRank "
            "computes the exact top-K NeuralSort loss, gradient and Hessian diagonal in "
            "O(L log L + K L) per query of L documents (one sort, then sums over the documents "
            "above and below each one).",
            harness.markdown_table(
                ["data", "what", "seconds", "/ XGBoost rank:ndcg round", "/ PL-Rank objective"],
                rows,
            ),
            f"### Growth with the list length ({cfg.growth_docs:,} documents in queries of equal "
            f"length L, labels as MSLR, normal margins; each objective called as the booster "
            f"calls it, its rewards cached; the lengths timed in turns)",
            "Linear cost per query (O(L) at fixed K) means a constant time per document; the "
            "quadratic NeuralSort matrix (O(L^2)) would double the time per document with every "
            "doubling of L. The exponent column is log(time per query ratio) / log(L ratio): 1 for "
            "linear, 2 for quadratic.",
            harness.markdown_table(
                [
                    "L",
                    "queries",
                    "PiRank s",
                    "PiRank ns / document",
                    "PL-Rank s",
                    "PL-Rank ns / document",
                ],
                growth,
            ),
            harness.markdown_table(["L", "PiRank cost exponent per query"], exponents),
            note,
        ]
    )
    raw["config"] = {
        "K": K,
        "N": N,
        "tau": tau,
        "threads": threads,
        "list_lengths": cfg.list_lengths,
        "growth_docs": cfg.growth_docs,
    }
    raw["exponents"] = exponents
    raw["load_average"] = os.getloadavg()
    return md, raw


# --------------------------------------------------------------------------------------------
# Section 2: Table 2 of Oosterhuis (2022)
# --------------------------------------------------------------------------------------------
def _estimate(results: dict[tuple[str, int, int], Any], method: str, N: int, K: int) -> float:
    """Predicted seconds of a cell from a measured cell with fewer samples or a smaller K."""
    smaller_n = [
        n
        for (m, n, k) in results
        if m == method and k == K and n < N and isinstance(results[m, n, k], harness.Timing)
    ]
    if smaller_n:
        n = max(smaller_n)
        return results[method, n, K].median * N / n
    smaller_k = [
        k
        for (m, n, k) in results
        if m == method and n == N and k < K and isinstance(results[m, n, k], harness.Timing)
    ]
    if smaller_k:
        k = max(smaller_k)
        return results[method, N, k].median * K / k
    return 0.0


def _table2_one(cfg: Config, ws: Workspace, key: str) -> tuple[str, dict[str, Any]]:
    data = ws.data(key)
    margins = ws.margins(key)
    y, ptr = data.y, data.group_ptr
    results: dict[tuple[str, int, int], Any] = {}
    for N in cfg.Ns:
        for K in cfg.Ks:
            for method in METHODS:
                predicted = _estimate(results, method, N, K)
                if predicted > cfg.max_cell_seconds:
                    results[method, N, K] = f"skipped (est. {predicted:.0f} s)"
                    continue
                fn = estimator(method)
                results[method, N, K] = harness.measure(
                    lambda fn=fn, K=K, N=N: fn(margins, y, ptr, K, N, cfg.threads),
                    reps=cfg.reps,
                    budget=cfg.budget,
                )
                print(
                    f"  {key} N={N} K={K} {method}: {results[method, N, K].median:.3g} s",
                    flush=True,
                )

    def cell(method: str, N: int, K: int) -> object:
        r = results[method, N, K]
        return r.median if isinstance(r, harness.Timing) else r

    def ratio(method: str, N: int, K: int) -> object:
        a, b = results[method, N, K], results["library-auto", N, K]
        if isinstance(a, harness.Timing) and isinstance(b, harness.Timing):
            return a.median / b.median
        return "-"

    head = ["method", "N"] + [f"K={K}" for K in cfg.Ks]
    times = [[LABELS[m], N] + [cell(m, N, K) for K in cfg.Ks] for m in METHODS for N in cfg.Ns]
    speed = [
        [f"{LABELS[m]} / library auto", N] + [ratio(m, N, K) for K in cfg.Ks]
        for m in ("plrank3", "plrank2")
        for N in cfg.Ns
    ]
    short = ", ".join(f"K={K}: {np.mean(data.sizes < K):.0%}" for K in cfg.Ks)
    md = "\n\n".join(
        [
            f"### {data.name}",
            _data_line(data)
            + f" Queries with fewer than K documents (rankings of all D): {short}.",
            "Seconds per round (all queries; gradient and Hessian except PL-Rank-2):",
            harness.markdown_table(head, times),
            "Speedup of the library (sampler=auto) over the baselines "
            "(baseline time / library time):",
            harness.markdown_table(head, speed),
        ]
    )
    raw = {
        "data": data.summary(),
        "cells": [
            {
                "method": m,
                "N": n,
                "K": k,
                "result": r.as_dict() if isinstance(r, harness.Timing) else r,
            }
            for (m, n, k), r in results.items()
        ],
    }
    return md, raw


def section_table2(cfg: Config, ws: Workspace) -> tuple[str, dict[str, Any]]:
    """Seconds per round for K x N and every method, on ~120- and ~1,000-document queries."""
    note = _noise_note(cfg)
    for method in METHODS:  # compile (or load from Numba's cache) before timing anything
        estimator(method)(*_tiny_inputs(), 3, 2, cfg.threads)
    parts, raw = [], {}
    for key in ("mslr", "long"):
        md, r = _table2_one(cfg, ws, key)
        parts.append(md)
        raw[key] = r
    md = "\n\n".join(
        [
            f"## Time per round as in Table 2 of Oosterhuis (SIGIR 2022) ({cfg.threads} threads)",
            "Every method estimates the NDCG@K gradient (and, except PL-Rank-2, the Hessian) from "
            f"N sampled rankings per query, on margins after {cfg.warm_rounds} PL-Rank boosting "
            "rounds. The library is `plrank_grad_hess(..., hessian='raw')`; both baselines draw "
            "each ranking by Gumbel top-K over all D documents (two logarithms per document and "
            "sample). A cell whose time, extrapolated linearly from a measured cell with a "
            "smaller N or K, exceeds "
            f"{cfg.max_cell_seconds:.0f} s is skipped and says so.",
            *parts,
            note,
        ]
    )
    raw["config"] = {
        "Ks": cfg.Ks,
        "Ns": cfg.Ns,
        "threads": cfg.threads,
        "max_cell_seconds": cfg.max_cell_seconds,
    }
    raw["load_average"] = os.getloadavg()
    return md, raw


def _tiny_inputs() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.normal(size=30), rng.integers(0, 5, size=30).astype(float), np.array([0, 12, 30])


# --------------------------------------------------------------------------------------------
# Sections 3 and 4: fresh processes
# --------------------------------------------------------------------------------------------
def _probe(args: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run ``python -m benchmarks.probes ARGS`` from the repository root; its last JSON line."""
    full_env = {**os.environ, **(env or {})}
    full_env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(REPO), full_env.get("PYTHONPATH", "")) if p
    )
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.probes", *args],
        cwd=REPO,
        env=full_env,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"probe {args} failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _mb(kb: int | None) -> object:
    return "-" if kb is None else kb / 1024


def section_threads(cfg: Config, ws: Workspace) -> tuple[str, dict[str, Any]]:
    """Thread scaling and peak memory, one fresh process per configuration."""
    note = _noise_note(cfg)
    K, N = cfg.round_k, cfg.round_n
    runs = []
    for dataset, method in cfg.probe_methods:
        queries = cfg.mslr_queries if dataset == "mslr" else cfg.long_queries
        for n_jobs in sorted({1, cfg.threads}):
            result = _probe(
                [
                    "memory",
                    "--method",
                    method,
                    "--dataset",
                    dataset,
                    "--queries",
                    str(queries),
                    "--K",
                    str(K),
                    "--N",
                    str(N),
                    "--n-jobs",
                    str(n_jobs),
                    "--reps",
                    str(cfg.reps),
                    "--budget",
                    str(cfg.budget),
                ]
            )
            runs.append(result)
            print(
                f"  {dataset} {method} n_jobs={n_jobs}: {result['timing']['median']:.3g} s",
                flush=True,
            )
    rows = []
    for r in runs:
        one = next(
            x
            for x in runs
            if x["method"] == r["method"] and x["dataset"] == r["dataset"] and x["n_jobs"] == 1
        )
        rows.append(
            [
                r["dataset"],
                LABELS[r["method"]],
                r["n_jobs"],
                r["timing"]["median"],
                one["timing"]["median"] / r["timing"]["median"],
                _mb(r["input_kb"]),
                _mb(r["rss_before_kb"]),
                _mb(r["peak_kb"]),
                _mb(r["peak_increase_kb"]),
            ]
        )
    exact = all(r["peak_reset"] for r in runs)
    md = "\n\n".join(
        [
            f"## Thread scaling and peak memory (K={K}, N={N}; one fresh process per row)",
            "Random normal margins. Memory: resident set size before the call, its peak during one "
            "call on the full data, and the difference (the call's own working memory, Numba's "
            "allocations included). "
            + (
                "The peak mark was reset before the call (`/proc/self/clear_refs`)."
                if exact
                else "The peak mark could not be reset: the peak is the process's whole-life peak."
            ),
            harness.markdown_table(
                [
                    "data",
                    "method",
                    "threads",
                    "seconds",
                    "speedup vs 1 thread",
                    "input MB",
                    "RSS before MB",
                    "peak RSS MB",
                    "peak increase MB",
                ],
                rows,
            ),
            note,
        ]
    )
    return md, {"runs": runs, "load_average": os.getloadavg()}


def section_compile(cfg: Config, ws: Workspace) -> tuple[str, dict[str, Any]]:
    """First-call time in a fresh process without (empty cache dir) and with Numba's cache."""
    note = _noise_note(cfg)
    with tempfile.TemporaryDirectory(prefix="plrank-numba-cache-") as cache:
        cold = _probe(["compile"], env={"NUMBA_CACHE_DIR": cache})
        warm = _probe(["compile"], env={"NUMBA_CACHE_DIR": cache})
    threads = ["--threads", str(cfg.threads)]
    with tempfile.TemporaryDirectory(prefix="plrank-numba-cache-") as cache:
        cold_training = _probe(["first-training", *threads], env={"NUMBA_CACHE_DIR": cache})
        warm_training = _probe(["first-training", *threads], env={"NUMBA_CACHE_DIR": cache})
    caches = ("none (empty NUMBA_CACHE_DIR)", "on disk (same dir again)")
    rows = [
        [
            name,
            r["import_s"],
            r["first_call_s"],
            r["second_call_s"],
            r["first_from_rankings_s"],
            r["cache_files_after"],
        ]
        for name, r in zip(caches, (cold, warm))
    ]
    training_rows = [
        [
            name,
            r["import_s"],
            r["first_training_s"],
            r["second_training_s"],
            len(r["kernels"]),
            r["specialisations"],
        ]
        for name, r in zip(caches, (cold_training, warm_training))
    ]
    md = "\n\n".join(
        [
            "## First-call (compile) time in a fresh process",
            "Written by `python benchmarks/bench_round.py --sections compile` (and `make bench`). "
            "`import gbdt_plrank`, then the first and second `plrank_grad_hess` call on a tiny "
            "input, then the first `plrank_grad_hess_from_rankings` call, in seconds.",
            harness.markdown_table(
                [
                    "Numba cache",
                    "import",
                    "first call",
                    "second call",
                    "first from_rankings",
                    "cache files",
                ],
                rows,
            ),
            "The README's first training, in another fresh process: `import gbdt_plrank`, then "
            "`xgboost.train` with `plrank_objective()` and `custom_metric=obj.standardized_metric` "
            f"for 2 rounds on MQ2008 Fold1 ({cfg.threads} threads), then the same call again, in "
            "seconds; the kernels it compiled and their specialisations (listed in the "
            "`compile_time.json` the command writes).",
            harness.markdown_table(
                [
                    "Numba cache",
                    "import",
                    "first training",
                    "second training",
                    "kernels compiled",
                    "specialisations",
                ],
                training_rows,
            ),
            note,
        ]
    )
    return md, {
        "no_cache": cold,
        "cache": warm,
        "first_training_no_cache": cold_training,
        "first_training_cache": warm_training,
        "load_average": os.getloadavg(),
    }


def section_dask(cfg: Config, ws: Workspace) -> tuple[str, dict[str, Any]]:
    """Seconds per round on 1 and 2 local Dask workers (:mod:`benchmarks.dask_scaling`)."""
    from benchmarks import dask_scaling

    note = _noise_note(cfg)
    result = dask_scaling.measure(cfg.dask_queries, cfg.dask_rounds, cfg.dask_partitions)
    md = "\n\n".join(
        [
            "## Dask: seconds per round on 1 and 2 local workers",
            f"{result['data']}; `xgboost.dask.train`, depth 6, eta 0.1, single-threaded worker "
            "processes. PL-Rank: the keyed objective (K=10, N=100); LambdaMART: `rank:ndcg`. A "
            "round is the median time between the ends of consecutive rounds; the ratio 1 worker / "
            "2 workers is the speed-up, bounded by the cores other processes leave free.",
            dask_scaling.table(result["rows"]),
            note,
        ]
    )
    return md, {**result, "load_average": os.getloadavg()}


def _epoch_seconds(cfg: Config, data: synthetic.RankingData, batch_size: int) -> dict[str, Any]:
    """Seconds per epoch of the network backend: the times between consecutive epochs' ends."""
    from gbdt_plrank import PLRankOptions
    from gbdt_plrank._backends import BACKENDS, BoosterSettings
    from gbdt_plrank._training.plrank_plan import plrank_plan
    from gbdt_plrank.datasets import Split

    ends: list[float] = []
    options = PLRankOptions.checked(K=cfg.round_k, train_K=cfg.round_k, N=cfg.round_n)
    plan = plrank_plan(
        options,
        stopping_metric="policy",
        seed=0,
        n_jobs=cfg.threads,
        n_estimators=cfg.nn_epochs,
        early_stopping_rounds=None,
        callbacks=[lambda epoch, history: ends.append(time.perf_counter())],
    )
    qid = np.repeat(np.arange(data.n_queries), data.sizes)
    settings = BoosterSettings(
        n_threads=cfg.threads, seed=0, params={"batch_size": batch_size, "progress": False}
    )
    BACKENDS["torch"].train(settings, Split(data.X, data.y, qid), [], plan)
    times = np.diff(ends).tolist()  # the first epoch (compilation, first touches) left out
    return {"times": times, "median": float(np.median(times)), "mean": float(np.mean(times))}


def section_nn(cfg: Config, ws: Workspace) -> tuple[str, dict[str, Any]]:
    """Seconds per epoch of the PL-Rank network against one XGBoost round on the same data."""
    note = _noise_note(cfg)
    data, dtrain = ws.data("mslr"), ws.dmatrix("mslr")
    K, N, threads = cfg.round_k, cfg.round_n, cfg.threads
    networks = {b: _epoch_seconds(cfg, data, b) for b in (256, 64)}
    pl_obj = gbdt_plrank.plrank_objective(K, N, train_K=K, n_jobs=threads)
    plrank = xgboost.Booster(ws.plrank_params(), [dtrain])
    xgb_plrank = _time_rounds(lambda i: plrank.update(dtrain, i, fobj=pl_obj), cfg.xgb_rounds)
    ndcg_params = {
        "tree_method": "hist",
        "nthread": threads,
        "seed": 0,
        "objective": "rank:ndcg",
        "eval_metric": f"ndcg@{K}",
    }
    lambdamart = xgboost.Booster(ndcg_params, [dtrain])
    xgb_ndcg = _time_rounds(lambda i: lambdamart.update(dtrain, i), cfg.xgb_rounds)
    base = xgb_plrank["median"]
    rows = [
        *[
            [
                f"network, {b} queries per step: one epoch",
                f"{r['median']:.4f}",
                f"{r['median'] / base:.2f}",
            ]
            for b, r in networks.items()
        ],
        ["XGBoost, PL-Rank objective: one round", f"{base:.4f}", "1.00"],
        [
            "XGBoost, rank:ndcg: one round",
            f"{xgb_ndcg['median']:.4f}",
            f"{xgb_ndcg['median'] / base:.2f}",
        ],
    ]
    md = "\n\n".join(
        [
            "## The PL-Rank network: seconds per epoch against a GBDT round",
            _data_line(data),
            f"PL-Rank at K={K} (train_K={K}), N={N}, {threads} threads. Network: the torch backend "
            "of `plrank-nn` (2 sigmoid layers of 32 units, Adam; each epoch visits every query "
            "once), median over epochs after the first, no evaluation. XGBoost: depth 6 "
            "(default), `hist`, median over rounds after round 0. An epoch sees every training "
            "query once, as a boosting round does, but makes one optimiser step per batch.",
            harness.markdown_table(["step", "seconds (median)", "x PL-Rank round"], rows),
            note,
        ]
    )
    raw = {
        "network": networks,
        "xgboost_plrank": xgb_plrank,
        "xgboost_ndcg": xgb_ndcg,
        "load_average": os.getloadavg(),
    }
    return md, raw


RUNNERS = {
    "round": ("round_vs_xgboost", section_round),
    "pirank": ("pirank_objective", section_pirank),
    "table2": ("table2", section_table2),
    "threads": ("threads_memory", section_threads),
    "compile": ("compile_time", section_compile),
    "nn": ("nn_epoch", section_nn),
    "dask": ("dask_scaling", section_dask),
}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="PL-Rank benchmark suite (see the module doc).")
    parser.add_argument("--quick", action="store_true", help="tiny smoke configuration (seconds)")
    parser.add_argument(
        "--out",
        type=Path,
        default=REPO / "benchmarks" / "results",
        help="output folder (default benchmarks/results)",
    )
    parser.add_argument("--sections", nargs="+", choices=SECTIONS, default=list(SECTIONS))
    parser.add_argument("--threads", type=int, default=2, help="threads of every method")
    parser.add_argument(
        "--max-cell-seconds",
        type=float,
        default=None,
        help="skip Table 2 cells predicted to take longer (default 60)",
    )
    args = parser.parse_args(argv)
    cfg = Config.quick() if args.quick else Config()
    cfg = replace(cfg, threads=args.threads)
    if args.max_cell_seconds is not None:
        cfg = replace(cfg, max_cell_seconds=args.max_cell_seconds)
    ws = Workspace(cfg)
    start = time.perf_counter()
    env = harness.environment()
    summary = [
        "# gbdt_plrank benchmark" + (" (--quick smoke configuration)" if args.quick else ""),
        f"Environment: {json.dumps(env)}",
    ]
    for section in args.sections:
        name, runner = RUNNERS[section]
        print(f"== {section}", flush=True)
        md, raw = runner(cfg, ws)
        harness.write_section(args.out, name, md, raw)
        summary.append(md)
    total = time.perf_counter() - start
    summary.append(f"Total benchmark time: {total:.0f} s.")
    (args.out / "summary.md").write_text("\n\n".join(summary) + "\n")
    (args.out / "environment.json").write_text(
        json.dumps(
            {**env, "config": asdict(cfg), "total_seconds": total, "quick": args.quick}, indent=2
        )
        + "\n"
    )
    print(f"results in {args.out} ({total:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
