"""Make the plain references in tests/naive.py importable as ``naive``; shared fixtures."""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture(scope="module")
def data():
    """60 small queries (2 to 29 documents), 5 features, labels 0-3 that the features predict."""
    rng = np.random.default_rng(0)
    sizes = rng.integers(2, 30, size=60)
    n = int(sizes.sum())
    X = rng.normal(size=(n, 5))
    y = np.clip(np.round(X[:, 0] + 0.5 * X[:, 1] + rng.normal(scale=0.5, size=n)), 0, 3)
    qid = np.repeat(np.arange(len(sizes)), sizes)
    return X, y, qid, sizes
