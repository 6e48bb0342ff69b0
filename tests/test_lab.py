"""ltrlib.lab without a browser: what `install` writes, and the session `ltrlib lab` starts."""

import json
import sys

import pytest

from ltrlib import config, lab, sessions


def test_install_writes_the_kernelspec_and_merges_the_lab_settings(tmp_path):
    settings = tmp_path / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
    settings.parent.mkdir(parents=True)
    mine = {"@jupyterlab/apputils-extension:themes": {"theme": "JupyterLab Dark"},
            "@jupyterlab/docmanager-extension:plugin": {"defaultViewers": {"json": "Editor"}}}
    settings.write_text(json.dumps(mine))
    assert lab.install(tmp_path) == settings
    spec = json.loads((tmp_path / "share" / "jupyter" / "kernels" / lab.KERNEL_NAME / "kernel.json").read_text())
    # Jupytext picks the kernel whose interpreter is the server's: it must be a full path.
    assert spec["argv"][0] == sys.executable and spec["display_name"] == "Python (ltrlib)"
    merged = json.loads(settings.read_text())
    assert merged["@jupyterlab/apputils-extension:themes"] == {"theme": "JupyterLab Dark"}  # kept
    assert merged["@jupyterlab/docmanager-extension:plugin"]["defaultViewers"] == {
        "json": "Editor", "python": "Jupytext Notebook", "markdown": "Markdown Preview"}
    lab.install(tmp_path)  # idempotent
    assert json.loads(settings.read_text()) == merged


def test_broken_settings_are_named_not_overwritten(tmp_path):
    settings = tmp_path / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
    settings.parent.mkdir(parents=True)
    settings.write_text("{not json")
    with pytest.raises(ValueError, match="overrides.json is not valid JSON"):
        lab.install(tmp_path)
    assert settings.read_text() == "{not json"


def test_environment_sets_the_session_and_command_roots_the_server(monkeypatch):
    monkeypatch.setenv(sessions.BATCH_ENV, "1")
    env = lab.environment(scale="tiny", seed=2, run_id="", base={"LTRLIB_RUN_ID": "stale", sessions.BATCH_ENV: "1"})
    assert env["LTRLIB_SCALE"] == "tiny" and env["LTRLIB_SEED"] == "2" and env["LTRLIB_DATASET"] == "synthetic"
    assert "LTRLIB_RUN_ID" not in env and sessions.BATCH_ENV not in env
    with pytest.raises(ValueError, match="unknown scale 'huge'"):
        lab.environment(scale="huge")
    argv = lab.command(root="/x", port=8899, token="t", open_browser=False)
    assert "--ServerApp.root_dir=/x" in argv and "--ServerApp.port=8899" in argv
    assert "--IdentityProvider.token=t" in argv and "--no-browser" in argv
    assert lab.command()[3] == f"--ServerApp.root_dir={config.PROJ_ROOT}"


def test_jupyter_options_after_a_double_dash_reach_jupyter_lab(monkeypatch):
    from ltrlib import cli

    called = {}
    monkeypatch.setattr(lab, "main", lambda **kw: called.update(kw) or 0)
    assert cli.main(["lab", "--scale", "tiny", "--", "--ServerApp.ip=0.0.0.0", "--IdentityProvider.token=s"]) == 0
    assert called["extra"] == ["--ServerApp.ip=0.0.0.0", "--IdentityProvider.token=s"] and called["scale"] == "tiny"
    argv = lab.command(port=8890, extra=called["extra"])
    assert argv[-2:] == called["extra"]  # last: Jupyter takes the last value of an option, so they win


def _batch_run(reports, run_id="synthetic-tiny-seed0", scale="tiny"):
    """A batch run's folder as `ltrlib run` leaves it: its record, its report, and what
    later notebooks read (models, a journal, tables)."""
    batch = reports / run_id
    for name, text in {"run.json": json.dumps({"run_id": run_id, "params": {
                           "dataset": "synthetic", "data_dir": "", "scale": scale, "seed": 0}, "notebooks": {}}),
                       "index.html": "<html>", "index.md": "# run", "pages/04_linear_merge.md": "page",
                       "notebooks/04_linear_merge.ipynb": "{}", "fidelity.md": "ledger", ".run.lock": "1\n",
                       "provenance.json": "{}", "models/Split1/M1.txt": "tree", "05_stacking.journal": "trial 0\n",
                       "tables/04_linear_merge/table4_linear.csv": "batch", "metrics.json": "{}"}.items():
        (batch / name).parent.mkdir(parents=True, exist_ok=True)
        (batch / name).write_text(text)
    return batch


def test_a_session_on_a_batch_run_works_in_a_run_of_its_own(tmp_path):
    batch = _batch_run(tmp_path)
    assert lab.session_run("", scale="tiny", reports_dir=tmp_path) == ("interactive-synthetic-tiny-seed0", None)
    assert lab.session_run("mine", reports_dir=tmp_path) == ("mine", None)  # not a batch run: as given
    assert lab.session_run(batch.name, reports_dir=tmp_path) == (batch.name + "-lab", batch)
    # The lab run has no run.json, so naming it again gives it back, not a "-lab-lab".
    assert lab.seed_lab_run(batch, tmp_path / (batch.name + "-lab")) == 5
    assert lab.session_run(batch.name + "-lab", reports_dir=tmp_path) == (batch.name + "-lab", None)


