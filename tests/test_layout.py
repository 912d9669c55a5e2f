"""The package's layers: the Numba kernels live in ``gbdt_plrank/_kernels/`` and nowhere else.

The kernels import only NumPy, Numba and one another, so that ``benchmarks/kernel_revisions.py``
can load the kernels of any revision on their own; every other module reaches them through a
Python function that validates the input first.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
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
    "path",
    sorted(p for p in HARNESS.glob("*.py") if p.name != "__init__.py"),
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
DOCS = ROOT / "docs"
#: The backend layer's former name: still registered for old pickles, imported by nothing.
OLD_NAMES = ("gbdt_plrank._boosters",)

#: The private modules that the project's own benchmarks and research scripts may import, and
#: what for: they keep their names and the names the scripts use from them as the package
#: changes (a change updates the scripts with it). docs/api/internals.rst lists the same modules;
#: every other private module is the package's own. Tests may import any module.
STABLE_INTERNALS = {
    "gbdt_plrank._backends": "training with one library's backend directly (BACKENDS, "
    "BoosterSettings), a parameter checked by its schema "
    "(check_parameter) and the stopping rule replayed on a recorded "
    "curve (EarlyStopper)",
    "gbdt_plrank._training.plrank_plan": "a PL-Rank training planned as the rankers plan it "
    "(plrank_plan)",
    "gbdt_plrank._training.evaluation": "the policy's value as an evaluation metric "
    "(PolicyEvaluator, its sample counts, the standardized "
    "metric's spread)",
    "gbdt_plrank._training.options": "the values an option takes (NOISES, HESSIAN_MODES)",
    "gbdt_plrank._training.deep_weights": "the deep documents' weights of deep_weight "
    "(deep_weights, placement_weights)",
    "gbdt_plrank._training.fairness_spec": "a fairness term with its weight (FairnessSpec)",
    "gbdt_plrank._training.pirank_objective": "PiRank's Hessian modes (PIRANK_HESSIANS)",
    "gbdt_plrank._training.gpu": "the device check and the copy to the host (check_device, "
    "to_host)",
    "gbdt_plrank._ranking_metric": "the metric and its gains (RankingMetric, dcg_weights)",
    "gbdt_plrank._groups": "statistics of rows grouped by query (within_query_spread)",
    "gbdt_plrank._kernels.plrank": "the estimator's kernels, measured on their own "
    "(estimate_groups)",
    "gbdt_plrank._kernels.samplers": "the samplers' codes and the PL weights (SAMPLER_TREE, "
    "SAMPLER_RACE, shifted_exp), so that a research kernel weighs as the estimator does",
    "gbdt_plrank._kernels.streams": "the noises' codes and the random stream "
    "(NOISE_INDEPENDENT, stream_state, _uniform), so that a research kernel draws the "
    "estimator's numbers",
    "gbdt_plrank._util.compat": "optional dependencies (is_installed, MissingDependencyError)",
    "gbdt_plrank._util.schema": "a value read as TOML reads it (toml_value)",
    "gbdt_plrank._util.threads": "the OpenMP wait the package sets (OPENMP_WAIT, USER_WAIT), "
    "recorded with every benchmark's environment",
    "gbdt_plrank.cli._argtypes": "the command line's list arguments (int_list, text_list)",
    "gbdt_plrank.clicks._click_model": "the position-based click model's likelihood "
    "(display_counts, likelihood_objective)",
    "gbdt_plrank.clicks._position_bias": "the position bias through the features with the "
    "evidence of its features, before the rule of estimate_position_bias refuses it "
    "(features_estimate, MIN_FEATURE_QUERIES, MIN_FEATURE_EVIDENCE)",
}


def _is_module(dotted: str) -> bool:
    """Whether ``dotted`` names a module or package of the checkout (rather than a name
    defined in one)."""
    path = ROOT.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _imports(source: str, where: Sequence[str]) -> set[str]:
    """The ``gbdt_plrank`` modules that ``source``, the module at ``where`` (its dotted path's
    parts, from the checkout's root), imports, relative imports resolved: ``import a.b`` and
    ``from a.b import name`` import ``a.b``; ``from a import b`` imports the module ``a.b``
    where ``b`` is one, else ``a``."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "gbdt_plrank"}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(where[: len(where) - node.level])
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            if module.split(".")[0] != "gbdt_plrank":
                continue
            for alias in node.names:
                found.add(
                    f"{module}.{alias.name}" if _is_module(f"{module}.{alias.name}") else module
                )
    return found


def _package_imports(path: Path) -> set[str]:
    """The ``gbdt_plrank`` modules the file ``path`` imports (:func:`_imports`)."""
    return _imports(path.read_text(), path.relative_to(ROOT).with_suffix("").parts)


def _private(module: str) -> bool:
    return any(part.startswith("_") for part in module.split(".")[1:])


SOURCES = sorted(
    p
    for folder in ("gbdt_plrank", "tests", "benchmarks", "research")
    for p in (ROOT / folder).rglob("*.py")
)
SCRIPTS = [p for p in SOURCES if p.relative_to(ROOT).parts[0] in ("benchmarks", "research")]


def test_the_import_scan_resolves_relative_and_absolute_imports() -> None:
    assert "gbdt_plrank._backends" in _package_imports(PACKAGE / "ranker.py")
    assert "gbdt_plrank._backends._stopping" in _package_imports(PACKAGE / "__init__.py")
    assert "gbdt_plrank._backends._torch" in _package_imports(ROOT / "tests" / "test_nn.py")
    script = (
        "import gbdt_plrank._training.plrank_grad_hess\n"
        "from gbdt_plrank._kernels import plrank as k\n"
        "def f():\n    from gbdt_plrank._training.options import NOISES, DEFAULTS\n"
        "from gbdt_plrank import PLRankOptions\n"
    )
    assert _imports(script, ("research", "probe")) == {
        "gbdt_plrank._training.plrank_grad_hess",
        "gbdt_plrank._kernels.plrank",
        "gbdt_plrank._training.options",
        "gbdt_plrank",
    }
    assert _imports("from .._backends import Plan\n", ("gbdt_plrank", "nn", "x")) == {
        "gbdt_plrank._backends"
    }
    assert {m for m in _package_imports(ROOT / "benchmarks" / "bench_round.py") if _private(m)} == {
        "gbdt_plrank._backends",
        "gbdt_plrank._training.plrank_plan",
        "gbdt_plrank._training.evaluation",
    }


def test_nothing_imports_the_old_module_names() -> None:
    old = {
        str(path.relative_to(ROOT)): sorted(
            m for m in _package_imports(path) if m.startswith(OLD_NAMES)
        )
        for path in SOURCES
    }
    assert not {k: v for k, v in old.items() if v}, "the modules are gbdt_plrank._backends"


def test_benchmarks_and_research_import_only_the_stable_internals() -> None:
    outside = {
        str(path.relative_to(ROOT)): sorted(
            m for m in _package_imports(path) if _private(m) and m not in STABLE_INTERNALS
        )
        for path in SCRIPTS
    }
    outside = {k: v for k, v in outside.items() if v}
    assert not outside, (
        f"{outside}: a script imports a private module that is not one of the stable internals "
        f"(tests/test_layout.py STABLE_INTERNALS, docs/api/internals.rst): import it by its "
        f"public path, or add the module to both lists with what the scripts need from it"
    )


def test_every_stable_internal_is_used_exists_and_is_documented() -> None:
    used = set().union(*(_package_imports(path) for path in SCRIPTS))
    assert set(STABLE_INTERNALS) <= used, "a stable internal no script imports: drop it"
    assert all(_is_module(m) and _private(m) for m in STABLE_INTERNALS)
    page = (ROOT / "docs" / "api" / "internals.rst").read_text()
    section = re.search(
        r"What the benchmarks and research may import\n-+\n(.*?)(?=\n[^\n]+\n-{3,}\n|\Z)",
        page,
        re.S,
    )
    assert section, (
        "docs/api/internals.rst has a section 'What the benchmarks and research may import'"
    )
    listed = re.findall(r"^- ``(gbdt_plrank\.[\w.]+)``", section.group(1), re.M)
    assert sorted(listed) == sorted(STABLE_INTERNALS), "the page lists the stable internals"


# --------------------------------------------------------------------------------------------
# The floors: what may import what
# --------------------------------------------------------------------------------------------
#: The package's rooms by floor, from the top down. A room is a subpackage or a module directly
#: under ``gbdt_plrank`` (``""``: the package's face, its ``__init__``). A module imports modules
#: of its own room and of rooms on lower floors only: no import runs back up a floor, and the
#: rooms of one floor do not import each other (docs/api/internals.rst, "The layout").
FLOORS = (
    ("__main__",),  # python -m gbdt_plrank
    ("cli",),  # the command line
    ("tuning",),  # the tuner, on the comparison harness
    ("harness",),  # the experiments and the pieces they share
    ("", "dask"),  # the package's face; the Dask ranker
    ("_compile",),  # every kernel compiled ahead, through the public API
    ("ranker", "nn"),  # the rankers
    ("_estimator",),  # their scikit-learn base
    ("_training",),  # the training path
    ("metrics", "_backends"),  # the metrics; the backend layer
    ("_fairness_terms", "datasets"),  # the registry of fairness terms; the datasets
    (
        "_ranking_metric",
        "_synthetic",
        "_fetched",
        "clicks",
    ),  # the metric and its gains; web-shaped data; data downloaded on request; clicks
    ("_kernels", "_groups", "_util"),  # the kernels; rows grouped by query; the utilities
)
FLOOR = {room: floor for floor, rooms in enumerate(FLOORS) for room in rooms}


def _room(module: str) -> str:
    """The room of a module of the package: its name's part below ``gbdt_plrank``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def floor_breaches(graph: dict[str, set[str]]) -> list[str]:
    """The imports of ``graph`` (module -> the package's modules it imports) that break
    :data:`FLOORS`, in words; a module whose room has no floor is one too."""
    found = []
    for module, imported in sorted(graph.items()):
        here = _room(module)
        if here not in FLOOR:
            found.append(f"{module}: its room {here!r} is on no floor of FLOORS")
            continue
        for other in sorted(imported):
            there = _room(other)
            if there == here or FLOOR.get(there, len(FLOORS)) > FLOOR[here]:
                continue
            where = "on the same floor" if FLOOR.get(there) == FLOOR[here] else "higher up"
            found.append(f"{module} imports {other}, a room {where}")
    return found


def import_circle(graph: dict[str, set[str]]) -> list[str]:
    """A circle of imports in ``graph`` (its modules in order, the first one again last), or an
    empty list where there is none."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(module: str) -> list[str]:
        state[module] = 1
        path.append(module)
        for other in sorted(graph.get(module, ())):
            if state.get(other) == 1:
                return [*path[path.index(other) :], other]
            if other not in state and (circle := visit(other)):
                return circle
        state[module] = 2
        path.pop()
        return []

    for module in sorted(graph):
        if module not in state and (circle := visit(module)):
            return circle
    return []


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_graph() -> dict[str, set[str]]:
    """Every module of the package -> the package's modules it imports (not itself)."""
    graph = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module_name(path)
        graph[module] = _package_imports(path) - {module}
    return graph


def test_the_package_keeps_its_floors() -> None:
    graph = package_graph()
    assert not floor_breaches(graph), "\n".join(floor_breaches(graph))
    assert {_room(module) for module in graph} == set(FLOOR), "a floor's room that is no more"


def test_the_floor_check_finds_an_import_back_up_a_floor() -> None:
    graph = package_graph()
    # a kernel that reads the options: back up four floors
    back = "from .._training.options import NOISES\n"
    graph["gbdt_plrank._kernels.plrank"] |= _imports(back, ("gbdt_plrank", "_kernels", "plrank"))
    # the metrics and the backend layer share a floor: neither may import the other
    graph["gbdt_plrank.metrics._ranking"].add("gbdt_plrank._backends._base")
    graph["gbdt_plrank.clicks._log"].add("gbdt_plrank.clicks._rewards")  # within a room: free
    graph["gbdt_plrank.nowhere"] = set()
    assert floor_breaches(graph) == [
        "gbdt_plrank._kernels.plrank imports gbdt_plrank._training.options, a room higher up",
        "gbdt_plrank.metrics._ranking imports gbdt_plrank._backends._base, a room on the same "
        "floor",
        "gbdt_plrank.nowhere: its room 'nowhere' is on no floor of FLOORS",
    ]


def test_no_modules_import_each_other_in_a_circle() -> None:
    graph = package_graph()
    assert import_circle(graph) == []
    graph["gbdt_plrank._util.validation"].add("gbdt_plrank._util.docs")
    graph["gbdt_plrank._util.docs"].add("gbdt_plrank._util.compat")
    graph["gbdt_plrank._util.compat"].add("gbdt_plrank._util.validation")
    circle = import_circle(graph)
    assert circle[0] == circle[-1] and len(circle) == 4
    assert set(circle) == {f"gbdt_plrank._util.{m}" for m in ("validation", "docs", "compat")}


# --------------------------------------------------------------------------------------------
# Docstrings: the contract, not the derivation
# --------------------------------------------------------------------------------------------
#: The most source lines a docstring of the package may span, its quotes included: what it
#: takes, returns and raises, the math in a few lines and a link to the page of docs/guide/ or
#: docs/research/ that holds the derivation, the protocol or the measurement.
DOCSTRING_LINES = 40

#: The docstrings that may be longer (their name below ``gbdt_plrank``), each with its own
#: bound and the reason: what they take needs the room. Shared entries (``.. plrank-options::``)
#: count as the one line they take in the source.
LONG_DOCSTRINGS = {
    "ranker.PLRankRanker": (
        125,
        "the scikit-learn estimator: its 33 constructor parameters and its fitted attributes "
        "are documented on the class, as scikit-learn's are",
    ),
    "nn._ranker.PLRankMLPRanker": (
        75,
        "the neural estimator: its 20 constructor parameters and its fitted attributes",
    ),
    "tuning.tuner.tune": (60, "the tuner's one entry: 17 parameters, each a knob of the study"),
    "harness.training.train": (
        55,
        "the one entry of every comparison training: 12 parameters, each a part of the run",
    ),
}

#: The most lines one shared option entry (``OPTION_DOCS``) may take, its header included.
OPTION_LINES = 12


def docstring_lengths(source: str, module: str) -> dict[str, int]:
    """The source lines of every docstring of ``source``, the module ``module`` (its dotted
    name below ``gbdt_plrank``), by qualified name: ``"ranker"`` for the module's,
    ``"ranker.PLRankRanker.fit"`` for a method's."""
    found: dict[str, int] = {}

    def visit(node: ast.AST, name: str) -> None:
        body = getattr(node, "body", [])
        first = body[0] if body else None
        if (
            isinstance(first, ast.Expr)
            and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)
        ):
            found[name] = (first.end_lineno or first.lineno) - first.lineno + 1
        for child in body:
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                visit(child, f"{name}.{child.name}")

    visit(ast.parse(source), module)
    return found


def too_long(lengths: dict[str, int]) -> list[str]:
    """The docstrings of ``lengths`` over their bound (:data:`DOCSTRING_LINES`, or their own in
    :data:`LONG_DOCSTRINGS`), in words."""
    return [
        f"{name}: {lines} lines, over {LONG_DOCSTRINGS.get(name, (DOCSTRING_LINES,))[0]}"
        for name, lines in sorted(lengths.items())
        if lines > LONG_DOCSTRINGS.get(name, (DOCSTRING_LINES,))[0]
    ]


def package_docstrings() -> dict[str, int]:
    """The source lines of every docstring of the package (:func:`docstring_lengths`)."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module_name(path).removeprefix("gbdt_plrank").removeprefix(".")
        found |= docstring_lengths(path.read_text(), module or "gbdt_plrank")
    return found


def test_no_docstring_is_over_its_bound() -> None:
    lengths = package_docstrings()
    assert not too_long(lengths), (
        "docstrings state the contract and link the guide page that holds the rest:\n"
        + "\n".join(too_long(lengths))
    )
    for name, (bound, reason) in LONG_DOCSTRINGS.items():
        assert name in lengths, f"{name} has no docstring: drop it from LONG_DOCSTRINGS"
        assert lengths[name] > DOCSTRING_LINES, f"{name} fits the bound: drop its exception"
        assert bound > DOCSTRING_LINES and reason


def test_the_docstring_bound_finds_a_long_docstring() -> None:
    body = "\n".join(f"    line {i}." for i in range(DOCSTRING_LINES))
    source = f'"""A module."""\n\nclass A:\n    def f(self):\n        """Long.\n{body}\n"""\n'
    lengths = docstring_lengths(source, "probe")
    assert lengths == {"probe": 1, "probe.A.f": DOCSTRING_LINES + 2}
    assert too_long(lengths) == [f"probe.A.f: {DOCSTRING_LINES + 2} lines, over {DOCSTRING_LINES}"]
    assert package_docstrings()["ranker.PLRankRanker.fit"] > 1


def test_the_docstrings_link_pages_that_exist() -> None:
    pages = {p.relative_to(ROOT / "docs").with_suffix("").as_posix() for p in DOCS.rglob("*.md")}
    missing = {
        f"{path.relative_to(ROOT)}: {target}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for target in re.findall(r":doc:`(?:[^`<]*<)?/([^`>]+)>?`", path.read_text())
        if target not in pages
    }
    assert not missing, f"links to pages that do not exist: {sorted(missing)}"


def test_every_shared_option_entry_is_short() -> None:
    from gbdt_plrank._training.options import OPTION_DOCS, _entry

    lengths = {name: len(_entry(name, None, None).splitlines()) for name in OPTION_DOCS}
    assert all(lines >= 2 for lines in lengths.values())
    assert not {n: k for n, k in lengths.items() if k > OPTION_LINES}, (
        f"an option's shared entry over {OPTION_LINES} lines: {lengths} (the derivation and "
        "the measurements belong on a guide page, linked from the entry)"
    )
