"""Probes of the public surfaces as a new user meets them: every input kind a surface documents,
every argument at the edges of its rule, the degenerate data it must not turn into a wrong number.

Each table below runs one surface over the cases a user tries first (a DataFrame, a list, a
sparse matrix, a NumPy array; a value at the end of the float range; data whose labels carry no
information): a case either gives the result of the plain case or an error that names the value
and the rule. The subject modules hold each surface's own tests; this module holds the
cross-products.
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
