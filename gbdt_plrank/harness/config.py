"""The description of a comparison: a TOML file read into frozen dataclasses.

.. code-block:: toml

    datasets = ["mq2008"]            # bundled names or folders (train.txt, vali.txt, test.txt)
    folds = [1, 2, 3, 4, 5]          # LETOR folds (bundled data, folders with Fold1..Fold5)
    methods = ["plrank-xgb", "lambdamart-xgb"]
    seeds = 5                        # seeds 0 .. seeds-1
    k = [5, 10]                      # one training per k: early stopping on NDCG@k
    out = "runs/mq2008"              # default: runs/<name of the config file>
    drop_empty_test_queries = true   # leave out test queries without relevant documents

    [trees]                          # the same tree settings for every method
    rounds = 1000
    learning_rate = 0.05
    early_stopping_rounds = 50

    [plrank]                         # options of the PL-Rank objective
    N = 100

    [params.lambdamart-xgb]          # native parameters of one method, applied last
    lambdarank_num_pair_per_sample = 8

    [params.plrank-xgb.plrank]       # a PL-Rank method's own objective options, over [plrank]
    N = 200
    hessian = "clip"

Every key is checked: an unknown one, or a value that breaks its rule, raises
:class:`ConfigError` naming the key, the value and the rule (or the allowed keys).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from types import MappingProxyType
from typing import Any

from .._estimator import GAINS, HESSIAN_MODES, METRICS, SAMPLERS
from .._validation import is_int, is_number
from .methods import METHODS, PLRANK, RESERVED_PARAMS

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the same parser, as the tomli package
    import tomli as tomllib

__all__ = [
    "CompareConfig",
    "ConfigError",
    "PLRankSettings",
    "TreeSettings",
    "check_plrank_options",
    "load_config",
    "read_params",
]

Check = Callable[[str, Any], Any]


class ConfigError(ValueError):
    """A configuration key or value breaks its rule; the message names both."""


# --------------------------------------------------------------------------------------------
# Checks of single values: (key path, value) -> the value as the dataclass stores it
# --------------------------------------------------------------------------------------------
def _positive_int(key: str, value: Any) -> int:
    if not is_int(value) or value < 1:
        raise ConfigError(f"{key} must be an integer >= 1, but {value!r} is given.")
    return value


def _positive_float(key: str, value: Any) -> float:
    if not is_number(value) or not value > 0:
        raise ConfigError(f"{key} must be a number > 0, but {value!r} is given.")
    return float(value)


def _non_negative_float(key: str, value: Any) -> float:
    if not is_number(value) or not value >= 0:
        raise ConfigError(f"{key} must be a number >= 0, but {value!r} is given.")
    return float(value)


def _fraction(key: str, value: Any) -> float:
    if not is_number(value) or not 0 < value <= 1:
        raise ConfigError(f"{key} must be a number in (0, 1], but {value!r} is given.")
    return float(value)


def _boolean(key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{key} must be true or false, but {value!r} is given.")
    return value


def _choice(allowed: tuple[str, ...]) -> Check:
    def check(key: str, value: Any) -> str:
        if value not in allowed:
            raise ConfigError(
                f"{key} must be one of {', '.join(map(repr, allowed))}, but {value!r} is given."
            )
        return value

    return check


def _non_empty_str(key: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{key} must be a non-empty string, but {value!r} is given.")
    return value


def _distinct(key: str, items: list[Any]) -> None:
    repeated = sorted({repr(v) for v in items if items.count(v) > 1})
    if repeated:
        raise ConfigError(f"{key} must not repeat a value, but {', '.join(repeated)} is repeated.")


def _str_list(key: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not value:
        raise ConfigError(f"{key} must be a non-empty list of strings, but {value!r} is given.")
    for v in value:
        _non_empty_str(f"each entry of {key}", v)
    _distinct(key, value)
    return tuple(value)


def _int_list(low: int, high: int | None) -> Check:
    """An integer or a non-empty list of distinct integers in [low, high]."""
    rule = f"an integer >= {low}" if high is None else f"an integer from {low} to {high}"

    def check(key: str, value: Any) -> tuple[int, ...]:
        items = value if isinstance(value, list) else [value]
        bad = [v for v in items if not is_int(v) or v < low or (high is not None and v > high)]
        if not items or bad:
            raise ConfigError(
                f"{key} must be {rule} or a non-empty list of them, but {value!r} is given."
            )
        _distinct(key, items)
        return tuple(items)

    return check


def _methods(key: str, value: Any) -> tuple[str, ...]:
    names = _str_list(key, value)
    unknown = [n for n in names if n not in METHODS]
    if unknown:
        raise ConfigError(
            f"{key} must name known methods, but {unknown[0]!r} is not one; "
            f"allowed: {', '.join(METHODS)}."
        )
    return names


def check_plrank_options(key: str, value: Any) -> Mapping[str, Any]:
    """Options of the PL-Rank objective: fields of :class:`PLRankSettings`, and ``hessian``.

    Parameters
    ----------
    key : str
        The table's key path, for messages (``"params.plrank-xgb.plrank"``).
    value : mapping
        Option name -> value.

    Returns
    -------
    mapping
        The checked options.

    Raises
    ------
    ConfigError
        On an unknown option (listing the allowed ones) or a value that breaks its rule.
    """
    if not isinstance(value, Mapping):
        raise ConfigError(f"{key} must be a table of PL-Rank options, but {value!r} is given.")
    checks = {f.name: f.metadata["check"] for f in fields(PLRankSettings)}
    checks["hessian"] = _choice(HESSIAN_MODES)
    unknown = [option for option in value if option not in checks]
    if unknown:
        raise ConfigError(
            f"unknown key {f'{key}.{unknown[0]}'!r}; allowed in [{key}]: {', '.join(checks)}."
        )
    return MappingProxyType(
        {option: checks[option](f"{key}.{option}", v) for option, v in value.items()}
    )


def _params(key: str, value: Any) -> Mapping[str, Mapping[str, Any]]:
    """Method name -> table of native parameters (scalars), none of them set by the harness.

    A PL-Rank method's table may hold a ``plrank`` sub-table of objective options.
    """
    if not isinstance(value, dict):
        raise ConfigError(
            f"{key or 'the file'} must be a table of method name -> table of parameters, "
            f"but {value!r} is given."
        )
    out = {}
    for name, table in value.items():
        if name not in METHODS:
            raise ConfigError(
                f"{key or 'the tables'} must be named after methods, but {name!r} is not one; "
                f"allowed: {', '.join(METHODS)}."
            )
        where = f"{key}.{name}" if key else name
        if not isinstance(table, dict):
            raise ConfigError(
                f"{where} must be a table of native parameters, but {table!r} is given."
            )
        reserved = RESERVED_PARAMS[METHODS[name].library]
        table = dict(table)
        for param, v in table.items():
            if param == PLRANK:
                if METHODS[name].objective != PLRANK:
                    raise ConfigError(
                        f"{where}.{PLRANK} must not be set: {name!r} is not a PL-Rank method."
                    )
                table[param] = check_plrank_options(f"{where}.{PLRANK}", v)
                continue
            if param in reserved:
                raise ConfigError(
                    f"{where} must not set {param!r}: the objective, evaluation metric, seed, "
                    f"rounds and early stopping are the harness's (set seeds, k, trees.rounds "
                    f"and trees.early_stopping_rounds in the configuration)."
                )
            if not isinstance(v, (str, int, float, bool)):
                raise ConfigError(
                    f"{where}.{param} must be a string, number or boolean, but {v!r} is given."
                )
        out[name] = MappingProxyType(table)
    return MappingProxyType(out)


def _check(check: Check, *, key: str | None = None) -> dict[str, Any]:
    """Field metadata: the value's check and, if it differs from the field name, its TOML key."""
    return {"check": check} if key is None else {"check": check, "key": key}


