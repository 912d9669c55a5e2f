"""The SVMlight / LETOR loader and the bundled LETOR 4.0 datasets."""

from __future__ import annotations

import gzip
import re
from dataclasses import replace

import numpy as np
import pytest
from doc_blocks import README, python_blocks, run_blocks

from gbdt_plrank.datasets import load_dataset

# (fold, split): (documents, queries), from the PROVENANCE.md tables of the source files
MQ2008 = {
    (1, "train"): (9630, 471),
    (1, "vali"): (2707, 157),
    (1, "test"): (2874, 156),
    (3, "train"): (8643, 470),
    (3, "vali"): (2933, 157),
    (3, "test"): (3635, 157),
    (5, "train"): (9442, 470),
    (5, "vali"): (3062, 157),
    (5, "test"): (2707, 157),
}
MQ2007_AGG = {(1, "train"): (42158, 1017), (1, "vali"): (13813, 339), (1, "test"): (13652, 336)}


@pytest.mark.parametrize(("name", "table"), [("mq2008", MQ2008), ("mq2007-agg", MQ2007_AGG)])
def test_bundled_folds_have_the_published_sizes(name, table):
    for fold in sorted({f for f, _ in table}):
        data = load_dataset(name, fold=fold)
        assert data.name == f"{name}/Fold{fold}"
        n_features = data.train.X.shape[1]
        for split in ("train", "vali", "test"):
            part = getattr(data, split)
            assert (part.X.shape[0], part.n_queries) == table[fold, split]
            assert part.X.shape[1] == n_features
            assert part.group_sizes.sum() == part.X.shape[0]
            assert set(np.unique(part.y)) <= {0.0, 1.0, 2.0}


def test_folds_rotate_the_partitions():
    """Fold1: train S1 S2 S3, vali S4, test S5; Fold2: train S2 S3 S4, vali S5, test S1."""
    one, two = load_dataset("mq2008", fold=1), load_dataset("mq2008", fold=2)
    np.testing.assert_array_equal(two.vali.qid, one.test.qid)  # S5
    np.testing.assert_array_equal(two.train.qid[-one.vali.qid.size :], one.vali.qid)  # S4
    s2_s3 = one.train.qid.size - two.test.qid.size  # Fold1 train without S1
    np.testing.assert_array_equal(two.train.qid[:s2_s3], one.train.qid[-s2_s3:])
    np.testing.assert_array_equal(one.train.qid[: two.test.qid.size], two.test.qid)  # S1
    assert not set(one.train.qid) & set(one.test.qid)


def _write(path, lines, *, gz=False):
    text = "\n".join(lines) + "\n"
    if gz:
        with gzip.open(path, "wt") as f:
            f.write(text)
    else:
        path.write_text(text)


def test_folder_of_letor_files_shares_one_feature_count(tmp_path):
    _write(tmp_path / "train.txt", ["2 qid:1 1:0.5 3:1.0 # doc a", "0 qid:1 2:0.25", "1 qid:7 1:1"])
    _write(tmp_path / "vali.txt", ["1 qid:2 5:0.5", "0 qid:2 1:0.1"])
    _write(tmp_path / "test.txt.gz", ["0 qid:3 1:0.2", "1 qid:3 4:0.3"], gz=True)
    data = load_dataset(tmp_path)
    assert (
        data.train.X.shape == (3, 5) and data.vali.X.shape == (2, 5) and data.test.X.shape == (2, 5)
    )
    np.testing.assert_array_equal(data.train.group_ptr, [0, 2, 3])
    np.testing.assert_array_equal(data.train.y, [2.0, 0.0, 1.0])
    assert data.train.X[0, 2] == pytest.approx(1.0)


def test_fold_subfolders(tmp_path):
    fold = tmp_path / "Fold2"
    fold.mkdir()
    for split in ("train", "vali", "test"):
        _write(fold / f"{split}.txt", ["1 qid:1 1:0.5", "0 qid:1 1:0.1"])
    assert load_dataset(tmp_path, fold=2).name == "Fold2"


