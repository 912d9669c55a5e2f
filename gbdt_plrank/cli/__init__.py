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
arguments to its parser and a function that runs it and returns the exit status, taken from its own
module (``_compare_command``, ``_tune_command``, ...: ``HELP``, ``configure`` and ``run``). Unknown
flags are errors that list the allowed ones; errors in the input print one line naming the value and
the rule, and exit with status 2 (bad native parameters name the method, the parameter and its
value; a missing data file is bad input too); failures at run time exit with status 1 (a missing
optional dependency, an output folder another run is writing to)."""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .. import __version__
from .._util.compat import MissingDependencyError
from ..harness.settings import ConfigError
from . import (
    _clicks_command,
    _compare_command,
    _compile_command,
    _configs_command,
    _fairness_command,
    _tune_command,
)
from ._experiment import PROG

__all__ = ["SUBCOMMANDS", "Subcommand", "main"]


@dataclass(frozen=True)
class Subcommand:
    """One subcommand: ``configure`` adds its arguments, ``run`` runs it and returns the status."""

    name: str
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


SUBCOMMANDS: list[Subcommand] = [
    Subcommand(name, module.HELP, module.configure, module.run)
    for name, module in (
        ("compare", _compare_command),
        ("tune", _tune_command),
        ("fairness", _fairness_command),
        ("clicks", _clicks_command),
        ("configs", _configs_command),
        ("compile", _compile_command),
    )
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
