"""ltrlib.runner and ltrlib.cli on tiny throw-away notebooks (never the real notebooks/).

Kernel start-up costs ~1-3 s per notebook, so one module-scoped run is shared by the tests
that only inspect its outputs; the checks that must fail early start no kernel at all.
"""

from __future__ import annotations

import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ltrlib import cli, config, runner, timing
from ltrlib.manifest import code_commit, machine_arithmetic, package_versions
from ltrlib.runner import (
    NotebookError,
    dataset_label,
    default_run_id,
    discover,
    run_all,
    select_notebooks,
)

STANDARD_CELL = '''# %%
from ltrlib.sessions import session

# %% tags=["parameters"]
dataset: str = "synthetic"  # dataset name or path
data_dir: str = ""  # directory of the dataset files
scale: str = "small"  # tiny | small | paper
seed: int = 0  # random seed
run_id: str = "interactive"  # report directory name
interactive: bool = session().interactive  # widgets when True
counter: str = ""  # file the test appends to on every execution
'''

TABLES_NOTEBOOK = (
    "# %% [markdown]\n# # Tables\n# Writes a table, a figure and metrics.\n\n"
    + STANDARD_CELL
    + 'n_rows: int = 3  # rows of the table\n\n'
    + '''# %%
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

from ltrlib.report import Reporter

Path(counter).open("a").write("00\\n")
rep = Reporter(run_id, "00_tables")

# %%
df = pd.DataFrame({"row": range(n_rows), "seed": seed})
rep.table(df, "rows", caption="One row per n_rows")

# %%
fig, ax = plt.subplots()
ax.plot(range(n_rows))
rep.figure(fig, "line")

# %%
import time

from ltrlib import timing

with timing.fitting():  # stands for a model fit: the runner records its seconds
    time.sleep(0.3)

# %%
rep.metrics(n_rows=n_rows, interactive=interactive, kernel_python=sys.executable, scale=scale)
'''
)

PLAIN_NOTEBOOK = (
    STANDARD_CELL
    + '''
# %%
from pathlib import Path

from ltrlib.report import Reporter

Path(counter).open("a").write("01\\n")
Reporter(run_id, "01_plain").metrics(seed=seed)
'''
)

FAILING_NOTEBOOK = (
    STANDARD_CELL
    + '''
# %%
x = 1

# %%
ratio = x / 0  # the failing line
'''
)


def _write(directory: Path, files: dict[str, str]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (directory / name).write_text(text)
    return directory


def _lines(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """Two notebooks, run once with a decoy 'python3' kernelspec on JUPYTER_PATH."""
    root = tmp_path_factory.mktemp("project")
    nbs = _write(
        root / "notebooks",
        {
            "00_tables.py": TABLES_NOTEBOOK,
            "01_plain.py": PLAIN_NOTEBOOK,
            "helper.py": "raise RuntimeError('not a notebook')\n",
        },
    )
    # A user-level kernelspec pointing at another interpreter must not capture the run.
    decoy = root / "jupyter" / "kernels" / "python3"
    decoy.mkdir(parents=True)
    argv = ["/nonexistent/python", "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (decoy / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": "decoy", "language": "python"}))
    counter = root / "counter.txt"
    kwargs = dict(
        notebooks_dir=nbs,
        reports_dir=root / "reports",
        scale="tiny",
        parameters={"n_rows": 4, "counter": str(counter)},
        progress=False,
    )
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("JUPYTER_PATH", str(root / "jupyter"))
        from jupyter_client.kernelspec import KernelSpecManager

        assert KernelSpecManager().get_kernel_spec("python3").argv[0] == "/nonexistent/python"
        builds = []  # which notebooks had finished at each index build
        from ltrlib import runner as runner_module

        def counting(run_dir, build=runner_module.write_index):
            builds.append(sorted(p.stem for p in (run_dir / "notebooks").glob("*.ipynb")))
            return build(run_dir)

        mp.setattr(runner_module, "write_index", counting)
        run_dir = run_all(**kwargs)
    return {"root": root, "run_dir": run_dir, "counter": counter, "kwargs": kwargs, "index_builds": builds}


# --------------------------------------------------------------------------- a full run


