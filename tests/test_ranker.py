"""PLRankRanker on both boosters: training, group rules, persistence, the policy, scikit-learn."""

from __future__ import annotations

import itertools
import math
import pickle
import re
import warnings

import lightgbm
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
import sklearn
import xgboost
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV, GroupKFold, cross_val_score
from sklearn.utils.estimator_checks import parametrize_with_checks
from sklearn_checks import CHECKS_THAT_FIT, CHECKS_THAT_FIT_WEIGHTED, NO_GROUPS, one_query
from stopping import rounds_after_best

from gbdt_plrank import min_rounds_for
from gbdt_plrank._util.schema import validate
from gbdt_plrank.datasets import Split, load_dataset
from gbdt_plrank.harness.settings import TreeSettings
from gbdt_plrank.metrics import ndcg
from gbdt_plrank.ranker import PLRankRanker

BACKENDS = ("xgboost", "lightgbm")
FAST = {"N": 10, "n_jobs": 1, "random_state": 0}  # every ranker here: few samples, one thread


# --------------------------------------------------------------------------------------------
# Data and one fitted ranker per backend
# --------------------------------------------------------------------------------------------
def _head(split: Split, n_queries: int) -> Split:
    rows = int(split.group_ptr[n_queries])
    return Split(split.X[:rows], split.y[:rows], split.qid[:rows])


@pytest.fixture(scope="module")
def mq():
    """Small slices of MQ2008 Fold1 (sparse float32 X, rows grouped by query)."""
    data = load_dataset("mq2008")
    return _head(data.train, 40), _head(data.vali, 20), _head(data.test, 20)


@pytest.fixture(scope="module", params=BACKENDS)
def fitted(request, mq):
    train, vali, _ = mq
    ranker = PLRankRanker(
        backend=request.param, n_estimators=40, learning_rate=0.2, stopping_metric="ranking", **FAST
    )
    return ranker.fit(
        train.X,
        train.y,
        group=train.qid,
        eval_set=[(vali.X, vali.y, vali.qid)],
        early_stopping_rounds=5,
    )


def _query_preserving_shuffle(qid: np.ndarray, seed: int) -> np.ndarray:
    """A row permutation that shuffles and interleaves queries but keeps each query's row order."""
    rng = np.random.default_rng(seed)
    slots = rng.permutation(qid.shape[0])
    perm = np.empty_like(slots)
    for q in np.unique(qid):
        rows = np.flatnonzero(qid == q)
        perm[np.sort(slots[rows])] = rows
    return perm


# --------------------------------------------------------------------------------------------
# Fit, predict, score, early stopping
# --------------------------------------------------------------------------------------------
def test_fit_predict_score(fitted, mq):
    _, vali, test = mq
    pred = fitted.predict(test.X)
    assert pred.shape == (test.X.shape[0],) and pred.dtype == np.float64
    assert fitted.n_features_in_ == test.X.shape[1] == 46
    assert fitted.booster_.__class__.__module__.split(".")[0] == fitted.backend
    score = fitted.score(test.X, test.y, group=test.qid)
    assert score == ndcg(test.y, pred, test.qid, k=5)
    assert 0.5 < score <= 1.0
    # score and the booster's own early-stopping metric follow the same conventions
    history = fitted.evals_result_["valid_0"]["ndcg@5"]
    assert fitted.score(vali.X, vali.y, vali.qid) == pytest.approx(
        history[fitted.best_iteration_], abs=1e-6
    )


def test_early_stopping_keeps_the_best_round(fitted):
    history = fitted.evals_result_["valid_0"]["ndcg@5"]
    best = fitted.best_iteration_
    first = min_rounds_for(fitted.learning_rate) - 1  # min_rounds="auto"
    assert history[best] == max(history[first:])
    wait = rounds_after_best(best, 5)
    assert len(history) == best + 1 + wait or len(history) == 40  # stopped then, or ran out
    rounds = (
        fitted.booster_.num_boosted_rounds()
        if fitted.backend == "xgboost"
        else fitted.booster_.current_iteration()
    )
    assert rounds == best + 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_early_stopping_without_an_eval_set_holds_out_training_queries(backend, mq):
    """early_stopping=True without an eval set is the same fit as one on the kept queries that
    watches the held-out ones as its eval set (the same seeds, patience 10), as scikit-learn's
    HistGradientBoosting* do; the held-out queries are a random tenth of the training queries,
    whole, drawn with random_state."""
    from gbdt_plrank._groups import hold_out_queries
    from gbdt_plrank._util.seeds import seeds_from

    train, _, test = mq
    options = {"backend": backend, "n_estimators": 60, "learning_rate": 0.3, **FAST}
    auto = PLRankRanker(early_stopping=True, **options).fit(train.X, train.y, group=train.qid)
    _, booster_seed = seeds_from(FAST["random_state"], 2)
    grouped = Split(train.X, train.y, train.qid)
    kept, held = hold_out_queries(grouped, fraction=0.1, seed=booster_seed)
    assert held.n_queries == 4 and kept.n_queries == 36  # round(0.1 * 40)
    assert set(np.unique(held.qid)).isdisjoint(np.unique(kept.qid))

    def stopped_on(train: Split, watched: Split) -> PLRankRanker:
        return PLRankRanker(**options).fit(
            train.X,
            train.y,
            group=train.qid,
            eval_set=[(watched.X, watched.y, watched.qid)],
            early_stopping_rounds=10,
        )

    explicit = stopped_on(kept, held)
    assert auto.best_iteration_ is not None and auto.best_iteration_ == explicit.best_iteration_
    assert auto.evals_result_ == explicit.evals_result_
    np.testing.assert_array_equal(auto.predict(test.X), explicit.predict(test.X))
    # with an eval set, that set is watched (patience 10), nothing held out
    _, vali, _ = mq
    watched = PLRankRanker(early_stopping=True, **options).fit(
        train.X, train.y, group=train.qid, eval_set=[(vali.X, vali.y, vali.qid)]
    )
    np.testing.assert_array_equal(watched.predict(test.X), stopped_on(train, vali).predict(test.X))


