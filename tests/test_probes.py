"""Probes of the public surfaces as a new user meets them: every input kind a surface documents,
every argument at the edges of its rule, the degenerate data it must not turn into a wrong number.

Each table below runs one surface over the cases a user tries first (a DataFrame, a list, a
sparse matrix, a NumPy array; a value at the end of the float range; data whose labels carry no
information): a case either gives the result of the plain case or an error that names the value
and the rule. The subject modules hold each surface's own tests; this module holds the
cross-products:

- every clicks function that takes features, over the input kinds the rankers take;
- queries whose documents all have one label, in the estimator and inside both boosters;
- early stopping's arguments on the two callbacks and the ranker;
- the web generators' arguments (``load_dataset("web-*")``, ``make_web_dataset``, ``WebShape``).
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import scipy.sparse as sp

from gbdt_plrank.clicks import (
    click_regression,
    click_rewards,
    estimate_policy_value,
    estimate_position_bias,
    pbm_position_bias,
    simulate_clicks,
)

pd = pytest.importorskip("pandas")
pytest.importorskip("xgboost")


# --------------------------------------------------------------------------------------------
# The clicks functions' features: every input kind the rankers take
# --------------------------------------------------------------------------------------------
def _stochastic_log(n_queries: int = 40, n_docs: int = 6, sessions: int = 15):
    """A uniform logger's top-4 log over rows with 3 features (the first sets the relevance),
    enough columns that a DataFrame's integer column labels are row numbers too."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n_queries * n_docs, 3))
    y = (X[:, 0] > 0.3).astype(float)
    qid = np.repeat(np.arange(n_queries), n_docs)
    shown = [
        q * n_docs + np.argsort(rng.random((sessions, n_docs)), axis=1) for q in range(n_queries)
    ]
    return simulate_clicks(shown, y, eta=1.0, top_k=4, seed=1), X, qid


#: How a user holds the features; each must give what the NumPy array gives.
FEATURE_KINDS = {
    "list of rows": lambda X: X.tolist(),
    "DataFrame": lambda X: pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])]),
    # integer column labels that are row numbers too: X[rows] selected columns here
    "DataFrame, integer columns": lambda X: pd.DataFrame(X),
    "DataFrame, shuffled index": lambda X: pd.DataFrame(X, index=np.arange(X.shape[0])[::-1]),
    "CSR": sp.csr_matrix,
    "CSC": sp.csc_matrix,
    "COO": sp.coo_matrix,
}

THETA = pbm_position_bias(4)

#: Every clicks function that takes features, called on a log and its features.
FEATURE_FUNCTIONS = {
    "estimate_position_bias": lambda log, X, qid: estimate_position_bias(
        log, X=X, qid=qid, n_rounds=20
    ),
    "click_regression": lambda log, X, qid: click_regression(
        log, X, qid, position_bias=THETA, n_rounds=10
    ),
    "click_rewards doubly-robust": lambda log, X, qid: click_rewards(
        log, len(qid), position_bias=THETA, estimator="doubly-robust", X=X, qid=qid
    ),
    "click_rewards regression": lambda log, X, qid: click_rewards(
        log, len(qid), position_bias=THETA, estimator="regression", X=X, qid=qid
    ),
    "estimate_policy_value doubly-robust": lambda log, X, qid: (
        estimate_policy_value(
            log,
            np.full(len(qid), 0.3),
            X=X,
            qid=qid,
            position_bias=THETA,
            estimator="doubly-robust",
        ).value
    ),
}


@pytest.mark.parametrize("function", list(FEATURE_FUNCTIONS))
def test_every_clicks_function_takes_the_features_as_the_rankers_do(function: str) -> None:
    """A list, a DataFrame (whatever its column labels and index: rows by position) and any
    SciPy sparse format give the NumPy array's result; a feature that is inf is named."""
    log, X, qid = _stochastic_log()
    call = FEATURE_FUNCTIONS[function]
    plain = np.asarray(call(log, X, qid))
    for kind, convert in FEATURE_KINDS.items():
        np.testing.assert_allclose(call(log, convert(X), qid), plain, rtol=1e-12, err_msg=kind)
    bad = X.copy()
    bad[4, 2] = np.inf
    with pytest.raises(
        ValueError,
        match=re.escape(
            "X must hold finite numbers, or NaN for a missing value, but X[4, 2] is inf."
        ),
    ):
        call(log, bad, qid)
    with pytest.raises(ValueError, match="X must have numeric columns"):
        call(log, pd.DataFrame(X).assign(name="a"), qid)


