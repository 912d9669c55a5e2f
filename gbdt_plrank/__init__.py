"""gbdt_plrank: stochastic learning to rank with gradient-boosted trees.

PL-Rank-3 gradients and estimated Hessians of the expected ranking metric of a Plackett-Luce
policy, as objectives for XGBoost and LightGBM.
"""

from ._estimator import plrank_grad_hess, plrank_grad_hess_from_rankings
from ._objective import PLRankObjective, plrank_objective

__all__ = [
    "PLRankObjective",
    "plrank_grad_hess",
    "plrank_grad_hess_from_rankings",
    "plrank_objective",
]

__version__ = "0.1.0"
