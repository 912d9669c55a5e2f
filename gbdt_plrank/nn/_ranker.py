r"""``PLRankMLPRanker``: a multilayer perceptron trained with PL-Rank, as a scikit-learn ranker."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from .._backends import BACKENDS, BoosterSettings, Rounds
from .._backends._parameters import EarlyStoppingRounds, NEstimators
from .._estimator import PolicyRanker
from .._training.options import DEFAULTS, PLRankOptions, option_docs
from .._util.schema import Schema, validate
from .._util.threads import booster_threads

__all__ = ["PLRankMLPRanker"]


class Epochs(Schema):
    """A network's epochs (the rule of ``n_estimators``) and ``fit``'s early stopping."""

    max_epochs: NEstimators = 100
    early_stopping_rounds: EarlyStoppingRounds

    def rounds(self) -> Rounds:
        """As a plan reads them: ``max_epochs`` rounds, each library's own stopping rule."""
        return Rounds.model_construct(
            n_estimators=self.max_epochs, early_stopping_rounds=self.early_stopping_rounds
        )


#: The network's default number of epochs, the one source of its signature's.
EPOCHS = Epochs()


@option_docs()
class PLRankMLPRanker(PolicyRanker):
    r"""A neural network trained to maximise the expected NDCG of a Plackett-Luce policy.

    The network's output :math:`s(d) = f_\phi(x_d)` is the log-score of a stochastic ranking policy,
    as the margin of :class:`~gbdt_plrank.PLRankRanker` is. :math:`f_\phi` is a multilayer
    perceptron (by default 2 sigmoid hidden layers of 32 units, as in PL-Rank-3). Each step takes
    ``batch_size`` queries, estimates :math:`g = \partial(-R)/\partial s` of the expected
    metric@``train_K`` from ``N`` sampled rankings per query with the package's PL-Rank-3 estimator
    and minimises the surrogate :math:`\sum_d s(d)\,\mathrm{sg}(g_d)` (``sg``: held constant), whose
    gradient is exactly :math:`g`. An epoch visits every training query once, in an order drawn from
    ``random_state``; query :math:`q` of epoch :math:`e` draws its rankings from the stream
    ``(seed, e, q)``. Early stopping (``fit(early_stopping_rounds=)``, in epochs) watches the
    policy's expected metric@K on the last eval set (minus the weighted fairness loss with
    ``fairness``) and keeps the best epoch's weights. The network has no Hessian. ``__init__`` only
    stores its arguments; :meth:`fit` checks them. The user guide: :doc:`/guide/neural`.

    Parameters
    ----------
    .. plrank-options:: K train_K N metric gain sampler noise fairness fairness_weight empty_queries
    n_layers : int, default 2
        Hidden layers, >= 0 (0: a linear model).
    units : int, default 32
        Units of each hidden layer.
    activation : {"sigmoid", "tanh", "relu"}, default "sigmoid"
    optimizer : {"adam", "sgd"}, default "adam"
    lr : float, default 0.01
        Step size of the optimizer, finite and > 0.
    batch_size : int, default 256
        Queries per step.
    scale : {"standard", "none"}, default "standard"
        ``"standard"`` centres each feature and divides it by its standard deviation on the
        training rows (constant features by 1). PL-Rank-3 scales each query's features to
        [0, 1] instead, which needs the query at prediction time: scale such data before ``fit``.
    max_epochs : int, default 100
        Epochs (at most, with early stopping).
    n_jobs : int or None, default None
        Threads of torch and of the sampling; ``None`` leaves each library's default.
    random_state : int, RandomState or None, default None
        Seeds the initial weights, the order of the queries and the sampled rankings; the same
        int gives the same model on the same machine and thread count.
    progress : bool, default True
        Show a progress bar over the epochs when writing to a terminal.
    verbose : bool or int, default False
        ``True`` or N >= 1: print the eval sets' values every N epochs in XGBoost's format, or,
        without ``eval_set``, show a progress bar of the epochs wherever the output goes;
        ``False``, 0 or a negative integer leaves the report to ``progress``.

    Attributes
    ----------
    network_ : gbdt_plrank._backends._torch.Network
        The trained network (``network_.module``, a ``torch.nn.Sequential``, and the feature
        scaling), at the best epoch under early stopping.
    booster_ : gbdt_plrank._backends._torch.Network
        Deprecated: ``network_``, under the name the tree rankers give their model (reading it
        warns ``FutureWarning``).
    best_iteration_ : int or None
        0-based best epoch under early stopping, else ``None``.
    evals_result_ : dict
        ``{"valid_i": {"<metric>@K": [value per epoch], "expected_<metric>@K": [...]}}``.
    feature_importances_ : ndarray of shape (n_features,)
        Sum of the absolute first-layer weights of each scaled feature, over their total.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features,)
    group_column_ : str or None
        The DataFrame column of query ids named by ``fit(group=...)``, which is not a feature
        (:meth:`predict` drops it), as in :class:`~gbdt_plrank.PLRankRanker`.

    Examples
    --------
    >>> from gbdt_plrank.nn import PLRankMLPRanker
    >>> ranker = PLRankMLPRanker(K=5, max_epochs=200, random_state=0)
    >>> ranker.fit(X, y, group=qid, eval_set=[(X_val, y_val, qid_val)], early_stopping_rounds=20)
    ... # doctest: +SKIP
    """

    _model_attribute: ClassVar[str] = "network_"

    def __init__(
        self,
        *,
        K: int = DEFAULTS.K,
        train_K: int | str = DEFAULTS.train_K,
        N: int | str = DEFAULTS.N,
        metric: str = DEFAULTS.metric,
        gain: str = DEFAULTS.gain,
        sampler: str = DEFAULTS.sampler,
        noise: str = DEFAULTS.noise,
        fairness: str | None = DEFAULTS.fairness,
        fairness_weight: float = DEFAULTS.fairness_weight,
        empty_queries: str = DEFAULTS.empty_queries,
        n_layers: int = 2,
        units: int = 32,
        activation: str = "sigmoid",
        optimizer: str = "adam",
        lr: float = 0.01,
        batch_size: int = 256,
        scale: str = "standard",
        max_epochs: int = EPOCHS.max_epochs,
        n_jobs: int | None = None,
        random_state: int | np.random.RandomState | None = None,
        progress: bool = True,
        verbose: bool | int = False,
    ) -> None:
        self._store(locals())

    @property
    def booster_(self) -> Any:
        """Deprecated: the trained network is ``network_``."""
        network = self.network_  # AttributeError, without a warning, before fit
        warnings.warn(
            "Attribute `booster_` was deprecated in version 0.2.0 and will be removed in 0.4.0. "
            "Use `network_` instead.",
            FutureWarning,
            stacklevel=2,
        )
        return network

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Unpickle; a ranker pickled by version 0.1.0 kept its network in ``booster_``, which
        becomes ``network_``."""
        if "booster_" in state:
            state = {("network_" if k == "booster_" else k): v for k, v in state.items()}
        super().__setstate__(state)

    def _options(self) -> PLRankOptions:
        """The checked options, ``N="auto"`` resolved for a network
        (:meth:`~gbdt_plrank.PLRankOptions.for_network`)."""
        return super()._options().for_network()

    def fit(
        self,
        X: Any,
        y: Any,
        group: Any = None,
        *,
        item_groups: Any = None,
        eval_set: Sequence[tuple[Any, ...]] | None = None,
        early_stopping_rounds: int | None = None,
    ) -> PLRankMLPRanker:
        """Train the network with the PL-Rank gradient.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Features, finite; a sparse matrix is made dense (entries not stored are 0, as in
            the LETOR files :func:`gbdt_plrank.datasets.load_dataset` reads).
        y : array-like of shape (n_samples,)
            Graded relevance labels: finite, ``>= 0`` (``<= 31`` with ``gain="exp"``).
        group : array-like or str
            Per-row query ids, group sizes or the name of a DataFrame column of query ids (as
            :meth:`gbdt_plrank.PLRankRanker.fit` reads them). Required: ``None`` raises;
            ``np.zeros(n_samples)`` makes all rows one query.
        item_groups : array-like of shape (n_samples,) or None, default None
            With ``fairness="group-disparity"`` (and only then): the item group of every row,
            as in :meth:`gbdt_plrank.PLRankRanker.fit`.
        eval_set : list of tuples (X, y, group) or (X, y, group, item_groups), default None
            Validation sets with their query groups, scored after every epoch (the metric@K of the
            ranking and the policy's expected metric@K, minus the weighted fairness loss with
            ``fairness``); their history is ``evals_result_``. With ``fairness="group-disparity"``
            each entry brings its rows' item groups as a fourth element.
        early_stopping_rounds : int or None, default None
            Stop when the policy's expected metric@K on the last eval set has not improved for
            this many epochs, and keep the best epoch's weights.

        Returns
        -------
        self : PLRankMLPRanker
            Fitted: the network (of the best epoch under early stopping) in ``network_``.

        Raises
        ------
        ValueError
            For an option that breaks its rule (the message names the value and the rule),
            labels that are NaN or negative, features that are not finite, lengths that differ,
            a missing or malformed group (as in :meth:`gbdt_plrank.PLRankRanker.fit`), early
            stopping without eval set, and item groups given without group fairness,
            missing with it, or breaking their rules (as in
            :meth:`gbdt_plrank.PLRankRanker.fit`).
        """
        options = self._options()
        epochs = validate(
            Epochs,
            {"max_epochs": self.max_epochs, "early_stopping_rounds": early_stopping_rounds},
            source="the network's epochs",
        )
        plan, network_seed = self._plan(
            options, epochs.rounds(), eval_set=eval_set, trainer="network"
        )
        network = {
            "n_layers": self.n_layers,
            "units": self.units,
            "activation": self.activation,
            "optimizer": self.optimizer,
            "lr": self.lr,
            "batch_size": self.batch_size,
            "scale": self.scale,
            "progress": self.progress,
        }
        settings = BoosterSettings(
            n_threads=booster_threads(self.n_jobs), seed=network_seed, params=network
        )
        return self._train(
            BACKENDS["torch"],
            settings,
            plan,
            options,
            X,
            y,
            group,
            eval_set,
            item_groups=item_groups,
        )
