"""Shared studies: `ltrlib tune-worker` processes tuning one study in a real PostgreSQL.

A throwaway server is started on 127.0.0.1 (a free port) in a temporary data directory and
stopped at the end of the session. Worker processes are real subprocesses
(``python -m ltrlib tune-worker``), so trials are shared through the database only, as
between machines. Tiny data, 30 trees, a heartbeat every second and a grace period of 3 s
keep the whole file to about a minute. The first tests need no server.
"""

import glob
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import optuna
import pytest
from optuna.trial import TrialState

from ltrlib.cli import main
from ltrlib.config import PROJ_ROOT
from ltrlib.data import load_dataset
from ltrlib.metrics import evaluate
from ltrlib.train import PAPER_TABLE6_MEDIAN, ModelStore, TrainSettings, TuningSettings, fit_tuned, train_ranker
from ltrlib.train.tuning import (
    GRACE_PERIOD,
    HEARTBEAT_INTERVAL,
    database_url,
    describe_storage,
    is_shared,
    study_database,
    study_storage,
)
from ltrlib.clients.workers import client_data

STUDY = "full.M_full"  # the whole tiny collection: every split definition leaves it intact
N_TRIALS = 10
TRAINING = dict(max_trees=30, early_stopping=10, seed=0, num_threads=1)
# Data arguments, as on any machine; the settings only for a worker that starts a study.
DATA_ARGS = ["--scale", "tiny", "--seed", "0", "--num-threads", "1", "--no-progress"]
WORKER_ARGS = [*DATA_ARGS, "--max-trees", "30", "--early-stopping", "10", "--heartbeat", "1",
               "--grace-period", "3"]
INSTALL_HINT = ("install it with `sudo apt-get install postgresql` (Debian/Ubuntu); "
                "`make test` does so itself when run as root")


# --------------------------------------------------------------------------- server


def _postgres_bin() -> Path | None:
    on_path = shutil.which("pg_ctl")
    if on_path:
        return Path(on_path).resolve().parent
    # Debian keeps the server binaries off PATH, one folder per major version.
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"),
                   key=lambda p: int(re.search(r"/(\d+)/bin/", p).group(1)))
    return Path(found[-1]).parent if found else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, port: int):
        self.port = port

    def database(self, name: str) -> str:
        """A new, empty database on the server: its URL."""
        import psycopg2

        conn = psycopg2.connect(host="127.0.0.1", port=self.port, user="ltrlib", dbname="postgres")
        conn.autocommit = True  # CREATE DATABASE cannot run inside a transaction
        with conn.cursor() as cur:
            cur.execute(f'CREATE DATABASE "{name}"')
        conn.close()
        return f"postgresql://ltrlib@127.0.0.1:{self.port}/{name}"


