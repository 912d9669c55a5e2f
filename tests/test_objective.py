"""The objectives inside the real boosters: what they receive, return and refuse."""

from __future__ import annotations

import importlib
import pickle
import re
import warnings

import lightgbm as lgb
import numpy as np
import pytest
import xgboost as xgb
from marks import RANDOM_MARGINS
from sklearn.model_selection import GroupKFold

from gbdt_plrank import (
    lightgbm_early_stopping,
    plrank_grad_hess,
    plrank_objective,
    training_cutoff,
    xgboost_early_stopping,
)
from gbdt_plrank._groups import boundaries
from gbdt_plrank._ranking_metric import RankingMetric
from gbdt_plrank._training.options import PLRankOptions
from gbdt_plrank._training.plrank_grad_hess import estimate


def recorder(obj, calls):
    """A function (LightGBM deep-copies ``params``, functions stay shared) that logs each round."""

    def objective(preds, data):
        grad, hess = obj(preds, data)
        calls.append((np.array(preds, dtype=np.float64), grad.copy(), hess.copy()))
        return grad, hess

    return objective


XGB_PARAMS = {
    "tree_method": "hist",
    "base_score": 0.0,
    "eval_metric": "ndcg@5",
    "max_depth": 3,
    "eta": 0.3,
}


def test_xgboost_rounds_receive_fresh_samples_keyed_by_round(data):
    X, y, qid, sizes = data
    obj, calls = plrank_objective(K=5, N=20, seed=3), []
    xgb.train(XGB_PARAMS, xgb.DMatrix(X, y, qid=qid), 4, obj=recorder(obj, calls))
    assert len(calls) == 4 and obj.round == 4
    ptr = boundaries(sizes)
    for r, (preds, grad, hess) in enumerate(calls):
        expected = _estimate_round(preds, y, ptr, seed=3, round_=r)
        np.testing.assert_array_equal(grad, expected[0])
        np.testing.assert_array_equal(hess, expected[1])
    assert not np.allclose(calls[0][1], _estimate_round(calls[0][0], y, ptr, seed=3, round_=1)[0])


def _estimate_round(preds, y, ptr, *, seed, round_):
    """Round ``round_`` of ``plrank_objective(K=5, N=20)``: the estimate at its train_K, 10."""
    metric = RankingMetric("ndcg", 10, "exp")
    return estimate(
        np.asarray(preds, dtype=np.float64),
        metric.rewards(y, ptr),
        ptr,
        metric,
        hessian=PLRankOptions.checked(K=5, N=20).training_hessian,
        N=20,
        seed=seed,
        round_=round_,
        sampler="auto",
        noise="independent",
        n_jobs=None,
    )


def test_round_zero_equals_the_public_function_at_the_training_cutoff(data):
    """plrank_objective(K=5) is judged at 5 and trains at train_K = 2K = 10, as PLRankRanker."""
    X, y, qid, sizes = data
    ptr = boundaries(sizes)
    obj = plrank_objective(K=5, N=20, seed=3)
    assert (obj.K, obj.train_K) == (5, 10)
    grad, hess = obj(np.zeros(len(y), dtype=np.float32), xgb.DMatrix(X, y, qid=qid))
    expected = plrank_grad_hess(np.zeros(len(y)), y, ptr, K=10, N=20, seed=3)
    np.testing.assert_array_equal(grad, expected[0])
    np.testing.assert_array_equal(hess, expected[1])
    at_k = plrank_objective(K=5, N=20, seed=3, train_K=5)  # an integer is used as given
    assert (at_k.K, at_k.train_K) == (5, 5)
    grad, _ = at_k(np.zeros(len(y), dtype=np.float32), xgb.DMatrix(X, y, qid=qid))
    np.testing.assert_array_equal(
        grad, plrank_grad_hess(np.zeros(len(y)), y, ptr, K=5, N=20, seed=3)[0]
    )
    fair = plrank_objective(K=5, fairness="expected-exposure")
    assert fair.train_K == 5  # fairness is defined at K


