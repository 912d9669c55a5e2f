"""Compiling the kernels: one notice at the first compilation in a process (none when Numba's
cache holds them), and ``compile_kernels`` / ``gbdt-plrank compile``, which leave a first
training nothing to compile. Each check runs fresh processes on an empty ``NUMBA_CACHE_DIR``."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gbdt_plrank._compile import NOTICE

ROOT = Path(__file__).resolve().parents[1]
SAID = NOTICE.split("{where}")[0]


def _run(code: str, cache: Path) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "NUMBA_CACHE_DIR": str(cache),
        "NUMBA_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
    }
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert done.returncode == 0, done.stderr
    return done


def test_the_first_compilation_says_so_once_and_a_cached_process_says_nothing(tmp_path):
    """A process that compiles kernels logs the notice once, naming the cache and the way to
    compile ahead; a process that loads them from the cache is silent."""
    code = """
        import gbdt_plrank
        gbdt_plrank.ndcg([1, 0, 2], [0.1, 0.2, 0.3], [0, 0, 0])
        gbdt_plrank.ndcg([1, 0, 2, 1], [0.1, 0.2, 0.3, 0.0], [0, 0, 1, 1], k=1)
        gbdt_plrank.metrics.dcg([1, 0, 2], [0.1, 0.2, 0.3], [0, 0, 0])
    """
    first = _run(code, tmp_path)
    assert first.stderr.count(SAID) == 1, first.stderr
    assert f"Numba caches them in {tmp_path}" in first.stderr
    assert "`gbdt-plrank compile` or gbdt_plrank.compile_kernels()" in first.stderr
    assert SAID not in _run(code, tmp_path).stderr


WORKLOAD = """
    import warnings
    import numpy as np
    import gbdt_plrank
    import lightgbm, xgboost
    from gbdt_plrank import PLRankRanker, plrank_objective, pirank_objective

    warnings.simplefilter("ignore")
    data = gbdt_plrank.load_dataset("mq2008")
    train, vali = data.train, data.vali
    dtrain = xgboost.DMatrix(train.X, train.y, qid=train.qid)
    dvalid = xgboost.DMatrix(vali.X, vali.y, qid=vali.qid)
    params = {"eta": 0.05, "base_score": 0.0, "disable_default_eval_metric": 1, "nthread": 1}
    obj = plrank_objective(n_jobs=1)
    xgboost.train(params, dtrain, 2, obj=obj, evals=[(dvalid, "valid")],
                  custom_metric=obj.standardized_metric, maximize=True, verbose_eval=False,
                  callbacks=[gbdt_plrank.xgboost_early_stopping(1)])
    xgboost.train(params, dtrain, 2, obj=pirank_objective(K=5), evals=[(dvalid, "valid")],
                  verbose_eval=False)
    obj = plrank_objective(n_jobs=1)
    ltrain = lightgbm.Dataset(train.X, train.y, group=train.group_sizes)
    lvalid = lightgbm.Dataset(vali.X, vali.y, group=vali.group_sizes, reference=ltrain)
    lightgbm.train({"objective": obj, "metric": "None", "verbose": -1, "num_threads": 1},
                   ltrain, 2, valid_sets=[lvalid],
                   feval=[obj.ranking_metric, obj.expected_metric])
    X, y, q = train.X[:400], train.y[:400], train.qid[:400]
    ranker = PLRankRanker(n_estimators=2, n_jobs=1, min_child_weight=0.1, random_state=0)
    ranker.fit(X, y, q, eval_set=[(X, y, q)], early_stopping_rounds=1)
    ranker.sample_rankings(X, q, n_samples=3)
    ranker.expected_metric(X, y, q, n_samples=10)
    exposure = ranker.expected_exposure(X, q, n_samples=10)
    gbdt_plrank.metrics.expected_exposure_loss(y, exposure, q)
    groups = (np.arange(len(y)) % 2).astype(np.int64)
    PLRankRanker(n_estimators=2, n_jobs=1, fairness="group-disparity", random_state=0).fit(
        X, y, q, item_groups=groups)
    PLRankRanker(backend="lightgbm", n_estimators=2, n_jobs=1, fairness="expected-exposure",
                 random_state=0).fit(X, y, q)
    ptr = np.r_[0, np.cumsum(np.bincount(q)[np.unique(q)])]
    gbdt_plrank.plrank_grad_hess(np.asarray(X[:, 0].todense()).ravel() * 1e4, y, ptr, K=5)
    scores = ranker.predict(X)
    print(gbdt_plrank.ndcg(y, scores, q), gbdt_plrank.dataset_ndcg(y, scores, q))
"""


@pytest.mark.slow
def test_compile_ahead_leaves_a_first_training_nothing_to_compile(tmp_path):
    """``gbdt-plrank compile`` on an empty cache compiles the kernels without the notice; a
    process then trains with both boosters, the evaluation metrics, PiRank, fairness and the
    policy's methods without compiling any kernel (no notice); compiling again finds them all."""
    compile_ = "import sys\nfrom gbdt_plrank.cli import main\nsys.exit(main(['compile']))"
    first = _run(compile_, tmp_path)
    assert "compiled " in first.stdout and " kernels in " in first.stdout, first.stdout
    assert SAID not in first.stderr
    workload = _run(WORKLOAD, tmp_path)
    assert SAID not in workload.stderr, workload.stderr
    again = _run(compile_, tmp_path)
    assert "every kernel was in Numba's cache already" in again.stdout, again.stdout
