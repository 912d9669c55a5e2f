"""What tuning leaves in its output folder, and the summary it prints.

- ``best_params.toml``: one ``[method]`` table per tuned study, the parameters of its best trial,
  in the format ``gbdt-plrank compare CONFIG --params FILE`` reads
  (:func:`~gbdt_plrank.harness.read_params`).
- ``history.png``: each trial's validation NDCG@k and the best so far, one panel per method.
- ``importances.png``: the fANOVA importance of each searched parameter, one panel per method.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._util.compat import require

if TYPE_CHECKING:
    import optuna

__all__ = ["plot_history", "plot_importances", "summary", "toml_tables", "write_best_params"]

PURPOSE = "tuning"
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def _key(name: str) -> str:
    return name if _BARE_KEY.fullmatch(name) else json.dumps(name)


def _value(value: Any) -> str:
    """A TOML scalar: JSON's strings are TOML's basic strings, and floats keep their repr."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    raise TypeError(f"value must be a string, number or boolean, but {value!r} is given.")


def toml_tables(tables: Mapping[str, Mapping[str, Any]]) -> str:
    """TOML text of ``name -> {key: scalar or {key: scalar}}`` (sub-tables as ``[name.key]``)."""
    lines: list[str] = []
    for name, table in tables.items():
        scalars = {k: v for k, v in table.items() if not isinstance(v, Mapping)}
        lines += [f"[{_key(name)}]", *(f"{_key(k)} = {_value(v)}" for k, v in scalars.items()), ""]
        for sub, body in table.items():
            if isinstance(body, Mapping):
                lines += [f"[{_key(name)}.{_key(sub)}]"]
                lines += [*(f"{_key(k)} = {_value(v)}" for k, v in body.items()), ""]
    return "\n".join(lines)


def _describe(study: optuna.Study, k: int) -> str:
    """The best value of a study, where it was found, and how many trials ended how."""
    best = study.best_trial
    counts = Counter(t.state.name.lower() for t in study.get_trials(deepcopy=False))
    done = ", ".join(f"{n} {state}" for state, n in sorted(counts.items()))
    return (
        f"best validation NDCG@{k} {best.value:.4f} (trial {best.number}, best round "
        f"{best.user_attrs.get('best_round', '?')}); trials: {done}"
    )


def write_best_params(
    studies: Sequence[optuna.Study], path: str | Path, *, k: int, header: str
) -> None:
    """Write the best trial's parameters of every study (named after its method) to ``path``.

    The file starts with ``header`` and each study's best value, as comments.
    """
    lines = [*header.splitlines(), *(f"{s.study_name}: {_describe(s, k)}" for s in studies)]
    text = toml_tables({s.study_name: s.best_trial.user_attrs["params"] for s in studies})
    Path(path).write_text("\n".join([*(f"# {line}" for line in lines), "", text]), encoding="utf-8")


def summary(studies: Sequence[optuna.Study], *, k: int) -> str:
    """The best value and parameters of every study, as printed at the end of tuning."""
    lines = []
    for study in studies:
        lines.append(f"{study.study_name}: {_describe(study, k)}")
        for name, value in study.best_trial.params.items():
            lines.append(f"    {name} = {value!r}")
    return "\n".join(lines)


def _figure(n_panels: int, *, width: float) -> tuple[Any, Any]:
    figure = require("matplotlib.figure", purpose="the tuning plots")
    fig = figure.Figure(figsize=(width, 3.2 * max(n_panels, 1)), layout="constrained")
    return fig, fig.subplots(max(n_panels, 1), 1, squeeze=False)[:, 0]


def plot_history(studies: Sequence[optuna.Study], path: str | Path, *, k: int) -> None:
    """Validation NDCG@k of every trial and the best so far, one panel per study.

    Pruned trials are drawn at their last reported value (the value when they were stopped).
    """
    fig, axes = _figure(len(studies), width=7.0)
    for ax, study in zip(axes, studies):
        done = [t for t in study.get_trials(deepcopy=False) if t.state.name == "COMPLETE"]
        pruned = [
            t
            for t in study.get_trials(deepcopy=False)
            if t.state.name == "PRUNED" and t.intermediate_values
        ]
        numbers = [t.number for t in done]
        values = [t.value for t in done]
        best = [max(values[: i + 1]) for i in range(len(values))]
        ax.plot(numbers, values, "o", color="C0", label="complete", markersize=4)
        last = [t.intermediate_values[max(t.intermediate_values)] for t in pruned]
        ax.plot([t.number for t in pruned], last, "x", color="C3", label="pruned (last value)")
        ax.step(numbers, best, where="post", color="C1", label="best so far")
        ax.set(
            title=f"{study.study_name}: optimisation history",
            xlabel="trial",
            ylabel=f"validation NDCG@{k}",
        )
        ax.locator_params(axis="x", integer=True)
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small")
    fig.savefig(path, dpi=110)


def plot_importances(studies: Sequence[optuna.Study], path: str | Path, *, seed: int) -> None:
    """fANOVA importance of each searched parameter (summing to 1), one panel per study.

    A study needs complete trials of at least two different values; until then its panel says
    so.
    """
    optuna = require("optuna", purpose=PURPOSE)
    fig, axes = _figure(len(studies), width=6.0)
    for ax, study in zip(axes, studies):
        ax.set_title(f"{study.study_name}: parameter importances (fANOVA)")
        complete = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
        if len({t.value for t in complete}) < 2:
            ax.text(0.5, 0.5, "needs complete trials of different values", ha="center", va="center")
            ax.set_axis_off()
            continue
        evaluator = optuna.importance.FanovaImportanceEvaluator(seed=seed)
        importances = optuna.importance.get_param_importances(study, evaluator=evaluator)
        names = list(importances)[::-1]
        ax.barh(names, [importances[n] for n in names], color="C0")
        ax.set_xlabel("importance")
        ax.grid(alpha=0.3, axis="x")
    fig.savefig(path, dpi=110)
