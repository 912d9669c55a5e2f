"""The regression route from clicks: what its features, its fit and its stopping signal cost.

PL-Rank's default route from a deterministic ranker's clicks trains on the regression's click
probability when seen (:func:`gbdt_plrank.clicks.click_regression`: the position-based model's
likelihood with the position bias known, a small booster of the features, cross-fitted by
query), each query's rewards over their ideal DCG, early-stopped on the validation queries'
policy-aware rewards. This script trains the route on the logs of ``gbdt-plrank clicks CONFIG``
(the same loggers, logs and position bias, fold by fold and seed by seed, through the harness)
with:

- ``features``: ``raw`` or ``centred`` (each feature minus its query's mean:
  ``click_regression(features=...)``); web features share a level within a query (a query's
  documents all score high on a term count when its terms are common), which a pointwise model
  compares across queries;
- ``fit``: ``cross`` (two query folds, each predicted by the model fitted on the other) or
  ``all`` (one model fitted on every training query's clicks and predicting every row: the
  regression's rewards need no independence from a query's own clicks, which only the doubly
  robust correction does);
- ``stop``: ``clicks`` (the validation queries' policy-aware rewards) or ``regression`` (the
  validation rows' click probability predicted by the model fitted on every training query:
  the target PL-Rank is fitting, without the validation clicks' noise, which one session a
  query makes large);

and ranks by the regression itself (``regression ranking``: the model fitted on every training
query, no PL-Rank), for reference. ``--regression-rounds R,R`` runs every variant at each of
those boosting rounds of the regression (the configuration's ``regression_rounds``), which
sets how smooth its estimate is. Every variant's validation and test NDCG@k on the true
labels, per query, is set against the learners of the configuration's own run (``--against``,
its output folder: the same queries), paired per query over the pooled folds and seeds (each
query's mean over the seeds first). Choose on the validation figures. ``--folds`` and
``--seeds`` take a part of the configuration's.

    python research/regression_route.py configs/clicks-yahoo-cascade.toml --sessions 1 \\
        --variants centred --regression-rounds 5,10,30,50,100 \\
        --against benchmarks/results/clicks-yahoo-cascade \\
        --out benchmarks/results/regression_route_yahoo.md
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
from gbdt_plrank.clicks._click_model import (
    display_counts,
    fit_relevance,
    query_centred,
    relevance,
)
from gbdt_plrank.harness.clicks import load_clicks_config
from gbdt_plrank.harness.clicks.run import _fit_plrank, _Fold
from gbdt_plrank.harness.data import dataset_label, load
from gbdt_plrank.harness.stats import paired
from gbdt_plrank.metrics import ndcg

#: The variants: name -> (features, fit, stop); for the regression's own ranking, (features,
#: None, None). ``--variants`` takes their keys (:data:`KEYS`).
VARIANTS: dict[str, tuple[str, str | None, str | None]] = {
    "raw features (cross-fit, stop on clicks)": ("raw", "cross", "clicks"),
    "centred features (cross-fit, stop on clicks)": ("centred", "cross", "clicks"),
    "centred, fit on all": ("centred", "all", "clicks"),
    "centred, stop on regression": ("centred", "cross", "regression"),
    "centred, fit on all, stop on regression": ("centred", "all", "regression"),
    "raw regression ranking": ("raw", None, None),
    "centred regression ranking": ("centred", None, None),
}

#: Each variant's key on the command line.
KEYS = dict(
    zip(
        (
            "raw",
            "centred",
            "centred-all",
            "centred-stop",
            "centred-all-stop",
            "raw-ranking",
            "centred-ranking",
        ),
        VARIANTS,
    )
)

#: The run's learners every variant is set against.
AGAINST = (
    "plrank-regression",
    "plrank-policy-aware",
    "plrank-naive",
    "lambdamart-unbiased-xgb",
    "lambdarank-position-lgb",
)

#: The regression's booster, as click_regression's defaults (its rounds: the configuration's
#: ``regression_rounds``).
REGRESSION = {"max_depth": 3, "learning_rate": 0.1, "n_jobs": 1}


def per_query(split: Any, scores: np.ndarray, ks: tuple[int, ...]) -> dict[str, list[float]]:
    """NDCG@k of ``scores`` on the true labels of ``split``, per query, for every k."""
    return {str(k): ndcg(split.y, scores, split.qid, k=k, per_query=True).tolist() for k in ks}


def _regressions(
    unit: Any, logs: Any, theta: np.ndarray, features: str, seed: int
) -> dict[str, Any]:
    """The regression on ``features``: fitted on every training query (its training,
    validation and test rows' estimates) and cross-fitted (its training rows'), and the
    seconds the two took."""
    import xgboost as xgb

    train, vali, test = unit.data.train, unit.data.vali, unit.data.test
    rounds = unit.config.regression_rounds
    start = time.perf_counter()
    X = {
        name: query_centred(split.X, split.qid) if features == "centred" else split.X
        for name, split in (("train", train), ("vali", vali), ("test", test))
    }
    counts = display_counts(logs["train"], train.y.size, theta.size)
    shown = counts.shown()
    whole = fit_relevance(
        xgb,
        X["train"][shown],
        counts.take(shown),
        theta,
        n_rounds=rounds,
        **REGRESSION,
    )
    out = {name: relevance(xgb, whole, x) for name, x in X.items()}
    out["cross"] = click_regression(
        logs["train"],
        train.X,
        train.qid,
        position_bias=theta,
        n_rounds=rounds,
        seed=seed,
        features=features,
    )
    out["seconds"] = time.perf_counter() - start
    return out


def run_unit(
    config: Any, data: Any, seed: int, sessions: int, variants: list[str]
) -> dict[str, dict[str, Any]]:
    """The validation and test NDCG per query of each of ``variants`` for one fold and seed."""
    unit = _Fold(config, data, seed)
    stochastic = unit.stochastic
    logs = unit.logs(stochastic, sessions)
    theta = unit.theta(logs, stochastic=stochastic)
    vali, test = data.vali, data.test
    regressions = {
        f: _regressions(unit, logs, theta, f, seed) for f in {VARIANTS[v][0] for v in variants}
    }
    clicks = unit.rewards(logs, estimator="policy-aware", policy=False, stochastic=stochastic)
    out = {}
    for name in variants:
        features, fit, stop = VARIANTS[name]
        reg = regressions[features]
        if fit is None:
            vali_scores, test_scores, seconds, rounds = (
                reg["vali"],
                reg["test"],
                reg["seconds"],
                config.regression_rounds,
            )
        else:
            y = reg["cross"] if fit == "cross" else reg["train"]
            y_vali = clicks["vali"] if stop == "clicks" else reg["vali"]
            _, result = _fit_plrank(config, seed, data, y, y_vali)
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


def named(variant: str, rounds: int | None) -> str:
    """A variant's name in the records and tables: with its regression's rounds where
    ``--regression-rounds`` sets them."""
    return variant if rounds is None else f"{variant}, {rounds} regression rounds"


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
    parser.add_argument("--folds", help="comma-separated, a part of the configuration's")
    parser.add_argument("--seeds", type=int, help="the first seeds of the configuration's")
    parser.add_argument(
        "--variants", default=",".join(KEYS), help=f"comma-separated, of {', '.join(KEYS)}"
    )
    parser.add_argument(
        "--regression-rounds",
        help="comma-separated: every variant at each of these regression_rounds (default: the "
        "configuration's)",
    )
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    overrides: dict[str, Any] = {}
    if args.folds:
        overrides["folds"] = [int(f) for f in args.folds.split(",")]
    if args.seeds:
        overrides["seeds"] = args.seeds
    config = load_clicks_config(args.config, overrides=overrides)
    variants = [KEYS[key] for key in args.variants.split(",")]
    # (the regression's rounds, or None for the configuration's) -> the configuration to run
    configs: dict[int | None, Any] = (
        {
            r: load_clicks_config(args.config, overrides={**overrides, "regression_rounds": r})
            for r in map(int, args.regression_rounds.split(","))
        }
        if args.regression_rounds
        else {None: config}
    )
    chosen = [named(v, r) for r in configs for v in variants]
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
                todo = {
                    rounds: [v for v in variants if (label, seed, named(v, rounds)) not in done]
                    for rounds in configs
                }
                if not any(todo.values()):
                    continue
                data = load(data_name, fold, drop_empty_test_queries=config.drop_empty_test_queries)
                for rounds, missing in todo.items():
                    if not missing:
                        continue
                    unit = run_unit(configs[rounds], data, seed, args.sessions, missing)
                    for variant, record in unit.items():
                        name = named(variant, rounds)
                        record = {"dataset": label, "seed": seed, "variant": name, **record}
                        done[label, seed, name] = record
                        with store.open("a") as fh:
                            fh.write(json.dumps(record) + "\n")
                print(label, seed, flush=True)
    units = {
        (dataset_label(d, f), seed)
        for d in config.datasets
        for f in config.folds
        for seed in range(config.seeds)
    }
    runs: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for line in (Path(args.against) / "results.jsonl").read_text().splitlines():
        r = json.loads(line)
        if (
            r["learner"] in AGAINST
            and r["sessions"] == args.sessions
            and "vali_ndcg" in r
            and (r["dataset"], r["seed"]) in units
        ):
            runs[r["learner"]].append(r)
    against = [a for a in AGAINST if runs[a]]
    mine: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for (label, seed, variant), r in done.items():
        if (label, seed) in units:
            mine[variant].append(r)
    lines = [
        "## The regression route: its features, its fit and its stopping signal",
        "",
        f"Command: `python research/regression_route.py {args.config} --sessions {args.sessions} "
        + (f"--folds {args.folds} " if args.folds else "")
        + (f"--seeds {args.seeds} " if args.seeds else "")
        + (f"--variants {args.variants} " if args.variants != ",".join(KEYS) else "")
        + (f"--regression-rounds {args.regression_rounds} " if args.regression_rounds else "")
        + f"--against {args.against} --out {args.out}`",
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
                + " | ".join(f"- {a}" for a in against)
                + " |",
                "|---|---:|---:|---:|" + "---:|" * len(against),
            ]
            theirs = {a: _values(runs[a], k, split) for a in against}
            for variant in chosen:
                if not mine[variant]:
                    continue
                values = _values(mine[variant], k, split)
                cells = []
                for a in against:
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
            for a in against:
                lines.append(
                    f"| run: {a} | {np.mean(list(theirs[a].values())):.4f} | | | "
                    + " | ".join("" for _ in against)
                    + " |"
                )
    text = "\n".join(lines) + "\n"
    Path(args.out).write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
