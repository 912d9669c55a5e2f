"""Learning-to-rank data in SVMlight / LETOR format, and the bundled LETOR 4.0 datasets.

Files hold one document a line, ``label qid:ID idx:val ... [# comment]``, the rows of a query
contiguous. Every split comes back with its rows sorted by query id (stably, so each query keeps
its rows' order): both boosters need non-decreasing ids (XGBoost refuses a ``qid`` that is not
sorted), and a LETOR fold concatenates partitions whose ids wrap around (Fold4: S4, S5, S1). A
dataset is a folder with ``train.txt``, ``vali.txt`` and ``test.txt`` (gzipped files
``*.txt.gz`` also work), or the name of a bundled dataset (:data:`BUNDLED`):

- ``"mq2008"`` and ``"mq2007-agg"`` (LETOR 4.0; Qin and Liu 2013), shipped as their five
  partitions S1..S5 and assembled into the standard folds (Fold k: train S_k, S_k+1, S_k+2;
  vali S_k+3; test S_k+4);
- ``"mslr-sample"`` (:data:`SINGLE_SPLIT`): a small sample of MSLR-WEB (most likely WEB10K)
  Fold1, 54 train, 18 validation and 18 test queries with the 136 raw features and labels 0-4,
  one split (fold 1 only); for examples and tests, too small for firm conclusions.

``"yahoo-sample"`` (:data:`FETCHED`) is LightGBM's example ranking data, 251 queries sampled
from the Yahoo! Learning to Rank Challenge (labels 0-4, 300 sparse features): not shipped (the
Yahoo! terms restrict redistribution), it is downloaded from LightGBM's repository only when
asked (:func:`fetch_dataset`), checked by checksum and kept in ``$GBDT_PLRANK_DATA`` or
``~/.cache/gbdt_plrank``; :func:`load_dataset` reads it there and never the network. Its 201
training and 50 test queries, in that order, are cut into five parts of 51, 50, 50, 50 and 50
queries, assembled as the LETOR folds (fold 1 tests on LightGBM's 50 test queries).

The names of :data:`SYNTHETIC` are web-search-shaped data drawn by
:func:`make_web_dataset` (deep queries of about 120 documents with a long tail, 136 features,
MSLR's grade shares; :mod:`gbdt_plrank._synthetic` has the model): ``"web-linear"`` (a linear
relevance), ``"web-nonlinear"`` (a nonlinear one) and ``"web-noisy"`` (nonlinear, features
observed with noise). Their fold ``k`` is the ``k``-th independent draw (seed ``k``), with 1,500
train, 300 validation and 300 test queries.

Provenance and citations are in ``gbdt_plrank/data/<name>/PROVENANCE.md``.
"""

from __future__ import annotations

import gzip
import re
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TextIO

import numpy as np
import scipy.sparse as sp

from ._fetched import FETCHED, fetch
from ._groups import Split
from ._synthetic import MSLR_GRADE_SHARES, WEB_VARIANTS, WebShape, make_web_splits

__all__ = [
    "BUNDLED",
    "FETCHED",
    "MSLR_GRADE_SHARES",
    "NAMED",
    "SINGLE_SPLIT",
    "SYNTHETIC",
    "LTRDataset",
    "Split",
    "WebShape",
    "fetch_dataset",
    "load_dataset",
    "load_svmlight_splits",
    "make_web_dataset",
]

#: The bundled datasets' names.
BUNDLED = ("mq2008", "mq2007-agg", "mslr-sample")
#: The bundled datasets shipped as one split (``train``, ``vali``, ``test``): fold 1 only.
SINGLE_SPLIT = ("mslr-sample",)
SPLITS = ("train", "vali", "test")
#: The synthetic web-shaped datasets :func:`load_dataset` draws (fold k: seed k).
SYNTHETIC = tuple(WEB_VARIANTS)
#: Every name :func:`load_dataset` knows: the bundled datasets, the synthetic ones and those
#: fetched on first use (:data:`FETCHED`).
NAMED = BUNDLED + SYNTHETIC + tuple(FETCHED)


@dataclass(frozen=True)
class LTRDataset:
    """A dataset's ``train``, ``vali`` and ``test`` splits, sharing one feature count."""

    name: str
    train: Split
    vali: Split
    test: Split


