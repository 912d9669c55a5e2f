"""The fairness frontier: expected NDCG@k against exposure fairness, beside the comparison.

``gbdt-plrank fairness CONFIG`` (``config``) draws the frontier of expected NDCG@k against
exposure fairness (``run``: PL-Rank with the fairness objective against post-hoc randomised
deterministic rankers, with group offsets when a protected group is given
(:mod:`gbdt_plrank.harness.item_groups`), evaluated by :mod:`gbdt_plrank.harness.policy_eval`,
PL-Rank early-stopped on its policy's validation objective,
:attr:`gbdt_plrank.PLRankObjective.expected_metric`) and writes ``frontier.csv``,
``frontier.md`` and ``frontier.png`` (``report``). It trains through the comparison harness
(:func:`gbdt_plrank.harness.train`) and keeps its results as the harness does.
"""

from .config import FrontierConfig, load_frontier_config
from .report import write_frontier_report
from .run import run_frontier

__all__ = ["FrontierConfig", "load_frontier_config", "run_frontier", "write_frontier_report"]
