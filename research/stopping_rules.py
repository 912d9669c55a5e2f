r"""Choose PL-Rank's stopping rule offline, on the curves ``research/stopping_curves.py`` records.

A rule reads a validation signal after every round (the mean over the validation queries of one
recorded per-query curve, optionally smoothed) and returns the round it keeps and the rounds it
ran. Quality is read **cross-fitted**: each validation query's NDCG@k at the round the rule keeps
on the other half of its fold's validation queries, pooled over the folds (queries without a
relevant document left out). Per seed, the pooled difference to the library's LambdaMART (its
own early stopping: NDCG@k of the ranking, patience 50) is paired over queries; the spread of
the seeds' differences, the three-seed mean and the rounds each rule runs on the whole
validation split (the training's cost) are reported. ``--test`` adds the test NDCG@k of the
model kept on the whole validation split, for the final check of a chosen rule only.
``--methods lambdamart`` applies the same rules to LambdaMART's own signal, the ranking's
validation NDCG@k (seed 0: it is deterministic), each against LambdaMART's default rule.
``--against plrank`` adds each rule's difference to that recorded variant under the same rule
(the three-seed means, paired over queries): how a variant of the objective compares with the
default one.

    python research/stopping_rules.py --data mq2008,mq2007-agg --curves /tmp/curves
"""

from __future__ import annotations

import argparse
import itertools
import sys
from dataclasses import dataclass, replace
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np

from benchmarks.harness import command_line
from gbdt_plrank._backends import EarlyStopper
from gbdt_plrank.cli._argtypes import int_list, text_list
from gbdt_plrank.harness.data import load
from gbdt_plrank.harness.stats import paired


@dataclass(frozen=True)
class Rule:
    name: str
    signal: str = "std_seed"
    patience: int = 50
    min_rounds: int = 0
    window: int = 1  # trailing moving average
    tolerance: float = 0.0  # keep the last round within this of the best
    min_delta: float = 0.0  # a new best must beat the best by more (XGBoost's, LightGBM's)
    patience_rate: float = 0.0  # the patience grows to this fraction of the best round

    def apply(self, curve: np.ndarray) -> tuple[int, int]:
        """(kept round, rounds run), 1-based, for a signal ``curve`` of shape (rounds,)."""
        s = curve.astype(np.float64)
        if self.window > 1:
            c = np.cumsum(np.insert(s, 0, 0.0))
            n = np.minimum(np.arange(1, s.size + 1), self.window)
            s = (c[1:] - c[np.arange(1, s.size + 1) - n]) / n
        stopper = EarlyStopper(
            self.patience,
            self.min_rounds,
            self.min_delta,
            library="xgboost",
            patience_rate=self.patience_rate,
        )
        run = next((t + 1 for t in range(s.size) if stopper.update(t, s[t])), s.size)
        best_t, best = stopper.kept_round, stopper.kept_value
        if self.tolerance > 0:
            best_t = int(np.nonzero(s[:run] >= best - self.tolerance)[0][-1])
        return best_t + 1, run


