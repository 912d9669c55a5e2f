"""The report of a learning-from-clicks experiment: ``clicks.md`` and ``clicks.png``.

Every figure pools a data entry's folds (each query a test query once over the five LETOR
folds), each query's test NDCG@k averaged over the seeds first. Comparisons are paired per
query (:func:`.stats.paired`): the mean difference with its 95% interval and the verdict of the
paired randomization test.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..._util.compat import is_installed, missing_message, require
from ...clicks import REWARD_ESTIMATORS
from ..data import dataset_label, family
from ..stats import paired, seed_means
from ..store import ResultStore
from .config import ANCHORS, ClicksConfig, estimator_learners
from .run import EXPLORATION, ONCE, anchor_missing, planned

__all__ = ["per_query", "write_clicks_report"]


def _against() -> dict[str, tuple[str, ...]]:
    """PL-Rank on each debiased reward estimator (the registry's
    :attr:`~gbdt_plrank.clicks.RewardEstimator.debiased`) -> the learners it is compared with,
    in the report's order: the learners on the other estimators, the deterministic logger's, the
    anchors and the full-label model."""
    learners = estimator_learners()
    return {
        base: (
            *(other for other in learners if other != base),
            "plrank-deterministic",
            *ANCHORS,
            "plrank-full-labels",
        )
        for base, name in learners.items()
        if REWARD_ESTIMATORS[name].debiased
    }


Values = dict[tuple[str, int], float]


def per_query(records: Sequence[Mapping[str, Any]], k: int) -> Values:
    """(dataset label, query id) -> test NDCG@k, averaged over the records (the seeds)."""
    return seed_means(
        ((record["dataset"], int(q)), v)
        for record in records
        for q, v in zip(record["qid"], record["ndcg"][str(k)])
    )


#: Family -> (learner, sessions) -> the results' records.
Records = dict[str, dict[tuple[str, int], list[dict[str, Any]]]]


def _groups(config: ClicksConfig, store: ResultStore) -> Records:
    """Family -> (learner, sessions) -> the records of the planned results."""
    chosen: Records = defaultdict(lambda: defaultdict(list))
    results = store.records("results")
    for data in config.datasets:
        for fold in config.folds:
            label = dataset_label(data, fold)
            for seed in range(config.seeds):
                for key in planned(config, label, seed):
                    if key in results:
                        chosen[family(label)][key.learner, key.sessions].append(results[key])
    return chosen


def _mean(values: Values) -> str:
    return f"{np.mean(list(values.values())):.4f}" if values else ""


def _paired_cell(a: Values, b: Values) -> str:
    if len(set(a) & set(b)) < 2:
        return ""
    p = paired(a, b)
    return f"{p.interval} {p.verdict}"


def _tables(config: ClicksConfig, name: str, results: Mapping[tuple[str, int], list[Any]]) -> str:
    sessions = sorted(config.sessions)
    lines = []
    n_queries = {len(per_query(r, config.k[0])) for r in results.values()}
    for k in config.k:
        values = {key: per_query(r, k) for key, r in results.items()}
        lines += [
            f"### {name}: test NDCG@{k}, mean over {max(n_queries, default=0)} test queries",
            "",
            "| learner | " + " | ".join(f"{s} sessions/query" for s in sessions) + " |",
            "|---|" + "---:|" * len(sessions),
        ]
        for learner in config.learners:
            if learner in ONCE:
                cells = [_mean(values.get((learner, 0), {}))] * len(sessions)
            else:
                cells = [_mean(values.get((learner, s), {})) for s in sessions]
            if any(cells):
                lines.append(f"| {learner} | " + " | ".join(cells) + " |")
        for base, against in _against().items():
            title = REWARD_ESTIMATORS[estimator_learners()[base]].title
            if base not in config.learners:
                continue
            rows = []
            for other in (o for o in against if o in config.learners and o != base):
                cells = [
                    _paired_cell(
                        values.get((base, s), {}),
                        values.get((other, 0 if other in ONCE else s), {}),
                    )
                    for s in sessions
                ]
                if any(cells):
                    rows.append(f"| {other} | " + " | ".join(cells) + " |")
            if rows:
                lines += [
                    "",
                    f"PL-Rank on {title} rewards minus each learner, NDCG@{k}, paired "
                    "per query (mean [95% interval] verdict):",
                    "",
                    "| against | " + " | ".join(f"{s} sessions/query" for s in sessions) + " |",
                    "|---|" + "---:|" * len(sessions),
                    *rows,
                ]
        lines.append("")
    return "\n".join(lines)


def _theta_table(
    config: ClicksConfig, name: str, results: Mapping[tuple[str, int], list[Any]]
) -> str:
    """The position bias estimated from each fold's training log, per rank: its mean over the
    folds, that mean's error (mean / simulated - 1), the largest |estimate / simulated - 1| of
    a fold, and the log's clicks at the rank, mean over the folds (what the estimate there
    rests on)."""
    sessions = [s for s in sorted(config.sessions) if results.get(("plrank-policy-aware", s))]
    if not sessions:
        return ""
    everything = {s: results["plrank-policy-aware", s] for s in sessions}
    refused = {s: [r for r in everything[s] if "theta_refused" in r] for s in sessions}
    listed = [
        f"- {s} sessions/query: refused on {len(rs)} of {len(everything[s])} logs "
        f"({rs[0]['theta_refused']})"
        for s, rs in refused.items()
        if rs
    ]
    refusals = (
        f"### {name}: the position bias could not be estimated from every log\n\n"
        + "\n".join(listed)
        + "\n"
        if listed
        else ""
    )
    records = {s: [r for r in everything[s] if "theta_estimate" in r] for s in sessions}
    sessions = [s for s in sessions if records[s]]
    if not sessions:
        return refusals
    runs = {s: [r["theta_estimate"] for r in records[s]] for s in sessions}
    ranks = min(max(len(t) for s in sessions for t in runs[s]), 32)
    simulated = config.simulated_position_bias(ranks)
    source = (
        "the stochastic log (EM by document)"
        if config.logger == "plrank"
        else "the deterministic log, through the documents' features"
    )
    lines = [
        f"### {name}: position bias estimated from {source}, mean over folds; error = "
        "estimate / simulated - 1; clicks: the training log's clicks at the rank, mean over folds",
        "",
        "| rank | simulated | "
        + " | ".join(
            f"{s} sessions/query | error of the mean | largest abs(error) of a fold | clicks"
            for s in sessions
        )
        + " |",
        "|---:|---:|" + "---:|" * (len(sessions) * 4),
    ]
    for i in range(ranks):
        cells = []
        for s in sessions:
            values = np.array([t[i] for t in runs[s] if i < len(t)])
            if not values.size:
                cells += [""] * 4
                continue
            clicks = [r["clicks_by_rank"] for r in records[s] if "clicks_by_rank" in r]
            cells += [
                f"{values.mean():.3f}",
                f"{values.mean() / simulated[i] - 1:+.3f}",
                f"{np.abs(values / simulated[i] - 1).max():.3f}",
                f"{np.mean([c[i] if i < len(c) else 0.0 for c in clicks]):.1f}" if clicks else "",
            ]
        lines.append(f"| {i + 1} | {simulated[i]:.3f} | " + " | ".join(cells) + " |")
    seconds = [r["theta_seconds"] for s in sessions for r in records[s] if "theta_seconds" in r]
    if seconds:
        lines += ["", f"The estimate took {np.mean(seconds):.1f} s per log on average."]
    return "\n".join(lines) + "\n" + ("\n" + refusals if refusals else "")


def _time_table(
    config: ClicksConfig, name: str, results: Mapping[tuple[str, int], list[Any]]
) -> str:
    """Each learner's training time at each session count, mean over the folds: the booster's
    seconds plus, for a PL-Rank learner on clicks, its rewards' (the regression included), and
    that total as a multiple of the first learner's at the same count."""
    sessions = sorted(config.sessions)

    def seconds(learner: str, s: int) -> float | None:
        rs = results.get((learner, 0 if learner in ONCE else s), [])
        if not rs or learner == "logger":
            return None
        return float(np.mean([r["seconds"] + r.get("rewards_seconds", 0.0) for r in rs]))

    reference = config.learners[0]
    rows = []
    for learner in config.learners:
        cells = []
        for s in sessions:
            t, base = seconds(learner, s), seconds(reference, s)
            cells.append("" if t is None else f"{t:.1f}" + (f" ({t / base:.2f}x)" if base else ""))
        if any(cells):
            rows.append(f"| {learner} | " + " | ".join(cells) + " |")
    if not rows:
        return ""
    return (
        "\n".join(
            [
                f"### {name}: training seconds, mean over folds (a PL-Rank learner on clicks: its "
                f"rewards' seconds included, the position bias estimate apart; x {reference}'s)",
                "",
                "| learner | " + " | ".join(f"{s} sessions/query" for s in sessions) + " |",
                "|---|" + "---:|" * len(sessions),
                *rows,
            ]
        )
        + "\n"
    )


