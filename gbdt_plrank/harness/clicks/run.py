r"""Learning to rank from simulated clicks: the experiment of ``gbdt-plrank clicks``, resumable.

For every data entry, fold and seed: a logging policy trained on the true labels of a few
training queries is deployed on the training and validation queries, stochastically and
deterministically, and the configured users click on its displays (:meth:`ClicksConfig.simulate`);
for every session count of ``sessions`` the learners train on the first sessions of each
query's log, early-stopped on the validation queries' clicks: PL-Rank on the rewards of every
estimator of :data:`~gbdt_plrank.clicks.REWARD_ESTIMATORS` (``plrank-<name>``) and of the
deterministic log, and XGBoost's and LightGBM's position-aware objectives (the anchors). Once
per fold and seed: the full-label model and the logger's own ranking; with
``exploration_rounds``, the exploration loop; with ``ope_sessions``, every PL-Rank model's
off-policy value from the logger's test logs against its simulated value. The protocol step by
step: :doc:`/guide/clicks`, "The experiment".

How they train: the logging policy, every PL-Rank learner and the full-label model are
:class:`~gbdt_plrank.PLRankRanker` s (``_fit_plrank``; a ``"lambdamart"`` logger, the deployed
system a log comes from rather than a method, is XGBoost's ``XGBRanker``, and a ``"feature"``
logger the ranking by one feature), since the experiment deploys their policies
(``sample_rankings`` in the exploration loop, ``expected_exposure`` in the off-policy values),
which the harness's :func:`~gbdt_plrank.harness.training.train` does not return; the two
anchors are comparison methods and train through it (``_fit_anchor``). Both entries build their
plans with the package's one run builder and train through the same backend layer.

Every learner is judged by test NDCG@k on the true labels, query by query. Each result is
written as soon as it exists (:data:`TABLES`); a rerun skips what is there.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import pairwise
from typing import Any, NamedTuple

import numpy as np
from tqdm.auto import tqdm

from ..._backends._lightgbm import LightGBMBackend
from ..._ranking_metric import RankingMetric
from ..._util.compat import is_installed
from ..._util.schema import ConfigError
from ...clicks import (
    REWARD_ESTIMATORS,
    ClickLog,
    click_regression,
    click_rewards,
    estimate_policy_value,
    estimate_position_bias,
    seen_click_probability,
)
from ...datasets import LTRDataset, Split
from ...metrics import ndcg
from ...ranker import PLRankRanker
from ..data import check_data, dataset_label, load
from ..store import ResultStore, Table, write_options
from ..training import train
from .config import ANCHORS, ClicksConfig, estimator_learners

__all__ = [
    "EXPLORATION",
    "TABLES",
    "OpeKey",
    "ResultKey",
    "add_result",
    "anchor_missing",
    "planned",
    "run_clicks",
]

#: The exploration loop's learners: PL-Rank retrained on the logs of its own deployments.
EXPLORATION = {"explore-stochastic": True, "explore-deterministic": False}

#: The learners trained once per fold and seed (session count 0).
ONCE = ("plrank-full-labels", "logger")

# Seeds of the logs for run seed s: base + s (+ 1000 r for exploration round r).
_RANKINGS_SEED = 1_000_003
_CLICKS_SEED = 2_000_003
_PROPENSITY_SEED = 3_000_003
_SPLIT_SEED = {"train": 0, "vali": 500, "test": 700}
_OPE_SEED = 4_000_003
#: Seed offset between the off-policy evaluation's test logs (log 0 is the first one's seed).
_OPE_LOG_STRIDE = 1_000_003


class ResultKey(NamedTuple):
    """One result: dataset label, learner, sessions per query (0: no clicks), seed."""

    dataset: str
    learner: str
    sessions: int
    seed: int


class OpeKey(NamedTuple):
    """One off-policy estimate: a result's key, the estimator and the test log it reads (records
    written before there could be several logs read as log 0)."""

    dataset: str
    learner: str
    sessions: int
    seed: int
    estimator: str
    log: int = 0


#: The experiment's tables (:class:`~gbdt_plrank.harness.store.ResultStore`, whose settings are
#: :meth:`ClicksConfig.settings`): ``results.jsonl``, one line per result, its key, the test query
#: ids, the test NDCG@k of each query for every k, the best round, the training seconds, for a
#: PL-Rank learner on clicks the seconds its rewards took (``rewards_seconds``; the position
#: bias estimated apart), for ``plrank-policy-aware`` the position bias estimated from its log,
#: the seconds the estimate took and the log's clicks at each rank, and for every learner on a
#: debiased estimator (:attr:`~gbdt_plrank.clicks.RewardEstimator.debiased`) the mean reward
#: and simulated click probability by grade over every training row and over the rows its log
#: shows; ``ope.jsonl``, one line per model, off-policy
#: estimator and test log, its estimate, standard error and simulated true value.
TABLES = {"results": Table("results.jsonl", ResultKey), "ope": Table("ope.jsonl", OpeKey)}


def add_result(store: ResultStore, key: ResultKey, **record: Any) -> None:
    """Store one result (written at once)."""
    store.append("results", {**key._asdict(), **record})


def anchor_missing(learner: str) -> str | None:
    """Why an anchor cannot run with the installed libraries, or None when it can."""
    if learner == "lambdamart-unbiased-xgb":
        if not is_installed("xgboost"):
            return "xgboost is not installed"
        import xgboost

        if int(xgboost.__version__.split(".")[0]) < 2:
            return f"xgboost {xgboost.__version__} has no lambdarank_unbiased (2.0+)"
    if learner == "lambdarank-position-lgb":
        if not is_installed("lightgbm"):
            return "lightgbm is not installed"
        import lightgbm

        if "position" not in inspect.signature(lightgbm.Dataset).parameters:
            return f"lightgbm {lightgbm.__version__} has no Dataset(position=) (4.1+)"
    return None


def planned(config: ClicksConfig, label: str, seed: int) -> list[ResultKey]:
    """The results of one fold and seed, in the order they run."""
    keys = []
    for s in sorted(config.sessions):
        for learner in config.learners:
            if learner in ONCE:
                continue
            if learner in ANCHORS and (s > config.anchor_max_sessions or anchor_missing(learner)):
                continue
            keys.append(ResultKey(label, learner, s, seed))
    keys += [ResultKey(label, learner, 0, seed) for learner in ONCE if learner in config.learners]
    for arm in EXPLORATION:
        keys += [
            ResultKey(label, arm, r * config.exploration_sessions, seed)
            for r in range(1, config.exploration_rounds + 1)
        ]
    return keys


# --------------------------------------------------------------------------------------------
# Logs
# --------------------------------------------------------------------------------------------
def top_k_rankings(scores: np.ndarray, split: Split, *, k: int | None, n: int) -> list[np.ndarray]:
    """The deterministic top-``k`` (None: every row) by descending score (ties in row order)
    of every query, repeated for ``n`` sessions, as
    :meth:`~gbdt_plrank.PLRankRanker.sample_rankings` returns rankings."""
    ptr = split.group_ptr
    out = []
    for a, b in pairwise(ptr):
        order = a + np.lexsort((np.arange(b - a), -scores[a:b]))[:k]
        out.append(np.tile(order, (n, 1)))
    return out


class _OpeLog(NamedTuple):
    """One test log of the off-policy evaluation and what every model's estimates on it share."""

    log: ClickLog
    theta: np.ndarray
    rho: dict[str, Any]
    regression: np.ndarray


