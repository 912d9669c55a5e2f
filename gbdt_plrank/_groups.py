"""Rows grouped by query, and how a ``group=`` argument is read.

:class:`Split` is the package's one type of rows grouped by query: the datasets' splits, the data
every booster trains and evaluates on, and the labelled queries a policy is evaluated on.
:func:`boundaries` turns query sizes into boundaries ``[0, ..., n]``.

A ``group=`` argument is read the same way by the rankers and the metrics (:func:`resolve_groups`):

- per-row query ids (length ``n_rows``): rows need not be sorted; they are sorted stably by query
  id, so the queries' order is that of their ids and shuffling whole queries changes nothing;
- LightGBM-style group sizes: a sequence whose length differs from ``n_rows`` and that sums to it
  (rows already grouped, queries in the given order);
- ``None``: all rows form one query.

A ranker reads it with :func:`ranker_group` first: there ``group`` may also name a column of a
DataFrame ``X`` (taken out of the features), and the methods that train on queries or judge them
refuse ``None``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

import numpy as np

__all__ = [
    "Groups",
    "Split",
    "boundaries",
    "drop_group_column",
    "hold_out_queries",
    "query_rows",
    "ranker_group",
    "recompute_queries",
    "require_group",
    "resolve_groups",
    "row_queries",
    "widest_query",
    "within_query_spread",
]


def boundaries(sizes: Any) -> np.ndarray:
    """Query boundaries ``[0, s_0, s_0 + s_1, ..., n]`` (int64) of the query sizes ``sizes``."""
    out = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(np.asarray(sizes, dtype=np.int64), out=out[1:])
    return out


def row_queries(group_ptr: np.ndarray) -> np.ndarray:
    """Each row's query index ``0..G-1`` (int64) of the query boundaries ``group_ptr``."""
    return np.repeat(np.arange(group_ptr.shape[0] - 1, dtype=np.int64), np.diff(group_ptr))


def within_query_spread(values: np.ndarray, group_ptr: np.ndarray) -> float:
    r"""Root mean within-query variance of ``values`` over the queries of two or more rows.

    :math:`\sqrt{\operatorname{mean}_q \operatorname{Var}(v_d : d \in q)}` (population variances,
    every query of two or more rows counted once); 0 when there is no such query or the values
    are equal within each. A constant added to a query's values leaves it unchanged (to
    rounding), as it leaves the query's ranking and Plackett-Luce policy.
    """
    sizes = np.diff(group_ptr)
    q = row_queries(group_ptr)
    n = np.maximum(sizes, 1)
    mean = np.bincount(q, values, minlength=sizes.shape[0]) / n
    var = np.bincount(q, (values - mean[q]) ** 2, minlength=sizes.shape[0]) / n
    several = sizes > 1
    return float(np.sqrt(var[several].mean())) if several.any() else 0.0


def widest_query(values: np.ndarray, group_ptr: np.ndarray) -> tuple[int, float]:
    """The query whose ``values`` span the most (max minus min) and that span; ``(-1, 0.0)``
    without rows. O(n)."""
    sizes = np.diff(group_ptr)
    filled = np.flatnonzero(sizes > 0)
    if not filled.size:
        return -1, 0.0
    starts = group_ptr[filled]
    span = np.maximum.reduceat(values, starts) - np.minimum.reduceat(values, starts)
    i = int(np.argmax(span))
    return int(filled[i]), float(span[i])


