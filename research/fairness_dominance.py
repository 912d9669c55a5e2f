"""Is a trained fair policy dominated by temperature-randomised rankers?

For every fold of MQ2008 asked for, this trains as a new user would,
``PLRankRanker(K=10, n_estimators=300, learning_rate=0.05, fairness="expected-exposure",
fairness_weight=w)`` with the validation split as eval set and 50 rounds of early stopping on the
policy's validation objective, for each weight ``w``; LambdaMART (XGBoost ``rank:ndcg``, the
comparison harness's trees, early-stopped on validation NDCG@10); the user's call at w = 0 is
the PL-Rank reference (the relevance objective at train_K = K); and, at the weights of
``--probe-weights``, the variants that test why a fair policy might be dominated (the Hessian
mode, a smaller learning rate with more rounds, a larger N, no early stopping).

Every model is evaluated on the VALIDATION and TEST queries that have a relevant document
(:func:`gbdt_plrank.harness.policy_eval.evaluate_policy`, ``--samples`` rankings per query:
expected NDCG@10, EE-L without the plug-in's bias) as trained and as the Plackett-Luce policy
of its margins divided by T times their validation spread
(:func:`gbdt_plrank.harness.policy_eval.validation_scale`), for every temperature T of the grid.
The envelope of a reference curve (LambdaMART, or PL-Rank at w=0, under every temperature) at an
EE-L level is the linear interpolation between its two neighbouring temperatures: a random
mixture of the two policies reaches that NDCG at an EE-L no larger (EE-L is convex in the
exposure, which mixes linearly). A trained policy below the better envelope at its own EE-L is
dominated; the gap is paired over queries (the same interpolation per query).

Choosing a temperature on validation (hypothesis e/f): for each model, the temperature of the
grid (or the model as trained) that maximises the validation objective expected NDCG@10 minus
``w`` times EE-L; the test split is read at that choice.

Trainings are cached as margins (``--cache``), so a rerun only evaluates and reports. The
probe ``relevant-queries`` trains and stops on the queries with a relevant document only (those
every policy is measured on): the objective counts the others, whose EE-L target is uniform
exposure.

    nice -n 10 python research/fairness_dominance.py --folds 1,2,3,4,5 \\
        --out benchmarks/results/fairness_dominance.md
    nice -n 10 python research/fairness_dominance.py --weights 0 --probe-weights 0.3,1,3,10 \\
        --probes lr0.02-750rounds --out benchmarks/results/fairness_dominance_lr.md
    nice -n 10 python research/fairness_dominance.py --weights 0 --probe-weights 1,3,10 \\
        --probes relevant-queries --out benchmarks/results/fairness_dominance_relevant.md
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import gbdt_plrank  # noqa: F401  (first: sets the OpenMP wait before a booster loads)
from gbdt_plrank import PLRankRanker
from gbdt_plrank.datasets import LTRDataset, Split
from gbdt_plrank.harness.data import load, without_empty_queries
from gbdt_plrank.harness.policy_eval import PolicyValues, evaluate_policy, validation_scale
from gbdt_plrank.harness.settings import TreeSettings
from gbdt_plrank.harness.training import train

K = 10
PATIENCE = 50
TEMPERATURES = (0.1, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0)
#: The user's call of the issue; a probe replaces some of these options.
USER = {"K": K, "n_estimators": 300, "learning_rate": 0.05, "fairness": "expected-exposure"}
#: Hypotheses of the issue at a large weight: name -> options replacing the user's.
PROBES: dict[str, dict[str, Any]] = {
    "hessian-constant": {"hessian": "constant"},
    "lr0.02-750rounds": {"learning_rate": 0.02, "n_estimators": 750},
    "N400": {"N": 400},
    "no-stopping": {},
    "lambda15": {"reg_lambda": 15.0},
    # trained and stopped on the queries with a relevant document only, as it is measured
    "relevant-queries": {"relevant_queries_only": True},
}


@dataclass(frozen=True)
class Model:
    """A trained model's margins on the validation and test queries with a relevant document."""

    name: str
    weight: float
    vali: np.ndarray
    test: np.ndarray
    train: np.ndarray | None
    info: dict[str, Any]


