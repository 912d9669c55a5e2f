r"""Two stopping rules of the same trainings, paired per test query: what the second rule's
rounds buy.

``benchmarks/time_to_model.py`` records every training (``<out>.jsonl``); run it twice with
different stopping rules (``--patience-rate 0`` for a fixed patience, the default for the growing
one) and this script pairs the two runs' methods: for each method, the rounds each rule ran, and
the test NDCG@k of the second run minus the first's, each query's mean over the seeds, with the
harness's paired test. A training is seeded, so the two runs of a method follow the same
trajectory up to the earlier stop: the difference is what the rounds the later stop waits buy.

    python benchmarks/time_to_model.py --data mq2008 --seeds 0,1,2 --patience-rate 0 \
        --methods lambdamart-xgb,plrank-xgb,lambdarank-lgb,plrank-lgb \
        --out benchmarks/results/time_to_model_mq2008_fixed-patience.md
    python research/patience_pairs.py \
        benchmarks/results/time_to_model_mq2008_fixed-patience.jsonl \
        benchmarks/results/time_to_model_mq2008_defaults.jsonl
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.harness import command_line
from benchmarks.time_to_model import Run, read_runs
from gbdt_plrank.harness.stats import paired, seed_means


def _by_row(runs: list[Run]) -> dict[str, list[Run]]:
    out: dict[str, list[Run]] = {}
    for r in runs:
        out.setdefault(r.row, []).append(r)
    return out


def table(first: list[Run], second: list[Run], *, k: int) -> str:
    """A row per method of both runs: rounds run by each, and the second minus the first."""
    a, b = _by_row(first), _by_row(second)
    lines = [
        "| method | rounds run, first | rounds run, second | second / first | "
        f"NDCG@{k}, second minus first |",
        "|---|---|---|---|---|",
    ]
    for row in (r for r in a if r in b):
        ra, rb = (sum(r.rounds_run for r in x[row]) for x in (a, b))
        qa, qb = (
            seed_means(((r.data, r.fold, q), v) for r in x[row] for q, v in r.test[k].items())
            for x in (a, b)
        )
        p = paired(qb, qa)
        lines.append(
            f"| {row} | {ra} | {rb} | {rb / ra:.2f}x | {p.mean:+.4f} [{p.low:+.4f}, "
            f"{p.high:+.4f}] {p.verdict} (p = {p.p_randomization:.3f}) |"
        )
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("first", type=Path, help="records of the first rule (time_to_model's .jsonl)")
    p.add_argument("second", type=Path, help="records of the second rule")
    p.add_argument("--k", type=int, default=10)
    a = p.parse_args()
    command = command_line("python research/patience_pairs.py")
    print(f"Written by `{command}`: first `{a.first.name}`, second `{a.second.name}`.\n")
    print(table(read_runs(a.first), read_runs(a.second), k=a.k))


if __name__ == "__main__":
    main()
