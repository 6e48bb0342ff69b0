"""Hyper-parameter tuning with Optuna's TPE, over exactly the non-IID paper's space (§5.1).

The paper: "Hyper-parameter tuning is performed using the Optuna library, which uses the
Tree-structured Parzen Estimator (TPE) algorithm. We optimized four learning parameters:
learning_rate in [0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.2, 0.3], num_leaves in
15,255, min_data_in_leaf in 10,500, with a step size of 5, and min_sum_hessian_in_leaf in
1,100. The hyper-parameters of the models are tuned on the validation set based on the
NDCG@10 metric." Our reading, in `SEARCH_SPACE`:

* ``learning_rate``: categorical over the nine listed values (a list, not a range).
* ``num_leaves``: integer, 15..255 inclusive.
* ``min_data_in_leaf``: integer, 10..500 inclusive, step 5.
* ``min_sum_hessian_in_leaf``: integer, 1..100 inclusive. The paper gives no type, but every
  value it reports (Table 6: 1, 1, 1, 1, 1, 5; §5.2 stacking: 21, 3, 66, 90, 26) is an
  integer, so the study was almost certainly an integer search (``suggest_int``).

Every trial trains with the paper's limits (at most 3000 trees, early stopping after 100
trees without improvement of validation NDCG@10) and scores the early-stopped model's
NDCG@10 on the validation set, computed with `ltrlib.metrics` (equal to LightGBM's own).

Cheap trials (not in the paper, which gives no trial count or budget)
--------------------------------------------------------------------
* A known-good start: ``first_params`` (for the client models `PAPER_TABLE6_MEDIAN`) is
  enqueued as trial 0, so the study's best is never worse than that point.
* Pruning (``prune=True``, the default): every trial reports the best validation NDCG@10 so
  far every `prune_every` trees (10 at the paper's patience of 100) to Optuna
  (``trial.report``) and stops as soon as Optuna's pruner says so (``trial.should_prune``;
  the trial ends PRUNED). The pruner is `pruner`: a ``MedianPruner`` with one start-up trial
  (trial 0 always completes) and a warm-up of `prune_warmup` trees, half the early-stopping
  patience (50 at the paper's 100: a learning rate of 0.005 or less, or a minimum Hessian
  that forbids most splits, is far behind by then, and a trial pruned there costs a tenth of
  a typical completed one). Why the median rule and not successive halving: our studies are short and
  sequential (a dozen trials, one at a time); successive halving decides by the rank of a
  trial among the few that reached a rung, which with so few trials is a noisy and
  aggressive rule, while the median rule compares a trial with every completed trial at the
  same tree count, and cannot prune before a trial has fallen below what completed ones had
  reached there. What it kills is what costs most: small learning rates (0.0001-0.005 never
  stop early and would grow all 3000 trees) and leaf minimums that barely split. Its bias,
  stated: a slow learner that might overtake late is stopped when it trails the completed
  trials' curves after the warm-up.
* TPE models the results from trial `TPE_STARTUP_TRIALS` on (Optuna's default is 10 random
  start-up trials, which would make every study of ten trials or fewer a random search).
* The binned data are built once per study and shared by its trials
  (`ltrlib.train.ranker.DataCache`: LightGBM ``Dataset``s with ``free_raw_data=False`` and
  the validation set binned with ``reference=`` the training set).

A trial counts as done whether it completed or was pruned: ``n_trials`` is the number of
points tried. A trial whose objective raises `TrialFailed` (a point the learner cannot
train) ends FAIL and does not count: another trial replaces it, so every study gets its
``n_trials`` usable points (`TuningResult.failed` says how many were replaced). The best
trial is the best *completed* one; the ``trials`` table gives pruned trials
``state="pruned"``, the tree count they reached (``pruned_at``) and no value.

Persistence and resumption
--------------------------
Studies live in an Optuna journal file (``reports/<run_id>/optuna.journal`` when tuned via
`fit_tuned`), one study per ``"<split>.<model>"`` name. We use ``JournalStorage`` with a
``JournalFileBackend`` rather than SQLite: the journal is an append-only log in which each
record is one line written and fsynced at once, so an interrupted run loses at most the
trial that was running; it needs no database schema (an RDB study can require
``optuna storage upgrade`` after an Optuna upgrade) and is plain text one can inspect.

Asking for ``n_trials`` counts the study's finished (completed or pruned) trials and runs
only the missing ones; a study that already has them runs nothing. Trials left RUNNING by an interrupted
process are marked FAIL first (one process per journal study is assumed).

Reproducibility across interruptions: the TPE sampler is re-seeded before each trial from
``(seed, number of finished trials)``. TPE's proposal depends only on the finished trials
and its random state, and the pruner's decision only on the completed ones, so the k-th
finished trial gets the same parameters and fate whether the study ran in one go or was
interrupted and resumed, and asking for fewer trials than are stored uses the first
``n_trials`` finished trials, exactly as a fresh study would.

Shared studies: several workers, one database
---------------------------------------------
A storage URL (``postgresql://user@host:5432/db``, also ``mysql://`` or ``sqlite:///``) gives
an ``RDBStorage`` with Optuna's heartbeat (`study_storage`), and the study becomes *shared*:
any number of processes, on any machines, run its trials together (``ltrlib tune-worker``,
`ltrlib.clients.workers`). What changes against the journal, and why:

* A RUNNING trial may be another worker's, so nobody marks it FAIL on sight. Each running
  trial beats every ``heartbeat_interval`` seconds; one whose heartbeat is older than
  ``grace_period`` belongs to a dead worker and is failed by Optuna
  (``optuna.storages.fail_stale_trials``, also run before every trial), and its point is
  queued again once (Optuna's retry callback), so a worker killed mid-trial costs the study
  only that trial's time.
* ``n_trials`` counts for the study, not the process: a worker starts a trial only while
  the finished and running trials are fewer than ``n_trials``, and then waits until the
  running ones finish (or go stale and are queued again), so every worker returns the same
  result. Two workers that decide in the same instant would both start one; trial numbers
  are handed out by the database, so the later of the two sees ``n_trials`` trials ahead of
  it and fails at once without training (Optuna's ``MaxTrialsCallback`` counts only after a
  trial, so it would let the study overshoot).
* Only the process that creates the study (the database refuses a second one of the same
  name) enqueues ``first_params``, then records the setup; a joining process waits for the
  setup and is refused, naming the study and the differing settings, when its own
  differs. The first point is never pruned: another worker's trial may complete before
  it, and the best must not be worse than it.
* The setup also records the heartbeat, since a worker with a shorter grace period would
  fail other workers' live trials. A process given a URL takes the study's heartbeat
  (`study_database`); one given an ``RDBStorage`` must match it.
* Each worker's TPE sampler is seeded from ``(seed, host, process id)`` with Optuna's
  ``constant_liar`` (running trials count as bad results), so two workers propose
  different points. The order in which workers finish trials is not reproducible, hence
  neither is the sequence of points; every trial's value is (training is deterministic for
  a given ``num_threads``), and the ``worker`` user attribute says where each trial ran.
"""

