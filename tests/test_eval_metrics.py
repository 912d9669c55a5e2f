"""The objective's evaluation metrics inside xgboost.train, lightgbm.train and LGBMRanker.

``obj.expected_metric`` as ``custom_metric`` / ``feval``: the boosters' own early stopping stops
on the policy's value. Each kept round is checked against the value recomputed from the margins
of every round by the one owner of the policy's value (:class:`PolicyEvaluator`).
"""

from __future__ import annotations

import lightgbm
import numpy as np
import pytest
import xgboost
from stopping import rounds_after_best

from gbdt_plrank import metrics, min_rounds_for, plrank_objective
from gbdt_plrank._ranking_metric import RankingMetric
from gbdt_plrank._training.evaluation import PolicyEvaluator
from gbdt_plrank._training.fairness_spec import FairnessSpec
from gbdt_plrank.datasets import Split

ROUNDS, PATIENCE = 60, 3
METRICS = ("ranking_metric", "standardized_metric", "expected_metric")


@pytest.fixture(scope="module")
def splits(data):
    """The first 40 queries to train on, the other 20 to stop on (rows of a query contiguous)."""
    X, y, qid, _ = data
    train, vali = qid < 40, qid >= 40
    return Split(X[train], y[train], qid[train]), Split(X[vali], y[vali], qid[vali])


def _objective(fairness: str | None = None, **options):
    return plrank_objective(
        K=5, N=10, seed=1, n_jobs=1, fairness=fairness, fairness_weight=0.5, **options
    )


def _xgboost(train: Split, vali: Split, objective, *, stop: int | None, metric=None):
    dtrain = xgboost.DMatrix(train.X, train.y, qid=train.qid)
    dvali = xgboost.DMatrix(vali.X, vali.y, qid=vali.qid)
    params = {
        "eta": 0.3,
        "max_depth": 3,
        "nthread": 1,
        "base_score": 0.0,
        "disable_default_eval_metric": 1,
    }
    metric = objective.expected_metric if metric is None else metric
    return xgboost.train(
        params,
        dtrain,
        ROUNDS,
        obj=objective,
        evals=[(dvali, "valid")],
        custom_metric=metric,
        maximize=True,
        early_stopping_rounds=stop,
        verbose_eval=False,
    )


def _lightgbm(train: Split, vali: Split, objective, *, stop: int | None):
    dtrain = lightgbm.Dataset(train.X, train.y, group=train.group_sizes)
    dvali = lightgbm.Dataset(vali.X, vali.y, group=vali.group_sizes, reference=dtrain)
    params = {
        "objective": objective,
        "metric": "None",
        "learning_rate": 0.3,
        "num_leaves": 8,
        "num_threads": 1,
        "verbose": -1,
        "min_data_in_leaf": 5,
    }
    callbacks = [] if stop is None else [lightgbm.early_stopping(stop, verbose=False)]
    # keep_training_booster: every round run stays in the booster (else it is cut at the best)
    return lightgbm.train(
        params,
        dtrain,
        ROUNDS,
        valid_sets=[dvali],
        feval=objective.expected_metric,
        callbacks=callbacks,
        keep_training_booster=True,
    )


def _margins(booster, X, rounds: int) -> np.ndarray:
    if isinstance(booster, xgboost.Booster):
        return booster[:rounds].inplace_predict(X, predict_type="margin").astype(np.float64)
    return booster.predict(X, num_iteration=rounds, raw_score=True)


def _values(full, vali: Split, rounds: int, metric: RankingMetric, fairness) -> list[float]:
    """The policy's value after each round, recomputed from the booster's margins."""
    value = PolicyEvaluator(metric, fairness, Split(None, vali.y, vali.qid), seed=1, n_jobs=1)
    return [float(value.per_query(_margins(full, vali.X, r)).mean()) for r in range(1, rounds + 1)]