def _queries(n_queries: int, documents: int, seed: int = 0) -> Split:
    """``n_queries`` synthetic queries of ``documents`` rows each (graded labels from a linear
    score plus noise)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_queries * documents, 4))
    y = np.clip(np.round(X[:, 0] + X[:, 1] + rng.normal(size=X.shape[0])), 0, 3)
    return Split(X, y, np.repeat(np.arange(n_queries), documents))


def test_early_stopping_auto_holds_out_on_many_shallow_queries_only():
    """The rule of early_stopping="auto": at least 200 training queries of at most 64
    documents on average hold out, as early_stopping=True; one query fewer or one document more
    on average trains every round, as early_stopping=False."""
    from gbdt_plrank._backends import SHALLOW_QUERIES, holds_out_automatically

    assert SHALLOW_QUERIES == {"queries": 200, "mean_documents": 64}
    assert holds_out_automatically(n_queries=200, n_documents=200 * 64)
    assert holds_out_automatically(n_queries=10_000, n_documents=10_000)
    assert not holds_out_automatically(n_queries=199, n_documents=199 * 2)
    assert not holds_out_automatically(n_queries=200, n_documents=200 * 64 + 1)


@pytest.mark.parametrize("backend", BACKENDS)
def test_early_stopping_auto_is_true_on_shallow_queries_and_false_elsewhere(backend):
    """PLRankRanker() without an eval set holds out a tenth of many shallow training queries
    (the same fit as early_stopping=True) and trains every round on few or deep ones, with
    fairness or with an eval set (the same fit as early_stopping=False); do_early_stopping_
    says which."""
    options = {"backend": backend, "n_estimators": 30, "learning_rate": 0.3, **FAST}

    def fits(data: Split, **more: object) -> list[PLRankRanker]:
        return [
            PLRankRanker(early_stopping=value, **options, **more).fit(
                data.X, data.y, group=data.qid
            )
            for value in ("auto", True, False)
        ]

    def same(a: PLRankRanker, b: PLRankRanker, data: Split) -> None:
        assert a.do_early_stopping_ == b.do_early_stopping_
        assert a.best_iteration_ == b.best_iteration_ and a.evals_result_ == b.evals_result_
        np.testing.assert_array_equal(a.predict(data.X), b.predict(data.X))

    shallow = _queries(200, 5)
    auto, true, false = fits(shallow)
    same(auto, true, shallow)
    assert auto.do_early_stopping_ and auto.best_iteration_ is not None
    assert len(auto.evals_result_["valid_0"]["ndcg@5"]) > auto.best_iteration_
    assert not false.do_early_stopping_ and false.best_iteration_ is None
    for data in (_queries(199, 5), _queries(200, 65, seed=1)):
        auto, _, false = fits(data)
        same(auto, false, data)
        assert not auto.do_early_stopping_ and auto.evals_result_ == {}
    # fit's own patience: the held-out queries' where "auto" holds out, refused where it does not
    patient = [
        PLRankRanker(early_stopping=value, **options).fit(
            shallow.X, shallow.y, group=shallow.qid, early_stopping_rounds=3
        )
        for value in ("auto", True)
    ]
    same(*patient, shallow)
    few = _queries(199, 5)
    refused = (
        "early_stopping_rounds=3 needs a validation set, and early_stopping='auto' holds none "
        "out of these 199 training queries of 5 documents on average"
    )
    with pytest.raises(ValueError, match=re.escape(refused)):
        PLRankRanker(**options).fit(few.X, few.y, group=few.qid, early_stopping_rounds=3)
    auto, _, false = fits(shallow, fairness="expected-exposure")
    same(auto, false, shallow)
    watched = [
        PLRankRanker(early_stopping=value, **options).fit(
            shallow.X, shallow.y, group=shallow.qid, eval_set=[(shallow.X, shallow.y, shallow.qid)]
        )
        for value in ("auto", False)
    ]
    same(*watched, shallow)
    assert not watched[0].do_early_stopping_
    assert len(watched[0].evals_result_["valid_0"]["ndcg@5"]) == 30


def test_hold_out_queries_draws_whole_queries():
    """The held-out share: round(fraction * n) whole queries (at least 1, at most n - 1), each
    part in query order with its rows, item groups, base margins and query weights (none on
    the held-out part); the same seed draws the same queries; fewer than 2 queries is refused."""
    from gbdt_plrank._groups import hold_out_queries

    sizes = np.array([3, 1, 4, 2, 5])
    qid = np.repeat(np.arange(5), sizes)
    X = np.arange(qid.size * 2, dtype=float).reshape(-1, 2)
    data = Split(
        X,
        qid.astype(float),
        qid,
        item_groups=qid % 2,
        weights=np.array([1.0, 2, 3, 4, 5]),
        base_margin=np.arange(qid.size, dtype=float),
    )
    for fraction, count in ((0.4, 2), (0.01, 1), (0.99, 4)):
        kept, held = hold_out_queries(data, fraction=fraction, seed=3)
        assert held.n_queries == count and kept.n_queries == 5 - count
        ids = np.concatenate([np.unique(kept.qid), np.unique(held.qid)])
        assert sorted(ids.tolist()) == [0, 1, 2, 3, 4]
        for part in (kept, held):
            assert np.all(np.diff(part.qid) >= 0)
            np.testing.assert_array_equal(part.y, part.qid)  # the rows of their queries
            np.testing.assert_array_equal(part.X[:, 0] // 2, np.flatnonzero(np.isin(qid, part.qid)))
            np.testing.assert_array_equal(part.item_groups, part.qid % 2)
            np.testing.assert_array_equal(part.base_margin, part.X[:, 0] // 2)
        np.testing.assert_array_equal(kept.weights, np.unique(kept.qid) + 1.0)
        assert held.weights is None
    again = hold_out_queries(data, fraction=0.4, seed=3)[1]
    np.testing.assert_array_equal(again.qid, hold_out_queries(data, fraction=0.4, seed=3)[1].qid)
    draws = {
        tuple(np.unique(hold_out_queries(data, fraction=0.4, seed=s)[1].qid)) for s in range(20)
    }
    assert len(draws) > 3
    one = Split(X[:3], np.zeros(3), np.zeros(3, dtype=int))
    with pytest.raises(ValueError, match="needs at least 2 queries, but the training data holds 1"):
        hold_out_queries(one, fraction=0.5, seed=0)


def test_early_stopping_rules_and_the_idle_validation_fraction(mq):
    """early_stopping is "auto", True or False and validation_fraction in (0, 1), each refused
    by name; validation_fraction set while nothing is held out (early_stopping="auto" on few
    queries too) warns that it has no effect."""
    train, vali, _ = mq
    for given, message in (
        ({"early_stopping": 1}, "early_stopping must be 'auto', True or False, but 1 is given."),
        ({"validation_fraction": 1.0}, "validation_fraction must be a number in (0, 1), but 1.0"),
        ({"validation_fraction": 0}, "validation_fraction must be a number in (0, 1), but 0"),
    ):
        with pytest.raises(ValueError, match=re.escape(message)):
            PLRankRanker(**given, **FAST).fit(train.X, train.y, group=train.qid)
    idle = "validation_fraction=0.2 has no effect in this fit: it sizes the training queries"
    for extra, fit in (
        ({}, {}),
        ({"early_stopping": False}, {}),
        ({"early_stopping": True}, {"eval_set": [(vali.X, vali.y, vali.qid)]}),
    ):
        with pytest.warns(UserWarning, match=re.escape(idle)) as caught:
            PLRankRanker(n_estimators=2, validation_fraction=0.2, **extra, **FAST).fit(
                train.X, train.y, group=train.qid, **fit
            )
        assert len(caught) == 1 and caught[0].filename == __file__
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        PLRankRanker(
            n_estimators=2,
            early_stopping=True,
            validation_fraction=0.2,
            stopping_metric="ranking",
            **FAST,
        ).fit(train.X, train.y, group=train.qid)


def _policy_stopping_round(mq, backend, fairness):
    """The round kept with stopping_metric="policy", checked to maximise the policy's value on
    the eval set, and the round the ranking's NDCG@5 keeps."""
    from gbdt_plrank._ranking_metric import RankingMetric
    from gbdt_plrank._training.evaluation import PolicyEvaluator
    from gbdt_plrank._training.fairness_spec import FairnessSpec
    from gbdt_plrank._util.seeds import seeds_from

    train, vali, _ = mq
    options = {
        "backend": backend,
        "n_estimators": 60,
        "learning_rate": 0.1,
        "N": 10,
        "n_jobs": 1,
        "random_state": 0,
        "fairness": fairness,
        **({"fairness_weight": 0.5} if fairness else {}),
    }
    fit = {"eval_set": [(vali.X, vali.y, vali.qid)], "early_stopping_rounds": 4}
    ranker = PLRankRanker(**options, stopping_metric="policy").fit(
        train.X, train.y, train.qid, **fit
    )
    best, history = ranker.best_iteration_, ranker.evals_result_["valid_0"]["ndcg@5"]
    name = "expected_ndcg@5" + ("-0.5*ee_l" if fairness else "")
    assert list(ranker.evals_result_["valid_0"]) == ["ndcg@5", name]
    assert len(history) == best + 1 + rounds_after_best(best, 4) or len(history) == 60
    # the policy's value of the eval set after every round, from a model trained without
    # stopping (the same seeds give the same trees), peaks at the kept round
    full = PLRankRanker(**{**options, "n_estimators": len(history)}).fit(
        train.X, train.y, train.qid
    )
    seed = seeds_from(0, 2)[0]  # the objective's seed: its expected metric's streams too
    spec = FairnessSpec("expected-exposure", 0.5) if fairness else None
    value = PolicyEvaluator(RankingMetric("ndcg", 5, "exp"), spec, vali, seed=seed, n_jobs=1)

    def margins(rounds: int) -> np.ndarray:
        if backend == "xgboost":
            return np.asarray(full.booster_[:rounds].inplace_predict(vali.X), dtype=np.float64)
        return full.booster_.predict(vali.X, num_iteration=rounds, raw_score=True)

    values = [value.per_query(margins(r)).mean() for r in range(1, len(history) + 1)]
    first = min_rounds_for(0.1) - 1  # min_rounds="auto": no round kept before the 20th
    assert best == first + int(np.argmax(np.round(values[first:], 6)))  # XGBoost: 6 decimals
    np.testing.assert_allclose(ranker.evals_result_["valid_0"][name], values, atol=1e-6)
    np.testing.assert_allclose(ranker.predict(vali.X), margins(best + 1), rtol=1e-5, atol=1e-6)
    ndcg = PLRankRanker(stopping_metric="ranking", **options)
    return best, ndcg.fit(train.X, train.y, train.qid, **fit).best_iteration_


@pytest.mark.parametrize("backend", BACKENDS)
def test_policy_stopping_keeps_the_round_of_the_best_policy_value(mq, backend):
    kept = [_policy_stopping_round(mq, backend, f) for f in (None, "expected-exposure")]
    assert any(policy != ranking for policy, ranking in kept)  # another rule than the ranking's


@pytest.mark.parametrize("backend", BACKENDS)
def test_train_K_is_the_objectives_cutoff_and_K_the_judged_one(mq, backend):
    """By default the objective trains at 2K (K with fairness); eval history, stopping on the
    (standardised) policy and score stay at K."""
    train, vali, test = mq
    fit = {"eval_set": [(vali.X, vali.y, vali.qid)], "early_stopping_rounds": 3}

    def scores(**options):
        ranker = PLRankRanker(backend=backend, K=3, n_estimators=12, **FAST, **options)
        ranker.fit(train.X, train.y, train.qid, **fit)
        ranking, policy = ranker.evals_result_["valid_0"]
        watched = "expected_ndcg@3" if "fairness" in options else "standardized_expected_ndcg@3"
        assert ranking == "ndcg@3" and policy.startswith(watched)
        return ranker.predict(test.X)

    default = scores()
    np.testing.assert_array_equal(default, scores(train_K=6))
    assert not np.array_equal(default, scores(train_K=3))
    fair = {"fairness": "expected-exposure", "fairness_weight": 0.5}
    np.testing.assert_array_equal(scores(**fair), scores(train_K=3, **fair))


