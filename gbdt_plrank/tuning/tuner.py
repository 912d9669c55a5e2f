"""``tune``: one method's Optuna study on the validation split, under a budget, resumable."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tqdm.auto import tqdm

from .._util.compat import is_installed, missing_message, require
from ..harness.data import check_data, dataset_label, load
from ..harness.methods import METHODS
from ..harness.settings import ConfigError, PiRankSettings, PLRankSettings, TreeSettings
from ..harness.store import output_folder
from .objective import make_objective
from .output import plot_history, plot_importances, summary, write_best_params
from .spaces import SearchSpace, load_spaces
from .study import Budget, open_study, tuned_studies

if TYPE_CHECKING:
    import optuna

__all__ = ["DEFAULT_PRUNER", "tune"]

PURPOSE = "tuning"
STORAGE_FILE = "optuna.db"

#: The pruner when none is given: a trial stops when its best validation NDCG@k so far is below
#: the median of earlier trials at the same round, once 5 trials have finished and from round 20
#: on (slow learners, with small learning rates, are not judged on their first rounds).
DEFAULT_PRUNER = {"n_startup_trials": 5, "n_warmup_steps": 20}

StudyCallback = Callable[["optuna.Study", "optuna.trial.FrozenTrial"], None]


def _check_budget(trials: int | None, timeout: float | None) -> None:
    if trials is None and timeout is None:
        raise ConfigError("a budget is required: trials, timeout (seconds) or both.")
    if trials is not None:
        _check_int("trials", trials, 1)
    if timeout is not None and (
        isinstance(timeout, bool)
        or not isinstance(timeout, (int, float))
        or not math.isfinite(timeout)
        or timeout <= 0
    ):
        raise ConfigError(f"timeout must be a number of seconds > 0, but {timeout!r} is given.")


def _check_int(name: str, value: Any, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ConfigError(f"{name} must be an integer >= {low}, but {value!r} is given.")


def _storage_url(storage: str | None, out: Path) -> str:
    return storage if storage is not None else f"sqlite:///{(out / STORAGE_FILE).resolve()}"


def _write_outputs(
    storage: optuna.storages.BaseStorage,
    out: Path,
    *,
    k: int,
    seed: int,
    header: str,
    echo: Callable[[str], None],
) -> list[Path]:
    """best_params.toml and the PNGs for every tuned study of the storage; the files written.

    Without matplotlib the PNGs are not drawn, and ``echo`` says so.
    """
    studies = tuned_studies(storage)
    if not studies:
        return []
    written = [out / "best_params.toml"]
    write_best_params(studies, written[0], k=k, header=header)
    if not is_installed("matplotlib"):
        why = missing_message("matplotlib", purpose="drawing them")
        echo(f"history.png and importances.png are not drawn: {why}")
        return written
    written += [out / "history.png", out / "importances.png"]
    plot_history(studies, written[1], k=k)
    plot_importances(studies, written[2], seed=seed)
    return written


def _checked(
    data: str,
    method: str,
    *,
    trials: int | None,
    timeout: float | None,
    k: int,
    seed: int,
    fold: int,
    space: str | Path | SearchSpace | None,
    storage: str | None,
) -> SearchSpace:
    """Check the arguments of :func:`tune` that need no library; return the method's space."""
    if method not in METHODS:
        raise ConfigError(f"method must be one of {', '.join(METHODS)}, but {method!r} is given.")
    _check_budget(trials, timeout)
    _check_int("k", k, 1)
    _check_int("seed", seed, 0)
    _check_int("fold", fold, 1)
    if storage is not None and (not isinstance(storage, str) or "://" not in storage):
        raise ConfigError(
            f"storage must be an Optuna storage URL such as 'sqlite:///tune.db', "
            f"but {storage!r} is given."
        )
    if given := isinstance(space, SearchSpace):
        if space.method != method:
            raise ConfigError(f"space must be {method!r}'s, but {space.method!r}'s is given.")
    check_data([data], [fold])
    return space if given else load_spaces(space)[method]


@contextmanager
def _quiet(optuna: Any) -> Iterator[None]:
    """Optuna's log at WARNING level (its per-trial lines would break the progress bar)."""
    verbosity = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        yield
    finally:
        optuna.logging.set_verbosity(verbosity)


def _optimize(
    study: optuna.Study,
    objective: Callable[[optuna.Trial], float],
    budget: Budget,
    *,
    k: int,
    callbacks: Sequence[StudyCallback],
) -> None:
    """Run the study within ``budget``, with a progress bar (shown on terminals only)."""
    with tqdm(total=budget.trials, unit="trial", desc=study.study_name, disable=None) as bar:

        def progress(study: optuna.Study, trial: optuna.trial.FrozenTrial) -> None:
            bar.update()
            if trial.state.name == "COMPLETE":
                bar.set_postfix_str(f"best NDCG@{k} {study.best_value:.4f}")

        study.optimize(
            objective,
            n_trials=budget.trials,
            timeout=budget.seconds,
            callbacks=[progress, *callbacks],
        )