@pytest.mark.parametrize("fairness", [None, "expected-exposure", "disparity"])
@pytest.mark.parametrize("library", ["xgboost", "lightgbm"])
def test_boosters_own_early_stopping_stops_on_the_policy(splits, library, fairness):
    train, vali = splits
    fit = _xgboost if library == "xgboost" else _lightgbm
    stopped = fit(train, vali, _objective(fairness), stop=PATIENCE)
    full = fit(train, vali, _objective(fairness), stop=None)  # same seed: the same trees
    run = stopped.num_boosted_rounds() if library == "xgboost" else stopped.current_iteration()
    spec = FairnessSpec(fairness, 0.5) if fairness else None
    values = _values(full, vali, run, RankingMetric("ndcg", 5, "exp"), spec)
    best = int(np.argmax(values))
    assert run == best + 1 + PATIENCE < ROUNDS  # stopped, PATIENCE rounds after the best
    name = "expected_ndcg@5" + (f"-0.5*{spec.term.column}" if fairness else "")
    if library == "xgboost":  # XGBoost's convention: 0-based, every round kept
        assert stopped.best_iteration == best
        assert float(stopped.attr("best_score")) == pytest.approx(values[best], abs=1e-6)
    else:  # LightGBM's: 1-based, used by predict
        assert stopped.best_iteration == best + 1
        assert stopped.best_score["valid_0"][name] == pytest.approx(values[best], rel=1e-12)


def test_the_judged_cutoff_and_metric_not_the_training_ones_are_watched(splits):
    """plrank_objective(K=5) trains at 10, and reports and stops on the expected NDCG@5."""
    train, vali = splits
    objective = _objective()
    assert objective.train_K == 10 and objective.expected_metric.name == "expected_ndcg@5"
    stopped = _lightgbm(train, vali, objective, stop=PATIENCE)
    full = _lightgbm(train, vali, _objective(), stop=None)
    values = _values(full, vali, stopped.current_iteration(), RankingMetric("ndcg", 5, "exp"), None)
    assert stopped.best_iteration == int(np.argmax(values)) + 1


def test_precision_is_trained_reported_and_stopped_on(splits):
    """metric="precision": the names and values are precision's, not NDCG's."""
    train, vali = splits
    objective = _objective(metric="precision")
    assert objective.ranking_metric.name == "precision@5"
    assert objective.expected_metric.name == "expected_precision@5"
    bst = _xgboost(train, vali, objective, stop=None, metric=objective.ranking_metric)
    history = bst.eval_set(
        [(xgboost.DMatrix(vali.X, vali.y, qid=vali.qid), "v")], feval=objective.ranking_metric
    )
    scores = bst.inplace_predict(vali.X, predict_type="margin")
    expected = metrics.precision_at_k(vali.y, scores, vali.qid, k=5)
    assert history.endswith(f"v-precision@5:{expected:f}")


def test_linear_gain_reaches_the_evaluation(splits):
    """gain="linear" takes labels above 31 everywhere, the evaluation included."""
    train, vali = splits
    big = Split(vali.X, vali.y * 20, vali.qid)
    objective = _objective(gain="linear")
    bst = _xgboost(Split(train.X, train.y * 20, train.qid), big, objective, stop=PATIENCE)
    scores = bst[: bst.best_iteration + 1].inplace_predict(big.X, predict_type="margin")
    value = objective.ranking_metric(scores, xgboost.DMatrix(big.X, big.y, qid=big.qid))
    assert value == (
        "ndcg@5",
        pytest.approx(metrics.ndcg(big.y, scores, big.qid, k=5, gain="linear")),
    )


def test_rows_in_any_order_give_the_same_value(splits):
    """The value is a function of the queries, not of where they lie in the eval set."""
    _, vali = splits
    margins = np.random.default_rng(0).normal(size=vali.y.shape[0])
    reversed_queries = np.argsort(-vali.qid, kind="stable")
    values = []
    for rows, ids in ((slice(None), vali.qid), (reversed_queries, -vali.qid[reversed_queries])):
        d = xgboost.DMatrix(vali.X[rows], vali.y[rows], qid=ids - ids.min())
        per_query = PolicyEvaluator(
            RankingMetric("ndcg", 5, "exp"), None, Split(None, vali.y[rows], ids), seed=1, n_jobs=1
        )
        values.append(
            (
                _objective().expected_metric(margins[rows], d)[1],
                per_query.per_query(margins[rows]).mean(),
            )
        )
    assert values[0][0] == pytest.approx(values[0][1])
    # other streams for other query positions: equal in expectation, close with 100 rankings
    assert values[1][0] == pytest.approx(values[1][1])
    assert abs(values[0][0] - values[1][0]) < 0.02


