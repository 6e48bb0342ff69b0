"""Training settings as one value: backend, tree limit, patience, cut-off, seed and threads;
and a tuning budget as another: trials, pruning, the studies' storage, the first point.

Every training in ltrlib (`ltrlib.train.train_ranker`, the tuning studies, the merging,
bi-variate and click-log experiments) takes one `TrainSettings` instead of six loose
arguments, so a notebook builds its settings once, from its parameters cell::

    settings = TrainSettings.for_scale(scale, "client_models", max_trees=max_trees, seed=seed)
    fit_client_models(nsplits, store, settings=settings, ...)

and a function that trains with other limits says so with ``settings.replace(...)``.

Every function that runs Optuna trials (`ltrlib.train.tune`, `tune_cv`, `fit_tuned`,
`run_study` and the experiments above them) takes one `TuningSettings` beside it, so a
notebook builds its tuning budget in one line too::

    tuning = TuningSettings.for_scale(scale, "client_models", n_trials=n_trials, prune=prune)
    fit_client_models(nsplits, store, settings=settings, tuning=tuning, ...)

and ``n_trials`` can be followed from the notebook to the loop (`run_study`).

Scale-dependent budgets are data, `ltrlib.config.TRAIN_BUDGETS`, with three readers:
`TrainSettings.for_scale` resolves ``max_trees`` and ``early_stopping`` from it,
`TuningSettings.for_scale` ``n_trials``, and `budget_for_scale` an experiment's other
budgets, the ones no function's settings hold (folds, stage 1's trials, the networks'
trials and steps, logged sessions).
"""

from __future__ import annotations

import dataclasses
import operator
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ltrlib import config

__all__ = [
    "DEFAULT_EARLY_STOPPING",
    "DEFAULT_EVAL_AT",
    "DEFAULT_MAX_TREES",
    "DEFAULT_NUM_THREADS",
    "TrainSettings",
    "TuningSettings",
    "budget_for_scale",
]

# The paper's training limits (§5.1).
DEFAULT_MAX_TREES = 3000
DEFAULT_EARLY_STOPPING = 100
DEFAULT_EVAL_AT = 10
# The project's machines have 2 cores; LightGBM's default (all cores, OpenMP) oversubscribes
# when tests run in parallel. LTRLIB_NUM_THREADS overrides it without touching code.
DEFAULT_NUM_THREADS = int(os.environ.get("LTRLIB_NUM_THREADS", "2"))

# The TrainSettings fields that have per-scale budgets in `config.TRAIN_BUDGETS`.
_BUDGETED = ("max_trees", "early_stopping")


