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
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import time
from pathlib import Path

# gbdt_plrank first: its import sets OMP_WAIT_POLICY=PASSIVE before xgboost loads OpenMP.
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


def _partitioned(client: Client, n_queries: int, n_parts: int):
    """The synthetic set on the workers, cut at query boundaries into ``n_parts`` partitions."""
    data = mslr_like(n_queries=n_queries, seed=0)
    ptr = data.group_ptr
    cuts = np.unique(ptr[np.searchsorted(ptr, np.linspace(0, ptr[-1], n_parts + 1))])
    qid = np.repeat(np.arange(data.n_queries), data.sizes)
    arrays = []
    for values in (data.X, data.y, qid):
        pieces = client.scatter([values[a:b] for a, b in itertools.pairwise(cuts)])
        arrays.append(da.concatenate([
            da.from_delayed(f, shape=(b - a, *values.shape[1:]), dtype=values.dtype)
            for f, (a, b) in zip(pieces, itertools.pairwise(cuts))
        ]))
    return arrays


def _seconds_per_round(client: Client, X, y, qid, rounds: int, plrank: bool) -> float:
    """Median wall time between the ends of consecutive rounds (setup and round 0 excluded)."""
    if plrank:
        keys = query_keys(qid)
        dtrain = dxgb.DaskDMatrix(client, X, y, qid=keys.astype(np.int64), label_lower_bound=keys)
        params = {**PARAMS, "base_score": 0.0, "disable_default_eval_metric": 1}
        obj = keyed_plrank_objective(K=10, N=100, seed=0)
    else:
        dtrain = dxgb.DaskDMatrix(client, X, y, qid=qid)
        params, obj = {**PARAMS, "objective": "rank:ndcg"}, None
    booster = dxgb.train(client, params, dtrain, rounds, obj=obj, callbacks=[_Clock()])["booster"]
    clock = np.array([float(booster.attr(f"clock{i}")) for i in range(rounds)])
    return float(np.median(np.diff(clock)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    rows = []
    for workers in (1, 2):
        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster, Client(cluster) as client:
            X, y, qid = _partitioned(client, args.queries, args.partitions)
            if workers == 1:
                print(f"{args.queries} queries, {X.shape[0]} documents, {X.shape[1]} features, "
                      f"{len(X.chunks[0])} partitions, {args.rounds} rounds")
            for name in ("PL-Rank", "LambdaMART"):
                per_round = _seconds_per_round(client, X, y, qid, args.rounds, name == "PL-Rank")
                rows.append({"method": name, "workers": workers, "seconds_per_round": per_round,
                             "load": os.getloadavg()[0]})
                print(f"{name:10s} {workers} worker(s): {per_round:.3f} s/round "
                      f"(load {os.getloadavg()[0]:.1f})", flush=True)
    table = ["| method | 1 worker s/round | 2 workers s/round | ratio 1/2 |", "|---|---|---|---|"]
    for name in ("PL-Rank", "LambdaMART"):
        one, two = (r["seconds_per_round"] for r in rows if r["method"] == name)
        table.append(f"| {name} | {one:.3f} | {two:.3f} | {one / two:.2f} |")
    print("\n".join(table))
    if args.out is not None:
        args.out.write_text("\n".join(table) + "\n")
        args.out.with_suffix(".json").write_text(json.dumps({"args": vars(args) | {"out": str(args.out)}, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