# --------------------------------------------------------------------------------------------
# Queries whose documents all have one label, in the estimator and in both boosters
# --------------------------------------------------------------------------------------------
def _one_label_queries(seed: int = 0):
    """30 queries of 4 to 8 documents, each query's documents of one label (0 to 3)."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(4, 9, size=30)
    X = rng.normal(size=(int(sizes.sum()), 5))
    y = np.repeat(rng.integers(0, 4, size=30).astype(float), sizes)
    return X, y, sizes


@pytest.mark.parametrize(
    "options",
    [
        {"K": 5, "N": 2},
        {"K": 5, "N": 50, "hessian": "raw", "sampler": "race"},
        {"K": 3, "N": 10, "metric": "dcg", "gain": "linear", "hessian": "clip"},
        {"K": 5, "N": 8, "metric": "precision", "noise": "lattice"},
        {"K": 20, "N": 4, "hessian": "denoised"},
    ],
)
def test_a_query_of_one_label_gets_exactly_zero_beside_the_others(options) -> None:
    """Every ranking of a query whose documents share a label has the same metric: gradient and
    Hessian exactly 0 (they were zero-mean noise, up to 0.44 at N=2), whatever its margins; a
    query of several labels beside them keeps its estimate."""
    from gbdt_plrank import plrank_grad_hess

    _, y, sizes = _one_label_queries()
    ptr = np.r_[0, np.cumsum(sizes)]
    margins = np.random.default_rng(1).normal(scale=3.0, size=y.size)
    g, h = plrank_grad_hess(margins, y, ptr, **options)
    assert not g.any() and not h.any()
    mixed = y.copy()
    mixed[ptr[4] : ptr[5]] = np.arange(sizes[4]) % 3  # one query of several labels
    g, h = plrank_grad_hess(margins, mixed, ptr, **options)
    outside = np.r_[0 : ptr[4], ptr[5] : y.size]
    assert not g[outside].any() and not h[outside].any()
    assert g[ptr[4] : ptr[5]].any() and h[ptr[4] : ptr[5]].any()


def test_queries_of_one_label_leave_the_margins_where_they_start_in_both_boosters() -> None:
    """20 rounds at learning rate 0.3 without an L2 penalty on queries whose labels carry no
    information: the margins stay at 0 (LightGBM took them to +-61, XGBoost to +-2)."""
    import lightgbm
    import xgboost

    from gbdt_plrank import plrank_objective

    X, y, sizes = _one_label_queries()
    qid = np.repeat(np.arange(sizes.size), sizes)
    for hessian in ("auto", "abs"):
        train = xgboost.DMatrix(X, y, qid=qid)
        booster = xgboost.train(
            {"base_score": 0.0, "disable_default_eval_metric": 1, "eta": 0.3, "lambda": 0.0},
            train,
            20,
            obj=plrank_objective(K=5, hessian=hessian),
        )
        assert not booster.predict(train, output_margin=True).any()
        lbooster = lightgbm.train(
            {
                "objective": plrank_objective(K=5, hessian=hessian),
                "learning_rate": 0.3,
                "lambda_l2": 0.0,
                "min_data_in_leaf": 2,
                "verbose": -1,
            },
            lightgbm.Dataset(X, y, group=sizes),
            20,
        )
        assert not lbooster.predict(X, raw_score=True).any()


# --------------------------------------------------------------------------------------------
# Early stopping's arguments on its three surfaces: the two callbacks and the ranker
# --------------------------------------------------------------------------------------------
#: (argument, value, the start of the refusal or None where it is taken).
STOPPING_ARGUMENTS = [
    ("rounds", 0, "early_stopping_rounds must be an integer >= 1, but 0 is given"),
    ("rounds", 1.5, "early_stopping_rounds must be an integer >= 1, but 1.5 is given"),
    ("rounds", True, "early_stopping_rounds must be an integer >= 1, but True is given"),
    ("rounds", "3", "early_stopping_rounds must be an integer >= 1, but '3' is given"),
    ("rounds", 2**70, None),
    ("min_rounds", -1, "min_rounds must be 'auto' or an integer >= 0, but -1 is given"),
    ("min_rounds", 1.5, "min_rounds must be 'auto' or an integer >= 0, but 1.5 is given"),
    ("min_rounds", None, "min_rounds must be 'auto' or an integer >= 0, but None is given"),
    ("min_delta", float("nan"), "min_delta must be a finite number >= 0, but nan is given"),
    ("min_delta", float("inf"), "min_delta must be a finite number >= 0, but inf is given"),
    ("min_delta", -0.1, "min_delta must be a finite number >= 0, but -0.1 is given"),
    ("min_delta", 1e308, None),
    ("patience_rate", float("inf"), "patience_rate must be a finite number >= 0, but inf is"),
    ("patience_rate", True, "patience_rate must be a finite number >= 0, but True is given"),
    ("patience_rate", "1", "patience_rate must be a finite number >= 0, but '1' is given"),
    ("patience_rate", 1e308, None),
]


def _stop_with(surface: str, name: str, value: object) -> None:
    """Train 4 rounds with early stopping whose ``name`` is ``value`` on ``surface``."""
    import lightgbm
    import xgboost

    from gbdt_plrank import PLRankRanker, lightgbm_early_stopping, xgboost_early_stopping

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(200, 3)), rng.integers(0, 3, 200).astype(float)
    qid = np.repeat(np.arange(20), 10)
    options = {"min_rounds": 0} if name != "min_rounds" else {}
    rounds = value if name == "rounds" else 2
    if name != "rounds":
        options[name] = value
    if surface == "ranker":
        ranker = PLRankRanker(n_estimators=4, N=4, n_jobs=1, random_state=0, **options)
        ranker.fit(X, y, group=qid, eval_set=[(X, y, qid)], early_stopping_rounds=rounds)
    elif surface == "xgboost":
        data = xgboost.DMatrix(X, y, qid=qid)
        xgboost.train(
            {"objective": "rank:ndcg", "nthread": 1},
            data,
            4,
            evals=[(data, "v")],
            callbacks=[xgboost_early_stopping(rounds, **options)],
            verbose_eval=False,
        )
    else:
        lightgbm.train(
            {"objective": "lambdarank", "verbose": -1, "num_threads": 1, "min_data_in_leaf": 5},
            lightgbm.Dataset(X, y, group=np.full(20, 10)),
            4,
            valid_sets=[lightgbm.Dataset(X, y, group=np.full(20, 10))],
            callbacks=[lightgbm_early_stopping(rounds, **options)],
        )


@pytest.mark.parametrize("surface", ["xgboost", "lightgbm", "ranker"])
def test_early_stoppings_arguments_are_taken_or_named_on_every_surface(surface: str) -> None:
    """Each argument at the edges of its rule: refused up front with the rule, or trained
    through (a rate or patience that never stops, a gain no round reaches); a callback's patience
    of None (a fit's "no stopping") failed mid-training with a bare TypeError."""
    for name, value, refusal in STOPPING_ARGUMENTS:
        if refusal is None:
            _stop_with(surface, name, value)
        else:
            with pytest.raises(ValueError, match=re.escape(refusal)):
                _stop_with(surface, name, value)
    if surface != "ranker":
        with pytest.raises(ValueError, match=r"rounds \(the patience, early_stopping_rounds\) "):
            _stop_with(surface, "rounds", None)


# --------------------------------------------------------------------------------------------
# The web generators' arguments
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda g: g.load_dataset("web-linear", fold=0), ValueError, "fold must be an integer"),
        (lambda g: g.load_dataset("web-noisy", fold=1.5), ValueError, "fold must be an integer"),
        (lambda g: g.load_dataset("web-noisy", fold="1"), ValueError, "fold must be an integer"),
        (lambda g: g.make_web_dataset(seed=-1), ValueError, "seed must be an integer in"),
        (lambda g: g.make_web_dataset(seed=1.5), ValueError, "seed must be an integer in"),
        (
            lambda g: g.make_web_dataset({"queries": (5, 2, 2)}),
            TypeError,
            r"shape must be a WebShape or None, but a dict is given \(WebShape\(\*\*",
        ),
        (
            lambda g: g.make_web_dataset("web-linear"),
            TypeError,
            "shape must be a WebShape or None, but a str is given.",
        ),
        (lambda g: g.WebShape(grade_shares=(0.5, np.inf)), ValueError, "grade_shares must be"),
        (lambda g: g.WebShape(docs_sigma=np.inf), ValueError, "docs_sigma must be a number"),
        (lambda g: g.WebShape(mean_docs=np.inf), ValueError, "mean_docs must be a finite"),
        (lambda g: g.WebShape(queries=(1.5, 2, 2)), ValueError, "queries must be three integ"),
        (lambda g: g.WebShape(n_informative=12.5), ValueError, "n_informative must be an int"),
        (lambda g: g.WebShape(n_features=136.5), ValueError, "n_features must be an integer"),
        (lambda g: g.WebShape(feature_noise="1"), ValueError, "feature_noise must be a number"),
    ],
)
def test_the_web_generators_name_every_bad_argument(call, error, message) -> None:
    """Each bad argument of load_dataset("web-*"), make_web_dataset and WebShape gets its rule
    (infinite shares made every label 1; lists, fractions and strings gave NumPy errors)."""
    from gbdt_plrank import datasets

    with pytest.raises(error, match=message):
        call(datasets)