@pytest.mark.parametrize(
    ("setup", "kwargs", "error", "message"),
    [
        (
            None,
            {"data": "nope"},
            ValueError,
            r"dataset's name \(mq2008, mq2007-agg, mslr-sample, web-linear, web-nonlinear, "
            r"web-noisy, yahoo-sample\) or a folder, but 'nope' is neither",
        ),
        (
            None,
            {"data": "mq2008", "fold": 6},
            ValueError,
            r"fold must be an integer from 1 to 5, but 6 is given",
        ),
        (
            "missing",
            {},
            FileNotFoundError,
            r"must hold train.txt, vali.txt and test.txt .* but test is missing",
        ),
        ("split", {}, ValueError, r"rows of each qid must be contiguous"),
    ],
)
def test_bad_data_is_refused(tmp_path, setup, kwargs, error, message):
    if setup is not None:
        _write(
            tmp_path / "train.txt",
            ["1 qid:1 1:0.5", "0 qid:2 1:0.1", "1 qid:1 1:0.3"]
            if setup == "split"
            else ["1 qid:1 1:0.5"],
        )
        _write(tmp_path / "vali.txt", ["1 qid:1 1:0.5"])
        if setup == "split":
            _write(tmp_path / "test.txt", ["1 qid:1 1:0.5"])
        kwargs = {"data": tmp_path}
    with pytest.raises(error, match=message):
        load_dataset(**kwargs)


def readme_booster_example() -> str:
    """The README's block of the objective in ``xgboost.train``, its rounds cut to 2."""
    (code,) = [b for b in python_blocks(README) if "xgboost.train(" in b]
    assert 'load_dataset("mq2008")' in code and code.count("num_boost_round=2") == 1
    return code


@pytest.mark.parametrize("name", ["mq2008", "mq2007-agg"])
@pytest.mark.parametrize("fold", [1, 2, 3, 4, 5])
def test_every_fold_works_in_the_readme_example(name: str, fold: int) -> None:
    """Fold 4 used to give a train split with unsorted qids, which XGBoost refuses."""
    code = readme_booster_example().replace(
        'load_dataset("mq2008")', f"load_dataset({name!r}, fold={fold})"
    )
    data = run_blocks(README, [code])["data"]
    for split in (data.train, data.vali, data.test):
        assert np.all(np.diff(split.qid) >= 0)
        assert split.n_queries == np.unique(split.qid).shape[0]


def test_sorting_by_query_keeps_each_querys_rows_in_order(tmp_path):
    _write(tmp_path / "train.txt", ["2 qid:9 1:1", "0 qid:9 1:2", "1 qid:3 1:3", "0 qid:3 1:4"])
    _write(tmp_path / "vali.txt", ["1 qid:2 1:0.5"])
    _write(tmp_path / "test.txt", ["1 qid:3 1:0.5"])
    train = load_dataset(tmp_path).train
    np.testing.assert_array_equal(train.qid, [3, 3, 9, 9])
    np.testing.assert_array_equal(train.X.toarray().ravel(), [3, 4, 1, 2])
    np.testing.assert_array_equal(train.y, [1, 0, 2, 0])


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("1 qid:abc 1:0.5", "invalid literal"),
        ("x qid:1 1:0.5", "could not convert"),
        ("1 qid:1 1-0.5", ""),
        ("1 qid:1 a:0.5", "invalid literal"),
        ("1 qid:1 1:zz", "could not convert"),
        ("1 1:0.5", "every document needs a qid"),
    ],
)
def test_a_malformed_line_names_the_file_the_line_and_the_format(tmp_path, line, reason, gz):
    name = "vali.txt.gz" if gz else "vali.txt"
    _write(tmp_path / "train.txt", ["1 qid:1 1:0.5", "0 qid:1 1:0.1"])
    _write(tmp_path / name, ["# a comment", "1 qid:2 1:0.5 # doc", line, "0 qid:2 1:0.2"], gz=gz)
    _write(tmp_path / "test.txt", ["1 qid:3 1:0.5"])
    with pytest.raises(ValueError) as info:
        load_dataset(tmp_path)
    message = str(info.value)
    assert f"{tmp_path / name}: line 3 ({line!r}) is not a LETOR line" in message
    assert "'<label> qid:<integer> <index>:<value> ... [# comment]'" in message
    assert reason in message


