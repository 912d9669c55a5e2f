"""Which spread the standardised stopping signal divides the margins by: all rows', or within
queries.

``obj.standardized_metric`` is the expected NDCG@K of the policy of the validation margins
scaled to a spread of 3. Dividing by their standard deviation over all rows makes it depend on
per-query constants that change neither the ranking nor the policy (the between-query part of
the spread); dividing by the root mean within-query variance
(:func:`~gbdt_plrank._groups.within_query_spread`) does not; it stays the spread over all rows
for now (see :class:`~gbdt_plrank._training.evaluation.StandardizedMetric`). This
trains the headline's PL-Rank (``plrank_objective(K=10)`` in ``xgboost.train``, the settings
of ``configs/headline.toml``: eta 0.05, depth 6, min_child_weight 0.1, N 50, one thread) once
per fold and seed, computes both signals on validation after every round, and stops each with
the headline's patience of 50 rounds (XGBoost's rule: the first best round). It reports per
fold the kept round, the validation NDCG@10 of the ranking and the test NDCG@10 (test queries
with a relevant document) at that round, and the ratio of the two spreads at the kept round.

    nice -n 10 python research/standardized_scale.py --data mq2008:1,2,3 mq2007-agg:1 \\
        --out benchmarks/results/standardized_scale.md
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from gbdt_plrank import ndcg, plrank_objective
from gbdt_plrank._groups import within_query_spread
from gbdt_plrank._ranking_metric import RankingMetric
from gbdt_plrank._training.evaluation import STANDARD_SPREAD, STANDARDIZED_SAMPLES, PolicyEvaluator
from gbdt_plrank.datasets import Split
from gbdt_plrank.harness.data import load

SCALES = ("rows", "within")
PATIENCE, ROUNDS = 50, 1000


def stopped(values: list[float]) -> int | None:
    """The round kept by early stopping on ``values`` (None while it runs on)."""
    best = int(np.argmax(values))
    return best if len(values) - 1 - best >= PATIENCE else None


def fold_run(data: str, fold: int, seed: int) -> dict[str, dict[str, float]]:
    """Per scale: the kept round, the validation and test NDCG@10 there, the spreads' ratio."""
    import xgboost  # after gbdt_plrank, which sets its threads to wait passively

    ds = load(data, fold, drop_empty_test_queries=True)
    train, vali, test = ds.train, ds.vali, ds.test
    obj = plrank_objective(K=10, N=50, seed=seed, n_jobs=1)
    dtrain = xgboost.DMatrix(train.X, train.y, qid=train.qid)
    dvali = xgboost.DMatrix(vali.X, vali.y, qid=vali.qid)
    # the standardised signal's policy value: its metric, samples and streams
    value = PolicyEvaluator(
        RankingMetric("ndcg", 10, "exp"),
        None,
        Split(None, vali.y, vali.qid),
        n_samples=STANDARDIZED_SAMPLES,
        seed=seed,
        n_jobs=1,
    )
    curves: dict[str, list[float]] = {s: [] for s in SCALES}
    ratios: list[float] = []

    class Watch(xgboost.callback.TrainingCallback):
        def after_iteration(self, model, epoch, evals_log) -> bool:
            m = model.predict(dvali, output_margin=True).astype(np.float64)
            spread = {"rows": float(m.std()), "within": within_query_spread(m, vali.group_ptr)}
            ratios.append(spread["within"] / spread["rows"])
            for scale, s in spread.items():
                curves[scale].append(float(value.per_query(m * (STANDARD_SPREAD / s)).mean()))
            return all(stopped(c) is not None for c in curves.values())

    params = {
        "eta": 0.05,
        "max_depth": 6,
        "min_child_weight": 0.1,
        "lambda": 1.0,
        "nthread": 1,
        "base_score": 0.0,
        "disable_default_eval_metric": 1,
        "seed": seed,
    }
    bst = xgboost.train(params, dtrain, ROUNDS, obj=obj, callbacks=[Watch()])
    out = {}
    for scale, values in curves.items():
        kept = stopped(values)
        kept = int(np.argmax(values)) if kept is None else kept
        at = (0, kept + 1)
        m_vali = bst.predict(dvali, output_margin=True, iteration_range=at)
        m_test = bst.predict(xgboost.DMatrix(test.X), output_margin=True, iteration_range=at)
        out[scale] = {
            "round": kept,
            "vali": float(ndcg(vali.y, m_vali, vali.qid, k=10)),
            "test": float(ndcg(test.y, m_test, test.qid, k=10)),
            "ratio": ratios[kept],
        }
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--data",
        nargs="+",
        default=["mq2008:1,2,3"],
        help="datasets and their folds, as name:fold,fold,...",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    command = (
        f"python research/standardized_scale.py --data {' '.join(args.data)} "
        f"--seed {args.seed} --out {args.out}"
    )
    lines = [
        "# The standardised stopping signal: spread over all rows or within queries",
        "",
        f"Written by `{command}`. rows: margins divided by their standard deviation over "
        "the validation rows (times 3); within: by the root mean within-query variance. "
        "ratio: within-query spread / spread over rows at the kept round.",
        "",
        "| data | fold | scale | kept round | vali NDCG@10 | test NDCG@10 | ratio |",
        "|---|---|---|---|---|---|---|",
    ]
    for entry in args.data:
        data, _, folds = entry.partition(":")
        for fold in [int(f) for f in folds.split(",")] if folds else [1]:
            for scale, v in fold_run(data, fold, args.seed).items():
                lines.append(
                    f"| {data} | {fold} | {scale} | {v['round']} | {v['vali']:.4f} | "
                    f"{v['test']:.4f} | {v['ratio']:.3f} |"
                )
                print(lines[-1], flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