def _deploy(
    model: Any,
    split: Split,
    *,
    stochastic: bool,
    config: ClicksConfig,
    n: int,
    seed: int,
    temperature: float = 1.0,
) -> ClickLog:
    """Clicks of the configured users (:meth:`ClicksConfig.simulate`) on ``n`` sessions per
    query of ``model`` deployed on ``split``: its Plackett-Luce policy's rankings at
    ``temperature`` (``stochastic``) or its ranking by score, top ``top_k`` or every document
    (``display``)."""
    shown = config.top_k if config.display == "top-k" else None
    if stochastic:
        rankings = model.sample_rankings(
            split.X,
            split.qid,
            n_samples=n,
            random_state=_RANKINGS_SEED + seed,
            K=config.top_k if shown else int(np.diff(split.group_ptr).max()),
            temperature=temperature,
        )
    else:
        rankings = top_k_rankings(model.predict(split.X), split, k=shown, n=n)
    return config.simulate(rankings, split.y, top_k=shown, seed=_CLICKS_SEED + seed)


def first_sessions(log: ClickLog, s: int, n: int) -> ClickLog:
    """The first ``s`` sessions of every query of a log of ``n`` sessions per query."""
    keep = log.session % n < s
    return ClickLog(
        session=log.session[keep], row=log.row[keep], rank=log.rank[keep], click=log.click[keep]
    )