def test_mslr_sample_is_bundled_as_one_split() -> None:
    data = load_dataset("mslr-sample")
    assert data.name == "mslr-sample"
    shapes = [(s.X.shape, s.n_queries) for s in (data.train, data.vali, data.test)]
    assert shapes == [((5555, 136), 54), ((1734, 136), 18), ((1900, 136), 18)]
    for split in (data.train, data.vali, data.test):
        assert np.all(np.diff(split.qid) >= 0)
        assert set(np.unique(split.y)) <= {0.0, 1.0, 2.0, 3.0, 4.0}
    np.testing.assert_array_equal(np.bincount(data.test.y.astype(int)), [1023, 604, 243, 20, 10])
    with pytest.raises(
        ValueError,
        match="fold must be 1 for 'mslr-sample', a bundled dataset of one split, but 2 is given",
    ):
        load_dataset("mslr-sample", fold=2)


@pytest.mark.parametrize(
    ("line", "what"),
    [("1 qid:2 1:0.5 2:inf", "feature 2 is inf"), ("nan qid:2 1:0.5", "label is nan")],
)
def test_a_non_finite_value_names_the_file_the_line_and_the_feature(tmp_path, line, what):
    _write(tmp_path / "train.txt", ["1 qid:1 1:0.5", "0 qid:1 1:0.1"])
    _write(tmp_path / "vali.txt", ["# a comment", "1 qid:2 1:0.5 # doc", line, "0 qid:2 1:0.2"])
    _write(tmp_path / "test.txt", ["1 qid:3 1:0.5"])
    with pytest.raises(ValueError) as info:
        load_dataset(tmp_path)
    assert f"{tmp_path / 'vali.txt'}: line 3 ({line!r}): {what}" in str(info.value)


# --------------------------------------------------------------------------------------------
# Web-shaped synthetic data
# --------------------------------------------------------------------------------------------
SMALL = {"queries": (60, 20, 20)}


def test_web_data_has_the_shape_of_web_search_data() -> None:
    """Deep queries with a long tail, 136 features, MSLR's grade shares (2.6 % in the top two)."""
    from gbdt_plrank.datasets import MSLR_GRADE_SHARES, WebShape, make_web_dataset

    data = make_web_dataset(WebShape(queries=(400, 20, 20)), seed=3)
    train = data.train
    sizes = train.group_sizes
    assert data.name == "web-linear/seed3"
    assert train.X.dtype == np.float32 and train.X.shape == (sizes.sum(), 136)
    assert 105 < sizes.mean() < 135 and sizes.max() > 2 * np.median(sizes) and sizes.min() >= 10
    shares = np.bincount(train.y.astype(int), minlength=5) / train.y.shape[0]
    assert np.allclose(shares, MSLR_GRADE_SHARES, atol=0.01)
    assert 0.015 < shares[3:].sum() < 0.04
    # query ids run on across the splits, each split sorted by them
    ends = [s.qid for s in (data.train, data.vali, data.test)]
    assert all(np.all(np.diff(q) >= 0) for q in ends)
    assert ends[0].max() < ends[1].min() and ends[1].max() < ends[2].min()


@pytest.mark.parametrize("relevance", ["linear", "nonlinear"])
def test_web_data_is_a_function_of_its_shape_and_seed(relevance: str) -> None:
    from gbdt_plrank.datasets import WebShape, make_web_dataset

    shape = WebShape(relevance=relevance, **SMALL)
    a, b, c = (make_web_dataset(shape, seed=s) for s in (1, 1, 2))
    assert np.array_equal(a.train.X.toarray(), b.train.X.toarray())
    assert np.array_equal(a.test.y, b.test.y)
    assert a.train.X.shape != c.train.X.shape or not np.array_equal(
        a.train.X.toarray(), c.train.X.toarray()
    )


