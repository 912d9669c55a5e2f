"""hessian="denoised": two independent halves of the rankings, pooled, each query's |h| divided
by its noise factor; against a NumPy reference, exact enumeration, and inside the boosters."""

from __future__ import annotations

import itertools

import lightgbm as lgb
import naive
import numpy as np
import pytest
import xgboost as xgb

from gbdt_plrank import (
    PLRankRanker,
    plrank_grad_hess,
    plrank_grad_hess_from_rankings,
    plrank_objective,
)
from gbdt_plrank._kernels import plrank, streams
from gbdt_plrank._ranking_metric import RankingMetric
from gbdt_plrank._training.options import PLRankOptions
from gbdt_plrank._training.plrank_grad_hess import (
    CURVATURE_FLOOR,
    HALF_B_ROUND,
    degenerate_rows,
    estimate,
    finish_hessian,
    pool_halves,
)


def _pooled_reference(half_a, half_b, n_a, n_b, ptr):
    """The pooled gradient and h / kappa per query, in plain NumPy, and the kappas."""
    (g_a, h_a), (g_b, h_b) = half_a, half_b
    n = n_a + n_b
    grad = (n_a * g_a + n_b * g_b) / n
    hess = (n_a * h_a + n_b * h_b) / n
    kappas = []
    for lo, hi in itertools.pairwise(ptr):
        S = np.sum(hess[lo:hi] ** 2)
        V = n_a * n_b / n**2 * np.sum((h_a[lo:hi] - h_b[lo:hi]) ** 2)
        kappa = 1.0 if S == 0 else np.sqrt(S / max(S - V, S / 10.0**2))
        hess[lo:hi] /= kappa
        kappas.append(kappa)
    return grad, hess, np.array(kappas)


