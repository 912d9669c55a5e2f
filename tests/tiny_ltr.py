"""A tiny LETOR dataset for fast end-to-end tests: a few queries of the bundled MQ2008."""

from __future__ import annotations

from pathlib import Path

from sklearn.datasets import dump_svmlight_file

from gbdt_plrank.datasets import Split, load_dataset


def _head(split: Split, n_queries: int) -> Split:
    end = split.group_ptr[n_queries]
    return Split(split.X[:end], split.y[:end], split.qid[:end])


def write_tiny_letor(folder: Path, *, queries: tuple[int, int, int] = (24, 12, 12)) -> Path:
    """Write the first queries of MQ2008 Fold1's splits as ``train/vali/test.txt`` in ``folder``.

    The test split keeps queries without relevant documents, so dropping them can be checked.
    """
    folder.mkdir(parents=True, exist_ok=True)
    data = load_dataset("mq2008", fold=1)
    splits = (data.train, data.vali, data.test)
    for name, split, n in zip(("train", "vali", "test"), splits, queries, strict=True):
        part = _head(split, n)
        path = str(folder / f"{name}.txt")
        dump_svmlight_file(part.X, part.y, path, query_id=part.qid, zero_based=False)
    return folder
