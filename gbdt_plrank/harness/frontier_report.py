"""The report of a fairness frontier: ``frontier.csv``, ``frontier.md`` and ``frontier.png``.

Each point (curve, fairness weight, temperature) of a data entry pools its evaluations over the
folds (every test query once across the five LETOR folds), each query's values averaged over the
seeds first. Its standard errors are over those queries (``*_se``), and, for the expected
NDCG@k, the Monte-Carlo standard error of the mean over the sampled rankings (``ndcg_mc_se``).

The goal check: for each point of a post-hoc randomised deterministic ranker (LambdaMART,
LambdaRank), the PL-Rank policy with the highest expected NDCG@k among those whose EE-L is at most
that point's, compared query by query (:func:`.stats.paired`): the mean paired difference of
expected NDCG@k, its standard error, and whether it is higher by more than that standard error;
"not reached" when no PL-Rank policy is as fair. The PL-Rank policies are what a user of the fair
objective can choose from: every trained fairness weight, each also under every temperature of the
grid (the same post-hoc knob the deterministic rankers get), and random mixtures of two of them
(:func:`_best_fair`). Against the randomised relevance-only PL-Rank, whose points are the weight-0
policy under the same temperatures, only the fair policies as trained compete: does training for
fairness beat randomising the relevance model?
"""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._compat import is_installed, missing_message, require
from .data import family
from .frontier import (
    DETERMINISTIC,
    FAIR,
    ORACLE,
    TEMPERATURE_CURVES,
    FrontierStore,
    planned_evaluations,
)
from .frontier_config import FrontierConfig
from .stats import paired

__all__ = ["Comparison", "Point", "compare_points", "pool", "write_frontier_report"]

#: The label of fair policies under a temperature (their points keep the curve name FAIR).
TEMPERED = "plrank-fair+temperature"

#: Legend names of the curves.
LABELS = {
    FAIR: "PL-Rank fair (fairness_weight grid)",
    TEMPERED: "PL-Rank fair + temperature",
    "plrank": "PL-Rank relevance-only + temperature",
    "lambdamart": "LambdaMART (XGBoost) + temperature",
    "lambdarank": "LambdaRank (LightGBM) + temperature",
    DETERMINISTIC: "LambdaMART, deterministic",
    ORACLE: "equal-exposure oracle",
}

CSV_COLUMNS = (
    "dataset", "curve", "fairness_weight", "temperature", "queries", "seeds", "ndcg", "ndcg_se",
    "ndcg_mc_se", "ee_l", "ee_l_se", "disparity", "disparity_se",
)


@dataclass(frozen=True)
class Point:
    """One pooled point of a data entry: per-query values (seeds averaged) and summaries."""

    dataset: str
    curve: str
    weight: float
    temperature: float
    seeds: int
    ndcg: dict[tuple[str, int], float]
    ee_l: dict[tuple[str, int], float]
    disparity: dict[tuple[str, int], float]
    mc_se: float

    @staticmethod
    def _mean_se(values: dict[tuple[str, int], float]) -> tuple[float, float]:
        v = np.fromiter(values.values(), dtype=np.float64)
        return float(v.mean()), float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else 0.0

    def row(self) -> dict[str, object]:
        """The point's ``frontier.csv`` row."""
        ndcg, ndcg_se = self._mean_se(self.ndcg)
        ee_l, ee_l_se = self._mean_se(self.ee_l)
        disparity, disparity_se = self._mean_se(self.disparity)
        return {
            "dataset": self.dataset, "curve": self.curve, "fairness_weight": self.weight,
            "temperature": self.temperature, "queries": len(self.ndcg), "seeds": self.seeds,
            "ndcg": ndcg, "ndcg_se": ndcg_se, "ndcg_mc_se": self.mc_se, "ee_l": ee_l,
            "ee_l_se": ee_l_se, "disparity": disparity, "disparity_se": disparity_se,
        }


def _series(point: Point) -> str:
    """The legend entry of a point: its curve, or TEMPERED for a fair policy under a temperature."""
    return TEMPERED if point.curve == FAIR and point.temperature else point.curve


def _label(point: Point) -> str:
    return LABELS[_series(point)]


