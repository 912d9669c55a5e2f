r"""The report of a fairness frontier: ``frontier.csv``, ``frontier.md`` and ``frontier.png``.

Each point (curve, fairness weight, temperature, group offset, split) of a data entry pools its
evaluations over the folds (every query once across the five LETOR folds), each query's values
averaged over the seeds first. Its standard errors are over those queries (``*_se``), and, for
the expected NDCG@k, the Monte-Carlo standard error of the mean over the sampled rankings
(``ndcg_mc_se``). The report's measure of fairness :math:`U` is the configuration's loss
(:attr:`~.config.FrontierConfig.measure`: EE-L, the disparity or the group disparity;
lower is fairer).

The goal check sets every post-hoc point against the trained fair policies, and the summary
counts the verdicts on the *post-hoc envelope* apart. Post-hoc points are the deterministic
rankers (LambdaMART, LambdaRank) and the relevance-only PL-Rank under every temperature and group
offset; the envelope is those that no other post-hoc point beats on validation in both expected
NDCG and :math:`U`. The fair policies are the trained fairness weights :math:`w > 0`, each as
trained and under every temperature, and random mixtures of two of them (a mixture's exposure is
the mixture of the two exposures: its expected NDCG is the interpolation; its :math:`U`, convex
in the exposure, is measured from the mixed exposures, or for evaluations that kept none bounded
by the interpolation: :class:`_Candidates`). For each post-hoc point two fair policies are
chosen **on validation** (:func:`_best`), the most relevant at no more unfairness (the highest
expected NDCG among those whose :math:`U` is at most the point's) and the fairest at no less
NDCG (the lowest :math:`U` among those whose expected NDCG is at least the point's), and
compared with it **on test**, query by query (:func:`.stats.paired`): the mean paired
differences of expected NDCG and of :math:`U`, with their standard errors over queries. The
other way round, each fair policy (every weight, as trained and under every temperature) is set
against the post-hoc policies (and their mixtures) chosen for it on validation the same way.
Differences are always fair minus post hoc; a verdict (:data:`VERDICTS`) says whether the fair
policy is better on test by more than :math:`z` standard errors in the compared measure without
being worse by more than :math:`z` in the other (``standard_errors`` of the configuration, 1 by
default). With ``ndcg_tolerance`` :math:`\delta > 0`, a fair policy's post-hoc policy *at no
less NDCG* is the fairest whose expected NDCG is at least the fair one's minus :math:`\delta`
(the post hoc side may be that much less relevant).

The *post-hoc floor* is read on validation: the post-hoc point of the highest expected NDCG,
and the fairest post-hoc point whose expected NDCG is within ``ndcg_tolerance`` of it; the
report gives their test values. The trainings' seconds, rounds and their ratio to LambdaMART's
are tabled per curve (:func:`training_times`).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..._fairness_terms import FAIRNESS_TERMS, FairnessTerm
from ..._util.compat import is_installed, missing_message, require
from ...datasets import Split
from ..data import family
from ..policy_eval import MixtureMeasure
from ..stats import paired
from ..store import ResultStore
from .config import FairStart, FrontierConfig
from .run import (
    DETERMINISTIC,
    FAIR,
    ORACLE,
    TEMPERATURE_CURVES,
    fold_sources,
    load_fold,
    planned_evaluations,
    planned_trainings,
)

__all__ = [
    "Comparison",
    "Match",
    "Point",
    "compare_points",
    "csv_columns",
    "measures",
    "pool",
    "post_hoc_floor",
    "training_times",
    "write_frontier_report",
]

#: The label of fair policies under a temperature (their points keep the curve name FAIR).
TEMPERED = "plrank-fair+temperature"

#: Legend names of the curves.
LABELS = {
    FAIR: "PL-Rank fair (fairness_weight grid)",
    TEMPERED: "PL-Rank fair + temperature",
    "plrank": "PL-Rank relevance-only + post hoc",
    "lambdamart": "LambdaMART (XGBoost) + post hoc",
    "lambdarank": "LambdaRank (LightGBM) + post hoc",
    DETERMINISTIC: "LambdaMART, deterministic",
    ORACLE: "equal-exposure oracle",
}


def measures() -> tuple[str, ...]:
    """The per-query values of an evaluation: ``"ndcg"`` and the column of every registered
    fairness term (:data:`~gbdt_plrank._fairness_terms.FAIRNESS_TERMS`)."""
    return ("ndcg", *(term.column for term in FAIRNESS_TERMS.values()))


def _term(measure: str) -> FairnessTerm:
    """The registered fairness term whose column is ``measure``."""
    return next(t for t in FAIRNESS_TERMS.values() if t.column == measure)


def csv_columns() -> tuple[str, ...]:
    """The columns of ``frontier.csv``: the point, then each measure's mean and standard error
    (and the Monte-Carlo standard error of the expected NDCG)."""
    point = (
        "dataset",
        "split",
        "curve",
        "fairness_weight",
        "temperature",
        "group_offset",
        "queries",
        "seeds",
        "ndcg",
        "ndcg_se",
        "ndcg_mc_se",
    )
    return point + tuple(c for m in measures()[1:] for c in (m, f"{m}_se"))


Values = dict[tuple[str, int], float]


@dataclass(frozen=True)
class Point:
    """One pooled point of a data entry and split: per-query values (seeds averaged).

    ``values`` maps each of the :func:`measures` that the evaluations hold to its per-query
    values, keyed by (fold label, query id). ``exposures``: (fold label, seed) -> the file of
    that evaluation's exposures in the store (:class:`~..policy_eval.PolicyValues`), from which
    mixtures are measured; None when an evaluation has none.
    """

    dataset: str
    split: str
    curve: str
    weight: float
    temperature: float
    offset: float
    seeds: int
    values: dict[str, Values]
    mc_se: float
    exposures: dict[tuple[str, int], str] | None = None

    @property
    def ndcg(self) -> Values:
        return self.values["ndcg"]

    @staticmethod
    def _mean_se(values: Values | None) -> tuple[float, float]:
        if not values:
            return math.nan, math.nan
        v = np.fromiter(values.values(), dtype=np.float64)
        return float(v.mean()), float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else 0.0

    def row(self) -> dict[str, object]:
        """The point's ``frontier.csv`` row."""
        out: dict[str, object] = {
            "dataset": self.dataset,
            "split": self.split,
            "curve": self.curve,
            "fairness_weight": self.weight,
            "temperature": self.temperature,
            "group_offset": self.offset,
            "queries": len(self.ndcg),
            "seeds": self.seeds,
            "ndcg_mc_se": self.mc_se,
        }
        for metric in measures():
            out[metric], out[f"{metric}_se"] = self._mean_se(self.values.get(metric))
        return out