@pytest.fixture(scope="session")
def postgres(tmp_path_factory, request):
    pytest.importorskip("psycopg2", reason="the PostgreSQL driver is missing: pip install psycopg2-binary "
                        "(in ltrlib's dev extras)")
    bindir = _postgres_bin()
    if bindir is None:
        pytest.skip(f"PostgreSQL not found (no pg_ctl on PATH or in /usr/lib/postgresql/*/bin): {INSTALL_HINT}")
    as_user: list[str] = []
    if os.geteuid() == 0:
        # initdb refuses to run as root. The server runs as Debian's postgres user, in a
        # folder of its own: pytest's base temp folder is private to root.
        if shutil.which("runuser") is None:
            pytest.skip("running as root, and no runuser to start PostgreSQL as another user")
        try:
            import pwd

            owner = pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip(f"running as root, and no postgres user to run the server as: {INSTALL_HINT}")
        top = Path(tempfile.mkdtemp(prefix="ltrlib-pg-"))
        os.chown(top, owner.pw_uid, owner.pw_gid)
        as_user = ["runuser", "-u", "postgres", "--"]
    else:
        top = tmp_path_factory.mktemp("postgres")
    data = top / "data"
    port = _free_port()

    def run(*cmd):
        done = subprocess.run([*as_user, *cmd], cwd=top, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, f"{' '.join(cmd)} failed:\n{done.stdout}\n{done.stderr}"

    # Durability off: the data die with the test.
    run(str(bindir / "initdb"), "-D", str(data), "-U", "ltrlib", "--auth=trust", "-E", "UTF8", "--no-sync")
    options = (f"-c listen_addresses=127.0.0.1 -p {port} -k {top} -c fsync=off "
               "-c synchronous_commit=off -c full_page_writes=off")
    run(str(bindir / "pg_ctl"), "-D", str(data), "-l", str(top / "server.log"), "-o", options, "-w", "-t", "60",
        "start")

    def stop():
        subprocess.run([*as_user, str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"],
                       cwd=top, capture_output=True, timeout=60)
        shutil.rmtree(top, ignore_errors=True)

    request.addfinalizer(stop)
    return Server(port)


# --------------------------------------------------------------------------- helpers


def _worker(url: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "ltrlib", "tune-worker", "--storage", url, "--study", STUDY,
                             *args],
                            cwd=PROJ_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish(proc: subprocess.Popen) -> dict:
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, f"worker {proc.pid} exited with {proc.returncode}:\n{err[-3000:]}"
    return json.loads(out.strip().splitlines()[-1])


def _study(url: str) -> optuna.Study:
    return optuna.load_study(study_name=STUDY, storage=optuna.storages.RDBStorage(database_url(url)))


def _worker_pid(trial) -> int:
    return int(trial.user_attrs["worker"].rsplit(":", 1)[1])


@pytest.fixture(scope="module")
def splits():
    return load_dataset("synthetic", scale="tiny", seed=0)


@pytest.fixture(scope="module")
def data(splits):
    return client_data(STUDY, splits)


@pytest.fixture(scope="module")
def two_workers(postgres):
    """One study of N_TRIALS trials run by two workers started together (both race to
    create it); their printed results and process ids."""
    url = postgres.database("shared")
    procs = [_worker(url, *WORKER_ARGS, "--n-trials", str(N_TRIALS)) for _ in range(2)]
    results = [_finish(p) for p in procs]
    return url, results, [p.pid for p in procs]


# --------------------------------------------------------------------------- without a server


def test_postgresql_urls_name_the_installed_driver_and_messages_hide_passwords():
    assert database_url("postgresql://u:secret@db:5432/ltr") == "postgresql+psycopg2://u:secret@db:5432/ltr"
    assert database_url("postgresql+psycopg://u@db/ltr") == "postgresql+psycopg://u@db/ltr"
    assert database_url("sqlite:///a.db") == "sqlite:///a.db"
    shown = describe_storage("postgresql://u:secret@db:5432/ltr")
    assert "secret" not in shown and shown.startswith("postgresql://u:")


def test_heartbeat_settings_are_checked(tmp_path):
    url = f"sqlite:///{tmp_path / 'a.db'}"
    with pytest.raises(ValueError, match=r"grace_period \(3 s\) must exceed heartbeat_interval \(3 s\)"):
        study_storage(url, heartbeat_interval=3, grace_period=3)
    with pytest.raises(ValueError, match="heartbeat_interval must be a positive"):
        study_storage(url, heartbeat_interval=0)


def test_a_process_follows_the_heartbeat_the_study_recorded(tmp_path):
    url = f"sqlite:///{tmp_path / 'a.db'}"
    assert is_shared(study_storage(url)) and not is_shared(optuna.storages.RDBStorage(url))
    fresh = study_database(url, "s")  # no such study yet: the defaults
    assert (fresh.get_heartbeat_interval(), fresh.grace_period) == (HEARTBEAT_INTERVAL, GRACE_PERIOD)
    optuna.create_study(study_name="s", storage=url).set_user_attr(
        "setup", {"heartbeat": {"interval": 1, "grace_period": 3}})
    followed = study_database(url, "s")
    assert (followed.get_heartbeat_interval(), followed.grace_period) == (1, 3)
    given = study_database(url, "s", heartbeat_interval=2, grace_period=5)
    assert (given.get_heartbeat_interval(), given.grace_period) == (2, 5)


def test_study_names_map_to_notebook_03s_models(splits):
    from ltrlib.noniid.splits import initial_split, paper_splits

    train, vali = client_data("full.M_full", splits)
    assert (train, vali) == (splits.train, splits.vali)
    ns = paper_splits(splits, categories=(11, 11, 14), seed=0)
    train, vali = client_data("Split3.M2", splits)
    assert np.array_equal(train.query_ids, ns["Split3"].clients[1].train.query_ids)
    assert np.array_equal(vali.query_ids, ns["Split3"].clients[1].vali.query_ids)
    train, _ = client_data("initial-c11.M1", splits)
    assert np.array_equal(train.query_ids, initial_split(splits, 11, seed=0).clients[0].train.query_ids)
    for bad in ("Split1.M_full", "full.M1", "Split9.M1", "Split1.M3", "M1"):
        with pytest.raises(ValueError, match="notebook 03|unknown split"):
            client_data(bad, splits)


# --------------------------------------------------------------------------- with a server


@pytest.mark.slow
def test_two_workers_share_the_trials_and_run_none_twice(two_workers):
    url, results, pids = two_workers
    trials = _study(url).get_trials(deepcopy=False)
    finished = [t for t in trials if t.state in (TrialState.COMPLETE, TrialState.PRUNED)]
    assert len(finished) == N_TRIALS
    assert not [t for t in trials if t.state in (TrialState.RUNNING, TrialState.WAITING)]
    # Each finished trial was run by exactly one of the two workers, and both took part.
    by_worker = {pid: [t.number for t in finished if _worker_pid(t) == pid] for pid in pids}
    assert all(by_worker.values()), by_worker
    assert sum(map(len, by_worker.values())) == N_TRIALS
    assert [r["ran_here"] for r in results] == [len(by_worker[pid]) for pid in pids]
    # The first point was queued once (by whichever worker created the study), and the two
    # samplers proposed different points.
    points = [tuple(sorted(t.params.items())) for t in finished]
    assert len(set(points)) == N_TRIALS
    start = [t for t in finished if t.params == PAPER_TABLE6_MEDIAN]
    assert len(start) == 1
    # It completed although other trials may have completed before it: the best is never
    # worse than the start.
    assert start[0].state == TrialState.COMPLETE
    assert results[0]["best_value"] >= start[0].value
    # Each worker waited for the other's last trials: both report the whole study.
    assert results[0] == {**results[1], "ran_here": results[0]["ran_here"]}
    assert results[0]["n_trials"] == N_TRIALS


@pytest.mark.slow
def test_best_matches_one_process_over_the_same_trials(two_workers, data, tmp_path):
    url, results, _ = two_workers
    train, vali = data
    completed = [t for t in _study(url).get_trials(deepcopy=False) if t.state == TrialState.COMPLETE]
    assert completed
    # The same points trained here, in one process: the same values (training is
    # deterministic), hence the same best.
    values = {}
    for t in completed:
        ranker = train_ranker(train, vali, t.params, **TRAINING)
        values[t.number] = evaluate(vali, ranker.score(vali), metrics="ndcg@10")["ndcg@10"]
        assert values[t.number] == pytest.approx(t.value, rel=1e-12, abs=1e-12), t.number
    best = max(values, key=lambda n: (values[n], -n))
    assert results[0]["best_trial"] == best
    assert results[0]["best_value"] == pytest.approx(values[best], rel=1e-12)
    assert results[0]["best_params"] == next(t.params for t in completed if t.number == best)
    # Notebook 03's call (its storage parameter) joins the finished study with the same
    # setup and the study's heartbeat, runs nothing, and keeps the best trial's model.
    ranker, joined = fit_tuned(train, vali, store=ModelStore("run", root=tmp_path), split="full",
                               name="M_full", settings=TrainSettings(**TRAINING),
                               tuning=TuningSettings(n_trials=N_TRIALS, storage=url, first_params=PAPER_TABLE6_MEDIAN,
                                                     progress=False))
    assert joined.n_new == 0
    assert (joined.best_trial, joined.best_value) == (best, results[0]["best_value"])
    assert evaluate(vali, ranker.score(vali), metrics="ndcg@10")["ndcg@10"] == pytest.approx(values[best])


@pytest.mark.slow
def test_worker_with_other_settings_or_data_is_refused(two_workers, capsys):
    url, _, _ = two_workers
    before = len(_study(url).trials)
    # The one setting given differs from the study's; every other one is taken from it.
    assert main(["tune-worker", "--storage", url, "--study", STUDY, *DATA_ARGS, "--max-trees", "40"]) == 1
    err = capsys.readouterr().err
    assert f"study '{STUDY}'" in err and "differs in ['max_trees']: stored [30], now [40]" in err
    assert main(["tune-worker", "--storage", url, "--study", STUDY, *DATA_ARGS, "--seed", "1"]) == 1
    assert "differs in ['seed', 'train', 'vali']" in capsys.readouterr().err
    # Nothing to join and no trial count to start a study with.
    assert main(["tune-worker", "--storage", url, "--study", "Split2.M1", *DATA_ARGS]) == 1
    assert "'Split2.M1' is not in" in capsys.readouterr().err
    assert len(_study(url).trials) == before  # the refused workers started no trial


@pytest.mark.slow
def test_worker_killed_mid_trial_leaves_the_study_usable(postgres):
    url = postgres.database("killed")
    n_trials = 4
    first = _worker(url, *WORKER_ARGS, "--n-trials", str(n_trials))
    # The second worker is given the data only and waits for the study to appear, as on
    # another machine beside a notebook: the trial count, the training settings and the
    # heartbeat come from the study.
    second = _worker(url, *DATA_ARGS, "--wait", "60")
    deadline = time.monotonic() + 60
    running = []
    while not running:  # a trial of the first worker that is training: all parameters drawn
        assert time.monotonic() < deadline, "the first worker never started training a trial"
        assert first.poll() is None, first.communicate()[1][-3000:]
        try:
            running = [t for t in _study(url).get_trials(deepcopy=False, states=(TrialState.RUNNING,))
                       if len(t.params) == 4 and _worker_pid(t) == first.pid]
        except KeyError:  # not created yet
            pass
        time.sleep(0.05)
    first.send_signal(signal.SIGKILL)
    first.communicate()
    killed = _study(url).trials[running[0].number]
    assert killed.state == TrialState.RUNNING  # left behind: nobody beats for it any more

    # The second worker fails the silent trial once its grace period is over, runs its
    # point again, and completes the study.
    result = _finish(second)
    trials = _study(url).get_trials(deepcopy=False)
    assert trials[killed.number].state == TrialState.FAIL
    finished = [t for t in trials if t.state in (TrialState.COMPLETE, TrialState.PRUNED)]
    assert len(finished) == n_trials
    retry = [t for t in finished if t.system_attrs.get("failed_trial") == killed.number]
    assert len(retry) == 1 and retry[0].params == killed.params and _worker_pid(retry[0]) == second.pid
    assert {_worker_pid(t) for t in finished} <= {first.pid, second.pid}
    assert result["n_trials"] == n_trials and result["ran_here"] >= 1
    assert not [t for t in trials if t.state in (TrialState.RUNNING, TrialState.WAITING)]
