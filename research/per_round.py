r"""Learning per round on deep queries: candidates for more progress per boosting round, measured.

Every candidate trains ``--rounds`` rounds (no early stopping) on the training queries of a
web-shaped dataset (:func:`gbdt_plrank.load_dataset`'s ``"web-nonlinear"`` and ``"web-linear"``,
draws 1 and 2 by default; the test split is never read), and every ``--every`` rounds the
validation queries' NDCG@10 of the ranking by score is recorded per query, with the validation
policy's expected NDCG@10 (:class:`~gbdt_plrank._training.evaluation.PolicyEvaluator`, 100
rankings a query), the spread of the validation margins (root mean within-query variance: how
sharp the policy is) and, for the candidates whose gradient the script computes, the cosine of
the round's descent direction :math:`-g` with the training queries' centred margins (the
direction that sharpens the policy without changing a ranking). Queries without a relevant
document are left out.

The boosters (each candidate trains on one, its references beside it):

- XGBoost: ``xgboost.train`` with a custom objective, eta 0.3 and XGBoost's other tree defaults
  (depth 6, ``min_child_weight`` 1, ``lambda`` 1); reference ``rank:ndcg`` at the same settings.
- LightGBM: ``lightgbm.train``, learning rate 0.3, ``lambda_l2`` 1,
  ``min_sum_hessian_in_leaf`` 1 (LightGBM's other defaults: 31 leaves); references
  ``lambdarank`` at these settings and at LightGBM's defaults (learning rate 0.1).

PL-Rank is :func:`gbdt_plrank.plrank_grad_hess` at K = 10, N = 50, ``hessian="denoised"``, the
rankings of round ``r`` drawn with seed ``1000 + r`` (the same streams for every candidate). The
candidates (:data:`CANDIDATES`):

- **N and the cut-off**: PL-Rank with N = 100 or N = 20, or trained at cut-off 20.
- **XE-NDCG** (Bruch et al., WWW 2020; LightGBM's ``rank_xendcg``), a convex listwise
  surrogate: per query, :math:`g = \rho - p` and :math:`h = \rho(1 - \rho)` with
  :math:`\rho` the softmax of the margins and :math:`p \propto 2^{\ell} - u`, :math:`u \sim
  U(0, 1)` drawn afresh each round. Alone; for the first 20 or 50 rounds and then PL-Rank (a
  hard switch; after 20 rounds also with ``hessian="abs"``, and with ``"abs"`` at N = 1000,
  where the estimate's noise is small); or annealed into PL-Rank, the round's gradient and
  Hessian :math:`a\,(g, h)_{XE} + (1 - a)\,(g, h)_{PL}` with :math:`a = \max(0, 1 - r/50)`.
- **A learned global temperature**: every 10 rounds :math:`\tau` is the value of a grid
  (0.5 to 32) that maximises the training queries' expected NDCG@10 of the policy
  :math:`PL(\tau f)` (10 rankings a query), and the round's objective is that policy's:
  :math:`(\tau g(\tau f), \tau^2 h(\tau f))`.
- **A LambdaMART start** (XGBoost): 20 rounds of ``rank:ndcg``, then PL-Rank continues the same
  booster.
- **Less sharpening** (XGBoost): the sharpening direction projected out of each query's
  gradient, :math:`g - f_c \langle g, f_c \rangle / \lVert f_c \rVert^2` with :math:`f_c` the
  query's centred margins (:func:`unsharpened`); or the objective taken at the margins scaled
  within each query to a spread of at most 1 or 2, :math:`x = c_q f` with
  :math:`c_q = \min(1, s / \sigma_q)`, its gradient by the chain rule (:func:`through_cap`),
  so that the policy the round trains is never sharper than that.
- **Deep documents' gradients** (XGBoost): each document's gradient times a weight up to 4 for
  the documents the policy places deep (:func:`deep_weights`), the query's total kept
  ("amplified"), or the gradient and the Hessian times the weight, of mean 1 in the query
  ("re-weighted"); the amplified weights also annealed to 1 by round 50, so that the last phase
  is PL-Rank's objective; and amplified with more rankings a round (up to 4x at N = 100, up to
  8x at N = 50 and N = 200), since a weighted gradient weighs its estimate's noise too. The
  weights on some documents only (:func:`selective_weights`): the "top-worthy" ones, whose
  label is positive and at least the query's K-th largest (:func:`top_worthy`), or the
  "rising" ones, whose gradient lifts them. With the 4x weights, each query's gradient times
  :math:`\sqrt{r_q}` over its mean, :math:`r_q` its number of relevant documents, alone or
  with its Hessian (a weight on the query); the 4x weights with ``hessian="abs"``; and the
  4x weights with the policy sharpened by a fixed temperature for the last rounds (2 from round
  75, 4 from round 100); and the weights (4x, 8x, top-worthy, rising) with the part that shifts
  a whole query taken out of the weighted gradient (:func:`without_shift`: its mean, or for 4x
  also its Newton shift); and the 4x weights times :math:`2^{\ell/2}` or :math:`2^\ell` by
  the document's label :math:`\ell` (:func:`label_weights`), the first also on the Hessian.
- **A falling learning rate** (XGBoost): linear from 0.35 to 0.05 or from 0.3 to 0.1 over the
  training, a mean of 0.2.
- **Rules on each new tree's leaf values** (LightGBM, ``Booster.set_leaf_output``; the training
  score cache LightGBM keeps does not see the change, so the objective adds the difference
  itself): a line search, the tree times the step of (0.5, 1, 2, 3, 5) with the highest
  training expected NDCG@10 (8 rankings a query, the same streams for every step); a KL trust
  region, the tree times :math:`\min(10, \sqrt{\delta / \mathrm{KL}})` with KL the mean over the
  training queries of the divergence between the top-1 softmax policies before and after the
  tree, so that it is :math:`\delta` (0.003, 0.01, 0.03) to second order; secant leaf values,
  each leaf's curvature :math:`c_j = (G_j' - G_j)/v_j` from the change of its gradient sum
  between the margins before the tree and after it (one more PL-Rank estimate), the leaf set to
  :math:`-\eta G_j / c_j` as a ratio of its Newton value :math:`v_j` clipped to [0.5, 2] or
  [0.25, 4] (the upper clip where :math:`c_j \le 0`).

The report pools the draws: per candidate, validation NDCG@10 at the middle and the last round
and at its peak, its per-query paired difference from plain PL-Rank of the same booster at the
last round (:func:`gbdt_plrank.harness.stats.paired`: mean [95% CI], the randomization test's p
and verdict at 0.05) and the seconds of a training (without the recording); the same difference
by the query's number of relevant documents (:data:`RELEVANT_BINS`), and in those bins the
expected NDCG@10 of the last validation policy sharpened, :math:`PL(\tau f)` for
:math:`\tau` in :data:`SHARPENED` (how much a candidate's model holds for PL-Rank's own
objective once sharpened, where its ranking falls short), and the last validation ranking's
top 10 by grade (how many documents of each grade it holds, and the share of its NDCG@10 they
give); then the curves.
A last table measures the noise of the gradient: at a flat policy and after 20 XE-NDCG rounds
(and that model's margins times 4), the correlation over the training documents of PL-Rank's
gradient at N = 50 with one at N = 4000, before and after centring it within each query, the
mean over the queries of :math:`|\sum_d g_d| / \sum_d |g_d|` (how far the estimate is from
summing to 0 in a query, as the exact gradient does), and the correlation of XE-NDCG's gradient
with the N = 4000 PL-Rank gradient.

Finished trainings are appended to ``OUT.jsonl`` as they end, so a rerun resumes, and the report
covers every record of the requested datasets and draws.

``--learning-rate`` and ``--cutoff`` train every candidate at another learning rate and PL-Rank
at another cut-off, unless the candidate sets its own (:class:`Setting`); a record holds its
setting, and the report covers the records of the requested one. At 0.2 and 10, with 150 rounds,
the candidates train as :class:`~gbdt_plrank.PLRankRanker` does by default (``K=5``, so cut-off
10; its trees aside); at 0.2 and 20 as one with ``K=10``.

    nice -n 10 python research/per_round.py --data web-nonlinear --draws 1,2 --threads 1 \
        --out benchmarks/results/per_round_web-nonlinear.md
    nice -n 10 python research/per_round.py --data web-linear --draws 1,2 --threads 1 \
        --out benchmarks/results/per_round_web-linear.md
    nice -n 10 python research/per_round.py --data web-nonlinear --draws 1,2 --threads 1 \
        --boosters xgboost --rounds 150 --learning-rate 0.2 --cutoff 10 --no-gradients \
        --only 'rank:ndcg;PL-Rank;...' --out benchmarks/results/per_round_lr0.2_k10_web-nonlinear.md
    python research/per_round.py --queries 30,10,10 --rounds 4 --every 2 --out /tmp/r.md  # tiny
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

# gbdt_plrank first: its import sets the OpenMP wait before the boosters load OpenMP.
import gbdt_plrank  # noqa: F401  # isort: skip
import lightgbm as lgb
import numpy as np
import xgboost as xgb

from benchmarks import harness
from gbdt_plrank import plrank_grad_hess
from gbdt_plrank._groups import row_queries, within_query_spread
from gbdt_plrank._ranking_metric import RankingMetric
from gbdt_plrank._training.deep_weights import deep_weights as package_deep_weights
from gbdt_plrank._training.deep_weights import placement_weights
from gbdt_plrank._training.evaluation import PolicyEvaluator
from gbdt_plrank.cli._argtypes import int_list
from gbdt_plrank.datasets import WEB_VARIANTS, LTRDataset, Split
from gbdt_plrank.harness.stats import paired
from gbdt_plrank.metrics import dcg, ndcg
from research.deep_rates import dataset

K = 10
#: PL-Rank's options in every candidate unless it changes them.
PLRANK: dict[str, Any] = {"K": K, "N": 50, "hessian": "denoised"}
#: Each booster's trees: XGBoost's defaults at eta 0.3; LightGBM's at learning rate 0.3 with
#: lambda_l2 1 and min_sum_hessian_in_leaf 1 (at 0 and 1e-3 PL-Rank's small Hessians overfit).
TREES: dict[str, dict[str, Any]] = {
    "xgboost": {"eta": 0.3},
    "lightgbm": {"learning_rate": 0.3, "lambda_l2": 1.0, "min_sum_hessian_in_leaf": 1.0},
}
BOOSTERS = tuple(TREES)
#: The candidate every other one of its booster is paired with.
REFERENCE = "PL-Rank"
#: Seeds: PL-Rank's round r draws with PL_SEED + r, XE-NDCG's uniforms with (XE_SEED, r), the
#: secant's second estimate with SECANT_SEED + r; the policy evaluations' streams.
PL_SEED, XE_SEED, SECANT_SEED, EVAL_SEED = 1000, 2000, 5000, 2_000_003
#: Rankings a query: the validation policy's value, the temperature's and the line search's
#: training value.
VALI_SAMPLES, TAU_SAMPLES, STEP_SAMPLES = 100, 10, 8
TAUS = (0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 24.0, 32.0)
TAU_EVERY = 10
#: The temperatures of the last round's validation policies :math:`PL(\tau f)` the report
#: compares by the query's number of relevant documents.
SHARPENED = (1.0, 4.0, 16.0)
STEPS = (0.5, 1.0, 2.0, 3.0, 5.0)
KL_MAX_STEP = 10.0
#: The gradient-noise table: the estimate's N against the reference's.
NOISY_N, REFERENCE_N = 50, 4000


@dataclass(frozen=True)
class Candidate:
    r"""One training: a booster, its objective and a rule on its trees' leaf values.

    Attributes
    ----------
    booster : {"xgboost", "lightgbm"}
    native : str or None
        The booster's own objective (``"rank:ndcg"``, ``"lambdarank"``) instead of the script's.
    trees : tuple of (name, value)
        Tree settings changed from the booster's :data:`TREES`.
    plrank : tuple of (name, value)
        PL-Rank options changed from :data:`PLRANK`.
    xe_rounds : float
        Rounds of XE-NDCG alone before PL-Rank (``math.inf``: XE-NDCG throughout).
    anneal : int
        If > 0, XE-NDCG's weight falls linearly from 1 at round 0 to 0 at this round.
    temperature : bool
        Learn a global temperature of the policy (:data:`TAUS`, every :data:`TAU_EVERY` rounds).
    sharpen : tuple
        ``(R, tau)``: from round R on, the objective is that of the policy :math:`PL(\tau f)`,
        :math:`(\tau g(\tau f), \tau^2 h(\tau f))`, a fixed temperature; equivalently the
        margins are multiplied by tau at round R and PL-Rank continues with the leaf penalties
        divided by :math:`\tau^2`.
    native_rounds : int
        Rounds of the booster's own LambdaMART (``rank:ndcg``, XGBoost only) before PL-Rank
        continues the same booster.
    spread : float
        If > 0, the objective is PL-Rank's at the margins scaled within each query to a spread
        of at most this, its gradient by the chain rule (:func:`through_cap`).
    project : bool
        Project the sharpening direction out of each query's gradient (:func:`unsharpened`).
    deep : tuple
        Weights on the documents the policy places deep (:func:`deep_weights`):
        ``("amplified", A)`` multiplies the gradient by them, ``("re-weighted", A)`` the
        gradient and the Hessian; a third element R anneals them to 1 by round R
        (:math:`1 + (w - 1) \max(0, 1 - r/R)`).
    deep_docs : {"all", "top-worthy", "rising"}
        Which documents the deep weights reach (the others keep weight 1 before the query's
        scaling): every one; those whose label is at least the query's K-th largest and
        positive (the documents an ideal ranking places in the top K); or those whose gradient
        lifts them.
    query_power : float
        If > 0, each query's gradient times :math:`r_q^a / \overline{r^a}` with :math:`r_q`
        its number of relevant documents, :math:`a` this power and the mean over the training
        queries (after the deep weights): queries with many relevant documents weigh more.
    query_hessian : bool
        The query's Hessian times the same factor (a weight on the query, not a preconditioner).
    label_power : float
        If > 0, each document's weighted gradient times :math:`2^{a \ell_d}`, :math:`a` this power
        and :math:`\ell_d` its label, scaled within the query to keep its total
        :math:`\sum_d |g_d|` (:func:`label_weights`): the documents of the top grades weigh more,
        as in LambdaMART's gradient.
    label_hessian : bool
        The Hessian times the same weights (their weight in a leaf, not a longer step).
    centre : {"", "mean", "newton"}
        Take out of each query's weighted gradient the part that shifts the whole query
        (:func:`without_shift`): its mean, or its Newton shift :math:`h \sum g / \sum h`.
    rates : tuple
        ``(first, last)``: the learning rate falls linearly from the first round's to the last's
        (XGBoost's ``LearningRateScheduler``; the setting's learning rate is not used).
    leaves : tuple
        A rule on each new tree's leaf values (LightGBM only): ``("line search",)``,
        ``("kl", delta)`` or ``("secant", low, high)``.
    """

    booster: str
    native: str | None = None
    trees: tuple[tuple[str, Any], ...] = ()
    plrank: tuple[tuple[str, Any], ...] = ()
    xe_rounds: float = 0
    anneal: int = 0
    temperature: bool = False
    sharpen: tuple[float, ...] = ()
    native_rounds: int = 0
    spread: float = 0.0
    project: bool = False
    deep: tuple[Any, ...] = ()
    deep_docs: str = "all"
    query_power: float = 0.0
    query_hessian: bool = False
    label_power: float = 0.0
    label_hessian: bool = False
    centre: str = ""
    rates: tuple[float, ...] = ()
    leaves: tuple[Any, ...] = ()

    def __post_init__(self) -> None:
        if self.booster not in BOOSTERS:
            raise ValueError(f"booster must be one of {BOOSTERS}, but {self.booster!r} is given.")
        if (self.native_rounds or self.rates) and self.booster != "xgboost":
            raise ValueError(
                f"a LambdaMART start (rank:ndcg) and a schedule of rates are XGBoost's, but the "
                f"booster is {self.booster!r}."
            )
        if self.native_rounds and self.rates:
            raise ValueError(
                "a schedule of rates spans the whole training, so it cannot follow a LambdaMART "
                f"start, but native_rounds={self.native_rounds} and rates={self.rates} are given."
            )
        if self.leaves and self.booster != "lightgbm":
            raise ValueError(
                f"a rule on the leaf values needs LightGBM's set_leaf_output, but the booster is "
                f"{self.booster!r}."
            )

    def xe_weight(self, r: int) -> float:
        """XE-NDCG's weight in round ``r`` (0-based); PL-Rank's is one minus it."""
        if r < self.xe_rounds:
            return 1.0
        return max(0.0, 1.0 - r / self.anneal) if self.anneal else 0.0


def _xgb(**kw: Any) -> Candidate:
    return Candidate("xgboost", **kw)


def _lgb(**kw: Any) -> Candidate:
    return Candidate("lightgbm", **kw)


#: (booster, name) -> candidate.
CANDIDATES: dict[tuple[str, str], Candidate] = {
    ("xgboost", "rank:ndcg"): _xgb(native="rank:ndcg"),
    ("xgboost", REFERENCE): _xgb(),
    ("xgboost", "PL-Rank, N=100"): _xgb(plrank=(("N", 100),)),
    ("xgboost", "PL-Rank, N=20"): _xgb(plrank=(("N", 20),)),
    ("xgboost", "PL-Rank, cut-off 20"): _xgb(plrank=(("K", 20),)),
    ("xgboost", "XE-NDCG"): _xgb(xe_rounds=math.inf),
    ("xgboost", "XE-NDCG 20 rounds, then PL-Rank"): _xgb(xe_rounds=20),
    ("xgboost", "XE-NDCG 50 rounds, then PL-Rank"): _xgb(xe_rounds=50),
    ("xgboost", "XE-NDCG 20 rounds, then PL-Rank abs"): _xgb(
        xe_rounds=20, plrank=(("hessian", "abs"),)
    ),
    ("xgboost", "XE-NDCG 20 rounds, then PL-Rank abs, N=1000"): _xgb(
        xe_rounds=20, plrank=(("hessian", "abs"), ("N", 1000))
    ),
    ("xgboost", "XE-NDCG annealed into PL-Rank over 50 rounds"): _xgb(anneal=50),
    ("xgboost", "PL-Rank, learned temperature"): _xgb(temperature=True),
    ("xgboost", "rank:ndcg 20 rounds, then PL-Rank"): _xgb(native_rounds=20),
    ("xgboost", "PL-Rank, sharpening projected out"): _xgb(project=True),
    ("xgboost", "PL-Rank, spread capped at 1"): _xgb(spread=1.0),
    ("xgboost", "PL-Rank, spread capped at 2"): _xgb(spread=2.0),
    ("xgboost", "PL-Rank, deep documents amplified (up to 4x)"): _xgb(deep=("amplified", 4.0)),
    ("xgboost", "PL-Rank, deep documents re-weighted (up to 4x)"): _xgb(deep=("re-weighted", 4.0)),
    ("xgboost", "PL-Rank, deep documents amplified (up to 16x)"): _xgb(deep=("amplified", 16.0)),
    ("xgboost", "PL-Rank, deep documents amplified (up to 4x), annealed over 50 rounds"): _xgb(
        deep=("amplified", 4.0, 50)
    ),
    ("xgboost", "PL-Rank, deep documents amplified (up to 4x), N=100"): _xgb(
        deep=("amplified", 4.0), plrank=(("N", 100),)
    ),
    ("xgboost", "PL-Rank, deep documents amplified (up to 8x)"): _xgb(deep=("amplified", 8.0)),
    ("xgboost", "PL-Rank, deep documents amplified (up to 8x), N=200"): _xgb(
        deep=("amplified", 8.0), plrank=(("N", 200),)
    ),
    ("xgboost", "PL-Rank, top-worthy documents amplified (up to 4x)"): _xgb(
        deep=("amplified", 4.0), deep_docs="top-worthy"
    ),
    ("xgboost", "PL-Rank, top-worthy documents amplified (up to 8x)"): _xgb(
        deep=("amplified", 8.0), deep_docs="top-worthy"
    ),
    ("xgboost", "PL-Rank, rising documents amplified (up to 4x)"): _xgb(
        deep=("amplified", 4.0), deep_docs="rising"
    ),
    ("xgboost", "PL-Rank, deep documents amplified (up to 4x), Hessian abs"): _xgb(
        deep=("amplified", 4.0), plrank=(("hessian", "abs"),)
    ),
    ("xgboost", "PL-Rank, 4x deep, policy sharpened 2x from round 75"): _xgb(
        deep=("amplified", 4.0), sharpen=(75, 2.0)
    ),
    ("xgboost", "PL-Rank, 4x deep, policy sharpened 4x from round 100"): _xgb(
        deep=("amplified", 4.0), sharpen=(100, 4.0)
    ),
    ("xgboost", "PL-Rank, 4x deep, gradient times sqrt(relevant)"): _xgb(
        deep=("amplified", 4.0), query_power=0.5
    ),
    ("xgboost", "PL-Rank, 4x deep, queries weighted by sqrt(relevant)"): _xgb(
        deep=("amplified", 4.0), query_power=0.5, query_hessian=True
    ),
    ("xgboost", "PL-Rank, 4x deep, shift taken out"): _xgb(deep=("amplified", 4.0), centre="mean"),
    ("xgboost", "PL-Rank, 4x deep, Newton shift taken out"): _xgb(
        deep=("amplified", 4.0), centre="newton"
    ),
    ("xgboost", "PL-Rank, top-worthy 4x, shift taken out"): _xgb(
        deep=("amplified", 4.0), deep_docs="top-worthy", centre="mean"
    ),
    ("xgboost", "PL-Rank, rising 4x, shift taken out"): _xgb(
        deep=("amplified", 4.0), deep_docs="rising", centre="mean"
    ),
    ("xgboost", "PL-Rank, 8x deep, shift taken out"): _xgb(deep=("amplified", 8.0), centre="mean"),
    ("xgboost", "PL-Rank, 4x deep, labels weighted 2^(l/2)"): _xgb(
        deep=("amplified", 4.0), label_power=0.5
    ),
    ("xgboost", "PL-Rank, 4x deep, labels weighted 2^l"): _xgb(
        deep=("amplified", 4.0), label_power=1.0
    ),
    ("xgboost", "PL-Rank, 4x deep, labels weighted 2^(l/2), Hessian too"): _xgb(
        deep=("amplified", 4.0), label_power=0.5, label_hessian=True
    ),
    ("xgboost", "PL-Rank, learning rate falling from 0.35 to 0.05"): _xgb(rates=(0.35, 0.05)),
    ("xgboost", "PL-Rank, learning rate falling from 0.3 to 0.1"): _xgb(rates=(0.3, 0.1)),
    ("lightgbm", "lambdarank"): _lgb(native="lambdarank"),
    ("lightgbm", "lambdarank at LightGBM's defaults (learning rate 0.1)"): _lgb(
        native="lambdarank",
        trees=(("learning_rate", 0.1), ("lambda_l2", 0.0), ("min_sum_hessian_in_leaf", 1e-3)),
    ),
    ("lightgbm", REFERENCE): _lgb(),
    ("lightgbm", "PL-Rank, line search"): _lgb(leaves=("line search",)),
    ("lightgbm", "PL-Rank, KL trust region 0.003"): _lgb(leaves=("kl", 0.003)),
    ("lightgbm", "PL-Rank, KL trust region 0.01"): _lgb(leaves=("kl", 0.01)),
    ("lightgbm", "PL-Rank, KL trust region 0.03"): _lgb(leaves=("kl", 0.03)),
    ("lightgbm", "PL-Rank, secant leaves [0.5, 2]"): _lgb(leaves=("secant", 0.5, 2.0)),
    ("lightgbm", "PL-Rank, secant leaves [0.25, 4]"): _lgb(leaves=("secant", 0.25, 4.0)),
}


@dataclass(frozen=True)
class Setting:
    """The learning rate of every candidate's booster and the cut-off PL-Rank trains at, unless a
    candidate sets its own (:data:`TREES`, :data:`PLRANK`: 0.3 and K)."""

    learning_rate: float = 0.3
    cutoff: int = K

    def of(self, candidate: Candidate) -> Candidate:
        """``candidate`` at this setting; its own changes win."""
        rate = "eta" if candidate.booster == "xgboost" else "learning_rate"
        return replace(
            candidate,
            trees=((rate, self.learning_rate), *candidate.trees),
            plrank=(("K", self.cutoff), *candidate.plrank),
        )


# --------------------------------------------------------------------------------------------
# Per-query softmax, XE-NDCG, the policies' KL divergence
# --------------------------------------------------------------------------------------------
def xe_ndcg_grad_hess(
    margins: np.ndarray, labels: np.ndarray, group_ptr: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    r"""First-order XE-NDCG (Bruch et al., WWW 2020): per query, the gradient and Hessian diagonal
    of the cross entropy :math:`-\sum_d p_d \log \rho_d` between :math:`p \propto 2^{\ell} - u`
    (:math:`u \sim U(0,1)` per row, from ``rng``) and the softmax :math:`\rho` of ``margins``:
    :math:`g = \rho - p`, :math:`h = \rho(1 - \rho)`. A query whose labels are all equal (or
    of one row) gets 0 in both. ``group_ptr`` holds no empty query."""
    starts, q = group_ptr[:-1], row_queries(group_ptr)
    rho = np.exp(log_softmax(margins, group_ptr))
    phi = 2.0**labels - rng.random(labels.shape[0])
    p = phi / np.add.reduceat(phi, starts)[q]
    live = (np.maximum.reduceat(labels, starts) > np.minimum.reduceat(labels, starts))[q]
    return np.where(live, rho - p, 0.0), np.where(live, rho * (1.0 - rho), 0.0)


def log_softmax(margins: np.ndarray, group_ptr: np.ndarray) -> np.ndarray:
    r"""Each row's :math:`\log \rho_d`, the softmax of ``margins`` within its query (the
    probability that the Plackett-Luce policy places it first); ``group_ptr`` holds no empty
    query."""
    starts, q = group_ptr[:-1], row_queries(group_ptr)
    shifted = margins - np.maximum.reduceat(margins, starts)[q]
    return shifted - np.log(np.add.reduceat(np.exp(shifted), starts))[q]


def mean_kl(before: np.ndarray, after: np.ndarray, group_ptr: np.ndarray) -> float:
    """Mean over the queries of KL(softmax(before) || softmax(after)) within each query."""
    lp, lq = log_softmax(before, group_ptr), log_softmax(after, group_ptr)
    return float(np.add.reduceat(np.exp(lp) * (lp - lq), group_ptr[:-1]).mean())


def centred(values: np.ndarray, group_ptr: np.ndarray) -> np.ndarray:
    """``values`` minus their query's mean."""
    q = row_queries(group_ptr)
    return values - (np.add.reduceat(values, group_ptr[:-1]) / np.diff(group_ptr))[q]