def test_run_writes_notebooks_tables_figures_metrics_and_index(project):
    run_dir = project["run_dir"]
    assert run_dir == project["root"] / "reports" / "synthetic-tiny-seed0"
    assert sorted(p.name for p in (run_dir / "notebooks").iterdir()) == ["00_tables.html", "00_tables.ipynb",
                                                                     "01_plain.html", "01_plain.ipynb"]
    assert "<html" in (run_dir / "notebooks" / "00_tables.html").read_text()
    assert (run_dir / "tables" / "00_tables" / "rows.csv").read_text().count("\n") == 5  # header + 4 rows
    assert (run_dir / "tables" / "00_tables" / "rows.md").exists()
    assert (run_dir / "figures" / "00_tables" / "line.png").read_bytes()[:4] == b"\x89PNG"
    pages = (run_dir / "pages" / "00_tables.md").read_text() + (run_dir / "pages" / "01_plain.md").read_text()
    for link in ["../notebooks/00_tables.ipynb", "../notebooks/01_plain.ipynb", "../tables/00_tables/rows.csv"]:
        assert link in pages
    assert '<a href="figures/00_tables/line.png">png</a>' in (run_dir / "index.html").read_text()
    # The index is built after each notebook and once at the end, not at each output.
    assert project["index_builds"] == [["00_tables"], ["00_tables", "01_plain"], ["00_tables", "01_plain"]]


def test_parameters_are_injected_where_declared(project):
    metrics = json.loads((project["run_dir"] / "metrics.json").read_text())
    assert metrics["00_tables"]["n_rows"] == 4
    assert metrics["00_tables"]["interactive"] is False
    assert metrics["00_tables"]["scale"] == "tiny"
    manifest = json.loads((project["run_dir"] / "run.json").read_text())
    assert "n_rows" in manifest["notebooks"]["00_tables"]["parameters"]
    assert "n_rows" not in manifest["notebooks"]["01_plain"]["parameters"]  # 01 doesn't declare it


def test_executed_notebooks_reopen_interactive(project):
    """Batch kernels are told by the environment, not by an injected ``interactive = False``,
    so an executed notebook rerun in JupyterLab shows its widgets."""
    nb = json.loads((project["run_dir"] / "notebooks" / "00_tables.ipynb").read_text())
    injected = ["".join(c["source"]) for c in nb["cells"] if "injected-parameters" in c["metadata"].get("tags", [])]
    assert len(injected) == 1 and "run_id" in injected[0] and "interactive" not in injected[0]


def test_kernel_runs_on_this_interpreter(project):
    metrics = json.loads((project["run_dir"] / "metrics.json").read_text())
    assert metrics["00_tables"]["kernel_python"] == sys.executable


def test_manifest_records_params_status_and_timings(project):
    manifest = json.loads((project["run_dir"] / "run.json").read_text())
    assert manifest["params"] == {"dataset": "synthetic", "data_dir": "", "scale": "tiny", "seed": 0}
    assert manifest["ltrlib_version"]
    for name in ("00_tables", "01_plain"):
        entry = manifest["notebooks"][name]
        assert entry["status"] == "completed"
        assert entry["seconds"] > 0 and entry["started"] and entry["finished"]
        # The default kernel runs on this interpreter: its numbers come from these releases.
        assert entry["packages"] == package_versions() and entry["packages"]["lightgbm"]
        assert entry["code"] == code_commit()  # the checkout this ltrlib came from
        assert entry["machine"] == machine_arithmetic() and entry["machine"]["cpu"]  # whose arithmetic
    # Seconds inside model fitting (ltrlib.timing), measured in the kernel's process.
    assert 0.3 <= manifest["notebooks"]["00_tables"]["fit_seconds"] < manifest["notebooks"]["00_tables"]["seconds"]
    assert manifest["notebooks"]["01_plain"]["fit_seconds"] == 0.0
    assert not list((project["run_dir"] / "notebooks").glob(".*.fit.log"))  # the channel is cleaned up
    assert not list((project["run_dir"] / "notebooks").glob(".*.progress"))  # so is the progress folder
    # The ETA the bar showed as each notebook started: the expectation before anything ran
    # (the default times of notebooks 00 and 01 at this scale; `ltrlib.timing.Estimate`), then
    # what was left of it (00's short work is not enough to judge the machine by).
    tiny = timing.NOTEBOOK_SECONDS["tiny"]
    assert manifest["notebooks"]["00_tables"]["eta_seconds_at_start"] == tiny["00"] + tiny["01"]
    assert manifest["notebooks"]["01_plain"]["eta_seconds_at_start"] == tiny["01"]


