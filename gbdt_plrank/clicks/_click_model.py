r"""The position-based model's likelihood, with the relevance a boosted model of the features.

A row :math:`d` shown at rank :math:`k` is clicked with probability
:math:`\theta_k\, \sigma(f(x_d))`. Given :math:`\theta`, :func:`fit_relevance` grows :math:`f`
(XGBoost, Fisher scoring on that Bernoulli likelihood) on the displays and clicks of each row per
rank; :func:`relevance` predicts :math:`\sigma(f(x))`. :func:`~gbdt_plrank.clicks.click_regression`
fits it with a known :math:`\theta`, cross-fitted by query; :func:`feature_evidence` measures,
on held-out queries, how much better such an :math:`f` predicts the clicks than a constant.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._log import ClickLog

__all__ = [
    "REGRESSION_FEATURES",
    "DisplayCounts",
    "FeatureEvidence",
    "RelevanceModel",
    "display_counts",
    "feature_evidence",
    "fit_relevance",
    "likelihood_objective",
    "query_centred",
    "relevance",
]

#: What the regression reads of the rows: their features as they are, or each feature minus its
#: mean over the rows of the row's query (:func:`query_centred`).
REGRESSION_FEATURES = ("raw", "centred")


@dataclass(frozen=True)
class DisplayCounts:
    """The displays and clicks of rows per rank, one entry per (row, rank) pair a log shows:
    entry ``e`` is row ``row[e]`` at rank ``rank[e] + 1``, shown ``shows[e]`` times and clicked
    ``hits[e]`` times; the entries are sorted by row, then rank. A row shown at a few of many
    ranks (a full display of a deep query) holds a few entries, not one count per rank.

    Attributes
    ----------
    row, rank : int64 arrays of shape (n_entries,)
        The entry's row (of ``n_rows``) and 0-based rank (of ``K``).
    shows, hits : float64 arrays of shape (n_entries,)
        Its displays and clicks.
    n_rows, K : int
        The rows and ranks counted.
    """

    row: np.ndarray
    rank: np.ndarray
    shows: np.ndarray
    hits: np.ndarray
    n_rows: int
    K: int

    def per_row(self, values: np.ndarray) -> np.ndarray:
        """``values`` (one per entry) summed over each row's entries, float64 (n_rows,)."""
        return np.bincount(self.row, values, minlength=self.n_rows)

    def per_rank(self, values: np.ndarray) -> np.ndarray:
        """``values`` (one per entry) summed over each rank's entries, float64 (K,)."""
        return np.bincount(self.rank, values, minlength=self.K)

    def shown(self) -> np.ndarray:
        """Whether each row is shown at all, bool (n_rows,)."""
        return self.per_row(self.shows) > 0

    def take(self, rows: np.ndarray) -> DisplayCounts:
        """The counts of ``rows`` (indices, increasing, or a boolean mask), renumbered
        ``0..len(rows)-1`` in their order."""
        rows = np.flatnonzero(rows) if rows.dtype == bool else np.asarray(rows)
        new = np.full(self.n_rows, -1)
        new[rows] = np.arange(rows.size)
        keep = new[self.row] >= 0
        return DisplayCounts(
            new[self.row[keep]],
            self.rank[keep],
            self.shows[keep],
            self.hits[keep],
            int(rows.size),
            self.K,
        )


def display_counts(log: ClickLog, n_rows: int, K: int) -> DisplayCounts:
    """The displays and clicks of every row at each of the ranks ``1..K`` of ``log``."""
    pair, entry = np.unique(log.row.astype(np.int64) * K + (log.rank - 1), return_inverse=True)
    return DisplayCounts(
        pair // K,
        pair % K,
        np.bincount(entry, minlength=pair.size).astype(np.float64),
        np.bincount(entry, log.click, minlength=pair.size).astype(np.float64),
        n_rows,
        K,
    )


@dataclass(frozen=True)
class RelevanceModel:
    """A fitted :math:`f`: the booster and the constant margin it starts from."""

    booster: Any
    base: float


