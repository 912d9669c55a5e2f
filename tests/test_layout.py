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


# --------------------------------------------------------------------------------------------
# The harness: one layout for its experiments, shared pieces below them
# --------------------------------------------------------------------------------------------
HARNESS = PACKAGE / "harness"
EXPERIMENTS = ("compare", "clicks", "frontier")


def _harness_imports(path: Path) -> set[str]:
    """The harness modules ``path`` imports (``"store"``, ``"clicks"``: the first name below
    ``gbdt_plrank.harness``), relative imports resolved."""
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(parts[: len(parts) - node.level])
                full = [*base, *(node.module or "").split(".")] if node.module else base
                names = [full] if node.module else [[*base, a.name] for a in node.names]
            else:
                names = [(node.module or "").split(".")[1:]]
        elif isinstance(node, ast.Import):
            names = [a.name.split(".")[1:] for a in node.names if a.name.startswith("gbdt_plrank.")]
        else:
            continue
        found |= {n[1] for n in names if len(n) > 1 and n[0] == "harness" and n[1]}
    return found


def test_every_experiment_has_config_run_and_report() -> None:
    for name in EXPERIMENTS:
        folder = HARNESS / name
        assert {p.stem for p in folder.glob("*.py")} >= {"__init__", "config", "run", "report"}
    packages = {p.parent.name for p in HARNESS.glob("*/__init__.py")}
    assert packages == set(EXPERIMENTS), "every subpackage of the harness is an experiment"
    assert not list(HARNESS.glob("*_config.py")) + list(HARNESS.glob("*_run.py"))


@pytest.mark.parametrize(
    "path", sorted(p for p in HARNESS.glob("*.py") if p.name != "__init__.py"),
    ids=lambda p: p.name,
)
def test_shared_harness_modules_import_no_experiment(path: Path) -> None:
    assert not _harness_imports(path) & set(EXPERIMENTS), (
        f"harness/{path.name} is shared by the experiments and must not import one"
    )


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_experiments_do_not_import_each_other(name: str) -> None:
    for path in (HARNESS / name).glob("*.py"):
        others = _harness_imports(path) & (set(EXPERIMENTS) - {name})
        assert not others, f"harness/{name}/{path.name} imports the experiment {others}"


def test_the_harness_import_scan_sees_relative_imports() -> None:
    run = HARNESS / "clicks" / "run.py"
    assert {"store", "training", "data", "clicks"} <= _harness_imports(run)
    assert "frontier" in _harness_imports(HARNESS / "__init__.py")


# --------------------------------------------------------------------------------------------
# Imports of the package's modules, from the package, the tests, the benchmarks and research
# --------------------------------------------------------------------------------------------
ROOT = PACKAGE.parent
#: The backend layer's former name: still registered for old pickles, imported by nothing.
OLD_NAMES = ("gbdt_plrank._boosters",)


def _package_imports(path: Path) -> set[str]:
    """The ``gbdt_plrank`` modules ``path`` imports, relative imports resolved (a name imported
    ``from`` a package counts as that package's module ``package.name``, whether or not it is
    one: what may be a module is checked as one)."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "gbdt_plrank"}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = parts[: len(parts) - node.level]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            if module.split(".")[0] == "gbdt_plrank":
                found.add(module)
                found |= {f"{module}.{a.name}" for a in node.names}
    return found


SOURCES = sorted(
    p for folder in ("gbdt_plrank", "tests", "benchmarks", "research")
    for p in (ROOT / folder).rglob("*.py")
)


def test_the_import_scan_resolves_relative_and_absolute_imports() -> None:
    assert "gbdt_plrank._backends" in _package_imports(PACKAGE / "ranker.py")
    assert "gbdt_plrank._backends._stopping" in _package_imports(PACKAGE / "__init__.py")
    assert "gbdt_plrank._backends._torch" in _package_imports(ROOT / "tests" / "test_nn.py")


def test_nothing_imports_the_old_module_names() -> None:
    old = {
        str(path.relative_to(ROOT)): sorted(m for m in _package_imports(path) if m.startswith(OLD_NAMES))
        for path in SOURCES
    }
    assert not {k: v for k, v in old.items() if v}, "the modules are gbdt_plrank._backends"
