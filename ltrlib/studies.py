"""Multi-seed studies: a notebook, or the whole batch, at every seed of a pre-registered
design, resumable, each seed a task on a Dask cluster.

Three studies share this machinery (`_run_study`): ``ltrlib study ledger`` (the batch at
every seed, every check of the ledger decided across them by `ltrlib.fidelity.across`),
``ltrlib study bilambdamart`` (notebook 06, the pre-registered Bi-LambdaMART endpoint) and
``ltrlib study neural`` (the networks at trial parity with a Bi-LambdaMART study's trees).

Dispatch (`dispatch`). Every seed not yet recorded is a task on ``dask.distributed``: by
default a `LocalCluster` of one worker process per `THREADS_PER_SEED` cores (on 2 cores,
one seed at a time), each worker's kernels limited to that many threads, so LightGBM,
XGBoost and JAX do not oversubscribe the cores; ``--scheduler ADDRESS`` sends the seeds to
an existing cluster whose workers see the same project folder (docs/studies.md). A seed's
results do not depend on where it ran: a test checks that two seeds run on two workers
write the tables a sequential run writes, byte for byte.

``ltrlib study bilambdamart --profile confirmatory`` runs notebook 06 once per seed of the
profile's design (`ltrlib.bivariate.preregistration.PROFILES`), each into its own run
``reports/<study>-seed<N>/``, then writes ``reports/<study>/study.md`` and
``study.csv`` (`ltrlib.bivariate.preregistration`: the statistics and the verdict).

Resumption. What a finished seed contributes, its per-query results, pairwise uptake,
tuning summary, Table 8 and provenance, is copied into ``reports/<study>/seeds/seed<N>/``
through a temporary folder renamed into place, so a seed is either wholly recorded or not
at all. A recorded seed is never rerun; an interrupted one is run again, and its run's
Optuna journal resumes its finished trials. The study folder, small (about 1 MB a seed),
can be committed: a later session or another machine with it carries on where this one
stopped. For a seed in progress, ``--checkpoint`` keeps under ``reports/<study>/progress/``
what it has done, so that a checkout without the run folder carries on from there
(`checkpoint`): a bilambdamart or neural seed's journal (its finished trials), a ledger
seed's run folder (its finished notebooks). Its ``design.json`` is written once; running the
study again with another design is refused, naming what differs.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shlex
import shutil
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Sequence

import pandas as pd

from ltrlib import config
from ltrlib.atomic import atomic_path, atomic_write_text
from ltrlib.manifest import FILE as MANIFEST_FILE
from ltrlib.manifest import RunManifest
from ltrlib.bivariate import preregistration
from ltrlib.records import RecordError, read_json, read_table
from ltrlib.report import table_to_markdown, validate_name

__all__ = ["NEURAL_PROFILES", "THREADS_PER_SEED", "checkpoint", "dispatch", "ledger_design", "ledger_reading",
           "neural_design", "parse_seeds", "record_seed", "run_bilambdamart_study", "run_ledger_study",
           "run_neural_study", "study_design", "summary_markdown", "write_ledger_summary", "write_neural_summary", "write_summary"]

NOTEBOOK = "06_bilambdamart"
#: Files of a finished run kept for the study (under ``tables/06_bilambdamart/``).
KEPT_TABLES = ("per_query_test.parquet", "pairwise_uptake.csv", "tuning_summary.csv", "tuning_trials.csv",
               "settings_screen.csv", "table8_hyperparameters.csv", "table2_lambdarank.csv", "table5_softmax.csv",
               "control_table2.csv", "table2_lambdarank_numbers.csv", "table5_softmax_numbers.csv",
               "control_table2_numbers.csv")


def parse_seeds(text: str) -> tuple[int, ...]:
    """``"0-9"``, ``"0,2,5"`` or ``"0-3,7"`` as a tuple of distinct seeds; ValueError naming
    the token otherwise."""
    seeds: list[int] = []
    for token in str(text).split(","):
        token = token.strip()
        try:
            if "-" in token:
                a, b = (int(x) for x in token.split("-", 1))
                if b < a:
                    raise ValueError
                seeds.extend(range(a, b + 1))
            else:
                seeds.append(int(token))
        except ValueError:
            raise ValueError(f"--seeds: {token!r} is neither a seed nor a range like 0-9") from None
    if len(set(seeds)) != len(seeds) or any(s < 0 for s in seeds):
        raise ValueError(f"--seeds {text!r}: seeds must be distinct and non-negative")
    return tuple(seeds)


def study_design(profile: str, study: str, seeds: Sequence[int] | None = None,
                 dataset: str = "synthetic") -> dict:
    """The design a study runs: its profile's scale and notebook parameters, its seeds
    (the profile's unless given) and the decision rule, JSON-able."""
    if profile not in preregistration.PROFILES:
        raise ValueError(f"unknown profile {profile!r}; choose from {', '.join(preregistration.PROFILES)}")
    p = preregistration.PROFILES[profile]
    design = {"study": validate_name(study, "study id"), "profile": profile, "dataset": dataset,
              "scale": p["scale"], "seeds": [int(s) for s in (p["seeds"] if seeds is None else seeds)],
              "parameters": dict(p["parameters"]), "endpoint": preregistration.ENDPOINT,
              "rule": preregistration.DECISION_RULE}
    if "changes" in p:  # a later study says what it changes and how its seeds were counted
        design["changes"] = p["changes"]
        design["sizing"] = preregistration.followup_sizing()[1]
    return design


#: What every study's ``design.json`` holds (`study_design`, `neural_design`, `ledger_design`).
DESIGN_KEYS = ("study", "profile", "dataset", "scale", "seeds")


def _design(study_dir: Path) -> dict:
    """A study's ``design.json``, refused naming it when damaged (`ltrlib.records.read_json`)."""
    return read_json(study_dir / "design.json", keys=DESIGN_KEYS)


def _seed_record(seed_dir: Path) -> dict:
    """A recorded seed's ``seed.json`` (`_record`), refused naming it when damaged."""
    return read_json(seed_dir / "seed.json", keys=("wall_seconds", "metrics"))


def _check_design(study_dir: Path, design: dict) -> None:
    path = study_dir / "design.json"
    if not path.exists():
        # Seeds ran under a design that has gone: writing today's in its place would pass
        # them off as run under it (the seeds, budgets and rule may differ).
        ran = [f"seeds/{d.name}" for d in _recorded(study_dir).values()]
        ran += [f"progress/{p.name}" for p in sorted((study_dir / "progress").glob("seed*"))]
        if ran:
            raise RecordError(path, f"does not exist, but the study holds what seeds ran under it "
                              f"({', '.join(ran)}); a design is fixed before its first seed and never "
                              f"re-created: restore it (`git checkout -- {path}` where it is committed), or "
                              "use another study id")
        study_dir.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps(design, indent=1, ensure_ascii=False) + "\n")
        return
    stored = _design(study_dir)
    differ = sorted(k for k in set(stored) | set(design) if stored.get(k) != design.get(k))
    if differ:
        raise ValueError(f"{path} holds another design (differs in {differ}: stored "
                         f"{[stored.get(k) for k in differ]}, now {[design.get(k) for k in differ]}); "
                         "a pre-registered study keeps its design: use another study id")


def _seed_dir(study_dir: Path, seed: int) -> Path:
    return study_dir / "seeds" / f"seed{seed}"


def record_seed(run_dir: Path, study_dir: Path, seed: int, wall_seconds: float, worker: str = "") -> Path:
    """Copy what the study keeps of a finished run (`KEPT_TABLES`, its run.json and
    notebook 06's metrics) into the study, atomically: a temporary folder renamed into
    place. ValueError when the run has not completed notebook 06."""
    tables = run_dir / "tables" / NOTEBOOK
    return _record(run_dir, study_dir, seed, wall_seconds, (NOTEBOOK,),
                   {tables / name: name for name in KEPT_TABLES}, worker)


