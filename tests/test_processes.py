"""ltrlib.processes: joblib workers that share a study's thread budget."""

from ltrlib import processes


def _omp_threads(_):
    import os

    return os.environ.get("OMP_NUM_THREADS")


def test_worker_processes_share_the_thread_budget_a_study_set(monkeypatch):
    """Under a study's thread limit (OMP_NUM_THREADS=2), two loky workers get one thread
    each, as joblib gives them where no limit is set; without the configuration each took
    the whole budget (FOLTR's neural runs then ran 3-5x slower)."""
    from joblib import Parallel, delayed

    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    assert set(Parallel(n_jobs=2, backend="loky")(delayed(_omp_threads)(i) for i in range(2))) == {"2"}
    with processes.worker_processes(2):
        assert set(Parallel(n_jobs=2)(delayed(_omp_threads)(i) for i in range(2))) == {"1"}
    monkeypatch.setenv("OMP_NUM_THREADS", "4")
    with processes.worker_processes(3):
        assert set(Parallel(n_jobs=3)(delayed(_omp_threads)(i) for i in range(3))) == {"1"}
    with processes.worker_processes(1):
        assert set(Parallel(n_jobs=2)(delayed(_omp_threads)(i) for i in range(2))) == {"4"}


def _where(pause):
    import os
    import time

    time.sleep(pause)  # both workers hold their cores at once
    return os.getpid(), sorted(os.sched_getaffinity(0)), os.environ.get("XLA_FLAGS"), os.environ.get("OMP_NUM_THREADS")


def test_one_core_workers_each_keep_to_a_core_of_their_own(tmp_path, monkeypatch):
    """`one_core_workers`: every worker sees exactly one core and one thread, two workers
    side by side take different cores where there are two, even when another process (a
    background study's worker) holds every core's first claim, and ``env`` is set in each."""
    import fcntl
    import os

    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    cores = sorted(os.sched_getaffinity(0))
    locks = tmp_path / f"ltrlib-cores-{os.getuid()}"  # the workers' default under their TMPDIR
    locks.mkdir()
    held = [os.open(locks / str(core), os.O_CREAT | os.O_RDWR) for core in cores]
    for fd in held:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    try:
        env = {"XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false", "TMPDIR": str(tmp_path)}
        with processes.one_core_workers(2, env=env) as pool:
            seen = [call.result() for call in [pool.submit(_where, 1.0) for _ in range(2)]]
    finally:
        for fd in held:
            os.close(fd)
    assert all(len(where) == 1 for _, where, _, _ in seen)
    assert {flags for _, _, flags, _ in seen} == {"--xla_cpu_multi_thread_eigen=false"}
    assert {threads for _, _, _, threads in seen} == {"1"}
    if len(cores) >= 2 and len({pid for pid, *_ in seen}) == 2:
        assert seen[0][1] != seen[1][1]
    assert {f"{core}.2" for _, (core,), _, _ in seen} <= {p.name for p in locks.iterdir()}  # second claims


def _claim(lock_dir, queue):
    queue.put(processes.pin_to_one_core(lock_dir))
    queue.get()  # hold the core until told


def test_a_core_is_claimed_until_its_holder_ends_however_it_ends(tmp_path):
    """A second process takes another core while the first holds one, and the first's core
    is free again once it is killed: the claim is a lock the kernel drops, not a file left."""
    import multiprocessing
    import os

    import pytest

    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        pytest.skip(f"needs 2 cores to choose between; this process may run on {cores}")
    ctx = multiprocessing.get_context("spawn")
    first_q, second_q = ctx.Queue(), ctx.Queue()
    first = ctx.Process(target=_claim, args=(tmp_path, first_q))
    first.start()
    held = first_q.get(timeout=60)
    second = ctx.Process(target=_claim, args=(tmp_path, second_q))
    second.start()
    assert second_q.get(timeout=60) != held
    second_q.put("go")
    second.join(60)
    first.kill()
    first.join(60)
    try:
        assert processes.pin_to_one_core(tmp_path) == cores[0]  # the first core, free again
    finally:  # this test process gets its cores back, and lets its claim go
        os.sched_setaffinity(0, cores)
        while processes._core_claim:
            os.close(processes._core_claim.pop())