def policy_name(point: Point) -> str:
    """``"w=0.3"`` for a fair policy as trained, ``"w=0.3 T=0.5"`` under a temperature, and
    ``"T=0.5 b=-1"`` for a post-hoc policy."""
    if point.curve != FAIR:
        name = f"T={point.temperature:g}"
        return f"{name} b={point.offset:g}" if point.offset else name
    name = f"w={point.weight:g}"
    return f"{name} T={point.temperature:g}" if point.temperature else name


def _series(point: Point) -> str:
    """The legend entry of a point: its curve, or TEMPERED for a fair policy under a temperature."""
    return TEMPERED if point.curve == FAIR and point.temperature else point.curve


def _mc_se(records: Sequence[dict], weights: dict[str, int], total: int) -> float:
    """Monte-Carlo s.e. of the pooled mean: folds weighted by their queries, seeds averaged."""
    by_fold: dict[str, list[dict]] = {}
    for r in records:
        by_fold.setdefault(r["dataset"], []).append(r)
    var = 0.0
    for fold, rs in by_fold.items():
        share = weights[fold] / total
        var += share**2 * sum(r["mc_var"] / r["n_samples"] for r in rs) / len(rs) ** 2
    return math.sqrt(var)


def pool(store: ResultStore, config: FrontierConfig) -> list[Point]:
    """The configuration's points, from the store's evaluations (others in the folder left out)."""
    wanted = set(planned_evaluations(config))
    groups: dict[tuple[str, str, str, float, float, float], list[dict]] = {}
    for key, record in store.records("evaluations").items():
        if key in wanted:
            where = (
                family(key.dataset),
                key.split,
                key.curve,
                key.weight,
                key.temperature,
                key.offset,
            )
            groups.setdefault(where, []).append(record)
    points = []
    for (name, split, curve, weight, temperature, offset), records in sorted(groups.items()):
        sums: dict[str, dict[tuple[str, int], list[float]]] = {}
        for r in records:
            for metric in measures():
                if r.get(metric) is None:
                    continue
                table = sums.setdefault(metric, {})
                for q, v in zip(r["qid"], r[metric]):
                    table.setdefault((r["dataset"], q), []).append(v)
        queries_per_fold = {r["dataset"]: len(r["qid"]) for r in records}
        means = {m: {q: float(np.mean(v)) for q, v in t.items()} for m, t in sums.items()}
        exposures = None
        if all(r.get("exposures") for r in records):
            exposures = {(r["dataset"], r["seed"]): r["exposures"] for r in records}
        points.append(
            Point(
                name,
                split,
                curve,
                weight,
                temperature,
                offset,
                len({r["seed"] for r in records}),
                means,
                _mc_se(records, queries_per_fold, sum(queries_per_fold.values())),
                exposures,
            )
        )
    return points


@dataclass(frozen=True)
class Match:
    """A fair policy chosen on validation for a post-hoc point, and its test comparison.

    ``name``: one fair policy (``"w=0.3"`` as trained, ``"w=1 T=0.5"`` under a temperature) or a
    random mixture of two (``"0.75 w=0.3 + 0.25 w=1"``). Test means of the fair policy
    (``ndcg``, ``unfairness``; a mixture's unfairness is measured from the mixed exposures, or
    for evaluations that kept none the interpolation, an upper bound: :class:`_Candidates`) and
    the mean paired differences fair minus post hoc over the test queries with their standard
    errors; ``p_randomization`` is the paired randomization test's for expected NDCG.
    """

    name: str
    ndcg: float
    unfairness: float
    ndcg_difference: float
    ndcg_se: float
    unfairness_difference: float
    unfairness_se: float
    p_randomization: float


@dataclass(frozen=True)
class Comparison:
    """A policy against the policies of the other side chosen for it (module docstring).

    ``side``: ``"post hoc"``, a post-hoc point against the fair policies, or ``"fair"``, a fair
    policy against the post-hoc points. ``at_level``: the chosen policy of the other side at no
    more unfairness than the fair one's side allows (validation): for a post-hoc base, the most
    relevant fair policy at no more unfairness; for a fair base, the most relevant post-hoc
    policy at no more unfairness. ``at_ndcg``: likewise the fairest at no less expected NDCG.
    None when none qualifies on validation ("not reached"). Differences in the matches are fair
    minus post hoc. ``envelope``: a post-hoc point on the post-hoc envelope (validation); True
    for a fair base.
    """

    dataset: str
    side: str
    curve: str
    weight: float
    temperature: float
    offset: float
    envelope: bool
    ndcg: float
    unfairness: float
    at_level: Match | None
    at_ndcg: Match | None
    standard_errors: float = 1.0

    @property
    def verdict(self) -> str:
        """The fair policy at no more unfairness on test (:data:`VERDICTS`), at
        ``standard_errors`` standard errors."""
        m, z = self.at_level, self.standard_errors
        if m is None:
            return "not reached"
        if m.ndcg_difference <= z * m.ndcg_se:
            return "not above"
        if m.unfairness_difference <= z * m.unfairness_se:
            return "above"
        return "more relevant, less fair"

    @property
    def fairer_verdict(self) -> str:
        """The fair policy at no less expected NDCG on test (:data:`VERDICTS`), at
        ``standard_errors`` standard errors."""
        m, z = self.at_ndcg, self.standard_errors
        if m is None:
            return "not reached"
        if -m.unfairness_difference <= z * m.unfairness_se:
            return "not above"
        return "above" if m.ndcg_difference >= -z * m.ndcg_se else "fairer, less relevant"


