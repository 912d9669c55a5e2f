"""The tree and stopping parameters: each rule and each default written once, checked once.

``gbdt_plrank._backends._parameters`` declares every tree and stopping parameter as a type that
carries its rule and its default (``PARAMETERS``). The surfaces that take them (the ranker, the
network's epochs, the harness's ``[trees]`` and ``[plrank]`` tables, the stopping callbacks, the
plans) build their schemas from those types, declare a default of their own at most once, and
nothing else checks them or gives them a default: the package's source is read here to show it.
"""

from __future__ import annotations

import ast
import inspect
import re
from dataclasses import fields
from pathlib import Path

import numpy as np
import pytest
from pydantic.fields import FieldInfo

from gbdt_plrank import (
    PLRankRanker,
    lightgbm_early_stopping,
    xgboost_early_stopping,
)
from gbdt_plrank._backends import (
    RANKER,
    ROUNDS,
    TREE_SETTINGS,
    Plan,
    RankerParameters,
    Rounds,
    _parameters,
    _stopping,
    check_parameter,
)
from gbdt_plrank._backends._parameters import PARAMETERS, TreeRules
from gbdt_plrank._training.plrank_plan import plrank_plan
from gbdt_plrank._util.schema import Schema, validate
from gbdt_plrank.harness.settings import PLRankSettings, TreeSettings
from gbdt_plrank.nn import PLRankMLPRanker
from gbdt_plrank.nn._ranker import EPOCHS, Epochs

PACKAGE = Path(__file__).resolve().parent.parent / "gbdt_plrank"
SCHEMA_MODULE = PACKAGE / "_backends" / "_parameters.py"

#: Every schema that takes tree or stopping parameters, and the parameter each field is (by
#: default its own name).
SURFACES: dict[type[Schema], dict[str, str]] = {
    TreeRules: {},
    Rounds: {},
    RankerParameters: {},
    TreeSettings: {"rounds": "n_estimators"},
    PLRankSettings: {},
    Epochs: {"max_epochs": "n_estimators"},
}

#: One value that breaks each parameter's rule.
BAD = {
    "learning_rate": 0.0,
    "max_depth": 0,
    "num_leaves": 1,
    "min_child_weight": -1.0,
    "reg_alpha": float("nan"),
    "reg_lambda": -0.5,
    "min_split_gain": float("inf"),
    "subsample": 1.5,
    "colsample_bytree": 0.0,
    "backend": "catboost",
    "n_estimators": 0,
    "early_stopping_rounds": 0,
    "stopping_metric": "ndcg",
    "min_rounds": -1,
    "min_delta": -0.01,
    "patience_rate": -0.5,
    "early_stopping": "yes",
    "validation_fraction": 1.0,
}


def _rule(info: FieldInfo) -> tuple:
    return info.annotation, info.metadata, info.description


def _fields() -> list[tuple[type[Schema], str, str]]:
    """(schema, field, parameter) for every field of the surfaces that is a parameter."""
    return [
        (schema, name, renamed.get(name, name))
        for schema, renamed in SURFACES.items()
        for name in schema.model_fields
        if renamed.get(name, name) in PARAMETERS
    ]


def test_every_parameter_has_one_rule_and_one_bad_value_here():
    assert set(BAD) == set(PARAMETERS)
    assert TREE_SETTINGS == tuple(TreeRules.model_fields) and len(TREE_SETTINGS) == 9


@pytest.mark.parametrize(
    ("schema", "name", "parameter"),
    _fields(),
    ids=lambda v: v.__name__ if isinstance(v, type) else str(v),
)
def test_each_surface_takes_the_rule_of_its_parameter(schema, name, parameter):
    """The field's type, constraints and rule in words are the parameter's declaration."""
    assert _rule(schema.model_fields[name]) == _rule(
        FieldInfo.from_annotation(PARAMETERS[parameter])
    )