def _mc_se(records: Sequence[dict], weights: dict[str, int], total: int) -> float:
    """Monte-Carlo s.e. of the pooled mean: folds weighted by their queries, seeds averaged."""
    by_fold: dict[str, list[dict]] = {}
    for r in records:
        by_fold.setdefault(r["dataset"], []).append(r)
    var = 0.0
    for fold, rs in by_fold.items():
        share = weights[fold] / total
        var += share**2 * sum(r["mc_var"] / r["n_samples"] for r in rs) / len(rs) ** 2
    return math.sqrt(var)


def pool(store: FrontierStore, config: FrontierConfig) -> list[Point]:
    """The configuration's points, from the store's evaluations (others in the folder left out)."""
    wanted = set(planned_evaluations(config))
    groups: dict[tuple[str, str, float, float], list[dict]] = {}
    for key, record in store.evaluations.items():
        if key not in wanted:
            continue
        groups.setdefault((family(key.dataset), key.curve, key.weight, key.temperature), []).append(
            record
        )
    points = []
    for (name, curve, weight, temperature), records in sorted(groups.items()):
        sums: dict[str, dict[tuple[str, int], list[float]]] = {
            m: {} for m in ("ndcg", "ee_l", "disparity")
        }
        for r in records:
            for metric, table in sums.items():
                for q, v in zip(r["qid"], r[metric]):
                    table.setdefault((r["dataset"], q), []).append(v)
        queries_per_fold = {r["dataset"]: len(r["qid"]) for r in records}
        means = {m: {q: float(np.mean(v)) for q, v in t.items()} for m, t in sums.items()}
        points.append(Point(
            name, curve, weight, temperature, len({r["seed"] for r in records}),
            means["ndcg"], means["ee_l"], means["disparity"],
            _mc_se(records, queries_per_fold, sum(queries_per_fold.values())),
        ))
    return points


@dataclass(frozen=True)
class Comparison:
    """A randomised baseline point against the best PL-Rank policy at least as fair.

    ``fair`` names that policy: one fair policy (``"w=0.3"`` as trained, ``"w=0 T=0.1"`` under a
    temperature) or a random mixture of two (``"0.75 w=0.3 + 0.25 w=0.1"``); None, with NaN
    figures, when none is as fair ("not reached"). ``fair_ee_l`` is the mixture's interpolated
    EE-L, an upper bound of its own.
    """

    dataset: str
    curve: str
    temperature: float
    ee_l: float
    ndcg: float
    fair: str | None
    fair_ee_l: float
    fair_ndcg: float
    difference: float
    se: float
    p_randomization: float

    @property
    def verdict(self) -> str:
        if self.fair is None:
            return "not reached"
        return "higher by > 1 s.e." if self.difference > self.se else "not higher by > 1 s.e."


def _mean(values: dict, queries: Sequence) -> float:
    return float(np.mean([values[q] for q in queries]))


def policy_name(point: Point) -> str:
    """``"w=0.3"`` for a fair policy as trained, ``"w=0.3 T=0.5"`` under a temperature."""
    name = f"w={point.weight:g}"
    return f"{name} T={point.temperature:g}" if point.temperature else name


def _best_fair(
    base: Point, fair: Sequence[Point], queries: Sequence
) -> tuple[str, dict[int, float], float, float] | None:
    """The fair policy with the highest mean NDCG on ``queries`` whose EE-L is at most base's.

    Candidates: every point of ``fair``, and every random mixture of a fairer point ``a`` and a less
    fair one ``b`` with the share of ``a`` set so that the interpolated EE-L equals base's. A
    mixture's exposure is the same mixture of the two exposures, so its expected NDCG is exactly
    the interpolation and its EE-L, convex in the exposure, at most the interpolation. Returns
    (name, {fair point index: share}, interpolated EE-L, NDCG), or None when none is as fair.
    """
    level = _mean(base.ee_l, queries)
    ee = [_mean(f.ee_l, queries) for f in fair]
    nd = [_mean(f.ndcg, queries) for f in fair]
    names = [policy_name(f) for f in fair]
    options = [(nd[i], ee[i], names[i], {i: 1.0}) for i in range(len(fair)) if ee[i] <= level]
    for i in range(len(fair)):
        for j in range(len(fair)):
            if ee[i] <= level < ee[j]:
                share = (ee[j] - level) / (ee[j] - ee[i])
                name = f"{share:.2f} {names[i]} + {1 - share:.2f} {names[j]}"
                options.append((share * nd[i] + (1 - share) * nd[j], level, name,
                                {i: share, j: 1 - share}))
    if not options:
        return None
    ndcg, ee_l, name, shares = max(options, key=lambda o: o[0])
    return name, shares, ee_l, ndcg


