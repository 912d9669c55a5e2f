"""Search spaces: which parameters of a method are tuned, and over which values.

A space file is TOML with three kinds of tables; a method's space is the merge of its library's
table, its objective's table (``[plrank]`` for the PL-Rank methods, ``[pirank]`` for the PiRank
ones) and its own table, in that order:

.. code-block:: toml

    [xgboost]                                         # native parameters of every XGBoost method
    eta = { low = 1e-3, high = 0.3, log = true }      # a float range, searched on a log scale
    max_depth = { low = 3, high = 10 }                # an integer range (both bounds integers)
    subsample = { low = 0.5, high = 1.0, step = 0.1 }

    [plrank]                                          # PL-Rank options, every PL-Rank method
    metric = { choices = ["ndcg", "dcg"] }            # one of a list

    [plrank-xgb]                                      # one method, over the tables above
    plrank.hessian = { choices = ["abs", "clip"] }    # its objective options go under plrank.

    [pirank]                                          # PiRank objective options
    tau = { low = 0.01, high = 100.0, log = true }

    [lightgbm]
    bagging_freq = 1                                  # a fixed value: set, not searched

The defaults are in ``spaces.toml`` beside this module (:data:`DEFAULT_SPACES`). A user's file
changes entries of the defaults, table by table and key by key. Its native parameters must be
parameters of the defaults (which list every one worth tuning), so that a misspelt name cannot be
silently ignored by a booster; objective options must be options of
:func:`~gbdt_plrank.plrank_objective` (``N``, ``metric``, ``gain``, ``sampler``, ``hessian``) or
:func:`~gbdt_plrank.pirank_objective` (``tau``, ``hessian``). To stop searching a parameter, give
it a fixed value.

Trials name the parameters as in the file: native ones by their name, objective options as
``plrank.<option>`` or ``pirank.<option>``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field, model_validator

from .._util.schema import ConfigError, Schema, parse_toml, validate
from ..harness.methods import METHODS, OWN_OBJECTIVES
from ..harness.settings import check_objective_options

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

    import optuna

__all__ = ["DEFAULT_SPACES", "Choice", "Range", "SearchSpace", "load_spaces"]

#: The default search spaces of every method.
DEFAULT_SPACES: Traversable = resources.files(__package__) / "spaces.toml"

#: Tables of a space file besides the method names: libraries, then the objectives' options.
LIBRARIES = tuple(dict.fromkeys(m.library for m in METHODS.values()))

Scalar = str | int | float | bool


def _is_scalar(value: object) -> bool:
    return isinstance(value, (str, int, float, bool))


class Range(Schema):
    """Values from ``low`` to ``high``: integers when both bounds (and ``step``) are integers."""

    low: int | float = Field(description="a number")
    high: int | float = Field(description="a number")
    log: bool = Field(False, description="true or false")
    step: int | float | None = Field(None, gt=0, description="a number > 0")

    @model_validator(mode="after")
    def _consistent(self) -> Range:
        if not self.low < self.high:
            raise ValueError(
                f"must have numbers low < high, but low={self.low!r}, high={self.high!r} is given"
            )
        if self.log and self.step is not None:
            raise ValueError("must not set both log and step (Optuna allows one of them)")
        if self.log and not self.low > 0:
            raise ValueError(f"must have low > 0 on a log scale, but low={self.low!r} is given")
        return self

    @property
    def integer(self) -> bool:
        """Whether the range holds integers."""
        return all(isinstance(v, int) for v in (self.low, self.high, self.step) if v is not None)

    def suggest(self, trial: optuna.Trial, name: str) -> int | float:
        """The trial's value of parameter ``name``."""
        if self.integer:
            step = 1 if self.step is None else int(self.step)
            return trial.suggest_int(name, int(self.low), int(self.high), step=step, log=self.log)
        return trial.suggest_float(name, self.low, self.high, step=self.step, log=self.log)

    def as_dict(self) -> dict[str, Any]:
        """The entry as written in a space file."""
        return self.model_dump(exclude_defaults=True) | {"low": self.low, "high": self.high}


