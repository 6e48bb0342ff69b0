"""A notebook's session: its standard parameters' defaults from the environment (`session`,
`SESSION_ENV`), whether it runs in a batch (`in_batch`), how its kernel shows warnings and
errors, its run id (`default_run_id`), and the one parser of list-valued parameters
(`parse_list`). Every notebook calls `session` first.
"""

from __future__ import annotations

import os
import re
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

from ltrlib.config import PROJ_ROOT, get_scale

__all__ = ["BATCH_ENV", "SESSION_ENV", "Session", "bring_errors_into_view", "cli_command", "dataset_label",
           "default_run_id", "in_batch", "interactive_run_id", "parse_list", "session", "show_warnings_plainly"]


#: Environment variables a JupyterLab session takes its data and run from (`ltrlib lab`,
#: `make lab SCALE=tiny RUN_ID=...`), so nobody edits a tracked notebook to change them.
SESSION_ENV = {"dataset": "LTRLIB_DATASET", "data_dir": "LTRLIB_DATA_DIR", "scale": "LTRLIB_SCALE",
               "seed": "LTRLIB_SEED", "run_id": "LTRLIB_RUN_ID"}
#: Set by the batch runner in its kernels' environment: notebooks then draw plain figures.
#: Executed notebooks therefore carry no ``interactive = False``, and reopened in JupyterLab
#: they show their widgets again.
BATCH_ENV = "LTRLIB_BATCH"


@dataclass(frozen=True)
class Session:
    """The standard notebook parameters' defaults in this process (see `session`)."""

    dataset: str
    data_dir: str
    scale: str
    seed: int
    run_id: str
    interactive: bool


#: Warnings already shown in this kernel (`show_warnings_plainly`), by their text.
_SHOWN_WARNINGS: set[str] = set()


def _show_warning_plainly(message, category, filename, lineno, file=None, line=None) -> None:
    text = str(message)
    if text in _SHOWN_WARNINGS:
        return
    _SHOWN_WARNINGS.add(text)
    kind = "" if category is UserWarning else f"{category.__name__}: "
    print(f"⚠ {kind}{text}", file=sys.stdout)


def show_warnings_plainly() -> None:
    """In a notebook kernel, show each warning once, as a plain line of the cell's output
    (``⚠ Split1 left out: ...``). Python's own display goes to stderr, which JupyterLab draws
    as a red box echoing a source line of the library or of the kernel's temporary file:
    it reads as an error and says nothing a researcher can use. Outside a kernel (scripts,
    tests) warnings keep Python's display."""
    if "ipykernel" in sys.modules:
        warnings.showwarning = _show_warning_plainly


def _error_into_view(shell, etype, value, tb, tb_offset=None) -> None:
    shell.showtraceback((etype, value, tb), tb_offset=tb_offset)
    from IPython.display import Javascript, display

    # After a pause: the output is drawn, and the notebook has done its own scrolling.
    display(Javascript("setTimeout(() => element.scrollIntoView({block: 'center'}), 500)"))


def bring_errors_into_view() -> None:
    """In an interactive notebook kernel, a cell that fails scrolls its error into view.
    JupyterLab's Run All stops at the failing cell but leaves the view where it had
    scheduled cells, at the end of the notebook, with the error off-screen
    (jupyterlab/jupyterlab#8714); the error's output scrolls itself back instead. Batch
    kernels are left alone: nobody looks at them, and papermill reads errors as they are."""
    if "ipykernel" not in sys.modules or in_batch():
        return
    from IPython import get_ipython

    shell = get_ipython()
    if shell is not None:
        shell.set_custom_exc((Exception,), _error_into_view)


def session() -> Session:
    """Defaults of the notebooks' standard parameters, from the environment.

    A notebook's parameters cell reads its defaults from here; a batch run's injected
    parameters come after that cell and win. Without any variable set this is the synthetic
    data at ``small``, seed 0, run id ``interactive-synthetic-small-seed0``: the run id names
    the data, so sessions on different data never share a report folder by accident.
    Every notebook calls it first, so it also sets the kernel to `show_warnings_plainly` and
    to `bring_errors_into_view`.
    """
    show_warnings_plainly()
    bring_errors_into_view()
    env = os.environ
    dataset = env.get(SESSION_ENV["dataset"]) or "synthetic"
    scale = env.get(SESSION_ENV["scale"]) or "small"
    if dataset == "synthetic":
        get_scale(scale)  # an unknown scale is refused here, naming the choices
    raw_seed = env.get(SESSION_ENV["seed"]) or "0"
    try:
        seed = int(raw_seed)
    except ValueError:
        raise ValueError(f"{SESSION_ENV['seed']}={raw_seed!r} is not an integer seed") from None
    run_id = env.get(SESSION_ENV["run_id"]) or interactive_run_id(dataset, scale, seed)
    return Session(dataset=dataset, data_dir=env.get(SESSION_ENV["data_dir"], ""), scale=scale,
                   seed=seed, run_id=run_id, interactive=not in_batch())


def parse_list(spec: str, kind=str, name: str = "value", *, allow_empty: bool = False) -> list:
    """A notebook parameter's comma-separated list: ``"0,0.5, 1"`` -> ``[0.0, 0.5, 1.0]``
    with ``kind=float``. Blank items are skipped. ValueError naming the parameter ``name``
    for an item ``kind`` rejects, or for an empty list unless ``allow_empty``.

    Papermill parameters are scalars, so every list-valued notebook parameter is a string
    parsed here, one way, with one kind of error message.
    """
    out = []
    for part in str(spec).split(","):
        if part.strip():
            try:
                out.append(kind(part.strip()))
            except ValueError:
                raise ValueError(f"{name}: {part.strip()!r} is not a valid {getattr(kind, '__name__', kind)}") from None
    if not out and not allow_empty:
        raise ValueError(f"{name}: empty list {spec!r}; give comma-separated values")
    return out


def cli_command() -> str:
    """The command line's name as a user types it at the project's root, for messages that
    give a command: ``.venv/bin/ltrlib`` where `make install` put it (it is not on PATH),
    else ``ltrlib`` (an environment of the user's own, conda's for example)."""
    return ".venv/bin/ltrlib" if (PROJ_ROOT / ".venv" / "bin" / "ltrlib").exists() else "ltrlib"


def in_batch() -> bool:
    """Whether this process is a batch run's kernel (`BATCH_ENV`)."""
    return os.environ.get(BATCH_ENV, "") not in ("", "0")


def dataset_label(dataset: str) -> str:
    """The dataset part of a run id: "synthetic", or the basename of a user path."""
    if dataset == "synthetic":
        return dataset
    name = Path(str(dataset).rstrip("/\\")).expanduser().name or "dataset"
    # A run_id is one path component; keep only characters that are safe everywhere.
    return re.sub(r"[^A-Za-z0-9._+-]", "_", name).lstrip(".") or "dataset"


def default_run_id(dataset: str, scale: str, seed: int) -> str:
    """``<dataset_label>-<scale>-seed<seed>``: deterministic, so a repeated run resumes."""
    return f"{dataset_label(dataset)}-{scale}-seed{seed}"


def interactive_run_id(dataset: str, scale: str, seed: int) -> str:
    """A JupyterLab session's run id when none is given: ``interactive-`` + `default_run_id`."""
    return "interactive-" + default_run_id(dataset, scale, seed)