#: What a verdict says about the chosen fair policy on test; ``{z}``: the standard errors.
VERDICTS = {
    "above": "better by more than {z} in the compared measure, and not worse by more than {z} "
    "in the other",
    "more relevant, less fair": "higher expected NDCG by more than {z}, but more unfair by more "
    "than {z}: the validation level did not hold",
    "fairer, less relevant": "fairer by more than {z}, but less relevant by more than {z}: the "
    "validation level did not hold",
    "not above": "not better by more than {z}",
    "not reached": "no policy of the other side qualifies on validation (for a fair policy at "
    "no more unfairness: no post-hoc policy is as fair)",
}


def _errors(z: float) -> str:
    """``"one standard error"``, ``"2 standard errors"``."""
    return "one standard error" if z == 1 else f"{z:g} standard errors"


def _mean(values: Values, queries: Sequence) -> float:
    return float(np.mean([values[q] for q in queries]))


def _quadratic(
    at_i: np.ndarray, at_j: np.ndarray, mid: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Coefficients (a, b, c) of :math:`q(s) = a s^2 + b s + c` through q(0) = ``at_j``,
    q(1/2) = ``mid`` and q(1) = ``at_i``: a mean of a quadratic loss of the mixture of i (share
    s) and j."""
    a = 2.0 * (at_i + at_j) - 4.0 * mid
    return a, at_i - at_j - a, at_j


def _best(
    value: Sequence[float],
    cost: Sequence[float],
    level: float,
    *,
    value_mid: np.ndarray | None = None,
    cost_mid: np.ndarray | None = None,
) -> dict[int, float] | None:
    """The candidate, or random mixture of two, with the highest value at a cost <= ``level``.

    ``value_mid`` and ``cost_mid`` (n, n): the value and cost of each pair's half-half mixture;
    None where they are linear in the share (their interpolation). Over a pair (i, j) both are
    then quadratic in the share s of i (:func:`_quadratic`), and the best mixture is at a share
    where the cost meets the level, or where the value is highest. Returns {candidate index:
    share}, the fairer first, or None when no candidate or mixture has a cost at most the
    level.
    """
    v, c = np.asarray(value, dtype=np.float64), np.asarray(cost, dtype=np.float64)
    options = [(v[i], {i: 1.0}) for i in range(v.size) if c[i] <= level]
    vm = (v[:, None] + v[None, :]) / 2.0 if value_mid is None else value_mid
    cm = (c[:, None] + c[None, :]) / 2.0 if cost_mid is None else cost_mid
    va, vb, vc = np.broadcast_arrays(*_quadratic(v[:, None], v[None, :], vm))
    ca, cb, cc = np.broadcast_arrays(*_quadratic(c[:, None], c[None, :], cm))
    with np.errstate(divide="ignore", invalid="ignore"):
        flat = np.abs(ca) <= 1e-12 * (np.abs(cb) + np.abs(cc - level))
        disc = np.sqrt(np.maximum(cb * cb - 4.0 * ca * (cc - level), 0.0))
        shares = [
            np.where(flat, (level - cc) / cb, (-cb - disc) / (2.0 * ca)),
            np.where(flat, np.nan, (-cb + disc) / (2.0 * ca)),
            np.where(np.abs(va) > 0, -vb / (2.0 * va), np.nan),  # the value's extremum
        ]
    slack = 1e-12 * (1.0 + abs(level))
    for s in shares:
        with np.errstate(invalid="ignore"):
            at = (s > 0) & (s < 1) & (ca * s * s + cb * s + cc <= level + slack)
        at &= np.triu(np.ones_like(at), k=1)
        for i, j in zip(*np.nonzero(at)):
            share = float(s[i, j])
            fairer = (i, share), (j, 1.0 - share)
            if c[j] < c[i]:
                fairer = fairer[::-1]
            options.append((float(va[i, j] * share**2 + vb[i, j] * share + vc[i, j]), dict(fairer)))
    return max(options, key=lambda o: o[0])[1] if options else None


def _mixture_name(points: Sequence[Point], shares: dict[int, float]) -> str:
    """The name of a policy or mixture; a post-hoc policy's name starts with its curve."""

    def name(p: Point) -> str:
        return policy_name(p) if p.curve == FAIR else f"{p.curve} {policy_name(p)}"

    if len(shares) == 1:
        return name(points[next(iter(shares))])
    return " + ".join(f"{s:.2f} {name(points[i])}" for i, s in shares.items())


class MixtureSource:
    """What measures random mixtures of a frontier's policies: its store (the evaluations'
    exposures) and each fold's splits, loaded as the run loads them, once (their labels,
    query ids and item groups kept, not their features)."""

    def __init__(self, store: ResultStore, config: FrontierConfig) -> None:
        self.store, self.config = store, config
        self._sources = fold_sources(config)
        self._splits: dict[tuple[str, str], Split] = {}
        self._measures: dict[tuple[str, str, str], MixtureMeasure] = {}
        #: Each set of candidates' half-half mixtures, measured once (:class:`_Candidates`).
        self.pairs: dict[tuple, np.ndarray] = {}

    def split(self, fold: str, split: str) -> Split:
        """The ``split`` (``"vali"`` or ``"test"``) of the fold labelled ``fold``, without its
        features."""
        if (fold, split) not in self._splits:
            data = load_fold(self.config, *self._sources[fold])
            for name in ("vali", "test"):
                s = getattr(data, name)
                self._splits[fold, name] = Split(None, s.y, s.qid, s.item_groups)
        return self._splits[fold, split]

    def measure(self, fold: str, split: str, column: str) -> MixtureMeasure:
        """The :class:`~..policy_eval.MixtureMeasure` of ``column`` on a fold's split."""
        key = (fold, split, column)
        if key not in self._measures:
            self._measures[key] = MixtureMeasure(
                self.split(fold, split), k=self.config.k, columns=(column,)
            )
        return self._measures[key]

    def exposures(self, name: str) -> np.ndarray:
        """An evaluation's exposures (2, rows), by their file."""
        return self.store.load_array(name)


class _Candidates:
    """Policies of one side on one split over ``queries``: their per-query values and those of
    random mixtures of them.

    A mixture's exposure is the mixture of its policies' exposures, so its expected NDCG is the
    interpolation, and its fairness loss, convex in the exposure, at most the interpolation;
    with a ``source`` (and every evaluation's exposures) the loss is measured exactly
    (:func:`~..policy_eval.mixture_values`: each fold and seed, its two halves), else the
    interpolation stands in for it (``exact`` False), an upper bound.
    """

    def __init__(
        self,
        points: Sequence[Point],
        queries: Sequence,
        measure: str,
        *,
        split: str,
        source: MixtureSource | None = None,
    ) -> None:
        self.points, self.queries, self.measure = points, list(queries), measure
        self.split, self.source = split, source
        self.ndcg = np.array([[p.ndcg[q] for q in self.queries] for p in points])
        self.cost = np.array([[p.values[measure][q] for q in self.queries] for p in points])
        self.exact = source is not None and all(p.exposures for p in points)
        self._runs = sorted({run for p in points for run in (p.exposures or {})})

    @property
    def _source(self) -> MixtureSource:
        """The source of the exact mixtures (only they read it)."""
        if self.source is None:
            raise RuntimeError("exact mixtures need a MixtureSource; none was given")
        return self.source

    def _exposures(self, i: int, fold: str, seed: int) -> np.ndarray:
        """Policy ``i``'s two halves' exposures in a fold and seed."""
        exposures = self.points[i].exposures
        if exposures is None:
            raise RuntimeError(f"{self.points[i].curve} has no stored exposures")
        return self._source.exposures(exposures[fold, seed])

    def _fold(self, fold: str) -> tuple[MixtureMeasure, np.ndarray, np.ndarray]:
        """The measure of ``fold``'s split, the positions in ``queries`` of its queries and the
        query indices of the split they stand at."""
        measure = self._source.measure(fold, self.split, self.measure)
        index = {int(q): i for i, q in enumerate(np.unique(measure.split.qid))}
        mine = [(i, index[q]) for i, (f, q) in enumerate(self.queries) if f == fold]
        at, rows = (np.array(v, dtype=np.int64) for v in zip(*mine)) if mine else ([], [])
        return measure, np.asarray(at, dtype=np.int64), np.asarray(rows, dtype=np.int64)

    def _runs_by_fold(self) -> dict[str, list[int]]:
        """Each fold's seeds."""
        out: dict[str, list[int]] = {}
        for fold, seed in self._runs:
            out.setdefault(fold, []).append(seed)
        return out

    def _stack(self, fold: str, seed: int, which: Sequence[int] | None = None) -> np.ndarray:
        """(policies, 2, rows): the exposures of the policies ``which`` (all by default) in a
        fold and seed."""
        chosen = range(len(self.points)) if which is None else which
        return np.stack([self._exposures(i, fold, seed) for i in chosen])

    def mixed(self, shares: dict[int, float]) -> dict[str, np.ndarray]:
        """Per query: expected NDCG and the measure of the mixture ``shares``."""
        weights = np.zeros(len(self.points))
        weights[list(shares)] = list(shares.values())
        out = {"ndcg": weights @ self.ndcg, self.measure: weights @ self.cost}
        if self.exact and len(shares) > 1:
            exact = np.zeros(len(self.queries))
            for fold, seeds in self._runs_by_fold().items():
                measure, at, rows = self._fold(fold)
                for seed in seeds:
                    stack = self._stack(fold, seed, list(shares))
                    mixed = np.tensordot(list(shares.values()), stack, axes=1)
                    exact[at] += measure(mixed[None])[self.measure][0, rows] / len(seeds)
            out[self.measure] = exact
        return out

    def cost_mid(self) -> np.ndarray | None:
        """(n, n): the mean measure of each pair's half-half mixture; None where it is the
        interpolation. Computed once."""
        if not self.exact:
            return None
        key = (
            self.split,
            tuple(self.queries),
            tuple((p.curve, p.weight, p.temperature, p.offset) for p in self.points),
        )
        pairs = self._source.pairs
        if key not in pairs:
            pairs[key] = self._pairs()
        return pairs[key]

    def _pairs(self) -> np.ndarray:
        n = len(self.points)
        total = np.zeros((n, n))
        for fold, seeds in self._runs_by_fold().items():
            _, _, rows = self._fold(fold)
            source = self._source
            # m mixtures at a time: their own measure, whose tiled rows go with it
            measure = MixtureMeasure(
                source.split(fold, self.split), k=source.config.k, columns=(self.measure,)
            )
            for seed in seeds:
                every = self._stack(fold, seed)
                for i in range(n):
                    values = measure(0.5 * (every[i][None] + every))[self.measure]
                    total[i] += values[:, rows].sum(axis=1) / len(seeds)
        return total / len(self.queries)


#: A per-query difference smaller than this is the rounding of two equal values (a mixture's
#: shares, 1/3 say, are not exact in binary) and counts as 0, so that a tie is not a verdict.
_ROUNDING = 1e-12


def _match(
    base: Point,
    others: _Candidates,
    shares: dict[int, float],
    *,
    fair_base: bool,
) -> Match:
    """The test comparison of the mixture ``shares`` of ``others`` with ``base``, paired by
    query over the queries of ``others``.

    Differences are fair minus post hoc: ``others`` minus ``base``, or the reverse when the base
    is the fair policy (``fair_base``).
    """
    queries, measure = others.queries, others.measure
    mixed = others.mixed(shares)
    sign = -1.0 if fair_base else 1.0
    d = {m: sign * (v - np.array([base.values[m][q] for q in queries])) for m, v in mixed.items()}
    d = {m: np.where(np.abs(v) < _ROUNDING, 0.0, v) for m, v in d.items()}
    se = {m: float(v.std(ddof=1) / math.sqrt(v.size)) for m, v in d.items()}
    mixed_ndcg = dict(zip(queries, mixed["ndcg"]))
    fair, post = (base.ndcg, mixed_ndcg) if fair_base else (mixed_ndcg, base.ndcg)
    return Match(
        _mixture_name(others.points, shares),
        float(mixed["ndcg"].mean()),
        float(mixed[measure].mean()),
        float(d["ndcg"].mean()),
        se["ndcg"],
        float(d[measure].mean()),
        se[measure],
        paired({q: fair[q] for q in queries}, {q: post[q] for q in queries}).p_randomization,
    )


def _envelope(points: Sequence[Point], measure: str) -> set[tuple[str, float, float]]:
    """(curve, T, b) of the points that no other point beats in both NDCG and the measure."""
    means = [(_mean(p.ndcg, list(p.ndcg)), _mean(p.values[measure], list(p.ndcg))) for p in points]
    return {
        (p.curve, p.temperature, p.offset)
        for p, (n, u) in zip(points, means)
        if not any((n2 >= n and u2 <= u) and (n2 > n or u2 < u) for n2, u2 in means)
    }


def _aligned(vali: Sequence[Point], test: Sequence[Point]) -> tuple[list[Point], list[Point]]:
    """The policies of ``test`` that ``vali`` also holds, in the same order on both splits."""
    keys = {policy_name(p) + p.curve: p for p in vali}
    pairs = [(keys[policy_name(p) + p.curve], p) for p in test if policy_name(p) + p.curve in keys]
    return [v for v, _ in pairs], [t for _, t in pairs]


def _common(points: Sequence[Point]) -> list:
    """The queries every one of ``points`` scored, in the first one's order."""
    if not points:
        return []
    return [q for q in points[0].ndcg if all(q in p.ndcg for p in points)]


def _against(
    base: tuple[Point, Point],
    others: tuple[_Candidates, _Candidates],
    *,
    fair_base: bool,
    ndcg_tolerance: float = 0.0,
) -> tuple[Match | None, Match | None]:
    """Choose among ``others`` on validation for ``base`` (validation, test); compare on test.

    Returns the match at no more unfairness and the match at no less expected NDCG (for a fair
    base: no less than its own minus ``ndcg_tolerance``).
    """
    (base_v, base_t), (others_v, others_t) = base, others
    if not others_t.points or len(others_t.queries) < 2 or not others_v.queries:
        return None, None
    vq, measure = others_v.queries, others_v.measure
    nd, un = others_v.ndcg.mean(axis=1), others_v.cost.mean(axis=1)
    mid = others_v.cost_mid()
    chosen = (
        _best(nd, un, _mean(base_v.values[measure], vq), cost_mid=mid),
        _best(
            -un,
            -nd,
            -(_mean(base_v.ndcg, vq) - (ndcg_tolerance if fair_base else 0.0)),
            value_mid=None if mid is None else -mid,
        ),
    )
    at_level, at_ndcg = (
        None if c is None else _match(base_t, others_t, c, fair_base=fair_base) for c in chosen
    )
    return at_level, at_ndcg


def compare_points(
    points: Sequence[Point],
    *,
    measure: str,
    ndcg_tolerance: float = 0.0,
    standard_errors: float = 1.0,
    judged_on: str = "test",
    source: MixtureSource | None = None,
) -> list[Comparison]:
    """The goal check of the module docstring, for every post-hoc and every fair policy.

    Each post-hoc point (``side="post hoc"``) against the fair policies; each fair policy
    (``side="fair"``) against the post-hoc points (``at_level``: the most relevant post-hoc
    policy at no more unfairness; ``at_ndcg``: the fairest at no less expected NDCG, less
    ``ndcg_tolerance``). Differences are always fair minus post hoc; the verdicts count
    ``standard_errors`` standard errors. Means are over the queries of a split that every
    policy of both sides scored (all of them once a run is complete). ``judged_on="vali"``
    compares on the validation queries too (a choice of settings on validation, the test split
    left alone). With a ``source`` the mixtures' fairness is measured exactly, else it is the
    interpolation (:class:`_Candidates`).
    """
    if judged_on not in ("test", "vali"):
        raise ValueError(f"judged_on must be 'test' or 'vali', but {judged_on!r} is given.")
    out = []
    for name in dict.fromkeys(p.dataset for p in points):
        split = {
            s: (
                [
                    p
                    for p in points
                    if p.dataset == name and p.split == s and p.curve == FAIR and p.weight > 0
                ],
                [
                    p
                    for p in points
                    if p.dataset == name and p.split == s and p.curve in TEMPERATURE_CURVES
                ],
            )
            for s in ("vali", judged_on)
        }
        fair_v, fair_t = _aligned(split["vali"][0], split[judged_on][0])
        post_v, post_t = _aligned(split["vali"][1], split[judged_on][1])
        envelope = _envelope(post_v, measure)
        vq, tq = (_common([*f, *p]) for f, p in ((fair_v, post_v), (fair_t, post_t)))
        candidates = {
            side: tuple(
                _Candidates(ps, qs, measure, split=s, source=source)
                for ps, qs, s in ((v, vq, "vali"), (t, tq, judged_on))
            )
            for side, v, t in (("fair", fair_v, fair_t), ("post hoc", post_v, post_t))
        }
        for side, bases, other in (
            ("post hoc", (post_v, post_t), "fair"),
            ("fair", (fair_v, fair_t), "post hoc"),
        ):
            for base_v, base_t in zip(*bases):
                at_level, at_ndcg = _against(
                    (base_v, base_t),
                    candidates[other],
                    fair_base=side == "fair",
                    ndcg_tolerance=ndcg_tolerance,
                )
                key = (base_t.curve, base_t.temperature, base_t.offset)
                out.append(
                    Comparison(
                        name,
                        side,
                        base_t.curve,
                        base_t.weight,
                        base_t.temperature,
                        base_t.offset,
                        side == "fair" or key in envelope,
                        _mean(base_t.ndcg, tq),
                        _mean(base_t.values[measure], tq),
                        at_level,
                        at_ndcg,
                        standard_errors,
                    )
                )
    return out


def _csv(points: Sequence[Point], path: Path) -> None:
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=csv_columns())
        writer.writeheader()
        for p in points:
            writer.writerow(p.row())


