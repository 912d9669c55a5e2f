"""Input checks shared by the estimator, the objectives and the ranker.

Every check raises ``ValueError`` (``TypeError`` for a wrong kind of object) whose message repeats
the offending value and states the rule.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, TypeGuard

import numpy as np

MAX_EXP_LABEL = 31  # XGBoost and LightGBM refuse larger labels with the exponential gain too

#: scikit-learn's checks of a feature matrix (``check_array`` / ``validate_data`` options): CSR
#: or dense, float64 or float32; the values are checked by :func:`check_feature_values`.
X_RULES: dict[str, object] = {"accept_sparse": "csr", "dtype": (np.float64, np.float32)}


def check_feature_columns(X: object) -> None:
    """A pandas DataFrame ``X`` must have numeric (or boolean) columns only.

    Raises
    ------
    ValueError
        Naming the first column of another dtype (categorical, string, object, datetime).
    """
    dtypes = getattr(X, "dtypes", None)
    if dtypes is None or not hasattr(X, "columns"):
        return
    from pandas.api.types import is_bool_dtype, is_numeric_dtype

    for name, dtype in dtypes.items():
        if not (is_numeric_dtype(dtype) or is_bool_dtype(dtype)):
            raise ValueError(
                f"X must have numeric columns (NaN for a missing value), but column {name!r} has "
                f"dtype {dtype}: encode it as numbers first, e.g. X[{name!r}].cat.codes "
                "(categorical) or sklearn.preprocessing.OrdinalEncoder, or one-hot columns."
            )


def check_feature_values(X: Any, *, allow_nan: bool) -> None:
    """Every value of the dense or CSR feature matrix ``X`` must be finite (or NaN, if allowed).

    Raises
    ------
    ValueError
        Naming the first offending entry ``X[row, column]`` and its value.
    """
    data = X.data if hasattr(X, "indptr") else np.asarray(X)
    bad = ~np.isfinite(data)
    if allow_nan:
        bad &= ~np.isnan(data)
    if not bad.any():
        return
    k = int(np.flatnonzero(bad.ravel())[0])
    if hasattr(X, "indptr"):
        where = [int(np.searchsorted(X.indptr, k, side="right")) - 1, int(X.indices[k])]
    else:
        where = [int(i) for i in np.unravel_index(k, data.shape)]
    value = float(data.ravel()[k])
    shown = "NaN" if math.isnan(value) else repr(value)
    rule = (
        "finite numbers, or NaN for a missing value"
        if allow_nan
        else "finite numbers, not NaN or inf (impute missing values first)"
    )
    raise ValueError(f"X must hold {rule}, but X[{where[0]}, {where[1]}] is {shown}.")


def as_feature_matrix(X: Any, *, allow_nan: bool) -> Any:
    """``X`` as the rankers take it, converted once: a pandas DataFrame of numeric columns, a
    list of rows, a NumPy array or a SciPy sparse matrix, as a CSR matrix (sparse input) or a
    dense array, float32 or float64, its rows in the given order (``X[rows]`` selects rows).

    Raises
    ------
    ValueError
        For a column that is not numeric (:func:`check_feature_columns`), a shape or value
        scikit-learn's ``check_array`` refuses (not two-dimensional, no row), or a value that
        is not finite, NaN allowed where ``allow_nan`` (:func:`check_feature_values`).
    """
    from sklearn.utils import check_array  # 1 s to import: only where features are given

    check_feature_columns(X)
    out = check_array(X, ensure_all_finite=False, **X_RULES)
    check_feature_values(out, allow_nan=allow_nan)
    return out


def is_int(value: object) -> TypeGuard[int | np.integer]:
    """An integer (Python or NumPy), not a bool."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def is_number(value: object) -> TypeGuard[int | float | np.integer | np.floating]:
    """An integer or a float (Python or NumPy), not a bool."""
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)


def check_choice(name: str, value: object, allowed: Iterable[str]) -> str:
    """``value`` must be one of ``allowed``."""
    allowed = tuple(allowed)
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(
            f"{name} must be one of {', '.join(map(repr, allowed))}, but {value!r} is given."
        )
    return value


