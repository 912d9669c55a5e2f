r"""The fairness frontier: expected NDCG@k against exposure fairness, resumable.

For every data entry, fold and seed, the frontier trains (through :func:`.training.train`)

- LambdaMART (XGBoost ``rank:ndcg``) and LambdaRank (LightGBM ``lambdarank``), deterministic
  rankers early-stopped on validation NDCG@k as a comparison does;
- PL-Rank with the relevance objective, and with the configuration's ``fairness`` loss for every
  weight of the grid (from the library's base score, or with ``fair_start`` from a baseline's
  kept model at a temperature: its margins on every split, stored with the baseline's
  training, are the fair trainings' base margins), early-stopped on the validation value of
  their own policy's objective,
  expected NDCG@k minus the weight times the loss
  (:attr:`~gbdt_plrank.PLRankObjective.expected_metric`): the ranking by score cannot see the
  scale of the margins, which sets how random the policy is;

and evaluates on the validation and the test split (:mod:`.policy_eval`, per query): each fair
PL-Rank policy as trained; every model (the fair ones too) as the Plackett-Luce policy
:math:`\pi(m / (T\sigma))` for every temperature :math:`T` of the grid (post-hoc
randomisation, or sharpening), where :math:`\sigma` is the root mean within-query variance of
the model's margins on the *validation* split, so that one grid spans the same range, from
nearly deterministic to nearly uniform, for every model and fold; with a protected group
(:mod:`.item_groups`), the three deterministic rankers also as
:math:`\pi((m + b\sigma a) / (T\sigma))` for every group offset :math:`b`, where :math:`a_d`
is 1 for the protected documents and 0 for the others (a post-hoc boost or demotion of a group,
Singh and Joachims 2018); the deterministic LambdaMART ranking; and, on test, the
equal-exposure oracle (documents shuffled uniformly within grades, grades in ideal order, so
that :math:`E = \epsilon`). The validation values choose the policies the report compares
(:mod:`.report`); the test values measure them.

Every finished training (its validation and test margins) and every finished evaluation (its
per-query values) is written at once (:data:`TABLES`); a rerun skips what is there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

import numpy as np
from tqdm.auto import tqdm

from ..._fairness_terms import fairness_term
from ...datasets import LTRDataset, Split
from ..data import check_data, dataset_label, load
from ..item_groups import protected_rows, with_item_groups, without_item_groups
from ..policy_eval import (
    PolicyValues,
    evaluate_oracle,
    evaluate_policy,
    evaluate_ranking,
    validation_scale,
)
from ..store import ResultStore, Table, write_options
from ..training import train
from .config import BASELINES, FrontierConfig

__all__ = [
    "TABLES",
    "EvalKey",
    "TrainingKey",
    "add_evaluation",
    "add_training",
    "fold_sources",
    "load_fold",
    "planned_evaluations",
    "planned_trainings",
    "run_frontier",
    "stored_margins",
]

#: Curve names: the temperature curves, the fair curve and the two single points.
TEMPERATURE_CURVES = ("lambdamart", "lambdarank", "plrank")
FAIR = "plrank-fair"
DETERMINISTIC = "lambdamart-deterministic"
ORACLE = "oracle"

#: Seed of the evaluation's sampled rankings for run seed s: EVAL_SEED + s.
EVAL_SEED = 1_000_003

#: The splits every policy is evaluated on: validation (to choose) and test (to measure).
SPLITS = ("vali", "test")


class TrainingKey(NamedTuple):
    """One training: dataset label, curve, fairness weight (0 without fairness) and seed."""

    dataset: str
    curve: str
    weight: float
    seed: int


class EvalKey(NamedTuple):
    """One evaluated policy and split.

    Dataset label, curve, weight, temperature (0: as trained), group offset, split (one of
    :data:`SPLITS`) and seed.
    """

    dataset: str
    curve: str
    weight: float
    temperature: float
    offset: float
    split: str
    seed: int


# --------------------------------------------------------------------------------------------
# The output folder
# --------------------------------------------------------------------------------------------
#: A frontier's tables (:class:`~gbdt_plrank.harness.store.ResultStore`, whose settings are
#: :meth:`FrontierConfig.settings`): ``trainings.jsonl``, one line per finished training (key,
#: best round, seconds, the validation scale of its margins, its margins files
#: ``margins/<name>.<split>.npy``, written before its line); ``evaluations.jsonl``, one line per
#: finished evaluation, its per-query values and its exposures' file
#: (``exposures/<name>.npy``, written before its line), from which the report measures mixtures.
TABLES = {
    "trainings": Table("trainings.jsonl", TrainingKey),
    "evaluations": Table("evaluations.jsonl", EvalKey),
}


def add_training(
    store: ResultStore, key: TrainingKey, margins: dict[str, np.ndarray], **info: Any
) -> None:
    """Store a training's margins (split name -> margins), then its line."""
    stem = f"{key.dataset.replace('/', '_')}__{key.curve}__w{key.weight:g}__s{key.seed}"
    files = {
        split: store.save_array(f"margins/{stem}.{split}.npy", values)
        for split, values in margins.items()
    }
    store.append("trainings", {**key._asdict(), **info, "margins": files})