def _record(run_dir: Path, study_dir: Path, seed: int, wall_seconds: float, notebooks: Sequence[str],
            files: dict[Path, str], worker: str = "") -> Path:
    """A seed's record: ``files`` (source -> path in the record; absent ones skipped), the
    run's run.json and a ``seed.json`` with the metrics of ``notebooks`` (of the one
    notebook, when one), the wall time and the Dask worker it ran on, written to a temporary
    folder renamed into place, so a seed is recorded whole or not at all. ValueError when
    one of ``notebooks`` has not completed."""
    manifest = RunManifest.require(run_dir)
    manifest.require_completed(notebooks, run_dir)
    entries = [manifest.notebooks[nb] for nb in notebooks]
    target = _seed_dir(study_dir, seed)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".seed{seed}."))
    try:
        for source, name in files.items():
            if source.exists():
                (tmp / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, tmp / name)
        shutil.copy2(run_dir / MANIFEST_FILE, tmp / MANIFEST_FILE)
        metrics = read_json(run_dir / "metrics.json")
        metrics = metrics.get(notebooks[0], {}) if len(notebooks) == 1 else {nb: metrics.get(nb, {}) for nb in notebooks}
        seconds = [e.seconds for e in entries]
        fits = [e.fit_seconds for e in entries]
        record = {"seed": seed, "run": run_dir.name, "wall_seconds": round(wall_seconds, 1),
                  "notebook_seconds": seconds[0] if len(notebooks) == 1 else dict(zip(notebooks, seconds)),
                  "fit_seconds": fits[0] if len(notebooks) == 1 else dict(zip(notebooks, fits)),
                  "worker": worker, "metrics": metrics}
        (tmp / "seed.json").write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        if target.exists():
            shutil.rmtree(target)
        os.replace(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


# ---------------------------------------------------------------------------------------------
# Seeds as tasks on a Dask cluster.

#: Cores one seed's batch keeps busy: notebook 07 runs its FOLTR runs in 2 processes, and
#: LightGBM and XGBoost train with 2 threads. A `LocalCluster` gets one worker per this
#: many cores (`dispatch`).
THREADS_PER_SEED = 2


def _worker_address() -> str:
    from dask.distributed import get_worker

    try:
        return get_worker().address
    except ValueError:  # not in a worker
        return ""


class SeedInterrupted(Exception):
    """A seed the study stopped (`dispatch`): its batch kept its finished notebooks, or it
    never started. ``running`` and ``finished`` say which, as `ltrlib.runner.RunInterrupted`."""

    def __init__(self, seed: int, running: str = "", finished: Sequence[str] = ()):
        self.seed, self.running, self.finished = seed, running, list(finished)
        if not running:
            words = "not started"
        else:
            kept = f"{len(self.finished)} finished notebook(s) kept" if self.finished else "nothing finished"
            words = f"interrupted during {running}; {kept}"
        super().__init__(f"seed {seed}: {words}")


class StudyInterrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM) during a study: what was recorded, what was interrupted, and the
    command that resumes it, in one message."""


#: Seconds an interrupted seed's batch has to stop as a batch stops on Ctrl-C (it shuts its
#: kernel down and writes its index: a few seconds) before it is killed; its kernel then ends
#: with it (`ltrlib.config.ends_with_this_thread`), and the kernel's workers with the kernel
#: (`ltrlib.config.end_with_parent`).
STOP_GRACE = 30


def _batch(stop, **run_all) -> Path:
    """`ltrlib.runner.run_all(**run_all)` in a batch process of its own; returns the run folder.

    A seed's batch ran in the Dask worker's thread, where no signal reaches it, so Ctrl-C
    did not stop a study: it ran the seed to its end and recorded it. In its own process,
    in its own session, the batch is stopped by the study alone: when the Dask event
    ``stop`` is set (`dispatch`, on this machine or a cluster's), it is sent SIGINT, a
    user's Ctrl-C to a batch, keeps its finished notebooks and leaves the one running
    resumable, and `SeedInterrupted` says which. It also takes SIGINT if the process that
    started it dies, however it dies. A failed batch raises RuntimeError with its message."""
    import pickle
    import signal
    import subprocess
    import sys

    with tempfile.TemporaryDirectory(prefix="ltrlib-seed-") as tmp:
        given, outcome = Path(tmp) / "run_all.pickle", Path(tmp) / "outcome.json"
        given.write_bytes(pickle.dumps(run_all))
        child = subprocess.Popen(
            [sys.executable, "-c", "import sys; from ltrlib.studies import _batch_process; "
             "_batch_process(*sys.argv[1:])", str(given), str(outcome), str(os.getpid())],
            start_new_session=True)
        stopped_at = None
        while True:
            try:
                child.wait(timeout=0.5)
                break
            except subprocess.TimeoutExpired:
                pass
            if stopped_at is None and stop is not None and stop.is_set():
                child.send_signal(signal.SIGINT)
                stopped_at = time.monotonic()
            elif stopped_at is not None and time.monotonic() - stopped_at > STOP_GRACE:
                child.kill()
        result = json.loads(outcome.read_text(encoding="utf-8")) if outcome.exists() else {}
    status = result.get("status")
    if status == "completed":
        return Path(result["run_dir"])
    seed = run_all.get("seed", -1)
    if status == "interrupted" or stopped_at is not None:
        raise SeedInterrupted(seed, result.get("running") or "its batch (killed)", result.get("finished", ()))
    raise RuntimeError(result.get("error") or f"the batch of seed {seed} ended with status {child.returncode}, "
                       "without an outcome (killed?)")


def _batch_process(given: str, outcome: str, parent: str) -> None:
    """`_batch`'s child: run the batch and write its outcome as JSON to ``outcome``."""
    import pickle
    import signal
    import traceback

    # A study's worker processes ignore SIGINT (`_interrupts_ignored`), and their children
    # inherit that; this batch must take it as Ctrl-C.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    config.end_with_parent(int(parent), signal.SIGINT)
    from ltrlib.runner import NotebookError, RunInterrupted, run_all

    try:
        result = {"status": "completed", "run_dir": str(run_all(**pickle.loads(Path(given).read_bytes())))}
    except RunInterrupted as exc:
        result = {"status": "interrupted", "running": exc.running, "finished": exc.finished}
    except KeyboardInterrupt:
        result = {"status": "interrupted", "running": "the batch's start", "finished": []}
    except (NotebookError, ValueError) as exc:
        result = {"status": "failed", "error": str(exc)}
    except Exception as exc:  # noqa: BLE001 - reported to the study, with the trace here
        traceback.print_exc()
        result = {"status": "failed", "error": f"{type(exc).__name__}: {exc}"}
    atomic_write_text(Path(outcome), json.dumps(result))


def _seed_task(run_seed, design: dict, seed: int, reports: str, stop: str = "") -> dict:
    """One seed in a Dask worker: ``run_seed(design, seed, reports, stop=...)`` runs its
    batch (`_batch`) and returns the run folder, its notebooks and the files the study
    keeps; the seed is then recorded (`_record`). Returns its wall time and worker.
    ``stop``: the name of the Dask event that stops the study (`dispatch`); a seed that
    starts once it is set runs nothing (`SeedInterrupted`)."""
    start = time.monotonic()
    reports = Path(reports)
    event = None
    if stop:
        from dask.distributed import Event

        event = Event(stop)
        if event.is_set():
            raise SeedInterrupted(seed)
    run_dir, notebooks, files = run_seed(design, seed, reports, stop=event)
    wall = time.monotonic() - start
    worker = _worker_address()
    _record(run_dir, reports / design["study"], seed, wall, notebooks, files, worker)
    return {"seed": seed, "wall": wall, "worker": worker}


def local_cluster(workers: int, threads: int):
    """The `LocalCluster` a study runs its seeds on: ``workers`` processes of ``threads``
    threads each (`ltrlib.config.thread_env`), or, for one worker, a worker thread in this
    process. Its scheduler never drops a silent worker: a seed is one task of up to an
    hour, and a machine suspended, or a study stopped (SIGSTOP) and continued, past Dask's
    worker TTL (5 minutes) had the scheduler drop the worker whose seed was still running;
    the seed then recorded itself, but the study waited forever for a result that no
    worker would report, and ran no other seed."""
    import dask
    from dask.distributed import LocalCluster

    # Logs at CRITICAL only: the study reports a seed's failure or interruption in one line,
    # which Dask's worker would repeat with a traceback of the study's own code.
    with dask.config.set({"distributed.scheduler.worker-ttl": None}):
        if workers > 1:
            with _interrupts_ignored():  # the worker processes inherit it
                return LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                    dashboard_address=None, env=config.thread_env(threads), silence_logs=50)
        return LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None,
                            silence_logs=50)


