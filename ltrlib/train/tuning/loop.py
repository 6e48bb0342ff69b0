"""Optuna studies with resumption, replaced failures and pruning (`run_study`).

One loop runs every study: `TuningStudy.optimize`, alone (a journal or in-memory study) or
shared over a database. What a trial does besides training comes as small hooks: a
monitor per concern (pruning: `pruning_monitor`; progress beside the study's bar), joined
by `watch`, and the best model kept by `BestModel`.

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
from typing import Any

import numpy as np
import pandas as pd

from ltrlib.data.dataset import Dataset
from ltrlib.train.ranker import Ranker
from ltrlib.train.settings import DEFAULT_EARLY_STOPPING, TuningSettings
from ltrlib.train.tuning.space import TUNED_PARAMS, search_space
from ltrlib.train.tuning.storage import describe_storage, is_shared, study_database, study_storage

__all__ = [
    "TrialFailed", "TuningResult", "TuningStudy", "prune_every", "prune_warmup", "pruner", "pruning_monitor",
    "pruning_setup", "run_study", "watch",
]


def _quiet_optuna() -> None:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)


class TrialFailed(Exception):
    """Raised by an objective for a point its learner cannot train (the message says why,
    and the objective records it in the trial's ``failure`` user attribute): the trial ends
    FAIL and `run_study` runs another in its place, up to ``n_trials`` replacements."""


FAILURE_ATTR = "failure"
#: The validation value of a trial an objective replaced after measuring it (a degenerate
#: stage-2 tree, `ltrlib.bilambdamart.experiment`): what the study gave up by replacing it.
REPLACED_VALUE_ATTR = "replaced_value"
#: User attributes an objective may set that the ``trials`` table reports as columns: a
#: network's ``stop_reason`` (`ltrlib.neural.STOP_REASONS`) and a stage-2 tree's
#: ``degenerate`` reason (`ltrlib.bilambdamart.experiment`), for a trial kept once the study's
#: replacements ran out.
TRIAL_RECORDS = ("stop_reason", "degenerate")


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


def check_first_params(first_params, backend: str = "lightgbm") -> dict | None:
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


def data_key(ds: Dataset) -> dict:
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
    # Each replaced trial's value where its objective measured one (`REPLACED_VALUE_ATTR`), else NaN.
    replaced_values: list[float] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """JSON-able record for a model sidecar."""
        return {"study": self.study_name, "n_trials": self.n_trials, "best_trial": self.best_trial,
                "best_value": self.best_value, "best_params": self.best_params,
                "best_iteration": self.best_iteration}


def run_study(
    objective: Callable,
    tuning: TuningSettings,
    *,
    study_name: str,
    seed: int,
    setup: dict,
    searched: tuple[str, ...] = TUNED_PARAMS,
    study_pruner=None,
    keep_best: bool = False,
    unit: str = "trees",
) -> TuningResult:
    """Run ``objective`` until the study ``study_name`` in ``tuning.storage`` has
    ``tuning.n_trials`` finished trials, and sum up its first ``tuning.n_trials``: the study
    runner behind `tune`, `tune_cv` and any other search (the bi-variate models of
    `ltrlib.bilambdamart.experiment.fit_models` have their own space and objective).

    ``objective(trial, monitor)`` returns the trial's value (maximised). ``monitor`` is a
    training monitor (``monitor(step, value)``, as `train_ranker` and `NeuralRanker.fit`
    call one) that puts the trial's progress, counted in ``unit``, beside the study's bar,
    or None without a bar (``tuning.progress`` False); the objective composes it with its own (`watch`). It may set the user
    attributes ``best_iteration`` and ``trees``, which the ``trials`` table reports, and
    raise ``optuna.TrialPruned``. ``tuning.storage`` as `study_storage` takes it; a database URL
    makes the study shared. ``setup`` (JSON-able) records what the study's values depend
    on: a stored study with another setup is refused, naming the differing keys, rather
    than resumed. ``seed`` seeds the TPE sampler (re-seeded per trial, so an interrupted
    study resumes as if uninterrupted). ``tuning.first_params``: a point enqueued as the first
    trial, never pruned. ``searched``: the names of the searched parameters `TuningResult.best_params` keeps.
    ``study_pruner``: the Optuna pruner (`pruner`) used when ``tuning.prune``; a search
    without one refuses ``tuning.prune`` (its objective reports no curve to prune on). ``keep_best``: the
    objective returns ``(value, model)`` and the result's ``ranker`` is the study's best
    model when this call trained it (`BestModel`), so it is not trained again. A journal or in-memory
    study is run by this process alone; a shared (database) study together with whichever
    workers join it (`ltrlib.train.tuning.storage`).

    The budget is one argument, as in every caller, so ``n_trials`` reads straight from a
    notebook's `TuningSettings` to here; the search's own parts (objective, setup, space,
    pruner) stay separate arguments, since they are the caller's, not the budget's.
    """
    if not isinstance(tuning, TuningSettings):
        raise TypeError(f"tuning must be a TuningSettings, got {type(tuning).__name__}: {tuning!r}")
    if not isinstance(study_name, str) or not study_name:
        raise ValueError(f"study_name must be a non-empty string, got {study_name!r}")
    if tuning.prune and study_pruner is None:
        raise ValueError(f"study {study_name!r}: tuning.prune is True but this search has no pruner; "
                         "give tuning.replace(prune=False)")
    _quiet_optuna()
    setup = json.loads(json.dumps(setup))  # compare in the form the storage returns
    storage = tuning.storage
    store = (study_database(storage, study_name) if isinstance(storage, str) and "://" in storage
             else study_storage(storage))
    study = TuningStudy(study_name, store, describe_storage(storage), seed=seed, setup=setup,
                        progress=tuning.progress, first_params=tuning.first_point,
                        pruner=study_pruner if tuning.prune else None, unit=unit)
    return study.optimize(objective, tuning.n_trials, searched, keep_best)


class BestModel:
    """The best model this process trained in a study: the largest value, the earliest of
    equals. `wrap` turns an objective that returns ``(value, model)`` into the one Optuna
    calls; `of` gives the model when its trial is the study's best (a resumed or shared
    study's best may have been trained elsewhere: None, and the caller trains it again)."""

    def __init__(self):
        self.value, self.number, self.model = -math.inf, None, None

    def wrap(self, objective: Callable) -> Callable:
        def scored(trial, monitor):
            value, model = objective(trial, monitor)
            if value > self.value:
                self.value, self.number, self.model = value, trial.number, model
            return value

        return scored

    def of(self, result: TuningResult):
        return self.model if self.number == result.best_trial else None


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


#: Seconds between two updates of a trial's progress beside its study's bar.
TRIAL_PROGRESS_INTERVAL = 1.0


def _trial_progress(bar, trial, unit: str):
    """The monitor that shows ``trial``'s progress (its step count, in ``unit``) beside the
    study's ``bar``, at most every `TRIAL_PROGRESS_INTERVAL` seconds; None without a bar. A
    study's count moves only when a trial ends, so this is what says a long trial is alive."""
    if bar is None:
        return None
    shown = -math.inf

    def monitor(step: int, value: float) -> None:
        nonlocal shown
        now = time.monotonic()
        if now - shown >= TRIAL_PROGRESS_INTERVAL:
            shown = now
            bar.set_postfix_str(f"trial {trial.number}: {step} {unit}")

    return monitor


def watch(*monitors):
    """One training monitor calling each of ``monitors`` in turn (None ones skipped), or None
    when there is none: a trial's pruning and its progress are separate small monitors."""
    active = [m for m in monitors if m is not None]
    if not active:
        return None
    if len(active) == 1:
        return active[0]

    def monitor(step: int, value: float) -> None:
        for m in active:
            m(step, value)

    return monitor


# Seconds a process joining a shared study waits for its creator to record the setup (the
# creator does so right after creating it; longer means it died in between).
SETUP_WAIT = 60.0


class _SurplusTrial(Exception):
    """A trial started when the study already had its ``n_trials`` (see `TuningStudy`)."""


class TuningStudy:
    """One study as `run_study` runs it: where it is stored (``store``, described as
    ``where``), the setup its values depend on, how its trials are drawn (``seed``, the
    ``first_params`` enqueued first, the ``pruner``) and shown (``progress``, each trial's
    steps counted in ``unit``). `optimize` runs it alone (a journal or in-memory study, this
    process its only worker) or shared (a database study, with whichever workers join it):
    the storage decides."""

    def __init__(self, name: str, store, where: str, *, seed: int, setup: dict, progress: bool,
                 first_params: Mapping[str, Any] | None = None, pruner=None, unit: str = "trees"):
        self.name, self.store, self.where = name, store, where
        self.seed, self.setup, self.progress = seed, setup, progress
        self.first_params, self.pruner, self.unit = first_params, pruner, unit

    def optimize(self, objective: Callable, n_trials: int, searched: tuple[str, ...] = TUNED_PARAMS,
                 keep_best: bool = False) -> TuningResult:
        """Run ``objective(trial, monitor)`` until the study has ``n_trials`` finished trials
        and sum up its first ``n_trials`` (`run_study` says what the objective does).
        ``keep_best``: the objective returns ``(value, model)`` and the result's ``ranker``
        is the best model when this process trained it (`BestModel`)."""
        kept = BestModel() if keep_best else None
        scored = kept.wrap(objective) if kept else objective
        run = self._shared if is_shared(self.store) else self._alone
        study, n_new = run(scored, n_trials)
        result = _study_result(study, self.name, n_trials, n_new, searched)
        if kept:
            result.ranker = kept.of(result)
        return result

    def _trial(self, objective: Callable, bar):
        """What Optuna calls: ``objective`` with the trial's progress monitor beside ``bar``."""
        return lambda trial: objective(trial, _trial_progress(bar, trial, self.unit))

    def _alone(self, objective: Callable, n_trials: int):
        """A journal or in-memory study: this process is its only worker."""
        import optuna
        from optuna.trial import TrialState

        study = optuna.create_study(study_name=self.name, storage=self.store, direction="maximize",
                                    load_if_exists=True, pruner=self.pruner or optuna.pruners.NopPruner())
        if study.user_attrs.get("setup") is None:
            study.set_user_attr("setup", self.setup)
        else:
            _check_setup(study, self.setup, self.name, self.where)
        for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
            study.tell(t.number, state=TrialState.FAIL)  # left behind by an interrupted run

        def finished():
            return study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED))

        done = len(finished())
        if self.first_params is not None and done == 0 \
                and not study.get_trials(deepcopy=False, states=(TrialState.WAITING,)):
            # Also after an interruption of the first trial: the first finished trial is
            # always this point, as in an uninterrupted study (and it completes: the pruner
            # needs one completed trial before it prunes).
            study.enqueue_trial(dict(self.first_params), user_attrs={FIRST_POINT: True})
        missing = max(0, n_trials - done)
        bar = _progress_bar(self.progress, missing, self.name)
        try:
            while done < n_trials:
                replaced = _replaced(study)
                if len(replaced) > n_trials:
                    raise RuntimeError(f"study {self.name!r}: {len(replaced)} trials failed and were replaced, more "
                                       f"than its {n_trials} trials; the last: {replaced[-1].user_attrs[FAILURE_ATTR]}")
                # Seeded by the attempt (finished and replaced trials), so a resumed study draws
                # what an uninterrupted one would.
                study.sampler = optuna.samplers.TPESampler(n_startup_trials=TPE_STARTUP_TRIALS,
                                                           seed=_trial_seed(self.seed, done + len(replaced)))
                with _failures_quiet():
                    study.optimize(self._trial(objective, bar), n_trials=1, gc_after_trial=False,
                                   catch=(TrialFailed,))
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

    def _open_shared(self, setup: dict):
        import optuna

        pruner = self.pruner or optuna.pruners.NopPruner()
        try:
            # Without load_if_exists: the database lets exactly one process create the study.
            study = optuna.create_study(study_name=self.name, storage=self.store, direction="maximize",
                                        pruner=pruner)
        except optuna.exceptions.DuplicatedStudyError:
            study = optuna.load_study(study_name=self.name, storage=self.store, pruner=pruner)
        else:
            # The creator queues the first point, then publishes the setup: a process that sees
            # the setup also sees trial 0 queued, and nobody queues it twice.
            if self.first_params is not None:
                study.enqueue_trial(dict(self.first_params), user_attrs={FIRST_POINT: True})
            study.set_user_attr("setup", setup)
            return study
        deadline = time.monotonic() + SETUP_WAIT
        while study.user_attrs.get("setup") is None:
            if time.monotonic() > deadline:
                raise ValueError(
                    f"study {self.name!r} in {self.where} has no recorded setup after {SETUP_WAIT:.0f} s: "
                    "it was made by another program, or its creator died before recording it; "
                    "use another study name or delete the study")
            time.sleep(0.2)
        _check_setup(study, setup, self.name, self.where)
        return study

    def _shared(self, objective: Callable, n_trials: int):
        """A database study with a heartbeat: run trials until the study (all workers together)
        has ``n_trials`` finished ones; see "Shared studies" in `ltrlib.train.tuning.storage`."""
        import optuna
        from optuna.trial import TrialState

        interval = int(self.store.get_heartbeat_interval())
        setup = {**self.setup, "heartbeat": {"interval": interval,
                                             "grace_period": int(self.store.grace_period or 2 * interval)}}
        study = self._open_shared(setup)
        if study.user_attrs.get("n_trials", 0) < n_trials:
            # What `ltrlib tune-worker` runs to when not told otherwise.
            study.set_user_attr("n_trials", n_trials)
        worker = f"{socket.gethostname()}:{os.getpid()}"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)  # constant_liar, Optuna < 4
            study.sampler = optuna.samplers.TPESampler(
                n_startup_trials=TPE_STARTUP_TRIALS, constant_liar=True,
                seed=int(np.random.SeedSequence([int(self.seed), zlib.crc32(worker.encode())]).generate_state(1)[0]))
        counted = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.RUNNING)
        ahead_states = (*counted, TrialState.WAITING)
        ran = 0

        def tally() -> tuple[int, int]:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                optuna.storages.fail_stale_trials(study)  # dead workers' trials: FAIL, queued again
            trials = study.get_trials(deepcopy=False, states=counted)
            finished = sum(t.state != TrialState.RUNNING for t in trials)
            return finished, len(trials) - finished

        finished, _ = tally()
        bar = _progress_bar(self.progress, n_trials - finished, self.name)
        call = self._trial(objective, bar)

        def guarded(trial):
            nonlocal ran
            ahead = sum(t.number < trial.number for t in study.get_trials(deepcopy=False, states=ahead_states))
            if ahead >= n_trials:
                raise _SurplusTrial(f"trial {trial.number} of study {self.name!r} not run: "
                                    f"{ahead} trials were started before it and it needs {n_trials} "
                                    "(another worker started one at the same moment)")
            ran += 1
            trial.set_user_attr("worker", worker)
            return call(trial)

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
                    raise RuntimeError(f"study {self.name!r}: more trials failed and were replaced than its "
                                       f"{n_trials} trials")
                with _failures_quiet():
                    study.optimize(guarded, n_trials=1, catch=(_SurplusTrial, TrialFailed), gc_after_trial=False)
        finally:
            if bar is not None:
                bar.close()
        return study, ran


def _study_result(study, study_name: str, n_trials: int, n_new: int, searched) -> TuningResult:
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
                     "seconds": (t.duration.total_seconds() if t.duration else math.nan),
                     # What an objective recorded of its trial beyond its value (`TRIAL_RECORDS`).
                     **{k: t.user_attrs[k] for k in TRIAL_RECORDS if k in t.user_attrs}})
    trials = pd.DataFrame(rows)
    trials["best_so_far"] = trials["value"].cummax().ffill()
    return TuningResult(study_name=study_name, n_trials=len(used), n_new=n_new,
                        best_trial=best.number, best_value=float(best.value),
                        best_params={k: best.params[k] for k in searched},
                        best_iteration=int(best.user_attrs.get("best_iteration", 0)),
                        trials=trials, failed=len(replaced), failures=[t.user_attrs[FAILURE_ATTR] for t in replaced],
                        replaced_values=[float(t.user_attrs.get(REPLACED_VALUE_ATTR, math.nan)) for t in replaced])