@pytest.mark.parametrize("train_K", [0, -1, 2.0, "2K", True, None])
def test_bad_train_K_is_named(mq, train_K):
    train, _, _ = mq
    with pytest.raises(
        ValueError,
        match=re.escape(f'train_K must be "auto" or an integer >= 1, but {train_K!r} is given.'),
    ):
        PLRankRanker(train_K=train_K, n_estimators=2, **FAST).fit(train.X, train.y, train.qid)


def test_no_eval_set_means_no_history(mq):
    train, _, _ = mq
    ranker = PLRankRanker(backend="lightgbm", n_estimators=3, **FAST).fit(
        train.X, train.y, train.qid
    )
    assert ranker.evals_result_ == {} and ranker.best_iteration_ is None
    assert ranker.booster_.current_iteration() == 3


def test_the_options_are_checked_once_per_fit(mq, monkeypatch):
    """One PLRankOptions serves the plan and the checks of the training and eval sets."""
    from gbdt_plrank._training.options import PLRankOptions

    built = []
    checked = PLRankOptions.checked.__func__
    monkeypatch.setattr(
        PLRankOptions, "checked", classmethod(lambda cls, **o: built.append(o) or checked(cls, **o))
    )
    train, vali, _ = mq
    PLRankRanker(n_estimators=2, **FAST).fit(
        train.X, train.y, train.qid, eval_set=[(vali.X, vali.y, vali.qid)] * 2
    )
    assert len(built) == 1


def test_feature_importances(fitted):
    imp = fitted.feature_importances_
    assert imp.shape == (46,) and (imp >= 0).all()
    assert imp.sum() == pytest.approx(1.0)


def test_nan_in_X_is_missing(mq):
    train, _, test = mq
    X = train.X.toarray()
    X[::7, 3] = np.nan
    for backend in BACKENDS:
        ranker = PLRankRanker(backend=backend, n_estimators=3, **FAST).fit(X, train.y, train.qid)
        assert np.isfinite(ranker.predict(np.where(test.X.toarray() > 0.5, np.nan, 0.0))).all()


def test_infinite_X_is_named(mq):
    train, vali, _ = mq
    X = train.X.toarray()
    X[4, 2] = -np.inf
    for data in (X, sp.csr_matrix(X)):
        with pytest.raises(
            ValueError,
            match=r"X must hold finite numbers, or NaN for a missing "
            r"value, but X\[4, 2\] is -inf",
        ):
            PLRankRanker(n_estimators=2, **FAST).fit(data, train.y, train.qid)
    with pytest.raises(ValueError, match=r"but X\[4, 2\] is -inf"):
        PLRankRanker(n_estimators=2, **FAST).fit(
            train.X, train.y, train.qid, eval_set=[(X[: vali.y.size], vali.y, vali.qid)]
        )


def _frame(X) -> pd.DataFrame:
    return pd.DataFrame(X.toarray(), columns=[f"feature {j}" for j in range(X.shape[1])])


@pytest.mark.parametrize("backend", BACKENDS)
def test_feature_names_reach_the_booster_and_its_saved_model(backend, mq, tmp_path):
    """A DataFrame's column names are the booster's feature names (as XGBRanker / LGBMRanker
    keep them); the model is the one of the same values without names."""
    train, vali, test = mq
    frame = _frame(train.X)
    options = {"backend": backend, "n_estimators": 5, "learning_rate": 0.3, **FAST}
    named = PLRankRanker(**options).fit(
        frame, train.y, train.qid, eval_set=[(_frame(vali.X), vali.y, vali.qid)]
    )
    plain = PLRankRanker(**options).fit(
        train.X.toarray(), train.y, train.qid, eval_set=[(vali.X.toarray(), vali.y, vali.qid)]
    )
    columns = list(frame.columns)
    np.testing.assert_array_equal(named.feature_names_in_, columns)
    assert not hasattr(plain, "feature_names_in_")
    if backend == "xgboost":
        path = tmp_path / "model.json"
        named.booster_.save_model(path)
        loaded = xgboost.Booster(model_file=path)
        assert named.booster_.feature_names == loaded.feature_names == columns
        assert set(named.booster_.get_score()) <= set(columns)
    else:
        path = tmp_path / "model.txt"
        named.booster_.save_model(path)
        loaded = lightgbm.Booster(model_file=path)
        spaced = [c.replace(" ", "_") for c in columns]  # LightGBM's rule for names
        assert named.booster_.feature_name() == loaded.feature_name() == spaced
    np.testing.assert_array_equal(named.feature_importances_, plain.feature_importances_)
    np.testing.assert_array_equal(named.predict(_frame(test.X)), plain.predict(test.X.toarray()))
    renamed = _frame(test.X).rename(columns={"feature 0": "other"})
    with pytest.raises(ValueError, match="The feature names should match those that were passed"):
        named.predict(renamed)


def test_a_categorical_or_string_column_is_named(mq):
    train, _, _ = mq
    frame = _frame(train.X)
    frame["colour"] = pd.Categorical(np.where(train.y > 0, "red", "blue"))
    with pytest.raises(
        ValueError, match="column 'colour' has dtype category: encode it as numbers"
    ):
        PLRankRanker(n_estimators=2, **FAST).fit(frame, train.y, train.qid)
    frame["colour"] = frame["colour"].astype(str)
    with pytest.raises(
        ValueError, match=r"X must have numeric columns .* column 'colour' has dtype"
    ):
        PLRankRanker(n_estimators=2, **FAST).fit(frame, train.y, train.qid)


def _with_qid(split: Split) -> pd.DataFrame:
    """The split's features and, last, its query ids as the column ``"qid"``."""
    return _frame(split.X).assign(qid=split.qid)


def test_a_query_id_column_is_read_by_name_and_never_a_feature(mq):
    """group="qid" takes the DataFrame's column as the query ids and out of the features, in fit,
    the eval sets, predict, score and the policy's methods: the model of the ids given apart."""
    train, vali, test = mq
    options = {"n_estimators": 5, "learning_rate": 0.3, "stopping_metric": "policy", **FAST}
    plain = PLRankRanker(**options).fit(
        _frame(train.X), train.y, train.qid, eval_set=[(_frame(vali.X), vali.y, vali.qid)]
    )
    by_name = PLRankRanker(**options).fit(
        _with_qid(train), train.y, "qid", eval_set=[(_with_qid(vali), vali.y, "qid")]
    )
    assert by_name.group_column_ == "qid" and plain.group_column_ is None
    assert by_name.n_features_in_ == 46 and "qid" not in by_name.feature_names_in_
    assert by_name.evals_result_ == plain.evals_result_
    framed = _with_qid(test)
    expected = plain.predict(_frame(test.X))
    np.testing.assert_array_equal(by_name.predict(framed), expected)  # the column is dropped
    np.testing.assert_array_equal(by_name.predict(_frame(test.X)), expected)
    assert by_name.score(framed, test.y, "qid") == plain.score(_frame(test.X), test.y, test.qid)
    assert by_name.score(framed, test.y, test.qid) == by_name.score(framed, test.y, "qid")
    policy = {"n_samples": 5, "random_state": 0}
    assert by_name.expected_metric(framed, test.y, "qid", **policy) == plain.expected_metric(
        _frame(test.X), test.y, test.qid, **policy
    )
    np.testing.assert_array_equal(
        by_name.expected_exposure(framed, "qid", **policy),
        plain.expected_exposure(_frame(test.X), test.qid, **policy),
    )
    for got, want in zip(
        by_name.sample_rankings(framed, "qid", **policy),
        plain.sample_rankings(_frame(test.X), test.qid, **policy),
    ):
        np.testing.assert_array_equal(got, want)
    # a model fitted without the column refuses it as an unseen feature (scikit-learn's check)
    with pytest.raises(ValueError, match=r"Feature names unseen at fit time:\n- qid"):
        plain.predict(framed)


def test_query_ids_left_in_X_or_a_bad_column_name_are_refused_saying_how(mq):
    train, _, _ = mq
    frame = _with_qid(train)
    ranker = PLRankRanker(n_estimators=2, **FAST)
    left_in = re.escape(
        "X still holds the query ids as its column 'qid', which would be a feature: pass "
        "group='qid' (the column is then read as the query ids and left out of the features), "
        "or drop it from X, X.drop(columns='qid')."
    )
    for ids in (frame["qid"], train.qid, frame["qid"].rename("query")):
        with pytest.raises(ValueError, match=left_in):
            ranker.fit(frame, train.y, ids)
    renamed = frame.rename(columns={"qid": "session"})
    with pytest.raises(ValueError, match=left_in.replace("qid", "session")):
        ranker.fit(renamed, train.y, renamed["session"])
    with pytest.raises(
        ValueError,
        match=re.escape(
            "group='query' must name a column of X, but X has no column 'query' (its columns: "
            "'feature 0', 'feature 1',"
        ),
    ):
        ranker.fit(frame, train.y, "query")
    with pytest.raises(
        ValueError,
        match=re.escape(
            "group='qid' names a column, which needs X to be a DataFrame, but X is a "
            "scipy.sparse._csr.csr_matrix: pass the query ids themselves, group=qid."
        ),
    ):
        ranker.fit(train.X, train.y, "qid")
    with pytest.raises(
        ValueError,
        match=re.escape(
            "fit needs the query groups, but group is None, which would make all rows one query"
        ),
    ) as missing:
        ranker.fit(frame, train.y)
    assert "X has a column 'qid': group='qid' reads the query ids from it." in str(missing.value)
    with pytest.raises(
        ValueError,
        match=re.escape(
            f"group must be a sequence, per-row query ids (length {train.y.size}) or group sizes, "
            f"but the single value 7 is given."
        ),
    ):
        ranker.fit(train.X, train.y, 7)
    with pytest.raises(ValueError, match=r"group must be a sequence, .* the single value 'qid'"):
        ndcg(train.y, train.y, "qid")


