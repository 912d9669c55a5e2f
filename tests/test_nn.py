"""The neural-network ranker: gradient plumbing, reproducibility, learning, stopping, input."""

from __future__ import annotations

import json
import pickle
import re
import subprocess
import sys
from pathlib import Path

import naive
import numpy as np
import pytest

torch = pytest.importorskip("torch")

from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402
from sklearn_checks import CHECKS_THAT_FIT, NO_GROUPS, one_query  # noqa: E402

from gbdt_plrank import plrank_grad_hess  # noqa: E402
from gbdt_plrank._backends import BACKENDS, BoosterSettings, Plan, Split, _torch  # noqa: E402
from gbdt_plrank._training import plrank_grad_hess as _plrank  # noqa: E402
from gbdt_plrank._training.options import PLRankOptions  # noqa: E402
from gbdt_plrank._training.plrank_plan import plrank_plan  # noqa: E402
from gbdt_plrank.nn import PLRankMLPRanker  # noqa: E402

FAST = {"N": 10, "batch_size": 8, "max_epochs": 4, "n_jobs": 1, "progress": False}


def _queries(n_queries: int, seed: int, n_features: int = 6) -> tuple[np.ndarray, ...]:
    """Queries of 3-9 documents whose grade (0-3) rises with the first two features."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(3, 10, n_queries)
    n = int(sizes.sum())
    X = rng.normal(size=(n, n_features))
    y = np.clip(np.round(X[:, 0] + 0.5 * X[:, 1] + rng.normal(0, 0.3, n) + 1), 0, 3)
    return X, y, np.repeat(np.arange(n_queries), sizes)


@pytest.fixture(scope="module")
def train_valid() -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
    return _queries(40, 0), _queries(15, 1)


# --------------------------------------------------------------------------------------------
# The gradient the network receives is the estimator's
# --------------------------------------------------------------------------------------------
def test_surrogate_gradient_is_exactly_the_estimators_output() -> None:
    _, y, qid = _queries(5, 3)
    scores = torch.tensor(np.random.default_rng(0).normal(size=y.shape[0]), requires_grad=True)
    ptr = Split(None, y, qid).group_ptr
    grad, _ = plrank_grad_hess(scores.detach().numpy(), y, ptr, K=3, N=50, seed=1)
    _torch.surrogate(scores, torch.as_tensor(grad)).backward()
    np.testing.assert_array_equal(scores.grad.numpy(), grad)


def test_every_step_backpropagates_the_estimate_of_its_batch(monkeypatch, train_valid) -> None:
    """The scores' gradient in training is the estimator's output for the batch's queries."""
    (X, y, qid), _ = train_valid
    calls: list[dict] = []
    estimate = _plrank.estimate

    def recording(scores, rho, group_ptr, metric, **options):
        grad, hess = estimate(scores, rho, group_ptr, metric, **options)
        # The same call again draws the same rankings: the batch's streams are keyed.
        again, _ = estimate(scores, rho, group_ptr, metric, **options)
        np.testing.assert_array_equal(grad, again)
        calls.append({"grad": grad, "rho": rho, "ptr": group_ptr, "metric": metric, **options})
        return grad, hess

    seen: list[np.ndarray] = []
    surrogate = _torch.surrogate

    def hooked(scores, grad):
        scores.register_hook(lambda g: seen.append(g.detach().double().numpy()))
        return surrogate(scores, grad)

    monkeypatch.setattr(_plrank, "estimate", recording)
    monkeypatch.setattr(_torch, "surrogate", hooked)
    ranker = PLRankMLPRanker(K=3, train_K=4, **{**FAST, "max_epochs": 2}, random_state=0)
    ranker.fit(X, y, qid)
    n_queries = np.unique(qid).shape[0]
    assert len(calls) == len(seen) == 2 * int(np.ceil(n_queries / FAST["batch_size"]))
    for call, grad in zip(calls, seen):
        np.testing.assert_allclose(grad, call["grad"], rtol=1e-6, atol=1e-7)  # float32 scores
        assert call["metric"].K == 4 and call["N"] == FAST["N"]
    # Each epoch visits every query once, keyed by its index, in stream round = epoch.
    for epoch in (0, 1):
        keys = np.concatenate([c["keys"] for c in calls if c["round_"] == epoch])
        np.testing.assert_array_equal(np.sort(keys), np.arange(n_queries))


