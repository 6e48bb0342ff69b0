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
