"""Routes from a deterministic ranker's clicks to a PL-Rank model, measured in a clicks experiment.

Runs ``gbdt-plrank clicks CONFIG`` (:func:`gbdt_plrank.harness.clicks.run_clicks`; a
configuration with ``logger = "lambdamart"``: every learner reads the LambdaMART's deterministic
log, the position bias estimated through the features) with every reward of the run
(:func:`gbdt_plrank.clicks.click_rewards`, each estimator's, training and validation) passed
through ``--variant``:

- ``none``: the rewards as they are, trained on the configuration's ``[plrank] metric``
  (``"ndcg"`` in the shipped ones: each query's rewards over the ideal DCG of their positive
  part at the training cut-off; ``"dcg"`` weighs each query by how much it was clicked);
- ``norm-regression``: each query's rewards divided by the ideal DCG@``top_k`` of the
  regression's estimates of its rows (:func:`gbdt_plrank.clicks.click_regression`, cross-fitted
  by query: independent of the query's own clicks, positive);
- ``norm-positive``: divided by the ideal DCG@``top_k`` of the rewards' positive part (a query
  without a positive reward left at 0): what ``metric = "ndcg"`` now trains on, signed rewards
  included;
- ``clip-T``: the observation probabilities the policy-aware and doubly robust rewards divide
  by floored at ``T`` (propensity clipping: a deep rank's click weighs at most ``1/T``);
- ``shrink-KAPPA``: the doubly robust rewards with ``shrinkage = KAPPA``.

On MQ2008 (the LambdaMART's top 10, 10 sessions per query, (1/k) and (1/k)^2) the validation
queries chose the regression's rewards normalised per query (``norm-regression``, level with
``norm-positive``, which for these non-negative rewards is their own NDCG) and, for the signed
doubly robust rewards, the positive part's normaliser over the regression's. For a learner with
non-negative rewards ``none`` and ``norm-positive`` are one route trained twice (the same
rewards up to rounding): ``--summary`` reports their difference, the training noise below which
routes are not told apart.

Each variant's folder holds every learner's validation and test NDCG (true labels) per query;
``--summary`` tabulates them, the validation figures (which choose a route) before the test
ones, every learner against PL-Rank on click-through rates and the two library objectives,
paired per query over the pooled folds.

    for eta in 1 2; do for v in none norm-regression norm-positive clip-0.1 shrink-2; do
        python research/deterministic_routes.py configs/clicks-mq2008-deterministic.toml \\
            --variant $v --sessions 10 --eta $eta \\
            --out benchmarks/results/deterministic_routes/eta$eta-$v
    done; done
    python research/deterministic_routes.py --summary benchmarks/results/deterministic_routes/* \\
        --out benchmarks/results/deterministic_routes.md
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from gbdt_plrank._ranking_metric import dcg_weights
from gbdt_plrank.clicks import ClickLog, click_regression, click_rewards
from gbdt_plrank.harness.clicks import load_clicks_config, run_clicks, write_clicks_report
from gbdt_plrank.harness.clicks import run as clicks_run

#: The learners every route is set against.
REFERENCES = ("plrank-naive", "lambdamart-unbiased-xgb", "lambdarank-position-lgb")

#: Learners whose rewards are non-negative: for them ``norm-positive`` divides each query's
#: rewards by one positive number, which ``metric = "ndcg"`` and their stopping signal (NDCG of
#: the policy-aware or their own validation rewards) divide out again. ``none`` and
#: ``norm-positive`` train them on the same rewards up to rounding: two trainings of one route.
NON_NEGATIVE = ("plrank-naive", "plrank-policy-aware", "plrank-regression")


def ideal_dcg(values: np.ndarray, qid: np.ndarray, K: int) -> np.ndarray:
    """Every row's query's ideal DCG@K of ``values`` (linear gain)."""
    _, q = np.unique(qid, return_inverse=True)
    out = np.zeros(q.max() + 1)
    theta = dcg_weights(K)
    for g in range(out.size):
        top = np.sort(values[q == g])[::-1][:K]
        out[g] = top @ theta[: top.size]
    return out[q]


def variant_rewards(variant: str, K: int) -> Any:
    """``click_rewards`` with its rewards passed through ``variant`` (the module docstring)."""

    def rewards(log: ClickLog, n_rows: int, **kw: Any) -> np.ndarray:
        estimator = kw.get("estimator", "policy-aware")
        if variant.startswith("clip-") and estimator in ("policy-aware", "doubly-robust"):
            floor = float(variant[5:])
            kw["position_bias"] = np.maximum(np.asarray(kw["position_bias"]), floor)
        if variant.startswith("shrink-") and estimator == "doubly-robust":
            kw["shrinkage"] = float(variant[7:])
        r = click_rewards(log, n_rows, **kw)
        if variant == "norm-regression":
            g = click_regression(
                log, kw["X"], kw["qid"], position_bias=kw["position_bias"], seed=kw.get("seed", 0)
            )
            return r / ideal_dcg(g, kw["qid"], K)
        if variant == "norm-positive":
            z = ideal_dcg(np.maximum(r, 0.0), kw["qid"], K)
            return np.divide(r, z, out=np.zeros_like(r), where=z > 0)
        return r

    return rewards


def _records(folder: str) -> list[dict[str, Any]]:
    return [
        json.loads(line)
        for line in (Path(folder) / "results.jsonl").read_text(encoding="utf-8").splitlines()
    ]


def per_query(records: list[dict[str, Any]], learner: str, k: int, split: str) -> dict:
    """(dataset, query) -> NDCG@k of ``learner`` on ``split`` ("test" or "vali")."""
    qkey, nkey = ("qid", "ndcg") if split == "test" else ("vali_qid", "vali_ndcg")
    return {
        (r["dataset"], q): v
        for r in records
        if r["learner"] == learner
        for q, v in zip(r[qkey], r[nkey][str(k)])
    }


def summary(folders: list[str], out: str, k: int = 5) -> str:
    """Every variant's learners, validation then test NDCG@k, against the references."""
    from gbdt_plrank.harness.stats import paired

    lines = [
        "## Routes from a deterministic ranker's clicks",
        "",
        "Command: `python research/deterministic_routes.py --summary "
        + " ".join(folders)
        + f" --out {out}`",
        "",
        f"NDCG@{k} on the true labels, mean over the validation (which chooses) and the "
        "test queries of the five folds; each learner minus PL-Rank on click-through rates "
        "and minus the two library objectives of the same variant's run, paired per "
        "query (mean [95% interval] verdict of the paired randomization test).",
        "",
    ]
    for split in ("vali", "test"):
        lines += [
            f"### {'validation' if split == 'vali' else 'test'} queries",
            "",
            "| variant | learner | NDCG@5 | " + " | ".join(f"minus {r}" for r in REFERENCES) + " |",
            "|---|---|---:|" + "---|" * len(REFERENCES),
        ]
        for folder in folders:
            records = _records(folder)
            learners = list(dict.fromkeys(r["learner"] for r in records))
            for learner in learners:
                mine = per_query(records, learner, k, split)
                cells = []
                for ref in REFERENCES:
                    other = per_query(records, ref, k, split)
                    if ref == learner or len(set(mine) & set(other)) < 2:
                        cells.append("")
                        continue
                    p = paired(mine, other)
                    cells.append(f"{p.interval} {p.verdict}")
                lines.append(
                    f"| {Path(folder).name} | {learner} | "
                    f"{np.mean(list(mine.values())):.4f} | " + " | ".join(cells) + " |"
                )
        lines.append("")
    lines += _choice(folders, k)
    text = "\n".join(lines) + "\n"
    Path(out).write_text(text, encoding="utf-8")
    return text


