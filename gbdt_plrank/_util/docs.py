"""Docstrings that share numpydoc entries: each entry written once, filled in at import."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable, Mapping
from typing import TypeVar

T = TypeVar("T")


def fill_entries(
    doc: str, directive: str, entries: Mapping[str, str], *, kind: str | None = None
) -> str:
    """Replace each ``.. <directive>:: name ...`` line of ``doc`` with those entries' text.

    Parameters
    ----------
    doc : str
        The docstring.
    directive : str
        The marker's name, e.g. ``"metric-docs"``.
    entries : mapping of str to str
        The text of each name, unindented (it is indented as the marker line is; blank lines
        stay blank); the entries of one line are joined by newlines.
    kind : str, optional
        What an entry is, for the error on an unknown name; default ``"a shared <directive>
        entry"``.

    Returns
    -------
    str

    Raises
    ------
    KeyError
        For a name that ``entries`` does not hold.
    ValueError
        When ``doc`` has no marker line.
    """
    marker = re.compile(
        rf"^(?P<indent>[ ]*)\.\. {re.escape(directive)}:: (?P<names>.+)$", re.MULTILINE
    )

    def block(match: re.Match[str]) -> str:
        names = match["names"].split()
        unknown = [name for name in names if name not in entries]
        if unknown:
            raise KeyError(f"{unknown[0]!r} is not {kind or f'a shared {directive} entry'}")
        return textwrap.indent("\n".join(entries[name] for name in names), match["indent"])

    filled, count = marker.subn(block, doc)
    if not count:
        raise ValueError(f"the docstring has no '.. {directive}::' line to fill")
    return filled


def shared_entries(directive: str, entries: Mapping[str, str]) -> Callable[[T], T]:
    """A decorator that fills its object's docstring with :func:`fill_entries`."""

    def fill(obj: T) -> T:
        if obj.__doc__ is not None:  # None under ``python -OO``
            obj.__doc__ = fill_entries(obj.__doc__, directive, entries)
        return obj

    return fill
