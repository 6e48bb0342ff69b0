"""The project's JupyterLab: notebooks open as notebooks, on the project's kernel, at the root.

`ltrlib lab` (and `make lab`) starts JupyterLab

* rooted at the repository, so ``reports/`` (tables, figures, executed notebooks) is in the
  file browser beside ``notebooks/``;
* with the session's data, scale, seed and run id in the environment
  (`ltrlib.config.session`): the notebooks' parameters cells read them, so nobody edits a
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
import subprocess
import sys
from pathlib import Path

from ltrlib import config
from ltrlib.atomic import atomic_write_text

__all__ = ["KERNEL_NAME", "LAB_SETTINGS", "command", "environment", "install", "main"]

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
    """``base`` (default ``os.environ``) with the session variables `config.session` reads."""
    if dataset == "synthetic":
        config.get_scale(scale)  # an unknown scale is refused before JupyterLab starts
    env = dict(os.environ if base is None else base)
    env.pop(config.BATCH_ENV, None)  # a lab started from a batch kernel is still interactive
    values = {"dataset": dataset, "data_dir": data_dir, "scale": scale, "seed": str(int(seed)),
              "run_id": run_id}
    for name, value in values.items():
        var = config.SESSION_ENV[name]
        if value:
            env[var] = value
        else:
            env.pop(var, None)
    return env


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


def main(*, dataset: str, data_dir: str, scale: str, seed: int, run_id: str, port: int | None,
         open_browser: bool, extra: list[str] = ()) -> int:
    """`ltrlib lab`: install, say what the session is, and run JupyterLab until it stops."""
    install()
    env = environment(dataset=dataset, data_dir=data_dir, scale=scale, seed=seed, run_id=run_id)
    session_run = run_id or config.interactive_run_id(dataset, scale, seed)
    print(f"ltrlib lab: notebooks default to dataset {dataset}, scale {scale}, seed {seed}; "
          f"results go to reports/{session_run}/", file=sys.stderr)
    return subprocess.call(command(port=port, open_browser=open_browser, extra=extra), env=env,
                           cwd=config.PROJ_ROOT)
