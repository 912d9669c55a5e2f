"""When the rows' features identify the position bias of a click log: the rule's measurements.

:func:`gbdt_plrank.clicks.estimate_position_bias` with features (regression EM) identifies the
position bias only where the features predict the rows' relevance: rows alike in them are then
shown at different ranks across queries. Features that carry nothing of it (constant, noise,
or the relevance the logger knew but the features do not) leave the estimate at about the
per-rank click-through ratio, which takes the relevance of the rows a logger puts at each rank
for position. The function refuses a log whose displayed rows span fewer than
``MIN_FEATURE_QUERIES`` queries, or whose features' evidence (a relevance model of them,
fitted on half of the queries, predicting the other half's clicks better than one without
them: the per-query gain in log-likelihood over its standard error,
:func:`gbdt_plrank.clicks._click_model.feature_evidence`) is below ``MIN_FEATURE_EVIDENCE``.
This measures, for every log, the estimate's error (the largest |log(estimate / truth)| at
ranks 2 and below), the evidence and whether the rule takes the log:

- *simulated deterministic logs*: every session of a query shows its top 5 of 10 rows by a
  noisy score of a latent relevance ``u`` (the logger's; clicked when seen with probability
  ``sigmoid(2u - 1)``, position bias ``1/k``, 20 sessions a query); the features are one column
  of correlation ``rho`` with ``u`` and four of noise, from 5 to 400 queries, three draws each;
- *MQ2008's deterministic logs*: those of ``gbdt-plrank clicks
  configs/clicks-mq2008-deterministic.toml`` (a LambdaMART on 20 labelled queries, its top 10
  in every session), both position biases, 1, 10 and 100 sessions per query, the training and
  the validation queries, with MQ2008's 46 features and with 46 columns of noise in their place.

Every estimate is appended to ``<out>.jsonl`` as it finishes; a run again skips those done and
``--report-only`` rebuilds the tables from it.

    python research/position_bias_identification.py --folds 1 2 3 4 5 \\
        --out benchmarks/results/position_bias_identification.md
"""

from __future__ import annotations

import argparse
import inspect
import math
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: this checkout's package, not an installed one
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import gbdt_plrank  # noqa: F401  # isort: skip
import numpy as np

from benchmarks.harness import append_record, command_line, read_records
from gbdt_plrank.clicks import ClickLog, estimate_position_bias, pbm_position_bias
from gbdt_plrank.clicks._position_bias import (
    MIN_FEATURE_EVIDENCE,
    MIN_FEATURE_QUERIES,
    features_estimate,
)

#: The estimate's options at :func:`estimate_position_bias`'s defaults.
DEFAULTS = {
    name: inspect.signature(estimate_position_bias).parameters[name].default
    for name in ("n_rounds", "step_rounds", "max_depth", "learning_rate", "n_jobs")
}
#: The simulation's grid: queries, the feature's correlation with the logger's relevance.
QUERIES = (5, 10, 20, 50, 100, 400)
RHOS = (0.0, 0.5, 0.8, 0.9, 1.0)
DRAWS = 3
#: MQ2008's logs: position-bias severities and sessions per query.
ETAS = (1.0, 2.0)
SESSIONS = (1, 10, 100)


