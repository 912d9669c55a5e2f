"""Compiling the Numba kernels: a notice at the first compilation, and a way to compile ahead.

Numba compiles a kernel at its first call, unless its on-disk cache (``cache=True``) holds it:
compiling every kernel a first training needs takes about 20 seconds on a quiet 2-core machine (a
minute when other processes share it), once per environment; a process that finds them in the cache
loads them in well under a second (``benchmarks/results/compile_time.md``). The first compilation of
one of the package's kernels in a process logs one warning on the ``gbdt_plrank`` logger, so that it
does not look like a hang: Numba's event API (``numba:compile``) announces compilations, not loads
from the cache, so a process that loads every kernel says nothing.
:func:`compile_kernels` compiles them ahead, for a container image or a CI cache
(``gbdt-plrank compile`` on the command line).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
from numba.core import event

__all__ = ["KERNELS", "NOTICE", "CompiledKernels", "compile_kernels", "install_notice"]

#: The package whose kernels the notice is about.
KERNELS = "gbdt_plrank._kernels"

LOGGER = logging.getLogger("gbdt_plrank")

#: What the first compilation in a process logs (``{where}``: the cache folder, if known).
NOTICE = (
    "gbdt_plrank is compiling its Numba kernels for this environment: about 20 s on a quiet "
    "2-core machine (a minute on a busy one), once. Numba caches them{where}, and later "
    "processes load them in well under a second. To compile them ahead (a container image, a "
    "CI cache), run `gbdt-plrank compile` or gbdt_plrank.compile_kernels()."
)


def _kernel_name(data: Any) -> str | None:
    """The ``module.function`` of the package kernel a ``numba:compile`` event compiles, or None."""
    function = getattr(data.get("dispatcher") if isinstance(data, dict) else None, "py_func", None)
    module = getattr(function, "__module__", None) or ""
    return f"{module}.{function.__name__}" if function and module.startswith(KERNELS) else None


def _cache_folder(data: Any) -> str | None:
    """Where Numba caches the kernel of a ``numba:compile`` event (None when it does not say)."""
    cache = getattr(data.get("dispatcher"), "_cache", None) if isinstance(data, dict) else None
    return getattr(cache, "_cache_path", None)


class _Compilations(event.Listener):
    """The ``numba:compile`` listener: the notice, once per process, and the kernels compiled
    while :func:`_recording` runs."""

    def __init__(self) -> None:
        self.noticed = False
        self.quiet = False
        self.recorded: list[str] | None = None

    def on_start(self, e: event.Event) -> None:
        name = _kernel_name(e.data)
        if name is None:
            return
        if self.recorded is not None and name not in self.recorded:
            self.recorded.append(name)
        if not (self.noticed or self.quiet):
            self.noticed = True
            folder = _cache_folder(e.data)
            LOGGER.warning(NOTICE.format(where=f" in {folder}" if folder else ""))

    def on_end(self, e: event.Event) -> None:
        pass


_LISTENER = _Compilations()


def install_notice() -> None:
    """Listen to Numba's compilations (once; :mod:`gbdt_plrank` does it at import)."""
    if _LISTENER not in event._registered["numba:compile"]:
        event.register("numba:compile", _LISTENER)


@contextmanager
def _recording() -> Iterator[list[str]]:
    """The package kernels compiled (not loaded from the cache) inside the block, without the
    notice."""
    install_notice()
    _LISTENER.recorded, _LISTENER.quiet = [], True
    try:
        yield _LISTENER.recorded
    finally:
        _LISTENER.recorded, _LISTENER.quiet = None, False


class CompiledKernels(tuple):
    """The kernels :func:`compile_kernels` compiled (``module.function`` names; empty when the
    cache held them all), with ``seconds``, the time it took."""

    seconds: float

    def __new__(cls, names: list[str], seconds: float) -> CompiledKernels:
        out = super().__new__(cls, names)
        out.seconds = seconds
        return out


def compile_kernels() -> CompiledKernels:
    """Compile the package's CPU kernels into Numba's on-disk cache, ahead of a first training.

    Every kernel is compiled the first time it is called, once per environment (about 20 s
    for those of a first training on a quiet 2-core machine; this compiles all of them, which
    takes minutes), and kept in Numba's cache (``NUMBA_CACHE_DIR``, else ``__pycache__`` beside the
    package, else a folder of the user's): this calls each of them once on a tiny input, as a
    training with XGBoost or LightGBM and its evaluation metrics, the fairness objectives,
    PiRank, :mod:`gbdt_plrank.metrics` and the rankers' policy methods call them, so that the
    first real call loads them instead. Run it (or ``gbdt-plrank compile``) when building a
    container image or filling a CI cache. The GPU kernels (``device="cuda"``) are not
    compiled here.

    Returns
    -------
    tuple of str
        The ``module.function`` names of the kernels compiled in this call (empty when the
        cache held them all); its attribute ``seconds`` is the time the call took.

    Examples
    --------
    >>> import gbdt_plrank
    >>> compiled = gbdt_plrank.compile_kernels()  # doctest: +SKIP
    >>> print(f"{len(compiled)} kernels compiled in {compiled.seconds:.0f} s")  # doctest: +SKIP
    """
    start = time.perf_counter()
    with _recording() as compiled:
        _call_every_kernel()
    return CompiledKernels(list(compiled), time.perf_counter() - start)