def _concat(logs: Sequence[ClickLog]) -> ClickLog:
    """The logs as one, their session ids kept apart."""
    offsets = np.cumsum([0] + [int(log.session.max(initial=-1)) + 1 for log in logs[:-1]])
    return ClickLog(
        session=np.concatenate([log.session + o for log, o in zip(logs, offsets)]),
        row=np.concatenate([log.row for log in logs]),
        rank=np.concatenate([log.rank for log in logs]),
        click=np.concatenate([log.click for log in logs]),
    )


def estimated_theta(
    log: ClickLog, split: Split, *, stochastic: bool, source: str = "auto"
) -> np.ndarray:
    """The position bias estimated from ``log`` of ``split``'s rows, by row or through the
    rows' features as ``source`` says (a configuration's ``position_bias_from``; ``"auto"``: by
    row from a stochastic logger's log, through the features from a deterministic one's, which
    identifies it no other way)."""
    if source == "rows" or (source == "auto" and stochastic):
        return estimate_position_bias(log)
    return estimate_position_bias(log, X=split.X, qid=split.qid)


def _theta(
    config: ClicksConfig, log: ClickLog, split: Split, *, stochastic: bool, ranks: int = 0
) -> np.ndarray:
    """The position bias the learners correct with: the simulated one (over the ranks ``log``
    displays, and at least ``ranks``: those of the logs it is used on with ``log``), or
    estimated from ``log``."""
    if config.position_bias == "estimate":
        return estimated_theta(log, split, stochastic=stochastic, source=config.position_bias_from)
    return config.simulated_position_bias(max(config.top_k, ranks, int(log.rank.max(initial=1))))


def session_split(log: ClickLog, split: Split) -> tuple[Split, np.ndarray]:
    """One query group per session with a click: its displayed rows in displayed order,
    labelled by their clicks; and each row's 0-based displayed position."""
    clicked = np.unique(log.session[log.click == 1])
    keep = np.isin(log.session, clicked)
    order = np.lexsort((log.rank[keep], log.session[keep]))
    rows = log.row[keep][order]
    part = Split(split.X[rows], log.click[keep][order].astype(np.float64), log.session[keep][order])
    return part, log.rank[keep][order] - 1


# --------------------------------------------------------------------------------------------
# Learners
# --------------------------------------------------------------------------------------------
class _DisplayOrderLightGBM(LightGBMBackend):
    """LightGBM with ``Dataset(position=)``: a row's index in its group, its displayed position
    (:func:`session_split` keeps every displayed row of a session, in displayed order)."""

    @staticmethod
    def _dataset(data: Split, *, reference: Any = None, params: Any = None) -> Any:
        import lightgbm

        ptr = data.group_ptr
        position = np.arange(data.y.shape[0]) - np.repeat(ptr[:-1], np.diff(ptr))
        return lightgbm.Dataset(
            data.X,
            data.y,
            group=data.group_sizes,
            reference=reference,
            params=params,
            position=position,
        )


@dataclass(frozen=True)
class _Fit:
    scores: np.ndarray
    best_round: int
    seconds: float
    vali_scores: np.ndarray


def _fit_plrank(
    config: ClicksConfig,
    seed: int,
    data: LTRDataset,
    y: np.ndarray,
    y_vali: np.ndarray,
    *,
    labels: bool = False,
) -> tuple[PLRankRanker, _Fit]:
    """PL-Rank on ``y`` (rewards, or the true labels with ``labels``), early-stopped on
    ``y_vali``; the ranker and its test scores."""
    options = config.learner_options(labels=labels)
    ranker = PLRankRanker(**options, random_state=seed)
    start = time.perf_counter()
    ranker.fit(
        data.train.X,
        y,
        group=data.train.qid,
        eval_set=[(data.vali.X, y_vali, data.vali.qid)],
        early_stopping_rounds=config.trees.early_stopping_rounds,
    )
    seconds = time.perf_counter() - start
    best = ranker.best_iteration_
    best_round = options["n_estimators"] if best is None else best + 1
    return ranker, _Fit(
        ranker.predict(data.test.X), int(best_round), seconds, ranker.predict(data.vali.X)
    )


