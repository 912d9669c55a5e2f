"""The kernels' integer codes: one name -> code table per kind (the fairness terms' in their
registry).

Every value of an option has a code, and the codes of a kind are distinct. The random stream's
mixer is written once: the CUDA kernels compile the CPU kernels' functions.
"""

from __future__ import annotations

import importlib.util

import pytest

from gbdt_plrank._fairness_terms import FAIRNESS_TERMS
from gbdt_plrank._kernels import fairness as fair_kernels
from gbdt_plrank._kernels import plrank_terms, samplers, streams, wide_margins
from gbdt_plrank._training.fairness_spec import FairnessSpec
from gbdt_plrank._training.options import HESSIAN_MODES, NOISES, SAMPLERS

needs_numba_cuda = pytest.mark.skipif(
    importlib.util.find_spec("numba_cuda") is None, reason="numba-cuda is not installed"
)


def _check_table(options: tuple[str, ...], codes: dict[str, int]) -> None:
    assert sorted(codes) == sorted(options)
    assert len(set(codes.values())) == len(codes)
    assert all(isinstance(code, int) for code in codes.values())


def test_every_sampler_has_a_distinct_code():
    _check_table(SAMPLERS, samplers.SAMPLER_CODES)
    assert samplers.SAMPLER_CODES["race"] == samplers.SAMPLER_RACE


def test_every_noise_has_a_distinct_code():
    _check_table(NOISES, streams.NOISE_CODES)
    assert streams.NOISE_CODES["lattice"] == streams.NOISE_LATTICE


def test_every_fairness_term_has_a_distinct_slope_of_the_kernel():
    """Each shipped term names its own slope in ``loss_slope``, and the objective reads it."""
    codes = {name: term.kernel for name, term in FAIRNESS_TERMS.items()}
    _check_table(tuple(FAIRNESS_TERMS), codes)
    assert set(codes.values()) == {
        fair_kernels.EXPECTED_EXPOSURE,
        fair_kernels.DISPARITY,
        fair_kernels.GROUP_DISPARITY,
    }
    for name, code in codes.items():
        assert FairnessSpec(name, 1.0).kind == code
    assert FairnessSpec("group-disparity", 1.0).kind == fair_kernels.GROUP_DISPARITY


@needs_numba_cuda
def test_every_hessian_mode_has_a_distinct_code():
    from gbdt_plrank._kernels import cuda as cuda_kernels

    _check_table(HESSIAN_MODES, cuda_kernels.HESSIAN_CODES)


@needs_numba_cuda
def test_the_device_compiles_the_cpu_stream():
    """The device's SplitMix64 and estimator steps are the CPU kernels' functions, compiled."""
    from gbdt_plrank._kernels import cuda as cuda_kernels

    pairs = {
        "stream_state": streams.stream_state,
        "uniform_at": streams._uniform_at,
        "lattice_shift": streams.lattice_shift,
        "lattice_generator": streams.lattice_generator,
        "lattice_point": streams.lattice_point,
        "_log_add": wide_margins._log_add,
        "_sigmoid": wide_margins._sigmoid,
        "_enter_rank": plrank_terms._enter_rank,
        "_rescale": plrank_terms._rescale,
        "_placed_terms": plrank_terms._placed_terms,
        "_unplaced_terms": plrank_terms._unplaced_terms,
    }
    for name, cpu in pairs.items():
        assert getattr(cuda_kernels, name).py_func is cpu.py_func, name
