"""Datasets downloaded on request: download, checksum, cache, loading without the network, and
the yahoo-sample folds."""

import hashlib
import re

import numpy as np
import pytest

from gbdt_plrank import _fetched
from gbdt_plrank._fetched import FETCHED, FetchedDataset, data_home, fetch
from gbdt_plrank.datasets import NAMED, fetch_dataset, load_dataset


def _lightgbm_files(folder, n_queries=(7, 3), n_features=4, seed=0):
    """LightGBM-format ranking files (rank.train, rank.test and their .query files) of
    queries of 1 to 4 documents; every row's first feature is its query's number (1-based,
    train then test), its label the row's index within its query."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    number = 0
    for name, n in zip(("rank.train", "rank.test"), n_queries):
        sizes = rng.integers(1, 5, size=n)
        lines = []
        for size in sizes:
            number += 1
            for i in range(size):
                values = [number, *rng.random(n_features - 1).round(2)]
                feats = " ".join(f"{j + 1}:{v:g}" for j, v in enumerate(values))
                lines.append(f"{i} {feats}")
        (folder / name).write_text("\n".join(lines) + "\n")
        (folder / f"{name}.query").write_text("\n".join(map(str, sizes)) + "\n")
    return {
        f.name: hashlib.sha256(f.read_bytes()).hexdigest()
        for f in folder.iterdir()
        if f.name.startswith("rank.")
    }


@pytest.fixture
def remote(tmp_path, monkeypatch):
    """A fake 'yahoo-sample' published under a file:// address, and an empty data folder."""
    published = tmp_path / "published"
    sha = _lightgbm_files(published, n_queries=(12, 3))
    fake = FetchedDataset("yahoo-sample", published.as_uri() + "/", sha, "a test folder")
    monkeypatch.setitem(FETCHED, "yahoo-sample", fake)
    monkeypatch.setenv("GBDT_PLRANK_DATA", str(tmp_path / "home"))
    return fake


def test_the_data_folder_comes_from_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("GBDT_PLRANK_DATA", str(tmp_path))
    assert data_home() == tmp_path
    monkeypatch.delenv("GBDT_PLRANK_DATA")
    assert data_home().parts[-2:] == (".cache", "gbdt_plrank")


def test_files_are_downloaded_once_checked_and_read_from_the_cache(remote, tmp_path):
    paths = fetch(remote, download=True)
    home = tmp_path / "home" / "yahoo-sample"
    assert sorted(paths) == sorted(remote.sha256)
    assert all(p.parent == home and p.is_file() for p in paths.values())
    assert not list(home.glob("*.part"))
    # the published files gone: the cache is read as it is
    for f in (tmp_path / "published").iterdir():
        f.unlink()
    assert fetch(remote) == paths == fetch(remote, download=True)


def test_a_cached_file_with_another_checksum_is_refused_naming_both(remote, tmp_path):
    paths = fetch(remote, download=True)
    paths["rank.test"].write_text("0 1:1\n")
    got = hashlib.sha256(b"0 1:1\n").hexdigest()
    with pytest.raises(
        ValueError,
        match=re.escape(f"must have SHA-256 {remote.sha256['rank.test']}, but has {got}"),
    ):
        fetch(remote)


def test_a_download_with_another_checksum_is_refused_and_not_kept(remote, tmp_path):
    wrong = FetchedDataset(
        remote.name, remote.base_url, {**remote.sha256, "rank.train": "0" * 64}, remote.source
    )
    with pytest.raises(ValueError, match=r"downloaded from .*rank\.train must have SHA-256 0000"):
        fetch(wrong, download=True)
    home = tmp_path / "home" / "yahoo-sample"
    assert not (home / "rank.train").exists() and not list(home.glob("*.part"))


def test_an_unreachable_source_says_where_to_put_the_files(remote, tmp_path):
    gone = FetchedDataset(remote.name, (tmp_path / "nowhere").as_uri() + "/", remote.sha256, "X")
    first = next(iter(gone.sha256))  # the first file fetched
    message = (
        f"yahoo-sample: {first} is not in {tmp_path / 'home' / 'yahoo-sample'} and could not "
        f"be downloaded from {gone.base_url}{first}"
    )
    with pytest.raises(OSError, match=re.escape(message)) as err:
        fetch(gone, download=True)
    assert "set GBDT_PLRANK_DATA" in str(err.value)
    assert not list((tmp_path / "home" / "yahoo-sample").glob("*.part"))


