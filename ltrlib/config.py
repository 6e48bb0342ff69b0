"""Project paths and scale presets: the one place notebooks and modules take them from.

Notebooks never build paths themselves, so they run the same from JupyterLab, from the
batch runner, or from any working directory.
"""

from __future__ import annotations

import os
import re
import signal
import sys
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path


def _find_project_root() -> Path:
    # An explicit override wins (a user running an installed ltrlib against their own tree);
    # otherwise the checkout this package lives in; otherwise the working directory.
    env = os.environ.get("LTRLIB_ROOT")
    if env:
        return Path(env).expanduser().resolve()
    here = Path(__file__).resolve().parent.parent
    if (here / "pyproject.toml").exists():
        return here
    return Path.cwd().resolve()


PROJ_ROOT = _find_project_root()
DATA_DIR = PROJ_ROOT / "data"
RAW_DIR = DATA_DIR / "raw"  # the user's files: read, never written
CACHE_DIR = Path(os.environ.get("LTRLIB_CACHE_DIR", DATA_DIR / "cache"))
SYNTHETIC_DIR = DATA_DIR / "synthetic"
REPORTS_DIR = Path(os.environ.get("LTRLIB_REPORTS_DIR", PROJ_ROOT / "reports"))
NOTEBOOKS_DIR = PROJ_ROOT / "notebooks"
# The small real dataset shipped beside the project (LightGBM's lambdarank example).
SHARED_DIR = PROJ_ROOT.parent / "shared"
SHARED_LIGHTGBM_RANK = SHARED_DIR / "data" / "lightgbm-rank"


@dataclass(frozen=True)
class Scale:
    """Query counts of one synthetic scale (train / validation / test) and list length."""

    name: str
    n_train: int
    n_vali: int
    n_test: int
    docs_per_query: float  # mean; the generator draws list lengths around it

    @property
    def n_queries(self) -> int:
        return self.n_train + self.n_vali + self.n_test


SCALES: dict[str, Scale] = {
    # Every scale keeps Istella-S's list length (106 documents per training query, Table 2 of
    # the non-IID paper): smaller scales have fewer queries, not shorter lists.
    # tests: seconds to generate and to train on
    "tiny": Scale("tiny", 150, 50, 50, 106.0),
    # the default batch run; sized so that `make reproduce` stays within ~25 minutes on 2 cores
    "small": Scale("small", 3000, 1000, 1000, 106.0),
    # Istella-S sizes (Table 2 of the non-IID paper): ~3.4M query-document pairs
    "paper": Scale("paper", 19245, 7211, 6562, 106.0),
}


def get_scale(scale: str | Scale) -> Scale:
    if isinstance(scale, Scale):
        return scale
    try:
        return SCALES[scale]
    except KeyError:
        raise ValueError(f"unknown scale {scale!r}; expected one of {sorted(SCALES)}") from None


@dataclass(frozen=True)
class Budget:
    """One experiment's training budget at one scale (`TRAIN_BUDGETS`).

    ``by_scale``: what a notebook parameter of 0 (or an empty string) stands for. ``caps``:
    upper limits on whatever the parameter says. Resolved by
    `ltrlib.train.settings.budget_for_scale` and `ltrlib.train.TrainSettings.for_scale`.
    """

    by_scale: Mapping[str, int | str] = field(default_factory=dict)
    caps: Mapping[str, int] = field(default_factory=dict)


#: Scale-dependent training budgets, per scale and experiment (named after its notebook's
#: topic). ``max_trees`` and ``early_stopping`` are `TrainSettings` fields; the others
#: (trial counts, folds, logged sessions, the click experiment's ceiling) are the
#: experiments' own. An experiment without an entry at a scale runs its parameters as they
#: are there; another dataset than a synthetic scale takes small's budgets.
TRAIN_BUDGETS: dict[str, dict[str, Budget]] = {
    # The smoke test: every notebook in seconds.
    "tiny": {
        # On 150 training queries the validation NDCG of 50 queries keeps creeping up for a
        # thousand trees at the paper's settings; two trials (the second meets the pruner).
        "client_models": Budget(caps={"max_trees": 300, "n_trials": 2}),
        "stacking": Budget(caps={"n_trials": 2}),
        "bilambdamart": Budget(caps={"folds": 3, "n_trials": 1, "stage1_trials": 1}),
        # Every network at the paper's point, narrowed and trained for a few steps.
        "neural_competitors": Budget(by_scale={"max_width": 32}, caps={"neural_trials": 1, "max_steps": 20,
                                                                       "patience": 20, "eval_every": 10,
                                                                       "max_width": 32}),
        "backend_comparison": Budget(by_scale={"max_trees": 25, "early_stopping": 5}),
        # max_trees: the models trained on clicks; ceiling_trees: the true-label ceiling's limit
        "click_bias": Budget(by_scale={"max_trees": 10, "ceiling_trees": 40, "sessions": "200,600"}),
    },
    "small": {
        "backend_comparison": Budget(by_scale={"max_trees": 150, "early_stopping": 15}),
        "click_bias": Budget(by_scale={"max_trees": 50, "ceiling_trees": 200, "sessions": "600,2000,6000"}),
    },
    # The paper's limits (3000 trees, patience 100) where an experiment follows the paper.
    "paper": {
        "backend_comparison": Budget(by_scale={"max_trees": 3000, "early_stopping": 100}),
        "click_bias": Budget(by_scale={"max_trees": 300, "ceiling_trees": 3000,
                                       "sessions": "3000,30000,300000"}),
    },
}


# --------------------------------------------------------------------------- sessions