def test_fit_score_and_expected_metric_need_the_query_groups(fitted, mq):
    """Without group, the ranker refuses to train or judge all rows as one query, naming
    metadata routing and its recipe; the policy's rankings and exposures read None as one query."""
    train, vali, test = mq
    ranker = PLRankRanker(n_estimators=2, **FAST)
    routing = (
        "In GridSearchCV, cross_validate or cross_val_score, route the query ids with "
        "scikit-learn's metadata routing: sklearn.set_config(enable_metadata_routing=True); "
        "ranker.set_fit_request(group='groups').set_score_request(group='groups')"
    )
    for method, call in [
        ("fit", lambda: ranker.fit(train.X, train.y)),
        ("score", lambda: fitted.score(test.X, test.y)),
        ("expected_metric", lambda: fitted.expected_metric(test.X, test.y, n_samples=2)),
    ]:
        with pytest.raises(
            ValueError, match=f"{method} needs the query groups, but group is None"
        ) as err:
            call()
        assert routing in str(err.value) and "group=np.zeros(n_rows)" in str(err.value)
    for eval_set in ([(vali.X, vali.y)], [(vali.X, vali.y, None)]):
        with pytest.raises(
            ValueError,
            match=r"eval_set\[0\] (must be a tuple \(X, y, group\)|"
            r"needs the query groups of its rows)",
        ):
            ranker.fit(train.X, train.y, train.qid, eval_set=eval_set)
    # all rows as one query, when asked for
    n = test.y.size
    assert fitted.score(test.X, test.y, np.zeros(n)) == fitted.score(test.X, test.y, [n])
    assert fitted.score(test.X, test.y, [n]) == ndcg(test.y, fitted.predict(test.X), k=5)
    (one,) = fitted.sample_rankings(test.X[:7], n_samples=2)
    assert one.shape == (2, 5)


def test_model_selection_without_routing_is_refused(mq):
    """The issue's reproduction: GroupKFold gets the query ids, fit and score do not."""
    train, _, _ = mq
    ranker = PLRankRanker(n_estimators=2, **FAST)
    search = GridSearchCV(ranker, {"learning_rate": [0.1, 0.3]}, cv=GroupKFold(3))
    with pytest.raises(ValueError, match="All the 6 fits failed") as err:
        search.fit(train.X, train.y, groups=train.qid)
    assert "fit needs the query groups" in str(err.value)
    assert "set_fit_request(group='groups')" in str(err.value)
    with pytest.raises(ValueError, match="All the 3 fits failed"):
        cross_val_score(ranker, train.X, train.y, groups=train.qid, cv=GroupKFold(3))


# --------------------------------------------------------------------------------------------
# Group rules, row order, seeds
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("backend", BACKENDS)
def test_row_order_and_query_order_do_not_change_the_model(backend, mq):
    """Whole queries shuffled or interleaved: the same model; a query's own rows reordered:
    another draw of the same random_state (the documented contract of random_state)."""
    train, _, test = mq

    def fit(rows, group):
        ranker = PLRankRanker(backend=backend, n_estimators=8, **FAST)
        return ranker.fit(train.X[rows], train.y[rows], group=group)

    everything = np.arange(train.y.shape[0])
    reference = fit(everything, train.qid).predict(test.X)
    perm = _query_preserving_shuffle(train.qid, seed=1)
    assert not np.array_equal(train.qid[perm], np.sort(train.qid[perm]))  # really interleaved
    shuffled = fit(perm, train.qid[perm])
    np.testing.assert_array_equal(shuffled.predict(test.X), reference)
    # group sizes of the grouped rows give the same model as the ids
    sizes = fit(everything, train.group_sizes)
    np.testing.assert_array_equal(sizes.predict(test.X), reference)
    # outputs come back in the caller's row order
    test_perm = _query_preserving_shuffle(test.qid, seed=2)
    np.testing.assert_array_equal(shuffled.predict(test.X[test_perm]), reference[test_perm])
    assert shuffled.score(test.X[test_perm], test.y[test_perm], test.qid[test_perm]) == (
        shuffled.score(test.X, test.y, test.group_sizes)
    )
    # the rows of each query in another order: the rankings are drawn over a query's rows in
    # their order, so the same random_state draws others (as the docs say), the same ones again
    # for the same order
    ptr = train.group_ptr
    within = np.concatenate([np.arange(a, b)[::-1] for a, b in itertools.pairwise(ptr)])
    reordered = fit(within, train.qid[within]).predict(test.X)
    assert not np.array_equal(reordered, reference)
    np.testing.assert_array_equal(fit(within, train.qid[within]).predict(test.X), reordered)


@pytest.mark.parametrize("backend", BACKENDS)
def test_random_state(backend, mq):
    train, _, test = mq

    def fit(seed):
        ranker = PLRankRanker(backend=backend, n_estimators=5, N=10, n_jobs=1, random_state=seed)
        return ranker.fit(train.X, train.y, train.qid).predict(test.X)

    np.testing.assert_array_equal(fit(3), fit(3))
    np.testing.assert_array_equal(fit(np.random.RandomState(3)), fit(np.random.RandomState(3)))
    assert not np.array_equal(fit(3), fit(4))


@pytest.mark.parametrize(
    "options",
    [
        {"backend": "xgboost"},
        {"backend": "lightgbm", "fairness": "expected-exposure", "stopping_metric": "policy"},
        {"backend": "xgboost", "metric": "precision", "stopping_metric": "policy"},
    ],
    ids=["ndcg", "fair", "precision"],
)
def test_a_cutoff_beyond_the_longest_query_costs_what_the_longest_query_costs(
    options, little_memory
):
    """K=10**9 on 160 rows asked for arrays of 2*10**9 rank weights; every array sized by a
    cut-off now follows min(K, longest query), and since a query of D documents is ranked to
    min(K, D), the results are those of K = the longest query (10)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(160, 5))
    y = np.clip(np.round(X[:, 0] + rng.normal(0, 0.5, 160) + 1), 0, 3)
    qid = np.repeat(np.arange(16), 10)
    settings = {"n_estimators": 4, "min_child_weight": 0.01, **FAST, **options}
    policy = {"n_samples": 4, "random_state": 0}

    def run(K):
        ranker = PLRankRanker(K=K, **settings).fit(
            X, y, qid, eval_set=[(X[:80], y[:80], qid[:80])], early_stopping_rounds=10
        )
        history = [values for _, values in sorted(ranker.evals_result_["valid_0"].items())]
        return (
            ranker.predict(X),
            history,
            ranker.score(X, y, qid),
            ranker.expected_metric(X, y, qid, **policy),
            ranker.expected_exposure(X, qid, **policy),
            ranker.sample_rankings(X, qid, **policy)[0],
        )

    with little_memory():  # 2 * 10**9 float64 rank weights would need 15 GiB
        huge = run(10**9)
    longest = run(10)
    assert huge[1] == longest[1] and huge[2] == longest[2] and huge[3] == longest[3]
    for got, want in zip(huge[:1] + huge[4:], longest[:1] + longest[4:]):
        np.testing.assert_array_equal(got, want)
    assert huge[5].shape == (4, 10)


# --------------------------------------------------------------------------------------------
# Persistence
# --------------------------------------------------------------------------------------------
def _native_roundtrip(booster, tmp_path, X):
    """Raw predictions of the booster after the library's own save and load."""
    if isinstance(booster, xgboost.Booster):
        path = tmp_path / "model.ubj"
        booster.save_model(path)
        return xgboost.Booster(model_file=path).predict(xgboost.DMatrix(X), output_margin=True)
    path = tmp_path / "model.txt"
    booster.save_model(path)
    from_file = lightgbm.Booster(model_file=path).predict(X, raw_score=True)
    from_str = lightgbm.Booster(model_str=booster.model_to_string()).predict(X, raw_score=True)
    np.testing.assert_array_equal(from_file, from_str)
    return from_file


def test_pickle_and_native_save_load_round_trip(fitted, mq, tmp_path):
    _, _, test = mq
    pred = fitted.predict(test.X)
    clone = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_array_equal(clone.predict(test.X), pred)
    assert clone.best_iteration_ == fitted.best_iteration_
    native = _native_roundtrip(fitted.booster_, tmp_path, test.X)
    np.testing.assert_array_equal(np.asarray(native, dtype=np.float64), pred)