from __future__ import annotations

import json
import math
import os
import socket
import time
import warnings
import zlib
from collections.abc import Callable, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ltrlib import config
from ltrlib.data.dataset import Dataset
from ltrlib.metrics import evaluate
from ltrlib.train.backends.base import DataCache
from ltrlib.train.ranker import Ranker, train_ranker
from ltrlib.train.settings import DEFAULT_EARLY_STOPPING, TrainSettings

__all__ = [
    "GRACE_PERIOD",
    "HEARTBEAT_INTERVAL",
    "JOURNAL_FILE",
    "LEARNING_RATES",
    "PAPER_TABLE6_MEDIAN",
    "SEARCH_SPACE",
    "SEARCH_SPACES",
    "TUNED_PARAMS",
    "TrialFailed",
    "TuningResult",
    "database_url",
    "describe_storage",
    "fit_side_by_side",
    "fit_tuned",
    "in_backend",
    "is_shared",
    "prune_every",
    "prune_warmup",
    "pruner",
    "pruning_monitor",
    "pruning_setup",
    "run_study",
    "search_space",
    "stored_study",
    "study_database",
    "study_storage",
    "suggest_params",
    "tune",
    "tune_cv",
    "tuned_parameters",
    "tuning_history",
]

LEARNING_RATES = (0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.2, 0.3)
JOURNAL_FILE = "optuna.journal"


def _search_space() -> dict:
    from optuna.distributions import CategoricalDistribution, IntDistribution

    return {
        "learning_rate": CategoricalDistribution(LEARNING_RATES),
        "num_leaves": IntDistribution(15, 255),
        "min_data_in_leaf": IntDistribution(10, 500, step=5),
        "min_sum_hessian_in_leaf": IntDistribution(1, 100),
    }


SEARCH_SPACE: dict = _search_space()


def _xgboost_search_space() -> dict:
    from optuna.distributions import CategoricalDistribution, IntDistribution

    # The paper's space in XGBoost's words. num_leaves is max_leaves (our XGBoost defaults
    # grow leaf-wise like LightGBM) and min_sum_hessian_in_leaf is min_child_weight, the
    # same quantity. XGBoost has no minimum document count per leaf (min_data_in_leaf), so
    # its space has three dimensions.
    return {
        "learning_rate": CategoricalDistribution(LEARNING_RATES),
        "max_leaves": IntDistribution(15, 255),
        "min_child_weight": IntDistribution(1, 100),
    }


SEARCH_SPACES: dict[str, dict] = {"lightgbm": SEARCH_SPACE, "xgboost": _xgboost_search_space()}


def search_space(backend: str = "lightgbm") -> dict:
    """The tuned parameters and their distributions for ``backend``."""
    try:
        return SEARCH_SPACES[backend]
    except KeyError:
        raise ValueError(f"unknown backend {backend!r}; supported backends: "
                         f"{', '.join(sorted(SEARCH_SPACES))}") from None
# The per-parameter medians of the six local models of the paper's Table 6 (learning rate
# 0.05 everywhere; leaves 77..237; min data 20..375; min hessian 1..5), on the search grid.
# `tune(first_params=PAPER_TABLE6_MEDIAN)` evaluates it as trial 0: with the few trials
# a quick run can afford, the study then starts from a known good region instead of
# depending on TPE's random start-up draws alone, and its best can only improve on it.
# Not in the paper; notebook 03 enqueues it by default (`start_from_paper`).
PAPER_TABLE6_MEDIAN = {"learning_rate": 0.05, "num_leaves": 180, "min_data_in_leaf": 60,
                       "min_sum_hessian_in_leaf": 1}
TUNED_PARAMS = tuple(SEARCH_SPACE)


def in_backend(params: Mapping[str, Any], backend: str = "lightgbm") -> dict[str, Any]:
    """A point given in the paper's LightGBM names (`PAPER_TABLE6_MEDIAN`, a stacking
    setting) in ``backend``'s names, so one switch changes the backend of a whole notebook:
    ``tune(..., settings=TrainSettings(backend="xgboost"),
    first_params=in_backend(PAPER_TABLE6_MEDIAN, "xgboost"))``."""
    search_space(backend)  # names the supported backends if ``backend`` is unknown
    if backend == "xgboost":
        from ltrlib.train.backends.xgboost import from_lightgbm_names

        return from_lightgbm_names(dict(params))
    return dict(params)


def suggest_params(trial, backend: str = "lightgbm") -> dict[str, Any]:
    """One point of the backend's search space (`SEARCH_SPACE` for LightGBM), drawn
    through ``trial`` (an ``optuna.Trial``)."""
    from optuna.distributions import CategoricalDistribution

    point = {}
    for name, dist in search_space(backend).items():
        if isinstance(dist, CategoricalDistribution):
            point[name] = trial.suggest_categorical(name, dist.choices)
        else:
            point[name] = trial.suggest_int(name, dist.low, dist.high, step=dist.step)
    return point


# --------------------------------------------------------------------------- storage


# Heartbeat of shared (database) studies. A beat is one tiny UPDATE, so every 30 s costs
# nothing; a trial whose worker stopped beating for 2 minutes is taken for dead. A live
# worker never goes that long without a beat (the beat runs in its own thread, and
# LightGBM and XGBoost release the GIL while they train).
HEARTBEAT_INTERVAL = 30
GRACE_PERIOD = 120
# A dead worker's trial is run again once; a point that kills its worker twice (out of
# memory, say) is left FAIL rather than taking down every worker in turn.
MAX_RETRY = 1
# Tries to open a database whose Optuna tables other processes may be creating (see
# `_rdb_storage`); 5 tries wait 5 s in all.
SCHEMA_ATTEMPTS = 5


