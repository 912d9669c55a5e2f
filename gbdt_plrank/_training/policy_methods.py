r"""What a ranker whose scores are a Plackett-Luce policy's log-scores offers besides scores.

:class:`PolicyMethods` gives a fitted ranker (its ``predict(X)`` returns the margins :math:`m(d)`)
the policy's sampled rankings, expected exposure and expected metric, and ``score``, the metric
of the ranking by score: :class:`~gbdt_plrank.PLRankRanker` and every other ranker of the package
that trains a policy share them.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from .._groups import (
    Groups,
    Split,
    boundaries,
    ranker_group,
    require_group,
    resolve_groups,
)
from .._ranking_metric import RankingMetric, dcg_weights, ranks_used
from .._util.docs import shared_entries
from .._util.seeds import seeds_from
from .._util.validation import (
    check_choice,
    check_labels,
    check_positive_int,
    check_positive_number,
    check_same_length,
)
from ..metrics._ranking import EMPTY_QUERY_VALUE, check_empty, mean_over_queries
from .evaluation import per_sample_metric, ranking_values
from .policy_sample import PolicySample, sample_policy, sampled_exposure

__all__ = ["EXPOSURE_METHODS", "MetricEstimate", "PolicyMethods"]

#: How :meth:`PolicyMethods.expected_exposure` estimates exposure from sampled rankings.
EXPOSURE_METHODS = ("count", "placement")

#: The parameters the policy's methods share, as numpydoc entries (docstrings name them in a
#: ``.. policy-parameters:: X group ...`` line, which :func:`_policy_docs` fills).
_POLICY_PARAMETERS = {
    "X": "X : array-like or sparse matrix of shape (n_rows, n_features)",
    "group": (
        "group : array-like, str or None, default None\n"
        "    Query ids, group sizes or a DataFrame column's name (as in ``fit``), or ``None``\n"
        "    for one query."
    ),
    "n_samples": "n_samples : int\n    Rankings per query, ``>= 1``.",
    "temperature": (
        "temperature : float, default 1.0\n"
        "    Sample from the policy of the margins divided by ``temperature`` (finite, > 0):\n"
        "    below 1 sharper, toward the ranking by score; above 1 flatter, toward uniform."
    ),
}

#: Fills a method's ``.. policy-parameters::`` lines from :data:`_POLICY_PARAMETERS`.
_policy_docs = shared_entries("policy-parameters", _POLICY_PARAMETERS)


class MetricEstimate(NamedTuple):
    """A Monte-Carlo estimate and its standard error."""

    mean: float
    stderr: float


def _rank_weights(weights: Any) -> np.ndarray:
    """Rank weights as a float64 array: one-dimensional, non-empty, finite and ``>= 0``."""
    theta = np.asarray(weights, dtype=np.float64)
    if theta.ndim != 1 or theta.size == 0:
        raise ValueError(
            f"weights should be a non-empty one-dimensional array, but shape {theta.shape} is given"
        )
    bad = ~np.isfinite(theta) | (theta < 0)
    if bad.any():
        raise ValueError(f"weights should be finite and >= 0, but {theta[bad][0]} is given")
    return theta


class PolicyMethods:
    """The policy's outputs for a fitted ranker (see the module docstring).

    The ranker provides ``predict(X)`` (its margins, after checking that it is fitted and
    ``X``), the cut-off ``K``, ``metric`` and ``gain`` of the metric it is judged by, and
    ``n_jobs``; after ``fit``, ``group_column_`` names the DataFrame column that held the query
    ids, if any. ``group`` is read by :func:`~gbdt_plrank._groups.ranker_group`: the methods
    that judge queries (:meth:`score`, :meth:`expected_metric`) refuse ``None``.
    """

    K: int
    metric: str
    gain: str
    n_jobs: int | None

    def predict(self, X: Any) -> np.ndarray:
        raise NotImplementedError

    def _judged_metric(self, K: int | None = None) -> RankingMetric:
        return RankingMetric(self.metric, self.K if K is None else K, self.gain)

    def _signed_labels(self) -> bool:
        """Whether labels may be negative (``PLRankOptions.signed_labels``' rule)."""
        return self._judged_metric().signed and getattr(self, "fairness", None) is None

    def _margins(
        self, X: Any, group: Any, *, needed_by: str | None, temperature: object = 1.0
    ) -> tuple[np.ndarray, Groups]:
        """The margins of ``X`` divided by ``temperature``, and the queries of ``group``.

        A column name ``group`` is read from a DataFrame ``X``; the query-id column of ``fit``
        is not a feature either way.
        """
        temperature = check_positive_number("temperature", temperature)
        X, group = ranker_group(X, group, fitted_column=getattr(self, "group_column_", None))
        margins = self.predict(X) / temperature
        if needed_by is not None:
            require_group(X, group, needed_by=needed_by)
        return margins, resolve_groups(group, margins.shape[0])

    def _sample(
        self,
        X: Any,
        group: Any,
        *,
        n_samples: object,
        K: object,
        random_state: Any,
        temperature: object,
        needed_by: str | None = None,
    ) -> PolicySample:
        margins, groups = self._margins(X, group, needed_by=needed_by, temperature=temperature)
        (seed,) = seeds_from(random_state, 1)
        return sample_policy(
            margins,
            groups,
            K=check_positive_int("K", K),
            n_samples=check_positive_int("n_samples", n_samples),
            seed=seed,
            n_jobs=self.n_jobs,
        )

    def score(
        self, X: Any, y: Any, group: Any = None, *, empty: float = EMPTY_QUERY_VALUE
    ) -> float:
        r"""Mean metric@K over the queries of the ranking by :meth:`predict` (NDCG@K by default).

        XGBoost's and LightGBM's conventions (:mod:`gbdt_plrank.metrics`): gain
        :math:`2^\ell - 1` (``gain="exp"``) or :math:`\ell`, discount :math:`1/\log_2(r+1)`,
        ties in input order, and a query without relevant documents scores ``empty`` for NDCG
        (1 by default, as XGBoost's ``ndcg@k`` and LightGBM's ``ndcg``).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Labels, finite and ``>= 0``.
        group : array-like or str
            Query ids, group sizes or a DataFrame column's name (as in ``fit``). Required:
            ``None`` raises rather than score all rows as one query (``np.zeros(n_samples)``
            does that). In ``GridSearchCV`` or ``cross_val_score``, route it with scikit-learn's
            metadata routing (``set_score_request(group="groups")``).
        empty : float, default 1.0
            NDCG@K of a query without relevant documents: ``1.0`` as XGBoost's ``ndcg@k`` and
            LightGBM, ``0.0`` as XGBoost's ``ndcg@k-`` and scikit-learn's ``ndcg_score``,
            ``nan`` to leave such queries out of the mean (as the comparison harness does).

        Returns
        -------
        float
        """
        empty = check_empty(empty)
        scores, groups = self._margins(X, group, needed_by="score")
        labels = check_labels(y, gain=self.gain, signed=self._signed_labels())
        check_same_length(X=scores, y=labels)
        queries = Split.grouped(None, labels, groups)
        values = ranking_values(
            self._judged_metric(), queries, groups.to_sorted(scores), empty=empty
        )
        return mean_over_queries(values)

    @_policy_docs
    def sample_rankings(
        self,
        X: Any,
        group: Any = None,
        *,
        n_samples: int,
        K: int | None = None,
        random_state: Any = None,
        temperature: float = 1.0,
    ) -> list[np.ndarray]:
        r"""Draw rankings from the learned Plackett-Luce policy.

        For each query, ``n_samples`` independent rankings :math:`y = (y_1, .., y_k)`,
        :math:`k = \min(K, D)`, each drawn with probability

        .. math::

            \pi(y) = \prod_{i=1}^{k} \frac{e^{m(y_i)}}{\sum_{d \notin \{y_1..y_{i-1}\}} e^{m(d)}}.

        Parameters
        ----------
        .. policy-parameters:: X group n_samples
        K : int or None, default None
            Ranking length; ``None`` uses the ranker's ``K``.
        random_state : int, RandomState or None, default None
            The same int gives the same rankings (whatever the number of threads).
        .. policy-parameters:: temperature

        Returns
        -------
        list of int64 arrays of shape (n_samples, min(K, D))
            One per query, queries in the order of their first appearance in ``group``; entries
            are row indices into ``X``, top rank first.
        """
        sample = self._sample(
            X,
            group,
            n_samples=n_samples,
            K=self.K if K is None else K,
            random_state=random_state,
            temperature=temperature,
        )
        return sample.per_query()

    @_policy_docs
    def expected_exposure(
        self,
        X: Any,
        group: Any = None,
        *,
        n_samples: int,
        random_state: Any = None,
        temperature: float = 1.0,
        weights: Any = None,
        method: str = "count",
    ) -> np.ndarray:
        r"""Monte-Carlo expected exposure of every row under the learned policy.

        .. math::

            \hat{E}(d) = \frac{1}{S} \sum_{s=1}^{S} \theta_{\mathrm{rank}_s(d)},
            \qquad \theta_k = \frac{1}{\log_2(k + 1)} \text{ for } k \le K, \ 0 \text{ after},

        an unbiased estimate of :math:`\mathbb{E}_{y \sim \pi}[\theta_{\mathrm{rank}_y(d)}]` from
        :math:`S` = ``n_samples`` rankings of its query (``method="count"``), or from the same
        rankings' placement probabilities (``method="placement"``: each rank's probability that
        :math:`d` takes it given the documents placed above, also unbiased and positive for every
        row). Each query's exposures sum to :math:`\sum_{k \le \min(K, D)} \theta_k`. With the same
        ``random_state`` and ``n_samples`` both use exactly the rankings :meth:`sample_rankings`
        returns. Other rank weights, such as a click model's observation probabilities, give other
        exposures: the estimators and their uses are in :doc:`/guide/ranker`, "What the policy gives
        besides scores".

        Parameters
        ----------
        .. policy-parameters:: X group n_samples
        random_state : int, RandomState or None, default None
        .. policy-parameters:: temperature
        weights : array-like of shape (L,) or None, default None
            Rank weights :math:`\theta_1 .. \theta_L` (finite, ``>= 0``; 0 beyond rank ``L``)
            in place of the DCG weights up to ``K``.
        method : {"count", "placement"}, default "count"
            Count the rank each row took, or sum its placement probabilities (lower variance for
            most rows, never 0 for a row the policy can show, at :math:`O(D)` per rank and
            ranking rather than :math:`O(1)`).

        Returns
        -------
        float64 array of shape (n_rows,)
            In the caller's row order.
        """
        method = check_choice("method", method, EXPOSURE_METHODS)
        K = check_positive_int("K", self.K) if weights is None else None
        theta = None if weights is None else _rank_weights(weights)
        margins, groups = self._margins(X, group, needed_by=None, temperature=temperature)
        if theta is None:
            theta = dcg_weights(ranks_used(K, groups.ptr))
        (seed,) = seeds_from(random_state, 1)
        sizes = groups.sizes
        grouped = sampled_exposure(  # the queries' streams of sample_policy: empty ones left out
            groups.to_sorted(margins),
            boundaries(sizes[sizes > 0]),
            theta,
            n_samples=check_positive_int("n_samples", n_samples),
            seed=seed,
            round_=0,
            n_jobs=self.n_jobs,
            placement=method == "placement",
        )
        return groups.to_input(grouped)

    @_policy_docs
    def expected_metric(
        self,
        X: Any,
        y: Any,
        group: Any = None,
        *,
        n_samples: int,
        random_state: Any = None,
        temperature: float = 1.0,
        empty: float = EMPTY_QUERY_VALUE,
    ) -> MetricEstimate:
        r"""Monte-Carlo expected metric@K (NDCG@K by default) of the learned policy, with its error.

        With :math:`Q` non-empty queries and :math:`S` = ``n_samples`` rankings of each, let
        :math:`X_s = \frac{1}{Q}\sum_{q} \mathrm{metric@K}(y^{(q,s)})` be the mean metric@K of
        the ``s``-th sample (conventions of :meth:`score`). The :math:`X_s` are independent and
        identically distributed with mean
        :math:`\mu = \frac{1}{Q}\sum_q \mathbb{E}_{y \sim \pi_q}[\mathrm{metric@K}(y)]`, so

        .. math::

            \hat{\mu} = \frac{1}{S}\sum_{s=1}^{S} X_s, \qquad
            \mathrm{SE} = \sqrt{\frac{1}{S(S-1)} \sum_{s=1}^{S} (X_s - \hat{\mu})^2}:

        the standard error of the mean over the ``n_samples`` draws of the dataset-mean
        metric@K, i.e. the Monte-Carlo error for these queries (not a sampling error over
        queries).

        Parameters
        ----------
        .. policy-parameters:: X
        y : array-like of shape (n_rows,)
            Labels, finite and ``>= 0``.
        group : array-like or str
            Query ids, group sizes or a DataFrame column's name (as in ``fit``). Required, as
            in :meth:`score`: ``np.zeros(n_rows)`` makes all rows one query.
        n_samples : int
            Rankings per query, ``>= 2``.
        random_state : int, RandomState or None, default None
        .. policy-parameters:: temperature
        empty : float, default 1.0
            NDCG@K of a query without relevant documents, as in :meth:`score` (``nan`` leaves
            such queries out of :math:`X_s`).

        Returns
        -------
        MetricEstimate
            The named tuple ``(mean, stderr)``.
        """
        if check_positive_int("n_samples", n_samples) < 2:
            raise ValueError(
                f"n_samples must be an integer >= 2 to estimate a standard error, but "
                f"{n_samples!r} is given."
            )
        empty = check_empty(empty)
        labels = check_labels(y, gain=self.gain, signed=self._signed_labels())
        sample = self._sample(
            X,
            group,
            n_samples=n_samples,
            K=self.K,
            random_state=random_state,
            temperature=temperature,
            needed_by="expected_metric",
        )
        check_same_length(X=sample.groups.order, y=labels)
        values = per_sample_metric(sample, labels, self._judged_metric(), empty=empty)
        stderr = values.std(ddof=1) / np.sqrt(values.shape[0])
        return MetricEstimate(float(values.mean()), float(stderr))