def test_resume_skips_completed_and_force_reruns(project):
    counter = project["counter"]
    before = _lines(counter)  # the module's fixture is shared: other tests may have run 01 again
    run_all(**project["kwargs"])  # everything completed: no kernel starts
    assert _lines(counter) == before
    # n_rows is declared by 00 only, so running 01 alone must not pass it.
    only_01 = dict(project["kwargs"], parameters={"counter": str(counter)})
    run_all(**only_01, only="01", force=True)
    assert _lines(counter) == before + ["01"]
    manifest = json.loads((project["run_dir"] / "run.json").read_text())
    assert {e["status"] for e in manifest["notebooks"].values()} == {"completed"}


def test_a_notebook_run_again_after_an_interruption_keeps_the_seconds_of_its_earlier_attempts(project):
    path = project["run_dir"] / "run.json"
    manifest = json.loads(path.read_text())
    name = next(n for n in manifest["notebooks"] if n.startswith("01"))
    manifest["notebooks"][name].update(status="interrupted", seconds=12.0, earlier_seconds=30.0)
    path.write_text(json.dumps(manifest))
    before = _lines(project["counter"])
    run_all(**project["kwargs"])  # resumes with 01 alone
    assert _lines(project["counter"]) == before + ["01"]
    entries = json.loads(path.read_text())["notebooks"]
    assert entries[name]["status"] == "completed" and entries[name]["earlier_seconds"] == 42.0
    assert "earlier_seconds" not in entries[next(n for n in entries if n.startswith("00"))]
    only_01 = dict(project["kwargs"], parameters={"counter": str(project["counter"])})
    run_all(**only_01, only="01", force=True)  # a rerun of a completed notebook is no resume
    assert "earlier_seconds" not in json.loads(path.read_text())["notebooks"][name]


def test_existing_run_id_with_other_parameters_is_refused(project):
    kwargs = dict(project["kwargs"], run_id="synthetic-tiny-seed0", seed=1)
    before = _lines(project["counter"])
    with pytest.raises(ValueError, match=r"different parameters \(seed: 0 -> 1\).*--force.*--run-id"):
        run_all(**kwargs)
    changed = dict(project["kwargs"], parameters={**project["kwargs"]["parameters"], "n_rows": 9})
    with pytest.raises(ValueError, match="notebook 00_tables .* completed with parameters"):
        run_all(**changed)
    assert _lines(project["counter"]) == before  # nothing was rerun


def test_cli_resumes_the_run_and_prints_its_dir(project, monkeypatch, capsys):
    monkeypatch.setattr(config, "NOTEBOOKS_DIR", project["root"] / "notebooks")
    monkeypatch.setattr(config, "REPORTS_DIR", project["root"] / "reports")
    argv = ["run", "--scale", "tiny", "--no-progress", "-p", "n_rows", "4", "-p", "counter", str(project["counter"])]
    assert cli.main(argv) == 0
    out, err = capsys.readouterr()
    assert out.strip() == str(project["run_dir"])  # alone on stdout, for scripts
    assert err.strip().endswith(f"ltrlib run: open {project['run_dir'] / 'index.html'}")


HOLD_LOCK = """
import sys
from pathlib import Path
from ltrlib.runner import _run_lock
with _run_lock(Path(sys.argv[1])):
    print("locked", flush=True)
    sys.stdin.read()
"""


def test_a_running_run_id_is_locked_and_a_crash_leaves_no_stale_lock(project):
    # Two runs of one run id could start at once and write the same notebooks and manifest.
    run_dir, counter = project["run_dir"], project["counter"]
    before = (run_dir / "run.json").read_text()
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(run_dir)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(ValueError, match=rf"run 'synthetic-tiny-seed0' is already running: process "
                           rf"{holder.pid} holds its lock .*\.run\.lock.*--run-id"):
            run_all(**project["kwargs"], force=True)
        assert (run_dir / "run.json").read_text() == before  # nothing was touched
    finally:
        holder.kill()  # a crash: no clean-up runs, the OS releases the lock
        holder.wait()
    runs = _lines(counter)
    run_all(**project["kwargs"])  # resumes (all completed: no kernel starts), lock file and all
    assert _lines(counter) == runs and (run_dir / ".run.lock").exists()


# --------------------------------------------------------------------------- early errors


