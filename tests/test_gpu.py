"""The objective on a GPU (``device="cuda"``): its checks, and its kernels against the CPU's.

The kernels run under Numba's CUDA simulator in a subprocess (``NUMBA_ENABLE_CUDASIM=1`` must
be set before ``numba.cuda`` is imported), where ``tests/cudasim_checks.py`` compares them with
the CPU kernels on the same random streams. The tests marked ``gpu`` need a CUDA GPU.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gbdt_plrank import PLRankRanker, plrank_objective
from gbdt_plrank._training import gpu as _gpu
from gbdt_plrank._util.compat import MissingDependencyError

CHECKS = Path(__file__).with_name("cudasim_checks.py")
HAS_NUMBA_CUDA = importlib.util.find_spec("numba_cuda") is not None
needs_numba_cuda = pytest.mark.skipif(
    not HAS_NUMBA_CUDA, reason="numba-cuda is not installed (pip install 'gbdt_plrank[gpu]')"
)

SIMULATED = [
    "check_stream_is_the_cpu_stream",
    "check_estimate_equals_cpu_race",
    "check_curvature_floor_is_the_cpu_floor",
    "check_deep_weights_equal_cpu",
    "check_denoised_equals_cpu",
    "check_keys_rounds_and_metrics",
    "check_margins_far_apart",
    "check_objective_with_lightgbm_weights",
    "check_objective_gives_xgboost_device_arrays",
    "check_ranker_trains_as_on_the_cpu",
]


def _run_checks(env: dict[str, str]) -> dict[str, str]:
    done = subprocess.run(
        [sys.executable, str(CHECKS)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        cwd=CHECKS.parents[1],
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def simulated() -> dict[str, str]:
    """Every check of tests/cudasim_checks.py, run once under the CUDA simulator."""
    return _run_checks({**os.environ, "NUMBA_ENABLE_CUDASIM": "1"})


def test_every_check_is_run():
    text = CHECKS.read_text()
    assert sorted(SIMULATED) == sorted(
        line[4:].partition("(")[0] for line in text.splitlines() if line.startswith("def check_")
    )


@needs_numba_cuda
def test_simulated_kernels_equal_the_cpu_kernels(simulated):
    """The CUDA kernels under the simulator equal the CPU kernels with ``sampler="race"``."""
    failed = {name: simulated[name] for name in SIMULATED if simulated[name] != "ok"}
    assert not failed, "\n".join(f"{name}:\n{text}" for name, text in failed.items())


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"device": "gpu"}, "device must be one of 'cpu', 'cuda', but 'gpu' is given"),
        (
            {"device": "cuda", "sampler": "tree"},
            "sampler='tree' is not available with device='cuda'",
        ),
        (
            {"device": "cuda", "fairness": "disparity"},
            "fairness='disparity' is not available with device='cuda'",
        ),
    ],
)
def test_device_options_are_checked(options, message):
    with pytest.raises(ValueError, match=message):
        plrank_objective(K=3, **options)


def test_device_of_the_ranker_is_checked(data):
    X, y, qid, _ = data
    with pytest.raises(ValueError, match="device must be one of 'cpu', 'cuda', but 'tpu'"):
        PLRankRanker(device="tpu", n_estimators=1).fit(X, y, qid)


def test_missing_numba_cuda_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "numba_cuda", None)  # its import now fails
    with pytest.raises(MissingDependencyError, match=r"pip install 'gbdt_plrank\[gpu\]'"):
        plrank_objective(device="cuda")


def test_no_gpu_visible(monkeypatch):
    class NoGPU:
        @staticmethod
        def is_available() -> bool:
            return False

    monkeypatch.setattr(_gpu, "require", lambda module, purpose: None)
    monkeypatch.setattr(_gpu, "_numba_cuda", NoGPU)
    with pytest.raises(RuntimeError, match="no CUDA GPU is visible"):
        PLRankRanker(device="cuda", n_estimators=1).fit(np.zeros((2, 1)), [0, 1])


def test_xgboost_is_told_the_device():
    assert PLRankRanker(device="cuda")._settings(0).params == {"device": "cuda"}
    assert PLRankRanker(device="cpu")._settings(0).params == {}
    assert PLRankRanker(device="cuda", backend="lightgbm")._settings(0).params == {}


def _compilers_found() -> bool:
    """Whether NVVM and NVRTC, which compile kernels for a GPU, can be loaded (none is needed)."""
    if not HAS_NUMBA_CUDA:
        return False
    from cuda.pathfinder import DynamicLibNotFoundError, load_nvidia_dynamic_lib

    try:
        load_nvidia_dynamic_lib("nvvm")
        load_nvidia_dynamic_lib("nvrtc")
    except DynamicLibNotFoundError:
        return False
    return True


@pytest.mark.skipif(
    "not _compilers_found()",
    reason="compiling for a GPU needs NVVM and NVRTC: pip install 'numba-cuda[cu13]'",
)
def test_kernels_compile_for_a_gpu(monkeypatch):
    """The simulator runs the kernels as Python; this types and compiles them for sm_90."""
    from numba import cuda
    from numba.cuda import dispatcher
    from numba.cuda import types as t

    from gbdt_plrank._kernels import cuda as _cuda_kernels

    if not cuda.is_available():  # device functions compile for the current device's capability

        class Hopper:
            compute_capability = (9, 0)

        monkeypatch.setattr(dispatcher, "get_current_device", Hopper)
    f64, i64 = t.float64[::1], t.int64[::1]
    kernels = {
        _cuda_kernels.estimate_kernel(10, 128): (
            f64,
            f64,
            i64,
            i64,
            t.boolean[::1],
            f64,
            t.int64,
            t.int64,
            t.int64,
            t.int64,
            f64,
            f64,
            t.float64[:, ::1],
            t.int32[::1],
            i64,
            f64,
            f64,
            f64,
        ),
        _cuda_kernels.finish_rows: (f64, t.int64, f64, t.float64),
        _cuda_kernels.floor_queries: (f64, f64, i64, t.float64),
        _cuda_kernels.scale_queries: (f64, f64, i64, f64),
        _cuda_kernels.weigh_deep_queries: (f64, f64, i64, t.int64, t.float64, f64),
        _cuda_kernels.widen: (t.float32[::1], f64, t.int32[::1]),
    }
    for kernel, signature in kernels.items():
        ptx, _ = cuda.compile_ptx(kernel.py_func, signature, cc=(9, 0))
        assert ".entry" in ptx


# --------------------------------------------------------------------------------------------
# On a GPU
# --------------------------------------------------------------------------------------------
def _gpu_visible() -> bool:
    if not HAS_NUMBA_CUDA or os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        return False
    from numba import cuda

    return cuda.is_available()


needs_gpu = pytest.mark.skipif("not _gpu_visible()", reason="no CUDA GPU is visible")


@pytest.mark.gpu
@needs_gpu
def test_checks_on_the_gpu():
    """The simulator's checks, on the GPU (exp and log there may differ in the last bit)."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    results = _run_checks(env)
    assert all(v == "ok" for v in results.values()), results


@pytest.mark.gpu
@needs_gpu
def test_xgboost_trains_on_the_gpu(data):
    """XGBoost takes the device arrays: the model of the CPU objective with sampler="race"."""
    X, y, qid, _ = data
    options = dict(K=5, N=50, n_estimators=5, random_state=0, params={"device": "cuda"})
    cpu = PLRankRanker(sampler="race", **options).fit(X, y, qid)
    gpu = PLRankRanker(device="cuda", **options).fit(X, y, qid)
    assert np.allclose(cpu.predict(X), gpu.predict(X), atol=1e-6)


def test_gpu_benchmark_refuses_without_a_gpu():
    if _gpu_visible():
        pytest.skip("a CUDA GPU is visible: the benchmark would run")
    script = Path(__file__).parents[1] / "benchmarks" / "gpu_objective.py"
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    done = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 1
    assert "measures on a CUDA GPU and cannot run here" in done.stderr, done.stderr