def _bias_table(
    config: ClicksConfig, name: str, results: Mapping[tuple[str, int], list[Any]]
) -> str:
    """Mean reward minus the simulated click probability when seen, by grade, over every
    training row and over the rows the log shows, pooled over the folds (rows weighted)."""
    learners = [
        a
        for a, name in estimator_learners().items()
        if REWARD_ESTIMATORS[name].debiased and a in config.learners
    ]
    cols = [
        (a, s)
        for a in learners
        for s in sorted(config.sessions)
        if any("all" in r.get("by_grade", {}) for r in results.get((a, s), []))
    ]
    if not cols:
        return ""
    lines = []
    everyone = (
        "every training document (the logger shows each with positive probability)"
        if config.logger == "plrank"
        else "every training document (the deterministic logger never shows those below its "
        "display)"
    )
    for rows, title in (
        ("all", everyone),
        (
            "shown",
            "the training documents the log shows (a selection: neither "
            "estimator is unbiased given it)",
        ),
    ):
        tables = [
            r["by_grade"][rows] for c in cols for r in results[c] if rows in r.get("by_grade", {})
        ]
        grades = sorted({g for t in tables for g in t}, key=float)
        lines += [
            f"### {name}: reward bias by grade over {title}: mean reward minus the simulated "
            "click probability when seen, pooled over folds",
            "",
            "| grade | " + " | ".join(f"{a.removeprefix('plrank-')} {s}" for a, s in cols) + " |",
            "|---:|" + "---:|" * len(cols),
        ]
        for g in grades:
            cells = []
            for c in cols:
                parts = [
                    r["by_grade"][rows][g]
                    for r in results[c]
                    if g in r.get("by_grade", {}).get(rows, {})
                ]
                n = sum(p[2] for p in parts)
                cells.append(f"{sum((p[0] - p[1]) * p[2] for p in parts) / n:+.4f}" if n else "")
            lines.append(f"| {g} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def _ope_table(config: ClicksConfig, store: ResultStore, name: str) -> str:
    """Each model's off-policy estimates against its simulated value: means over the folds and
    logs, the mean |estimate - truth| / stderr, and the coverage of the 95% intervals (with
    the number of independent logs the estimates come from)."""
    rows: dict[tuple[str, int, str], list[dict[str, Any]]] = defaultdict(list)
    for record in store.records("ope").values():
        if family(record["dataset"]) == name and record["learner"] in config.learners:
            rows[record["learner"], record["sessions"], record["estimator"]].append(record)
    if not rows:
        return ""
    order = {learner: i for i, learner in enumerate(config.learners)}
    logs = "log" if config.ope_logs == 1 else f"{config.ope_logs} independent logs"
    lines = [
        f"### {name}: off-policy value, expected clicks per test session estimated from the "
        f"logger's {logs} ({config.ope_sessions} sessions per test query) against the "
        f"simulated value, mean over folds{'' if config.ope_logs == 1 else ' and logs'}",
        "",
        "| model | sessions/query | estimator | simulated | estimate | stderr | "
        "mean abs(error)/stderr | 95% coverage |",
        "|---|---:|---|---:|---:|---:|---:|---:|",
    ]
    covered: dict[str, list[bool]] = defaultdict(list)
    for learner, s, estimator in sorted(rows, key=lambda k: (order[k[0]], k[1], k[2])):
        rs = rows[learner, s, estimator]
        z = [abs(_standardised_error(r)) for r in rs]
        hit = [zi <= 1.959964 for zi in z]
        covered[estimator] += hit
        lines.append(
            f"| {learner} | {s} | {estimator} | {np.mean([r['truth'] for r in rs]):.4f} | "
            f"{np.mean([r['value'] for r in rs]):.4f} | {np.mean([r['stderr'] for r in rs]):.4f} | "
            f"{np.mean(z):.2f} | {sum(hit)}/{len(hit)} |"
        )
    lines.append("")
    independent = len(
        {(r["dataset"], r["seed"], r.get("log", 0)) for rs in rows.values() for r in rs}
    )
    lines += [
        f"Coverage of the 95% intervals over models, folds and logs, {e}: "
        f"{sum(h)}/{len(h)} ({np.mean(h):.0%})."
        for e, h in covered.items()
    ]
    lines.append(
        f"The models of a fold are valued on the same logs, so their errors move "
        f"together: these are {independent} independent logs."
    )
    lines += ["", *ope_summary([r for rs in rows.values() for r in rs])]
    return "\n".join(lines) + "\n"


def _standardised_error(record: Mapping[str, Any]) -> float:
    """An off-policy estimate's (estimate - simulated) / stderr; infinite where the standard
    error is 0 (an interval of one point covers nothing)."""
    error = record["value"] - record["truth"]
    return error / record["stderr"] if record["stderr"] > 0 else float(np.copysign(np.inf, error))


def ope_summary(records: Sequence[Mapping[str, Any]]) -> list[str]:
    r"""One line per estimator over the off-policy records of a run (every model, fold and log).

    The mean standard error and mean :math:`|\hat V - V| / \mathrm{se}` (0.80 for a normal
    error whose standard error is right); the standard deviation over the logs of each log's
    mean :math:`(\hat V - V)/\mathrm{se}` (the models of a log share its noise, so this is
    the spread of independent draws: about 1 where the standard errors are right); and the
    pairs of a log's models that the estimates order against their simulated values (ties
    count as in order).
    """
    by_estimator: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for record in records:
        by_estimator[record["estimator"]].append(record)
    lines = []
    for estimator, rs in by_estimator.items():
        logs: dict[tuple, list[Mapping[str, Any]]] = defaultdict(list)
        for r in rs:
            logs[r["dataset"], r["seed"], r.get("log", 0)].append(r)
        z = [np.mean([_standardised_error(r) for r in log]) for log in logs.values()]
        pairs = discordant = 0
        for log in logs.values():
            value = np.array([r["value"] for r in log])
            truth = np.array([r["truth"] for r in log])
            upper = np.triu_indices(len(log), 1)
            order = np.subtract.outer(value, value)[upper] * np.subtract.outer(truth, truth)[upper]
            pairs += order.size
            discordant += int(np.sum(order < 0))
        spread = f"{np.std(z, ddof=1):.2f}" if len(z) > 1 else "n/a (one log)"
        lines.append(
            f"{estimator}: mean stderr {np.mean([r['stderr'] for r in rs]):.4f}, mean "
            f"abs(error)/stderr {np.mean([abs(_standardised_error(r)) for r in rs]):.2f}; "
            f"standard deviation over the {len(logs)} logs of a log's mean (error/stderr) "
            f"{spread}; "
            f"a log's models out of the simulated order in {discordant} of {pairs} pairs."
        )
    return lines


def _exploration_table(
    config: ClicksConfig, name: str, results: Mapping[tuple[str, int], list[Any]]
) -> str:
    if not config.exploration_rounds:
        return ""
    k = config.k[0]
    lines = [
        f"### {name}: exploration, test NDCG@{k} after each round "
        f"({config.exploration_sessions} sessions per query and round)",
        "",
        "| round | sessions/query so far | stochastic | deterministic "
        "| stochastic - deterministic |",
        "|---:|---:|---:|---:|---:|",
    ]
    for r in range(1, config.exploration_rounds + 1):
        s = r * config.exploration_sessions
        sto = per_query(results.get(("explore-stochastic", s), []), k)
        det = per_query(results.get(("explore-deterministic", s), []), k)
        lines.append(f"| {r} | {s} | {_mean(sto)} | {_mean(det)} | {_paired_cell(sto, det)} |")
    return "\n".join(lines) + "\n"


def plot_clicks(
    config: ClicksConfig, groups: Mapping[str, Mapping[tuple[str, int], list[Any]]], path: Path
) -> None:
    """Test NDCG@k against sessions per query, one line per learner; the exploration rounds."""
    figure_module = require("matplotlib.figure", purpose="clicks.png")
    k = config.k[0]
    names = list(groups)
    cols = 2 if config.exploration_rounds else 1
    fig = figure_module.Figure(figsize=(6.0 * cols, 4.0 * max(len(names), 1)), layout="constrained")
    axes = fig.subplots(max(len(names), 1), cols, squeeze=False)
    sessions = sorted(config.sessions)
    for row, name in enumerate(names):
        results = groups[name]
        ax = axes[row, 0]
        for i, learner in enumerate(config.learners):
            style = {"color": f"C{i % 10}"}
            if learner in ONCE:
                values = per_query(results.get((learner, 0), []), k)
                if values:
                    ax.axhline(
                        np.mean(list(values.values())), linestyle="--", label=learner, **style
                    )
                continue
            xs = [s for s in sessions if results.get((learner, s))]
            ys = [np.mean(list(per_query(results[learner, s], k).values())) for s in xs]
            if xs:
                ax.plot(xs, ys, marker="o", label=learner, **style)
        ax.set(
            xscale="log",
            xlabel="sessions per training query",
            ylabel=f"test NDCG@{k}",
            title=f"{name}: learning from clicks",
        )
        ax.set_xticks(sessions, [str(s) for s in sessions])
        ax.minorticks_off()
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small")
        if cols == 2:
            ax = axes[row, 1]
            rounds = range(config.exploration_rounds + 1)
            start = per_query(results.get(("logger", 0), []), k)  # round 0: the logger
            for i, arm in enumerate(EXPLORATION):
                ys = [
                    np.mean(
                        list(
                            (
                                per_query(
                                    results.get((arm, r * config.exploration_sessions), []), k
                                )
                                if r
                                else start
                            ).values()
                        )
                        or [np.nan]
                    )
                    for r in rounds
                ]
                ax.plot(list(rounds), ys, marker="o", label=arm, color=f"C{i}")
            ax.set(
                xlabel="round (0: the logger)",
                ylabel=f"test NDCG@{k}",
                title=f"{name}: exploration",
                xticks=list(rounds),
            )
            ax.grid(alpha=0.3)
            ax.legend(fontsize="small")
    fig.savefig(path, dpi=110)


def _click_probability(config: ClicksConfig) -> str:
    """The click model's probability of a click on a seen document, in words."""
    if config.graded:
        text = (
            f"a seen document of grade g clicked with probability {config.noise:g} + "
            f"{1 - config.noise:g} (2^g - 1) / (2^g_max - 1), g_max the highest grade"
        )
    else:
        text = f"a seen document clicked with probability 1 if relevant and {config.noise:g} if not"
    if config.trust is not None:
        eps_plus, eps_minus = config.trust
        text += (
            f"; trust bias: below rank 1 a relevant document's click probability is "
            f"multiplied by {eps_plus:g} and a non-relevant one is clicked with probability "
            f"{eps_minus:g}"
        )
    return text


def _users_text(config: ClicksConfig) -> str:
    """The simulated users' click model, in words."""
    if config.click_model == "cascade":
        return (
            f"clicks of the cascade model, the user reading down the list and leaving after a "
            f"document with probability {config.stop:g} and after a click with probability "
            f"{config.satisfaction:g}, {_click_probability(config).replace('seen', 'read')}"
        )
    return (
        f"clicks of the position-based model, rank k seen with probability (1/k)^{config.eta:g}, "
        f"{_click_probability(config)}"
    )


def _logger_text(config: ClicksConfig) -> str:
    """The logging policy, in words."""
    trained = (
        f" trained on {config.logging_queries} labelled training queries "
        f"({config.logging_rounds} rounds)"
    )
    if config.logger == "lambdamart":
        return "A LambdaMART logger (XGBoost)" + trained
    if config.logger == "feature":
        return f"A logger ranking by feature {config.logger_feature} (descending)"
    if config.logger_temperature != 1:
        return (
            f"A PL-Rank logger{trained}, its policy at temperature {config.logger_temperature:g},"
        )
    return "A PL-Rank logger" + trained


def _display_text(config: ClicksConfig) -> str:
    """How it is deployed, in words."""
    shown = (
        f"a top-{config.top_k} display"
        if config.display == "top-k"
        else "every document of a query displayed"
    )
    if config.logger == "plrank":
        return f"deployed with {shown}"
    return f"deployed as its ranking by score with {shown}, the same in every session"


def write_clicks_report(
    config: ClicksConfig, store: ResultStore, *, command: str | None = None
) -> str:
    """Write ``clicks.md`` and ``clicks.png`` into ``config.out``; return the markdown.

    Only the configuration's results are reported, even when the folder holds more. Without
    matplotlib the picture is not drawn, and the markdown says so.
    """
    groups = _groups(config, store)
    parts = [
        "## Learning to rank from clicks",
        "",
        f"{_logger_text(config)}, {_display_text(config)}; "
        f"{_users_text(config)}; position "
        f"bias {config.position_bias}, propensities {config.propensities}. Folds "
        f"{', '.join(map(str, config.folds))}, {config.seeds} seed(s), pooled.",
        "",
    ]
    if command:
        parts += [f"Command: `{command}`", ""]
    for learner in ANCHORS:
        reason = anchor_missing(learner) if learner in config.learners else None
        if reason:
            parts += [f"{learner} did not run: {reason}.", ""]
    for name, results in groups.items():
        parts += [
            _tables(config, name, results),
            _time_table(config, name, results),
            _theta_table(config, name, results),
            _bias_table(config, name, results),
            _ope_table(config, store, name),
            _exploration_table(config, name, results),
        ]
    text = "\n".join(p for p in parts if p is not None)
    out = Path(config.out)
    if is_installed("matplotlib"):
        plot_clicks(config, groups, out / "clicks.png")
    else:
        text += f"\nclicks.png is not drawn: {missing_message('matplotlib', purpose='it')}\n"
    (out / "clicks.md").write_text(text, encoding="utf-8")
    return text
