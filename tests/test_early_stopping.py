"""policy_early_stopping inside xgboost.train and lightgbm.train."""

from __future__ import annotations

import lightgbm
import numpy as np
import pytest
import xgboost

from gbdt_plrank import plrank_objective, policy_early_stopping
from gbdt_plrank._policy_value import STOPPING_SAMPLES, policy_objective
from gbdt_plrank.datasets import Split

ROUNDS, PATIENCE = 60, 3


@pytest.fixture(scope="module")
def splits(data):
    """The first 40 queries to train on, the other 20 to stop on (rows of a query contiguous)."""
    X, y, qid, _ = data
    train, vali = qid < 40, qid >= 40
    return Split(X[train], y[train], qid[train]), Split(X[vali], y[vali], qid[vali])


def _objective(fairness: str | None):
    return plrank_objective(K=5, N=10, seed=1, n_jobs=1, fairness=fairness, fairness_weight=0.5)


def _xgboost(train: Split, objective, callbacks):
    dtrain = xgboost.DMatrix(train.X, train.y, qid=train.qid)
    params = {"eta": 0.3, "max_depth": 3, "nthread": 1, "base_score": 0.0}
    return xgboost.train(params, dtrain, ROUNDS, obj=objective, callbacks=callbacks)


def _lightgbm(train: Split, objective, callbacks):
    sizes = np.bincount(train.qid)
    dtrain = lightgbm.Dataset(train.X, train.y, group=sizes[sizes > 0])
    params = {"objective": objective, "learning_rate": 0.3, "num_leaves": 8, "num_threads": 1,
              "verbose": -1, "min_data_in_leaf": 5}
    # keep_training_booster: every round run stays in the booster (else it is cut at the best)
    return lightgbm.train(params, dtrain, ROUNDS, callbacks=callbacks, keep_training_booster=True)


def _margins(booster, X, rounds: int) -> np.ndarray:
    if isinstance(booster, xgboost.Booster):
        return booster[:rounds].inplace_predict(X, predict_type="margin").astype(np.float64)
    return booster.predict(X, num_iteration=rounds, raw_score=True)


@pytest.mark.parametrize("fairness", [None, "expected-exposure"])
@pytest.mark.parametrize("library", ["xgboost", "lightgbm"])
def test_stops_patience_rounds_after_the_best_policy_value_and_records_it(
    splits, library, fairness
):
    train, vali = splits
    fit = _xgboost if library == "xgboost" else _lightgbm
    stop = policy_early_stopping(vali.X, vali.y, vali.qid, objective=_objective(fairness),
                                 stopping_rounds=PATIENCE, backend=library, seed=7, n_jobs=1)
    stopped = fit(train, _objective(fairness), [stop])
    full = fit(train, _objective(fairness), [])  # same objective seed: the same trees
    run = stopped.num_boosted_rounds() if library == "xgboost" else stopped.current_iteration()
    weight = 0.5 if fairness else 0.0
    values = [
        policy_objective(_margins(full, vali.X, r), vali, k=5, weight=weight,
                         n_samples=STOPPING_SAMPLES, seed=7, n_jobs=1)
        for r in range(1, run + 1)
    ]
    best = int(np.argmax(values))
    assert run == best + 1 + PATIENCE < ROUNDS  # stopped, PATIENCE rounds after the best
    if library == "xgboost":  # XGBoost's convention: 0-based, every round kept
        assert stopped.best_iteration == best
        assert float(stopped.attr("best_score")) == pytest.approx(values[best], rel=1e-12)
    else:  # LightGBM's: 1-based, used by predict
        assert stopped.best_iteration == best + 1
        name = "expected_ndcg@5" + ("-0.5*ee_l" if fairness else "")
        assert stopped.best_score["valid"][name] == pytest.approx(values[best], rel=1e-12)
        np.testing.assert_allclose(stopped.predict(vali.X, raw_score=True),
                                   _margins(full, vali.X, best + 1), rtol=1e-12)


def test_lightgbm_records_the_best_round_when_training_runs_out(splits):
    train, vali = splits
    stop = policy_early_stopping(vali.X, vali.y, vali.qid, objective=_objective(None),
                                 stopping_rounds=ROUNDS, backend="lightgbm", n_jobs=1)
    booster = _lightgbm(train, _objective(None), [stop])
    assert booster.current_iteration() == ROUNDS
    assert 1 <= booster.best_iteration <= ROUNDS  # set by the last round's exception


