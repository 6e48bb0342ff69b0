"""Where studies live: a journal file, or a database that workers share (`study_storage`).

Persistence and resumption
--------------------------
Studies live in an Optuna journal file (``reports/<run_id>/optuna.journal`` when tuned via
`fit_tuned`), one study per ``"<split>.<model>"`` name. We use ``JournalStorage`` with a
``JournalFileBackend`` rather than SQLite: the journal is an append-only log in which each
record is one line written and fsynced at once, so an interrupted run loses at most the
trial that was running; it needs no database schema (an RDB study can require
``optuna storage upgrade`` after an Optuna upgrade) and is plain text one can inspect.

A machine that loses power mid-write can still leave the last record cut short. Optuna
would append the next record onto that torn line and fail on every later read, so a
journal is mended when it is opened (`mend_journal`): the torn tail is cut, kept beside
the journal as ``<journal>.torn-<time>`` and named in a warning, and the finished trials
before it are kept. A record damaged anywhere else is not a torn write; the journal is
refused with its path and line (`JournalDamaged`), before anything is changed.

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

import hashlib
import json
import os
import time
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ltrlib.atomic import atomic_path

__all__ = [
    "GRACE_PERIOD", "HEARTBEAT_INTERVAL", "JOURNAL_FILE", "JournalDamaged", "check_journal", "database_url",
    "describe_storage", "fit_checkpoint", "is_shared", "mend_journal", "stored_study", "study_database", "study_storage",
]


JOURNAL_FILE = "optuna.journal"


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
    lock = JournalFileOpenLock(str(path))
    mend_journal(path, lock)
    return JournalStorage(JournalFileBackend(str(path), lock_obj=lock))


def fit_checkpoint(storage, study_name: str, setup: Mapping[str, Any], point: Mapping[str, Any]) -> Path | None:
    """Where a trial's unfinished fit keeps its trees (`train_ranker`'s ``checkpoint``): for
    a study in a journal file, ``<journal>.fits/<study>-<hash>.json``, the hash over the
    study's setup and the trial's point; None in memory or a database. A trial cut off by
    an interruption is run again at the same point (the sampler is seeded by the attempt,
    the first point queued again), so its fit finds its trees there and resumes instead of
    starting again; a database study's trial may be run again by another machine's worker,
    which cannot see the file."""
    if storage is None or not isinstance(storage, (str, os.PathLike)) or "://" in str(storage):
        return None
    key = json.dumps({"study": study_name, "setup": setup, "point": point}, sort_keys=True, default=str)
    journal = Path(storage)
    return journal.with_name(f"{journal.name}.fits") / f"{study_name}-{hashlib.sha256(key.encode()).hexdigest()[:16]}.json"


class JournalDamaged(ValueError):
    """An Optuna journal with a damaged record before its last one (`mend_journal`)."""


def mend_journal(path: str | os.PathLike, lock=None) -> Path | None:
    """Cut a torn last record off the Optuna journal at ``path``, keeping it beside the
    journal as ``<journal>.torn-<time>`` (returned, and named in a warning); None when the
    journal is whole or absent. `JournalDamaged`, naming the path and line, when a record
    before the last is not one: that is damage a torn write cannot leave, and nothing is
    changed.

    ``lock``: the journal's Optuna lock, held while reading and cutting. Several processes
    append to one journal (trials tuned side by side), each under that lock, so under it a
    last line without its newline is no write in flight but a torn one."""
    from optuna.storages.journal import JournalFileOpenLock

    path = Path(path)
    if not path.exists():
        return None
    lock = lock if lock is not None else JournalFileOpenLock(str(path))
    lock.acquire()
    try:
        data = path.read_bytes()
        end = _records_end(data, path)
        if end == len(data):
            return None
        torn = path.with_name(f"{path.name}.torn-{time.strftime('%Y%m%dT%H%M%S')}")
        torn.write_bytes(data[end:])
        with atomic_path(path) as tmp:
            tmp.write_bytes(data[:end])
    finally:
        lock.release()
    kept = data[:end].count(b"\n")
    warnings.warn(f"{path}: its last record was cut short (a write interrupted); cut off and kept in {torn}, "
                  f"with the {kept} records before it kept", stacklevel=2)
    return torn


def check_journal(path: str | os.PathLike) -> None:
    """`JournalDamaged` when the Optuna journal at ``path`` has a damaged record before its
    last one, which `mend_journal` would refuse when a notebook opens it; reads only (a torn
    last record is mended at that opening). A run's ``--force`` checks its journals so, before
    it deletes any result."""
    _records_end(Path(path).read_bytes(), Path(path))


def _records_end(data: bytes, path: Path) -> int:
    """Where the journal ``data``'s whole records end: its length when it is whole, earlier
    when its last record is torn; `JournalDamaged` naming ``path`` and the line when a record
    before that is no record."""
    # A torn write leaves bytes after the last newline, or a last line that ends but is not
    # a record (a block of a power cut's zeros).
    end = len(data) if data.endswith(b"\n") else data.rfind(b"\n") + 1
    records = data[:end].split(b"\n")[:-1]
    bad = [number for number, line in enumerate(records, start=1) if not _is_record(line)]
    if data.endswith(b"\n") and bad == [len(records)]:
        end, bad = end - len(records[-1]) - 1, []
    if bad:
        raise JournalDamaged(
            f"{path}: line {bad[0]} is not a journal record ({records[bad[0] - 1][:60]!r}); only a last record "
            "cut short is mended. Restore the journal from a backup, or move it away to tune afresh")
    return end


def _is_record(line: bytes) -> bool:
    import json

    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False


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