def test_web_relevance_is_learnable_from_the_features_and_noise_hides_it() -> None:
    """A linear fit of the labels on the features explains a share of them that the feature
    noise lowers; the nonlinear relevance is not linear in them (a linear fit explains less)."""
    from gbdt_plrank.datasets import WebShape, make_web_dataset

    def explained(shape: WebShape) -> float:
        d = make_web_dataset(shape, seed=5)
        X, y = d.train.X.toarray().astype(np.float64), d.train.y
        X = np.column_stack([X, np.ones(X.shape[0])])
        coef, *_ = np.linalg.lstsq(X, y, rcond=None)
        return 1 - np.var(y - X @ coef) / np.var(y)

    queries = {"queries": (300, 20, 20)}
    linear = explained(WebShape(**queries))
    noisy = explained(WebShape(feature_noise=1.0, **queries))
    nonlinear = explained(WebShape(relevance="nonlinear", **queries))
    assert linear > 0.2 and noisy < 0.7 * linear and nonlinear < 0.7 * linear


@pytest.mark.parametrize(
    ("shape", "message"),
    [
        ({"relevance": "cubic"}, "relevance must be one of 'linear', 'nonlinear', but 'cubic'"),
        ({"feature_noise": -1.0}, "feature_noise must be a number from 0 to 1e6, but -1.0"),
        ({"feature_noise": "1"}, "feature_noise must be a number from 0 to 1e6, but '1'"),
        ({"feature_noise": 1e308}, "feature_noise must be a number from 0 to 1e6, but 1e"),
        ({"label_noise": float("nan")}, "label_noise must be a number from 0 to 1e6, but nan"),
        ({"label_noise": True}, "label_noise must be a number from 0 to 1e6, but True"),
        ({"queries": (10, 0, 5)}, r"queries must be three integers >= 1 .* \(10, 0, 5\)"),
        ({"queries": (1.5, 2, 2)}, r"queries must be three integers >= 1 .* \(1.5, 2, 2\)"),
        ({"queries": 100}, r"queries must be three integers >= 1 .* 100 is given"),
        ({"min_docs": 50, "max_docs": 20}, "min_docs and max_docs must satisfy"),
        ({"min_docs": 2.5}, "min_docs must be an integer, but 2.5"),
        ({"max_docs": float("inf")}, "max_docs must be an integer, but inf"),
        ({"mean_docs": float("inf")}, "mean_docs must be a finite number > 0, but inf"),
        ({"mean_docs": 0}, "mean_docs must be a finite number > 0, but 0"),
        ({"docs_sigma": float("inf")}, "docs_sigma must be a number from 0 to 10, but inf"),
        ({"docs_sigma": 1e155}, "docs_sigma must be a number from 0 to 10, but 1e"),
        ({"n_informative": 5}, "n_informative must be from 10 to n_features"),
        ({"n_informative": 12.5}, "n_informative must be an integer, but 12.5"),
        ({"n_features": 136.5}, "n_features must be an integer, but 136.5"),
        ({"grade_shares": (1.0,)}, r"grade_shares must be two or more finite positive shares"),
        ({"grade_shares": (0.5, float("inf"))}, r"grade_shares must be .* \(0.5, inf\) is given"),
        ({"grade_shares": "ab"}, r"grade_shares must be two or more finite positive shares"),
    ],
)
def test_bad_web_shapes_are_refused(shape: dict, message: str) -> None:
    from gbdt_plrank.datasets import WebShape

    with pytest.raises(ValueError, match=message):
        WebShape(**shape)


