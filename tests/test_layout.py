"""The package's layers: the Numba kernels live in ``gbdt_plrank/_kernels/`` and nowhere else.

The kernels import only NumPy, Numba and one another, so that ``benchmarks/kernel_revisions.py``
can load the kernels of any revision on their own; every other module reaches them through a
Python function that validates the input first.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "gbdt_plrank"
KERNELS = PACKAGE / "_kernels"
NUMBA_COMPILERS = {"njit", "jit", "vectorize", "guvectorize", "stencil", "cfunc", "generated_jit"}


def _compiled(tree: ast.AST) -> list[str]:
    """The functions of ``tree`` that a Numba decorator compiles."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            for decorator in node.decorator_list:
                target = decorator.func if isinstance(decorator, ast.Call) else decorator
                attribute = isinstance(target, ast.Attribute)
                name = target.attr if attribute else getattr(target, "id", "")
                if name in NUMBA_COMPILERS:
                    found.append(f"{node.name} (line {node.lineno})")
    return found


def _numba_names(tree: ast.AST) -> list[str]:
    """The Numba compilers that ``tree`` imports by name (``from numba import njit``)."""
    return [
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "numba"
        for alias in node.names
        if alias.name in NUMBA_COMPILERS
    ]


MODULES = sorted(p for p in PACKAGE.rglob("*.py") if KERNELS not in p.parents)


def test_the_layout_is_found() -> None:
    assert any(p.name == "ranker.py" for p in MODULES)
    assert _compiled(ast.parse((KERNELS / "plrank.py").read_text()))
    assert _compiled(ast.parse("@numba.njit(cache=True)\ndef f(x):\n    return x\n"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_kernel_outside_the_kernels_folder(path: Path) -> None:
    tree = ast.parse(path.read_text())
    assert not _compiled(tree) and not _numba_names(tree), (
        f"{path.relative_to(PACKAGE)} compiles Numba kernels: they belong in gbdt_plrank/_kernels/"
    )


@pytest.mark.parametrize("path", sorted(KERNELS.glob("*.py")), ids=lambda p: p.name)
def test_kernels_import_only_numpy_numba_and_each_other(path: Path) -> None:
    allowed = {"__future__", "math", "functools", "typing", "numpy", "numba"}
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            modules = [] if node.level == 1 else [node.module or ""]
        else:
            continue
        outside = [m for m in modules if m.split(".")[0] not in allowed]
        assert not outside, f"_kernels/{path.name} imports {outside}"
