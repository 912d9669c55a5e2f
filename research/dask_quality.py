"""Test NDCG@5 of PL-Rank trained on 2 Dask workers against single-machine training, MQ2008 Fold1.

For each seed, every setting below trains on MQ2008 Fold1's training split (K=5, N=50, 30
rounds, eta 0.1, depth 4, one thread) and scores each test query's NDCG@5:

- ``single``: :class:`~gbdt_plrank.PLRankRanker` in this process;
- ``P parts``: :class:`~gbdt_plrank.dask.DaskPLRankRanker` on a ``LocalCluster`` of 2
  single-threaded worker processes, the training rows (sorted by query id) cut at query
  boundaries into ``P`` partitions of about equal rows, partition ``i`` placed on worker
  ``i mod 2`` (a fixed placement: Dask's own placement varies from run to run, and with it the
  rows each worker holds).

Settings: XGBoost ``hist`` with its default ``max_bin`` of 256; XGBoost ``hist`` with
``max_bin=1100`` (8 x 1100 >= 8516, the most distinct values of a feature here, so XGBoost's
quantile summaries are exact on every worker and the merged cuts equal the single-machine cuts);
XGBoost ``approx``; LightGBM. Every distributed setting is compared with the single-machine run
of the same backend and parameters: its seed-to-seed spread, and the paired per-query test of the
comparison report (:func:`gbdt_plrank.harness.stats.paired`, each query's NDCG@5 averaged over
the seeds first). The cut points of each distributed XGBoost setting are compared with the
single-machine cuts too (``xgboost.DMatrix.get_quantile_cut`` on the worker's training data).

Each distributed setting of the first ``--repeat`` seeds is trained a second time on the same
partitions and workers, to see whether the booster's distributed training repeats itself.
Finished trainings are appended to ``OUT.jsonl`` as they end, so a rerun resumes.

    nice -n 10 python research/dask_quality.py --seeds 20 --repeat 20 \\
        --out benchmarks/results/dask_quality.md
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# gbdt_plrank first: its import sets the OpenMP wait before xgboost loads OpenMP.
import gbdt_plrank  # noqa: F401  # isort: skip
import cloudpickle
import numpy as np
import xgboost
from distributed import Client, LocalCluster

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.dask_scaling import placed_partitions  # noqa: E402
from gbdt_plrank import PLRankRanker  # noqa: E402
from gbdt_plrank.dask import DaskPLRankRanker  # noqa: E402
from gbdt_plrank.datasets import load_dataset  # noqa: E402
from gbdt_plrank.harness.stats import paired  # noqa: E402
from gbdt_plrank.metrics import ndcg  # noqa: E402

# The cut probe below is defined here; workers receive it by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])

#: Suffix of the settings trained a second time (``--repeat``).
AGAIN = " (again)"

#: The trainings' options; the others (the Hessian among them) are the ranker's defaults. The
#: recorded figures train PL-Rank's own gradient (``deep_weight=1.0``; the weights are computed
#: per query, so a partition holding whole queries computes them as one machine does) for every
#: round (``early_stopping=False``: one process would hold out a tenth of MQ2008's queries by
#: default, which Dask does not).
OPTIONS = {
    "K": 5,
    "N": 50,
    "deep_weight": 1.0,
    "early_stopping": False,
    "n_estimators": 30,
    "learning_rate": 0.1,
    "max_depth": 4,
    "n_jobs": 1,
}


@dataclass(frozen=True)
class Setting:
    """A backend with its native parameters, trained in one process or on ``parts`` partitions."""

    name: str
    backend: str
    params: dict[str, Any] = field(default_factory=dict)
    parts: int | None = None  # None: single machine

    @property
    def baseline(self) -> str:
        """The single-machine setting this one is compared with."""
        return self.name.split(",")[0] + ", single"


SETTINGS = [
    Setting("xgboost hist, single", "xgboost"),
    Setting("xgboost hist, 2 parts", "xgboost", parts=2),
    Setting("xgboost hist, 4 parts", "xgboost", parts=4),
    Setting("xgboost hist max_bin=1100, single", "xgboost", {"max_bin": 1100}),
    Setting("xgboost hist max_bin=1100, 4 parts", "xgboost", {"max_bin": 1100}, parts=4),
    Setting("xgboost approx, single", "xgboost", {"tree_method": "approx"}),
    Setting("xgboost approx, 4 parts", "xgboost", {"tree_method": "approx"}, parts=4),
    Setting("lightgbm, single", "lightgbm"),
    Setting("lightgbm, 2 parts", "lightgbm", parts=2),
    Setting("lightgbm, 4 parts", "lightgbm", parts=4),
]


def _sorted_split(split: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    order = np.argsort(split.qid, kind="stable")
    X = split.X.toarray() if hasattr(split.X, "toarray") else np.asarray(split.X)
    return X[order], split.y[order], split.qid[order]


def _cuts(X: np.ndarray, params: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """XGBoost's single-machine cut points of ``X`` under ``params`` (``hist``)."""
    data = xgboost.DMatrix(X)
    params = {**params, "tree_method": "hist", "base_score": 0.0}
    xgboost.train(params, data, 1, obj=lambda p, d: (np.zeros_like(p), np.ones_like(p)))
    return data.get_quantile_cut()


class _CutsProbe:
    """A zero-gradient objective that writes its worker's cut points to ``folder`` once built."""

    def __init__(self, folder: str) -> None:
        self.folder, self.calls = folder, 0

    def __call__(self, preds: np.ndarray, dtrain: Any) -> tuple[np.ndarray, np.ndarray]:
        import os

        if self.calls == 1:  # the cuts exist once the first tree is built
            ptr, values = dtrain.get_quantile_cut()
            np.savez(f"{self.folder}/{os.getpid()}.npz", ptr=ptr, values=values)
        self.calls += 1
        return np.zeros_like(preds), np.ones_like(preds)


