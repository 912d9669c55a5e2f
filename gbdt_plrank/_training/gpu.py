"""The PL-Rank estimate on a CUDA GPU: device checks, uploads and kernel launches.

:class:`CudaEstimate` holds one training set on the device (rewards, query boundaries, the
queries that contribute, per-query weights: uploaded once) and computes each round's gradient and
Hessian there (:mod:`gbdt_plrank._kernels.cuda`); the margins are uploaded each round. The
results stay on the device (Numba device arrays, which XGBoost takes through their
``__cuda_array_interface__``) until :func:`to_host`.

The GPU draws every ranking by the exponential race, on the CPU kernels' random streams: its
estimate equals that of the CPU objective with ``sampler="race"`` to rounding, with
``hessian="denoised"`` too (its two halves are two launches on the CPU's two streams). Fairness
terms are computed on the CPU only.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._kernels.plrank import differing_groups
from .._kernels.streams import NOISE_CODES, kept_queries
from .._util.compat import require
from .._util.validation import check_choice, finite_vector
from .plrank_grad_hess import CLIP_FLOOR, CURVATURE_FLOOR, HALF_B_ROUND, warn_beyond_exact_span

__all__ = ["DEVICES", "CudaEstimate", "check_device", "to_host"]

#: Where the objective's estimate is computed.
DEVICES = ("cpu", "cuda")

# Threads of a block (one block per query): a power of two, at most this many.
_MAX_THREADS = 128


def check_device(device: object, *, sampler: str, fairness: str | None) -> str:
    """``device`` checked; for ``"cuda"`` also that numba-cuda and a GPU are there.

    Raises
    ------
    ValueError
        For a device other than :data:`DEVICES`, and with ``"cuda"`` for ``sampler="tree"`` or a
        fairness term (the GPU kernels draw by the race and estimate the relevance terms only).
    MissingDependencyError
        With ``"cuda"`` when numba-cuda is not installed.
    RuntimeError
        With ``"cuda"`` when no CUDA GPU is visible.
    """
    device = check_choice("device", device, DEVICES)
    if device == "cpu":
        return device
    if sampler == "tree":
        raise ValueError(
            "sampler='tree' is not available with device='cuda': the GPU draws every ranking by "
            "the exponential race; use sampler='race' or 'auto'."
        )
    if fairness is not None:
        raise ValueError(
            f"fairness={fairness!r} is not available with device='cuda': the GPU kernels "
            f"estimate the relevance terms only; use device='cpu'."
        )
    require("numba_cuda", purpose="device='cuda'")
    cuda = _numba_cuda()
    if not cuda.is_available():
        raise RuntimeError(
            "device='cuda' needs a CUDA GPU, but no CUDA GPU is visible "
            "(numba.cuda.is_available() is False); use device='cpu'."
        )
    return device


def _numba_cuda() -> Any:
    from numba import cuda

    return cuda


def to_host(array: Any) -> np.ndarray:
    """A device array's values as a host ``numpy`` array (a host array as it is)."""
    return array if isinstance(array, np.ndarray) else array.copy_to_host()


def _threads(n_samples: int) -> int:
    """Threads of a block: the smallest power of two >= ``n_samples``, at most 128."""
    threads = 1
    while threads < min(n_samples, _MAX_THREADS):
        threads *= 2
    return threads


