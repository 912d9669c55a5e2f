r"""Paired comparison of two rankers over the same queries (the query is the unit of evidence).

For queries :math:`q = 1..n` scored by both rankers (each ranker's seeds averaged per query
first), the paired differences :math:`d_q = a_q - b_q` give the mean difference
:math:`\bar d`, its 95% confidence interval :math:`\bar d \pm t_{0.975, n-1}\, s_d/\sqrt{n}`, the
p-value of the paired t-test, and the p-value of the paired randomization test (Fisher's sign-flip
permutation test: under the null hypothesis each :math:`d_q` is as likely to be :math:`-d_q`),
which decides the verdict: "ahead" or "behind" when :math:`p < 0.05`, "level" otherwise.

References
----------
M. D. Smucker, J. Allan and B. Carterette. A comparison of statistical significance tests for
information retrieval evaluation. CIKM 2007.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
from scipy import stats

#: A query's key in per-query values (``(dataset fold, query id)``, say).
Key = TypeVar("Key", bound=Hashable)

__all__ = ["ALPHA", "RESAMPLES", "Paired", "paired", "seed_means"]

#: Level of the tests.
ALPHA = 0.05
#: Sign flips drawn by the randomization test (exact when 2**n is not larger).
RESAMPLES = 10_000


@dataclass(frozen=True)
class Paired:
    """The paired comparison of ranker ``a`` with ranker ``b`` (``a - b``).

    Attributes
    ----------
    n : int
        Queries scored by both.
    mean, low, high : float
        Mean paired difference and its 95% confidence interval (t distribution).
    p_t, p_randomization : float
        Two-sided p-values of the paired t-test and of the paired randomization test.
    verdict : {"ahead", "behind", "level"}
        From the randomization test at :data:`ALPHA`.
    """

    n: int
    mean: float
    low: float
    high: float
    p_t: float
    p_randomization: float
    verdict: str

    @property
    def interval(self) -> str:
        """The mean difference and its 95% interval as the reports write them, e.g.
        ``"+0.0012 [-0.0010, +0.0034]"``."""
        return f"{self.mean:+.4f} [{self.low:+.4f}, {self.high:+.4f}]"


def seed_means(values: Iterable[tuple[Key, float]]) -> dict[Key, float]:
    """Each query's mean over the runs (the seeds) that scored it: the per-query values paired.

    Parameters
    ----------
    values : iterable of (query key, value)
        A key per query, e.g. ``(dataset fold, query id)``, once per run that scored it.

    Returns
    -------
    dict
        Key -> the mean of its values, in the order the keys first appear.
    """
    runs: dict[Key, list[float]] = {}
    for key, value in values:
        runs.setdefault(key, []).append(value)
    return {key: float(np.mean(v)) for key, v in runs.items()}


def paired(a: Mapping[Key, float], b: Mapping[Key, float], *, seed: int = 0) -> Paired:
    """Compare per-query values ``a`` and ``b`` on the queries they share.

    Parameters
    ----------
    a, b : mapping
        Query -> value (e.g. test NDCG@k, seeds already averaged).
    seed : int, default 0
        Seed of the randomization test's sign flips.

    Returns
    -------
    Paired

    Raises
    ------
    ValueError
        When fewer than two queries are shared.
    """
    shared = [q for q in a if q in b]
    if len(shared) < 2:
        raise ValueError(
            f"a paired test needs at least 2 shared queries, but {len(shared)} are shared."
        )
    d = np.array([a[q] - b[q] for q in shared], dtype=np.float64)
    n = d.shape[0]
    mean = float(d.mean())
    se = float(d.std(ddof=1) / np.sqrt(n))
    half = float(stats.t.ppf(0.975, n - 1)) * se
    if se == 0.0:  # every difference equal: the t statistic is 0 or infinite
        p_t = 1.0 if mean == 0.0 else 0.0
    else:
        p_t = float(stats.ttest_1samp(d, 0.0).pvalue)
    p_r = float(
        stats.permutation_test(
            (d,),
            np.mean,
            permutation_type="samples",
            n_resamples=RESAMPLES,
            alternative="two-sided",
            rng=np.random.default_rng(seed),
        ).pvalue
    )
    return Paired(n, mean, mean - half, mean + half, p_t, p_r, _verdict(mean, p_r))


def _verdict(mean: float, p: float) -> str:
    if p >= ALPHA:
        return "level"
    return "ahead" if mean > 0 else "behind"
