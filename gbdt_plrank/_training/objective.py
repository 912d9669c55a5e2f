"""PL-Rank objectives that ``xgboost.train`` and ``lightgbm.train`` accept as they are.

The booster-facing calls (groups, labels and weights read from the training set, the
``lgbm_ranker`` form, the per-training-set cache) are those of
:class:`~gbdt_plrank._training.booster_objective.BoosterObjective`. The objective also brings the
evaluation metrics of the model it trains, at the cut-off the model is judged at:
:attr:`PLRankObjective.standardized_metric` (the value of the policy of its standardised
margins, what early stopping watches by default), :attr:`PLRankObjective.expected_metric` (its
policy's value, what the rounds maximise) and :attr:`PLRankObjective.ranking_metric` (the metric
of the ranking by score).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._backends import BACKENDS, QueryFields
from .._groups import boundaries, query_rows
from .._util.threads import thread_count
from .._util.validation import check_seed, float_vector
from . import plrank_grad_hess as _plrank
from .booster_objective import BoosterObjective
from .deep_weights import deep_weights
from .evaluation import ExpectedMetric, RankingMetricEval, StandardizedMetric
from .fairness_spec import FairTerms, checked_item_groups
from .gpu import CudaEstimate, check_device, to_host
from .options import DEFAULTS, PLRankOptions, option_docs

__all__ = ["PLRankObjective", "plrank_objective"]


class PLRankObjective(BoosterObjective):
    r"""A PL-Rank objective: estimated gradient and Hessian of the negative expected metric.

    Each call is one boosting round and draws fresh rankings of length ``train_K``: round ``r``
    samples query ``q`` from the stream keyed by ``(seed, r, q)``, so the same seed gives the
    same model whatever the number of threads. Rounds are counted per training set, from the
    first call on it: inside ``xgboost.cv`` and ``lightgbm.cv``, where the folds take turns, each
    fold draws the streams of its own rounds and gets the model it gets when trained alone. A
    set seen again counts on; :meth:`reset` forgets every set.

    A training that continues a booster of ``r`` rounds must start at round ``r`` to give the
    model of training straight through. With ``lightgbm.train(init_model=booster)`` (and
    ``lightgbm.cv``) the objective reads ``r`` from the training Dataset itself; XGBoost does
    not tell it, so call :meth:`continue_from` first. A first call on a training set whose
    margins do not start at one base score (after the DMatrix's own ``base_margin``) when the
    round is not known warns, naming :meth:`continue_from`. With ``fairness`` the fairness loss
    is subtracted (:func:`plrank_grad_hess` has the losses). Build it with
    :func:`plrank_objective`.

    Attributes
    ----------
    options : PLRankOptions
        The validated options.
    K : int
        The cut-off the model is judged at (its evaluation metrics').
    train_K : int
        The cut-off it trains at.
    seed : int
        Seed of the sampled rankings.
    round : int
        The round the next call on the training set called last draws (its round count).
    device : {"cpu", "cuda"}
        Where the rounds' estimate is computed.
    item_groups : int64 array of shape (n,) or None
        The item groups of the training rows, for a training set without its own
        (:meth:`set_item_groups`); group fairness only.
    """

    title = "PL-Rank"

    def __init__(
        self,
        options: PLRankOptions,
        *,
        seed: int,
        n_jobs: int | None,
        item_groups: np.ndarray | None = None,
        device: str = "cpu",
    ) -> None:
        super().__init__()
        self.device = check_device(device, sampler=options.sampler, fairness=options.fairness)
        self.options = options
        self.metric = options.trained
        #: The weight on deep documents' gradients the rounds use: ``deep_weight`` resolved
        #: (:attr:`~gbdt_plrank._training.options.PLRankOptions.training_deep_weight`).
        self.deep_weight = options.training_deep_weight
        self.fairness = options.fairness_spec
        self.seed = check_seed("seed", seed)
        if n_jobs is not None:
            thread_count(n_jobs)  # checked now, not at the first round
        self.n_jobs = n_jobs
        self.round = 0
        self._resume = _Resume()
        self.item_groups = checked_item_groups(self.fairness, item_groups, None, required=False)
        self._expected = ExpectedMetric(
            options.judged,
            self.fairness,
            seed=self.seed,
            n_jobs=n_jobs,
            item_groups=self.item_groups_of,
        )
        self._standardized = StandardizedMetric(
            options.judged,
            self.fairness,
            seed=self.seed,
            n_jobs=n_jobs,
            item_groups=self.item_groups_of,
        )
        self._ranking = RankingMetricEval(options.judged)

    @property
    def K(self) -> int:
        return self.options.K

    @property
    def train_K(self) -> int:
        return self.options.training_K

    def __repr__(self) -> str:
        o = self.options
        given = o.model_dump(exclude_defaults=True, exclude={"K"})
        if self.device != "cpu":
            given["device"] = self.device
        extra = "".join(f", {name}={value!r}" for name, value in given.items())
        return f"plrank_objective(K={o.K}{extra}, seed={self.seed})"

    def reset(self) -> None:
        """Start afresh: the next call is round 0, and every data set is read again.

        Forgets the training sets and their round counts, the eval sets the evaluation metrics
        have read (and a round set by :meth:`continue_from`); keeps the item groups given.
        """
        self.round = 0
        self._resume.round = None
        self._training.clear()
        self._current = None
        for metric in (self._expected, self._standardized, self._ranking):
            metric.clear()

    def continue_from(self, booster: Any) -> None:
        """Continue the training of ``booster``: the next call is round ``r``, its round count.

        Round ``r`` of a training draws from the streams ``(seed, r, q)``. A training that
        continues a booster of ``r`` rounds (``xgboost.train(..., xgb_model=booster)``,
        ``lightgbm.train(..., init_model=booster)``) must go on at round ``r`` to give the model
        of training straight through. XGBoost does not tell the objective (the objective warns
        when the first margins of a training set show a continued booster): call this first,
        on this objective, a pickled copy of it or a new one with the same options and seed.
        LightGBM tells it through the training Dataset, so there this is needed only for
        ``LGBMRanker(objective=obj.lgbm_ranker)``. ``r`` is XGBoost's
        ``booster.num_boosted_rounds()`` or LightGBM's ``booster.current_iteration()``. The
        round holds for the next call, whatever training set it brings (also for the copy of
        the objective that ``lightgbm.train`` calls); the calls after it count on from there.

        Raises
        ------
        TypeError
            When ``booster`` is not an ``xgboost.Booster`` or a ``lightgbm.Booster``.
        """
        for name in ("xgboost", "lightgbm"):
            backend = BACKENDS[name]
            if backend.holds_booster(booster):
                self.round = self._resume.round = backend.boosted_rounds(booster)
                return
        raise TypeError(
            f"continue_from takes the xgboost.Booster or lightgbm.Booster the training continues, "
            f"but a {type(booster).__module__}.{type(booster).__name__} is given."
        )

    def set_item_groups(self, data: Any, item_groups: np.ndarray) -> None:
        """Give the item groups of a training or eval set that does not carry its own, with group
        fairness.

        The data objects of the package's backend layer (:class:`~gbdt_plrank.PLRankRanker`, the
        harness) carry their item groups, read with their labels; a ``DMatrix`` or ``Dataset``
        built for ``xgboost.train`` / ``lightgbm.train`` gets them here (these take precedence
        over any the data carries). ``plrank_objective(item_groups=g)`` is the short form for a
        training set without its own.

        Parameters
        ----------
        data : xgboost.DMatrix or lightgbm.Dataset
            The data object itself (recognised by identity, as long as it lives). An eval set
            needs item groups for :attr:`expected_metric`; a training set without them uses
            those given to :func:`plrank_objective`, which then serve it as an eval set too.
        item_groups : array of shape (n,)
            Its rows' group ids, in the order of its rows.

        Raises
        ------
        ValueError
            Without group fairness, or for ids that break the rules of ``item_groups``.
        """
        self._item_groups.put(data, checked_item_groups(self.fairness, item_groups, None))

    def _training_item_groups(self, key: Any) -> np.ndarray | None:
        """The item groups of the training set ``key`` just read, with group fairness: those given
        for it (:meth:`set_item_groups`), else those it carries, else those of
        :func:`plrank_objective` (kept for it, so that they serve it as an eval set too)."""
        n = self._labels.shape[0]
        ids = self.item_groups_of(key, n)
        if ids is None:
            ids = self._current.item_groups
        if ids is None and self.item_groups is not None:
            self._item_groups.put(key, self.item_groups)
            ids = self.item_groups_of(key, n)  # one id per row, or an error naming the data
        if ids is None:
            raise ValueError(
                f"fairness={self.fairness.name!r} needs the item groups of the training rows: "
                "PLRankRanker.fit(..., item_groups=g), plrank_objective(..., item_groups=g) or "
                "obj.set_item_groups(dtrain, g)."
            )
        return ids

    def _new_training_set(self, key: Any) -> _SetState:
        """The state of a training set just read: round 0, its GPU arrays, its fairness terms."""
        state = _SetState()
        if self.device == "cuda":
            state.gpu = CudaEstimate(
                self._rho,
                self._ptr,
                self._weights,
                self.metric.theta(self._ptr),
                N=self.options.training_N,
                hessian=self.options.training_hessian,
                noise=self.options.noise,
                query_subsample=self.options.query_subsample,
                deep_weight=self.deep_weight,
                K=self.metric.K,
            )
        if self.fairness is None:
            return state
        grouped = self.fairness.term.needs_item_groups
        state.terms = self.fairness.terms(
            self._labels,
            self._ptr,
            self.metric.theta(self._ptr),
            gain=self.metric.gain,
            item_groups=self._training_item_groups(key) if grouped else None,
        )
        return state

    @property
    def _gpu(self) -> CudaEstimate | None:
        return None if self._state is None else self._state.gpu

    @property
    def _terms(self) -> FairTerms | None:
        return None if self._state is None else self._state.terms

    def _first_call(self, key: Any, scores: np.ndarray) -> None:
        """A training set's first round: where it starts, if it continues a booster.

        After :meth:`continue_from` the round it set is taken; else the round the library
        records on its data (LightGBM's ``init_model``); else the margins tell whether the
        training continues a booster: they then do not start at one base score (after the
        data's own base margins), and a warning names :meth:`continue_from`.
        """
        if self._resume.round is not None:
            return
        backend = next((b for b in BACKENDS.values() if b.holds_data(key)), None)
        rounds = None if backend is None else backend.continued_rounds(key)
        if rounds is not None:
            self._state.round = rounds
            return
        base = None if backend is None else backend.base_margins(key)
        start = scores if base is None else scores - base
        if start.size == 0 or np.ptp(start) <= 1e-6 * max(1.0, float(np.max(np.abs(scores)))):
            return
        where = f"this {type(key).__name__}" if backend is not None else "LightGBM's labels"
        own = (
            ""
            if backend is not None
            else (" (or an init_score of your own, which LGBMRanker does not pass on)")
        )
        warnings.warn(
            f"the PL-Rank objective's first call on {where} brings margins that do not start "
            f"at one base score (they span {float(np.min(start)):.6g} to "
            f"{float(np.max(start)):.6g}), as a training that continues a booster does{own}. "
            f"Its round count does not reach the objective, which draws the random streams of "
            f"round 0 again: the model differs from training straight through. Call "
            f"obj.continue_from(booster) before a training that continues a booster.",
            UserWarning,
            stacklevel=4,
        )

    def signed_labels(self) -> bool:
        """Negative labels with ``metric="dcg"`` or ``"ndcg"``, ``gain="linear"`` and no
        fairness."""
        return self.metric.signed and self.fairness is None

    def _margins(self, preds: np.ndarray) -> np.ndarray:
        """The margins checked finite; on the GPU a booster's float32 margins stay float32, so
        that the upload moves half the bytes (the device widens them, exactly, and checks them
        there: :class:`~gbdt_plrank._training.gpu.CudaEstimate`)."""
        if self._gpu is None:
            return super()._margins(preds)
        return float_vector("preds", preds)

    def _grad_hess(
        self, scores: np.ndarray, keys: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """One round: fresh rankings from the stream ``(seed, round, keys[q])`` of each query."""
        state = self._state
        resumed = self._resume.take()
        if resumed is not None:
            state.round = resumed
        if state.gpu is not None:
            grad, hess = state.gpu(scores, seed=self.seed, round_=state.round, keys=keys)
        else:
            grad, hess = self.estimate(scores, round_=state.round, keys=keys)
            if self.deep_weight != 1.0:
                grad *= deep_weights(scores, grad, self._ptr, K=self.metric.K, cap=self.deep_weight)
        state.round += 1
        self.round = state.round
        return grad, hess

    def estimate(
        self,
        scores: np.ndarray,
        queries: np.ndarray | None = None,
        *,
        round_: int,
        keys: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """The PL-Rank estimate (:func:`gbdt_plrank._training.plrank_grad_hess.estimate`) on the
        prepared training set.

        As :meth:`~gbdt_plrank._training.booster_objective.BoosterObjective.estimate`: query ``q``
        draws its rankings from the stream ``(seed, round_, keys[q])``, at the training cut-off,
        with the fairness term.
        """
        rho, ptr, terms = self._rho, self._ptr, self._terms
        if queries is not None:
            rows, ptr = query_rows(self._ptr, queries)
            rho = rho[rows]
            terms = None if terms is None else terms.rows(rows)
            keys = queries.astype(np.int64) if keys is None else keys
        o = self.options
        return _plrank.estimate(
            scores,
            rho,
            ptr,
            self.metric,
            hessian=o.training_hessian,
            N=o.training_N,
            seed=self.seed,
            round_=round_,
            sampler=o.sampler,
            noise=o.noise,
            n_jobs=self.n_jobs,
            keys=keys,
            fairness=self.fairness,
            terms=terms,
            query_subsample=o.query_subsample,
        )

    def _weighted(self, grad: Any, hess: Any) -> tuple[Any, Any]:
        """The rows scaled by their query's weight (on the GPU already by :class:`CudaEstimate`)."""
        return (grad, hess) if self._gpu is not None else super()._weighted(grad, hess)

    def _step(
        self, preds: np.ndarray, key: Any, fields: QueryFields, keys: np.ndarray | None = None
    ) -> tuple[Any, Any]:
        """:meth:`BoosterObjective._step`; on the GPU, device arrays for XGBoost, else host ones."""
        grad, hess = super()._step(preds, key, fields, keys)
        if self._gpu is not None and not BACKENDS["xgboost"].holds_data(key):
            return to_host(grad), to_host(hess)
        return grad, hess

    # ----------------------------------------------------------------------------------------
    # Evaluation metrics
    # ----------------------------------------------------------------------------------------
    @property
    def expected_metric(self) -> ExpectedMetric:
        r"""The policy's expected metric@K on an eval set: an evaluation metric for the boosters.

        .. code-block:: python

            obj = plrank_objective(K=5)
            xgboost.train(params, dtrain, 1000, obj=obj, evals=[(dvalid, "valid")],
                          custom_metric=obj.expected_metric, maximize=True,
                          early_stopping_rounds=50)
            lightgbm.train({"objective": obj, "metric": "None"}, train, 1000,
                           valid_sets=[valid], feval=obj.expected_metric,
                           callbacks=[lightgbm.early_stopping(50)])

        Called as ``f(preds, data)`` with the booster's raw margins of an eval set (an
        ``xgboost.DMatrix`` or ``lightgbm.Dataset`` with its query groups), it returns
        ``(name, value)`` to XGBoost and ``(name, value, True)`` to LightGBM (higher is better):
        the mean over the eval set's queries (weighted by their weights, if it has them) of

        .. math:: \mathbb{E}_{y \sim \pi}[\mathrm{metric@K}(y)] - w\, F,

        the value the objective trains for, at the judged cut-off ``K`` with the objective's metric
        and gain, minus the fairness weight times the fairness loss with fairness, from 100 rankings
        per query drawn from the same random streams every round. Its name is
        ``expected_<metric>@<K>``, e.g. ``"expected_ndcg@5"`` (with ``-<w>*<loss>`` appended for a
        weighted fairness term, ``<loss>`` one of ``ee_l``, ``disparity``, ``group_disparity``; with
        group fairness an eval set other than the training set needs its item groups:
        :meth:`set_item_groups`). The ranking's metric@K is a step function of the margins and blind
        to their scale, which sets how random the policy is; this value is smooth in them, so early
        stopping on it does not stop at an early noisy peak.
        """
        return self._expected

    @property
    def standardized_metric(self) -> StandardizedMetric:
        r"""The expected metric of the policy of the standardised margins: a stopping signal.

        .. code-block:: python

            obj = plrank_objective(K=10)
            xgboost.train(params, dtrain, 1000, obj=obj, evals=[(dvalid, "valid")],
                          custom_metric=obj.standardized_metric, maximize=True,
                          callbacks=[xgboost_early_stopping(25, min_rounds=40)])  # eta 0.05

        Called as :attr:`expected_metric`, it returns the same value for the margins
        :math:`3 m / \sigma(m)` of the eval set (their within-query spread, the root mean over
        the queries of the variance of a query's margins, scaled to 3, so that a constant added
        to a query's margins changes nothing;
        :class:`~gbdt_plrank._training.evaluation.StandardizedMetric`), from 40 rankings per query
        drawn from the same streams every round, named ``standardized_expected_<metric>@<K>``.
        The policy's expected metric also grows while the rounds only sharpen the policy, and
        early stopping on it waits for that; this value is blind to the margins' scale, as the
        ranking's metric is, and smooth in them, as the policy's value is, so early stopping on
        it keeps the model when its order stops improving. It is what the README's path and
        :class:`~gbdt_plrank.PLRankRanker` (without fairness) stop on by default.
        """
        return self._standardized

    @property
    def ranking_metric(self) -> RankingMetricEval:
        """The metric@K of the ranking by score on an eval set, called as :attr:`expected_metric`.

        The mean over the queries (weighted by their weights, if any) of the objective's metric
        at the judged cut-off ``K`` with its gain (:mod:`gbdt_plrank.metrics`: ties in input
        order, a query without relevant documents scores 1 for NDCG), named ``<metric>@<K>``,
        e.g. ``"ndcg@5"``.
        """
        return self._ranking

    def lgbm_ranker_metric(
        self, y_true: np.ndarray, y_pred: np.ndarray, weight: Any, group: Any
    ) -> tuple[str, float, bool]:
        """:attr:`expected_metric` for ``LGBMRanker.fit(eval_metric=obj.lgbm_ranker_metric)``.

        LightGBM's scikit-learn wrapper passes the eval set's groups (sizes) to a metric of four
        arguments. It does not say which eval set it scores, so with group fairness only the
        training set itself, whose item groups the objective has, can be scored this way.

        Raises
        ------
        ValueError
            With group fairness, for an eval set other than the training set.
        """
        if group is None:
            raise ValueError("LGBMRanker passed no groups: give eval_group with eval_set.")
        if (
            self.fairness is not None
            and self.fairness.term.needs_item_groups
            and self._item_groups.get(y_true) is None
        ):
            raise ValueError(
                f"fairness={self.fairness.name!r} needs the item groups of each eval set other "
                f"than the training set, but "
                f"LGBMRanker passes its eval metric only labels, scores, weights and group "
                f"sizes, not which eval set they belong to. Use PLRankRanker(backend="
                f"'lightgbm').fit(..., eval_set=[(X, y, group, item_groups)]), or "
                f"lightgbm.train with obj.set_item_groups(valid_set, item_groups)."
            )
        fields = QueryFields(boundaries(group), y_true, weight)
        value = self._expected.of(y_pred, y_true, fields)
        return self._expected.name, value, True


@dataclass
class _SetState:
    """What the PL-Rank objective keeps for one training set (its ``TrainingSet.state``): the
    round its next call draws, the GPU estimate holding its arrays, its fairness terms."""

    round: int = 0
    gpu: CudaEstimate | None = None
    terms: FairTerms | None = None


class _Resume:
    """The round a continued training starts at (:meth:`PLRankObjective.continue_from`), once.

    Shared by the deep copies of an objective: ``lightgbm.train`` deep-copies a callable
    objective and calls the copy, which must start at the round set on the original, and the
    copy that takes it clears it for the original too (a later training starts afresh).
    """

    def __init__(self) -> None:
        self.round: int | None = None

    def take(self) -> int | None:
        """The round set, or None; cleared."""
        taken, self.round = self.round, None
        return taken

    def __deepcopy__(self, memo: dict[int, Any]) -> _Resume:
        return self


@option_docs()
def plrank_objective(
    K: int = DEFAULTS.K,
    N: int | str = DEFAULTS.N,
    *,
    train_K: int | str = DEFAULTS.train_K,
    metric: str = DEFAULTS.metric,
    gain: str = DEFAULTS.gain,
    hessian: str = DEFAULTS.hessian,
    seed: int = 0,
    sampler: str = DEFAULTS.sampler,
    noise: str = DEFAULTS.noise,
    query_subsample: float = DEFAULTS.query_subsample,
    deep_weight: float | str = DEFAULTS.deep_weight,
    n_jobs: int | None = None,
    fairness: str | None = DEFAULTS.fairness,
    fairness_weight: float = DEFAULTS.fairness_weight,
    empty_queries: str = DEFAULTS.empty_queries,
    item_groups: np.ndarray | None = None,
    device: str = "cpu",
) -> PLRankObjective:
    """A PL-Rank objective for ``xgboost.train(obj=...)`` and ``lightgbm.train``.

    .. code-block:: python

        obj = plrank_objective(K=5)      # judged at NDCG@5, trains at 10
        xgboost.train({"base_score": 0.0}, dtrain, 1000, obj=obj, evals=[(dvalid, "valid")],
                      custom_metric=obj.standardized_metric, maximize=True)
        lightgbm.train({"objective": obj, "metric": "None"}, train, 1000, valid_sets=[valid],
                       feval=obj.standardized_metric)

    Every round returns :func:`~gbdt_plrank.plrank_grad_hess` of the current margins with fresh
    samples, at the training cut-off. With XGBoost set ``base_score=0.0`` (:doc:`/guide/boosters`).

    Parameters
    ----------
    .. plrank-options:: K N train_K metric gain hessian sampler noise query_subsample
    .. plrank-options:: deep_weight fairness fairness_weight empty_queries
    n_jobs : int or None, default None
        Threads of the rounds' sampling; None: Numba's default, negative values count back.
    item_groups : array of shape (n,) or None, default None
        With ``fairness="group-disparity"`` only: the training rows' item groups (integer ids
        >= 0, two or more), as :meth:`PLRankObjective.set_item_groups` gives them.
    seed : int, default 0
        Seed of the sampled rankings; round r of query q draws from the stream (seed, r, q).
    device : {"cpu", "cuda"}, default "cpu"
        Where each round's estimate is computed (``"cuda"``: the ``gpu`` extra, :doc:`/guide/gpu`).

    Returns
    -------
    PLRankObjective

    Raises
    ------
    ValueError
        For an option (:class:`~gbdt_plrank.PLRankOptions`) or ``device`` that breaks its rule
        (``"cuda"`` refuses ``sampler="tree"`` and ``fairness``) and bad ``item_groups`` (missing
        ones and a wrong length at the first round).
    MissingDependencyError, RuntimeError
        With ``device="cuda"``: numba-cuda is not installed (an ImportError), no GPU is visible.
    """
    options = PLRankOptions.checked(
        K=K,
        train_K=train_K,
        N=N,
        metric=metric,
        gain=gain,
        hessian=hessian,
        sampler=sampler,
        noise=noise,
        query_subsample=query_subsample,
        deep_weight=deep_weight,
        fairness=fairness,
        fairness_weight=fairness_weight,
        empty_queries=empty_queries,
    )
    return PLRankObjective(
        options, seed=seed, n_jobs=n_jobs, item_groups=item_groups, device=device
    )