def unsharpened(grad: np.ndarray, margins: np.ndarray, group_ptr: np.ndarray) -> np.ndarray:
    r"""``grad`` without its component along each query's centred margins :math:`f_c` (the
    direction that sharpens the policy without changing a ranking): :math:`g - f_c \langle g, f_c
    \rangle / \lVert f_c \rVert^2` per query, ``grad`` itself in a query whose margins are equal."""
    starts, q = group_ptr[:-1], row_queries(group_ptr)
    fc = centred(margins, group_ptr)
    norm = np.add.reduceat(fc * fc, starts)
    along = np.divide(
        np.add.reduceat(grad * fc, starts), norm, out=np.zeros_like(norm), where=norm > 0
    )
    return grad - along[q] * fc


def deep_weights(
    margins: np.ndarray, grad: np.ndarray, group_ptr: np.ndarray, *, cap: float, mass: bool
) -> np.ndarray:
    r"""The weights of ``deep_weight`` = ``cap`` at cut-off :data:`K`
    (:mod:`gbdt_plrank._training.deep_weights`): up to ``cap`` times more for the documents the
    policy places deep, whose PL-Rank gradient is proportional to their small chance of a place
    (the "softmax gravity well", Mei et al., NeurIPS 2020).

    Normalised within each query: with ``mass``, as the option does, so that :math:`\sum_d w_d
    |g_d| = \sum_d |g_d|` (``grad`` redistributed toward the deep documents, its total kept);
    else to a mean of 1.
    """
    if mass:
        return package_deep_weights(margins, grad, group_ptr, K=K, cap=cap)
    w = placement_weights(margins, group_ptr, K=K, cap=cap)
    q = row_queries(group_ptr)
    sizes = np.diff(group_ptr)
    return w * (sizes / np.bincount(q, w, minlength=sizes.shape[0]))[q]


