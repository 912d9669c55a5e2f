"""Declarative checking of options and configuration files: pydantic models, plain-worded errors.

Every options and configuration model derives from :class:`Schema`: frozen, strict types (NumPy
scalars are read as the Python scalars they hold), unknown keys forbidden. Each field states its
rule in words in its ``description`` ("an integer >= 1"), or, for a rule read at validation time
(a choice among the entries of a registry, :func:`registered`), in the :class:`RuleError` its
validator raises; :func:`validate` turns pydantic's first error into one :class:`ConfigError`
sentence that names the key path, the value and that rule, or, for an unknown key, the keys
allowed there.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, TypeVar, Union, get_args, get_origin

import numpy as np
from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError, model_validator

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the same parser, as the tomli package
    import tomli as tomllib

__all__ = [
    "ConfigError",
    "RuleError",
    "Schema",
    "check_keys",
    "one_of",
    "parse_toml",
    "read_toml",
    "registered",
    "toml_value",
    "validate",
]

M = TypeVar("M", bound=BaseModel)


def one_of(names: Any) -> str:
    """A field's rule for a choice: ``"one of 'a', 'b'"``."""
    return f"one of {', '.join(map(repr, names))}"


class ConfigError(ValueError):
    """An option or configuration key, or its value, breaks its rule; the message names both."""


class RuleError(ValueError):
    """Raised by a field's validator whose rule is read when it runs: :func:`validate` names
    ``rule`` in place of the field's ``description``."""

    def __init__(self, rule: str) -> None:
        super().__init__(rule)
        self.rule = rule


def registered(
    names: Callable[[], Sequence[str]],
    *,
    optional: bool = False,
    rule: Callable[[Sequence[str]], str] = one_of,
) -> Any:
    """A field type whose value is one of ``names()`` when it is validated (None too, if
    ``optional``): a choice among the entries of a registry that may grow after import.
    ``rule`` words the rule from the names allowed (default: "one of ..."), for the error."""

    def check(value: Any) -> Any:
        allowed = tuple(names())
        if (value is None and optional) or (isinstance(value, str) and value in allowed):
            return value
        raise RuleError(("None or " if optional else "") + rule(allowed))

    return Annotated[str | None if optional else str, BeforeValidator(check)]


class Schema(BaseModel):
    """Base of the configuration models: frozen, strict, unknown keys refused."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        strict=True,
        populate_by_name=True,
        arbitrary_types_allowed=True,
    )

    @model_validator(mode="before")
    @classmethod
    def _python_scalars(cls, data: Any) -> Any:
        """NumPy scalars as Python scalars (``np.int64(5)`` is 5; ``np.bool_`` stays a bool)."""
        if isinstance(data, dict):
            return {k: v.item() if isinstance(v, np.generic) else v for k, v in data.items()}
        return data


def read_toml(path: Path, *, what: str = "configuration file") -> dict[str, Any]:
    """The TOML file ``path`` as a dict; a missing or malformed file is a :class:`ConfigError`."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"no such {what}: {path}") from None
    except IsADirectoryError:
        raise ConfigError(f"the {what} must be a file, but {path} is a folder.") from None
    return parse_toml(text, source=str(path))


