"""The stack level that points a warning at the user's code, whichever function of the package
issues it."""

from __future__ import annotations

import sys
from pathlib import Path
from types import FrameType

__all__ = ["caller_level"]

#: The package's folder: frames of files under it are the package's own.
_PACKAGE = str(Path(__file__).resolve().parent.parent)


def caller_level() -> int:
    """The ``stacklevel`` that makes a warning issued by this function's caller point at the
    first frame outside the package (the user's ``fit`` call, whatever the ranker)."""
    frame: FrameType | None = sys._getframe(2)
    level = 2
    while frame is not None and str(Path(frame.f_code.co_filename).resolve()).startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    return level