def simulated_log(
    n_queries: int, rho: float, seed: int, *, docs: int = 10, top_k: int = 5, sessions: int = 20
) -> tuple[ClickLog, np.ndarray, np.ndarray, np.ndarray]:
    """A deterministic logger's log (module docstring), its rows' features, query ids and the
    true position bias."""
    rng = np.random.default_rng(seed)
    n = n_queries * docs
    u = rng.normal(size=n)
    gamma = 1 / (1 + np.exp(-(2 * u - 1)))
    score = u + 0.5 * rng.normal(size=n)
    informative = rho * u + math.sqrt(1 - rho**2) * rng.normal(size=n)
    X = np.column_stack([informative, rng.normal(size=(n, 4))])
    qid = np.repeat(np.arange(n_queries), docs)
    theta = pbm_position_bias(top_k, eta=1.0)
    shown = [
        q * docs + np.argsort(-score[q * docs : (q + 1) * docs], kind="stable")[:top_k]
        for q in range(n_queries)
    ]
    row = np.concatenate([np.tile(r, sessions) for r in shown])
    rank = np.tile(np.arange(1, top_k + 1), n_queries * sessions)
    session = np.repeat(np.arange(n_queries * sessions), top_k)
    click = (rng.random(row.size) < theta[rank - 1] * gamma[row]).astype(int)
    return ClickLog(session=session, row=row, rank=rank, click=click), X, qid, theta


def measure(log: ClickLog, X: Any, qid: np.ndarray, eta: float) -> dict[str, Any]:
    """The estimate's error against ``(1/k)**eta``, the evidence, and whether the rule takes
    the log."""
    theta, evidence = features_estimate(log, X=X, qid=qid, **DEFAULTS)
    truth = pbm_position_bias(theta.size, eta=eta)
    ctr = np.bincount(log.rank - 1, log.click) / np.bincount(log.rank - 1)

    def error(estimate: np.ndarray) -> float:
        return float(np.abs(np.log(np.maximum(estimate[1:], 1e-12) / truth[1:])).max())

    return {
        "error": error(theta),
        "ctr_error": error(ctr / max(ctr.max(), 1e-12)),
        "z": evidence.z,
        "queries": evidence.queries,
        "taken": evidence.queries >= MIN_FEATURE_QUERIES and evidence.z >= MIN_FEATURE_EVIDENCE,
        "clicks": int(log.click.sum()),
    }


def _simulated(done: set, records: Path) -> None:
    for n_queries in QUERIES:
        for rho in RHOS:
            for seed in range(DRAWS):
                key = f"sim/{n_queries}/{rho}/{seed}"
                if key in done:
                    continue
                log, X, qid, _ = simulated_log(n_queries, rho, seed)
                record = {"key": key, "queries_drawn": n_queries, "rho": rho, "seed": seed}
                append_record(records, {**record, **measure(log, X, qid, 1.0)})
                print(key, flush=True)


def _mq2008(config: str, folds: list[int], done: set, records: Path) -> None:
    from gbdt_plrank.harness.clicks import load_clicks_config
    from gbdt_plrank.harness.clicks.run import _Fold
    from gbdt_plrank.harness.data import load

    for eta in ETAS:
        for sessions in SESSIONS:
            settings = load_clicks_config(config, overrides={"eta": eta, "sessions": [sessions]})
            for fold in folds:
                keys = [
                    f"mq/{eta}/{sessions}/{fold}/{split}/{features}"
                    for split in ("train", "vali")
                    for features in ("MQ2008's", "noise")
                ]
                if all(k in done for k in keys):
                    continue
                data = load(
                    settings.datasets[0],
                    fold,
                    drop_empty_test_queries=settings.drop_empty_test_queries,
                )
                logs = _Fold(settings, data, 0).logs(False, sessions)
                for key in keys:
                    if key in done:
                        continue
                    split_name, features = key.split("/")[-2:]
                    split = getattr(data, split_name)
                    X = (
                        split.X
                        if features == "MQ2008's"
                        else np.random.default_rng(fold).normal(size=split.X.shape)
                    )
                    measured = measure(logs[split_name], X, split.qid, eta)
                    record = {"key": key, "eta": eta, "sessions": sessions, "fold": fold}
                    record.update(split=split_name, features=features)
                    append_record(records, {**record, **measured})
                    print(key, flush=True)


