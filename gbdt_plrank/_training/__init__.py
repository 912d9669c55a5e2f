"""The training path: everything a PL-Rank boosting round goes through, in one place.

From the bottom up: ``fairness_spec`` (the fairness-of-exposure term), ``policy_sample`` (the
policy's sampled rankings and exposure) and ``booster_objective`` (what every custom objective
needs to be called by XGBoost and LightGBM); ``options`` (:class:`~gbdt_plrank.PLRankOptions`,
one validated object for every caller) and ``evaluation`` (the policy's value as an evaluation
metric); ``plrank_grad_hess`` (the PL-Rank-3 gradient and estimated Hessian, on the CPU kernels)
and ``policy_methods`` (what a ranker whose scores are a policy offers besides scores); ``gpu``
(the same estimate on a CUDA GPU) and ``pirank_objective``
(:class:`~gbdt_plrank.PiRankObjective`); ``objective`` (:class:`~gbdt_plrank.PLRankObjective`);
``plrank_plan`` (the one place a training run is assembled). Each is named for what it builds;
the kernels it calls are named for the method (``gbdt_plrank._kernels.plrank``, ``pirank``,
``fairness``, ``policy``). The metric and its gains (``gbdt_plrank._ranking_metric``), the rows
grouped by query (``gbdt_plrank._groups``), the backend layer (``gbdt_plrank._backends``), the
kernels (``gbdt_plrank._kernels``) and the utilities (``gbdt_plrank._util``) are below it; the
ranker, the Dask and neural rankers and the harness above.
"""
