"""The growing patience of early stopping written out, for the tests that check where a training
stopped (independent of ``gbdt_plrank._backends.EarlyStopper``, which they test)."""

from __future__ import annotations

import math

from gbdt_plrank import PATIENCE_RATE


def rounds_after_best(best: int, patience: int, rate: float = PATIENCE_RATE) -> int:
    """The rounds a training runs past its 0-based best round ``best`` before it stops: the
    patience, or ``rate`` times the rounds up to and with the best when that is longer."""
    return max(patience, math.ceil(rate * (best + 1) - 1e-9))
