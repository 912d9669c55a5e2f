"""The loop of a comparison: datasets x k x methods x seeds, resumable.

Every finished training is written to the output folder at once (:class:`ResultStore`); a rerun
with the same settings skips what is there, so an interrupted comparison loses only the training
under way. Early stopping on NDCG@k means one training per k: each (dataset, method, seed, k) is
its own training, and PL-Rank optimises the top ``k`` of each.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tqdm.auto import tqdm

from .. import _compat
from ..metrics import dataset_ndcg, ndcg
from .config import CompareConfig
from .data import check_data, dataset_label, load
from .methods import METHODS
from .store import ResultStore, RunKey
from .training import train

__all__ = ["Plan", "plan", "run_comparison"]


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


def run_comparison(config: CompareConfig, *, echo: Callable[[str], None] = print) -> ResultStore:
    """Run every training of ``config`` that its output folder does not hold yet.

    Parameters
    ----------
    config : CompareConfig
        The comparison.
    echo : callable, default print
        Receives the progress messages (skipped methods, what is left to run).

    Returns
    -------
    ResultStore
        The output folder's results, those of earlier runs included.
    """
    work = plan(config)
    for message in dict.fromkeys(work.skipped.values()):
        echo(f"skipped: {message}")
    store = ResultStore(config.out, settings=config.training_settings())
    done = set(store.rows())
    todo = [key for key in work.keys if key not in done]
    echo(f"{len(todo)} of {len(work.keys)} trainings to run; results in {store.folder}")
    with tqdm(total=len(todo), unit="training", disable=None) as bar:
        for data, fold, label in work.sources:
            runs = [key for key in todo if key.dataset == label]
            if not runs:
                continue
            dataset = load(data, fold, drop_empty_test_queries=config.drop_empty_test_queries)
            test = dataset.test
            for key in runs:
                bar.set_postfix_str(f"{label} {key.method} k={key.k} seed={key.seed}")
                fit = train(
                    key.method, dataset, k=key.k, seed=key.seed, trees=config.trees,
                    plrank=config.plrank, params=config.params.get(key.method),
                )
                rounds_run = int(fit.curve.shape[0])
                store.add(
                    {
                        **key._asdict(),
                        "ndcg": ndcg(test.y, fit.test_scores, test.qid, k=key.k),
                        "ndcg_dataset": dataset_ndcg(test.y, fit.test_scores, test.qid, k=key.k),
                        "best_round": int(fit.best_round),
                        "rounds_run": rounds_run,
                        "train_seconds": fit.train_seconds,
                        "seconds_per_round": fit.train_seconds / max(rounds_run, 1),
                        "test_queries": test.n_queries,
                    },
                    fit.curve,
                )
                bar.update()
    return store
