"""The project's JupyterLab: notebooks open as notebooks, on the project's kernel, at the root.

`ltrlib lab` (and `make lab`) starts JupyterLab

* rooted at the repository, so ``reports/`` (tables, figures, executed notebooks) is in the
  file browser beside ``notebooks/``;
* on a run of its own when it explores a batch run (`session_run`): ``RUN_ID=<batch run>``
  gives the session ``reports/<batch run>-lab/``, seeded with the batch's models, studies
  and tables (`seed_lab_run`), so what a notebook recomputes in the session never rewrites
  the batch's report;
* with the session's data, scale, seed and run id in the environment
  (`ltrlib.sessions.session`): the notebooks' parameters cells read them, so nobody edits a
  tracked notebook to change them, and a batch run's injected parameters still win;
* after `install` has put two things into this Python environment (``sys.prefix``, the
  project's ``.venv``), never into the user's own Jupyter configuration:

  - a kernelspec ``ltrlib`` that starts ipykernel on this interpreter. Jupytext gives a
    notebook without a kernelspec the kernel whose interpreter is the server's own, and the
    stock ``python3`` spec names a bare ``python``, which matches nothing: JupyterLab then
    asks "Select Kernel" on every notebook;
  - ``share/jupyter/lab/settings/overrides.json`` making "Jupytext Notebook" the default
    viewer of Python files, so a double-click opens ``notebooks/04_linear_merge.py`` as a
    notebook. This applies to every ``.py`` file; "Open With → Editor" opens one as text.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from ltrlib import config, sessions
from ltrlib.atomic import atomic_write_text
from ltrlib.manifest import FILE as MANIFEST_FILE
from ltrlib.manifest import RunManifest
from ltrlib.provenance import validate_name

__all__ = ["KERNEL_NAME", "LAB_SETTINGS", "LAB_SUFFIX", "command", "environment", "install", "main",
           "seed_lab_run", "session_run"]

KERNEL_NAME = "ltrlib"
#: JupyterLab settings the project's lab overrides (JupyterLab's ``overrides.json`` format).
LAB_SETTINGS = {
    # .py notebooks open as notebooks; Markdown (a run's index.md and its pages, the README)
    # opens rendered, with its figures, rather than as source in the editor.
    "@jupyterlab/docmanager-extension:plugin": {"defaultViewers": {"python": "Jupytext Notebook",
                                                                   "markdown": "Markdown Preview"}},
    # No news or update pop-ups over the notebooks (they also need the internet).
    "@jupyterlab/apputils-extension:notification": {"checkForUpdates": False, "fetchNews": "false"},
}


def install(prefix: str | os.PathLike | None = None) -> Path:
    """Install the ``ltrlib`` kernelspec and the lab settings under ``prefix`` (default
    ``sys.prefix``); idempotent. Returns the settings file."""
    from ipykernel.kernelspec import install as install_kernelspec

    prefix = Path(prefix or sys.prefix)
    install_kernelspec(kernel_name=KERNEL_NAME, display_name="Python (ltrlib)", prefix=str(prefix))
    settings = prefix / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
    current = {}
    if settings.exists():
        try:
            current = json.loads(settings.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ValueError(f"{settings} is not valid JSON (line {exc.lineno}): {exc.msg}") from exc
    merged = _merged(current, LAB_SETTINGS)
    if merged != current:
        atomic_write_text(settings, json.dumps(merged, indent=2, sort_keys=True) + "\n")
    return settings


def _merged(mine: dict, ours: dict) -> dict:
    """``mine`` with ``ours`` laid over it key by key, at every depth: settings of the
    environment's other plugins, and other file types' viewers, are kept."""
    out = dict(mine)
    for key, value in ours.items():
        out[key] = _merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def environment(*, dataset: str = "synthetic", data_dir: str = "", scale: str = "small", seed: int = 0,
                run_id: str = "", base: dict | None = None) -> dict[str, str]:
    """``base`` (default ``os.environ``) with the session variables `sessions.session` reads."""
    if dataset == "synthetic":
        config.get_scale(scale)  # an unknown scale is refused before JupyterLab starts
    env = dict(os.environ if base is None else base)
    env.pop(sessions.BATCH_ENV, None)  # a lab started from a batch kernel is still interactive
    values = {"dataset": dataset, "data_dir": data_dir, "scale": scale, "seed": str(int(seed)),
              "run_id": run_id}
    for name, value in values.items():
        var = sessions.SESSION_ENV[name]
        if value:
            env[var] = value
        else:
            env.pop(var, None)
    return env


#: A session on a batch run works in ``<batch run>`` + this (`session_run`).
LAB_SUFFIX = "-lab"
#: What a lab run does not take from its batch run: the batch's own record and report
#: (``run.json`` would make the lab run pass for a batch; the index, pages, fidelity ledger
#: and executed notebooks describe the batch, and a notebook rerun in the session writes its
#: own tables, not these). Everything else, the models, Optuna journals, tables, per-query
#: results and caches that later notebooks read, is copied.
_NOT_SEEDED = (MANIFEST_FILE, "index.html", "index.md", "pages", "notebooks", "fidelity*")


def _is_batch_run(run_dir: Path) -> bool:
    return (run_dir / MANIFEST_FILE).is_file()


def session_run(run_id: str, *, dataset: str = "synthetic", scale: str = "small", seed: int = 0,
                reports_dir: str | os.PathLike | None = None) -> tuple[str, Path | None]:
    """The run a JupyterLab session writes to, and the batch run it explores (or None).

    No ``run_id``: ``interactive-<dataset>-<scale>-seed<seed>`` (`sessions.interactive_run_id`).
    A ``run_id`` naming a batch run (a folder of ``reports_dir`` with a ``run.json``):
    ``<run_id>-lab``, a run of the session's own, so the batch's report stays what the
    batch made. Any other ``run_id`` is the session's run as given."""
    if not run_id:
        return sessions.interactive_run_id(dataset, scale, seed), None
    batch = Path(reports_dir or config.REPORTS_DIR) / run_id
    if _is_batch_run(batch):
        return validate_name(run_id + LAB_SUFFIX, "run_id"), batch
    return run_id, None