def check_positive_int(name: str, value: object) -> int:
    """``value`` must be an integer >= 1 (bools are refused)."""
    if not is_int(value) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, but {value!r} is given.")
    return int(value)


def check_verbose(name: str, value: object) -> int:
    """``value`` must be a bool or an integer: the period of a fit's progress report in rounds
    (True is 1; False, 0 and a negative integer, such as LightGBM's -1, are quiet: 0)."""
    if isinstance(value, (bool, np.bool_)):
        return int(value)
    if not is_int(value):
        raise ValueError(
            f"{name} must be True, False or an integer (report every N >= 1 rounds; 0 or a "
            f"negative integer such as LightGBM's -1 is quiet), but {value!r} is given."
        )
    return max(int(value), 0)


def check_positive_number(name: str, value: object) -> float:
    """``value`` must be a finite number > 0 (bools are refused)."""
    if not is_number(value) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, but {value!r} is given.")
    return float(value)


def check_seed(name: str, value: object) -> int:
    """``value`` must be an integer in [0, 2**63)."""
    if not is_int(value) or not 0 <= value < 2**63:
        raise ValueError(f"{name} must be an integer in [0, 2**63), but {value!r} is given.")
    return int(value)


def as_finite_vector(name: str, values: object) -> np.ndarray:
    """A contiguous float64 vector without NaN or infinity."""
    return np.ascontiguousarray(finite_vector(name, values), dtype=np.float64)


def float_vector(name: str, values: object) -> np.ndarray:
    """A contiguous one-dimensional float32 or float64 vector, its values not checked: float32
    values stay float32 (no copy where they are contiguous; what a GPU uploads at half the bytes,
    and checks there), any other values become float64."""
    arr = np.asarray(values)
    arr = np.ascontiguousarray(arr, dtype=arr.dtype if arr.dtype == np.float32 else np.float64)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, but has shape {arr.shape}.")
    return arr


def finite_vector(name: str, values: object) -> np.ndarray:
    """:func:`float_vector` without NaN or infinity."""
    arr = float_vector(name, values)
    bad = ~np.isfinite(arr)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"{name} must be finite, but {name}[{i}] is {float(arr[i])!r} "
            f"({int(bad.sum())} non-finite in all)."
        )
    return arr


def _outside_int64(arr: np.ndarray) -> np.ndarray:
    """Indices of the entries of a whole-valued vector that int64 cannot hold."""
    if arr.dtype.kind == "f":
        return np.flatnonzero((arr < -(2.0**63)) | (arr >= 2.0**63))
    if arr.dtype == np.uint64:
        return np.flatnonzero(arr >= np.uint64(2**63))
    return np.zeros(0, np.int64)


def as_int_vector(name: str, values: object) -> np.ndarray:
    """A contiguous int64 vector of integers (integer, boolean, or whole finite float values).

    The result may be ``values`` itself (an int64 vector is not copied).

    Raises
    ------
    ValueError
        For another shape or dtype, naming the first entry that is not a whole number, or the
        first outside the int64 range [-2**63, 2**63) (which a cast would wrap or collapse).
    """
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, but has shape {arr.shape}.")
    if arr.dtype.kind not in "iub":
        if arr.dtype.kind != "f":
            raise ValueError(f"{name} must hold integers, but has dtype {arr.dtype}.")
        bad = np.flatnonzero(~np.isfinite(arr) | (arr != np.round(arr)))
        if bad.size:
            i = int(bad[0])
            raise ValueError(f"{name} must hold integers, but {name}[{i}] is {arr[i].item()!r}.")
    wide = _outside_int64(arr)
    if wide.size:
        i = int(wide[0])
        raise ValueError(
            f"{name} must hold integers in [-2**63, 2**63) (int64), but "
            f"{name}[{i}] is {arr[i].item()!r}."
        )
    return np.ascontiguousarray(arr, dtype=np.int64)