def stored_margins(store: ResultStore, key: TrainingKey, split: str) -> np.ndarray:
    """The stored margins of a finished training on ``split`` (one of :data:`SPLITS`, or
    ``"train"`` for the model ``fair_start`` names)."""
    return store.load_array(store.records("trainings")[key]["margins"][split])


def add_evaluation(store: ResultStore, key: EvalKey, values: PolicyValues) -> None:
    """Store one evaluation's exposures (``exposures/<name>.npy``), then its line: its
    per-query values and the exposures' file."""
    stem = "__".join(
        [
            key.dataset.replace("/", "_"),
            key.curve,
            f"w{key.weight:g}",
            f"T{key.temperature:g}",
            f"b{key.offset:g}",
            key.split,
            f"s{key.seed}",
        ]
    )
    exposures = store.save_array(f"exposures/{stem}.npy", values.exposures)
    store.append(
        "evaluations",
        {
            **key._asdict(),
            "qid": [int(q) for q in values.qid],
            **{name: None if v is None else v.tolist() for name, v in values.values.items()},
            "mc_mean": values.mc_mean,
            "mc_var": values.mc_var,
            "n_samples": values.n_samples,
            "exposures": exposures,
        },
    )


# --------------------------------------------------------------------------------------------
# The run
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Training:
    """One training of a frontier and the evaluations of its margins.

    ``policy``: early-stopped on its policy's validation objective (the PL-Rank trainings);
    ``item_groups``: its objective takes the item groups (a group fairness loss);
    ``scores_train``: its training split's margins are stored too (the model the fair
    trainings start from); ``start``: the training whose margins it starts from and their
    temperature (``FairStart``), if any.
    """

    key: TrainingKey
    method: str
    params: dict[str, Any]
    evals: tuple[EvalKey, ...]
    policy: bool
    item_groups: bool = False
    scores_train: bool = False
    start: tuple[TrainingKey, float] | None = None


def _trainings(config: FrontierConfig, label: str, seed: int) -> Iterator[_Training]:
    temps = config.temperatures
    methods = {**BASELINES, "plrank": config.plrank_method}
    start = config.fair_start
    for curve, method in methods.items():
        key = TrainingKey(label, curve, 0.0, seed)
        evals = tuple(
            EvalKey(label, curve, 0.0, t, b, split, seed)
            for t in temps
            for b in config.group_offsets
            for split in SPLITS
        )
        if curve == "lambdamart":
            evals += tuple(EvalKey(label, DETERMINISTIC, 0.0, 0.0, 0.0, s, seed) for s in SPLITS)
        params = dict(config.params.get(method, {}))
        yield _Training(
            key,
            method,
            params,
            evals,
            policy=curve == "plrank",
            scores_train=start is not None and curve == start.model,
        )
    groups = fairness_term(config.fairness).needs_item_groups
    for w in config.fairness_weights:
        key = TrainingKey(label, FAIR, w, seed)
        evals = tuple(
            EvalKey(label, FAIR, w, t, 0.0, split, seed) for t in (0.0, *temps) for split in SPLITS
        )
        yield _Training(
            key,
            config.plrank_method,
            config.fair_options(w),
            evals,
            policy=True,
            item_groups=groups,
            start=None
            if start is None
            else (TrainingKey(label, start.model, 0.0, seed), start.temperature),
        )


def _started(
    data: LTRDataset, store: ResultStore, key: TrainingKey, temperature: float
) -> LTRDataset:
    """``data`` whose splits start from the stored margins of training ``key`` over
    ``temperature`` times their validation scale (``FairStart``)."""
    scale = float(store.records("trainings")[key]["scale"])
    return replace(
        data,
        **{
            name: replace(
                getattr(data, name),
                base_margin=stored_margins(store, key, name) / (temperature * scale),
            )
            for name in ("train", *SPLITS)
        },
    )


def _fit(job: _Training, data: LTRDataset, config: FrontierConfig) -> dict[str, Any]:
    """Train one job (``data`` with its start's base margins); its margins and what the store
    records about it."""
    fit = train(
        job.method,
        data if job.item_groups else without_item_groups(data),
        k=config.k,
        seed=job.key.seed,
        trees=config.trees,
        plrank=config.plrank,
        params=job.params,
        score_train=job.scores_train,
    )
    margins = {"vali": fit.vali_scores, "test": fit.test_scores}
    if fit.train_scores is not None:
        margins["train"] = fit.train_scores
    info = {
        "margins": margins,
        "best_round": int(fit.best_round),
        "rounds_run": int(fit.curve.shape[0]),
        "train_seconds": fit.train_seconds,
        "scale": validation_scale(fit.vali_scores, data.vali),
    }
    if job.policy:  # the value its early stopping watched, at the round kept
        info["validation_objective"] = float(fit.history[fit.watched][fit.best_round - 1])
    return info