@pytest.fixture
def two_notebooks(tmp_path):
    return _write(tmp_path / "nbs", {"00_tables.py": TABLES_NOTEBOOK, "01_plain.py": PLAIN_NOTEBOOK})


def test_unknown_parameter_is_rejected_before_anything_runs(two_notebooks, tmp_path):
    with pytest.raises(ValueError) as err:
        run_all(notebooks_dir=two_notebooks, reports_dir=tmp_path / "reports", parameters={"n_rowz": 1})
    message = str(err.value)
    assert "'n_rowz'" in message and "00_tables declares counter, n_rows" in message and "01_plain" in message
    assert not (tmp_path / "reports").exists()


def test_mistyped_and_reserved_parameters_are_rejected(two_notebooks, tmp_path):
    with pytest.raises(ValueError, match="'n_rows' of notebook 00_tables is declared int, got 'four'"):
        run_all(notebooks_dir=two_notebooks, reports_dir=tmp_path / "r", parameters={"n_rows": "four"})
    with pytest.raises(ValueError, match="use --seed instead of -p"):
        run_all(notebooks_dir=two_notebooks, reports_dir=tmp_path / "r", parameters={"seed": 3})
    assert not (tmp_path / "r").exists()


def test_notebook_missing_a_standard_parameter_is_named(tmp_path):
    text = PLAIN_NOTEBOOK.replace('seed: int = 0  # random seed\n', "")
    nbs = _write(tmp_path / "nbs", {"00_tables.py": TABLES_NOTEBOOK, "03_noseed.py": text})
    with pytest.raises(ValueError, match="notebook 03_noseed does not declare the standard parameter.s. seed"):
        run_all(notebooks_dir=nbs, reports_dir=tmp_path / "reports")
    assert not (tmp_path / "reports").exists()


def test_unknown_scale_and_bad_run_id_are_rejected(two_notebooks, tmp_path):
    with pytest.raises(ValueError, match="unknown scale 'huge'"):
        run_all(notebooks_dir=two_notebooks, reports_dir=tmp_path, scale="huge")
    with pytest.raises(ValueError, match="invalid run_id"):
        run_all(notebooks_dir=two_notebooks, reports_dir=tmp_path, run_id="a/b")