def query_rows(group_ptr: np.ndarray, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rows of ``queries`` (query after query) and their query boundaries, of ``group_ptr``."""
    starts, ends = group_ptr[queries], group_ptr[queries + 1]
    ptr = boundaries(ends - starts)
    rows = np.repeat(starts - ptr[:-1], ends - starts) + np.arange(ptr[-1])
    return rows, ptr


def recompute_queries(
    group_ptr: np.ndarray,
    flagged: np.ndarray,
    compute: Callable[..., None],
    *outs: np.ndarray,
) -> None:
    """Overwrite the rows of the ``flagged`` queries in ``outs`` with what ``compute`` gives.

    ``compute(rows, ptr, queries, *parts)`` fills one float64 array per array of ``outs`` for
    the rows of ``queries`` (the flagged ones, query after query, as :func:`query_rows` gives
    them, with their boundaries ``ptr``); nothing is called when no query is flagged.
    """
    if not flagged.any():
        return
    queries = np.flatnonzero(flagged)
    rows, ptr = query_rows(group_ptr, queries)
    parts = [np.empty(rows.shape[0]) for _ in outs]
    compute(rows, ptr, queries, *parts)
    for out, part in zip(outs, parts, strict=True):
        out[rows] = part


@dataclass(frozen=True)
class Split:
    """Rows grouped by query: features ``X``, labels ``y`` and per-row query ids ``qid``.

    The rows of a query are contiguous and ``qid`` never decreases (what both boosters need).

    Attributes
    ----------
    X : array, CSR matrix or None
        Features of the rows (None where only labels matter).
    y : float64 array of shape (n,)
        Labels.
    qid : int array of shape (n,)
        Query id of every row.
    item_groups : int array of shape (n,) or None
        Item group of every row, for group fairness of exposure (None: none given).
    feature_names : tuple of str or None
        Names of the columns of ``X``, which the boosters keep in their models (None: the
        libraries' defaults, ``f0, f1, ...`` and ``Column_0, Column_1, ...``).
    weights : float64 array of shape (n_queries,) or None
        One weight per query, in query order (None: every query weighs 1); a ranking
        objective scales a query's gradient and Hessian by it.
    base_margin : float64 array of shape (n,) or None
        The margin every row starts from (XGBoost's ``base_margin``, LightGBM's
        ``init_score``): a training adds its trees to it, and a model's margins on the split
        are it plus the trees' (None: the library's base score).
    """

    X: Any
    y: np.ndarray
    qid: np.ndarray
    item_groups: np.ndarray | None = None
    feature_names: tuple[str, ...] | None = None
    weights: np.ndarray | None = None
    base_margin: np.ndarray | None = None

    @classmethod
    def grouped(
        cls, X: Any, y: np.ndarray, groups: Groups, item_groups: np.ndarray | None = None
    ) -> Split:
        """The rows of ``X`` (None: none), ``y`` and ``item_groups`` in ``groups``' query order.

        Empty queries hold no rows and are left out.
        """
        qid = row_queries(groups.ptr)
        ids = None if item_groups is None else groups.to_sorted(item_groups)
        return cls(None if X is None else X[groups.order], groups.to_sorted(y), qid, ids)

    @cached_property
    def group_ptr(self) -> np.ndarray:
        """Query boundaries ``[0, ..., n]``."""
        starts = np.flatnonzero(np.diff(self.qid)) + 1
        return np.concatenate(([0], starts, [self.qid.shape[0]])).astype(np.int64)

    @property
    def group_sizes(self) -> np.ndarray:
        """Documents per query, in order (LightGBM's ``group``)."""
        return np.diff(self.group_ptr)

    @property
    def n_queries(self) -> int:
        return self.group_ptr.shape[0] - 1

    def take_queries(self, queries: np.ndarray) -> Split:
        """The split of ``queries`` (0-based query indices, increasing): their rows, labels,
        item groups, query weights and base margins, each query's rows in their order; the
        feature names kept."""
        rows, _ = query_rows(self.group_ptr, queries)
        return replace(
            self,
            X=None if self.X is None else self.X[rows],
            y=self.y[rows],
            qid=self.qid[rows],
            item_groups=None if self.item_groups is None else self.item_groups[rows],
            weights=None if self.weights is None else self.weights[queries],
            base_margin=None if self.base_margin is None else self.base_margin[rows],
        )


def hold_out_queries(data: Split, *, fraction: float, seed: int) -> tuple[Split, Split]:
    """``data`` cut into the queries kept for training and a random ``fraction`` held out.

    ``round(fraction * n_queries)`` whole queries, at least one and at most all but one, are
    drawn without replacement by ``numpy.random.default_rng(seed)``; each part keeps the queries
    in their order and each query's rows in theirs. The held-out part carries no query weights
    (it is scored as an eval set is, unweighted).

    Raises
    ------
    ValueError
        When ``data`` holds fewer than two queries: nothing could be held out and trained on.
    """
    n = data.n_queries
    if n < 2:
        raise ValueError(
            f"holding out a validation share of the training queries needs at least 2 queries, "
            f"but the training data holds {n}: pass eval_set=[(X_val, y_val, group_val)] or "
            f"early_stopping=False."
        )
    held = np.zeros(n, dtype=bool)
    count = min(max(round(fraction * n), 1), n - 1)
    held[np.random.default_rng(seed).choice(n, size=count, replace=False)] = True
    return (
        data.take_queries(np.flatnonzero(~held)),
        replace(data.take_queries(np.flatnonzero(held)), weights=None),
    )


@dataclass(frozen=True)
class Groups:
    """Query structure of ``n`` rows.

    Attributes
    ----------
    order : int array (n,)
        Row permutation: ``rows[order]`` are grouped by query (stable within a query).
    ptr : int array (G + 1,)
        Boundaries of the G queries in the sorted order.
    qids : array (G,)
        Query id of each sorted query (0..G-1 for group sizes and for ``None``).
    first_seen : int array (G,)
        Sorted-query indices in the order of the queries' first appearance in the input.
    """

    order: np.ndarray
    ptr: np.ndarray
    qids: np.ndarray
    first_seen: np.ndarray

    @property
    def sizes(self) -> np.ndarray:
        return np.diff(self.ptr)

    def to_sorted(self, values: np.ndarray) -> np.ndarray:
        """Rows in grouped order."""
        return values[self.order]

    def to_input(self, values: np.ndarray) -> np.ndarray:
        """Inverse of :meth:`to_sorted`: grouped-order values back in the caller's row order."""
        out = np.empty_like(values)
        out[self.order] = values
        return out


def _from_sizes(sizes: np.ndarray, n_rows: int) -> Groups:
    G = sizes.shape[0]
    ptr = boundaries(sizes)
    ident = np.arange(G, dtype=np.int64)
    return Groups(np.arange(n_rows, dtype=np.int64), ptr, ident, ident)


def resolve_groups(group: object, n_rows: int) -> Groups:
    """Read ``group`` for ``n_rows`` rows (see the module docstring for the rule).

    Raises
    ------
    ValueError
        When ``group`` is neither per-row ids (length ``n_rows``) nor sizes summing to
        ``n_rows``, or holds missing ids, or sizes below 1 (a query with no documents).
    """
    if group is None:
        return _from_sizes(np.array([n_rows], dtype=np.int64), n_rows)
    g = np.asarray(group)
    if g.ndim == 0:
        raise ValueError(
            f"group must be a sequence, per-row query ids (length {n_rows}) or group sizes, but "
            f"the single value {group!r} is given."
        )
    if g.ndim != 1:
        raise ValueError(f"group must be one-dimensional, but has shape {g.shape}.")
    if g.shape[0] == n_rows:
        if g.dtype.kind == "f" and np.isnan(g).any():
            first = int(np.flatnonzero(np.isnan(g))[0])
            raise ValueError(f"group (query ids) must not be NaN, but group[{first}] is.")
        qids, codes = np.unique(g, return_inverse=True)
        order = np.argsort(codes, kind="stable")
        ptr = np.searchsorted(codes[order], np.arange(qids.shape[0] + 1)).astype(np.int64)
        first_rows = order[ptr[:-1]]  # stable: each query's first row comes first
        first_seen = np.argsort(first_rows, kind="stable").astype(np.int64)
        return Groups(order.astype(np.int64), ptr, qids, first_seen)
    is_int = g.dtype.kind in "iu" or (
        g.dtype.kind == "f" and np.all(np.isfinite(g)) and np.all(g == np.round(g))
    )
    if is_int and g.size and g.min() >= 0 and int(g.sum()) == n_rows:
        if g.min() == 0:
            raise ValueError(
                f"group sizes must be >= 1 (a query with no documents is not a query), but group "
                f"{int(np.flatnonzero(g == 0)[0])} has size 0."
            )
        return _from_sizes(g.astype(np.int64), n_rows)
    total = int(g.sum()) if is_int and g.size else "not a sum of sizes"
    raise ValueError(
        f"group must be per-row query ids (length {n_rows}) or group sizes (>= 1) summing to "
        f"{n_rows}, but has length {g.shape[0]} and sum {total}."
    )


#: Column names under which a DataFrame commonly holds its query ids (named in the errors).
QUERY_ID_COLUMNS = ("qid", "query_id")

#: The user guide's recipe for cross-validation with query groups (scikit-learn's metadata routing).
ROUTING_RECIPE = (
    "In GridSearchCV, cross_validate or cross_val_score, route the query ids with scikit-learn's "
    "metadata routing: sklearn.set_config(enable_metadata_routing=True); "
    "ranker.set_fit_request(group='groups').set_score_request(group='groups'); then "
    "search.fit(X, y, groups=qid), or cross_val_score(ranker, X, y, cv=GroupKFold(), "
    "params={'groups': qid}) (the user guide, 'Cross-validation with query groups')."
)


def _is_frame(X: Any) -> bool:
    """A (pandas or dask) DataFrame: named columns that can be taken out."""
    return hasattr(X, "columns") and hasattr(X, "drop")


def _is_pandas(value: Any) -> bool:
    return type(value).__module__.split(".")[0] == "pandas"


def require_group(X: Any, group: Any, *, needed_by: str) -> None:
    """A ranker's method ``needed_by``, which trains on queries or judges them, got query groups.

    Raises
    ------
    ValueError
        When ``group`` is None (all rows would silently be one query), saying what to pass, how
        to route the groups through scikit-learn's model selection and, for a DataFrame ``X``
        with a usual query-id column, that ``group=<column>`` reads it.
    """
    if group is not None:
        return
    hint = ""
    for column in QUERY_ID_COLUMNS if _is_frame(X) else ():
        if column in X.columns:
            hint = f" X has a column {column!r}: group={column!r} reads the query ids from it."
            break
    raise ValueError(
        f"{needed_by} needs the query groups, but group is None, which would make all rows one "
        f"query: pass group=qid, the per-row query ids (or group sizes, or the name of a column "
        f"of a DataFrame X); group=np.zeros(n_rows) if all rows are one query.{hint} "
        f"{ROUTING_RECIPE}"
    )


def _column_still_in_X(X: Any, group: Any) -> str | None:
    """The column of the pandas DataFrame ``X`` that holds exactly the per-row ids ``group``, if
    it is the Series' own column or a usual query-id column (None: none)."""
    if not (_is_pandas(X) and _is_frame(X)):
        return None
    own = [getattr(group, "name", None)] if _is_pandas(group) else []
    candidates = [*own, *QUERY_ID_COLUMNS]
    values = np.asarray(group)
    for column in candidates:
        if (
            isinstance(column, str)
            and column in X.columns
            and values.ndim == 1
            and values.shape[0] == X.shape[0]
            and np.array_equal(np.asarray(X[column]), values)
        ):
            return column
    return None


def ranker_group(
    X: Any, group: Any, *, where: str = "", fitted_column: str | None = None
) -> tuple[Any, Any]:
    """``(X, group)`` as a ranker's method reads them, before :func:`resolve_groups`.

    - a string names a column of the DataFrame ``X`` (pandas, or dask for the Dask ranker) that
      holds the per-row query ids: it becomes ``group`` and is taken out of ``X``, so that it is
      not a feature;
    - per-row ids that are still a column of a pandas ``X`` (the Series' own column, or
      ``QUERY_ID_COLUMNS``, with the same values) are refused: the rows' query ids would be a
      feature;
    - anything else is returned as given (``None`` too: the methods that need groups check them
      with :func:`require_group`), but for ``fitted_column``, the query-id column the ranker was
      fitted with (``fit(group="qid")``), which is not a feature: it is dropped from ``X``
      (:func:`drop_group_column`) when ``group`` names no column of its own.

    ``where`` follows the argument's name in errors (e.g. ``" of eval_set[0]"``).

    Raises
    ------
    ValueError
        For the refusal above, naming the column and what to pass instead, and for a column
        name with an ``X`` that is not a DataFrame or has no such column.
    """
    if isinstance(group, str):
        if not _is_frame(X):
            raise ValueError(
                f"group={group!r}{where} names a column, which needs X to be a DataFrame, but X "
                f"is a {type(X).__module__}.{type(X).__name__}: pass the query ids themselves, "
                f"group=qid."
            )
        if group not in X.columns:
            shown = ", ".join(map(repr, list(X.columns)[:10]))
            more = ", ..." if len(X.columns) > 10 else ""
            raise ValueError(
                f"group={group!r}{where} must name a column of X, but X has no column "
                f"{group!r} (its columns: {shown}{more})."
            )
        return X.drop(columns=[group]), X[group]
    X = drop_group_column(X, fitted_column)
    column = None if group is None else _column_still_in_X(X, group)
    if column is not None:
        raise ValueError(
            f"X{where} still holds the query ids as its column {column!r}, which would be a "
            f"feature: pass group={column!r} (the column is then read as the query ids and left "
            f"out of the features), or drop it from X, X.drop(columns={column!r})."
        )
    return X, group


def drop_group_column(X: Any, column: str | None) -> Any:
    """``X`` without the query-id column ``column`` a ranker was fitted with (if X has it)."""
    if column is not None and _is_frame(X) and column in X.columns:
        return X.drop(columns=[column])
    return X