def check_at_least(name: str, values: np.ndarray, low: int, *, rule: str = "") -> None:
    """Every entry of the numeric vector ``values`` must be ``>= low``.

    Raises
    ------
    ValueError
        Naming the smallest entry, its index and the rule (``rule`` is appended to it).
    """
    if values.size and values.min() < low:
        i = int(np.argmin(values))
        raise ValueError(f"{name} must be >= {low}{rule}, but {name}[{i}] is {values[i].item()!r}.")


def check_labels(
    labels: object, *, gain: str = "linear", name: str = "labels", signed: bool | None = None
) -> np.ndarray:
    """Finite, non-negative labels; at most ``MAX_EXP_LABEL`` with the exponential gain.

    ``signed=True`` accepts negative labels (rewards such as the doubly robust click rewards,
    for DCG and NDCG with the linear gain: the rule of ``PLRankOptions.signed_labels``);
    ``False`` refuses them and says which options accept them; ``None`` refuses them.
    """
    arr = as_finite_vector(name, labels)
    if not signed and arr.size and arr.min() < 0:
        i = int(np.argmin(arr))
        hint = (
            ""
            if signed is None
            else " (negative rewards are accepted with metric='dcg' "
            "or 'ndcg' and gain='linear', without fairness)"
        )
        raise ValueError(f"{name} must be >= 0, but {name}[{i}] is {float(arr[i])!r}{hint}.")
    if gain == "exp" and arr.size and arr.max() > MAX_EXP_LABEL:
        i = int(np.argmax(arr))
        raise ValueError(
            f"{name} must be <= {MAX_EXP_LABEL} with the exponential gain 2**label - 1, "
            f"but {name}[{i}] is {float(arr[i])!r}; use gain='linear' for larger grades."
        )
    return arr


def check_group_ptr(group_ptr: object, n: int) -> np.ndarray:
    """Boundaries ``[0, ..., n]`` that never decrease, as int64."""
    raw = np.asarray(group_ptr)
    if raw.ndim != 1 or raw.size < 2:
        raise ValueError(
            f"group_ptr must hold the query boundaries [0, ..., n_docs] (at least two entries), "
            f"but {raw!r} is given."
        )
    if not np.issubdtype(raw.dtype, np.integer):
        if not np.all(np.isfinite(raw)) or np.any(raw != np.round(raw)):
            raise ValueError(f"group_ptr must hold integers, but {raw!r} is given.")
    ptr = np.ascontiguousarray(raw, dtype=np.int64)
    if ptr[0] != 0:
        raise ValueError(f"group_ptr must start at 0, but starts at {ptr[0]}.")
    if ptr[-1] != n:
        raise ValueError(
            f"group_ptr must end at the number of documents {n}, but ends at {ptr[-1]}."
        )
    steps = np.diff(ptr)
    if (steps < 0).any():
        i = int(np.flatnonzero(steps < 0)[0])
        raise ValueError(
            f"group_ptr must never decrease, but group_ptr[{i}] = {ptr[i]} > "
            f"group_ptr[{i + 1}] = {ptr[i + 1]}."
        )
    return ptr


def check_same_length(**arrays: np.ndarray) -> None:
    """All arrays have the same length."""
    lengths = {name: len(a) for name, a in arrays.items()}
    if len(set(lengths.values())) > 1:
        listed = ", ".join(f"{k} has {v}" for k, v in lengths.items())
        raise ValueError(f"lengths must agree, but {listed}.")


def check_item_groups(
    item_groups: object, n: int | None, *, name: str = "item_groups", part: bool = False
) -> np.ndarray:
    """Integer group ids ``>= 0`` of ``n`` documents (None: any number), as int64, two or more
    distinct ones unless they are a ``part`` of the rows (a Dask worker's may hold one)."""
    ids = as_int_vector(name, item_groups)
    if n is not None and ids.shape[0] != n:
        raise ValueError(
            f"{name} must hold one group id per document ({n}), but holds {ids.shape[0]}."
        )
    check_at_least(name, ids, 0)
    if not part and np.unique(ids).shape[0] < 2:
        raise ValueError(
            f"{name} must hold two or more distinct groups, but holds {np.unique(ids).tolist()}."
        )
    return ids
