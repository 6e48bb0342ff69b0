"""Batch runner: execute the numbered notebooks with papermill into ``reports/<run_id>/``.

The notebooks are stored as jupytext percent scripts (``notebooks/NN_topic.py``). The runner
converts each one in memory with ``jupytext.read`` - the same conversion JupyterLab applies
when a user opens the script - and hands the result to papermill, so a batch run executes
exactly what a user sees.

One run directory stands for one set of parameters. Its manifest ``run.json`` records the
parameters, and per notebook its status, timings and injected parameters; a second call with
the same run_id resumes: notebooks recorded as completed (and whose executed notebook exists)
are skipped unless ``force=True``. While a run executes it holds ``<run_id>/.run.lock``, so a
second run of the same run_id started meanwhile is refused, naming the first one's PID.
"""

from __future__ import annotations

import ast
import contextlib
import os
import re
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ltrlib import __version__, config, processes, progress, provenance, sessions, timing
from ltrlib.sessions import dataset_label, default_run_id
from ltrlib.manifest import FILE as MANIFEST_FILE
from ltrlib.manifest import NotebookRecord, RunManifest, code_commit, machine_arithmetic, now, package_versions
from ltrlib.progress import RunBar
from ltrlib.atomic import atomic_write_text
from ltrlib.report import clear_notebook_outputs, validate_name, write_index

__all__ = [
    "STANDARD_PARAMETERS",
    "NotebookError",
    "RunInterrupted",
    "dataset_label",
    "declared_parameters",
    "default_run_id",
    "discover",
    "load_notebook",
    "notebook_needs",
    "run_all",
    "select_notebooks",
]

# Parameters every notebook declares and the runner always injects. User parameters may not
# override them: each has its own argument (and CLI option), recorded in the run manifest.
STANDARD_PARAMETERS = ("dataset", "data_dir", "scale", "seed", "run_id", "interactive")

_NOTEBOOK_RE = re.compile(r"^(\d+)_[A-Za-z0-9_\-]+\.py$")

# papermill needs a kernelspec to pick its parameter translator; jupytext scripts carry none
# (the project's jupytext.toml strips notebook metadata to keep diffs clean).
_KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}


class NotebookError(RuntimeError):
    """A notebook failed during a batch run.

    Attributes name what failed: ``notebook`` (e.g. "01_category_analysis"), ``cell`` (1-based
    position among the notebook's own cells, as in JupyterLab; None if unknown),
    ``exec_count``, ``source_line`` (first line of the cell), ``ename``/``evalue`` (the
    exception), and ``saved`` (the partially executed notebook kept for inspection).
    """

    def __init__(
        self,
        notebook: str,
        *,
        ename: str,
        evalue: str,
        cell: int | None = None,
        exec_count: int | None = None,
        source_line: str | None = None,
        saved: Path | None = None,
    ):
        self.notebook = notebook
        self.cell = cell
        self.exec_count = exec_count
        self.source_line = source_line
        self.ename = ename
        self.evalue = evalue
        self.saved = saved
        super().__init__(self._message())

    def _message(self) -> str:
        where = f"notebook {self.notebook}"
        if self.cell is not None:
            count = f", In [{self.exec_count}]" if self.exec_count is not None else ""
            where += f", cell {self.cell}{count}: {self.source_line!r}"
        message = f"{where}\n  {self.ename}: {self.evalue}"
        if self.saved is not None:
            message += f"\n  partially executed notebook saved to {self.saved}"
        return message


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C during a batch run: says, in one line, what finished and how to resume."""

    def __init__(self, run_id: str, running: str, finished: list[str]):
        self.run_id, self.running, self.finished = run_id, running, finished
        kept = f"{len(finished)} finished notebook(s) kept ({', '.join(finished)})" if finished else "nothing finished"
        super().__init__(f"interrupted during {running}; {kept}. The same command resumes run {run_id!r} "
                         "from there.")


# --------------------------------------------------------------------------- notebooks


def discover(notebooks_dir: str | os.PathLike | None = None) -> list[Path]:
    """The ``NN_topic.py`` notebooks of a directory, ordered by number then name.

    Other files (helpers, paired ``.ipynb``, checkpoints) are ignored.
    """
    root = Path(notebooks_dir) if notebooks_dir is not None else config.NOTEBOOKS_DIR
    if not root.is_dir():
        raise ValueError(f"notebooks directory {root} does not exist")
    found = [p for p in root.iterdir() if p.is_file() and _NOTEBOOK_RE.fullmatch(p.name)]
    return sorted(found, key=lambda p: (int(_NOTEBOOK_RE.fullmatch(p.name).group(1)), p.name))


def select_notebooks(notebooks: Sequence[Path], only: str | Iterable[str] | None) -> list[Path]:
    """Keep the notebooks chosen by ``only``: numbers ("00", "3") or names ("01_topic[.py]").

    ``only`` may be a comma-separated string or an iterable of selectors. Each selector must
    match at least one notebook, so a typo fails loudly instead of silently running nothing.
    """
    if only is None:
        return list(notebooks)
    selectors = [only] if isinstance(only, str) else list(only)
    selectors = [s for item in selectors for s in sessions.parse_list(item, name="--only", allow_empty=True)]
    if not selectors:  # --only '' would otherwise run nothing, reported as "no notebooks found"
        available = ", ".join(p.stem for p in notebooks) or "none"
        raise ValueError(f"--only {only!r} is an empty selection; give notebook numbers or names, "
                         f"comma-separated; available: {available}")
    chosen: set[Path] = set()
    for sel in selectors:
        stem = sel[:-3] if sel.endswith(".py") else sel
        if stem.isdigit():
            hits = [p for p in notebooks if int(p.name.split("_", 1)[0]) == int(stem)]
        else:
            hits = [p for p in notebooks if p.stem == stem]
        if not hits:
            available = ", ".join(p.stem for p in notebooks) or "none"
            raise ValueError(f"--only {sel!r} matches no notebook; available: {available}")
        chosen.update(hits)
    return [p for p in notebooks if p in chosen]


def load_notebook(path: str | os.PathLike):
    """Convert a jupytext script to a notebook node ready for papermill.

    Adds a Python kernelspec (papermill looks it up to translate parameters) and the
    ``tags`` list papermill expects on every cell.
    """
    import jupytext

    path = Path(path)
    try:
        nb = jupytext.read(path)
    except Exception as exc:  # jupytext raises assorted errors on malformed scripts
        raise ValueError(f"cannot read notebook {path}: {exc}") from exc
    nb.metadata.setdefault("kernelspec", dict(_KERNELSPEC))
    for cell in nb.cells:
        cell.metadata.setdefault("tags", [])
    return nb


def declared_parameters(nb) -> dict[str, dict[str, Any]]:
    """Parameters declared in the notebook's ``parameters`` cell, as papermill infers them.

    Maps each name to ``{"name", "inferred_type_name", "default", "help"}``; empty if the
    notebook has no parameters cell.
    """
    import papermill

    return papermill.inspect_notebook(nb)


# --------------------------------------------------------------------------- parameters


def _absolute_if_exists(value: str) -> str:
    # Notebooks execute with cwd = the project root, so a path the user typed relative to
    # their own working directory must be made absolute here.
    if value and value != "synthetic" and Path(value).expanduser().exists():
        return str(Path(value).expanduser().resolve())
    return value


def _check_dataset(dataset: str, data_dir: str) -> None:
    """Refuse a dataset the notebooks could not load, before a kernel starts or a report
    folder is made: otherwise the first notebook fails inside its kernel and leaves an empty
    reports/<run_id>/ behind. The resolution is `load_dataset`'s own (`locate_dataset`)."""
    from ltrlib.data.loading import locate_dataset

    try:
        locate_dataset(dataset, data_dir)
    except OSError as exc:  # not found, a directory, unreadable: the message names the path
        raise ValueError(f"--dataset: {exc}") from None