def compare_points(points: Sequence[Point]) -> list[Comparison]:
    """The goal check of the module docstring, for every temperature point of every dataset.

    Every mean is taken over the queries that the point and all fair points scored (all of them
    once a run is complete).
    """
    out = []
    for name in dict.fromkeys(p.dataset for p in points):
        tempered = [p for p in points if p.dataset == name and p.curve == FAIR]
        trained = [p for p in tempered if not p.temperature]
        for curve in TEMPERATURE_CURVES:
            fair = trained if curve == "plrank" else tempered
            for base in (p for p in points if p.dataset == name and p.curve == curve):
                queries = [q for q in base.ndcg if all(q in f.ndcg for f in fair)]
                best = _best_fair(base, fair, queries) if fair and len(queries) > 1 else None
                level, value = _mean(base.ee_l, queries), _mean(base.ndcg, queries)
                if best is None:
                    out.append(Comparison(name, curve, base.temperature, level, value, None,
                                          *[math.nan] * 5))
                    continue
                label, shares, fair_ee, fair_ndcg = best
                mixed = {q: sum(w * fair[i].ndcg[q] for i, w in shares.items()) for q in queries}
                d = np.array([mixed[q] - base.ndcg[q] for q in queries])
                out.append(Comparison(
                    name, curve, base.temperature, level, value, label, fair_ee, fair_ndcg,
                    float(d.mean()), float(d.std(ddof=1) / math.sqrt(d.size)),
                    paired(mixed, base.ndcg).p_randomization,
                ))
    return out


def _csv(points: Sequence[Point], path: Path) -> None:
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        for p in points:
            writer.writerow(p.row())


def _table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    def cell(v: object) -> str:
        return f"{v:.4f}" if isinstance(v, float) else str(v)

    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return lines


def markdown(points: Sequence[Point], comparisons: Sequence[Comparison], command: str | None) -> str:
    """``frontier.md``: every point, then the goal check per dataset."""
    lines = ["# Fairness frontier", ""]
    if command:
        lines += [f"`{command}`", ""]
    for name in dict.fromkeys(p.dataset for p in points):
        rows = []
        for p in (p for p in points if p.dataset == name):
            r = p.row()
            rows.append([
                _label(p), f"{p.weight:g}" if p.curve == FAIR else "",
                f"{p.temperature:g}" if p.temperature else "",
                f"{r['ndcg']:.4f} ({r['ndcg_se']:.4f}; MC {r['ndcg_mc_se']:.4f})",
                f"{r['ee_l']:.4f} ({r['ee_l_se']:.4f})",
                f"{r['disparity']:.5f} ({r['disparity_se']:.5f})", r["queries"],
            ])
        lines += [f"## {name}", "", "Each cell: mean over the pooled test queries (standard error "
                  "over queries; for NDCG also the Monte-Carlo standard error).", ""]
        lines += _table(
            ["policy", "fairness_weight", "temperature", "expected NDCG", "EE-L",
             "disparity", "queries"], rows,
        )
        rows = [
            [LABELS[c.curve], f"{c.temperature:g}", c.ee_l, c.ndcg,
             c.fair or "", c.fair_ee_l, c.fair_ndcg,
             "" if c.fair is None else f"{c.difference:+.4f} ({c.se:.4f})",
             "" if c.fair is None else f"{c.p_randomization:.3g}", c.verdict]
            for c in comparisons if c.dataset == name
        ]
        lines += ["", "Each randomised point against the PL-Rank policy with the highest "
                  "expected NDCG among those with EE-L at most its own: a fair policy (a trained "
                  "weight w, as trained or under a temperature T) or a random mixture of two "
                  "(whose EE-L is at most the interpolated one); paired over queries. Against "
                  "the randomised relevance-only PL-Rank (the w=0 policy under the same "
                  "temperatures) only the fair policies as trained compete.", ""]
        lines += _table(
            ["randomised policy", "T", "EE-L", "expected NDCG", "fair policy", "fair EE-L",
             "fair expected NDCG", "difference (s.e.)", "p (randomization)", "verdict"], rows,
        )
        lines.append("")
    return "\n".join(lines)


