"""The regression route on sparse click logs: what its fit and its stopping signal cost.

PL-Rank's default route from a deterministic ranker's clicks trains on the regression's click
probability when seen (:func:`gbdt_plrank.clicks.click_regression`: the position-based model's
likelihood with the position bias known, a small booster of the features, cross-fitted by
query), each query's rewards over their ideal DCG, early-stopped on the validation queries'
policy-aware rewards. With one session a query the validation rewards are a handful of clicks,
and cross-fitting fits each half of the queries on the other half's clicks alone. This script
trains the route on the logs of ``gbdt-plrank clicks CONFIG`` (the same loggers, logs and
position bias, fold by fold and seed by seed, through the harness) with:

- ``fit``: ``cross`` (the route: two query folds, each predicted by the model fitted on the
  other) or ``all`` (one model fitted on every training query's clicks and predicting every
  row: the regression's rewards need no independence from a query's own clicks, which only the
  doubly robust correction does);
- ``stop``: ``clicks`` (the route: the validation queries' policy-aware rewards) or
  ``regression`` (the validation rows' click probability predicted by the model fitted on every
  training query: the target PL-Rank is fitting, without the validation clicks' noise);

and ranks by the regression itself (``regression ranking``: the model fitted on every training
query, no PL-Rank), for reference. Every variant's validation and test NDCG@k on the true
labels, per query, is set against the learners of the configuration's own run (``--against``,
its output folder: the same queries), paired per query over the pooled folds and seeds (each
query's mean over the seeds first). Choose on the validation figures.

    python research/sparse_routes.py configs/clicks-yahoo-cascade.toml --sessions 1 \\
        --against benchmarks/results/clicks-yahoo-cascade \\
        --out benchmarks/results/sparse_routes_yahoo.md
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from gbdt_plrank.clicks import click_regression
from gbdt_plrank.clicks._click_model import display_counts, fit_relevance, relevance
from gbdt_plrank.harness.clicks import load_clicks_config
from gbdt_plrank.harness.clicks.run import _fit_plrank, _Fold
from gbdt_plrank.harness.data import dataset_label, load
from gbdt_plrank.harness.stats import paired
from gbdt_plrank.metrics import ndcg

#: The variants: name -> (fit, stop), ``None`` for the regression's own ranking.
VARIANTS: dict[str, tuple[str, str] | None] = {
    "route (cross-fit, stop on clicks)": ("cross", "clicks"),
    "fit on all, stop on clicks": ("all", "clicks"),
    "cross-fit, stop on regression": ("cross", "regression"),
    "fit on all, stop on regression": ("all", "regression"),
    "regression ranking": None,
}

#: The run's learners every variant is set against.
AGAINST = (
    "plrank-regression",
    "plrank-policy-aware",
    "plrank-naive",
    "lambdamart-unbiased-xgb",
    "lambdarank-position-lgb",
)

#: The regression's booster, as click_regression's defaults.
REGRESSION = {"n_rounds": 100, "max_depth": 3, "learning_rate": 0.1, "n_jobs": 1}


def per_query(split: Any, scores: np.ndarray, ks: tuple[int, ...]) -> dict[str, list[float]]:
    """NDCG@k of ``scores`` on the true labels of ``split``, per query, for every k."""
    return {str(k): ndcg(split.y, scores, split.qid, k=k, per_query=True).tolist() for k in ks}


def run_unit(config: Any, data: Any, seed: int, sessions: int) -> dict[str, dict[str, Any]]:
    """Every variant's validation and test NDCG per query for one fold and seed."""
    import xgboost as xgb

    unit = _Fold(config, data, seed)
    stochastic = unit.stochastic
    logs = unit.logs(stochastic, sessions)
    theta = unit.theta(logs["train"], stochastic=stochastic)
    train, vali, test = data.train, data.vali, data.test
    counts = display_counts(logs["train"], train.y.size, theta.size)
    shown = counts.shows.sum(axis=1) > 0
    start = time.perf_counter()
    whole = fit_relevance(
        xgb,
        train.X[shown],
        type(counts)(counts.shows[shown], counts.hits[shown]),
        theta,
        **REGRESSION,
    )
    fitted = {
        "all": relevance(xgb, whole, train.X),
        "cross": click_regression(
            logs["train"], train.X, train.qid, position_bias=theta, seed=seed
        ),
    }
    regression_seconds = time.perf_counter() - start
    stops = {
        "clicks": unit.rewards(logs, estimator="policy-aware", policy=False, stochastic=stochastic)[
            "vali"
        ],
        "regression": relevance(xgb, whole, vali.X),
    }
    out = {}
    for name, variant in VARIANTS.items():
        if variant is None:
            vali_scores, test_scores, seconds, rounds = (
                stops["regression"],
                relevance(xgb, whole, test.X),
                regression_seconds,
                REGRESSION["n_rounds"],
            )
        else:
            fit, stop = variant
            _, result = _fit_plrank(config, seed, data, fitted[fit], stops[stop])
            vali_scores, test_scores = result.vali_scores, result.scores
            seconds, rounds = result.seconds, result.best_round
        out[name] = {
            "vali_qid": np.unique(vali.qid).tolist(),
            "vali_ndcg": per_query(vali, vali_scores, config.k),
            "qid": np.unique(test.qid).tolist(),
            "ndcg": per_query(test, test_scores, config.k),
            "seconds": seconds,
            "best_round": rounds,
        }
    return out