# --------------------------------------------------------------------------------------------
# The policy: sampled rankings, exposure, expected metric
# --------------------------------------------------------------------------------------------
def test_sample_rankings(fitted, mq):
    _, _, test = mq
    perm = _query_preserving_shuffle(test.qid, seed=3)
    X, qid = test.X[perm], test.qid[perm]
    out = fitted.sample_rankings(X, group=qid, n_samples=50, random_state=1)
    first_seen = qid[np.sort(np.unique(qid, return_index=True)[1])]
    assert len(out) == first_seen.shape[0]
    for q, rankings in zip(first_seen, out, strict=True):
        D = int((qid == q).sum())
        assert rankings.shape == (50, min(5, D)) and rankings.dtype == np.int64
        assert (qid[rankings] == q).all()  # row indices into X, of this query
        assert all(np.unique(r).shape[0] == r.shape[0] for r in rankings)  # distinct documents
    again = fitted.sample_rankings(X, group=qid, n_samples=50, random_state=1)
    assert all(np.array_equal(a, b) for a, b in zip(out, again, strict=True))
    other = fitted.sample_rankings(X, group=qid, n_samples=50, random_state=2)
    assert not all(np.array_equal(a, b) for a, b in zip(out, other, strict=True))
    longer = fitted.sample_rankings(X, group=qid, n_samples=2, K=100)
    assert [r.shape[1] for r in longer] == [int((qid == q).sum()) for q in first_seen]
    one_query = fitted.sample_rankings(X[:7], n_samples=3, K=2)
    assert len(one_query) == 1 and one_query[0].shape == (3, 2)
    with pytest.raises(ValueError, match="group 1 has size 0"):  # an empty query is no query
        fitted.sample_rankings(X[:7], [3, 0, 4], n_samples=3)
    sizes = fitted.sample_rankings(X[:7], [3, 4], n_samples=3)
    assert [r.shape for r in sizes] == [(3, 3), (3, 4)]
    assert sorted(np.concatenate([r[0] for r in sizes])) == list(range(7))


def test_first_position_follows_softmax_of_margins(fitted, mq):
    _, _, test = mq
    X = test.X[:6]
    margins = fitted.predict(X)
    p = np.exp(margins - margins.max())
    p /= p.sum()
    S = 20_000
    (top,) = fitted.sample_rankings(X, n_samples=S, K=1, random_state=5)
    freq = np.bincount(top[:, 0], minlength=6) / S
    z = np.abs(freq - p) / np.sqrt(p * (1 - p) / S)
    assert z.max() < 5, (freq, p)


def _theta(K):
    return 1.0 / np.log2(np.arange(2, K + 2))


def test_expected_exposure_is_the_mean_over_sampled_rankings(fitted, mq):
    _, _, test = mq
    perm = _query_preserving_shuffle(test.qid, seed=4)
    X, qid = test.X[perm], test.qid[perm]
    exposure = fitted.expected_exposure(X, group=qid, n_samples=200, random_state=7)
    rankings = fitted.sample_rankings(X, group=qid, n_samples=200, random_state=7)
    expected = np.zeros(X.shape[0])
    for r in rankings:
        np.add.at(expected, r, np.broadcast_to(_theta(r.shape[1]), r.shape))
    np.testing.assert_allclose(exposure, expected / 200, rtol=1e-12)
    for q in np.unique(qid):  # every query hands out the same total exposure
        D = int((qid == q).sum())
        assert exposure[qid == q].sum() == pytest.approx(_theta(min(5, D)).sum())


def _exact_policy(margins, labels, K):
    """Exact E and Var of NDCG@K, and E of the exposure, by enumerating every ranking."""
    e = np.exp(margins - margins.max())
    D = len(e)
    k = min(K, D)
    gains = 2.0**labels - 1
    ideal = (np.sort(gains)[::-1][:k] * _theta(k)).sum()
    mean = second = 0.0
    exposure = np.zeros(D)
    for y in itertools.permutations(range(D), k):
        prob, placed = 1.0, []
        for d in y:  # the remaining weight summed afresh: subtracting cancels at sharp margins
            prob *= e[d] / np.delete(e, placed).sum()
            placed.append(d)
        value = (gains[list(y)] * _theta(k)).sum() / ideal
        mean += prob * value
        second += prob * value**2
        exposure[list(y)] += prob * _theta(k)
    return mean, second - mean**2, exposure


def test_expected_metric_and_exposure_match_exact_enumeration(fitted, mq):
    _, _, test = mq
    first, last = test.qid[0], test.qid[-1]
    rows = np.concatenate(
        [np.flatnonzero(test.qid == first)[:5], np.flatnonzero(test.qid == last)[:4]]
    )
    X, y, qid = test.X[rows], test.y[rows].copy(), test.qid[rows]
    y[[0, 5]] = [2, 1]  # each query has a relevant document
    margins = fitted.predict(X)
    exact_exposure = np.empty(9)
    mean = variance = 0.0
    for q in (first, last):
        m, v, x = _exact_policy(margins[qid == q], y[qid == q], 5)
        mean, variance, exact_exposure[qid == q] = mean + m / 2, variance + v / 4, x
    S = 4000
    se = math.sqrt(variance / S)  # sd of the mean over S draws of the 2-query mean NDCG@5
    est = fitted.expected_metric(X, y, qid, n_samples=S, random_state=0)
    assert abs(est.mean - mean) < 5 * se
    assert est.stderr == pytest.approx(se, rel=0.1)
    exposure = fitted.expected_exposure(X, qid, n_samples=S, random_state=1)
    np.testing.assert_allclose(exposure, exact_exposure, atol=5 * 0.5 / math.sqrt(S))


@pytest.mark.parametrize("temperature", [0.2, 3.0])
def test_temperature_samples_the_policy_of_the_divided_margins(fitted, mq, temperature):
    """Exact enumeration of the policy of margins / T (sharper below 1, flatter above)."""
    _, _, test = mq
    rows = np.flatnonzero(test.qid == test.qid[0])[:5]
    X, y = test.X[rows], test.y[rows].copy()
    y[0] = 2
    margins = fitted.predict(X)
    mean, variance, exposure = _exact_policy(margins / temperature, y, 5)
    plain = _exact_policy(margins, y, 5)[2]
    assert np.abs(exposure - plain).max() > 0.01  # the temperature changes the policy
    S = 4000
    est = fitted.expected_metric(X, y, [5], n_samples=S, random_state=0, temperature=temperature)
    assert abs(est.mean - mean) < 5 * math.sqrt(variance / S)
    got = fitted.expected_exposure(X, n_samples=S, random_state=1, temperature=temperature)
    np.testing.assert_allclose(got, exposure, atol=5 * 0.5 / math.sqrt(S))
    (rankings,) = fitted.sample_rankings(X, n_samples=3, random_state=2, temperature=temperature)
    assert rankings.shape == (3, 5)


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf"), True, "1"])
def test_bad_temperature_is_refused(fitted, mq, bad):
    X = mq[2].X[:5]
    message = re.escape(f"temperature must be a finite number > 0, but {bad!r} is given.")
    for call in (fitted.sample_rankings, fitted.expected_exposure):
        with pytest.raises(ValueError, match=message):
            call(X, n_samples=2, temperature=bad)
    with pytest.raises(ValueError, match=message):
        fitted.expected_metric(X, np.ones(5), n_samples=2, temperature=bad)


# --------------------------------------------------------------------------------------------
# scikit-learn: the common checks, model selection with query groups
# --------------------------------------------------------------------------------------------
class OneQueryPLRankRanker(PLRankRanker):
    """PLRankRanker whose ``fit`` and ``score`` read a missing group as one query: the ranker the
    common checks can fit (:mod:`sklearn_checks`)."""

    def fit(
        self,
        X,
        y,
        group=None,
        *,
        item_groups=None,
        sample_weight=None,
        eval_set=None,
        early_stopping_rounds=None,
    ):
        return super().fit(
            X,
            y,
            one_query(X, group),
            item_groups=item_groups,
            sample_weight=sample_weight,
            eval_set=eval_set,
            early_stopping_rounds=early_stopping_rounds,
        )

    def score(self, X, y, group=None):
        return super().score(X, y, one_query(X, group))


def _checks_that_cannot_apply(estimator: PLRankRanker) -> dict[str, str]:
    """Common checks that cannot pass, with the reason; any other check must pass.

    Not listed because scikit-learn does not run them here: the classifier and regressor checks
    (the ranker's estimator type is None: it scores NDCG@K, not accuracy or R^2) and the
    array-API checks (skipped by scikit-learn unless ``SCIPY_ARRAY_API=1``).
    """
    if not isinstance(estimator, OneQueryPLRankRanker):
        return dict.fromkeys(CHECKS_THAT_FIT + CHECKS_THAT_FIT_WEIGHTED, NO_GROUPS)
    per_row = (
        "sample_weight weighs whole queries (XGBRanker's rule: the PL-Rank objective has no "
        "per-document weights); the check's weights differ within its one query and are refused."
    )
    out = {
        "check_sample_weights_not_overwritten": per_row,
        "check_sample_weight_equivalence_on_dense_data": per_row,
        "check_sample_weight_equivalence_on_sparse_data": per_row,
    }
    if estimator.backend == "lightgbm":
        out["check_fit2d_1sample"] = (
            "LightGBM drops every feature of a one-row dataset (all constant), and with a "
            "callable objective it then stops with 'Check failed: num_features > 0'; the ranker "
            "raises a ValueError saying that no feature can be split on, not the one-sample "
            "wording the check looks for."
        )
    return out


_LIGHTGBM_FOR_THE_CHECKS = {
    "backend": "lightgbm",
    "params": {"min_data_in_leaf": 2, "min_data_in_bin": 1},  # 10-30 rows
}


