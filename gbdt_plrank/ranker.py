r"""``PLRankRanker``: a scikit-learn ranker trained with PL-Rank, on XGBoost or LightGBM.

XGBoost's ``XGBRanker`` refuses callable objectives and LightGBM's ``LGBMRanker`` hands the
query groups only to four-argument ones, so this estimator calls ``xgboost.train`` /
``lightgbm.train`` itself with a :class:`~gbdt_plrank.PLRankObjective`. Its margins define a
Plackett-Luce policy, and besides scores it offers what only a stochastic ranker can: sampled
rankings, expected exposure and the expected metric of that policy.

How ``group=`` is read (every method, the same rule as :mod:`gbdt_plrank.metrics`):

- per-row query ids, length ``n_rows``: rows may come in any order; they are sorted stably by
  query id inside, so shuffling whole queries, or interleaving them while each query's rows keep
  their relative order, gives the same model;
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
from dataclasses import replace
from typing import Any, ClassVar

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils import Tags
from sklearn.utils.validation import check_is_fitted, validate_data

from ._boosters import (
    BACKENDS,
    Backend,
    BoosterSettings,
    Plan,
    QueryFields,
    Split,
    Trained,
    backend_of_booster,
    query_weights,
)
from ._groups import drop_group_column, ranker_group, require_group, resolve_groups
from ._training.fairness import checked_item_groups
from ._training.objective import PLRankObjective
from ._training.options import PLRankOptions
from ._training.policy_methods import MetricEstimate, PolicyMethods, seeds_from
from ._training.run import STOPPING_METRICS, plrank_plan
from ._util.threads import booster_threads
from ._util.validation import (
    X_RULES,
    check_choice,
    check_feature_columns,
    check_feature_values,
    check_labels,
    check_positive_int,
    check_verbose,
)

__all__ = ["RANKER_BACKENDS", "MetricEstimate", "PLRankRanker", "PolicyRanker"]

#: The backends that take a callable objective (CatBoost has no hook for one).
RANKER_BACKENDS = ("xgboost", "lightgbm")


def _check_early_stopping(early_stopping_rounds: object, eval_set: object) -> None:
    """``early_stopping_rounds`` is None, or an integer >= 1 with a validation set to watch."""
    if early_stopping_rounds is not None:
        check_positive_int("early_stopping_rounds", early_stopping_rounds)
        if not eval_set:
            raise ValueError(
                f"early_stopping_rounds={early_stopping_rounds} needs a validation set: pass "
                f"eval_set=[(X_val, y_val, group_val)]."
            )


class PolicyRanker(PolicyMethods, BaseEstimator):
    """What the package's rankers share: training through a backend, prediction, the policy.

    A subclass provides the options that the policy's methods read and builds the backend,
    settings and plan of a fit; ``_train`` reads the data, trains and stores the fitted attributes.
    """

    #: How ``X`` is checked (``sklearn.utils.validation.validate_data``'s options).
    _x_rules: ClassVar[dict[str, object]] = X_RULES

    def __sklearn_tags__(self) -> Tags:
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        tags.input_tags.sparse = True
        return tags

    def _train(
        self, backend: Backend, settings: BoosterSettings, plan: Plan, options: PLRankOptions,
        X: Any, y: Any, group: Any, eval_set: Sequence[tuple[Any, ...]] | None,
        item_groups: Any = None, sample_weight: Any = None,
    ) -> Any:
        """Train on ``(X, y, group)`` watching ``eval_set``; return ``self``, fitted.

        ``options`` are the fit's checked options, from which ``plan`` was built.
        """
        column = group if isinstance(group, str) else None
        X, group = ranker_group(X, group)
        data = self._query_data(
            X, y, group, item_groups, options=options, reset=True, sample_weight=sample_weight
        )
        evals = [
            self._eval_data(i, item, options, column) for i, item in enumerate(eval_set or ())
        ]
        trained = backend.train(settings, data, evals, plan)
        self.group_column_ = column
        self._keep(trained)
        return self

    def _keep(self, trained: Trained) -> None:
        """Store the fitted attributes of ``trained`` (``n_features_in_`` is already set)."""
        self.booster_ = trained.booster
        self.best_iteration_ = trained.best_iteration
        self.evals_result_ = trained.history
        self.feature_importances_ = backend_of_booster(trained.booster).importances(
            trained.booster, self.n_features_in_
        )

    def _eval_data(
        self, i: int, item: object, options: PLRankOptions, column: str | None
    ) -> Split:
        """``eval_set[i]`` checked against the training features and grouped by query.

        ``column`` is the training set's query-id column (None: none), which is not a feature.
        """
        if not isinstance(item, (tuple, list)) or len(item) not in (3, 4):
            given = type(item).__name__
            if isinstance(item, (tuple, list)):
                given += f" of length {len(item)}"
            raise ValueError(
                f"eval_set[{i}] must be a tuple (X, y, group) or (X, y, group, item_groups), "
                f"but a {given} is given: every eval set needs the query groups of its rows."
            )
        X, y, group, item_groups = (*item, None)[:4]
        if group is None:
            raise ValueError(
                f"eval_set[{i}] needs the query groups of its rows, but its group is None, which "
                f"would score all its rows as one query: pass (X, y, group), group the per-row "
                f"query ids (or group sizes, or the name of a column of a DataFrame X); "
                f"group=np.zeros(n_rows) if all rows are one query."
            )
        X, group = ranker_group(
            X if isinstance(group, str) else drop_group_column(X, column), group,
            where=f" of eval_set[{i}]",
        )
        return self._query_data(
            X, y, group, item_groups, options=options, reset=False,
            name=f"eval_set[{i}] item_groups",
        )

    def _query_data(
        self, X: Any, y: Any, group: Any, item_groups: Any, *, options: PLRankOptions,
        reset: bool, name: str = "item_groups", sample_weight: Any = None,
    ) -> Split:
        """Checked features, labels, item groups and query weights, grouped by query
        (``reset``: training).

        ``name`` names the item groups in errors.
        """
        given = X
        X, y = self._checked_X(X, y, reset=reset)
        labels = check_labels(y, gain=options.gain, signed=options.signed_labels)
        require_group(given, group, needed_by="fit")
        ids = checked_item_groups(options.fairness_spec, item_groups, X.shape[0], name=name)
        groups = resolve_groups(group, X.shape[0])
        data = Split.grouped(X, labels, groups, ids)
        names = getattr(self, "feature_names_in_", None)
        weights = None
        if sample_weight is not None:
            w = np.asarray(sample_weight, dtype=np.float64)
            if w.ndim == 1 and w.shape[0] == X.shape[0]:
                w = groups.to_sorted(w)
            weights = query_weights(QueryFields(data.group_ptr, data.y, w))
            if not weights.any():
                raise ValueError(
                    "sample_weight must be > 0 for at least one query, but every weight is zero."
                )
        return replace(
            data, feature_names=None if names is None else tuple(names), weights=weights
        )

    def _checked_X(self, X: Any, y: Any = "no_validation", *, reset: bool) -> Any:
        """``X``, or ``(X, y)`` when ``y`` is given, checked by ``validate_data``.

        Columns must be numeric (:func:`~gbdt_plrank._util.validation.check_feature_columns`) and
        values finite, NaN where the ranker takes missing values (its ``allow_nan`` tag).
        """
        check_feature_columns(X)
        with_y = {} if isinstance(y, str) and y == "no_validation" else {"y": y, "y_numeric": True}
        out = validate_data(self, X, reset=reset, ensure_all_finite=False, **with_y,
                            **self._x_rules)
        X = out[0] if with_y else out
        check_feature_values(X, allow_nan=self.__sklearn_tags__().input_tags.allow_nan)
        return out

    def _options(self) -> PLRankOptions:
        """The checked PL-Rank options of the ranker's parameters (those it has; defaults else)."""
        return PLRankOptions.checked(**{
            name: getattr(self, name) for name in PLRankOptions.model_fields if hasattr(self, name)
        })

    def _fitted_backend(self) -> Backend:
        check_is_fitted(self)
        return backend_of_booster(self.booster_)

    def predict(self, X: Any) -> np.ndarray:
        """Raw margins of the model: higher ranks first within a query.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features, as in ``fit``. A DataFrame may hold the query-id column that ``fit`` read
            its groups from (``group="qid"``): it is dropped, as it is not a feature.

        Returns
        -------
        float64 array of shape (n_samples,)
            The policy's log-scores :math:`m(d)`.
        """
        backend = self._fitted_backend()
        X = self._checked_X(
            drop_group_column(X, getattr(self, "group_column_", None)), reset=False
        )
        return backend.margins(self.booster_, X, n_threads=booster_threads(self.n_jobs))