def _positive_int(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


@dataclass(frozen=True)
class TrainSettings:
    """How a LambdaMART model is trained; the defaults are the non-IID paper's (§5.1).

    ``backend``: ``"lightgbm"`` or ``"xgboost"``. At most ``max_trees`` trees; with
    validation data, training stops once NDCG@``eval_at`` on it has not improved for
    ``early_stopping`` trees. ``seed`` seeds the library (and a tuning study's sampler).
    ``num_threads``: the library's threads; None is `DEFAULT_NUM_THREADS`, read when
    training (`threads`). Integers are checked and stored as Python ints, so a setting
    goes into a study's JSON setup as it is.
    """

    backend: str = "lightgbm"
    max_trees: int = DEFAULT_MAX_TREES
    early_stopping: int = DEFAULT_EARLY_STOPPING
    eval_at: int = DEFAULT_EVAL_AT
    seed: int = 0
    num_threads: int | None = None

    def __post_init__(self):
        # Frozen: the normalised values are set through object.__setattr__.
        if not isinstance(self.backend, str) or not self.backend:
            raise ValueError(f"backend must be a backend name such as 'lightgbm', got {self.backend!r}")
        for name in ("max_trees", "early_stopping", "eval_at"):
            object.__setattr__(self, name, _positive_int(getattr(self, name), name))
        try:
            object.__setattr__(self, "seed", operator.index(self.seed))
        except TypeError:
            raise ValueError(f"seed must be an integer, got {self.seed!r}") from None
        if self.num_threads is not None:
            object.__setattr__(self, "num_threads", _positive_int(self.num_threads, "num_threads"))

    @property
    def threads(self) -> int:
        """The thread count training uses: ``num_threads``, or `DEFAULT_NUM_THREADS`."""
        return DEFAULT_NUM_THREADS if self.num_threads is None else self.num_threads

    def replace(self, **changes) -> TrainSettings:
        """These settings with ``changes`` (field names), checked as at construction."""
        _check_fields(changes)
        return dataclasses.replace(self, **changes)

    @classmethod
    def for_scale(cls, scale: str, experiment: str, **overrides) -> TrainSettings:
        """The settings of ``experiment`` (a key of `config.TRAIN_BUDGETS`' scales, e.g.
        ``"client_models"``) at ``scale``, with a notebook's parameters as ``overrides``.

        ``max_trees`` and ``early_stopping``: given as 0, the scale's value for the
        experiment (`budget_for_scale`); not given, that value or else the paper's; either
        way capped by the scale's caps. The other fields are taken as given.
        """
        _check_fields(overrides)
        budget = _budget(scale, experiment)
        values = dict(overrides)
        for name in _BUDGETED:
            given = name in overrides
            value = overrides.get(name, 0)
            _check_budget_value(name, value)
            # Not given and not budgeted by scale: the paper's (the field's default).
            fallback = value if given else getattr(cls, name)
            values[name] = _resolve(budget, name, value, fallback)
        return cls(**values)


def _check_fields(values, cls=TrainSettings) -> None:
    names = [f.name for f in dataclasses.fields(cls)]
    unknown = sorted(set(values) - set(names))
    if unknown:
        raise TypeError(f"{cls.__name__} has no field {unknown}; its fields: {names}")


@dataclass(frozen=True)
class TuningSettings:
    """How many Optuna trials a search runs, and how: the defaults are `ltrlib.train.tune`'s.

    ``n_trials``: the finished (completed or pruned) trials a study must have
    (`ltrlib.train.tuning.run_study`). ``prune``: stop hopeless trials early from their
    validation curves (`ltrlib.train.tuning.pruner`); a search that cannot prune (stage 1,
    the networks) refuses True. ``storage``: where the studies live, None for in memory
    (or the function's own default, e.g. `fit_tuned`'s run journal), a journal file path,
    a database URL, or an Optuna storage object; a path is kept as a string and an empty
    one is None. ``progress``: show the trials' progress. ``first_params``: a point
    enqueued as each study's first trial, never pruned, or None; kept as a tuple of
    ``(name, value)`` pairs in the order given (frozen, and read back in that order by
    `first_point`, so a study's recorded setup is what the mapping gave).

    Which home holds what: the trial budget is here; how each trial trains is
    `TrainSettings`; the budgets that are neither (folds, stage 1's trials, the networks'
    steps) come from `budget_for_scale`.
    """

    n_trials: int = 20
    prune: bool = True
    storage: Any = None
    progress: bool = True
    first_params: tuple[tuple[str, Any], ...] | None = None

    def __post_init__(self):
        # Frozen: the normalised values are set through object.__setattr__.
        object.__setattr__(self, "n_trials", _positive_int(self.n_trials, "n_trials"))
        for name in ("prune", "progress"):
            value = getattr(self, name)
            if not isinstance(value, (bool, np.bool_)):
                raise ValueError(f"{name} must be True or False, got {value!r}")
            object.__setattr__(self, name, bool(value))
        object.__setattr__(self, "storage", _storage(self.storage))
        if self.first_params is not None:
            first = self.first_params
            if isinstance(first, Mapping):
                first = tuple(first.items())
            try:
                first = tuple((key, value) for key, value in first)
            except (TypeError, ValueError):
                raise ValueError("first_params must be a mapping of parameter names to values, "
                                 f"got {self.first_params!r}") from None
            if not all(isinstance(key, str) for key, _ in first) or len({k for k, _ in first}) != len(first):
                raise ValueError(f"first_params must map distinct parameter names to values, got {self.first_params!r}")
            object.__setattr__(self, "first_params", first)

    @property
    def first_point(self) -> dict[str, Any] | None:
        """``first_params`` as a new dict, in the order given, or None."""
        return None if self.first_params is None else dict(self.first_params)

    def replace(self, **changes) -> TuningSettings:
        """This budget with ``changes`` (field names), checked as at construction."""
        _check_fields(changes, TuningSettings)
        return dataclasses.replace(self, **changes)

    @classmethod
    def for_scale(cls, scale: str, experiment: str, **params) -> TuningSettings:
        """The tuning budget of ``experiment`` (a key of `config.TRAIN_BUDGETS`' scales, e.g.
        ``"client_models"``) at ``scale``, with a notebook's parameters as ``params``.

        ``n_trials`` as `budget_for_scale` resolves it: given as 0, the scale's value for
        the experiment; not given, that value or else the default (20); either way capped by
        the scale's caps. The other fields are taken as given.
        """
        _check_fields(params, TuningSettings)
        budget = _budget(scale, experiment)
        given = "n_trials" in params
        value = params.get("n_trials", 0)
        _check_budget_value("n_trials", value)
        values = dict(params, n_trials=_resolve(budget, "n_trials", value, value if given else cls.n_trials))
        return cls(**values)


def _storage(storage):
    """A study storage as `TuningSettings` keeps it: None, a string (a path or URL), or an
    Optuna storage object as is."""
    if storage is None or isinstance(storage, str):
        return storage or None
    if isinstance(storage, os.PathLike):
        return os.fspath(storage)
    import optuna

    if isinstance(storage, optuna.storages.BaseStorage):
        return storage
    raise ValueError(f"storage must be None, a journal path, a database URL or an Optuna storage, got {storage!r}")


def budget_for_scale(scale: str, experiment: str, **values) -> dict[str, Any]:
    """``values`` (notebook parameters, e.g. ``n_trials=n_trials``) with the budgets of
    ``experiment`` at ``scale`` (`config.TRAIN_BUDGETS`): a value of 0 or ``""`` becomes
    the scale's value when it has one, and every value is capped by the scale's caps.
    Another dataset than a synthetic scale takes small's budgets.

    ValueError for an unknown experiment, or a value that is neither a non-negative
    integer nor a string.
    """
    budget = _budget(scale, experiment)
    out = {}
    for name, value in values.items():
        _check_budget_value(name, value)
        out[name] = _resolve(budget, name, value, value)
    return out


def _budget(scale: str, experiment: str) -> config.Budget:
    known = sorted({e for per_scale in config.TRAIN_BUDGETS.values() for e in per_scale})
    if experiment not in known:
        raise ValueError(f"unknown experiment {experiment!r}; TRAIN_BUDGETS has {known}")
    per_scale = config.TRAIN_BUDGETS.get(scale, config.TRAIN_BUDGETS["small"])
    return per_scale.get(experiment, config.Budget())


def _check_budget_value(name: str, value) -> None:
    if isinstance(value, str):
        return
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ValueError(f"{name} must be a non-negative integer (0 = by scale), got {value!r}")


def _resolve(budget: config.Budget, name: str, value, fallback):
    if not value:
        value = budget.by_scale.get(name, fallback)
    if name in budget.caps:
        value = min(value, budget.caps[name])
    return int(value) if isinstance(value, (int, np.integer)) else value