def relevant_counts(split: Split) -> np.ndarray:
    """Each query's number of relevant documents (label > 0), in the order of ``group_ptr``
    (no query is empty)."""
    return np.add.reduceat((split.y > 0).astype(float), split.group_ptr[:-1])


def top_worthy(labels: np.ndarray, group_ptr: np.ndarray, cutoff: int) -> np.ndarray:
    """Whether each row's label is positive and at least its query's ``cutoff``-th largest (of
    ``min(cutoff, D_q)``): the documents an ideal ranking places in the top ``cutoff``."""
    out = np.zeros(labels.shape[0], dtype=bool)
    for lo, hi in itertools.pairwise(group_ptr):
        y = labels[lo:hi]
        kth = np.sort(y)[::-1][min(cutoff, hi - lo) - 1]
        out[lo:hi] = (y >= kth) & (y > 0)
    return out


def mass_kept(weights: np.ndarray, grad: np.ndarray, group_ptr: np.ndarray) -> np.ndarray:
    r"""``weights`` scaled within each query so that :math:`\sum_d w_d |g_d| = \sum_d |g_d|`
    for ``grad`` :math:`g` (the scale is 1 in a query whose gradient is 0)."""
    starts = group_ptr[:-1]
    size = np.add.reduceat(np.abs(grad), starts)
    weighted = np.add.reduceat(weights * np.abs(grad), starts)
    scale = np.divide(size, weighted, out=np.ones_like(size), where=weighted > 0)
    return weights * scale[row_queries(group_ptr)]


