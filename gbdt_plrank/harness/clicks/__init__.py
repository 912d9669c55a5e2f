"""Learning to rank from simulated clicks (``gbdt-plrank clicks CONFIG``).

``config`` reads the TOML file; ``run`` learns from simulated click logs (a logging policy
deployed stochastically and deterministically, PL-Rank on policy-aware and naive rewards,
XGBoost's and LightGBM's unbiased objectives, the full-label model, the exploration loop),
resumable through :class:`~gbdt_plrank.harness.store.ResultStore`; ``report`` writes
``clicks.md`` and ``clicks.png``.
"""

from .config import ClicksConfig, load_clicks_config
from .report import write_clicks_report
from .run import run_clicks

__all__ = ["ClicksConfig", "load_clicks_config", "run_clicks", "write_clicks_report"]