@parametrize_with_checks(
    [
        PLRankRanker(backend="xgboost", n_estimators=3, N=4, n_jobs=1, random_state=0),
        OneQueryPLRankRanker(backend="xgboost", n_estimators=3, N=4, n_jobs=1, random_state=0),
        OneQueryPLRankRanker(
            n_estimators=3, N=4, n_jobs=1, random_state=0, **_LIGHTGBM_FOR_THE_CHECKS
        ),
    ],
    expected_failed_checks=_checks_that_cannot_apply,
    xfail_strict=True,
)
def test_sklearn_common_checks(estimator, check):
    check(estimator)


@pytest.mark.parametrize("backend", BACKENDS)
def test_model_selection_with_group_kfold(backend, mq):
    """Metadata routing sends the query ids to GroupKFold, to ``fit`` and to ``score``."""
    train, _, _ = mq
    X, y, qid = train.X, train.y, train.qid
    with sklearn.config_context(enable_metadata_routing=True):
        ranker = (
            PLRankRanker(backend=backend, n_estimators=4, learning_rate=0.3, **FAST)
            .set_fit_request(group="groups")  # fit(..., group=) receives the routed `groups`
            .set_score_request(group="groups")
        )
        scores = cross_val_score(ranker, X, y, cv=GroupKFold(3), params={"groups": qid})
        search = GridSearchCV(ranker, {"learning_rate": [0.05, 0.3]}, cv=GroupKFold(3))
        search.fit(X, y, groups=qid)
    by_hand = []
    for fit_rows, test_rows in GroupKFold(3).split(X, y, qid):
        model = PLRankRanker(backend=backend, n_estimators=4, learning_rate=0.3, **FAST)
        model.fit(X[fit_rows], y[fit_rows], group=qid[fit_rows])
        by_hand.append(model.score(X[test_rows], y[test_rows], group=qid[test_rows]))
    np.testing.assert_array_equal(scores, by_hand)
    assert search.cv_results_["mean_test_score"][1] == pytest.approx(np.mean(by_hand))
    assert search.best_params_["learning_rate"] in (0.05, 0.3)


# --------------------------------------------------------------------------------------------
# Bad input: a clear error naming the value and the rule
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("options", "change", "error", "match"),
    [
        ({}, {"y": lambda t: t.y[:-1]}, ValueError, "inconsistent numbers of samples"),
        ({}, {"group": lambda t: np.array([3, 4])}, ValueError, "group must be per-row query ids"),
        (
            {},
            {"y": lambda t: np.where(np.arange(t.y.size) == 3, np.nan, t.y)},
            ValueError,
            "y contains NaN",
        ),
        (
            {},
            {"y": lambda t: np.where(np.arange(t.y.size) == 3, -1.0, t.y)},
            ValueError,
            r"labels must be >= 0, but labels\[3\] is -1.0",
        ),
        (
            {},
            {"y": lambda t: t.y * 20},
            ValueError,
            "labels must be <= 31 with the exponential gain",
        ),
        (
            {"backend": "catboost"},
            {},
            ValueError,
            "backend must be one of 'xgboost', 'lightgbm', but 'catboost' is given",
        ),
        ({"K": 0}, {}, ValueError, "K must be an integer >= 1, but 0 is given"),
        ({"metric": "map"}, {}, ValueError, "metric must be one of 'ndcg', 'dcg', 'precision'"),
        ({"n_estimators": 0}, {}, ValueError, "n_estimators must be an integer >= 1"),
        ({"n_jobs": 0}, {}, ValueError, "n_jobs must be None, a positive or a negative integer"),
        ({"random_state": "seed"}, {}, ValueError, "'seed' cannot be used to seed"),
        ({"params": {"objective": "rank:ndcg"}}, {}, ValueError, "params must not set 'objective'"),
        (
            {"backend": "lightgbm", "params": {"num_iterations": 9}},
            {},
            ValueError,
            "params must not set 'num_iterations'",
        ),
        ({"params": [("eta", 1)]}, {}, ValueError, "params must be None or a dict"),
        (
            {},
            {"early_stopping_rounds": 5},
            ValueError,
            "early_stopping_rounds=5 needs a validation set",
        ),
        (
            {"stopping_metric": "ndcg"},
            {},
            ValueError,
            "stopping_metric must be one of 'auto', 'policy', 'ranking', 'standardized', but "
            "'ndcg' is given",
        ),
        (
            {"sampler": "gumbel"},
            {},
            ValueError,
            "sampler must be one of 'auto', 'tree', 'race', but 'gumbel' is given",
        ),
        (
            {"noise": "sobol"},
            {},
            ValueError,
            "noise must be one of 'lattice', 'independent', but 'sobol' is given",
        ),
        (
            {"query_subsample": 0.0},
            {},
            ValueError,
            r"query_subsample must be a number in \(0, 1\], but 0.0 is given",
        ),
        (
            {"query_subsample": 1.5},
            {},
            ValueError,
            r"query_subsample must be a number in \(0, 1\], but 1.5 is given",
        ),
        (
            {},
            {"eval_set": [(1, 2, 3, 4, 5)]},
            ValueError,
            r"eval_set\[0\] must be a tuple \(X, y, group\)",
        ),
        (
            {"backend": "lightgbm"},
            {"X": lambda t: np.ones(t.X.shape)},
            ValueError,
            "LightGBM finds no feature to split on",
        ),
        (
            {"fairness": "expected-exposure", "fairness_weight": -1.0},
            {},
            ValueError,
            "fairness_weight must be a finite number >= 0, but -1.0 is given",
        ),
        (
            {"fairness": "expected-exposure", "fairness_weight": float("inf")},
            {},
            ValueError,
            "fairness_weight must be a finite number >= 0, but inf is given",
        ),
        (
            {"fairness": "exposure"},
            {},
            ValueError,
            "fairness must be None or one of 'expected-exposure', 'disparity', 'group-disparity', "
            "but 'exposure' is given",
        ),
        (
            {"fairness": "expected-exposure", "metric": "precision"},
            {},
            ValueError,
            "so metric must be one of 'ndcg', 'dcg', but 'precision' is given",
        ),
        (
            {"backend": "lightgbm", "learning_rate": float("nan")},
            {},
            ValueError,
            "learning_rate must be a finite number > 0, but nan is given",
        ),
        (
            {"learning_rate": float("nan")},
            {},
            ValueError,
            "learning_rate must be a finite number > 0, but nan is given",
        ),
        (
            {"backend": "lightgbm", "num_leaves": 1},
            {},
            ValueError,
            "num_leaves must be an integer >= 2, but 1 is given",
        ),
        ({"subsample": 1.5}, {}, ValueError, r"subsample must be a number in \(0, 1\], but 1.5"),
        (
            {"backend": "lightgbm", "reg_lambda": -1.0},
            {},
            ValueError,
            "reg_lambda must be a finite number >= 0, but -1.0 is given",
        ),
        (
            {"fairness": "disparity", "empty_queries": "uniform"},
            {},
            ValueError,
            r"empty_queries='uniform' .* needs fairness='expected-exposure'",
        ),
    ],
)
def test_bad_fit_input(mq, options, change, error, match):
    train, _, _ = mq
    args = {"X": train.X, "y": train.y, "group": train.qid}
    extra = {}
    for key, make in change.items():
        if key in args:
            args[key] = make(train)
        else:
            extra[key] = make
    ranker = PLRankRanker(**{"n_estimators": 2, **FAST, **options})
    with pytest.raises(error, match=match):
        ranker.fit(args["X"], args["y"], group=args["group"], **extra)


@pytest.mark.parametrize("setting", [{"learning_rate": float("nan")}, {"num_leaves": 1}])
def test_tree_settings_have_the_rule_of_the_comparison_trees_table(setting):
    """The ranker and a comparison's [trees] table refuse a tree setting with the same words."""
    with pytest.raises(ValueError) as ranker_error:
        PLRankRanker(backend="lightgbm", **setting)._training(None, None)
    with pytest.raises(ValueError) as table_error:
        validate(TreeSettings, setting, source="the file", prefix="trees")
    assert str(table_error.value) == f"trees.{ranker_error.value}"


def test_unknown_parameter(mq):
    with pytest.raises(TypeError, match="unexpected keyword argument 'max_bin'"):
        PLRankRanker(max_bin=63)
    with pytest.raises(ValueError, match="Invalid parameter 'max_bin'"):
        PLRankRanker().set_params(max_bin=63)
    train, _, _ = mq  # a native key XGBoost does not know reaches the user as its warning
    with pytest.warns(UserWarning, match='Parameters: { "max_dpeth" } are not used'):
        PLRankRanker(n_estimators=1, params={"max_dpeth": 3}, **FAST).fit(
            train.X, train.y, train.qid
        )


def test_methods_need_fit(mq):
    _, _, test = mq
    ranker = PLRankRanker()
    for call in (
        lambda: ranker.predict(test.X),
        lambda: ranker.score(test.X, test.y),
        lambda: ranker.sample_rankings(test.X, n_samples=2),
        lambda: ranker.expected_exposure(test.X, n_samples=2),
        lambda: ranker.expected_metric(test.X, test.y, n_samples=2),
    ):
        with pytest.raises(NotFittedError, match="not fitted yet"):
            call()


