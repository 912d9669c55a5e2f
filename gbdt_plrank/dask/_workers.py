"""Every worker of a Dask cluster must run the packages the client runs, in the same versions.

Work sent to a worker is unpickled there: a worker without ``gbdt_plrank`` fails with a
deserialisation error that names neither the worker nor the fix, and one with another version
may compute something else. :func:`check_workers` asks every worker first. The question sent is
``importlib.metadata.version`` itself, from the standard library, so that a worker without
``gbdt_plrank`` can still answer it.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Sequence
from typing import Any

__all__ = ["check_workers"]


def check_workers(client: Any, distributions: Sequence[str]) -> None:
    """Refuse a cluster on which a worker lacks one of ``distributions`` or has another version.

    Parameters
    ----------
    client : distributed.Client
    distributions : sequence of str
        Installed distributions (``"gbdt_plrank"``, ``"xgboost"``, ...) every worker must have in
        the client's version.

    Raises
    ------
    RuntimeError
        Naming the first such worker, what it has, and the fix.
    """
    for name in distributions:
        local = importlib.metadata.version(name)
        found = client.run(importlib.metadata.version, name, on_error="return")
        for worker, version in sorted(found.items()):
            if version == local:
                continue
            if isinstance(version, importlib.metadata.PackageNotFoundError):
                has = f"has no {name} installed"
            elif isinstance(version, BaseException):
                has = f"cannot report its {name} version ({type(version).__name__}: {version})"
            else:
                has = f"has {name} {version}"
            raise RuntimeError(
                f"Dask worker {worker} {has}, but this client runs {name} {local}: install "
                f"{name}=={local} on every worker (gbdt_plrank with its extras: pip install "
                f"'gbdt_plrank[dask,xgboost,lightgbm]')."
            )