def _rows_with_relevant(split: Split) -> np.ndarray:
    ptr = split.group_ptr
    relevant = np.maximum.reduceat(split.y, ptr[:-1]) > 0
    return np.repeat(relevant, np.diff(ptr))


def _user_ranker(weight: float, options: dict[str, Any], seed: int) -> tuple[PLRankRanker, bool]:
    """The user's ranker at ``weight`` with a probe's ``options``, and whether it trains on the
    queries with a relevant document only."""
    options = dict(options)
    relevant_only = options.pop("relevant_queries_only", False)
    ranker = PLRankRanker(
        **{**USER, "fairness_weight": weight, **options}, n_jobs=1, random_state=seed
    )
    return ranker, relevant_only


def _lambdamart_trees() -> TreeSettings:
    return TreeSettings(rounds=USER["n_estimators"], n_jobs=1, learning_rate=USER["learning_rate"])


def configuration(weight: float, options: dict[str, Any] | None, *, stop: bool, seed: int) -> str:
    """What a job trains with, as JSON: its parameters and the PL-Rank options they resolve to
    (``"auto"`` values as the installed package resolves them), so that a cached training is
    used only by a job that would train it the same way."""
    if options is None:
        return json.dumps(
            {"lambdamart": _lambdamart_trees().model_dump(mode="json"), "seed": seed},
            sort_keys=True,
        )
    ranker, relevant_only = _user_ranker(weight, options, seed)
    return json.dumps(
        {
            "params": ranker.get_params(),
            "options": ranker._options().resolved(),
            "relevant_only": relevant_only,
            "stop": stop,
        },
        sort_keys=True,
        default=str,
    )


def _fit_plrank(
    data: LTRDataset, weight: float, options: dict[str, Any], *, stop: bool, seed: int
) -> tuple[PLRankRanker, dict[str, Any]]:
    ranker, relevant_only = _user_ranker(weight, options, seed)
    start = time.perf_counter()
    train_split = without_empty_queries(data.train) if relevant_only else data.train
    vali = without_empty_queries(data.vali) if relevant_only else data.vali
    ranker.fit(
        train_split.X,
        train_split.y,
        group=train_split.qid,
        eval_set=[(vali.X, vali.y, vali.qid)],
        early_stopping_rounds=PATIENCE if stop else None,
    )
    history = ranker.evals_result_["valid_0"]
    objective = np.asarray(history[list(history)[-1]])
    info = {
        "seconds": time.perf_counter() - start,
        "best_round": None if ranker.best_iteration_ is None else ranker.best_iteration_ + 1,
        "rounds_run": int(objective.shape[0]),
        "vali_objective_best": float(objective.max()),
        "vali_objective_argmax": int(objective.argmax()) + 1,
        "vali_objective_last": float(objective[-1]),
    }
    return ranker, info


def train_models(
    data: LTRDataset,
    weights: list[float],
    probe_weights: list[float],
    probes: list[str],
    seed: int,
    cache: Path,
) -> list[Model]:
    """Train (or read from ``cache``) every model of one fold; a cached training made with
    another :func:`configuration` (the package's defaults changed, say) is trained again."""
    vali = without_empty_queries(data.vali)
    rows = _rows_with_relevant(data.vali)
    jobs: list[tuple[str, float, dict[str, Any] | None, bool]] = [("lambdamart", 0.0, None, True)]
    jobs += [("user", w, {}, True) for w in weights]
    jobs += [(p, w, PROBES[p], p != "no-stopping") for w in probe_weights for p in probes]
    models = []
    for name, weight, options, stop in jobs:
        path = cache / f"{data.name.replace('/', '_')}_{name}_w{weight:g}_s{seed}.npz"
        config = configuration(weight, options, stop=stop, seed=seed)
        stored = np.load(path) if path.is_file() else None
        if stored is None or str(stored.get("config", "")) != config:
            if options is None:
                fit = train("lambdamart-xgb", data, k=K, seed=seed, trees=_lambdamart_trees())
                margins = {"vali": fit.vali_scores[rows], "test": fit.test_scores}
                info = {"seconds": fit.train_seconds, "best_round": fit.best_round}
            else:
                ranker, info = _fit_plrank(data, weight, options, stop=stop, seed=seed)
                margins = {
                    "vali": ranker.predict(vali.X),
                    "test": ranker.predict(data.test.X),
                    "train": ranker.predict(data.train.X),
                }
            path.parent.mkdir(parents=True, exist_ok=True)
            np.savez(path, info=json.dumps(info), config=config, **margins)
            print(f"{data.name} {name} w={weight:g}: {info}", flush=True)
            stored = np.load(path)
        train_margins = stored["train"] if "train" in stored else None
        models.append(
            Model(
                name,
                weight,
                stored["vali"],
                stored["test"],
                train_margins,
                json.loads(str(stored["info"])),
            )
        )
    return models


