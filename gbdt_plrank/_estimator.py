"""``PolicyRanker``: the scikit-learn estimator base of the package's rankers.

:class:`PolicyRanker` reads and checks the data of a fit (``X``, labels, query groups, item
groups, query weights, eval sets), trains through a backend
(:class:`~gbdt_plrank._backends.Backend`: XGBoost, LightGBM, a torch network), keeps the fitted
attributes and predicts; its base ``PolicyMethods`` (``gbdt_plrank._training.policy_methods``)
adds what a Plackett-Luce policy offers. :class:`~gbdt_plrank.PLRankRanker`,
:class:`~gbdt_plrank.nn.PLRankMLPRanker` and :class:`~gbdt_plrank.dask.DaskPLRankRanker` derive
from it; :func:`check_early_stopping` and ``PolicyRanker._plan`` (the seeds and the training
plan of a fit, from :func:`gbdt_plrank._training.plrank_plan.plrank_plan`) are what every ranker's
``fit`` shares.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils import Tags
from sklearn.utils.validation import check_is_fitted, validate_data

from ._backends import (
    RANKER,
    SHALLOW_QUERIES,
    Backend,
    BoosterSettings,
    Plan,
    QueryFields,
    Rounds,
    Split,
    Trained,
    backend_of_booster,
    holds_out_automatically,
    query_weights,
)
from ._groups import (
    drop_group_column,
    hold_out_queries,
    ranker_group,
    require_group,
    resolve_groups,
)
from ._training.fairness_spec import checked_item_groups
from ._training.objective import PLRankObjective
from ._training.options import PLRankOptions
from ._training.plrank_plan import plrank_plan
from ._training.policy_methods import PolicyMethods
from ._util.frames import caller_level
from ._util.seeds import seeds_from
from ._util.threads import booster_threads
from ._util.validation import (
    X_RULES,
    check_feature_columns,
    check_feature_values,
    check_labels,
    check_verbose,
)

__all__ = ["HoldOut", "PolicyRanker", "check_early_stopping"]


@dataclass(frozen=True)
class HoldOut:
    """A fit watches a random ``fraction`` of its training queries, drawn with ``seed``, in
    place of an eval set (``early_stopping=True``); with ``automatic``
    (``early_stopping="auto"``) only where :func:`~gbdt_plrank._backends.holds_out_automatically`
    finds the training queries many and shallow, and the fit otherwise trains every round on
    every query."""

    fraction: float
    seed: int
    automatic: bool = False
    #: ``fit``'s own patience, which an automatic hold-out that does not apply refuses.
    early_stopping_rounds: int | None = None

    def applies(self, data: Split) -> bool:
        """Whether to hold out a share of ``data``, the training split.

        Raises
        ------
        ValueError
            Where an automatic one does not apply and ``fit`` was given a patience, which
            would have nothing to watch.
        """
        n, documents = data.n_queries, data.y.shape[0]
        if not self.automatic or holds_out_automatically(n_queries=n, n_documents=documents):
            return True
        if self.early_stopping_rounds is not None:
            raise ValueError(
                f"early_stopping_rounds={self.early_stopping_rounds} needs a validation set, "
                f"and early_stopping='auto' holds none out of these {n} training queries of "
                f"{documents / max(n, 1):.3g} documents on average (it does from "
                f"{SHALLOW_QUERIES['queries']} queries of at most "
                f"{SHALLOW_QUERIES['mean_documents']} on average): pass "
                f"eval_set=[(X_val, y_val, group_val)], or early_stopping=True to hold out a "
                f"share of the training queries."
            )
        return False


#: The parameters that only shape early stopping (the idle ones are named where an automatic
#: hold-out does not apply).
_STOPPING_PARAMETERS = (
    "min_rounds",
    "min_delta",
    "patience_rate",
    "stopping_metric",
    "validation_fraction",
)


def _same(value: object, default: object) -> bool:
    """Whether a parameter's value is its default (``0.0 == 0``; never for another type, so
    ``False`` is not ``0``)."""
    if isinstance(value, (bool, np.bool_)) != isinstance(default, (bool, np.bool_)):
        return False
    try:
        return bool(value == default)
    except (TypeError, ValueError):  # an array, a RandomState: not a default of these
        return False


def check_early_stopping(early_stopping_rounds: int | None, eval_set: object) -> None:
    """Early stopping (``early_stopping_rounds`` checked by its rule) needs a validation set to
    watch."""
    if early_stopping_rounds is not None:
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
    #: The fitted attribute that holds the trained model (``booster_``; a network's ranker
    #: names it ``network_``).
    _model_attribute: ClassVar[str] = "booster_"

    def _store(self, arguments: dict[str, Any]) -> None:
        """Store ``__init__``'s ``arguments`` (its ``locals()``, taken first thing) as the
        attributes of the same names, each as given and nothing else (scikit-learn's rule for
        ``__init__``). A subclass whose ``__init__`` adds parameters stores its own and calls
        ``super().__init__`` with the rest."""
        for name, value in arguments.items():
            if name not in ("self", "__class__"):
                setattr(self, name, value)

    #: Parameters added since a ranker could be pickled whose default changed the training, and
    #: the value that trained as before them (a ranker pickled without one gets this value).
    _EARLIER_VALUES: ClassVar[dict[str, Any]] = {}

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Unpickle, giving a parameter that a ranker pickled by an earlier version did not have
        yet the value it trained at then (:attr:`_EARLIER_VALUES`, else its default), so that
        ``get_params``, ``clone`` and a refit work on it and refit the same model."""
        super().__setstate__(state)
        for name, parameter in inspect.signature(type(self).__init__).parameters.items():
            if parameter.default is not parameter.empty and not hasattr(self, name):
                setattr(self, name, self._EARLIER_VALUES.get(name, parameter.default))

    def __sklearn_tags__(self) -> Tags:
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        tags.input_tags.sparse = True
        return tags

    def _train(
        self,
        backend: Backend,
        settings: BoosterSettings,
        plan: Plan,
        options: PLRankOptions,
        X: Any,
        y: Any,
        group: Any,
        eval_set: Sequence[tuple[Any, ...]] | None,
        item_groups: Any = None,
        sample_weight: Any = None,
        hold_out: HoldOut | None = None,
    ) -> Any:
        """Train on ``(X, y, group)`` watching ``eval_set``; return ``self``, fitted.

        ``options`` are the fit's checked options, from which ``plan`` was built. With
        ``hold_out`` the watched set is a random share of the training queries instead
        (:func:`~gbdt_plrank._groups.hold_out_queries`), which are then not trained on; where
        an automatic one does not apply to the data, ``plan`` trains every round without it.
        """
        column = group if isinstance(group, str) else None
        X, group = ranker_group(X, group)
        data = self._query_data(
            X, y, group, item_groups, options=options, reset=True, sample_weight=sample_weight
        )
        evals = [self._eval_data(i, item, options, column) for i, item in enumerate(eval_set or ())]
        if hold_out is not None and hold_out.applies(data):
            data, held = hold_out_queries(data, fraction=hold_out.fraction, seed=hold_out.seed)
            evals = [held]
        elif hold_out is not None:
            plan = replace(plan, early_stopping_rounds=None)
            self._warn_idle_parameters(
                options,
                eval_set=None,
                early_stopping_rounds=None,
                names=_STOPPING_PARAMETERS,
            )
        trained = backend.train(settings, data, evals, plan)
        self.group_column_ = column
        self._keep(trained, plan=plan, n_queries=data.n_queries)
        return self

    def _keep(self, trained: Trained, *, plan: Plan, n_queries: int) -> None:
        """Store the fitted attributes of ``trained`` (``n_features_in_`` is already set), the
        model of ``plan`` trained on ``n_queries`` queries."""
        setattr(self, self._model_attribute, trained.booster)
        self.best_iteration_ = trained.best_iteration
        self.evals_result_ = trained.history
        self.feature_importances_ = backend_of_booster(trained.booster).importances(
            trained.booster, self.n_features_in_
        )

    def _eval_data(self, i: int, item: object, options: PLRankOptions, column: str | None) -> Split:
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
        X, group = ranker_group(X, group, where=f" of eval_set[{i}]", fitted_column=column)
        return self._query_data(
            X,
            y,
            group,
            item_groups,
            options=options,
            reset=False,
            name=f"eval_set[{i}] item_groups",
        )

    def _query_data(
        self,
        X: Any,
        y: Any,
        group: Any,
        item_groups: Any,
        *,
        options: PLRankOptions,
        reset: bool,
        name: str = "item_groups",
        sample_weight: Any = None,
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
        return replace(data, feature_names=None if names is None else tuple(names), weights=weights)

    def _checked_X(self, X: Any, y: Any = "no_validation", *, reset: bool) -> Any:
        """``X``, or ``(X, y)`` when ``y`` is given, checked by ``validate_data``.

        Columns must be numeric (:func:`~gbdt_plrank._util.validation.check_feature_columns`) and
        values finite, NaN where the ranker takes missing values (its ``allow_nan`` tag).
        """
        check_feature_columns(X)
        with_y = {} if isinstance(y, str) and y == "no_validation" else {"y": y, "y_numeric": True}
        out = validate_data(
            self, X, reset=reset, ensure_all_finite=False, **with_y, **self._x_rules
        )
        X = out[0] if with_y else out
        check_feature_values(X, allow_nan=self.__sklearn_tags__().input_tags.allow_nan)
        return out

    def _options(self) -> PLRankOptions:
        """The checked PL-Rank options of the ranker's parameters (those it has; defaults else)."""
        return PLRankOptions.checked(
            **{
                name: getattr(self, name)
                for name in PLRankOptions.model_fields
                if hasattr(self, name)
            }
        )

    def _fitted_model(self) -> Any:
        """The trained model (``NotFittedError`` before ``fit``)."""
        check_is_fitted(self)
        return getattr(self, self._model_attribute)

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
        model = self._fitted_model()
        X = self._checked_X(drop_group_column(X, getattr(self, "group_column_", None)), reset=False)
        return backend_of_booster(model).margins(model, X, n_threads=booster_threads(self.n_jobs))

    def _warn_idle_parameters(
        self,
        options: PLRankOptions,
        *,
        eval_set: object,
        early_stopping_rounds: object,
        held_out: bool = False,
        names: Sequence[str] | None = None,
    ) -> None:
        """Warn about each parameter set away from its default that this fit does not use
        (among ``names``; None: all).

        As scikit-learn's estimators do (``LogisticRegression(l1_ratio=0.5)`` without the
        elastic net): a UserWarning naming the parameter, its value and why it has no effect.
        ``min_rounds``, ``min_delta`` and ``patience_rate`` only shape early stopping;
        ``stopping_metric`` only chooses what is scored on the eval sets (or the ``held_out``
        training queries); ``validation_fraction`` only sizes that held-out share;
        ``fairness_weight`` only weighs a fairness loss.
        """
        given = {
            name: getattr(self, name)
            for name, p in inspect.signature(type(self).__init__).parameters.items()
            if p.default is not p.empty
            and hasattr(self, name)
            and not _same(getattr(self, name), p.default)
        }
        no_stopping = (
            early_stopping_rounds is None,
            "it applies to early stopping, and fit got no early_stopping_rounds",
        )
        idle = {
            **dict.fromkeys(("min_rounds", "min_delta", "patience_rate"), no_stopping),
            "stopping_metric": (
                not (eval_set or held_out),
                "it names what the eval sets are scored by, and fit got no eval_set",
            ),
            "validation_fraction": (
                not held_out,
                "it sizes the training queries early_stopping holds out when fit gets no "
                "eval_set, and this fit holds none out",
            ),
            "fairness_weight": (
                options.fairness is None,
                "it weighs the fairness loss, and fairness is None",
            ),
        }
        for name, (unused, why) in idle.items():
            if name in given and unused and (names is None or name in names):
                warnings.warn(
                    f"{name}={given[name]!r} has no effect in this fit: {why}.",
                    UserWarning,
                    stacklevel=caller_level(),
                )

    def _plan(
        self,
        options: PLRankOptions,
        rounds: Rounds,
        *,
        eval_set: object,
        trainer: str,
        stopping_metric: str = RANKER.stopping_metric,
        objective_type: Callable[..., PLRankObjective] = PLRankObjective,
        device: str = "cpu",
        held_out: bool = False,
    ) -> tuple[Plan, int]:
        """The training plan of a fit and the seed of its model (the booster's or network's).

        ``rounds`` holds the fit's rounds (or epochs) and how they stop, checked by their
        rules (:class:`~gbdt_plrank._backends.Rounds`, or the ranker's
        :class:`~gbdt_plrank._backends.RankerParameters`). Checks early stopping against
        ``eval_set`` (and warns about parameters the fit does not use, once every value is
        checked), draws the objective's and the model's seeds from ``random_state`` and builds
        the plan with the package's one run builder
        (:func:`gbdt_plrank._training.plrank_plan.plrank_plan`). ``held_out``: the fit watches
        a share of its training queries instead of ``eval_set``.
        """
        early_stopping_rounds = rounds.early_stopping_rounds
        check_early_stopping(early_stopping_rounds, eval_set or held_out)
        objective_seed, model_seed = seeds_from(self.random_state, 2)
        plan = plrank_plan(
            options,
            stopping_metric=stopping_metric,
            seed=objective_seed,
            n_jobs=self.n_jobs,
            n_estimators=rounds.n_estimators,
            early_stopping_rounds=early_stopping_rounds,
            objective_type=objective_type,
            device=device,
            trainer=trainer,
            verbose=check_verbose("verbose", self.verbose),
            min_rounds=rounds.min_rounds,
            min_delta=rounds.min_delta,
            patience_rate=rounds.patience_rate,
        )
        self._warn_idle_parameters(
            options,
            eval_set=eval_set,
            early_stopping_rounds=early_stopping_rounds,
            held_out=held_out,
        )
        return plan, model_seed
