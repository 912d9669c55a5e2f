"""An outside anchor for group fairness of exposure: DELTR (Zehlike and Castillo 2020) on MQ2008.

DELTR (``fairsearchdeltr`` on PyPI, not a dependency of the package) trains a linear ListNet
model with a squared hinge on the disparate exposure of a protected group. Its loss is
O(rows^2) per gradient-descent iteration, so it runs on a subsample: the first ``--queries``
training queries of one fold. The protected group is LETOR feature 41 (PageRank) below its
training median. The same subsample trains ``PLRankRanker(K=10, fairness="group-disparity")``
for comparison. On the test queries with a relevant document every model is measured
deterministically (the ranking by score) and as the Plackett-Luce policy of its scores
(``--samples`` rankings per query): expected NDCG@10 and the group disparity
:func:`gbdt_plrank.metrics.group_disparity` (the policy's without the plug-in's bias,
:class:`gbdt_plrank._training.evaluation.Halves`).

Install fairsearchdeltr into a throwaway environment that also sees the package's (a ``.pth``
file; same numpy and pandas); nothing is installed into the package's environment:

    python3 -m venv /tmp/deltr && /tmp/deltr/bin/pip install fairsearchdeltr
    echo /work/main/.venv/lib/python3.11/site-packages \\
        > /tmp/deltr/lib/python3.11/site-packages/main.pth
    PYTHONPATH=. nice -n 10 /tmp/deltr/bin/python research/fairness_dominance_deltr.py --fold 1 \\
        --queries 12 --iterations 150 --weights 0,1,3

Without fairsearchdeltr the script says so and exits with status 0.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path

import numpy as np

import gbdt_plrank  # noqa: F401  (first: sets the OpenMP wait before a booster loads)
from gbdt_plrank import PLRankRanker
from gbdt_plrank._ranking_metric import RankingMetric, dcg_weights
from gbdt_plrank._training.evaluation import PolicyEvaluator
from gbdt_plrank.datasets import Split
from gbdt_plrank.harness.data import load
from gbdt_plrank.harness.policy_eval import evaluate_ranking
from gbdt_plrank.metrics import group_disparity

K = 10
PAGERANK = 40  # LETOR feature 41, 0-based


def _dense(split: Split, queries: int | None = None) -> Split:
    """The split (its first ``queries`` queries) with dense features, as DELTR reads them."""
    if queries is not None:
        split = split.take_queries(np.arange(min(queries, split.n_queries)))
    X = split.X
    return Split(X.toarray() if hasattr(X, "toarray") else np.asarray(X), split.y, split.qid)


def _deltr_scores(
    train: Split,
    train_groups: np.ndarray,
    test: Split,
    test_groups: np.ndarray,
    *,
    gamma: float,
    iterations: int,
) -> np.ndarray:
    """DELTR's scores of the test rows, with the group as its protected column."""
    import pandas as pd
    from fairsearchdeltr import Deltr

    def frame(split: Split, prot: np.ndarray, with_labels: bool) -> pd.DataFrame:
        columns = {"qid": split.qid, "doc_id": np.arange(split.y.shape[0]), "prot": prot}
        columns |= {f"f{j}": split.X[:, j] for j in range(split.X.shape[1]) if j != PAGERANK}
        if with_labels:
            columns["judgement"] = split.y
        return pd.DataFrame(columns)

    model = Deltr("prot", gamma, number_of_iterations=iterations, standardize=True)
    model.train(frame(train, train_groups, True))
    ranked = model.rank(frame(test, test_groups, False))
    scores = np.empty(test.y.shape[0])
    scores[ranked["doc_id"].to_numpy()] = ranked["judgement"].to_numpy()
    return scores


def _measure(scores: np.ndarray, test: Split, groups: np.ndarray, samples: int) -> list[str]:
    ranking = evaluate_ranking(scores, test, k=K)
    rank_exposure = _ranking_exposure(scores, test)
    value = PolicyEvaluator(
        RankingMetric("ndcg", K, "exp"), None, test, n_samples=samples, seed=7, n_jobs=1
    )
    h = value.halves(scores)
    policy_gd = h.unbiased(lambda e: group_disparity(test.y, e, test.qid, groups, per_query=True))
    return [
        f"{ranking.ndcg.mean():.4f}",
        f"{group_disparity(test.y, rank_exposure, test.qid, groups):.4f}",
        f"{value.expected_metric(h.exposure).mean():.4f}",
        f"{policy_gd.mean():.4f}",
    ]


