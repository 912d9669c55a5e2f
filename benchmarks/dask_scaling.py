"""Seconds per boosting round on 1 and 2 local Dask workers: PL-Rank and LambdaMART (XGBoost).

A synthetic MSLR-shaped set (:func:`benchmarks.synthetic.mslr_like`, 136 features) is cut into
partitions of whole queries, persisted on a ``LocalCluster`` of ``w`` single-threaded worker
processes, and trained with

- PL-Rank: ``xgboost.dask.train`` with :func:`gbdt_plrank.dask.keyed_plrank_objective` (K=10,
  N=100) and :func:`gbdt_plrank.dask.query_keys`, the path ``DaskPLRankRanker`` trains through;
- LambdaMART: ``xgboost.dask.train`` with ``rank:ndcg``;

both with ``max_depth=6``, ``eta=0.1``, ``tree_method="hist"``, evaluating nothing. A round's
cost is the median time between the ends of consecutive rounds (a callback stamps the clock into
the booster), so loading the data and compiling the kernels on the workers do not count. The
ratio 1 worker / 2 workers is the speed-up; on a machine whose cores other processes share it is
bounded by what they leave.

    python benchmarks/dask_scaling.py [--queries 20000] [--rounds 10] [--out FILE.md]

``make bench`` runs it as its section ``dask`` (``benchmarks/bench_round.py --sections dask``:
20,000 queries, 8 rounds, 8 partitions; ``--quick``: 200 queries, 3 rounds, 4 partitions).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

# gbdt_plrank first: its import sets the OpenMP wait before xgboost loads OpenMP.
import gbdt_plrank  # noqa: F401  # isort: skip
import dask.array as da
import numpy as np
import xgboost
import xgboost.dask as dxgb
from distributed import Client, LocalCluster

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.synthetic import mslr_like  # noqa: E402
from gbdt_plrank.dask import keyed_plrank_objective, query_keys  # noqa: E402

PARAMS = {"tree_method": "hist", "max_depth": 6, "eta": 0.1, "eval_metric": "ndcg@10"}


class _Clock(xgboost.callback.TrainingCallback):
    """Stamps the wall time after every round into the booster's attributes."""

    def after_iteration(self, model, epoch, evals_log) -> bool:
        model.set_attr(**{f"clock{epoch}": repr(time.time())})
        return False


def placed_partitions(
    client: Client, X: np.ndarray, y: np.ndarray, qid: np.ndarray, n_parts: int
) -> tuple[da.Array, da.Array, da.Array]:
    """Rows sorted by ``qid`` cut at query boundaries into ``n_parts`` partitions on the workers.

    Partition ``i`` (about equal rows) is placed on the ``i mod w``-th of the ``w`` workers (by
    address), so the rows each worker trains on do not depend on Dask's placement.
    """
    starts = np.flatnonzero(np.r_[True, qid[1:] != qid[:-1], True])
    cuts = np.unique(starts[np.searchsorted(starts, np.linspace(0, qid.shape[0], n_parts + 1))])
    workers = sorted(client.scheduler_info()["workers"])
    spans = list(itertools.pairwise(cuts))
    arrays = []
    for values in (X, y, qid):
        parts = [
            client.scatter(values[a:b], workers=[workers[i % len(workers)]])
            for i, (a, b) in enumerate(spans)
        ]
        arrays.append(
            da.concatenate(
                [
                    da.from_delayed(f, shape=(b - a, *values.shape[1:]), dtype=values.dtype)
                    for f, (a, b) in zip(parts, spans)
                ]
            )
        )
    return arrays[0], arrays[1], arrays[2]


def _seconds_per_round(client: Client, X, y, qid, rounds: int, plrank: bool) -> float:
    """Median wall time between the ends of consecutive rounds (setup and round 0 excluded)."""
    if plrank:
        keys = query_keys(qid)
        dtrain = dxgb.DaskDMatrix(client, X, y, qid=keys.astype(np.int64), label_lower_bound=keys)
        params = {**PARAMS, "base_score": 0.0, "disable_default_eval_metric": 1}
        obj = keyed_plrank_objective(K=10, N=100, train_K=10, seed=0)
    else:
        dtrain = dxgb.DaskDMatrix(client, X, y, qid=qid)
        params, obj = {**PARAMS, "objective": "rank:ndcg"}, None
    booster = dxgb.train(client, params, dtrain, rounds, obj=obj, callbacks=[_Clock()])["booster"]
    clock = np.array([float(booster.attr(f"clock{i}")) for i in range(rounds)])
    return float(np.median(np.diff(clock)))


def measure(queries: int, rounds: int, partitions: int) -> dict[str, Any]:
    """Seconds per round of PL-Rank and LambdaMART on 1 and then 2 local workers.

    Returns ``{"data": a one-line description, "rows": [{"method", "workers",
    "seconds_per_round", "load"}, ...]}``.
    """
    data = mslr_like(n_queries=queries, seed=0)
    qid = np.repeat(np.arange(data.n_queries), data.sizes)
    described = (
        f"{queries} queries, {qid.shape[0]} documents, {data.X.shape[1]} features, "
        f"{partitions} partitions, {rounds} rounds"
    )
    print(described, flush=True)
    rows = []
    for workers in (1, 2):
        with (
            LocalCluster(
                n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
            ) as cluster,
            Client(cluster) as client,
        ):
            X, y, q = placed_partitions(client, data.X, data.y, qid, partitions)
            for name in ("PL-Rank", "LambdaMART"):
                per_round = _seconds_per_round(client, X, y, q, rounds, name == "PL-Rank")
                rows.append(
                    {
                        "method": name,
                        "workers": workers,
                        "seconds_per_round": per_round,
                        "load": os.getloadavg()[0],
                    }
                )
                print(
                    f"{name:10s} {workers} worker(s): {per_round:.3f} s/round "
                    f"(load {os.getloadavg()[0]:.1f})",
                    flush=True,
                )
    return {"data": described, "rows": rows}


def table(rows: list[dict[str, Any]]) -> str:
    """Seconds per round on 1 and 2 workers and their ratio, one line per method."""
    lines = ["| method | 1 worker s/round | 2 workers s/round | ratio 1/2 |", "|---|---|---|---|"]
    for name in ("PL-Rank", "LambdaMART"):
        one, two = (r["seconds_per_round"] for r in rows if r["method"] == name)
        lines.append(f"| {name} | {one:.3f} | {two:.3f} | {one / two:.2f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    result = measure(args.queries, args.rounds, args.partitions)
    print(table(result["rows"]))
    if args.out is not None:
        args.out.write_text(table(result["rows"]) + "\n")
        args.out.with_suffix(".json").write_text(
            json.dumps({"args": vars(args) | {"out": str(args.out)}, **result}, indent=1)
        )


if __name__ == "__main__":
    main()