@pytest.mark.parametrize("parameter", sorted(PARAMETERS))
def test_the_message_names_the_value_and_the_rule_on_every_surface(parameter):
    rule = FieldInfo.from_annotation(PARAMETERS[parameter]).description
    bad = BAD[parameter]
    with pytest.raises(ValueError) as single:
        check_parameter(parameter, bad)
    assert str(single.value) == f"{parameter} must be {rule}, but {bad!r} is given."
    for schema, name, of in _fields():
        if of == parameter:
            key = schema.model_fields[name].alias or name
            with pytest.raises(ValueError, match=re.escape(f"{key} must be {rule}, but {bad!r}")):
                validate(schema, {key: bad}, source="here")
    if parameter != "early_stopping_rounds":  # fit's own argument
        with pytest.raises(ValueError, match=re.escape(f"{parameter} must be {rule}, but")):
            PLRankRanker(**{parameter: bad})._training(None, None)


def _literal(node: ast.AST | None) -> bool:
    """A default written as a value (None, "not given", is no value)."""
    if isinstance(node, ast.UnaryOp):
        node = node.operand
    return isinstance(node, ast.Constant) and node.value is not None


def _hand_written(path: Path) -> list[str]:
    """Where ``path`` gives a parameter a default value outside a schema's field declaration,
    or checks one by hand (a ``check_*`` call naming it as a string first argument)."""
    tree = ast.parse(path.read_text())
    schemas = {
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef)
        and any(
            getattr(b, "id", getattr(b, "attr", ""))
            in {"Schema", "PLRankFields", "TreeRules", "Rounds"}
            for b in node.bases
        )
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            positional = [*a.posonlyargs, *a.args]
            pairs = list(zip(positional[len(positional) - len(a.defaults) :], a.defaults))
            pairs += [(arg, d) for arg, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None]
            found += [
                f"{node.name}({arg.arg}=...) line {node.lineno}"
                for arg, d in pairs
                if arg.arg in PARAMETERS and _literal(d)
            ]
        elif isinstance(node, ast.ClassDef) and node.name not in schemas:
            found += [
                f"{node.name}.{item.target.id} line {item.lineno}"
                for item in node.body
                if isinstance(item, ast.AnnAssign)
                and isinstance(item.target, ast.Name)
                and item.target.id in PARAMETERS
                and _literal(item.value)
            ]
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            callee = getattr(node.func, "id", getattr(node.func, "attr", ""))
            if (
                node.args[0].value in PARAMETERS
                and callee.startswith("check_")
                and (callee != "check_parameter")
            ):
                found.append(f"{callee}({node.args[0].value!r}, ...) line {node.lineno}")
    return found


def test_no_default_or_check_of_a_parameter_is_written_outside_its_schema(tmp_path):
    # the click model's regression has trees of its own, not the boosters' shared settings
    clicks = {PACKAGE / "clicks.py", *PACKAGE.glob("clicks/*.py")}
    checked = sorted(p for p in PACKAGE.rglob("*.py") if p != SCHEMA_MODULE and p not in clicks)
    assert len(checked) > 50
    written = {str(p.relative_to(PACKAGE)): _hand_written(p) for p in checked}
    assert {path: where for path, where in written.items() if where} == {}
    # the scan finds what it looks for
    probe = tmp_path / "probe.py"
    probe.write_text(
        (SCHEMA_MODULE.parent / "_stopping.py").read_text()
        + (
            "\n\ndef f(min_delta=0.0):\n    check_positive_int('n_estimators', 3)\n"
            "\n\n@dataclass\nclass P:\n    min_rounds: int = 0\n"
        )
    )
    assert len(_hand_written(probe)) == 3
    for gone in ("check_min_delta", "check_min_rounds", "check_min_rounds_choice"):
        assert not hasattr(_stopping, gone)


def _subclasses(cls: type) -> set[type]:
    return {c for s in cls.__subclasses__() for c in {s, *_subclasses(s)}}


def test_every_schema_with_a_parameter_is_a_surface_checked_here():
    import gbdt_plrank.harness
    import gbdt_plrank.tuning  # noqa: F401

    with_parameters = {
        schema
        for schema in _subclasses(Schema)
        if any(SURFACES.get(schema, {}).get(f, f) in PARAMETERS for f in schema.model_fields)
        and schema.__module__.startswith("gbdt_plrank")
        and schema.__module__ != _parameters.__name__  # the declarations themselves
    }
    # a schema that inherits a surface's fields inherits its rules
    assert {s for s in with_parameters if not any(issubclass(s, t) for t in SURFACES)} == set()


