"""The fairness objective learns inside XGBoost and LightGBM on real data (seconds).

MQ2008 Fold1, trained on its training split and measured on its validation split (queries with
a relevant document): the fair policy's expected exposure loss must fall clearly below the
relevance-only policy's, query by query, while its expected NDCG@10 stays well above that of a
uniformly random ranking.
"""

from __future__ import annotations

import numpy as np
import pytest

from gbdt_plrank import PLRankRanker, load_dataset, metrics
from gbdt_plrank.harness.data import without_empty_queries

pytestmark = pytest.mark.slow

K = 10
SAMPLES = 200


@pytest.fixture(scope="module")
def mq2008():
    data = load_dataset("mq2008", fold=1)
    return data.train, without_empty_queries(data.vali)


def _policy(ranker, split):
    exposure = ranker.expected_exposure(split.X, group=split.qid, n_samples=SAMPLES, random_state=1)
    ee_l = metrics.expected_exposure_loss(split.y, exposure, split.qid, k=K, per_query=True)
    ndcg = ranker.expected_metric(
        split.X, split.y, group=split.qid, n_samples=SAMPLES, random_state=1
    )
    return ee_l, ndcg.mean


@pytest.mark.parametrize("backend", ["xgboost", "lightgbm"])
def test_fairness_objective_lowers_exposure_loss(mq2008, backend):
    train, vali = mq2008
    common = {
        "backend": backend,
        "K": K,
        "N": 20,
        "n_estimators": 40,
        "learning_rate": 0.1,
        "max_depth": 4,
        "num_leaves": 15,
        "random_state": 0,
        "n_jobs": 1,
        "early_stopping": False,  # both train 40 rounds ("auto" stops the relevance one here)
    }
    relevance = PLRankRanker(**common).fit(train.X, train.y, group=train.qid)
    fair = PLRankRanker(**common, fairness="expected-exposure", fairness_weight=3.0)
    fair.fit(train.X, train.y, group=train.qid)
    ee_rel, _ = _policy(relevance, vali)
    ee_fair, ndcg_fair = _policy(fair, vali)
    diff = ee_fair - ee_rel
    se = diff.std(ddof=1) / np.sqrt(diff.size)
    assert diff.mean() < -0.025 and diff.mean() < -3 * se, (diff.mean(), se)
    uniform = np.zeros(vali.y.shape[0])
    random_ndcg = np.mean(
        [
            metrics.ndcg(vali.y, np.random.default_rng(s).random(uniform.size), vali.qid, k=K)
            for s in range(20)
        ]
    )
    assert ndcg_fair > random_ndcg + 0.05, (ndcg_fair, random_ndcg)
