"""Processes and threads: the environment that limits a process's threads (`thread_env`),
joblib workers that share a budget and die with their parent (`worker_processes`,
`end_with_parent`), workers that keep to one core each (`one_core_workers`, `pin_to_one_core`),
kernels that end with the thread that starts them (`ends_with_this_thread`), and jobs that
keep to the background, each session they start included (`background`, `lower_session`).
"""

from __future__ import annotations

import os
import signal
import tempfile
from collections.abc import Mapping
from pathlib import Path

__all__ = ["BACKGROUND_ENV", "background", "end_with_parent", "ends_with_this_thread", "lower_session",
           "one_core_workers", "pin_to_one_core", "restore_environment", "thread_env", "worker_processes"]

#: Set to a nice value in a background job's environment (`background`): each of its
#: processes that starts a session of its own (a study's seed batch, a notebook's kernel)
#: lowers that session's autogroup to it (`lower_session`).
BACKGROUND_ENV = "LTRLIB_BACKGROUND_NICE"


def thread_env(threads: int) -> dict[str, str]:
    """The environment that limits a process (a notebook's kernel, a Dask worker) to
    ``threads`` threads: OpenMP for LightGBM and XGBoost, the BLAS libraries, numba."""
    return {name: str(int(threads)) for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                                 "NUMBA_NUM_THREADS")}


