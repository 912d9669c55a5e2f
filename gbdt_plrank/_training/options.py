r"""The options of the PL-Rank objective: one validated object for every caller.

:class:`PLRankOptions` holds what defines a PL-Rank objective: the cut-off ``K`` a ranker is judged
at, the cut-off ``train_K`` it trains at, the rankings sampled per query, the metric and its gain,
the Hessian mode, the sampler and its noise, the share of the queries a round estimates, and the
fairness term. :func:`~gbdt_plrank.plrank_objective`, :func:`~gbdt_plrank.plrank_grad_hess`,
:class:`~gbdt_plrank.PLRankRanker`, :class:`~gbdt_plrank.nn.PLRankMLPRanker`,
:class:`~gbdt_plrank.dask.DaskPLRankRanker` and the comparison harness's ``[plrank]`` table all
build it, so that one set of rules (each field's, and the fairness rules that tie fields together)
checks them, with errors that name the value and the rule.

It is also the one owner of the options' defaults and of their documentation: the public
signatures take their defaults from :data:`DEFAULTS` (the fields' defaults) and their parameter
documentation from :data:`OPTION_DOCS` through :func:`option_docs`, so neither can drift
between them. ``"auto"`` values are resolved here only: ``train_K`` by
:attr:`PLRankOptions.training_K`, ``N`` by :attr:`PLRankOptions.training_N`, ``hessian`` by
:attr:`PLRankOptions.training_hessian`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal, TypeVar

from pydantic import Field, model_validator

from .._fairness_terms import FAIRNESS_TERMS, fairness_names
from .._ranking_metric import GAINS, METRICS, RankingMetric
from .._util.docs import fill_entries
from .._util.schema import Schema, one_of, registered, validate
from .fairness_spec import EMPTY_QUERIES, FAIR_METRICS, FairnessSpec

__all__ = [
    "AUTO_DEEP_WEIGHT",
    "AUTO_N",
    "AUTO_N_FAIR",
    "AUTO_N_NETWORK",
    "DEFAULTS",
    "FINISHED_HESSIANS",
    "HESSIAN_CHOICES",
    "HESSIAN_MODES",
    "NOISES",
    "OPTION_DOCS",
    "SAMPLERS",
    "TRAIN_K_FACTOR",
    "PLRankFields",
    "PLRankOptions",
    "option_docs",
    "training_cutoff",
]

#: What the booster receives as Hessian from one estimate
#: (:func:`gbdt_plrank._training.plrank_grad_hess.finish_hessian`): the modes of any objective's
#: Hessian.
FINISHED_HESSIANS = ("abs", "raw", "clip", "constant")

#: What the booster receives as Hessian: :data:`FINISHED_HESSIANS` and ``"denoised"``, which
#: estimates from two independent halves of the sampled rankings.
HESSIAN_MODES = (*FINISHED_HESSIANS, "denoised")

#: The ``hessian`` option's values: a mode of :data:`HESSIAN_MODES`, or ``"auto"``
#: (:attr:`PLRankOptions.training_hessian`).
HESSIAN_CHOICES = ("auto", *HESSIAN_MODES)

#: How rankings are drawn: sequentially from a sum tree, by an exponential race, or the cheaper.
SAMPLERS = ("auto", "tree", "race")

#: The uniforms the samplers draw with: a randomly shifted lattice per query, or independent.
NOISES = ("lattice", "independent")

#: ``train_K="auto"`` trains a ranker judged at the cut-off K on rankings this many times longer.
TRAIN_K_FACTOR = 2

#: ``N="auto"`` without a fairness term: rankings sampled per query and round. On the LETOR
#: validation splits models trained with 50 and with 100 level, and 50 takes two thirds of the
#: time.
AUTO_N = 50

#: ``N="auto"`` with a fairness term. Its exposure and its gradient terms come from two
#: independent halves of the rankings, so each half holds N/2. On MQ2008 Fold3 a group-fair
#: ``PLRankRanker(K=10, n_estimators=300, learning_rate=0.05, fairness_weight=3)`` was less fair
#: and less relevant with 50 than with 100, as trained and sharpened (at temperature 0.05: test
#: group disparity 0.316 against 0.271, expected ``NDCG@10`` 0.649 against 0.656;
#: ``benchmarks/results/fairness_samples.md``).
AUTO_N_FAIR = 100

#: ``N="auto"`` for a network (:class:`~gbdt_plrank.nn.PLRankMLPRanker`, the harness's
#: ``plrank-nn``), which takes a step per batch of queries: on MQ2007-agg's validation splits
#: its model with 100 was ahead of 50 by 0.011 ``NDCG@10`` (p 0.0002), level on MQ2008
#: (``benchmarks/results/nn_setups_n.md``).
AUTO_N_NETWORK = 100


PositiveInt = Annotated[int, Field(ge=1)]
DeepWeight = Annotated[float, Field(ge=1, allow_inf_nan=False)]

#: ``deep_weight="auto"`` (:class:`~gbdt_plrank.PLRankRanker`'s default) without a fairness
#: term: the most a deep document's gradient is weighted up. Chosen on the first
#: call's validation queries, where it was level with or ahead of 1 (PL-Rank's own gradient) in
#: every cell of the web data, the MSLR sample and LETOR, at NDCG@5 and @10 on both boosters
#: (:doc:`/guide/performance`, "The first call"; :doc:`/research/per-round`).
AUTO_DEEP_WEIGHT = 4.0


def training_cutoff(K: int, train_K: int | str = "auto", *, fairness: str | None = None) -> int:
    r"""The cut-off the objective trains at, for a ranker judged by its metric@K.

    ``train_K="auto"`` is :math:`2K` without fairness: the rankings
    sampled for training are longer than the cut-off the ranker is judged at, so the documents
    just below it (the ones a better model lifts into the top K) also get gradient. The
    libraries' LambdaMART objectives do the same: XGBoost ``rank:ndcg`` builds its pairs from the
    top 32 documents of every query and LightGBM ``lambdarank`` from the top 30
    (``lambdarank_truncation_level``), whatever the evaluation cut-off. With fairness,
    ``"auto"`` is K: a fairness term is defined by the exposure at the cut-off K, so training at
    another cut-off would optimise another fairness. An integer ``train_K`` is used as given.

    Raises
    ------
    ValueError
        When ``K`` is not an integer >= 1, or ``train_K`` is neither ``"auto"`` nor one.
    """
    return PLRankOptions.checked(K=K, train_K=train_K, fairness=fairness).training_K


class PLRankFields(Schema):
    """The options of :class:`PLRankOptions` but its cut-off ``K`` (a comparison sets ``k``)."""

    train_K: Literal["auto"] | PositiveInt = Field("auto", description='"auto" or an integer >= 1')
    N: Literal["auto"] | PositiveInt = Field("auto", description='"auto" or an integer >= 1')
    metric: Literal[METRICS] = Field("ndcg", description=one_of(METRICS))  # type: ignore[valid-type]
    gain: Literal[GAINS] = Field("exp", description=one_of(GAINS))  # type: ignore[valid-type]
    hessian: Literal[HESSIAN_CHOICES] = Field(  # type: ignore[valid-type]
        "auto", description=one_of(HESSIAN_CHOICES)
    )
    sampler: Literal[SAMPLERS] = Field("auto", description=one_of(SAMPLERS))  # type: ignore[valid-type]
    noise: Literal[NOISES] = Field("independent", description=one_of(NOISES))  # type: ignore[valid-type]
    query_subsample: float = Field(
        1.0, gt=0, le=1, allow_inf_nan=False, description="a number in (0, 1]"
    )
    deep_weight: Literal["auto"] | DeepWeight = Field(
        1.0, description='"auto" or a finite number >= 1'
    )
    fairness: registered(fairness_names, optional=True) = Field(  # type: ignore[valid-type]
        None, description="None or a registered fairness term's name"
    )
    fairness_weight: float = Field(
        1.0, ge=0, allow_inf_nan=False, description="a finite number >= 0"
    )
    empty_queries: Literal[EMPTY_QUERIES] = Field(  # type: ignore[valid-type]
        "skip", description=one_of(EMPTY_QUERIES)
    )

    @model_validator(mode="after")
    def _joint_rules(self) -> PLRankFields:
        """The rules that tie options together: empty_queries, hessian="denoised" and fairness
        against N, fairness against the metric."""
        targets = [name for name, term in FAIRNESS_TERMS.items() if term.uniform_target]
        if self.empty_queries == "uniform" and self.fairness not in targets:
            raise ValueError(
                "empty_queries='uniform' trains the queries without a relevant document toward "
                "the fairness loss's target there (equal exposure), so it needs "
                + " or ".join(f"fairness={name!r}" for name in targets)
                + f", but fairness={self.fairness!r} is given"
            )
        least = 2 if self.fairness is None else 4
        if self.hessian == "denoised" and self.N != "auto" and self.N < least:
            raise ValueError(
                f"N must be >= {least} with hessian='denoised' (it estimates from two halves of "
                "the N rankings"
                + (
                    ""
                    if self.fairness is None
                    else ", and each half's fairness terms from two halves of its own"
                )
                + f"), but {self.N!r} is given"
            )
        if self.fairness is None:
            return self
        if self.metric not in FAIR_METRICS:
            raise ValueError(
                f"fairness={self.fairness!r} measures exposure with the DCG rank weights "
                f"1/log2(rank+1), so metric must be {one_of(FAIR_METRICS)}, but "
                f"{self.metric!r} is given"
            )
        if self.N != "auto" and self.N < 2:
            raise ValueError(
                f"N must be >= 2 with fairness={self.fairness!r} (exposure and gradient terms "
                f"come from two halves of the N rankings), but {self.N!r} is given"
            )
        return self


class PLRankOptions(PLRankFields):
    r"""The options of a PL-Rank objective, validated.

    Attributes
    ----------
    .. plrank-options:: K train_K N metric gain hessian sampler noise query_subsample
    .. plrank-options:: deep_weight fairness fairness_weight empty_queries
    """

    K: int = Field(5, ge=1, description="an integer >= 1")

    @classmethod
    def checked(cls, **options: Any) -> PLRankOptions:
        """The options, or a ``ValueError`` naming the first value that breaks its rule."""
        return validate(cls, options, source="the PL-Rank options")

    @property
    def training_K(self) -> int:
        """``train_K`` resolved: the cut-off training uses, ``train_K`` itself or for ``"auto"``
        2K (K with fairness). ``train_K`` keeps the value as given (``"auto"`` included), as
        :attr:`training_N` resolves ``N``; :meth:`resolved` records it under ``"train_K"``."""
        if self.train_K == "auto":
            return self.K if self.fairness is not None else TRAIN_K_FACTOR * self.K
        return self.train_K

    @property
    def training_deep_weight(self) -> float:
        """``deep_weight`` resolved: a number as given; ``"auto"`` is
        :data:`~gbdt_plrank._training.options.AUTO_DEEP_WEIGHT` without ``fairness`` and 1.0
        with it (a fairness term's training is measured with PL-Rank's own gradient)."""
        if self.deep_weight == "auto":
            return AUTO_DEEP_WEIGHT if self.fairness is None else 1.0
        return self.deep_weight

    @property
    def training_N(self) -> int:
        """``N`` resolved: the rankings sampled per query and round, ``N`` itself or for ``"auto"``
        :data:`~gbdt_plrank._training.options.AUTO_N`
        (:data:`~gbdt_plrank._training.options.AUTO_N_FAIR` with fairness)."""
        if self.N == "auto":
            return AUTO_N if self.fairness is None else AUTO_N_FAIR
        return self.N

    @property
    def training_hessian(self) -> str:
        """``hessian`` resolved: a mode as given, and ``"auto"`` is ``"denoised"`` without
        ``fairness`` (from 2 rankings on, :attr:`training_N`) and ``"abs"`` with a fairness term
        (or a single ranking)."""
        if self.hessian != "auto":
            return self.hessian
        return "denoised" if self.fairness is None and self.training_N >= 2 else "abs"

    def for_network(self) -> PLRankOptions:
        """These options for a network's training: ``N="auto"`` becomes
        :data:`~gbdt_plrank._training.options.AUTO_N_NETWORK`, and ``hessian="auto"``
        ``"abs"``: a network reads only the gradient, which one pass over the rankings gives.

        Raises
        ------
        ValueError
            For ``query_subsample`` below 1: it thins a booster's rounds, and a network's steps
            are already on batches of queries. For ``deep_weight`` above 1: it lengthens a
            boosting round's steps, measured for boosted trees only (``"auto"`` becomes 1.0).
        """
        if self.query_subsample != 1.0:
            raise ValueError(
                f"query_subsample leaves queries out of a boosting round; a network steps on "
                f"batches of queries already, so it must be 1.0, but {self.query_subsample!r} "
                "is given"
            )
        if self.deep_weight not in ("auto", 1.0):
            raise ValueError(
                "deep_weight weights a boosting round's gradient and is measured for boosted "
                f"trees only, so a network needs 1.0, but {self.deep_weight!r} is given"
            )
        update: dict[str, Any] = {}
        if self.deep_weight == "auto":
            update["deep_weight"] = 1.0
        if self.N == "auto":
            update["N"] = AUTO_N_NETWORK
        if self.hessian == "auto":
            update["hessian"] = "abs"
        return self.model_copy(update=update) if update else self

    def resolved(self) -> dict[str, Any]:
        """The options a training uses, as JSON-able data: ``"auto"`` values resolved.

        ``train_K`` is :attr:`training_K`, ``N`` is :attr:`training_N`, ``hessian`` is
        :attr:`training_hessian` and ``deep_weight`` is :attr:`training_deep_weight`; the
        harness records this for every PL-Rank training of a results folder (``options.json``).
        """
        return {
            **self.model_dump(),
            "train_K": self.training_K,
            "N": self.training_N,
            "hessian": self.training_hessian,
            "deep_weight": self.training_deep_weight,
        }

    @property
    def signed_labels(self) -> bool:
        """Whether the labels may be negative: with ``metric="dcg"`` or ``"ndcg"`` and
        ``gain="linear"``, without fairness.

        The expected DCG with the linear gain is linear in the labels, so signed rewards (the
        doubly robust click rewards of :func:`gbdt_plrank.clicks.click_rewards`) keep it an
        unbiased objective. NDCG divides each query's expected DCG by the ideal DCG@K of its
        labels' positive part, which is the labels' own ideal DCG when none is negative, so
        signed and non-negative rewards train on one footing; a query without a positive label
        is skipped, as NDCG skips a query whose ideal DCG is 0. That normaliser is computed from
        the query's own (noisy) rewards: it weighs each query as NDCG does, at the price of
        the per-query unbiasedness that DCG keeps. Precision counts ``label > 0``, which a
        signed reward does not mean; fairness reads labels as merits.
        """
        return self.judged.signed and self.fairness is None

    @property
    def judged(self) -> RankingMetric:
        """The metric at the judged cut-off ``K``."""
        return RankingMetric(self.metric, self.K, self.gain)

    @property
    def trained(self) -> RankingMetric:
        """The metric at the training cut-off :attr:`training_K`."""
        return self.judged.at(self.training_K)

    @property
    def fairness_spec(self) -> FairnessSpec | None:
        """The fairness term, or None."""
        if self.fairness is None:
            return None
        return FairnessSpec(self.fairness, self.fairness_weight, self.empty_queries)


#: The options' defaults, the one source of the public signatures' defaults (``K=DEFAULTS.K``).
DEFAULTS = PLRankOptions()

#: The shared documentation of each option: its type (numpydoc) and its description. The
#: header ``name : type, default value`` is written from the type and :data:`DEFAULTS`.
OPTION_DOCS: dict[str, tuple[str, str]] = {
    "K": (
        "int",
        """
        The cut-off of the metric the model is judged by: the metric@K of its eval sets and of a
        ranker's ``score``, its policy's expected metric@K (early stopping), and the length of
        a ranker's policy's rankings (``sample_rankings``, ``expected_exposure``,
        ``expected_metric``). The rounds train at ``train_K``.
    """,
    ),
    "train_K": (
        '"auto" or int',
        """
        The cut-off of the expected metric the rounds maximise, the length of the rankings
        sampled for training (:func:`gbdt_plrank.training_cutoff`): ``"auto"`` is 2K (K with
        ``fairness``), so that the documents just below the cut-off get gradient too, as the
        libraries' LambdaMART objectives do; an integer is used as given (``train_K=K`` trains
        at the judged cut-off).
    """,
    ),
    "N": (
        '"auto" or int',
        f"""
        Rankings sampled per query and round (per query and step for a network): the
        estimates' noise falls as :math:`1/\\sqrt{{N}}`, a round's time grows linearly in ``N``.
        ``"auto"`` is {AUTO_N} for boosted trees without ``fairness``, {AUTO_N_FAIR} with it
        (its exposure and gradient terms each come from half of the rankings) and
        {AUTO_N_NETWORK} for a network, each chosen on validation (:doc:`/guide/ranker`).
    """,
    ),
    "metric": (
        '{"ndcg", "dcg", "precision"}',
        """
        The metric whose expectation is maximised, and by which the model is judged: NDCG@K
        (DCG@K divided by the query's ideal DCG@K), DCG@K, or precision@K (documents with label
        > 0), as :mod:`gbdt_plrank.metrics` computes them.
    """,
    ),
    "gain": (
        '{"exp", "linear"}',
        r"""
        Gain :math:`2^\ell - 1` or :math:`\ell` of a label :math:`\ell` (not used by
        precision), in training and in the metrics the model is judged by.
    """,
    ),
    "hessian": (
        '{"auto", "abs", "raw", "clip", "constant", "denoised"}',
        r"""
        What the booster receives as Hessian: the unbiased but indefinite estimate of Kang, de
        Rijke and Oosterhuis (SIGIR 2024) (``"raw"``), its absolute value :math:`|h|`
        (``"abs"``), :math:`\max(h, 10^{-3} \max|h|)` (``"clip"``), ones (``"constant"``), or
        :math:`|h|/\kappa_q` (``"denoised"``: :math:`\kappa_q \in [1, 10]`, the factor by which
        the estimate's noise inflates the query's :math:`|h|`, estimated from two independent
        halves of the rankings; ``N >= 2``, ``N >= 4`` with ``fairness``). ``"auto"`` is
        ``"denoised"`` without ``fairness`` and ``"abs"`` with it or with one ranking. With
        ``"abs"``, ``"clip"`` and ``"denoised"``, a query whose curvature vanishes,
        :math:`\sum |h| < 0.05 \sum |g|`, has its rows raised to :math:`0.05\,|g|`. The
        formulas and the measurements: :doc:`/research/hessian`.
    """,
    ),
    "sampler": (
        '{"auto", "tree", "race"}',
        """
        How the rankings are drawn: sequential sum-tree draws, an exponential race
        (PL-Rank-3's Gumbel sampling), or the cheaper of the two for each query. Identical
        rankings give identical estimates.
    """,
    ),
    "noise": (
        '{"lattice", "independent"}',
        r"""
        The uniforms the ``N`` rankings of a query are drawn with: ``"independent"``, each
        ranking's own; ``"lattice"``, a randomly shifted rank-1 lattice, uniform :math:`j` of
        ranking :math:`i` being :math:`\{i g_j / N + c_j\}` (each ranking still a
        Plackett-Luce draw, so the estimate stays unbiased, but the ``N`` rankings cover the
        policy evenly: a lower variance at the same cost; :doc:`/research/estimator`).
    """,
    ),
    "query_subsample": (
        "float",
        r"""
        The share of the queries a boosting round estimates, in :math:`(0, 1]`: each round
        keeps each query with this probability (a draw from its own random stream, whatever
        the threads or Dask partitions) and gives the others gradient and Hessian 0, so the
        round's tree is fitted on the kept queries (as LightGBM's ``bagging_by_query``; a
        kept query's estimate is unchanged). 1.0: every query. Boosted trees only
        (:doc:`/guide/boosters`, "Options").
    """,
    ),
    "deep_weight": (
        '"auto" or float',
        rf"""
        The most a document's gradient is weighted up, :math:`A \ge 1`, when the policy gives
        it little chance of a place in the top ``train_K`` (:math:`K'`, or the query's length
        where shorter): each round multiplies it by :math:`s_q / \operatorname{{clip}}(K'
        \rho_d, 1/A, 1)`, :math:`\rho_d` the softmax of the query's margins, :math:`s_q` the
        scale that keeps the query's :math:`\sum |g|`. The weights are positive: the rounds
        still ascend PL-Rank's expected metric (the Hessian is kept). 1.0: PL-Rank's gradient.
        ``"auto"``: {AUTO_DEEP_WEIGHT:g} without ``fairness``, 1.0 with it. Boosted trees only
        (:doc:`/research/per-round`).
    """,
    ),
    "fairness": (
        "{" + ", ".join(["None", *(f'"{name}"' for name in fairness_names())]) + "}",
        r"""
        None: the expected metric alone. Otherwise the objective maximised is, per query,
        :math:`\mathbb{E}[\mathrm{metric@K}] - w\,F_q` with :math:`w` = ``fairness_weight``
        and :math:`F` a loss of the exposures at K with the metric's DCG rank weights
        (:doc:`/guide/fairness` has the formulas):
    """
        + "; ".join(f'``"{name}"`` {term.summary}' for name, term in FAIRNESS_TERMS.items())
        + r""".
        The gradient is PL-Rank's with the signed reward :math:`\rho_d - w\,\partial F/\partial
        E(d)`, exposure and terms estimated from two independent halves of the ``N`` rankings
        (unbiased); the Hessian estimate gains a non-negative Gauss-Newton part
        :math:`w c_d (\partial E(d)/\partial m(d))^2` before ``hessian`` applies. Needs
        ``N >= 2`` and ``metric`` "ndcg" or "dcg". Measure the result with
        :func:`gbdt_plrank.metrics.fairness_loss` (``loss=fairness``).
    """,
    ),
    "fairness_weight": (
        "float",
        r"""
        The weight :math:`w \ge 0` of the fairness loss, finite; used only with ``fairness``.
    """,
    ),
    "empty_queries": (
        '{"skip", "uniform"}',
        """
        With ``fairness``, what the fairness term does with the queries that have no relevant
        document: ``"skip"`` gives them exactly 0 (as without fairness); ``"uniform"``
        (``"expected-exposure"`` only) trains them toward EE-L's target there, equal exposure,
        which on data with many such queries flattens the other queries' policy too
        (:doc:`/guide/fairness`).
    """,
    ),
}

T = TypeVar("T")


def _default_text(value: Any) -> str:
    """A default as the docstrings write it: strings in double quotes."""
    return f'"{value}"' if isinstance(value, str) else repr(value)


def _entry(name: str, description: str | None, default: Any) -> str:
    """The numpydoc entry of option ``name``, unindented."""
    kind, shared = OPTION_DOCS[name]
    text = shared if description is None else description
    body = [" ".join(line.split()) for line in text.strip().split("\n")]
    header = f"{name} : {kind}, default {_default_text(default)}"
    return "\n".join([header, *(f"    {line}" for line in body)])


def _filled(doc: str, own: dict[str, str], defaults: Mapping[str, Any]) -> str:
    unknown = [n for n in (*own, *defaults) if n not in OPTION_DOCS]
    if unknown:
        raise KeyError(f"{unknown[0]!r} is not a PL-Rank option")
    entries = {
        name: _entry(name, own.get(name), defaults.get(name, getattr(DEFAULTS, name)))
        for name in OPTION_DOCS
    }
    return fill_entries(doc, "plrank-options", entries, kind="a PL-Rank option")


def option_docs(*, defaults: Mapping[str, Any] | None = None, **own: str) -> Callable[[T], T]:
    """Fill a docstring's ``.. plrank-options:: K N ...`` line with those options' entries.

    Each entry is ``name : type, default value`` (the default from :data:`DEFAULTS`, or the one
    in ``defaults`` for a signature whose default differs on purpose) and its description from
    :data:`OPTION_DOCS`, or the one given in ``own`` (a function whose option means something
    narrower, e.g. ``plrank_grad_hess``'s ``K``).
    """

    def fill(obj: T) -> T:
        obj.__doc__ = _filled(obj.__doc__ or "", own, defaults or {})
        return obj

    return fill


PLRankOptions.__doc__ = _filled(PLRankOptions.__doc__ or "", {}, {})