@pytest.mark.parametrize(("n_a", "n_b"), [(5, 5), (3, 4)])
def test_pool_groups_against_numpy(n_a, n_b):
    """Random halves; an empty query, one whose Hessian is 0 (S = 0: kappa 1), one whose halves
    disagree beyond the cap (kappa = 10), and ordinary ones (1 < kappa < 10)."""
    rng = np.random.default_rng(0)
    sizes = np.array([4, 0, 7, 3, 1, 6, 5])
    ptr = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    n = int(ptr[-1])
    exact = rng.normal(size=n)
    g_a, g_b = rng.normal(size=n), rng.normal(size=n)
    h_a = exact + 0.2 * rng.normal(size=n)
    h_b = exact + 0.2 * rng.normal(size=n)
    h_a[ptr[2] : ptr[3]] = h_b[ptr[2] : ptr[3]] = 0.0  # S = 0
    noise = rng.normal(size=sizes[3])  # halves of opposite signs: S - V < S / 100
    h_a[ptr[3] : ptr[4]] = noise * n_b
    h_b[ptr[3] : ptr[4]] = -noise * n_a + 1e-3 * rng.normal(size=sizes[3])
    grad, hess = np.empty(n), np.empty(n)
    plrank.pool_groups(g_a, h_a, g_b, h_b, ptr, n_a, n_b, grad, hess)
    ref_g, ref_h, kappas = _pooled_reference((g_a, h_a), (g_b, h_b), n_a, n_b, ptr)
    np.testing.assert_allclose(grad, ref_g, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(hess, ref_h, rtol=1e-12, atol=1e-15)
    assert kappas[1] == kappas[2] == 1.0 and kappas[3] == 10.0
    assert np.all((kappas[[0, 5, 6]] > 1.0) & (kappas[[0, 5, 6]] < 10.0)), kappas
    assert np.all(hess[ptr[2] : ptr[3]] == 0.0)


def _queries(seed, sizes, K=4):
    rng = np.random.default_rng(seed)
    ptr = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    labels = rng.integers(0, 4, ptr[-1]).astype(np.float64)
    scores = rng.normal(size=ptr[-1])
    metric = RankingMetric("ndcg", K, "exp")
    return scores, labels, ptr, metric, metric.rewards(labels, ptr)


OPTIONS = dict(seed=4, sampler="auto", noise="independent", n_jobs=1)


@pytest.mark.parametrize("N", [8, 7])
def test_denoised_is_the_pooled_mean_of_two_raw_halves(N):
    """Half A: N // 2 rankings on the round's streams; half B: the rest on HALF_B_ROUND + round."""
    scores, labels, ptr, metric, rho = _queries(1, [6, 1, 12, 0, 30, 4])
    keys = np.array([3, 0, 9, 1, 2**33, 5], dtype=np.int64)
    n_a = N // 2
    half_a = estimate(
        scores, rho, ptr, metric, hessian="raw", N=n_a, round_=2, keys=keys, **OPTIONS
    )
    half_b = estimate(
        scores,
        rho,
        ptr,
        metric,
        hessian="raw",
        N=N - n_a,
        round_=HALF_B_ROUND + 2,
        keys=keys,
        **OPTIONS,
    )
    grad, hess = estimate(
        scores, rho, ptr, metric, hessian="denoised", N=N, round_=2, keys=keys, **OPTIONS
    )
    ref_g, ref_h, kappas = _pooled_reference(half_a, half_b, n_a, N - n_a, ptr)
    np.testing.assert_allclose(grad, ref_g, rtol=1e-12, atol=1e-16)
    np.testing.assert_allclose(
        hess, finish_hessian(ref_h, "abs", grad=ref_g, group_ptr=ptr), rtol=1e-12, atol=1e-16
    )
    assert np.all(hess >= 0) and np.any(kappas > 1.0)
    assert not np.allclose(half_a[0], half_b[0])  # the halves are other rankings
    # the public function: seed, round 0, the queries' indices as keys
    public = plrank_grad_hess(scores, labels, ptr, K=4, N=N, hessian="denoised", seed=4, n_jobs=1)
    same = estimate(scores, rho, ptr, metric, hessian="denoised", N=N, round_=0, **OPTIONS)
    for a, b in zip(public, same, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("N", [8, 7])
@pytest.mark.parametrize("noise", ["lattice", "independent"])
@pytest.mark.parametrize("sampler", ["auto", "tree", "race"])
def test_denoised_halves_in_one_pass_are_the_two_raw_halves_pooled_bit_for_bit(N, noise, sampler):
    """The narrow queries' halves are drawn in one pass that shares each query's sampler; the
    wide ones (margins spanning more than LOG_FLOOR) take the per-half path. Both must give
    what two raw estimates pooled by pool_halves give, bit for bit: one-document, reward-free,
    one-reward, empty, narrow, wide and long (race-drawn with "auto") queries."""
    scores, _, ptr, metric, rho = _queries(7, [6, 1, 12, 0, 40, 4, 9, 5], K=35)
    scores[ptr[5] : ptr[6]] *= 1000.0  # a wide query
    rho[ptr[6] : ptr[7]] = 0.0  # a query without reward
    rho[ptr[7] : ptr[8]] = 0.5  # a query of one reward (one label)
    options = {**OPTIONS, "noise": noise, "sampler": sampler}
    n_a = N // 2
    halves = [
        estimate(scores, rho, ptr, metric, hessian="raw", N=n, round_=r, **options)
        for n, r in ((n_a, 3), (N - n_a, HALF_B_ROUND + 3))
    ]
    pooled = pool_halves(*halves, n_a, N - n_a, ptr, n_jobs=1)
    fused = estimate(scores, rho, ptr, metric, hessian="denoised", N=N, round_=3, **options)
    for a, b in zip(fused, pooled, strict=True):
        np.testing.assert_array_equal(a, b)
    assert np.any(fused[1][ptr[5] : ptr[6]] != 0.0)  # the wide query was estimated
    assert not np.any(fused[0][ptr[6] :]) and not np.any(fused[1][ptr[6] :])


def test_from_rankings_splits_them_first_half_and_rest():
    rng = np.random.default_rng(2)
    scores, labels = rng.normal(size=7), np.array([0, 1, 3, 0, 2, 0, 1.0])
    rankings = np.array([rng.permutation(7)[:3] for _ in range(5)])
    grad, hess = plrank_grad_hess_from_rankings(scores, labels, rankings, K=3, hessian="denoised")
    halves = [
        plrank_grad_hess_from_rankings(scores, labels, r, K=3) for r in (rankings[:2], rankings[2:])
    ]
    ptr = np.array([0, 7])
    ref_g, ref_h, kappas = _pooled_reference(*halves, 2, 3, ptr)
    np.testing.assert_allclose(grad, ref_g, rtol=1e-12, atol=1e-16)
    np.testing.assert_allclose(hess, np.abs(ref_h), rtol=1e-12, atol=1e-16)
    assert kappas[0] > 1.0
    # the pooled gradient is that of all the rankings at once
    np.testing.assert_allclose(
        grad,
        plrank_grad_hess_from_rankings(scores, labels, rankings, K=3)[0],
        rtol=1e-12,
        atol=1e-16,
    )


@pytest.mark.parametrize("noise", ["independent", "lattice"])
def test_denoised_gradient_is_unbiased(noise):
    """Many copies of one query (independent streams): the gradient's mean is within 5 SE of
    the exact gradient."""
    D, K, copies = 6, 3, 3000
    rng = np.random.default_rng(3)
    scores = rng.normal(scale=1.5, size=D)
    labels = np.array([2.0, 0, 1, 0, 2, 1])
    rho, theta = naive.rewards(labels, K=K)
    _, g_exact, _ = naive.exact_derivatives(scores, rho, theta[:K])
    ptr = np.arange(0, D * copies + 1, D)
    g, _ = plrank_grad_hess(
        np.tile(scores, copies),
        np.tile(labels, copies),
        ptr,
        K=K,
        N=5,
        hessian="denoised",
        noise=noise,
        seed=8,
    )
    per_copy = g.reshape(copies, D)
    z = (per_copy.mean(axis=0) + g_exact) / (per_copy.std(axis=0, ddof=1) / np.sqrt(copies))
    assert np.all(np.abs(z) < 5), z


def test_halves_are_deterministic_and_do_not_depend_on_the_partition():
    """The same call twice, and the queries in two batches with their keys, give the same bits;
    query_subsample keeps the same queries and estimates them as without it."""
    scores, _, ptr, metric, rho = _queries(5, [5, 9, 3, 11, 7, 2, 8])
    keys = np.arange(7, dtype=np.int64) * 3 + 1
    run = dict(hessian="denoised", N=6, round_=3, **OPTIONS)
    whole = estimate(scores, rho, ptr, metric, keys=keys, **run)
    again = estimate(scores, rho, ptr, metric, keys=keys, **run)
    cut = 3
    first = estimate(
        scores[: ptr[cut]], rho[: ptr[cut]], ptr[: cut + 1], metric, keys=keys[:cut], **run
    )
    second = estimate(
        scores[ptr[cut] :], rho[ptr[cut] :], ptr[cut:] - ptr[cut], metric, keys=keys[cut:], **run
    )
    for w, a, x, y in zip(whole, again, first, second, strict=True):
        np.testing.assert_array_equal(w, a)
        np.testing.assert_array_equal(w, np.concatenate([x, y]))
    kept = streams.kept_queries(OPTIONS["seed"], 3, keys, 0.5)
    assert 0 < kept.sum() < 7
    sub = estimate(scores, rho, ptr, metric, keys=keys, query_subsample=0.5, **run)
    rows = np.repeat(kept, np.diff(ptr))
    for s, w in zip(sub, whole, strict=True):
        np.testing.assert_array_equal(s[rows], w[rows])
        assert np.all(s[~rows] == 0.0)


def test_denoised_hessian_is_nearer_the_exact_curvature_than_abs():
    """A query of 8 documents at N = 10: E sum|h| overstates sum|h_exact| (here by about 60%);
    the denoised Hessian's mean sum is within a third of that error of it."""
    D, K, copies = 8, 3, 400
    rng = np.random.default_rng(1)
    scores = rng.normal(scale=0.7, size=D)
    labels = rng.integers(0, 3, D).astype(float)
    labels[0] = 3.0
    rho, theta = naive.rewards(labels, K=K)
    _, _, h_exact = naive.exact_derivatives(scores, rho, theta[:K])
    exact = np.abs(h_exact).sum()
    ptr = np.arange(0, D * copies + 1, D)
    sums = {}
    for mode in ("abs", "denoised"):
        _, h = plrank_grad_hess(
            np.tile(scores, copies),
            np.tile(labels, copies),
            ptr,
            K=K,
            N=10,
            hessian=mode,
            seed=1,
            n_jobs=1,
        )
        sums[mode] = h.reshape(copies, D).sum(axis=1).mean()
    assert sums["abs"] > 1.4 * exact, (sums, exact)
    assert abs(sums["denoised"] - exact) < abs(sums["abs"] - exact) / 3, (sums, exact)


def test_the_floor_applies_after_the_division():
    """A pair at equal margins has curvature 0: its rows get the floor, as with "abs"."""
    scores = np.array([0.7, 0.7, 0.1, -0.4, 1.2])
    labels = np.array([1.0, 0.0, 2.0, 0.0, 1.0])
    ptr = np.array([0, 2, 5])
    grad, hess = plrank_grad_hess(scores, labels, ptr, K=2, N=8, hessian="denoised", seed=2)
    assert np.array_equal(hess[:2], CURVATURE_FLOOR * np.abs(grad[:2])) and np.all(hess[:2] > 0)
    assert not degenerate_rows(grad, hess, ptr).any()


def test_with_fairness_each_half_is_cross_fitted():
    """fairness with "denoised": each half is the fairness estimate of its own rankings."""
    scores, labels, ptr, metric, _ = _queries(6, [5, 8, 6])
    options = PLRankOptions.checked(K=4, N=8, hessian="denoised", fairness="disparity")
    fair = options.fairness_spec
    rho = options.judged.rewards(labels, ptr)
    terms = fair.terms(labels, ptr, options.judged.theta(ptr), gain="exp", item_groups=None)
    halves = [
        estimate(
            scores,
            rho,
            ptr,
            metric,
            hessian="raw",
            N=4,
            round_=r,
            fairness=fair,
            terms=terms,
            **OPTIONS,
        )
        for r in (0, HALF_B_ROUND)
    ]
    grad, hess = plrank_grad_hess(
        scores, labels, ptr, K=4, N=8, hessian="denoised", fairness="disparity", seed=4, n_jobs=1
    )
    expected = pool_halves(*halves, 4, 4, ptr)
    np.testing.assert_allclose(grad, expected[0], rtol=1e-12, atol=1e-16)
    np.testing.assert_allclose(hess, expected[1], rtol=1e-12, atol=1e-16)


def test_xgboost_and_lightgbm_learn_with_it(data):
    X, y, qid, sizes = data
    dtrain = xgb.DMatrix(X, y, qid=qid)
    res: dict = {}
    params = {
        "tree_method": "hist",
        "base_score": 0.0,
        "eval_metric": "ndcg@5",
        "max_depth": 3,
        "eta": 0.3,
        "nthread": 1,
    }
    xgb.train(
        params,
        dtrain,
        10,
        obj=plrank_objective(K=5, N=20, hessian="denoised", n_jobs=1),
        evals=[(dtrain, "train")],
        evals_result=res,
        verbose_eval=False,
    )
    curve = res["train"]["ndcg@5"]
    assert curve[-1] > curve[0] + 0.05
    res = {}
    train = lgb.Dataset(X, y, group=sizes)
    lgb.train(
        {
            "objective": plrank_objective(K=5, N=20, hessian="denoised", n_jobs=1),
            "metric": "ndcg",
            "eval_at": [5],
            "verbosity": -1,
            "min_data_in_leaf": 5,
            "num_threads": 1,
        },
        train,
        10,
        valid_sets=[train],
        callbacks=[lgb.record_evaluation(res)],
    )
    curve = res["training"]["ndcg@5"]
    assert curve[-1] > curve[0] + 0.05
    fit = dict(K=5, N=20, hessian="denoised", random_state=0, n_jobs=1)
    one, ten = (PLRankRanker(n_estimators=n, **fit).fit(X, y, qid) for n in (1, 10))
    assert ten.score(X, y, qid) > one.score(X, y, qid) + 0.02


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda s, y, p: plrank_grad_hess(s, y, p, N=1, hessian="denoised"),
            r"N must be >= 2 with hessian='denoised' \(it estimates from two halves of the N "
            r"rankings\), but 1 is given",
        ),
        (
            lambda s, y, p: plrank_grad_hess(
                s, y, p, N=3, hessian="denoised", fairness="disparity"
            ),
            "N must be >= 4 with hessian='denoised'",
        ),
        (
            lambda s, y, p: plrank_grad_hess_from_rankings(
                s[:4], y[:4], np.array([[0, 1, 2, 3]]), hessian="denoised"
            ),
            r"N must be >= 2 with hessian='denoised'",
        ),
        (
            lambda s, y, p: plrank_grad_hess_from_rankings(
                s[:4], y[:4], np.zeros((0, 4), int), hessian="denoised", fairness="disparity"
            ),
            r"rankings must have shape \(N >= 4, min\(K, D\) = 4\), but has shape \(0, 4\) "
            r"\(halved by hessian='denoised', then by fairness\)",
        ),
        (
            lambda s, y, p: PLRankRanker(N=1, hessian="denoised").fit(
                s[:, None], y, np.repeat([0, 1], np.diff(p))
            ),
            "N must be >= 2 with hessian='denoised'",
        ),
    ],
)
def test_too_few_rankings_are_refused(call, message):
    scores, labels, ptr, _, _ = _queries(0, [4, 5])
    with pytest.raises(ValueError, match=message):
        call(scores, labels, ptr)


