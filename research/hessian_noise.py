"""How much the absolute value of the noisy Hessian estimate overstates the curvature.

The figures behind "The noise in |h|" of docs/research/hessian.md and the performance page's deep
queries. On the training queries of a dataset (the first ``--queries`` with a relevant
document), at margins of a trained model's spread (random normal margins of scale ``s``, shifted
by ``s / 2`` per grade; ``s = 0`` is round 0's equal margins), the sum over the documents of

- ``abs``: :math:`|\\hat h_d|` from N = 50 sampled rankings (the default Hessian mode),
- ``denoised``: the ``hessian="denoised"`` estimate from the same N,

divided by the sum of :math:`|h_d|` of a reference estimate from N = 5,000 rankings (``raw``,
whose own noise is a hundredth of the N = 50 estimate's variance), each the mean over
``--repeats`` seeds. A ratio of 1 is the exact curvature; the booster's Newton step
:math:`-G/(H + \\lambda)` is shortened by about the ratio.

    python -m research.hessian_noise --out benchmarks/results/hessian_noise.md
"""

from __future__ import annotations

import argparse
from pathlib import Path

import gbdt_plrank  # noqa: F401  # isort: skip
import numpy as np

from gbdt_plrank import plrank_grad_hess
from gbdt_plrank.datasets import load_dataset
from gbdt_plrank.harness.data import without_empty_queries

#: Dataset -> the training cut-off (twice the judged one: the deep-query benchmark's k = 10, the
#: LETOR headline's k = 5).
DATASETS = {"web-linear": 20, "web-nonlinear": 20, "mq2008": 10, "mq2007-agg": 10}
SPREADS = (0.0, 1.0, 2.0, 3.0)
N = 50
N_REFERENCE = 5_000


def first_queries(data: str, queries: int) -> tuple[np.ndarray, np.ndarray]:
    """Labels and query boundaries of the first ``queries`` training queries of fold 1 that
    have a relevant document."""
    train = without_empty_queries(load_dataset(data, fold=1).train)
    ptr = train.group_ptr[: queries + 1]
    return train.y[: ptr[-1]].astype(np.float64), ptr


def ratios(
    y: np.ndarray, ptr: np.ndarray, *, K: int, spread: float, repeats: int
) -> tuple[float, float]:
    """Mean over ``repeats`` seeds of (sum |h| of abs, sum of denoised) / sum |h| of the
    reference, at margins of the given spread."""
    margins = spread * (np.random.default_rng(0).normal(size=y.size) + 0.5 * y)
    _, h_ref = plrank_grad_hess(margins, y, ptr, K=K, N=N_REFERENCE, hessian="raw", seed=1)
    exact = np.abs(h_ref).sum()
    out = np.array(
        [
            [
                plrank_grad_hess(margins, y, ptr, K=K, N=N, hessian=mode, seed=2 + r)[1].sum()
                / exact
                for mode in ("abs", "denoised")
            ]
            for r in range(repeats)
        ]
    )
    return tuple(out.mean(axis=0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/hessian_noise.md"))
    args = parser.parse_args()
    lines = [
        "## The noise in |h|",
        "",
        "Written by `python -m research.hessian_noise`: the sum of the booster's Hessian over "
        f"the first {args.queries} training queries (fold 1) with a relevant document, from "
        f"N = {N} rankings, over the sum of |h| from N = {N_REFERENCE:,} (mean over "
        f"{args.repeats} seeds), at random margins of spread s shifted s/2 per grade.",
        "",
        "| data | documents a query | training K | s | abs | denoised |",
        "|---|---|---|---|---|---|",
    ]
    for data, K in DATASETS.items():
        y, ptr = first_queries(data, args.queries)
        for spread in SPREADS:
            a, d = ratios(y, ptr, K=K, spread=spread, repeats=args.repeats)
            lines.append(
                f"| {data} | {y.size / (ptr.size - 1):.0f} | {K} | {spread:g} | {a:.2f} | {d:.2f} |"
            )
            print(lines[-1], flush=True)
    args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
