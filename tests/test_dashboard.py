"""``ltrlib dashboard``: optuna-dashboard started on loopback over a run's journals, asked for
its study list over HTTP."""

import json
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from ltrlib import dashboard


def _journal_with_a_study(path, name, trials):
    import optuna

    from ltrlib.train.tuning.storage import study_storage

    study = optuna.create_study(study_name=name, storage=study_storage(path), direction="maximize")
    for i in range(trials):
        study.add_trial(optuna.trial.create_trial(params={"x": float(i)}, value=float(i),
                                                  distributions={"x": optuna.distributions.FloatDistribution(0, 9)}))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_dashboard_serves_every_study_of_a_runs_journals(tmp_path):
    pytest.importorskip("optuna_dashboard")
    run = tmp_path / "r"
    _journal_with_a_study(run / "optuna.journal", "full.M_full", 3)
    _journal_with_a_study(run / "06_bilambdamart.journal", "06.Bi-λMART", 2)
    memory = dashboard.snapshot(run)
    import optuna

    names = {s.study_name: s.n_trials for s in optuna.get_all_study_summaries(memory)}
    assert names == {"optuna/full.M_full": 3, "06_bilambdamart/06.Bi-λMART": 2}

    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "ltrlib", "dashboard", "r", "--port", str(port)],
                              env={**__import__("os").environ, "LTRLIB_REPORTS_DIR": str(tmp_path)},
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline, body = time.monotonic() + 60, None
        while time.monotonic() < deadline and server.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/studies", timeout=2) as r:
                    body = json.loads(r.read())
                break
            except OSError:
                time.sleep(0.5)
        assert body is not None, server.stdout.read().decode() if server.poll() is not None else "no answer"
        assert {s["study_name"] for s in body["study_summaries"]} == set(names)
    finally:
        server.terminate()
        server.wait(timeout=20)


def test_a_folder_without_journals_is_refused_by_name(tmp_path):
    with pytest.raises(ValueError, match="holds no Optuna journal"):
        dashboard.journals(tmp_path)
    with pytest.raises(ValueError, match="is not a run folder"):
        dashboard.journals(tmp_path / "nope")