def study_storage(storage: str | os.PathLike | Any | None, *,
                  heartbeat_interval: int | None = None, grace_period: int | None = None):
    """An Optuna storage: ``None`` (in memory), an Optuna storage object (as is), a database
    URL (``"postgresql://user@host:5432/db"``, ``"sqlite:///..."``), or a path to a journal
    file (created with its folder).

    A URL gives an ``RDBStorage`` whose running trials beat every ``heartbeat_interval``
    seconds (None: `HEARTBEAT_INTERVAL`); a trial silent for ``grace_period`` seconds (None:
    `GRACE_PERIOD`) is failed and queued again once (see "Shared studies" in the module
    docstring). `study_database` takes them from the study instead.
    """
    import optuna

    if storage is None or isinstance(storage, optuna.storages.BaseStorage):
        return storage
    if isinstance(storage, str) and "://" in storage:
        return _rdb_storage(storage, HEARTBEAT_INTERVAL if heartbeat_interval is None else heartbeat_interval,
                            GRACE_PERIOD if grace_period is None else grace_period)
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend, JournalFileOpenLock

    path = Path(storage)
    path.parent.mkdir(parents=True, exist_ok=True)
    # The open()-based lock works on every local file system; the default symlink lock
    # needs symlink support, which some mounted volumes lack.
    return JournalStorage(JournalFileBackend(str(path), lock_obj=JournalFileOpenLock(str(path))))


def database_url(url: str) -> str:
    """``url`` with the PostgreSQL driver named when it names none: ``postgresql://...``
    becomes ``postgresql+psycopg2://...``, the driver ltrlib installs (SQLAlchemy's own
    default is psycopg2 before SQLAlchemy 2.1 and psycopg 3 from 2.1 on). A URL that names
    a driver is kept as it is."""
    scheme, sep, rest = url.partition("://")
    if sep and scheme in ("postgresql", "postgres"):
        return f"postgresql+psycopg2://{rest}"
    return url


def _rdb_storage(url: str, heartbeat_interval: int, grace_period: int):
    import optuna

    for name, value in (("heartbeat_interval", heartbeat_interval), ("grace_period", grace_period)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} must be a positive whole number of seconds, got {value!r}")
    if grace_period <= heartbeat_interval:
        # A live trial would be failed between two of its own beats.
        raise ValueError(f"grace_period ({grace_period} s) must exceed heartbeat_interval "
                         f"({heartbeat_interval} s)")
    storages = optuna.storages
    from sqlalchemy.exc import IntegrityError, ProgrammingError

    with warnings.catch_warnings():
        # The heartbeat and its retry callback have been "experimental" since Optuna 2.8.
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        # Optuna 4.9 renamed the retry callback and its argument; older releases (>= 3.5 is
        # supported) know only the first name.
        if hasattr(storages, "RetryHeartbeatStaleTrialCallback"):
            retry = {"heartbeat_stale_trial_callback": storages.RetryHeartbeatStaleTrialCallback(MAX_RETRY)}
        else:
            retry = {"failed_trial_callback": storages.RetryFailedTrialCallback(MAX_RETRY)}
        for attempt in range(SCHEMA_ATTEMPTS):
            try:
                # pool_pre_ping: a worker's connection can sit idle through a long trial and
                # be dropped by the server or a firewall; test it before use instead of failing.
                return storages.RDBStorage(database_url(url), engine_kwargs={"pool_pre_ping": True},
                                           heartbeat_interval=int(heartbeat_interval),
                                           grace_period=int(grace_period), **retry)
            except (IntegrityError, ProgrammingError):
                # Workers started together on an empty database all create Optuna's tables;
                # PostgreSQL lets one do it and fails the others on a duplicate type or
                # relation. Once the winner has committed, the tables are there to be used.
                if attempt == SCHEMA_ATTEMPTS - 1:
                    raise
                time.sleep(0.5 * (attempt + 1))


def stored_study(storage, study_name: str) -> dict[str, Any] | None:
    """The user attributes of study ``study_name`` (``setup``; for a shared study also
    ``n_trials``, the most trials any process asked for), or None when ``storage`` (as
    `study_storage` takes it) holds no such study."""
    store = study_storage(storage)
    try:
        study_id = store.get_study_id_from_name(study_name)
    except KeyError:
        return None
    return store.get_study_user_attrs(study_id)


def study_database(url: str, study_name: str, *, heartbeat_interval: int | None = None,
                   grace_period: int | None = None):
    """The storage of the shared study ``study_name`` in the database ``url``, with the
    heartbeat given, else the one the study recorded when it was created, else
    `HEARTBEAT_INTERVAL` and `GRACE_PERIOD`. All workers of a study must agree on it (one
    with a shorter grace period would fail the others' live trials), so a process that
    does not say otherwise follows the study (and the setup check refuses one that does)."""
    store = study_storage(url, heartbeat_interval=heartbeat_interval, grace_period=grace_period)
    if heartbeat_interval is not None and grace_period is not None:
        return store
    beat = ((stored_study(store, study_name) or {}).get("setup") or {}).get("heartbeat")
    if not beat:
        return store
    interval = beat["interval"] if heartbeat_interval is None else heartbeat_interval
    grace = beat["grace_period"] if grace_period is None else grace_period
    if (interval, grace) == (store.get_heartbeat_interval(), store.grace_period):
        return store
    store.engine.dispose()
    return study_storage(url, heartbeat_interval=interval, grace_period=grace)


def is_shared(storage) -> bool:
    """Whether ``storage`` (as returned by `study_storage`) holds shared studies: a database
    with Optuna's heartbeat, whose running trials may belong to other processes. An
    ``RDBStorage`` made without a heartbeat is run like a journal, by one process: without
    a heartbeat, a dead worker's trial could not be told from a live one's."""
    import optuna

    return isinstance(storage, optuna.storages.RDBStorage) and storage.get_heartbeat_interval() is not None