RULES = [
    Rule("standardized (default)"),
    Rule("standardized, evaluation streams shared by the seeds", "std_fixed"),
    Rule("standardized, mean of the last 10 rounds", window=10),
    Rule("standardized, patience 25", patience=25),
    Rule("standardized, at least 40 rounds", min_rounds=40),
    Rule("standardized, at least 100 rounds", min_rounds=100),
    Rule("standardized, at least 40 rounds, patience 25", min_rounds=40, patience=25),
    Rule("standardized, at least 60 rounds, patience 25", min_rounds=60, patience=25),
    Rule("standardized, at least 100 rounds, patience 25", min_rounds=100, patience=25),
    Rule("standardized, last round within 0.002 of the best", tolerance=0.002),
    Rule(
        "standardized, at least 40 rounds, patience 25, min_delta 1e-4",
        min_rounds=40,
        patience=25,
        min_delta=1e-4,
    ),
    Rule(
        "standardized, at least 40 rounds, patience 25, min_delta 3e-4",
        min_rounds=40,
        patience=25,
        min_delta=3e-4,
    ),
    Rule(
        "standardized, at least 40 rounds, patience 25, min_delta 1e-3",
        min_rounds=40,
        patience=25,
        min_delta=1e-3,
    ),
    Rule(
        "standardized, at least 40 rounds, patience 25, min_delta 2e-3",
        min_rounds=40,
        patience=25,
        min_delta=2e-3,
    ),
    Rule(
        "standardized, at least 40 rounds, patience 25 or 0.5 of the best round",
        min_rounds=40,
        patience=25,
        patience_rate=0.5,
    ),
    Rule(
        "standardized, at least 40 rounds, patience 25 or the best round",
        min_rounds=40,
        patience=25,
        patience_rate=1.0,
    ),
    Rule("the policy's expected NDCG", "pol_fixed"),
    Rule("NDCG of the ranking", "val_rank"),
]
BASELINE = Rule("lambdamart", "val_rank")
LIBRARIES = {"xgb": "XGBoost", "lgb": "LightGBM"}


def _files(curves: Path, data, trees, lib, method, fold, seed):
    return np.load(curves / f"{data}_{trees}_{lib}_{method}_f{fold}_s{seed}.npz")


def evaluate(
    curves: Path,
    data: str,
    trees: str,
    lib: str,
    folds,
    seeds,
    rules,
    test: bool,
    method: str = "plrank",
):
    halves, relevant = {}, {}
    for fold in folds:
        ds = load(data, fold, drop_empty_test_queries=True)
        qv = np.unique(ds.vali.qid, return_inverse=True)[1]
        n = qv.max() + 1
        relevant[fold] = np.bincount(qv, ds.vali.y > 0, minlength=n) > 0
        rng = np.random.default_rng(1000 + fold)
        a = rng.permutation(n) < n // 2
        halves[fold] = (a, ~a)
    base = {fold: _files(curves, data, trees, lib, "lambdamart", fold, 0) for fold in folds}
    out = {}
    for rule in [BASELINE, *rules]:
        per_seed = {}
        for seed in seeds if rule is not BASELINE else (0,):
            q_val, q_test, kept, ran = {}, {}, [], []
            for fold in folds:
                d = (
                    base[fold]
                    if rule is BASELINE
                    else _files(curves, data, trees, lib, method, fold, seed)
                )
                sig = d[rule.signal]
                a, b = halves[fold]
                for own, other in ((a, b), (b, a)):
                    k, _ = rule.apply(sig[:, other].mean(1))
                    for q in np.nonzero(own & relevant[fold])[0]:
                        q_val[(fold, int(q))] = float(d["val_rank"][k - 1, q])
                k, r = rule.apply(sig.mean(1))
                kept.append(k)
                ran.append(r)
                if test:
                    for q, v in enumerate(d["test_rank"][k - 1]):
                        q_test[(fold, q)] = float(v)
            per_seed[seed] = (q_val, q_test, kept, ran)
        out[rule.name] = per_seed
    return out


def _seed_mean(per_seed, seeds) -> dict:
    """Each validation query's NDCG@k at the kept round, its mean over the seeds."""
    return {q: np.mean([per_seed[s][0][q] for s in seeds]) for q in per_seed[seeds[0]][0]}


