"""The ``clicks`` subcommand of ``gbdt-plrank``: learning to rank from simulated click logs.

.. code-block:: text

    gbdt-plrank clicks CONFIG [--data DIR] [--folds 1,2,...] [--seeds N] [--sessions 10,100]
                              [--rounds N] [--out DIR] [--n-jobs N]

Runs the learning-from-clicks experiment (:mod:`gbdt_plrank.harness.clicks`) and writes its
report.
"""

from __future__ import annotations

import argparse

from ..harness.clicks import load_clicks_config, run_clicks, write_clicks_report
from ._argtypes import int_list
from ._experiment import config_and_data_flags, run_experiment, training_flags

__all__ = ["HELP", "configure", "run"]

HELP = (
    "learn to rank from simulated click logs: PL-Rank on policy-aware rewards of a "
    "stochastic logger against naive rewards, a deterministic logger, XGBoost's unbiased "
    "LambdaMART, LightGBM's position term and the full-label model"
)

#: ``clicks`` flag (its ``dest``) -> the configuration key it replaces.
_CLICKS_OVERRIDES = {
    "data": "datasets",
    "folds": "folds",
    "seeds": "seeds",
    "sessions": "sessions",
    "rounds": "trees.rounds",
    "out": "out",
    "n_jobs": "trees.n_jobs",
}


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the arguments of ``clicks`` to ``parser``."""
    config_and_data_flags(parser, command="clicks", what="experiment")
    parser.add_argument(
        "--sessions", metavar="S,S", type=int_list, help="sessions per query, e.g. 10,100,1000"
    )
    training_flags(parser)


def run(args: argparse.Namespace) -> int:
    """Run the learning-from-clicks experiment; return the exit status."""
    return run_experiment(
        args,
        _CLICKS_OVERRIDES,
        load=load_clicks_config,
        run=run_clicks,
        report=write_clicks_report,
        kept="the finished results",
        files=lambda store: [
            store.results_path,
            store.folder / "clicks.md",
            store.folder / "clicks.png",
        ],
    )