def test_missing_or_unreadable_dataset_is_refused_before_anything_runs(two_notebooks, tmp_path, monkeypatch, capsys):
    # It used to fail inside the first notebook's kernel, leaving reports/<run_id>/ behind.
    reports = tmp_path / "reports"
    missing = tmp_path / "nonexistent"
    with pytest.raises(ValueError, match=f"dataset '{missing}' not found: {missing} does not exist"):
        run_all(notebooks_dir=two_notebooks, reports_dir=reports, dataset=str(missing), scale="tiny")
    with pytest.raises(ValueError, match=r"dataset 'nope' not found: .*no .*data.raw.nope"):
        run_all(notebooks_dir=two_notebooks, reports_dir=reports, dataset="nope", scale="tiny")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match=r"empty is a folder but not a LETOR collection: no .*train\.txt"):
        run_all(notebooks_dir=two_notebooks, reports_dir=reports, dataset=str(tmp_path / "empty"))
    assert not reports.exists()

    monkeypatch.setattr(config, "NOTEBOOKS_DIR", two_notebooks)
    monkeypatch.setattr(config, "REPORTS_DIR", reports)
    assert cli.main(["run", "--dataset", str(missing), "--scale", "tiny", "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert f"ltrlib run: error: --dataset: dataset '{missing}' not found" in err and "Traceback" not in err
    assert not reports.exists()


# --------------------------------------------------------------------------- failures


def test_failing_cell_raises_notebook_error_and_keeps_partial(tmp_path):
    nbs = _write(tmp_path / "nbs", {"05_failing.py": FAILING_NOTEBOOK})
    with pytest.raises(NotebookError) as err:
        run_all(notebooks_dir=nbs, reports_dir=tmp_path / "reports", run_id="fail", progress=False)
    exc = err.value
    assert (exc.notebook, exc.cell, exc.ename) == ("05_failing", 4, "ZeroDivisionError")
    assert exc.source_line == "ratio = x / 0  # the failing line"
    assert "notebook 05_failing, cell 4" in str(exc) and "ZeroDivisionError: division by zero" in str(exc)

    run_dir = tmp_path / "reports" / "fail"
    assert exc.saved == run_dir / "notebooks" / "05_failing.failed.ipynb" and exc.saved.exists()
    assert not (run_dir / "notebooks" / "05_failing.ipynb").exists()  # never looks complete
    # Nothing else, but the kernel's own output when it wrote any (`runner.KERNEL_LOG`).
    assert [p.name for p in (run_dir / "notebooks").iterdir() if not p.name.endswith(".kernel.log")] == [
        "05_failing.failed.ipynb"]
    manifest = json.loads((run_dir / "run.json").read_text())
    assert manifest["notebooks"]["05_failing"]["status"] == "failed"
    assert "ZeroDivisionError" in manifest["notebooks"]["05_failing"]["error"]
    assert "| [05_failing](pages/05_failing.md) | failed |" in (run_dir / "index.md").read_text()


# --------------------------------------------------------------------------- discovery


def test_discover_orders_by_number_and_ignores_other_files(tmp_path):
    names = ["10_late.py", "02_b.py", "00_a.py", "02_a.py", "helper.py", "00_a.ipynb", "README.md", "1x_bad.py"]
    nbs = _write(tmp_path, {n: "" for n in names})
    (nbs / ".ipynb_checkpoints").mkdir()
    assert [p.name for p in discover(nbs)] == ["00_a.py", "02_a.py", "02_b.py", "10_late.py"]


def test_select_by_number_name_and_commas(tmp_path):
    nbs = discover(_write(tmp_path, {n: "" for n in ["00_a.py", "01_b.py", "02_c.py"]}))
    assert [p.stem for p in select_notebooks(nbs, "02,00")] == ["00_a", "02_c"]
    assert [p.stem for p in select_notebooks(nbs, ["01_b.py", "2"])] == ["01_b", "02_c"]
    with pytest.raises(ValueError, match="--only '07' matches no notebook; available: 00_a, 01_b, 02_c"):
        select_notebooks(nbs, "00,07")
    # An empty selection ran nothing and said no notebooks existed.
    for empty in ("", [""], " , "):
        with pytest.raises(ValueError, match="empty selection.*available: 00_a, 01_b, 02_c"):
            select_notebooks(nbs, empty)


def test_default_run_id():
    assert default_run_id("synthetic", "small", 0) == "synthetic-small-seed0"
    assert default_run_id("/data/MSLR-WEB10K/", "paper", 3) == "MSLR-WEB10K-paper-seed3"
    assert dataset_label("~/my data/Fold 1") == "Fold_1"


# --------------------------------------------------------------------------- CLI


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("3", 3),
        ("0.5", 0.5),
        ("1e-3", 0.001),
        ("true", True),
        ("False", False),
        ("null", None),
        ("[1, 2]", [1, 2]),
        ('"123"', "123"),
        ("lgbm", "lgbm"),
        ("data/raw/x.txt", "data/raw/x.txt"),
    ],
)
def test_cli_parses_parameter_values(text, value):
    assert cli.parse_value(text) == value and type(cli.parse_value(text)) is type(value)


def test_cli_collects_options():
    args = cli.build_parser().parse_args(
        ["run", "--scale", "tiny", "--seed", "2", "--only", "00,01", "--only", "03", "-p", "a", "1", "-p", "b", "x"]
    )
    assert (args.scale, args.seed, args.only, args.parameters) == ("tiny", 2, ["00,01", "03"], [["a", "1"], ["b", "x"]])
    assert cli._parameters(args.parameters) == {"a": 1, "b": "x"}
    with pytest.raises(ValueError, match="'a' given twice"):
        cli._parameters([["a", "1"], ["a", "2"]])


def test_cli_is_the_one_command_line_and_its_help_lists_every_command(capsys):
    """No module of the package keeps a command line of its own; `ltrlib --help` names them all."""
    import ast

    from ltrlib import config

    own = [p.relative_to(config.PROJ_ROOT).as_posix() for p in sorted((config.PROJ_ROOT / "ltrlib").rglob("*.py"))
           if p.name not in ("__main__.py", "cli.py")
           and any(isinstance(n, ast.If) and "__main__" in ast.unparse(n.test)
                   for n in ast.parse(p.read_text(encoding="utf-8")).body)]
    assert not own, f"command lines outside ltrlib.cli: {own}"
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    text = capsys.readouterr().out
    for command in ("run", "fidelity", "upgrade", "tune-worker", "lab", "index", "bilambdamart-seeds", "study",
                    "calibrate", "formats"):
        assert f"    {command} " in text or f"    {command}\n" in text, command


