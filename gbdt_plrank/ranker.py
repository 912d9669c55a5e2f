r"""``PLRankRanker``: a scikit-learn ranker trained with PL-Rank, on XGBoost or LightGBM.

XGBoost's ``XGBRanker`` refuses callable objectives and LightGBM's ``LGBMRanker`` hands the
query groups only to four-argument ones, so this estimator calls ``xgboost.train`` /
``lightgbm.train`` itself with a :class:`~gbdt_plrank.PLRankObjective`. Its margins define a
Plackett-Luce policy, and besides scores it offers what only a stochastic ranker can: sampled
rankings, expected exposure and the expected metric of that policy.

How ``group=`` is read (every method, the same rule as :mod:`gbdt_plrank.metrics`):

- per-row query ids, length ``n_rows``: rows may come in any order; they are sorted stably by
  query id inside, so shuffling whole queries, or interleaving them while each query's rows keep
  their relative order, gives the same model (reordering a query's own rows gives another draw
  of the sampled rankings: see ``random_state``);
- LightGBM-style group sizes: a sequence whose length differs from ``n_rows`` and that sums to
  ``n_rows`` (rows already grouped, queries in the given order; sizes as long as ``n_rows``, i.e.
  one-row queries only, would read as ids: pass ids for those);
- a column name, with a pandas DataFrame ``X``: that column holds the per-row query ids and is
  not a feature (``fit`` leaves it out, and :meth:`~PolicyRanker.predict` drops it from ``X``);
- ``None``: refused by ``fit``, ``score`` and ``expected_metric``, which train on queries or
  judge them (all rows as one query would be silently wrong, e.g. in ``GridSearchCV`` without
  metadata routing); all rows form one query for ``sample_rankings`` and
  ``expected_exposure``. ``group=np.zeros(n_rows)`` makes all rows one query anywhere.

Every output comes back in the caller's row order.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
from sklearn.utils import Tags

from ._backends import (
    BACKENDS,
    HELD_OUT_PATIENCE,
    RANKER,
    RANKER_BACKENDS,
    TREE_SETTINGS,
    BoosterSettings,
    Plan,
    RankerParameters,
    Trained,
)
from ._estimator import HoldOut, PolicyRanker
from ._training.objective import PLRankObjective
from ._training.options import DEFAULTS, PLRankOptions, option_docs
from ._training.plrank_grad_hess import kept_query_counts
from ._training.policy_methods import MetricEstimate
from ._util.frames import caller_level
from ._util.threads import booster_threads

__all__ = ["RANKER_BACKENDS", "MetricEstimate", "PLRankRanker", "PolicyRanker"]


#: The ranker's own ``deep_weight`` default: ``"auto"`` weights the deep documents' gradients
#: up to :data:`~gbdt_plrank._training.options.AUTO_DEEP_WEIGHT` times without fairness (the
#: objective's default, 1.0, is PL-Rank's own gradient: the README's path is measured with it).
DEEP_WEIGHT = "auto"


@option_docs(defaults={"deep_weight": DEEP_WEIGHT})
class PLRankRanker(PolicyRanker):
    r"""Gradient-boosted trees trained to maximise the expected NDCG of a Plackett-Luce policy.

    The booster's raw margin :math:`m(d)` of a document is the log-score of a stochastic ranking
    policy :math:`\pi`: at each rank :math:`k = 1..\min(K, D)` it places an unplaced document
    :math:`d` of the query with probability :math:`e^{m(d)} / \sum_{d'\,\mathrm{unplaced}}
    e^{m(d')}`. Every boosting round estimates the gradient and Hessian of
    :math:`-\mathbb{E}_{y \sim \pi}[\mathrm{metric@K'}(y)]`, at the training cut-off
    :math:`K'` = ``train_K`` (2K by default), from ``N`` sampled rankings per query
    (PL-Rank-3, Oosterhuis 2022; Hessian of Kang, de Rijke and Oosterhuis 2024). Ranking by
    :meth:`predict` is the policy's most likely ranking. ``__init__`` only stores its
    arguments; :meth:`fit` checks them. The user guide: :doc:`/guide/ranker`.

    Parameters
    ----------
    backend : {"xgboost", "lightgbm"}, default "xgboost"
        The booster library.
    .. plrank-options:: K train_K N metric gain hessian sampler noise query_subsample fairness
    device : {"cpu", "cuda"}, default "cpu"
        Where the objective's estimate is computed: ``"cuda"`` on the GPU (the ``gpu`` extra;
        XGBoost then trains with ``device="cuda"`` too, LightGBM where ``params`` say;
        :doc:`/guide/gpu`).
    .. plrank-options:: fairness_weight empty_queries deep_weight
    n_estimators : int, default 150
        Boosting rounds (at most, with early stopping).
    learning_rate : float, default 0.2
        Shrinkage (XGBoost ``eta``, LightGBM ``learning_rate``). How the defaults were chosen:
        :doc:`/guide/performance`, "The first call".
    max_depth, num_leaves : int or None, default None
        Tree depth limit and leaves per tree (XGBoost ``max_leaves``); ``None`` keeps the
        booster's default (depth: XGBoost 6, LightGBM none).
    min_child_weight : float or None, default 1.0
        Minimum Hessian sum in a leaf (LightGBM ``min_sum_hessian_in_leaf``); ``None`` keeps
        the booster's default, XGBoost 1 and LightGBM 0.001. PL-Rank's Hessians are small, so a
        small training set may not split at all: :meth:`fit` then warns.
    reg_alpha : float or None, default None
        L1 penalty on leaf weights (XGBoost ``alpha``, LightGBM ``lambda_l1``).
    reg_lambda : float or None, default 1.0
        L2 penalty on leaf weights (XGBoost ``lambda``, LightGBM ``lambda_l2``); ``None``
        keeps the booster's default (LightGBM's 0 makes PL-Rank's steps far too large).
    min_split_gain : float or None, default None
        Minimum loss reduction to split (XGBoost ``gamma``, LightGBM ``min_gain_to_split``).
    subsample : float or None, default None
        Row fraction per tree (LightGBM ``bagging_fraction`` with ``bagging_freq=1``).
    colsample_bytree : float or None, default None
        Feature fraction per tree (LightGBM ``feature_fraction``).
    n_jobs : int or None, default None
        Threads of the booster and of the objective's sampling; ``None`` leaves each library's
        default, negative values count back from the number of cores (-1: all).
    stopping_metric : {"auto", "policy", "ranking", "standardized"}, default "auto"
        What early stopping watches on the eval sets: ``"policy"`` the policy's expected
        metric@K (minus ``fairness_weight`` times the fairness loss with ``fairness``),
        ``"standardized"`` the same for the margins scaled to a within-query spread of 3,
        ``"ranking"`` the metric@K of the ranking by score; ``"auto"`` is ``"standardized"``
        (``"policy"`` with ``fairness``; ``"ranking"`` on Dask). Why: :doc:`/guide/boosters`,
        "Early stopping on the policy".
    min_rounds : int or "auto", default "auto"
        With early stopping, no round before this one is kept or counted; ``"auto"`` is
        :func:`~gbdt_plrank.min_rounds_for` of the learning rate the booster trains with,
        ``ceil(2 / learning_rate)`` (10 at the default 0.2; a rate in ``params`` wins); 0 keeps
        any round, each library's own rule. A fit of fewer rounds keeps its last.
    min_delta : float, default 0.0
        With early stopping, a round becomes the best only when it beats the best validation
        value by more than this (a finite number >= 0, as the boosters' own ``min_delta``).
    patience_rate : float, default 0.5
        With early stopping, training stops ``max(early_stopping_rounds, ceil(patience_rate *
        (best_round + 1)))`` rounds after the best (0-based) round; 0 is a fixed patience, each
        library's own rule. The stopping rule and why: :doc:`/guide/boosters`, "No round kept
        before 2 / eta".
    early_stopping : "auto" or bool, default "auto"
        True: stop early (patience ``early_stopping_rounds``, else 10) on ``eval_set``, or on a
        random held-out ``validation_fraction`` of the training queries; ``"auto"``: hold out
        only 200 or more queries of at most 64 documents on average, without ``fairness`` or
        an ``eval_set``. Why: :doc:`/guide/ranker`, "Early stopping".
    validation_fraction : float, default 0.1
        The share of the training queries ``early_stopping`` holds out, in (0, 1).
    random_state : int, RandomState or None, default None
        Seeds the objective's sampled rankings and the booster; the same int gives the same
        model from the same rows with each query's rows in the same order (whole queries may be
        shuffled or interleaved). ``None`` draws fresh seeds on every fit.
    params : dict or None, default None
        Further native parameters of the backend, applied after the settings above (e.g.
        ``{"tree_method": "approx"}``); the objective, evaluation metric and rounds are the
        ranker's. Other keys pass unchanged (XGBoost warns of keys it does not use).
    verbose : bool or int, default False
        ``True`` (every round) or N >= 1 prints the eval sets' values every N rounds in the
        booster's format, or without ``eval_set`` shows a progress bar on stderr; ``False``, 0
        or a negative integer is quiet. On a Dask cluster the workers print, without a bar.

    Attributes
    ----------
    booster_ : xgboost.Booster or lightgbm.Booster
        The trained booster, holding exactly the rounds :meth:`predict` uses (up to the best
        round under early stopping); it saves and loads with the library's own functions.
    do_early_stopping_ : bool
        Whether the fit stopped early (on an eval set or held-out training queries).
    best_iteration_ : int or None
        0-based best round under early stopping, else ``None``.
    evals_result_ : dict
        ``{"valid_i": {"<metric>@K": [value per round], ...}}`` for the i-th eval set, with the
        watched value second (e.g. ``"standardized_expected_ndcg@5"``); empty without eval sets.
    feature_importances_ : ndarray of shape (n_features,)
        Total split gain of each feature, divided by the sum over features (all zeros when no
        tree has a split).
    n_features_in_ : int
        Number of features seen in :meth:`fit`.
    feature_names_in_ : ndarray of shape (n_features,)
        Feature names, when ``X`` had string column names.
    group_column_ : str or None
        The DataFrame column :meth:`fit` read the query ids from (``group="qid"``), which is not
        a feature: :meth:`predict` drops it from ``X``; ``None`` when ``group`` held the ids.

    Notes
    -----
    The estimator type tag is ``None``: a ranker's scores are comparable only within a query
    and its :meth:`score` is NDCG@K, so meta-estimators that require a regressor refuse it.
    Sparse ``X``, NaN, and categorical columns: :doc:`/guide/ranker`.

    Examples
    --------
    >>> from gbdt_plrank import PLRankRanker
    >>> ranker = PLRankRanker(backend="xgboost", K=5, n_estimators=200, random_state=0)
    >>> ranker.fit(X, y, group=qid, eval_set=[(X_val, y_val, qid_val)], early_stopping_rounds=20)
    ... # doctest: +SKIP
    >>> ranker.score(X_test, y_test, group=qid_test)  # mean NDCG@5  # doctest: +SKIP
    """

    _EARLIER_VALUES: ClassVar[dict[str, Any]] = {"deep_weight": 1.0}

    def __init__(
        self,
        *,
        backend: str = RANKER.backend,
        K: int = DEFAULTS.K,
        train_K: int | str = DEFAULTS.train_K,
        N: int | str = DEFAULTS.N,
        metric: str = DEFAULTS.metric,
        gain: str = DEFAULTS.gain,
        hessian: str = DEFAULTS.hessian,
        sampler: str = DEFAULTS.sampler,
        noise: str = DEFAULTS.noise,
        query_subsample: float = DEFAULTS.query_subsample,
        deep_weight: float | str = DEEP_WEIGHT,
        fairness: str | None = DEFAULTS.fairness,
        fairness_weight: float = DEFAULTS.fairness_weight,
        device: str = "cpu",
        empty_queries: str = DEFAULTS.empty_queries,
        n_estimators: int = RANKER.n_estimators,
        learning_rate: float = RANKER.learning_rate,
        max_depth: int | None = RANKER.max_depth,
        num_leaves: int | None = RANKER.num_leaves,
        min_child_weight: float | None = RANKER.min_child_weight,
        reg_alpha: float | None = RANKER.reg_alpha,
        reg_lambda: float | None = RANKER.reg_lambda,
        min_split_gain: float | None = RANKER.min_split_gain,
        subsample: float | None = RANKER.subsample,
        colsample_bytree: float | None = RANKER.colsample_bytree,
        n_jobs: int | None = None,
        stopping_metric: str = RANKER.stopping_metric,
        min_rounds: int | str = RANKER.min_rounds,
        min_delta: float = RANKER.min_delta,
        patience_rate: float = RANKER.patience_rate,
        early_stopping: bool = RANKER.early_stopping,
        validation_fraction: float = RANKER.validation_fraction,
        random_state: int | np.random.RandomState | None = None,
        params: Mapping[str, Any] | None = None,
        verbose: bool | int = False,
    ) -> None:
        self._store(locals())

    def __sklearn_tags__(self) -> Tags:
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        return tags

    # ----------------------------------------------------------------------------------------
    # Training and prediction
    # ----------------------------------------------------------------------------------------
    def fit(
        self,
        X: Any,
        y: Any,
        group: Any = None,
        *,
        item_groups: Any = None,
        sample_weight: Any = None,
        eval_set: Sequence[tuple[Any, ...]] | None = None,
        early_stopping_rounds: int | None = None,
    ) -> PLRankRanker:
        """Train the booster with the PL-Rank objective.

        Parameters
        ----------
        X : array-like, DataFrame or sparse matrix of shape (n_samples, n_features)
            Numeric features, finite; NaN marks a missing value. A DataFrame's column names
            become the booster's feature names.
        y : array-like of shape (n_samples,)
            Graded relevance labels: finite, ``>= 0`` (``<= 31`` with ``gain="exp"``).
        group : array-like or str
            Per-row query ids, group sizes, or a DataFrame column of query ids, read as the module
            docstring says (:mod:`gbdt_plrank.ranker`). Required: ``None`` raises;
            ``np.zeros(n_samples)`` makes all rows one query. In ``GridSearchCV``, route it with
            metadata routing (:doc:`/guide/ranker`, "Cross-validation with query groups").
        item_groups : array-like of shape (n_samples,) or None, default None
            With ``fairness="group-disparity"`` only: every row's item group, an integer id >= 0,
            two or more distinct ids (e.g. a protected attribute, 0 or 1).
        sample_weight : array-like or None, default None
            Query weights, finite and >= 0, as XGBRanker's (one per query in sorted-id order, or
            one per row, the same within a query); eval sets are not weighted.
        eval_set : list of tuples (X, y, group) or (X, y, group, item_groups), default None
            Validation sets, grouped as ``fit``'s (with item groups under group fairness), scored
            every round into ``evals_result_``: the metric@K and what ``stopping_metric`` names.
        early_stopping_rounds : int or None, default None
            Stop when the value ``stopping_metric`` names has not improved on the last eval set
            (or the held-out queries) for this many rounds, and keep the best round, none
            before ``min_rounds``.

        Returns
        -------
        self : PLRankRanker
            Fitted: the booster in ``booster_``, its history in ``evals_result_``.

        Raises
        ------
        ValueError
            For a parameter or option that breaks its rule, bad features, labels, groups, item
            groups or lengths (each named with its rule), query ids left in ``X`` as a column,
            and ``early_stopping_rounds`` with nothing to watch.
        """
        backend, settings, plan, options, hold_out = self._training(eval_set, early_stopping_rounds)
        return self._train(
            BACKENDS[backend],
            settings,
            plan,
            options,
            X,
            y,
            group,
            eval_set,
            item_groups=item_groups,
            sample_weight=sample_weight,
            hold_out=hold_out,
        )

    def _holds_out(self, eval_set: object, options: PLRankOptions) -> bool:
        """Whether the fit may watch a held-out share of its training queries: without an eval
        set, with ``early_stopping=True``, or ``"auto"`` without fairness (where
        :class:`~gbdt_plrank._estimator.HoldOut` then looks at the data)."""
        if eval_set:
            return False
        if self.early_stopping == "auto":
            return options.fairness is None
        return bool(self.early_stopping)

    @property
    def do_early_stopping_(self) -> bool:
        """Whether the fit stopped early, on an eval set or on held-out training queries (then
        ``best_iteration_`` holds the kept round; scikit-learn's ``HistGradientBoosting*`` name)."""
        return self.best_iteration_ is not None

    def _keep(self, trained: Trained, *, plan: Plan, n_queries: int) -> None:
        """Store the fitted attributes; warn when no tree has a split."""
        super()._keep(trained, plan=plan, n_queries=n_queries)
        if not self.feature_importances_.any():
            rounds = BACKENDS[self.backend].boosted_rounds(trained.booster)
            hint = self._subsample_hint(plan.objective, rounds=rounds, n_queries=n_queries)
            warnings.warn(
                f"the trained {self.backend} model has no split: every tree is one leaf, so "
                f"every document gets the same score. {hint or self._no_split_hint()}",
                UserWarning,
                stacklevel=caller_level(),
            )

    @staticmethod
    def _subsample_hint(objective: PLRankObjective, *, rounds: int, n_queries: int) -> str:
        """The no-split warning's cause when ``query_subsample`` kept too few queries: every
        round's kept queries are recounted from their streams (:func:`kept_query_counts`)."""
        fraction = objective.options.query_subsample
        if fraction == 1.0 or rounds == 0:
            return ""
        counts = kept_query_counts(
            seed=objective.seed, rounds=rounds, n_queries=n_queries, fraction=fraction
        )
        if counts.any():
            return ""
        return (
            f"query_subsample={fraction} kept no query in any of the {rounds} rounds (each of "
            f"the {n_queries} training queries is kept with probability {fraction} a round, "
            f"{fraction * n_queries:.3g} queries a round on average), so every gradient was 0: "
            f"raise query_subsample, to well above 1 / {n_queries} = {1 / n_queries:.3g}."
        )

    def _no_split_hint(self) -> str:
        """What the no-split warning suggests, given the ``min_child_weight`` in use."""
        mcw = self.min_child_weight
        if mcw is None:
            default = "1" if self.backend == "xgboost" else "0.001"
            return (
                f"PL-Rank's Hessians are small, and a leaf needs their sum to reach "
                f"min_child_weight (the {self.backend} default, {default}): lower it, e.g. "
                f"min_child_weight=0.01, or give more rows."
            )
        if mcw > 0.01:
            default = " (the default)" if mcw == RANKER.min_child_weight else ""
            return (
                f"PL-Rank's Hessians are small, and a leaf needs their sum to reach "
                f"min_child_weight={mcw}{default}: lower it, e.g. to 0.01, or give more rows."
            )
        return (
            f"min_child_weight={mcw} is already small, so no split improved the objective "
            f"enough: check that the features vary between the documents of a query and that "
            f"the labels do, or give more rows or rounds (min_split_gain and reg_lambda also "
            f"hold splits back)."
        )

    #: Builds the objective from ``(options, seed=, n_jobs=)``.
    _objective_type = PLRankObjective
    #: The way of training, whose stopping rule ``stopping_metric`` names
    #: (:data:`~gbdt_plrank._training.plrank_plan.TRAINERS`).
    _trainer = "booster"

    def _training(
        self, eval_set: object, early_stopping_rounds: object
    ) -> tuple[str, BoosterSettings, Plan, PLRankOptions, HoldOut | None]:
        """The checked backend name, booster settings, training plan and options of a fit, and
        the share of the training queries it may hold out to stop on (None: none).

        Everything but the data is checked here, before any data is read: the tree and
        stopping parameters by their one schema (:class:`~gbdt_plrank._backends.RankerParameters`,
        with ``fit``'s ``early_stopping_rounds``), once, and the PL-Rank options by theirs
        (:meth:`~gbdt_plrank._estimator.PolicyRanker._plan` builds the plan).
        """
        parameters = RankerParameters.checked(
            **{
                name: getattr(self, name)
                for name in RankerParameters.model_fields
                if name != "early_stopping_rounds"
            },
            early_stopping_rounds=early_stopping_rounds,
        )
        options = self._options()
        held_out = self._holds_out(eval_set, options)
        if (
            parameters.early_stopping is True or held_out
        ) and parameters.early_stopping_rounds is None:
            parameters = parameters.model_copy(update={"early_stopping_rounds": HELD_OUT_PATIENCE})
        plan, booster_seed = self._plan(
            options,
            parameters,
            eval_set=eval_set,
            trainer=self._trainer,
            stopping_metric=parameters.stopping_metric,
            objective_type=self._objective_type,
            device=self.device,
            held_out=held_out,
        )
        hold_out = (
            HoldOut(
                parameters.validation_fraction,
                booster_seed,
                automatic=parameters.early_stopping == "auto",
                early_stopping_rounds=early_stopping_rounds,
            )
            if held_out
            else None
        )
        return parameters.backend, self._settings(booster_seed), plan, options, hold_out

    def _settings(self, seed: int) -> BoosterSettings:
        """The booster settings, with ``params`` checked to be a dict with string keys.

        The tree settings are passed on as given (a NumPy scalar stays one), once their rules
        have passed (:meth:`_training`).
        """
        params = {} if self.params is None else self.params
        if not isinstance(params, Mapping) or not all(isinstance(k, str) for k in params):
            raise ValueError(
                f"params must be None or a dict of native {self.backend} parameters with string "
                f"keys, but {params!r} is given."
            )
        if self.device != "cpu" and self.backend == "xgboost":
            params = {**params, "device": self.device}
        return BoosterSettings(
            trees={name: getattr(self, name) for name in TREE_SETTINGS},
            n_threads=booster_threads(self.n_jobs),
            seed=seed,
            params=dict(params),
        )
