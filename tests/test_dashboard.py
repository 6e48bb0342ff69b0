"""``ltrlib dashboard``: a run's journals in optuna-dashboard, under the notebooks' names
(``03 · Split1 · M1``), with the objective named and a note saying why a study has no
parameter importance; asked over its HTTP API, in process (WSGI) and once from a server
started on loopback."""

import hashlib
import io
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from wsgiref.util import setup_testing_defaults

import pytest

from ltrlib import dashboard

HOLDOUT = {"kind": "holdout", "eval_at": 10}  # notebook 03's `tune`
CV = {"kind": "cv3", "eval_at": 10}  # notebook 05's `tune_cv`


def _journal_with_a_study(path, name, trials, setup=None, pruned=0):
    import optuna

    from ltrlib.train.tuning.storage import study_storage

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(study_name=name, storage=study_storage(path), direction="maximize")
    if setup is not None:
        study.set_user_attr("setup", setup)
    space = {"x": optuna.distributions.FloatDistribution(0, 9), "y": optuna.distributions.FloatDistribution(0, 9)}
    for i in range(trials):
        study.add_trial(optuna.trial.create_trial(params={"x": float(i), "y": float(9 - i) / 2}, value=float(i),
                                                  distributions=space))
    for i in range(pruned):
        study.add_trial(optuna.trial.create_trial(params={"x": 0.5 + i, "y": 1.0}, distributions=space,
                                                  state=optuna.trial.TrialState.PRUNED,
                                                  intermediate_values={10: 0.1}))


def _run(tmp_path):
    """A run of notebooks 03, 05 and 06: M_full with one complete trial and five pruned."""
    run = tmp_path / "r"
    _journal_with_a_study(run / "optuna.journal", "full.M_full", 1, HOLDOUT, pruned=5)
    _journal_with_a_study(run / "optuna.journal", "Split10.M1", 2, HOLDOUT)
    _journal_with_a_study(run / "optuna.journal", "Split2.M1", 3, HOLDOUT)
    _journal_with_a_study(run / "optuna.journal", "Split2.M12S", 3, CV)
    _journal_with_a_study(run / "06_bilambdamart.journal", "06.control.λMART*", 2, {"model": "λMART*", "cutoff": 5})
    return run


def _files(folder):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def _get(app, path):
    environ = {"PATH_INFO": path, "REQUEST_METHOD": "GET", "wsgi.input": io.BytesIO()}
    setup_testing_defaults(environ)
    status = []
    body = b"".join(app(environ, lambda s, headers, exc_info=None: status.append(s)))
    assert status[0].startswith("200"), (path, status, body[:300])
    return json.loads(body)


def test_a_study_is_named_after_its_notebook_split_and_model():
    assert dashboard.study_label("optuna", "Split1.M1", HOLDOUT) == "03 · Split1 · M1"
    assert dashboard.study_label("optuna", "full.M_full", HOLDOUT) == "03 · full · M_full"
    assert dashboard.study_label("optuna", "Split1.M12S", CV) == "05 · Split1 · M12S"
    assert dashboard.study_label("06_bilambdamart", "06.Bi-λMART", {"model": "Bi-λMART"}) == "06 · Bi-λMART"
    assert dashboard.study_label("06_bilambdamart", "06.control.λMART*", {"model": "λMART*"}) == "06 · control · λMART*"
    assert dashboard.study_label("06_bilambdamart", "06.stage1", {"model": "λMART (stage 1)"}) == "06 · stage1"
    assert dashboard.study_label("06_neural_competitors", "06n.GSF(2)", {"model": "GSF(2)"}) == "06 neural · GSF(2)"
    # A journal no notebook is known to write keeps its name.
    assert dashboard.study_label("seed3", "06.λMART", None) == "seed3 · λMART"
    assert dashboard.study_label("optuna", "tuning", None) == "optuna · tuning"


