"""A run's record, ``<run>/run.json``: what it ran with and how each notebook ended.

`ltrlib.runner` writes it as a run goes; the report's index, the fidelity ledger and the
studies read it. `RunManifest` is the one place that parses and writes the file, so a new
field is one edit here:

* the run: its id, its parameters (``params``: what makes two runs comparable: dataset,
  data folder, scale, seed and, when given, the declared paper dataset), when it was made
  and last written, the ``ltrlib`` version, the machine's pace measured for a progress
  bar, and the query counts a ``--paper-dataset`` declaration was checked against;
* per notebook (`NotebookRecord`): its status (`STATUSES`), its parameters as injected,
  when it started and finished, its seconds and the seconds inside model fitting, the
  kernel, the versions of the libraries that compute its numbers (`package_versions`),
  the commit of ``ltrlib``'s code (`code_commit`), what the progress bar said was left
  when it started, the error it stopped on, and, for a notebook run again after an
  interruption, the seconds of its earlier attempts (``earlier_seconds``).

Every write is atomic (`ltrlib.atomic`), so an interrupted run leaves the previous record,
never a torn one. ``schema_version`` says which layout a file has: records written before
the field existed read as version 0, which has the same fields; a newer version than this
package knows is refused by name.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import functools
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ltrlib.atomic import atomic_write_text

__all__ = ["ARITHMETIC_FLAGS", "FILE", "NUMERIC_PACKAGES", "SCHEMA_VERSION", "STATUSES", "NotebookRecord",
           "RunManifest", "code_commit", "machine_arithmetic", "now", "package_versions"]

FILE = "run.json"
#: 5: a notebook's ``earlier_seconds`` added; 4: its ``machine``; 3: its ``code``; 2: its
#: ``packages``; 1: the layout of 2026-11 with this field added; 0: the same layout without it.
SCHEMA_VERSION = 5
#: The libraries whose release can change a run's numbers, as pip names them. The project asks
#: for lower bounds only, so two environments built on different days may hold different
#: releases: the tiny batch's results differed between the venvs of two sessions
#: (2026-11-27) with ltrlib's code the same.
NUMERIC_PACKAGES = ("numpy", "scipy", "pandas", "statsmodels", "numba", "lightgbm", "xgboost", "optuna", "ranx",
                    "jax", "jaxlib", "flax", "optax", "rax")
#: A notebook's statuses: running, or how it ended; "stale" marks a completed notebook whose
#: run was later forced to other run-level parameters.
STATUSES = ("running", "completed", "failed", "interrupted", "stale")


@functools.cache
def _installed_versions() -> tuple[tuple[str, str], ...]:
    # Looked up once a process: importlib.metadata scans the installed distributions.
    from importlib import metadata

    out = []
    for name in NUMERIC_PACKAGES:
        try:
            out.append((name, metadata.version(name)))
        except metadata.PackageNotFoundError:
            continue
    return tuple(out)


def package_versions() -> dict[str, str]:
    """The installed release of each of `NUMERIC_PACKAGES` (absent ones left out)."""
    return dict(_installed_versions())


#: The CPU features that decide which kernels the numeric libraries pick, and with them the
#: last bits of a result: XLA compiles for the host's vector units, and BLAS and LightGBM
#: choose kernels by them. The tiny batch's digest, the same code and (as far as that day's
#: runs recorded) the same releases, differed between two sessions' machines (2026-11-29).
ARITHMETIC_FLAGS = ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512_bf16", "avx512_fp16", "avx512_vnni",
                    "amx_bf16", "amx_tile", "neon", "asimd", "sve")


@functools.cache
def machine_arithmetic() -> dict[str, str]:
    """The machine a notebook ran on, as far as its arithmetic goes: the CPU's model name (and
    x86 family and model numbers) and which of `ARITHMETIC_FLAGS` it has (Linux's
    ``/proc/cpuinfo``; elsewhere the platform's processor string alone). Looked up once a
    process."""
    import platform

    info: dict[str, str] = {}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            info.setdefault(key.strip(), value.strip())  # the first core's
    except OSError:
        pass
    cpu = info.get("model name") or info.get("Model") or platform.processor() or platform.machine()
    if "cpu family" in info and "model" in info:  # a virtual machine's name may be generic
        cpu += f" (family {info['cpu family']}, model {info['model']})"
    flags = set((info.get("flags") or info.get("Features") or "").split())
    return {"cpu": cpu, "flags": " ".join(f for f in ARITHMETIC_FLAGS if f in flags)}


@functools.cache
def code_commit() -> str | None:
    """The git commit of the checkout ``ltrlib`` is imported from, with " + local changes"
    when its code or notebooks differ from it; None outside a git checkout (an installed
    wheel) or without git. Looked up once a process. A study whose seeds ran in different
    sessions, from frozen checkouts, says by it which code each seed ran."""
    import subprocess

    root = Path(__file__).resolve().parent.parent

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=30,
                              check=True).stdout.strip()

    try:
        if Path(git("rev-parse", "--show-toplevel")).resolve() != root:
            return None  # ltrlib sits inside some other repository
        commit = git("rev-parse", "HEAD")
        changed = git("status", "--porcelain", "--untracked-files=no", "--", "ltrlib", "notebooks")
    except (OSError, subprocess.SubprocessError):
        return None
    return commit + (" + local changes" if changed else "")


def now() -> str:
    """The time a record is stamped with: UTC, to the second, ISO 8601."""
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


@dataclass
class NotebookRecord:
    """One notebook's entry. Fields not yet known are None and left out of the file."""

    status: str
    parameters: dict[str, Any] = field(default_factory=dict)
    started: str | None = None
    finished: str | None = None
    seconds: float | None = None
    fit_seconds: float | None = None
    ltrlib_version: str | None = None
    kernel: str | None = None
    packages: dict[str, str] | None = None
    code: str | None = None
    machine: dict[str, str] | None = None
    eta_seconds_at_start: float | None = None
    error: str | None = None
    #: Set when the notebook was run again after an interruption under the same parameters:
    #: the seconds of the earlier attempts (at least: an attempt whose process was killed
    #: left none). A notebook that keeps its work across attempts (07's runs, 06's trials)
    #: resumes, so its ``seconds`` are its last stretch, not its cost.
    earlier_seconds: float | None = None

    @property
    def completed(self) -> bool:
        return self.status == "completed"

    @property
    def attempts_seconds(self) -> float | None:
        """Its seconds with those of its earlier attempts (`earlier_seconds`): what it cost,
        at least, where ``seconds`` is a resumed notebook's last stretch. An attempt killed
        outright recorded none and counts none; None when no attempt recorded any."""
        if self.seconds is None and self.earlier_seconds is None:
            return None
        return (self.seconds or 0.0) + (self.earlier_seconds or 0.0)

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None}