def report(out, seeds, test: bool, against=None) -> list[str]:
    """The rows of one table: a rule per row, LambdaMART first; with ``against`` (the output of
    :func:`evaluate` for another variant), each rule's paired difference to it."""
    bval, btest, bkept, bran = out[BASELINE.name][0]
    head = [
        "rule",
        "vali NDCG@10",
        "each seed minus LambdaMART",
        "mean of the seeds minus LambdaMART, paired",
        "spread of the seeds (sd of one seed's mean)",
        "kept rounds by fold (seeds)",
        "rounds run",
    ]
    if against is not None:
        head.append(f"minus {against[0]}, paired")
    if test:
        head += ["test, each seed minus LambdaMART", "test spread"]
    lines = [
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
        f"| LambdaMART | {np.mean(list(bval.values())):.4f} | | | | "
        f"{', '.join(map(str, bkept))} | {sum(bran)} |"
        + (" | |" if test else "")
        + (" |" if against is not None else ""),
    ]
    for name, per_seed in out.items():
        if name == BASELINE.name:
            continue
        diffs = [np.mean([v - bval[q] for q, v in per_seed[s][0].items()]) for s in seeds]
        mean = _seed_mean(per_seed, seeds)
        p = paired(mean, bval)
        kept = ["/".join(str(per_seed[s][2][f]) for s in seeds) for f in range(len(bkept))]
        ran = np.mean([sum(per_seed[s][3]) for s in seeds])
        spread = "one seed"
        if len(seeds) > 1:
            var = np.mean([np.var([per_seed[s][0][q] for s in seeds], ddof=1) for q in bval])
            spread = f"{max(diffs) - min(diffs):.4f} ({np.sqrt(var / len(bval)):.4f})"
        row = (
            f"| {name} | {np.mean(list(mean.values())):.4f} | "
            f"{' / '.join(f'{x:+.4f}' for x in diffs)} | {p.interval}, {p.verdict} | "
            f"{spread} | "
            f"{', '.join(kept)} | {ran:.0f} |"
        )
        if test:
            td = [np.mean([v - btest[q] for q, v in per_seed[s][1].items()]) for s in seeds]
            row += f" {' / '.join(f'{x:+.4f}' for x in td)} | {max(td) - min(td):.4f} |"
        if against is not None:
            d = paired(mean, _seed_mean(against[1][name], seeds))
            row += f" {d.interval}, {d.verdict} |"
        lines.append(row)
    return lines


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=text_list, default="mq2008,mq2007-agg")
    p.add_argument("--libs", type=text_list, default="xgb,lgb")
    p.add_argument("--folds", type=int_list, default="1,2,3,4,5")
    p.add_argument("--seeds", type=int_list, default="0,1,2")
    p.add_argument("--trees", default="harness")
    p.add_argument(
        "--methods",
        type=text_list,
        default="plrank",
        help="recorded PL-Rank variants: plrank, plrank-N<N>, plrank[-N<N>]-lattice",
    )
    p.add_argument("--curves", default="/tmp/curves")
    p.add_argument(
        "--against", default="", help="a recorded PL-Rank variant each method is also compared with"
    )
    p.add_argument("--only", default="", help="rule names, ';'-separated")
    p.add_argument(
        "--test",
        action="store_true",
        help="also the test NDCG@10 of the kept models (a chosen rule's check)",
    )
    p.add_argument("--out", default="", help="append the tables to this markdown file")
    a = p.parse_args()
    folds, seeds = a.folds, a.seeds
    rules = [r for r in RULES if not a.only or r.name in a.only.split(";")]
    lines = []
    for data, lib, method in itertools.product(a.data, a.libs, a.methods):
        chosen, seeds = rules, a.seeds
        if method == "lambdamart":  # its own signal, its one model
            chosen = [
                replace(
                    r,
                    signal="val_rank",
                    name=r.name.replace(
                        "standardized (default)", "patience 50 (the default)"
                    ).replace("standardized, ", ""),
                )
                for r in rules
                if r.signal == "std_seed"
            ]
            seeds = [0]
        out = evaluate(Path(a.curves), data, a.trees, lib, folds, seeds, chosen, a.test, method)
        against = None
        if a.against and method != "lambdamart":
            against = (
                a.against,
                evaluate(
                    Path(a.curves), data, a.trees, lib, folds, seeds, chosen, False, a.against
                ),
            )
        lines += [
            f"\n### {data}, {LIBRARIES[lib]}, {method}, folds {','.join(map(str, folds))}, "
            f"seeds {','.join(map(str, seeds))}, "
            f"trees {a.trees}\n",
            *report(out, seeds, a.test, against),
        ]
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        command = command_line("python research/stopping_rules.py")
        with open(a.out, "a") as f:
            f.write(f"\nWritten by `{command}`.\n{text}")


if __name__ == "__main__":
    main()
