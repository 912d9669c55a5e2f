"""The stopping rule: what early stopping watches, resolved by one function for every trainer.

The table holds what each way of training watched before the rule had one owner (the rankers,
the harness and Dask each resolved ``"auto"`` themselves): the owner must choose the same metric
in every case. Each entry point is observed through the plan it builds (the eval metrics it
records, early stopping watching the last one).
"""

from __future__ import annotations

import itertools

import pytest

from gbdt_plrank import PLRankRanker
from gbdt_plrank._backends import Plan, check_parameter
from gbdt_plrank._training.evaluation import RankingMetricEval
from gbdt_plrank._training.plrank_plan import STOPPING_METRICS, StoppingRule, stopping_rule

FAIRNESS = (None, "expected-exposure", "disparity", "group-disparity")
CHOICES = ("auto", *STOPPING_METRICS)

#: (entry point, backend, fairness) -> what stopping_metric="auto" watches ("native": the
#: library's own NDCG@K, the package's metrics not computed).
AUTO = {
    ("ranker", "xgboost", None): "standardized",
    ("ranker", "xgboost", "expected-exposure"): "policy",
    ("ranker", "xgboost", "disparity"): "policy",
    ("ranker", "xgboost", "group-disparity"): "policy",
    ("ranker", "lightgbm", None): "standardized",
    ("ranker", "lightgbm", "expected-exposure"): "policy",
    ("ranker", "lightgbm", "disparity"): "policy",
    ("ranker", "lightgbm", "group-disparity"): "policy",
    ("harness", "xgboost", None): "standardized",
    ("harness", "xgboost", "expected-exposure"): "policy",
    ("harness", "xgboost", "disparity"): "policy",
    ("harness", "xgboost", "group-disparity"): "policy",
    ("harness", "lightgbm", None): "standardized",
    ("harness", "lightgbm", "expected-exposure"): "policy",
    ("harness", "lightgbm", "disparity"): "policy",
    ("harness", "lightgbm", "group-disparity"): "policy",
    ("harness", "torch", None): "standardized",
    ("harness", "torch", "expected-exposure"): "policy",
    ("harness", "torch", "disparity"): "policy",
    ("harness", "torch", "group-disparity"): "policy",
    ("network", "torch", None): "policy",
    ("network", "torch", "expected-exposure"): "policy",
    ("network", "torch", "disparity"): "policy",
    ("network", "torch", "group-disparity"): "policy",
    ("dask", "xgboost", None): "native",
    ("dask", "xgboost", "expected-exposure"): "native",
    ("dask", "xgboost", "disparity"): "native",
    ("dask", "xgboost", "group-disparity"): "native",
    ("dask", "lightgbm", None): "native",
    ("dask", "lightgbm", "expected-exposure"): "native",
    ("dask", "lightgbm", "disparity"): "native",
    ("dask", "lightgbm", "group-disparity"): "native",
}

#: The harness's PL-Rank method of each library.
HARNESS_METHODS = {"xgboost": "plrank-xgb", "lightgbm": "plrank-lgb", "torch": "plrank-nn"}


def watched(plan: Plan) -> str:
    """What the plan's early stopping watches: the last of its eval metrics."""
    if not plan.metrics:
        return "native"
    last, objective = plan.metrics[-1], plan.objective
    if last is objective.expected_metric:
        return "policy"
    if last is objective.standardized_metric:
        return "standardized"
    assert len(plan.metrics) == 1 and isinstance(last, RankingMetricEval)
    return "ranking"


def ranker_plan(
    entry: str, backend: str, fairness: str | None, choice: str, *, rounds: int | None = 5
) -> Plan:
    """The plan of a fit of the ranker of ``entry`` (the Dask ranker for ``"dask"``)."""
    if entry == "dask":
        from gbdt_plrank.dask import DaskPLRankRanker as Ranker
    else:
        Ranker = PLRankRanker
    ranker = Ranker(backend=backend, fairness=fairness, stopping_metric=choice)
    return ranker._training([()], rounds)[2]


