r"""The options of the PL-Rank objective: one validated object for every caller.

:class:`PLRankOptions` holds what defines a PL-Rank objective: the cut-off ``K`` a ranker is
judged at, the cut-off ``train_K`` it trains at, the rankings sampled per query, the metric and
its gain, the Hessian mode, the sampler and the fairness term. :func:`~gbdt_plrank.plrank_objective`,
:func:`~gbdt_plrank.plrank_grad_hess`, :class:`~gbdt_plrank.PLRankRanker`,
:class:`~gbdt_plrank.dask.DaskPLRankRanker` and the comparison harness's ``[plrank]`` table all
build it, so that one set of rules (each field's, and the fairness rules that tie fields together)
checks them, with errors that name the value and the rule.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from .._ranking_metric import GAINS, METRICS, RankingMetric
from .._util.schema import Schema, one_of, validate
from .fairness import EMPTY_QUERIES, FAIR_METRICS, FAIRNESS, FairnessSpec

__all__ = [
    "HESSIAN_MODES",
    "SAMPLERS",
    "TRAIN_K_FACTOR",
    "PLRankFields",
    "PLRankOptions",
    "training_cutoff",
]

#: What the booster receives as Hessian (see :func:`gbdt_plrank._training.plrank.finish_hessian`).
HESSIAN_MODES = ("abs", "raw", "clip", "constant")

#: How rankings are drawn: sequentially from a sum tree, by an exponential race, or the cheaper.
SAMPLERS = ("auto", "tree", "race")

#: ``train_K="auto"`` trains a ranker judged at the cut-off K on rankings this many times longer.
TRAIN_K_FACTOR = 2


PositiveInt = Annotated[int, Field(ge=1)]


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

    train_K: Literal["auto"] | PositiveInt = Field(
        "auto", description='"auto" or an integer >= 1'
    )
    N: int = Field(50, ge=1, description="an integer >= 1")
    metric: Literal[METRICS] = Field("ndcg", description=one_of(METRICS))  # type: ignore[valid-type]
    gain: Literal[GAINS] = Field("exp", description=one_of(GAINS))  # type: ignore[valid-type]
    hessian: Literal[HESSIAN_MODES] = Field(  # type: ignore[valid-type]
        "abs", description=one_of(HESSIAN_MODES)
    )
    sampler: Literal[SAMPLERS] = Field("auto", description=one_of(SAMPLERS))  # type: ignore[valid-type]
    fairness: Literal[FAIRNESS] | None = Field(  # type: ignore[valid-type]
        None, description=f"None or {one_of(FAIRNESS)}"
    )
    fairness_weight: float = Field(
        1.0, ge=0, allow_inf_nan=False, description="a finite number >= 0"
    )
    empty_queries: Literal[EMPTY_QUERIES] = Field(  # type: ignore[valid-type]
        "skip", description=one_of(EMPTY_QUERIES)
    )

    @model_validator(mode="after")
    def _fairness_rules(self) -> PLRankFields:
        if self.empty_queries == "uniform" and self.fairness != "expected-exposure":
            raise ValueError(
                "empty_queries='uniform' trains the queries without a relevant document toward "
                "the expected exposure loss's target there (equal exposure), so it needs "
                f"fairness='expected-exposure', but fairness={self.fairness!r} is given"
            )
        if self.fairness is None:
            return self
        if self.metric not in FAIR_METRICS:
            raise ValueError(
                f"fairness={self.fairness!r} measures exposure with the DCG rank weights "
                f"1/log2(rank+1), so metric must be {one_of(FAIR_METRICS)}, but "
                f"{self.metric!r} is given"
            )
        if self.N < 2:
            raise ValueError(
                f"N must be >= 2 with fairness={self.fairness!r} (exposure and gradient terms "
                f"come from two halves of the N rankings), but {self.N!r} is given"
            )
        return self


class PLRankOptions(PLRankFields):
    r"""The options of a PL-Rank objective, validated.

    Attributes
    ----------
    K : int, default 5
        The cut-off the ranker is judged at: its evaluation metric, its policy's expected metric
        (early stopping) and the length of its policy's rankings.
    train_K : "auto" or int, default "auto"
        The cut-off of the expected metric the boosting rounds maximise, the length of the
        rankings sampled for training: :func:`training_cutoff` (2K, K with fairness).
    N : int, default 50
        Rankings sampled per query and round.
    metric : {"ndcg", "dcg", "precision"}, default "ndcg"
        The metric whose expectation is maximised, as :mod:`gbdt_plrank.metrics` computes it.
    gain : {"exp", "linear"}, default "exp"
        Gain of a label: :math:`2^\ell - 1` or :math:`\ell`.
    hessian : {"abs", "raw", "clip", "constant"}, default "abs"
        What the booster receives as Hessian.
    sampler : {"auto", "tree", "race"}, default "auto"
        How rankings are drawn.
    fairness : {None, "expected-exposure", "disparity", "group-disparity"}, default None
        The fairness term subtracted from the expected metric.
    fairness_weight : float, default 1.0
        Its weight, finite and >= 0.
    empty_queries : {"skip", "uniform"}, default "skip"
        What the fairness term does with the queries without a relevant document
        (:class:`~gbdt_plrank._training.fairness.FairnessSpec`): leave them out, or (EE-L only) train
        them toward equal exposure.
    """

    K: int = Field(5, ge=1, description="an integer >= 1")

    @classmethod
    def checked(cls, **options: Any) -> PLRankOptions:
        """The options, or a ``ValueError`` naming the first value that breaks its rule."""
        return validate(cls, options, source="the PL-Rank options")

    @property
    def training_K(self) -> int:
        """The cut-off of training: ``train_K``, or for ``"auto"`` 2K (K with fairness)."""
        if self.train_K == "auto":
            return self.K if self.fairness is not None else TRAIN_K_FACTOR * self.K
        return self.train_K

    @property
    def signed_labels(self) -> bool:
        """Whether the labels may be negative: with ``metric="dcg"`` and ``gain="linear"``,
        without fairness.

        The expected DCG with the linear gain is linear in the labels, so signed rewards (the
        doubly robust click rewards of :func:`gbdt_plrank.clicks.click_rewards`) keep it an
        unbiased objective. NDCG is refused: its normaliser, the ideal DCG of the query's own
        labels, is not a meaningful positive scale with negative labels, and any normaliser
        computed from noisy rewards would reweight the queries by their noise; precision counts
        ``label > 0``, which a signed reward does not mean; fairness reads labels as merits.
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