def test_bad_input_after_fit(fitted, mq):
    _, _, test = mq
    with pytest.raises(ValueError, match="X has 45 features, but PLRankRanker is expecting 46"):
        fitted.predict(test.X[:, :45])
    with pytest.raises(ValueError, match="group must be per-row query ids"):
        fitted.score(test.X, test.y, group=[1, 2])
    with pytest.raises(ValueError, match="n_samples must be an integer >= 1, but 0 is given"):
        fitted.sample_rankings(test.X, test.qid, n_samples=0)
    with pytest.raises(ValueError, match="K must be an integer >= 1, but -1 is given"):
        fitted.sample_rankings(test.X, test.qid, n_samples=3, K=-1)
    with pytest.raises(
        ValueError, match="n_samples must be an integer >= 2 to estimate a standard error"
    ):
        fitted.expected_metric(test.X, test.y, test.qid, n_samples=1)
    with pytest.raises(ValueError, match="lengths must agree, but X has"):
        fitted.expected_metric(test.X, test.y[:-1], test.qid, n_samples=3)
    with pytest.raises(ValueError, match=r"labels must be >= 0, but labels\[0\] is -2.0"):
        fitted.expected_metric(test.X, -2 * np.ones(test.y.size), test.qid, n_samples=3)


@pytest.mark.parametrize("backend", BACKENDS)
def test_linear_gain_reaches_the_evaluation_and_the_policy_stopping(backend, mq):
    """Grades up to 40 (too large for 2**label - 1) with gain="linear", stopped on the policy of
    the standardised margins (the default)."""
    from gbdt_plrank._ranking_metric import RankingMetric
    from gbdt_plrank._training.evaluation import (
        STANDARD_SPREAD,
        STANDARDIZED_SAMPLES,
        PolicyEvaluator,
    )
    from gbdt_plrank._util.seeds import seeds_from

    train, vali, _ = mq
    y_train, y_vali = train.y * 20, vali.y * 20
    ranker = PLRankRanker(backend=backend, gain="linear", n_estimators=6, **FAST)
    ranker.fit(
        train.X, y_train, train.qid, eval_set=[(vali.X, y_vali, vali.qid)], early_stopping_rounds=2
    )
    history = ranker.evals_result_["valid_0"]
    margins = ranker.predict(vali.X)
    best = ranker.best_iteration_
    assert ranker.score(vali.X, y_vali, vali.qid) == pytest.approx(
        history["ndcg@5"][best], abs=1e-6
    )
    assert ranker.score(vali.X, y_vali, vali.qid) == ndcg(
        y_vali, margins, vali.qid, k=5, gain="linear"
    )
    value = PolicyEvaluator(
        RankingMetric("ndcg", 5, "linear"),
        None,
        Split(None, y_vali, vali.qid),
        n_samples=STANDARDIZED_SAMPLES,
        seed=seeds_from(0, 2)[0],
        n_jobs=1,
    )
    standardized = value.per_query(margins * (STANDARD_SPREAD / margins.std())).mean()
    assert history["standardized_expected_ndcg@5"][best] == pytest.approx(standardized, abs=1e-5)


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_ranker_is_judged_reported_and_stopped_on_its_own_metric(backend, mq):
    """metric="precision": eval history, policy stopping and score are precision@K's."""
    from gbdt_plrank.metrics import precision_at_k

    train, vali, test = mq
    ranker = PLRankRanker(backend=backend, metric="precision", n_estimators=6, **FAST)
    ranker.fit(
        train.X, train.y, train.qid, eval_set=[(vali.X, vali.y, vali.qid)], early_stopping_rounds=2
    )
    history = ranker.evals_result_["valid_0"]
    assert list(history) == ["precision@5", "standardized_expected_precision@5"]
    margins = ranker.predict(vali.X)
    expected = precision_at_k(vali.y, margins, vali.qid, k=5)
    assert history["precision@5"][ranker.best_iteration_] == pytest.approx(expected, abs=1e-6)
    assert ranker.score(test.X, test.y, test.qid) == precision_at_k(
        test.y, ranker.predict(test.X), test.qid, k=5
    )


def test_a_model_without_a_split_warns_with_what_to_do(mq):
    """PL-Rank's Hessians are small: the default min_child_weight=1 on 5 queries gives a
    model of single-leaf trees, which fit says, naming the setting to lower."""
    train, _, _ = mq
    rows = int(train.group_ptr[5])
    X, y, qid = train.X[:rows], train.y[:rows], train.qid[:rows]
    with pytest.warns(
        UserWarning,
        match=r"model has no split.* min_child_weight=1\.0 \(the default\): lower it, "
        r"e\.g\. to 0\.01",
    ):
        flat = PLRankRanker(n_estimators=3, **FAST).fit(X, y, qid)
    assert np.ptp(flat.predict(X)) == 0.0
    with pytest.warns(UserWarning, match=r"min_child_weight \(the xgboost default, 1\)"):
        PLRankRanker(n_estimators=3, min_child_weight=None, **FAST).fit(X, y, qid)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        split = PLRankRanker(n_estimators=3, min_child_weight=0.01, **FAST).fit(X, y, qid)
    assert split.feature_importances_.any()


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_model_without_a_split_from_a_tiny_query_subsample_names_it(backend, mq):
    """query_subsample so small that no round keeps a query: every gradient is 0, and the
    warning names query_subsample (not min_child_weight, already small here)."""
    train, _, _ = mq
    with pytest.warns(
        UserWarning,
        match=r"model has no split.* query_subsample=0\.001 kept no "
        r"query in any of the \d+ rounds \(each of the 40 "
        r"training queries .* raise query_subsample",
    ) as caught:
        PLRankRanker(
            backend=backend, n_estimators=3, query_subsample=0.001, min_child_weight=0.001, **FAST
        ).fit(train.X, train.y, train.qid)
    assert "min_child_weight" not in str(caught[0].message)
    assert caught[0].filename == __file__  # points at the fit call


IDLE = [
    (
        {"min_rounds": 5},
        "min_rounds=5 has no effect in this fit: it applies to early stopping, "
        "and fit got no early_stopping_rounds.",
    ),
    ({"min_rounds": 0}, "min_rounds=0 has no effect"),
    (
        {"min_delta": 0.01},
        "min_delta=0.01 has no effect in this fit: it applies to early "
        "stopping, and fit got no early_stopping_rounds.",
    ),
    (
        {"patience_rate": 1.0},
        "patience_rate=1.0 has no effect in this fit: it applies to "
        "early stopping, and fit got no early_stopping_rounds.",
    ),
    (
        {"stopping_metric": "policy"},
        "stopping_metric='policy' has no effect in this fit: it "
        "names what the eval sets are scored by, and fit got no "
        "eval_set.",
    ),
    (
        {"fairness_weight": 2.0},
        "fairness_weight=2.0 has no effect in this fit: it weighs the "
        "fairness loss, and fairness is None.",
    ),
]


@pytest.mark.parametrize(("given", "message"), IDLE)
def test_a_parameter_without_effect_in_the_fit_warns(mq, given, message) -> None:
    """As scikit-learn's estimators do: a UserWarning naming the parameter, its value and why it
    does nothing, pointing at the fit call; none once the fit uses it, none at the defaults."""
    train, vali, _ = mq
    fit = {"group": train.qid}
    with pytest.warns(UserWarning, match=re.escape(message)) as caught:
        PLRankRanker(n_estimators=2, min_child_weight=0.01, **given, **FAST).fit(
            train.X, train.y, **fit
        )
    assert len(caught) == 1 and caught[0].filename == __file__
    used = {"eval_set": [(vali.X, vali.y, vali.qid)], "early_stopping_rounds": 2}
    extra = {"fairness": "expected-exposure"} if "fairness_weight" in given else {}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        PLRankRanker(n_estimators=2, min_child_weight=0.01, **given, **extra, **FAST).fit(
            train.X, train.y, **fit, **used
        )
        PLRankRanker(
            n_estimators=2, min_child_weight=0.01, min_delta=0, min_rounds="auto", **FAST
        ).fit(train.X, train.y, **fit)


