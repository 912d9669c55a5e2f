"""Studies in a storage: one per method, resumable, with their budgets counted across runs.

A storage (by default ``optuna.db``, SQLite, in the output folder) holds one study per method,
named after it, all tuned under the same settings: data, k, seed, tree and objective settings. Each
study records its settings and its search space; opening it again under other ones is refused
rather than mixed, as the comparison harness refuses other settings in its output folder.

Resuming keeps every finished trial. A trial cut off by a killed process stays RUNNING in the
storage: on opening, such trials are marked FAIL (a study is tuned by one process at a time).
Only COMPLETE and PRUNED trials count toward the budget, trials and seconds alike.

Optuna does not store the sampler: it is recreated as a TPE sampler seeded from the tuning seed
and the number of trials already in the study, so that the same seed and budget give the same
trials, and a resumed study does not draw its first trials again.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .._util.compat import require
from ..harness.settings import ConfigError

if TYPE_CHECKING:
    import optuna

__all__ = ["Budget", "open_study", "studies_in", "tuned_studies"]

PURPOSE = "tuning"
SETTINGS = "settings"  # the user attribute holding a study's settings


def _finished() -> tuple[Any, ...]:
    """The trial states that count toward a budget."""
    states = require("optuna", purpose=PURPOSE).trial.TrialState
    return (states.COMPLETE, states.PRUNED)


@dataclass(frozen=True)
class Budget:
    """What a study may still run: trials and seconds (None: no limit of that kind).

    Attributes
    ----------
    trials : int or None
        Trials left to finish.
    seconds : float or None
        Seconds left: the budget minus the durations of the finished trials. Optuna starts no
        trial after it is used up; the trial under way then finishes.
    """

    trials: int | None
    seconds: float | None

    @classmethod
    def left(cls, study: optuna.Study, *, trials: int | None, timeout: float | None) -> Budget:
        """The budget ``trials`` / ``timeout`` minus what the study's finished trials used."""
        done = study.get_trials(deepcopy=False, states=_finished())
        spent = sum(
            (t.datetime_complete - t.datetime_start).total_seconds()
            for t in done
            if t.datetime_start is not None and t.datetime_complete is not None
        )
        return cls(
            None if trials is None else max(trials - len(done), 0),
            None if timeout is None else max(timeout - spent, 0.0),
        )

    def __str__(self) -> str:
        parts = [
            *([f"{self.trials} trial(s)"] if self.trials is not None else []),
            *([f"{self.seconds:.0f} s of trials"] if self.seconds is not None else []),
        ]
        return " and ".join(parts)

    @property
    def exhausted(self) -> bool:
        """Whether nothing is left to run."""
        return self.trials == 0 or self.seconds == 0.0


def _plain(value: Any) -> Any:
    """``value`` as JSON would give it back (tuples as lists, and so on)."""
    return json.loads(json.dumps(value))


def _shared(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The settings every study of one storage must share: all but the search space."""
    return {key: v for key, v in settings.items() if key != "space"}


def _difference(old: Mapping[str, Any], new: Mapping[str, Any]) -> str | None:
    """The first top-level key whose value differs, or None."""
    return next((key for key in sorted({*old, *new}) if old.get(key) != new.get(key)), None)


def studies_in(storage: optuna.storages.BaseStorage) -> list[Any]:
    """Summaries of the studies in ``storage``, in the order they were created."""
    optuna = require("optuna", purpose=PURPOSE)
    return optuna.get_all_study_summaries(storage, include_best_trial=False)


def _check_settings(
    storage: optuna.storages.BaseStorage, name: str, settings: Mapping[str, Any], *, where: str
) -> None:
    """Refuse a storage holding studies made under other settings.

    A study without settings and without trials (its creator stopped in between) is reused.
    """
    for summary in studies_in(storage):
        own = summary.user_attrs.get(SETTINGS)
        if own is None and summary.n_trials == 0:
            continue
        if own is None:
            raise ConfigError(
                f"{where} holds a study {summary.study_name!r} not made by gbdt-plrank tune; "
                f"choose another output folder (--out) or storage (--storage)."
            )
        same = summary.study_name == name
        differs = _difference(*((own, settings) if same else (_shared(own), _shared(settings))))
        if differs is not None:
            raise ConfigError(
                f"{where} holds the study {summary.study_name!r} tuned with other settings "
                f"({differs} differs); choose another output folder (--out) or storage "
                f"(--storage), or delete it."
            )


def _fail_cut_off(study: optuna.Study) -> int:
    """Mark the study's RUNNING trials (left by a killed process) as FAIL; return how many."""
    optuna = require("optuna", purpose=PURPOSE)
    running = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,))
    for trial in running:
        study.tell(trial.number, state=optuna.trial.TrialState.FAIL)
    return len(running)


def open_study(
    storage: optuna.storages.BaseStorage,
    name: str,
    *,
    settings: Mapping[str, Any],
    seed: int,
    pruner: optuna.pruners.BasePruner,
    where: str,
) -> tuple[optuna.Study, int]:
    """Create or resume the study ``name``, maximising.

    Parameters
    ----------
    storage : optuna.storages.BaseStorage
        Where the studies are kept.
    name : str
        The study's name (the method's).
    settings : mapping
        Everything that changes a trial's value, JSON-able; ``"space"`` may differ between the
        studies of one storage, the rest may not.
    seed : int
        The tuning seed.
    pruner : optuna.pruners.BasePruner
        The pruner (not stored by Optuna either).
    where : str
        How messages name the storage.

    Returns
    -------
    study : optuna.Study
    cut_off : int
        How many trials left RUNNING by an interrupted run were marked FAIL.

    Raises
    ------
    ConfigError
        When the storage holds a study made under other settings.
    """
    optuna = require("optuna", purpose=PURPOSE)
    settings = _plain(settings)
    _check_settings(storage, name, settings, where=where)
    before = {s.study_name: s.n_trials for s in studies_in(storage)}.get(name, 0)
    sampler_seed = int(np.random.SeedSequence([seed, before]).generate_state(1)[0])
    study = optuna.create_study(
        storage=storage,
        study_name=name,
        direction="maximize",
        load_if_exists=True,
        sampler=optuna.samplers.TPESampler(seed=sampler_seed),
        pruner=pruner,
    )
    if SETTINGS not in study.user_attrs:
        study.set_user_attr(SETTINGS, settings)
    return study, _fail_cut_off(study)


def tuned_studies(storage: optuna.storages.BaseStorage) -> list[optuna.Study]:
    """The studies of ``storage`` with at least one COMPLETE trial, in order of creation."""
    optuna = require("optuna", purpose=PURPOSE)
    complete = optuna.trial.TrialState.COMPLETE
    studies = [
        optuna.load_study(study_name=s.study_name, storage=storage) for s in studies_in(storage)
    ]
    return [s for s in studies if s.get_trials(deepcopy=False, states=(complete,))]
