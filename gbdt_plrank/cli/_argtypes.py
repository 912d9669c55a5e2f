"""Argument types of the command line: each turns a flag's text into a value or says why not."""

from __future__ import annotations

import argparse

__all__ = ["int_list", "positive_int", "text_list"]


def positive_int(text: str) -> int:
    """An integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, but {text!r} is given")
    return value


def text_list(text: str) -> list[str]:
    """A comma-separated list of non-empty items."""
    items = [item.strip() for item in text.split(",")]
    if not all(items):
        raise argparse.ArgumentTypeError(f"expected a comma-separated list, but {text!r} is given")
    return items


def int_list(text: str) -> list[int]:
    """An integer or comma-separated integers."""
    try:
        return [int(item) for item in text_list(text)]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected an integer or comma-separated integers, but {text!r} is given"
        ) from None