def describe_storage(storage) -> str:
    """``storage`` for a message: a URL without its password, a path, or the storage type."""
    import optuna

    url = storage.url if isinstance(storage, optuna.storages.RDBStorage) else storage
    if isinstance(url, str) and "://" in url:
        try:
            from sqlalchemy.engine import make_url

            return make_url(url).render_as_string(hide_password=True)
        except Exception:  # not a URL SQLAlchemy knows: show no part of it that may be secret
            return url.split("://", 1)[0] + "://..."
    if storage is None or isinstance(storage, (str, os.PathLike)):
        return str(storage)
    return type(storage).__name__


def _quiet_optuna() -> None:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)


class TrialFailed(Exception):
    """Raised by an objective for a point its learner cannot train (the message says why,
    and the objective records it in the trial's ``failure`` user attribute): the trial ends
    FAIL and `run_study` runs another in its place, up to ``n_trials`` replacements."""


FAILURE_ATTR = "failure"


def _replaced(study) -> list:
    """The study's trials that failed through `TrialFailed` (not those interrupted)."""
    from optuna.trial import TrialState

    return [t for t in study.get_trials(deepcopy=False, states=(TrialState.FAIL,))
            if FAILURE_ATTR in t.user_attrs]


@contextmanager
def _failures_quiet():
    # Optuna logs a caught exception as a warning with a traceback-like line; a replaced
    # trial is reported once, in `TuningResult.failed` and the trials table instead.
    import optuna

    level = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    try:
        yield
    finally:
        optuna.logging.set_verbosity(level)


def _trial_seed(seed: int, n_complete: int) -> int:
    return int(np.random.SeedSequence([int(seed), int(n_complete)]).generate_state(1)[0])


# --------------------------------------------------------------------------- pruning


# Random start-up trials of the TPE sampler (the enqueued first point included) before it
# models the results; see the module docstring.
TPE_STARTUP_TRIALS = 4


def pruner(early_stopping: int = DEFAULT_EARLY_STOPPING):
    """The studies' pruner: Optuna's ``MedianPruner`` with one start-up trial and a warm-up of
    `prune_warmup` trees (steps are tree counts); see the module docstring for why."""
    import optuna

    return optuna.pruners.MedianPruner(n_startup_trials=1, n_warmup_steps=prune_warmup(early_stopping),
                                       interval_steps=1)