def likelihood_objective(counts: DisplayCounts, theta: np.ndarray) -> Any:
    """XGBoost's objective of the click likelihood: the negative log-likelihood's gradient and
    Fisher information in the margin, from each row's displays and clicks per rank
    ``counts``."""
    n, c, t = counts.shows, counts.hits, theta[counts.rank]

    def objective(margin: np.ndarray, _: Any) -> Any:
        s = (1.0 / (1.0 + np.exp(-margin)))[counts.row]
        ts = np.minimum(t * s, 1 - 1e-12)
        # -d/df log-likelihood, and its Fisher information (positive)
        grad = -counts.per_row(c * (1 - s) - (n - c) * t * s * (1 - s) / (1 - ts))
        hess = counts.per_row(n * t * s * (1 - s) ** 2 / (1 - ts))
        return grad, np.maximum(hess, 1e-12)

    return objective


def fit_relevance(
    xgb: Any,
    X: Any,
    counts: DisplayCounts,
    theta: np.ndarray,
    *,
    n_rounds: int,
    max_depth: int,
    learning_rate: float,
    n_jobs: int,
) -> RelevanceModel:
    r""":math:`f` fitted on the rows ``X`` with their displays and clicks ``counts`` (rows
    aligned), :math:`\theta` given, starting from the log-odds of the pooled click rate per
    observation, clipped to [0.001, 0.999]."""
    pooled = float(
        np.clip(counts.hits.sum() / (counts.shows * theta[counts.rank]).sum(), 1e-3, 1 - 1e-3)
    )
    base = math.log(pooled / (1 - pooled))
    dtrain = xgb.DMatrix(X, base_margin=np.full(counts.n_rows, base))
    booster = xgb.train(
        {
            "max_depth": max_depth,
            "eta": learning_rate,
            "nthread": n_jobs,
            "min_child_weight": 1e-3,
            "lambda": 1.0,
        },
        dtrain,
        num_boost_round=n_rounds,
        obj=likelihood_objective(counts, theta),
    )
    return RelevanceModel(booster, base)


def query_centred(X: Any, qid: np.ndarray) -> np.ndarray:
    r"""Every feature minus its mean over the rows of the row's query, :math:`x_{dj} - \bar
    x_{q(d)j}` (dense float32 of ``X``'s shape; a sparse ``X`` is made dense).

    A click model of the features is pointwise: it compares rows across queries. Where a query
    shifts every row's features alike (a query's documents all score high on a term-frequency
    feature when the query's terms are common), the shift says nothing of which of its documents
    are clicked; the centred features keep what tells the documents of a query apart. A missing
    value (NaN) stays missing and is left out of its query's mean; a feature missing on every row
    of a query stays missing there.
    """
    dense = X.toarray() if hasattr(X, "toarray") else np.asarray(X)
    dense = dense.astype(np.float64)
    present = ~np.isnan(dense)
    _, q = np.unique(qid, return_inverse=True)
    n_queries = q.max(initial=-1) + 1
    sums = np.zeros((n_queries, dense.shape[1]))
    counts = np.zeros((n_queries, dense.shape[1]))
    np.add.at(sums, q, np.where(present, dense, 0.0))
    np.add.at(counts, q, present)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = sums / counts
    return (dense - means[q]).astype(np.float32)


def relevance(xgb: Any, model: RelevanceModel, X: Any) -> np.ndarray:
    r""":math:`\sigma(f(x))` of the rows ``X``, float64 in (0, 1)."""
    margin = model.booster.predict(
        xgb.DMatrix(X, base_margin=np.full(X.shape[0], model.base)), output_margin=True
    )
    return 1.0 / (1.0 + np.exp(-margin.astype(np.float64)))


def _held_out(
    xgb: Any,
    X: Any,
    seen: DisplayCounts,
    train: np.ndarray,
    test: np.ndarray,
    theta: np.ndarray,
    trees: dict[str, Any],
) -> np.ndarray:
    """The relevance of the rows ``test`` by :math:`f` fitted on the rows ``train`` (their
    displays and clicks ``seen``)."""
    model = fit_relevance(xgb, X[np.flatnonzero(train)], seen, theta, **trees)
    return relevance(xgb, model, X[np.flatnonzero(test)])