def test_a_studys_objective_is_the_metric_its_tuning_maximised():
    assert dashboard.objective_name(HOLDOUT) == "NDCG@10 (validation)"
    assert dashboard.objective_name(CV) == "NDCG@10 (3-fold CV mean)"
    assert dashboard.objective_name({"model": "λMART", "cutoff": 5}) == "NDCG@5 (validation)"
    assert dashboard.objective_name({"model": "λMART (stage 1)", "eval_at": 20}) == "NDCG@20 (validation)"
    assert dashboard.objective_name({"model": "x"}) is None
    assert dashboard.objective_name(None) is None


def test_the_view_names_studies_and_objectives_and_leaves_the_run_unchanged(tmp_path):
    optuna_dashboard = pytest.importorskip("optuna_dashboard")
    run = _run(tmp_path)
    before = _files(run)
    app = optuna_dashboard.wsgi(dashboard.snapshot(run))
    assert _files(run) == before  # no byte written, no lock or mended copy left beside

    studies = _get(app, "/api/studies")["study_summaries"]
    # By notebook, then split (Split2 before Split10), then model.
    assert [s["study_name"] for s in studies] == [
        "03 · full · M_full", "03 · Split2 · M1", "03 · Split10 · M1", "05 · Split2 · M12S", "06 · control · λMART*"]
    ids = {s["study_name"]: s["study_id"] for s in studies}
    objective = {name: _get(app, f"/api/studies/{i}")["objective_names"] for name, i in ids.items()}
    assert objective == {"03 · full · M_full": ["NDCG@10 (validation)"], "03 · Split2 · M1": ["NDCG@10 (validation)"],
                         "03 · Split10 · M1": ["NDCG@10 (validation)"], "05 · Split2 · M12S": ["NDCG@10 (3-fold CV mean)"],
                         "06 · control · λMART*": ["NDCG@5 (validation)"]}

    full = _get(app, f"/api/studies/{ids['03 · full · M_full']}")
    assert len(full["trials"]) == 6
    note = full["note"]["body"]
    assert "`full.M_full` of the run's `optuna.journal`" in note
    assert "1 complete, 5 pruned" in note
    assert "1 complete trial, importance needs at least 2" in note
    assert _get(app, f"/api/studies/{ids['03 · full · M_full']}/param_importances")["param_importances"] == [[]]

    enough = _get(app, f"/api/studies/{ids['03 · Split2 · M1']}")["note"]["body"]
    assert "importance: computed from the 3 complete trials" in enough
    importances = _get(app, f"/api/studies/{ids['03 · Split2 · M1']}/param_importances")["param_importances"]
    assert {p["name"] for p in importances[0]} == {"x", "y"}


def test_a_journal_being_written_is_read_to_its_last_whole_record_and_not_mended(tmp_path):
    pytest.importorskip("optuna_dashboard")
    run = _run(tmp_path)
    with open(run / "optuna.journal", "ab") as f:
        f.write(b'{"op_code": 4, "worker_id"')  # a notebook's record, half appended
    before = _files(run)
    import optuna

    names = {s.study_name for s in optuna.get_all_study_summaries(dashboard.snapshot(run), include_best_trial=False)}
    assert "03 · full · M_full" in names
    assert _files(run) == before


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_dashboard_serves_every_study_of_a_runs_journals(tmp_path):
    pytest.importorskip("optuna_dashboard")
    run = tmp_path / "r"
    _journal_with_a_study(run / "optuna.journal", "full.M_full", 3, HOLDOUT)
    _journal_with_a_study(run / "06_bilambdamart.journal", "06.Bi-λMART", 2, {"model": "Bi-λMART", "cutoff": 5})

    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "ltrlib", "dashboard", "r", "--port", str(port)],
                              env={**os.environ, "LTRLIB_REPORTS_DIR": str(tmp_path)},
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
        assert [s["study_name"] for s in body["study_summaries"]] == ["03 · full · M_full", "06 · Bi-λMART"]
    finally:
        server.terminate()
        server.wait(timeout=20)


def test_a_folder_without_journals_is_refused_by_name(tmp_path):
    with pytest.raises(ValueError, match="holds no Optuna journal"):
        dashboard.journals(tmp_path)
    with pytest.raises(ValueError, match="is not a run folder"):
        dashboard.journals(tmp_path / "nope")
