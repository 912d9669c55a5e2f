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


@pytest.fixture
def little_memory():
    """A context manager under which the process may map only 1 GiB more (Linux): an allocation
    beyond it raises MemoryError at once, where it would otherwise fill the machine's memory."""
    resource = pytest.importorskip("resource")
    from contextlib import contextmanager

    def mapped() -> int:
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize"))

    @contextmanager
    def limited():
        if not Path("/proc/self/status").exists():
            pytest.skip("needs /proc/self/status (Linux)")
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        limit = mapped() + 2**30
        if hard != resource.RLIM_INFINITY and limit > hard:
            pytest.skip("the address-space limit is lower than the test needs")
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
        try:
            yield
        finally:
            resource.setrlimit(resource.RLIMIT_AS, (soft, hard))

    return limited