def selective_weights(
    margins: np.ndarray, grad: np.ndarray, group_ptr: np.ndarray, reached: np.ndarray, *, cap: float
) -> np.ndarray:
    r"""The amplified weights of :func:`deep_weights` on the ``reached`` rows and 1 elsewhere,
    scaled within each query to keep its total (:func:`mass_kept`)."""
    w = np.where(reached, placement_weights(margins, group_ptr, K=K, cap=cap), 1.0)
    return mass_kept(w, grad, group_ptr)


def label_weights(
    labels: np.ndarray, grad: np.ndarray, group_ptr: np.ndarray, *, power: float
) -> np.ndarray:
    r""":math:`2^{a \ell_d}` for :math:`a` = ``power`` and :math:`\ell_d` each row's label,
    scaled within each query to keep its total (:func:`mass_kept`). Positive and per document,
    so the weighted gradient is a preconditioned ascent direction of the same objective."""
    return mass_kept(np.exp2(power * labels), grad, group_ptr)


def without_shift(
    grad: np.ndarray, hess: np.ndarray, group_ptr: np.ndarray, *, newton: bool
) -> np.ndarray:
    r"""``grad`` without the part that moves each query's margins together, which the ranking
    does not see: :math:`g - \bar g_q` (the query's mean), or with ``newton``
    :math:`g - h \sum_q g / \sum_q h`, so that the Newton step of the query's rows together is
    0. PL-Rank's own gradient has almost none (its estimate sums to 2 to 4 % of its absolute
    mass in a query); weights on some documents give it one. The objective does not change when
    a query's margins shift, so its gradient sums to 0 in each query and has the same product
    with the weighted direction with or without its mean: that direction stays an ascent
    direction. The Newton shift is taken out along the Hessian instead, which keeps no such
    product."""
    starts, q = group_ptr[:-1], row_queries(group_ptr)
    total = np.add.reduceat(grad, starts)
    if not newton:
        return grad - (total / np.diff(group_ptr))[q]
    mass = np.add.reduceat(hess, starts)
    shift = np.divide(total, mass, out=np.zeros_like(total), where=mass > 0)
    return grad - hess * shift[q]


def through_cap(
    objective: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]],
    margins: np.ndarray,
    group_ptr: np.ndarray,
    spread: float,
) -> tuple[np.ndarray, np.ndarray]:
    r"""The gradient and Hessian diagonal in the margins :math:`f` of ``objective`` taken at the
    margins scaled within each query to a spread of at most :math:`s` = ``spread``.

    Each query's margins are scaled by :math:`c_q = \min(1, s / \sigma_q)`, with
    :math:`\sigma_q` their population standard deviation, and ``objective(x)`` gives the
    gradient :math:`g_x` and Hessian :math:`h_x` at :math:`x = c_q f`. Where :math:`c_q < 1`, the
    chain rule gives :math:`c_q (C g_x - f_c \langle C g_x, f_c \rangle / \lVert f_c
    \rVert^2)` (:math:`C` centring within the query, :math:`f_c = C f`; :func:`unsharpened`), and
    the Hessian is kept diagonal, :math:`c_q^2 h_x`; elsewhere both are the objective's.
    """
    starts, q = group_ptr[:-1], row_queries(group_ptr)
    fc = centred(margins, group_ptr)
    sigma = np.sqrt(np.add.reduceat(fc * fc, starts) / np.diff(group_ptr))
    c = np.divide(spread, sigma, out=np.ones_like(sigma), where=sigma > spread)[q]
    g, h = objective(c * margins)
    g = np.where(c < 1, c * unsharpened(centred(g, group_ptr), margins, group_ptr), g)
    return g, c**2 * h


def correlation(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.corrcoef(a, b)[0, 1])


def policy_values(split: Split, n_samples: int, n_jobs: int) -> Callable[[np.ndarray], np.ndarray]:
    """Margins -> per query of ``split`` with a relevant document, the expected NDCG@K of its
    Plackett-Luce policy, from ``n_samples`` rankings a query (the same streams at every call,
    so values of different margins compare on common random numbers)."""
    evaluator = PolicyEvaluator(
        RankingMetric("ndcg", K, "exp"),
        None,
        split,
        n_samples=n_samples,
        seed=EVAL_SEED,
        n_jobs=n_jobs,
    )
    kept = np.maximum.reduceat(split.y, split.group_ptr[:-1]) > 0
    return lambda margins: evaluator.per_query(margins)[kept]


def policy_value(split: Split, n_samples: int, n_jobs: int) -> Callable[[np.ndarray], float]:
    """Margins -> the mean of :func:`policy_values`."""
    values = policy_values(split, n_samples, n_jobs)
    return lambda margins: float(values(margins).mean())