def test_cli_hands_the_data_options_to_every_subcommand(monkeypatch, capsys):
    """`run`, `tune-worker` and `lab` take the standard data options and pass them on as given."""
    import types

    from ltrlib import lab, runner
    from ltrlib.clients import workers

    seen = {}
    result = types.SimpleNamespace(study_name="s", n_new=0, n_trials=1, best_trial=0, best_value=0.5,
                                   best_params={})
    monkeypatch.setattr(runner, "run_all", lambda **kw: seen.setdefault("run", kw) and "dir")
    monkeypatch.setattr(workers, "tune_worker", lambda *a, **kw: seen.setdefault("tune-worker", kw) and result)
    monkeypatch.setattr(lab, "main", lambda **kw: seen.setdefault("lab", kw) and 0)
    data = ["--dataset", "lightgbm-rank", "--data-dir", "/d", "--scale", "tiny", "--seed", "3"]
    assert cli.main(["run", *data, "--no-progress"]) == 0
    assert cli.main(["tune-worker", "--storage", "sqlite://", "--study", "full.M_full", *data]) == 0
    assert cli.main(["lab", *data]) == 0
    capsys.readouterr()
    for command in ("run", "tune-worker", "lab"):
        got = {k: seen[command][k] for k in ("dataset", "data_dir", "scale", "seed")}
        assert got == {"dataset": "lightgbm-rank", "data_dir": "/d", "scale": "tiny", "seed": 3}, command