def _evaluate(
    key: EvalKey, margins: np.ndarray, scale: float, split: Split, config: FrontierConfig
) -> PolicyValues:
    if key.curve == DETERMINISTIC:
        return evaluate_ranking(margins, split, k=config.k)
    if key.offset:
        margins = margins + key.offset * scale * protected_rows(split)
    # temperature 0: a fair policy as trained
    policy = margins / (key.temperature * scale) if key.temperature else margins
    return evaluate_policy(
        policy,
        split,
        k=config.k,
        n_samples=config.n_samples,
        seed=EVAL_SEED + key.seed,
        n_jobs=config.trees.n_jobs,
        monte_carlo=key.split == "test",
    )


def _plan(
    config: FrontierConfig,
) -> tuple[list[tuple[str, int, _Training]], list[tuple[str, int, EvalKey]]]:
    """The trainings (with their evaluations) and the oracle evaluations, in the order they run."""
    sources = [(d, f, label) for label, (d, f) in fold_sources(config).items()]
    jobs = [
        (data, fold, job)
        for data, fold, label in sources
        for seed in range(config.seeds)
        for job in _trainings(config, label, seed)
    ]
    oracles = [
        (data, fold, EvalKey(label, ORACLE, 0.0, 0.0, 0.0, "test", 0))
        for data, fold, label in sources
    ]
    return jobs, oracles


def planned_trainings(config: FrontierConfig) -> list[TrainingKey]:
    """Every training the configuration asks for."""
    jobs, _ = _plan(config)
    return [job.key for _, _, job in jobs]


def planned_evaluations(config: FrontierConfig) -> list[EvalKey]:
    """Every evaluation the configuration asks for."""
    jobs, oracles = _plan(config)
    return [key for _, _, job in jobs for key in job.evals] + [key for _, _, key in oracles]


def load_fold(config: FrontierConfig, data: str, fold: int) -> LTRDataset:
    """Fold ``fold`` of data entry ``data`` as the frontier trains and evaluates on it: its
    query filters, its web groups and its item groups."""
    dataset = load(
        data,
        fold,
        drop_empty_test_queries=config.drop_empty_test_queries,
        drop_empty_queries=config.drop_empty_queries,
        web_groups=config.web_groups,
        cross_validation=config.cross_validation,
    )
    return dataset if config.protected is None else with_item_groups(dataset, config.protected)


def fold_sources(config: FrontierConfig) -> dict[str, tuple[str, int]]:
    """Each fold's label in the results -> (data entry, fold), in the order they run."""
    return {
        dataset_label(d, f, cross_validation=config.cross_validation): (d, f)
        for d in config.datasets
        for f in config.folds
    }


def _fill(store: ResultStore, config: FrontierConfig, *, echo: Callable[[str], None]) -> None:
    """Compute and store what ``config`` asks for and ``store`` does not hold yet."""
    jobs, oracles = _plan(config)
    trainings, evaluations = store.records("trainings"), store.records("evaluations")
    left = [j for j in jobs if not all(e in evaluations for e in j[2].evals)]
    echo(f"{len(left)} of {len(jobs)} trainings to run or evaluate; results in {store.folder}")
    loaded: dict[tuple[str, int], LTRDataset] = {}

    def dataset(data: str, fold: int) -> LTRDataset:
        if (data, fold) not in loaded:
            loaded.clear()
            loaded[data, fold] = load_fold(config, data, fold)
        return loaded[data, fold]

    with tqdm(total=len(left), unit="training", disable=None) as bar:
        for data, fold, job in left:
            split = dataset(data, fold)
            if job.key not in trainings:
                if job.start is not None:
                    split = _started(split, store, *job.start)
                info = _fit(job, split, config)
                add_training(store, job.key, info.pop("margins"), **info)
            scale = float(trainings[job.key]["scale"])
            for name in SPLITS:
                margins = stored_margins(store, job.key, name)
                for key in (e for e in job.evals if e.split == name):
                    if key not in evaluations:
                        part = getattr(split, name)
                        add_evaluation(store, key, _evaluate(key, margins, scale, part, config))
            bar.set_postfix_str(f"{job.key.dataset} {job.key.curve} w={job.key.weight:g}")
            bar.update()
    for data, fold, key in oracles:
        if key not in evaluations:
            add_evaluation(store, key, evaluate_oracle(dataset(data, fold).test, k=config.k))


def run_frontier(config: FrontierConfig, *, echo: Callable[[str], None] = print) -> ResultStore:
    """Run every training and evaluation of ``config`` that its output folder does not hold.

    Returns
    -------
    ResultStore
        The output folder's results (its ``TABLES``), earlier runs' included.

    Raises
    ------
    ConfigError
        When a data entry is missing, the folder holds results of other settings, or the
        protected group cannot be formed on a fold (``item_groups.with_item_groups``).
    FolderInUseError
        When another run is writing to the output folder (:meth:`ResultStore.locked`).
    """
    check_data(config.datasets, config.folds, cross_validation=config.cross_validation)
    with ResultStore.locked(config.out, settings=config.settings(), tables=TABLES) as store:
        write_options(store.folder, config.trained_options())
        _fill(store, config, echo=echo)
    return store
