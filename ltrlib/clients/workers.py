"""Workers of a shared study: tune notebook 03's models from several processes or machines.

Notebook 03 started with ``-p storage postgresql://user@host:5432/db`` keeps its studies in
that database (`ltrlib.train.tuning`, "Shared studies"). Each study tunes one model,
``"<split>.<model>"``; `tune_worker` (``ltrlib tune-worker``) joins one of them and runs
trials beside the notebook until the study has its trials::

    ltrlib tune-worker --storage postgresql://user@db-host:5432/ltr --study full.M_full --scale small

A worker must evaluate exactly the objective the notebook evaluates. It rebuilds it from
two sources, and the study's stored setup checks the result:

* the data, from the same arguments as the notebook (``dataset``, ``data_dir``, ``scale``,
  ``seed``, ``category_feature``, ``category_bins`` and the split categories), since paths
  differ between machines; the study name says which split and client
  (`client_data`);
* everything else (``max_trees``, ``early_stopping``, the backend, the first point, the
  fixed parameters, pruning, the heartbeat) from the study's setup, so the notebook's
  settings need not be repeated. A setting given anyway must equal the stored one.

The setup records the data's size and label sum, the seed and each setting; a worker whose
data or settings differ is refused with an error naming the study and what differs,
before it trains anything. ``n_trials`` defaults to the study's target (the largest any
process asked for). One setting is not recorded: ``num_threads``. LightGBM is
deterministic for a given thread count, but sums histograms in another order with
another count, so give workers the notebook's (``num_threads``, 2 by default) if trial
values must be reproducible to the last digit.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence

from ltrlib import sessions
from ltrlib.clients.models import MODEL_NAMES
from ltrlib.data.dataset import Dataset, Splits
from ltrlib.train.settings import (DEFAULT_EARLY_STOPPING, DEFAULT_EVAL_AT, DEFAULT_MAX_TREES, TrainSettings,
                                   TuningSettings)
from ltrlib.train.tuning import (
    PAPER_TABLE6_MEDIAN,
    TuningResult,
    describe_storage,
    in_backend,
    stored_study,
    study_database,
    study_storage,
    tune,
)

__all__ = ["client_data", "tune_worker"]

# Names of the splits of notebook 03 besides Split1-3: Table 1's initial split and Table 3's
# configurations (`ltrlib.noniid.splits.initial_split`, `alternative_splits`).
_NAMED_SPLIT = re.compile(r"(initial|tie_breaking|no_tie_breaking|exclusive)-c(\d+)")
# Seconds between two looks for a study the notebook has not started yet.
WAIT_POLL = 2.0


def client_data(study_name: str, splits: Splits, categories: Sequence[int] = (11, 11, 14),
                seed: int = 0) -> tuple[Dataset, Dataset]:
    """The training and validation data of the model that notebook 03's study
    ``study_name`` tunes: ``"full.M_full"`` (the whole collection), ``"<split>.M1"`` (client
    1, DS1) or ``"<split>.M2"`` (client 2, DS2') with ``<split>`` one of ``Split1``-``Split3``
    (categories ``categories``, as the notebook's ``split1_category`` ...),
    ``initial-c<N>`` (Table 1) or ``<strategy>-c<N>`` (Table 3)."""
    from ltrlib.noniid.splits import PAPER_SPLITS, initial_split, make_split

    forms = ("full.M_full, <split>.M1 or <split>.M2 with <split> one of "
             f"{', '.join(PAPER_SPLITS)}, initial-c<N> or <strategy>-c<N>")
    split, _, model = study_name.rpartition(".")
    if model not in MODEL_NAMES or not split or (split == "full") != (model == "M_full"):
        raise ValueError(f"study {study_name!r} is not one of notebook 03's studies: {forms}")
    if split == "full":
        return splits.train, splits.vali
    if len(categories) != len(PAPER_SPLITS):
        raise ValueError(f"categories needs {len(PAPER_SPLITS)} entries ({', '.join(PAPER_SPLITS)}), "
                         f"got {categories!r}")
    if split in PAPER_SPLITS:
        i = list(PAPER_SPLITS).index(split)
        ns = make_split(splits, int(categories[i]), PAPER_SPLITS[split], split, seed)
    elif m := _NAMED_SPLIT.fullmatch(split):
        strategy, category = m.group(1), int(m.group(2))
        ns = (initial_split(splits, category, seed=seed) if strategy == "initial"
              else make_split(splits, category, strategy, None, seed))
    else:
        raise ValueError(f"study {study_name!r}: unknown split {split!r}; studies are {forms}")
    client = ns.clients[0 if model == "M1" else 1]
    if client.vali is None or client.vali.n_queries == 0 or client.train.n_queries == 0:
        raise ValueError(f"study {study_name!r}: client {client.name} of {split} has "
                         f"{client.train.n_queries} training and "
                         f"{0 if client.vali is None else client.vali.n_queries} validation "
                         "queries on this data; it cannot be tuned")
    return client.train, client.vali


def _open_study(storage: str, study_name: str, n_trials: int | None, wait: float,
                heartbeat_interval: int | None, grace_period: int | None):
    """``(where, attrs, store)``: the storage described for messages, the study's stored
    attributes (empty if it is not there, after waiting up to ``wait`` seconds for it when
    ``n_trials`` is not given) and the study database the trials run against."""
    import sqlalchemy.exc

    if not isinstance(storage, str) or "://" not in storage:
        raise ValueError(f"storage must be a database URL such as postgresql://user@host:5432/db, "
                         f"got {storage!r}; a journal file is for one process")
    where = describe_storage(storage)
    try:
        probe = study_storage(storage)
        attrs = stored_study(probe, study_name) or {}
        deadline = time.monotonic() + wait
        while n_trials is None and "n_trials" not in attrs and time.monotonic() < deadline:
            time.sleep(min(WAIT_POLL, max(0.0, deadline - time.monotonic())))
            attrs = stored_study(probe, study_name) or {}
        probe.engine.dispose()
        # Opened once the study is there: it follows the study's heartbeat.
        store = study_database(storage, study_name, heartbeat_interval=heartbeat_interval,
                               grace_period=grace_period)
    except (sqlalchemy.exc.SQLAlchemyError, ImportError) as exc:  # unreachable; no driver
        raise ValueError(f"cannot open the study database {where}: {getattr(exc, 'orig', None) or exc}") from exc
    return where, attrs, store


def _trials_to_run(study_name: str, where: str, attrs: dict, n_trials: int | None, wait: float) -> int:
    """The study's trial target: ``n_trials`` if given, else the stored one. Refuses a study
    that is not one of notebook 03's, or one that is neither there nor given a target."""
    setup = attrs.get("setup")
    if setup is not None and setup.get("kind") != "holdout":
        raise ValueError(f"study {study_name!r} in {where} is a {setup.get('kind')!r} study, not one of "
                         "notebook 03's (kind 'holdout'); tune-worker joins those only")
    if n_trials is None:
        n_trials = attrs.get("n_trials")
        if n_trials is None:
            raise ValueError(
                f"study {study_name!r} is not in {where}{f' after {wait:g} s' if wait else ''}: "
                f"start it from notebook 03 ({sessions.cli_command()} run -p storage URL), wait for it longer "
                "(--wait), or give n_trials (--n-trials) to start it here")
    return n_trials


def _setting(setup: dict | None, name: str, given, default):
    """A setting given to the worker, else the study's stored one, else notebook 03's
    default for a study that is started here."""
    if given is not None:
        return given
    return setup[name] if setup is not None else default


def _first_params(setup: dict | None, backend: str, start_from_paper: bool | None) -> dict | None:
    """Trial 0's parameters: the paper's Table 6 median, or the study's stored choice."""
    if start_from_paper is None:
        return _setting(setup, "first_params", None, in_backend(PAPER_TABLE6_MEDIAN, backend))
    return in_backend(PAPER_TABLE6_MEDIAN, backend) if start_from_paper else None


def _worker_data(study_name: str, dataset: str, data_dir: str, scale: str, seed: int,
                 category_feature: str, category_bins: int, categories) -> tuple[Dataset, Dataset]:
    """The study's training and validation data, loaded as notebook 03 loads them."""
    from ltrlib.noniid.splits import load_split_data

    # Quiet: the worker's last line of output is its JSON result.
    splits, categories = load_split_data(dataset, data_dir, scale, seed, tuple(categories),
                                         category_feature=category_feature, category_bins=category_bins,
                                         show=False)
    return client_data(study_name, splits, categories, seed)


def tune_worker(
    storage: str,
    study_name: str,
    *,
    dataset: str = "synthetic",
    data_dir: str = "",
    scale: str = "small",
    seed: int = 0,
    category_feature: str = "",
    category_bins: int = 0,
    categories: Sequence[int | str] = ("auto", "auto", "auto"),
    n_trials: int | None = None,
    max_trees: int | None = None,
    early_stopping: int | None = None,
    backend: str | None = None,
    start_from_paper: bool | None = None,
    prune: bool | None = None,
    num_threads: int | None = 2,
    heartbeat_interval: int | None = None,
    grace_period: int | None = None,
    wait: float = 0,
    progress: bool = True,
) -> TuningResult:
    """Join (or start) notebook 03's study ``study_name`` in the database ``storage`` and
    run its trials, beside any other worker, until it has ``n_trials`` finished trials.

    Data arguments as notebook 03's parameters. Settings left None are the study's stored
    ones; given, they must equal them (the setup check refuses the study otherwise). A
    study not yet in the database is started here, with notebook 03's defaults for the
    settings left None (``max_trees`` 3000, ``early_stopping`` 100, LightGBM, trial 0 at
    the paper's Table 6 median, pruning), which needs ``n_trials``; without it, the worker
    waits up to ``wait`` seconds for the notebook to start the study (it tunes its models
    one after another). Returns the study's `TuningResult` (``n_new``: the trials this
    worker ran).

    The settings stay loose arguments here, one per command-line option, because None
    means "the study's stored value", which a `TuningSettings` cannot say; once resolved
    against the study they become the one `TuningSettings` that `tune` takes.
    """
    where, attrs, store = _open_study(storage, study_name, n_trials, wait, heartbeat_interval, grace_period)
    n_trials = _trials_to_run(study_name, where, attrs, n_trials, wait)
    setup = attrs.get("setup")
    backend = _setting(setup, "backend", backend, "lightgbm")
    first_params = _first_params(setup, backend, start_from_paper)
    if prune is None:
        prune = setup["pruning"] is not None if setup is not None else True
    train, vali = _worker_data(study_name, dataset, data_dir, scale, seed, category_feature,
                               category_bins, categories)
    settings = TrainSettings(
        backend=backend, max_trees=_setting(setup, "max_trees", max_trees, DEFAULT_MAX_TREES),
        early_stopping=_setting(setup, "early_stopping", early_stopping, DEFAULT_EARLY_STOPPING),
        eval_at=_setting(setup, "eval_at", None, DEFAULT_EVAL_AT), seed=seed, num_threads=num_threads)
    tuning = TuningSettings(n_trials=int(n_trials), prune=prune, storage=store, progress=progress,
                            first_params=first_params)
    return tune(train, vali, tuning=tuning, study_name=study_name, settings=settings,
                params=_setting(setup, "params", None, {}))
