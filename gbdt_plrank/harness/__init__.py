"""The harness: the package's experiments, each a subpackage of ``config``, ``run`` and ``report``.

- ``gbdt-plrank compare CONFIG`` (``compare``): PL-Rank GBDT next to the other GBDT ranking
  objectives, every method (``methods``) on every dataset fold, cut-off and seed; writes
  ``results.csv``, ``results.md`` and ``curves.png``.
- ``gbdt-plrank fairness CONFIG`` (``frontier``): the frontier of expected NDCG@k against
  exposure fairness; writes ``frontier.csv``, ``frontier.md`` and ``frontier.png``.
- ``gbdt-plrank clicks CONFIG`` (``clicks``): learning from simulated click logs; writes
  ``clicks.md`` and ``clicks.png``.

What they share lives here: the settings tables (``settings``), the data entries (``data``),
the methods (``methods``) and their training (``training``, through the backend layer; the
clicks experiment trains its PL-Rank policies as :class:`~gbdt_plrank.PLRankRanker` s, whose
policy it deploys), the resumable output folder (``store``), the paired statistics (``stats``), the
policies' evaluation (``policy_eval``) and the protected item groups (``item_groups``).
"""

from .compare import CompareConfig, load_config, plan, run_comparison, write_report
from .frontier import FrontierConfig, load_frontier_config, run_frontier, write_frontier_report
from .methods import METHODS, Method
from .settings import ConfigError, PiRankSettings, PLRankSettings, TreeSettings, read_params
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