def test_minimising_the_surrogate_ascends_the_expected_metric() -> None:
    """The sign: the surrogate's score gradient is -dR/ds (exact enumeration), so SGD raises R."""
    y = np.array([0.0, 1.0, 3.0, 2.0, 0.0])
    scores = np.array([0.3, -0.2, 0.1, 0.0, 0.5])
    rho = 2.0**y - 1.0
    theta = 1.0 / np.log2(np.arange(2, 5))  # DCG@3
    R, exact, _ = naive.exact_derivatives(scores, rho, theta)
    grad, _ = plrank_grad_hess(scores, y, np.array([0, 5]), K=3, N=20000, metric="dcg", seed=0)
    np.testing.assert_allclose(grad, -exact, atol=0.03 * np.abs(exact).max())
    s = torch.tensor(scores, requires_grad=True)
    _torch.surrogate(s, torch.as_tensor(grad)).backward()
    step = scores - 0.1 * s.grad.numpy()
    assert naive.expected_reward(step, rho, theta) > R


# --------------------------------------------------------------------------------------------
# Reproducibility, learning, early stopping, pickling
# --------------------------------------------------------------------------------------------
def test_same_seed_same_model_other_seed_other_model(train_valid) -> None:
    (X, y, qid), (Xv, _, _) = train_valid
    a, b, c = (PLRankMLPRanker(**FAST, random_state=s).fit(X, y, qid) for s in (0, 0, 1))
    np.testing.assert_array_equal(a.predict(Xv), b.predict(Xv))
    assert not np.array_equal(a.predict(Xv), c.predict(Xv))


def test_the_network_learns_a_tiny_task(train_valid) -> None:
    (X, y, qid), (Xv, yv, qv) = train_valid
    ranker = PLRankMLPRanker(
        K=3, N=20, batch_size=8, max_epochs=15, n_jobs=1, progress=False, random_state=0
    )
    ranker.fit(X, y, qid, eval_set=[(Xv, yv, qv)])
    expected = ranker.evals_result_["valid_0"]["expected_ndcg@3"]
    assert len(expected) == 15
    assert expected[-1] > expected[0] + 0.1
    assert ranker.score(Xv, yv, qv) > 0.85


def test_early_stopping_keeps_the_best_epoch(train_valid) -> None:
    (X, y, qid), (Xv, yv, qv) = train_valid
    patience = 2
    ranker = PLRankMLPRanker(
        K=3, N=10, batch_size=8, max_epochs=40, lr=0.3, n_jobs=1, progress=False, random_state=2
    )
    ranker.fit(X, y, qid, eval_set=[(Xv, yv, qv)], early_stopping_rounds=patience)
    history = ranker.evals_result_["valid_0"]
    watched = np.asarray(history["expected_ndcg@3"])
    best = ranker.best_iteration_
    assert best == int(np.argmax(watched))
    assert watched.shape[0] == best + patience + 1 < 40  # stopped: patience epochs without gain
    # The kept weights are the best epoch's: its recorded NDCG@3 is the model's.
    assert ranker.score(Xv, yv, qv) == pytest.approx(history["ndcg@3"][best], abs=1e-12)


def test_sparse_features_give_the_dense_model(train_valid) -> None:
    import scipy.sparse as sp

    (X, y, qid), (Xv, _, _) = train_valid
    X = np.where(X > 0.5, X, 0.0)  # mostly zeros, as LETOR files
    dense = PLRankMLPRanker(**FAST, random_state=0).fit(X, y, qid)
    sparse = PLRankMLPRanker(**FAST, random_state=0).fit(sp.csr_matrix(X), y, qid)
    np.testing.assert_array_equal(sparse.predict(sp.csr_matrix(Xv)), dense.predict(Xv))


def test_pickled_ranker_predicts_the_same(train_valid) -> None:
    (X, y, qid), (Xv, _, _) = train_valid
    ranker = PLRankMLPRanker(**FAST, random_state=0).fit(X, y, qid)
    loaded = pickle.loads(pickle.dumps(ranker))
    np.testing.assert_array_equal(loaded.predict(Xv), ranker.predict(Xv))