def seed_lab_run(batch_dir: str | os.PathLike, lab_dir: str | os.PathLike) -> int:
    """Copy into ``lab_dir`` what the notebooks of a session read of batch run ``batch_dir``:
    every file but the batch's record and report (`_NOT_SEEDED`). A file is copied when the
    lab run lacks it or holds an older copy than the batch's (the batch ran again since);
    one the session wrote since it was copied is newer, and kept. Copies, not links: an Optuna
    journal is appended to in place, and a linked one would add the session's trials to the
    batch's study. Each copy is atomic (a temporary file renamed), as every write here is.
    Returns the number of files copied."""
    batch_dir, lab_dir = Path(batch_dir), Path(lab_dir)
    copied = 0
    for source in sorted(batch_dir.rglob("*")):
        relative = source.relative_to(batch_dir)
        top = relative.parts[0]
        if not source.is_file() or top.startswith(".") or any(Path(top).match(p) for p in _NOT_SEEDED) \
                or any(part.startswith(".") for part in relative.parts):  # locks, temporaries
            continue
        target = lab_dir / relative
        if target.exists() and target.stat().st_mtime >= source.stat().st_mtime:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        os.close(fd)
        try:
            shutil.copy2(source, tmp)  # keeps the batch's time: the next session sees it as a copy
            os.replace(tmp, target)
        finally:
            Path(tmp).unlink(missing_ok=True)
        copied += 1
    return copied


