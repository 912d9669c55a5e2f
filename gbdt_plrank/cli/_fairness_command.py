"""The ``fairness`` subcommand of ``gbdt-plrank``: the fairness frontier experiment.

.. code-block:: text

    gbdt-plrank fairness CONFIG [--data DIR] [--folds 1,2,...] [--seeds N] [--rounds N]
                                [--out DIR] [--n-jobs N]

Runs the frontier of expected NDCG@k against exposure fairness
(:mod:`gbdt_plrank.harness.frontier`) and writes its report.
"""

from __future__ import annotations

import argparse

from ..harness.frontier import load_frontier_config, run_frontier, write_frontier_report
from ._experiment import config_and_data_flags, run_experiment, training_flags

__all__ = ["HELP", "configure", "run"]

HELP = (
    "draw the frontier of expected NDCG@k against exposure fairness: PL-Rank with the "
    "fairness objective against post-hoc randomised LambdaMART and LambdaRank"
)

#: ``fairness`` flag (its ``dest``) -> the configuration key it replaces.
_FAIRNESS_OVERRIDES = {
    "data": "datasets",
    "folds": "folds",
    "seeds": "seeds",
    "rounds": "trees.rounds",
    "out": "out",
    "n_jobs": "trees.n_jobs",
}


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the arguments of ``fairness`` to ``parser``."""
    config_and_data_flags(parser, command="fairness", what="frontier")
    training_flags(parser)


def run(args: argparse.Namespace) -> int:
    """Run the fairness frontier; return the exit status."""
    return run_experiment(
        args,
        _FAIRNESS_OVERRIDES,
        load=load_frontier_config,
        run=run_frontier,
        report=write_frontier_report,
        kept="the finished trainings and evaluations",
        files=lambda store: [
            store.folder / name for name in ("frontier.csv", "frontier.md", "frontier.png")
        ],
    )