def _check_paper_dataset(key: str, dataset: str, data_dir: str, scale: str, seed: int) -> list[int] | None:
    """Refuse a ``--paper-dataset`` the data contradicts before a kernel starts
    (`ltrlib.fidelity.datasets.check_declaration`); the train / vali / test query counts it
    was checked against, for the ledger, or None without a declaration."""
    if not key:
        return None
    from ltrlib.data.loading import load_dataset
    from ltrlib.fidelity.datasets import check_declaration

    splits = load_dataset(dataset, data_dir, scale, seed)
    parts = [p for p in (splits.train, splits.vali, splits.test)]
    queries = tuple(p.n_queries if p is not None else 0 for p in parts)
    declaration = check_declaration(key, splits.train.n_features, queries, source=f"dataset {dataset!r}")
    if not declaration.whole:
        print(f"ltrlib run: note: {declaration.note()}", file=sys.stderr)
    return list(queries)


def _check_categories(plan: dict[str, dict[str, Any]], declared: dict[str, dict[str, dict[str, Any]]],
                      user: dict[str, Any]) -> None:
    """Refuse a category choice the data cannot honour before a kernel starts or a report
    folder is made (`ltrlib.noniid.checks`); say once what the data only weakens. The check
    sees what each notebook will run with: the plan over the notebook's declared defaults
    (`_running_parameters`), so the splits' "auto" categories are resolved here as notebook
    02 resolves them."""
    from ltrlib.noniid.checks import check_category_choices

    for note in check_category_choices(_running_parameters(plan, declared), given=user):
        print(f"ltrlib run: note: {note}", file=sys.stderr)