OLD_PICKLE = Path(__file__).parent / "data" / "plrank_mlp_ranker.pkl"
#: What the pickled ranker predicted for the first query when it was pickled (version 0.1.0's
#: layout: its network's class was gbdt_plrank._boosters._torch.Network).
OLD_MARGINS = [
    -0.29845380783081055,
    -0.31207114458084106,
    -0.4201580882072449,
    -0.24970240890979767,
    -0.26445186138153076,
    -0.2967548966407776,
]


def test_a_ranker_pickled_under_the_old_backend_names_still_loads() -> None:
    """tests/data/plrank_mlp_ranker.pkl: a PLRankMLPRanker (K=3, N=4, one hidden layer of 4
    units, 3 epochs, random_state=0) fitted on the data below and pickled while the backend layer
    was ``gbdt_plrank._boosters``. In a fresh interpreter (nothing of the package imported yet,
    as a user's unpickling) it loads and predicts the margins it predicted then; the network it
    kept in ``booster_`` is its ``network_``."""
    data = OLD_PICKLE.read_bytes()
    assert b"gbdt_plrank._boosters._torch" in data and b"gbdt_plrank._backends" not in data
    code = (
        "import json, pickle, numpy as np\n"
        f"ranker = pickle.loads(open({str(OLD_PICKLE)!r}, 'rb').read())\n"
        "X = np.random.default_rng(0).normal(size=(24, 3))\n"
        "print(type(ranker.network_).__module__, 'booster_' in vars(ranker))\n"
        "print(json.dumps(ranker.predict(X[:6]).tolist()))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    module, margins = out.stdout.split("\n")[:2]
    assert module == "gbdt_plrank._backends._torch False"  # the class under its new name
    assert json.loads(margins) == OLD_MARGINS


def test_booster_is_the_network_under_its_deprecated_name(train_valid) -> None:
    """``booster_`` (the name before ``network_``) reads the network with a FutureWarning that
    names ``network_`` (scikit-learn's convention), is read-only, and before ``fit`` is missing
    without a warning."""
    import warnings

    (X, y, qid), _ = train_valid
    ranker = PLRankMLPRanker(**FAST, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not hasattr(ranker, "booster_")
    ranker.fit(X, y, qid)
    assert "booster_" not in vars(ranker)
    with pytest.warns(FutureWarning, match=r"`booster_` was deprecated .* Use `network_` instead"):
        assert ranker.booster_ is ranker.network_
    with pytest.raises(AttributeError):
        ranker.booster_ = ranker.network_
    old = pickle.loads(OLD_PICKLE.read_bytes())  # kept its network in booster_
    with pytest.warns(FutureWarning, match="network_"):
        assert old.booster_ is old.network_
    refit = PLRankMLPRanker(**old.get_params()).fit(X, y, qid)  # a pickled ranker refits
    assert refit.network_ is not old.network_


def test_the_policy_methods_sample_the_networks_scores(train_valid) -> None:
    (X, y, qid), (Xv, yv, qv) = train_valid
    ranker = PLRankMLPRanker(**FAST, random_state=0).fit(X, y, qid)
    exposure = ranker.expected_exposure(Xv, qv, n_samples=4, random_state=0)
    assert exposure.shape == (Xv.shape[0],)
    rankings = ranker.sample_rankings(Xv, qv, n_samples=3, random_state=0)
    assert len(rankings) == np.unique(qv).shape[0]
    assert 0 <= ranker.expected_metric(Xv, yv, qv, n_samples=4, random_state=0).mean <= 1


def test_network_options_shape_the_network(train_valid) -> None:
    (X, y, qid), _ = train_valid
    linear = PLRankMLPRanker(**FAST, n_layers=0, random_state=0).fit(X, y, qid)
    deep = PLRankMLPRanker(**FAST, n_layers=3, units=5, activation="relu", random_state=0)
    deep.fit(X, y, qid)
    assert [type(m).__name__ for m in linear.network_.module] == ["Linear"]
    widths = [m.out_features for m in deep.network_.module if hasattr(m, "out_features")]
    assert widths == [5, 5, 5, 1]
    assert sum(isinstance(m, torch.nn.ReLU) for m in deep.network_.module) == 3
    assert linear.feature_importances_.sum() == pytest.approx(1.0)


# --------------------------------------------------------------------------------------------
# Bad input
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"n_layers": -1}, "n_layers must be an integer >= 0, but -1 is given"),
        ({"units": 0}, "units must be an integer >= 1, but 0 is given"),
        ({"optimizer": "rmsprop"}, "optimizer must be one of 'adam', 'sgd', but 'rmsprop'"),
        ({"activation": "gelu"}, "activation must be one of 'sigmoid', 'tanh', 'relu'"),
        ({"lr": 0.0}, "lr must be a finite number > 0, but 0.0 is given"),
        ({"batch_size": 0}, "batch_size must be an integer >= 1, but 0 is given"),
        ({"scale": "minmax"}, "scale must be one of 'standard', 'none', but 'minmax'"),
        ({"max_epochs": 0}, "max_epochs must be an integer >= 1, but 0 is given"),
        ({"K": 0}, "K must be an integer >= 1, but 0 is given"),
        ({"metric": "map"}, "metric must be one of"),
    ],
)
def test_bad_options_name_value_and_rule(train_valid, options, message) -> None:
    (X, y, qid), _ = train_valid
    with pytest.raises(ValueError, match=message):
        PLRankMLPRanker(**{**FAST, **options}).fit(X, y, qid)


