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


AUTOGROUP = "/proc/self/autogroup"


def _in_a_new_session(code: str, **env) -> list[str]:
    """``code``'s printed lines, run by this interpreter in a session of its own (as a
    study's batch and a kernel are), ``env`` added to its environment."""
    import os
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", code], start_new_session=True, capture_output=True, text=True,
                         env={**os.environ, **env}, check=True)
    return out.stdout.splitlines()


def test_a_background_job_lowers_its_session_and_every_session_its_batches_and_kernels_start(monkeypatch):
    """With autogroups, nice alone left a study at nice 19 half the cores (docs/studies.md):
    `background` lowers its own session, and a session a background job starts is lowered
    where the study starts one (its seed's batch, `lower_session`) or the runner does (a
    kernel, `ends_with_this_thread`'s preexec); outside a background job nothing is."""
    import os
    import subprocess

    import pytest

    if not os.path.exists(AUTOGROUP):
        pytest.skip(f"{AUTOGROUP} is missing: no autogroups on this kernel, and nice alone is enough")
    read = f"print(open({AUTOGROUP!r}).read().split()[-1])"
    lowered = _in_a_new_session(f"from ltrlib import processes; print(processes.lower_session()); {read}",
                                **{processes.BACKGROUND_ENV: "19"})
    if lowered[0] == "False":
        pytest.skip(f"{AUTOGROUP} cannot be written here (a container without the right): nothing to test")
    assert lowered == ["True", "19"]
    assert _in_a_new_session(f"from ltrlib import processes; print(processes.lower_session()); {read}") == \
        ["False", "0"]
    started = ("import os; from ltrlib import processes; print(processes.background()); print(os.nice(0)); "
               f"print(os.environ[processes.BACKGROUND_ENV]); {read}")
    assert _in_a_new_session(started) == ["True", "19", "19", "19"]
    # A kernel's preexec, in a background job: the kernel's new session is lowered before it runs.
    monkeypatch.setenv(processes.BACKGROUND_ENV, "19")
    kernel = subprocess.run(["cat", AUTOGROUP], start_new_session=True, preexec_fn=processes.ends_with_this_thread(),
                            capture_output=True, text=True, check=True)
    assert kernel.stdout.split()[-1] == "19"


def test_the_study_command_makes_itself_a_background_job_when_asked(tmp_path, monkeypatch, capsys):
    from ltrlib import cli, config
    from ltrlib.study_record import StudyDesign

    StudyDesign({"study": "S", "profile": "ledger", "dataset": "synthetic", "scale": "tiny", "seeds": [1],
                 "notebooks": "all"}).write(tmp_path / "S")
    monkeypatch.setattr(config, "REPORTS_DIR", tmp_path)
    asked = []
    monkeypatch.setattr(processes, "background", lambda: asked.append(True) or False)
    assert cli.main(["study", "ledger", "--study", "S", "--status"]) == 0 and asked == []
    assert cli.main(["study", "ledger", "--study", "S", "--status", "--background"]) == 0 and asked == [True]
    assert "the sessions it starts are not lowered here" in capsys.readouterr().err