def _table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    def cell(v: object) -> str:
        return f"{v:.4f}" if isinstance(v, float) else str(v)

    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return lines


def _summary(subsets: Sequence[tuple[str, Sequence[Comparison]]], measure: str) -> list[str]:
    """The verdicts' counts and the figures of the "above" ones, per labelled subset."""
    lines = []
    for label, subset in subsets:
        for what, verdict, attr, diff in (
            (
                f"higher expected NDCG at no more {measure}",
                "verdict",
                "at_level",
                "ndcg_difference",
            ),
            (
                f"lower {measure} at no less expected NDCG",
                "fairer_verdict",
                "at_ndcg",
                "unfairness_difference",
            ),
        ):
            counts = {v: sum(getattr(c, verdict) == v for c in subset) for v in VERDICTS}
            above = [getattr(c, attr) for c in subset if getattr(c, verdict) == "above"]
            line = f"- {label}, {what}: " + ", ".join(f"{v} {n}" for v, n in counts.items() if n)
            if above:
                best = max(above, key=lambda m: abs(getattr(m, diff)))
                se = best.ndcg_se if attr == "at_level" else best.unfairness_se
                spread = sorted(getattr(m, diff) for m in above)
                line += (
                    f"; where above, by {spread[0]:+.4f} to {spread[-1]:+.4f} (largest "
                    f"{getattr(best, diff):+.4f}, s.e. {se:.4f})"
                )
            lines.append(line + ".")
    return lines


