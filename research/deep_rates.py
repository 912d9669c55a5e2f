r"""Why PL-Rank trails LambdaMART on deep queries: fit, scale and per-round progress, measured.

Two measurements on one web-shaped dataset (:func:`gbdt_plrank.load_dataset`'s
``"web-nonlinear"`` by default; validation and training queries only, the test split is not
read), at the harness's trees (eta 0.05, depth 6, min_child_weight 0.1, lambda 1):

1. **Curves.** PL-Rank (the README's objective, ``plrank_objective(K=k)``) and XGBoost's
   ``rank:ndcg``, each trained ``--rounds`` rounds without stopping; every ``--every`` rounds
   NDCG@k of the ranking by score on the training and the validation queries, the spread of
   the validation margins (the root mean within-query variance: how sharp the policy of the
   scores is), and the sum of the Hessians a tree is grown on (the root's cover, mean over the
   last ``--every`` trees), the scale ``lambda`` and ``min_child_weight`` act on.
2. **Continuation.** From one PL-Rank model of ``--start`` rounds, ``--more`` further rounds of
   ``rank:ndcg``, of the default objective (twice, on two streams of rankings: the noise of the
   comparison) and of each ``--variants`` entry (``plrank_objective`` options as JSON, and
   ``"hessian_scale"``: the Hessian the booster receives times that number, a Newton step that
   many times shorter); the gain in validation NDCG@k over the starting model. Every variant
   starts from the same margins, so the gains compare what one round of each objective buys.

    python research/deep_rates.py --out benchmarks/results/deep_rates.md
    python research/deep_rates.py --queries 40,20,20 --rounds 20 --every 10 --start 10 --more 10 \
        --out /tmp/deep_rates.md                 # a small world's draw, seconds
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import gbdt_plrank  # noqa: F401  # isort: skip
import numpy as np
import xgboost as xgb

from benchmarks.harness import command_line
from gbdt_plrank import plrank_objective
from gbdt_plrank._groups import within_query_spread
from gbdt_plrank.cli._argtypes import int_list
from gbdt_plrank.datasets import WEB_VARIANTS, LTRDataset, load_dataset, make_web_dataset
from gbdt_plrank.harness.settings import TreeSettings
from gbdt_plrank.metrics import ndcg


def tree_params(*, seed: int, n_jobs: int) -> dict[str, Any]:
    """The harness's shared trees (its :class:`~gbdt_plrank.harness.settings.TreeSettings`) as
    XGBoost parameters, with ``seed`` and ``n_jobs`` threads."""
    return {
        **TreeSettings(n_jobs=n_jobs).native_params("xgboost", seed=seed),
        "tree_method": "hist",
        "base_score": 0.0,
    }


#: The continuation's variants by default: the rankings per query, the Hessian modes, and the
#: Newton step's length.
VARIANTS = (
    '{"N": 100}',
    '{"N": 200}',
    '{"hessian": "abs"}',
    '{"hessian": "constant"}',
    '{"hessian_scale": 2}',
    '{"hessian_scale": 0.5}',
    '{"hessian_scale": 0.333}',
)


def dataset(name: str, draw: int, queries: list[int] | None) -> LTRDataset:
    """Draw ``draw`` of the web-shaped ``name``, with ``queries`` (train, vali, test) if given."""
    if queries is None:
        return load_dataset(name, fold=draw)
    return make_web_dataset(
        dataclasses.replace(WEB_VARIANTS[name], queries=tuple(queries)), seed=draw
    )


def objective(options: dict[str, Any], *, seed: int, n_jobs: int) -> Any:
    """The README's objective with ``options``; ``hessian_scale`` multiplies its Hessian."""
    options = dict(options)
    scale = float(options.pop("hessian_scale", 1.0))
    obj = plrank_objective(K=options.pop("K"), seed=seed, n_jobs=n_jobs, **options)
    if scale == 1.0:
        return obj

    def scaled(preds: np.ndarray, data: xgb.DMatrix) -> tuple[np.ndarray, np.ndarray]:
        g, h = obj(preds, data)
        return g, h * scale

    return scaled