def _running_parameters(plan: dict[str, dict[str, Any]],
                       declared: dict[str, dict[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Per notebook, the values its code will see: ``plan`` (what the runner injects) over the
    literal defaults of its parameters cell. A default that is an expression (the session's
    standard parameters) is left out: the runner injects those."""
    out = {}
    for notebook, injected in plan.items():
        defaults = {}
        for name, spec in declared[notebook].items():
            if name not in injected:
                try:
                    defaults[name] = ast.literal_eval(spec["default"])
                except (ValueError, SyntaxError):
                    pass
        out[notebook] = {**defaults, **injected}
    return out


_TYPE_CHECKS = {
    "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "float": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "bool": lambda v: isinstance(v, bool),
    "str": lambda v: isinstance(v, str),
}


def _check_type(name: str, value: Any, declared: dict[str, Any], notebook: str) -> None:
    """Reject a value whose type contradicts the parameter's annotation (when it has one)."""
    type_name = declared.get("inferred_type_name")
    check = _TYPE_CHECKS.get(type_name)
    if check is not None and not check(value):
        raise ValueError(
            f"parameter {name!r} of notebook {notebook} is declared {type_name}, "
            f"got {value!r} ({type(value).__name__})"
        )


def _as_declared(value: Any, declared: dict[str, Any]) -> Any:
    # `-p category_feature 220` parses as the int 220; a parameter declared str (a feature
    # index or name) takes the digits as written instead of being refused.
    if declared.get("inferred_type_name") == "str" and isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return value


def _plan_parameters(
    declared: dict[str, dict[str, dict[str, Any]]],
    standard: dict[str, Any],
    user: dict[str, Any],
) -> dict[str, dict[str, Any]]:
    """Per notebook, the parameters to inject; ValueError on anything it cannot honour.

    Every notebook must declare all standard parameters. A user parameter must be declared by
    at least one selected notebook and is injected only into the notebooks that declare it,
    so one ``-p`` can tune one notebook without breaking the others.
    """
    for name in user:
        if name in STANDARD_PARAMETERS:
            option = "--" + name.replace("_", "-")
            raise ValueError(f"parameter {name!r} is set by the runner; use {option} instead of -p")

    for notebook, params in declared.items():
        missing = [p for p in STANDARD_PARAMETERS if p not in params]
        if missing:
            raise ValueError(
                f"notebook {notebook} does not declare the standard parameter(s) {', '.join(missing)} "
                f"in its parameters cell (declared: {', '.join(params) or 'none'}); every notebook "
                f"must declare {', '.join(STANDARD_PARAMETERS)}"
            )

    for name in user:
        if not any(name in params for params in declared.values()):
            listing = "; ".join(
                f"{nb} declares {', '.join(p for p in params if p not in STANDARD_PARAMETERS) or 'only the standard ones'}"
                for nb, params in declared.items()
            )
            raise ValueError(f"unknown parameter {name!r}: no selected notebook declares it ({listing})")

    plan = {}
    for notebook, params in declared.items():
        values = dict(standard)
        values.update({k: _as_declared(v, params[k]) for k, v in user.items() if k in params})
        for key, value in values.items():
            _check_type(key, value, params[key], notebook)
        plan[notebook] = values
    return plan


# --------------------------------------------------------------------------- manifest


#: Held while a notebook's thread changes the manifest and writes it: with ``jobs`` several
#: notebooks run at once, and one serialising the manifest while another changes its entry
#: would fail or write a torn record.
_MANIFEST_LOCK = threading.Lock()


def _is_completed(run_dir: Path, manifest: RunManifest, notebook: str) -> bool:
    """Completed by the record, and its executed notebook still there."""
    return manifest.completed(notebook) and (run_dir / "notebooks" / f"{notebook}.ipynb").exists()


def _check_resume(
    run_dir: Path,
    manifest: RunManifest,
    run_params: dict[str, Any],
    plan: dict[str, dict[str, Any]],
) -> None:
    """Refuse to mix parameter sets in one run directory."""
    run_id = run_dir.name
    hint = "pass --force (force=True) to rerun with the new parameters, or choose another --run-id"
    old = manifest.params
    if old != run_params:
        diffs = ", ".join(
            f"{k}: {old.get(k)!r} -> {run_params.get(k)!r}"
            for k in sorted(set(old) | set(run_params))
            if old.get(k) != run_params.get(k)
        )
        raise ValueError(f"run {run_id!r} in {run_dir} was made with different parameters ({diffs}); {hint}")
    for notebook, params in plan.items():
        entry = manifest.notebooks.get(notebook)
        if entry and _is_completed(run_dir, manifest, notebook) and entry.parameters != params:
            raise ValueError(
                f"notebook {notebook} of run {run_id!r} completed with parameters {entry.parameters}, "
                f"now {params}; {hint}"
            )


# --------------------------------------------------------------------------- execution


def _this_interpreter_kernel_manager(socket_dir: str, kernel_log=None, env: dict[str, str] | None = None):
    """A kernel manager class that always starts ipykernel with ``sys.executable``, its
    sockets in ``socket_dir``, its process's own output (not the notebook's: that comes over
    the kernel's sockets) into the open file ``kernel_log`` when given, and ``env`` added to
    its environment (this notebook's own: its fit log, its progress folder, its threads;
    notebooks run side by side cannot share the runner's ``os.environ`` for them).

    jupyter_client resolves a kernel *name* through kernelspec directories, where a user-level
    "python3" spec can point at another interpreter. Building the spec from ipykernel for the
    running interpreter needs no installed kernelspec and no set-up step, and guarantees the
    notebooks see the same environment (and ltrlib) as the runner.
    """
    from ipykernel.kernelspec import RESOURCES, get_kernel_dict
    from jupyter_client.kernelspec import KernelSpec
    from jupyter_client.manager import AsyncKernelManager
    from traitlets import default

    class ThisInterpreterKernelManager(AsyncKernelManager):
        # Local sockets instead of TCP: the kernel is on this machine, and ipykernel warns
        # about unencrypted TCP in every batch notebook otherwise.
        @default("transport")
        def _transport_default(self):
            return "ipc"

        # jupyter_client names IPC sockets "kernel-ipc-1" ... in the working directory,
        # taking the first free numbers: two kernels started at once there (two runs, the
        # test workers) take the same sockets and read each other's messages ("Invalid
        # Signature"). An absolute path in a directory of this kernel's own cannot clash.
        @default("ip")
        def _ip_default(self):
            return os.path.join(socket_dir, "kernel")

        @property
        def kernel_spec(self):
            if self._kernel_spec is None:
                self._kernel_spec = KernelSpec(resource_dir=RESOURCES, **get_kernel_dict())
            return self._kernel_spec

        # The kernel process writes to its own stdout and stderr what never reaches the
        # notebook: native libraries' lines, ipykernel's log ("KeyboardInterrupt caught in
        # kernel" when a failed or interrupted run stops it, asyncio's "Task was destroyed").
        # Inherited, they would land on the batch console between the runner's own lines.
        async def _async_launch_kernel(self, kernel_cmd, **kw):
            if kernel_log is not None:
                kw.update(stdout=kernel_log, stderr=kernel_log)
            if env:
                kw["env"] = {**(kw.get("env") or os.environ), **env}
            # A batch that dies (killed, or stopped before its kernel was up) takes its
            # kernel with it; the kernel's workers then end with the kernel.
            kw["preexec_fn"] = processes.ends_with_this_thread()
            return await super()._async_launch_kernel(kernel_cmd, **kw)

    return ThisInterpreterKernelManager


@contextlib.contextmanager
def _kernel_environment(reports_dir: Path) -> Iterator[None]:
    """Kernels started inside the block are batch kernels that write where this run expects.

    Kernels inherit the runner's environment: ``ltrlib.config`` reads LTRLIB_REPORTS_DIR, and
    `sessions.session` turns the notebooks' ``interactive`` default off under LTRLIB_BATCH (so
    the executed notebooks carry no injected ``interactive = False``).
    """
    wanted = {"LTRLIB_REPORTS_DIR": str(reports_dir), sessions.BATCH_ENV: "1"}
    previous = {name: os.environ.get(name) for name in wanted}
    os.environ.update(wanted)
    try:
        yield
    finally:
        processes.restore_environment(previous)


def _source_cell_number(executed_nb, cell_index: int) -> int:
    """1-based position of a cell in the notebook as the user sees it (without the injected cell)."""
    injected = sum(
        1
        for cell in executed_nb.cells[:cell_index]
        if "injected-parameters" in cell.get("metadata", {}).get("tags", [])
    )
    return cell_index - injected + 1


#: The kernel process's own output (`_this_interpreter_kernel_manager`), beside the executed
#: notebook; kept when the notebook fails or is interrupted.
KERNEL_LOG = ".{notebook}.kernel.log"


def _execute(
    nb,
    notebook: str,
    parameters: dict[str, Any],
    out_dir: Path,
    kernel_name: str | None,
    log_output: bool,
    env: dict[str, str] | None = None,
) -> Path:
    """Execute one notebook; return the executed notebook's path or raise NotebookError.
    ``env``: added to its kernel's environment (with a user's ``kernel_name``, whose
    manager is jupyter_client's own, through this process's environment while it runs).

    papermill saves after every cell, so it writes to a hidden temporary name that is renamed
    to ``NN_topic.ipynb`` only on success; on failure it becomes ``NN_topic.failed.ipynb``.
    """
    import nbformat
    import papermill
    from papermill.exceptions import PapermillExecutionError

    final = out_dir / f"{notebook}.ipynb"
    failed = out_dir / f"{notebook}.failed.ipynb"
    partial = out_dir / f".{notebook}.running.ipynb"
    engine_kwargs: dict[str, Any] = {}
    socket_dir = tempfile.TemporaryDirectory(prefix="ltrlib-kernel-")
    # With --log-output the console is the log; otherwise the kernel's own lines go to a file
    # kept beside a failed notebook (`KERNEL_LOG`), and removed when the notebook completes.
    kernel_log = (None if log_output or kernel_name is not None
                  else open(out_dir / KERNEL_LOG.format(notebook=notebook), "w"))
    previous = {}
    if kernel_name is None:
        engine_kwargs["kernel_manager_class"] = _this_interpreter_kernel_manager(socket_dir.name, kernel_log, env)
    else:  # one notebook at a time (run_all refuses jobs with a kernel name)
        previous = {k: os.environ.get(k) for k in env or {}}
        os.environ.update(env or {})
    try:
        papermill.execute_notebook(
            nb,
            str(partial),
            parameters=parameters,
            kernel_name=kernel_name or _KERNELSPEC["name"],
            language="python",
            progress_bar=False,
            stdout_file=sys.stdout if log_output else None,
            stderr_file=sys.stderr if log_output else None,
            cwd=str(config.PROJ_ROOT),
            **engine_kwargs,
        )
    except PapermillExecutionError as exc:
        saved = _keep_partial(partial, failed)
        cell = exc.cell_index + 1
        if saved is not None:
            cell = _source_cell_number(nbformat.read(saved, as_version=4), exc.cell_index)
        lines = (exc.source or "").strip().splitlines()
        source_line = lines[0] if lines else ""
        raise NotebookError(
            notebook,
            cell=cell,
            exec_count=exc.exec_count,
            source_line=source_line,
            ename=exc.ename,
            evalue=exc.evalue,
            saved=saved,
        ) from None  # the kernel's traceback is in the saved notebook; a second one is noise
    except Exception as exc:  # kernel died, failed to start, timed out ...
        saved = _keep_partial(partial, failed)
        raise NotebookError(notebook, ename=type(exc).__name__, evalue=str(exc), saved=saved) from exc
    except BaseException:  # KeyboardInterrupt: keep what ran, then let it propagate
        _keep_partial(partial, failed)
        raise
    finally:
        processes.restore_environment(previous)
        socket_dir.cleanup()
        if kernel_log is not None:
            kernel_log.close()
            _drop_kernel_log(Path(kernel_log.name), completed=False)
    os.replace(partial, final)
    failed.unlink(missing_ok=True)
    _drop_kernel_log(out_dir / KERNEL_LOG.format(notebook=notebook), completed=True)
    return final


def _drop_kernel_log(path: Path, completed: bool) -> None:
    """Remove a notebook's kernel log once it completed, or when it holds nothing to read."""
    if path.exists() and (completed or path.stat().st_size == 0):
        path.unlink()


def _export_html(executed: Path) -> None:
    """``NN_topic.html`` beside the executed notebook, so the index links a readable page
    (a browser shows an .ipynb as raw JSON). A failure here is reported, never fatal."""
    import nbformat
    from nbconvert import HTMLExporter

    try:
        body, _ = HTMLExporter().from_notebook_node(nbformat.read(executed, as_version=4))
        atomic_write_text(executed.with_suffix(".html"), body)
    except Exception as exc:  # noqa: BLE001 - the notebook ran; its page is a convenience
        print(f"ltrlib run: {executed.name} could not be exported as HTML: {type(exc).__name__}: {exc}",
              file=sys.stderr)


def _keep_partial(partial: Path, failed: Path) -> Path | None:
    if partial.exists():
        os.replace(partial, failed)
        return failed
    return None


def _expected_seconds(reports_dir: Path, plan: dict[str, dict[str, Any]]) -> dict[str, float]:
    """Per notebook of ``plan``, the seconds it is expected to take, for the run's ETA: its
    time in the most recent comparable run recorded under ``reports_dir`` (`_measured_seconds`),
    else the scale's `timing.NOTEBOOK_SECONDS` (``small``'s for a scale without figures; a
    notebook not listed there gets their median). This machine's probed pace does not scale
    them: it only widens the range the ETA states (`ltrlib.timing.slow_factor`)."""
    measured = _measured_seconds(reports_dir, plan)

    def default(name: str) -> float:
        figures = timing.NOTEBOOK_SECONDS.get(plan[name].get("scale"), timing.NOTEBOOK_SECONDS["small"])
        return figures.get(name, figures.get(name[:2], statistics.median(figures.values())))

    return {name: measured[name] if name in measured else default(name) for name in plan}


def _machine_pace(reports_dir: Path, to_run: dict[str, dict[str, Any]], progress: bool) -> float:
    """This machine's pace (`ltrlib.timing.pace`, a fit of a second or two), measured only for
    a shown bar with a notebook that no comparable run here has timed; 1.0 otherwise. The run
    records it as ``machine_pace``, and the bar's ETA takes it as the top of its range."""
    return timing.pace() if progress and set(to_run) - set(_measured_seconds(reports_dir, to_run)) else 1.0


def _measured_seconds(reports_dir: Path, plan: dict[str, dict[str, Any]]) -> dict[str, float]:
    """The notebooks of ``plan`` a comparable run recorded under ``reports_dir``, with its
    seconds: the most recent ``run.json`` entry completed in one attempt with the same
    parameters but the run id and seed, failing that one on the same dataset and scale."""
    def varying(params: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in params.items() if k not in ("run_id", "seed")}

    best: dict[str, tuple[int, str, float]] = {}
    for path in reports_dir.glob(f"*/{MANIFEST_FILE}"):
        try:
            manifest = RunManifest.read(path.parent)
        except (OSError, ValueError, TypeError):  # unreadable, or not a run record: no timings
            continue
        for name, entry in manifest.notebooks.items():
            # A notebook resumed after an interruption timed its last stretch, not itself.
            if name not in plan or not entry.completed or not entry.seconds or entry.earlier_seconds is not None:
                continue
            params = entry.parameters
            if varying(params) == varying(plan[name]):
                score = 2
            elif all(params.get(k) == plan[name].get(k) for k in ("dataset", "scale")):
                score = 1
            else:
                continue
            found = (score, entry.finished or "", float(entry.seconds))
            best[name] = max(best.get(name, found), found)
    return {name: seconds for name, (_, _, seconds) in best.items()}


def run_all(
    dataset: str = "synthetic",
    data_dir: str = "",
    scale: str = "small",
    seed: int = 0,
    run_id: str | None = None,
    only: str | Iterable[str] | None = None,
    force: bool = False,
    parameters: dict[str, Any] | None = None,
    reports_dir: str | os.PathLike | None = None,
    notebooks_dir: str | os.PathLike | None = None,
    kernel_name: str | None = None,
    progress: bool = True,
    log_output: bool = False,
    paper_dataset: str = "",
    jobs: int = 1,
) -> Path:
    """Execute the numbered notebooks into ``<reports_dir>/<run_id>/`` and return that directory.

    Parameters
    ----------
    dataset, data_dir, scale, seed:
        Standard parameters injected into every notebook (with ``run_id``; ``interactive``
        is off through the kernels' environment, see `_kernel_environment`). An existing
        ``dataset``/``data_dir`` path is made absolute.
    run_id:
        Run directory name; default ``<dataset_label>-<scale>-seed<seed>``.
    only:
        Notebook numbers or names ("00,01", ["00_overview"]); default all.
    force:
        Rerun notebooks already completed for this run_id, and allow new parameters for it.
    parameters:
        Extra notebook parameters. Each must be declared by at least one selected notebook
        and is injected only into the notebooks that declare it.
    reports_dir, notebooks_dir:
        Default ``config.REPORTS_DIR`` and ``config.NOTEBOOKS_DIR``.
    kernel_name:
        A kernelspec name; default: ipykernel on the running interpreter (no kernelspec needed).
    progress:
        Show a progress bar across notebooks.
    log_output:
        Echo the notebooks' stdout/stderr while they run.
    paper_dataset:
        The papers' dataset the data is (`ltrlib.fidelity.datasets`: ``mslr-web10k``, ...),
        checked against its feature count before anything runs; the fidelity ledger then
        sets the papers' printed numbers for it beside the run's. Empty: none.
    jobs:
        Notebooks run at once (default 1, one after another). Above 1 the batch runs as a
        graph (`_run_graph`): a notebook starts once those it reads have completed
        (`NOTEBOOK_NEEDS`), and each kernel gets the cores // ``jobs`` threads. A notebook's
        results do not depend on it (a test compares the tables byte for byte).

    Raises
    ------
    ValueError
        Before anything runs: bad selection, unknown or mistyped parameter, a notebook without
        the standard parameters, a dataset that is not there, a run_id that exists with other
        parameters, or a run of the same run_id that is still running (`_run_lock`).
    NotebookError
        A notebook failed; the run manifest and index are still written.
    """
    config.get_scale(scale)  # fail on an unknown scale before starting any kernel
    if int(jobs) < 1:
        raise ValueError(f"jobs = {jobs}: give 1 (one notebook at a time) or more")
    if jobs > 1 and kernel_name is not None:
        raise ValueError(f"jobs = {jobs} with kernel {kernel_name!r}: notebooks run side by side need the "
                         "project's own kernel (leave the kernel name out), which gives each its environment")
    user = dict(parameters or {})
    reports_dir = Path(reports_dir) if reports_dir is not None else Path(config.REPORTS_DIR)
    reports_dir = reports_dir.expanduser().resolve()
    dataset = _absolute_if_exists(dataset)
    data_dir = _absolute_if_exists(data_dir)
    _check_dataset(dataset, data_dir)
    run_id = validate_name(run_id if run_id is not None else default_run_id(dataset, scale, seed), "run_id")
    run_dir = reports_dir / run_id

    selected = select_notebooks(discover(notebooks_dir), only)
    if not selected:
        raise ValueError(f"no NN_topic.py notebooks found in {notebooks_dir or config.NOTEBOOKS_DIR}")
    loaded = {path.stem: load_notebook(path) for path in selected}
    declared = {name: declared_parameters(nb) for name, nb in loaded.items()}
    standard = {
        "dataset": dataset,
        "data_dir": data_dir,
        "scale": scale,
        "seed": seed,
        "run_id": run_id,
    }
    plan = _plan_parameters(declared, standard, user)
    _check_categories(plan, declared, user)
    declared_queries = _check_paper_dataset(paper_dataset, dataset, data_dir, scale, seed)

    # Run-level parameters: what makes two runs comparable. User parameters are recorded
    # per notebook, since each goes only to the notebooks that declare it.
    run_params = {"dataset": dataset, "data_dir": data_dir, "scale": scale, "seed": seed}
    if paper_dataset:  # only when given: runs recorded before the option stay comparable
        run_params["paper_dataset"] = paper_dataset
    with _run_lock(run_dir):  # before the manifest is read: the resume check sees no half-run
        manifest = RunManifest.read(run_dir)
        if manifest is not None and not force:
            _check_resume(run_dir, manifest, run_params, plan)
        manifest = _start_manifest(manifest, run_id, run_params)

        if force:  # the notebooks rebind the run to the data they load (ltrlib.provenance)
            _check_journals(run_dir)  # before anything is deleted
            (run_dir / provenance.FILE).unlink(missing_ok=True)
        (run_dir / "notebooks").mkdir(parents=True, exist_ok=True)
        manifest.write(run_dir)
        try:
            to_run = {nb: params for nb, params in plan.items()
                      if force or not _is_completed(run_dir, manifest, nb)}
            if declared_queries:
                manifest.paper_dataset_queries = declared_queries
            pace = _machine_pace(reports_dir, to_run, progress)
            manifest.machine_pace = round(pace, 3)
            with _kernel_environment(reports_dir), RunBar(_expected_seconds(reports_dir, to_run), progress,
                                                          slow=timing.slow_factor(pace)) as bar:
                _run_notebooks(to_run, loaded, plan, run_dir, manifest, kernel_name, log_output, bar, jobs)
        finally:
            # Also after a failure or an interrupt: the fidelity report and the index then show
            # what did run.
            _write_fidelity(run_dir)
            write_index(run_dir)
    return run_dir


#: What each notebook reads of the others' results, by number (its tables, stored models or
#: per-query results): a notebook starts after those it needs. 04 and 05 load 03's models,
#: 06_neural_competitors reads 06's per-query results; the rest read only the data, so with
#: ``jobs`` they run side by side.
NOTEBOOK_NEEDS = {"04": ("03",), "05": ("03",), "06_neural_competitors": ("06_bilambdamart",)}


def notebook_needs(names: Sequence[str]) -> dict[str, set[str]]:
    """For each of ``names`` (notebook stems), the others of ``names`` it must wait for
    (`NOTEBOOK_NEEDS`, matched by stem or by number)."""
    def number(name: str) -> str:
        return name.split("_", 1)[0]

    out = {}
    for name in names:
        wanted = NOTEBOOK_NEEDS.get(name, NOTEBOOK_NEEDS.get(number(name), ()))
        out[name] = {other for other in names if other != name
                     and (other in wanted or (number(other) in wanted and number(other) != number(name)))}
    return out


def _run_graph(to_run: dict[str, dict[str, Any]], run_one, jobs: int, bar: RunBar) -> list[str]:
    """Run the notebooks of ``to_run`` (name -> parameters) by ``run_one(name)``, up to ``jobs``
    at once in threads (each only waits on its kernel), each as soon as those it needs
    (`notebook_needs`) have completed, in the batch's order otherwise. After a failure no
    notebook starts; those running finish, then the first failure is raised. Returns the
    notebooks completed."""
    from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

    needs = notebook_needs(list(to_run))
    done: list[str] = []
    running: dict[Any, str] = {}
    failures: list[BaseException] = []
    with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="ltrlib-notebook") as pool:
        while True:
            if not failures:
                for name in to_run:
                    if len(running) < jobs and name not in done and name not in running.values() \
                            and needs[name] <= set(done):
                        running[pool.submit(run_one, name)] = name
            if not running:
                break
            finished, _ = wait(list(running), return_when=FIRST_COMPLETED)
            for future in finished:
                name = running.pop(future)
                try:
                    future.result()
                except BaseException as exc:  # a notebook's failure, reported once all have stopped
                    failures.append(exc)
                else:
                    done.append(name)
                    bar.finish(name)
    if failures:
        raise failures[0]
    return done


def _run_notebooks(to_run, loaded, plan, run_dir, manifest, kernel_name, log_output, bar: RunBar,
                   jobs: int) -> None:
    """Run the notebooks of ``to_run`` one after another, or with ``jobs`` above 1 as a graph
    (`_run_graph`, each kernel with the cores // ``jobs`` threads); Ctrl-C becomes
    `RunInterrupted`, naming what ran and what finished."""
    threads = max(1, (os.cpu_count() or 1) // jobs) if jobs > 1 else 0

    def run_one(notebook: str) -> None:
        _run_one(loaded[notebook], notebook, to_run[notebook], run_dir, manifest, kernel_name, log_output, bar,
                 threads)

    try:
        if jobs > 1:
            _run_graph(to_run, run_one, jobs, bar)
        for notebook in to_run if jobs == 1 else ():
            run_one(notebook)
            bar.finish(notebook)
    except KeyboardInterrupt:
        finished = [nb for nb in plan if _is_completed(run_dir, manifest, nb)]
        running = [nb for nb in to_run if manifest.status(nb) in ("running", "interrupted")]
        raise RunInterrupted(manifest.run_id, ", ".join(running) or "the run",
                             finished) from None


RUN_LOCK = ".run.lock"


@contextlib.contextmanager
def _run_lock(run_dir: Path) -> Iterator[None]:
    """Hold ``<run_dir>/.run.lock`` for the whole run: two runs of one run id at once would
    execute the same notebooks into the same files and overwrite each other's manifest.

    An exclusive ``flock``: the OS releases it when the process ends, however it ends, so a
    crashed or killed run leaves no stale lock and a later run (a resume) takes it at once.
    The file itself stays: deleting a lock file races with a process that has just opened
    it. Kernels do not inherit it (Python opens files non-inheritable), so a kernel left
    running after a crash holds nothing. The holder writes its PID into the file for the
    message the second run gives."""
    try:
        import fcntl
    except ImportError:  # no flock (Windows): run unlocked, as before
        yield
        return
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / RUN_LOCK
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
            raise ValueError(
                f"run {run_dir.name!r} is already running: process {holder} holds its lock "
                f"{path}; wait for that run to finish (or stop it), or choose another --run-id"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock


def _check_journals(run_dir: Path) -> None:
    """Refuse a forced rerun of a run whose Optuna journals are damaged beyond a torn last
    record (`ltrlib.train.tuning.storage.check_journal`), before it deletes any notebook's results:
    the notebook that opens the journal would fail, leaving the results it replaces gone."""
    from ltrlib.train.tuning.storage import check_journal

    for journal in sorted(run_dir.glob("*.journal")):
        check_journal(journal)


def _write_fidelity(run_dir: Path) -> None:
    """``fidelity.md``/``.csv`` from the run's tables (`ltrlib.fidelity`). It reads whatever
    is on disk, so a partial run gets a partial report; an error in it is reported, never
    allowed to mask a notebook's failure or the index."""
    from ltrlib.fidelity import write_fidelity

    try:
        write_fidelity(run_dir)
    except Exception as exc:  # noqa: BLE001 - the notebooks' results matter more
        print(f"ltrlib run: the fidelity report could not be written: {type(exc).__name__}: {exc}",
              file=sys.stderr)


def _start_manifest(manifest: RunManifest | None, run_id: str, run_params: dict[str, Any]) -> RunManifest:
    """The manifest to continue with; entries made under other parameters become "stale"."""
    if manifest is None:
        return RunManifest(run_id, params=run_params, created=now(), ltrlib_version=__version__)
    if manifest.params != run_params:
        # Only reachable with force: notebooks not rerun now no longer match the run's parameters.
        for entry in manifest.notebooks.values():
            if entry.completed:
                entry.status = "stale"
    manifest.params = run_params
    manifest.ltrlib_version = __version__
    return manifest


def _run_one(nb, notebook, params, run_dir, manifest, kernel_name, log_output, bar: RunBar,
             threads: int = 0) -> None:
    """Execute one notebook and record its outcome in the manifest; ``bar`` shows what it
    reports (`ltrlib.progress`) while it runs. ``threads``: its kernel's thread budget
    (`ltrlib.processes.thread_env`; 0 leaves the environment's). Safe to call from several
    threads at once: each notebook's kernel gets its own environment, and the manifest is
    written under `_MANIFEST_LOCK`."""
    out_dir = run_dir / "notebooks"
    # A rerun replaces the notebook's previous outputs entirely, so stale tables or figures
    # from an earlier version of the notebook cannot pass for results of this run.
    (out_dir / f"{notebook}.ipynb").unlink(missing_ok=True)
    (out_dir / f"{notebook}.html").unlink(missing_ok=True)
    clear_notebook_outputs(run_dir, notebook)
    before = manifest.notebooks.get(notebook)
    resumed = before is not None and before.status in ("running", "interrupted") and before.parameters == params
    entry = NotebookRecord(
        status="running", parameters=params, started=now(), ltrlib_version=__version__,
        earlier_seconds=(before.attempts_seconds or 0.0) if resumed else None,
        kernel=kernel_name or f"ipykernel on {sys.executable}",
        # What the bar said was left when this notebook started: checkable against the
        # seconds the rest of the run then took.
        eta_seconds_at_start=bar.remaining(),
        # The default kernel runs on this interpreter, so its libraries are these; another
        # kernelspec's are its own, unknown here.
        packages=None if kernel_name else package_versions(), code=code_commit(), machine=machine_arithmetic())
    with _MANIFEST_LOCK:
        manifest.notebooks[notebook] = entry
        manifest.write(run_dir)
    # The kernel appends the seconds of each model fit here (ltrlib.timing), and its
    # processes keep their progress bars' state in the status folder (ltrlib.progress).
    fit_log = out_dir / f".{notebook}.fit.log"
    fit_log.unlink(missing_ok=True)
    status_dir = out_dir / f".{notebook}.progress"
    shutil.rmtree(status_dir, ignore_errors=True)
    status_dir.mkdir()
    env = {timing.ENV_VAR: str(fit_log), progress.STATUS_ENV: str(status_dir),
           **(processes.thread_env(threads) if threads else {})}
    bar.start(notebook, status_dir)
    start = time.perf_counter()
    outcome: dict[str, Any] = {}
    try:
        _execute(nb, notebook, params, out_dir, kernel_name, log_output, env)
    except NotebookError as exc:
        outcome.update(status="failed", error=str(exc))
        raise
    except BaseException:
        outcome.update(status="interrupted")
        raise
    else:
        outcome["status"] = "completed"
        _export_html(out_dir / f"{notebook}.ipynb")
    finally:
        shutil.rmtree(status_dir, ignore_errors=True)
        fitted = timing.read_log(fit_log, parent=os.getpid())  # the kernel's own lines
        fit_log.unlink(missing_ok=True)
        with _MANIFEST_LOCK:
            for key, value in outcome.items():
                setattr(entry, key, value)
            entry.finished = now()
            entry.seconds = round(time.perf_counter() - start, 3)
            entry.fit_seconds = round(fitted or 0.0, 3)
            manifest.write(run_dir)
            # The index once per notebook, not at every output (it re-reads every table and
            # embeds every figure); under the lock, so side-by-side notebooks write in turn.
            write_index(run_dir)
