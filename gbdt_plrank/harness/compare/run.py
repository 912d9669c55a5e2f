"""The loop of a comparison: datasets x k x methods x seeds, resumable.

Every finished training is written to the output folder at once (:class:`ResultStore`); a rerun
with the same settings skips what is there, so an interrupted comparison loses only the trainings
under way. Trainings run one after the other here, or in parallel on a Dask cluster
(:mod:`.parallel`); each is a plain function of its task (:func:`run_task`), so both give the
same results. Early stopping on NDCG@k means one training per k: each (dataset, method, seed, k) is
its own training, and PL-Rank optimises the top ``k`` of each.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from ..._util import compat as _compat
from ...datasets import LTRDataset
from ...metrics import dataset_ndcg, ndcg
from ..data import check_data, dataset_label, load
from ..methods import METHODS
from ..store import ResultStore, RunKey, write_options
from ..training import train
from .config import CompareConfig

__all__ = ["Done", "Executor", "Plan", "Task", "plan", "run_comparison", "run_task"]


@dataclass(frozen=True)
class Plan:
    """The trainings a configuration asks for, and the methods left out for missing libraries.

    Attributes
    ----------
    sources : list of (data, fold, label)
        Data entries and folds in order, with their dataset labels.
    keys : list of RunKey
        Every training, in the order they run.
    skipped : dict
        Method name -> why it cannot run here.
    """

    sources: list[tuple[str, int, str]]
    keys: list[RunKey]
    skipped: dict[str, str]


def plan(config: CompareConfig) -> Plan:
    """The trainings of ``config``, after checking its data entries.

    Raises
    ------
    ConfigError
        When a data entry is missing or lacks a fold.
    """
    check_data(config.datasets, config.folds)
    sources = [(d, f, dataset_label(d, f)) for d in config.datasets for f in config.folds]
    skipped = {
        name: _compat.missing_message(METHODS[name].library, purpose=f"method {name!r}")
        for name in config.methods
        if not _compat.is_installed(METHODS[name].library)
    }
    keys = [
        RunKey(label, method, seed, k)
        for _, _, label in sources
        for k in config.k
        for method in config.methods
        if method not in skipped
        for seed in config.seed_values
    ]
    return Plan(sources, keys, skipped)


@dataclass(frozen=True)
class Task:
    """One training of a comparison, with everything a worker needs to run it."""

    key: RunKey
    data: str
    fold: int
    config: CompareConfig


@dataclass(frozen=True)
class Done:
    """A finished training: its ``results.csv`` row, validation curve and per-query test NDCG@k."""

    row: dict[str, Any]
    curve: list[float]
    queries: dict[int, float]


#: Runs tasks and yields their results as they finish, in any order.
Executor = Callable[[Sequence[Task]], Iterable[Done]]


@lru_cache(maxsize=2)
def _dataset(data: str, fold: int, drop_empty_test_queries: bool) -> LTRDataset:
    """The dataset of a task, loaded once per process for all the trainings that use it."""
    return load(data, fold, drop_empty_test_queries=drop_empty_test_queries)


def run_task(task: Task) -> Done:
    """Train one method on one dataset fold, seed and k, and score its test split.

    A plain function of its task, so that it runs the same in this process or on a Dask worker.
    """
    config, key = task.config, task.key
    dataset = _dataset(task.data, task.fold, config.drop_empty_test_queries)
    test = dataset.test
    fit = train(
        key.method,
        dataset,
        k=key.k,
        seed=key.seed,
        trees=config.trees,
        plrank=config.plrank,
        pirank=config.pirank,
        params=config.params.get(key.method),
    )
    rounds_run = int(fit.curve.shape[0])
    per_query = ndcg(test.y, fit.test_scores, test.qid, k=key.k, per_query=True)
    row = {
        **key._asdict(),
        "ndcg": float(per_query.mean()),
        "ndcg_dataset": dataset_ndcg(test.y, fit.test_scores, test.qid, k=key.k),
        "best_round": int(fit.best_round),
        "rounds_run": rounds_run,
        "train_seconds": fit.train_seconds,
        "seconds_per_round": fit.train_seconds / max(rounds_run, 1),
        "test_queries": test.n_queries,
    }
    queries = {int(q): float(v) for q, v in zip(np.unique(test.qid), per_query)}
    return Done(row, [float(v) for v in fit.curve], queries)


def _sequential(tasks: Sequence[Task]) -> Iterator[Done]:
    for task in tasks:
        yield run_task(task)


def run_comparison(
    config: CompareConfig,
    *,
    echo: Callable[[str], None] = print,
    executor: Executor | None = None,
) -> ResultStore:
    """Run every training of ``config`` that its output folder does not hold yet.

    Parameters
    ----------
    config : CompareConfig
        The comparison.
    echo : callable, default print
        Receives the progress messages (skipped methods, what is left to run).
    executor : callable, optional
        Runs the tasks and yields their results in any order (e.g.
        ``gbdt_plrank.harness.compare.parallel.dask_executor`` on a Dask cluster); each result is
        stored as soon as it arrives. Default: one after the other in this process.

    Returns
    -------
    ResultStore
        The output folder's results, those of earlier runs included.

    Raises
    ------
    FolderInUseError
        When another run is writing to the output folder (:meth:`ResultStore.locked`).
    """
    work = plan(config)
    for message in dict.fromkeys(work.skipped.values()):
        echo(f"skipped: {message}")
    with ResultStore.locked(config.out, settings=config.training_settings()) as store:
        write_options(store.folder, config.trained_options())
        done = set(store.rows())
        sources = {label: (data, fold) for data, fold, label in work.sources}
        tasks = [Task(key, *sources[key.dataset], config) for key in work.keys if key not in done]
        echo(f"{len(tasks)} of {len(work.keys)} trainings to run; results in {store.folder}")
        with tqdm(total=len(tasks), unit="training", disable=None) as bar:
            for finished in (executor or _sequential)(tasks):
                store.add(finished.row, finished.curve, finished.queries)
                key = finished.row
                bar.set_postfix_str(
                    f"{key['dataset']} {key['method']} k={key['k']} seed={key['seed']}"
                )
                bar.update()
    return store