def curves(ds: LTRDataset, *, k: int, rounds: int, every: int, seed: int, n_jobs: int) -> list[str]:
    """The table of measurement 1."""
    tr, va = ds.train, ds.vali
    dtr, dva = xgb.DMatrix(tr.X, tr.y, qid=tr.qid), xgb.DMatrix(va.X, va.y, qid=va.qid)
    lines = [
        f"| method | rounds | training NDCG@{k} | validation NDCG@{k} | spread of the "
        "validation margins | Hessian sum of a tree |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for method in ("rank:ndcg", "plrank"):
        params = tree_params(seed=seed, n_jobs=n_jobs)
        kw: dict[str, Any] = {}
        if method == "rank:ndcg":
            params["objective"] = "rank:ndcg"
        else:
            kw["obj"] = objective({"K": k}, seed=seed, n_jobs=n_jobs)
        booster = xgb.train(params, dtr, num_boost_round=rounds, **kw)
        trees = booster.trees_to_dataframe()
        for r in range(every, rounds + 1, every):
            mt = booster.predict(dtr, iteration_range=(0, r), output_margin=True)
            mv = booster.predict(dva, iteration_range=(0, r), output_margin=True)
            roots = trees[(trees.Node == 0) & (trees.Tree >= r - every) & (trees.Tree < r)]
            lines.append(
                f"| {method} | {r} | {ndcg(tr.y, mt, tr.qid, k=k):.4f} | "
                f"{ndcg(va.y, mv, va.qid, k=k):.4f} | "
                f"{within_query_spread(mv, va.group_ptr):.3f} | {roots.Cover.mean():.4g} |"
            )
    return lines


def continuation(
    ds: LTRDataset, *, k: int, start: int, more: int, variants: list[str], seed: int, n_jobs: int
) -> list[str]:
    """The table of measurement 2."""
    tr, va = ds.train, ds.vali
    params = tree_params(seed=seed, n_jobs=n_jobs)
    dtr0 = xgb.DMatrix(tr.X, tr.y, qid=tr.qid)
    first = xgb.train(
        params, dtr0, num_boost_round=start, obj=objective({"K": k}, seed=seed, n_jobs=n_jobs)
    )
    mtr = first.predict(dtr0, output_margin=True)
    mva = first.predict(xgb.DMatrix(va.X, qid=va.qid), output_margin=True)
    v0 = ndcg(va.y, mva, va.qid, k=k)
    # every variant continues from these margins, on the same two matrices
    dtr = xgb.DMatrix(tr.X, tr.y, qid=tr.qid, base_margin=mtr)
    dva = xgb.DMatrix(va.X, qid=va.qid, base_margin=mva)
    checks = sorted({max(1, more // 5), max(1, more // 2), more})
    lines = [
        f"Starting model: PL-Rank after {start} rounds, validation NDCG@{k} {v0:.4f}.",
        "",
        "| variant | " + " | ".join(f"gain after {r}" for r in checks) + " |",
        "|---|" + "---:|" * len(checks),
    ]
    rows = [
        ("rank:ndcg", None),
        ("default", {}),
        ("default, another stream", {"_stream": 1}),
        *((v, json.loads(v)) for v in variants),
    ]
    for name, options in rows:
        kw: dict[str, Any] = {}
        p = dict(params)
        if options is None:
            p["objective"] = "rank:ndcg"
        else:
            options = dict(options)
            stream = seed + 1 + options.pop("_stream", 0)
            kw["obj"] = objective({"K": k, **options}, seed=stream, n_jobs=n_jobs)
        booster = xgb.train(p, dtr, num_boost_round=more, **kw)
        gains = [
            ndcg(
                va.y, booster.predict(dva, iteration_range=(0, r), output_margin=True), va.qid, k=k
            )
            - v0
            for r in checks
        ]
        lines.append(f"| {name} | " + " | ".join(f"{g:+.4f}" for g in gains) + " |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default="web-nonlinear", choices=sorted(WEB_VARIANTS))
    parser.add_argument("--draw", type=int, default=1, help="the dataset's draw and the seed")
    parser.add_argument("--queries", type=int_list, help="train,vali,test queries of a new draw")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=800, help="the curves' rounds (0: none)")
    parser.add_argument("--every", type=int, default=100)
    parser.add_argument("--start", type=int, default=100)
    parser.add_argument("--more", type=int, default=50)
    parser.add_argument("--variants", nargs="*", default=list(VARIANTS))
    parser.add_argument("--n-jobs", type=int, default=1)
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args()
    ds = dataset(args.data, args.draw, args.queries)
    command = command_line("python research/deep_rates.py")
    common = {"k": args.k, "seed": args.draw, "n_jobs": args.n_jobs}
    lines = [
        f"# Fit, scale and per-round progress on {ds.name}",
        "",
        f"Written by `{command}`.",
        "",
    ]
    if args.rounds:
        lines += [
            f"## Curves: {args.rounds} rounds without stopping",
            "",
            *curves(ds, rounds=args.rounds, every=args.every, **common),
            "",
        ]
    lines += [
        f"## Continuation: {args.more} rounds of each objective from one PL-Rank model",
        "",
        *continuation(ds, start=args.start, more=args.more, variants=args.variants, **common),
    ]
    text = "\n".join(lines) + "\n"
    args.out.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
