r"""Web-search-shaped synthetic ranking data: deep queries, many features, rare top grades.

The bundled LETOR 4.0 datasets have shallow queries (about 19 documents a query in MQ2008, 41
in MQ2007-agg) and three grades. Web search data (MSLR-WEB30K, Istella) have about 100 to 120
documents a query with a long tail, over a hundred features and five grades, of which only 2 to
3 % of the documents hold the top two. :func:`make_web_splits` draws data of that shape from a
seed, with a relevance the features determine up to noise.

The generative model (the world is fixed: the same for every seed; a seed draws queries,
documents and noise from it):

- **queries**: :math:`D_q` documents, log-normal with mean ``mean_docs`` and log-spread
  ``docs_sigma`` (a long right tail), rounded and clipped to ``[min_docs, max_docs]``;
- **features**: ``n_features`` columns :math:`x = z + u_q`, with :math:`z \sim N(0, I)` per
  document and a query shift :math:`u_q \sim N(0, 0.5^2 I)` shared by the documents of a query
  (web features such as BM25 have query-dependent levels); with ``feature_noise`` :math:`\sigma_f
  > 0` the model sees :math:`x + \sigma_f \epsilon` instead, :math:`\epsilon \sim N(0, I)`, while
  relevance depends on :math:`z` (features that measure relevance imperfectly);
- **relevance score** of the first ``n_informative`` columns of :math:`z`, standardised: linear,
  :math:`s = w^\top z`; or nonlinear, :math:`s = \sum_j w_j \sin(1.5 z_j) + \tfrac12 \sum_{(a,b)}
  z_a z_b + \sum_{j < 10} |w_j| \max(z_j, 0)` (15 fixed pairs), which trees can fit but a linear
  model cannot; plus a query effect :math:`N(0, 0.5^2)` shared by a query's documents (some
  queries have many relevant documents, some none), plus label noise :math:`N(0,`
  ``label_noise``:math:`^2)`;
- **grades** 0-4 by thresholding the noisy score at the quantiles that give the shares
  ``grade_shares`` (MSLR-WEB30K's, by default :data:`MSLR_GRADE_SHARES`), over the world's
  score distribution (the same thresholds for every seed and split);
- **a protected group** (``groups``, :class:`WebGroups`; none by default): a document
  attribute, a level 0-9 whose levels below ``10 * share`` form the group, and a query-level
  feature :math:`c_q \sim N(0, 1)` that shifts the group's relevance score by ``query_shift``
  :math:`\cdot\, c_q`, so that its share of a query's merit varies from query to query; the
  other columns, the noise and the query effects are those of the shape without it
  (:doc:`/guide/data`, which says why and how it is drawn).

Nothing here is fitted to a real dataset beyond these shapes; the bundled ``mslr-sample`` (90
real MSLR queries) is the check on real data.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import numpy as np
import scipy.sparse as sp

from ._groups import Split
from ._util.validation import check_choice, check_seed, is_int, is_number

__all__ = ["MSLR_GRADE_SHARES", "WEB_VARIANTS", "WebGroups", "WebShape", "make_web_splits"]

#: The share of the grades 0..4 in MSLR-WEB30K (Qin and Liu 2013): 2.6 % in the top two.
MSLR_GRADE_SHARES = (0.515, 0.325, 0.134, 0.018, 0.008)

#: The seed of the world (relevance weights, pairs, grade thresholds): fixed, so that every
#: seed draws from the same distribution.
_WORLD_SEED = 20240714

#: Documents drawn once to set the grade thresholds at the quantiles of the world's scores.
_CALIBRATION_DOCS = 200_000

#: The largest feature and label noise (standard deviations; the features and the standardised
#: score have about 1): far above it the float32 features overflow.
MAX_NOISE = 1e6

#: The largest log-spread of the documents a query (at 10 nearly every query is ``min_docs``
#: long already; far above it the log-normal's parameters overflow).
MAX_DOCS_SIGMA = 10.0

#: Nonlinear relevance: the pairs of informative columns whose products enter the score.
_PAIRS = 15

#: The stream of the protected group's draws (``[seed, _WORLD_SEED, _GROUPS_STREAM]``).
_GROUPS_STREAM = 1

#: The levels of the protected group's attribute: integers 0 .. _LEVELS - 1, drawn uniformly.
_LEVELS = 10


@dataclass(frozen=True)
class WebGroups:
    """A protected group whose share of a query's merit varies by query (the module's model).

    Attributes
    ----------
    share : float
        The protected group's share of the documents, a multiple of 0.1 in (0, 1): the
        attribute's levels below ``10 * share``. Read the group back as the attribute below its
        ``share``-quantile on the training split (``protected = {feature = n_features + 1,
        quantile = share}`` in a frontier configuration).
    query_shift : float
        The standard deviation over queries of the shift of the protected documents' relevance
        score (in units of the score's standard deviation, 1; the label noise's is
        ``label_noise``). 1.25 makes the spread of the group's share of a query's merit that of
        QualityScore2's group on the bundled MSLR sample (a standard deviation over queries of
        about 0.23); 0 leaves the group without any relation to relevance.
    """

    share: float = 0.4
    query_shift: float = 1.25

    def __post_init__(self) -> None:
        if not (
            is_number(self.share)
            and 0 < self.share < 1
            and abs(self.share * _LEVELS - round(self.share * _LEVELS)) < 1e-9
        ):
            raise ValueError(
                f"share must be a multiple of 0.1 in (0, 1), but {self.share!r} is given."
            )
        if (
            not is_number(self.query_shift)
            or not math.isfinite(self.query_shift)
            or (self.query_shift < 0)
        ):
            raise ValueError(
                f"query_shift must be a finite number >= 0, but {self.query_shift!r} is given."
            )

    @property
    def protected_levels(self) -> int:
        """The attribute's levels of the protected group: 0 .. protected_levels - 1."""
        return round(self.share * _LEVELS)

    def draw(
        self, sizes: np.ndarray, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per document of queries of ``sizes``: the attribute, the query feature and the shift
        of its relevance score."""
        n = int(sizes.sum())
        level = rng.integers(0, _LEVELS, size=n)
        context = np.repeat(rng.standard_normal(sizes.shape[0]), sizes)
        shift = self.query_shift * context * (level < self.protected_levels)
        return level, context, shift


@dataclass(frozen=True)
class WebShape:
    """The parameters of a web-shaped dataset; defaults MSLR-like.

    :func:`~gbdt_plrank._synthetic.make_web_splits` draws the data of a shape.

    Attributes
    ----------
    relevance : {"linear", "nonlinear"}
        How the relevance score depends on the features.
    feature_noise : float
        Standard deviation of the noise on the features the model sees (0: none; at most 1e6).
    label_noise : float
        Standard deviation of the noise added to the standardised relevance score (0 to 1e6).
    queries : tuple of int
        Queries in the train, validation and test splits.
    mean_docs, docs_sigma : float
        Mean (> 0) and log-spread (0 to 10) of the log-normal number of documents a query.
    min_docs, max_docs : int
        Clipping of the number of documents a query.
    n_features, n_informative : int
        Feature columns, and how many of them the relevance depends on.
    grade_shares : tuple of float
        Share of each grade 0, 1, ... over the world's documents.
    groups : WebGroups, optional
        A protected group whose share of the merit varies by query (``WebGroups``); its
        attribute and query feature are two more columns, ``n_features + 1`` and
        ``n_features + 2`` (1-based). None (default): no group.
    """

    relevance: Literal["linear", "nonlinear"] = "linear"
    feature_noise: float = 0.0
    label_noise: float = 1.0
    queries: tuple[int, int, int] = (1500, 300, 300)
    mean_docs: float = 120.0
    docs_sigma: float = 0.5
    min_docs: int = 10
    max_docs: int = 1000
    n_features: int = 136
    n_informative: int = 30
    grade_shares: tuple[float, ...] = MSLR_GRADE_SHARES
    groups: WebGroups | None = None

    def __post_init__(self) -> None:
        check_choice("relevance", self.relevance, ("linear", "nonlinear"))
        for name in ("feature_noise", "label_noise"):
            _number(
                name, getattr(self, name), low=0.0, high=MAX_NOISE, rule="a number from 0 to 1e6"
            )
        queries = _sequence("queries", self.queries, "three integers >= 1 (train, vali, test)")
        if len(queries) != 3 or not all(is_int(q) and q >= 1 for q in queries):
            raise ValueError(
                f"queries must be three integers >= 1 (train, vali, test), but {self.queries!r} "
                "is given."
            )
        for name in ("min_docs", "max_docs", "n_features", "n_informative"):
            value = getattr(self, name)
            if not is_int(value):
                raise ValueError(f"{name} must be an integer, but {value!r} is given.")
        if not 1 <= self.min_docs <= self.max_docs:
            raise ValueError(
                f"min_docs and max_docs must satisfy 1 <= min_docs <= max_docs, but "
                f"{self.min_docs!r} and {self.max_docs!r} are given."
            )
        _number("mean_docs", self.mean_docs, low=0.0, rule="a finite number > 0", strict=True)
        _number(
            "docs_sigma",
            self.docs_sigma,
            low=0.0,
            high=MAX_DOCS_SIGMA,
            rule="a number from 0 to 10",
        )
        if not 10 <= self.n_informative <= self.n_features:
            raise ValueError(
                f"n_informative must be from 10 to n_features ({self.n_features}), but "
                f"{self.n_informative!r} is given."
            )
        rule = "two or more finite positive shares"
        shares = _sequence("grade_shares", self.grade_shares, rule)
        if len(shares) < 2 or not all(is_number(v) and math.isfinite(v) and v > 0 for v in shares):
            raise ValueError(f"grade_shares must be {rule}, but {self.grade_shares!r} is given.")
        if self.groups is not None and not isinstance(self.groups, WebGroups):
            raise ValueError(f"groups must be a WebGroups or None, but {self.groups!r} is given.")
        # lists become tuples (the shape is hashable: its world is drawn once per process),
        # NumPy scalars Python numbers
        object.__setattr__(self, "queries", tuple(int(q) for q in queries))
        object.__setattr__(self, "grade_shares", tuple(float(v) for v in shares))
        for name in ("min_docs", "max_docs", "n_features", "n_informative"):
            object.__setattr__(self, name, int(getattr(self, name)))
        for name in ("feature_noise", "label_noise", "mean_docs", "docs_sigma"):
            object.__setattr__(self, name, float(getattr(self, name)))


def _number(
    name: str, value: object, *, low: float, rule: str, strict: bool = False, high: float = math.inf
) -> None:
    """``value`` must be a finite number from ``low`` (above it where ``strict``) to ``high``."""
    if (
        not is_number(value)
        or not math.isfinite(value)
        or not low <= value <= high
        or (strict and value == low)
    ):
        raise ValueError(f"{name} must be {rule}, but {value!r} is given.")


def _sequence(name: str, value: object, rule: str) -> tuple:
    """``value`` (a tuple, list or one-dimensional array) as a tuple; refused otherwise."""
    if isinstance(value, np.ndarray) and value.ndim == 1:
        return tuple(value.tolist())
    if not isinstance(value, (tuple, list)):
        raise ValueError(f"{name} must be {rule}, but {value!r} is given.")
    return tuple(value)


#: The bundled variants of ``load_dataset``: name -> shape.
WEB_VARIANTS: dict[str, WebShape] = {
    "web-linear": WebShape(relevance="linear"),
    "web-nonlinear": WebShape(relevance="nonlinear"),
    "web-noisy": WebShape(relevance="nonlinear", feature_noise=1.0),
}


class _World:
    """The fixed relevance function of ``shape`` and its grade thresholds."""

    def __init__(self, shape: WebShape) -> None:
        self.shape = shape
        rng = np.random.default_rng(_WORLD_SEED)
        m = shape.n_informative
        self.w = rng.standard_normal(m)
        self.pairs = rng.integers(0, m, size=(_PAIRS, 2))
        z = rng.standard_normal((_CALIBRATION_DOCS, m))
        raw = self._raw(z)
        self.center, self.scale = float(raw.mean()), float(raw.std())
        shift: float | np.ndarray = 0.0
        if shape.groups is not None:  # one document a query: the shift's marginal distribution
            groups_rng = np.random.default_rng([_WORLD_SEED, _GROUPS_STREAM])
            shift = shape.groups.draw(np.ones(_CALIBRATION_DOCS, dtype=np.int64), groups_rng)[2]
        noisy = self.score(z, rng.standard_normal(_CALIBRATION_DOCS), rng, shift=shift)
        cuts = np.cumsum(np.asarray(shape.grade_shares) / np.sum(shape.grade_shares))[:-1]
        self.thresholds = np.quantile(noisy, cuts)

    def _raw(self, z: np.ndarray) -> np.ndarray:
        if self.shape.relevance == "linear":
            return z @ self.w
        a, b = self.pairs[:, 0], self.pairs[:, 1]
        return (
            np.sin(1.5 * z) @ self.w
            + 0.5 * (z[:, a] * z[:, b]).sum(axis=1)
            + np.maximum(z[:, :10], 0.0) @ np.abs(self.w[:10])
        )

    def score(
        self,
        z: np.ndarray,
        query_effect: np.ndarray,
        rng: np.random.Generator,
        *,
        shift: np.ndarray | float = 0.0,
    ) -> np.ndarray:
        """The noisy relevance score of documents ``z`` with their query effect (N(0,1) draws)
        and the protected group's ``shift``."""
        standard = (self._raw(z) - self.center) / self.scale
        noise = self.shape.label_noise * rng.standard_normal(z.shape[0])
        return standard + shift + 0.5 * query_effect + noise


@lru_cache(maxsize=8)
def _world(shape: WebShape) -> _World:
    """The world of ``shape``, drawn once per process (its calibration draws 200,000 documents)."""
    return _World(shape)


def _split(
    world: _World,
    n_queries: int,
    rng: np.random.Generator,
    first_qid: int,
    groups_rng: np.random.Generator | None,
) -> Split:
    shape = world.shape
    mu = np.log(shape.mean_docs) - 0.5 * shape.docs_sigma**2
    sizes = np.clip(
        np.rint(rng.lognormal(mu, shape.docs_sigma, n_queries)), shape.min_docs, shape.max_docs
    ).astype(np.int64)
    n = int(sizes.sum())
    qid = np.repeat(np.arange(first_qid, first_qid + n_queries, dtype=np.int64), sizes)
    z = rng.standard_normal((n, shape.n_features), dtype=np.float32)
    shift = np.repeat(
        0.5 * rng.standard_normal((n_queries, shape.n_features), dtype=np.float32), sizes, axis=0
    )
    groups = None
    if shape.groups is not None and groups_rng is not None:
        groups = shape.groups.draw(sizes, groups_rng)
    y = np.searchsorted(
        world.thresholds,
        world.score(
            z[:, : shape.n_informative].astype(np.float64),
            np.repeat(rng.standard_normal(n_queries), sizes),
            rng,
            shift=0.0 if groups is None else groups[2],
        ),
    ).astype(np.float64)
    X = z + shift
    if shape.feature_noise > 0:
        X += np.float32(shape.feature_noise) * rng.standard_normal(X.shape, dtype=np.float32)
    if groups is not None:
        X = np.column_stack([X, groups[0], groups[1]]).astype(np.float32)
    return Split(_stored_csr(X), y, qid)


def _stored_csr(X: np.ndarray) -> sp.csr_matrix:
    """The dense matrix ``X`` as a CSR matrix that stores every entry, zeros included (as
    values, as in the dense matrix: the boosters read a stored entry as a value and only an
    absent one as missing)."""
    n, m = X.shape
    index = np.int32 if n * m < 2**31 else np.int64
    return sp.csr_matrix(
        (X.ravel(), np.tile(np.arange(m, dtype=index), n), np.arange(0, n * m + 1, m, dtype=index)),
        shape=(n, m),
    )


def make_web_splits(shape: WebShape | None = None, *, seed: int = 0) -> tuple[Split, Split, Split]:
    """Draw web-shaped train, validation and test splits (the module's model) from ``seed``.

    Parameters
    ----------
    shape : WebShape, optional
        The dataset's parameters; MSLR-like with a linear relevance by default.
    seed : int, default 0
        The draw: the same shape and seed always give the same data; different seeds are
        independent samples of the same world (the relevance function and grade thresholds).

    Returns
    -------
    tuple of Split
        Train, validation and test, with float32 features in SciPy CSR matrices (as the bundled
        datasets'; every entry stored, the features being dense) and query ids numbered on
        across the three splits.

    Raises
    ------
    TypeError
        For a ``shape`` that is not a :class:`WebShape`.
    ValueError
        For a ``seed`` that is not an integer in [0, 2**63).
    """
    shape = WebShape() if shape is None else shape
    if not isinstance(shape, WebShape):
        hint = f" (WebShape(**{shape!r}) for its keys)" if isinstance(shape, dict) else ""
        raise TypeError(
            f"shape must be a WebShape or None, but a {type(shape).__name__} is given{hint}."
        )
    seed = check_seed("seed", seed)
    world = _world(shape)
    rng = np.random.default_rng([seed, _WORLD_SEED])
    groups_rng = (
        None if shape.groups is None else np.random.default_rng([seed, _WORLD_SEED, _GROUPS_STREAM])
    )
    splits, first = [], 0
    for n_queries in shape.queries:
        splits.append(_split(world, n_queries, rng, first, groups_rng))
        first += n_queries
    return splits[0], splits[1], splits[2]
