r"""Record PL-Rank's validation curves per query and round, to choose a stopping rule offline.

Each (dataset, fold, library, seed) trains the README's PL-Rank objective
(``plrank_objective(K=k)``: trained at 2k, N="auto") for a fixed number of rounds without early
stopping, at the harness's tree settings (``--trees harness``: eta 0.05, depth 6,
min_child_weight 0.1, lambda 1) or the libraries' own defaults (``--trees library``), and after
every round records, per validation query: NDCG@k of the ranking by score; the expected NDCG@k
of the policy of the standardised margins (the current stopping signal) from the training
seed's streams and from one fixed stream shared by all seeds; the policy's own expected NDCG@k
(fixed stream). The library's LambdaMART (XGBoost ``rank:ndcg``, LightGBM ``lambdarank``) is
recorded the same way once (it is deterministic). Test splits are recorded for the final check of
a chosen rule only (``research/stopping_rules.py`` chooses on validation).

    python research/stopping_curves.py --data mq2008 --libs xgb,lgb --seeds 0,1,2 --out /tmp/curves
    python research/stopping_curves.py --data mq2008 --N 25 --noise lattice --out /tmp/curves
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import gbdt_plrank  # noqa: F401  # isort: skip
import lightgbm as lgb
import numpy as np
import xgboost as xgb

from gbdt_plrank import PLRankOptions, plrank_objective
from gbdt_plrank._training.evaluation import STANDARD_SPREAD, STANDARDIZED_SAMPLES, PolicyEvaluator
from gbdt_plrank._training.options import HESSIAN_MODES, NOISES
from gbdt_plrank.cli._argtypes import int_list, text_list
from gbdt_plrank.datasets import Split
from gbdt_plrank.harness.data import load
from gbdt_plrank.harness.settings import TreeSettings
from gbdt_plrank.metrics import ndcg

#: The seed of the evaluation streams shared by every training seed.
FIXED_STREAM = 987654321

#: The trees: the harness's shared settings (its
#: :class:`~gbdt_plrank.harness.settings.TreeSettings`) or each library's defaults.
TREES = {
    "harness": {
        lib: TreeSettings().native_params(library)
        for lib, library in (("xgb", "xgboost"), ("lgb", "lightgbm"))
    },
    "library": {"xgb": {}, "lgb": {}},
}


class Recorder:
    """Per-round, per-query values of one training's margins on validation and test."""

    def __init__(self, ds, k: int, seed: int) -> None:
        self.ds, self.k = ds, k
        metric = PLRankOptions.checked(K=k).judged
        v = ds.vali
        self.std_seed = PolicyEvaluator(
            metric, None, _queries(v), n_samples=STANDARDIZED_SAMPLES, seed=seed, n_jobs=1
        )
        self.std_fixed = PolicyEvaluator(
            metric, None, _queries(v), n_samples=STANDARDIZED_SAMPLES, seed=FIXED_STREAM, n_jobs=1
        )
        self.pol_fixed = PolicyEvaluator(metric, None, _queries(v), seed=FIXED_STREAM, n_jobs=1)
        self.rows: dict[str, list[np.ndarray]] = {
            n: [] for n in ("val_rank", "std_seed", "std_fixed", "pol_fixed", "test_rank")
        }

    def add(self, val: np.ndarray, test: np.ndarray, policy: bool) -> None:
        v, t = self.ds.vali, self.ds.test
        self.rows["val_rank"].append(ndcg(v.y, val, v.qid, k=self.k, per_query=True))
        self.rows["test_rank"].append(ndcg(t.y, test, t.qid, k=self.k, per_query=True))
        if policy:
            s = float(val.std())
            z = val * (STANDARD_SPREAD / s) if s > 0 else val
            self.rows["std_seed"].append(self.std_seed.per_query(z))
            self.rows["std_fixed"].append(self.std_fixed.per_query(z))
            self.rows["pol_fixed"].append(self.pol_fixed.per_query(val))

    def arrays(self) -> dict[str, np.ndarray]:
        return {n: np.array(r, dtype=np.float32) for n, r in self.rows.items() if r}


def _queries(split) -> Split:
    """The labels of ``split`` grouped by query (what a policy's value reads)."""
    return Split(None, split.y.astype(np.float64), split.qid)