def _evaluate(margins: np.ndarray, split: Split, samples: int) -> PolicyValues:
    return evaluate_policy(margins, split, k=K, n_samples=samples, seed=7, n_jobs=1)


def evaluate_model(model: Model, data: LTRDataset, samples: int) -> dict[str, Any]:
    """Per split: the model as trained (T=0) and under every temperature (per-query values)."""
    vali = without_empty_queries(data.vali)
    scale = validation_scale(model.vali, vali)
    out: dict[str, Any] = {"scale": scale}
    for split_name, split, margins in (("vali", vali, model.vali), ("test", data.test, model.test)):
        points = {0.0: _evaluate(margins, split, samples)}
        for t in TEMPERATURES:
            points[t] = _evaluate(margins / (t * scale), split, samples)
        out[split_name] = {t: (v.ndcg, v.values["ee_l"]) for t, v in points.items()}
    if model.train is not None:  # overfitting of the fairness term: the training queries
        train_split = without_empty_queries(data.train)
        v = _evaluate(model.train[_rows_with_relevant(data.train)], train_split, samples)
        out["train"] = (v.ndcg, v.values["ee_l"])
    return out


def envelope(curve: dict[float, tuple[np.ndarray, np.ndarray]], ee_l: float) -> np.ndarray | None:
    """Per query: the reference curve's NDCG interpolated at the mean EE-L ``ee_l``.

    The curve runs over the temperatures from the sharpest up to its smallest EE-L; ``None``
    when ``ee_l`` is below that smallest EE-L (the curve does not reach it).
    """
    temps = sorted(t for t in curve if t > 0)
    means = [float(curve[t][1].mean()) for t in temps]
    stop = int(np.argmin(means)) + 1
    temps, means = temps[:stop], means[:stop]
    if ee_l < means[-1]:
        return None
    if ee_l >= means[0]:
        return curve[temps[0]][0]
    for (t0, m0), (t1, m1) in zip(zip(temps, means), zip(temps[1:], means[1:])):
        if m1 <= ee_l <= m0:
            a = (ee_l - m1) / (m0 - m1) if m0 > m1 else 1.0
            return a * curve[t0][0] + (1.0 - a) * curve[t1][0]
    return None


def _gap(ndcg: np.ndarray, reference: np.ndarray | None) -> str:
    if reference is None:
        return "not reached"
    d = ndcg - reference
    return f"{d.mean():+.4f} ({d.std(ddof=1) / np.sqrt(d.shape[0]):.4f})"


def _chosen_temperature(points: dict[float, tuple[np.ndarray, np.ndarray]], weight: float) -> float:
    """The temperature (0: as trained) of the best validation objective NDCG - w EE-L."""
    return max(points, key=lambda t: float((points[t][0] - weight * points[t][1]).mean()))


def report_fold(fold: str, models: list[Model], results: list[dict[str, Any]]) -> list[str]:
    """The rows of one fold: each PL-Rank model against the envelopes, on vali and on test."""
    refs = {
        m.name if m.name == "lambdamart" else "plrank w=0": r
        for m, r in zip(models, results)
        if m.name == "lambdamart" or (m.name == "user" and m.weight == 0)
    }
    lines = []
    for model, result in zip(models, results):
        if model.name == "lambdamart":
            continue
        chosen = _chosen_temperature(result["vali"], model.weight)
        for split in ("vali", "test"):
            ndcg, ee_l = result[split][0.0]
            gaps = [_gap(ndcg, envelope(refs[r][split], float(ee_l.mean()))) for r in refs]
            c_ndcg, c_ee_l = result[split][chosen]
            c_gaps = [_gap(c_ndcg, envelope(refs[r][split], float(c_ee_l.mean()))) for r in refs]
            info = model.info
            rounds = info["best_round"] or info["rounds_run"] if fold != "pooled" else ""
            lines.append(
                f"| {fold} | {model.name} | {model.weight:g} | {split} | {rounds} | "
                f"{ndcg.mean():.4f} | {ee_l.mean():.4f} | {gaps[0]} | {gaps[1]} | "
                f"{'as trained' if chosen == 0 else f'T={chosen:g}'} | {c_ndcg.mean():.4f} | "
                f"{c_ee_l.mean():.4f} | {c_gaps[0]} | {c_gaps[1]} |"
            )
    return lines


