"""The comparison harness: PL-Rank GBDT next to the other GBDT ranking objectives.

``gbdt-plrank compare CONFIG`` reads a TOML file (``config``), trains every method
(``methods``, trained by ``training`` through the booster layer) on every dataset fold, cut-off and seed (``runner``, resumable through
``store``) and writes ``results.csv``, ``results.md`` and ``curves.png`` (``report``).

``gbdt-plrank fairness CONFIG`` draws the frontier of expected NDCG@k against exposure
fairness and writes ``frontier.csv``, ``frontier.md`` and ``frontier.png`` (``frontier``, a
package of its own that trains through this harness).

``gbdt-plrank clicks CONFIG`` (``clicks_config``) learns from simulated click logs
(``clicks_run``: a logging policy deployed stochastically and deterministically, PL-Rank on
policy-aware and naive rewards, XGBoost's and LightGBM's unbiased objectives, the full-label
model, the exploration loop) and writes ``clicks.md`` and ``clicks.png`` (``clicks_report``).
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
from .frontier import FrontierConfig, load_frontier_config, run_frontier, write_frontier_report
from .methods import METHODS, Method
from .report import write_report
from .runner import plan, run_comparison
from .store import COLUMNS, FolderInUseError, ResultStore, RunKey
from .training import Fit, train

__all__ = [
    "COLUMNS",
    "METHODS",
    "CompareConfig",
    "ConfigError",
    "Fit",
    "FolderInUseError",
    "FrontierConfig",
    "Method",
    "PLRankSettings",
    "PiRankSettings",
    "ResultStore",
    "RunKey",
    "TreeSettings",
    "load_config",
    "load_frontier_config",
    "plan",
    "read_params",
    "run_comparison",
    "run_frontier",
    "train",
    "write_frontier_report",
    "write_report",
]