def _xgb(ds, params, rounds, obj, rec, policy):
    dtrain = xgb.DMatrix(ds.train.X, label=ds.train.y, qid=ds.train.qid)
    dval = xgb.DMatrix(ds.vali.X, label=ds.vali.y, qid=ds.vali.qid)
    dtest = xgb.DMatrix(ds.test.X, label=ds.test.y, qid=ds.test.qid)

    class Record(xgb.callback.TrainingCallback):
        def after_iteration(self, model, epoch, evals_log):
            rec.add(
                model.predict(dval, output_margin=True).astype(np.float64),
                model.predict(dtest, output_margin=True).astype(np.float64),
                policy,
            )
            return False

    xgb.train(params, dtrain, rounds, obj=obj, callbacks=[Record()])


def _lgb(ds, params, rounds, rec, policy):
    counts = np.unique(ds.train.qid, return_counts=True)[1]
    dtrain = lgb.Dataset(ds.train.X, label=ds.train.y, group=counts)

    def record(env):
        rec.add(
            env.model.predict(ds.vali.X, raw_score=True).astype(np.float64),
            env.model.predict(ds.test.X, raw_score=True).astype(np.float64),
            policy,
        )

    lgb.train(params, dtrain, rounds, callbacks=[record])


def train(
    data,
    fold,
    lib,
    method,
    seed,
    k,
    rounds,
    trees,
    out: Path,
    N="auto",
    noise="independent",
    hessian="abs",
) -> None:
    if method == "plrank" and N != "auto":
        method = f"plrank-N{N}"
    if method.startswith("plrank") and noise != "independent":
        method = f"{method}-{noise}"
    if method.startswith("plrank") and hessian != "abs":
        method = f"{method}-{hessian}"
    path = out / f"{data}_{trees}_{lib}_{method}_f{fold}_s{seed}.npz"
    if path.exists():
        return
    ds = load(data, fold, drop_empty_test_queries=True)
    rec = Recorder(ds, k, seed)
    tree = dict(TREES[trees][lib])
    if lib == "xgb":
        params = {**tree, "nthread": 1, "seed": seed, "disable_default_eval_metric": 1}
        if method.startswith("plrank"):
            params.update(objective="reg:squarederror", base_score=0.0)
            obj = plrank_objective(K=k, N=N, noise=noise, hessian=hessian, seed=seed, n_jobs=1)
        else:
            params["objective"] = "rank:ndcg"
            obj = None
        _xgb(ds, params, rounds, obj, rec, method.startswith("plrank"))
    else:
        params = {**tree, "num_threads": 1, "seed": seed, "metric": "None", "verbosity": -1}
        if method.startswith("plrank"):
            params["objective"] = plrank_objective(
                K=k, N=N, noise=noise, hessian=hessian, seed=seed, n_jobs=1
            )
        else:
            params["objective"] = "lambdarank"
        _lgb(ds, params, rounds, rec, method.startswith("plrank"))
    np.savez_compressed(path, **rec.arrays())
    print(path.name, flush=True)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--data", default="mq2008")
    p.add_argument("--folds", type=int_list, default="1,2,3,4,5")
    p.add_argument("--libs", type=text_list, default="xgb,lgb")
    p.add_argument("--seeds", type=int_list, default="0,1,2")
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--rounds", type=int, default=500)
    p.add_argument("--trees", default="harness", choices=sorted(TREES))
    p.add_argument("--out", default="/tmp/curves")
    p.add_argument("--N", default="auto")
    p.add_argument("--noise", default="independent", choices=NOISES)
    p.add_argument("--hessian", default="abs", choices=HESSIAN_MODES)
    a = p.parse_args()
    N = a.N if a.N == "auto" else int(a.N)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    for fold in a.folds:
        for lib in a.libs:
            train(a.data, fold, lib, "lambdamart", 0, a.k, a.rounds, a.trees, out)
            for seed in a.seeds:
                train(
                    a.data,
                    fold,
                    lib,
                    "plrank",
                    seed,
                    a.k,
                    a.rounds,
                    a.trees,
                    out,
                    N,
                    a.noise,
                    a.hessian,
                )


if __name__ == "__main__":
    main()