def test_lattice_noise_reaches_both_boosters_and_is_reproducible(data):
    """noise="lattice": round 0 is the public function's lattice estimate, a training inside
    XGBoost and LightGBM is the same at any thread count, and not the independent one."""
    X, y, qid, sizes = data
    ptr = boundaries(sizes)
    obj = plrank_objective(K=5, N=20, seed=3, noise="lattice")
    grad, hess = obj(np.zeros(len(y), dtype=np.float32), xgb.DMatrix(X, y, qid=qid))
    expected = plrank_grad_hess(np.zeros(len(y)), y, ptr, K=10, N=20, seed=3, noise="lattice")
    np.testing.assert_array_equal(grad, expected[0])
    np.testing.assert_array_equal(hess, expected[1])
    assert not np.array_equal(
        grad, plrank_grad_hess(np.zeros(len(y)), y, ptr, K=10, N=20, seed=3)[0]
    )
    dtrain = xgb.DMatrix(X, y, qid=qid)
    models = [
        xgb.train(
            {**XGB_PARAMS, "nthread": n},
            dtrain,
            5,
            obj=plrank_objective(K=5, N=20, seed=7, n_jobs=n, noise=noise),
        ).predict(dtrain)
        for n, noise in ((1, "lattice"), (2, "lattice"), (2, "independent"))
    ]
    np.testing.assert_array_equal(models[0], models[1])
    assert not np.array_equal(models[0], models[2])
    ltrain = lgb.Dataset(X, y, group=sizes)
    lgb_models = [
        lgb.train(
            {
                "objective": plrank_objective(K=5, N=20, seed=7, n_jobs=n, noise="lattice"),
                "num_threads": n,
                "verbose": -1,
                "min_data_in_leaf": 5,
            },
            ltrain,
            5,
        ).predict(X)
        for n in (1, 2)
    ]
    np.testing.assert_array_equal(lgb_models[0], lgb_models[1])


def test_query_subsample_reaches_both_boosters_and_is_reproducible(data):
    """query_subsample=0.5: each round is the public function's estimate on the queries it
    keeps (round 1 other queries than round 0, the rest exactly 0), and a training inside
    XGBoost and LightGBM is the same at any thread count, and not the one without it."""
    X, y, qid, sizes = data
    ptr = boundaries(sizes)
    obj = plrank_objective(K=5, N=20, seed=3, query_subsample=0.5)
    dtrain = xgb.DMatrix(X, y, qid=qid)
    zero = np.zeros(len(y), dtype=np.float32)
    rounds = [obj(zero, dtrain) for _ in range(2)]
    expected = plrank_grad_hess(np.zeros(len(y)), y, ptr, K=10, N=20, seed=3, query_subsample=0.5)
    np.testing.assert_array_equal(rounds[0][0], expected[0])
    np.testing.assert_array_equal(rounds[0][1], expected[1])
    left_out = [np.repeat(np.add.reduceat(h, ptr[:-1]) == 0, sizes) for _, h in rounds]
    assert left_out[0].any() and not np.array_equal(left_out[0], left_out[1])
    models = [
        xgb.train(
            {**XGB_PARAMS, "nthread": n},
            dtrain,
            5,
            obj=plrank_objective(K=5, N=20, seed=7, n_jobs=n, query_subsample=q),
        ).predict(dtrain)
        for n, q in ((1, 0.5), (2, 0.5), (2, 1.0))
    ]
    np.testing.assert_array_equal(models[0], models[1])
    assert not np.array_equal(models[0], models[2])
    ltrain = lgb.Dataset(X, y, group=sizes)
    lgb_models = [
        lgb.train(
            {
                "objective": plrank_objective(K=5, N=20, seed=7, n_jobs=n, query_subsample=0.5),
                "num_threads": n,
                "verbose": -1,
                "min_data_in_leaf": 5,
            },
            ltrain,
            5,
        ).predict(X)
        for n in (1, 2)
    ]
    np.testing.assert_array_equal(lgb_models[0], lgb_models[1])


def test_xgboost_same_seed_same_model_any_thread_count(data):
    X, y, qid, _ = data
    dtrain = xgb.DMatrix(X, y, qid=qid)
    preds = []
    for nthread, n_jobs in ((1, 1), (2, 2), (2, 1)):
        obj = plrank_objective(K=5, N=20, seed=7, n_jobs=n_jobs)
        bst = xgb.train({**XGB_PARAMS, "nthread": nthread}, dtrain, 5, obj=obj)
        preds.append(bst.predict(dtrain))
    np.testing.assert_array_equal(preds[0], preds[1])
    np.testing.assert_array_equal(preds[0], preds[2])
    other = xgb.train(XGB_PARAMS, dtrain, 5, obj=plrank_objective(K=5, N=20, seed=8)).predict(
        dtrain
    )
    assert not np.array_equal(preds[0], other)