def test_loading_never_downloads_and_says_how_to(remote, tmp_path):
    """The files reachable, but not fetched: load_dataset reads the data folder only, and its
    error names the folder, why the data are not shipped and the call that downloads them."""
    home = tmp_path / "home" / "yahoo-sample"
    message = (
        f"yahoo-sample: {', '.join(remote.sha256)} not in {home}. "
        "The package does not ship yahoo-sample (its terms do not clearly allow "
        "redistribution); download it once with "
        "gbdt_plrank.datasets.fetch_dataset('yahoo-sample')"
    )
    with pytest.raises(FileNotFoundError, match=re.escape(message)):
        load_dataset("yahoo-sample", fold=1)
    assert not home.exists()
    fetch_dataset("yahoo-sample")
    (home / "rank.test").unlink()
    with pytest.raises(
        FileNotFoundError, match=re.escape(f"yahoo-sample: rank.test not in {home}")
    ):
        load_dataset("yahoo-sample", fold=1)


def test_the_real_yahoo_sample_says_why_it_is_not_shipped(monkeypatch, tmp_path):
    monkeypatch.setenv("GBDT_PLRANK_DATA", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="the Yahoo! Webscope terms restrict"):
        load_dataset("yahoo-sample", fold=1)


@pytest.mark.parametrize("name", ["mq2008", "nope", None])
def test_fetch_dataset_takes_only_the_fetched_names(name):
    with pytest.raises(
        ValueError, match=re.escape(f"fetches (yahoo-sample), but {name!r} is given")
    ):
        fetch_dataset(name)


def test_yahoo_sample_is_a_named_dataset_in_five_letor_folds(remote, tmp_path):
    """15 queries cut into five parts of three; fold k trains on parts k, k+1, k+2, validates
    on k+3 and tests on k+4 (mod 5): every query is a test query once."""
    assert "yahoo-sample" in NAMED
    assert fetch_dataset("yahoo-sample") == tmp_path / "home" / "yahoo-sample"
    tested = []
    for fold in range(1, 6):
        data = load_dataset("yahoo-sample", fold=fold)
        assert data.name == f"yahoo-sample/Fold{fold}"
        parts = [(fold - 1 + j) % 5 for j in range(5)]
        expect = [set(range(3 * p + 1, 3 * p + 4)) for p in parts]
        assert set(data.train.qid) == expect[0] | expect[1] | expect[2]
        assert set(data.vali.qid) == expect[3] and set(data.test.qid) == expect[4]
        for split in (data.train, data.vali, data.test):
            # the first feature holds the query's number: rows stay with their query
            assert np.array_equal(split.X[:, 0].toarray().ravel(), split.qid)
            assert np.all(np.diff(split.qid) >= 0)
            assert split.X.shape[1] == data.train.X.shape[1]
        tested += list(np.unique(data.test.qid))
    assert sorted(tested) == list(range(1, 16))


def test_group_sizes_that_do_not_match_the_rows_are_refused(remote, tmp_path):
    published = tmp_path / "published"
    (published / "rank.test.query").write_text("1\n")
    sha = {**remote.sha256}
    sha["rank.test.query"] = hashlib.sha256(b"1\n").hexdigest()
    FETCHED["yahoo-sample"] = FetchedDataset(remote.name, remote.base_url, sha, remote.source)
    fetch_dataset("yahoo-sample")
    with pytest.raises(
        ValueError, match=r"rank\.test\.query must give the group sizes of the \d+ rows"
    ):
        load_dataset("yahoo-sample", fold=1)


def test_the_published_checksums_are_those_of_lightgbms_files():
    """The address is pinned to a commit, and the checksums are those the provenance records."""
    spec = _fetched.YAHOO_SAMPLE
    assert re.search(r"/[0-9a-f]{40}/examples/lambdarank/$", spec.base_url)
    assert spec.sha256["rank.train"].startswith("a0c7201c")
    assert sorted(spec.sha256) == sorted(
        ["rank.train", "rank.train.query", "rank.test", "rank.test.query"]
    )