def prune_warmup(early_stopping: int = DEFAULT_EARLY_STOPPING) -> int:
    """Trees a trial grows before it can be pruned: half the early-stopping patience."""
    return max(1, int(early_stopping) // 2)


def prune_every(early_stopping: int = DEFAULT_EARLY_STOPPING) -> int:
    """Trees between two reports to the pruner: a tenth of the patience (10 at the paper's
    100). Each report is one journal write; finer steps cost more than they save."""
    return max(1, int(early_stopping) // 10)


def pruning_setup(prune: bool, early_stopping: int) -> dict | None:
    """The pruning rule as recorded in a study's setup (None without pruning): a study is
    resumed only with the same rule."""
    if not prune:
        return None
    return {"pruner": "median", "startup_trials": 1, "warmup_trees": prune_warmup(early_stopping),
            "every": prune_every(early_stopping)}


# User attribute of the enqueued first point (`first_params`), kept by Optuna's retry copy.
FIRST_POINT = "first_point"


def pruning_monitor(trial, early_stopping: int, step_offset: int = 0):
    """A `train_ranker` monitor that reports the best validation value so far to ``trial``
    every `prune_every` trees (at step ``step_offset + trees``) once the warm-up is over, and
    raises ``optuna.TrialPruned`` when the pruner says so, except in the first point."""
    import optuna

    every, warmup = prune_every(early_stopping), prune_warmup(early_stopping)
    best = -math.inf
    # The first point always completes, so a study's best is never worse than it. Alone,
    # the pruner cannot stop it anyway (no trial completed before it); in a shared study
    # another worker's trial can complete first.
    prunable = not trial.user_attrs.get(FIRST_POINT)

    def monitor(trees: int, value: float) -> None:
        nonlocal best
        best = max(best, value)
        # Before the warm-up the pruner never prunes, and other trials compare at their own
        # step only: earlier reports would be journal writes for nothing.
        if trees < warmup or trees % every:
            return
        trial.report(best, step_offset + trees)
        if prunable and trial.should_prune():
            trial.set_user_attr("pruned_at", int(trees))
            raise optuna.TrialPruned(f"validation NDCG {best:.4f} after {trees} trees is below "
                                     "the median of the completed trials")

    return monitor


def _check_first_params(first_params, backend: str = "lightgbm") -> dict | None:
    if first_params is None:
        return None
    first = dict(first_params)
    space = search_space(backend)
    if set(first) != set(space):
        raise ValueError(f"first_params must set exactly {list(space)}, got {sorted(first)}")
    from optuna.distributions import CategoricalDistribution

    for k, v in first.items():
        dist = space[k]
        if isinstance(dist, CategoricalDistribution):
            ok = v in dist.choices
        else:
            ok = float(v).is_integer() and dist.low <= v <= dist.high and (v - dist.low) % dist.step == 0
        if not ok:
            raise ValueError(f"first_params[{k!r}] = {v!r} is outside the search space {space[k]}")
    return first


def _data_key(ds: Dataset) -> dict:
    # Cheap but telling: a study tuned on other data (another scale, seed or split
    # definition) must not be silently resumed.
    return {"name": ds.name, "queries": ds.n_queries, "documents": ds.n_docs,
            "features": ds.n_features, "label_sum": int(ds.y.sum(dtype=np.int64))}


# --------------------------------------------------------------------------- result


@dataclass
class TuningResult:
    """The outcome of a study, over its first ``n_trials`` completed trials.

    ``best_params`` holds the four tuned parameters; ``best_iteration`` the early-stopped
    tree count of the best trial (for `tune_cv`: the mean over folds, rounded);
    ``n_new`` how many trials this call ran; ``ranker`` the best trial's model when it was
    trained in this call (`tune` only), else None; ``trials`` one row per used trial
    (completed or pruned, ``state``; the best is the best completed one).
    """

    study_name: str
    n_trials: int
    n_new: int
    best_trial: int
    best_value: float
    best_params: dict[str, Any]
    best_iteration: int
    trials: pd.DataFrame
    ranker: Ranker | None = field(default=None, repr=False)
    failed: int = 0
    failures: list[str] = field(default_factory=list)  # why each replaced trial failed, in words

    def summary(self) -> dict[str, Any]:
        """JSON-able record for a model sidecar."""
        return {"study": self.study_name, "n_trials": self.n_trials, "best_trial": self.best_trial,
                "best_value": self.best_value, "best_params": self.best_params,
                "best_iteration": self.best_iteration}


def run_study(
    objective: Callable,
    *,
    n_trials: int,
    study_name: str,
    storage,
    seed: int,
    setup: dict,
    progress: bool,
    first_params: Mapping[str, Any] | None = None,
    tuned: tuple[str, ...] = TUNED_PARAMS,
    study_pruner=None,
) -> TuningResult:
    """Run ``objective`` until the study ``study_name`` in ``storage`` has ``n_trials``
    finished trials, and sum up its first ``n_trials``: the study runner behind `tune`,
    `tune_cv` and any other search (the bi-variate models of
    `ltrlib.bivariate.experiment.fit_models` have their own space and objective).

    ``objective(trial)`` returns the trial's value (maximised); it may set the user
    attributes ``best_iteration`` and ``trees``, which the ``trials`` table reports, and
    raise ``optuna.TrialPruned``. ``storage`` as `study_storage` takes it; a database URL
    makes the study shared. ``setup`` (JSON-able) records what the study's values depend
    on: a stored study with another setup is refused, naming the differing keys, rather
    than resumed. ``seed`` seeds the TPE sampler (re-seeded per trial, so an interrupted
    study resumes as if uninterrupted). ``first_params``: a point enqueued as the first
    trial, never pruned. ``tuned``: the parameter names `TuningResult.best_params` keeps.
    ``study_pruner``: an Optuna pruner (`pruner`), None for none. A journal or in-memory
    study is run by this process alone; a shared (database) study together with whichever
    workers join it (module docstring).
    """
    if isinstance(n_trials, bool) or not isinstance(n_trials, (int, np.integer)) or n_trials < 1:
        raise ValueError(f"n_trials must be a positive integer, got {n_trials!r}")
    if not isinstance(study_name, str) or not study_name:
        raise ValueError(f"study_name must be a non-empty string, got {study_name!r}")
    _quiet_optuna()
    setup = json.loads(json.dumps(setup))  # compare in the form the storage returns
    store = (study_database(storage, study_name) if isinstance(storage, str) and "://" in storage
             else study_storage(storage))
    run = _run_shared if is_shared(store) else _run_alone
    study, n_new = run(objective, n_trials=int(n_trials), study_name=study_name, store=store,
                       where=describe_storage(storage), seed=seed, setup=setup, progress=progress,
                       first_params=first_params, study_pruner=study_pruner)
    return _study_result(study, study_name, int(n_trials), n_new, tuned)


def _check_setup(study, setup: dict, study_name: str, where: str) -> None:
    stored = study.user_attrs.get("setup")
    if stored == setup:
        return
    # A key on one side only differs even when the other side's value is None.
    diff = sorted(k for k in set(stored) | set(setup)
                  if k not in stored or k not in setup or stored[k] != setup[k])
    missing = "<absent>"
    raise ValueError(
        f"study {study_name!r} in {where} was run with another setup (differs in {diff}: "
        f"stored {[stored.get(k, missing) for k in diff]}, "
        f"now {[setup.get(k, missing) for k in diff]}); "
        "use another run_id or study name, or delete the study"
    )


def _progress_bar(progress: bool, total: int, study_name: str):
    if not (progress and total > 0):
        return None
    from ltrlib.progress import bar

    return bar(total=total, desc=f"tuning {study_name}", leave=False)


def _run_alone(objective, *, n_trials, study_name, store, where, seed, setup, progress, first_params,
               study_pruner):
    """A journal or in-memory study: this process is its only worker."""
    import optuna
    from optuna.trial import TrialState

    study = optuna.create_study(study_name=study_name, storage=store, direction="maximize",
                                load_if_exists=True, pruner=study_pruner or optuna.pruners.NopPruner())
    if study.user_attrs.get("setup") is None:
        study.set_user_attr("setup", setup)
    else:
        _check_setup(study, setup, study_name, where)
    for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        study.tell(t.number, state=TrialState.FAIL)  # left behind by an interrupted run

    def finished():
        return study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED))

    done = len(finished())
    if first_params is not None and done == 0 \
            and not study.get_trials(deepcopy=False, states=(TrialState.WAITING,)):
        # Also after an interruption of the first trial: the first finished trial is
        # always this point, as in an uninterrupted study (and it completes: the pruner
        # needs one completed trial before it prunes).
        study.enqueue_trial(dict(first_params), user_attrs={FIRST_POINT: True})
    missing = max(0, n_trials - done)
    bar = _progress_bar(progress, missing, study_name)
    try:
        while done < n_trials:
            replaced = _replaced(study)
            if len(replaced) > n_trials:
                raise RuntimeError(f"study {study_name!r}: {len(replaced)} trials failed and were replaced, more "
                                   f"than its {n_trials} trials; the last: {replaced[-1].user_attrs[FAILURE_ATTR]}")
            # Seeded by the attempt (finished and replaced trials), so a resumed study draws
            # what an uninterrupted one would.
            study.sampler = optuna.samplers.TPESampler(n_startup_trials=TPE_STARTUP_TRIALS,
                                                       seed=_trial_seed(seed, done + len(replaced)))
            with _failures_quiet():
                study.optimize(objective, n_trials=1, gc_after_trial=False, catch=(TrialFailed,))
            now = len(finished())
            if bar is not None and now > done:
                bar.update(now - done)
                if any(t.state == TrialState.COMPLETE for t in finished()):
                    bar.set_postfix(best=f"{study.best_value:.4f}")
            done = now
    finally:
        if bar is not None:
            bar.close()
    return study, missing


# Seconds a process joining a shared study waits for its creator to record the setup (the
# creator does so right after creating it; longer means it died in between).
SETUP_WAIT = 60.0