def _ranking_exposure(scores: np.ndarray, test: Split) -> np.ndarray:
    """The exposure of the ranking by descending score (ties in input order)."""
    ptr = test.group_ptr
    q = np.repeat(np.arange(ptr.shape[0] - 1), np.diff(ptr))
    order = np.lexsort((np.arange(scores.shape[0]), -scores, q))
    rank = np.empty(scores.shape[0], dtype=np.int64)
    rank[order] = np.arange(scores.shape[0]) - ptr[q[order]]
    return np.where(rank < K, dcg_weights(K)[np.minimum(rank, K - 1)], 0.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fold", type=int, default=1)
    parser.add_argument("--queries", type=int, default=10)
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--gamma", type=float, default=1.0)
    parser.add_argument("--weights", default="0,1")
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--out", default="benchmarks/results/deltr_anchor.md")
    args = parser.parse_args()
    if importlib.util.find_spec("fairsearchdeltr") is None:
        print("fairsearchdeltr is not installed: skipped (see the module docstring).")
        sys.exit(0)
    data = load("mq2008", args.fold, drop_empty_test_queries=True)
    train, test = _dense(data.train, args.queries), _dense(data.test)
    median = float(np.median(_dense(data.train).X[:, PAGERANK]))
    train_groups = (train.X[:, PAGERANK] < median).astype(np.int64)
    test_groups = (test.X[:, PAGERANK] < median).astype(np.int64)
    rows = [f"| DELTR gamma={args.gamma:g}, {args.iterations} iterations | "]
    start = time.perf_counter()
    scores = _deltr_scores(
        train, train_groups, test, test_groups, gamma=args.gamma, iterations=args.iterations
    )
    seconds = time.perf_counter() - start
    rows[0] += " | ".join([f"{seconds:.0f}", *_measure(scores, test, test_groups, args.samples)])
    for w in (float(x) for x in args.weights.split(",")):
        ranker = PLRankRanker(
            K=K,
            n_estimators=100,
            learning_rate=0.05,
            min_child_weight=0.1,
            n_jobs=1,
            random_state=0,
            fairness="group-disparity",
            fairness_weight=w,
        )
        start = time.perf_counter()
        ranker.fit(train.X, train.y, group=train.qid, item_groups=train_groups)
        seconds = time.perf_counter() - start
        cells = _measure(ranker.predict(test.X), test, test_groups, args.samples)
        rows.append(
            f"| PLRankRanker group-disparity w={w:g}, 100 rounds, min_child_weight 0.1 | "
            f"{seconds:.0f} | " + " | ".join(cells)
        )
    command = (
        f"PYTHONPATH=. nice -n 10 /tmp/deltr/bin/python research/fairness_dominance_deltr.py "
        f"--fold {args.fold} --queries {args.queries} --iterations {args.iterations} "
        f"--gamma {args.gamma:g} --weights {args.weights} --samples {args.samples} "
        f"--out {args.out}"
    )
    text = "\n".join(
        [
            "# DELTR on an MQ2008 subsample (outside anchor for group fairness of exposure)",
            "",
            f"`{command}`",
            "",
            f"MQ2008 Fold{args.fold}: the first {len(np.unique(train.qid))} training queries "
            f"({train.y.shape[0]} rows) train every model; {len(np.unique(test.qid))} test queries "
            f"with a relevant document; group: LETOR feature 41 (PageRank) < {median:.4g}, its "
            "training median. Ranking: the deterministic ranking by score; policy: the "
            f"Plackett-Luce policy of the scores, {args.samples} rankings per query.",
            "",
            "| model | train seconds | NDCG@10 (ranking) | group disparity (ranking) | "
            "expected NDCG@10 (policy) | group disparity (policy) |",
            "|---|---|---|---|---|---|",
            *(r + " |" for r in rows),
            "",
        ]
    )
    Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
