"""ltrlib.manifest: a run's record, read and written in one place."""

import ast
import json
from pathlib import Path

import pytest

from ltrlib import config
from ltrlib import manifest
from ltrlib.manifest import FILE, NUMERIC_PACKAGES, SCHEMA_VERSION, NotebookRecord, RunManifest, package_versions

PACKAGE = Path(__file__).resolve().parents[1] / "ltrlib"


def test_a_record_round_trips_and_leaves_out_what_is_not_known(tmp_path):
    m = RunManifest("r1", params={"dataset": "synthetic", "seed": 3}, created="2026-11-27T00:00:00+00:00")
    m.notebooks["00_a"] = NotebookRecord("running", parameters={"seed": 3}, started="t0")
    m.write(tmp_path)
    raw = json.loads((tmp_path / FILE).read_text())
    assert raw["schema_version"] == SCHEMA_VERSION and raw["updated"]
    assert raw["notebooks"]["00_a"] == {"status": "running", "parameters": {"seed": 3}, "started": "t0"}
    assert "machine_pace" not in raw and "finished" not in raw["notebooks"]["00_a"]
    back = RunManifest.read(tmp_path)
    assert back == m and back.seed == 3 and back.status("00_a") == "running" and not back.completed("00_a")
    assert [p.name for p in tmp_path.iterdir()] == [FILE]  # written atomically: no temporary left


def test_package_versions_are_the_installed_releases_of_the_numeric_libraries():
    import lightgbm
    import numpy

    versions = package_versions()
    assert versions["numpy"] == numpy.__version__ and versions["lightgbm"] == lightgbm.__version__
    assert set(versions) <= set(NUMERIC_PACKAGES) and {"scipy", "jax", "xgboost"} <= set(versions)


def test_the_code_commit_is_the_checkouts_with_local_changes_said_and_none_outside_git(tmp_path, monkeypatch):
    import shutil
    import subprocess

    if shutil.which("git") is None:
        pytest.skip("git is not installed")

    def git(*args):
        return subprocess.run(["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                              capture_output=True, text=True, check=True).stdout.strip()

    module = tmp_path / "ltrlib" / "manifest.py"
    module.parent.mkdir()
    module.write_text("x = 1\n")
    monkeypatch.setattr(manifest, "__file__", str(module))
    manifest.code_commit.cache_clear()
    assert manifest.code_commit() is None  # not a git checkout
    git("init", "-q")
    git("add", ".")
    git("commit", "-qm", "c")
    head = git("rev-parse", "HEAD")
    manifest.code_commit.cache_clear()
    assert manifest.code_commit() == head
    module.write_text("x = 2\n")
    (tmp_path / "notes.txt").write_text("not code\n")  # untracked, outside ltrlib: not a change of the code
    manifest.code_commit.cache_clear()
    assert manifest.code_commit() == f"{head} + local changes"
    manifest.code_commit.cache_clear()


def test_a_record_of_schema_3_reads_without_the_machine_it_did_not_keep(tmp_path):
    (tmp_path / FILE).write_text(json.dumps({"run_id": "r", "schema_version": 3, "notebooks": {
        "00_a": {"status": "completed", "code": "abc"}}}))
    m = RunManifest.read(tmp_path)
    assert m.schema_version == 3 and m.notebooks["00_a"].machine is None
    m.notebooks["00_a"].machine = manifest.machine_arithmetic()
    m.write(tmp_path)
    written = json.loads((tmp_path / FILE).read_text())
    assert written["schema_version"] == SCHEMA_VERSION == 5 and written["notebooks"]["00_a"]["machine"]["cpu"]
    assert set(written["notebooks"]["00_a"]["machine"]["flags"].split()) <= set(manifest.ARITHMETIC_FLAGS)


def test_a_record_of_schema_1_reads_without_the_packages_it_did_not_keep(tmp_path):
    (tmp_path / FILE).write_text(json.dumps({"run_id": "r", "schema_version": 1, "notebooks": {
        "00_a": {"status": "completed", "kernel": "k"}}}))
    m = RunManifest.read(tmp_path)
    assert m.schema_version == 1 and m.notebooks["00_a"].packages is None
    m.notebooks["00_a"].packages = {"numpy": "2.0"}
    m.write(tmp_path)
    assert json.loads((tmp_path / FILE).read_text())["notebooks"]["00_a"]["packages"] == {"numpy": "2.0"}


def test_a_record_from_before_the_schema_field_reads_as_version_0_and_is_written_at_the_current_one(tmp_path):
    (tmp_path / FILE).write_text(json.dumps({"run_id": "old", "params": {"seed": 0}, "notebooks": {
        "03_client_models": {"status": "completed", "parameters": {}, "seconds": 12.5}}}))
    m = RunManifest.read(tmp_path)
    assert m.schema_version == 0 and m.completed("03_client_models") and m.notebooks["03_client_models"].seconds == 12.5
    m.write(tmp_path)
    assert json.loads((tmp_path / FILE).read_text())["schema_version"] == SCHEMA_VERSION


@pytest.mark.parametrize("content, said", [
    ("{not json", "is not valid JSON (line 1)"),
    ("[1, 2]", "a run record is a JSON object"),
    (json.dumps({"schema_version": SCHEMA_VERSION + 1}), f"schema_version {SCHEMA_VERSION + 1} is not one"),
    (json.dumps({"params": {}, "colour": "red"}), "unknown field(s) ['colour']"),
    (json.dumps({"notebooks": {"00_a": {"parameters": {}}}}), "notebook '00_a''s entry has no status"),
    (json.dumps({"notebooks": {"00_a": {"status": "completed", "mood": 1}}}), "unknown field(s) ['mood'] in notebook"),
])
def test_a_file_that_is_not_a_run_record_is_refused_naming_it(tmp_path, content, said):
    (tmp_path / FILE).write_text(content)
    with pytest.raises(ValueError) as e:
        RunManifest.read(tmp_path)
    assert str(tmp_path / FILE) in str(e.value) and said in str(e.value)


def test_require_names_the_folder_and_the_notebook_not_completed(tmp_path):
    with pytest.raises(ValueError, match="is not a run directory: run.json is missing"):
        RunManifest.require(tmp_path)
    m = RunManifest("r", notebooks={"06_bilambdamart": NotebookRecord("failed")})
    with pytest.raises(ValueError, match="notebook 06_bilambdamart has not completed in this run"):
        m.require_completed(["06_bilambdamart"], tmp_path)


def test_every_committed_run_record_reads():
    records = sorted(config.PROJ_ROOT.glob(f"reports/*/seeds/*/{FILE}"))
    if not records:
        pytest.skip("no committed study seeds in this checkout")
    for path in records:
        m = RunManifest.read(path.parent)
        assert m.params and m.notebooks and all(e.status for e in m.notebooks.values()), path


def test_nothing_else_in_the_package_names_the_record_file():
    # The one home of run.json: any other module spelling the file name out parses it again.
    spelled = []
    for path in PACKAGE.rglob("*.py"):
        if path.name == "manifest.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                      if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                      and node.body and isinstance(node.body[0], ast.Expr)
                      and isinstance(node.body[0].value, ast.Constant)}
        spelled += [f"{path.relative_to(PACKAGE)}:{node.lineno}" for node in ast.walk(tree)
                    if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
                    and FILE in node.value and " " not in node.value]
    assert not spelled, spelled