def post_hoc_floor(
    points: Sequence[Point], *, measure: str, ndcg_tolerance: float = 0.0
) -> dict[str, tuple[Point, Point]]:
    """Per data entry, the test points of the post-hoc floor, both read on validation.

    The post-hoc point (a temperature curve under a temperature and an offset) of the highest
    validation expected NDCG, and the one of the lowest validation ``measure`` among those whose
    validation expected NDCG is within ``ndcg_tolerance`` of that highest.
    """
    out = {}
    for name in dict.fromkeys(p.dataset for p in points):
        post = [p for p in points if p.dataset == name and p.curve in TEMPERATURE_CURVES]
        vali, test = _aligned(
            [p for p in post if p.split == "vali"], [p for p in post if p.split == "test"]
        )
        if not vali:
            continue
        ndcg = [_mean(p.ndcg, list(p.ndcg)) for p in vali]
        unfair = [_mean(p.values[measure], list(p.ndcg)) for p in vali]
        best = int(np.argmax(ndcg))
        near = [i for i in range(len(vali)) if ndcg[i] >= ndcg[best] - ndcg_tolerance]
        out[name] = test[best], test[min(near, key=lambda i: unfair[i])]
    return out


@dataclass(frozen=True)
class TrainingTime:
    """The trainings of one curve and weight of a data entry: how many, their mean seconds,
    kept round and rounds run, and their summed seconds over LambdaMART's on the same folds
    and seeds."""

    dataset: str
    curve: str
    weight: float
    trainings: int
    seconds: float
    best_round: float
    rounds_run: float
    over_lambdamart: float


