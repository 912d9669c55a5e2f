"""Optional dependencies, imported in one place with a clear message when one is missing.

The boosters, the plotting library, the tuner, torch (the neural network) and numba-cuda (the
objective on a GPU) are extras of the package
(``pip install 'gbdt_plrank[catboost]'`` and so on); the core needs none of them.
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

__all__ = ["EXTRAS", "MissingDependencyError", "is_installed", "missing_message", "require"]

#: Optional module -> the extra of ``gbdt_plrank`` that installs it.
EXTRAS = {
    "xgboost": "xgboost",
    "lightgbm": "lightgbm",
    "catboost": "catboost",
    "matplotlib": "plot",
    "optuna": "tune",
    "optuna_integration": "tune",
    "dask": "dask",
    "distributed": "dask",
    "torch": "nn",
    "numba_cuda": "gpu",
}


class MissingDependencyError(ImportError):
    """An optional dependency is needed but not installed."""


def _extra(module: str) -> str:
    top = module.partition(".")[0]
    if top not in EXTRAS:
        raise ValueError(
            f"module must be one of {', '.join(map(repr, EXTRAS))} or a submodule of one, "
            f"but {module!r} is given."
        )
    return EXTRAS[top]


def is_installed(module: str) -> bool:
    """Whether the optional ``module`` can be imported (without importing it)."""
    _extra(module)
    try:
        return importlib.util.find_spec(module) is not None
    except ValueError:  # in sys.modules as None: imports of it are blocked
        return False


def require(module: str, *, purpose: str) -> ModuleType:
    """Import the optional ``module``, or say what needs it and how to install it.

    Parameters
    ----------
    module : str
        One of the keys of :data:`EXTRAS`, or a submodule of one (``"matplotlib.figure"``).
    purpose : str
        What needs the module, for the message (e.g. ``"method 'yetirank-cb'"``).

    Returns
    -------
    module

    Raises
    ------
    MissingDependencyError
        When the module cannot be imported.
    """
    message = missing_message(module, purpose=purpose)
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise MissingDependencyError(message) from err


def missing_message(module: str, *, purpose: str) -> str:
    """The message of :func:`require` for ``module``, without trying to import it."""
    top, extra = module.partition(".")[0], _extra(module)
    return f"{purpose} needs {top}, which is not installed: pip install 'gbdt_plrank[{extra}]'."
