"""Which data a run's results and models come from, recorded beside them and checked.

Every result of a run folder must come from one dataset, scale and seed. A JupyterLab
session at ``tiny`` pointed at a run trained at ``small`` would otherwise merge tiny models
on small data and overwrite the run's tables with no warning. So:

* `load_dataset` records ``dataset``, ``scale`` (synthetic data only) and ``seed`` in the
  training part's ``meta``; `describe` adds a **data fingerprint**: a BLAKE2b digest of the
  labels, query offsets, query ids, feature names and every k-th row of ``X`` (k keeps it to
  about 4,096 rows per part, so it costs milliseconds at any scale; any other scale, seed,
  generator version or file changes labels and offsets, which are hashed whole). The
  document categories are not part of it: on real data they are an analysis choice
  (``category_feature``/``category_bins``, recorded with each notebook's parameters in
  ``run.json``) that the non-IID notebooks make and the others (06-09) do not, over the same
  collection; the synthetic data's categories are a column of ``X``.
* `bind_run` writes ``<run>/provenance.json`` the first time a notebook writes into a run,
  and refuses, with `ProvenanceError`, a notebook whose data differ from it.
* `ltrlib.train.ModelStore` saves the provenance in every model's sidecar and refuses to
  load a model trained on other data; the message names both and the command that fixes it.

Two provenances *match* when their fingerprint and seed agree: the fingerprint already
covers the dataset and scale, and the seed also drives the splits' tie-breaks and training.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

import numpy as np

from ltrlib import config, sessions
from ltrlib.atomic import atomic_write_text

__all__ = ["FILE", "ProvenanceError", "RunFolder", "bind_run", "describe", "matches", "read_run", "rebuild_command",
           "record", "summary", "validate_name"]

FILE = "provenance.json"
_META_KEY = "provenance"
_SAMPLED_ROWS = 4096


class ProvenanceError(ValueError):
    """Results or models of one dataset/scale/seed met data of another.

    In a notebook it shows as its message alone (IPython's ``_render_traceback_`` hook): the
    library frames a traceback would print first say nothing about the fix, which the
    message gives."""

    def _render_traceback_(self) -> list[str]:
        return [f"{type(self).__name__}: {self}"]


def lab_command(prov: dict[str, Any], run_id: str) -> str | None:
    """The `make lab` command whose session loads the data of ``prov`` (None for data a
    session cannot name: no dataset recorded)."""
    if not prov.get("dataset"):
        return None
    words = ["make lab"]
    if prov.get("dataset") != "synthetic":
        words.append(f"DATASET={prov['dataset']}")
    if prov.get("scale"):
        words.append(f"SCALE={prov['scale']}")
    if prov.get("seed") is not None:
        words.append(f"SEED={prov['seed']}")
    words.append(f"RUN_ID={run_id}")
    return " ".join(words)


def record(splits, *, dataset: str, scale: str | None, seed: int) -> None:
    """Note what ``splits`` were loaded from (`load_dataset` calls this)."""
    splits.train.meta[_META_KEY] = {"dataset": str(dataset), "scale": scale, "seed": int(seed)}


def describe(splits) -> dict[str, Any]:
    """``{dataset, scale, seed, fingerprint}`` of ``splits`` (a `Splits` or one `Dataset`).

    Data not built by `load_dataset` get their name as ``dataset`` and no scale or seed.
    The fingerprint is recomputed on every call (milliseconds), so a part derived from
    loaded data, which may share its ``meta``, never passes for the whole.
    """
    parts = [p for _, p in splits.items()] if hasattr(splits, "items") else [splits]
    prov = parts[0].meta.get(_META_KEY) or {"dataset": parts[0].name, "scale": None, "seed": None}
    return {**prov, "fingerprint": _fingerprint(parts)}


def _fingerprint(parts) -> str:
    h = hashlib.blake2b(digest_size=8)
    for ds in parts:
        h.update(repr((ds.X.shape, tuple(ds.feature_names))).encode())
        for arr in (ds.y, ds.offsets, ds.query_ids):
            h.update(np.ascontiguousarray(arr).tobytes())
        stride = max(1, ds.X.shape[0] // _SAMPLED_ROWS)
        h.update(np.ascontiguousarray(ds.X[::stride]).tobytes())
    return h.hexdigest()


def matches(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Same data and seed (see the module docstring)."""
    return a.get("fingerprint") == b.get("fingerprint") and a.get("seed") == b.get("seed")


def summary(prov: dict[str, Any]) -> str:
    """One line for messages: ``synthetic, scale tiny, seed 0 (data 1a2b3c4d5e6f7a8b)``."""
    parts = [str(prov.get("dataset"))]
    if prov.get("scale"):
        parts.append(f"scale {prov['scale']}")
    if prov.get("seed") is not None:
        parts.append(f"seed {prov['seed']}")
    return ", ".join(parts) + f" (data {prov.get('fingerprint')})"


def rebuild_command(prov: dict[str, Any], run_id: str, only: str | None = None) -> str:
    """The `ltrlib run` command that recomputes ``run_id`` on the data of ``prov``, as it
    runs from the project's root (`sessions.cli_command`)."""
    words = [f"{sessions.cli_command()} run"]
    if only:
        words.append(f"--only {only}")
    words.append(f"--dataset {prov.get('dataset')}")
    if prov.get("scale"):
        words.append(f"--scale {prov['scale']}")
    if prov.get("seed") is not None:
        words.append(f"--seed {prov['seed']}")
    words.append(f"--run-id {run_id}")
    return " ".join(words)


def read_run(run_dir: str | os.PathLike) -> dict[str, Any] | None:
    """The provenance recorded for a run folder, or None."""
    path = Path(run_dir) / FILE
    if not path.exists():
        return None
    return json.loads(path.read_text(encoding="utf-8"))


def bind_run(run_dir: str | os.PathLike, prov: dict[str, Any]) -> None:
    """Record ``prov`` for the run, or refuse it when the run holds results of other data."""
    run_dir = Path(run_dir)
    held = read_run(run_dir)
    if held is None:
        run_dir.mkdir(parents=True, exist_ok=True)
        atomic_write_text(run_dir / FILE, json.dumps(prov, indent=2, sort_keys=True) + "\n")
        return
    if not matches(held, prov):
        lab = lab_command(held, run_dir.name)
        likely = f"If you meant to work on that run, open its data: {lab}. " if lab else ""
        raise ProvenanceError(
            f"run {run_dir.name!r} holds results of {summary(held)}, but this notebook loaded "
            f"{summary(prov)}. {likely}For this data, use another run id (make lab RUN_ID=..., or "
            f"-p run_id / --run-id), or recompute the whole run on it: "
            f"{rebuild_command(prov, run_dir.name)} --force ({run_dir})"
        )


# --------------------------------------------------------------------------- run folders

# One path component, readable in a URL and on every file system; no leading dot so that
# nothing written here is hidden or mistaken for a temporary file.
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")


def validate_name(name: str, what: str = "name") -> str:
    """Return ``name`` if it is safe as a single file-name component, else raise ValueError.

    ``what`` says which argument is checked ("table name", "run_id", ...) for the message.
    """
    if not isinstance(name, str) or not _NAME_RE.fullmatch(name) or name.endswith("."):
        raise ValueError(
            f"invalid {what} {name!r}: use letters, digits and '._+-' only, starting with a "
            "letter or digit (no path separators, spaces or leading dot)"
        )
    return name


class RunFolder:
    """One run's folder, ``<root>/<run_id>/``, bound to the data its results come from: what
    `ltrlib.report.Reporter` (tables, figures, metrics) and `ltrlib.train.ModelStore`
    (models) share. It lives here, below both, beside the provenance it binds.

    ``run_id`` must be one file-name component (`validate_name`); ``root`` defaults to
    ``ltrlib.config.REPORTS_DIR``. With ``data`` (the notebook's `Splits`) the folder is bound
    to their provenance (`bind_run`, kept as ``provenance``): a run holding
    results of other data is refused here, before anything is computed or overwritten.
    """

    def __init__(self, run_id: str, root: str | os.PathLike | None = None, data=None):
        self.run_id = validate_name(run_id, "run_id")
        self.root = Path(root) if root is not None else Path(config.REPORTS_DIR)
        self.provenance = describe(data) if data is not None else None
        if self.provenance is not None:
            bind_run(self.run_dir, self.provenance)

    @property
    def run_dir(self) -> Path:
        return self.root / self.run_id
