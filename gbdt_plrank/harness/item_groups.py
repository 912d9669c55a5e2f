r"""Item groups from a configuration: the ``protected`` table of a fairness frontier.

Group fairness of exposure (``fairness = "group-disparity"``) compares each group's exposure per
unit of merit, so every document needs an item group. A configuration names one feature by its
number in the data files (``41`` is ``41:<value>`` in a LETOR line; 1-based):

- ``protected = {feature = 41, quantile = 0.5}``: a threshold :math:`t`, the ``quantile`` of the
  feature over the documents of the *training* split, splits every split of the fold: documents
  with :math:`x < t` form group 1 (the protected group), the others group 0. Since :math:`t` is
  read from the training split only, validation and test documents are grouped by the same rule
  without their own values setting it (FULTR, Yadav et al. 2021, and SenSTIR, Bower et al. 2021,
  group MSLR by QualityScore2, feature 133, below its 40th percentile);
- ``protected = {feature = 137}``: the feature's values are the item group ids (integers >= 0).

:func:`with_item_groups` is the one place that computes a dataset's item groups: they travel on
each split (:attr:`gbdt_plrank.datasets.Split.item_groups`) to the training objective, to early
stopping on the validation split and to the evaluation.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from pydantic import Field

from .._util.schema import ConfigError, Schema
from ..datasets import LTRDataset, Split

__all__ = [
    "PROTECTED",
    "ProtectedGroup",
    "protected_rows",
    "with_item_groups",
    "without_item_groups",
]

#: The item group of the protected documents (those below the threshold).
PROTECTED = 1


class ProtectedGroup(Schema):
    """The ``protected`` table: a feature (1-based) and, optionally, a quantile in (0, 1)."""

    feature: int = Field(ge=1, description="a feature number >= 1 (as in the data files)")
    quantile: float | None = Field(
        None, gt=0, lt=1, allow_inf_nan=False, description="a number in (0, 1)"
    )

    def describe(self) -> str:
        """The table as written in a configuration."""
        if self.quantile is None:
            return f"protected = {{feature = {self.feature}}}"
        return f"protected = {{feature = {self.feature}, quantile = {self.quantile:g}}}"


def _column(split: Split, column: int) -> np.ndarray:
    values = split.X[:, column]
    dense = values.toarray() if hasattr(values, "toarray") else np.asarray(values)
    return np.asarray(dense, dtype=np.float64).ravel()


def with_item_groups(dataset: LTRDataset, protected: ProtectedGroup) -> LTRDataset:
    """The dataset with the item groups of ``protected`` on its three splits (module docstring).

    Raises
    ------
    ConfigError
        When the feature is not one of the dataset's, a column of ids holds a value that is not an
        integer >= 0, or a split of the fold does not hold two groups (with a quantile: both
        group 0 and group 1).
    """
    n_features = dataset.train.X.shape[1]
    if protected.feature > n_features:
        raise ConfigError(
            f"protected.feature must be a feature of {dataset.name} (1 to {n_features}), "
            f"but {protected.feature} is given."
        )
    column = protected.feature - 1
    splits = {"train": dataset.train, "vali": dataset.vali, "test": dataset.test}
    values = {name: _column(split, column) for name, split in splits.items()}
    if protected.quantile is None:
        groups = {}
        for name, x in values.items():
            bad = np.flatnonzero((x != np.round(x)) | (x < 0))
            if bad.size:
                raise ConfigError(
                    f"{protected.describe()} reads feature {protected.feature} as item group ids "
                    f"(integers >= 0), but the {name} split of {dataset.name} holds "
                    f"{x[bad[0]]:g}."
                )
            groups[name] = x.astype(np.int64)
        rule = "item group ids"
    else:
        threshold = float(np.quantile(values["train"], protected.quantile))
        groups = {name: (x < threshold).astype(np.int64) * PROTECTED for name, x in values.items()}
        rule = f"the threshold {threshold:g} (below it: group {PROTECTED})"
    for name, ids in groups.items():
        present = np.unique(ids)
        if present.shape[0] < 2:
            raise ConfigError(
                f"{protected.describe()} must leave two item groups in every split, but with "
                f"{rule} the {name} split of {dataset.name} holds only group {present[0]}; "
                f"choose another feature or quantile."
            )
    return LTRDataset(
        dataset.name,
        *(replace(split, item_groups=groups[name]) for name, split in splits.items()),
    )


def without_item_groups(dataset: LTRDataset) -> LTRDataset:
    """The dataset without item groups (for a training whose objective takes none)."""
    return LTRDataset(
        dataset.name,
        *(replace(s, item_groups=None) for s in (dataset.train, dataset.vali, dataset.test)),
    )


def protected_rows(split: Split) -> np.ndarray:
    """1.0 on the rows of the protected group (item group :data:`PROTECTED`), else 0.0."""
    if split.item_groups is None:
        raise ValueError("a group offset needs the item groups of the split, but it has none.")
    return (split.item_groups == PROTECTED).astype(np.float64)
