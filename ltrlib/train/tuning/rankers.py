"""Tuning a `Ranker`: `tune` (one training and validation set), `tune_cv` (query folds),
`fit_tuned` (a tuned model kept in a `ModelStore`, resumed from its journal),
`fit_side_by_side`, and their tables (`tuned_parameters`, `tuning_history`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ltrlib import processes, sessions
from ltrlib.data.dataset import Dataset
from ltrlib.metrics import evaluate
from ltrlib.train.backends.base import DataCache
from ltrlib.train.ranker import BACKENDS, Ranker, train_ranker
from ltrlib.train.settings import TrainSettings, TuningSettings
from ltrlib.train.tuning.space import search_space, suggest_params
from ltrlib.train.tuning.storage import JOURNAL_FILE, fit_checkpoint
from ltrlib.train.tuning.loop import (
    TPE_STARTUP_TRIALS,
    TuningResult,
    check_first_params,
    data_key,
    pruner,
    pruning_monitor,
    pruning_setup,
    run_study,
    watch,
)

__all__ = ["fit_side_by_side", "fit_tuned", "tune", "tune_cv", "tuned_parameters", "tuning_history"]


# --------------------------------------------------------------------------- tuning


def tune(
    train: Dataset,
    vali: Dataset,
    *,
    tuning: TuningSettings = TuningSettings(),
    study_name: str = "tuning",
    settings: TrainSettings = TrainSettings(),
    params: Mapping[str, Any] | None = None,
) -> TuningResult:
    """Tune on ``vali`` by NDCG@``settings.eval_at`` (the paper's procedure).

    Each trial trains `train_ranker` with ``settings`` on ``train`` with early stopping on
    ``vali`` and the trial's point of the backend's search space (`SEARCH_SPACE` for
    LightGBM) on top of the fixed ``params``; the trial's value is the early-stopped
    model's NDCG@``eval_at`` on ``vali``. ``tuning``: the budget (`TuningSettings`):
    ``n_trials``; ``storage``, None (in memory), a journal file path, a database URL (a
    shared study other processes can join) or an Optuna storage, with a persistent one an
    interrupted study resumes and a finished one is reused (`ltrlib.train.tuning.storage`);
    ``first_params`` (e.g. `PAPER_TABLE6_MEDIAN`), a point of the search space evaluated as
    the first trial before TPE takes over (not in the paper); ``prune``, stop hopeless
    trials early (`pruner`, fed from the validation curve; see `ltrlib.train.tuning.loop`);
    ``progress``. ``settings.seed`` seeds both the sampler and the library. The binned data
    are built once and shared by all trials. In a journal study, a LightGBM trial's fit keeps
    a checkpoint beside the journal while it runs (`fit_checkpoint`), so a trial cut off by an
    interruption resumes where it was, with the numbers it would have had.
    """
    if vali is None:
        raise ValueError("tune needs a validation set (vali): the paper tunes on it")
    backend, early_stopping = settings.backend, settings.early_stopping
    fixed = dict(params or {})
    searched = tuple(search_space(backend))
    overlap = sorted(set(fixed) & set(searched))
    if overlap:
        raise ValueError(f"params {overlap} are tuned; remove them from the fixed params")
    metric = f"ndcg@{settings.eval_at}"

    cache = DataCache(train, vali)

    def objective(trial, progress_monitor):
        monitor = watch(pruning_monitor(trial, early_stopping) if tuning.prune else None, progress_monitor)
        point = suggest_params(trial, backend)
        # A trial cut off by an interruption resumes its fit where the checkpoint left it.
        checkpoint = (fit_checkpoint(tuning.storage, study_name, setup, point)
                      if BACKENDS[backend].resumes else None)
        ranker = train_ranker(train, vali, {**fixed, **point}, settings, cache=cache, monitor=monitor,
                              checkpoint=checkpoint)
        value = float(evaluate(vali, ranker.score(vali), metrics=metric)[metric])
        trial.set_user_attr("best_iteration", ranker.best_iteration)
        trial.set_user_attr("trees", len(ranker.curve))
        return value, ranker  # the best is kept: no retraining when it is the study's best

    first = check_first_params(tuning.first_point, backend)
    setup = {"kind": "holdout", "first_params": first, "backend": backend, "train": data_key(train),
             "vali": data_key(vali), "params": fixed, "max_trees": settings.max_trees,
             "early_stopping": early_stopping, "eval_at": settings.eval_at, "seed": settings.seed,
             "pruning": pruning_setup(tuning.prune, early_stopping),
             "tpe_startup_trials": TPE_STARTUP_TRIALS}
    return run_study(objective, tuning, study_name=study_name, seed=settings.seed, setup=setup,
                     searched=searched, study_pruner=pruner(early_stopping), keep_best=True)


def tune_cv(
    data: Dataset,
    n_folds: int = 5,
    *,
    tuning: TuningSettings = TuningSettings(),
    study_name: str = "tuning-cv",
    settings: TrainSettings = TrainSettings(),
    params: Mapping[str, Any] | None = None,
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

    ``tuning``: as in `tune`; with ``tuning.prune`` a trial reports each fold's curve at steps ``fold * max_trees +
    trees``, so it is compared with completed trials on the same fold (Optuna's median rule
    takes the trial's best value over all its steps, earlier folds included, which only makes
    pruning in later folds more lenient). Each fold's binned
    data are built once and shared by all trials. In a journal study a trial cut off by an
    interruption resumes the fit of the fold it was in (`fit_checkpoint`, as in `tune`).
    """
    if isinstance(n_folds, bool) or not isinstance(n_folds, (int, np.integer)) \
            or not 2 <= n_folds <= data.n_queries:
        raise ValueError(f"n_folds must be an integer in 2..{data.n_queries} (the number of "
                         f"queries), got {n_folds!r}")
    backend, max_trees, early_stopping = settings.backend, settings.max_trees, settings.early_stopping
    fixed = dict(params or {})
    searched = tuple(search_space(backend))
    overlap = sorted(set(fixed) & set(searched))
    if overlap:
        raise ValueError(f"params {overlap} are tuned; remove them from the fixed params")
    metric = f"ndcg@{settings.eval_at}"
    folds = data.fold_ids(int(n_folds), settings.seed)
    parts = [(data.take(np.flatnonzero(folds != f), name=f"{data.name}-cvtrain{f}"),
              data.take(np.flatnonzero(folds == f), name=f"{data.name}-cvfold{f}"))
             for f in range(int(n_folds))]

    caches = [DataCache(train, held_out) for train, held_out in parts]

    def objective(trial, progress_monitor):
        drawn = suggest_params(trial, backend)
        point = {**fixed, **drawn}
        values, iters, grown = [], [], []
        for f, (train, held_out) in enumerate(parts):
            monitor = watch(pruning_monitor(trial, early_stopping, f * max_trees) if tuning.prune else None,
                            progress_monitor)
            # A trial cut off resumes the fold it was in (the folds before it are fitted again).
            checkpoint = (fit_checkpoint(tuning.storage, f"{study_name}.fold{f}", setup, drawn)
                          if BACKENDS[backend].resumes else None)
            ranker = train_ranker(train, held_out, point, settings, cache=caches[f], monitor=monitor,
                                  checkpoint=checkpoint)
            values.append(float(evaluate(held_out, ranker.score(held_out), metrics=metric)[metric]))
            grown.append(len(ranker.curve))
            iters.append(ranker.best_iteration)
        trial.set_user_attr("fold_values", values)
        trial.set_user_attr("fold_iterations", iters)
        trial.set_user_attr("trees", int(sum(grown)))
        trial.set_user_attr("best_iteration", max(1, int(round(float(np.mean(iters))))))
        return float(np.mean(values))

    first = check_first_params(tuning.first_point, backend)
    setup = {"kind": f"cv{int(n_folds)}", "first_params": first, "backend": backend, "data": data_key(data),
             "params": fixed, "max_trees": max_trees, "early_stopping": early_stopping,
             "eval_at": settings.eval_at, "seed": settings.seed,
             "pruning": pruning_setup(tuning.prune, early_stopping), "tpe_startup_trials": TPE_STARTUP_TRIALS}
    return run_study(objective, tuning, study_name=study_name, seed=settings.seed, setup=setup,
                     searched=searched, study_pruner=pruner(early_stopping))


def fit_tuned(
    train: Dataset,
    vali: Dataset,
    *,
    store,
    split: str,
    name: str,
    tuning: TuningSettings = TuningSettings(),
    settings: TrainSettings = TrainSettings(),
    params: Mapping[str, Any] | None = None,
) -> tuple[Ranker, TuningResult]:
    """Tune (or resume, or reuse) the study ``"<split>.<name>"`` with `tune` (trials trained
    with ``settings``) and return its best model.

    The study lives in ``tuning.storage``, by default (None) the run's journal
    ``<store.run_dir>/optuna.journal``; a database URL makes it a shared study that
    ``ltrlib tune-worker`` processes can join (`study_storage`). The model goes to ``store``
    as ``(split, name)``. The model is loaded from the store when its sidecar records the
    same study and best trial; otherwise it is the best trial's model from this call, or
    (after a resumed or reused study) retrained with the best parameters, which gives the
    same model since training is deterministic. The stored sidecar's ``info["tuning"]``
    holds the study name, trial count, best trial, value and parameters.
    """
    study = f"{split}.{name}"
    if tuning.storage is None:
        tuning = tuning.replace(storage=Path(store.run_dir) / JOURNAL_FILE)
    result = tune(train, vali, tuning=tuning, study_name=study, settings=settings, params=params)
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
                     tuning: TuningSettings = TuningSettings(), **kwargs) -> None:
    """Tune and store the models ``fits`` (``(split, name, train, vali)`` tuples) with
    `fit_tuned`, ``n_jobs`` at a time in joblib worker processes; a later `fit_tuned` call
    with the same arguments then loads each one without training.

    Why: on two cores LightGBM's second thread speeds one model up by only 1.2-1.5x (its
    lambdarank gradients and the per-tree bookkeeping are partly serial), so two one-thread
    models side by side get more done. Each worker gets ``settings.threads // n_jobs``
    threads (at least one). The biggest training sets go first, so the long fits start early and
    the small ones fill the gaps. Studies are shared through ``storage`` (the journal file
    locks across processes; a database does too); the models go to ``store``.
    ``tuning``: each model's budget (`fit_tuned`); ``tuning.progress`` also shows the models' bar.
    """
    from joblib import Parallel, delayed

    from ltrlib import timing
    from ltrlib.progress import bar

    if n_jobs < 1:
        raise ValueError(f"n_jobs must be >= 1, got {n_jobs}")
    order = sorted(fits, key=lambda f: -f[2].n_docs)
    # In a batch run the workers' trial bars report to the runner (ltrlib.progress) and print
    # nothing; interactively they stay off, as their text would land in the server's console.
    progress = tuning.progress
    worker_kwargs = {**kwargs, "settings": settings.replace(num_threads=max(1, settings.threads // n_jobs)),
                     "tuning": tuning.replace(progress=progress and sessions.in_batch())}
    calls = (delayed(_fit_in_worker)(train, vali, store, split, name, worker_kwargs)
             for split, name, train, vali in order)
    with timing.fitting(), processes.worker_processes(n_jobs):
        done = Parallel(n_jobs=n_jobs, return_as="generator_unordered")(calls)
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