class _SurplusTrial(Exception):
    """A trial started when the study already had its ``n_trials`` (see `_run_shared`)."""


def _open_shared(study_name: str, store, where: str, setup: dict, first_params, study_pruner):
    import optuna

    pruner = study_pruner or optuna.pruners.NopPruner()
    try:
        # Without load_if_exists: the database lets exactly one process create the study.
        study = optuna.create_study(study_name=study_name, storage=store, direction="maximize",
                                    pruner=pruner)
    except optuna.exceptions.DuplicatedStudyError:
        study = optuna.load_study(study_name=study_name, storage=store, pruner=pruner)
    else:
        # The creator queues the first point, then publishes the setup: a process that sees
        # the setup also sees trial 0 queued, and nobody queues it twice.
        if first_params is not None:
            study.enqueue_trial(dict(first_params), user_attrs={FIRST_POINT: True})
        study.set_user_attr("setup", setup)
        return study
    deadline = time.monotonic() + SETUP_WAIT
    while study.user_attrs.get("setup") is None:
        if time.monotonic() > deadline:
            raise ValueError(
                f"study {study_name!r} in {where} has no recorded setup after {SETUP_WAIT:.0f} s: "
                "it was made by another program, or its creator died before recording it; "
                "use another study name or delete the study")
        time.sleep(0.2)
    _check_setup(study, setup, study_name, where)
    return study


def _run_shared(objective, *, n_trials, study_name, store, where, seed, setup, progress, first_params,
                study_pruner):
    """A database study with a heartbeat: run trials until the study (all workers together)
    has ``n_trials`` finished ones; see "Shared studies" in the module docstring."""
    import optuna
    from optuna.trial import TrialState

    interval = int(store.get_heartbeat_interval())
    setup = {**setup, "heartbeat": {"interval": interval,
                                    "grace_period": int(store.grace_period or 2 * interval)}}
    study = _open_shared(study_name, store, where, setup, first_params, study_pruner)
    if study.user_attrs.get("n_trials", 0) < n_trials:
        # What `ltrlib tune-worker` runs to when not told otherwise.
        study.set_user_attr("n_trials", n_trials)
    worker = f"{socket.gethostname()}:{os.getpid()}"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)  # constant_liar, Optuna < 4
        study.sampler = optuna.samplers.TPESampler(
            n_startup_trials=TPE_STARTUP_TRIALS, constant_liar=True,
            seed=int(np.random.SeedSequence([int(seed), zlib.crc32(worker.encode())]).generate_state(1)[0]))
    counted = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.RUNNING)
    ahead_states = (*counted, TrialState.WAITING)
    ran = 0

    def guarded(trial):
        nonlocal ran
        ahead = sum(t.number < trial.number for t in study.get_trials(deepcopy=False, states=ahead_states))
        if ahead >= n_trials:
            raise _SurplusTrial(f"trial {trial.number} of study {study_name!r} not run: "
                                f"{ahead} trials were started before it and it needs {n_trials} "
                                "(another worker started one at the same moment)")
        ran += 1
        trial.set_user_attr("worker", worker)
        return objective(trial)

    def tally() -> tuple[int, int]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            optuna.storages.fail_stale_trials(study)  # dead workers' trials: FAIL, queued again
        trials = study.get_trials(deepcopy=False, states=counted)
        finished = sum(t.state != TrialState.RUNNING for t in trials)
        return finished, len(trials) - finished

    finished, _ = tally()
    bar = _progress_bar(progress, n_trials - finished, study_name)
    shown = finished
    try:
        while True:
            finished, running = tally()
            if bar is not None and finished > shown:
                bar.update(min(finished, n_trials) - min(shown, n_trials))
                shown = finished
            if finished >= n_trials:
                break
            if finished + running >= n_trials:
                # The missing trials run elsewhere: wait for them to finish, or to go stale
                # and come back queued, which the next round then runs here.
                time.sleep(min(interval, 2))
                continue
            if len(_replaced(study)) > n_trials:
                raise RuntimeError(f"study {study_name!r}: more trials failed and were replaced than its "
                                   f"{n_trials} trials")
            with _failures_quiet():
                study.optimize(guarded, n_trials=1, catch=(_SurplusTrial, TrialFailed), gc_after_trial=False)
    finally:
        if bar is not None:
            bar.close()
    return study, ran


def _study_result(study, study_name: str, n_trials: int, n_new: int, tuned) -> TuningResult:
    from optuna.trial import TrialState

    finished = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED))
    used = sorted(finished, key=lambda t: t.number)[:n_trials]
    completed = [t for t in used if t.state == TrialState.COMPLETE]
    if not completed:
        raise RuntimeError(f"study {study_name!r}: none of its first {len(used)} trials completed")
    best = max(completed, key=lambda t: (t.value, -t.number))  # earliest of equal values
    replaced = _replaced(study)
    rows = []
    for rank, t in enumerate(used):
        done_ok = t.state == TrialState.COMPLETE
        rows.append({"trial": rank, "number": t.number, "state": "complete" if done_ok else "pruned",
                     "value": t.value if done_ok else math.nan, **t.params,
                     "best_iteration": t.user_attrs.get("best_iteration"),
                     "pruned_at": None if done_ok else t.user_attrs.get("pruned_at", t.last_step),
                     # Trees grown (all folds of a cross-validated trial): the trial's cost.
                     "trees": t.user_attrs.get("trees", None if done_ok else t.user_attrs.get("pruned_at")),
                     "seconds": (t.duration.total_seconds() if t.duration else math.nan)})
    trials = pd.DataFrame(rows)
    trials["best_so_far"] = trials["value"].cummax().ffill()
    return TuningResult(study_name=study_name, n_trials=len(used), n_new=n_new,
                        best_trial=best.number, best_value=float(best.value),
                        best_params={k: best.params[k] for k in tuned},
                        best_iteration=int(best.user_attrs.get("best_iteration", 0)),
                        trials=trials, failed=len(replaced), failures=[t.user_attrs[FAILURE_ATTR] for t in replaced])


# --------------------------------------------------------------------------- tuning