#: The format of a line, for messages.
LINE_FORMAT = "<label> qid:<integer> <index>:<value> ... [# comment]"
_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|inf)"
_LINE = re.compile(
    rf"^\s*(?:(?:{_NUMBER})\s+qid:\d+(?:\s+\d+:(?:{_NUMBER}))*\s*)?(?:#.*)?$", re.IGNORECASE
)


def _open_text(path: Path) -> TextIO:
    return gzip.open(path, "rt") if path.suffix == ".gz" else path.open()


def _first_bad_line(path: Path) -> tuple[int, str] | None:
    """The first line (1-based) of ``path`` that is not a LETOR line, or None."""
    with _open_text(path) as fh:
        for number, line in enumerate(fh, start=1):
            if not _LINE.match(line.rstrip("\n")):
                return number, line.rstrip("\n")
    return None


def _non_finite(path: Path) -> ValueError:
    """The error for the first line of ``path`` holding a label or feature value not finite."""
    with _open_text(path) as fh:
        for number, line in enumerate(fh, start=1):
            text = line.split("#", 1)[0].split()
            for token in text:
                field, _, value = token.rpartition(":") if ":" in token else ("", "", token)
                if field != "qid" and not np.isfinite(float(value)):
                    what = f"feature {field} is {value}" if field else f"label is {value}"
                    return ValueError(
                        f"{path}: line {number} ({line.rstrip(chr(10))[:80]!r}): {what}; labels "
                        f"and feature values must be finite."
                    )
    return ValueError(f"{path}: a label or feature value is not finite.")


def _malformed(path: Path, reason: str, found: tuple[int, str] | None) -> ValueError:
    """The error for ``path``, naming ``found`` (its first bad line and text) when known."""
    where = f"line {found[0]} ({found[1][:80]!r})" if found else "a line"
    return ValueError(f"{path}: {where} is not a LETOR line {LINE_FORMAT!r} ({reason}).")


def _check_contiguous(path: object, qid: np.ndarray) -> None:
    starts = qid[np.concatenate(([True], qid[1:] != qid[:-1]))]
    if np.unique(starts).shape[0] != starts.shape[0]:
        raise ValueError(
            f"{path}: the rows of each qid must be contiguous, but a qid appears in several runs."
        )


def _by_query(split: Split) -> Split:
    """The split with its rows sorted stably by query id (unchanged when already sorted)."""
    if np.all(split.qid[1:] >= split.qid[:-1]):
        return split
    order = np.argsort(split.qid, kind="stable")
    return Split(split.X[order], split.y[order], split.qid[order])


def load_svmlight_splits(paths: Sequence[Path | str]) -> list[Split]:
    """Load several SVMlight files with ``qid`` into splits with a common feature count.

    Each split's rows are sorted stably by query id.

    Raises
    ------
    FileNotFoundError
        When a file is missing.
    ValueError
        When a line is not ``<label> qid:<integer> <index>:<value> ...`` (naming the file, the
        line and the format), holds a label or feature value that is not finite (naming the
        file, the line and the feature), or the rows of a query are not contiguous.
    """
    from sklearn.datasets import load_svmlight_files  # 2 s to import: only when reading files

    files = [Path(p) for p in paths]
    for p in files:
        if not p.is_file():
            raise FileNotFoundError(f"no such data file: {p}")
    try:
        loaded = load_svmlight_files([str(p) for p in files], query_id=True, dtype=np.float32)
    except ValueError as err:
        for p in files:  # each file scanned once, until the bad line is found
            found = _first_bad_line(p)
            if found is not None:
                raise _malformed(p, str(err), found) from None
        raise _malformed(files[0], str(err), None) from None
    out = []
    for p, (X, y, qid) in zip(files, zip(loaded[0::3], loaded[1::3], loaded[2::3])):
        qid = np.asarray(qid, dtype=np.int64)
        if qid.shape[0] != X.shape[0]:  # scikit-learn skips the qid of a line without one
            raise _malformed(p, "every document needs a qid", _first_bad_line(p))
        if not (np.isfinite(X.data).all() and np.isfinite(y).all()):
            raise _non_finite(p)
        _check_contiguous(p, qid)
        out.append(_by_query(Split(X.tocsr(), np.asarray(y, dtype=np.float64), qid)))
    return out


