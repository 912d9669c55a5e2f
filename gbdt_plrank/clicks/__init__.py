r"""Learning to rank from clicks: click logs, position bias, and unbiased per-row rewards.

A click log holds one entry per displayed document per session. Under the position-based model
(PBM; Craswell et al., 2008) a document :math:`d` shown at rank :math:`k` is clicked with
probability :math:`\theta_k \, \gamma_d`: it is seen with probability :math:`\theta_k` and, when
seen, clicked with probability :math:`\gamma_d`. Counting clicks (the click-through rate) mixes
the two: a document the logging policy shows lower is seen less and so clicked less, whatever its
relevance. Inverse propensity scoring divides a row's clicks by its expected observation
(Joachims et al., 2017); policy-aware scoring takes that expectation under the logging policy,
which with a top-:math:`K` display is positive only for the rows the policy can show
(Oosterhuis & de Rijke, 2020). Over :math:`S` logged sessions of the query of :math:`d`,

.. math::

    \hat r_d = \frac{\sum_s c_{sd}}{\sum_s \theta_{\mathrm{rank}_s(d)}}
    \qquad\text{or}\qquad
    \hat r_d = \frac{\sum_s c_{sd}}{S\, \rho_d},
    \quad \rho_d = \sum_{k=1}^{K} P_{\pi_0}(\mathrm{rank}(d) = k)\, \theta_k,

(:math:`c_{sd} = 0` and :math:`\theta_{\mathrm{rank}_s(d)} = 0` where session :math:`s` does not
show :math:`d`) so that :math:`\hat r_d` estimates :math:`\gamma_d` for every row the logger
:math:`\pi_0` shows with positive probability. A stochastic Plackett-Luce logger shows every row
with some probability; a deterministic top-:math:`K` logger never shows the rows below its cut,
and no reweighting recovers them. The expected DCG of a policy is linear in the gains, so a
ranker trained with ``gain="linear"`` on :math:`\hat r` maximises, in expectation, the DCG of
the click probabilities when seen.

The modules: the log (:class:`ClickLog`), the simulation of the semi-synthetic protocol
(:func:`simulate_clicks`, the position-based model; :func:`simulate_cascade_clicks`, the cascade
model), the position bias (:func:`estimate_position_bias`, by row or through
the features), the regression (:func:`click_regression`), the rewards (:func:`click_rewards` over
the registry :data:`REWARD_ESTIMATORS`) and a new policy's value (:func:`estimate_policy_value`).

The guide: :doc:`/guide/clicks`; the papers cited, in full: :doc:`/research/references`.
"""

from __future__ import annotations

from ._log import ClickLog
from ._policy_value import PolicyValue, estimate_policy_value
from ._position_bias import estimate_position_bias
from ._regression import click_regression
from ._rewards import REWARD_ESTIMATORS, RewardEstimator, click_rewards
from ._simulation import (
    cascade_position_bias,
    pbm_position_bias,
    seen_click_probability,
    simulate_cascade_clicks,
    simulate_clicks,
)

__all__ = [
    "REWARD_ESTIMATORS",
    "ClickLog",
    "PolicyValue",
    "RewardEstimator",
    "cascade_position_bias",
    "click_regression",
    "click_rewards",
    "estimate_policy_value",
    "estimate_position_bias",
    "pbm_position_bias",
    "seen_click_probability",
    "simulate_cascade_clicks",
    "simulate_clicks",
]