def _fit_anchor(
    learner: str,
    config: ClicksConfig,
    seed: int,
    data: LTRDataset,
    train_log: ClickLog,
    vali_rewards: np.ndarray,
) -> _Fit:
    """A library's unbiased objective on the sessions of ``train_log``, trained as the
    comparison method it is (:func:`~gbdt_plrank.harness.training.train`), early-stopped on the
    metric@``top_k`` of its ranking of the validation rows with ``vali_rewards`` as labels,
    the signal the PL-Rank learners stop on."""
    method = ANCHORS[learner]
    train_split, _ = session_split(train_log, data.train)
    vali = Split(data.vali.X, vali_rewards, data.vali.qid)
    params = dict(config.params.get(method, {}))
    backend = None
    if learner == "lambdamart-unbiased-xgb":
        params["lambdarank_unbiased"] = True
    else:
        backend = _DisplayOrderLightGBM()
    fit = train(
        method,
        replace(data, train=train_split, vali=vali),
        k=config.top_k,
        seed=seed,
        trees=config.trees,
        params=params,
        backend=backend,
        watch=RankingMetric(config.plrank.metric, config.top_k, "linear"),
    )
    return _Fit(fit.test_scores, int(fit.best_round), float(fit.train_seconds), fit.vali_scores)


def _test_values(
    config: ClicksConfig,
    test: Split,
    scores: np.ndarray,
    *,
    vali: Split | None = None,
    vali_scores: np.ndarray | None = None,
) -> dict[str, Any]:
    """The test queries' ids and NDCG@k on the true labels; with ``vali``, the validation
    queries' too (``vali_qid``, ``vali_ndcg``: what a choice between learners reads)."""
    out = {
        "qid": [int(q) for q in np.unique(test.qid)],
        "ndcg": {
            str(k): ndcg(test.y, scores, test.qid, k=k, per_query=True).tolist() for k in config.k
        },
    }
    if vali is not None:
        out["vali_qid"] = [int(q) for q in np.unique(vali.qid)]
        out["vali_ndcg"] = {
            str(k): ndcg(vali.y, vali_scores, vali.qid, k=k, per_query=True).tolist()
            for k in config.k
        }
    return out


@dataclass(frozen=True)
class _FeatureRanker:
    """The ranking by one feature (0-based ``column``), descending: a ``"feature"`` logger."""

    column: int

    def predict(self, X: Any) -> np.ndarray:
        column = X[:, self.column]
        return np.asarray(column.todense() if hasattr(column, "todense") else column).ravel()


def _logger(config: ClicksConfig, train: Split, seed: int) -> Any:
    """The logging policy, trained on the true labels of the first ``logging_queries`` training
    queries for ``logging_rounds`` rounds: :class:`~gbdt_plrank.PLRankRanker` (``"plrank"``)
    or XGBoost's ``XGBRanker`` with ``rank:ndcg`` (``"lambdamart"``, the trees' settings); or
    the ranking by feature ``logger_feature`` (``"feature"``, nothing trained)."""
    if config.logger == "feature":
        feature = config.logger_feature
        if feature is None or feature > train.X.shape[1]:
            raise ConfigError(
                f"logger_feature must be a feature of the data (1 to {train.X.shape[1]}), but "
                f"{feature} is given."
            )
        return _FeatureRanker(feature - 1)
    n = int(train.group_ptr[min(config.logging_queries, train.group_ptr.size - 1)])
    X, y, qid = train.X[:n], train.y[:n], train.qid[:n]
    if config.logger == "plrank":
        return PLRankRanker(
            **{
                **config.learner_options(labels=True, stopped=False),
                "n_estimators": config.logging_rounds,
            },
            random_state=seed,
        ).fit(X, y, group=qid)
    from xgboost import XGBRanker

    trees = config.trees
    return XGBRanker(
        objective="rank:ndcg",
        n_estimators=config.logging_rounds,
        learning_rate=trees.learning_rate,
        max_depth=trees.max_depth,
        min_child_weight=trees.min_child_weight,
        reg_lambda=trees.reg_lambda,
        n_jobs=trees.n_jobs,
        random_state=seed,
    ).fit(X, y, qid=qid)