@pytest.mark.parametrize("backend", BACKENDS)
def test_sample_weight_weighs_queries(backend, mq):
    """Query weights reach the objective: with weight 0 on every query but one, the model
    ranks that query as a model trained on it alone (the scores up to a shift); one weight per
    row equals one per query; other weights give another model."""
    train, _, test = mq
    X, y, qid = train.X.toarray(), train.y, train.qid
    options = {
        "backend": backend,
        "n_estimators": 3,
        "min_child_weight": 0.0,
        "reg_lambda": 0.0,
        "learning_rate": 0.3,
        **FAST,
    }
    if backend == "lightgbm":
        options["params"] = {"min_data_in_leaf": 1, "min_data_in_bin": 1}
    weights = np.where(qid == qid[0], 1.0, 0.0)  # the first query alone
    first = PLRankRanker(**options).fit(X, y, qid, sample_weight=weights)
    rows = qid == qid[0]
    alone = PLRankRanker(**options).fit(X[rows], y[rows], qid[rows])
    np.testing.assert_allclose(
        first.predict(X[rows]) - first.predict(X[rows])[0],
        alone.predict(X[rows]) - alone.predict(X[rows])[0],
        atol=1e-6,
    )
    with pytest.raises(ValueError, match="sample_weight must be > 0 for at least one query"):
        PLRankRanker(**options).fit(X, y, qid, sample_weight=np.zeros(y.size))
    n_queries = np.unique(qid).size
    w = np.random.default_rng(0).integers(1, 4, n_queries).astype(float)
    per_query = PLRankRanker(**options).fit(X, y, qid, sample_weight=w)
    per_row = PLRankRanker(**options).fit(
        X, y, qid, sample_weight=w[np.searchsorted(np.unique(qid), qid)]
    )
    plain = PLRankRanker(**options).fit(X, y, qid)
    np.testing.assert_array_equal(per_query.predict(test.X), per_row.predict(test.X))
    assert not np.array_equal(per_query.predict(test.X), plain.predict(test.X))
    with pytest.raises(ValueError, match="weights must be one per query"):
        PLRankRanker(**options).fit(X, y, qid, sample_weight=np.ones(3))
    with pytest.raises(ValueError, match=r"weights must be finite and >= 0, but weight 1 is -1.0"):
        PLRankRanker(**options).fit(
            X, y, qid, sample_weight=np.r_[1.0, -1.0, np.ones(n_queries - 2)]
        )
    with pytest.raises(ValueError, match=r"weigh whole queries .* row 1 of query 0 has weight 1.0"):
        PLRankRanker(**options).fit(X, y, qid, sample_weight=np.arange(y.size, dtype=float))


# --------------------------------------------------------------------------------------------
# verbose: the boosters' own log of the eval sets, a bar without them, quiet by default
# --------------------------------------------------------------------------------------------
#: The first logged line of each booster with verbose=2: XGBoost counts rounds from 0, LightGBM
#: from 1 (and logs the watched metric first).
FIRST_LOG_LINE = {
    "xgboost": re.compile(
        r"^\[0\]\tvalid_0-ndcg@5:0\.\d{5}\tvalid_0-standardized_expected_ndcg@5:0\.\d{5}$"
    ),
    "lightgbm": re.compile(
        r"^\[2\]\tvalid_0's standardized_expected_ndcg@5: 0\.\d+\tvalid_0's ndcg@5: 0\.\d+$"
    ),
}


@pytest.mark.parametrize("backend", BACKENDS)
def test_verbose_reports_the_eval_sets_every_n_rounds(mq, backend, capsys) -> None:
    train, vali, _ = mq
    fit = {"group": train.qid, "eval_set": [(vali.X, vali.y, vali.qid)]}
    PLRankRanker(backend=backend, n_estimators=6, **FAST).fit(train.X, train.y, **fit)
    assert capsys.readouterr() == ("", ""), "quiet by default"
    PLRankRanker(backend=backend, n_estimators=6, verbose=2, **FAST).fit(train.X, train.y, **fit)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == {"xgboost": 4, "lightgbm": 3}[backend], lines  # XGBoost adds the last
    assert FIRST_LOG_LINE[backend].match(lines[0]), lines
    PLRankRanker(backend=backend, n_estimators=3, verbose=True, **FAST).fit(train.X, train.y, **fit)
    assert len(capsys.readouterr().out.splitlines()) == 3


@pytest.mark.parametrize("backend", BACKENDS)
def test_verbose_without_eval_set_shows_a_progress_bar(mq, backend, capsys) -> None:
    train, _, _ = mq
    PLRankRanker(backend=backend, n_estimators=4, verbose=True, **FAST).fit(
        train.X, train.y, group=train.qid
    )
    printed = capsys.readouterr()
    assert printed.out == "" and "rounds: 100%" in printed.err and "4/4" in printed.err
    PLRankRanker(backend=backend, n_estimators=4, **FAST).fit(train.X, train.y, group=train.qid)
    assert capsys.readouterr() == ("", "")


@pytest.mark.parametrize("verbose", [1.5, "yes", None])
def test_a_bad_verbose_names_the_value_and_the_rule(mq, verbose) -> None:
    train, _, _ = mq
    with pytest.raises(
        ValueError,
        match=re.escape(
            f"verbose must be True, False or an integer (report every N >= 1 rounds; 0 or a "
            f"negative integer such as LightGBM's -1 is quiet), but {verbose!r} is given."
        ),
    ):
        PLRankRanker(verbose=verbose, **FAST).fit(train.X, train.y, group=train.qid)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_negative_verbose_is_quiet_as_lightgbms(mq, backend, capsys) -> None:
    """LightGBM's quiet verbose=-1 is accepted, and quiet: no log, no progress bar."""
    train, vali, _ = mq
    for eval_set in (None, [(vali.X, vali.y, vali.qid)]):
        PLRankRanker(backend=backend, n_estimators=3, verbose=-1, **FAST).fit(
            train.X, train.y, group=train.qid, eval_set=eval_set
        )
        assert capsys.readouterr() == ("", "")


# --------------------------------------------------------------------------------------------
# Queries without a relevant document: one convention (1, as the boosters), an option for both
# --------------------------------------------------------------------------------------------
def test_score_and_expected_metric_take_the_metrics_empty_convention(fitted, mq) -> None:
    _, _, test = mq
    scores = fitted.predict(test.X)
    has_relevant = np.bincount(np.unique(test.qid, return_inverse=True)[1], test.y > 0) > 0
    assert not has_relevant.all() and has_relevant.any()  # the slice has both kinds
    for empty in (1.0, 0.0, math.nan):
        assert fitted.score(test.X, test.y, group=test.qid, empty=empty) == ndcg(
            test.y, scores, test.qid, k=fitted.K, empty=empty
        )
    assert fitted.score(test.X, test.y, group=test.qid) == ndcg(test.y, scores, test.qid, k=5)
    # Each sample's mean over all queries mixes the others' mean with 1 per empty query.
    share = 1 - has_relevant.mean()
    kw = {"group": test.qid, "n_samples": 8, "random_state": 3}
    everyone = fitted.expected_metric(test.X, test.y, **kw)
    relevant_only = fitted.expected_metric(test.X, test.y, **kw, empty=math.nan)
    assert everyone.mean == pytest.approx(share + (1 - share) * relevant_only.mean, abs=1e-12)
    with pytest.raises(ValueError, match=r"empty must be a number in \[0, 1\] or nan, but 2 is"):
        fitted.score(test.X, test.y, group=test.qid, empty=2)


def test_a_ranker_pickled_before_the_estimator_base_moved_still_loads() -> None:
    """tests/data/plrank_ranker_xgboost.pkl: a PLRankRanker (K=3, N=4, 3 rounds of depth 2,
    random_state=0) fitted on the data below and pickled by the version before this one, while
    ``PolicyRanker`` lived in ``gbdt_plrank.ranker`` and before ``verbose`` existed. A pickle
    names the concrete class only; it loads, predicts the margins it predicted then, gets the
    defaults of the parameters it did not have (``get_params`` and a refit work), and the refit
    is the same model."""
    from pathlib import Path

    import gbdt_plrank._estimator as estimator
    import gbdt_plrank.ranker as ranker_module

    data = (Path(__file__).parent / "data" / "plrank_ranker_xgboost.pkl").read_bytes()
    assert b"PolicyRanker" not in data
    loaded = pickle.loads(data)
    assert type(loaded) is PLRankRanker
    assert ranker_module.PolicyRanker is estimator.PolicyRanker  # the old import path stays
    rng = np.random.default_rng(0)
    X = rng.normal(size=(24, 3))
    then = [
        0.02391284517943859,
        0.02391284517943859,
        -0.02786414697766304,
        -0.02786414697766304,
        -0.02786414697766304,
        -0.02786414697766304,
    ]
    np.testing.assert_array_equal(loaded.predict(X[:6]), then)
    y = rng.integers(0, 3, size=24).astype(float)
    qid = np.repeat(np.arange(4), 6)
    assert loaded.get_params()["verbose"] == PLRankRanker().verbose  # not in the old pickle
    assert loaded.get_params()["deep_weight"] == 1.0  # nor this, which trained at 1.0 then
    refit = PLRankRanker(**loaded.get_params()).fit(X, y, qid)
    np.testing.assert_array_equal(refit.predict(X), loaded.predict(X))  # the same training


def test_a_subclass_with_a_parameter_of_its_own_keeps_every_parameter() -> None:
    """``__init__`` stores its arguments through ``PolicyRanker._store``: a subclass that adds a
    parameter and passes the rest to ``super().__init__`` still gets and clones all of them."""
    from sklearn.base import clone

    class Tagged(PLRankRanker):
        def __init__(self, *, tag: str = "a", **kwargs) -> None:
            self.tag = tag
            super().__init__(**kwargs)

        @classmethod
        def _get_param_names(cls) -> list[str]:
            return sorted({"tag", *PLRankRanker._get_param_names()})

    ranker = Tagged(tag="b", K=7, n_estimators=3)
    assert (ranker.tag, ranker.K, ranker.n_estimators, ranker.backend) == ("b", 7, 3, "xgboost")
    copy = clone(ranker)
    assert copy.get_params() == ranker.get_params()
    assert set(vars(PLRankRanker(K=2))) == set(PLRankRanker._get_param_names())
