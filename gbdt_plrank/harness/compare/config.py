"""The description of a comparison: a TOML file read into frozen, validated models.

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

    [pirank]                         # options of the PiRank objective
    tau = 1.0

    [params.lambdamart-xgb]          # native parameters of one method, applied last
    lambdarank_num_pair_per_sample = 8

    [params.plrank-xgb.plrank]       # a PL-Rank method's own objective options, over [plrank]
    N = 200
    hessian = "clip"
    fairness = "expected-exposure"   # maximise E[NDCG@k] - fairness_weight * EE-L
    fairness_weight = 0.5

    [params.pirank-lgb.pirank]       # a PiRank method's own objective options, over [pirank]
    tau = 0.5

The shared tables (``[trees]``, ``[plrank]``, ``[pirank]``, ``[params]``) are read by the rules of
:mod:`.settings`; an unknown key, or a value that breaks its rule, raises
:class:`~gbdt_plrank._util.schema.ConfigError` naming the key, the value and the rule.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import Field

from ..._training.options import PLRankOptions
from ..._util.schema import validate
from ..methods import METHODS, PLRANK
from ..settings import (
    CutOffs,
    ExperimentConfig,
    PiRankSettings,
    Text,
    check_objectives,
    items,
    method_options,
    objective_settings,
    read_config_table,
    read_params,
)

__all__ = ["CompareConfig", "load_config"]


class CompareConfig(ExperimentConfig):
    """A comparison: which data, methods, seeds and cut-offs, and the shared settings."""

    datasets: items(Text, rule="a non-empty list of distinct bundled names or folders")  # type: ignore[valid-type]
    methods: items(  # type: ignore[valid-type]
        str, rule=f"a non-empty list of distinct methods from: {', '.join(METHODS)}", known=True
    )
    seeds: int = Field(5, ge=1, description="an integer >= 1")
    k: CutOffs = (5,)
    out: Text = Field("runs/compare", description="a non-empty string")
    pirank: PiRankSettings = Field(default_factory=PiRankSettings, description="a table")

    @property
    def seed_values(self) -> range:
        """The run seeds, ``0 .. seeds - 1``."""
        return range(self.seeds)

    def trained_options(self) -> dict[str, PLRankOptions]:
        """The options of each PL-Rank method at each cut-off, ``"<method> k=<k>"``, as
        :func:`gbdt_plrank.harness.train` resolves them."""
        settings = objective_settings(self.plrank, self.pirank)
        return {
            f"{name} k={k}": method_options(METHODS[name], settings, self.params.get(name), k=k)
            for name in self.methods
            if METHODS[name].objective == PLRANK
            for k in self.k
        }

    def training_settings(self) -> dict[str, Any]:
        """Everything that changes a trained model or its score, as plain JSON-able data.

        Results made under other settings must not be mixed with these; what only selects runs
        (datasets, folds, methods, seeds, k) or changes their speed (``n_jobs``) is left out.
        """
        return {**self.shared_settings(), "pirank": self.pirank.model_dump()}


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
        by method and key by key (a ``plrank`` or ``pirank`` table as a whole).

    Returns
    -------
    CompareConfig

    Raises
    ------
    ConfigError
        On a missing or invalid file, an unknown key or a value that breaks its rule.
    """
    path = Path(path)
    raw = read_config_table(path, overrides, schema=CompareConfig)
    if params_file is not None:
        for name, table in read_params(params_file).items():
            raw["params"][name] = {**raw["params"].get(name, {}), **table}
    config = validate(CompareConfig, raw, source=str(path))
    settings = objective_settings(config.plrank, config.pirank)
    check_objectives(config.methods, settings, config.params, k=config.k[0])
    return config