def training_times(records: dict, config: FrontierConfig) -> list[TrainingTime]:
    """:class:`TrainingTime` of every curve and weight ``config`` trains, from the store's
    trainings (``records``: key -> record) that it plans."""
    groups: dict[tuple[str, str, float], list[dict]] = {}
    for key in planned_trainings(config):
        if key in records:
            groups.setdefault((family(key.dataset), key.curve, key.weight), []).append(records[key])
    lambdamart = {
        (r["dataset"], r["seed"]): r["train_seconds"]
        for (_, curve, _), rs in groups.items()
        if curve == "lambdamart"
        for r in rs
    }
    out = []
    for (name, curve, weight), rs in groups.items():
        base = [lambdamart.get((r["dataset"], r["seed"])) for r in rs]
        known = [b for b in base if b is not None]
        ratio = (
            sum(r["train_seconds"] for r in rs) / sum(known)
            if len(known) == len(base)
            else math.nan
        )
        out.append(
            TrainingTime(
                name,
                curve,
                weight,
                len(rs),
                float(np.mean([r["train_seconds"] for r in rs])),
                float(np.mean([r["best_round"] for r in rs])),
                float(np.mean([r["rounds_run"] for r in rs])),
                ratio,
            )
        )
    return out


def _goal_lines(
    validation: Sequence[Comparison], test: Sequence[Comparison], measure: str, digits: int
) -> list[str]:
    """The fair policies chosen on validation for the goal and their test comparisons."""
    by_policy = {(c.weight, c.temperature): c for c in test if c.side == "fair"}
    fair = [c for c in validation if c.side == "fair"]
    lines = []
    for what, attr, diff, pick, verdict in (
        (
            "fairest against its post-hoc match at no less NDCG",
            "at_ndcg",
            "unfairness",
            min,
            "fairer_verdict",
        ),
        (
            f"most relevant against its post-hoc match at no more {measure}",
            "at_level",
            "ndcg",
            max,
            "verdict",
        ),
    ):
        qualified = [c for c in fair if getattr(c, attr) is not None]
        if not qualified:
            lines.append(f"- {what}: none qualifies on validation.")
            continue
        chosen = pick(qualified, key=lambda c: getattr(getattr(c, attr), f"{diff}_difference"))
        v = getattr(chosen, attr)
        width = digits if diff == "unfairness" else 4
        name = diff if diff == "ndcg" else measure
        line = (
            f"- {what} on validation: w={chosen.weight:g}"
            + (f" T={chosen.temperature:g}" if chosen.temperature else "")
            + f" ({name} {getattr(v, f'{diff}_difference'):+.{width}f}, s.e. "
            f"{getattr(v, f'{diff}_se'):.{width}f}, against {v.name})"
        )
        t = by_policy.get((chosen.weight, chosen.temperature))
        m = None if t is None else getattr(t, attr)
        if m is None:
            line += "; on test no post-hoc policy qualifies."
        else:
            line += (
                f"; on test against {m.name}: NDCG {m.ndcg_difference:+.4f} (s.e. "
                f"{m.ndcg_se:.4f}), {measure} {m.unfairness_difference:+.{digits}f} (s.e. "
                f"{m.unfairness_se:.{digits}f}), *{getattr(t, verdict)}*."
            )
        lines.append(line)
    return lines


def _match_cells(m: Match | None, verdict: str, *, digits: int) -> list[object]:
    if m is None:
        return ["", "", "", "", "", verdict]
    return [
        m.name,
        f"{m.ndcg:.4f}",
        f"{m.unfairness:.{digits}f}",
        f"{m.ndcg_difference:+.4f} ({m.ndcg_se:.4f})",
        f"{m.unfairness_difference:+.{digits}f} ({m.unfairness_se:.{digits}f})",
        verdict,
    ]


