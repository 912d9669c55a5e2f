"""The ``compare`` subcommand of ``gbdt-plrank``: every method on the same splits and seeds.

.. code-block:: text

    gbdt-plrank compare CONFIG [--data DIR] [--folds 1,2,...] [--methods a,b,...] [--seeds N]
                               [--k 5,10] [--rounds N] [--out DIR] [--params FILE] [--n-jobs N]
                               [--workers N | --scheduler ADDRESS]

Runs the comparison of :mod:`gbdt_plrank.harness.compare` (optionally on a Dask cluster) and
writes its report.
"""

from __future__ import annotations

import argparse

from ..harness.compare import load_config, plan, run_comparison, write_report
from ..harness.methods import METHODS
from ._argtypes import int_list, positive_int, text_list
from ._experiment import config_help, flag_overrides, interrupted, read_config, wrote

__all__ = ["HELP", "configure", "run"]

HELP = "train PL-Rank GBDT and the other GBDT ranking objectives on the same splits and seeds"

#: ``compare`` flag (its ``dest``) -> the configuration key it replaces.
_COMPARE_OVERRIDES = {
    "data": "datasets",
    "folds": "folds",
    "methods": "methods",
    "seeds": "seeds",
    "k": "k",
    "rounds": "trees.rounds",
    "out": "out",
    "n_jobs": "trees.n_jobs",
}


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the arguments of ``compare`` to ``parser``."""
    parser.add_argument("config", metavar="CONFIG", help=config_help("compare", "comparison"))
    parser.add_argument(
        "--data",
        metavar="DIR",
        type=lambda text: [text],
        help="a bundled dataset (mq2008, mq2007-agg) or a folder with train.txt, vali.txt and "
        "test.txt or with Fold1..Fold5 subfolders; replaces the config's datasets",
    )
    parser.add_argument(
        "--folds", metavar="F,F", type=int_list, help="folds to run, e.g. 1,2,3,4,5"
    )
    parser.add_argument(
        "--methods",
        metavar="A,B",
        type=text_list,
        help=f"methods to run, from: {', '.join(METHODS)}",
    )
    parser.add_argument("--seeds", metavar="N", type=int, help="run seeds 0..N-1")
    parser.add_argument(
        "--k", metavar="K,K", type=int_list, help="cut-offs, e.g. 5 or 5,10 (one training per k)"
    )
    parser.add_argument("--rounds", metavar="N", type=int, help="maximum boosting rounds")
    parser.add_argument("--out", metavar="DIR", help="output folder (default: runs/<config name>)")
    parser.add_argument(
        "--params",
        metavar="FILE",
        help="TOML file of [method-name] tables of native parameters, applied over the config's",
    )
    parser.add_argument("--n-jobs", metavar="N", type=int, help="threads per training")
    cluster = parser.add_mutually_exclusive_group()
    cluster.add_argument(
        "--workers",
        metavar="N",
        type=positive_int,
        help="run the trainings in parallel on a local Dask cluster of N single-threaded workers",
    )
    cluster.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="run the trainings in parallel on the Dask cluster at ADDRESS (tcp://host:8786)",
    )


def run(args: argparse.Namespace) -> int:
    """Run the comparison; return the exit status."""
    overrides = flag_overrides(args, _COMPARE_OVERRIDES)
    path = read_config(args, "compare", overrides)
    config = load_config(path, overrides=overrides, params_file=args.params)
    try:
        if args.workers is None and args.scheduler is None:
            store = run_comparison(config, echo=print)
        else:
            from ..harness.compare.parallel import (
                dask_executor,  # distributed takes a second to import
            )

            with dask_executor(scheduler=args.scheduler, workers=args.workers) as executor:
                store = run_comparison(config, echo=print, executor=executor)
    except KeyboardInterrupt:
        return interrupted("the finished trainings", config.out)
    keys = plan(config).keys
    print(write_report(config, store, keys, command=args.command_line))
    print(wrote([store.results_path, store.folder / "results.md", store.folder / "curves.png"]))
    return 0
