r"""Where a fixed patience would have stopped the trainings a growing patience let run on.

Early stopping decides from the validation curve up to the round it stops at, so a training
recorded under the more patient rule holds every less patient rule's decision: this script
replays the fixed patience (``patience_rate=0``, :class:`~gbdt_plrank._backends.EarlyStopper`)
on each recorded curve and reports, per training, where it would have stopped and kept, what
the recorded rule kept, and how much the watched validation value rose between the two kept
rounds, against the curve's round-to-round noise (the standard deviation of its differences
over the last ``patience`` rounds before the fixed rule's stop, over :math:`\sqrt 2`). A rise
of more than twice that noise is a training the fixed rule stopped while its validation curve
was still rising. The recorded rule is replayed too: its kept and run rounds must be the
recorded ones (a check that the replay is the callbacks' rule).

Inputs are the records of ``benchmarks/deep_queries.py`` and ``benchmarks/time_to_model.py``
(``--records``, JSON lines with each training's watched ``curve``); the validation splits only,
no test figure is read.

    python research/plateau_stops.py --records benchmarks/results/deep_queries_defaults.jsonl \
        --out benchmarks/results/plateau_stops.md
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np

from gbdt_plrank import min_rounds_for
from gbdt_plrank._backends import EarlyStopper
from gbdt_plrank.harness.settings import TreeSettings

#: A rise of the watched value by more than this many noise units counts as still rising.
RISING = 2.0


def replay(curve: np.ndarray, *, patience: int, min_rounds: int, rate: float) -> tuple[int, int]:
    """(0-based kept round, rounds run) of the stopping rule on ``curve``; a curve that ends
    before the rule stops ran all its rounds."""
    stopper = EarlyStopper(patience, min_rounds, 0.0, patience_rate=rate)
    for t, value in enumerate(curve):
        if stopper.update(t, float(value)):
            return stopper.kept_round, t + 1
    return stopper.kept_round, curve.size


def noise(curve: np.ndarray, end: int, window: int) -> float:
    """The round-to-round noise of ``curve`` over the ``window`` rounds up to ``end``."""
    part = curve[max(end - window, 0) : end]
    return float(np.std(np.diff(part)) / np.sqrt(2)) if part.size > 2 else float("nan")


def study(trainings: list[dict], *, patience: int, min_rounds: int, rate: float) -> list[dict]:
    """Each training's two rules replayed: the fixed patience and the recorded growing one."""
    rows = []
    for t in trainings:
        curve = np.asarray(t["curve"], dtype=float)
        kept_f, ran_f = replay(curve, patience=patience, min_rounds=min_rounds, rate=0.0)
        kept_g, ran_g = replay(curve, patience=patience, min_rounds=min_rounds, rate=rate)
        if (kept_g + 1, ran_g) != (t["best_round"], t["rounds_run"]):
            raise ValueError(
                f"the replayed rule kept round {kept_g + 1} of {ran_g}, but the training recorded "
                f"{t['best_round']} of {t['rounds_run']}: {t['name']} was not trained with "
                f"patience {patience}, min_rounds {min_rounds} and patience_rate {rate}"
            )
        rise = float(curve[kept_g] - curve[kept_f])
        scale = noise(curve, ran_f, patience)
        rows.append(
            {
                **t,
                "fixed": (kept_f, ran_f),
                "grown": (kept_g, ran_g),
                "rise": rise,
                "noise": scale,
                "rising": ran_f < ran_g and rise > RISING * scale,
            }
        )
    return rows


def _deep(path: Path) -> tuple[list[dict], float]:
    """The trainings of a deep-query record file, and the patience rate they stopped by."""
    out, rates = [], set()
    for line in path.read_text().splitlines():
        r = json.loads(line)
        rates.add(r.get("patience_rate", 0.0))
        name = f"{r['data']} draw/fold {r['fold']}" + (
            f" repeat {r['seed']}" if r["data"].endswith("-cv") else ""
        )
        out.append(
            {
                "name": name,
                "method": r["row"],
                "curve": r["curve"],
                "best_round": r["best_round"],
                "rounds_run": r["rounds_run"],
            }
        )
    if len(rates) != 1:
        raise ValueError(f"{path} mixes trainings of patience rates {sorted(rates)}")
    return out, rates.pop()


def report(rows: list[dict], *, patience: int, min_rounds: int, rate: float) -> str:
    """Per method: trainings, how many the fixed rule stops earlier, how many of those while
    still rising, and the rounds run by each rule; then every training stopped while rising."""
    lines = [
        f"Fixed: patience {patience} from round {min_rounds} on. Growing: the same with "
        f"patience_rate {rate:g} (the patience grows to {rate:g} times the best round). "
        f"*Still rising*: the fixed rule stops earlier and the watched validation value at the "
        f"growing rule's kept round is above the fixed rule's kept value by more than "
        f"{RISING:g} times the curve's round-to-round noise.\n",
        "| method | trainings | fixed stops earlier | of them still rising | rounds run, fixed "
        "| rounds run, growing | kept rounds (median), fixed / growing |",
        "|---|---|---|---|---|---|---|",
    ]
    for method in dict.fromkeys(r["method"] for r in rows):
        rs = [r for r in rows if r["method"] == method]
        earlier = [r for r in rs if r["fixed"][1] < r["grown"][1]]
        lines.append(
            f"| {method} | {len(rs)} | {len(earlier)} | {sum(r['rising'] for r in rs)} | "
            f"{sum(r['fixed'][1] for r in rs)} | {sum(r['grown'][1] for r in rs)} | "
            f"{int(np.median([r['fixed'][0] + 1 for r in rs]))} / "
            f"{int(np.median([r['grown'][0] + 1 for r in rs]))} |"
        )
    rising = [r for r in rows if r["rising"]]
    if rising:
        lines += [
            "\nThe trainings the fixed rule stopped while still rising (rounds 1-based):\n",
            "| training | method | fixed: kept / run | growing: kept / run | rise | noise |",
            "|---|---|---|---|---|---|",
        ]
        lines += [
            f"| {r['name']} | {r['method']} | {r['fixed'][0] + 1} / {r['fixed'][1]} | "
            f"{r['grown'][0] + 1} / {r['grown'][1]} | {r['rise']:+.4f} | {r['noise']:.4f} |"
            for r in rising
        ]
    return "\n".join(lines) + "\n"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--records",
        type=Path,
        action="append",
        default=[],
        help="JSON lines of benchmarks/deep_queries.py (repeatable)",
    )
    p.add_argument("--out", type=Path)
    a = p.parse_args()
    trees = TreeSettings()
    rule = {
        "patience": trees.early_stopping_rounds,
        "min_rounds": min_rounds_for(trees.learning_rate),
    }
    command = "python research/plateau_stops.py" + "".join(f" --records {r}" for r in a.records)
    parts = [f"## Where a fixed patience stops\n\nWritten by `{command}`.\n"]
    for path in a.records:
        trainings, rate = _deep(path)
        rows = study(trainings, **rule, rate=rate)
        parts += [f"### {path.name}\n", report(rows, **rule, rate=rate)]
    text = "\n".join(parts)
    if a.out:
        a.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