def _cell(rows: list[dict]) -> str:
    """Taken of all; the mean and largest error of the taken and of the refused; the evidence."""
    taken = [r for r in rows if r["taken"]]
    refused = [r for r in rows if not r["taken"]]

    def errors(rs: list[dict]) -> str:
        if not rs:
            return "-"
        e = [r["error"] for r in rs]
        return f"{np.mean(e):.2f} / {np.max(e):.2f}"

    z = [r["z"] for r in rows]
    return (
        f"{len(taken)} of {len(rows)} | {errors(taken)} | {errors(refused)} | "
        f"{np.mean([r['ctr_error'] for r in rows]):.2f} | {min(z):+.1f} to {max(z):+.1f}"
    )


def report(records: list[dict], command: str) -> str:
    """The tables of the records."""
    head = (
        "| {} | taken by the rule | error taken (mean / largest) | error refused | "
        "click-through ratio's error | evidence z |"
    )
    lines = [
        "## When the features identify the position bias",
        "",
        f"Command: `{command}`",
        "",
        f"The rule: a log is taken when its displayed rows span {MIN_FEATURE_QUERIES} or more "
        f"queries and its features' evidence is {MIN_FEATURE_EVIDENCE:g} or more (a relevance "
        "model of them, fitted on half of the queries, predicting the other half's clicks "
        "better than one without them: the per-query gain in log-likelihood over its standard "
        "error). Error: the largest |log(estimate / truth)| over ranks 2 and below (0.10 is "
        "10% off); the per-rank click-through ratio's error is what features that carry "
        "nothing would give. Estimates at `estimate_position_bias`'s defaults.",
        "",
        "### Simulated deterministic logs",
        "",
        "Top 5 of 10 rows by a noisy score of the logger's relevance, 20 sessions a query, "
        "position bias 1/k; one feature of correlation rho with that relevance and four of "
        f"noise; {DRAWS} draws a cell.",
        "",
        head.format("queries, rho"),
        "|---|---:|---:|---:|---:|---:|",
    ]
    sim = [r for r in records if r["key"].startswith("sim/")]
    for n_queries in QUERIES:
        for rho in RHOS:
            rows = [r for r in sim if r["queries_drawn"] == n_queries and r["rho"] == rho]
            if rows:
                lines.append(f"| {n_queries}, {rho:g} | {_cell(rows)} |")
    mq = [r for r in records if r["key"].startswith("mq/")]
    if mq:
        folds = sorted({r["fold"] for r in mq})
        lines += [
            "",
            "### MQ2008's deterministic logs",
            "",
            "The logs of `configs/clicks-mq2008-deterministic.toml` (a LambdaMART's top 10 in "
            f"every session), folds {', '.join(map(str, folds))}, with MQ2008's features and "
            "with noise in their place.",
            "",
            head.format("position bias, sessions/query, queries, features"),
            "|---|---:|---:|---:|---:|---:|",
        ]
        for eta in ETAS:
            for sessions in SESSIONS:
                for split in ("train", "vali"):
                    for features in ("MQ2008's", "noise"):
                        rows = [
                            r
                            for r in mq
                            if (r["eta"], r["sessions"], r["split"], r["features"])
                            == (eta, sessions, split, features)
                        ]
                        if rows:
                            bias = "1/k" if eta == 1 else f"(1/k)^{eta:g}"
                            lines.append(
                                f"| {bias}, {sessions}, {split}, {features} | {_cell(rows)} |"
                            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", default="configs/clicks-mq2008-deterministic.toml")
    parser.add_argument("--folds", type=int, nargs="*", default=[1, 2, 3, 4, 5])
    parser.add_argument("--no-simulation", action="store_true")
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    out = Path(args.out)
    records = out.with_suffix(".jsonl")
    if not args.report_only:
        done = {r["key"] for r in read_records(records)}
        if not args.no_simulation:
            _simulated(done, records)
        if args.folds:
            _mq2008(args.config, args.folds, done, records)
    command = command_line("python research/position_bias_identification.py", argv)
    text = report(read_records(records), command)
    out.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
