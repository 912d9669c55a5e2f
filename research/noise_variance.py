r"""The variance of the PL-Rank estimate with independent and with lattice noise, and its cost.

On each dataset's Fold1 training split, the margins of the README's PL-Rank XGBoost model after
``--rounds`` rounds (eta 0.05, depth 6, min_child_weight 0.1, lambda 1; ``plrank_objective(K=10)``,
trained at 20) are fixed; the gradient and the raw Hessian estimate
(:func:`gbdt_plrank.plrank_grad_hess` at K = 20, the training cut-off) are then drawn at
``--seeds`` seeds for every noise and ``N``. Reported per cell: the variance over seeds, summed
over the training documents, as a multiple of independent noise's at N = 50 (the default), and
the median time of one call (2 threads, ``--repeats`` calls per cell, the cells in turns;
wall-clock, as noisy as the machine).

    python research/noise_variance.py --out benchmarks/results/noise_variance.md
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import gbdt_plrank  # noqa: F401  # isort: skip
import numpy as np
import xgboost as xgb

from benchmarks.harness import command_line
from gbdt_plrank import plrank_grad_hess, plrank_objective
from gbdt_plrank._training.options import NOISES
from gbdt_plrank.cli._argtypes import int_list, text_list
from gbdt_plrank.harness.data import load


def margins(data: str, rounds: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(margins, labels, group_ptr) of Fold1's training split after ``rounds`` PL-Rank rounds."""
    train = load(data, 1, drop_empty_test_queries=False).train
    dtrain = xgb.DMatrix(train.X, train.y, qid=train.qid)
    params = {
        "eta": 0.05,
        "max_depth": 6,
        "min_child_weight": 0.1,
        "lambda": 1.0,
        "base_score": 0.0,
        "disable_default_eval_metric": 1,
        "nthread": 2,
    }
    bst = xgb.train(params, dtrain, rounds, obj=plrank_objective(K=10))
    ptr = np.concatenate(([0], np.cumsum(train.group_sizes))).astype(np.int64)
    return bst.predict(dtrain, output_margin=True).astype(np.float64), train.y, ptr


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=text_list, default="mq2008,mq2007-agg")
    p.add_argument("--N", type=int_list, default="10,25,50,100")
    p.add_argument("--seeds", type=int, default=40)
    p.add_argument("--rounds", type=int, default=80)
    p.add_argument("--repeats", type=int, default=30, help="timed calls per cell")
    p.add_argument("--out", default="")
    a = p.parse_args()
    lines = []
    for data in a.data:
        m, y, ptr = margins(data, a.rounds)
        cells = [(noise, N) for noise in NOISES for N in a.N]
        times: dict[tuple[str, int], list[float]] = {cell: [] for cell in cells}
        for rep in range(a.repeats):  # the cells in turns, so that drift falls on all alike
            for noise, N in cells:
                start = time.perf_counter()
                plrank_grad_hess(m, y, ptr, K=20, N=N, noise=noise, seed=rep, n_jobs=2)
                times[noise, N].append(time.perf_counter() - start)
        rows = {}
        for noise, N in cells:
            draws = [
                plrank_grad_hess(m, y, ptr, K=20, N=N, noise=noise, seed=s, hessian="raw", n_jobs=2)
                for s in range(a.seeds)
            ]
            rows[noise, N] = (
                np.var([g for g, _ in draws], axis=0).sum(),
                np.var([h for _, h in draws], axis=0).sum(),
                1e3 * float(np.median(times[noise, N])),
            )
        g0, h0, _ = rows["independent", 50]
        lines += [
            f"\n### {data}, Fold1 training split ({ptr.shape[0] - 1} queries, "
            f"{m.shape[0]} documents), margins after {a.rounds} rounds, "
            f"{a.seeds} seeds\n",
            "| noise | N | gradient variance | Hessian variance | ms per call |",
            "|---|---|---|---|---|",
        ]
        for (noise, N), (g, h, ms) in sorted(rows.items(), key=lambda kv: (kv[0][1], kv[0][0])):
            lines.append(f"| {noise} | {N} | {g / g0:.3f}x | {h / h0:.3f}x | {ms:.2f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        command = command_line("python research/noise_variance.py")
        Path(a.out).write_text(
            "## Variance of the estimate: independent and lattice noise\n\n"
            f"Written by `{command}`. Variances are multiples of independent noise's at N = 50 "
            "(the default), summed over the training documents.\n" + text
        )


if __name__ == "__main__":
    main()