def _log_likelihood(counts: DisplayCounts, p: np.ndarray) -> np.ndarray:
    """Each row's click log-likelihood from its displays and clicks per rank ``counts``, each
    entry clicked with probability ``p`` (one per entry, clipped away from 0 and 1)."""
    p = np.clip(p, 1e-12, 1 - 1e-12)
    n, c = counts.shows, counts.hits
    return counts.per_row(c * np.log(p) + (n - c) * np.log1p(-p))


@dataclass(frozen=True)
class FeatureEvidence:
    """What the features say of the clicks beyond the rank, on held-out queries
    (:func:`feature_evidence`).

    Attributes
    ----------
    z : float
        The mean per-query gain over its standard error (0 where every gain is 0).
    gain : float
        The mean per-query gain in click log-likelihood.
    queries : int
        The queries with displays, each held out once.
    """

    z: float
    gain: float
    queries: int


def feature_evidence(
    xgb: Any,
    X: Any,
    counts: DisplayCounts,
    query: np.ndarray,
    theta: np.ndarray,
    *,
    n_rounds: int,
    max_depth: int,
    learning_rate: float,
    n_jobs: int,
) -> FeatureEvidence:
    r"""How much better a relevance model of the features predicts held-out queries' clicks
    than a constant relevance, both under the position bias ``theta``.

    The queries are split into two folds at random (seed 0). On each fold's rows :math:`f` is
    fitted on the other fold's (:func:`fit_relevance`, ``n_rounds`` trees) and each held-out
    row's clicks scored under :math:`\theta_k\sigma(f(x_d))` and under
    :math:`\theta_k\sigma(f_0)`, the same trees fitted without the features (a constant, the
    relevance that the rank alone gives). A query's gain is the difference of its rows'
    log-likelihoods; features that carry nothing of the relevance gain nothing (constant
    features exactly 0) or lose (noise that the trees fit on one fold).

    Parameters
    ----------
    xgb : module
        xgboost.
    X : array or CSR matrix of shape (n, n_features)
        The displayed rows' features.
    counts : DisplayCounts
        Their displays and clicks per rank (rows aligned with ``X``).
    query : int array of shape (n,)
        Each row's query (any integer ids).
    theta : array of shape (K,)
        The observation probabilities.
    n_rounds, max_depth, learning_rate, n_jobs
        The trees of :math:`f`.

    Returns
    -------
    FeatureEvidence
        ``z = 0`` with fewer than two queries in a fold.
    """
    queries, q = np.unique(query, return_inverse=True)
    fold = (np.random.default_rng(0).permutation(queries.size) % 2)[q]
    gain = np.zeros(q.size)
    trees = {
        "n_rounds": n_rounds,
        "max_depth": max_depth,
        "learning_rate": learning_rate,
        "n_jobs": n_jobs,
    }
    for f in (0, 1):
        train, test = fold != f, fold == f
        if not train.any() or not test.any():
            return FeatureEvidence(0.0, 0.0, int(queries.size))
        seen, held = counts.take(train), counts.take(test)
        t = theta[held.rank]
        gain[test] = _log_likelihood(
            held, t * _held_out(xgb, X, seen, train, test, theta, trees)[held.row]
        )
        blind = np.zeros((q.size, 1), dtype=np.float32)  # the same trees without the features
        gain[test] -= _log_likelihood(
            held, t * _held_out(xgb, blind, seen, train, test, theta, trees)[held.row]
        )
    per_query = np.bincount(q, gain)
    spread = float(per_query.std(ddof=1)) if queries.size > 1 else 0.0
    mean = float(per_query.mean())
    z = mean / (spread / math.sqrt(queries.size)) if spread > 0 else 0.0
    return FeatureEvidence(z, mean, int(queries.size))