def _defaults(function) -> dict[str, object]:
    return {
        name: p.default
        for name, p in inspect.signature(function).parameters.items()
        if name in PARAMETERS and p.default is not p.empty
    }


def test_each_surface_takes_its_defaults_from_its_schema():
    ranker = _defaults(PLRankRanker.__init__)
    assert ranker == {name: getattr(RANKER, name) for name in ranker}
    assert set(ranker) == set(RankerParameters.model_fields) - {"early_stopping_rounds"}
    assert (RANKER.n_estimators, RANKER.learning_rate, RANKER.min_rounds) == (150, 0.2, "auto")
    assert (RANKER.min_child_weight, RANKER.reg_lambda) == (1.0, 1.0)
    for callback in (xgboost_early_stopping, lightgbm_early_stopping):
        assert _defaults(callback) == {
            "min_rounds": ROUNDS.min_rounds,
            "min_delta": 0.0,
            "patience_rate": 0.0,
        }
    assert _defaults(plrank_plan) == {
        "min_rounds": ROUNDS.min_rounds,
        "min_delta": ROUNDS.min_delta,
        "patience_rate": ROUNDS.patience_rate,
    }
    plan = {f.name: f.default for f in fields(Plan) if f.name in PARAMETERS}
    assert plan == ROUNDS.model_dump()
    network = inspect.signature(PLRankMLPRanker.__init__).parameters["max_epochs"]
    assert network.default == EPOCHS.max_epochs
    # min_delta's default is the one of its declaration on every surface
    declared = FieldInfo.from_annotation(PARAMETERS["min_delta"]).default
    assert declared == RANKER.min_delta == ROUNDS.min_delta == TreeSettings().min_delta == 0.0


def test_the_documented_defaults_are_the_schemas():
    doc = inspect.getdoc(PLRankRanker)
    for name in set(RankerParameters.model_fields) - {"early_stopping_rounds"}:
        value = getattr(RANKER, name)
        written = f'"{value}"' if isinstance(value, str) else repr(value)
        match = re.search(rf"^(?:\w+, )*{name}(?:, \w+)* : .*, default (.+)$", doc, re.MULTILINE)
        assert match is not None and match[1].strip() == written, name


def test_min_delta_is_checked_once_on_its_way_to_the_stopper(monkeypatch):
    """The ranker checks its parameters in one call; the value reaches the early stopping of
    the booster as checked, and nothing on the way checks it again."""
    validated: list[tuple[str, tuple[str, ...]]] = []
    original = Schema.model_validate.__func__

    def spy(cls, data, *args, **kwargs):
        validated.append((cls.__name__, tuple(data)))
        return original(cls, data, *args, **kwargs)

    monkeypatch.setattr(Schema, "model_validate", classmethod(spy))
    stoppers = []
    made = _stopping.EarlyStopper.__post_init__

    def seen(self):
        stoppers.append(self)
        made(self)

    monkeypatch.setattr(_stopping.EarlyStopper, "__post_init__", seen)
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(60, 3)), rng.integers(0, 3, 60).astype(float)
    qid = np.repeat(np.arange(10), 6)
    PLRankRanker(
        n_estimators=3,
        N=4,
        min_child_weight=0.01,
        n_jobs=1,
        random_state=0,
        min_delta=0.0125,
        min_rounds=2,
    ).fit(
        X,
        y,
        qid,
        eval_set=[(X, y, qid)],
        early_stopping_rounds=2,
    )
    with_min_delta = [name for name, keys in validated if "min_delta" in keys]
    assert with_min_delta == ["RankerParameters"]
    assert [(s.patience, s.min_rounds, s.min_delta) for s in stoppers] == [(2, 2, 0.0125)]
    assert _parameters.RankerParameters is RankerParameters