# --------------------------------------------------------------------------------------------
# The objective and the rules on the leaf values
# --------------------------------------------------------------------------------------------
class Objective:
    """``obj(preds, data)``: a candidate's gradient and Hessian for one round.

    The margins are the booster's ``preds`` plus :attr:`offset`, the change the leaf rules made
    to earlier trees (LightGBM's training score cache does not see ``set_leaf_output``).
    :attr:`margins` and :attr:`grad` are those of the last call; :attr:`stats` the temperatures
    chosen (:attr:`label`, within :attr:`bounds`).
    """

    label, bounds = "tau", (TAUS[0], TAUS[-1])

    def __init__(self, candidate: Candidate, train: Split, *, n_jobs: int) -> None:
        self.candidate, self.train = candidate, train
        self.y, self.ptr, self.n_jobs = train.y, train.group_ptr, n_jobs
        self.options = {**PLRANK, **dict(candidate.plrank)}
        self.offset = np.zeros(train.y.shape[0])
        self.margins = self.offset
        self.grad = self.offset
        self.round = 0
        self.plrank_rounds = 0
        self.tau = 1.0
        self.stats: list[float] = []
        self.value = policy_value(train, TAU_SAMPLES, n_jobs) if candidate.temperature else None
        docs = candidate.deep_docs
        self.top_worthy = top_worthy(train.y, self.ptr, K) if docs == "top-worthy" else None
        self.query_scale = None
        if candidate.query_power:
            scale = relevant_counts(train) ** candidate.query_power
            self.query_scale = (scale / scale.mean())[row_queries(self.ptr)]

    def __deepcopy__(self, memo: dict[int, Any]) -> Objective:
        # lightgbm.train deep-copies its params; the leaf rules must share this object's state.
        return self

    def plrank(self, margins: np.ndarray, *, seed: int, **changes: Any):
        return plrank_grad_hess(
            margins, self.y, self.ptr, seed=seed, n_jobs=self.n_jobs, **{**self.options, **changes}
        )

    def __call__(self, preds: np.ndarray, data: Any) -> tuple[np.ndarray, np.ndarray]:
        f = np.asarray(preds, dtype=np.float64).ravel() + self.offset
        r, w = self.round, self.candidate.xe_weight(self.round)
        g = h = np.zeros_like(f)
        if w > 0:
            gx, hx = xe_ndcg_grad_hess(f, self.y, self.ptr, np.random.default_rng([XE_SEED, r]))
            g, h = w * gx, w * hx
        if w < 1:
            if self.value is not None and self.plrank_rounds % TAU_EVERY == 0:
                # ties (a flat policy is every temperature's) keep tau = 1
                self.tau = max(TAUS, key=lambda t: (self.value(t * f), t == 1.0))
                self.stats.append(self.tau)
            if self.candidate.sharpen and r >= self.candidate.sharpen[0]:
                self.tau = self.candidate.sharpen[1]
            at = lambda x: self.plrank(self.tau * x, seed=PL_SEED + r)  # noqa: E731
            spread = self.candidate.spread
            gp, hp = through_cap(at, f, self.ptr, spread) if spread else at(f)
            if self.candidate.project:
                gp = unsharpened(gp, f, self.ptr)
            if self.candidate.deep:
                kind, cap, *anneal = self.candidate.deep
                amplified = kind == "amplified"
                if self.candidate.deep_docs == "all":
                    weights = deep_weights(self.tau * f, gp, self.ptr, cap=cap, mass=amplified)
                else:
                    reached = gp < 0 if self.top_worthy is None else self.top_worthy
                    weights = selective_weights(self.tau * f, gp, self.ptr, reached, cap=cap)
                if anneal:
                    weights = 1.0 + (weights - 1.0) * max(0.0, 1.0 - r / anneal[0])
                gp, hp = weights * gp, hp if amplified else weights * hp
            if self.query_scale is not None:
                gp = self.query_scale * gp
                hp = self.query_scale * hp if self.candidate.query_hessian else hp
            if self.candidate.label_power:
                lw = label_weights(self.y, gp, self.ptr, power=self.candidate.label_power)
                gp, hp = lw * gp, lw * hp if self.candidate.label_hessian else hp
            if self.candidate.centre:
                gp = without_shift(gp, hp, self.ptr, newton=self.candidate.centre == "newton")
            g, h = g + (1 - w) * self.tau * gp, h + (1 - w) * self.tau**2 * hp
            self.plrank_rounds += 1
        self.margins, self.grad, self.round = f, g, r + 1
        return g, h

    def sharpening(self) -> float | None:
        """Cosine of the last round's descent direction ``-grad`` with its centred margins."""
        fc = centred(self.margins, self.ptr)
        norm = np.linalg.norm(fc) * np.linalg.norm(self.grad)
        return float(-(self.grad @ fc) / norm) if norm > 0 else None


class LeafRule:
    """A LightGBM callback that sets each new tree's leaf values by :meth:`values`."""

    label = ""
    bounds: tuple[float, float] = (0.0, 0.0)

    def __init__(self, objective: Objective, X: np.ndarray, learning_rate: float) -> None:
        self.objective, self.X, self.learning_rate = objective, X, learning_rate
        self.stats: list[float] = []

    def __call__(self, env: Any) -> None:
        booster, it = env.model, env.iteration
        leaf = booster.predict(self.X, pred_leaf=True, start_iteration=it, num_iteration=1)
        leaf = np.asarray(leaf, dtype=np.int64).ravel()
        out = np.array([booster.get_leaf_output(it, j) for j in range(leaf.max() + 1)])
        new = self.values(self.objective.margins, leaf, out, it)
        for j in np.flatnonzero(new != out):
            booster.set_leaf_output(it, int(j), float(new[j]))
        self.objective.offset = self.objective.offset + (new - out)[leaf]

    def values(self, base: np.ndarray, leaf: np.ndarray, out: np.ndarray, it: int) -> np.ndarray:
        raise NotImplementedError


class LineSearch(LeafRule):
    """The tree times the step of :data:`STEPS` with the highest training expected NDCG@K."""

    label, bounds = "step", (STEPS[0], STEPS[-1])

    def __init__(self, objective: Objective, X: np.ndarray, learning_rate: float) -> None:
        super().__init__(objective, X, learning_rate)
        self.value = policy_value(objective.train, STEP_SAMPLES, objective.n_jobs)

    def values(self, base, leaf, out, it):
        tree = out[leaf]
        step = max(STEPS, key=lambda a: self.value(base + a * tree))
        self.stats.append(step)
        return step * out


class TrustRegion(LeafRule):
    """The tree times :math:`\\min(10, \\sqrt{\\delta/\\mathrm{KL}})`: a mean KL of about delta."""

    label, bounds = "step", (0.0, KL_MAX_STEP)

    def __init__(self, objective, X, learning_rate, delta: float) -> None:
        super().__init__(objective, X, learning_rate)
        self.delta = delta

    def values(self, base, leaf, out, it):
        kl = mean_kl(base, base + out[leaf], self.objective.ptr)
        step = min(KL_MAX_STEP, math.sqrt(self.delta / max(kl, 1e-12)))
        self.stats.append(step)
        return step * out


class Secant(LeafRule):
    """Each leaf at :math:`-\\eta G_j / c_j`, its curvature from the change of its gradient sum,
    as a ratio of its Newton value clipped to ``[low, high]``."""

    label = "leaf ratio"

    def __init__(self, objective, X, learning_rate, low: float, high: float) -> None:
        super().__init__(objective, X, learning_rate)
        self.bounds = (low, high)

    def values(self, base, leaf, out, it):
        low, high = self.bounds
        g1, _ = self.objective.plrank(base + out[leaf], seed=SECANT_SEED + it, hessian="abs")
        G0 = np.bincount(leaf, self.objective.grad, out.shape[0])
        G1 = np.bincount(leaf, g1, out.shape[0])
        new = out.copy()
        for j in np.flatnonzero(out != 0):
            c = (G1[j] - G0[j]) / out[j]
            ratio = high if c <= 0 else -G0[j] / c * self.learning_rate / out[j]
            ratio = min(high, max(low, ratio))
            self.stats.append(ratio)
            new[j] = ratio * out[j]
        return new


def leaf_rule(candidate: Candidate, objective: Objective, X, learning_rate: float) -> LeafRule:
    kind, *args = candidate.leaves
    rule = {"line search": LineSearch, "kl": TrustRegion, "secant": Secant}[kind]
    return rule(objective, X, learning_rate, *args)


