"""Seeds drawn from a scikit-learn ``random_state``: one owner for every ranker and method."""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.utils import check_random_state

__all__ = ["seeds_from"]

_SEED_BOUND = np.iinfo(np.int32).max


def seeds_from(random_state: Any, n: int) -> list[int]:
    """``n`` seeds in [0, 2**31 - 1) from ``random_state`` (scikit-learn's conventions)."""
    return [int(s) for s in check_random_state(random_state).randint(_SEED_BOUND, size=n)]
