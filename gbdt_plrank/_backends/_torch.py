r"""The PyTorch backend: a neural network trained with the PL-Rank gradient, epoch by epoch.

The network's output for a document is the log-score :math:`s(d)` of a Plackett-Luce policy, as a
booster's margin is. Each optimisation step takes a batch of queries, estimates
:math:`g = \partial(-R)/\partial s` with the plan's objective (its
:meth:`~gbdt_plrank._training.booster_objective.BoosterObjective.prepare` on the training set, then
its ``estimate`` on the batch: for a PL-Rank objective at its training cut-off, with its metric,
gain, N, sampler, seed and fairness term) and backpropagates it through the surrogate

.. math:: \ell(\phi) = \sum_{d \in \mathrm{batch}} s_\phi(d)\, \mathrm{sg}(g_d),

whose gradient with respect to the scores is exactly :math:`g` (sg: held constant): the papers'
``-sum(scores * dR/ds)``, a sum over the batch, not a mean (Oosterhuis 2022, PL-Rank-3; Kang,
de Rijke and Oosterhuis 2024, section 5). Query :math:`q` of epoch :math:`e` draws from the
stream ``(seed, e, q)``, whatever the batch it falls in. An epoch is a round: after each, every
eval set is scored with the plan's metrics, and early stopping watches the last metric of the
last eval set (XGBoost's rule), keeping the best epoch's weights.

The data objects of this backend are the :class:`~gbdt_plrank._groups.Split` s themselves, so the
plan's metrics (``f(preds, data)``) read their queries through :meth:`TorchBackend.query_fields`.
The trees' settings have no counterpart here (:data:`~gbdt_plrank._backends.NATIVE_NAMES`: only
the seed and the thread count are passed); the network's options are native parameters
(``NetworkOptions``). torch is imported only when a network is trained or used.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import scipy.sparse as sp
from pydantic import Field
from tqdm.auto import tqdm

from .._groups import Split, query_rows
from .._util.schema import Schema, one_of, validate
from ._base import (
    BoosterSettings,
    History,
    Plan,
    QueryFields,
    Trained,
    eval_name,
    library,
    native_params,
    normalised,
    progress,
)
from ._stopping import plan_stopper

__all__ = ["ACTIVATIONS", "OPTIMIZERS", "SCALINGS", "Network", "NetworkOptions", "TorchBackend"]

ACTIVATIONS = ("sigmoid", "tanh", "relu")
OPTIMIZERS = ("adam", "sgd")
#: ``"standard"``: each feature minus its training mean, over its training standard deviation
#: (1 for a constant feature); ``"none"``: the features as given.
SCALINGS = ("standard", "none")


class NetworkOptions(Schema):
    """The network and its optimisation: the native parameters of the ``torch`` backend.

    Attributes
    ----------
    n_layers : int, default 2
        Hidden layers, >= 0 (0: a linear model). Every hidden layer has ``units`` units:
        PL-Rank-3's network is 2 x 32, the 2024 paper's tuned ones 1 to 4 layers of 4 to 128
        (scalars, so that a comparison's ``[params.plrank-nn]`` and the tuner can set them).
    units : int, default 32
        Units of each hidden layer, >= 1.
    activation : {"sigmoid", "tanh", "relu"}, default "sigmoid"
        Activation of the hidden layers (the papers': sigmoid).
    optimizer : {"adam", "sgd"}, default "adam"
        ``torch.optim.Adam`` or plain ``torch.optim.SGD``.
    lr : float, default 0.01
        The optimizer's step size, finite and > 0 (not the trees' ``learning_rate``).
    batch_size : int, default 256
        Queries per optimisation step, at most: each epoch splits a random permutation of the
        training queries into equal batches (PL-Rank-3: 256; the 2024 paper's code: 64).
    scale : {"standard", "none"}, default "standard"
        Feature scaling fitted on the training rows (:data:`SCALINGS`).
    progress : bool, default True
        Show a progress bar over the epochs (only when writing to a terminal).
    """

    n_layers: int = Field(2, ge=0, description="an integer >= 0")
    units: int = Field(32, ge=1, description="an integer >= 1")
    activation: Literal[ACTIVATIONS] = Field("sigmoid", description=one_of(ACTIVATIONS))  # type: ignore[valid-type]
    optimizer: Literal[OPTIMIZERS] = Field("adam", description=one_of(OPTIMIZERS))  # type: ignore[valid-type]
    lr: float = Field(0.01, gt=0, allow_inf_nan=False, description="a finite number > 0")
    batch_size: int = Field(256, ge=1, description="an integer >= 1")
    scale: Literal[SCALINGS] = Field("standard", description=one_of(SCALINGS))  # type: ignore[valid-type]
    progress: bool = Field(True, description="true or false")

    @classmethod
    def checked(cls, **options: Any) -> NetworkOptions:
        """The options, or a ``ValueError`` naming the first value that breaks its rule."""
        return validate(cls, options, source="the network options")


@dataclass
class Network:
    """A trained network: the feature scaling and the ``torch.nn.Sequential`` of the scores.

    Attributes
    ----------
    module : torch.nn.Sequential
        Maps scaled features ``(n, n_features)`` (float32) to scores ``(n, 1)``.
    mean, scale : float64 arrays of shape (n_features,)
        The features enter the module as ``(X - mean) / scale``.
    """

    module: Any
    mean: np.ndarray
    scale: np.ndarray

    def inputs(self, X: Any) -> Any:
        """The scaled features of ``X`` as a float32 tensor."""
        torch = library("torch")
        return torch.as_tensor((_dense(X) - self.mean) / self.scale, dtype=torch.float32)


def _dense(X: Any) -> np.ndarray:
    """``X`` as a float64 array, refusing missing values (a network has no rule for them)."""
    X = np.asarray(X.toarray() if sp.issparse(X) else X, dtype=np.float64)
    if not np.isfinite(X).all():
        raise ValueError(
            "X must be finite for the torch backend: a network has no rule for missing values, "
            "but X holds NaN or infinity."
        )
    return X


def _scaling(X: np.ndarray, scale: str) -> tuple[np.ndarray, np.ndarray]:
    """Mean and scale of the features (:data:`SCALINGS`)."""
    if scale == "none" or X.shape[0] == 0:
        return np.zeros(X.shape[1]), np.ones(X.shape[1])
    std = X.std(axis=0)
    return X.mean(axis=0), np.where(std > 0, std, 1.0)


def _module(torch: Any, n_features: int, options: NetworkOptions) -> Any:
    """The multilayer perceptron: hidden layers with the activation, then one linear output."""
    activation = {"sigmoid": torch.nn.Sigmoid, "tanh": torch.nn.Tanh, "relu": torch.nn.ReLU}
    layers: list[Any] = []
    width = n_features
    for _ in range(options.n_layers):
        layers += [torch.nn.Linear(width, options.units), activation[options.activation]()]
        width = options.units
    layers.append(torch.nn.Linear(width, 1))
    return torch.nn.Sequential(*layers)


@contextmanager
def _threads(torch: Any, n_threads: int | None) -> Iterator[None]:
    """torch's intra-op thread count set to ``n_threads`` (None: unchanged), then restored."""
    before = torch.get_num_threads()
    if n_threads is not None:
        torch.set_num_threads(n_threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _check_objective(objective: Any) -> None:
    """An error unless the plan's objective estimates on batches (``prepare`` / ``estimate``)."""
    if not all(callable(getattr(objective, name, None)) for name in ("prepare", "estimate")):
        raise TypeError(
            f"the torch backend trains a network with the PL-Rank gradient: plan.objective must "
            f"be a PL-Rank objective (gbdt_plrank._training.plrank_plan.plrank_plan), but "
            f"{objective!r} is given."
        )


class TorchBackend:
    """The network backend (see the module docstring); data objects are :class:`Split` s."""

    name = "torch"
    reserved = frozenset({"seed", "n_threads"})

    def holds_data(self, data: object) -> bool:
        return isinstance(data, Split)

    def holds_booster(self, booster: object) -> bool:
        return isinstance(booster, Network)

    def query_fields(self, data: Split) -> QueryFields:
        return QueryFields(data.group_ptr, data.y, None, data.item_groups)

    def boosted_rounds(self, booster: Network) -> int:
        raise TypeError("a trained torch Network does not record the epochs it was trained for.")

    def continued_rounds(self, data: Split) -> int:
        """0: a network's training is never continued."""
        return 0

    def base_margins(self, data: Split) -> None:
        return None

    def metric_result(self, name: str, value: float) -> tuple[Any, ...]:
        return name, value

    def train(
        self, settings: BoosterSettings, data: Split, evals: Sequence[Split], plan: Plan
    ) -> Trained:
        """Train the network for at most ``plan.n_estimators`` epochs (see the module docstring).

        ``plan.callbacks`` are called as ``callback(epoch, history)`` after each epoch's
        evaluation (0-based epoch, the history so far); they may raise to stop training.

        Raises
        ------
        ValueError
            For network options (``settings.params``) that break their rules
            (``NetworkOptions``), features that are not finite, or early stopping without
            an eval set or metric to watch.
        TypeError
            When ``plan.objective`` is not a PL-Rank objective.
        """
        torch = library(self.name)
        objective = plan.objective
        _check_objective(objective)
        params = native_params(self.name, settings, reserved=self.reserved, defaults={}, fixed={})
        seed, n_threads = params.pop("seed"), params.pop("n_threads", None)
        net = NetworkOptions.checked(**params)
        patience = plan.early_stopping_rounds
        if patience is not None and not (evals and plan.metrics):
            raise ValueError(
                f"early_stopping_rounds={patience} needs an eval set and a metric to watch."
            )
        start = time.perf_counter()
        X = _dense(data.X)
        objective.prepare(data, self.query_fields(data))
        order = np.random.default_rng(seed)
        history: History = {
            eval_name(i): {m.name: [] for m in plan.metrics} for i in range(len(evals))
        }
        n_batches = max(1, math.ceil(data.n_queries / net.batch_size))
        stopper = plan_stopper(plan, params={}, library=self.name)
        weights = None  # of the best epoch
        with _threads(torch, n_threads), torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            network = Network(_module(torch, X.shape[1], net), *_scaling(X, net.scale))
            optimizer = (torch.optim.Adam if net.optimizer == "adam" else torch.optim.SGD)(
                network.module.parameters(), lr=net.lr
            )
            inputs = network.inputs(X)
            eval_inputs = [network.inputs(e.X) for e in evals]
            period, bar = progress(plan, len(evals))
            if bar is None:  # without verbose: the option's bar, on terminals only
                shown = net.progress and not period
                bar = tqdm(total=plan.n_estimators, desc="epochs", disable=None if shown else True)
            for epoch in range(plan.n_estimators):
                for queries in np.array_split(order.permutation(data.n_queries), n_batches):
                    rows, _ = query_rows(data.group_ptr, queries)
                    scores = network.module(inputs[rows]).squeeze(1)
                    grad, _ = objective.estimate(
                        scores.detach().double().numpy(), queries, round_=epoch
                    )
                    optimizer.zero_grad()
                    surrogate(scores, torch.as_tensor(grad, dtype=scores.dtype)).backward()
                    optimizer.step()
                value = self._evaluate(network, evals, eval_inputs, plan, history)
                bar.update(1)
                if period and epoch % period == 0:
                    print(_log_line(epoch, history), flush=True)
                for callback in plan.callbacks:
                    callback(epoch, history)
                if stopper is None:
                    continue
                stop = stopper.update(epoch, value)
                if stopper.best_round == epoch:
                    weights = copy.deepcopy(network.module.state_dict())
                if stop:
                    break
            bar.close()
            if stopper is not None and weights is not None:
                network.module.load_state_dict(weights)
        network.module.eval()
        best_iteration = None if stopper is None else stopper.kept_round
        return Trained(network, best_iteration, history, time.perf_counter() - start)

    @staticmethod
    def _evaluate(
        network: Network,
        evals: Sequence[Split],
        inputs: Sequence[Any],
        plan: Plan,
        history: History,
    ) -> float:
        """Score every eval set with every metric; the last value (what early stopping watches)."""
        torch = library("torch")
        value = -math.inf
        for i, (split, x) in enumerate(zip(evals, inputs)):
            with torch.no_grad():
                preds = network.module(x).squeeze(1).double().numpy()
            for m in plan.metrics:
                name, value = m(preds, split)[:2]
                history[eval_name(i)][name].append(float(value))
        return value

    def margins(self, booster: Network, X: Any, *, n_threads: int | None) -> np.ndarray:
        torch = library(self.name)
        with _threads(torch, n_threads), torch.no_grad():
            return booster.module(booster.inputs(X)).squeeze(1).double().numpy()

    def importances(self, booster: Network, n_features: int) -> np.ndarray:
        """Sum of the absolute first-layer weights of each (scaled) feature, over their total."""
        first = booster.module[0].weight.detach().double().numpy()
        return normalised(np.abs(first).sum(axis=0))


def _log_line(epoch: int, history: History) -> str:
    r"""The values of ``epoch`` in XGBoost's log format: ``[3]\tvalid_0-ndcg@5:0.71234\t...``."""
    values = (
        f"{name}-{metric}:{per[metric][epoch]:.5f}"
        for name, per in history.items()
        for metric in per
    )
    return "\t".join([f"[{epoch}]", *values])


def surrogate(scores: Any, grad: Any) -> Any:
    r"""The papers' surrogate loss :math:`\sum_d s(d)\, g_d` with ``grad`` held constant.

    Its gradient with respect to ``scores`` is ``grad``: with ``grad`` the estimator's
    :math:`\partial(-R)/\partial s`, minimising it ascends the expected metric :math:`R`.
    """
    return (scores * grad.detach()).sum()
