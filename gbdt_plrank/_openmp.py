"""``OMP_WAIT_POLICY=PASSIVE`` for the OpenMP runtimes loaded after the package (see the package
docstring); imported first by the package."""

import os
import sys
import warnings


def passive_openmp() -> None:
    """Set ``OMP_WAIT_POLICY=PASSIVE`` unless it is set; warn if a booster is already loaded."""
    if "OMP_WAIT_POLICY" in os.environ:
        return
    loaded = [name for name in ("xgboost", "lightgbm", "catboost") if name in sys.modules]
    if loaded:
        warnings.warn(
            f"{', '.join(loaded)} was imported before gbdt_plrank without OMP_WAIT_POLICY set, "
            f"so its OpenMP threads spin while the PL-Rank objective runs (rounds measured 10 to "
            f"20 times slower). Import gbdt_plrank first, or set OMP_WAIT_POLICY=PASSIVE in the "
            f"environment.",
            RuntimeWarning,
            stacklevel=4,  # the import of gbdt_plrank
        )
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"


passive_openmp()