def _distinct(items: tuple[Any, ...]) -> tuple[Any, ...]:
    repeated = sorted({repr(c) for c in items if items.count(c) > 1})
    if repeated:
        raise ValueError(f"{repeated[0]} is repeated")
    return items


class Choice(Schema):
    """One of ``choices``."""

    choices: Annotated[
        tuple[str | int | float | bool, ...],
        BeforeValidator(lambda v: tuple(v) if isinstance(v, list) else v),
        AfterValidator(_distinct),
        Field(
            min_length=1, description="a non-empty list of distinct strings, numbers or booleans"
        ),
    ]

    def suggest(self, trial: optuna.Trial, name: str) -> Scalar:
        """The trial's value of parameter ``name``."""
        return trial.suggest_categorical(name, list(self.choices))

    def as_dict(self) -> dict[str, Any]:
        """The entry as written in a space file."""
        return {"choices": list(self.choices)}


Entry = Range | Choice | Scalar


@dataclass(frozen=True)
class SearchSpace:
    """The search space of one method.

    Attributes
    ----------
    method : str
        A method name of the comparison harness.
    entries : mapping
        Parameter name (native, or ``<objective>.<option>``: ``plrank.N``) -> :class:`Range`,
        :class:`Choice` or a fixed value.
    """

    method: str
    entries: Mapping[str, Entry]

    def suggest(self, trial: optuna.Trial) -> dict[str, Any]:
        """The trial's parameters, as :func:`~gbdt_plrank.harness.train` takes them.

        Native parameters at the top level, objective options in a table named after the
        objective (``plrank``, ``pirank``).
        """
        params: dict[str, Any] = {}
        for name, entry in self.entries.items():
            value = entry.suggest(trial, name) if isinstance(entry, (Range, Choice)) else entry
            objective, option = _split(name)
            if objective is None:
                params[name] = value
            else:
                params.setdefault(objective, {})[option] = value
        return params

    def as_dict(self) -> dict[str, Any]:
        """The entries as written in a space file (JSON-able)."""
        return {
            name: entry.as_dict() if isinstance(entry, (Range, Choice)) else entry
            for name, entry in self.entries.items()
        }


# --------------------------------------------------------------------------------------------
# Reading a space file
# --------------------------------------------------------------------------------------------
def _split(name: str) -> tuple[str | None, str]:
    """``(objective, option)`` of an objective option ``<objective>.<option>``, else
    ``(None, name)``."""
    objective, dot, option = name.partition(".")
    return (objective, option) if dot and objective in OWN_OBJECTIVES else (None, name)


def _entry(where: str, value: Any) -> Entry:
    """One parameter: a fixed value, ``{low, high, log, step}`` or ``{choices}``."""
    if _is_scalar(value):
        return value
    if not isinstance(value, dict):
        raise ConfigError(
            f"{where} must be a value, a range {{ low, high }} or {{ choices = [...] }}, "
            f"but {value!r} is given."
        )
    model = Choice if "choices" in value else Range
    return validate(model, value, source="the space file", prefix=where)


def _values(entry: Entry) -> list[Any]:
    """The values an entry can take that decide whether it is valid: bounds, choices, value."""
    if isinstance(entry, Range):
        return [entry.low, entry.high]
    if isinstance(entry, Choice):
        return list(entry.choices)
    return [entry]


def _options(objective: str, key: str, table: Any) -> dict[str, Entry]:
    """Options ``<objective>.<option>`` of one of the package's objectives, from the table at
    ``key``."""
    if not isinstance(table, dict):
        raise ConfigError(
            f"{key} must be a table of {OWN_OBJECTIVES[objective]} options, but {table!r} is given."
        )
    entries = {option: _entry(f"{key}.{option}", v) for option, v in table.items()}
    for option, entry in entries.items():
        for value in _values(entry):
            check_objective_options(objective, key, {option: value})
    return {f"{objective}.{option}": entry for option, entry in entries.items()}


