"""The ``configs`` subcommand of ``gbdt-plrank``: the configurations that ship with the package.

.. code-block:: text

    gbdt-plrank configs [NAME]

Without NAME, lists every bundled configuration (:mod:`gbdt_plrank.harness.bundled`) by the
command that reads it; with NAME, prints that one, to copy and change.
"""

from __future__ import annotations

import argparse
import textwrap
from pathlib import Path

from ..harness.bundled import COMMANDS, bundled_configs, is_bundled_name
from ..harness.settings import ConfigError
from ._experiment import PROG

__all__ = ["HELP", "configure", "run"]

HELP = "list the configurations that ship with the package, or print one to start from"


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the arguments of ``configs`` to ``parser``."""
    parser.add_argument(
        "name",
        metavar="NAME",
        nargs="?",
        help="print this configuration (to copy and change: "
        f"`{PROG} configs demo > mine.toml`); without NAME, list them",
    )


def run(args: argparse.Namespace) -> int:
    """Run the listing or the printing of a configuration; return the exit status."""
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