def test_reusing_an_objective_restarts_on_a_new_training_set(data):
    X, y, qid, _ = data
    obj = plrank_objective(K=5, N=20, seed=1)
    first = xgb.train(XGB_PARAMS, xgb.DMatrix(X, y, qid=qid), 3, obj=obj).predict(xgb.DMatrix(X))
    again = xgb.train(XGB_PARAMS, xgb.DMatrix(X, y, qid=qid), 3, obj=obj).predict(xgb.DMatrix(X))
    np.testing.assert_array_equal(first, again)
    dtrain = xgb.DMatrix(X, y, qid=qid)
    xgb.train(XGB_PARAMS, dtrain, 3, obj=obj)
    obj.reset()
    np.testing.assert_array_equal(
        first, xgb.train(XGB_PARAMS, dtrain, 3, obj=obj).predict(xgb.DMatrix(X))
    )


def test_xgboost_learns_and_refuses_data_without_groups(data):
    X, y, qid, _ = data
    dtrain = xgb.DMatrix(X, y, qid=qid)
    res: dict = {}
    xgb.train(
        XGB_PARAMS,
        dtrain,
        20,
        obj=plrank_objective(K=5, N=50),
        evals=[(dtrain, "train")],
        evals_result=res,
        verbose_eval=False,
    )
    curve = res["train"]["ndcg@5"]
    assert curve[-1] > curve[0] + 0.05
    with pytest.raises(ValueError, match="has no query groups: set qid"):
        xgb.train(XGB_PARAMS, xgb.DMatrix(X, y), 1, obj=plrank_objective())


def test_lightgbm_train_receives_groups_and_learns(data):
    X, y, _, sizes = data
    calls: list = []
    res: dict = {}
    train = lgb.Dataset(X, y, group=sizes)
    lgb.train(
        {
            "objective": recorder(plrank_objective(K=5, N=20, seed=2), calls),
            "metric": "ndcg",
            "eval_at": [5],
            "verbosity": -1,
            "min_data_in_leaf": 5,
        },
        train,
        20,
        valid_sets=[train],
        callbacks=[lgb.record_evaluation(res)],
    )
    assert len(calls) == 20
    ptr = boundaries(sizes)
    preds, grad, _ = calls[3]
    expected = _estimate_round(preds, y, ptr, seed=2, round_=3)
    np.testing.assert_array_equal(grad, expected[0])
    curve = res["training"]["ndcg@5"]
    assert curve[-1] > curve[0] + 0.05
    with pytest.raises(ValueError, match="has no query groups"):
        lgb.train({"objective": plrank_objective(), "verbosity": -1}, lgb.Dataset(X, y), 1)


def test_lgbm_ranker_form_receives_the_groups(data):
    """LGBMRanker with obj.lgbm_ranker fits the same model as lightgbm.train with the objective."""
    X, y, _, sizes = data
    params = {"n_estimators": 5, "min_child_samples": 5, "verbosity": -1, "random_state": 0}
    ranker = lgb.LGBMRanker(objective=plrank_objective(K=5, N=20, seed=4).lgbm_ranker, **params)
    ranker.fit(X, y, group=sizes)
    booster = lgb.train(
        {
            "objective": plrank_objective(K=5, N=20, seed=4),
            "min_data_in_leaf": 5,
            "verbosity": -1,
            "seed": 0,
        },
        lgb.Dataset(X, y, group=sizes),
        5,
    )
    np.testing.assert_allclose(
        ranker.predict(X, raw_score=True), booster.predict(X, raw_score=True), atol=1e-12
    )


def test_three_argument_trap_is_not_possible():
    """The LightGBM form has exactly four parameters, so LGBMRanker passes the groups."""
    import inspect

    assert len(inspect.signature(plrank_objective().lgbm_ranker).parameters) == 4
    with pytest.raises(ValueError, match="passed no groups"):
        plrank_objective().lgbm_ranker(np.zeros(3), np.zeros(3), None, None)