@contextlib.contextmanager
def _interrupts_ignored():
    """Ignore SIGINT here while a study starts its worker processes, which inherit it: Ctrl-C
    at a terminal reaches the whole process group, and a worker process it killed took its
    seed's batch with it, where the study must stop that batch itself (`dispatch`)."""
    import signal

    try:
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def dispatch(seeds: Sequence[int], run_seed, design: dict, reports: Path, *, on_done, scheduler: str = "",
             threads: int = THREADS_PER_SEED, workers: int = 0, resume: str = "", log=print) -> None:
    """Run and record ``seeds``, each a task on ``dask.distributed``: on the cluster at
    ``scheduler`` (its workers must see ``reports``), else on a `LocalCluster` of
    ``workers`` processes (default: the cores // ``threads``, at most one per seed; one
    worker is a thread of this process), each with ``threads`` threads
    (`ltrlib.config.thread_env`). ``on_done(seed, result)`` runs here as each seed
    finishes, in the order they finish. A failed seed is reported and the others go
    on; RuntimeError at the end names the failed ones (rerunning the study retries them).

    Ctrl-C or SIGTERM stops the study: every seed's batch in progress is stopped as a batch
    is (`_batch`), on this machine or the cluster's; seeds not started do not start; seeds
    that finish meanwhile are recorded. Then `StudyInterrupted` says what was recorded, what
    was interrupted, and that ``resume`` (the study's command) resumes it. A second Ctrl-C
    stops waiting for the batches (they stop on their own)."""
    import uuid

    from dask.distributed import Client, Event, as_completed

    if not seeds:
        return
    previous = None
    if scheduler:
        cluster, client = None, Client(scheduler)
    else:
        workers = min(workers or max(1, (os.cpu_count() or 1) // max(1, threads)), len(seeds))
        if workers == 1:
            # One seed at a time: a worker thread in this process, whose kernels inherit the
            # thread limits from this process's environment (set for the duration).
            previous = {k: os.environ.get(k) for k in config.thread_env(threads)}
            os.environ.update(config.thread_env(threads))
        cluster = local_cluster(workers, threads)
        client = Client(cluster)
    failed, recorded = [], []
    stop = Event(f"ltrlib-study-stop-{uuid.uuid4().hex}", client=client)
    futures = {}
    try:
        log(f"seeds {list(seeds)} on {len(client.scheduler_info()['workers'])} Dask worker(s) at "
            f"{client.scheduler.address}")
        futures = {client.submit(_seed_task, run_seed, design, seed, str(reports), stop.name, key=f"seed-{seed}",
                                 pure=False): seed for seed in seeds}
        with _terminate_as_interrupt():
            try:
                for future in as_completed(futures):
                    seed = futures[future]
                    if _collect(seed, future, on_done, failed, recorded, log) is not None:
                        # Its batch was interrupted by someone else than this study.
                        log(f"seed {seed}: its batch was interrupted; not recorded (run the study again to "
                            "resume it)")
                        failed.append(seed)
            except KeyboardInterrupt:
                stop.set()
                log("interrupted: stopping the seeds in progress (their finished notebooks are kept) ...")
                raise _stopped(futures, on_done, failed, recorded, resume, log) from None
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
        for name, value in (previous or {}).items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    if failed:
        raise RuntimeError(f"seeds {sorted(failed)} failed (above); run the study again to retry them: the "
                           "recorded seeds are kept")


def _collect(seed: int, future, on_done, failed: list, recorded: list, log) -> SeedInterrupted | None:
    """One finished seed task: recorded (``on_done``), failed (logged), or interrupted
    (returned)."""
    try:
        result = future.result()
    except SeedInterrupted as exc:
        return exc
    except Exception as exc:  # one seed's failure must not lose the others'
        log(f"seed {seed}: failed ({type(exc).__name__}: {exc})")
        failed.append(seed)
        return None
    on_done(seed, result)
    recorded.append(seed)
    return None


def _stopped(futures: dict, on_done, failed: list, recorded: list, resume: str, log) -> StudyInterrupted:
    """Wait for the seed tasks once the stop is set, and say what became of each."""
    from dask.distributed import wait

    # Each batch gets STOP_GRACE to stop, then is killed; the tasks' polling adds a second.
    try:
        wait(list(futures), timeout=STOP_GRACE + 15)
    except TimeoutError:  # said below, seed by seed
        pass
    stopped = []
    for future, seed in futures.items():
        if seed in recorded or seed in failed:
            continue
        if not future.done():
            stopped.append(SeedInterrupted(seed, "its batch (no answer: it may still be stopping)"))
            continue
        interrupted = _collect(seed, future, on_done, failed, recorded, log)
        if interrupted is not None:
            stopped.append(interrupted)
    words = [f"recorded: seeds {sorted(recorded)}" if recorded else "no seed recorded"]
    words += [str(exc) for exc in sorted(stopped, key=lambda e: e.seed) if exc.running]
    waiting = sorted(exc.seed for exc in stopped if not exc.running)
    if waiting:
        words.append(f"not started: seeds {waiting}")
    if failed:
        words.append(f"failed: seeds {sorted(failed)}")
    return StudyInterrupted("; ".join(words) + (f". `{resume}` resumes the study" if resume else ""))


@contextlib.contextmanager
def _terminate_as_interrupt():
    """SIGTERM raises KeyboardInterrupt here, as Ctrl-C does, while a study waits for its
    seeds (a scheduler's or a user's `kill`); the previous handler is restored after."""
    import signal

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, interrupt)
    except ValueError:  # not the main thread: signals are not ours to take
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


JOURNAL = "06_bilambdamart.journal"


def _journal_of(design: dict) -> str:
    """The Optuna journal a seed of a bilambdamart or neural study tunes in (notebook
    06's, or 06_neural_competitors' for a neural study, whose design names its source)."""
    return f"{NEURAL_NOTEBOOK}.journal" if "source" in design else JOURNAL


def _complete_records(journal: bytes) -> bytes:
    """An Optuna journal's bytes up to its last complete record (a writer may be appending
    the next one)."""
    return journal[:journal.rfind(b"\n") + 1]


def _journal_copy(source: Path, target: Path) -> None:
    """Copy an Optuna journal up to its last complete record, atomically."""
    with atomic_path(target) as tmp:
        tmp.write_bytes(_complete_records(source.read_bytes()))


def _progress_file(study_dir: Path, design: dict, seed: int) -> Path:
    """Where `checkpoint` keeps a seed in progress: a ledger seed's run folder, packed; a
    bilambdamart or neural seed's Optuna journal."""
    name = f"seed{seed}.tar.gz" if design["profile"] == "ledger" else f"seed{seed}.journal"
    return study_dir / "progress" / name


def checkpoint(study_dir: Path, reports: Path) -> list[int]:
    """Keep what each seed in progress (run folder there, seed not yet recorded) has done
    under ``<study>/progress/``, so that a checkout without the run folder carries on from it
    (`_restore`): a bilambdamart or neural seed's Optuna journal (its finished trials,
    ``seed<N>.journal``, `_journal_of`); a ledger seed's run folder (its finished notebooks and the journal
    of the one running, ``seed<N>.tar.gz``, `_pack_run`). Returns those seeds. A recorded
    seed's checkpoint is removed."""
    design = _design(study_dir)
    recorded, saved = _recorded(study_dir), []
    for seed in design["seeds"]:
        kept = _progress_file(study_dir, design, seed)
        if seed in recorded:
            kept.unlink(missing_ok=True)
            continue
        run_dir = reports / f"{design['study']}-seed{seed}"
        if design["profile"] == "ledger" and (run_dir / MANIFEST_FILE).exists():
            _pack_run(run_dir, kept)
            saved.append(seed)
        elif design["profile"] != "ledger" and (run_dir / _journal_of(design)).exists():
            _journal_copy(run_dir / _journal_of(design), kept)
            saved.append(seed)
    return saved


#: The run files' folder (`ltrlib.report.Reporter.run_file`), which a checkpoint leaves out.
RUN_FILES_FOLDER = "runs"


def _pack_run(run_dir: Path, target: Path) -> None:
    """``run_dir`` as a gzip tarball at ``target``, written atomically, while its batch may be
    running. Its ``run.json`` is read first: every notebook it calls completed had written
    its files by then (the runner records a notebook once it has finished), so the
    tarball holds each of them whole; a notebook still running is rerun on resume, over
    whatever part of its files came along. Optuna journals are cut at their last complete
    record (`_complete_records`), and notebook 07's finished FOLTR runs (files in its hidden
    ``.07_foltr_noniid.runs/``, `ltrlib.foltr.store`) come along, so that a resumed notebook
    07 reruns only the runs it had not finished. Left out: hidden files (the run's lock,
    kernel logs), lock files, and the TREC run files (``runs/``), which no notebook reads back and the
    study does not keep, and which are half of a `small` seed's packed size (40 of 77 MB
    after notebook 06): a resumed seed's folder lacks those of the notebooks packed."""
    import io
    import tarfile

    def add(tar, name: str, data: bytes) -> None:
        info = tarfile.TarInfo(name)
        info.size, info.mtime = len(data), int(time.time())
        tar.addfile(info, io.BytesIO(data))

    manifest = (run_dir / MANIFEST_FILE).read_bytes()
    target.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(target) as tmp, tarfile.open(tmp, "w:gz") as tar:
        add(tar, MANIFEST_FILE, manifest)
        for path in sorted(run_dir.rglob("*")):
            name = path.relative_to(run_dir).as_posix()
            if not path.is_file() or name == MANIFEST_FILE or path.name.startswith(".") or path.suffix == ".lock" \
                    or name.startswith(f"{RUN_FILES_FOLDER}/"):
                continue
            data = path.read_bytes()
            add(tar, name, _complete_records(data) if path.suffix == ".journal" else data)


def _restore(study_dir: Path, run_dir: Path, seed: int) -> bool:
    """Put a seed's checkpoint (`checkpoint`) back where a fresh checkout has no run folder
    for it, or (a bilambdamart seed) a run folder without a journal; True if it did."""
    design = _design(study_dir)
    kept = _progress_file(study_dir, design, seed)
    if not kept.exists():
        return False
    if design["profile"] == "ledger":
        if run_dir.exists():
            return False
        import tarfile

        unpacking = Path(tempfile.mkdtemp(prefix=f".{run_dir.name}.", dir=run_dir.parent))
        try:
            with tarfile.open(kept, "r:gz") as tar:
                members = tar.getmembers()
                strays = [m.name for m in members if not m.isfile() or m.name.startswith("/") or ".." in m.name]
                if strays:
                    raise ValueError(f"{kept}: not a checkpoint of a run folder (holds {strays[:3]})")
                # Python >= 3.11.4 also checks each name itself ("data" filter).
                tar.extractall(unpacking, members, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
            unpacking.rename(run_dir)  # whole or not at all
        finally:
            shutil.rmtree(unpacking, ignore_errors=True)  # gone once renamed; a failed unpacking leaves nothing
        return True
    if (run_dir / _journal_of(design)).exists():
        return False
    run_dir.mkdir(parents=True, exist_ok=True)
    _journal_copy(kept, run_dir / _journal_of(design))
    return True


def _restore_checkpoints(study_dir: Path, reports: Path, design: dict, seeds: Sequence[int], log) -> None:
    """`_restore` each of ``seeds`` (about to run) from its checkpoint, saying which."""
    resumed = ("the finished notebooks of its checkpointed run folder" if design["profile"] == "ledger"
               else "the finished trials of its checkpointed journal")
    for seed in seeds:
        if _restore(study_dir, reports / f"{design['study']}-seed{seed}", seed):
            log(f"seed {seed}: resuming {resumed}")


def _to_run(design: dict, recorded: dict[int, Path], summarise_only: bool, doing: str, log):
    """The design's seeds not yet recorded, in order, each announced (``doing``); a recorded
    seed is said to be read back. None when ``summarise_only``."""
    for seed in ([] if summarise_only else design["seeds"]):
        if seed in recorded:
            log(f"seed {seed}: recorded, not rerun")
            continue
        log(f"seed {seed}: {doing} ({len(recorded)} of {len(design['seeds'])} recorded)")
        yield seed


def _recorded(study_dir: Path) -> dict[int, Path]:
    """The seeds whose record is complete (`ltrlib.fidelity.sources.recorded_seeds`)."""
    from ltrlib.fidelity.sources import recorded_seeds

    return recorded_seeds(study_dir)


def _seed_minutes(meta: dict) -> dict[str, float]:
    """A recorded seed's time (its ``seed.json``), in minutes: ``wall_minutes``, the wall time
    of the process that finished it (a seed resumed in a later session counts only that
    session's part, and a seed whose notebooks had all finished counts almost nothing), and
    ``notebook_minutes``, its notebooks' own run times summed over every session it ran in
    (a notebook resumed mid-way counts its last run only)."""
    notebooks = meta.get("notebook_seconds", math.nan)
    notebooks = sum(notebooks.values()) if isinstance(notebooks, dict) else notebooks
    return {"wall_minutes": round(meta["wall_seconds"] / 60, 1), "notebook_minutes": round(notebooks / 60, 1)}


def _seed_code(seed_dir: Path) -> str:
    """The code a recorded seed ran: its notebooks' commits (`ltrlib.manifest.code_commit`,
    in its ``run.json``), shortened, "; "-joined where they differ (a seed resumed on other
    code), or "not recorded" (runs from before commits were kept, or a record without its
    ``run.json``)."""
    manifest = seed_dir / MANIFEST_FILE
    notebooks = read_json(manifest).get("notebooks", {}) if manifest.exists() else {}
    codes = sorted({str(e.get("code")) for e in notebooks.values() if isinstance(e, dict) and e.get("code")})
    return "; ".join(c[:10] + c[40:] for c in codes) or "not recorded"


def write_summary(study_dir: Path, command: str) -> preregistration.Summary:
    """``study.md`` and ``study.csv`` (the across-seed table, then the per-seed gains)
    from the recorded seeds."""
    design = _design(study_dir)
    per_seed, walls, spent, trials = {}, {}, [], {}
    for seed, d in _recorded(study_dir).items():
        if seed not in design["seeds"]:
            continue
        uptake = d / "pairwise_uptake.csv"
        per_seed[seed] = (pd.read_parquet(d / "per_query_test.parquet"),
                          read_table(uptake) if uptake.exists() else None)
        walls[seed] = {**_seed_minutes(_seed_record(d)), "code": _seed_code(d)}
        if (d / "tuning_summary.csv").exists():
            spent.append(read_table(d / "tuning_summary.csv").assign(seed=seed))
        if (d / "tuning_trials.csv").exists():
            trials[seed] = read_table(d / "tuning_trials.csv")
    summary = preregistration.summarise(per_seed, planned=len(design["seeds"]), metric=design["endpoint"])
    # Only a study that replaces trials (the follow-up's design states its changes) can keep one
    # past the budget; the first study ran exactly its trials.
    sensitivity = (preregistration.replacement_sensitivity(trials, summary.gains, design["parameters"]["n_trials"])
                   if "changes" in design and not summary.gains.empty else None)
    text = summary_markdown(summary, design=design, command=command, walls=walls, sensitivity=sensitivity)
    if spent:
        from ltrlib.report import table_to_markdown

        spent = pd.concat(spent)
        # The first study's seeds counted trials that peaked at tree 1 (kept as
        # `stopped_at_tree_1`); since the search's document units degenerate trials are replaced.
        counts = [c for c in ("trials", "completed", "pruned", "usable", "replaced", "replaced_degenerate",
                              "replaced_lightgbm", "replaced_above_kept", "stopped_at_tree_1", "failed_replaced") if c in spent]
        trials = spent.groupby("model", sort=False)[counts].sum()
        text += "\n## Tuning spent, summed over seeds\n\n" + table_to_markdown(trials, index=True) + "\n"
    atomic_write_text(study_dir / "study.md", text)
    done = sum(seed in design["seeds"] for seed in per_seed)
    atomic_write_text(study_dir / preregistration.VERDICT_FILE, json.dumps(
        {"verdict": summary.verdict, "words": summary.words, "seeds_done": done, "planned": len(design["seeds"])},
        indent=1, ensure_ascii=False) + "\n")
    table = pd.concat([summary.seeds.assign(table="across_seeds"), summary.pooled.assign(table="pooled"),
                       summary.gains.assign(table="per_seed")], ignore_index=True)
    atomic_write_text(study_dir / "study.csv", table.to_csv(index=False))
    return summary


def _run_seeds(to_run: Sequence[int], run_seed, design: dict, reports: Path, summarise, *, progress: bool,
               scheduler: str, threads: int, workers: int, resume: str, log) -> None:
    """Run and record ``to_run`` through `dispatch` with ``run_seed`` (one of the studies'
    ``_<study>_seed``), and as each seed is recorded rewrite the study's summary:
    ``summarise(seed)`` returns the words that end the seed's log line ("" for none)."""
    def done(seed: int, result: dict) -> None:
        words = summarise(seed)
        log(f"seed {seed}: recorded in {math.ceil(result['wall'])} s" + (f"; {words}" if words else ""))

    dispatch(to_run, partial(run_seed, progress=progress), design, reports, on_done=done, scheduler=scheduler,
             threads=threads, workers=workers, resume=resume, log=log)


def _bilambdamart_seed(design: dict, seed: int, reports: Path, progress: bool = False, stop=None):
    """Notebook 06 at ``seed`` into ``<study>-seed<N>`` with the design's parameters
    (`ltrlib.runner.run_all` resumes an interrupted run); what `record_seed` keeps.
    ``stop``: as `_batch`'s."""
    run_dir = _batch(stop, dataset=design["dataset"], scale=design["scale"], seed=seed,
                      run_id=f"{design['study']}-seed{seed}", only=NOTEBOOK,
                      parameters={**preregistration.REGISTERED_PARAMETERS, **design["parameters"]},
                      reports_dir=reports, progress=progress)
    tables = run_dir / "tables" / NOTEBOOK
    return run_dir, (NOTEBOOK,), {tables / name: name for name in KEPT_TABLES}


def run_bilambdamart_study(profile: str, *, study: str | None = None, seeds: Sequence[int] | None = None,
                           reports_dir: str | os.PathLike | None = None, summarise_only: bool = False,
                           save_progress: bool = False, progress: bool = True, scheduler: str = "",
                           threads: int = THREADS_PER_SEED, workers: int = 0, log=print) -> preregistration.Summary:
    """Run (or resume) the study and write its summary; returns it.

    Each seed not yet recorded runs notebook 06 (`_bilambdamart_seed`) as a task of
    `dispatch`, is recorded, and the summary is rewritten after every seed, so an
    interruption leaves a summary of the seeds done. ``summarise_only``: run nothing,
    rewrite the summary from the recorded seeds. ``save_progress``: run nothing,
    `checkpoint` the seeds in progress.
    """
    study = study or f"bilambdamart-{profile}"
    design = study_design(profile, study, seeds)
    reports = Path(reports_dir) if reports_dir is not None else Path(config.REPORTS_DIR)
    study_dir = reports / study
    _check_design(study_dir, design)
    seeds_arg = ",".join(str(s) for s in design["seeds"])
    command = f"{config.cli_command()} study bilambdamart --profile {profile} --study {study} --seeds {seeds_arg}"
    if save_progress:
        log(f"checkpointed the journals of seeds {checkpoint(study_dir, reports) or 'none'} in progress")
        summarise_only = True
    to_run = list(_to_run(design, _recorded(study_dir), summarise_only, "to run notebook 06", log))
    _restore_checkpoints(study_dir, reports, design, to_run, log)

    def summarise(seed: int) -> str:
        _progress_file(study_dir, design, seed).unlink(missing_ok=True)  # recorded: no longer in progress
        return write_summary(study_dir, command).words

    _run_seeds(to_run, _bilambdamart_seed, design, reports, summarise, progress=progress, scheduler=scheduler,
               threads=threads, workers=workers, resume=command, log=log)
    summary = write_summary(study_dir, command)
    log(summary.words)
    return summary


def summary_markdown(summary: preregistration.Summary, *, design: dict, command: str,
                     walls: dict[int, dict[str, float | str]],
                     sensitivity: preregistration.ReplacementSensitivity | None = None) -> str:
    """``study.md``: the design, the verdict in words (and beside it, given, the replacement
    ``sensitivity``, labelled as after the fact), the across-seed and pooled tables and the
    per-seed gains with each seed's time (`_seed_minutes`) and code (`_seed_code`)."""
    params = ", ".join(f"{k} = {v}" for k, v in design["parameters"].items())
    gains = summary.gains.copy()
    if not gains.empty:
        for column in ("wall_minutes", "notebook_minutes", "code"):
            gains[column] = gains.seed.map(lambda s: walls.get(int(s), {}).get(column, math.nan))
    lines = [
        f"# Study {design['study']}: is Bi-λMART better than λMART*? ({design['profile']} profile)", "",
        f"**Verdict ({summary.verdict}).** {summary.words}", "",
        *([f"**Replacement sensitivity.** {sensitivity.words}", ""] if sensitivity is not None else []),
        "## Design (fixed before the confirmatory run)", "",
        f"- Data: the synthetic twin at scale `{design['scale']}`; seeds {list(design['seeds'])} "
        "(each seed draws new data, folds, query sample and Optuna sampler).",
        f"- Notebook 06 parameters: {params}.",
        f"- Endpoint: test {preregistration.ENDPOINT} (full-list IDCG), gain of each model over its baseline.",
        f"- Rule: {preregistration.DECISION_RULE}",
        *([f"- Changes from the first study: {design['changes']}", f"- Seeds: {design['sizing']}"]
          if "changes" in design else []), "",
        f"Regenerate: `{command}` (finished seeds are read back, not rerun).", "",
        "## Across seeds", "",
        table_to_markdown(summary.seeds.round(4)), "",
        "## Pooled over queries, stratified by seed", "",
        table_to_markdown(summary.pooled.round(5)) if not summary.pooled.empty else "(no seed yet)", "",
        "## Per seed", "",
        table_to_markdown(gains.round(4)) if not gains.empty else "(no seed yet)", "",
    ]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# The neural competitors across seeds, at trial parity with the trees of a Bi-LambdaMART study.

NEURAL_NOTEBOOK = "06_neural_competitors"
#: What a neural seed keeps, by notebook, in a run's layout (``tables/<notebook>/<file>``), so
#: the record reads as a run (`ltrlib.fidelity.bilambdamart.neural_across_seeds`): the
#: networks' tables, and the trees' per-query results and tuning summary it was paired with.
NEURAL_KEPT = {NEURAL_NOTEBOOK: ("per_query_neural.parquet", "neural_tuning_summary.csv", "neural_tuning_trials.csv",
                                 "table3_neural_lambdarank.csv", "table4_gsf.csv", "table5_neural_softmax.csv",
                                 "table3_neural_lambdarank_numbers.csv", "table4_gsf_numbers.csv",
                                 "table5_neural_softmax_numbers.csv", "table6_neural_hyperparameters.csv",
                                 "table7_attention.csv", "ranker_means.csv"),
               NOTEBOOK: ("per_query_test.parquet", "tuning_summary.csv", "table2_lambdarank.csv", "table5_softmax.csv",
                          "table2_lambdarank_numbers.csv", "table5_softmax_numbers.csv")}
#: Notebook 06's parameters the neural notebook declares too ("notebook 06's"): taken from the
#: source study's design, so the networks re-rank the very lists its trees did.
NEURAL_SHARED = ("folds", "stage1_max_trees", "stage1_trials", "stage2_features", "train_queries", "max_trees",
                 "early_stopping", "fold_streams")
#: The networks' training budget per profile. Trials are the source study's ``n_trials``
#: (parity with its trees); the first is the paper's Tables 6-7 point. ``gpu``: the issue's
#: convergence budget (patience 2,000 steps, 64 epochs of 1,000 queries; at most 20,000),
#: widths as tuned. ``cpu``: sized for about an hour a seed on 2 cores by a pilot on a seed
#: outside the study (`bench/bench_neural_seed.py`: 5,000 steps at width 128 projected 2.9 h
#: a seed, and the λRank networks' best steps sat at that cap all the same, so the extra
#: steps bought no convergence); a seed then measured 1.7 h quiet, the pilot's three trials a
#: network not predicting sixteen. What it leaves out is stated in docs/bilambdamart.md, "The
#: neural competitors across seeds". ``tiny``: the tests'.
NEURAL_PROFILES: dict[str, dict] = {
    "gpu": {"max_steps": 20_000, "patience": 2_000, "eval_every": 250, "max_width": 0},
    "cpu": {"max_steps": 3_000, "patience": 1_000, "eval_every": 100, "max_width": 64},
    "tiny": {"max_steps": 40, "patience": 20, "eval_every": 10, "max_width": 16},
}


def neural_design(profile: str, source: str, study: str, seeds: Sequence[int] | None = None,
                  reports_dir: str | os.PathLike | None = None) -> dict:
    """The neural study's design: the source Bi-LambdaMART study's data, scale, stage-2
    parameters and seeds (those given must be among its design's), its ``n_trials`` for
    every network, the profile's training budget, and the rule."""
    from ltrlib.fidelity.bilambdamart import NEURAL_SEEDS_RULE

    if profile not in NEURAL_PROFILES:
        raise ValueError(f"unknown neural profile {profile!r}; choose from {', '.join(NEURAL_PROFILES)}")
    reports = Path(reports_dir) if reports_dir is not None else Path(config.REPORTS_DIR)
    path = reports / source / "design.json"
    if not path.exists():
        raise ValueError(f"--from {source!r}: {path} does not exist (run or fetch that study first)")
    src = read_json(path, keys=DESIGN_KEYS + ("parameters",))
    chosen = [int(s) for s in (src["seeds"] if seeds is None else seeds)]
    foreign = [s for s in chosen if s not in src["seeds"]]
    if foreign:
        raise ValueError(f"--seeds {foreign}: not seeds of {source!r} (its seeds: {src['seeds']})")
    source_parameters = {**preregistration.REGISTERED_PARAMETERS, **src["parameters"]}
    parameters = {k: v for k, v in source_parameters.items() if k in NEURAL_SHARED}
    parameters.update(NEURAL_PROFILES[profile], neural_trials=int(src["parameters"]["n_trials"]))
    return {"study": validate_name(study, "study id"), "profile": f"neural-{profile}", "source": source,
            "dataset": src["dataset"], "scale": src["scale"], "seeds": chosen, "parameters": parameters,
            "rule": NEURAL_SEEDS_RULE}


def _trees_of(source_dir: Path, seed: int, run_dir: Path) -> None:
    """Put the source study's recorded trees of ``seed`` where the neural notebook reads
    notebook 06's results (its per-query results for the tables, its tuning summary for the
    budget gate). ValueError when the source has not recorded the seed."""
    record = _seed_dir(source_dir, seed)
    if not (record / "seed.json").exists():
        raise ValueError(f"{source_dir.name} has not recorded seed {seed}: its trees are not there to pair with")
    target = run_dir / "tables" / NOTEBOOK
    target.mkdir(parents=True, exist_ok=True)
    for name in NEURAL_KEPT[NOTEBOOK]:
        if (record / name).exists():
            shutil.copy2(record / name, target / name)


def _trial_minutes(seed_dir: Path) -> dict[str, float]:
    """``trial_minutes``: the networks' Optuna trials' own times summed, in minutes, from a
    recorded neural seed's ``neural_tuning_trials.csv``. It counts every session the seed
    ran in, where ``wall_minutes`` and ``notebook_minutes`` count only the last one when the
    notebook itself was resumed mid-way (its trials read back from the journal), as a
    neural seed of one to two hours often is. Trials run one at a time, so this is the seed's
    training time, slowed by whatever else shared the machine."""
    trials = seed_dir / "tables" / NEURAL_NOTEBOOK / "neural_tuning_trials.csv"
    seconds = read_table(trials, usecols=["seconds"]).seconds.sum() if trials.exists() else math.nan
    return {"trial_minutes": round(float(seconds) / 60, 1)}


def write_neural_summary(study_dir: Path, command: str) -> pd.DataFrame:
    """``study.md`` and ``study.csv`` of a neural study from its recorded seeds: the claims'
    verdicts at each seed and across seeds (`neural_across_seeds`), the networks' budget
    and convergence, each seed's wall time and device. Returns the across-seed table."""
    from ltrlib.fidelity.bilambdamart import neural_across_seeds

    design = _design(study_dir)
    recorded = {s: d for s, d in _recorded(study_dir).items() if s in design["seeds"]}
    per_seed, across = neural_across_seeds(recorded, planned=len(design["seeds"]))
    spent, walls = [], []
    for seed, d in recorded.items():
        meta = _seed_record(d)
        walls.append({"seed": seed, **_seed_minutes(meta), **_trial_minutes(d),
                      "device": meta["metrics"].get("device", ""), "code": _seed_code(d)})
        summary = d / "tables" / NEURAL_NOTEBOOK / "neural_tuning_summary.csv"
        if summary.exists():
            spent.append(read_table(summary).assign(seed=seed))
    params = ", ".join(f"{k} = {v}" for k, v in design["parameters"].items())
    grid = (per_seed.pivot_table(index="claim", columns="seed", values="ours", aggfunc="first")
            .reindex(across.claim) if not per_seed.empty else pd.DataFrame())
    lines = [f"# Study {design['study']}: the Bi-LambdaMART paper's neural claims across seeds", "",
             f"- Trees: `{design['source']}`'s recorded seeds {design['seeds']} (scale `{design['scale']}`), "
             "paired query by query with the networks trained here on the same lists.",
             f"- Networks: notebook 06_neural_competitors with {params} (profile `{design['profile']}`).",
             f"- Rule: {design['rule']}", "",
             f"Regenerate: `{command}` (finished seeds are read back, not rerun).", "",
             "## Across seeds", "", table_to_markdown(across.drop(columns="statement")), "",
             "## Per seed", "", table_to_markdown(grid, index=True) if not grid.empty else "(no seed yet)", ""]
    if spent:
        budget = pd.concat(spent)[["seed", "model", "usable", "stop_reason", "best_step", "steps", "trials_converged"]]
        lines += ["## The networks' budget and convergence", "", table_to_markdown(budget), ""]
    if walls:
        lines += ["## Time per seed", "", table_to_markdown(pd.DataFrame(walls)), ""]
    atomic_write_text(study_dir / "study.md", "\n".join(lines))
    table = pd.concat([across.assign(table="across_seeds"), per_seed.assign(table="per_seed")], ignore_index=True)
    atomic_write_text(study_dir / "study.csv", table.to_csv(index=False))
    return across


def _neural_seed(design: dict, seed: int, reports: Path, progress: bool = False, stop=None):
    """The networks at ``seed``, paired with the source study's trees of that seed
    (`_trees_of`), into ``<study>-seed<N>``; what `NEURAL_KEPT` keeps, in a run's layout.
    ``stop``: as `_batch`'s."""
    run_dir = reports / f"{design['study']}-seed{seed}"
    _trees_of(reports / design["source"], seed, run_dir)
    _batch(stop, dataset=design["dataset"], scale=design["scale"], seed=seed, run_id=run_dir.name,
            only=NEURAL_NOTEBOOK, parameters=design["parameters"], reports_dir=reports, progress=progress)
    files = {run_dir / "tables" / nb / name: f"tables/{nb}/{name}" for nb, names in NEURAL_KEPT.items()
             for name in names}
    return run_dir, (NEURAL_NOTEBOOK,), files


def run_neural_study(profile: str, *, source: str, study: str | None = None, seeds: Sequence[int] | None = None,
                     reports_dir: str | os.PathLike | None = None, summarise_only: bool = False,
                     save_progress: bool = False, progress: bool = True, scheduler: str = "",
                     threads: int = THREADS_PER_SEED, workers: int = 0, log=print) -> pd.DataFrame:
    """Train the paper's networks at every seed of a recorded Bi-LambdaMART study, at trial
    parity with its trees, and decide the neural claims across seeds; returns the
    across-seed table.

    Each seed not yet recorded is a task of `dispatch` (`_neural_seed`, with the design's
    parameters, `neural_design`); the summary is rewritten after every seed
    (`write_neural_summary`). JAX trains on a GPU when the installed JAX has one, with no
    change here; each seed's record says which device. ``save_progress``: run nothing,
    `checkpoint` the seeds in progress (their networks' finished trials).
    """
    study = study or f"{source}-neural"
    reports = Path(reports_dir) if reports_dir is not None else Path(config.REPORTS_DIR)
    design = neural_design(profile, source, study, seeds, reports)
    study_dir = reports / study
    _check_design(study_dir, design)
    seeds_arg = ",".join(str(s) for s in design["seeds"])
    command = (f"{config.cli_command()} study neural --from {source} --profile {profile} --study {study} "
               f"--seeds {seeds_arg}")
    if save_progress:
        log(f"checkpointed the journals of seeds {checkpoint(study_dir, reports) or 'none'} in progress")
        summarise_only = True
    to_run = list(_to_run(design, _recorded(study_dir), summarise_only, "to train the networks", log))
    _restore_checkpoints(study_dir, reports, design, to_run, log)

    def summarise(seed: int) -> str:
        _progress_file(study_dir, design, seed).unlink(missing_ok=True)  # recorded: no longer in progress
        write_neural_summary(study_dir, command)
        return ""

    _run_seeds(to_run, _neural_seed, design, reports, summarise, progress=progress, scheduler=scheduler,
               threads=threads, workers=workers, resume=command, log=log)
    across = write_neural_summary(study_dir, command)
    log(table_to_markdown(across[["claim", "seeds", "verdict"]]))
    return across


# ---------------------------------------------------------------------------------------------
# The whole ledger across seeds.

#: What a ledger seed keeps besides its tables (``tables/**``, CSV, Parquet and JSON): the
#: run's files the ledger reads, and the ledger it wrote at that seed. Not the executed
#: notebooks, figures, models or Optuna journals.
LEDGER_KEPT = ("metrics.json", "provenance.json", "fidelity_claims.csv", "fidelity_effects.csv")
LEDGER_SEEDS = (0, 1, 2, 3, 4)
#: The committed ledger study the README's headline quotes (`ledger_headline`).
LEDGER_STUDY = config.PROJ_ROOT / "reports" / "ledger-small"


def ledger_design(study: str, scale: str = "small", seeds: Sequence[int] | None = None, dataset: str = "synthetic",
                  notebooks: str = "", rule: str | None = None, parameters: dict | None = None) -> dict:
    """The ledger study's design: the batch (``notebooks``, default all) at ``scale`` on
    every seed, with the notebook ``parameters`` (``ltrlib run -p``'s: each goes to the
    notebooks that declare it, e.g. ``{"profile": "paper"}`` to notebook 07), and the rule
    across seeds, JSON-able: the version ``rule`` of `ltrlib.fidelity.across.RULES` (default
    `DEFAULT_RULE`, v2) with its margins (`design_terms`). A v1 design holds what
    ``reports/ledger-small``'s was fixed with (and, like every design without parameters,
    no ``parameters`` key)."""
    from ltrlib.fidelity.across import DEFAULT_RULE, design_terms

    config.get_scale(scale)  # an unknown scale is refused here, naming the known ones
    chosen = [int(s) for s in (LEDGER_SEEDS if seeds is None else seeds)]
    return {"study": validate_name(study, "study id"), "profile": "ledger", "dataset": dataset, "scale": scale,
            "seeds": chosen, "notebooks": notebooks or "all",
            **({"parameters": dict(parameters)} if parameters else {}), **design_terms(rule or DEFAULT_RULE)}


def _registered_rule(study_dir: Path) -> str | None:
    """The rule version of a study's stored design (None when it has none yet): a study is
    decided by the rule it was registered with, whatever a new study's default is now."""
    from ltrlib.fidelity.across import rule_version

    return rule_version(_design(study_dir)) if (study_dir / "design.json").exists() else None


def _ledger_seed(design: dict, seed: int, reports: Path, progress: bool = False, stop=None):
    """The batch at ``seed`` into ``<study>-seed<N>`` (resumed per notebook by the runner);
    what the study keeps, in a run's layout, so the ledger can be rebuilt from the record.
    ``stop``: as `_batch`'s."""
    only = None if design["notebooks"] == "all" else design["notebooks"]
    run_dir = _batch(stop, dataset=design["dataset"], scale=design["scale"], seed=seed,
                      run_id=f"{design['study']}-seed{seed}", only=only, reports_dir=reports, progress=progress,
                      parameters=design.get("parameters") or None)
    files = {f: f.relative_to(run_dir).as_posix() for f in sorted((run_dir / "tables").rglob("*"))
             if f.is_file() and f.suffix in (".csv", ".parquet", ".json")}
    files.update({run_dir / name: name for name in LEDGER_KEPT})
    return run_dir, tuple(RunManifest.require(run_dir).notebooks), files


def _ledger_tables(study_dir: Path, design: dict, rule: str | None = None) -> tuple[pd.DataFrame, pd.DataFrame,
                                                                                   dict[int, dict]]:
    """The ledger of every recorded seed, rebuilt from its tables with today's claims, and
    decided across them by ``rule`` (default: the design's version, `rule_version`):
    ``(per_seed, across, seed records)``; `_ledger_frames` adds the seeds' effects."""
    per_seed, across, _, meta = _ledger_frames(study_dir, design, rule)
    return per_seed, across, meta


def _ledger_seeds(study_dir: Path, design: dict) -> tuple[pd.DataFrame, pd.DataFrame, dict[int, dict]]:
    """Every recorded seed of the design, its ledger rebuilt from its tables with today's
    claims: ``(per_seed, effects, seed records)``, ``effects`` every seed's comparisons
    (``EFFECT_COLUMNS`` and ``seed``), each record its ``seed.json`` with the ``code`` it
    ran (`_seed_code`)."""
    from ltrlib.fidelity.ledger import fidelity_report
    from ltrlib.fidelity.sources import require_numbers

    recorded = {s: d for s, d in sorted(_recorded(study_dir).items()) if s in design["seeds"]}
    require_numbers(recorded)
    reports = {s: fidelity_report(d) for s, d in recorded.items()}
    if not reports:
        return pd.DataFrame(), pd.DataFrame(), {}
    per_seed = pd.concat([r.claims.assign(seed=s) for s, r in reports.items()], ignore_index=True)
    effects = pd.concat([r.effects.assign(seed=s) for s, r in reports.items()], ignore_index=True)
    return per_seed, effects, {s: {**_seed_record(d), "code": _seed_code(d)} for s, d in recorded.items()}


def _ledger_frames(study_dir: Path, design: dict, rule: str | None = None) -> tuple[pd.DataFrame, pd.DataFrame,
                                                                                   pd.DataFrame, dict[int, dict]]:
    """`_ledger_seeds` decided across the seeds (`_ledger_tables`), with every seed's
    comparisons, which the Effect Ratio forests draw: ``(per_seed, across, effects, seed records)``."""
    from ltrlib.fidelity.across import decide_across, rule_version, with_effect_ratios

    per_seed, effects, meta = _ledger_seeds(study_dir, design)
    if per_seed.empty:
        return pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), {}
    across = decide_across(per_seed, effects, rule or rule_version(design))
    return per_seed, with_effect_ratios(across, effects), effects, meta


def ledger_reading(study_dir: str | os.PathLike, rule: str = "v2") -> tuple[pd.DataFrame, pd.DataFrame]:
    """A recorded ledger study decided by another rule version than its design's: a
    secondary reading, written nowhere (the study's own ``study.csv`` and ``study.md`` stay
    its registered rule's). Returns ``(across, head)``: every check as `write_ledger_summary`
    decides it, by ``rule``, and per paper its counted checks by verdict (`_ledger_head`)."""
    study_dir = Path(study_dir)
    design = _design(study_dir)
    per_seed, across, meta = _ledger_tables(study_dir, design, rule)
    if across.empty:
        return across, pd.DataFrame()
    return across, _ledger_head(across, per_seed[per_seed.seed == min(meta)])


def write_ledger_power(study_dir: str | os.PathLike, chosen: int, command: str = "") -> Path:
    """How many seeds a new ledger study needs, from a recorded one's spreads
    (`ltrlib.fidelity.power`), written beside it, never into it: ``<study>-power/power.md``
    and ``checks.csv`` (every check's seeds needed and power at ``chosen`` seeds). Returns
    the folder."""
    from ltrlib.fidelity.power import power_markdown, power_tables

    study_dir = Path(study_dir)
    per_seed, effects, _ = _ledger_seeds(study_dir, _design(study_dir))
    if per_seed.empty:
        raise ValueError(f"--power: {study_dir.name} has no recorded seed to take spreads from")
    by_seeds, checks, _ = power_tables(per_seed, effects, chosen)
    out = study_dir.parent / f"{study_dir.name}-power"
    out.mkdir(exist_ok=True)
    atomic_write_text(out / "power.md", power_markdown(by_seeds, checks, study_dir.name, chosen, command))
    atomic_write_text(out / "checks.csv", checks.to_csv(index=False))
    return out


def write_ledger_reading(study_dir: str | os.PathLike, rule: str, command: str = "") -> Path:
    """A recorded ledger study read by ``rule`` after the fact (`ledger_reading`), written
    beside it, never into it: ``<study>-reading-<rule>/reading.md`` and ``reading.csv``, with
    the registered rule's verdicts of today's claims next to ``rule``'s, and labelled a
    secondary reading (the study's verdicts are its registered rule's, in its own folder).
    Returns the folder."""
    from ltrlib.fidelity.across import rule_version

    study_dir = Path(study_dir)
    registered = rule_version(_design(study_dir))
    if rule == registered:
        raise ValueError(f"--reading {rule}: {study_dir.name} is registered with {rule}; its study.md is that reading")
    across, head = ledger_reading(study_dir, rule)
    _, registered_head = ledger_reading(study_dir, registered)
    out = study_dir.parent / f"{study_dir.name}-reading-{rule}"
    out.mkdir(exist_ok=True)
    seeds = len(set(_recorded(study_dir)) & set(_design(study_dir)["seeds"]))
    chart = (_figure_lines(write_ledger_figures(out, across, None, f"{study_dir.name} read by rule {rule} across "
                                                f"{seeds} seeds: a secondary reading, not the study's result")
                           ["verdicts"], f"Checks by verdict, {study_dir.name} read by rule {rule}",
                           f"Each paper's checks by their verdict by rule {rule}, as the table below counts them, "
                           "and the checks outside the tally.") if not across.empty else [])
    lines = [f"# {study_dir.name}, read by rule {rule}: a secondary reading", "",
             f"**Not the study's result.** `{study_dir.name}` was registered with rule {registered} before its "
             f"first seed; its verdicts are its own `study.md`. This reads the same recorded seeds by rule {rule} "
             "(docs/fidelity.md), after the fact, with the claims as they are today (checks mended since the "
             "study count as they now read, so both tables below may differ from the study's own).", "",
             f"Regenerate: `{command}`." if command else "", "",
             f"## Today's claims by the registered rule ({registered})", "", table_to_markdown(registered_head), "",
             f"## The same seeds by rule {rule}", "", *chart, table_to_markdown(head), "",
             "Every check by rule " + rule + ": `reading.csv`.", ""]
    atomic_write_text(out / "reading.md", "\n".join(lines))
    atomic_write_text(out / "reading.csv", across.to_csv(index=False))
    return out


def _ledger_head(across: pd.DataFrame, first: pd.DataFrame) -> pd.DataFrame:
    """Per paper, its counted checks by their verdict across seeds, beside the first seed's."""
    from ltrlib.fidelity.across import SEED_DEPENDENT
    from ltrlib.fidelity.claims import NOT_DECIDED
    from ltrlib.fidelity.ledger import PAPERS

    rows = []
    for source, g in across[(across.kind == "claim") & ~across.beyond.astype(bool)].groupby("source", sort=False):
        mine = first[(first.source == source) & (first.kind == "claim") & ~first.beyond.astype(bool)]
        rows.append({"paper": PAPERS[source].title, "checks": len(g),
                     **{v: int((g.verdict == v).sum()) for v in ("holds", "does not hold", SEED_DEPENDENT,
                                                                  NOT_DECIDED, "not available")},
                     "first seed (holds / does not hold)": f"{int((mine.ours == 'holds').sum())} / "
                                                           f"{int((mine.ours == 'does not hold').sum())}"})
    return pd.DataFrame(rows)


#: The verdicts a ledger study's head table counts, in its order (`_ledger_head`).
LEDGER_VERDICTS = ("holds", "does not hold", "seed-dependent", "not decided", "not available")
#: Where a ledger study (or a reading of one) keeps its pictures, beside its Markdown: the
#: verdict chart, ``verdicts.png`` (the study's headline image, for the README), and one
#: Effect Ratio forest per paper, ``effect_ratios_<source>.png``; each also as SVG.
FIGURES_DIR = "figures"
VERDICTS_FIGURE = "verdicts"


def ledger_verdict_frame(across: pd.DataFrame) -> pd.DataFrame:
    """Per paper, its checks by their verdict across seeds, tidy (``paper, verdict, checks``):
    the counted ones (the papers' claims in their scopes) by `LEDGER_VERDICTS`, as the head
    table counts them (`_ledger_head`), then the checks outside the tally (beyond the paper,
    notes, exact checks, controls); what `ltrlib.plots.verdict_counts` draws."""
    from ltrlib.fidelity.across import SEED_DEPENDENT
    from ltrlib.fidelity.claims import NOT_DECIDED
    from ltrlib.fidelity.ledger import PAPERS

    assert (LEDGER_VERDICTS[2], LEDGER_VERDICTS[3]) == (SEED_DEPENDENT, NOT_DECIDED)
    rows = []
    for source, g in across.groupby("source", sort=False):
        counted = (g.kind == "claim") & ~g.beyond.astype(bool)
        rows += [(PAPERS[source].title, v, int((g.verdict[counted] == v).sum())) for v in LEDGER_VERDICTS]
        rows.append((PAPERS[source].title, "outside the tally", int((~counted).sum())))
    return pd.DataFrame(rows, columns=["paper", "verdict", "checks"])


def _save_figure(fig, folder: Path, name: str) -> str:
    """``fig`` as ``<name>.png`` and ``.svg`` in ``folder``, each written atomically and the
    same bytes from the same frame (no date, no version, fixed SVG ids), so regenerating a
    committed study's pictures changes no file whose numbers did not change; closes ``fig``.
    Returns the PNG's path relative to the study folder."""
    import matplotlib.pyplot as plt

    try:
        for fmt, metadata in (("png", {"Software": None}), ("svg", {"Date": None, "Creator": None})):
            with atomic_path(folder / f"{name}.{fmt}") as tmp, plt.rc_context({"svg.hashsalt": name}):
                fig.savefig(tmp, format=fmt, dpi=100, bbox_inches="tight", metadata=metadata)
    finally:
        plt.close(fig)
    return f"{FIGURES_DIR}/{name}.png"


def write_ledger_figures(folder: Path, across: pd.DataFrame, effects: pd.DataFrame | None, title: str
                         ) -> dict[str, str]:
    """The pictures of a ledger study across seeds, under ``folder/figures/``: the verdict
    chart (`ledger_verdict_frame`, `ltrlib.plots.verdict_counts`) titled ``title``, and per
    paper with comparisons in ``effects`` (every seed's, with ``seed``) its Effect Ratios'
    forest, each comparison's mean ratio with its 95 % interval across seeds and the paper's
    improvement beside our mean one (`ltrlib.fidelity.across.effect_ratio_intervals`,
    `ltrlib.plots.effect_ratios`); a paper none of whose comparisons has a stable ratio gets
    none. Pictures of a paper no longer in the study are removed.
    Returns ``{"verdicts": path, source: path, ...}``, PNG paths relative to ``folder``."""
    from ltrlib import plots
    from ltrlib.fidelity.across import effect_ratio_intervals
    from ltrlib.fidelity.ledger import PAPERS

    out = folder / FIGURES_DIR
    written = {"verdicts": _save_figure(plots.verdict_counts(ledger_verdict_frame(across), title), out,
                                        VERDICTS_FIGURE)}
    if effects is not None and not effects.empty:
        seeds = effects.seed.nunique()
        for source, g in effect_ratio_intervals(effects).groupby("source", sort=False):
            if g.effect_ratio_mean.isna().all():  # no comparison with a stable ratio: nothing to draw
                continue
            fig = plots.effect_ratios(g.reset_index(drop=True),
                                      f"{PAPERS[source].short_name}, {seeds} seeds (mean, 95 % interval)")
            written[source] = _save_figure(fig, out, f"effect_ratios_{source}")
    kept = {Path(p).stem for p in written.values()}
    for f in out.glob("effect_ratios_*.*"):
        if f.suffix in (".png", ".svg") and f.stem not in kept:
            f.unlink()
    return written


def write_recorded_verdicts(study_dir: str | os.PathLike) -> Path:
    """The verdict chart of a recorded ledger study drawn from its ``study.csv``, deciding
    nothing: a study recorded before it had pictures (ledger-small) gets its headline image
    without its seeds being read again by today's checks, which would change its recorded
    verdicts. Writes ``figures/verdicts.png`` and ``.svg`` beside ``study.md`` and leaves
    ``study.md``, ``study.csv`` and any Effect Ratio pictures as they are. Returns the PNG."""
    from ltrlib.fidelity.across import rule_version

    study_dir = Path(study_dir)
    design = _design(study_dir)
    if not (study_dir / "study.csv").exists():
        raise FileNotFoundError(f"{study_dir / 'study.csv'}: the study has no recorded summary to draw "
                                f"(`ltrlib study ledger --study {study_dir.name} --summarise-only` writes it)")
    across = read_table(study_dir / "study.csv", dtype={"beyond": bool})
    done = sum(s in design["seeds"] for s in _recorded(study_dir))
    title = (f"{design['study']}: checks by verdict across {done} of {len(design['seeds'])} seeds "
             f"(rule {rule_version(design)}, as recorded)")
    from ltrlib import plots

    return study_dir / _save_figure(plots.verdict_counts(ledger_verdict_frame(across), title),
                                    study_dir / FIGURES_DIR, VERDICTS_FIGURE)


def _figure_lines(path: str, alt: str, caption: str) -> list[str]:
    """A picture in a study's Markdown: the PNG, its caption and the SVG beside it."""
    return [f"![{alt}]({path})", "", f"{caption} ([SVG]({path[:-4]}.svg))", ""]


EFFECT_RATIOS_CAPTION = ("Each comparison's Effect Ratio (our improvement / the paper's: 1 the paper's effect, 0 "
                         "none, below 0 reversed): its mean over the seeds with a stable one, with its 95 % "
                         "t-interval; beside it the paper's improvement and our mean one.")


def ledger_headline(study_dir: str | os.PathLike = LEDGER_STUDY) -> str:
    """The README's headline of a ledger study, from its ``study.csv`` and record: per paper,
    its counted checks (the papers' claims in their scopes, as `_ledger_head` counts them)
    by their verdict across seeds, and how many seeds they rest on; called interim until
    every seed of the design is recorded. One line, so the README can quote it whole."""
    from ltrlib.fidelity.across import SEED_DEPENDENT
    from ltrlib.fidelity.claims import NOT_DECIDED
    from ltrlib.fidelity.ledger import PAPERS

    study_dir = Path(study_dir)
    design = _design(study_dir)
    done = sorted(s for s in _recorded(study_dir) if s in design["seeds"])
    planned = len(design["seeds"])
    if not done or not (study_dir / "study.csv").exists():
        return f"The ledger study ({design['scale']}, {planned} seeds) has recorded no seed yet."
    across = read_table(study_dir / "study.csv", dtype={"beyond": bool})
    counted = across[(across.kind == "claim") & ~across.beyond]
    verdicts = ("holds", "does not hold", SEED_DEPENDENT, NOT_DECIDED, "not available")
    parts = [f"{PAPERS[source].short_name} " + " / ".join(str(int((g.verdict == v).sum())) for v in verdicts)
             for source, g in counted.groupby("source", sort=False)]
    status = ("" if len(done) == planned else
              f"Interim, not the verdicts: {len(done)} of {planned} seeds recorded, and the rule decides at "
              f"{design['min_seeds']}. ")
    seeds = f"seed {done[0]}" if len(done) == 1 else f"seeds {', '.join(map(str, done))}"
    return (f"{status}The ledger study at `{design['scale']}`, across {len(done)} of {planned} seeds "
            f"({seeds}), checks of the papers' claims holding / not holding / "
            f"seed-dependent / not decided / not available: {'; '.join(parts)}.")


def write_ledger_summary(study_dir: Path, command: str) -> pd.DataFrame:
    """``study.md`` and ``study.csv`` of a ledger study from its recorded seeds: per paper a
    head table of the verdicts across seeds, every check with its verdict per seed, its
    verdict across seeds by the rule, the effect with its interval and the Effect Ratio's,
    the checks whose verdict differs from the first seed's, and each seed's wall time.
    Returns the across-seed table."""
    from ltrlib.fidelity.across import RULES, rule_version

    design = _design(study_dir)
    version = rule_version(design)
    per_seed, across, effects, meta = _ledger_frames(study_dir, design)
    named = "" if version == "v1" else f" {version}"  # v1's summary reads as it did before there were versions
    lines = [f"# Study {design['study']}: every claim of the ledger across seeds", "",
             f"- Data: the {design['dataset']} data at scale `{design['scale']}`; seeds {design['seeds']}, each a "
             f"run of notebooks `{design['notebooks']}` (each seed draws its own twin, folds, samplers, networks "
             "and FOLTR runs)."
             + ("" if not design.get("parameters") else " Notebook parameters, as `ltrlib run -p` gives them: "
                + ", ".join(f"`{k}` = {v!r}" for k, v in design["parameters"].items()) + "."),
             f"- Rule{named} (written before the first seed; `ltrlib.fidelity.across`, docs/fidelity.md), at least "
             f"{design['min_seeds']} seeds, level {design['alpha']}:",
             *[f"  - `{k}`: {v}." for k, v in design["rule"].items()],
             *([f"- Margins (`ltrlib.fidelity.across.MARGINS`):", *[f"  - {k}: {v}." for k, v in
                                                                    design["margins"].items()],
                "- Read on the seeds' means by another rule (`READINGS_V2`):",
                *[f"  - {k}: {v}." for k, v in design.get("readings", {}).items()]] if version != "v1" else []), "",
             f"Regenerate: `{command}` (finished seeds are read back, not rerun; the ledger is rebuilt from "
             "their tables with the claims as they are now).", ""]
    if design["rule"] != RULES[version]:
        lines += ["**The rule in `ltrlib.fidelity.across` has changed since this design was fixed**: the "
                  "verdicts below are decided by today's rule.", ""]
    if across.empty:
        atomic_write_text(study_dir / "study.md", "\n".join(lines + ["(no seed recorded yet)", ""]))
        return across
    done = sorted(meta)
    first = per_seed[per_seed.seed == done[0]]
    interim = "" if len(done) == len(design["seeds"]) else ", interim"
    figures = write_ledger_figures(study_dir, across, effects,
                                   f"{design['study']}: checks by verdict across {len(done)} of "
                                   f"{len(design['seeds'])} seeds (rule {version}{interim})")
    lines += [f"## Across {len(done)} of {len(design['seeds'])} seeds", "",
              *_figure_lines(figures["verdicts"], "Checks of each paper's claims by verdict across seeds",
                             "Each paper's checks by their verdict across seeds, as the table below counts them, "
                             "and the checks outside the tally."),
              "The papers' claims in the scopes they ran; notes, exact checks, controls and scopes beyond the "
              "papers are in each paper's last table.", "", table_to_markdown(_ledger_head(across, first)), ""]
    shown = ["claim", "scope", "rule", "per_seed", "verdict", "p_holm", "evidence", "effect_ratios"]
    if version != "v1":
        shown[6:6] = ["mean", "low", "high", "margin", "q_p", "seeds_needed"]
    from ltrlib.fidelity.ledger import PAPERS

    for source, g in across.groupby("source", sort=False):
        counted = (g.kind == "claim") & ~g.beyond.astype(bool)
        lines += [f"## {PAPERS[source].title}", ""]
        if source in figures:
            lines += _figure_lines(figures[source], f"Effect Ratios: {PAPERS[source].title}", EFFECT_RATIOS_CAPTION)
        lines += [table_to_markdown(g[counted][shown].round(4)), ""]
        if (~counted).any():
            lines += ["Outside the tally:", "", table_to_markdown(g[~counted][shown].round(4)), ""]
    seed0 = first.set_index(["source", "claim", "scope"]).ours
    keyed = across.set_index(["source", "claim", "scope"])
    changed = keyed[(keyed.kind == "claim") & (keyed.verdict != seed0.reindex(keyed.index))]
    lines += [f"## Checks whose verdict across seeds differs from seed {done[0]}'s", "",
              table_to_markdown(changed.assign(**{f"seed {done[0]}": seed0.reindex(changed.index)})
                                .reset_index()[["source", "claim", "scope", f"seed {done[0]}", "verdict"]])
              if not changed.empty else "(none)", "",
              "## Wall time per seed", "",
              table_to_markdown(pd.DataFrame([{"seed": s, **_seed_minutes(m), "worker": m.get("worker", ""),
                                               "code": m["code"]} for s, m in meta.items()])), ""]
    atomic_write_text(study_dir / "study.md", "\n".join(lines))
    atomic_write_text(study_dir / "study.csv", across.to_csv(index=False))
    return across


def run_ledger_study(scale: str = "small", *, study: str | None = None, seeds: Sequence[int] | None = None,
                     dataset: str = "synthetic", notebooks: str = "", reports_dir: str | os.PathLike | None = None,
                     summarise_only: bool = False, save_progress: bool = False, progress: bool = True,
                     scheduler: str = "", threads: int = THREADS_PER_SEED, workers: int = 0,
                     parameters: dict | None = None, log=print) -> pd.DataFrame:
    """Run (or resume) the batch at every seed of the design (`ledger_design`), each a task
    of `dispatch` (`_ledger_seed`), and decide every check of the ledger across the seeds
    (`write_ledger_summary`, rewritten after every seed); returns the across-seed table.
    ``save_progress``: run nothing, `checkpoint` the seeds in progress. ``parameters``: the
    notebooks', part of the design."""
    study = study or f"ledger-{scale}"
    reports = Path(reports_dir) if reports_dir is not None else Path(config.REPORTS_DIR)
    study_dir = reports / study
    # A study already registered is decided by its own rule version; a new one by today's default.
    design = ledger_design(study, scale, seeds, dataset, notebooks, rule=_registered_rule(study_dir),
                           parameters=parameters)
    _check_design(study_dir, design)
    command = (f"{config.cli_command()} study ledger --scale {scale} --study {study} --seeds "
               f"{','.join(str(s) for s in design['seeds'])}"
               + (f" --notebooks {design['notebooks']}" if design["notebooks"] != "all" else "")
               + "".join(f" -p {k} {shlex.quote(json.dumps(v) if not isinstance(v, str) else v)}"
                         for k, v in design.get("parameters", {}).items()))
    if save_progress:
        log(f"checkpointed the run folders of seeds {checkpoint(study_dir, reports) or 'none'} in progress")
        summarise_only = True
    to_run = list(_to_run(design, _recorded(study_dir), summarise_only, "to run the batch", log))
    _restore_checkpoints(study_dir, reports, design, to_run, log)

    def summarise(seed: int) -> str:
        _progress_file(study_dir, design, seed).unlink(missing_ok=True)  # recorded: no longer in progress
        write_ledger_summary(study_dir, command)
        return ""

    _run_seeds(to_run, _ledger_seed, design, reports, summarise, progress=progress, scheduler=scheduler,
               threads=threads, workers=workers, resume=command, log=log)
    return write_ledger_summary(study_dir, command)
