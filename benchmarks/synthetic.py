"""Seeded synthetic learning-to-rank data shaped like MSLR-WEB30K.

MSLR-WEB30K (Qin and Liu 2013) has about 31,500 queries with 120 documents each on average
(1 to 1,251, a long right tail), 136 dense features, and graded labels 0-4 of which about half
are 0. :func:`make_dataset` draws data with those shapes from a fixed seed:

* query sizes from a log-normal law with the requested mean, rounded and clipped;
* a latent relevance per document (a query effect plus a document effect);
* ``n_informative`` features that are noisy copies of the latent relevance, the rest noise, and a
  third of all columns passed through ``exp`` so that they are positive and heavy-tailed;
* labels 0-4 by thresholding the latent relevance plus noise at the quantiles that reproduce
  :data:`MSLR_LABEL_FREQS` exactly, so that a booster has something to learn.

:meth:`RankingData.dmatrix` builds an ``xgboost.DMatrix`` on demand. These
are the kernels' timing data, drawn fast at any size; the package's web-shaped datasets
(:func:`gbdt_plrank.datasets.make_web_dataset`, the deep-query benchmark's) model relevance for
quality comparisons and share the grade shares.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from gbdt_plrank.datasets import MSLR_GRADE_SHARES

__all__ = ["MSLR_LABEL_FREQS", "RankingData", "long_lists", "make_dataset", "mslr_like"]

#: Approximate share of the labels 0..4 in MSLR-WEB30K.
MSLR_LABEL_FREQS = MSLR_GRADE_SHARES


@dataclass(frozen=True)
class RankingData:
    """Documents grouped by query: features, labels and query boundaries.

    Attributes
    ----------
    name : str
        Short description used in the benchmark tables.
    X : float32 array of shape (n, n_features), or None
        Features (None when generated with ``features=False``).
    y : float64 array of shape (n,)
        Labels 0..4.
    group_ptr : int64 array of shape (n_queries + 1,)
        Query boundaries ``[0, ..., n]``.
    """

    name: str
    X: np.ndarray | None
    y: np.ndarray
    group_ptr: np.ndarray

    @property
    def n_queries(self) -> int:
        return self.group_ptr.shape[0] - 1

    @property
    def n_docs(self) -> int:
        return int(self.group_ptr[-1])

    @property
    def sizes(self) -> np.ndarray:
        """Documents per query."""
        return np.diff(self.group_ptr)

    def summary(self) -> dict[str, Any]:
        """Shape statistics, for the benchmark report."""
        sizes = self.sizes
        labels, counts = np.unique(self.y, return_counts=True)
        shares = {
            int(k): round(float(c) / self.n_docs, 4) for k, c in zip(labels, counts, strict=True)
        }
        return {
            "name": self.name,
            "queries": self.n_queries,
            "documents": self.n_docs,
            "features": None if self.X is None else int(self.X.shape[1]),
            "docs_per_query_mean": float(sizes.mean()),
            "docs_per_query_median": float(np.median(sizes)),
            "docs_per_query_max": int(sizes.max()),
            "label_share": shares,
        }

    def dmatrix(self) -> Any:
        """An ``xgboost.DMatrix`` with the query ids set (features are required)."""
        import xgboost

        if self.X is None:
            raise ValueError("this dataset was generated without features (features=False).")
        qid = np.repeat(np.arange(self.n_queries, dtype=np.int64), self.sizes)
        return xgboost.DMatrix(self.X, label=self.y, qid=qid)


def _query_sizes(
    rng: np.random.Generator, n_queries: int, mean_docs: float, sigma: float, max_docs: int
) -> np.ndarray:
    """Log-normal sizes with mean ``mean_docs`` before rounding, clipped to [1, max_docs]."""
    mu = np.log(mean_docs) - 0.5 * sigma**2
    sizes = np.rint(rng.lognormal(mu, sigma, size=n_queries)).astype(np.int64)
    return np.clip(sizes, 1, max_docs)


def _labels(rng: np.random.Generator, latent: np.ndarray, freqs: tuple[float, ...]) -> np.ndarray:
    """Grades 0..len(freqs)-1 by thresholding ``latent + noise`` at the matching quantiles."""
    shares = np.asarray(freqs, dtype=np.float64)
    noisy = latent + 0.5 * rng.standard_normal(latent.shape[0])
    cuts = np.quantile(noisy, np.cumsum(shares / shares.sum())[:-1])
    return np.searchsorted(cuts, noisy, side="right").astype(np.float64)


def make_dataset(
    *,
    n_queries: int = 2000,
    mean_docs: float = 120.0,
    sigma: float = 0.8,
    max_docs: int = 1300,
    n_features: int = 136,
    n_informative: int = 24,
    label_freqs: tuple[float, ...] = MSLR_LABEL_FREQS,
    features: bool = True,
    seed: int = 0,
    name: str | None = None,
) -> RankingData:
    """Draw an MSLR-shaped ranking dataset; the same arguments always give the same data.

    Parameters
    ----------
    n_queries : int, default 2000
        Number of queries.
    mean_docs : float, default 120
        Mean of the log-normal query-size law (before clipping; MSLR-WEB30K averages 120).
    sigma : float, default 0.8
        Log-scale spread of the query sizes: larger means a longer tail.
    max_docs : int, default 1300
        Largest query (MSLR-WEB30K's largest has 1,251 documents).
    n_features : int, default 136
        Dense float32 feature columns.
    n_informative : int, default 24
        Columns that are noisy copies of the latent relevance (with varying noise).
    label_freqs : tuple of float
        Share of each grade 0, 1, ...; reproduced exactly by quantile thresholds.
    features : bool, default True
        Generate ``X``; without it only the labels and groups are drawn (memory probes).
    seed : int, default 0
        Seed of ``numpy.random.default_rng``.
    name : str, optional
        Label for reports; defaults to a description of the shape.

    Returns
    -------
    RankingData
    """
    rng = np.random.default_rng(seed)
    sizes = _query_sizes(rng, n_queries, mean_docs, sigma, max_docs)
    group_ptr = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    n = int(group_ptr[-1])
    query_effect = np.repeat(0.6 * rng.standard_normal(n_queries), sizes)
    latent = query_effect + 0.8 * rng.standard_normal(n)
    latent = (latent - latent.mean()) / latent.std()
    y = _labels(rng, latent, label_freqs)
    X = None
    if features:
        X = rng.standard_normal((n, n_features), dtype=np.float32)
        columns = rng.permutation(n_features)
        strength = np.linspace(0.8, 0.2, min(n_informative, n_features))
        for j, w in zip(columns[: strength.shape[0]], strength, strict=True):
            X[:, j] = (w * latent + np.sqrt(1.0 - w * w) * X[:, j]).astype(np.float32)
        heavy = columns[: n_features // 3]
        X[:, heavy] = np.exp(X[:, heavy])
    if name is None:
        name = f"synthetic {n_queries} queries x ~{mean_docs:g} docs"
    return RankingData(name=name, X=X, y=y, group_ptr=group_ptr)


def mslr_like(*, n_queries: int = 2000, seed: int = 0, features: bool = True) -> RankingData:
    """MSLR-WEB30K-shaped data: ~120 documents per query, long tail up to 1,300."""
    return make_dataset(
        n_queries=n_queries,
        mean_docs=120.0,
        sigma=0.8,
        max_docs=1300,
        features=features,
        seed=seed,
        name=f"MSLR-like ({n_queries} queries, ~120 docs/query)",
    )


def long_lists(*, n_queries: int = 200, seed: int = 1, features: bool = True) -> RankingData:
    """Long candidate lists: ~1,000 documents per query (log-normal, clipped to [1, 5000])."""
    return make_dataset(
        n_queries=n_queries,
        mean_docs=1000.0,
        sigma=0.5,
        max_docs=5000,
        features=features,
        seed=seed,
        name=f"long lists ({n_queries} queries, ~1000 docs/query)",
    )