def test_objective_refuses_other_data_and_bad_options():
    with pytest.raises(TypeError, match=r"but a numpy\.ndarray is given"):
        plrank_objective()(np.zeros(3), np.zeros(3))
    with pytest.raises(ValueError, match="K must be an integer >= 1, but 0 is given"):
        plrank_objective(K=0)
    with pytest.raises(ValueError, match="hessian must be one of"):
        plrank_objective(hessian="exact")


def test_preds_must_be_finite(data):
    X, y, qid, _ = data
    preds = np.zeros(len(y))
    preds[4] = np.nan
    with pytest.raises(ValueError, match=r"preds must be finite, but preds\[4\] is nan"):
        plrank_objective()(preds, xgb.DMatrix(X, y, qid=qid))


@pytest.mark.parametrize("module", ["plrank", "fairness", "metrics", "pirank", "policy"])
def test_compiled_kernels_are_cached_on_disk(module):
    """cache=True on every kernel, so a fresh process loads machine code instead of compiling."""
    kernels = importlib.import_module(f"gbdt_plrank._kernels.{module}")
    dispatchers = [v for v in vars(kernels).values() if hasattr(v, "_cache")]
    assert dispatchers and all(type(d._cache).__name__ != "NullCache" for d in dispatchers)


@pytest.mark.parametrize(
    ("K", "train_K", "fairness", "cutoff"),
    [
        (5, "auto", None, 10),
        (1, "auto", None, 2),
        (5, "auto", "expected-exposure", 5),
        (5, 3, None, 3),
        (5, np.int64(20), "expected-exposure", 20),
    ],
)
def test_training_cutoff(K, train_K, fairness, cutoff):
    assert training_cutoff(K, train_K, fairness=fairness) == cutoff