def _build(cls: type, table: Any, *, where: str, source: str) -> Any:
    """``cls`` from a TOML table, every key checked; ``where`` prefixes the key paths.

    A field whose metadata holds ``"section"`` (a dataclass) is read from a sub-table.
    """
    if not isinstance(table, dict):
        raise ConfigError(f"{where.rstrip('.')} must be a table, but {table!r} is given.")
    by_key = {f.metadata.get("key", f.name): f for f in fields(cls)}
    unknown = [key for key in table if key not in by_key]
    if unknown:
        section = f"[{where.rstrip('.')}]" if where else "the top level"
        raise ConfigError(
            f"unknown key {where + unknown[0]!r} in {source}; allowed at {section}: "
            f"{', '.join(by_key)}."
        )
    missing = [key for key, f in by_key.items() if key not in table and f.metadata.get("required")]
    if missing:
        raise ConfigError(f"{source} must set {where + missing[0]!r}.")
    values = {}
    for key, f in by_key.items():
        if key in table:
            section_cls = f.metadata.get("section")
            values[f.name] = (
                _build(section_cls, table[key], where=f"{where}{key}.", source=source)
                if section_cls is not None
                else f.metadata["check"](f"{where}{key}", table[key])
            )
    return cls(**values)


# --------------------------------------------------------------------------------------------
# The configuration
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TreeSettings:
    """Booster settings shared by every method of a comparison.

    Each library reads them under its own names (see :mod:`gbdt_plrank.harness.methods`);
    a setting a library has no counterpart for is not passed to it.
    """

    rounds: int = field(default=1000, metadata=_check(_positive_int))
    learning_rate: float = field(default=0.05, metadata=_check(_positive_float))
    max_depth: int = field(default=6, metadata=_check(_positive_int))
    num_leaves: int = field(default=31, metadata=_check(_positive_int))
    min_child_weight: float = field(default=0.1, metadata=_check(_non_negative_float))
    reg_lambda: float = field(default=1.0, metadata=_check(_non_negative_float, key="lambda"))
    subsample: float = field(default=1.0, metadata=_check(_fraction))
    early_stopping_rounds: int = field(default=50, metadata=_check(_positive_int))
    n_jobs: int | None = field(default=None, metadata=_check(_positive_int))