# --------------------------------------------------------------------------------------------
# Training and its curves
# --------------------------------------------------------------------------------------------
class Curve:
    """The validation measurements every ``every`` rounds, and the seconds they took."""

    def __init__(self, vali: Split, n_jobs: int) -> None:
        self.vali = vali
        self.values = policy_values(vali, VALI_SAMPLES, n_jobs)
        self.last = np.zeros(vali.y.shape[0])
        self.kept = np.maximum.reduceat(vali.y, vali.group_ptr[:-1]) > 0
        self.ndcg: list[list[float]] = []
        self.expected: list[float] = []
        self.spread: list[float] = []
        self.sharpening: list[float | None] = []
        self.seconds = 0.0

    def add(self, margins: np.ndarray, objective: Objective | None) -> None:
        start = time.perf_counter()
        va, m = self.vali, np.asarray(margins, dtype=np.float64)
        per_query = ndcg(va.y, m, va.qid, k=K, per_query=True, empty=float("nan"))
        self.ndcg.append(per_query[self.kept].tolist())
        self.expected.append(float(self.values(m).mean()))
        self.spread.append(within_query_spread(m, va.group_ptr))
        self.sharpening.append(None if objective is None else objective.sharpening())
        self.last = m
        self.seconds += time.perf_counter() - start

    def sharpened(self) -> dict[str, list[float]]:
        """Per validation query with a relevant document, the expected NDCG@K of the policy
        :math:`PL(\tau f)` at the last margins recorded, for each :math:`\tau` of
        :data:`SHARPENED`."""
        return {str(t): self.values(t * self.last).tolist() for t in SHARPENED}

    def grades(self) -> dict[str, list[list[float]]]:
        """Per validation query with a relevant document, at the last margins recorded: the
        number of documents of each grade 0, 1, ... in the ranking's top K (``"top"``) and the
        share of the ranking's NDCG@K that each grade's documents give (``"share"``, summing to
        the NDCG@K)."""
        va, m = self.vali, self.last
        grades = np.arange(int(va.y.max()) + 1)
        total = dcg(va.y, m, va.qid, k=K, per_query=True)
        of_grade = [dcg(va.y * (va.y == g), m, va.qid, k=K, per_query=True) for g in grades]
        value = ndcg(va.y, m, va.qid, k=K, per_query=True, empty=0.0)
        scale = np.divide(value, total, out=np.zeros_like(total), where=total > 0)
        share = np.stack(of_grade, axis=1) * scale[:, None]
        top = np.array(
            [
                np.bincount(
                    va.y[a:b][np.argsort(-m[a:b], kind="stable")[:K]].astype(int),
                    minlength=grades.size,
                )
                for a, b in itertools.pairwise(va.group_ptr)
            ]
        )
        return {"top": top[self.kept].tolist(), "share": share[self.kept].tolist()}


def xgboost_params(candidate: Candidate, *, n_jobs: int) -> dict[str, Any]:
    """The candidate's XGBoost parameters: its trees, and its objective's if native."""
    params = {**TREES["xgboost"], **dict(candidate.trees), "nthread": n_jobs, "seed": 0}
    if candidate.native:
        return params | {"objective": candidate.native}
    return params | {"base_score": 0.0, "disable_default_eval_metric": 1}


def falling(first: float, last: float, rounds: int) -> list[float]:
    """The learning rate of each of ``rounds`` rounds, linear from ``first`` to ``last``."""
    return np.linspace(first, last, rounds).tolist()


def fit(
    candidate: Candidate, ds: LTRDataset, *, rounds: int, every: int, n_jobs: int
) -> tuple[Any, Objective | None, LeafRule | None, Curve, float]:
    """Train ``candidate`` on ``ds.train`` for ``rounds`` rounds; the booster, its objective (None
    for a native one), its leaf rule, the validation curve and the seconds of the training
    (without the curve's)."""
    tr, va = ds.train, ds.vali
    curve = Curve(va, n_jobs)
    objective = None if candidate.native else Objective(candidate, tr, n_jobs=n_jobs)
    rule = None
    if candidate.booster == "xgboost":
        dtr, dva = xgb.DMatrix(tr.X, tr.y, qid=tr.qid), xgb.DMatrix(va.X)

        class Record(xgb.callback.TrainingCallback):
            def after_iteration(self, model: Any, epoch: int, evals_log: Any) -> bool:
                # a continued training counts its epochs from 0: the booster's rounds do not
                if model.num_boosted_rounds() % every == 0:
                    curve.add(model.predict(dva, output_margin=True), objective)
                return False

        start = time.perf_counter()
        booster, native_rounds = None, min(candidate.native_rounds, rounds)
        if native_rounds:
            native = replace(candidate, native="rank:ndcg")
            booster = xgb.train(
                xgboost_params(native, n_jobs=n_jobs),
                dtr,
                native_rounds,
                callbacks=[Record()],
            )
        params, callbacks = xgboost_params(candidate, n_jobs=n_jobs), [Record()]
        if candidate.rates:
            rates = falling(*candidate.rates, rounds)
            # XGBoost's scheduler sets, after round e, the rate of the next one
            params["eta"] = rates[0]
            later = xgb.callback.LearningRateScheduler(lambda e: rates[min(e + 1, rounds - 1)])
            callbacks.insert(0, later)
        booster = xgb.train(
            params,
            dtr,
            rounds - native_rounds,
            obj=objective,
            xgb_model=booster,
            callbacks=callbacks,
        )
    else:
        trees = {**TREES["lightgbm"], **dict(candidate.trees)}
        dtr = lgb.Dataset(tr.X, tr.y, group=tr.group_sizes, free_raw_data=False)
        params = {
            **trees,
            "objective": candidate.native or objective,
            "metric": "None",
            "num_threads": n_jobs,
            "seed": 0,
            "verbose": -1,
        }
        callbacks: list[Any] = []
        if candidate.leaves:
            assert objective is not None
            rule = leaf_rule(candidate, objective, tr.X, trees["learning_rate"])
            callbacks.append(rule)  # before the record: the curve sees the rescaled tree

        def record(env: Any) -> None:
            if (env.iteration + 1) % every == 0:
                curve.add(env.model.predict(va.X, raw_score=True), objective)

        callbacks.append(record)
        start = time.perf_counter()
        booster = lgb.train(params, dtr, rounds, callbacks=callbacks)
    seconds = time.perf_counter() - start - curve.seconds
    return booster, objective, rule, curve, seconds


def train(
    booster: str,
    name: str,
    ds: LTRDataset,
    *,
    rounds: int,
    every: int,
    n_jobs: int,
    setting: Setting = Setting(),
) -> dict[str, Any]:
    """One candidate's record: its validation curves, its rule's statistics and its seconds."""
    _, objective, rule, curve, seconds = fit(
        setting.of(CANDIDATES[booster, name]), ds, rounds=rounds, every=every, n_jobs=n_jobs
    )
    chooser = rule or objective
    stats = {}
    if chooser is not None and chooser.stats:
        stats = {"label": chooser.label, "bounds": list(chooser.bounds), "values": chooser.stats}
    return {
        "qid": np.unique(ds.vali.qid)[curve.kept].tolist(),
        "ndcg": curve.ndcg,
        "expected": curve.expected,
        "spread": curve.spread,
        "sharpening": curve.sharpening,
        "policy": curve.sharpened(),
        "grades": curve.grades(),
        "stats": stats,
        "seconds": seconds,
    }


def gradient_noise(ds: LTRDataset, *, n_jobs: int) -> list[dict[str, Any]]:
    """The rows of the gradient-noise table on ``ds``'s training queries."""
    tr, ptr = ds.train, ds.train.group_ptr
    xe = CANDIDATES["xgboost", "XE-NDCG"]
    dtr = xgb.DMatrix(tr.X, tr.y, qid=tr.qid)
    model = xgb.train(
        xgboost_params(xe, n_jobs=n_jobs), dtr, 20, obj=Objective(xe, tr, n_jobs=n_jobs)
    )
    after = model.predict(dtr, output_margin=True).astype(np.float64)
    states = {
        "flat": np.zeros(tr.y.shape[0]),
        "after 20 XE-NDCG rounds": after,
        "the same, margins x4": 4.0 * after,
    }
    rows = []
    for state, margins in states.items():
        gx, _ = xe_ndcg_grad_hess(margins, tr.y, ptr, np.random.default_rng([XE_SEED, 0]))
        for cut in (K, 2 * K):
            options = {"K": cut, "hessian": "abs", "n_jobs": n_jobs}
            ref, _ = plrank_grad_hess(margins, tr.y, ptr, N=REFERENCE_N, seed=7, **options)
            g, _ = plrank_grad_hess(margins, tr.y, ptr, N=NOISY_N, seed=1, **options)
            sums = np.abs(np.add.reduceat(g, ptr[:-1]))
            mass = np.add.reduceat(np.abs(g), ptr[:-1])
            rows.append(
                {
                    "state": state,
                    "spread": within_query_spread(margins, ptr),
                    "K": cut,
                    "corr": correlation(g, ref),
                    "centred": correlation(centred(g, ptr), ref),
                    "sum": float(np.mean(sums[mass > 0] / mass[mass > 0])),
                    "xe": correlation(gx, ref),
                }
            )
    return rows


# --------------------------------------------------------------------------------------------
# The report
# --------------------------------------------------------------------------------------------
Done = dict[tuple[Any, ...], dict[str, Any]]
#: (dataset label, draw) -> validation query id -> its number of relevant documents.
Relevant = dict[tuple[str, int], dict[int, int]]
#: The bins of the report's table by a query's number of relevant documents.
RELEVANT_BINS = (1, 32, 64, math.inf)


def record_key(r: dict[str, Any]) -> tuple[Any, ...]:
    if r["kind"] == "gradients":
        return ("gradients", r["data"], r["draw"])
    setting = (r.get("learning_rate", Setting.learning_rate), r.get("cutoff", Setting.cutoff))
    return (
        "training",
        r["data"],
        r["draw"],
        r["booster"],
        r["name"],
        r["rounds"],
        r["every"],
        *setting,
    )


