"""The performance page's figure: wall time to a kept model against test NDCG@10, per method.

Reads the first table of each ``time_to_model_<data>.md`` that ``benchmarks/time_to_model.py``
wrote (its "x lambdamart-xgb" and "NDCG@10 - lambdamart-xgb" columns) and draws one panel per
data set: the time to a kept model as a multiple of XGBoost's ``rank:ndcg`` against the paired
difference in test NDCG@10 with its 95% interval. Nothing is trained.

    python benchmarks/plot_time_to_model.py --data mq2008 mq2007-agg \
        --out benchmarks/results/time_to_model.png
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from matplotlib.figure import Figure

RESULTS = Path(__file__).resolve().parent / "results"
#: The difference column: mean [low, high], verdict (empty for the baseline itself).
_DIFFERENCE = re.compile(r"([+-]\d\.\d+) \[([+-]\d\.\d+), ([+-]\d\.\d+)\]")
#: What the figure calls each method of the harness.
LABELS = {
    "lambdamart-xgb": "XGBoost rank:ndcg",
    "pairwise-xgb": "XGBoost rank:pairwise",
    "lambdarank-lgb": "LightGBM lambdarank",
    "xendcg-lgb": "LightGBM rank_xendcg",
    "yetirank-cb": "CatBoost YetiRank",
    "plrank-xgb": "PL-Rank XGBoost",
    "plrank-lgb": "PL-Rank LightGBM",
    "plrank-xgb@policy": "PL-Rank XGBoost, policy-stopped",
    "plrank-lgb@policy": "PL-Rank LightGBM, policy-stopped",
}


def read_rows(path: Path) -> dict[str, tuple[float, float, float, float]]:
    """Method -> (time ratio, difference, low, high) from the file's first table."""
    lines = path.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| method | s to kept"))
    header = [cell.strip() for cell in lines[start].strip("|").split("|")]
    ratio, diff = header.index("x lambdamart-xgb"), header.index("NDCG@10 - lambdamart-xgb")
    rows = {}
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        found = _DIFFERENCE.match(cells[diff])
        low_high = tuple(map(float, found.groups())) if found else (0.0, 0.0, 0.0)
        rows[cells[0]] = (float(cells[ratio].rstrip("x")), *low_high)
    return rows


def draw(data: list[str], out: Path) -> None:
    fig = Figure(figsize=(9.5, 4.6), layout="constrained")
    axes = fig.subplots(1, len(data), sharey=True, squeeze=False)[0]
    for ax, name in zip(axes, data):
        for method, (ratio, mean, low, high) in read_rows(
            RESULTS / f"time_to_model_{name}.md"
        ).items():
            ax.errorbar(
                ratio,
                mean,
                yerr=[[mean - low], [high - mean]],
                fmt="o" if method.startswith("plrank") else "s",
                capsize=2,
                markersize=5,
                color=f"C{list(LABELS).index(method)}",
                label=LABELS.get(method, method),
            )
        ax.axhline(0.0, color="0.7", linewidth=0.8)
        ax.set_xscale("log")
        ax.set_xlim(0.18, 12)
        ax.set_xticks([0.25, 0.5, 1, 2, 5, 10], ["0.25x", "0.5x", "1x", "2x", "5x", "10x"])
        ax.set_xticks([], minor=True)
        ax.set_xlabel("wall time to the kept model, x XGBoost rank:ndcg")
        ax.set_title(f"{name}: five folds, three seeds", fontsize=10)
    axes[0].set_ylabel("test NDCG@10 minus rank:ndcg\n(paired, 95% interval)")
    handles = {h.get_label(): h for ax in axes for h in ax.get_legend_handles_labels()[0]}
    fig.legend(
        handles.values(),
        handles.keys(),
        loc="outside lower center",
        ncol=3,
        fontsize=8,
        frameon=False,
    )
    fig.savefig(out, dpi=130)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", nargs="+", default=["mq2008", "mq2007-agg"])
    parser.add_argument("--out", type=Path, default=RESULTS / "time_to_model.png")
    args = parser.parse_args()
    draw(args.data, args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