def test_the_lab_run_copies_what_notebooks_read_and_never_writes_the_batch(tmp_path):
    import os

    batch = _batch_run(tmp_path)
    before = {p: p.read_bytes() for p in batch.rglob("*") if p.is_file()}
    mine = tmp_path / "mine-lab"
    assert lab.seed_lab_run(batch, mine) == 5
    assert sorted(str(p.relative_to(mine)) for p in mine.rglob("*") if p.is_file()) == [
        "05_stacking.journal", "metrics.json", "models/Split1/M1.txt", "provenance.json",
        "tables/04_linear_merge/table4_linear.csv"]  # not the batch's record, report or lock
    # The session's work: a table recomputed, a trial added to a study (appended in place).
    (mine / "tables/04_linear_merge/table4_linear.csv").write_text("session")
    with open(mine / "05_stacking.journal", "a") as fh:
        fh.write("trial 1\n")
    assert {p: p.read_bytes() for p in batch.rglob("*") if p.is_file()} == before  # copies, not links
    # A later session keeps what the session wrote, and takes what the batch has redone since.
    model = batch / "models/Split1/M1.txt"
    model.write_text("retrained")
    later = (mine / "models/Split1/M1.txt").stat().st_mtime + 10
    os.utime(model, (later, later))
    assert lab.seed_lab_run(batch, mine) == 1
    assert (mine / "models/Split1/M1.txt").read_text() == "retrained"
    assert (mine / "tables/04_linear_merge/table4_linear.csv").read_text() == "session"
    assert (mine / "05_stacking.journal").read_text() == "trial 0\ntrial 1\n"
    assert not list(mine.rglob(".*"))  # no temporary left


class _Server:
    """A stand-in for JupyterLab's process: ``interrupt`` makes its wait raise as Ctrl-C does."""

    def __init__(self, argv, env, cwd, interrupt=False, stops=True):
        self.env, self.signals, self.interrupt, self.stops, self.pid, self.ended = env, [], interrupt, stops, 4242, None

    def wait(self, timeout=None):
        if self.interrupt:
            self.interrupt = False
            raise KeyboardInterrupt
        if self.ended is None and timeout is not None:
            import subprocess

            raise subprocess.TimeoutExpired("jupyter", timeout)
        return self.ended if self.ended is not None else 0

    def poll(self):
        return self.ended

    def send_signal(self, sig):
        self.signals.append(sig)
        if self.stops:
            self.ended = 0

    def kill(self):
        self.signals.append("kill")
        self.ended = -9


def test_make_lab_on_a_batch_run_opens_the_batchs_data_in_the_lab_run(tmp_path, monkeypatch, capsys):
    batch = _batch_run(tmp_path, scale="tiny")
    servers = []
    monkeypatch.setattr(lab, "install", lambda: None)
    monkeypatch.setattr(lab.subprocess, "Popen", lambda argv, env, cwd: servers.append(_Server(argv, env, cwd))
                        or servers[-1])
    assert lab.main(dataset="synthetic", data_dir="", scale="small", seed=0, run_id=batch.name, port=None,
                    open_browser=False, reports_dir=tmp_path) == 0
    env = servers[0].env
    assert env["LTRLIB_RUN_ID"] == batch.name + "-lab" and env["LTRLIB_SCALE"] == "tiny"  # the batch's data
    err = capsys.readouterr().err
    assert f"results go to reports/{batch.name}-lab/" in err and "scale 'tiny' (not 'small')" in err
    assert f"reports/{batch.name}/ stays as the batch made it" in err
    assert (tmp_path / (batch.name + "-lab") / "models/Split1/M1.txt").exists()


def test_ctrl_c_on_make_lab_says_what_it_stopped(tmp_path, monkeypatch, capsys):
    import signal

    from ltrlib import cli

    servers = []
    monkeypatch.setattr(config, "REPORTS_DIR", tmp_path)
    monkeypatch.setattr(lab, "install", lambda: None)
    monkeypatch.setattr(lab.subprocess, "Popen", lambda argv, env, cwd: servers.append(
        _Server(argv, env, cwd, interrupt=True, stops=len(servers) == 0)) or servers[-1])
    assert cli.main(["lab", "--scale", "tiny", "--no-browser"]) == 130
    assert servers[0].signals == [signal.SIGTERM]  # JupyterLab's own shutdown, which stops its kernels
    err = capsys.readouterr().err.splitlines()[-1]
    assert err == ("ltrlib lab: interrupted: stopped JupyterLab and the notebooks' kernels; the session's results "
                   "are in reports/interactive-synthetic-tiny-seed0/")
    monkeypatch.setattr(lab, "STOP_SECONDS", 0)
    assert cli.main(["lab", "--scale", "tiny", "--no-browser"]) == 130  # a server that does not stop
    assert servers[1].signals == [signal.SIGTERM, "kill"]
    assert "killed JupyterLab (pid 4242), which had not stopped" in capsys.readouterr().err