def _features_with_other_cuts(
    client: Client, X: Any, Xs: np.ndarray, params: dict[str, Any]
) -> int:
    """Features whose cut points in ``xgboost.dask.train`` on ``X`` differ from one process's."""
    import tempfile

    import xgboost.dask as dxgb

    ptr, values = _cuts(Xs, params)
    params = {**params, "tree_method": "hist", "base_score": 0.0}
    with tempfile.TemporaryDirectory() as folder:
        dxgb.train(client, params, dxgb.DaskDMatrix(client, X), 2, obj=_CutsProbe(folder))
        worker = [np.load(f) for f in sorted(Path(folder).glob("*.npz"))]
    other = set()
    for w in worker:
        for j in range(ptr.shape[0] - 1):
            mine = w["values"][w["ptr"][j] : w["ptr"][j + 1]]
            if not np.array_equal(mine, values[ptr[j] : ptr[j + 1]]):
                other.add(j)
    return len(other)


def _train(setting: Setting, seed: int, data: Any, pieces: Any) -> np.ndarray:
    options = {
        **OPTIONS,
        "backend": setting.backend,
        "random_state": seed,
        "params": setting.params or None,
    }
    tr, te = data.train, data.test
    if setting.parts is None:
        ranker = PLRankRanker(**options).fit(tr.X, tr.y, group=tr.qid)
        scores = ranker.predict(te.X)
    else:
        X, y, qid = pieces[setting.parts]
        ranker = DaskPLRankRanker(**options).fit(X, y, group=qid)
        scores = ranker.to_local().predict(te.X)
    return ndcg(te.y, scores.astype(np.float32), te.qid, k=5, per_query=True)


def _summary(runs: dict[tuple[str, int], np.ndarray], seeds: list[int]) -> str:
    lines = [
        "| setting | seeds | mean | sd | min | max | seeds inside single's [min, max] | "
        "paired diff vs single [95% CI] | p (randomization) | verdict |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in SETTINGS:
        done = [k for k in seeds if (s.name, k) in runs]
        if not done:
            continue
        means = np.array([runs[s.name, k].mean() for k in done])
        row = [
            s.name,
            str(len(done)),
            f"{means.mean():.4f}",
            f"{means.std(ddof=1):.4f}" if len(done) > 1 else "-",
            f"{means.min():.4f}",
            f"{means.max():.4f}",
        ]
        base = [k for k in seeds if (s.baseline, k) in runs]
        if s.parts is None or not base:
            lines.append("| " + " | ".join([*row, "", "", "", ""]) + " |")
            continue
        bmeans = np.array([runs[s.baseline, k].mean() for k in base])
        inside = int(np.sum((means >= bmeans.min()) & (means <= bmeans.max())))
        a = dict(enumerate(np.mean([runs[s.name, k] for k in done], axis=0)))
        b = dict(enumerate(np.mean([runs[s.baseline, k] for k in base], axis=0)))
        p = paired(a, b)
        row += [f"{inside} of {len(done)}", p.interval, f"{p.p_randomization:.3f}", p.verdict]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument(
        "--repeat",
        type=int,
        default=5,
        help="train the distributed settings of the first REPEAT seeds again",
    )
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/dask_quality.md"))
    args = parser.parse_args()
    store = args.out.with_suffix(".jsonl")
    runs: dict[tuple[str, int], np.ndarray] = {}
    if store.exists():
        for line in store.read_text().splitlines():
            r = json.loads(line)
            runs[r["setting"], r["seed"]] = np.array(r["per_query"])
    data = load_dataset("mq2008", fold=1)
    X, y, qid = _sorted_split(data.train)
    seeds = list(range(args.seeds))
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
    ):
        pieces = {p: placed_partitions(client, X, y, qid, p) for p in (2, 4)}
        cuts = {
            s.name: _features_with_other_cuts(client, pieces[s.parts][0], X, s.params)
            for s in SETTINGS
            if s.parts and s.backend == "xgboost" and s.params.get("tree_method", "hist") == "hist"
        }
        todo = [(s, s.name, seed) for seed in seeds for s in SETTINGS]
        todo += [
            (s, s.name + AGAIN, seed) for seed in range(args.repeat) for s in SETTINGS if s.parts
        ]
        for s, name, seed in todo:
            if (name, seed) in runs:
                continue
            per_query = _train(s, seed, data, pieces)
            runs[name, seed] = per_query
            with store.open("a") as fh:
                fh.write(
                    json.dumps({"setting": name, "seed": seed, "per_query": per_query.tolist()})
                    + "\n"
                )
            print(f"seed {seed} {name:40s} {per_query.mean():.4f}", flush=True)
    again = {
        s.name: sum(
            not np.array_equal(runs[s.name, k], runs[s.name + AGAIN, k]) for k in range(args.repeat)
        )
        for s in SETTINGS
        if s.parts
    }
    table = "\n\n".join(
        [
            f"MQ2008 Fold1, test NDCG@5 over seeds 0-{args.seeds - 1}; "
            f"`python research/dask_quality.py --seeds {args.seeds} --repeat {args.repeat}`.",
            _summary(runs, seeds),
            "Features (of 46) whose cut points on the workers differ from the single-machine cuts: "
            + ", ".join(f"{k}: {v}" for k, v in cuts.items())
            + ".",
            f"Trained again on the same partitions and workers (seeds 0-{args.repeat - 1}), the "
            "per-query test NDCG@5 differs from the first training in: "
            + ", ".join(f"{k}: {v} of {args.repeat}" for k, v in again.items())
            + ".",
        ]
    )
    print(table)
    args.out.write_text(table + "\n")


if __name__ == "__main__":
    main()