def relevant_documents(split: Split) -> dict[int, int]:
    """Query id -> its number of relevant documents (:func:`relevant_counts`), for the queries
    of ``split``."""
    ids = split.qid[split.group_ptr[:-1]]
    return dict(zip(ids.tolist(), relevant_counts(split).astype(int).tolist(), strict=True))


def load(path: Path) -> Done:
    """The finished records of ``path`` by :func:`record_key`."""
    return {record_key(r): r for r in harness.read_records(path)}


def _pooled(runs: dict[int, dict[str, Any]], i: int) -> dict[tuple[int, int], float]:
    """(draw, query) -> validation NDCG@K at checkpoint ``i``."""
    return {
        (draw, q): v
        for draw, r in runs.items()
        for q, v in zip(r["qid"], r["ndcg"][i], strict=True)
    }


def _stats(runs: Iterable[dict[str, Any]]) -> str:
    """A leaf rule's or temperature's choices: quantiles and the shares at its bounds."""
    stats = [r["stats"] for r in runs if r["stats"]]
    if not stats:
        return ""
    values = np.concatenate([s["values"] for s in stats])
    low, high = stats[0]["bounds"]
    q10, q50, q90 = np.percentile(values, [10, 50, 90])
    return (
        f"{stats[0]['label']} 10/50/90%: {q10:.3g}/{q50:.3g}/{q90:.3g}; at {low:g}: "
        f"{np.mean(values <= low):.0%}, at {high:g}: {np.mean(values >= high):.0%}"
    )


def _cell(x: float | None, fmt: str = ".4f") -> str:
    return "" if x is None or not np.isfinite(x) else format(x, fmt)