def test_bad_data_is_refused(train_valid) -> None:
    (X, y, qid), _ = train_valid
    ranker = PLRankMLPRanker(**FAST)
    with pytest.raises(ValueError, match="early_stopping_rounds=3 needs a validation set"):
        ranker.fit(X, y, qid, early_stopping_rounds=3)
    bad = X.copy()
    bad[3, 1] = np.nan
    with pytest.raises(
        ValueError,
        match=r"X must hold finite numbers, not NaN or inf \(impute "
        r"missing values first\), but X\[3, 1\] is NaN",
    ):
        ranker.fit(bad, y, qid)
    with pytest.raises(ValueError, match="labels"):
        ranker.fit(X, -y, qid)


def test_backend_refuses_what_a_network_cannot_train(train_valid) -> None:
    (X, y, qid), _ = train_valid
    data = Split(X, y, qid)
    backend = BACKENDS["torch"]
    with pytest.raises(TypeError, match=r"plan\.objective must be a PL-Rank objective"):
        backend.train(BoosterSettings(), data, [], Plan("rank:ndcg", 3))
    plan = plrank_plan(
        PLRankOptions.checked(K=3),
        stopping_metric="policy",
        seed=0,
        n_jobs=1,
        n_estimators=1,
        early_stopping_rounds=None,
    )
    unknown = r"unknown key 'hidden' in the network options; allowed .*: n_layers, units"
    with pytest.raises(ValueError, match=unknown):
        backend.train(BoosterSettings(params={"hidden": 3}), data, [], plan)
    with pytest.raises(ValueError, match="params must not set 'seed'"):
        backend.train(BoosterSettings(params={"seed": 3}), data, [], plan)


def test_trees_settings_do_not_reach_the_network(train_valid) -> None:
    """The trees' learning rate has no network counterpart: it must not become the step size."""
    (X, y, qid), _ = train_valid
    data = Split(X, y, qid)
    plan = plrank_plan(
        PLRankOptions.checked(K=3, N=5),
        stopping_metric="policy",
        seed=0,
        n_jobs=1,
        n_estimators=2,
        early_stopping_rounds=None,
    )
    backend = BACKENDS["torch"]
    plain = backend.train(BoosterSettings(seed=0, params={"progress": False}), data, [], plan)
    trees = BoosterSettings(
        trees={"learning_rate": 0.5, "max_depth": 3}, seed=0, params={"progress": False}
    )
    with_trees = backend.train(trees, data, [], plan)
    np.testing.assert_array_equal(
        backend.margins(plain.booster, X, n_threads=1),
        backend.margins(with_trees.booster, X, n_threads=1),
    )