class PLRankRanker(PolicyRanker):
    r"""Gradient-boosted trees trained to maximise the expected NDCG of a Plackett-Luce policy.

    The booster's raw margin :math:`m(d)` of a document is the log-score of a stochastic ranking
    policy :math:`\pi`: at each rank :math:`k = 1..\min(K, D)` it places an unplaced document
    :math:`d` of the query with probability :math:`e^{m(d)} / \sum_{d'\,\mathrm{unplaced}}
    e^{m(d')}`. Every boosting round estimates the gradient and Hessian of
    :math:`-\mathbb{E}_{y \sim \pi}[\mathrm{metric@K'}(y)]`, at the training cut-off
    :math:`K'` = ``train_K`` (2K by default), from ``N`` sampled rankings per query
    (PL-Rank-3, Oosterhuis 2022; Hessian of Kang, de Rijke and Oosterhuis 2024). Ranking by
    :meth:`predict` is the policy's most likely ranking.

    ``__init__`` only stores its arguments; they are checked by :meth:`fit`.

    Parameters
    ----------
    backend : {"xgboost", "lightgbm"}, default "xgboost"
        The booster library.
    K : int, default 5
        Cut-off of the metric the ranker is judged by: the metric@K of its eval sets and
        :meth:`score`, its policy's expected metric@K (early stopping) and the length of the
        policy's rankings (:meth:`sample_rankings`, :meth:`expected_exposure`,
        :meth:`expected_metric`).
    train_K : int or "auto", default "auto"
        Cut-off of the expected metric the boosting rounds maximise, the length of the rankings
        sampled for training (:func:`gbdt_plrank.training_cutoff`): ``"auto"`` is 2K (K with
        ``fairness``), so that the documents just below the cut-off get gradient too, as the
        libraries' LambdaMART objectives do.
    N : int, default 50
        Rankings sampled per query and boosting round; the estimates' noise falls as
        :math:`1/\sqrt{N}`. No upper bound, but a round's sampling takes time linear in ``N``
        (MQ2008's training split: about 2 s per round at N = 10,000 on one thread). Ctrl-C
        takes effect between calls of the compiled code, each about a third of a second, or
        one query's N rankings if that takes longer (Kang et al. 2024 train with N = 200).
    metric : {"ndcg", "dcg", "precision"}, default "ndcg"
        The metric whose expectation is maximised (at ``train_K``) and by which the ranker is
        judged (at ``K``).
    gain : {"exp", "linear"}, default "exp"
        Gain :math:`2^\ell - 1` or :math:`\ell` of a label :math:`\ell`, for training, the
        evaluation metric, :meth:`score` and :meth:`expected_metric`.
    hessian : {"abs", "raw", "clip", "constant"}, default "abs"
        What the booster receives as Hessian (see :func:`gbdt_plrank.plrank_grad_hess`).
    sampler : {"auto", "tree", "race"}, default "auto"
        How the rankings are drawn (see :func:`gbdt_plrank.plrank_grad_hess`).
    fairness : {None, "expected-exposure", "disparity", "group-disparity"}, default None
        Maximise the expected metric@K minus ``fairness_weight`` times a fairness loss of the
        exposures at K (see :func:`gbdt_plrank.plrank_grad_hess`): ``"expected-exposure"`` the
        expected exposure loss EE-L (equal expected exposure within relevance grades, Diaz et
        al. 2020), which only a stochastic ranker can bring to 0; ``"disparity"`` the
        individual disparity of the 2021 PL-Rank experiments (exposure proportional to the
        label's gain); ``"group-disparity"`` the squared differences of exposure per unit of
        merit between item groups (give ``item_groups`` to :meth:`fit`). Measure them with
        :meth:`expected_exposure` and :func:`gbdt_plrank.metrics.expected_exposure_loss`,
        :func:`~gbdt_plrank.metrics.relevance_proportional_disparity`,
        :func:`~gbdt_plrank.metrics.group_disparity`.
    device : {"cpu", "cuda"}, default "cpu"
        Where the objective's estimate is computed (XGBoost's parameter name): ``"cuda"`` runs
        it on the GPU (the ``gpu`` extra; see :func:`gbdt_plrank.plrank_objective` for what it
        allows) and trains XGBoost with ``device="cuda"`` too; LightGBM trains where its own
        parameters say (``params={"device_type": ...}``) and gets the estimate as host arrays.
    fairness_weight : float, default 1.0
        Weight :math:`w \ge 0` of the exposure loss; used only with ``fairness``.
    empty_queries : {"skip", "uniform"}, default "skip"
        With ``fairness``, what the fairness term does with the queries that have no relevant
        document. ``"skip"``: nothing, they get no gradient (as without fairness) and count 0
        in the eval sets' fairness loss. ``"uniform"`` (``"expected-exposure"`` only): EE-L's
        target there, equal exposure for every document, which pulls their margins together;
        the trees are shared by all queries, so on data with many such queries (MQ2008) it
        flattens the policy of the queries with relevant documents too, and a temperature on
        a relevance model then does better on both counts. The disparities are 0 on such
        queries either way.
    n_estimators : int, default 100
        Boosting rounds (at most, with early stopping).
    learning_rate : float, default 0.1
        Shrinkage (XGBoost ``eta``, LightGBM ``learning_rate``).
    max_depth : int or None, default None
        Tree depth limit; ``None`` keeps the booster's default (XGBoost 6, LightGBM none).
    num_leaves : int or None, default None
        Leaves per tree (XGBoost ``max_leaves``, LightGBM ``num_leaves``); ``None`` keeps the
        booster's default.
    min_child_weight : float or None, default None
        Minimum Hessian sum in a leaf (LightGBM ``min_sum_hessian_in_leaf``); ``None`` keeps
        the booster's default, XGBoost 1 and LightGBM 0.001. PL-Rank's Hessians are small
        (MQ2008 at equal scores: median 0.005 per document, 0.15 per query), so with
        XGBoost's 1 a small training set may not split at all: :meth:`fit` then warns. The
        comparisons of this package use 0.1.
    reg_alpha, reg_lambda : float or None, default None
        L1 and L2 penalties on leaf weights (XGBoost ``alpha``/``lambda``, LightGBM
        ``lambda_l1``/``lambda_l2``).
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
        What early stopping (``fit(early_stopping_rounds=)``) watches, each library's rule on
        the eval sets: ``"policy"`` the policy's expected metric@K, minus ``fairness_weight``
        times the fairness loss with ``fairness``, from 100 rankings per query drawn from the
        same streams every round (:attr:`gbdt_plrank.PLRankObjective.expected_metric`);
        ``"standardized"`` the same for the margins scaled to a within-query spread of 3, blind
        to the rounds that only sharpen the policy
        (:attr:`gbdt_plrank.PLRankObjective.standardized_metric`);
        ``"ranking"`` the metric@K of the ranking by score; ``"auto"`` is ``"standardized"``
        here (``"policy"`` with ``fairness``, whose policy's spread is part of what is trained)
        and ``"ranking"`` for :class:`~gbdt_plrank.dask.DaskPLRankRanker`. The policy's values
        are smooth in the margins, where the ranking's metric jumps from round to round and
        stops training at early noisy peaks, at the price of sampling the eval set's rankings
        every round; the standardised one does not wait for the rounds that only sharpen the
        policy.
    random_state : int, RandomState or None, default None
        Seeds the objective's sampled rankings (and those of its expected metric) and the
        booster's own randomness; the same int gives the same model. ``None`` draws fresh seeds on
        every fit.
    params : dict or None, default None
        Further native parameters of the backend, applied after the settings above (e.g.
        ``{"tree_method": "approx"}`` or ``{"min_data_in_leaf": 5}``). The objective, the
        evaluation metric and the number of rounds are the ranker's and may not be set here.
        Other keys are passed unchanged: XGBoost warns about keys it does not use, LightGBM
        reports them only when its log is on (``{"verbose": 0}``).
    verbose : bool or int, default False
        Report a fit's progress: ``True`` or N >= 1 prints the eval sets' values every N rounds
        (``True``: every round) in the booster's own format, as XGBoost's ``verbose_eval`` and
        LightGBM's ``log_evaluation(N)`` do (``[10]\tvalid_0-ndcg@5:0.70123`` from XGBoost,
        ``[10]\tvalid_0's ndcg@5: 0.70123`` from LightGBM, which counts rounds from 1); without
        ``eval_set`` a progress bar of the rounds is shown on stderr. ``False`` (or 0) is quiet,
        as scikit-learn's estimators are. On a Dask cluster the workers print: XGBoost's the values of
        the whole eval sets, LightGBM's each worker those of its own part; no bar.

    Attributes
    ----------
    booster_ : xgboost.Booster or lightgbm.Booster
        The trained booster, holding exactly the rounds :meth:`predict` uses (up to the best
        round under early stopping). Its raw predictions are :meth:`predict`'s; it can be saved
        and loaded with the library's own functions.
    best_iteration_ : int or None
        0-based best round under early stopping, else ``None``.
    evals_result_ : dict
        ``{"valid_i": {"<metric>@K": [value per round], "expected_<metric>@K": [...]}}`` for
        the i-th eval set (the second with ``stopping_metric="policy"``, or
        ``"standardized_expected_<metric>@K"`` with ``"standardized"``, the default without
        ``fairness``; empty without eval sets), e.g. ``"ndcg@5"`` and
        ``"standardized_expected_ndcg@5"``.
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
    scikit-learn 1.9 has no estimator type for rankers, and a ranker is not a regressor: its
    scores are comparable only within a query (adding a constant per query changes nothing) and
    its :meth:`score` is NDCG@K, not :math:`R^2`. The estimator type tag is therefore left at
    ``None``, so meta-estimators that require a regressor (stacking, voting) refuse it.

    With sparse ``X``, XGBoost treats entries that are not stored as missing and LightGBM as 0,
    each library's own rule; NaN is missing for both. Infinite values are refused.

    Features are numbers. A pandas DataFrame's column names become the booster's feature names
    (XGBoost ``feature_names`` and ``get_score()``, LightGBM ``feature_name()``, kept in saved
    models) and ``feature_names_in_``; :meth:`predict` then checks the columns' names and order
    as scikit-learn estimators do. Categorical, string and other non-numeric columns are
    refused with an error that names the column: the ranker reorders and checks rows as one
    float matrix, so the boosters' native categorical splits are not used. Encode such a
    column first (``X[c].cat.codes`` or ``OrdinalEncoder``: the trees split the codes as
    numbers; one-hot columns for a few categories).

    Examples
    --------
    >>> from gbdt_plrank import PLRankRanker
    >>> ranker = PLRankRanker(backend="xgboost", K=5, n_estimators=200, random_state=0)
    >>> ranker.fit(X, y, group=qid, eval_set=[(X_val, y_val, qid_val)], early_stopping_rounds=20)
    ... # doctest: +SKIP
    >>> ranker.score(X_test, y_test, group=qid_test)  # mean NDCG@5  # doctest: +SKIP
    """

    def __init__(
        self,
        *,
        backend: str = "xgboost",
        K: int = 5,
        train_K: int | str = "auto",
        N: int = 50,
        metric: str = "ndcg",
        gain: str = "exp",
        hessian: str = "abs",
        sampler: str = "auto",
        fairness: str | None = None,
        fairness_weight: float = 1.0,
        device: str = "cpu",
        empty_queries: str = "skip",
        n_estimators: int = 100,
        learning_rate: float = 0.1,
        max_depth: int | None = None,
        num_leaves: int | None = None,
        min_child_weight: float | None = None,
        reg_alpha: float | None = None,
        reg_lambda: float | None = None,
        min_split_gain: float | None = None,
        subsample: float | None = None,
        colsample_bytree: float | None = None,
        n_jobs: int | None = None,
        stopping_metric: str = "auto",
        random_state: int | np.random.RandomState | None = None,
        params: Mapping[str, Any] | None = None,
        verbose: bool | int = False,
    ) -> None:
        self.backend = backend
        self.K = K
        self.train_K = train_K
        self.N = N
        self.metric = metric
        self.gain = gain
        self.hessian = hessian
        self.sampler = sampler
        self.fairness = fairness
        self.fairness_weight = fairness_weight
        self.device = device
        self.empty_queries = empty_queries
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.max_depth = max_depth
        self.num_leaves = num_leaves
        self.min_child_weight = min_child_weight
        self.reg_alpha = reg_alpha
        self.reg_lambda = reg_lambda
        self.min_split_gain = min_split_gain
        self.subsample = subsample
        self.colsample_bytree = colsample_bytree
        self.n_jobs = n_jobs
        self.stopping_metric = stopping_metric
        self.random_state = random_state
        self.params = params
        self.verbose = verbose

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
            Per-row query ids (rows in any order), or group sizes when its length differs from
            ``n_samples`` and it sums to ``n_samples``, or with a pandas DataFrame ``X`` the
            name of its column of query ids (``group="qid"``: the column is not a feature, and
            :meth:`predict` drops it). Required: ``None`` raises (all rows as one query would
            train on a single query, silently); ``np.zeros(n_samples)`` makes all rows one
            query. In ``GridSearchCV`` or ``cross_val_score``, route the query ids with
            scikit-learn's metadata routing (``set_fit_request(group="groups")``, the user
            guide's "Cross-validation with query groups").
        item_groups : array-like of shape (n_samples,) or None, default None
            With ``fairness="group-disparity"`` (and only then): the item group of every row, an
            integer id >= 0, two or more distinct ids (e.g. a protected attribute, 0 or 1).
            Exposure per unit of merit is compared between the groups within each query.
        sample_weight : array-like or None, default None
            Query weights, finite and >= 0, as XGBRanker's: one per row, the same for every
            row of a query, or one per query, in the order of the sorted query ids (of the
            given sizes). A query's weight scales its gradient and Hessian, so it counts as
            that many copies of the query. Eval sets are not weighted.
        eval_set : list of tuples (X, y, group) or (X, y, group, item_groups), default None
            Validation sets with their query groups (read as ``group``; a column name reads a
            column of that set's ``X``), scored after every round (the metric@K of the ranking, and the
            value ``stopping_metric`` names: the standardised or the plain policy's expected
            metric@K, minus the weighted fairness loss with ``fairness``); their history is ``evals_result_``, under the
            names ``"valid_0"``, ``"valid_1"``, ... With ``fairness="group-disparity"`` each
            entry brings its rows' item groups as a fourth element.
        early_stopping_rounds : int or None, default None
            Stop when the metric ``stopping_metric`` names has not improved for this many
            rounds and keep the best round. XGBoost watches the last eval set; LightGBM stops
            as soon as any eval set stops improving (each library's rule).

        Returns
        -------
        self

        Raises
        ------
        ValueError
            On an unknown backend or option, a tree setting that breaks its rule (e.g.
            ``learning_rate`` a finite number > 0, ``num_leaves`` an integer >= 2), features
            that are infinite or in a non-numeric column, labels that are NaN or negative,
            lengths that differ, a missing group (for the training set or an eval set), a
            group that is neither ids nor sizes nor a column of X, query ids left in X as a
            column, early stopping without eval set,
            fairness options that break their rules (see ``fairness``), and item groups
            given without group fairness, missing with it (for the training set or an eval
            set), or of the wrong length, NaN, negative, non-integer or a single group.
        """
        backend, settings, plan, options = self._training(eval_set, early_stopping_rounds)
        return self._train(
            BACKENDS[backend], settings, plan, options, X, y, group, eval_set,
            item_groups=item_groups, sample_weight=sample_weight,
        )

    def _keep(self, trained: Trained) -> None:
        """Store the fitted attributes; warn when no tree has a split."""
        super()._keep(trained)
        if not self.feature_importances_.any():
            warnings.warn(
                f"the trained {self.backend} model has no split: every tree is one leaf, so "
                f"every document gets the same score. PL-Rank's Hessians are small, and a leaf "
                f"needs their sum to reach min_child_weight (now "
                f"{'the library default' if self.min_child_weight is None else self.min_child_weight}"
                f"; XGBoost's is 1): lower it, e.g. min_child_weight=0.01, or give more rows.",
                UserWarning, stacklevel=3,
            )

    #: Builds the objective from ``(options, seed=, n_jobs=)``.
    _objective_type = PLRankObjective
    #: What ``stopping_metric="auto"`` watches (``"auto"``: :func:`~gbdt_plrank._training.run.plrank_plan`'s
    #: default for the options).
    _auto_stopping_metric = "auto"

    def _stopping_metric(self) -> str:
        """The checked ``stopping_metric``, with ``"auto"`` resolved."""
        choice = check_choice("stopping_metric", self.stopping_metric, ("auto", *STOPPING_METRICS))
        return self._auto_stopping_metric if choice == "auto" else choice

    def _training(
        self, eval_set: object, early_stopping_rounds: object
    ) -> tuple[str, BoosterSettings, Plan, PLRankOptions]:
        """The checked backend name, booster settings, training plan and options of a fit.

        Everything but the data is checked here, before any data is read; the plan comes from
        the package's one run builder (:func:`gbdt_plrank._training.run.plrank_plan`).
        """
        backend = check_choice("backend", self.backend, RANKER_BACKENDS)
        n_estimators = check_positive_int("n_estimators", self.n_estimators)
        stopping_metric = self._stopping_metric()
        options = self._options()
        _check_early_stopping(early_stopping_rounds, eval_set)
        objective_seed, booster_seed = seeds_from(self.random_state, 2)
        plan = plrank_plan(
            options, stopping_metric=stopping_metric, seed=objective_seed, n_jobs=self.n_jobs,
            n_estimators=n_estimators, early_stopping_rounds=early_stopping_rounds,
            objective_type=self._objective_type, device=self.device,
            verbose=check_verbose("verbose", self.verbose),
        )
        return backend, self._settings(booster_seed), plan, options

    def _settings(self, seed: int) -> BoosterSettings:
        """The booster settings, with ``params`` checked to be a dict with string keys."""
        params = {} if self.params is None else self.params
        if not isinstance(params, Mapping) or not all(isinstance(k, str) for k in params):
            raise ValueError(
                f"params must be None or a dict of native {self.backend} parameters with string "
                f"keys, but {params!r} is given."
            )
        if self.device != "cpu" and self.backend == "xgboost":
            params = {**params, "device": self.device}
        return BoosterSettings.checked(
            learning_rate=self.learning_rate,
            max_depth=self.max_depth,
            num_leaves=self.num_leaves,
            min_child_weight=self.min_child_weight,
            reg_alpha=self.reg_alpha,
            reg_lambda=self.reg_lambda,
            min_split_gain=self.min_split_gain,
            subsample=self.subsample,
            colsample_bytree=self.colsample_bytree,
            n_threads=booster_threads(self.n_jobs),
            seed=seed,
            params=dict(params),
        )
