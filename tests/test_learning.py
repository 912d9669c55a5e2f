"""Both boosters really learn with the PL-Rank objective at its defaults (MQ2008 Fold1, 3 seeds).

Every method trains through the comparison harness's own training path with the same tree
settings and is scored on the test split with the XGBoost / LightGBM conventions (queries without
relevant documents count 1). The "raw" and "constant" Hessian modes are reported beside the
default. The PL-Rank methods train at 2k and stop on their policy's validation expected NDCG@5
(the defaults), the others on validation NDCG@5.

Validation is compared at each method's peak validation NDCG@5 over the rounds it ran: the round a
baseline keeps is the peak of that curve, while PL-Rank keeps the round its policy's value peaks at,
so "NDCG@5 at the kept round" flatters the baselines (measured 2026-11-23: plrank-lgb 0.7290 kept /
0.7456 peak against lambdarank-lgb 0.7407; plrank-xgb 0.7307 / 0.7453 against lambdamart-xgb
0.7377). The tree settings are the harness defaults, fixed before looking at the test split; test
NDCG@5: plrank-xgb 0.7766 against 0.7814, plrank-lgb 0.7728 against 0.7706. The peak is held to 0.01
and the test split (156 queries) to 0.03 (docs/research/levers.md, "How well it learns").
"""

from __future__ import annotations

import numpy as np
import pytest

from gbdt_plrank.datasets import load_dataset
from gbdt_plrank.harness.settings import PLRankSettings, TreeSettings
from gbdt_plrank.harness.training import train
from gbdt_plrank.metrics import ndcg

pytestmark = pytest.mark.slow

K = 5
SEEDS = (0, 1, 2)
TREES = TreeSettings(
    rounds=500,
    learning_rate=0.05,
    max_depth=6,
    num_leaves=31,
    min_child_weight=0.1,
    reg_lambda=1.0,
    early_stopping_rounds=50,
    n_jobs=1,
)


@pytest.fixture(scope="module")
def mq2008():
    return load_dataset("mq2008", fold=1)


def _scores(fit, data) -> tuple[float, float, float]:
    """Validation NDCG@K at the kept round and at its peak, and test NDCG@K of a training."""
    kept, peak = float(fit.curve[fit.best_round - 1]), float(fit.curve.max())
    return kept, peak, ndcg(data.test.y, fit.test_scores.astype(np.float32), data.test.qid, k=K)


def _test_ndcg(name: str, data, seed: int) -> tuple[float, float, float]:
    return _scores(train(name, data, k=K, seed=seed, trees=TREES, plrank=PLRankSettings()), data)


def _mean(name: str, data, seeds=SEEDS) -> tuple[float, float, float]:
    runs = np.array([_test_ndcg(name, data, s) for s in seeds])
    return tuple(runs.mean(axis=0))


@pytest.mark.parametrize(
    ("plrank", "baseline", "ablations"),
    [
        ("plrank-xgb", "lambdamart-xgb", ("plrank-xgb-raw", "plrank-xgb-nohess")),
        ("plrank-lgb", "lambdarank-lgb", ("plrank-lgb-nohess",)),
    ],
)
def test_default_objective_learns_as_well_as_lambdamart(
    mq2008, plrank, baseline, ablations, capsys
):
    results = {name: _mean(name, mq2008) for name in (plrank, baseline, *ablations)}
    with capsys.disabled():
        print(
            f"\nMQ2008 Fold1, NDCG@{K}, mean of {len(SEEDS)} seeds "
            "(validation at the kept round / at its peak / test):"
        )
        for name, (kept, peak, test) in results.items():
            print(f"  {name:20s} {kept:.4f} / {peak:.4f} / {test:.4f}")
    assert results[plrank][1] >= results[baseline][1] - 0.01
    assert results[plrank][2] >= results[baseline][2] - 0.03


@pytest.mark.parametrize(
    ("pirank", "baseline"), [("pirank-xgb", "lambdamart-xgb"), ("pirank-lgb", "lambdarank-lgb")]
)
def test_pirank_learns_about_as_well_as_lambdamart(mq2008, pirank, baseline, capsys):
    """PiRank at its defaults, through the harness, on real data: a few seconds per method.

    The objective is deterministic and the trees are (no subsampling), so one seed says all.
    Measured (validation / test): pirank-xgb 0.7578 / 0.7701 against lambdamart-xgb 0.7377 /
    0.7814, pirank-lgb 0.7484 / 0.7432 against lambdarank-lgb 0.7407 / 0.7706. A gradient of the
    wrong sign ends at 0.34 / 0.45; a Hessian 100 times too large learns too slowly and ends at
    test 0.734 with XGBoost. The bounds are those of PL-Rank above, with the test split held to
    0.04.
    """
    fit = train(pirank, mq2008, k=K, seed=0, trees=TREES)
    results = {pirank: _scores(fit, mq2008), baseline: _test_ndcg(baseline, mq2008, 0)}
    with capsys.disabled():
        print(f"\nMQ2008 Fold1, NDCG@{K}, one seed (validation at the kept round / test):")
        for name, (kept, _, test) in results.items():
            print(f"  {name:20s} {kept:.4f} / {test:.4f}")
    assert results[pirank][0] >= fit.curve[0] + 0.01  # it learns past its first tree
    assert results[pirank][0] >= results[baseline][0] - 0.01  # both stop on validation NDCG@5
    assert results[pirank][2] >= results[baseline][2] - 0.04