def _choice(folders: list[str], k: int) -> list[str]:
    """The routes on the validation queries, pooled over the settings: a folder ``<setting>-
    <variant>`` (``eta1-none``) gives each PL-Rank learner on clicks the route ``(<variant>,
    learner)``, a query of each setting one unit; every route minus the best one, paired."""
    from gbdt_plrank.harness.stats import paired

    routes: dict[tuple[str, str], dict] = {}
    for folder in folders:
        setting, _, variant = Path(folder).name.partition("-")
        records = _records(folder)
        for learner in dict.fromkeys(r["learner"] for r in records):
            if learner.startswith("plrank-") and learner != "plrank-full-labels":
                routes.setdefault((variant, learner), {}).update(
                    {
                        (setting, *key): v
                        for key, v in per_query(records, learner, k, "vali").items()
                    }
                )
    means = {route: np.mean(list(v.values())) for route, v in routes.items()}
    best = max(means, key=means.get)
    lines = [
        f"### The routes on the validation queries, every setting pooled (the choice): "
        f"NDCG@{k}, and each minus the best ({best[1]}, {best[0]})",
        "",
        "| variant | learner | NDCG@5 | minus the best |",
        "|---|---|---:|---|",
    ]
    for route in sorted(routes, key=means.get, reverse=True):
        p = None if route == best else paired(routes[route], routes[best])
        cell = "" if p is None else f"{p.interval} {p.verdict}"
        lines.append(f"| {route[0]} | {route[1]} | {means[route]:.4f} | {cell} |")
    return [*lines, "", *_twins(routes, k)]