def restore_environment(previous: Mapping[str, str | None]) -> None:
    """Put back the environment variables whose values ``previous`` recorded before they were
    set (None: the variable was not set, and is removed)."""
    for name, value in previous.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def worker_processes(n_jobs: int):
    """joblib's configuration for ``n_jobs`` loky worker processes that share this process's
    thread budget (`thread_env`'s count where a study set one, else the cores): each
    worker's OpenMP, BLAS and numba get budget // n_jobs threads.

    joblib makes that split itself only where the parent's environment names no count;
    under `thread_env` every worker took the whole budget, and FOLTR's neural runs (BLAS)
    ran 3-5x slower in the ledger study than in `make reproduce`, with the same results.
    Use as ``with worker_processes(n): Parallel(n_jobs=n)(...)``, naming no backend in
    ``Parallel`` (one named there drops the limit)."""
    from joblib import cpu_count, parallel_config

    budget = int(os.environ.get("OMP_NUM_THREADS") or 0) or cpu_count()
    return parallel_config(backend="loky", inner_max_num_threads=max(1, budget // max(1, int(n_jobs))),
                           initializer=end_with_parent, initargs=(os.getpid(),))


def one_core_workers(n_workers: int, env: Mapping[str, str] | None = None):
    """A loky executor of ``n_workers`` processes (one too: joblib runs one job in its
    caller), each kept to one core of its own (`pin_to_one_core`) and to one thread
    (`thread_env`), dying with this process (`end_with_parent`). What a worker computes is
    then what a one-core machine computes, wherever it runs and beside whatever else (JAX's
    CPU programs round differently with the cores and threads they see). ``env``: more
    variables set in each worker before it starts (XLA's flags).

    A pool of its own, not loky's reusable one, which joblib's loky backend shares and
    cannot take back from another owner. Use it as a context manager (the workers end on
    leaving it); on an error or an interrupt, ``shutdown(kill_workers=True)`` stops what
    still runs."""
    from joblib.externals.loky import ProcessPoolExecutor

    return ProcessPoolExecutor(max_workers=max(1, int(n_workers)), initializer=_pinned_worker,
                               initargs=(os.getpid(),), env={**thread_env(1), **dict(env or {})})


def _pinned_worker(parent: int) -> None:
    end_with_parent(parent)
    pin_to_one_core()


#: This process's claim on its core (`pin_to_one_core`): an open file holding a lock that
#: the kernel releases when the process ends, however it ends.
_core_claim: list[int] = []


#: How many processes may claim one core before more of them share cores by process id
#: (`pin_to_one_core`).
CLAIMS_A_CORE = 16


def pin_to_one_core(lock_dir: str | os.PathLike | None = None) -> int:
    """Keep this process to one of the cores it may run on, and return it: the core with
    the fewest processes pinned here, the lowest on a tie. A claim is an exclusive `flock`
    on ``<lock_dir>/<core>`` for a core's first process, ``<core>.<n>`` for its n-th,
    released by the kernel when the holder ends, so a killed worker leaves nothing stale.
    Past `CLAIMS_A_CORE` a core, the process takes one by its id, unclaimed. Either way it
    sees one core, which is what its numbers may depend on; sharing costs only time. A
    background study's workers (nice 19) holding every core's first claim thus leave a
    foreground run's workers on different cores, not on one. ``lock_dir``: shared by every
    process on the machine (default ``<tmp>/ltrlib-cores-<uid>``), so that seeds side by
    side spread too."""
    allowed = sorted(os.sched_getaffinity(0))
    folder = Path(lock_dir) if lock_dir is not None else Path(tempfile.gettempdir()) / f"ltrlib-cores-{os.getuid()}"
    folder.mkdir(parents=True, exist_ok=True)
    while _core_claim:  # pinned before (a reused worker): let that core go first
        os.close(_core_claim.pop())
    chosen = _claim_a_core(folder, allowed)
    if chosen is None:
        chosen = allowed[os.getpid() % len(allowed)]
    os.sched_setaffinity(0, {chosen})
    return chosen


def _claim_a_core(folder: Path, allowed: list[int]) -> int | None:
    """The first core of ``allowed`` whose n-th claim in ``folder`` is free, for the
    smallest such n up to `CLAIMS_A_CORE`, holding that claim in `_core_claim`; None when
    every claim is taken."""
    import fcntl

    for n in range(1, CLAIMS_A_CORE + 1):
        for core in allowed:
            fd = os.open(folder / (str(core) if n == 1 else f"{core}.{n}"), os.O_CREAT | os.O_RDWR, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            _core_claim.append(fd)
            return core
    return None


def _parent_death_signal():
    """Linux's prctl(PR_SET_PDEATHSIG, signum) as a function of ``signum``; None elsewhere."""
    import ctypes

    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # no prctl: not Linux
        return None
    PR_SET_PDEATHSIG = 1
    return lambda signum: prctl(PR_SET_PDEATHSIG, int(signum))


def end_with_parent(parent: int, signum: int = signal.SIGKILL) -> None:
    """Make this process (a loky worker, `worker_processes`) die when its parent ``parent``
    does, however it dies: Linux sends it ``signum`` (SIGKILL; a study's batch takes SIGINT,
    to stop as a batch does on Ctrl-C).

    loky's workers outlive a parent killed with SIGKILL (a kernel killed, or a batch or study
    killed, whose kernel then exits): each held 400-470 MB, with loky's resource tracker,
    under PID 1 for minutes. Linux's parent-death signal ends them at once, even while they
    hold the GIL in compiled code, where a watchdog thread could not run. It is sent when
    the *thread* that started the worker ends; loky starts workers from the thread that
    first submits work (a notebook's main thread) or, replacing a lost one, from its own
    manager thread, which lives as long as the workers. Elsewhere than Linux, workers end
    as loky ends them."""
    arm = _parent_death_signal()
    if arm is None:
        return
    arm(signum)
    if os.getppid() != parent:  # the parent died before the signal was armed
        os._exit(1)


def ends_with_this_thread(signum: int = signal.SIGKILL):
    """A ``preexec_fn`` for `subprocess.Popen`: the child gets ``signum`` when the thread
    that starts it ends, with its process or not (None where that cannot be armed).

    For notebook kernels (`ltrlib.runner`): ipykernel ends itself when its parent changes,
    but only once it has started polling for that; a batch stopped while its kernel was
    still starting (a study's Ctrl-C on a loaded machine) left the kernel running, in CI
    under a reaper that is not PID 1, where ipykernel's other test (parent is PID 1) never
    fires. The thread that starts a kernel runs its notebook, and ends after the kernel is
    shut down. prctl is looked up here, before the fork: the child only calls it. A kernel
    starts a session of its own; in a background job the child lowers it (`lower_session`)."""
    arm = _parent_death_signal()
    if arm is None:
        return None
    parent = os.getpid()

    def preexec() -> None:
        arm(signum)
        if os.getppid() != parent:  # the starting thread's process died before it was armed
            os._exit(1)
        lower_session()  # a kernel starts a session of its own: a background job's keeps low

    return preexec


def background(nice: int = 19) -> bool:
    """Make this process, and every process it starts, a background job: nice ``nice``, and
    on Linux its session's autogroup as well (`lower_session`), as every session its
    children start will be (`BACKGROUND_ENV`). Returns whether the autogroup was lowered.

    With ``sched_autogroup`` (most Linux desktops and many VMs) the cores are shared between
    sessions first and by nice only within one, and a study's seed batch and each notebook's
    kernel start sessions of their own, so nice alone left a study at nice 19 half the cores
    beside another job (docs/studies.md, "Two studies on one machine")."""
    os.nice(max(nice - os.nice(0), 0))
    os.environ[BACKGROUND_ENV] = str(nice)
    return lower_session()


def lower_session() -> bool:
    """In a background job (`BACKGROUND_ENV` set), give this process's session autogroup
    the job's nice value; False where there is none to lower (not a background job, not
    Linux, no autogroups) or it may not be lowered. Safe in a ``preexec_fn``: it opens and
    writes one file."""
    value = os.environ.get(BACKGROUND_ENV)
    if not value:
        return False
    try:
        with open("/proc/self/autogroup", "w") as f:
            f.write(value)
    except OSError:
        return False
    return True
