"""The datasets of a comparison: names in results, checks before training, loading.

A data entry is a bundled or synthetic dataset (``"mq2008"``, ``"web-linear"``; ``"mslr-sample"``
is one split, fold 1 only), a folder with ``Fold1`` .. ``Fold5`` subfolders, or a folder holding
``train.txt``, ``vali.txt`` and ``test.txt`` itself (one split, fold 1 only). Results name a
dataset ``<name>/Fold<k>`` (or ``<name>`` for a single split), where ``<name>`` is the bundled
name or the folder's name; :func:`family` recovers ``<name>``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from .._groups import Split
from .._synthetic import WEB_VARIANTS, WebGroups
from .._util.schema import ConfigError
from ..datasets import (
    NAMED,
    SINGLE_SPLIT,
    LTRDataset,
    _concat,
    _folder_files,
    load_dataset,
    make_web_dataset,
)

__all__ = [
    "check_data",
    "cross_validation_fold",
    "dataset_label",
    "family",
    "load",
    "without_empty_queries",
]


def _has_folds(data: str) -> bool:
    if data in NAMED:
        return data not in SINGLE_SPLIT
    return any((Path(data) / f"Fold{i}").is_dir() for i in range(1, 6))


def check_data(
    datasets: Sequence[str], folds: Sequence[int], *, cross_validation: bool = False
) -> None:
    """Check, before any training, that every data entry exists and has the folds asked for,
    each with its train, validation and test files; with ``cross_validation``, that every
    entry is one split (its folds are :func:`cross_validation_fold`'s).

    Raises
    ------
    ConfigError
        Naming the entry and the rule it breaks.
    """
    for data in datasets:
        if cross_validation and _has_folds(data):
            raise ConfigError(
                f"cross_validation cuts one split's queries into five folds, but {data!r} has "
                "folds of its own."
            )
        if data in SINGLE_SPLIT and tuple(folds) != (1,) and not cross_validation:
            raise ConfigError(
                f"folds must be [1] for {data!r}, a bundled dataset of one split, "
                f"but {list(folds)} is given."
            )
        if data in NAMED:
            continue
        folder = Path(data)
        if not folder.is_dir():
            raise ConfigError(
                f"datasets must be dataset names ({', '.join(NAMED)}) or folders, "
                f"but {data!r} is neither."
            )
        if not _has_folds(data) and tuple(folds) != (1,) and not cross_validation:
            raise ConfigError(
                f"folds must be [1] for {data!r}, a folder without Fold1..Fold5 subfolders, "
                f"but {list(folds)} is given."
            )
        missing = [f for f in folds if _has_folds(data) and not (folder / f"Fold{f}").is_dir()]
        if missing:
            raise ConfigError(
                f"folds must exist in {data!r}, but it has no Fold{missing[0]} subfolder."
            )
        folders = [folder / f"Fold{f}" for f in folds] if _has_folds(data) else [folder]
        for split_folder in folders:
            try:
                _folder_files(split_folder)
            except FileNotFoundError as err:
                raise ConfigError(str(err)) from None


def dataset_label(data: str, fold: int, *, cross_validation: bool = False) -> str:
    """The name results give to fold ``fold`` of data entry ``data`` (``<name>-cv/Fold<k>``
    for a fold of its ``cross_validation``)."""
    name = data if data in NAMED else Path(data).resolve().name
    if cross_validation:
        return f"{name}-cv/Fold{fold}"
    return f"{name}/Fold{fold}" if _has_folds(data) else name


def family(label: str) -> str:
    """The data entry's name in a dataset label (``"mq2008/Fold3"`` -> ``"mq2008"``)."""
    name, _, fold = label.rpartition("/Fold")
    return name if name and fold.isdigit() else label


def without_empty_queries(split: Split) -> Split:
    """The split without the queries that have no relevant document (every label 0), each kept
    query with its rows, item groups and weight (``Split.take_queries``)."""
    relevant = np.maximum.reduceat(split.y, split.group_ptr[:-1]) > 0
    return split.take_queries(np.flatnonzero(relevant))


def load(
    data: str,
    fold: int,
    *,
    drop_empty_test_queries: bool,
    drop_empty_queries: bool = False,
    web_groups: WebGroups | None = None,
    cross_validation: bool = False,
) -> LTRDataset:
    """Load fold ``fold`` of ``data``, optionally without the queries lacking relevant ones.

    ``drop_empty_test_queries`` leaves them out of the test split, ``drop_empty_queries`` out of
    the training and validation splits. ``web_groups`` draws a synthetic web variant (fold
    ``k``: seed ``k``, as :func:`~gbdt_plrank.datasets.load_dataset`) with that protected group
    (:class:`~gbdt_plrank._synthetic.WebGroups`); ``data`` must then be one of them.
    ``cross_validation`` reads fold ``fold`` of the five-fold query-level cross-validation of a
    one-split entry (:func:`cross_validation_fold`, repeat 0), named as
    :func:`dataset_label` says.
    """
    if cross_validation:
        dataset = cross_validation_fold(load_dataset(data), fold=fold)
    elif web_groups is None:
        dataset = load_dataset(data, fold=fold)
    elif data in WEB_VARIANTS:
        dataset = make_web_dataset(replace(WEB_VARIANTS[data], groups=web_groups), seed=fold)
    else:
        raise ConfigError(
            f"web_groups adds a protected group to the synthetic web data "
            f"({', '.join(WEB_VARIANTS)}), but {data!r} is not one of them."
        )
    test = without_empty_queries(dataset.test) if drop_empty_test_queries else dataset.test
    train, vali = dataset.train, dataset.vali
    if drop_empty_queries:
        train, vali = without_empty_queries(train), without_empty_queries(vali)
    label = dataset_label(data, fold, cross_validation=cross_validation)
    return LTRDataset(label, train, vali, test)


def cross_validation_fold(
    dataset: LTRDataset, *, fold: int, repeat: int = 0, folds: int = 5
) -> LTRDataset:
    """Fold ``fold`` of repeat ``repeat`` of a query-level cross-validation of ``dataset``.

    The queries of its three splits are pooled (their ids must be distinct across the splits),
    shuffled by the seed ``repeat`` and cut into ``folds`` parts of near-equal query counts; as
    in the LETOR folds, fold ``f`` tests on part ``f``, validates on the next part and trains
    on the others. Over the ``folds`` folds of a repeat every query is a test query exactly
    once; the rows of a query keep their order.

    Raises
    ------
    ValueError
        For ``folds`` below 3, ``fold`` outside ``1..folds``, or query ids shared by two
        splits.
    """
    if not 3 <= folds:
        raise ValueError(f"folds must be an integer >= 3, but {folds!r} is given.")
    if not 1 <= fold <= folds:
        raise ValueError(f"fold must be from 1 to folds ({folds}), but {fold!r} is given.")
    splits = (dataset.train, dataset.vali, dataset.test)
    ids = [np.unique(s.qid) for s in splits]
    if np.unique(np.concatenate(ids)).shape[0] != sum(i.shape[0] for i in ids):
        raise ValueError(
            f"cross-validation pools the queries of {dataset.name}'s splits, so their query "
            "ids must be distinct across the splits, but a query id is in two of them."
        )
    pooled = _concat(splits)
    n_queries = pooled.n_queries
    part = np.empty(n_queries, dtype=np.int64)
    part[np.random.default_rng(repeat).permutation(n_queries)] = np.arange(n_queries) % folds

    def of(parts: list[int]) -> Split:
        return pooled.take_queries(np.flatnonzero(np.isin(part, parts)))

    test, vali = fold - 1, fold % folds
    train = [p for p in range(folds) if p not in (test, vali)]
    return LTRDataset(f"{dataset.name}/cv{repeat}-fold{fold}", of(train), of([vali]), of([test]))