@dataclass(frozen=True)
class PLRankSettings:
    """Options of :func:`~gbdt_plrank.plrank_objective` (its ``K`` is the comparison's ``k``)."""

    N: int = field(default=100, metadata=_check(_positive_int))
    metric: str = field(default="ndcg", metadata=_check(_choice(METRICS)))
    gain: str = field(default="exp", metadata=_check(_choice(GAINS)))
    sampler: str = field(default="auto", metadata=_check(_choice(tuple(SAMPLERS))))


@dataclass(frozen=True)
class CompareConfig:
    """A comparison: which data, methods, seeds and cut-offs, and the shared settings."""

    datasets: tuple[str, ...] = field(metadata={"check": _str_list, "required": True})
    methods: tuple[str, ...] = field(metadata={"check": _methods, "required": True})
    folds: tuple[int, ...] = field(default=(1,), metadata=_check(_int_list(1, 5)))
    seeds: int = field(default=5, metadata=_check(_positive_int))
    k: tuple[int, ...] = field(default=(5,), metadata=_check(_int_list(1, None)))
    out: str = field(default="runs/compare", metadata=_check(_non_empty_str))
    drop_empty_test_queries: bool = field(default=True, metadata=_check(_boolean))
    trees: TreeSettings = field(
        default_factory=TreeSettings, metadata={"section": TreeSettings}
    )
    plrank: PLRankSettings = field(
        default_factory=PLRankSettings, metadata={"section": PLRankSettings}
    )
    params: Mapping[str, Mapping[str, Any]] = field(
        default_factory=lambda: MappingProxyType({}), metadata=_check(_params)
    )

    @property
    def seed_values(self) -> range:
        """The run seeds, ``0 .. seeds - 1``."""
        return range(self.seeds)

    def training_settings(self) -> dict[str, Any]:
        """Everything that changes a trained model or its score, as plain JSON-able data.

        Results made under other settings must not be mixed with these; what only selects runs
        (datasets, folds, methods, seeds, k) or changes their speed (``n_jobs``) is left out.
        """
        trees = {
            f.metadata.get("key", f.name): getattr(self.trees, f.name)
            for f in fields(TreeSettings)
            if f.name != "n_jobs"
        }
        return {
            "trees": trees,
            "plrank": asdict(self.plrank),
            "params": {
                m: {key: dict(v) if isinstance(v, Mapping) else v for key, v in p.items()}
                for m, p in sorted(self.params.items())
            },
            "drop_empty_test_queries": self.drop_empty_test_queries,
        }


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        raise ConfigError(f"no such configuration file: {path}") from None
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"{path} is not valid TOML: {err}") from None


def read_params(path: str | Path) -> Mapping[str, Mapping[str, Any]]:
    """Per-method native parameters from a TOML file of ``[method-name]`` tables.

    The format ``compare --params FILE`` reads (and a tuner writes)::

        [plrank-xgb]
        eta = 0.03
        max_depth = 5

        [plrank-xgb.plrank]  # objective options of a PL-Rank method
        N = 200

    Raises
    ------
    ConfigError
        When the file is missing, is not TOML, names an unknown method or sets a parameter the
        harness sets itself.
    """
    path = Path(path)
    raw = _read_toml(path)
    try:
        return _params("", raw)
    except ConfigError as err:
        raise ConfigError(f"{path}: {err}") from None


def load_config(
    path: str | Path,
    *,
    overrides: Mapping[str, Any] | None = None,
    params_file: str | Path | None = None,
) -> CompareConfig:
    """Read and check a comparison's TOML file.

    Parameters
    ----------
    path : str or Path
        The configuration file.
    overrides : mapping, optional
        Values that replace the file's, by key path (``"methods"``, ``"trees.rounds"``); they
        are checked like the file's.
    params_file : str or Path, optional
        A file read by :func:`read_params`; its parameters update the file's ``[params]``, method
        by method and key by key (a ``plrank`` table as a whole).

    Returns
    -------
    CompareConfig

    Raises
    ------
    ConfigError
        On a missing or invalid file, an unknown key or a value that breaks its rule.
    """
    path = Path(path)
    raw = _read_toml(path)
    raw.setdefault("out", str(Path("runs") / path.stem))
    for dotted, value in (overrides or {}).items():
        *sections, key = dotted.split(".")
        table = raw
        for section in sections:
            table = table.setdefault(section, {})
        table[key] = value
    if params_file is not None:
        merged = raw.setdefault("params", {})
        for name, table in read_params(params_file).items():
            merged[name] = {**merged.get(name, {}), **table}
    return _build(CompareConfig, raw, where="", source=str(path))
