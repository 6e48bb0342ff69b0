"""A study's seeds as tasks on a Dask cluster, and each seed's batch as a process the study
can stop.

`dispatch` runs seeds on a `LocalCluster` (`local_cluster`: one worker process per
`THREADS_PER_SEED` cores, each worker's kernels limited to that many threads) or on the
cluster at a scheduler's address, and records each as it finishes (`_seed_task`,
`ltrlib.studies.records._record`). A seed's batch (`ltrlib.runner.run_all`) runs in a
process of its own (`_batch`), so that Ctrl-C or SIGTERM stops the study as it stops a batch
(`SeedInterrupted`, `StudyInterrupted`). docs/studies.md tells how to use a cluster.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Sequence

from ltrlib import processes
from ltrlib.atomic import atomic_write_text
from ltrlib.studies.records import _record

__all__ = ["QUIET_DASK", "STOP_GRACE", "THREADS_PER_SEED", "SeedInterrupted", "StudyInterrupted", "dispatch",
           "local_cluster"]


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
#: with it (`ltrlib.processes.ends_with_this_thread`), and the kernel's workers with the kernel
#: (`ltrlib.processes.end_with_parent`).
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
            [sys.executable, "-c", "import sys; from ltrlib.studies.cluster import _batch_process; "
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
    processes.end_with_parent(int(parent), signal.SIGINT)
    processes.lower_session()  # a session of its own: a background study's keeps low
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


#: Dask settings of a study's `LocalCluster`: its scheduler and workers wake about ten times
#: a second instead of about two hundred. A seed is one task that waits hours for its batch,
#: and Dask's defaults for interactive work (a 20 ms event-loop tick in the scheduler and in
#: each worker, a 100 ms memory monitor, a 10 ms statistical profiler, a 500 ms system
#: monitor) had the study's own process take 9-13 % of a core the whole time (measured on the
#: scale arm's, 2026-11-30), taken from the notebooks on a 2-core machine. The profiler is
#: off: nothing here reads it. `bench/bench_study_idle.py` measures both.
QUIET_DASK = {"distributed.admin.tick.interval": "1s", "distributed.admin.system-monitor.interval": "5s",
              "distributed.worker.memory.monitor-interval": "1s", "distributed.worker.profile.enabled": False}


def local_cluster(workers: int, threads: int):
    """The `LocalCluster` a study runs its seeds on: ``workers`` processes of ``threads``
    threads each (`ltrlib.processes.thread_env`), or, for one worker, a worker thread in this
    process. Its scheduler never drops a silent worker: a seed is one task of up to an
    hour, and a machine suspended, or a study stopped (SIGSTOP) and continued, past Dask's
    worker TTL (5 minutes) had the scheduler drop the worker whose seed was still running;
    the seed then recorded itself, but the study waited forever for a result that no
    worker would report, and ran no other seed. Its scheduler and workers keep `QUIET_DASK`'s
    slower housekeeping."""
    import dask
    from dask.distributed import LocalCluster

    # Logs at CRITICAL only: the study reports a seed's failure or interruption in one line,
    # which Dask's worker would repeat with a traceback of the study's own code. No dashboard,
    # and the scheduler's bare HTTP server on any free port: on its default, 8787, a second
    # study on the machine (docs/studies.md, "Two studies on one machine") warned that the
    # port was taken.
    quiet = dict(dashboard_address=":0", scheduler_kwargs={"dashboard": False}, silence_logs=50)
    with dask.config.set({"distributed.scheduler.worker-ttl": None, **QUIET_DASK}):
        if workers > 1:
            with _interrupts_ignored():  # the worker processes inherit it
                return LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                    env=processes.thread_env(threads), **quiet)
        return LocalCluster(n_workers=1, threads_per_worker=1, processes=False, **quiet)


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
    (`ltrlib.processes.thread_env`). ``on_done(seed, result)`` runs here as each seed
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
            previous = {k: os.environ.get(k) for k in processes.thread_env(threads)}
            os.environ.update(processes.thread_env(threads))
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
        processes.restore_environment(previous or {})
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
