"""Processes and threads: the environment that limits a process's threads (`thread_env`),
joblib workers that share a budget and die with their parent (`worker_processes`,
`end_with_parent`), and kernels that end with the thread that starts them
(`ends_with_this_thread`).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Mapping

__all__ = ["end_with_parent", "ends_with_this_thread", "restore_environment", "thread_env", "worker_processes"]


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
    shut down. prctl is looked up here, before the fork: the child only calls it."""
    arm = _parent_death_signal()
    if arm is None:
        return None
    parent = os.getpid()

    def preexec() -> None:
        arm(signum)
        if os.getppid() != parent:  # the starting thread's process died before it was armed
            os._exit(1)

    return preexec