def parse_toml(text: str, *, source: str) -> dict[str, Any]:
    """The TOML ``text`` as a dict; malformed text is a :class:`ConfigError` naming ``source``."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"{source} is not valid TOML: {err}") from None


def toml_value(text: str) -> Any:
    """``text`` read as a TOML value (``0.5`` a float, ``25`` an int, ``true`` a bool, ``"a"``
    a string), or ``text`` itself where it is none (a bare word such as ``lattice``)."""
    try:
        return tomllib.loads(f"value = {text}")["value"]
    except tomllib.TOMLDecodeError:
        return text


def _keys(model: type[BaseModel]) -> dict[str, str]:
    """TOML key -> field name of ``model`` (a field's alias is its key)."""
    return {(f.alias or name): name for name, f in model.model_fields.items()}


def _walk(model: type[BaseModel], loc: tuple[Any, ...]) -> tuple[type[BaseModel], str | None, str]:
    """The model holding the error's field, the field's rule (description) and the key path."""
    path: list[str] = []
    rule = None
    union = False
    for i, part in enumerate(loc):
        if isinstance(part, int):  # an item of a list: the list's rule applies
            continue
        if union:  # the member of a union field the value failed ("int"): the field's rule
            break
        path.append(str(part))
        name = _keys(model).get(str(part))
        if name is None:
            return model, None, ".".join(path)
        field = model.model_fields[name]
        rule = field.description
        sub = field.annotation
        union = get_origin(sub) in (Union, UnionType)
        members = [m for m in get_args(sub) if m is not type(None)] if union else []
        if len(members) == 1 and isinstance(members[0], type) and issubclass(members[0], BaseModel):
            sub, union = members[0], False  # an optional table (Model | None): the model's keys
        if isinstance(sub, type) and issubclass(sub, BaseModel) and i < len(loc) - 1:
            model = sub
    return model, rule, ".".join(path)


def _sentence(root: type[BaseModel], error: Any, source: str, prefix: str) -> str:
    loc = tuple(error["loc"])
    model, rule, key = _walk(root, loc)
    key = ".".join(part for part in (prefix, key) if part)
    if error["type"] == "extra_forbidden":
        parent = key.rpartition(".")[0]
        section = f"[{parent}]" if parent else "the top level"
        return f"unknown key {key!r} in {source}; allowed at {section}: {', '.join(_keys(model))}."
    if error["type"] == "missing":
        parent, _, leaf = key.rpartition(".")
        return f"{parent} must set {leaf!r}." if parent else f"{source} must set {key!r}."
    value = error.get("input")
    if error["type"] == "value_error" and len(loc) == 0:  # a check of the whole table
        rule = str(error["ctx"]["error"]).rstrip(".")
        return f"{key} {rule}." if key else f"{rule}."
    if rule is None:
        return f"{key} is invalid: {error['msg']}, but {value!r} is given."
    detail = ""
    if error["type"] == "value_error" and isinstance(error["ctx"]["error"], RuleError):
        rule = error["ctx"]["error"].rule  # a rule read when the check ran
    elif error["type"] == "value_error":  # a custom check: its own words follow the rule
        detail = f" ({str(error['ctx']['error']).rstrip('.')})"
    return f"{key} must be {rule}, but {value!r} is given{detail}."


def check_keys(model: type[BaseModel], data: Any, keys: Sequence[str], *, source: str) -> None:
    """A :class:`ConfigError` for the first value of ``data`` at one of the key paths ``keys``
    (``"trees.rounds"``) that breaks its rule in ``model``; what the other values break, alone
    or together, is left to :func:`validate`.

    For the values that a command line's overrides replace: each is checked by its own rule,
    while the keys checked together with others (a rule of the whole table) see the overrides.
    """
    try:
        model.model_validate(data)
    except ValidationError as err:
        paths = [tuple(k.split(".")) for k in keys]
        for error in err.errors():
            loc = tuple(str(part) for part in error["loc"])
            if any(loc[: len(p)] == p for p in paths):
                raise ConfigError(_sentence(model, error, source, "")) from None


def validate(model: type[M], data: Any, *, source: str, prefix: str = "") -> M:
    """``model`` from ``data``, or a :class:`ConfigError` naming the key, the value and the rule.

    ``prefix`` is the key path of ``data`` in its file (``"params.plrank-xgb.plrank"``).
    """
    if not isinstance(data, dict):
        where = prefix or "the file"
        raise ConfigError(f"{where} must be a table, but {data!r} is given.")
    try:
        return model.model_validate(data)
    except ValidationError as err:
        # A misspelt key explains the missing one it stands for: report unknown keys first.
        errors = sorted(err.errors(), key=lambda e: e["type"] != "extra_forbidden")
        raise ConfigError(_sentence(model, errors[0], source, prefix)) from None
