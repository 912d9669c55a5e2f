"""The comparison harness: PL-Rank GBDT next to the other GBDT ranking objectives.

``gbdt-plrank compare CONFIG`` reads a TOML file (:mod:`.config`), trains every method
(:mod:`.methods`, trained by :mod:`.training` through the booster layer) on every dataset fold, cut-off and seed (:mod:`.runner`, resumable through
:mod:`.store`) and writes ``results.csv``, ``results.md`` and ``curves.png`` (:mod:`.report`).
"""

from .config import (
    CompareConfig,
    ConfigError,
    PiRankSettings,
    PLRankSettings,
    TreeSettings,
    load_config,
    read_params,
)
from .methods import METHODS, Method
from .report import write_report
from .runner import plan, run_comparison
from .store import COLUMNS, ResultStore, RunKey
from .training import Fit, train

__all__ = [
    "COLUMNS",
    "METHODS",
    "CompareConfig",
    "ConfigError",
    "Fit",
    "Method",
    "PLRankSettings",
    "PiRankSettings",
    "ResultStore",
    "RunKey",
    "TreeSettings",
    "load_config",
    "plan",
    "read_params",
    "run_comparison",
    "train",
    "write_report",
]
