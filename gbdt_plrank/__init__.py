"""gbdt_plrank: stochastic learning to rank with gradient-boosted trees.

PL-Rank-3 gradients and estimated Hessians of the expected ranking metric of a Plackett-Luce
policy, as objectives for XGBoost and LightGBM, with the policy's expected metric as their
evaluation metric.

Importing the package sets a short OpenMP wait (``GOMP_SPINCOUNT=1000``, ``KMP_BLOCKTIME=0``)
unless ``OMP_WAIT_POLICY``, ``GOMP_SPINCOUNT`` or ``KMP_BLOCKTIME`` is already set: every
boosting round alternates the booster's OpenMP threads with the objective's Numba threads, and
threads that spin long while they wait starve the other runtime (measured: a round 10 to 20
times slower on a busy 2-core machine), while threads that sleep at once slow the boosters'
own parallel regions. Set one of the variables yourself to keep another wait
(``OMP_WAIT_POLICY=PASSIVE`` on a machine busy with other processes). An OpenMP runtime
reads them when it is loaded, so a booster imported before the package without them keeps its
long spin: the import warns then.

The kernels are compiled by Numba at their first use in an environment (about 20 s, once) and
cached; the first compilation in a process logs one warning on the ``gbdt_plrank`` logger, and
:func:`compile_kernels` (``gbdt-plrank compile``) compiles them ahead.
"""

# First: importing it sets the OpenMP wait before any booster loads.
from ._util import threads as _threads  # noqa: F401, I001
from ._compile import compile_kernels, install_notice as _install_notice
from . import clicks, datasets, metrics
from ._backends._parameters import PATIENCE_RATE
from ._backends._stopping import lightgbm_early_stopping, min_rounds_for, xgboost_early_stopping
from ._training.objective import PLRankObjective, plrank_objective
from ._training.options import PLRankOptions, training_cutoff
from ._training.pirank_objective import PiRankObjective, pirank_loss_grad_hess, pirank_objective
from ._training.plrank_grad_hess import plrank_grad_hess, plrank_grad_hess_from_rankings
from .datasets import load_dataset
from .metrics import dataset_ndcg, ndcg

__all__ = [
    "PATIENCE_RATE",
    "MetricEstimate",
    "PLRankObjective",
    "PLRankOptions",
    "PLRankRanker",
    "PiRankObjective",
    "clicks",
    "compile_kernels",
    "dataset_ndcg",
    "datasets",
    "lightgbm_early_stopping",
    "load_dataset",
    "metrics",
    "min_rounds_for",
    "ndcg",
    "pirank_loss_grad_hess",
    "pirank_objective",
    "plrank_grad_hess",
    "plrank_grad_hess_from_rankings",
    "plrank_objective",
    "training_cutoff",
    "xgboost_early_stopping",
]

__version__ = "0.1.0"

_install_notice()  # one warning at the first compilation of a kernel (not at a cache load)

_LAZY = {"PLRankRanker": "ranker", "MetricEstimate": "ranker"}  # scikit-learn: 1 s to import


def __getattr__(name: str) -> object:
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
