"""The training path: everything a PL-Rank boosting round goes through, in one place.

From the bottom up: ``options`` (:class:`~gbdt_plrank.PLRankOptions`, one validated object for
every caller), ``fairness`` (the fairness-of-exposure term), ``plrank`` (the PL-Rank-3 gradient
and estimated Hessian, on the CPU kernels) and ``gpu`` (the same estimate on a CUDA GPU),
``policy`` and ``evaluation`` (the policy's sampled rankings and its value as an evaluation
metric), ``booster_objective`` (what every custom objective needs to be called by XGBoost and
LightGBM), ``objective`` (:class:`~gbdt_plrank.PLRankObjective`) and ``pirank``
(:class:`~gbdt_plrank.PiRankObjective`), ``run`` (the one place a training run is assembled) and
``policy_methods`` (what a ranker whose scores are a policy offers besides scores). The metric
and its gains (``gbdt_plrank._ranking_metric``), the rows grouped by query
(``gbdt_plrank._groups``), the booster layer (``gbdt_plrank._boosters``) and the kernels
(``gbdt_plrank._kernels``) are below it; the ranker, the Dask and neural rankers and the harness
above.
"""