def command(*, root: str | os.PathLike | None = None, port: int | None = None, token: str | None = None,
            open_browser: bool = True, extra: list[str] = ()) -> list[str]:
    """The ``jupyter lab`` command line for the project's lab; ``extra`` are Jupyter's own
    options, last, so they win over ours (``--ServerApp.ip=0.0.0.0`` on a remote server)."""
    argv = [sys.executable, "-m", "jupyterlab", f"--ServerApp.root_dir={Path(root or config.PROJ_ROOT)}",
            "--ServerApp.contents_manager_class=ltrlib.lab_contents.LabContentsManager"]
    if port is not None:
        argv += ["--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0"]
    if token is not None:
        argv.append(f"--IdentityProvider.token={token}")
    if not open_browser:
        argv.append("--no-browser")
    if hasattr(os, "geteuid") and os.geteuid() == 0:  # containers and CI run as root
        argv.append("--allow-root")
    return argv + list(extra)


def _batch_data(batch: Path, asked: dict) -> tuple[dict, str]:
    """The data options of a session on batch run ``batch``: the batch's own (its ``run.json``),
    since its models load only on the data they were trained on (`ltrlib.provenance`), and a
    note naming what differs from ``asked`` ("" when nothing does)."""
    made = RunManifest.read(batch).params
    data = {name: made.get(name, value) for name, value in asked.items()}
    changed = [f"{name} {data[name]!r} (not {value!r})" for name, value in asked.items() if data[name] != value]
    return data, (f"; run {batch.name} was made on its own data: " + ", ".join(changed)) if changed else ""


#: Seconds JupyterLab gets to shut its kernels down after Ctrl-C before it is killed.
STOP_SECONDS = 10.0


def _stop(server: subprocess.Popen) -> str:
    """Stop the JupyterLab server after Ctrl-C; say how it ended. Ctrl-C reached it too,
    and it waits at its "Shut down this Jupyter server (y/[n])?" prompt: SIGTERM is its own
    orderly shutdown, which stops every kernel it started. A server that has not ended
    within `STOP_SECONDS` (or a second Ctrl-C) is killed, and its kernels may outlive it."""
    if server.poll() is None:
        try:
            server.send_signal(signal.SIGTERM)
            server.wait(STOP_SECONDS)
        except (subprocess.TimeoutExpired, KeyboardInterrupt):
            server.kill()
            server.wait()
            return f"killed JupyterLab (pid {server.pid}), which had not stopped; its kernels may still run"
    return "stopped JupyterLab and the notebooks' kernels"


def main(*, dataset: str, data_dir: str, scale: str, seed: int, run_id: str, port: int | None,
         open_browser: bool, extra: list[str] = (), reports_dir: str | os.PathLike | None = None) -> int:
    """`ltrlib lab`: install, say what the session is, and run JupyterLab until it stops.

    A ``run_id`` naming a batch run is explored in a run of the session's own
    (`session_run`, `seed_lab_run`), on the batch's data. Ctrl-C stops the server and its
    kernels, then raises KeyboardInterrupt saying what it stopped and where the results are."""
    reports = Path(reports_dir or config.REPORTS_DIR)
    data = {"dataset": dataset, "data_dir": data_dir, "scale": scale, "seed": seed}
    session, batch = session_run(run_id, dataset=dataset, scale=scale, seed=seed, reports_dir=reports)
    note = ""
    if batch is not None:
        data, note = _batch_data(batch, data)
        copied = seed_lab_run(batch, reports / session)
        note += (f"; exploring batch run {run_id}: its models and results are read from a copy "
                 f"({copied} file(s) copied now), and reports/{run_id}/ stays as the batch made it")
    install()
    env = environment(**data, run_id=session)
    print(f"ltrlib lab: notebooks default to dataset {data['dataset']}, scale {data['scale']}, seed {data['seed']}; "
          f"results go to reports/{session}/{note}", file=sys.stderr)
    server = subprocess.Popen(command(port=port, open_browser=open_browser, extra=extra), env=env,
                              cwd=config.PROJ_ROOT)
    try:
        return server.wait()
    except KeyboardInterrupt:
        raise KeyboardInterrupt(f"interrupted: {_stop(server)}; the session's results are in "
                                f"reports/{session}/") from None