#: Seconds each notebook took per scale, by its number (by its name where two notebooks
#: share a number, as the two 06s do): what ``ltrlib run``'s ETA expects of
#: a notebook that no comparable run has recorded, at this machine's fitting pace
#: (`ltrlib.timing.pace`). ``small``: `make reproduce` on a quiet 2-core VM of the kind CI
#: runs on (2,471 s in all, 2026-11-25); ``tiny``: a tiny batch on a 2-core machine. A scale
#: without figures takes ``small``'s.
NOTEBOOK_SECONDS = {
    "tiny": {"00": 16, "01": 12, "02": 11, "03": 78, "04": 25, "05": 73, "06": 35, "06_neural_competitors": 53,
             "07": 55, "08": 74, "09": 119},
    "small": {"00": 20, "01": 8, "02": 12, "03": 936, "04": 49, "05": 175, "06": 666, "06_neural_competitors": 295,
              "07": 260, "08": 215, "09": 129},
}

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


def stream_seeds(seed: int, purpose: str, n: int) -> list[int]:
    """``n`` seeds for ``purpose`` (e.g. ``"foltr runs"``) drawn from a run's ``seed`` through
    ``numpy.random.SeedSequence([seed, crc32(purpose)]).spawn(n)``: independent of every
    other purpose's and of every other run seed's. ``seed + k`` would not be: batch seeds s
    and s + 1 would share the stream of s + 1 (issue 41). Each is a 32-bit integer, what
    LightGBM, XGBoost, JAX and NumPy all accept."""
    import zlib

    import numpy as np

    if n < 0:
        raise ValueError(f"stream_seeds: n = {n} seeds asked for; give zero or more")
    root = np.random.SeedSequence([int(seed), zlib.crc32(purpose.encode())])
    return [int(child.generate_state(1)[0]) for child in root.spawn(n)]


def thread_env(threads: int) -> dict[str, str]:
    """The environment that limits a process (a notebook's kernel, a Dask worker) to
    ``threads`` threads: OpenMP for LightGBM and XGBoost, the BLAS libraries, numba."""
    return {name: str(int(threads)) for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                                 "NUMBA_NUM_THREADS")}


def restore_environment(previous: Mapping[str, str | None]) -> None:
    """Put back the environment variables whose values ``previous`` recorded before they were
    set (None: the variable was not set, and is removed)."""
    for name, value in previous.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def worker_processes(n_jobs: int):
    """joblib's configuration for ``n_jobs`` loky worker processes that share this process's
    thread budget (`thread_env`'s count where a study set one, else the cores): each
    worker's OpenMP, BLAS and numba get budget // n_jobs threads.

    joblib makes that split itself only where the parent's environment names no count;
    under `thread_env` every worker took the whole budget, and FOLTR's neural runs (BLAS)
    ran 3-5x slower in the ledger study than in `make reproduce`, with the same results.
    Use as ``with worker_processes(n): Parallel(n_jobs=n)(...)``, naming no backend in
    ``Parallel`` (one named there drops the limit)."""
    from joblib import cpu_count, parallel_config

    budget = int(os.environ.get("OMP_NUM_THREADS") or 0) or cpu_count()
    return parallel_config(backend="loky", inner_max_num_threads=max(1, budget // max(1, int(n_jobs))),
                           initializer=end_with_parent, initargs=(os.getpid(),))


def _parent_death_signal():
    """Linux's prctl(PR_SET_PDEATHSIG, signum) as a function of ``signum``; None elsewhere."""
    import ctypes

    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # no prctl: not Linux
        return None
    PR_SET_PDEATHSIG = 1
    return lambda signum: prctl(PR_SET_PDEATHSIG, int(signum))


def end_with_parent(parent: int, signum: int = signal.SIGKILL) -> None:
    """Make this process (a loky worker, `worker_processes`) die when its parent ``parent``
    does, however it dies: Linux sends it ``signum`` (SIGKILL; a study's batch takes SIGINT,
    to stop as a batch does on Ctrl-C).

    loky's workers outlive a parent killed with SIGKILL (a kernel killed, or a batch or study
    killed, whose kernel then exits): each held 400-470 MB, with loky's resource tracker,
    under PID 1 for minutes. Linux's parent-death signal ends them at once, even while they
    hold the GIL in compiled code, where a watchdog thread could not run. It is sent when
    the *thread* that started the worker ends; loky starts workers from the thread that
    first submits work (a notebook's main thread) or, replacing a lost one, from its own
    manager thread, which lives as long as the workers. Elsewhere than Linux, workers end
    as loky ends them."""
    arm = _parent_death_signal()
    if arm is None:
        return
    arm(signum)
    if os.getppid() != parent:  # the parent died before the signal was armed
        os._exit(1)


def ends_with_this_thread(signum: int = signal.SIGKILL):
    """A ``preexec_fn`` for `subprocess.Popen`: the child gets ``signum`` when the thread
    that starts it ends, with its process or not (None where that cannot be armed).

    For notebook kernels (`ltrlib.runner`): ipykernel ends itself when its parent changes,
    but only once it has started polling for that; a batch stopped while its kernel was
    still starting (a study's Ctrl-C on a loaded machine) left the kernel running, in CI
    under a reaper that is not PID 1, where ipykernel's other test (parent is PID 1) never
    fires. The thread that starts a kernel runs its notebook, and ends after the kernel is
    shut down. prctl is looked up here, before the fork: the child only calls it."""
    arm = _parent_death_signal()
    if arm is None:
        return None
    parent = os.getpid()

    def preexec() -> None:
        arm(signum)
        if os.getppid() != parent:  # the starting thread's process died before it was armed
            os._exit(1)

    return preexec