def pooled(results: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Each model's per-query values concatenated over the folds (models in the same order)."""
    out = []
    for per_fold in zip(*results):
        merged: dict[str, Any] = {"scale": float("nan")}
        for split in ("vali", "test"):
            merged[split] = {
                t: tuple(np.concatenate([r[split][t][i] for r in per_fold]) for i in (0, 1))
                for t in per_fold[0][split]
            }
        if all("train" in r for r in per_fold):
            merged["train"] = tuple(
                np.concatenate([r["train"][i] for r in per_fold]) for i in (0, 1)
            )
        out.append(merged)
    return out


def objective_rows(models: list[Model], results: list[dict[str, Any]]) -> list[str]:
    """Test objective NDCG - w EE-L of the fair policy against temperature-only policies.

    Each reference's temperature is chosen on validation for the same weight, as is the fair
    policy's own temperature; the differences are paired over the test queries.
    """
    refs = {
        m.name: r
        for m, r in zip(models, results)
        if m.name == "lambdamart" or (m.name == "user" and m.weight == 0)
    }
    lines = []
    for model, result in zip(models, results):
        if model.name == "lambdamart" or model.weight == 0:
            continue
        w = model.weight

        def objective(r: dict[str, Any], split: str, t: float, w: float = w) -> np.ndarray:
            return r[split][t][0] - w * r[split][t][1]

        def tempered(r: dict[str, Any], split: str, w: float = w) -> np.ndarray:
            return objective(r, split, _chosen_temperature(r["vali"], w))

        own = objective(result, "test", 0.0)
        own_t = tempered(result, "test")
        best = max(refs.values(), key=lambda r: float(tempered(r, "vali").mean()))
        cells = [
            f"{v.mean():.4f}" for v in (own, own_t, *(tempered(r, "test") for r in refs.values()))
        ]
        reference = tempered(best, "test")
        lines.append(
            f"| {model.name} | {w:g} | "
            + " | ".join([*cells, _gap(own, reference), _gap(own_t, reference)])
            + " |"
        )
    return lines


def reference_rows(fold: str, models: list[Model], results: list[dict[str, Any]]) -> list[str]:
    """The reference curves (LambdaMART and PL-Rank w=0 under every temperature)."""
    lines = []
    for model, result in zip(models, results):
        if not (model.name == "lambdamart" or (model.name == "user" and model.weight == 0)):
            continue
        for t in TEMPERATURES:
            cells = [
                f"{result[s][t][0].mean():.4f} / {result[s][t][1].mean():.4f}"
                for s in ("vali", "test")
            ]
            name = "LambdaMART" if model.name == "lambdamart" else "PL-Rank w=0"
            lines.append(f"| {fold} | {name} | {t:g} | {cells[0]} | {cells[1]} |")
    return lines


def margin_rows(fold: str, models: list[Model], results: list[dict[str, Any]]) -> list[str]:
    """Margin spread, the validation objective's curve and train-vs-vali values as trained."""
    lines = []
    for m, r in zip(models, results):
        train = r.get("train")
        seen = "" if train is None else f"{train[0].mean():.4f} / {train[1].mean():.4f}"
        vali = f"{r['vali'][0.0][0].mean():.4f} / {r['vali'][0.0][1].mean():.4f}"
        lines.append(
            f"| {fold} | {m.name} | {m.weight:g} | {r['scale']:.3f} | "
            f"{m.info.get('vali_objective_argmax', '')} | {m.info.get('rounds_run', '')} | "
            f"{m.info.get('vali_objective_best', float('nan')):.4f} | "
            f"{m.info.get('vali_objective_last', float('nan')):.4f} | {seen} | {vali} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--folds", default="1,2,3,4,5")
    parser.add_argument("--weights", default="0,0.3,1,3,10")
    parser.add_argument("--probe-weights", default="3,10")
    parser.add_argument("--probes", default=",".join(PROBES))
    parser.add_argument("--samples", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cache", default="runs/fairness_dominance")
    parser.add_argument("--out", default="benchmarks/results/fairness_dominance.md")
    args = parser.parse_args()
    weights = [float(w) for w in args.weights.split(",")]
    probe_weights = [float(w) for w in args.probe_weights.split(",") if w]
    probes = [p for p in args.probes.split(",") if p]
    rows, refs, spreads, every = [], [], [], []
    for fold in (int(f) for f in args.folds.split(",")):
        data = load("mq2008", fold, drop_empty_test_queries=True)
        models = train_models(data, weights, probe_weights, probes, args.seed, Path(args.cache))
        results = [evaluate_model(m, data, args.samples) for m in models]
        rows += report_fold(f"Fold{fold}", models, results)
        refs += reference_rows(f"Fold{fold}", models, results)
        spreads += margin_rows(f"Fold{fold}", models, results)
        every.append(results)
    everything = pooled(every)
    pooled_rows = report_fold("pooled", models, everything)
    objectives = objective_rows(models, everything)
    command = (
        f"nice -n 10 python research/fairness_dominance.py --folds {args.folds} "
        f"--weights {args.weights} --probe-weights {args.probe_weights} "
        f"--probes '{args.probes}' --samples {args.samples} --seed {args.seed} "
        f"--out {args.out}"
    )
    text = "\n".join(
        [
            "# Trained fair policies against temperature-randomised rankers (MQ2008)",
            "",
            f"`{command}`",
            "",
            "Expected NDCG@10 and EE-L per split (queries with a relevant document, "
            f"{args.samples} rankings per query, EE-L without the plug-in's bias). Gap: the "
            "policy's NDCG minus the envelope of the reference (LambdaMART or PL-Rank w=0 under "
            "the temperature grid, linear between neighbouring temperatures, i.e. a random "
            "mixture) at the policy's EE-L, mean (standard error over queries); negative: "
            "dominated. 'chosen T': the temperature (or as trained) of the best validation "
            "objective NDCG - w EE-L, read on both splits. 'not reached': the policy is fairer "
            "than every point of the reference curve (its EE-L is below the curve's smallest), so "
            "that reference does not dominate it. 'pooled': every fold's queries together (each "
            "reference curve pooled per temperature).",
            "",
            "| fold | model | w | split | rounds | NDCG@10 | EE-L | gap vs LambdaMART+T | "
            "gap vs PL-Rank w=0+T | chosen T | NDCG@10 | EE-L | gap vs LambdaMART+T | "
            "gap vs PL-Rank w=0+T |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
            *pooled_rows,
            *rows,
            "",
            "## Test objective NDCG@10 - w EE-L: trained against a temperature alone",
            "",
            "Pooled test queries. Every temperature is chosen on validation for the weight w. "
            "'best reference': the temperature-randomised LambdaMART or PL-Rank w=0, whichever has "
            "the better validation objective; differences paired over queries (standard error).",
            "",
            "| model | w | as trained | + chosen T | LambdaMART + chosen T "
            "| PL-Rank w=0 + chosen T | as trained - best reference "
            "| + chosen T - best reference |",
            "|---|---|---|---|---|---|---|---|",
            *objectives,
            "",
            "## Reference curves: NDCG@10 / EE-L",
            "",
            "| fold | model | T | validation | test |",
            "|---|---|---|---|---|",
            *refs,
            "",
            "## Margins and the validation objective's curve",
            "",
            "| fold | model | w | within-query margin spread (vali) | round of the best vali "
            "objective | rounds run | best vali objective | last vali objective | train NDCG@10 / "
            "EE-L | vali NDCG@10 / EE-L |",
            "|---|---|---|---|---|---|---|---|---|---|",
            *spreads,
            "",
        ]
    )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