def _concat(parts: list[Split] | tuple[Split, ...]) -> Split:
    """The rows of ``parts`` in one split, sorted stably by query id (CSR features where any
    part's are sparse, a dense array where all are dense)."""
    Xs = [p.X for p in parts]
    X = sp.vstack(Xs, format="csr") if any(sp.issparse(x) for x in Xs) else np.concatenate(Xs)
    return _by_query(
        Split(X, np.concatenate([p.y for p in parts]), np.concatenate([p.qid for p in parts]))
    )


def _folder_files(folder: Path) -> list[Path]:
    files = []
    for split in SPLITS:
        plain, gz = folder / f"{split}.txt", folder / f"{split}.txt.gz"
        if not (plain.is_file() or gz.is_file()):
            raise FileNotFoundError(
                f"{folder} must hold train.txt, vali.txt and test.txt (or .txt.gz), but {split} "
                "is missing."
            )
        files.append(plain if plain.is_file() else gz)
    return files


def _lightgbm_ranking_parts(paths: dict[str, Path], *, n_parts: int = 5) -> list[Split]:
    """LightGBM's ranking files (``rank.train`` and ``rank.test``, libsvm lines without qid;
    ``.query`` files of group sizes) as one sequence of queries, numbered 1, 2, ... in file order
    (train first), cut into ``n_parts`` parts of consecutive queries."""
    from sklearn.datasets import load_svmlight_files

    names = ("rank.train", "rank.test")
    loaded = load_svmlight_files([str(paths[n]) for n in names], dtype=np.float32)
    sizes = []
    for name, y in zip(names, loaded[1::2]):
        size = np.loadtxt(paths[f"{name}.query"], dtype=np.int64, ndmin=1)
        if size.sum() != y.shape[0]:
            raise ValueError(
                f"{paths[name + '.query']} must give the group sizes of the {y.shape[0]} rows of "
                f"{paths[name]}, but they sum to {size.sum()}."
            )
        sizes.append(size)
    size = np.concatenate(sizes)
    qid = np.repeat(np.arange(1, size.size + 1), size)
    X = sp.vstack(loaded[0::2], format="csr")
    y = np.concatenate([np.asarray(part, np.float64) for part in loaded[1::2]])
    bounds = np.r_[0, np.cumsum(size)]
    cuts = [part[[0, -1]] for part in np.array_split(np.arange(size.size), n_parts)]
    return [
        Split(X[a:b], y[a:b], qid[a:b])
        for a, b in ((bounds[first], bounds[last + 1]) for first, last in cuts)
    ]


def fetch_dataset(name: str) -> Path:
    """Download a dataset the package does not ship (:data:`FETCHED`) into the data folder.

    The one call that reads the network: :func:`load_dataset` reads the folder only. Files
    already there with the right checksum are kept; each download is checked against its
    SHA-256 before it is kept.

    Parameters
    ----------
    name : str
        A name of :data:`FETCHED` (``"yahoo-sample"``).

    Returns
    -------
    Path
        The dataset's folder, ``$GBDT_PLRANK_DATA/<name>`` (by default
        ``~/.cache/gbdt_plrank/<name>``).

    Raises
    ------
    ValueError
        When ``name`` is not in :data:`FETCHED`, or a file's checksum is not the published one.
    OSError
        When a file cannot be downloaded (offline, or its address gone), naming the address,
        the cause and where to put the file by hand.
    """
    if not isinstance(name, str) or name not in FETCHED:
        raise ValueError(
            f"name must be a dataset the package fetches ({', '.join(FETCHED)}), but {name!r} "
            "is given."
        )
    paths = fetch(FETCHED[name], download=True)
    return next(iter(paths.values())).parent