def tune(
    train: Dataset,
    vali: Dataset,
    *,
    n_trials: int = 20,
    study_name: str = "tuning",
    storage=None,
    settings: TrainSettings = TrainSettings(),
    params: Mapping[str, Any] | None = None,
    first_params: Mapping[str, Any] | None = None,
    progress: bool = True,
    prune: bool = True,
) -> TuningResult:
    """Tune on ``vali`` by NDCG@``settings.eval_at`` (the paper's procedure).

    Each trial trains `train_ranker` with ``settings`` on ``train`` with early stopping on
    ``vali`` and the trial's point of the backend's search space (`SEARCH_SPACE` for
    LightGBM) on top of the fixed ``params``; the trial's value is the early-stopped
    model's NDCG@``eval_at`` on ``vali``. ``storage``: None (in memory), a
    journal file path, a database URL (a shared study other processes can join) or an
    Optuna storage; with a persistent storage an interrupted study resumes and a finished
    one is reused (see the module docstring). ``settings.seed`` seeds both the
    sampler and the library. ``first_params`` (e.g. `PAPER_TABLE6_MEDIAN`): a point of the
    search space evaluated as the first trial before TPE takes over (not in the paper).
    ``prune``: stop hopeless trials early (`pruner`, fed from the validation curve; see the
    module docstring). The binned data are built once and shared by all trials.
    """
    if vali is None:
        raise ValueError("tune needs a validation set (vali): the paper tunes on it")
    backend, early_stopping = settings.backend, settings.early_stopping
    fixed = dict(params or {})
    tuned = tuple(search_space(backend))
    overlap = sorted(set(fixed) & set(tuned))
    if overlap:
        raise ValueError(f"params {overlap} are tuned; remove them from the fixed params")
    metric = f"ndcg@{settings.eval_at}"
    best: dict[str, Any] = {"value": -math.inf, "number": None, "ranker": None}

    cache = DataCache(train, vali)

    def objective(trial):
        monitor = pruning_monitor(trial, early_stopping) if prune else None
        ranker = train_ranker(train, vali, {**fixed, **suggest_params(trial, backend)}, settings,
                              cache=cache, monitor=monitor)
        value = float(evaluate(vali, ranker.score(vali), metrics=metric)[metric])
        trial.set_user_attr("best_iteration", ranker.best_iteration)
        trial.set_user_attr("trees", len(ranker.curve))
        if value > best["value"]:
            # Keep the best model of this call: no retraining when it is the study's best.
            best.update(value=value, number=trial.number, ranker=ranker)
        return value

    first = _check_first_params(first_params, backend)
    setup = {"kind": "holdout", "first_params": first, "backend": backend, "train": _data_key(train),
             "vali": _data_key(vali), "params": fixed, "max_trees": settings.max_trees,
             "early_stopping": early_stopping, "eval_at": settings.eval_at, "seed": settings.seed,
             "pruning": pruning_setup(prune, early_stopping),
             "tpe_startup_trials": TPE_STARTUP_TRIALS}
    result = run_study(objective, n_trials=n_trials, study_name=study_name, storage=storage,
                       seed=settings.seed, setup=setup, progress=progress, first_params=first,
                       tuned=tuned, study_pruner=pruner(early_stopping) if prune else None)
    if best["number"] == result.best_trial:
        result.ranker = best["ranker"]
    return result


def tune_cv(
    data: Dataset,
    n_folds: int = 5,
    *,
    n_trials: int = 20,
    study_name: str = "tuning-cv",
    storage=None,
    settings: TrainSettings = TrainSettings(),
    params: Mapping[str, Any] | None = None,
    first_params: Mapping[str, Any] | None = None,
    progress: bool = True,
    prune: bool = True,
) -> TuningResult:
    """Tune by ``n_folds``-fold cross-validation over the queries of ``data``.

    For a small set with no separate validation part (the stacking meta-model is tuned on
    D_merge). Folds come from ``data.fold_ids(n_folds, settings.seed)``. Per trial and fold, a model
    is trained on the other folds with early stopping on the held-out fold, which is then
    scored; the trial's value is the mean NDCG@``eval_at`` over folds (as ``lgb.cv``, the
    held-out fold also decides early stopping, a small optimistic bias shared by all
    trials). ``best_iteration`` is the best trial's mean early-stopped tree count, the
    tree count to use when refitting on all of ``data`` (``train_ranker(data, None, ...,
    settings.replace(max_trees=result.best_iteration))``).

    ``prune``: as in `tune`; a trial reports each fold's curve at steps ``fold * max_trees +
    trees``, so it is compared with completed trials on the same fold (Optuna's median rule
    takes the trial's best value over all its steps, earlier folds included, which only makes
    pruning in later folds more lenient). Each fold's binned
    data are built once and shared by all trials.
    """
    if isinstance(n_folds, bool) or not isinstance(n_folds, (int, np.integer)) \
            or not 2 <= n_folds <= data.n_queries:
        raise ValueError(f"n_folds must be an integer in 2..{data.n_queries} (the number of "
                         f"queries), got {n_folds!r}")
    backend, max_trees, early_stopping = settings.backend, settings.max_trees, settings.early_stopping
    fixed = dict(params or {})
    tuned = tuple(search_space(backend))
    overlap = sorted(set(fixed) & set(tuned))
    if overlap:
        raise ValueError(f"params {overlap} are tuned; remove them from the fixed params")
    metric = f"ndcg@{settings.eval_at}"
    folds = data.fold_ids(int(n_folds), settings.seed)
    parts = [(data.take(np.flatnonzero(folds != f), name=f"{data.name}-cvtrain{f}"),
              data.take(np.flatnonzero(folds == f), name=f"{data.name}-cvfold{f}"))
             for f in range(int(n_folds))]

    caches = [DataCache(train, held_out) for train, held_out in parts]

    def objective(trial):
        point = {**fixed, **suggest_params(trial, backend)}
        values, iters, grown = [], [], []
        for f, (train, held_out) in enumerate(parts):
            monitor = pruning_monitor(trial, early_stopping, f * max_trees) if prune else None
            ranker = train_ranker(train, held_out, point, settings, cache=caches[f], monitor=monitor)
            values.append(float(evaluate(held_out, ranker.score(held_out), metrics=metric)[metric]))
            grown.append(len(ranker.curve))
            iters.append(ranker.best_iteration)
        trial.set_user_attr("fold_values", values)
        trial.set_user_attr("fold_iterations", iters)
        trial.set_user_attr("trees", int(sum(grown)))
        trial.set_user_attr("best_iteration", max(1, int(round(float(np.mean(iters))))))
        return float(np.mean(values))

    first = _check_first_params(first_params, backend)
    setup = {"kind": f"cv{int(n_folds)}", "first_params": first, "backend": backend, "data": _data_key(data),
             "params": fixed, "max_trees": max_trees, "early_stopping": early_stopping,
             "eval_at": settings.eval_at, "seed": settings.seed,
             "pruning": pruning_setup(prune, early_stopping), "tpe_startup_trials": TPE_STARTUP_TRIALS}
    return run_study(objective, n_trials=n_trials, study_name=study_name, storage=storage,
                     seed=settings.seed, setup=setup, progress=progress, first_params=first,
                     tuned=tuned, study_pruner=pruner(early_stopping) if prune else None)


