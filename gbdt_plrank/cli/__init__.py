"""The ``gbdt-plrank`` command line (also ``python -m gbdt_plrank``).

.. code-block:: text

    gbdt-plrank compare CONFIG [--data DIR] [--folds 1,2,...] [--methods a,b,...] [--seeds N]
                               [--k 5,10] [--rounds N] [--out DIR] [--params FILE] [--n-jobs N]
                               [--workers N | --scheduler ADDRESS]
    gbdt-plrank tune --data DIR (--method NAME | --methods A,B,...) [--trials N] [--timeout S]
                     [--k K] [--out DIR] [--space FILE] [--config CONFIG] ...
    gbdt-plrank fairness CONFIG [--data DIR] [--folds 1,2,...] [--seeds N] [--rounds N]
                                [--out DIR] [--n-jobs N]
    gbdt-plrank clicks CONFIG [--data DIR] [--folds 1,2,...] [--seeds N] [--sessions 10,100]
                              [--rounds N] [--out DIR] [--n-jobs N]
    gbdt-plrank configs [NAME]
    gbdt-plrank compile

CONFIG is a TOML file or the name of a configuration that ships with the package (``demo``,
``headline``, ``fairness_group``, ...: :mod:`gbdt_plrank.harness.bundled`); ``gbdt-plrank configs``
lists them and ``gbdt-plrank configs NAME`` prints one to start from. One rule for every command
(CONFIG, ``tune --config`` and ``--space``, ``configs NAME``): a bare name (``demo``) is a
bundled configuration, anything with a folder or ``.toml`` (``demo.toml``, ``./demo``) is a
path, and a path that is no file is refused, naming the bundled configuration of that name if
there is one. A bundled configuration writes to ``runs/NAME`` in the current folder unless
``--out`` says otherwise.

A subcommand is an entry of :data:`SUBCOMMANDS`: its name, a help line, a function that adds its
arguments to its parser and a function that runs it and returns the exit status. Unknown flags
are errors that list the allowed ones; errors in the input print one line naming the value and
the rule, and exit with status 2 (bad native parameters name the method, the parameter and
its value; a missing data file is bad input too); failures at run time exit with status 1 (a
missing optional dependency, an output folder another run is writing to)."""

from __future__ import annotations

import argparse
import shlex
import sys
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import __version__
from .._util.compat import MissingDependencyError, is_installed
from ..harness import load_frontier_config, run_frontier, write_frontier_report
from ..harness.bundled import COMMANDS, bundled_configs, is_bundled_name, resolve_config
from ..harness.clicks import load_clicks_config, run_clicks, write_clicks_report
from ..harness.compare import load_config, plan, run_comparison, write_report
from ..harness.methods import METHODS
from ..harness.settings import ConfigError
from . import _tune as tune_command
from ._argtypes import int_list, positive_int, text_list

__all__ = ["SUBCOMMANDS", "Subcommand", "main"]

PROG = "gbdt-plrank"


@dataclass(frozen=True)
class Subcommand:
    """One subcommand: ``configure`` adds its arguments, ``run`` runs it and returns the status."""

    name: str
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


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


def _config_help(command: str, what: str) -> str:
    """The help of a command's CONFIG argument: a file, or a bundled configuration's name."""
    names = ", ".join(bundled_configs(command))
    return (
        f"a TOML file describing the {what}, or the name of a bundled one: {names} "
        f"(`{PROG} configs NAME` prints one; a bundled configuration writes to runs/NAME in "
        f"the current folder unless --out is given; a bare name is a bundled configuration, "
        f"anything with a folder or .toml a file, which must exist)"
    )


def _read_config(args: argparse.Namespace, command: str, overrides: dict[str, object]) -> Path:
    """The file of ``args.config``; for a bundled configuration without ``--out``, its output
    folder ``runs/NAME`` (in the current folder) is added to ``overrides``."""
    path, name = resolve_config(args.config, command=command)
    if name is not None:
        overrides.setdefault("out", str(Path("runs") / name))
        print(f"the bundled configuration {name!r} ({path}); output folder {overrides['out']}")
    return path