def test_cli_error_exits_nonzero_without_traceback(tmp_path):
    """`python -m ltrlib run` on an unknown parameter: exit 1 and a one-line reason."""
    _write(tmp_path / "notebooks", {"00_plain.py": PLAIN_NOTEBOOK})
    env = {"LTRLIB_ROOT": str(tmp_path), "LTRLIB_REPORTS_DIR": str(tmp_path / "reports"), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run(
        [sys.executable, "-m", "ltrlib", "run", "--scale", "tiny", "-p", "bogus", "1"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 1
    assert "unknown parameter 'bogus'" in proc.stderr and "00_plain" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "reports").exists()


def test_digits_given_to_a_str_parameter_become_that_string():
    from ltrlib.runner import STANDARD_PARAMETERS, _plan_parameters

    declared = {"07_x": {**{p: {} for p in STANDARD_PARAMETERS},
                         "category_feature": {"inferred_type_name": "str"},
                         "n_rounds": {"inferred_type_name": "int"}}}
    plan = _plan_parameters(declared, {}, {"category_feature": 220, "n_rounds": 5})
    assert plan["07_x"]["category_feature"] == "220" and plan["07_x"]["n_rounds"] == 5
    with pytest.raises(ValueError, match="declared int"):
        _plan_parameters(declared, {}, {"n_rounds": "5"})
    with pytest.raises(ValueError, match="declared str"):
        _plan_parameters(declared, {}, {"category_feature": True})


def test_every_parameter_of_the_shipped_notebooks_is_declared():
    """Papermill skips a parameters-cell line it cannot parse (an ``=`` or a quote in the
    comment does it), and the runner would then refuse ``-p`` for that parameter."""
    from ltrlib.runner import declared_parameters, load_notebook

    for path in discover():
        nb = load_notebook(path)
        cell = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
        assigned = re.findall(r"^([A-Za-z_]\w*)\s*:", cell.source, flags=re.M)
        assert assigned and list(declared_parameters(nb)) == assigned, path.name


def test_kernels_started_side_by_side_get_sockets_of_their_own(tmp_path, monkeypatch):
    # jupyter_client's default put every kernel's IPC sockets at "kernel-ipc-1".. in the
    # working directory, so two runs (or two test workers) at once crossed messages.
    from ltrlib.runner import _this_interpreter_kernel_manager

    monkeypatch.chdir(tmp_path)
    managers = [_this_interpreter_kernel_manager(str(tmp_path / d))() for d in ("a", "b")]
    assert all(m.transport == "ipc" for m in managers)
    assert [m.ip for m in managers] == [str(tmp_path / "a" / "kernel"), str(tmp_path / "b" / "kernel")]



def test_the_eta_expects_each_notebook_to_take_what_it_took_in_a_comparable_run(tmp_path):
    plan = {"03_client_models": {"dataset": "synthetic", "scale": "small", "seed": 1, "run_id": "new", "n_trials": 6},
            "42_mine": {"dataset": "synthetic", "scale": "small", "seed": 1, "run_id": "new"}}

    def record(run_id, finished, seconds, earlier_seconds=None, **changes):
        params = {**plan["03_client_models"], "run_id": run_id, "seed": 0, **changes}
        entry = {"status": "completed", "seconds": seconds, "finished": finished, "parameters": params}
        if earlier_seconds is not None:
            entry["earlier_seconds"] = earlier_seconds
        (tmp_path / run_id).mkdir()
        (tmp_path / run_id / "run.json").write_text(json.dumps({"notebooks": {"03_client_models": entry}}))

    expected = runner._expected_seconds(tmp_path, plan)
    small = timing.NOTEBOOK_SECONDS["small"]
    median = statistics.median(small.values())
    assert expected == {"03_client_models": small["03"], "42_mine": median}  # a notebook not measured: their median
    paper = {name: {**params, "scale": "paper"} for name, params in plan.items()}  # no figures: small's
    assert runner._expected_seconds(tmp_path, paper)["03_client_models"] == small["03"]
    record("other-scale", "2026-01-03", 10.0, scale="tiny")
    record("same-data", "2026-01-02", 700.0, n_trials=20)  # same dataset and scale, other parameters
    assert runner._expected_seconds(tmp_path, plan)["03_client_models"] == 700.0
    record("same-parameters", "2026-01-01", 800.0)  # older, but the same parameters: preferred
    assert runner._expected_seconds(tmp_path, plan)["03_client_models"] == 800.0
    record("resumed", "2026-01-04", 90.0, earlier_seconds=600.0)  # its last stretch: not the notebook's time
    assert runner._expected_seconds(tmp_path, plan)["03_client_models"] == 800.0
    # This machine's probed pace scales nothing: it only widens the ETA's range (ltrlib.timing.slow_factor).
    assert runner._expected_seconds(tmp_path, plan) == {"03_client_models": 800.0, "42_mine": median}


def test_the_pace_probe_times_a_fixed_fit():
    from ltrlib import timing

    seconds = timing.probe_seconds()
    assert 0 < seconds < 60
    assert timing.pace() > 0


def test_a_notebook_waits_for_those_it_reads():
    needs = runner.notebook_needs(["03_client_models", "04_linear_merge", "05_stacking", "06_bilambdamart",
                                   "06_neural_competitors", "07_foltr_noniid"])
    assert needs["04_linear_merge"] == needs["05_stacking"] == {"03_client_models"}
    assert needs["06_neural_competitors"] == {"06_bilambdamart"} and needs["07_foltr_noniid"] == set()
    with pytest.raises(ValueError, match="jobs = 0"):
        runner.run_all(scale="tiny", only="00", jobs=0)


# --------------------------------------------------------------------------- nothing left behind

# A notebook whose pool of loky workers (ltrlib.processes.worker_processes) waits: killed
# during it, a kernel left its workers and loky's resource trackers under PID 1.
POOL_NOTEBOOK = "# %% [markdown]\n# # Pool\n# Two pool workers wait.\n\n" + STANDARD_CELL + '''
# %%
import time
from joblib import Parallel, delayed
from ltrlib.processes import worker_processes

with worker_processes(2):
    Parallel(n_jobs=2)(delayed(time.sleep)(120) for _ in range(2))
'''


def _command_line(process) -> str:
    """A process's command line, or "" for one that ended since it was listed: a busy machine
    lets a short-lived child exit between `children()` and `cmdline()`."""
    import psutil

    try:
        return " ".join(process.cmdline())
    except psutil.Error:
        return ""


def _pool_run(tmp_path):
    """A batch of `POOL_NOTEBOOK` in a session of its own; returns it once its kernel's pool
    workers run, with the kernel's process."""
    psutil = pytest.importorskip("psutil")
    nbs = _write(tmp_path / "nbs", {"00_pool.py": POOL_NOTEBOOK})
    code = (f"from ltrlib.runner import run_all; run_all(notebooks_dir={str(nbs)!r}, "
            f"reports_dir={str(tmp_path / 'reports')!r}, scale='tiny', progress=False)")
    batch = subprocess.Popen([sys.executable, "-c", code], start_new_session=True, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while True:
        tree = psutil.Process(batch.pid).children(recursive=True)
        kernels = [p for p in tree if "ipykernel" in _command_line(p)]
        if kernels and sum("loky" in _command_line(p) for p in tree) >= 2:
            return batch, kernels[0], tree
        assert batch.poll() is None and time.monotonic() < deadline, batch.communicate()
        time.sleep(0.2)


@pytest.mark.parametrize("killed", ["kernel", "batch's process group"])
def test_no_process_outlives_a_killed_kernel_or_batch(tmp_path, killed):
    psutil = pytest.importorskip("psutil")
    batch, kernel, tree = _pool_run(tmp_path)
    if killed == "kernel":
        kernel.kill()
    else:
        os.killpg(batch.pid, signal.SIGKILL)
    _, alive = psutil.wait_procs(tree, timeout=10)
    assert not alive, [_command_line(p)[:100] for p in alive]
    batch.communicate(timeout=60)


# A process that adopts its orphaned descendants (as CI's reaper does, which is not PID 1),
# starts the batch given as argv[1], writes its pid and reaps until no descendant is left.
REAPER = """
import ctypes, os, subprocess, sys
ctypes.CDLL(None).prctl(36, 1)  # PR_SET_CHILD_SUBREAPER
print(subprocess.Popen([sys.executable, "-c", sys.argv[1]]).pid, flush=True)
while True:
    try:
        os.wait()
    except ChildProcessError:
        break
"""


def test_a_batch_killed_while_its_kernel_starts_takes_the_kernel_with_it(tmp_path):
    """ipykernel ends itself when its parent changes only once it polls for that; killed
    before, under a reaper other than PID 1, a kernel ran on (a study stopped in CI)."""
    psutil = pytest.importorskip("psutil")
    nbs = _write(tmp_path / "nbs", {"00_pool.py": POOL_NOTEBOOK})
    code = (f"from ltrlib.runner import run_all; run_all(notebooks_dir={str(nbs)!r}, "
            f"reports_dir={str(tmp_path / 'reports')!r}, scale='tiny', progress=False)")
    reaper = subprocess.Popen([sys.executable, "-c", REAPER, code], start_new_session=True,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    batch = psutil.Process(int(reaper.stdout.readline()))
    try:
        deadline = time.monotonic() + 120
        while not (kernels := [p for p in batch.children() if "ipykernel" in _command_line(p)]):
            assert batch.is_running() and time.monotonic() < deadline
            time.sleep(0.01)
        batch.kill()
        _, alive = psutil.wait_procs(kernels, timeout=10)
        assert not alive, [_command_line(p)[:100] for p in alive]
        reaper.wait(timeout=30)
    finally:
        for process in [reaper, *psutil.Process(reaper.pid).children(recursive=True)] if reaper.poll() is None else []:
            process.kill()


def test_force_refuses_a_damaged_journal_before_deleting_any_result(two_notebooks, tmp_path):
    reports = tmp_path / "reports"
    counter = {"counter": str(tmp_path / "counter.txt")}
    run_all(notebooks_dir=two_notebooks, reports_dir=reports, run_id="r", scale="tiny", progress=False,
            parameters=counter)
    run = reports / "r"
    lines = ['{"op_code": 0, "worker_id": "w", "study_name": "s", "directions": [1]}', '{"op_co', '{"op_code": 5}']
    (run / "optuna.journal").write_text("\n".join(lines) + "\n")
    before = {p: p.read_bytes() for p in run.rglob("*") if p.is_file() and p.name != ".run.lock"}
    with pytest.raises(ValueError, match=r"optuna.journal: line 2 is not a journal record"):
        run_all(notebooks_dir=two_notebooks, reports_dir=reports, run_id="r", scale="tiny", progress=False,
                parameters=counter, force=True)
    assert {p: p.read_bytes() for p in run.rglob("*") if p.is_file() and p.name != ".run.lock"} == before


def test_a_bare_ctrl_c_is_said_as_interrupted(monkeypatch, capsys):
    def stop(args):
        raise KeyboardInterrupt

    parser = cli.build_parser()
    monkeypatch.setattr(cli, "build_parser", lambda: parser)
    monkeypatch.setattr(parser, "parse_args", lambda argv: type("Args", (), {"handler": stop, "command": "lab"}))
    assert cli.main(["lab"]) == 130
    assert capsys.readouterr().err == "ltrlib lab: interrupted\n"