def _call_every_kernel() -> None:
    """Each kernel called as real use calls it: small rankers trained with XGBoost and LightGBM
    (standardised and policy early stopping, every fairness loss) and their policy methods, and
    the functions whose kernels a training does not reach (margins spanning more than the
    narrow kernels take, PiRank, explicit rankings, the metrics)."""
    from . import metrics
    from ._fairness_terms import FAIRNESS_TERMS
    from ._training.options import PLRankOptions
    from ._training.pirank_objective import pirank_loss_grad_hess
    from ._training.plrank_grad_hess import plrank_grad_hess, plrank_grad_hess_from_rankings
    from ._training.policy_sample import sampled_exposure
    from .ranker import PLRankRanker

    rng = np.random.default_rng(0)
    qid = np.repeat(np.arange(8), 6)
    X = rng.normal(size=(qid.shape[0], 3))
    y = np.clip(np.round(X[:, 0] + rng.normal(size=qid.shape[0])), 0, 3)
    groups = np.tile(np.array([0, 1]), qid.shape[0] // 2)
    evals = [(X, y, qid)]
    fit: dict[str, Any] = {
        "min_child_weight": 0.0,
        # LightGBM's own L2 (0): with min_sum_hessian_in_leaf 0 and an L2 penalty, LightGBM
        # can choose a split with an empty side and stop ("best_split_info.left_count > 0")
        "reg_lambda": None,
        "n_jobs": 1,
        "N": 4,
        "random_state": 0,
        "n_estimators": 2,
    }
    for backend, stopping in (("xgboost", "standardized"), ("lightgbm", "policy")):
        params = {"min_data_in_leaf": 1, "min_data_in_bin": 1} if backend == "lightgbm" else {}
        ranker = PLRankRanker(backend=backend, stopping_metric=stopping, params=params, **fit)
        ranker.fit(X, y, qid, eval_set=evals, early_stopping_rounds=1)
        ranker.sample_rankings(X, qid, n_samples=2)
        ranker.expected_exposure(X, qid, n_samples=2)
        ranker.expected_metric(X, y, qid, n_samples=2)
        ranker.score(X, y, qid)
    for fairness, term in FAIRNESS_TERMS.items():
        ids = groups if term.needs_item_groups else None
        PLRankRanker(fairness=fairness, **fit).fit(
            X,
            y,
            qid,
            item_groups=ids,
            early_stopping_rounds=1,
            eval_set=[(X, y, qid) if ids is None else (X, y, qid, ids)],
        )
    ptr = np.flatnonzero(np.r_[True, np.diff(qid) != 0, True]).astype(np.int64)
    theta = PLRankOptions.checked(K=3).judged.theta(ptr)
    rankings = np.array([[0, 1, 2], [3, 2, 1]])
    for scores in (X[:, 0] * 1000.0, X[:, 0]):  # wide: beyond the narrow kernels' span
        plrank_grad_hess(scores, y, ptr, K=3, N=4, n_jobs=1, query_subsample=0.5)
        plrank_grad_hess(scores, y, ptr, K=3, N=4, n_jobs=1, hessian="denoised")
        for loss in (None, *FAIRNESS_TERMS):
            ids = groups if loss and FAIRNESS_TERMS[loss].needs_item_groups else None
            plrank_grad_hess(scores, y, ptr, K=3, N=4, n_jobs=1, fairness=loss, item_groups=ids)
            plrank_grad_hess_from_rankings(
                scores[:6],
                y[:6],
                rankings,
                K=3,
                fairness=loss,
                item_groups=None if ids is None else ids[:6],
            )
        sampled_exposure(scores, ptr, theta, n_samples=2, seed=0, round_=0, n_jobs=1)
        pirank_loss_grad_hess(scores, y, ptr, K=3, n_jobs=1)
        for measure in (
            metrics.ndcg,
            metrics.dcg,
            metrics.precision_at_k,
            metrics.recall_at_k,
            metrics.mrr,
            metrics.average_relevance_position,
            metrics.dataset_ndcg,
        ):
            measure(y, scores, qid)
    exposure = PLRankRanker(**fit).fit(X, y, qid).expected_exposure(X, qid, n_samples=2)
    for fairness, term in FAIRNESS_TERMS.items():
        ids = groups if term.needs_item_groups else None
        metrics.fairness_loss(y, exposure, qid, loss=fairness, k=3, item_groups=ids)