def _configure_compare(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config", metavar="CONFIG", help=_config_help("compare", "comparison"))
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


def _overrides(args: argparse.Namespace, keys: dict[str, str]) -> dict[str, object]:
    """The configuration values the command's flags replace: ``keys`` maps a flag's ``dest`` to
    the key it replaces; flags not given replace nothing."""
    given = {dest: getattr(args, dest) for dest in keys}
    return {keys[dest]: value for dest, value in given.items() if value is not None}


def _interrupted(what: str, out: object) -> int:
    """Say on stderr that ``what`` is kept in ``out`` and how to resume; the exit status 130."""
    print(
        f"interrupted: {what} are kept in {out}; run the same command again to resume.",
        file=sys.stderr,
    )
    return 130


def _wrote(paths: Sequence[Path]) -> str:
    """The line naming the files a report wrote: its pictures only when matplotlib is installed
    (without it the reports draw none, and their text says so)."""
    drawn = is_installed("matplotlib")
    return f"wrote {', '.join(str(p) for p in paths if drawn or p.suffix != '.png')}"


def _run_compare(args: argparse.Namespace) -> int:
    overrides = _overrides(args, _COMPARE_OVERRIDES)
    path = _read_config(args, "compare", overrides)
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
        return _interrupted("the finished trainings", config.out)
    keys = plan(config).keys
    print(write_report(config, store, keys, command=args.command_line))
    print(_wrote([store.results_path, store.folder / "results.md", store.folder / "curves.png"]))
    return 0


#: ``fairness`` flag (its ``dest``) -> the configuration key it replaces.
_FAIRNESS_OVERRIDES = {
    "data": "datasets",
    "folds": "folds",
    "seeds": "seeds",
    "rounds": "trees.rounds",
    "out": "out",
    "n_jobs": "trees.n_jobs",
}


def _config_and_data_flags(parser: argparse.ArgumentParser, *, command: str, what: str) -> None:
    """An experiment command's CONFIG argument and its --data, --folds and --seeds flags."""
    parser.add_argument("config", metavar="CONFIG", help=_config_help(command, what))
    parser.add_argument(
        "--data",
        metavar="DIR",
        type=lambda text: [text],
        help="a bundled dataset or a data folder; replaces the config's datasets",
    )
    parser.add_argument("--folds", metavar="F,F", type=int_list, help="folds, e.g. 1,2,3,4,5")
    parser.add_argument("--seeds", metavar="N", type=int, help="run seeds 0..N-1")


def _training_flags(parser: argparse.ArgumentParser) -> None:
    """An experiment command's --rounds, --out and --n-jobs flags."""
    parser.add_argument("--rounds", metavar="N", type=int, help="maximum boosting rounds")
    parser.add_argument("--out", metavar="DIR", help="output folder (default: runs/<config name>)")
    parser.add_argument("--n-jobs", metavar="N", type=int, help="threads per training")


def _configure_fairness(parser: argparse.ArgumentParser) -> None:
    _config_and_data_flags(parser, command="fairness", what="frontier")
    _training_flags(parser)


def _run_experiment(
    args: argparse.Namespace,
    keys: dict[str, str],
    *,
    load: Callable[..., Any],
    run: Callable[..., Any],
    report: Callable[..., str],
    kept: str,
    files: Callable[[Any], Sequence[Path]],
) -> int:
    """Run an experiment command: its configuration with the flags' overrides (``keys``, as
    :func:`_overrides`), the resumable run (``kept`` names what an interruption keeps), its
    report printed and the ``files`` of its store named."""
    overrides = _overrides(args, keys)
    path = _read_config(args, args.command, overrides)
    config = load(path, overrides=overrides)
    try:
        store = run(config, echo=print)
    except KeyboardInterrupt:
        return _interrupted(kept, config.out)
    print(report(config, store, command=args.command_line))
    print(_wrote(files(store)))
    return 0


def _run_fairness(args: argparse.Namespace) -> int:
    return _run_experiment(
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


def _configure_clicks(parser: argparse.ArgumentParser) -> None:
    _config_and_data_flags(parser, command="clicks", what="experiment")
    parser.add_argument(
        "--sessions", metavar="S,S", type=int_list, help="sessions per query, e.g. 10,100,1000"
    )
    _training_flags(parser)


def _run_clicks(args: argparse.Namespace) -> int:
    return _run_experiment(
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


def _configure_configs(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "name",
        metavar="NAME",
        nargs="?",
        help="print this configuration (to copy and change: "
        f"`{PROG} configs demo > mine.toml`); without NAME, list them",
    )


def _run_configs(args: argparse.Namespace) -> int:
    if args.name is not None:
        every = bundled_configs()
        if not is_bundled_name(args.name):
            named = Path(args.name).stem
            hint = (
                f": `{PROG} configs {named}`"
                if named in every
                else f"; they are: {', '.join(every)}"
            )
            raise ConfigError(
                f"{args.name!r} is a path, but configs prints a bundled configuration, named "
                f"without a folder or .toml{hint}"
            )
        if args.name not in every:
            raise ConfigError(
                f"{args.name!r} is not a bundled configuration; they are: {', '.join(every)}"
            )
        print(every[args.name].path.read_text(encoding="utf-8"), end="")
        return 0
    readers = {"space": f"{PROG} tune --space NAME"}
    for command in COMMANDS:
        print(f"{readers.get(command, f'{PROG} {command} NAME')}:")
        for name, config in bundled_configs(command).items():
            print(f"  {name}")
            print(
                textwrap.fill(
                    config.summary, width=96, initial_indent=" " * 6, subsequent_indent=" " * 6
                )
            )
    print(
        f"\n`{PROG} configs NAME` prints one; a bundled configuration writes to runs/NAME in the "
        "current folder unless --out is given."
    )
    return 0


def _configure_compile(parser: argparse.ArgumentParser) -> None:
    """No arguments: Numba's cache folder is its own (``NUMBA_CACHE_DIR``)."""


def _run_compile(args: argparse.Namespace) -> int:
    from .._compile import compile_kernels

    print(
        "compiling every kernel into Numba's cache, once per environment (minutes: more "
        "kernels than a first training needs)...",
        flush=True,
    )
    compiled = compile_kernels()
    if compiled:
        print(
            f"compiled {len(compiled)} kernels in {compiled.seconds:.1f} s; later processes "
            f"load them from Numba's cache"
        )
    else:
        print(f"every kernel was in Numba's cache already (checked in {compiled.seconds:.1f} s)")
    return 0


SUBCOMMANDS: list[Subcommand] = [
    Subcommand(
        "compare",
        "train PL-Rank GBDT and the other GBDT ranking objectives on the same splits and seeds",
        _configure_compare,
        _run_compare,
    ),
    Subcommand("tune", tune_command.HELP, tune_command.configure, tune_command.run),
    Subcommand(
        "fairness",
        "draw the frontier of expected NDCG@k against exposure fairness: PL-Rank with the "
        "fairness objective against post-hoc randomised LambdaMART and LambdaRank",
        _configure_fairness,
        _run_fairness,
    ),
    Subcommand(
        "clicks",
        "learn to rank from simulated click logs: PL-Rank on policy-aware rewards of a "
        "stochastic logger against naive rewards, a deterministic logger, XGBoost's unbiased "
        "LambdaMART, LightGBM's position term and the full-label model",
        _configure_clicks,
        _run_clicks,
    ),
    Subcommand(
        "configs",
        "list the configurations that ship with the package, or print one to start from",
        _configure_configs,
        _run_configs,
    ),
    Subcommand(
        "compile",
        "compile the Numba kernels into Numba's on-disk cache ahead of a first training (for "
        "a container image or a CI cache: NUMBA_CACHE_DIR chooses the folder)",
        _configure_compile,
        _run_compile,
    ),
]


def _build_parser() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Stochastic learning to rank with gradient-boosted trees.",
        allow_abbrev=False,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument(
        "--debug", action="store_true", help="show the traceback of an error (give it first)"
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    parsers = {}
    for sub in SUBCOMMANDS:
        parsers[sub.name] = commands.add_parser(
            sub.name, help=sub.help, description=sub.help, allow_abbrev=False
        )
        sub.configure(parsers[sub.name])
    return parser, parsers


def _flags(parser: argparse.ArgumentParser) -> list[str]:
    flags = (flag for action in parser._actions for flag in action.option_strings)
    return [flag for flag in flags if flag.startswith("--")]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``); return the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser, parsers = _build_parser()
    try:
        args, unknown = parser.parse_known_args(argv)
        if args.command is None:
            parser.error(f"a command is required: {', '.join(parsers)}")
        if unknown:
            sub = parsers[args.command]
            sub.error(f"unknown argument {unknown[0]!r}; allowed flags: {', '.join(_flags(sub))}")
    except SystemExit as exit_:  # argparse's errors, --help and --version
        return exit_.code if isinstance(exit_.code, int) else 1
    args.command_line = shlex.join([PROG, *argv])
    try:
        return next(sub for sub in SUBCOMMANDS if sub.name == args.command).run(args)
    except Exception as err:
        if args.debug:
            raise
        status = next((code for kind, code in _STATUS.items() if isinstance(err, kind)), None)
        if status is None:
            raise
        print(f"{PROG}: error: {_one_line(err)}", file=sys.stderr)
        return status


#: Exit status of each kind of failure (the first that matches): 2 for bad input (a missing
#: data file among it), 1 for a failure at run time (a missing optional dependency, an output
#: folder in use by another run). Anything else is a bug and keeps its traceback.
_STATUS: dict[type[BaseException], int] = {
    ConfigError: 2,
    MissingDependencyError: 1,
    FileNotFoundError: 2,
    ValueError: 2,
    OSError: 1,
    RuntimeError: 1,
}


def _one_line(err: Exception) -> str:
    """The error's message on one line; an OS error names its file and what happened."""
    if isinstance(err, OSError) and err.filename is not None and err.strerror:
        return f"{err.filename}: {err.strerror.lower()} (rerun with --debug for the traceback)"
    return " ".join(str(err).split())