def _floor_lines(floor: tuple[Point, Point], measure: str, ndcg_tolerance: float) -> list[str]:
    digits = _term(measure).digits

    def said(p: Point) -> str:
        r = p.row()
        return (
            f"{LABELS[p.curve]} {policy_name(p)}: expected NDCG {r['ndcg']:.4f}, {measure} "
            f"{r[measure]:.{digits}f} (s.e. {r[measure + '_se']:.{digits}f})"
        )

    best, fairest = floor
    lines = [f"Post-hoc floor (chosen on validation, test values): the most relevant, {said(best)}"]
    if ndcg_tolerance:
        lines[0] += (
            f"; the fairest within {ndcg_tolerance:g} expected NDCG of it on validation, "
            f"{said(fairest)}"
        )
    return [lines[0] + ".", ""]


def _time_lines(times: Sequence[TrainingTime]) -> list[str]:
    rows = [
        [
            LABELS[t.curve],
            f"{t.weight:g}" if t.curve == FAIR else "",
            t.trainings,
            f"{t.seconds:.1f}",
            f"{t.over_lambdamart:.2f}x",
            f"{t.best_round:.0f}",
            f"{t.rounds_run:.0f}",
        ]
        for t in times
    ]
    return [
        "",
        "### Training time",
        "",
        "Mean seconds of a training, its summed seconds over LambdaMART's on the same folds "
        "and seeds, and the mean kept round and rounds run (one process, the configuration's "
        "threads).",
        "",
        *_table(["curve", "w", "trainings", "s", "x LambdaMART", "kept round", "rounds run"], rows),
    ]


def markdown(
    points: Sequence[Point],
    comparisons: Sequence[Comparison],
    command: str | None,
    *,
    measure: str,
    ndcg_tolerance: float = 0.0,
    standard_errors: float = 1.0,
    times: Sequence[TrainingTime] = (),
    exact_mixtures: bool = False,
    validation: Sequence[Comparison] = (),
    fair_start: FairStart | None = None,
) -> str:
    """``frontier.md``: per dataset the post-hoc floor, the fair policies chosen on
    ``validation`` (comparisons judged there) and their test comparisons, the goal check's
    summary and tables, the training times and every test point; where the fair curve
    started (``fair_start``)."""
    lines = ["# Fairness frontier", ""]
    if command:
        lines += [f"`{command}`", ""]
    if fair_start is not None:
        lines += [f"Fair curve: {fair_start.describe()}.", ""]
    digits = _term(measure).digits
    floors = post_hoc_floor(points, measure=measure, ndcg_tolerance=ndcg_tolerance)
    z = _errors(standard_errors)
    for name in dict.fromkeys(p.dataset for p in points):
        mine = [c for c in comparisons if c.dataset == name]
        queries = max(
            (len(p.ndcg) for p in points if p.dataset == name and p.split == "test"), default=0
        )
        lines += [
            f"## {name}",
            "",
            f"{queries} test queries; the fairness measure is {measure} "
            "(lower is fairer). Policies are chosen on validation and compared on test, "
            "paired by query (differences: fair minus post hoc, standard errors over "
            "queries). A random mixture of two policies' "
            + (
                f"{measure} is measured from the mixture of their exposures"
                if exact_mixtures
                else f"{measure} is the interpolation of theirs, an upper bound (the "
                "evaluations kept no exposures)"
            )
            + (
                f"; a fair policy's post-hoc policy at no less NDCG may be {ndcg_tolerance:g} "
                "less relevant on validation"
                if ndcg_tolerance
                else ""
            )
            + ".",
            "",
        ]
        if name in floors:
            lines += _floor_lines(floors[name], measure, ndcg_tolerance)
        chosen = [c for c in validation if c.dataset == name]
        if chosen:
            lines += [
                "The fair policy chosen on validation (its comparisons measured on validation "
                "too), then compared on test:",
                "",
                *_goal_lines(chosen, mine, measure, digits),
                "",
            ]
        post = [c for c in mine if c.side == "post hoc"]
        fair = [c for c in mine if c.side == "fair"]
        lines += _summary(
            [
                (
                    f"Fair policies for the {sum(c.envelope for c in post)} points of the post-hoc "
                    "envelope",
                    [c for c in post if c.envelope],
                ),
                (f"Fair policies for all {len(post)} post-hoc points", post),
                (f"The {len(fair)} fair policies against the post-hoc points", fair),
            ],
            measure,
        )
        lines += [
            "",
            "Verdicts (on test, for the policy chosen on validation): "
            + "; ".join(f"*{v}*: {text.format(z=z)}" for v, text in VERDICTS.items())
            + ".",
        ]
        half = ["policy", "NDCG", measure, "NDCG diff (s.e.)", f"{measure} diff (s.e.)", "verdict"]
        for title, rows_of, first in (
            (
                "The post-hoc envelope against the fair policies chosen for it",
                [c for c in post if c.envelope],
                ["post hoc", "T", "b"],
            ),
            (
                "Each fair policy against the post-hoc policies chosen for it",
                fair,
                ["fair", "w", "T"],
            ),
        ):
            other = "fair" if first[0] == "post hoc" else "post hoc"
            rows = [
                [
                    LABELS[c.curve],
                    *(
                        (f"{c.temperature:g}", f"{c.offset:g}")
                        if c.side == "post hoc"
                        else (f"{c.weight:g}", f"{c.temperature:g}")
                    ),
                    f"{c.ndcg:.4f}",
                    f"{c.unfairness:.{digits}f}",
                    *_match_cells(c.at_level, c.verdict, digits=digits),
                    *_match_cells(c.at_ndcg, c.fairer_verdict, digits=digits),
                ]
                for c in rows_of
            ]
            lines += [
                "",
                f"### {title}",
                "",
                f"Columns after the first five: the {other} "
                f"policy at no more {measure}, then the one at no less NDCG; differences "
                "fair minus post hoc.",
                "",
            ]
            lines += _table(
                [
                    *first,
                    "NDCG",
                    measure,
                    *[f"{h} (no more {measure})" for h in half],
                    *[f"{h} (no less NDCG)" for h in half],
                ],
                rows,
            )
        lines += _time_lines([t for t in times if t.dataset == name])
        lines += [
            "",
            "### Every test point",
            "",
            "Mean over the pooled test queries (standard "
            "error over queries; for NDCG also the Monte-Carlo standard error).",
            "",
        ]
        rows = []
        for p in (p for p in points if p.dataset == name and p.split == "test"):
            r = p.row()
            rows.append(
                [
                    LABELS[_series(p)],
                    policy_name(p) if p.curve not in (DETERMINISTIC, ORACLE) else "",
                    f"{r['ndcg']:.4f} ({r['ndcg_se']:.4f}; MC {r['ndcg_mc_se']:.4f})",
                    *(f"{r[m]:.5f} ({r[m + '_se']:.5f})" for m in measures()[1:]),
                    r["queries"],
                ]
            )
        titles = [t.title for t in FAIRNESS_TERMS.values()]
        lines += _table(["policy", "setting", "expected NDCG", *titles, "queries"], rows)
        lines.append("")
    return "\n".join(lines)


