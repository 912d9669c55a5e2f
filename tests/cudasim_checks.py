"""Checks of the CUDA kernels against the CPU kernels, run by tests/test_gpu.py.

``python tests/cudasim_checks.py`` runs every ``check_*`` function below and prints one JSON
object ``{name: "ok" or the traceback}``. The test runs it in a subprocess with
``NUMBA_ENABLE_CUDASIM=1``, which must be set before ``numba.cuda`` is imported: Numba's CUDA
simulator then runs the kernels on the CPU (on a GPU machine, without the variable, the same
checks run on the GPU).
"""

from __future__ import annotations

import itertools
import json
import sys
import traceback
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# The simulator runs the uint64 arithmetic of SplitMix64 on numpy scalars, which warn when
# they wrap around (on a GPU it wraps silently, as in the CPU kernels).
warnings.filterwarnings("ignore", "overflow encountered", RuntimeWarning)

from numba import cuda  # noqa: E402

from gbdt_plrank import plrank_objective  # noqa: E402
from gbdt_plrank._kernels import cuda as _cuda_kernels  # noqa: E402
from gbdt_plrank._kernels import streams  # noqa: E402
from gbdt_plrank._ranking_metric import RankingMetric  # noqa: E402
from gbdt_plrank._training.deep_weights import deep_weights  # noqa: E402
from gbdt_plrank._training.gpu import CudaEstimate, to_host  # noqa: E402
from gbdt_plrank._training.options import NOISES  # noqa: E402
from gbdt_plrank._training.plrank_grad_hess import (  # noqa: E402
    CURVATURE_FLOOR,
    degenerate_rows,
    estimate,
    finish_hessian,
)

TOL = 1e-12