def _values(records: list[dict[str, Any]], k: int, split: str) -> dict[tuple[str, int], float]:
    """(dataset, query) -> NDCG@k on ``split`` ("vali" or "test"), mean over the records."""
    qkey, nkey = ("vali_qid", "vali_ndcg") if split == "vali" else ("qid", "ndcg")
    sums: dict[tuple[str, int], list[float]] = defaultdict(list)
    for r in records:
        for q, v in zip(r[qkey], r[nkey][str(k)]):
            sums[r["dataset"], int(q)].append(v)
    return {key: float(np.mean(v)) for key, v in sums.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("config")
    parser.add_argument("--sessions", type=int, required=True)
    parser.add_argument("--against", required=True, help="the configuration's run folder")
    parser.add_argument("--records", help="where each fold and seed's records are kept (resumes)")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    config = load_clicks_config(args.config)
    store = Path(args.records or Path(args.out).with_suffix(".jsonl"))
    done = {}
    if store.is_file():
        for line in store.read_text().splitlines():
            r = json.loads(line)
            done[r["dataset"], r["seed"], r["variant"]] = r
    for data_name in config.datasets:
        for fold in config.folds:
            label = dataset_label(data_name, fold)
            for seed in range(config.seeds):
                if all((label, seed, v) in done for v in VARIANTS):
                    continue
                data = load(data_name, fold, drop_empty_test_queries=config.drop_empty_test_queries)
                for variant, record in run_unit(config, data, seed, args.sessions).items():
                    record = {"dataset": label, "seed": seed, "variant": variant, **record}
                    done[label, seed, variant] = record
                    with store.open("a") as fh:
                        fh.write(json.dumps(record) + "\n")
                print(label, seed, flush=True)
    runs: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for line in (Path(args.against) / "results.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r["learner"] in AGAINST and r["sessions"] == args.sessions and "vali_ndcg" in r:
            runs[r["learner"]].append(r)
    mine: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for (_, _, variant), r in done.items():
        mine[variant].append(r)
    lines = [
        "## The regression route on sparse click logs: its fit and its stopping signal",
        "",
        f"Command: `python research/sparse_routes.py {args.config} --sessions {args.sessions} "
        f"--against {args.against} --out {args.out}`",
        "",
        f"The logs of `{args.config}` at {args.sessions} session(s) per query (folds "
        f"{', '.join(map(str, config.folds))}, {config.seeds} seed(s); each query's NDCG the "
        "mean over the seeds). Mean NDCG on the true labels, and each variant minus each of the "
        "run's learners paired per query (mean [95% interval] verdict); training seconds per "
        "fold and seed (the regression ranking: its regressions').",
    ]
    for split in ("vali", "test"):
        for k in config.k:
            title = "validation" if split == "vali" else "test"
            lines += [
                "",
                f"### {title} NDCG@{k}",
                "",
                "| variant | mean | seconds | kept rounds | "
                + " | ".join(f"- {a}" for a in AGAINST)
                + " |",
                "|---|---:|---:|---:|" + "---:|" * len(AGAINST),
            ]
            theirs = {a: _values(runs[a], k, split) for a in AGAINST}
            for variant in VARIANTS:
                if not mine[variant]:
                    continue
                values = _values(mine[variant], k, split)
                cells = []
                for a in AGAINST:
                    if len(set(values) & set(theirs[a])) < 2:
                        cells.append("")
                        continue
                    p = paired(values, theirs[a])
                    cells.append(f"{p.interval} {p.verdict}")
                seconds = np.mean([r["seconds"] for r in mine[variant]])
                rounds = np.median([r["best_round"] for r in mine[variant]])
                lines.append(
                    f"| {variant} | {np.mean(list(values.values())):.4f} | {seconds:.1f} | "
                    f"{rounds:g} | " + " | ".join(cells) + " |"
                )
            for a in AGAINST:
                if theirs[a]:
                    lines.append(
                        f"| run: {a} | {np.mean(list(theirs[a].values())):.4f} | | | "
                        + " | ".join("" for _ in AGAINST)
                        + " |"
                    )
    text = "\n".join(lines) + "\n"
    Path(args.out).write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
