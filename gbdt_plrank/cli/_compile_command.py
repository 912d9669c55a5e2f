"""The ``compile`` subcommand of ``gbdt-plrank``: the Numba kernels compiled ahead.

.. code-block:: text

    gbdt-plrank compile

Compiles every CPU kernel into Numba's on-disk cache (:func:`gbdt_plrank.compile_kernels`).
"""

from __future__ import annotations

import argparse

__all__ = ["HELP", "configure", "run"]

HELP = (
    "compile the Numba kernels into Numba's on-disk cache ahead of a first training (for "
    "a container image or a CI cache: NUMBA_CACHE_DIR chooses the folder)"
)


def configure(parser: argparse.ArgumentParser) -> None:
    """No arguments: Numba's cache folder is its own (``NUMBA_CACHE_DIR``)."""


def run(args: argparse.Namespace) -> int:
    """Run the compilation; return the exit status."""
    from .._compile import compile_kernels

    print(
        "compiling every kernel into Numba's cache, once per environment (minutes: more "
        "kernels than a first training needs)...",
        flush=True,
    )
    compiled = compile_kernels()
    if compiled:
        print(
            f"compiled {len(compiled)} kernels in {compiled.seconds:.1f} s; later processes "
            f"load them from Numba's cache"
        )
    else:
        print(f"every kernel was in Numba's cache already (checked in {compiled.seconds:.1f} s)")
    return 0