class CudaEstimate:
    """One training set on the GPU, and the estimate of its rounds.

    Parameters
    ----------
    rho : float64 array of shape (n,)
        The rows' rewards (:meth:`~gbdt_plrank._ranking_metric.RankingMetric.rewards`).
    group_ptr : int64 array of shape (G + 1,)
        Query boundaries.
    weights : float64 array of shape (G,) or None
        Query weights: each query's rows are scaled by its weight.
    theta : float64 array of shape (K,)
        Rank weights of the training metric.
    N : int
        Rankings sampled per query and round.
    hessian : {"abs", "raw", "clip", "constant", "denoised"}
        What the booster receives as Hessian
        (:func:`~gbdt_plrank._training.plrank_grad_hess.finish_hessian`; ``"denoised"``: two
        launches, one per half of the rankings, on the streams of
        :func:`~gbdt_plrank._training.plrank_grad_hess.estimate`, pooled as
        :func:`~gbdt_plrank._training.plrank_grad_hess.pool_halves` pools them).
    noise : {"lattice", "independent"}
        The uniforms the rankings are drawn with (:class:`~gbdt_plrank.PLRankOptions`).
    query_subsample : float, default 1.0
        The share of the queries a round estimates (:class:`~gbdt_plrank.PLRankOptions`): the
        CPU's ``gbdt_plrank._kernels.streams.kept_queries`` picks them, the others' blocks
        return at once and their rows are scaled to 0 with the query weights (a weight of 0).
    deep_weight : float, default 1.0
        The weight on the gradient of the documents placed deep
        (:mod:`gbdt_plrank._training.deep_weights`, resolved), applied on the device as the
        CPU objective applies it: after the Hessian is finished, before the query weights.
    K : int, default 1
        The training cut-off the deep documents' weights take (``deep_weight`` above 1).
    """

    def __init__(
        self,
        rho: np.ndarray,
        group_ptr: np.ndarray,
        weights: np.ndarray | None,
        theta: np.ndarray,
        *,
        N: int,
        hessian: str,
        noise: str,
        query_subsample: float = 1.0,
        deep_weight: float = 1.0,
        K: int = 1,
    ) -> None:
        from .._kernels import cuda as _cuda_kernels

        self._k = _cuda_kernels
        cuda = _numba_cuda()
        n = rho.shape[0]
        sizes = np.diff(group_ptr)
        active = np.empty(sizes.shape[0], dtype=np.bool_)
        differing_groups(np.ascontiguousarray(rho, dtype=np.float64), group_ptr, active)
        self.n, self.G, self.N, self.hessian = n, sizes.shape[0], N, hessian
        self.noise = NOISE_CODES[noise]
        self._rho = cuda.to_device(np.ascontiguousarray(rho, dtype=np.float64))
        self._ptr_host = np.ascontiguousarray(group_ptr, dtype=np.int64)
        self._ptr = cuda.to_device(self._ptr_host)
        self._active = cuda.to_device(active)
        self._active_host, self._query_weights = active, weights
        self.query_subsample = query_subsample
        self.deep_weight, self.K = deep_weight, K
        self._deep = cuda.device_array(n if deep_weight != 1.0 else 0, dtype=np.float64)
        self._theta = cuda.to_device(np.ascontiguousarray(theta, dtype=np.float64))
        self._index = cuda.to_device(np.arange(self.G, dtype=np.int64))
        self._weights = (
            None
            if weights is None
            else cuda.to_device(np.ascontiguousarray(weights, dtype=np.float64))
        )
        self._e = cuda.device_array(n, dtype=np.float64)
        self._own = cuda.device_array((n, 4), dtype=np.float64)
        self._count = cuda.device_array(n, dtype=np.int32)
        lattice_rows = n if noise == "lattice" else 0  # the kernel's lattice work arrays
        self._gen = cuda.device_array(lattice_rows, dtype=np.int64)
        self._shift = cuda.device_array(lattice_rows, dtype=np.float64)
        self._hess_max = cuda.device_array(1, dtype=np.float64)
        self._bad = cuda.device_array(1, dtype=np.int32)
        # rankings per launch: with "denoised", the larger half (the halves are two launches)
        self._halves = (N // 2, N - N // 2) if hessian == "denoised" else None
        self._threads = _threads(N if self._halves is None else self._halves[1])
        self._kernel = _cuda_kernels.estimate_kernel(theta.shape[0], self._threads)

    def __call__(
        self, scores: np.ndarray, *, seed: int, round_: int, keys: np.ndarray | None
    ) -> tuple[Any, Any]:
        """Gradient and Hessian (device arrays, finished and weighted) at the margins ``scores``
        (float64, or float32, which is uploaded as it is and widened on the device).

        The margins are checked finite before the estimate: float32 ones on the device as they
        are widened, float64 ones on the host. A NaN or infinite margin raises the
        ``ValueError`` of :func:`~gbdt_plrank._util.validation.finite_vector`, which names the
        first.

        Query ``g`` draws from the stream ``(seed, round_, keys[g])`` (``keys`` default: ``g``).
        """
        cuda = _numba_cuda()
        blocks = (self.n + _MAX_THREADS - 1) // _MAX_THREADS
        query_blocks = (self.G + _MAX_THREADS - 1) // _MAX_THREADS
        if scores.dtype == np.float32:  # half the bytes up; widened and checked on the device
            m = cuda.device_array(self.n, dtype=np.float64)
            if self.n:
                self._bad.copy_to_device(np.zeros(1, dtype=np.int32))
                self._k.widen[blocks, _MAX_THREADS](cuda.to_device(scores), m, self._bad)
                if self._bad.copy_to_host()[0]:
                    finite_vector("preds", scores)  # raises, naming the first such margin
        else:
            m = cuda.to_device(finite_vector("preds", scores))
        warn_beyond_exact_span(scores, self._ptr_host)
        keys_d = (
            self._index
            if keys is None
            else cuda.to_device(np.ascontiguousarray(keys, dtype=np.int64))
        )
        self._hess_max.copy_to_device(np.zeros(1))
        active, weights = self._active, self._weights
        if self.query_subsample < 1.0:
            kept = kept_queries(
                seed,
                round_,
                np.arange(self.G, dtype=np.int64) if keys is None else np.asarray(keys, np.int64),
                self.query_subsample,
            )
            active = cuda.to_device(self._active_host & kept)
            weights = cuda.to_device(
                kept * (1.0 if self._query_weights is None else self._query_weights)
            )

        def launch(n_samples: int, stream_round: int) -> tuple[Any, Any]:
            grad = cuda.device_array(self.n, dtype=np.float64)
            hess = cuda.device_array(self.n, dtype=np.float64)
            if self.G:
                self._kernel[self.G, self._threads](
                    m,
                    self._rho,
                    self._ptr,
                    keys_d,
                    active,
                    self._theta,
                    n_samples,
                    seed,
                    stream_round,
                    self.noise,
                    self._hess_max,
                    self._e,
                    self._own,
                    self._count,
                    self._gen,
                    self._shift,
                    grad,
                    hess,
                )
            return grad, hess

        if self._halves is None:
            grad, hess = launch(self.N, round_)
        else:
            n_a, n_b = self._halves
            half_a = launch(n_a, round_)
            half_b = launch(n_b, HALF_B_ROUND + round_)
            grad = cuda.device_array(self.n, dtype=np.float64)
            hess = cuda.device_array(self.n, dtype=np.float64)
            if self.G:
                self._k.pool_queries[query_blocks, _MAX_THREADS](
                    *half_a, *half_b, self._ptr, n_a, n_b, grad, hess
                )
        if self.n:  # rows, so queries too
            code = self._k.HESSIAN_CODES[self.hessian]
            self._k.finish_rows[blocks, _MAX_THREADS](hess, code, self._hess_max, CLIP_FLOOR)
            if self.hessian in ("abs", "clip", "denoised"):
                self._k.floor_queries[query_blocks, _MAX_THREADS](
                    grad, hess, self._ptr, CURVATURE_FLOOR
                )
            if self.deep_weight != 1.0:
                self._k.weigh_deep_queries[query_blocks, _MAX_THREADS](
                    m, grad, self._ptr, self.K, self.deep_weight, self._deep
                )
            if weights is not None:
                self._k.scale_queries[query_blocks, _MAX_THREADS](grad, hess, self._ptr, weights)
        return grad, hess