def test_the_web_generators_take_what_a_user_passes_and_give_csr() -> None:
    """Lists and NumPy values for a shape, a NumPy seed: the tuples' data, as CSR float32 like
    every named dataset."""
    from gbdt_plrank.datasets import WebShape, make_web_dataset

    shape = WebShape(queries=[np.int64(8), 2, 2], grade_shares=[0.5, 0.3, 0.2], mean_docs=20.0)
    data = make_web_dataset(shape, seed=np.int64(4))
    same = make_web_dataset(
        WebShape(queries=(8, 2, 2), grade_shares=(0.5, 0.3, 0.2), mean_docs=20.0), seed=4
    )
    assert sp.isspmatrix_csr(data.train.X) and data.train.X.dtype == np.float32
    assert np.array_equal(data.train.X.toarray(), same.train.X.toarray())
    assert data.train.n_queries == 8 and set(np.unique(data.train.y)) <= {0.0, 1.0, 2.0}


def test_lightgbms_split_check_is_named_with_the_settings_that_lead_there() -> None:
    """min_child_weight=0 with the default L2 penalty: LightGBM chose a split with an empty side
    on these 48 rows and stopped with its bare 'best_split_info.left_count > 0' check."""
    from gbdt_plrank import PLRankRanker

    rng = np.random.default_rng(0)
    qid = np.repeat(np.arange(8), 6)
    X = rng.normal(size=(qid.shape[0], 3))
    y = np.clip(np.round(X[:, 0] + rng.normal(size=qid.shape[0])), 0, 3)
    options = {
        "backend": "lightgbm",
        "stopping_metric": "policy",
        "params": {"min_data_in_leaf": 1, "min_data_in_bin": 1},
        "min_child_weight": 0.0,
        "n_jobs": 1,
        "N": 4,
        "deep_weight": 1.0,  # the gradients that lead LightGBM there
        "random_state": 0,
        "n_estimators": 2,
    }
    fit = {"eval_set": [(X, y, qid)], "early_stopping_rounds": 1}
    with pytest.raises(
        ValueError,
        match=r"LightGBM stopped on its own split check .*min_child_weight=0\.0.*"
        r"reg_lambda=1\.0.*Set min_child_weight above 0",
    ):
        PLRankRanker(**options).fit(X, y, qid, **fit)
    PLRankRanker(**options | {"reg_lambda": 0.0}).fit(X, y, qid, **fit)  # the advice trains
