"""The ``tune`` subcommand of ``gbdt-plrank``: equal budgets for every method, one study each.

.. code-block:: text

    gbdt-plrank tune --data DIR (--method NAME | --methods A,B,...) [--trials N] [--timeout S]
                     [--k K] [--out DIR] [--storage URL] [--space FILE] [--config CONFIG]
                     [--seed N] [--fold F] [--rounds N] [--n-jobs N] [--no-pruning]

Every method gets the same budget, in turn; ``best_params.toml`` in the output folder then covers
all of them, for ``gbdt-plrank compare CONFIG --params DIR/best_params.toml``. Running the same
command again resumes where it stopped.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .._util.compat import require
from ..harness.bundled import bundled_configs, resolve_config
from ..harness.compare.config import load_config
from ..harness.methods import METHODS
from ..harness.settings import TreeSettings
from ..tuning.spaces import load_spaces
from ..tuning.tuner import STORAGE_FILE, tune
from ._argtypes import positive_int

__all__ = ["HELP", "configure", "run"]

HELP = "tune methods on the validation split with Optuna, with the same budget for each"


def _method(text: str) -> str:
    if text not in METHODS:
        raise argparse.ArgumentTypeError(f"{text!r} is not a method; allowed: {', '.join(METHODS)}")
    return text


def _methods(text: str) -> list[str]:
    return [_method(name.strip()) for name in text.split(",")]


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the arguments of ``tune`` to ``parser``."""
    parser.add_argument(
        "--data",
        metavar="DIR",
        required=True,
        help="a bundled dataset (mq2008, mq2007-agg) or a folder with train.txt, vali.txt and "
        "test.txt or with Fold1..Fold5 subfolders",
    )
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--method", metavar="NAME", type=_method, help="the method to tune")
    which.add_argument(
        "--methods",
        metavar="A,B",
        type=_methods,
        help=f"methods to tune in turn, each with the budget; from: {', '.join(METHODS)}",
    )
    parser.add_argument(
        "--trials", metavar="N", type=int, help="finished trials per method (pruned included)"
    )
    parser.add_argument(
        "--timeout",
        metavar="SECONDS",
        type=float,
        help="seconds of trials per method; no trial starts after them",
    )
    parser.add_argument("--k", metavar="K", type=int, default=5, help="NDCG@K (default 5)")
    parser.add_argument(
        "--out", metavar="DIR", default="runs/tune", help="output folder (default runs/tune)"
    )
    parser.add_argument(
        "--storage", metavar="URL", help="Optuna storage URL (default sqlite:///DIR/optuna.db)"
    )
    parser.add_argument(
        "--space",
        metavar="FILE",
        help="TOML file changing the default search spaces, or a bundled one's name: "
        + ", ".join(bundled_configs("space")),
    )
    parser.add_argument(
        "--config",
        metavar="CONFIG",
        help="take [trees], [plrank], [pirank] and [params] from this comparison configuration "
        "(a file or a bundled configuration's name, e.g. headline)",
    )
    parser.add_argument("--seed", metavar="N", type=int, default=0, help="seed (default 0)")
    parser.add_argument("--fold", metavar="F", type=int, default=1, help="LETOR fold (default 1)")
    parser.add_argument("--rounds", metavar="N", type=positive_int, help="maximum boosting rounds")
    parser.add_argument("--n-jobs", metavar="N", type=positive_int, help="threads per training")
    parser.add_argument("--no-pruning", action="store_true", help="let every trial finish")


def run(args: argparse.Namespace) -> int:
    """Tune every method asked for; return the exit status."""
    config = (
        load_config(resolve_config(args.config, command="compare")[0])
        if args.config is not None
        else None
    )
    given = {"rounds": args.rounds, "n_jobs": args.n_jobs}
    trees = (config.trees if config is not None else TreeSettings()).model_copy(
        update={key: value for key, value in given.items() if value is not None}
    )
    pruner = require("optuna", purpose="tuning").pruners.NopPruner() if args.no_pruning else None
    methods = [args.method] if args.method is not None else args.methods
    for method in methods:  # fail now rather than after tuning the methods before it
        require(METHODS[method].library, purpose=f"method {method!r}")
    spaces = load_spaces(
        resolve_config(args.space, command="space")[0] if args.space is not None else None
    )
    try:
        for method in methods:
            tune(
                args.data,
                method,
                k=args.k,
                trials=args.trials,
                timeout=args.timeout,
                out=args.out,
                storage=args.storage,
                space=spaces[method],
                seed=args.seed,
                fold=args.fold,
                trees=trees,
                pruner=pruner,
                plrank=config.plrank if config is not None else None,
                pirank=config.pirank if config is not None else None,
                params=config.params.get(method) if config is not None else None,
            )
    except KeyboardInterrupt:
        print(
            f"interrupted: the finished trials are kept in "
            f"{args.storage or Path(args.out) / STORAGE_FILE}; run the same command again to "
            f"resume.",
            file=sys.stderr,
        )
        return 130
    return 0