@cuda.jit
def _uniforms(seed, round_, groups, js, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = _cuda_kernels.uniform_at(
            _cuda_kernels.stream_state(seed, round_, groups[i]), js[i]
        )


def check_stream_is_the_cpu_stream():
    """The device SplitMix64 draws the CPU kernels' doubles, bit for bit."""
    groups = np.array([0, 1, 7, 2**40, 3, 3], dtype=np.int64)
    js = np.array([1, 2, 5, 1, 10**9, 2**33], dtype=np.int64)
    for seed, round_ in ((0, 0), (12345, 7), (2**62, 3)):
        out = cuda.device_array(groups.shape[0], dtype=np.float64)
        _uniforms[1, 8](seed, round_, cuda.to_device(groups), cuda.to_device(js), out)
        cpu = [
            streams._uniform_at(np.uint64(streams.stream_state(seed, round_, g)), j)
            for g, j in zip(groups, js)
        ]
        assert np.array_equal(out.copy_to_host(), np.array(cpu)), (out.copy_to_host(), cpu)


def _queries(rng, sizes, spread=2.0):
    ptr = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    labels = rng.integers(0, 4, ptr[-1]).astype(np.float64)
    return ptr, labels, rng.normal(size=ptr[-1]) * spread


def _compare(
    scores,
    labels,
    ptr,
    *,
    K,
    N,
    hessian,
    seed,
    round_,
    keys=None,
    metric="ndcg",
    noise="independent",
    query_subsample=1.0,
    deep_weight=1.0,
):
    m = RankingMetric(metric, K, "exp")
    rho = m.rewards(labels, ptr)
    grad, hess = estimate(
        scores,
        rho,
        ptr,
        m,
        hessian=hessian,
        N=N,
        seed=seed,
        round_=round_,
        sampler="race",
        noise=noise,
        n_jobs=1,
        keys=keys,
        query_subsample=query_subsample,
    )
    if deep_weight != 1.0:
        grad *= deep_weights(scores, grad, ptr, K=K, cap=deep_weight)
    gpu = CudaEstimate(
        rho,
        ptr,
        None,
        m.theta(ptr),
        N=N,
        hessian=hessian,
        noise=noise,
        query_subsample=query_subsample,
        deep_weight=deep_weight,
        K=K,
    )
    g, h = (to_host(a) for a in gpu(scores, seed=seed, round_=round_, keys=keys))
    assert np.abs(g - grad).max() <= TOL * max(1.0, np.abs(grad).max()), (g, grad)
    assert np.abs(h - hess).max() <= TOL * max(1.0, np.abs(hess).max()), (h, hess)
    return grad, hess


def check_estimate_equals_cpu_race():
    """Every Hessian mode; queries of 1 document, fewer than K, more than K, none relevant, of
    one label; float32 margins as their float64 values."""
    rng = np.random.default_rng(0)
    ptr, labels, scores = _queries(rng, [5, 1, 12, 3, 40, 6])
    labels[ptr[3] : ptr[4]] = 0.0  # a query without a relevant document: exactly 0
    labels[ptr[5] : ptr[6]] = 2.0  # a query of one label: exactly 0
    for hessian, noise in itertools.product(("raw", "abs", "clip", "constant"), NOISES):
        grad, _ = _compare(
            scores, labels, ptr, K=8, N=6, hessian=hessian, seed=3, round_=2, noise=noise
        )
        assert np.all(grad[ptr[3] : ptr[4]] == 0.0) and np.all(grad[ptr[1] : ptr[2]] == 0.0)
        assert np.all(grad[ptr[5] : ptr[6]] == 0.0)
        assert np.abs(grad).max() > 0.01  # not a trivial comparison
    # float32 margins (XGBoost's) are uploaded as they are and widened on the device: the
    # estimate at the same values as float64
    m = RankingMetric("ndcg", 8, "exp")
    gpu = CudaEstimate(
        m.rewards(labels, ptr), ptr, None, m.theta(ptr), N=6, hessian="abs", noise="independent"
    )
    narrow = scores.astype(np.float32)
    for a, b in zip(
        gpu(narrow, seed=3, round_=2, keys=None),
        gpu(narrow.astype(np.float64), seed=3, round_=2, keys=None),
        strict=True,
    ):
        a, b = to_host(a), to_host(b)
        assert np.abs(a - b).max() <= TOL * max(1.0, np.abs(b).max()), (a, b)
    # a NaN or infinite margin is refused, float32 ones checked on the device as they are
    # widened, with the host's message; a later call with finite margins is not affected
    for dtype, (at, value) in itertools.product(
        (np.float32, np.float64), ((7, np.nan), (0, np.inf), (59, -np.inf))
    ):
        bad = scores.astype(dtype)
        bad[at] = value
        try:
            gpu(bad, seed=3, round_=2, keys=None)
        except ValueError as err:
            assert f"preds must be finite, but preds[{at}] is {float(value)!r}" in str(err), err
        else:
            raise AssertionError(f"a {value} margin ({dtype.__name__}) was not refused")
    again = to_host(gpu(narrow, seed=3, round_=2, keys=None)[0])
    first = to_host(gpu(narrow.astype(np.float64), seed=3, round_=2, keys=None)[0])
    assert np.abs(again - first).max() <= TOL * max(1.0, np.abs(first).max())


def check_curvature_floor_is_the_cpu_floor():
    """Per query, as on the CPU: two pairs at equal margins (curvature 0) are floored, an empty
    query and the ordinary queries keep their Hessian exactly."""
    rng = np.random.default_rng(6)
    ptr, labels, scores = _queries(rng, [2, 6, 0, 2, 9])
    scores[ptr[0] : ptr[1]] = scores[ptr[3] : ptr[4]] = 0.7
    labels[ptr[0] : ptr[1]] = labels[ptr[3] : ptr[4]] = [1.0, 0.0]
    pairs = np.r_[ptr[0] : ptr[1], ptr[3] : ptr[4]]
    others = np.setdiff1d(np.arange(ptr[-1]), pairs)
    options = dict(K=5, N=8, seed=2, round_=1)
    grad, raw = _compare(scores, labels, ptr, hessian="raw", **options)
    assert np.array_equal(np.flatnonzero(degenerate_rows(grad, raw, ptr)), pairs)
    for hessian in ("abs", "clip"):
        grad, hess = _compare(scores, labels, ptr, hessian=hessian, **options)
        assert np.array_equal(hess[pairs], CURVATURE_FLOOR * np.abs(grad[pairs]))
        assert np.all(hess[pairs] > 0)
        assert np.array_equal(hess[others], finish_hessian(raw.copy(), hessian)[others])


def check_deep_weights_equal_cpu():
    """deep_weight: the device weighs the finished gradient as the CPU objective does (each
    query's sum |g| kept, the Hessian as estimated), with the denoised, abs and raw Hessians,
    lattice noise, a subsampled round, an empty query and queries shorter than K."""
    rng = np.random.default_rng(8)
    ptr, labels, scores = _queries(rng, [6, 1, 14, 0, 30, 3], spread=3.0)
    filled = ptr[:-1][np.diff(ptr) > 0]
    cases = (  # round 5 keeps queries 0 and 5 of the six
        ("denoised", "lattice", 1.0, 2),
        ("abs", "independent", 0.5, 5),
        ("raw", "lattice", 1.0, 2),
    )
    for hessian, noise, subsample, round_ in cases:
        options = dict(
            K=5, N=7, hessian=hessian, seed=4, round_=round_, noise=noise, query_subsample=subsample
        )
        grad, hess = _compare(scores, labels, ptr, **options)
        weighted, same = _compare(scores, labels, ptr, deep_weight=4.0, **options)
        assert np.array_equal(same, hess)
        assert not np.allclose(weighted, grad) and np.abs(grad).max() > 0.01
        np.testing.assert_allclose(
            np.add.reduceat(np.abs(weighted), filled), np.add.reduceat(np.abs(grad), filled)
        )


def check_denoised_equals_cpu():
    """hessian="denoised": the two launches on the CPU's two streams, pooled and divided as on
    the CPU; other keys, lattice noise, an odd N (unequal halves), a subsampled round."""
    rng = np.random.default_rng(7)
    ptr, labels, scores = _queries(rng, [6, 1, 14, 0, 9, 3])
    labels[ptr[5] : ptr[6]] = 0.0  # no relevant document: exactly 0
    keys = np.array([4, 0, 2**33, 7, 1, 9], dtype=np.int64)
    for noise, N in itertools.product(NOISES, (6, 7)):
        grad, hess = _compare(
            scores,
            labels,
            ptr,
            K=4,
            N=N,
            hessian="denoised",
            seed=5,
            round_=3,
            keys=keys,
            noise=noise,
        )
        assert np.all(hess[ptr[5] : ptr[6]] == 0.0) and np.all(grad[ptr[5] : ptr[6]] == 0.0)
        assert np.all(hess[ptr[0] : ptr[1]] > 0.0) and np.abs(grad).max() > 0.01
    kept = streams.kept_queries(5, 3, keys, 0.5)
    assert 0 < kept[[0, 2, 4]].sum() < 3
    grad, hess = _compare(
        scores,
        labels,
        ptr,
        K=4,
        N=6,
        hessian="denoised",
        seed=5,
        round_=3,
        keys=keys,
        query_subsample=0.5,
    )
    left_out = ~np.repeat(kept, np.diff(ptr))
    assert np.all(grad[left_out] == 0.0) and np.all(hess[left_out] == 0.0)


def check_keys_rounds_and_metrics():
    """Streams keyed by other keys and rounds; the DCG and precision rewards; the queries a
    round subsampled to half of them keeps (the others exactly 0, the constant Hessian too)."""
    rng = np.random.default_rng(1)
    ptr, labels, scores = _queries(rng, [7, 9, 4])
    keys = np.array([11, 3, 2**35], dtype=np.int64)
    for metric in ("dcg", "precision"):
        _compare(
            scores, labels, ptr, K=3, N=5, hessian="raw", seed=9, round_=4, keys=keys, metric=metric
        )
    ptr, labels, scores = _queries(rng, [5, 8, 3, 6, 9, 4, 7, 2])
    keys = np.arange(8, dtype=np.int64) * 5 + 1
    kept = streams.kept_queries(4, 1, keys, 0.5)
    left_out = ~np.repeat(kept, np.diff(ptr))
    assert 0 < kept.sum() < 8
    for hessian in ("abs", "constant"):
        grad, hess = _compare(
            scores,
            labels,
            ptr,
            K=3,
            N=5,
            hessian=hessian,
            seed=4,
            round_=1,
            keys=keys,
            query_subsample=0.5,
        )
        assert np.all(grad[left_out] == 0.0) and np.all(hess[left_out] == 0.0)
        assert np.all(hess[~left_out] > 0.0)


def check_margins_far_apart():
    """Margins hundreds apart (wide queries: the log-space race and the ratio terms) stay finite
    and equal the CPU's; a query of full rankings (K >= D), one of partial rankings."""
    rng = np.random.default_rng(2)
    ptr, labels, _ = _queries(rng, [6, 6, 9])
    scores = np.array(
        [
            0.0,
            -400.0,
            -800.0,
            3.0,
            -1.0,
            -1000.0,
            5.0,
            -5.0,
            300.0,
            -300.0,
            0,
            1,
            0.0,
            -0.5,
            -700.0,
            -700.3,
            -1500.0,
            -1499.0,
            -2e4,
            1.0,
            -699.0,
        ]
    )
    labels[:] = [0, 1, 2, 0, 3, 1, 2, 0, 1, 3, 0, 2, 1, 0, 2, 3, 1, 2, 3, 0, 1]
    for K, noise in itertools.product((4, 6), NOISES):
        grad, hess = _compare(
            scores, labels, ptr, K=K, N=7, hessian="raw", seed=0, round_=0, noise=noise
        )
        assert np.all(np.isfinite(grad)) and np.all(np.isfinite(hess))
        assert np.abs(grad).max() > 0.01  # the documents near each other get O(1) terms


def check_objective_with_lightgbm_weights():
    """The objective on a LightGBM Dataset with query weights: host arrays, rounds counted; with
    query_subsample and the constant Hessian too."""
    import lightgbm

    rng = np.random.default_rng(3)
    sizes = np.array([5, 8, 3])
    n = int(sizes.sum())
    X = rng.normal(size=(n, 3))
    y = rng.integers(0, 3, n).astype(np.float64)
    data = lightgbm.Dataset(
        X, y, group=sizes, weight=np.repeat([1.0, 2.0, 0.5], sizes), params={"verbose": -1}
    ).construct()
    cpu = plrank_objective(K=3, N=8, sampler="race", seed=1)
    gpu = plrank_objective(K=3, N=8, seed=1, device="cuda")
    margins = rng.normal(size=n)
    for _ in range(2):
        g1, h1 = cpu(margins, data)
        g2, h2 = gpu(margins, data)
        assert isinstance(g2, np.ndarray) and isinstance(h2, np.ndarray)
        assert np.allclose(g1, g2, rtol=0, atol=TOL) and np.allclose(h1, h2, rtol=0, atol=TOL)
    assert gpu.round == 2
    # half the queries a round with the constant Hessian: the weights and the queries left
    # out (0, not the constant 1) scale the same rows on both
    options = dict(K=3, N=8, seed=1, hessian="constant", query_subsample=0.5)
    cpu = plrank_objective(sampler="race", **options)
    gpu = plrank_objective(device="cuda", **options)
    left_out = 0
    for _ in range(4):
        g1, h1 = cpu(margins, data)
        g2, h2 = gpu(margins, data)
        assert np.allclose(g1, g2, rtol=0, atol=TOL) and np.array_equal(h1, h2)
        left_out += int(np.sum(h1 == 0.0))
    assert 0 < left_out < 4 * n


def check_objective_gives_xgboost_device_arrays():
    """With an XGBoost DMatrix the objective returns device arrays (weights applied there)."""
    import xgboost

    rng = np.random.default_rng(4)
    sizes = np.array([4, 6])
    n = int(sizes.sum())
    data = xgboost.DMatrix(
        rng.normal(size=(n, 2)),
        label=rng.integers(0, 3, n),
        qid=np.repeat([0, 1], sizes),
        weight=np.array([2.0, 0.5]),
    )
    margins = rng.normal(size=n).astype(np.float32)  # as XGBoost hands them
    g1, h1 = plrank_objective(K=2, N=4, sampler="race", hessian="clip")(margins, data)
    g2, h2 = plrank_objective(K=2, N=4, hessian="clip", device="cuda")(margins, data)
    device_array = type(cuda.device_array(1))  # the simulator's has no __cuda_array_interface__
    assert isinstance(g2, device_array) and isinstance(h2, device_array)
    assert np.allclose(g1, to_host(g2), rtol=0, atol=TOL)
    assert np.allclose(h1, to_host(h2), rtol=0, atol=TOL)
    bad = margins.copy()
    bad[3] = np.nan  # refused before the estimate, as on the CPU
    try:
        plrank_objective(K=2, N=4, device="cuda")(bad, data)
    except ValueError as err:
        assert "preds must be finite, but preds[3] is nan" in str(err), err
    else:
        raise AssertionError("NaN margins were not refused")


def check_ranker_trains_as_on_the_cpu():
    """PLRankRanker(device="cuda") with LightGBM: the model of sampler="race" on the CPU, at the
    ranker's default deep_weight ("auto", 4) on both."""
    from gbdt_plrank import PLRankRanker

    rng = np.random.default_rng(5)
    sizes = np.array([6, 5, 7, 4])
    n = int(sizes.sum())
    X = rng.normal(size=(n, 3))
    y = np.clip(np.round(X[:, 0] + 1), 0, 3)
    qid = np.repeat(np.arange(4), sizes)
    options = dict(
        backend="lightgbm",
        K=3,
        N=4,
        n_estimators=3,
        min_child_weight=0.01,  # 22 rows: the default 1.0 leaves PL-Rank's small Hessians unsplit
        random_state=0,
        params={"min_data_in_leaf": 2, "verbose": -1},
    )
    cpu = PLRankRanker(sampler="race", **options).fit(X, y, qid)
    gpu = PLRankRanker(device="cuda", **options).fit(X, y, qid)
    assert np.allclose(cpu.predict(X), gpu.predict(X), rtol=0, atol=1e-9)
    assert np.ptp(gpu.predict(X)) > 0  # the trees split


def main() -> None:
    results = {}
    for name, check in sorted(globals().items()):
        if name.startswith("check_") and (len(sys.argv) < 2 or name in sys.argv[1:]):
            try:
                check()
                results[name] = "ok"
            except Exception:  # reported, and failed, by the test of this name
                results[name] = traceback.format_exc()
    print(json.dumps(results))


if __name__ == "__main__":
    main()
