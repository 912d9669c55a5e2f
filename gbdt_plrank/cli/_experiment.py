"""What the experiment commands share (``compare``, ``fairness``, ``clicks``, and ``configs``,
which prints their configurations): the CONFIG argument and its flags, the configuration values
the flags replace, the resumable run and the lines it prints.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .._util.compat import is_installed
from ..harness.bundled import bundled_configs, resolve_config
from ._argtypes import int_list

__all__ = [
    "PROG",
    "config_and_data_flags",
    "config_help",
    "flag_overrides",
    "interrupted",
    "read_config",
    "run_experiment",
    "training_flags",
    "wrote",
]

#: The command's name, in its help and its messages.
PROG = "gbdt-plrank"


def config_help(command: str, what: str) -> str:
    """The help of a command's CONFIG argument: a file, or a bundled configuration's name."""
    names = ", ".join(bundled_configs(command))
    return (
        f"a TOML file describing the {what}, or the name of a bundled one: {names} "
        f"(`{PROG} configs NAME` prints one; a bundled configuration writes to runs/NAME in "
        f"the current folder unless --out is given; a bare name is a bundled configuration, "
        f"anything with a folder or .toml a file, which must exist)"
    )


def read_config(args: argparse.Namespace, command: str, overrides: dict[str, object]) -> Path:
    """The file of ``args.config``; for a bundled configuration without ``--out``, its output
    folder ``runs/NAME`` (in the current folder) is added to ``overrides``."""
    path, name = resolve_config(args.config, command=command)
    if name is not None:
        overrides.setdefault("out", str(Path("runs") / name))
        print(f"the bundled configuration {name!r} ({path}); output folder {overrides['out']}")
    return path


def flag_overrides(args: argparse.Namespace, keys: dict[str, str]) -> dict[str, object]:
    """The configuration values the command's flags replace: ``keys`` maps a flag's ``dest`` to
    the key it replaces; flags not given replace nothing."""
    given = {dest: getattr(args, dest) for dest in keys}
    return {keys[dest]: value for dest, value in given.items() if value is not None}


def interrupted(what: str, out: object) -> int:
    """Say on stderr that ``what`` is kept in ``out`` and how to resume; the exit status 130."""
    print(
        f"interrupted: {what} are kept in {out}; run the same command again to resume.",
        file=sys.stderr,
    )
    return 130


def wrote(paths: Sequence[Path]) -> str:
    """The line naming the files a report wrote: its pictures only when matplotlib is installed
    (without it the reports draw none, and their text says so)."""
    drawn = is_installed("matplotlib")
    return f"wrote {', '.join(str(p) for p in paths if drawn or p.suffix != '.png')}"


def config_and_data_flags(parser: argparse.ArgumentParser, *, command: str, what: str) -> None:
    """An experiment command's CONFIG argument and its --data, --folds and --seeds flags."""
    parser.add_argument("config", metavar="CONFIG", help=config_help(command, what))
    parser.add_argument(
        "--data",
        metavar="DIR",
        type=lambda text: [text],
        help="a bundled dataset or a data folder; replaces the config's datasets",
    )
    parser.add_argument("--folds", metavar="F,F", type=int_list, help="folds, e.g. 1,2,3,4,5")
    parser.add_argument("--seeds", metavar="N", type=int, help="run seeds 0..N-1")


def training_flags(parser: argparse.ArgumentParser) -> None:
    """An experiment command's --rounds, --out and --n-jobs flags."""
    parser.add_argument("--rounds", metavar="N", type=int, help="maximum boosting rounds")
    parser.add_argument("--out", metavar="DIR", help="output folder (default: runs/<config name>)")
    parser.add_argument("--n-jobs", metavar="N", type=int, help="threads per training")


def run_experiment(
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
    :func:`flag_overrides`), the resumable run (``kept`` names what an interruption keeps), its
    report printed and the ``files`` of its store named."""
    overrides = flag_overrides(args, keys)
    path = read_config(args, args.command, overrides)
    config = load(path, overrides=overrides)
    try:
        store = run(config, echo=print)
    except KeyboardInterrupt:
        return interrupted(kept, config.out)
    print(report(config, store, command=args.command_line))
    print(wrote(files(store)))
    return 0