def test_weighted_eval_sets_take_the_weighted_mean(splits):
    _, vali = splits
    margins = np.random.default_rng(1).normal(size=vali.y.shape[0])
    w = np.arange(1.0, vali.n_queries + 1)
    d = xgboost.DMatrix(vali.X, vali.y, qid=vali.qid, weight=w)
    per_query = metrics.ndcg(vali.y, margins, vali.qid, k=5, per_query=True)
    assert _objective().ranking_metric(margins, d)[1] == pytest.approx(
        np.average(per_query, weights=w)
    )


def test_lgbm_ranker_takes_the_expected_metric(splits):
    train, vali = splits
    objective = _objective()
    ranker = lightgbm.LGBMRanker(
        objective=objective.lgbm_ranker,
        metric="None",
        n_estimators=ROUNDS,
        learning_rate=0.3,
        num_leaves=8,
        min_child_samples=5,
        verbose=-1,
        n_jobs=1,
    )
    ranker.fit(
        train.X,
        train.y,
        group=train.group_sizes,
        eval_set=[(vali.X, vali.y)],
        eval_group=[vali.group_sizes],
        eval_metric=objective.lgbm_ranker_metric,
        callbacks=[lightgbm.early_stopping(PATIENCE, verbose=False)],
    )
    assert list(ranker.evals_result_["valid_0"]) == ["expected_ndcg@5"]
    curve = ranker.evals_result_["valid_0"]["expected_ndcg@5"]
    assert ranker.best_iteration_ == int(np.argmax(curve)) + 1 == len(curve) - PATIENCE


def test_lgbm_ranker_metric_with_group_fairness_scores_the_training_set_only(splits):
    """LGBMRanker does not say which eval set its metric scores: with group fairness the
    training set (whose item groups the objective has) is scored, another one is refused."""
    train, vali = splits
    groups = (train.X[:, 0] < np.median(train.X[:, 0])).astype(np.int64)
    objective = plrank_objective(K=5, N=20, seed=3, fairness="group-disparity", item_groups=groups)
    ranker = lightgbm.LGBMRanker(
        objective=objective.lgbm_ranker,
        metric="None",
        n_estimators=3,
        num_leaves=8,
        min_child_samples=5,
        verbose=-1,
        n_jobs=1,
    )
    ranker.fit(
        train.X,
        train.y,
        group=train.group_sizes,
        eval_set=[(train.X, train.y)],
        eval_group=[train.group_sizes],
        eval_metric=objective.lgbm_ranker_metric,
    )
    curve = ranker.evals_result_["training"]["expected_ndcg@5-1*group_disparity"]
    value = PolicyEvaluator(
        RankingMetric("ndcg", 5, "exp"),
        FairnessSpec("group-disparity", 1.0),
        Split(train.X, train.y, train.qid, groups),
        seed=3,
        n_jobs=1,
    )
    margins = ranker.predict(train.X, raw_score=True)
    assert curve[-1] == pytest.approx(float(value.per_query(margins).mean()))
    with pytest.raises(
        ValueError,
        match=r"LGBMRanker passes its eval metric only labels, scores"
        r".*PLRankRanker\(backend='lightgbm'\)",
    ):
        ranker.fit(
            train.X,
            train.y,
            group=train.group_sizes,
            eval_set=[(vali.X, vali.y)],
            eval_group=[vali.group_sizes],
            eval_metric=objective.lgbm_ranker_metric,
        )


def test_eval_sets_without_groups_or_with_bad_weights_are_refused(splits):
    _, vali = splits
    margins = np.zeros(vali.y.shape[0])
    with pytest.raises(ValueError, match="the evaluation set has no query groups"):
        _objective().expected_metric(margins, xgboost.DMatrix(vali.X, vali.y))
    rows = np.ones(vali.y.shape[0])
    rows[1] = 2.0  # row 1 lies in the first query with row 0
    d = lightgbm.Dataset(vali.X, vali.y, group=vali.group_sizes, weight=rows).construct()
    with pytest.raises(ValueError, match=r"weights must be one per query.*row 1 of query 0"):
        _objective().expected_metric(margins, d)
    with pytest.raises(TypeError, match=r"but a numpy\.ndarray is given"):
        _objective().expected_metric(margins, vali.y)