def test_rows_in_any_order_give_the_same_stopping(splits):
    train, vali = splits
    order = np.random.default_rng(0).permutation(vali.y.shape[0])
    kept = [
        _xgboost(train, _objective(None), [policy_early_stopping(
            X, y, qid, objective=_objective(None), stopping_rounds=PATIENCE, n_jobs=1,
        )]).best_iteration
        for X, y, qid in ((vali.X, vali.y, vali.qid),
                          (vali.X[order], vali.y[order], vali.qid[order]))
    ]
    assert kept[0] == kept[1]


def test_k_sets_the_cutoff_watched(splits):
    """An objective trained at K=10 stopped on the policy's expected NDCG@5."""
    train, vali = splits
    objective = plrank_objective(K=10, N=10, seed=1, n_jobs=1)
    stop = policy_early_stopping(vali.X, vali.y, vali.qid, objective=objective, k=5,
                                 stopping_rounds=PATIENCE, backend="lightgbm", seed=7, n_jobs=1)
    stopped = _lightgbm(train, objective, [stop])
    full = _lightgbm(train, plrank_objective(K=10, N=10, seed=1, n_jobs=1), [])
    values = [
        policy_objective(_margins(full, vali.X, r), vali, k=5, weight=0.0,
                         n_samples=STOPPING_SAMPLES, seed=7, n_jobs=1)
        for r in range(1, stopped.current_iteration() + 1)
    ]
    assert stopped.best_iteration == int(np.argmax(values)) + 1
    assert stopped.best_score["valid"]["expected_ndcg@5"] == pytest.approx(max(values), rel=1e-12)


@pytest.mark.parametrize(
    ("change", "error", "message"),
    [
        ({"backend": "catboost"}, ValueError,
         "backend must be one of 'xgboost', 'lightgbm', but 'catboost' is given"),
        ({"objective": "rank:ndcg"}, TypeError,
         "objective must be a PLRankObjective .from plrank_objective., but str 'rank:ndcg'"),
        ({"stopping_rounds": 0}, ValueError, "stopping_rounds must be an integer >= 1, but 0"),
        ({"k": 0}, ValueError, "k must be an integer >= 1, but 0 is given"),
        ({"seed": -1}, ValueError, r"seed must be an integer in \[0, 2\*\*63\), but -1 is given"),
        ({"seed": 2**63}, ValueError, r"seed must be an integer in \[0, 2\*\*63\), but 9223"),
        ({"y": np.full(6, 40.0)}, ValueError, r"labels must be <= 31 with the exponential gain"),
        ({"y": np.zeros(5)}, ValueError, "inconsistent numbers of samples: \\[6, 5\\]"),
        ({"group": [1, 2]}, ValueError, "group"),
    ],
)
def test_bad_input_is_named(change, error, message):
    args = {"X": np.zeros((6, 2)), "y": np.zeros(6), "group": None,
            "objective": _objective(None), "stopping_rounds": 3}
    args.update(change)
    X, y, group = args.pop("X"), args.pop("y"), args.pop("group")
    with pytest.raises(error, match=message):
        policy_early_stopping(X, y, group, **args)


def test_the_readme_example_stops_on_the_policy():
    """The README's policy_early_stopping block, after its first block, with 30 rounds."""
    from test_datasets import README, readme_booster_example

    text = README.read_text(encoding="utf-8")
    start = text.index("```python", text.index("from gbdt_plrank import policy_early_stopping") - 20)
    code = text[start + len("```python") : text.index("```", start + 3)]
    assert "1000, obj=obj" in code and "stopping_rounds=50" in code
    namespace: dict[str, object] = {}
    exec(compile(readme_booster_example(), str(README), "exec"), namespace)
    code = code.replace("1000, obj=obj", "30, obj=obj").replace("stopping_rounds=50", "stopping_rounds=3")
    exec(compile(code, str(README), "exec"), namespace)
    bst, scores = namespace["bst"], namespace["scores"]
    assert bst.best_iteration + 1 + 3 == bst.num_boosted_rounds() or bst.num_boosted_rounds() == 30
    assert scores.shape == (namespace["data"].test.y.shape[0],)