def test_the_package_works_without_torch() -> None:
    code = (
        "import sys\n"
        "class Block:\n"  # torch cannot be found (scipy looks for torch in sys.modules)
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.partition('.')[0] == 'torch':\n"
        "            raise ModuleNotFoundError(name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "import gbdt_plrank, gbdt_plrank.harness.training, gbdt_plrank._backends\n"
        "from gbdt_plrank._util.compat import MissingDependencyError\n"
        "try:\n"
        "    import gbdt_plrank.nn\n"
        "except MissingDependencyError as err:\n"
        "    print(err)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    needs = "gbdt_plrank.nn needs torch, which is not installed: pip install 'gbdt_plrank[nn]'"
    assert needs in out.stdout


# --------------------------------------------------------------------------------------------
# scikit-learn's common checks
# --------------------------------------------------------------------------------------------
class OneQueryPLRankMLPRanker(PLRankMLPRanker):
    """PLRankMLPRanker whose ``fit`` and ``score`` read a missing group as one query: the ranker
    the common checks can fit (:mod:`sklearn_checks`)."""

    def fit(self, X, y, group=None, *, item_groups=None, eval_set=None, early_stopping_rounds=None):
        return super().fit(
            X,
            y,
            one_query(X, group),
            item_groups=item_groups,
            eval_set=eval_set,
            early_stopping_rounds=early_stopping_rounds,
        )

    def score(self, X, y, group=None):
        return super().score(X, y, one_query(X, group))


def _checks_that_cannot_apply(estimator: PLRankMLPRanker) -> dict[str, str]:
    """Every check passes on the ranker given one query; without groups, no fit can pass."""
    if isinstance(estimator, OneQueryPLRankMLPRanker):
        return {}
    return dict.fromkeys((*CHECKS_THAT_FIT, "check_estimators_nan_inf"), NO_GROUPS)


_FAST_CHECKS = {
    "N": 4,
    "batch_size": 4,
    "max_epochs": 2,
    "n_jobs": 1,
    "progress": False,
    "random_state": 0,
}


@parametrize_with_checks(
    [PLRankMLPRanker(**_FAST_CHECKS), OneQueryPLRankMLPRanker(**_FAST_CHECKS)],
    expected_failed_checks=_checks_that_cannot_apply,
    xfail_strict=True,
)
def test_sklearn_common_checks(estimator, check):
    check(estimator)


def test_group_fairness_takes_item_groups_in_fit_and_eval_sets(train_valid) -> None:
    """fairness="group-disparity" trains on the item groups given to fit (other groups, another
    model) and reports the eval set's value with its own item groups."""
    (X, y, qid), (Xv, yv, qv) = train_valid
    groups = (X[:, 2] > 0).astype(int)
    options = {
        **FAST,
        "K": 3,
        "fairness": "group-disparity",
        "fairness_weight": 5.0,
        "random_state": 0,
    }
    ranker = PLRankMLPRanker(**options)
    ranker.fit(X, y, qid, item_groups=groups, eval_set=[(Xv, yv, qv, (Xv[:, 2] > 0).astype(int))])
    assert list(ranker.evals_result_["valid_0"]) == ["ndcg@3", "expected_ndcg@3-5*group_disparity"]
    other = PLRankMLPRanker(**options).fit(X, y, qid, item_groups=(X[:, 3] > 0).astype(int))
    assert not np.array_equal(ranker.predict(Xv), other.predict(Xv))
    with pytest.raises(ValueError, match="fairness='group-disparity' needs item_groups"):
        PLRankMLPRanker(**options).fit(X, y, qid)
    with pytest.raises(ValueError, match="item_groups are used only by fairness"):
        PLRankMLPRanker(**{**options, "fairness": "disparity"}).fit(X, y, qid, item_groups=groups)


def test_verbose_prints_the_eval_sets_every_n_epochs(train_valid, capsys) -> None:
    (X, y, qid), (Xv, yv, qv) = train_valid
    PLRankMLPRanker(**{**FAST, "max_epochs": 5}, random_state=0, verbose=2).fit(
        X, y, qid, eval_set=[(Xv, yv, qv)]
    )
    lines = capsys.readouterr().out.splitlines()
    assert [line.split("\t")[0] for line in lines] == ["[0]", "[2]", "[4]"]
    assert re.fullmatch(
        r"\[0\]\tvalid_0-ndcg@5:0\.\d{5}\tvalid_0-expected_ndcg@5:0\.\d{5}", lines[0]
    ), lines
    PLRankMLPRanker(**{**FAST, "max_epochs": 3}, random_state=0, verbose=True).fit(X, y, qid)
    printed = capsys.readouterr()
    assert printed.out == "" and "3/3" in printed.err
    PLRankMLPRanker(**{**FAST, "max_epochs": 3}, random_state=0).fit(
        X, y, qid, eval_set=[(Xv, yv, qv)]
    )
    assert capsys.readouterr().out == ""