def test_standardized_metric_is_the_value_of_the_standardised_policy_and_scale_blind(splits):
    from gbdt_plrank._training.evaluation import STANDARD_SPREAD, STANDARDIZED_SAMPLES

    _, vali = splits
    dvali = xgboost.DMatrix(vali.X, vali.y, qid=vali.qid)
    margins = np.random.default_rng(3).standard_normal(vali.y.shape[0])
    name, got = _objective().standardized_metric(margins, dvali)
    assert name == "standardized_expected_ndcg@5"
    value = PolicyEvaluator(
        RankingMetric("ndcg", 5, "exp"),
        None,
        Split(None, vali.y, vali.qid),
        n_samples=STANDARDIZED_SAMPLES,
        seed=1,
        n_jobs=1,
    )
    standardised = margins * (STANDARD_SPREAD / margins.std())
    assert got == pytest.approx(float(value.per_query(standardised).mean()), rel=1e-12)
    # Sharpening the policy (scaling the margins by a power of two) changes the policy's
    # expected metric, not this one.
    obj = _objective()
    assert obj.standardized_metric(4.0 * margins, dvali)[1] == got
    assert obj.expected_metric(4.0 * margins, dvali)[1] != obj.expected_metric(margins, dvali)[1]
    # Equal scores are left as they are (no division by a zero spread).
    flat = np.zeros_like(margins)
    assert obj.standardized_metric(flat, dvali)[1] == pytest.approx(
        float(value.per_query(flat).mean()), rel=1e-12
    )


def test_a_constant_added_per_query_moves_only_the_standardized_metric(splits):
    """The documented decision: a constant added to a query's margins changes neither its
    ranking nor its policy, so neither the ranking's metric nor the policy's value; the
    standardised value divides by the spread over all rows, which counts the gaps between the
    queries, so it changes (a within-query spread would not, but it moved the documented
    stopping figures); its value is that of the margins scaled by the spread over the rows."""
    _, vali = splits
    dvali = xgboost.DMatrix(vali.X, vali.y, qid=vali.qid)
    margins = np.random.default_rng(7).standard_normal(vali.y.shape[0])
    shifted = margins + np.repeat(
        np.random.default_rng(8).normal(scale=5.0, size=vali.n_queries), vali.group_sizes
    )
    obj = _objective()
    for m in ("ranking_metric", "expected_metric"):
        assert getattr(obj, m)(shifted, dvali)[1] == pytest.approx(
            getattr(obj, m)(margins, dvali)[1], rel=1e-12
        ), m
    moved = obj.standardized_metric(shifted, dvali)[1]
    assert moved != pytest.approx(obj.standardized_metric(margins, dvali)[1], rel=1e-3)
    rescaled = shifted * (margins.std() / shifted.std())
    assert moved == pytest.approx(obj.standardized_metric(rescaled, dvali)[1], rel=1e-12)


def test_boosters_own_early_stopping_stops_on_the_standardized_metric(splits):
    from gbdt_plrank._training.evaluation import STANDARD_SPREAD, STANDARDIZED_SAMPLES

    train, vali = splits
    obj = _objective()
    stopped = _xgboost(train, vali, obj, stop=PATIENCE, metric=obj.standardized_metric)
    full = _xgboost(train, vali, _objective(), stop=None)
    value = PolicyEvaluator(
        RankingMetric("ndcg", 5, "exp"),
        None,
        Split(None, vali.y, vali.qid),
        n_samples=STANDARDIZED_SAMPLES,
        seed=1,
        n_jobs=1,
    )
    values = []
    for r in range(1, stopped.num_boosted_rounds() + 1):
        m = _margins(full, vali.X, r).astype(np.float32).astype(np.float64)
        values.append(float(value.per_query(m * (STANDARD_SPREAD / m.std())).mean()))
    best = int(np.argmax(values))
    assert stopped.num_boosted_rounds() == best + 1 + PATIENCE < ROUNDS
    assert stopped.best_iteration == best


