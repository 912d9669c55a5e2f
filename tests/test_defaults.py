"""One owner of the PL-Rank options' defaults, and a guard on the documented figures.

Every public signature that takes a PL-Rank option takes its default from
:class:`~gbdt_plrank.PLRankOptions` and its documentation from one table, so they cannot drift;
``N="auto"`` is resolved in one place. The results folders the documentation quotes record the
resolved options their PL-Rank trainings used (``options.json``), and the defaults users get
today must resolve to them: a change of a default cannot silently move a documented figure.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from gbdt_plrank import (
    PATIENCE_RATE,
    PLRankOptions,
    PLRankRanker,
    plrank_grad_hess,
    plrank_objective,
)
from gbdt_plrank._training.options import (
    AUTO_N,
    AUTO_N_FAIR,
    AUTO_N_NETWORK,
    DEFAULTS,
    OPTION_DOCS,
    option_docs,
)
from gbdt_plrank._training.plrank_grad_hess import plrank_grad_hess_from_rankings
from gbdt_plrank.harness.clicks.config import load_clicks_config
from gbdt_plrank.harness.compare.config import CompareConfig, load_config
from gbdt_plrank.harness.frontier.config import load_frontier_config

ROOT = Path(__file__).resolve().parents[1]
OPTIONS = tuple(PLRankOptions.model_fields)


def _public() -> dict[str, Callable[..., object]]:
    """Every public callable that takes PL-Rank options."""
    from gbdt_plrank.nn import PLRankMLPRanker

    out = {
        "plrank_objective": plrank_objective,
        "plrank_grad_hess": plrank_grad_hess,
        "plrank_grad_hess_from_rankings": plrank_grad_hess_from_rankings,
        "PLRankRanker": PLRankRanker,
        "PLRankMLPRanker": PLRankMLPRanker,
    }
    try:
        from gbdt_plrank.dask import DaskPLRankRanker, keyed_plrank_objective
    except ImportError:  # the dask extra
        return out
    return {
        **out,
        "keyed_plrank_objective": keyed_plrank_objective,
        "DaskPLRankRanker": DaskPLRankRanker,
    }


#: Options a signature leaves out, and why. deep_weight weights a boosting round's gradient,
#: not the estimate (the estimators return PL-Rank's own).
ABSENT = {
    "plrank_grad_hess": {"train_K", "deep_weight"},  # its rankings have the length K
    # its rankings are given
    "plrank_grad_hess_from_rankings": {
        "train_K",
        "N",
        "sampler",
        "noise",
        "query_subsample",
        "deep_weight",
    },
    # a network has no Hessian, steps on batches of queries (no round to subsample), and its
    # steps are not boosting rounds
    "PLRankMLPRanker": {"hessian", "query_subsample", "deep_weight"},
    # the other options pass through **options to plrank_objective
    "keyed_plrank_objective": set(OPTIONS) - {"K", "N"},
}

#: Defaults that differ on purpose: the estimate from given rankings is the unbiased one; the
#: rankers weight the deep documents' gradients (chosen on the first call's validation queries).
OWN_DEFAULTS = {
    ("plrank_grad_hess_from_rankings", "hessian"): "raw",
    ("PLRankRanker", "deep_weight"): "auto",
    ("DaskPLRankRanker", "deep_weight"): "auto",
}


@pytest.mark.parametrize("name", list(_public()))
def test_every_public_signature_takes_each_options_default_from_plrank_options(name):
    signature = inspect.signature(_public()[name])
    expected = set(OPTIONS) - ABSENT.get(name, set())
    assert expected <= set(signature.parameters), (
        f"{name} lacks {expected - set(signature.parameters)}"
    )
    for option in expected:
        default = OWN_DEFAULTS.get((name, option), PLRankOptions.model_fields[option].default)
        got = signature.parameters[option].default
        assert got == default and type(got) is type(default), (name, option, got, default)


def _documented_default(doc: str, option: str) -> str | None:
    match = re.search(rf"^\s*{option} : .*, default (.+)$", doc, re.MULTILINE)
    return None if match is None else match[1].strip()


@pytest.mark.parametrize(
    "name",
    ["plrank_objective", "plrank_grad_hess", "PLRankRanker", "PLRankMLPRanker", "PLRankOptions"],
)
def test_the_documented_defaults_are_the_options_defaults(name):
    obj = PLRankOptions if name == "PLRankOptions" else _public()[name]
    doc = inspect.getdoc(obj)
    assert ".. plrank-options::" not in doc
    for option in set(OPTIONS) - ABSENT.get(name, set()):
        value = OWN_DEFAULTS.get((name, option), getattr(DEFAULTS, option))
        written = f'"{value}"' if isinstance(value, str) else repr(value)
        assert _documented_default(doc, option) == written, (name, option)
        # the shared description, written once
        first = " ".join(OPTION_DOCS[option][1].split()[:6])
        if not (name == "plrank_grad_hess" and option == "K"):
            assert first in " ".join(doc.split()), (name, option)


def test_option_docs_refuses_an_unknown_option_or_a_docstring_without_its_line():
    def f():
        """Parameters
        ----------
        .. plrank-options:: K sigma
        """

    with pytest.raises(KeyError, match="'sigma' is not a PL-Rank option"):
        option_docs()(f)

    def g():
        """No options here."""

    with pytest.raises(ValueError, match=r"no '\.\. plrank-options::' line"):
        option_docs()(g)


def test_N_auto_is_50_without_fairness_and_100_with_it():
    assert DEFAULTS.N == "auto"
    assert (AUTO_N, AUTO_N_FAIR) == (50, 100)
    assert PLRankOptions.checked(K=10).training_N == 50
    assert PLRankOptions.checked(K=10, fairness="group-disparity").training_N == 100
    assert PLRankOptions.checked(K=10, fairness="disparity", N=7).training_N == 7
    assert (
        PLRankOptions.checked(K=10, N="auto", fairness="expected-exposure").resolved()["N"] == 100
    )
    assert PLRankRanker(fairness="group-disparity")._options().training_N == 100
    with pytest.raises(ValueError, match='N must be "auto" or an integer >= 1'):
        PLRankOptions.checked(K=10, N="many")
    with pytest.raises(ValueError, match="N must be >= 2 with fairness"):
        PLRankOptions.checked(K=10, N=1, fairness="disparity")


def test_a_network_resolves_auto_to_100_in_the_ranker_and_in_the_harness():
    from gbdt_plrank.nn import PLRankMLPRanker

    assert PLRankMLPRanker().N == "auto"
    assert PLRankMLPRanker()._options().N == AUTO_N_NETWORK == 100
    assert PLRankMLPRanker(N=20)._options().N == 20
    config = CompareConfig(datasets=("mq2008",), methods=("plrank-nn", "plrank-xgb"), k=(5,))
    options = config.trained_options()
    assert (options["plrank-nn k=5"].training_N, options["plrank-xgb k=5"].training_N) == (100, 50)


def test_the_estimators_sample_the_resolved_N():
    rng = np.random.default_rng(0)
    ptr = np.array([0, 6, 13])
    scores, labels = rng.normal(size=13), rng.integers(0, 3, size=13).astype(float)
    plain = plrank_grad_hess(scores, labels, ptr, K=3, seed=1)
    np.testing.assert_array_equal(plain, plrank_grad_hess(scores, labels, ptr, K=3, N=50, seed=1))
    assert not np.array_equal(plain, plrank_grad_hess(scores, labels, ptr, K=3, N=100, seed=1))
    fair = {"fairness": "expected-exposure", "fairness_weight": 0.5}
    np.testing.assert_array_equal(
        plrank_grad_hess(scores, labels, ptr, K=3, seed=1, **fair),
        plrank_grad_hess(scores, labels, ptr, K=3, N=100, seed=1, **fair),
    )
    assert repr(plrank_objective(K=3)) == "plrank_objective(K=3, seed=0)"
    assert plrank_objective(K=3, fairness="disparity").options.training_N == 100


# ------------------------------------------------------------------------------------------
# The documented figures
# ------------------------------------------------------------------------------------------
#: Options that results recorded before the option existed were trained at, and the value.
BEFORE = {"noise": "independent", "query_subsample": 1.0, "deep_weight": 1.0}


def _recorded(folder: str) -> dict[str, dict]:
    recorded = json.loads((ROOT / "benchmarks/results" / folder / "options.json").read_text())
    return {name: {**BEFORE, **options} for name, options in recorded.items()}


def _resolved(options: dict[str, PLRankOptions]) -> dict[str, dict]:
    return {name: o.resolved() for name, o in options.items()}


#: Each configuration whose results the documentation quotes, and its results folder.
DOCUMENTED = {
    "fairness_group.toml": "fairness_group",
    "fairness.toml": "fairness_ee",
    "fairness_disparity.toml": "fairness_disparity",
    "fairness_group_mslr.toml": "fairness_group_mslr",
    "clicks-mq2008.toml": "clicks-mq2008",
    "clicks-mq2008-sharp-logger.toml": "clicks-mq2008-sharp-logger",
    "clicks-mq2008-eta2.toml": "clicks-mq2008-eta2",
    "clicks-mq2008-graded.toml": "clicks-mq2008-graded",
    "clicks-mq2007-agg.toml": "clicks-mq2007-agg",
    "clicks-mq2007-agg-graded.toml": "clicks-mq2007-agg-graded",
    "headline.toml": "headline",
    "neural.toml": "neural",
    "neural-defaults.toml": "neural_defaults",
}


def _load(name: str):
    path = ROOT / "configs" / name
    if name.startswith("fairness"):
        return load_frontier_config(path)
    return load_clicks_config(path) if name.startswith("clicks") else load_config(path)


@pytest.mark.parametrize("config", list(DOCUMENTED))
def test_each_documented_configuration_still_resolves_to_the_options_its_results_record(config):
    assert _resolved(_load(config).trained_options()) == _recorded(DOCUMENTED[config])


@pytest.mark.parametrize(
    ("folder", "fairness"),
    [
        ("fairness_group", "group-disparity"),
        ("fairness_ee", "expected-exposure"),
        ("fairness_disparity", "disparity"),
    ],
)
def test_the_documented_fair_frontiers_were_trained_at_the_defaults_users_get(folder, fairness):
    """The fair curve of each weight is ``PLRankRanker(K=10, fairness=, fairness_weight=w)``."""
    fair = {name: o for name, o in _recorded(folder).items() if name.startswith("plrank-fair")}
    assert len(fair) >= 5
    for options in fair.values():
        user = PLRankRanker(K=10, fairness=fairness, fairness_weight=options["fairness_weight"])
        assert user._options().resolved() == options


def test_the_clicks_main_comparison_differs_from_the_defaults_only_where_its_page_says():
    """Rewards: the linear gain and DCG; ``N = 30`` (stated in the configuration and the
    page); the Hessian and the patience are the defaults."""
    recorded = _recorded("clicks-mq2008")
    on_rewards = PLRankOptions.checked(K=5, gain="linear", metric="dcg", N=30)
    assert recorded == {
        "on rewards": on_rewards.resolved(),
        "on labels": PLRankOptions.checked(K=5, N=30).resolved(),
    }
    assert load_clicks_config(ROOT / "configs/clicks-mq2008.toml").trees.patience_rate == (
        PATIENCE_RATE
    )
    page = (ROOT / "docs/guide/clicks.md").read_text()
    assert "`N = 30`" in page and '`hessian="auto"`' in page


# ------------------------------------------------------------------------------------------
# The behaviour behind the group frontier
# ------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_a_group_fair_ranker_at_the_defaults_is_fairer_than_the_post_hoc_policies_near_it(tmp_path):
    """MQ2008 Fold3, the group frontier's own code at reduced size: the fair curve trained at
    the defaults (weight 1, as trained) has a lower test group disparity than every post-hoc
    policy at no less expected NDCG@10."""
    from gbdt_plrank.harness.frontier.report import pool
    from gbdt_plrank.harness.frontier.run import run_frontier

    overrides = {
        "folds": [3],
        "out": str(tmp_path),
        "fairness_weights": [1],
        "n_samples": 200,
        "temperatures": [0.25, 0.5, 1, 2],
        "group_offsets": [0, 1],
        "trees.rounds": 150,
        "trees.n_jobs": 2,
    }
    config = load_frontier_config(ROOT / "configs/fairness_group.toml", overrides=overrides)
    fair_options = config.trained_options()["plrank-fair w=1"]
    assert (
        fair_options.resolved()
        == PLRankRanker(K=10, fairness="group-disparity", fairness_weight=1.0)._options().resolved()
    )
    store = run_frontier(config, echo=lambda _: None)
    points = [p.row() for p in pool(store, config) if p.split == "test"]
    fair = next(p for p in points if p["curve"] == "plrank-fair" and p["temperature"] == 0)
    post_hoc = [
        p
        for p in points
        if p["curve"] in ("lambdamart", "lambdarank", "plrank") and p["ndcg"] >= fair["ndcg"]
    ]
    assert post_hoc, "no post-hoc policy as relevant as the fair one"
    floor = min(p["group_disparity"] for p in post_hoc)
    assert fair["group_disparity"] < floor, (fair, floor)