def test_auto_is_denoised_without_fairness_and_abs_with_it_or_one_ranking():
    assert PLRankOptions.checked(K=5).hessian == "auto"
    assert PLRankOptions.checked(K=5).training_hessian == "denoised"
    assert PLRankOptions.checked(K=5, fairness="disparity").training_hessian == "abs"
    assert PLRankOptions.checked(K=5, N=1).training_hessian == "abs"
    for mode in ("abs", "raw", "clip", "constant", "denoised"):
        assert PLRankOptions.checked(K=5, hessian=mode).training_hessian == mode
    assert PLRankOptions.checked(K=5).resolved()["hessian"] == "denoised"
    scores, labels, ptr, _, _ = _queries(3, [4, 9, 30])
    est = {
        mode: plrank_grad_hess(scores, labels, ptr, K=5, N=20, seed=1, hessian=mode)
        for mode in ("auto", "denoised", "abs")
    }
    np.testing.assert_array_equal(np.stack(est["auto"]), np.stack(est["denoised"]))
    assert not np.array_equal(est["auto"][1], est["abs"][1])
    fair = dict(K=5, N=20, seed=1, fairness="disparity")
    np.testing.assert_array_equal(
        np.stack(plrank_grad_hess(scores, labels, ptr, **fair)),
        np.stack(plrank_grad_hess(scores, labels, ptr, hessian="abs", **fair)),
    )
    # from given rankings, "auto" reads their number: one ranking is "abs", not refused
    one = np.array([[0, 1, 2, 3]])
    np.testing.assert_array_equal(
        np.stack(plrank_grad_hess_from_rankings(scores[:4], labels[:4], one, hessian="auto")),
        np.stack(plrank_grad_hess_from_rankings(scores[:4], labels[:4], one, hessian="abs")),
    )


def test_the_default_objective_trains_as_denoised_inside_the_boosters(data):
    X, y, qid, sizes = data
    params = {"tree_method": "hist", "base_score": 0.0, "max_depth": 3, "eta": 0.3, "nthread": 1}
    preds = [
        xgb.train(
            params,
            xgb.DMatrix(X, y, qid=qid),
            5,
            obj=plrank_objective(K=5, N=20, n_jobs=1, **extra),
        ).predict(xgb.DMatrix(X))
        for extra in ({}, {"hessian": "denoised"}, {"hessian": "abs"})
    ]
    np.testing.assert_array_equal(preds[0], preds[1])
    assert not np.array_equal(preds[0], preds[2])
    lgb_params = {"verbosity": -1, "min_data_in_leaf": 5, "num_threads": 1}
    preds = [
        lgb.train(
            {**lgb_params, "objective": plrank_objective(K=5, N=20, n_jobs=1, **extra)},
            lgb.Dataset(X, y, group=sizes),
            5,
        ).predict(X, raw_score=True)
        for extra in ({}, {"hessian": "denoised"})
    ]
    np.testing.assert_array_equal(preds[0], preds[1])
