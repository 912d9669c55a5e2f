r"""Early stopping on a PL-Rank policy's validation value, as a callback of ``xgboost.train`` and
``lightgbm.train``.

What :class:`~gbdt_plrank.PLRankRanker` does by default (``stopping_metric="auto"``), for users
of the boosters' own training functions with :func:`~gbdt_plrank.plrank_objective`.
"""

from __future__ import annotations

from typing import Any

from sklearn.utils import check_array, check_consistent_length

from ._boosters import BACKENDS, QueryData
from ._estimator import booster_threads
from ._groups import resolve_groups
from ._objective import PLRankObjective
from ._policy_value import PolicyStopping
from ._validation import X_RULES, check_choice, check_labels, check_positive_int, check_seed
from .ranker import RANKER_BACKENDS

__all__ = ["policy_early_stopping"]


def policy_early_stopping(
    X: Any,
    y: Any,
    group: Any = None,
    *,
    objective: PLRankObjective,
    stopping_rounds: int,
    k: int | None = None,
    backend: str = "xgboost",
    seed: int = 0,
    n_jobs: int | None = None,
) -> Any:
    r"""A callback stopping training when the policy's value on ``(X, y, group)`` stops improving.

    After every round it scores the eval rows and estimates the Plackett-Luce policy's expected
    NDCG@K, minus the fairness weight :math:`w` times the expected exposure loss when
    ``objective`` has fairness, the value ``objective`` trains for:

    .. math:: V = \frac{1}{|Q|} \sum_q \mathbb{E}_{y \sim \pi_q}[\mathrm{NDCG@K}(y)]
              - w \, \mathrm{EE\text{-}L}_q,

    from 100 rankings per query drawn with the same random streams every round (so that the
    curve is smooth in the margins; :func:`gbdt_plrank._policy_value.policy_objective`). It stops
    ``stopping_rounds`` rounds after the best value and records that round in the booster, as the
    library's own early stopping does. The ranking's NDCG@K is a step function of the margins and
    blind to their scale, which sets how random the policy is; on LETOR validation splits the
    policy's value stops 2 to 4 times later and ranks better (README, "Levers measured on
    validation").

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_samples, n_features)
        Eval rows' features; NaN marks a missing value.
    y : array-like of shape (n_samples,)
        Their graded relevance labels.
    group : array-like or None, default None
        Per-row query ids, or query sizes in row order (as in
        :meth:`gbdt_plrank.PLRankRanker.fit`); ``None``: one query.
    objective : PLRankObjective
        The objective being trained (:func:`~gbdt_plrank.plrank_objective`): its ``K``, gain and
        fairness weight define :math:`V`.
    stopping_rounds : int
        Rounds without a better :math:`V` before training stops.
    k : int or None, default None
        The cut-off K of :math:`V`; ``None`` is the objective's. Pass the cut-off the model is
        judged at when the objective trains at a longer one (e.g. ``plrank_objective(K=10)``
        for NDCG@5, as :class:`~gbdt_plrank.PLRankRanker` does by default:
        :func:`~gbdt_plrank.training_cutoff`).
    backend : {"xgboost", "lightgbm"}, default "xgboost"
        The library whose ``train`` takes the callback.
    seed : int, default 0
        Seed of the sampled rankings (the same every round).
    n_jobs : int or None, default None
        Threads of prediction and sampling; negative values count back from the cores.

    Returns
    -------
    callback
        For ``xgboost.train(callbacks=[...])``: an ``xgboost.callback.TrainingCallback``; the
        booster keeps every round and its ``best_iteration`` (0-based) and ``best_score``
        name the best one, so predict with ``iteration_range=(0, bst.best_iteration + 1)``.
        For ``lightgbm.train(callbacks=[...])``: a callable; the booster's ``best_iteration``
        (1-based, which ``predict`` uses by default) and ``best_score["valid"]`` name it, and
        the booster returned holds the rounds up to it (every round with
        ``keep_training_booster=True``).

    Raises
    ------
    ValueError
        On a backend without a callback, ``stopping_rounds`` or ``k`` that is not a positive
        integer,
        ``seed`` outside [0, 2**63), labels that break the objective's gain, features and
        labels of different lengths, or a group that is neither ids nor sizes.
    TypeError
        When ``objective`` is not a :class:`~gbdt_plrank.PLRankObjective`.

    Examples
    --------
    >>> import xgboost as xgb
    >>> from gbdt_plrank import plrank_objective, policy_early_stopping
    >>> objective = plrank_objective(K=5, N=100, seed=0)
    >>> stop = policy_early_stopping(X_val, y_val, qid_val, objective=objective,
    ...                              stopping_rounds=50)  # doctest: +SKIP
    >>> bst = xgb.train({"eta": 0.05}, xgb.DMatrix(X, y, qid=qid), 1000, obj=objective,
    ...                 callbacks=[stop])  # doctest: +SKIP
    >>> scores = bst.predict(xgb.DMatrix(X_test), output_margin=True,
    ...                      iteration_range=(0, bst.best_iteration + 1))  # doctest: +SKIP
    """
    backend = check_choice("backend", backend, RANKER_BACKENDS)
    if not isinstance(objective, PLRankObjective):
        raise TypeError(
            f"objective must be a PLRankObjective (from plrank_objective), but "
            f"{type(objective).__name__} {objective!r} is given."
        )
    stopping_rounds = check_positive_int("stopping_rounds", stopping_rounds)
    k = None if k is None else check_positive_int("k", k)
    seed = check_seed("seed", seed)
    X = check_array(X, **X_RULES)
    labels = check_labels(y, gain=objective.spec.gain)
    check_consistent_length(X, labels)
    vali = QueryData.grouped(X, labels, resolve_groups(group, X.shape[0]))
    stopping = PolicyStopping.for_objective(
        BACKENDS[backend], vali, objective, k=k, patience=stopping_rounds, seed=seed,
        n_jobs=booster_threads(n_jobs),
    )
    return BACKENDS[backend].stopping_callback(stopping)