def _oracle_inside(ax: object, points: Sequence[Point], metric: str) -> None:
    """Zoom on the policies; the oracle, far off at NDCG 1, is named in a corner instead."""
    rows = [p.row() for p in points if p.curve != ORACLE]
    oracle = [p.row() for p in points if p.curve == ORACLE]
    if not rows or not oracle:
        return
    xs, ys = [r[metric] for r in rows], [r["ndcg"] for r in rows]
    pad_x, pad_y = 0.05 * (max(xs) - min(xs) or 1.0), 0.05 * (max(ys) - min(ys) or 1.0)
    ax.set_xlim(min(xs) - pad_x, max(xs) + pad_x)  # type: ignore[attr-defined]
    ax.set_ylim(min(ys) - pad_y, max(ys) + pad_y)  # type: ignore[attr-defined]
    o = oracle[0]
    ax.text(  # type: ignore[attr-defined]
        0.02, 0.02, f"oracle (off the plot): {o[metric]:.3f}, NDCG {o['ndcg']:.3f}",
        transform=ax.transAxes, fontsize="small",  # type: ignore[attr-defined]
    )


def plot_frontier(points: Sequence[Point], path: Path) -> None:
    """Expected NDCG against EE-L (left) and the disparity (right), one row per data entry."""
    figure_module = require("matplotlib.figure", purpose="frontier.png")
    names = list(dict.fromkeys(p.dataset for p in points))
    fig = figure_module.Figure(figsize=(11, 4.2 * len(names) + 0.9), layout="constrained")
    axes = fig.subplots(len(names), 2, squeeze=False)
    styles = {
        FAIR: {"color": "C3", "marker": "o", "linestyle": "-", "linewidth": 2},
        TEMPERED: {"color": "C3", "marker": ".", "linestyle": "-", "linewidth": 0.8,
                   "alpha": 0.35},
        "plrank": {"color": "C1", "marker": "s", "linestyle": "--"},
        "lambdamart": {"color": "C0", "marker": "^", "linestyle": "--"},
        "lambdarank": {"color": "C2", "marker": "v", "linestyle": ":"},
        DETERMINISTIC: {"color": "C0", "marker": "*", "markersize": 14, "linestyle": "none"},
        ORACLE: {"color": "k", "marker": "D", "markersize": 8, "linestyle": "none"},
    }
    for row, name in enumerate(names):
        for col, (metric, label) in enumerate(
            (("ee_l", "EE-L (expected exposure loss, lower is fairer)"),
             ("disparity", "relevance-proportional disparity (lower is fairer)"))
        ):
            ax = axes[row, col]
            for series, style in styles.items():
                pts = sorted(
                    (p for p in points if p.dataset == name and _series(p) == series),
                    key=lambda p: (p.weight, p.temperature),
                )
                weights = dict.fromkeys(p.weight for p in pts) if series == TEMPERED else [None]
                for i, weight in enumerate(weights):  # one line per weight under temperatures
                    rows = [p.row() for p in pts if weight is None or p.weight == weight]
                    ax.plot([r[metric] for r in rows], [r["ndcg"] for r in rows],
                            label=LABELS[series] if i == 0 else None, **style)
                if series == FAIR:
                    for p, r in zip(pts, rows):
                        ax.annotate(f"w={p.weight:g}", (r[metric], r["ndcg"]), fontsize=7,
                                    textcoords="offset points", xytext=(4, 4))
            _oracle_inside(ax, [p for p in points if p.dataset == name], metric)
            ax.set(title=name, xlabel=label, ylabel="expected NDCG@10 (test)")
            ax.grid(alpha=0.3)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=3, fontsize="small")
    fig.savefig(path, dpi=120)


def write_frontier_report(
    config: FrontierConfig, store: FrontierStore, *, command: str | None = None
) -> str:
    """Write ``frontier.csv``, ``frontier.md`` and ``frontier.png`` into ``config.out``.

    Returns the markdown. Without matplotlib the picture is not drawn, and the markdown says so.
    """
    out = Path(config.out)
    points = pool(store, config)
    _csv(points, out / "frontier.csv")
    text = markdown(points, compare_points(points), command)
    if is_installed("matplotlib"):
        plot_frontier(points, out / "frontier.png")
    else:
        text += f"\nfrontier.png is not drawn: {missing_message('matplotlib', purpose='it')}\n"
    (out / "frontier.md").write_text(text, encoding="utf-8")
    return text
