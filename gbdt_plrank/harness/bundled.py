"""The configurations that ship with the package: found by name from any folder.

The repository's ``configs/`` folder is their one source: the wheel copies it into the package
(``gbdt_plrank/configs/``, see ``pyproject.toml``), and a source checkout or an editable install
reads the folder itself. A configuration's name is its file name without ``.toml``
(``demo``, ``headline``, ``fairness_group``, ``clicks-mq2008``); the search spaces of
``configs/spaces/`` are named the same way (``paper``).

Which command reads a configuration follows its name: ``clicks-*`` for ``gbdt-plrank clicks``,
``fairness*`` for ``gbdt-plrank fairness``, the files of ``spaces/`` for ``gbdt-plrank tune
--space`` and every other one for ``gbdt-plrank compare`` (and ``tune --config``).

On the command line a bundled configuration is named by its bare name, a file by its path
(:func:`resolve_config`, the one rule of every command).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from .settings import ConfigError

__all__ = [
    "COMMANDS",
    "BundledConfig",
    "bundled_configs",
    "config_folder",
    "is_bundled_name",
    "resolve_config",
]

#: The commands that read bundled configurations, in the order ``gbdt-plrank configs`` lists them.
COMMANDS = ("compare", "fairness", "clicks", "space")

_PACKAGE = Path(__file__).resolve().parents[1]


def config_folder() -> Path:
    """The folder of the bundled configurations: the package's copy in an installed wheel, the
    repository's ``configs/`` in a source checkout or an editable install.

    Raises
    ------
    FileNotFoundError
        When neither holds a configuration (a broken installation).
    """
    for folder in (_PACKAGE / "configs", _PACKAGE.parent / "configs"):
        if any(folder.glob("*.toml")):
            return folder
    raise FileNotFoundError(
        f"the bundled configurations are missing: neither {_PACKAGE / 'configs'} nor "
        f"{_PACKAGE.parent / 'configs'} holds a .toml file; reinstall the package."
    )


def _command(path: Path) -> str:
    if path.parent.name == "spaces":
        return "space"
    for command in ("clicks", "fairness"):
        if path.stem.startswith(command):
            return command
    return "compare"


class BundledConfig:
    """One bundled configuration: its ``name``, ``path``, the ``command`` that reads it
    (``"compare"``, ``"fairness"``, ``"clicks"`` or ``"space"``) and a one-line ``summary``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.name = path.stem
        self.command = _command(path)

    @property
    def summary(self) -> str:
        """The first sentence of the file's opening comment (without the command line that some
        of them open with)."""
        lines = []
        for line in self.path.read_text(encoding="utf-8").splitlines():
            text = line.lstrip("#").strip()
            if not line.startswith("#") or (text.startswith("gbdt-plrank ") and ": " not in text):
                break  # the end of the opening comment, or the command line of an example
            lines.append(text)
        text = " ".join(lines)
        if text.startswith("gbdt-plrank ") and ": " in text:
            text = text.split(": ", 1)[1]
        text = re.split(r"(?<=\.)\s+(?=[A-Z])", text, maxsplit=1)[0].rstrip(":")
        return text

    def __repr__(self) -> str:
        return f"BundledConfig({self.name!r}, command={self.command!r})"


def bundled_configs(command: str | None = None) -> dict[str, BundledConfig]:
    """The bundled configurations by name, sorted; only those ``command`` reads if given.

    Parameters
    ----------
    command : {"compare", "fairness", "clicks", "space"}, optional
        Keep the configurations of this command.

    Returns
    -------
    dict
        Name -> :class:`BundledConfig`.
    """
    if command is not None and command not in COMMANDS:
        raise ValueError(f"command must be one of {', '.join(COMMANDS)}, but {command!r} is given")
    folder = config_folder()
    paths = sorted([*folder.glob("*.toml"), *folder.glob("spaces/*.toml")], key=lambda p: p.stem)
    configs = {path.stem: BundledConfig(path) for path in paths}
    return {name: c for name, c in configs.items() if command in (None, c.command)}


def is_bundled_name(text: str) -> bool:
    """Whether a CONFIG argument is a bare name, which names a bundled configuration: no folder
    and no ``.toml`` (``demo``); anything else is a path (``demo.toml``, ``configs/demo.toml``,
    ``./demo``)."""
    separators = {"/", os.sep, *([os.altsep] if os.altsep else [])}
    return (
        not any(sep in text for sep in separators)
        and text not in ("", ".", "..")
        and Path(text).suffix.lower() != ".toml"
    )


def resolve_config(text: str, *, command: str) -> tuple[Path, str | None]:
    """The file a CONFIG argument names, and the bundled configuration's name if it is one.

    One rule for every command (``compare``, ``fairness``, ``clicks``, ``tune --config``,
    ``tune --space``, ``configs``): a bare name (:func:`is_bundled_name`) names a bundled
    configuration; anything else is a path to a file, which must exist.

    Parameters
    ----------
    text : str
        The argument as given.
    command : {"compare", "fairness", "clicks", "space"}
        The command that reads it.

    Returns
    -------
    (Path, str or None)
        The file, and the bundled name (None for a path).

    Raises
    ------
    ConfigError
        For a bare name that is no bundled configuration of ``command`` (listing them), and for
        a path that does not exist (naming the bundled configuration of that name, if there is
        one; a folder is returned, for the reader to refuse).
    """
    path = Path(text)
    every = bundled_configs()
    if not is_bundled_name(text):
        if path.exists():
            return path, None  # a folder: the reader says that it must be a file
        found = every.get(path.stem)
        hint = (
            f"; the bundled configuration {path.stem!r} is named without a folder or .toml: "
            f"`gbdt-plrank {_reader(found.command)} {path.stem}`"
            if found is not None and path.suffix.lower() in (".toml", "")
            else f"; {_choices(command)}"
        )
        raise ConfigError(f"no such configuration file: {text}{hint}")
    if text in every:
        found = every[text]
        if found.command != command:
            raise ConfigError(
                f"{text!r} is a bundled configuration of `gbdt-plrank {_reader(found.command)}`, "
                f"not of {command}; {_choices(command)}"
            )
        return found.path, text
    own = f" (a file named {text!r} is here: give its path, ./{text})" if path.is_file() else ""
    raise ConfigError(
        f"{text!r} is not the name of a bundled configuration{own}; {_choices(command)}"
    )


def _reader(command: str) -> str:
    """The command line that reads a bundled configuration of ``command``."""
    return "tune --space" if command == "space" else command


def _choices(command: str) -> str:
    names = ", ".join(bundled_configs(command))
    return f"bundled {command} configurations: {names} (`gbdt-plrank configs` lists them all)"