def test_web_shapes_take_lists_and_numpy_values_as_their_tuples_and_numbers() -> None:
    """A list or an array of queries or grade shares, NumPy integers and floats: the same shape
    (and so the same world and the same data) as the tuples and Python numbers."""
    from gbdt_plrank.datasets import WebShape, make_web_dataset

    given = WebShape(
        queries=[np.int64(20), 5, 5],
        grade_shares=np.array([0.6, 0.3, 0.1]),
        mean_docs=np.float32(30.0),
        n_informative=np.int32(12),
    )
    plain = WebShape(
        queries=(20, 5, 5), grade_shares=(0.6, 0.3, 0.1), mean_docs=30.0, n_informative=12
    )
    assert given == plain and hash(given) == hash(plain)
    assert type(given.queries) is tuple and type(given.grade_shares[0]) is float
    a, b = make_web_dataset(given, seed=1), make_web_dataset(plain, seed=1)
    assert np.array_equal(a.train.X.toarray(), b.train.X.toarray())
    assert np.array_equal(a.train.y, b.train.y)


@pytest.mark.parametrize("name", ["mslr-sample", "web-linear"])
def test_every_named_dataset_gives_csr_float32_features_and_the_readme_recipe_works(
    name: str,
) -> None:
    """One type for every named dataset (the web-shaped ones were dense arrays, and the
    README's pd.DataFrame(X.toarray()) raised AttributeError on them); the web data's CSR stores
    every entry, a drawn 0 included, so the boosters read the same values as from the array."""
    import pandas as pd
    import scipy.sparse as sp

    from gbdt_plrank._synthetic import _stored_csr

    X = load_dataset(name).train.X
    assert sp.isspmatrix_csr(X) and X.dtype == np.float32
    assert pd.DataFrame(X.toarray()).shape == X.shape
    dense = np.array([[0.0, 1.5], [2.0, 0.0]], dtype=np.float32)
    stored = _stored_csr(dense)
    assert stored.nnz == 4 and np.array_equal(stored.toarray(), dense)


def test_load_dataset_draws_the_web_variants_by_fold() -> None:
    from gbdt_plrank._synthetic import WEB_VARIANTS, make_web_splits
    from gbdt_plrank.datasets import SYNTHETIC

    assert SYNTHETIC == ("web-linear", "web-nonlinear", "web-noisy")
    assert WEB_VARIANTS["web-noisy"].feature_noise > 0
    assert WEB_VARIANTS["web-nonlinear"].relevance == "nonlinear"
    data = load_dataset("web-nonlinear", fold=2)
    assert data.name == "web-nonlinear/Fold2"
    assert data.train.n_queries == 1500 and data.vali.n_queries == data.test.n_queries == 300
    train, _, test = make_web_splits(WEB_VARIANTS["web-nonlinear"], seed=2)
    assert np.array_equal(train.X.toarray(), data.train.X.toarray())
    assert np.array_equal(test.y, data.test.y)


# --------------------------------------------------------------------------------------------
# A protected group whose share of a query's merit varies by query
# --------------------------------------------------------------------------------------------
def _merit_shares(split, protected: np.ndarray) -> np.ndarray:
    gain = 2.0**split.y - 1
    ptr = split.group_ptr
    merit = np.add.reduceat(gain, ptr[:-1])
    share = np.add.reduceat(gain * protected, ptr[:-1])
    return share[merit > 0] / merit[merit > 0]