def _oracle_inside(ax: object, points: Sequence[Point], metric: str) -> None:
    """Zoom on the policies; the oracle, far off at NDCG 1, is named in a corner instead.

    The right edge is that of the policies without a group offset: offsets that make a policy
    less fair than every one of those fall off the plot.
    """
    rows = [p.row() for p in points if p.curve != ORACLE]
    oracle = [p.row() for p in points if p.curve == ORACLE]
    if not rows or not oracle:
        return
    xs, ys = [r[metric] for r in rows], [r["ndcg"] for r in rows]
    right = max(p.row()[metric] for p in points if p.curve != ORACLE and not p.offset)
    pad_x, pad_y = 0.05 * (right - min(xs) or 1.0), 0.05 * (max(ys) - min(ys) or 1.0)
    ax.set_xlim(min(xs) - pad_x, right + pad_x)  # type: ignore[attr-defined]
    ax.set_ylim(min(ys) - pad_y, max(ys) + pad_y)  # type: ignore[attr-defined]
    o = oracle[0]
    ax.text(  # type: ignore[attr-defined]
        0.02,
        0.02,
        f"oracle (off the plot): {o[metric]:.3f}, NDCG {o['ndcg']:.3f}",
        transform=ax.transAxes,  # type: ignore[attr-defined]
        fontsize="small",
    )


_STYLES = {
    FAIR: {"color": "C3", "marker": "o", "linestyle": "-", "linewidth": 2},
    TEMPERED: {"color": "C3", "marker": ".", "linestyle": "-", "linewidth": 0.8, "alpha": 0.35},
    "plrank": {"color": "C1", "marker": "s", "linestyle": "--"},
    "lambdamart": {"color": "C0", "marker": "^", "linestyle": "--"},
    "lambdarank": {"color": "C2", "marker": "v", "linestyle": ":"},
    DETERMINISTIC: {"color": "C0", "marker": "*", "markersize": 14, "linestyle": "none"},
    ORACLE: {"color": "k", "marker": "D", "markersize": 8, "linestyle": "none"},
}


def plot_frontier(points: Sequence[Point], path: Path, *, measure: str) -> None:
    """Expected NDCG against the fairness measure on test, one panel per data entry.

    Post-hoc rankers: a line over the temperatures without offset, and small markers for the
    group offsets; fair policies: a line over the weights as trained, thin lines under
    temperatures.
    """
    figure_module = require("matplotlib.figure", purpose="frontier.png")
    names = list(dict.fromkeys(p.dataset for p in points))
    fig = figure_module.Figure(figsize=(7, 4.6 * len(names) + 0.9), layout="constrained")
    axes = fig.subplots(len(names), 1, squeeze=False)[:, 0]
    for ax, name in zip(axes, names):
        mine = [p for p in points if p.dataset == name and p.split == "test"]
        for series, style in _STYLES.items():
            pts = sorted(
                (p for p in mine if _series(p) == series),
                key=lambda p: (p.weight, p.offset, p.temperature),
            )
            lines = sorted({p.weight for p in pts}) if series == TEMPERED else [None]
            for i, weight in enumerate(lines):  # one line per weight under temperatures
                rows = [
                    p.row() for p in pts if (weight is None or p.weight == weight) and not p.offset
                ]
                ax.plot(
                    [r[measure] for r in rows],
                    [r["ndcg"] for r in rows],
                    label=LABELS[series] if i == 0 else None,
                    **style,
                )
            shifted = [p.row() for p in pts if p.offset]
            if shifted:
                ax.plot(
                    [r[measure] for r in shifted],
                    [r["ndcg"] for r in shifted],
                    linestyle="none",
                    marker=style["marker"],
                    color=style["color"],
                    markersize=3,
                    alpha=0.4,
                )
            if series == FAIR:
                for p in pts:
                    r = p.row()
                    ax.annotate(
                        f"w={p.weight:g}",
                        (r[measure], r["ndcg"]),
                        fontsize=7,
                        textcoords="offset points",
                        xytext=(4, 4),
                    )
        _oracle_inside(ax, mine, measure)
        ax.set(
            title=f"{name} (small markers: group offsets, the least fair off the plot)"
            if any(p.offset for p in mine)
            else name,
            xlabel=_term(measure).axis,
            ylabel="expected NDCG@10 (test)",
        )
        ax.grid(alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=2, fontsize="small")
    fig.savefig(path, dpi=120)


def write_frontier_report(
    config: FrontierConfig, store: ResultStore, *, command: str | None = None
) -> str:
    """Write ``frontier.csv``, ``frontier.md`` and ``frontier.png`` into ``config.out``.

    Returns the markdown. Without matplotlib the picture is not drawn, and the markdown says so.
    """
    out = Path(config.out)
    points = pool(store, config)
    _csv(points, out / "frontier.csv")
    measure = config.measure
    options = {"ndcg_tolerance": config.ndcg_tolerance, "standard_errors": config.standard_errors}
    source = MixtureSource(store, config)
    text = markdown(
        points,
        compare_points(points, measure=measure, source=source, **options),
        command,
        measure=measure,
        validation=compare_points(
            points, measure=measure, source=source, judged_on="vali", **options
        ),
        times=training_times(store.records("trainings"), config),
        exact_mixtures=all(p.exposures for p in points if p.curve in (FAIR, *TEMPERATURE_CURVES)),
        fair_start=config.fair_start,
        **options,
    )
    if is_installed("matplotlib"):
        plot_frontier(points, out / "frontier.png", measure=measure)
    else:
        text += f"\nfrontier.png is not drawn: {missing_message('matplotlib', purpose='it')}\n"
    (out / "frontier.md").write_text(text, encoding="utf-8")
    return text