def tune(
    data: str,
    method: str,
    *,
    k: int = 5,
    trials: int | None = None,
    timeout: float | None = None,
    out: str | Path = "runs/tune",
    storage: str | None = None,
    space: str | Path | SearchSpace | None = None,
    seed: int = 0,
    fold: int = 1,
    trees: TreeSettings | None = None,
    plrank: PLRankSettings | None = None,
    pirank: PiRankSettings | None = None,
    params: Mapping[str, Any] | None = None,
    pruner: optuna.pruners.BasePruner | None = None,
    callbacks: Sequence[StudyCallback] = (),
    echo: Callable[[str], None] = print,
) -> optuna.Study:
    """Tune one method of the comparison harness on the validation split with Optuna.

    Each trial trains ``method`` on the train split with parameters drawn from its search space,
    early-stopped on validation NDCG@k and pruned on its intermediate values, and scores its
    best validation NDCG@k; the test split is never read. A second call resumes the study, its
    budget counting the earlier runs' trials. The output folder gets ``best_params.toml``,
    ``history.png`` and ``importances.png`` (the pictures only with matplotlib). The protocol:
    :doc:`/guide/tuning`.

    Parameters
    ----------
    data : str
        A bundled dataset (``"mq2008"``, ``"mq2007-agg"``) or a folder, as in a comparison.
    method : str
        A method name of the comparison harness (:data:`~gbdt_plrank.harness.METHODS`).
    k : int, default 5
        Cut-off of the validation NDCG, of early stopping and of the package's objectives.
    trials, timeout : int, float, optional
        Trials to finish (COMPLETE or PRUNED) and seconds of trials (no trial starts after),
        earlier runs included; give one or both.
    out : str or Path, default "runs/tune"
        The output folder.
    storage : str, optional
        An Optuna storage URL; default ``sqlite:///<out>/optuna.db``.
    space : str, Path or SearchSpace, optional
        A search space file changing the defaults (:func:`~gbdt_plrank.tuning.load_spaces`), or
        the method's space itself.
    seed : int, default 0
        Seed of the sampler (TPE), of every training and of the importance evaluation.
    fold : int, default 1
        The LETOR fold of ``data``.
    trees, plrank, pirank : TreeSettings, PLRankSettings, PiRankSettings, optional
        The settings the trial's parameters are applied over (default: the harness's);
        ``trees.n_jobs`` is the threads per training.
    params : mapping, optional
        Native parameters applied under the trial's, key by key (a ``plrank`` or ``pirank``
        table as a whole), as ``compare`` applies a params file.
    pruner : optuna.pruners.BasePruner, optional
        Default ``MedianPruner(**DEFAULT_PRUNER)``; ``optuna.pruners.NopPruner()`` prunes none.
    callbacks : sequence of callables, default ()
        Called after each finished trial with the study and the trial (Optuna's ``callbacks``).
    echo : callable, default print
        Receives the progress messages and the summary.

    Returns
    -------
    optuna.Study
        The method's study.

    Raises
    ------
    ConfigError
        On an unknown method, an invalid budget, k, seed or fold, a missing data folder, an
        invalid space file, or a storage holding studies tuned under other settings.
    MissingDependencyError
        When Optuna, optuna-integration or the method's library is not installed.
    """
    space = _checked(
        data,
        method,
        trials=trials,
        timeout=timeout,
        k=k,
        seed=seed,
        fold=fold,
        space=space,
        storage=storage,
    )
    optuna = require("optuna", purpose=PURPOSE)
    require("optuna_integration", purpose=PURPOSE)
    require(METHODS[method].library, purpose=f"method {method!r}")
    trees = TreeSettings() if trees is None else trees
    plrank = PLRankSettings() if plrank is None else plrank
    pirank = PiRankSettings() if pirank is None else pirank
    params = {key: dict(v) if isinstance(v, Mapping) else v for key, v in (params or {}).items()}
    label = dataset_label(data, fold)
    settings = {
        "data": label,
        "k": k,
        "seed": seed,
        "trees": trees.model_dump(),
        "plrank": plrank.model_dump(),
        "pirank": pirank.model_dump(),
        "params": params,
        "space": space.as_dict(),
    }
    settings["trees"].pop("n_jobs")  # speed only
    out = output_folder(out)
    where = storage if storage is not None else str(out / STORAGE_FILE)
    with _quiet(optuna):
        rdb = optuna.storages.get_storage(_storage_url(storage, out))
        study, cut_off = open_study(
            rdb,
            method,
            settings=settings,
            seed=seed,
            where=where,
            pruner=optuna.pruners.MedianPruner(**DEFAULT_PRUNER) if pruner is None else pruner,
        )
        if cut_off:
            echo(f"{method}: {cut_off} trial(s) cut off by an interrupted run marked FAIL")
        budget = Budget.left(study, trials=trials, timeout=timeout)
        echo(f"{method}: {budget} left on {label}, NDCG@{k}; study in {where}")
        if not budget.exhausted:
            objective = make_objective(
                space,
                load(data, fold, drop_empty_test_queries=False),
                k=k,
                seed=seed,
                trees=trees,
                plrank=plrank,
                pirank=pirank,
                params=params,
            )
            _optimize(study, objective, budget, k=k, callbacks=callbacks)
        header = (
            f"Best parameters of `gbdt-plrank tune`: validation NDCG@{k} on {label}, seed {seed}."
            f"\nUse them with: gbdt-plrank compare CONFIG --params {out / 'best_params.toml'}"
        )
        written = _write_outputs(rdb, out, k=k, seed=seed, header=header, echo=echo)
    if study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,)):
        echo(summary([study], k=k))
    if written:
        echo(f"wrote {', '.join(map(str, written))}")
    return study