def test_web_groups_add_an_attribute_and_a_query_feature_to_the_same_documents() -> None:
    from gbdt_plrank._synthetic import WebGroups
    from gbdt_plrank.datasets import MSLR_GRADE_SHARES, WebShape, make_web_dataset

    plain = WebShape(relevance="nonlinear", queries=(300, 20, 20))
    shape = replace(plain, groups=WebGroups(share=0.4, query_shift=1.25))
    a, b = make_web_dataset(plain, seed=4), make_web_dataset(shape, seed=4)
    for s, t in zip((a.train, a.vali, a.test), (b.train, b.vali, b.test)):
        # the other columns, the noise and the query ids are those of the plain shape
        assert t.X.shape == (s.X.shape[0], 138)
        X = t.X.toarray()
        np.testing.assert_array_equal(X[:, :136], s.X.toarray())
        np.testing.assert_array_equal(t.qid, s.qid)
        level, context = X[:, 136], X[:, 137]
        assert set(np.unique(level)) == set(range(10))
        ptr = t.group_ptr
        assert np.all(
            np.maximum.reduceat(context, ptr[:-1]) == np.minimum.reduceat(context, ptr[:-1])
        )
    train = b.train
    X = train.X.toarray()
    protected = (X[:, 136] < 4).astype(float)
    assert abs(protected.mean() - 0.4) < 0.01
    shares = np.bincount(train.y.astype(int), minlength=5) / train.y.shape[0]
    assert np.allclose(shares, MSLR_GRADE_SHARES, atol=0.015)
    # the group's merit share follows the query feature: more merit where it is high
    context = X[train.group_ptr[:-1], 137]
    gain = 2.0**train.y - 1
    merit = np.add.reduceat(gain, train.group_ptr[:-1])
    share = np.add.reduceat(gain * protected, train.group_ptr[:-1]) / np.maximum(merit, 1e-12)
    assert np.corrcoef(context[merit > 0], share[merit > 0])[0, 1] > 0.6
    # and spreads over queries as on MSLR (about 0.23), far more than without the shift (0.10)
    spread = _merit_shares(train, protected).std()
    flat = make_web_dataset(replace(plain, groups=WebGroups(query_shift=0.0)), seed=4).train
    flat_spread = _merit_shares(flat, (flat.X[:, [136]].toarray()[:, 0] < 4).astype(float)).std()
    assert 0.18 < spread < 0.28 and flat_spread < 0.13


def test_web_groups_read_back_as_the_protected_group_of_a_frontier() -> None:
    """The frontier's rule (the attribute below its share-quantile on the training split)
    selects exactly the generator's protected documents, on every split."""
    from gbdt_plrank._synthetic import WebGroups
    from gbdt_plrank.harness.data import load
    from gbdt_plrank.harness.item_groups import ProtectedGroup, with_item_groups

    groups = WebGroups(share=0.3)
    data = with_item_groups(
        load("web-linear", 2, drop_empty_test_queries=False, web_groups=groups),
        ProtectedGroup(feature=137, quantile=0.3),
    )
    assert data.name == "web-linear/Fold2"
    for split in (data.train, data.vali, data.test):
        np.testing.assert_array_equal(split.item_groups, split.X[:, [136]].toarray()[:, 0] < 3)


@pytest.mark.parametrize(
    ("groups", "message"),
    [
        ({"share": 0.45}, "share must be a multiple of 0.1 in (0, 1), but 0.45"),
        ({"share": 1.0}, "share must be a multiple of 0.1 in (0, 1), but 1.0"),
        ({"query_shift": -1.0}, "query_shift must be a finite number >= 0, but -1.0"),
        ({"query_shift": float("inf")}, "query_shift must be a finite number >= 0, but inf"),
        ({"share": "0.4"}, "share must be a multiple of 0.1 in (0, 1), but '0.4'"),
        ({"query_shift": None}, "query_shift must be a finite number >= 0, but None"),
    ],
)
def test_bad_web_groups_are_refused(groups: dict, message: str) -> None:
    from gbdt_plrank._synthetic import WebGroups

    with pytest.raises(ValueError, match=re.escape(message)):
        WebGroups(**groups)


@pytest.mark.parametrize("groups", [{"share": 0.4}, 0.4, "web"])
def test_a_web_shape_takes_web_groups_only(groups) -> None:
    from gbdt_plrank.datasets import WebShape

    with pytest.raises(
        ValueError, match=re.escape(f"groups must be a WebGroups or None, but {groups!r}")
    ):
        WebShape(groups=groups)


def test_web_groups_are_for_the_web_variants_only() -> None:
    from gbdt_plrank._synthetic import WebGroups
    from gbdt_plrank.harness.data import load
    from gbdt_plrank.harness.settings import ConfigError

    with pytest.raises(ConfigError, match="but 'mq2008' is not one of them"):
        load("mq2008", 1, drop_empty_test_queries=True, web_groups=WebGroups())
