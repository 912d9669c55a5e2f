"""The comparison harness: PL-Rank GBDT next to the other GBDT ranking objectives.

``gbdt-plrank compare CONFIG`` reads a TOML file (``config``), trains every method
(``methods``, trained by ``training`` through the booster layer) on every dataset fold, cut-off and seed (``runner``, resumable through
``store``) and writes ``results.csv``, ``results.md`` and ``curves.png`` (``report``).

``gbdt-plrank fairness CONFIG`` (``frontier_config``) draws the frontier of expected NDCG@k
against exposure fairness (``frontier``: PL-Rank with the fairness objective against post-hoc
randomised deterministic rankers, with group offsets when a protected group is given
(``groups``), evaluated by ``policy_eval``, PL-Rank early-stopped on its policy's
validation objective, :attr:`gbdt_plrank.PLRankObjective.expected_metric`) and writes
``frontier.csv``, ``frontier.md`` and ``frontier.png`` (``frontier_report``).

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
from .frontier import run_frontier
from .frontier_config import FrontierConfig, load_frontier_config
from .frontier_report import write_frontier_report
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