@pytest.mark.parametrize(
    ("K", "train_K", "message"),
    [
        (0, "auto", "K must be an integer >= 1, but 0 is given."),
        (5, 0, 'train_K must be "auto" or an integer >= 1, but 0 is given.'),
        (5, "twice", "train_K must be \"auto\" or an integer >= 1, but 'twice' is given."),
        (5, 7.0, 'train_K must be "auto" or an integer >= 1, but 7.0 is given.'),
    ],
)
def test_training_cutoff_names_bad_values(K, train_K, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        training_cutoff(K, train_K)


@RANDOM_MARGINS
def test_a_training_set_changed_in_place_is_seen(data):
    """set_label / set_weight on a DMatrix the objective has seen: the next run trains on them."""
    X, y, qid, sizes = data
    obj = plrank_objective(K=5, N=20, seed=1)
    dtrain = xgb.DMatrix(X, y, qid=qid)
    xgb.train(XGB_PARAMS, dtrain, 3, obj=obj)
    flipped = (y.max() - y).astype(np.float64)
    dtrain.set_label(flipped)
    seen = xgb.train(XGB_PARAMS, dtrain, 3, obj=obj).predict(xgb.DMatrix(X))
    fresh = xgb.train(
        XGB_PARAMS, xgb.DMatrix(X, flipped, qid=qid), 3, obj=plrank_objective(K=5, N=20, seed=1)
    ).predict(xgb.DMatrix(X))
    np.testing.assert_array_equal(seen, fresh)
    # XGBoost keeps its quantile sketch (built with the weights) across set_weight, so the
    # objective's output is compared here, not the models.
    w = np.random.default_rng(2).uniform(0.5, 2.0, size=len(sizes)).astype(np.float32)
    dtrain.set_weight(w)
    preds = np.random.default_rng(3).normal(size=len(y))
    grad, hess = obj(preds, dtrain)
    plain = plrank_objective(K=5, N=20, seed=1)(preds, xgb.DMatrix(X, flipped, qid=qid, weight=w))
    np.testing.assert_array_equal(grad, plain[0])
    np.testing.assert_array_equal(hess, plain[1])


@pytest.mark.parametrize("library", ["xgboost", "lightgbm"])
def test_per_query_weights_scale_each_querys_gradient_and_hessian(data, library):
    """One weight per query (XGBoost: per group; LightGBM: per row, equal within a query)."""
    X, y, qid, sizes = data
    w = np.random.default_rng(5).uniform(0.0, 3.0, size=len(sizes)).astype(np.float32)  # as stored
    calls: list = []
    objective = recorder(plrank_objective(K=5, N=20, seed=3), calls)
    if library == "xgboost":
        xgb.train(XGB_PARAMS, xgb.DMatrix(X, y, qid=qid, weight=w), 3, obj=objective)
    else:
        train = lgb.Dataset(X, y, group=sizes, weight=np.repeat(w, sizes))
        lgb.train({"objective": objective, "verbosity": -1, "min_data_in_leaf": 5}, train, 3)
    ptr = boundaries(sizes)
    for r, (preds, grad, hess) in enumerate(calls):
        plain = _estimate_round(preds, y, ptr, seed=3, round_=r)
        np.testing.assert_allclose(grad, plain[0] * np.repeat(w, sizes), rtol=1e-12)
        np.testing.assert_allclose(hess, plain[1] * np.repeat(w, sizes), rtol=1e-12)


def test_per_document_weights_are_refused(data):
    X, y, _, sizes = data
    rows = np.ones(len(y))
    rows[1] = 0.5  # rows 0 and 1 belong to the first query
    d = lgb.Dataset(X, y, group=sizes, weight=rows).construct()
    with pytest.raises(
        ValueError,
        match=r"weights must be one per query.*row 1 of query 0 has "
        r"weight 0\.5 where the query's first row has 1\.0",
    ):
        plrank_objective()(np.zeros(len(y)), d)
    with pytest.raises(
        ValueError, match=r"weights must be finite and >= 0, but weight \d+ is -1\.0"
    ):
        plrank_objective().lgbm_ranker(
            y, np.zeros(len(y)), np.repeat([1, 1, -1.0] + [1] * 57, sizes), sizes
        )
    with pytest.raises(ValueError, match=r"one per query \(60\) or one per row \(\d+\), but 3 are"):
        plrank_objective().lgbm_ranker(y, np.zeros(len(y)), np.ones(3), sizes)


@pytest.mark.parametrize("bad", [np.inf, -np.inf, 1e39])
def test_weights_lightgbm_made_of_infinite_ones_are_refused_inside_lightgbm(data, bad):
    """LightGBM stores a weight of inf (or of 1e38 and more) as 1e38 when it builds the Dataset,
    before the objective sees it: that value is refused, naming what LightGBM did (a NaN weight
    it stores as 0, which no check can tell from a 0 afterwards: the docs say so)."""
    X, y, _, sizes = data
    w = np.ones(len(y))
    w[: sizes[0]] = bad
    train = lgb.Dataset(X, y, group=sizes, weight=w)
    with pytest.raises(
        ValueError,
        match=r"weights must be finite and >= 0, but row 0's weight is -?1e\+38, what LightGBM "
        r"stores for an infinite weight .* check the weights before lightgbm.Dataset",
    ):
        lgb.train(
            {"objective": plrank_objective(K=5), "verbosity": -1, "min_data_in_leaf": 5}, train, 2
        )


@pytest.mark.parametrize("library", ["xgboost", "lightgbm"])
def test_labels_set_between_rounds_reach_the_next_round(data, library):
    """set_label on the training set inside a training: the rounds after it estimate with the
    new labels (a changed set is another training set: its count starts at 0)."""
    X, y, qid, sizes = data
    flipped = (y.max() - y).astype(np.float64)
    calls: list = []
    objective = recorder(plrank_objective(K=5, N=20, seed=3), calls)
    if library == "xgboost":
        dtrain = xgb.DMatrix(X, y, qid=qid)

        class Flip(xgb.callback.TrainingCallback):
            def before_iteration(self, model, epoch, evals_log):
                if epoch == 2:
                    dtrain.set_label(flipped)
                return False

        xgb.train(XGB_PARAMS, dtrain, 4, obj=objective, callbacks=[Flip()])
    else:
        dtrain = lgb.Dataset(X, y, group=sizes)

        def flip(env):
            if env.iteration == 2:
                dtrain.set_label(flipped)

        flip.before_iteration = True
        lgb.train(
            {"objective": objective, "verbosity": -1, "min_data_in_leaf": 5},
            dtrain,
            4,
            callbacks=[flip],
        )
    ptr = boundaries(sizes)
    for r, labels, round_ in ((1, y, 1), (2, flipped, 0), (3, flipped, 1)):
        preds, grad, hess = calls[r]
        expected = _estimate_round(preds, labels, ptr, seed=3, round_=round_)
        np.testing.assert_array_equal(grad, expected[0])
        np.testing.assert_array_equal(hess, expected[1])


def _straight_and_continued(library, X, y, qid, sizes, *, objective_for_second):
    """Margins of 6 rounds straight through, and of 3 rounds continued by 3 more.

    ``objective_for_second(obj, booster)`` gives the objective the second training calls, from
    the first training's objective and booster. Every training gets a data object of its own.
    """
    if library == "xgboost":

        def fit(obj, rounds, booster=None):
            return xgb.train(
                XGB_PARAMS, xgb.DMatrix(X, y, qid=qid), rounds, obj=obj, xgb_model=booster
            )

        def margins(booster):
            return booster.predict(xgb.DMatrix(X), output_margin=True).astype(np.float64)
    else:
        params = {"verbosity": -1, "min_data_in_leaf": 5, "num_threads": 1}

        def fit(obj, rounds, booster=None):
            return lgb.train(
                {**params, "objective": obj},
                lgb.Dataset(X, y, group=sizes),
                rounds,
                init_model=booster,
                keep_training_booster=True,
            )

        def margins(booster):
            return booster.predict(X, raw_score=True)

    straight = margins(fit(plrank_objective(K=5, N=20, seed=3), 6))
    obj = plrank_objective(K=5, N=20, seed=3)
    first = fit(obj, 3)
    return straight, margins(fit(objective_for_second(obj, first), 3, first))


@pytest.mark.parametrize("library", ["xgboost", "lightgbm"])
@pytest.mark.parametrize("how", ["same", "pickled", "new"])
def test_continuing_a_booster_equals_training_straight_through(data, library, how):
    """3 rounds, then 3 more continuing the booster (the same objective, a pickled copy or a new
    one, told where to continue by continue_from) give the margins of 6 rounds straight."""

    def second(obj, booster):
        if how == "pickled":
            obj = pickle.loads(pickle.dumps(obj))
        elif how == "new":
            obj = plrank_objective(K=5, N=20, seed=3)
        obj.continue_from(booster)
        assert obj.round == 3
        return obj

    straight, continued = _straight_and_continued(library, *data, objective_for_second=second)
    np.testing.assert_allclose(continued, straight, rtol=1e-6, atol=1e-6)


CONTINUE_WARNING = (
    r"do not start at one base score .* as a training that continues a booster "
    r"does.* Call obj\.continue_from\(booster\)"
)


@pytest.mark.parametrize("library", ["xgboost", "lightgbm"])
def test_a_continued_training_without_continue_from_is_noticed(data, library):
    """Without continue_from, LightGBM's init_model reaches the objective through the training
    Dataset and the continuation is straight training, silently; XGBoost's booster does not,
    and the first call's margins (not at the base score) make the objective warn, naming
    continue_from: the streams restart at round 0, another model."""

    def unaided(obj, _):
        return pickle.loads(pickle.dumps(obj))

    if library == "lightgbm":
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            straight, continued = _straight_and_continued(
                library, *data, objective_for_second=unaided
            )
        np.testing.assert_allclose(continued, straight, rtol=1e-6, atol=1e-6)
        return
    with pytest.warns(UserWarning, match=CONTINUE_WARNING) as caught:
        straight, restarted = _straight_and_continued(library, *data, objective_for_second=unaided)
    assert len([w for w in caught if "continue_from" in str(w.message)]) == 1  # once, not per round
    assert np.abs(restarted - straight).max() > 1e-2


def test_own_starting_margins_are_no_continued_training(data):
    """A base_margin (XGBoost) or an init_score (LightGBM) of the user's own starts a training
    from scratch: no warning, round 0. LGBMRanker's init_model is seen in the margins only (its
    four-argument form gets no Dataset): it warns."""
    X, y, qid, sizes = data
    own = np.random.default_rng(0).normal(size=y.shape[0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        obj = plrank_objective(K=5, N=20, seed=3)
        xgb.train(
            {**XGB_PARAMS, "base_score": 0.5},
            xgb.DMatrix(X, y, qid=qid, base_margin=own),
            2,
            obj=obj,
        )
        assert obj.round == 2
        lgb.train(
            {
                "objective": plrank_objective(K=5, N=20, seed=3),
                "verbosity": -1,
                "min_data_in_leaf": 5,
            },
            lgb.Dataset(X, y, group=sizes, init_score=own),
            2,
        )
    ranker = lgb.LGBMRanker(
        objective=plrank_objective(K=5, N=20, seed=3).lgbm_ranker,
        n_estimators=2,
        min_child_samples=5,
        verbose=-1,
    )
    first = ranker.fit(X, y, group=sizes).booster_
    with pytest.warns(
        UserWarning,
        match=r"first call on LightGBM's labels .*\(or an init_score of "
        r"your own, which LGBMRanker does not pass on",
    ):
        ranker.fit(X, y, group=sizes, init_model=first)


def test_continue_from_holds_for_one_training_and_names_what_it_takes(data):
    """The round set is taken by the next call (also by LightGBM's copy of the objective); a
    later training on another set starts at 0 again; reset() clears it."""
    X, y, qid, sizes = data
    obj = plrank_objective(K=5, N=20, seed=3)
    first = lgb.train(
        {"objective": obj, "verbosity": -1, "min_data_in_leaf": 5},
        lgb.Dataset(X, y, group=sizes),
        3,
        keep_training_booster=True,
    )
    obj.continue_from(first)
    lgb.train(
        {"objective": obj, "verbosity": -1, "min_data_in_leaf": 5},
        lgb.Dataset(X, y, group=sizes),
        2,
        init_model=first,
    )
    calls: list = []
    xgb.train(XGB_PARAMS, xgb.DMatrix(X, y, qid=qid), 1, obj=recorder(obj, calls))
    assert obj.round == 1
    preds, grad, _ = calls[0]
    np.testing.assert_array_equal(
        grad, _estimate_round(preds, y, boundaries(sizes), seed=3, round_=0)[0]
    )
    obj.continue_from(xgb.train(XGB_PARAMS, xgb.DMatrix(X, y, qid=qid), 4, obj=obj))
    assert obj.round == 4
    obj.reset()
    xgb.train(XGB_PARAMS, xgb.DMatrix(X, y, qid=qid), 1, obj=obj)
    assert obj.round == 1
    with pytest.raises(
        TypeError,
        match=r"continue_from takes the xgboost\.Booster or "
        r"lightgbm\.Booster .* but a builtins\.int is given",
    ):
        obj.continue_from(3)


@RANDOM_MARGINS
def test_a_huge_cutoff_is_the_longest_query(data, little_memory):
    """Every function that takes a cut-off sizes its arrays by min(K, longest query): K=10**9
    runs in little memory and equals K = the longest query (a query of D documents is ranked
    to min(K, D)). The estimator, from sampled and from given rankings, with and without
    fairness; the objective's round and eval metrics; PiRank; the metrics."""
    from gbdt_plrank import metrics, pirank_objective
    from gbdt_plrank._training.plrank_grad_hess import plrank_grad_hess_from_rankings

    X, y, qid, sizes = data
    ptr = boundaries(sizes)
    longest = int(sizes.max())
    m = np.random.default_rng(1).normal(size=y.size)
    first = slice(0, int(sizes[0]))
    rankings = np.array([np.random.default_rng(s).permutation(sizes[0]) for s in range(4)])

    def run(K):
        dmatrix = xgb.DMatrix(X, y, qid=qid)
        obj = plrank_objective(K=K, N=10, seed=2, train_K=K)
        fair = plrank_objective(K=K, N=10, seed=2, fairness="expected-exposure")
        return [
            *plrank_grad_hess(m, y, ptr, K=K, N=10, seed=1),
            *plrank_grad_hess(m, y, ptr, K=K, N=10, seed=1, fairness="disparity"),
            *plrank_grad_hess_from_rankings(m[first], y[first], rankings, K=K),
            *obj(m.astype(np.float32), dmatrix),
            *fair(m.astype(np.float32), dmatrix),
            obj.expected_metric(m, dmatrix)[1],
            obj.standardized_metric(m, dmatrix)[1],
            *pirank_objective(K=K)(m.astype(np.float32), dmatrix),
            metrics.expected_exposure_loss(y, np.abs(m) / 4, qid, k=K),
        ]

    with little_memory():
        huge = run(10**9)
    for got, want in zip(huge, run(longest), strict=True):
        np.testing.assert_array_equal(got, want)


def test_finite_vector_keeps_float32_and_as_finite_vector_gives_float64():
    """The margins' check: float32 stays float32 without a copy (what a GPU uploads), other
    values become float64; as_finite_vector, which the CPU rounds take, is always float64;
    a non-finite entry is named either way."""
    from gbdt_plrank._util.validation import as_finite_vector, finite_vector

    narrow = np.array([0.5, -1.25, 3.0], dtype=np.float32)
    assert finite_vector("preds", narrow) is narrow
    assert finite_vector("preds", [1, 2]).dtype == np.float64
    wide = as_finite_vector("preds", narrow)
    assert wide.dtype == np.float64 and wide.tolist() == [0.5, -1.25, 3.0]
    for check in (finite_vector, as_finite_vector):
        with pytest.raises(ValueError, match=r"preds must be finite, but preds\[1\] is inf"):
            check("preds", np.array([0.0, np.inf], dtype=np.float32))
        with pytest.raises(ValueError, match=r"preds must be one-dimensional, but has shape"):
            check("preds", np.zeros((2, 2), dtype=np.float32))


class _KeepFolds(xgb.callback.TrainingCallback):
    """Keeps the folds of ``xgboost.cv`` (each with its booster, training and test DMatrix)."""

    def after_training(self, model):
        self.folds = model.cvfolds
        return model


@pytest.mark.parametrize("library", ["xgboost", "lightgbm"])
@pytest.mark.parametrize("stopping", [False, True])
def test_each_fold_of_cv_gets_the_model_it_gets_alone(data, library, stopping):
    """xgboost.cv and lightgbm.cv call the objective with their folds in turn. Each fold draws
    the streams of its own rounds, so its model is the fold's training set trained alone for
    as many rounds (with the package's early stopping on the objective's standardised metric,
    every fold runs the rounds the mean over the folds allows)."""
    X, y, qid, sizes = data
    most = 30 if stopping else 8

    def objective():
        return plrank_objective(K=5, N=20, seed=3)

    obj = objective()
    if library == "xgboost":
        keep = _KeepFolds()
        extra = (
            {
                "custom_metric": obj.standardized_metric,
                "maximize": True,
                "callbacks": [keep, xgboost_early_stopping(2)],
            }
            if stopping
            else {"callbacks": [keep]}
        )
        xgb.cv(XGB_PARAMS, xgb.DMatrix(X, y, qid=qid), most, nfold=3, obj=obj, seed=0, **extra)
        pairs = []
        for fold in keep.folds:
            rounds = fold.bst.num_boosted_rounds()
            alone = xgb.train(XGB_PARAMS, fold.dtrain, rounds, obj=objective())
            pairs.append(
                (
                    fold.bst.predict(fold.dtest, output_margin=True),
                    alone.predict(fold.dtest, output_margin=True),
                    rounds,
                )
            )
    else:
        params = {
            "objective": obj,
            "verbosity": -1,
            "min_data_in_leaf": 5,
            "num_threads": 1,
            "deterministic": True,
            "force_row_wise": True,
            "metric": "None",
        }
        full = lgb.Dataset(X, y, group=sizes, free_raw_data=False)
        folds = list(GroupKFold(3).split(X, y, qid))
        extra = (
            {"feval": obj.standardized_metric, "callbacks": [lightgbm_early_stopping(2)]}
            if stopping
            else {}
        )
        out = lgb.cv(params, full, most, folds=folds, return_cvbooster=True, **extra)
        pairs = []
        for booster, (train, test) in zip(out["cvbooster"].boosters, folds):
            rounds = booster.current_iteration()
            alone = lgb.train(
                {**params, "objective": objective()}, full.subset(sorted(train)), rounds
            )
            pairs.append(
                (
                    booster.predict(X[test], raw_score=True, num_iteration=rounds),
                    alone.predict(X[test], raw_score=True),
                    rounds,
                )
            )
    assert len(pairs) == 3 and all(rounds >= 2 for _, _, rounds in pairs)
    if stopping:
        assert all(rounds < most for _, _, rounds in pairs), "early stopping did not stop"
    for in_cv, alone, _ in pairs:
        np.testing.assert_array_equal(in_cv, alone)
