"""ltrlib.lab without a browser: what `install` writes, and the session `ltrlib lab` starts."""

import json
import sys

import pytest

from ltrlib import config, lab


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
    monkeypatch.setenv(config.BATCH_ENV, "1")
    env = lab.environment(scale="tiny", seed=2, run_id="", base={"LTRLIB_RUN_ID": "stale", config.BATCH_ENV: "1"})
    assert env["LTRLIB_SCALE"] == "tiny" and env["LTRLIB_SEED"] == "2" and env["LTRLIB_DATASET"] == "synthetic"
    assert "LTRLIB_RUN_ID" not in env and config.BATCH_ENV not in env
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