def _twins(routes: dict[tuple[str, str], dict], k: int) -> list[str]:
    """``norm-positive`` minus ``none`` for each learner of :data:`NON_NEGATIVE`: the same
    rewards up to rounding, so the difference is what rounding alone does to a training (a
    changed split, then another stopping round): the scale below which routes are not told
    apart, which a test paired per query (the trained models held fixed) does not see."""
    from gbdt_plrank.harness.stats import paired

    pairs = [
        learner
        for learner in NON_NEGATIVE
        if ("none", learner) in routes and ("norm-positive", learner) in routes
    ]
    if not pairs:
        return []
    lines = [
        f"### Two trainings of one route: `norm-positive` minus `none` (NDCG@{k}, "
        "validation, every setting pooled)",
        "",
        "For a learner with non-negative rewards the two train on the same rewards up to "
        "rounding (each query's rewards divided by one number, which the normalised metric "
        "divides out): their difference is training noise alone.",
        "",
        "| learner | none | norm-positive | difference |",
        "|---|---:|---:|---|",
    ]
    for learner in pairs:
        a, b = routes[("none", learner)], routes[("norm-positive", learner)]
        p = paired(b, a)
        lines.append(
            f"| {learner} | {np.mean(list(a.values())):.4f} | "
            f"{np.mean(list(b.values())):.4f} | {p.interval} {p.verdict} |"
        )
    return [*lines, ""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("config", nargs="?", help="gbdt-plrank clicks configuration file")
    parser.add_argument("--variant")
    parser.add_argument("--sessions", type=int, nargs="+", help="sessions per query")
    parser.add_argument("--eta", type=float, help="the position bias's severity")
    parser.add_argument("--out", required=True, help="the results folder (the summary file)")
    parser.add_argument(
        "--summary",
        nargs="+",
        metavar="FOLDER",
        help="tabulate these variants' results folders into --out instead",
    )
    args = parser.parse_args()
    if args.summary:
        print(summary(args.summary, args.out))
        return
    if args.config is None or args.variant is None:
        parser.error("a configuration and --variant are needed without --summary")
    overrides: dict[str, Any] = {"out": args.out}
    if args.sessions:
        overrides["sessions"] = args.sessions
    if args.eta is not None:
        overrides["eta"] = args.eta
    config = load_clicks_config(args.config, overrides=overrides)
    clicks_run.click_rewards = variant_rewards(args.variant, config.top_k)
    store = run_clicks(config)
    command = (
        f"python research/deterministic_routes.py {args.config} --variant {args.variant}"
        + (f" --sessions {' '.join(map(str, args.sessions))}" if args.sessions else "")
        + (f" --eta {args.eta:g}" if args.eta is not None else "")
        + f" --out {args.out}"
    )
    print(write_clicks_report(config, store, command=command))


if __name__ == "__main__":
    main()