def _table(name: str, body: Any) -> dict[str, Entry]:
    """The flat entries of table ``name``: native names, ``<objective>.<option>`` for options."""
    if not isinstance(body, dict):
        raise ConfigError(f"[{name}] must be a table of parameters, but {body!r} is given.")
    if name in OWN_OBJECTIVES:
        return _options(name, name, body)
    entries: dict[str, Entry] = {}
    for key, value in body.items():
        if key in OWN_OBJECTIVES and name in METHODS:
            if METHODS[name].objective != key:
                raise ConfigError(
                    f"{name}.{key} must not be set: {name!r} is not a {OWN_OBJECTIVES[key]} method."
                )
            entries.update(_options(key, f"{name}.{key}", value))
        else:
            entries[key] = _entry(f"{name}.{key}", value)
    return entries


def _read(text: str, *, source: str) -> dict[str, dict[str, Entry]]:
    """Table name -> flat entries of a space file; every error names ``source``."""
    raw = parse_toml(text, source=source)
    allowed = (*LIBRARIES, *OWN_OBJECTIVES, *METHODS)
    unknown = [name for name in raw if name not in allowed]
    if unknown:
        raise ConfigError(
            f"unknown table [{unknown[0]}] in {source}; allowed: {', '.join(allowed)}."
        )
    try:
        return {name: _table(name, body) for name, body in raw.items()}
    except ConfigError as err:
        raise ConfigError(f"{source}: {err}") from None


def _layers(name: str) -> tuple[str, ...]:
    """The tables whose entries make the space of method ``name``, in order of precedence."""
    method = METHODS[name]
    own = (method.objective,) if method.objective in OWN_OBJECTIVES else ()
    return (method.library, *own, name)


def _resolve(tables: Mapping[str, Mapping[str, Entry]], name: str) -> dict[str, Entry]:
    entries: dict[str, Entry] = {}
    for layer in _layers(name):
        entries.update(tables.get(layer, {}))
    return entries


def _native(tables: Mapping[str, Mapping[str, Entry]], name: str) -> list[str]:
    """The native parameters that table ``name`` has, its layers included for a method."""
    entries = _resolve(tables, name) if name in METHODS else tables.get(name, {})
    return [key for key in entries if _split(key)[0] is None]


def _override(
    defaults: dict[str, dict[str, Entry]],
    user: dict[str, dict[str, Entry]],
    *,
    source: str,
) -> dict[str, dict[str, Entry]]:
    """``defaults`` with the entries of ``user``, whose native parameters must be the defaults'.

    Objective options need no such rule: reading the file checked their names.
    """
    merged = {name: dict(entries) for name, entries in defaults.items()}
    for name, entries in user.items():
        known = _native(defaults, name)
        unknown = [k for k in entries if _split(k)[0] is None and k not in known]
        if unknown:
            raise ConfigError(
                f"unknown parameter {unknown[0]!r} in [{name}] of {source}; the search space "
                f"knows: {', '.join(known) or 'no native parameter'}."
            )
        merged.setdefault(name, {}).update(entries)
    return merged


def load_spaces(path: str | Path | None = None) -> dict[str, SearchSpace]:
    """The search space of every method: the defaults, changed by the file ``path`` if given.

    Parameters
    ----------
    path : str or Path, optional
        A space file (see the module docstring) whose entries replace the defaults'.

    Returns
    -------
    dict
        Method name -> :class:`SearchSpace`, for every method of the comparison harness.

    Raises
    ------
    ConfigError
        When the file is missing or not TOML, names an unknown table or parameter, or holds an
        entry that breaks its rule (e.g. ``low >= high``); the message names the file, the key and
        the rule.
    """
    tables = _read(DEFAULT_SPACES.read_text(encoding="utf-8"), source=str(DEFAULT_SPACES))
    if path is not None:
        path = Path(path)
        if not path.is_file():
            raise ConfigError(f"no such search space file: {path}")
        user = _read(path.read_text(encoding="utf-8"), source=str(path))
        tables = _override(tables, user, source=str(path))
    return {name: SearchSpace(name, MappingProxyType(_resolve(tables, name))) for name in METHODS}