def _mean(values: Iterable[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return float(np.mean(kept)) if kept else None


class Report:
    """The tables of one dataset, its draws pooled."""

    def __init__(
        self,
        done: Done,
        data: str,
        draws: list[int],
        rounds: int,
        every: int,
        setting: Setting,
        relevant: Relevant,
    ) -> None:
        self.done, self.data, self.draws = done, data, draws
        #: (draw, query) -> its number of relevant documents; None until every draw's is known
        self.count = (
            {(d, q): n for d in draws for q, n in relevant[data, d].items()}
            if all((data, d) in relevant for d in draws)
            else None
        )
        self.rounds, self.every, self.setting = rounds, every, setting
        self.checkpoints = list(range(every, rounds + 1, every))
        self.key = (setting.learning_rate, setting.cutoff)

    def runs(self, booster: str, name: str) -> dict[int, dict[str, Any]] | None:
        """Draw -> the candidate's record; None until every draw is done."""
        keys = {
            d: ("training", self.data, d, booster, name, self.rounds, self.every, *self.key)
            for d in self.draws
        }
        if not all(k in self.done for k in keys.values()):
            return None
        return {d: self.done[k] for d, k in keys.items()}

    def finished(self, boosters: list[str]) -> list[tuple[str, str]]:
        return [(b, n) for b, n in CANDIDATES if b in boosters and self.runs(b, n) is not None]

    def summary(self, booster: str) -> list[str]:
        names = [n for b, n in CANDIDATES if b == booster and self.runs(b, n) is not None]
        if not names:
            return []
        reference = self.runs(booster, REFERENCE)
        mid = max(len(self.checkpoints) // 2 - 1, 0)
        last = len(self.checkpoints) - 1
        lines = [
            f"| candidate | NDCG@{K} at {self.checkpoints[mid]} | at {self.rounds} | peak (round) "
            f"| minus {REFERENCE} at {self.rounds} [95% CI] | p | verdict | per draw | "
            "s / training | choices |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for name in names:
            runs = self.runs(booster, name)
            assert runs is not None
            curve = [float(np.mean(list(_pooled(runs, i).values()))) for i in range(last + 1)]
            peak = int(np.argmax(curve))
            cells = [
                name,
                f"{curve[mid]:.4f}",
                f"{curve[last]:.4f}",
                f"{curve[peak]:.4f} ({self.checkpoints[peak]})",
            ]
            if reference is None or name == REFERENCE:
                cells += ["", "", "", ""]
            else:
                p = paired(_pooled(runs, last), _pooled(reference, last))
                per_draw = [
                    paired(_pooled({d: runs[d]}, last), _pooled({d: reference[d]}, last)).mean
                    for d in self.draws
                ]
                cells += [
                    p.interval,
                    f"{p.p_randomization:.3g}",
                    p.verdict,
                    ", ".join(f"{m:+.4f}" for m in per_draw),
                ]
            cells += [
                f"{np.mean([r['seconds'] for r in runs.values()]):.1f}",
                _stats(runs.values()),
            ]
            lines.append("| " + " | ".join(cells) + " |")
        return lines

    def _bins(self, keys: Iterable[tuple[int, int]]) -> tuple[list[str], list[list[Any]]] | None:
        """The heads and the (draw, query) keys of each bin of :data:`RELEVANT_BINS` (None
        until every draw's numbers of relevant documents are known)."""
        if self.count is None:
            return None
        bins = list(itertools.pairwise(RELEVANT_BINS))
        members = [[k for k in keys if lo <= self.count[k] < hi] for lo, hi in bins]
        heads = [
            f"{lo} to {hi - 1} ({len(m)} queries)"
            if np.isfinite(hi)
            else f"{lo}+ ({len(m)} queries)"
            for (lo, hi), m in zip(bins, members, strict=True)
        ]
        return heads, members

    def by_relevant(self, booster: str) -> list[str]:
        """Each candidate minus plain PL-Rank at the last round, by the query's number of
        relevant documents (:data:`RELEVANT_BINS`)."""
        reference = self.runs(booster, REFERENCE)
        if reference is None:
            return []
        last = len(self.checkpoints) - 1
        base = _pooled(reference, last)
        binned = self._bins(base)
        if binned is None:
            return []
        heads, members = binned
        lines = [
            "| candidate | " + " | ".join(heads) + " |",
            "|---|" + "---|" * len(heads),
            f"| {REFERENCE} itself | "
            + " | ".join(_cell(_mean(base[k] for k in m)) for m in members)
            + " |",
        ]
        for b, name in self.finished([booster]):
            if name == REFERENCE:
                continue
            values = _pooled(self.runs(b, name), last)  # type: ignore[arg-type]
            cells = [_cell(_mean(values[k] - base[k] for k in m), "+.4f") for m in members]
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        return lines

    def holding(self, booster: str, field: str) -> Iterator[tuple[str, dict[int, dict[str, Any]]]]:
        """The finished candidates of ``booster`` whose records of every draw hold ``field``,
        with those records."""
        for b, name in self.finished([booster]):
            runs = self.runs(b, name)
            assert runs is not None
            if all(field in r for r in runs.values()):
                yield name, runs

    def sharpened(self, booster: str) -> list[str]:
        """The expected NDCG@K of each candidate's last validation policy :math:`PL(\tau f)`
        (:data:`SHARPENED`), by the query's number of relevant documents; the candidates whose
        records hold it."""
        lines: list[str] = []
        for name, runs in self.holding(booster, "policy"):
            for t in map(str, SHARPENED):
                values = {
                    (d, q): v
                    for d, r in runs.items()
                    for q, v in zip(r["qid"], r["policy"][t], strict=True)
                }
                binned = self._bins(values)
                if binned is None:
                    return []
                heads, members = binned
                if not lines:
                    lines = [
                        "| candidate | tau | " + " | ".join(heads) + " |",
                        "|---|---|" + "---|" * len(heads),
                    ]
                cells = [_cell(_mean(values[k] for k in m)) for m in members]
                lines.append(f"| {name} | {float(t):g} | " + " | ".join(cells) + " |")
        return lines

    def grades(self, booster: str) -> list[str]:
        """Each candidate's last validation ranking by grade, by the query's number of relevant
        documents: the documents of each relevant grade in its top K and the share of its NDCG@K
        they give; the candidates whose records hold it."""
        lines: list[str] = []
        for name, runs in self.holding(booster, "grades"):
            rows = {
                (d, q): (top, share)
                for d, r in runs.items()
                for q, top, share in zip(
                    r["qid"], r["grades"]["top"], r["grades"]["share"], strict=True
                )
            }
            binned = self._bins(rows)
            if binned is None:
                return []
            heads, members = binned
            n = len(next(iter(rows.values()))[0])
            if not lines:
                lines = [
                    "| candidate | queries with ... relevant documents | "
                    + " | ".join(f"grade {g} in the top {K}" for g in range(1, n))
                    + " | "
                    + " | ".join(f"NDCG@{K} from grade {g}" for g in range(1, n))
                    + " |",
                    "|---|---|" + "---|" * 2 * (n - 1),
                ]
            for head, keys in zip(heads, members, strict=True):
                top = np.mean([rows[k][0] for k in keys], axis=0)
                share = np.mean([rows[k][1] for k in keys], axis=0)
                cells = [f"{v:.2f}" for v in top[1:]] + [f"{v:.4f}" for v in share[1:]]
                lines.append(f"| {name} | {head} | " + " | ".join(cells) + " |")
        return lines

    def curves(self, boosters: list[str], field: str, fmt: str) -> list[str]:
        lines = [
            "| booster | candidate | " + " | ".join(map(str, self.checkpoints)) + " |",
            "|---|---|" + "---|" * len(self.checkpoints),
        ]
        for booster, name in self.finished(boosters):
            runs = self.runs(booster, name)
            assert runs is not None
            if field == "ndcg":
                row = [
                    float(np.mean(list(_pooled(runs, i).values())))
                    for i in range(len(self.checkpoints))
                ]
            else:
                row = [
                    _mean(r[field][i] for r in runs.values()) for i in range(len(self.checkpoints))
                ]
            if all(v is None for v in row):
                continue
            lines.append(f"| {booster} | {name} | " + " | ".join(_cell(v, fmt) for v in row) + " |")
        return lines

    def noise(self) -> list[str]:
        lines = [
            f"| draw | state | spread | cut-off | corr. N={NOISY_N} with N={REFERENCE_N} | "
            f"centred | a query's sum over its sum of abs | XE-NDCG with N={REFERENCE_N} |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for draw in self.draws:
            r = self.done.get(("gradients", self.data, draw))
            for row in [] if r is None else r["rows"]:
                lines.append(
                    f"| {draw} | {row['state']} | {row['spread']:.3f} | {row['K']} | "
                    f"{row['corr']:.3f} | {row['centred']:.3f} | {row['sum']:.2g} | "
                    f"{row['xe']:.3f} |"
                )
        return lines if len(lines) > 2 else []

    def text(self, boosters: list[str]) -> list[str]:
        parts = [f"## {self.data}, draws {', '.join(map(str, self.draws))}", ""]
        for booster in boosters:
            summary = self.summary(booster)
            if summary:
                parts += [f"### {booster}", "", *summary, ""]
        if not self.finished(boosters):
            return [*parts, "(no candidate has finished every draw)", ""]
        for booster in boosters:
            table = self.by_relevant(booster)
            if table:
                parts += [
                    f"### {booster}: minus {REFERENCE} at round {self.rounds}, by the query's "
                    "number of relevant documents",
                    "",
                    *table,
                    "",
                ]
            table = self.grades(booster)
            if table:
                parts += [
                    f"### {booster}: the ranking's top {K} by grade at round {self.rounds}, by "
                    "the query's number of relevant documents",
                    "",
                    *table,
                    "",
                ]
            table = self.sharpened(booster)
            if table:
                parts += [
                    f"### {booster}: expected NDCG@{K} of the validation policy PL(tau f) at "
                    f"round {self.rounds}, by the query's number of relevant documents",
                    "",
                    *table,
                    "",
                ]
        parts += [
            f"### Validation NDCG@{K} of the ranking, every {self.every} rounds",
            "",
            *self.curves(boosters, "ndcg", ".4f"),
            "",
            f"### Expected NDCG@{K} of the validation policy ({VALI_SAMPLES} rankings a query)",
            "",
            *self.curves(boosters, "expected", ".4f"),
            "",
            "### Spread of the validation margins (root mean within-query variance)",
            "",
            *self.curves(boosters, "spread", ".3f"),
            "",
            "### Sharpening: cosine of the round's descent direction with the centred margins",
            "",
            *self.curves(boosters, "sharpening", "+.3f"),
            "",
        ]
        noise = self.noise()
        if noise:
            parts += ["### Gradient noise on the training queries", "", *noise, ""]
        return parts


def report(
    done: Done,
    datas,
    draws,
    boosters,
    rounds: int,
    every: int,
    command: str,
    setting: Setting,
    relevant: Relevant,
) -> str:
    parts = [
        "# Learning per round on deep queries: candidates on validation",
        "",
        f"Written by `{command}`. The tables cover every record of the log (the `.jsonl` file "
        "beside this one) for these datasets and draws, whichever run added it.",
        "",
        f"{rounds} rounds per training at learning rate {setting.learning_rate}, PL-Rank trained "
        f"at cut-off {setting.cutoff} (unless a candidate sets its own), no early stopping. "
        f"Validation NDCG@{K} of the ranking by "
        "score, the draws' queries pooled; each candidate paired per validation query with "
        f"plain {REFERENCE} of the same booster at round {rounds} (mean difference [95% CI], the "
        "paired randomization test's p and verdict at 0.05; per draw: that draw's mean "
        "difference). s / training: the wall time of a training without the recording. "
        "Choices: the learned temperature's or the leaf rule's values, their 10th, 50th and "
        "90th percentiles and the shares at the ends of their range.",
        "",
    ]
    for data in datas:
        parts += Report(done, data, draws, rounds, every, setting, relevant).text(boosters)
    return "\n".join(parts)


def _names(text: str) -> list[str]:
    return [t.strip() for t in text.split(";") if t.strip()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default="web-nonlinear,web-linear", help="web datasets")
    parser.add_argument("--draws", type=int_list, default=[1, 2])
    parser.add_argument("--queries", type=int_list, help="train,vali,test queries of a new draw")
    parser.add_argument("--boosters", default=",".join(BOOSTERS))
    parser.add_argument("--only", default="", help="semicolon-separated candidates (default all)")
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--every", type=int, default=10)
    parser.add_argument("--learning-rate", type=float, default=Setting.learning_rate)
    parser.add_argument("--cutoff", type=int, default=Setting.cutoff, help="PL-Rank's training K")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument(
        "--gradients",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="measure the gradient-noise table",
    )
    parser.add_argument("--out", type=Path, required=True, help="the report; its log: OUT.jsonl")
    args = parser.parse_args()
    datas = [d for d in args.data.split(",") if d]
    boosters = [b for b in args.boosters.split(",") if b]
    names = _names(args.only) or list(dict.fromkeys(n for _, n in CANDIDATES))
    known = {n for _, n in CANDIDATES}
    unknown = [d for d in datas if d not in WEB_VARIANTS]
    unknown += [b for b in boosters if b not in BOOSTERS] + [n for n in names if n not in known]
    if unknown:
        parser.error(
            f"unknown: {', '.join(map(repr, unknown))}; datasets are {sorted(WEB_VARIANTS)}, "
            f"boosters {list(BOOSTERS)}, candidates {sorted(known)}"
        )
    if args.rounds < args.every or args.rounds % args.every:
        parser.error(f"--rounds must be a multiple of --every, but {args.rounds} and {args.every}")
    if not 0 < args.learning_rate <= 1 or args.cutoff < 1:
        parser.error(
            f"--learning-rate must be in (0, 1] and --cutoff >= 1, but {args.learning_rate} and "
            f"{args.cutoff} are given"
        )
    setting = Setting(args.learning_rate, args.cutoff)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    log = args.out.with_suffix(".jsonl")
    done = load(log)
    relevant: Relevant = {}
    command = harness.command_line("nice -n 10 python research/per_round.py")
    labels = [
        d if args.queries is None else f"{d} ({','.join(map(str, args.queries))} queries)"
        for d in datas
    ]
    for data, label in zip(datas, labels, strict=True):
        for draw in args.draws:
            ds = dataset(data, draw, args.queries)
            relevant[label, draw] = relevant_documents(ds.vali)
            base = {"data": label, "draw": draw}
            if args.gradients and ("gradients", label, draw) not in done:
                r = {"kind": "gradients", **base, "rows": gradient_noise(ds, n_jobs=args.threads)}
                harness.append_record(log, r)
                done[record_key(r)] = r
            for booster, name in CANDIDATES:
                if booster not in boosters or name not in names:
                    continue
                r = {"kind": "training", **base, "booster": booster, "name": name}
                r |= {"rounds": args.rounds, "every": args.every}
                r |= {"learning_rate": setting.learning_rate, "cutoff": setting.cutoff}
                if record_key(r) in done:
                    continue
                r |= train(
                    booster,
                    name,
                    ds,
                    rounds=args.rounds,
                    every=args.every,
                    n_jobs=args.threads,
                    setting=setting,
                )
                harness.append_record(log, r)
                done[record_key(r)] = r
                print(
                    f"{label} draw {draw} {booster} {name}: {r['seconds']:.1f}s, NDCG@{K} at "
                    f"{args.rounds} {np.mean(r['ndcg'][-1]):.4f}",
                    flush=True,
                )
                text = report(
                    done,
                    labels,
                    args.draws,
                    boosters,
                    args.rounds,
                    args.every,
                    command,
                    setting,
                    relevant,
                )
                args.out.write_text(text + "\n", encoding="utf-8")
    text = report(
        done, labels, args.draws, boosters, args.rounds, args.every, command, setting, relevant
    )
    args.out.write_text(text + "\n", encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