@pytest.mark.parametrize("backend", ["xgboost", "lightgbm"])
def test_ranker_stops_on_the_standardized_metric_when_asked(splits, backend):
    from gbdt_plrank import PLRankRanker

    train, vali = splits
    ranker = PLRankRanker(
        backend=backend,
        K=5,
        N=10,
        n_estimators=ROUNDS,
        learning_rate=0.3,
        n_jobs=1,
        random_state=0,
        stopping_metric="standardized",
    )
    ranker.fit(
        train.X,
        train.y,
        group=train.qid,
        eval_set=[(vali.X, vali.y, vali.qid)],
        early_stopping_rounds=PATIENCE,
    )
    curves = ranker.evals_result_["valid_0"]
    assert list(curves) == ["ndcg@5", "standardized_expected_ndcg@5"]
    watched = np.asarray(curves["standardized_expected_ndcg@5"])
    first = min_rounds_for(0.3) - 1  # min_rounds="auto": no round kept before the 7th
    assert ranker.best_iteration_ == first + int(np.argmax(watched[first:]))
    best = ranker.best_iteration_
    assert watched.shape[0] == best + 1 + rounds_after_best(best, PATIENCE)


@pytest.mark.parametrize(
    ("fairness", "watched"),
    [(None, "standardized_expected_ndcg@5"), ("expected-exposure", "expected_ndcg@5-0.5*ee_l")],
)
def test_ranker_stops_by_default_on_the_standardized_metric_and_with_fairness_on_the_policy(
    splits, fairness, watched
):
    from gbdt_plrank import PLRankRanker

    train, vali = splits
    ranker = PLRankRanker(
        K=5,
        N=10,
        n_estimators=ROUNDS,
        learning_rate=0.3,
        n_jobs=1,
        random_state=0,
        fairness=fairness,
        **({"fairness_weight": 0.5} if fairness else {}),
    )
    ranker.fit(
        train.X,
        train.y,
        group=train.qid,
        eval_set=[(vali.X, vali.y, vali.qid)],
        early_stopping_rounds=PATIENCE,
    )
    curves = ranker.evals_result_["valid_0"]
    assert list(curves) == ["ndcg@5", watched]
    first = min_rounds_for(0.3) - 1  # min_rounds="auto": no round kept before the 7th
    assert ranker.best_iteration_ == first + int(np.argmax(np.round(curves[watched][first:], 6)))


def _eval_set(library: str, vali: Split, **fields):
    if library == "xgboost":
        return xgboost.DMatrix(vali.X, vali.y, qid=vali.qid, **fields)
    weight = fields.get("weight")
    weight = None if weight is None else np.repeat(weight, vali.group_sizes)
    return lightgbm.Dataset(vali.X, vali.y, group=vali.group_sizes, weight=weight).construct()


@pytest.mark.parametrize("library", ["xgboost", "lightgbm"])
def test_an_eval_set_changed_in_place_is_read_again(splits, library):
    """set_label / set_group / set_weight on an eval set the metrics have read: the next call
    scores the new labels, groups and weights, as a fresh objective on a fresh set does."""
    _, vali = splits
    margins = np.random.default_rng(4).normal(size=vali.y.shape[0])
    data, obj = _eval_set(library, vali), _objective()
    before = {m: getattr(obj, m)(margins, data)[1] for m in METRICS}
    assert all(v < 1.0 for v in before.values())
    data.set_label(np.zeros_like(vali.y))  # no relevant document: NDCG@5 is 1 by convention
    assert {m: getattr(obj, m)(margins, data)[1] for m in METRICS} == dict.fromkeys(METRICS, 1.0)
    data.set_label(vali.y)
    assert {m: getattr(obj, m)(margins, data)[1] for m in METRICS} == before
    w = np.arange(1.0, vali.n_queries + 1)
    data.set_weight(w if library == "xgboost" else np.repeat(w, vali.group_sizes))
    fresh = _objective()
    for m in METRICS:
        assert (
            getattr(obj, m)(margins, data)[1]
            == getattr(fresh, m)(margins, _eval_set(library, vali, weight=w))[1]
        )
    merged = np.append(vali.group_sizes[:-2], vali.group_sizes[-2:].sum())  # last two as one
    data.set_group(merged)
    other = Split(vali.X, vali.y, np.repeat(np.arange(merged.shape[0]), merged))
    w = np.append(w[:-2], 1.0)  # one weight per merged query
    data.set_weight(w if library == "xgboost" else np.repeat(w, merged))
    fresh = _objective()
    for m in METRICS:
        assert (
            getattr(obj, m)(margins, data)[1]
            == getattr(fresh, m)(margins, _eval_set(library, other, weight=w))[1]
        )


