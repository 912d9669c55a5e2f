"""scikit-learn's common checks for the rankers, which refuse ``fit`` and ``score`` without groups.

The checks call ``fit(X, y)`` and ``score(X, y)`` and route no query groups, so on a ranker every
check that needs a fitted model stops at the missing group (:data:`CHECKS_THAT_FIT`, expected to
fail, strictly: a listed check that passes fails the test). To keep what those checks verify, the
test modules also run every check on a subclass whose ``fit`` and ``score`` read a missing group
as one query (:func:`one_query`): the same code, with the group given.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: Why the checks of :data:`CHECKS_THAT_FIT` cannot pass on a ranker.
NO_GROUPS = (
    "the check calls fit(X, y) without query groups, which a ranker refuses (as XGBRanker "
    "does) rather than train on all rows as one query; the test module runs the check on a "
    "subclass that passes group=np.zeros(n_rows) (OneQuery<Ranker>), where it must pass."
)

#: The common checks that need a model fitted by ``fit(X, y)`` (scikit-learn 1.9).
CHECKS_THAT_FIT = (
    "check_dict_unchanged",
    "check_dont_overwrite_parameters",
    "check_dtype_object",
    "check_estimator_sparse_array",
    "check_estimator_sparse_matrix",
    "check_estimator_sparse_tag",
    "check_estimators_dtypes",
    "check_estimators_fit_returns_self",
    "check_estimators_overwrite_params",
    "check_estimators_pickle",
    "check_estimators_pickle(readonly_memmap=True)",
    "check_f_contiguous_array_estimator",
    "check_fit2d_1feature",
    "check_fit2d_1sample",
    "check_fit2d_predict1d",
    "check_fit_check_is_fitted",
    "check_fit_idempotent",
    "check_fit_score_takes_y",
    "check_methods_sample_order_invariance",
    "check_methods_subset_invariance",
    "check_n_features_in",
    "check_n_features_in_after_fitting",
    "check_pipeline_consistency",
    "check_positive_only_tag_during_fit",
    "check_readonly_memmap_input",
)

#: The checks of ``fit(X, y, sample_weight=...)`` (estimators that take sample weights).
CHECKS_THAT_FIT_WEIGHTED = (
    "check_all_zero_sample_weights_error",
    "check_sample_weight_equivalence_on_dense_data",
    "check_sample_weight_equivalence_on_sparse_data",
    "check_sample_weights_list",
    "check_sample_weights_not_an_array",
    "check_sample_weights_pandas_series",
    "check_sample_weights_not_overwritten",
    "check_sample_weights_shape",
)


def one_query(X: Any, group: Any) -> Any:
    """``group``, or all rows of ``X`` as one query when it is None."""
    if group is not None:
        return group
    shape = X.shape if hasattr(X, "shape") else np.asarray(X).shape  # sparse; or array-like
    return np.zeros(shape[0])