def harness_plan(backend: str, fairness: str | None, choice: str) -> Plan:
    from gbdt_plrank.harness import training
    from gbdt_plrank.harness.methods import METHODS
    from gbdt_plrank.harness.settings import PLRankSettings, TreeSettings

    settings = {"plrank": PLRankSettings(fairness=fairness, stopping_metric=choice)}
    return training._plan(
        METHODS[HARNESS_METHODS[backend]],
        k=5,
        seed=0,
        trees=TreeSettings(),
        settings=settings,
        params={},
        callbacks=(),
    )


def network_plan(fairness: str | None, monkeypatch: pytest.MonkeyPatch) -> Plan:
    """The plan :class:`~gbdt_plrank.nn.PLRankMLPRanker` trains with (caught before training)."""
    pytest.importorskip("torch")
    from gbdt_plrank import _estimator
    from gbdt_plrank.nn import PLRankMLPRanker

    class PlannedError(Exception):
        pass

    def caught(*args, **kwargs):
        raise PlannedError(plan(*args, **kwargs))

    plan = _estimator.plrank_plan  # every ranker's plan is built by PolicyRanker._plan
    monkeypatch.setattr(_estimator, "plrank_plan", caught)
    with pytest.raises(PlannedError) as planned:
        PLRankMLPRanker(fairness=fairness).fit(
            [[0.0]], [0.0], group=[0], eval_set=[()], early_stopping_rounds=5
        )
    return planned.value.args[0]


@pytest.mark.parametrize(("entry", "backend", "fairness"), list(AUTO))
def test_auto_watches_what_it_watched(entry, backend, fairness, monkeypatch) -> None:
    if entry == "harness":
        plan = harness_plan(backend, fairness, "auto")
    elif entry == "network":
        plan = network_plan(fairness, monkeypatch)
    else:
        plan = ranker_plan(entry, backend, fairness, "auto")
    assert watched(plan) == AUTO[entry, backend, fairness]


@pytest.mark.parametrize(
    ("backend", "fairness", "choice"),
    list(itertools.product(("xgboost", "lightgbm"), FAIRNESS, STOPPING_METRICS)),
)
def test_a_named_metric_is_watched_by_the_ranker_and_the_harness(backend, fairness, choice) -> None:
    assert watched(ranker_plan("ranker", backend, fairness, choice)) == choice
    assert watched(harness_plan(backend, fairness, choice)) == choice


@pytest.mark.parametrize("fairness", FAIRNESS)
def test_the_harness_settings_name_the_resolved_metric(fairness) -> None:
    from gbdt_plrank.harness.settings import PLRankSettings

    for choice in CHOICES:
        expected = AUTO["harness", "xgboost", fairness] if choice == "auto" else choice
        assert PLRankSettings(fairness=fairness, stopping_metric=choice).stopping == expected


@pytest.mark.parametrize(
    ("backend", "fairness"), list(itertools.product(("xgboost", "lightgbm"), FAIRNESS))
)
def test_dask_watches_the_library_ndcg_and_refuses_the_policy(backend, fairness) -> None:
    pytest.importorskip("distributed")
    assert watched(ranker_plan("dask", backend, fairness, "ranking")) == "native"
    for choice in ("policy", "standardized"):
        with pytest.raises(
            ValueError,
            match=rf"stopping_metric='{choice}' is not supported on "
            r"Dask: the policy's value of the eval set",
        ):
            ranker_plan("dask", backend, fairness, choice)
        # without early stopping nothing is watched, and the library's NDCG@K is recorded
        assert watched(ranker_plan("dask", backend, fairness, choice, rounds=None)) == "native"


def test_the_rule_is_resolved_in_one_place() -> None:
    assert stopping_rule("auto", fairness=None) == StoppingRule("standardized")
    assert stopping_rule("auto", fairness="disparity") == StoppingRule("policy")
    assert stopping_rule("auto", fairness=None, trainer="network") == StoppingRule("policy")
    assert stopping_rule("auto", fairness=None, trainer="dask") == StoppingRule(
        "ranking", native=True
    )
    with pytest.raises(
        ValueError,
        match="stopping_metric must be one of 'auto', 'policy', "
        "'ranking', 'standardized', but 'ndcg' is given",
    ):
        check_parameter("stopping_metric", "ndcg")  # its rule, where it is given
    with pytest.raises(ValueError, match="trainer must be one of"):
        stopping_rule("auto", fairness=None, trainer="spark")