_RUN_FIELDS = ("run_id", "params", "created", "updated", "ltrlib_version", "machine_pace", "paper_dataset_queries",
               "schema_version", "notebooks")
_NOTEBOOK_FIELDS = tuple(f.name for f in dataclasses.fields(NotebookRecord))


@dataclass
class RunManifest:
    """A run's ``run.json`` (see the module docstring)."""

    run_id: str
    params: dict[str, Any] = field(default_factory=dict)
    created: str | None = None
    updated: str | None = None
    ltrlib_version: str | None = None
    machine_pace: float | None = None
    paper_dataset_queries: list[int] | None = None
    schema_version: int = SCHEMA_VERSION
    notebooks: dict[str, NotebookRecord] = field(default_factory=dict)

    # ------------------------------------------------------------------ reading
    @classmethod
    def read(cls, run_dir: str | os.PathLike) -> RunManifest | None:
        """The record of ``run_dir``, or None when it has none. ValueError, naming the file
        and line, for a file that is not a run record."""
        path = Path(run_dir) / FILE
        if not path.exists():
            return None
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path} is not valid JSON (line {exc.lineno}): {exc.msg}") from exc
        return cls.from_json(raw, path)

    @classmethod
    def require(cls, run_dir: str | os.PathLike) -> RunManifest:
        """`read`, with a ValueError naming the folder when it has no record."""
        manifest = cls.read(run_dir)
        if manifest is None:
            raise ValueError(f"{run_dir} is not a run directory: {FILE} is missing")
        return manifest

    @classmethod
    def from_json(cls, raw: Any, path: Path | str = FILE) -> RunManifest:
        if not isinstance(raw, dict):
            raise ValueError(f"{path}: a run record is a JSON object, got {type(raw).__name__}")
        version = raw.get("schema_version", 0)
        if not isinstance(version, int) or not 0 <= version <= SCHEMA_VERSION:
            raise ValueError(f"{path}: schema_version {version!r} is not one this ltrlib reads "
                             f"(0 to {SCHEMA_VERSION}); a newer ltrlib wrote it")
        unknown = sorted(set(raw) - set(_RUN_FIELDS))
        if unknown:
            raise ValueError(f"{path}: unknown field(s) {unknown} in a run record")
        notebooks = {}
        for name, entry in (raw.get("notebooks") or {}).items():
            if not isinstance(entry, dict) or "status" not in entry:
                raise ValueError(f"{path}: notebook {name!r}'s entry has no status")
            extra = sorted(set(entry) - set(_NOTEBOOK_FIELDS))
            if extra:
                raise ValueError(f"{path}: unknown field(s) {extra} in notebook {name!r}'s entry")
            notebooks[name] = NotebookRecord(**entry)
        values = {k: raw[k] for k in _RUN_FIELDS if k in raw and k != "notebooks"}
        values.setdefault("run_id", Path(path).parent.name)
        values["schema_version"] = version
        return cls(**values, notebooks=notebooks)

    # ------------------------------------------------------------------ writing
    def to_json(self) -> dict[str, Any]:
        out = {k: v for k, v in dataclasses.asdict(self).items() if v is not None and k != "notebooks"}
        out["notebooks"] = {name: entry.to_json() for name, entry in self.notebooks.items()}
        return out

    def write(self, run_dir: str | os.PathLike) -> Path:
        """Stamp ``updated`` and write the record atomically, at the current schema."""
        self.updated = now()
        self.schema_version = SCHEMA_VERSION
        text = json.dumps(self.to_json(), indent=2, sort_keys=True) + "\n"
        return atomic_write_text(Path(run_dir) / FILE, text)

    # ------------------------------------------------------------------ questions
    def status(self, notebook: str) -> str | None:
        entry = self.notebooks.get(notebook)
        return entry.status if entry else None

    def statuses(self) -> dict[str, str]:
        return {name: entry.status for name, entry in self.notebooks.items()}

    def completed(self, notebook: str) -> bool:
        """Whether the record says ``notebook`` completed (the runner also wants its executed
        notebook on disk: `ltrlib.runner`)."""
        entry = self.notebooks.get(notebook)
        return entry is not None and entry.completed

    def require_completed(self, notebooks, where: str | os.PathLike) -> None:
        """ValueError naming ``where`` and the first of ``notebooks`` that has not completed."""
        for notebook in notebooks:
            if not self.completed(notebook):
                raise ValueError(f"{where}: notebook {notebook} has not completed in this run")

    @property
    def seed(self) -> int | None:
        seed = self.params.get("seed")
        return None if seed is None else int(seed)