def fit_tuned(
    train: Dataset,
    vali: Dataset,
    *,
    store,
    split: str,
    name: str,
    n_trials: int = 20,
    settings: TrainSettings = TrainSettings(),
    params: Mapping[str, Any] | None = None,
    first_params: Mapping[str, Any] | None = None,
    progress: bool = True,
    prune: bool = True,
    storage=None,
) -> tuple[Ranker, TuningResult]:
    """Tune (or resume, or reuse) the study ``"<split>.<name>"`` with `tune` (trials trained
    with ``settings``) and return its best model.

    The study lives in ``storage``, by default (None or "") the run's journal
    ``<store.run_dir>/optuna.journal``; a database URL makes it a shared study that
    ``ltrlib tune-worker`` processes can join (`study_storage`). The model goes to ``store``
    as ``(split, name)``. The model is loaded from the store when its sidecar records the
    same study and best trial; otherwise it is the best trial's model from this call, or
    (after a resumed or reused study) retrained with the best parameters, which gives the
    same model since training is deterministic. The stored sidecar's ``info["tuning"]``
    holds the study name, trial count, best trial, value and parameters.
    """
    study = f"{split}.{name}"
    result = tune(train, vali, n_trials=n_trials, study_name=study,
                  storage=storage or Path(store.run_dir) / JOURNAL_FILE, settings=settings,
                  params=params, first_params=first_params, progress=progress, prune=prune)
    summary = result.summary()
    if store.exists(split, name):
        stored = (store.info(split, name).get("info") or {}).get("tuning") or {}
        if all(stored.get(k) == summary[k] for k in ("study", "best_trial", "best_value")):
            return store.load(split, name), result
    ranker = result.ranker
    if ranker is None:
        ranker = train_ranker(train, vali, {**dict(params or {}), **result.best_params}, settings)
    ranker.info["tuning"] = summary
    store.save(ranker, split, name)
    return ranker, result


def _fit_in_worker(train, vali, store, split, name, kwargs) -> tuple[str, str]:
    fit_tuned(train, vali, store=store, split=split, name=name, **kwargs)
    return split, name


def fit_side_by_side(fits, store, *, n_jobs: int = 2, settings: TrainSettings = TrainSettings(),
                     progress: bool = True, **kwargs) -> None:
    """Tune and store the models ``fits`` (``(split, name, train, vali)`` tuples) with
    `fit_tuned`, ``n_jobs`` at a time in joblib worker processes; a later `fit_tuned` call
    with the same arguments then loads each one without training.

    Why: on two cores LightGBM's second thread speeds one model up by only 1.2-1.5x (its
    lambdarank gradients and the per-tree bookkeeping are partly serial), so two one-thread
    models side by side get more done. Each worker gets ``settings.threads // n_jobs``
    threads (at least one). The biggest training sets go first, so the long fits start early and
    the small ones fill the gaps. Studies are shared through ``storage`` (the journal file
    locks across processes; a database does too); the models go to ``store``.
    """
    from joblib import Parallel, delayed

    from ltrlib import timing
    from ltrlib.progress import bar

    if n_jobs < 1:
        raise ValueError(f"n_jobs must be >= 1, got {n_jobs}")
    order = sorted(fits, key=lambda f: -f[2].n_docs)
    # In a batch run the workers' trial bars report to the runner (ltrlib.progress) and print
    # nothing; interactively they stay off, as their text would land in the server's console.
    worker_kwargs = {**kwargs, "settings": settings.replace(num_threads=max(1, settings.threads // n_jobs)),
                     "progress": progress and config.in_batch()}
    calls = (delayed(_fit_in_worker)(train, vali, store, split, name, worker_kwargs)
             for split, name, train, vali in order)
    with timing.fitting():
        done = Parallel(n_jobs=n_jobs, backend="loky", return_as="generator_unordered")(calls)
        for split, name in bar(done, total=len(order), desc=f"models, {n_jobs} at a time",
                               unit="model", enabled=progress):
            pass


# --------------------------------------------------------------------------- tables


def tuned_parameters(rankers: Mapping[tuple[str, str], Ranker]) -> pd.DataFrame:
    """Table 6: the tuned parameters and tree count of each ``(split, model)`` ranker.

    Tidy, one row per ranker: ``split, model`` + the tuned parameters of its backend (the
    four of `SEARCH_SPACE` for LightGBM) + ``trees`` (the early-stopped tree count) +
    ``vali_ndcg`` (the tuning objective).
    """
    rows = []
    for (split, model), r in rankers.items():
        tuning = r.info.get("tuning") or {}
        rows.append({"split": split, "model": model,
                     **{k: r.params.get(k) for k in search_space(r.backend)},
                     "trees": r.best_iteration, "vali_ndcg": tuning.get("best_value", r.best_score),
                     "trials": tuning.get("n_trials")})
    return pd.DataFrame(rows)


def tuning_history(results: Mapping[tuple[str, str], TuningResult]) -> pd.DataFrame:
    """Trials of several studies as one tidy frame: ``split, model, trial, value, best_so_far``
    plus the trial's parameters and early-stopped tree count."""
    parts = []
    for (split, model), res in results.items():
        df = res.trials.copy()
        df.insert(0, "model", model)
        df.insert(0, "split", split)
        parts.append(df)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