class _Fold:
    """One fold and seed: the data, the logger and (made on first use) its logs."""

    def __init__(self, config: ClicksConfig, data: LTRDataset, seed: int) -> None:
        self.config, self.data, self.seed = config, data, seed
        self.logger = _logger(config, data.train, seed)
        #: whether the learners read a stochastic log (a Plackett-Luce logger's)
        self.stochastic = config.logger == "plrank"
        self.n = max(config.sessions)
        self._logs: dict[bool, dict[str, ClickLog]] = {}
        self._first: dict[tuple[bool, int], dict[str, ClickLog]] = {}
        # id of a training log -> the log (kept, so that its id is not reused), its estimate and
        # the seconds the estimate took
        self._estimates: dict[int, tuple[ClickLog, np.ndarray, float]] = {}
        self._ope: list[_OpeLog] | None = None

    def logs(self, stochastic: bool, s: int) -> dict[str, ClickLog]:
        """The first ``s`` sessions per query of the stochastic or deterministic logger (the
        same objects for every learner, so that what is estimated from them is estimated
        once)."""
        if stochastic not in self._logs:
            self._logs[stochastic] = {
                name: _deploy(
                    self.logger,
                    getattr(self.data, name),
                    stochastic=stochastic,
                    config=self.config,
                    n=self.n,
                    seed=self.seed + _SPLIT_SEED[name],
                    temperature=self.config.logger_temperature,
                )
                for name in ("train", "vali")
            }
        if (stochastic, s) not in self._first:
            self._first[stochastic, s] = {
                name: first_sessions(log, s, self.n) for name, log in self._logs[stochastic].items()
            }
        return self._first[stochastic, s]

    def estimated_theta(self, log: ClickLog, *, stochastic: bool) -> np.ndarray:
        """:func:`estimated_theta` of a training log of :meth:`logs`, estimated once."""
        if id(log) not in self._estimates:
            start = time.perf_counter()
            theta = estimated_theta(
                log,
                self.data.train,
                stochastic=stochastic,
                source=self.config.position_bias_from,
            )
            self._estimates[id(log)] = (log, theta, time.perf_counter() - start)
        return self._estimates[id(log)][1]

    def reported_theta(self, log: ClickLog, *, stochastic: bool) -> dict[str, Any]:
        """The report's estimate of the position bias from a training log: ``theta_estimate``
        and ``theta_seconds``; where the learners correct with the known position bias, a log
        the estimate refuses (it does not identify the bias) is reported, not fatal:
        ``theta_refused``, the reason, and the seconds it took to tell."""
        start = time.perf_counter()
        try:
            theta = self.estimated_theta(log, stochastic=stochastic)
        except ValueError as error:
            if self.config.position_bias == "estimate":
                raise
            return {"theta_refused": str(error), "theta_seconds": time.perf_counter() - start}
        return {"theta_estimate": theta.tolist(), "theta_seconds": self._estimates[id(log)][2]}

    def theta(self, logs: Mapping[str, ClickLog], *, stochastic: bool) -> np.ndarray:
        """The position bias the learners on the logs of :meth:`logs` correct with: the
        simulated one over every rank they display (a full display's validation log may show
        deeper ranks than its training log), or :meth:`estimated_theta` of the training log."""
        if self.config.position_bias == "estimate":
            return self.estimated_theta(logs["train"], stochastic=stochastic)
        ranks = max(int(log.rank.max(initial=1)) for log in logs.values())
        return _theta(
            self.config, logs["train"], self.data.train, stochastic=stochastic, ranks=ranks
        )

    def rewards(
        self, logs: dict[str, ClickLog], *, estimator: str, policy: bool, stochastic: bool
    ) -> dict[str, Any]:
        """Rewards of the training and validation rows, and the position bias used
        (``stochastic``: whether the logs are a Plackett-Luce logger's); an estimator's
        regression reads the features ``regression_features`` says."""
        theta = self.theta(logs, stochastic=stochastic)
        out: dict[str, Any] = {"theta": theta}
        for name, log in logs.items():
            split = getattr(self.data, name)
            given = (
                self.propensities(split, theta, n_samples=self.config.propensity_samples)
                if policy
                else {}
            )
            if REWARD_ESTIMATORS[estimator].regression:
                given["regression"] = self.regression(log, split, theta)
            out[name] = click_rewards(
                log,
                split.y.size,
                position_bias=theta,
                estimator=estimator,
                qid=split.qid,
                X=split.X,
                seed=self.seed,
                shrinkage=self.config.shrinkage if REWARD_ESTIMATORS[estimator].signed else 0.0,
                **given,
            )
        return out

    def regression(
        self, log: ClickLog, split: Split, theta: np.ndarray, *, seed: int | None = None
    ) -> np.ndarray:
        """:func:`~gbdt_plrank.clicks.click_regression` of ``log`` on ``split``'s rows (the
        features ``regression_features`` says, ``regression_rounds`` boosting rounds; ``seed``
        the run's by default)."""
        return click_regression(
            log,
            split.X,
            split.qid,
            position_bias=theta,
            n_rounds=self.config.regression_rounds,
            seed=self.seed if seed is None else seed,
            features=self.config.regression_features,
        )

    def propensities(self, split: Split, theta: np.ndarray, *, n_samples: int) -> dict[str, Any]:
        """The logger's expected observation of every row of ``split`` under ``theta`` from
        ``n_samples`` rankings per query, as keyword arguments of
        :func:`~gbdt_plrank.clicks.click_rewards` and
        :func:`~gbdt_plrank.clicks.estimate_policy_value`: counted and pooled with the log's own
        sessions (``propensities`` and ``propensity_samples``: a row the log shows clicked has a
        positive propensity even where no sampled ranking shows it, as under a sharp logger),
        or with ``propensities = "placement"`` from the placement probabilities, positive for
        every row and taken as they are."""
        placement = self.config.propensities == "placement"
        rho = self.logger.expected_exposure(
            split.X,
            split.qid,
            n_samples=n_samples,
            weights=theta,
            random_state=_PROPENSITY_SEED + self.seed,
            method="placement" if placement else "count",
            temperature=self.config.logger_temperature,
        )
        return {"propensities": rho, **({} if placement else {"propensity_samples": n_samples})}

    def ope(self, key: ResultKey, model: PLRankRanker) -> list[dict[str, Any]]:
        """Off-policy estimates of ``model``'s expected clicks per test session from each of the
        logger's ``ope_logs`` test logs, each with the simulated truth (none where the clicks are
        not a position-based model's: under trust bias, or a cascade's satisfied clicks). The
        logger is valued as deployed, at ``logger_temperature``."""
        config, test = self.config, self.data.test
        if not config.ope_sessions or not config.position_based:
            return []
        n = 10 * config.propensity_samples
        gamma = seen_click_probability(test.y, noise=config.noise, graded=config.graded)
        _, q = np.unique(test.qid, return_inverse=True)
        temperature = config.logger_temperature if model is self.logger else 1.0

        def exposure(theta: np.ndarray) -> np.ndarray:
            return model.expected_exposure(
                test.X,
                test.qid,
                n_samples=n,
                weights=theta,
                random_state=_OPE_SEED + self.seed,
                temperature=temperature,
            )

        # the model's observation under the simulated position bias, once for every log
        simulated = (
            None
            if config.position_bias == "known"
            else exposure(config.simulated_position_bias(config.top_k))
        )
        out = []
        exposures: dict[bytes, np.ndarray] = {}  # per position bias (one, where it is known)
        for i, logged in enumerate(self._ope_logs()):
            if logged.theta.tobytes() not in exposures:
                exposures[logged.theta.tobytes()] = exposure(logged.theta)
            w = exposures[logged.theta.tobytes()]
            _, first = np.unique(logged.log.session, return_index=True)
            sessions = np.bincount(q[logged.log.row[first]], minlength=q.max() + 1)
            w_true = w if simulated is None else simulated
            truth = float(np.bincount(q, weights=w_true * gamma) @ sessions / sessions.sum())
            for spec in REWARD_ESTIMATORS.values():
                if not spec.values_policies:
                    continue
                est = estimate_policy_value(
                    logged.log,
                    w,
                    X=test.X,
                    qid=test.qid,
                    position_bias=logged.theta,
                    **logged.rho,
                    estimator=spec.name,
                    regression=logged.regression if spec.regression else None,
                )
                out.append(
                    {
                        **key._asdict(),
                        "estimator": spec.name,
                        "log": i,
                        "value": est.value,
                        "stderr": est.stderr,
                        "truth": truth,
                    }
                )
        return out

    def _ope_logs(self) -> list[_OpeLog]:
        """The logger's ``ope_logs`` independent test logs, each with its position bias, the
        logger's expected observation of every test row (:meth:`propensities`) and the doubly
        robust regression fitted on it, made once for all the models :meth:`ope` values."""
        if self._ope is None:
            config, test = self.config, self.data.test
            self._ope = []
            for i in range(config.ope_logs):
                log = _deploy(
                    self.logger,
                    test,
                    stochastic=True,
                    config=config,
                    n=config.ope_sessions,
                    seed=self.seed + _SPLIT_SEED["test"] + _OPE_LOG_STRIDE * i,
                    temperature=config.logger_temperature,
                )
                theta = _theta(config, log, test, stochastic=True)
                reused = self._ope and np.array_equal(theta, self._ope[0].theta)
                # ten times the rankings of the training propensities: closer to the logger's
                # exact propensities, which is what makes the doubly robust estimate the better
                rho = (
                    self._ope[0].rho
                    if reused
                    else self.propensities(test, theta, n_samples=10 * config.propensity_samples)
                )
                regression = self.regression(log, test, theta, seed=_OPE_SEED + self.seed)
                self._ope.append(_OpeLog(log, theta, rho, regression))
        return self._ope

    def run(self, key: ResultKey) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Train and test one learner at one session count; the record to store and the
        off-policy estimates of its model (:meth:`ope`)."""
        config, data, learner = self.config, self.data, key.learner
        if learner == "logger":
            scores = self.logger.predict(data.test.X)
            return (
                {
                    **_test_values(
                        config,
                        data.test,
                        scores,
                        vali=data.vali,
                        vali_scores=self.logger.predict(data.vali.X),
                    ),
                    "best_round": config.logging_rounds,
                    "seconds": 0.0,
                },
                self.ope(key, self.logger),
            )
        extra: dict[str, Any] = {}
        model = None
        if learner == "plrank-full-labels":
            model, fit = _fit_plrank(config, key.seed, data, data.train.y, data.vali.y, labels=True)
        elif learner in ANCHORS:
            logs = self.logs(self.stochastic, key.sessions)
            vali = self.rewards(
                logs,
                estimator="policy-aware",
                stochastic=self.stochastic,
                policy=self.policy_propensities,
            )["vali"]
            fit = _fit_anchor(learner, config, key.seed, data, logs["train"], vali)
        else:
            stochastic = self.stochastic and learner != "plrank-deterministic"
            logs = self.logs(stochastic, key.sessions)
            self.theta(logs, stochastic=stochastic)  # estimated once, timed apart
            start = time.perf_counter()
            r = self.learner_rewards(learner, logs, stochastic=stochastic)
            extra["rewards_seconds"] = time.perf_counter() - start
            model, fit = _fit_plrank(config, key.seed, data, r["train"], r["vali"])
            if learner == "plrank-policy-aware":
                train_log = logs["train"]
                extra.update(self.reported_theta(train_log, stochastic=stochastic))
                extra["clicks"] = int(train_log.click.sum())
                extra["clicks_by_rank"] = np.bincount(
                    train_log.rank - 1, weights=train_log.click
                ).tolist()
            estimator = estimator_learners().get(learner)
            if estimator is not None and REWARD_ESTIMATORS[estimator].debiased:
                extra["by_grade"] = self.by_grade(logs["train"], r["train"])
        record = {
            **_test_values(
                config, data.test, fit.scores, vali=data.vali, vali_scores=fit.vali_scores
            ),
            "best_round": fit.best_round,
            "seconds": fit.seconds,
            **extra,
        }
        return record, [] if model is None else self.ope(key, model)

    @property
    def policy_propensities(self) -> bool:
        """Whether the policy-aware rewards divide by the logger's propensities (rather than
        the display frequencies): ``propensities`` other than ``"logged"``, for a Plackett-Luce
        logger."""
        return self.stochastic and self.config.propensities != "logged"

    def learner_rewards(
        self, learner: str, logs: dict[str, ClickLog], *, stochastic: bool
    ) -> dict[str, Any]:
        """The training and validation rewards a PL-Rank learner on clicks trains and stops on
        (:meth:`rewards`): its estimator's (:func:`.config.estimator_learners`;
        ``plrank-deterministic`` the policy-aware one) on the propensities ``propensities`` says
        (the logger's for the unshrunk doubly robust rewards, none for a deterministic log, whose
        display frequencies are its logger's propensities); the learners on a regression stop on
        the policy-aware validation rewards."""
        config = self.config
        spec = REWARD_ESTIMATORS[estimator_learners().get(learner, "policy-aware")]
        unshrunk = spec.signed and config.shrinkage == 0
        r = self.rewards(
            logs,
            estimator=spec.name,
            stochastic=stochastic,
            policy=stochastic
            and spec.propensities
            and (config.propensities != "logged" or unshrunk),
        )
        if spec.regression:  # stops on the policy-aware learner's signal
            r["vali"] = self.rewards(
                logs,
                estimator="policy-aware",
                stochastic=stochastic,
                policy=stochastic and config.propensities != "logged",
            )["vali"]
        return r

    def by_grade(self, log: ClickLog, rewards: np.ndarray) -> dict[str, dict[str, list[float]]]:
        r"""``"all"`` and ``"shown"`` -> grade -> [mean reward, mean simulated click probability
        when seen, rows], over every training row and over the rows ``log`` shows.

        The unshrunk rewards' expectation is the click probability over every row the logger
        can show (a Plackett-Luce logger: every row; ``shrinkage`` pulls the doubly robust ones
        towards the regression by :math:`\kappa / (E_d + \kappa)`); among the rows a log happens
        to show it is not
        (the doubly robust reward of a shown row is :math:`\hat\gamma_d + (\gamma_d -
        \hat\gamma_d) / P(\text{shown})` in expectation)."""
        y = self.data.train.y
        gamma = seen_click_probability(y, noise=self.config.noise, graded=self.config.graded)
        shown = np.zeros(y.size, bool)
        shown[log.row] = True
        out = {}
        for name, rows in (("all", np.ones(y.size, bool)), ("shown", shown)):
            out[name] = {
                f"{g:g}": [
                    float(rewards[rows & (y == g)].mean()),
                    float(gamma[rows & (y == g)].mean()),
                    int((rows & (y == g)).sum()),
                ]
                for g in np.unique(y[rows])
            }
        return out

    def explore(self, arm: str, store: ResultStore, label: str) -> None:
        """The exploration loop of one arm; stores each round's result that is missing."""
        config, data = self.config, self.data
        stochastic = EXPLORATION[arm]
        model = self.logger
        logs: dict[str, list[ClickLog]] = {"train": [], "vali": []}
        for r in range(1, config.exploration_rounds + 1):
            for name in logs:
                logs[name].append(
                    _deploy(
                        model,
                        getattr(data, name),
                        stochastic=stochastic,
                        config=config,
                        n=config.exploration_sessions,
                        seed=self.seed + _SPLIT_SEED[name] + 1000 * r,
                    )
                )
            joined = {name: _concat(parts) for name, parts in logs.items()}
            rewards = self.rewards(
                joined, estimator="policy-aware", policy=False, stochastic=stochastic
            )
            model, fit = _fit_plrank(config, self.seed, data, rewards["train"], rewards["vali"])
            key = ResultKey(label, arm, r * config.exploration_sessions, self.seed)
            if key not in store.records("results"):
                add_result(
                    store,
                    key,
                    **_test_values(config, data.test, fit.scores),
                    best_round=fit.best_round,
                    seconds=fit.seconds,
                    round=r,
                )


def _fill(store: ResultStore, config: ClicksConfig, *, echo: Callable[[str], None]) -> None:
    """Compute and store what ``config`` asks for and ``store`` does not hold yet."""
    for learner in ANCHORS:
        reason = anchor_missing(learner) if learner in config.learners else None
        if reason:
            echo(f"{learner} is left out: {reason}")
    units = [
        (data, fold, seed, planned(config, dataset_label(data, fold), seed))
        for data in config.datasets
        for fold in config.folds
        for seed in range(config.seeds)
    ]
    total = sum(len(keys) for *_, keys in units)
    done = store.records("results")
    left = sum(k not in done for *_, keys in units for k in keys)
    echo(f"{left} of {total} results to compute; results in {store.folder}")
    with tqdm(total=left, unit="result", disable=None) as bar:
        for data, fold, seed, keys in units:
            missing = [k for k in keys if k not in done]
            if not missing:
                continue
            dataset = load(data, fold, drop_empty_test_queries=config.drop_empty_test_queries)
            unit = _Fold(config, dataset, seed)
            for key in missing:
                if key.learner in EXPLORATION:
                    continue
                record, ope = unit.run(key)
                for line in ope:
                    store.append("ope", line)
                add_result(store, key, **record)
                bar.set_postfix_str(f"{key.dataset} {key.learner} s={key.sessions}")
                bar.update()
            for arm in EXPLORATION:
                if any(k.learner == arm for k in missing):
                    unit.explore(arm, store, dataset.name)
                    bar.update(sum(k.learner == arm for k in missing))


def run_clicks(config: ClicksConfig, *, echo: Callable[[str], None] = print) -> ResultStore:
    """Run every result of ``config`` that its output folder does not hold.

    Returns the output folder's results (its ``TABLES``), earlier runs' included. Raises
    ``ConfigError`` when a data entry is missing or the folder holds results of other settings,
    ``FolderInUseError`` when another run is writing to it (:meth:`ResultStore.locked`).
    """
    check_data(config.datasets, config.folds)
    with ResultStore.locked(config.out, settings=config.settings(), tables=TABLES) as store:
        write_options(store.folder, config.trained_options())
        _fill(store, config, echo=echo)
    return store