def make_web_dataset(shape: WebShape | None = None, *, seed: int = 0) -> LTRDataset:
    """Draw a web-search-shaped dataset: deep queries, 136 features, MSLR's grade shares.

    Parameters
    ----------
    shape : WebShape, optional
        Its parameters (:class:`~gbdt_plrank._synthetic.WebShape`: the relevance, linear or
        nonlinear, the feature and label noise, the splits' query counts, the documents a
        query, the features and the grade shares); by default MSLR-like with a linear
        relevance, 1,500 / 300 / 300 queries of about 120 documents.
    seed : int, default 0
        The draw: the same shape and seed give the same data.

    Returns
    -------
    LTRDataset
        Its splits' features a SciPy CSR matrix of float32 that stores every entry (the
        features are dense), as :func:`load_dataset` gives every dataset; its name
        ``web-<relevance>/seed<seed>``.

    Examples
    --------
    >>> from gbdt_plrank.datasets import WebShape, make_web_dataset
    >>> data = make_web_dataset(WebShape(relevance="nonlinear", queries=(100, 20, 20)), seed=3)
    >>> data.train.n_queries, data.train.X.shape[1]
    (100, 136)
    """
    shape = WebShape() if shape is None else shape
    train, vali, test = make_web_splits(shape, seed=seed)
    return LTRDataset(f"web-{shape.relevance}/seed{seed}", train, vali, test)


def load_dataset(data: str | Path = "mq2008", *, fold: int = 1) -> LTRDataset:
    """Load a dataset by bundled name or folder.

    Parameters
    ----------
    data : str or Path, default "mq2008"
        A bundled name (``"mq2008"``, ``"mq2007-agg"``, ``"mslr-sample"``), a synthetic one
        (``"web-linear"``, ``"web-nonlinear"``, ``"web-noisy"``: :data:`SYNTHETIC`), one fetched
        with :func:`fetch_dataset` (``"yahoo-sample"``: :data:`FETCHED`) or a folder with
        ``train.txt``,
        ``vali.txt`` and ``test.txt``; a folder with ``Fold1`` .. ``Fold5`` subfolders is read
        at ``fold``.
    fold : int, default 1
        LETOR fold, 1 to 5 (the five-fold bundled and fetched datasets and folders with
        ``FoldN`` subfolders); 1 for ``"mslr-sample"``; the draw (its seed) of a synthetic
        dataset.

    Returns
    -------
    LTRDataset
        Its ``train``, ``vali`` and ``test`` splits; each split's ``X`` is a SciPy sparse CSR
        matrix of float32 (``X.toarray()`` for a dense array), ``y`` float64 labels and ``qid``
        per-row query ids, rows sorted by query.

    Raises
    ------
    FileNotFoundError
        When a fetched dataset's files are not in the data folder (:func:`fetch_dataset`
        downloads them), naming the folder and why the package does not ship them.
    """
    if isinstance(fold, bool) or not isinstance(fold, (int, np.integer)) or not 1 <= fold <= 5:
        raise ValueError(f"fold must be an integer from 1 to 5, but {fold!r} is given.")
    if str(data) in SYNTHETIC:
        train, vali, test = make_web_splits(WEB_VARIANTS[str(data)], seed=int(fold))
        return LTRDataset(f"{data}/Fold{fold}", train, vali, test)
    if str(data) in FETCHED:
        parts = _lightgbm_ranking_parts(fetch(FETCHED[str(data)], download=False))
        pick = [parts[(fold - 1 + j) % 5] for j in range(5)]
        return LTRDataset(f"{data}/Fold{fold}", _concat(pick[:3]), pick[3], pick[4])
    if str(data) in SINGLE_SPLIT:
        if fold != 1:
            raise ValueError(
                f"fold must be 1 for {str(data)!r}, a bundled dataset of one split, but {fold!r} "
                "is given."
            )
        root = Path(str(resources.files("gbdt_plrank") / "data" / str(data)))
        train, vali, test = load_svmlight_splits(_folder_files(root))
        return LTRDataset(str(data), train, vali, test)
    if str(data) in BUNDLED:
        name = str(data)
        bundle = resources.files("gbdt_plrank") / "data" / name
        parts = load_svmlight_splits([Path(str(bundle / f"S{i}.txt.gz")) for i in range(1, 6)])
        pick = [parts[(fold - 1 + j) % 5] for j in range(5)]
        return LTRDataset(f"{name}/Fold{fold}", _concat(pick[:3]), pick[3], pick[4])
    folder = Path(data)
    if not folder.is_dir():
        raise ValueError(
            f"data must be a dataset's name ({', '.join(NAMED)}) or a folder, but {str(data)!r} "
            "is neither."
        )
    if (folder / f"Fold{fold}").is_dir():
        folder = folder / f"Fold{fold}"
    train, vali, test = load_svmlight_splits(_folder_files(folder))
    return LTRDataset(folder.name if folder.name else str(folder), train, vali, test)
