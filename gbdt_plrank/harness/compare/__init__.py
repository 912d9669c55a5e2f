"""The comparison: PL-Rank GBDT next to the other GBDT ranking objectives.

``gbdt-plrank compare CONFIG`` reads a TOML file (``config``), trains every method of
:data:`~gbdt_plrank.harness.methods.METHODS` on every dataset fold, cut-off and seed (``run``,
one after the other or on a Dask cluster through ``parallel``; resumable through
:class:`~gbdt_plrank.harness.store.ResultStore`) and writes ``results.csv``, ``results.md`` and
``curves.png`` (``report``).
"""

from .config import CompareConfig, load_config
from .report import write_report
from .run import plan, run_comparison

__all__ = ["CompareConfig", "load_config", "plan", "run_comparison", "write_report"]
