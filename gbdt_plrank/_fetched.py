"""Datasets downloaded from their public source on request, checked by checksum, kept in a cache.

A dataset whose terms do not clearly allow this package to redistribute it is not shipped: its
files are downloaded only when asked (:func:`fetch` with ``download=True``, through
:func:`gbdt_plrank.datasets.fetch_dataset`) from where their owner publishes them, each checked
against its SHA-256, and kept in the data folder (:func:`data_home`). Loading reads that folder
and never the network: a file already there with the right checksum (downloaded before, or
copied by hand on a machine without a network) is read as it is.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

__all__ = ["FETCHED", "FetchedDataset", "data_home", "fetch"]


@dataclass(frozen=True)
class FetchedDataset:
    """A dataset fetched on first use: where its files are published, and their checksums."""

    name: str
    base_url: str
    sha256: dict[str, str]
    source: str
    #: Why the package does not ship the files (the error of a missing file says it).
    why_not_shipped: str = "its terms do not clearly allow redistribution"


#: LightGBM's example ranking data (examples/lambdarank of microsoft/LightGBM): 251 queries
#: sampled from the Yahoo! Learning to Rank Challenge (Chapelle and Chang, 2011). The Yahoo!
#: Webscope terms restrict redistribution, and LightGBM's repository states none for these
#: files, so they are read from LightGBM's repository at a fixed commit rather than shipped.
YAHOO_SAMPLE = FetchedDataset(
    name="yahoo-sample",
    base_url=(
        "https://raw.githubusercontent.com/microsoft/LightGBM/"
        "bae0b7ba953341a32b2a9c5c5c437a1b976f576f/examples/lambdarank/"
    ),
    sha256={
        "rank.train": "a0c7201c89120879c14a5059e091f441cbf2a29b8aaef363885ccb1a530448df",
        "rank.train.query": "40cb5fef637229311cd30fab13cb7fb633b023e86a87ff04ec55db420143d6af",
        "rank.test": "3b1219ce117a0a36d2f76c02de7e7831c1d79af0d40f5195c03178bbe26c824b",
        "rank.test.query": "36dca82ba3bf99201bac3987b00a8fbf6fe5f563e9fa6d0da90e783710a32df4",
    },
    source="LightGBM's examples/lambdarank (github.com/microsoft/LightGBM)",
    why_not_shipped=(
        "the Yahoo! Webscope terms restrict redistribution and LightGBM's repository states "
        "none for these files"
    ),
)

#: The fetched datasets, by name.
FETCHED = {d.name: d for d in (YAHOO_SAMPLE,)}


def data_home() -> Path:
    """The folder fetched datasets are kept in: ``$GBDT_PLRANK_DATA``, or
    ``~/.cache/gbdt_plrank`` (created on first use)."""
    return Path(os.environ.get("GBDT_PLRANK_DATA") or Path.home() / ".cache" / "gbdt_plrank")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch(dataset: FetchedDataset, *, download: bool = False) -> dict[str, Path]:
    """The paths of ``dataset``'s files in :func:`data_home`, downloading those missing only
    where ``download`` is true.

    Each file is checked against its SHA-256, whether it was there already or just downloaded
    (a download is written to a temporary file and moved in place once checked, so an
    interrupted one leaves nothing behind).

    Raises
    ------
    FileNotFoundError
        When a file is missing and ``download`` is false, naming the folder, why the package
        does not ship the file and how to download it.
    OSError
        When a file is missing and cannot be downloaded (offline, or the address gone), naming
        its address, the cause and where to put it by hand.
    ValueError
        When a file's checksum is not the one expected, naming the file and both checksums.
    """
    folder = data_home() / dataset.name
    missing = [file for file in dataset.sha256 if not (folder / file).is_file()]
    if missing and not download:
        raise FileNotFoundError(
            f"{dataset.name}: {', '.join(missing)} not in {folder}. The package does not ship "
            f"{dataset.name} ({dataset.why_not_shipped}); download it once with "
            f"gbdt_plrank.datasets.fetch_dataset({dataset.name!r}) (from {dataset.source}, "
            f"over the network), or copy its files there by hand (GBDT_PLRANK_DATA sets the "
            f"folder)."
        )
    paths = {}
    for file, expected in dataset.sha256.items():
        path = folder / file
        if file in missing:
            _download(dataset, file, expected, folder)
        else:
            _check(path, expected, what=f"{dataset.name}: {path}")
        paths[file] = path
    return paths


def _download(dataset: FetchedDataset, file: str, expected: str, folder: Path) -> None:
    """Download ``file`` of ``dataset`` into ``folder``, checked against ``expected``."""
    url = dataset.base_url + file
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=folder, delete=False, suffix=".part") as tmp:
        try:
            with urllib.request.urlopen(url, timeout=60) as response:
                shutil.copyfileobj(response, tmp)
        except (urllib.error.URLError, OSError) as err:
            tmp.close()
            Path(tmp.name).unlink()
            raise OSError(
                f"{dataset.name}: {file} is not in {folder} and could not be downloaded "
                f"from {url} ({err}). Download it from {dataset.source} and put it "
                f"there (or set GBDT_PLRANK_DATA to a folder holding "
                f"{dataset.name}/{file})."
            ) from None
    _check(Path(tmp.name), expected, what=f"{dataset.name}: {file} downloaded from {url}")
    Path(tmp.name).replace(folder / file)


def _check(path: Path, expected: str, *, what: str) -> None:
    got = _sha256(path)
    if got != expected:
        if path.suffix == ".part":
            path.unlink()
        raise ValueError(
            f"{what} must have SHA-256 {expected}, but has {got}: it is not the published file "
            f"(remove it to download it again)."
        )