def test_changed_item_groups_of_an_eval_set_are_read_again(splits):
    _, vali = splits
    margins = np.random.default_rng(5).normal(size=vali.y.shape[0])
    first = (vali.X[:, 0] < np.median(vali.X[:, 0])).astype(np.int64)
    second = (vali.X[:, 1] < np.median(vali.X[:, 1])).astype(np.int64)
    data = xgboost.DMatrix(vali.X, vali.y, qid=vali.qid)

    def objective(groups):
        obj = plrank_objective(K=5, N=10, seed=1, fairness="group-disparity", fairness_weight=0.5)
        obj.set_item_groups(data, groups)
        return obj

    obj = objective(first)
    values = [obj.expected_metric(margins, data)[1]]
    obj.set_item_groups(data, second)
    values.append(obj.expected_metric(margins, data)[1])
    assert values[1] != values[0]
    assert values == [objective(g).expected_metric(margins, data)[1] for g in (first, second)]


def test_reset_forgets_the_eval_sets_read(splits):
    _, vali = splits
    margins = np.random.default_rng(6).normal(size=vali.y.shape[0])
    data, obj = xgboost.DMatrix(vali.X, vali.y, qid=vali.qid), _objective()
    before = [getattr(obj, m)(margins, data)[1] for m in METRICS]
    caches = [getattr(obj, m)._sets for m in METRICS] + [obj.expected_metric._policies]
    assert all(c.get(data) is not None for c in caches[:3])
    obj.reset()
    assert all(not c._entries for c in caches)
    assert [getattr(obj, m)(margins, data)[1] for m in METRICS] == before


def _zero_labels_at(data, round_: int):
    """A callback that sets the labels of ``data`` to zeros before round ``round_`` (0-based)."""
    if isinstance(data, xgboost.DMatrix):

        class ZeroLabels(xgboost.callback.TrainingCallback):
            def before_iteration(self, model, epoch, evals_log):
                if epoch == round_:
                    data.set_label(np.zeros(data.num_row()))
                return False

        return ZeroLabels()

    def zero_labels(env):
        if env.iteration == round_:
            data.set_label(np.zeros(data.num_data()))

    zero_labels.before_iteration = True
    return zero_labels


@pytest.mark.parametrize("library", ["xgboost", "lightgbm"])
def test_early_stopping_watches_the_labels_the_eval_set_has_now(splits, library):
    """Labels of the eval set set to zeros before round 3: from round 3 on every metric is 1,
    so early stopping keeps round 3 and stops PATIENCE rounds later."""
    train, vali = splits
    obj, changed = _objective(), 3
    if library == "xgboost":
        dtrain = xgboost.DMatrix(train.X, train.y, qid=train.qid)
        dvali = xgboost.DMatrix(vali.X, vali.y, qid=vali.qid)
        history: dict = {}
        bst = xgboost.train(
            {
                "eta": 0.3,
                "max_depth": 3,
                "nthread": 1,
                "base_score": 0.0,
                "disable_default_eval_metric": 1,
            },
            dtrain,
            ROUNDS,
            obj=obj,
            evals=[(dvali, "valid")],
            custom_metric=obj.ranking_metric,
            maximize=True,
            early_stopping_rounds=PATIENCE,
            verbose_eval=False,
            evals_result=history,
            callbacks=[_zero_labels_at(dvali, changed)],
        )
        curve, best = history["valid"]["ndcg@5"], bst.best_iteration
    else:
        dtrain = lightgbm.Dataset(train.X, train.y, group=train.group_sizes)
        dvali = lightgbm.Dataset(vali.X, vali.y, group=vali.group_sizes, reference=dtrain)
        history = {}
        bst = lightgbm.train(
            {
                "objective": obj,
                "metric": "None",
                "learning_rate": 0.3,
                "num_leaves": 8,
                "num_threads": 1,
                "verbose": -1,
                "min_data_in_leaf": 5,
            },
            dtrain,
            ROUNDS,
            valid_sets=[dvali],
            feval=obj.ranking_metric,
            callbacks=[
                lightgbm.early_stopping(PATIENCE, verbose=False),
                lightgbm.record_evaluation(history),
                _zero_labels_at(dvali, changed),
            ],
        )
        curve, best = history["valid_0"]["ndcg@5"], bst.best_iteration - 1  # 1-based
    assert max(curve[:changed]) < 1.0
    assert curve[changed:] == [1.0] * (PATIENCE + 1)
    assert best == changed
