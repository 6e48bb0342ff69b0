"""Trained models of a run, on disk, so later notebooks reload instead of retraining.

Layout (inside the run's report folder)::

    reports/<run_id>/models/<split>/<name>.txt    the model, LightGBM text format
    reports/<run_id>/models/<split>/<name>.json   sidecar: backend, params, best_iteration,
                                                  feature names, validation curve, info
                                                  (train/vali sizes, tuning study, best value,
                                                  provenance: dataset, scale, seed, data
                                                  fingerprint)

``split`` is ``"Split1"``..``"Split3"`` or ``"full"`` (M_full is shared by every split);
``name`` is the model, e.g. ``"M1"``, ``"M2"``, ``"M_full"``. Both files are written
atomically, the sidecar last, so `exists` (which needs both) never sees half a model.

A store opened with ``data=`` (the notebook's loaded splits) records their provenance in
every model it saves, binds the run folder to them (`ltrlib.provenance.bind_run`), and
refuses to load a model trained on other data.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pandas as pd

from ltrlib import provenance, sessions
from ltrlib.provenance import RunFolder, validate_name
from ltrlib.train.ranker import Ranker

__all__ = ["ModelStore"]


class ModelStore(RunFolder):
    """The models of one run.

    Parameters (those of `ltrlib.provenance.RunFolder`)
    ----------
    run_id : the run's folder name under ``root`` (a notebook's ``run_id`` parameter)
    root : folder holding all runs; defaults to ``ltrlib.config.REPORTS_DIR``
    data : the `Splits` the models are (or were) trained on; None skips the provenance checks
    """

    def __repr__(self) -> str:
        return f"ModelStore({str(self.dir)!r})"

    @property
    def dir(self) -> Path:
        return self.run_dir / "models"

    def path(self, split: str, name: str) -> Path:
        """Where the model file of ``(split, name)`` lives (whether or not it exists)."""
        validate_name(split, "split")
        validate_name(name, "model name")
        return self.dir / split / f"{name}.txt"

    def exists(self, split: str, name: str) -> bool:
        path = self.path(split, name)
        return path.exists() and path.with_suffix(".json").exists()

    def save(self, ranker: Ranker, split: str, name: str) -> Path:
        """Save ``ranker`` as ``(split, name)``, replacing what was there; return its path."""
        if not isinstance(ranker, Ranker):
            raise TypeError(f"ModelStore.save expects a Ranker, got {type(ranker).__name__}")
        if self.provenance is not None:  # in the saved record only; the caller's ranker is untouched
            ranker = dataclasses.replace(ranker, info={**ranker.info, "provenance": self.provenance})
        return ranker.save(self.path(split, name))

    def load(self, split: str, name: str) -> Ranker:
        """The model saved as ``(split, name)``; FileNotFoundError listing what is stored."""
        if not self.exists(split, name):
            stored = ", ".join(f"{s}/{n}" for s, n in self.keys()) or "nothing"
            raise FileNotFoundError(
                f"no model {split}/{name} in {self.dir} (stored: {stored}); train it first: "
                f"{self.train_command()}"
            )
        if self.provenance is not None:
            trained_on = self.info(split, name).get("info", {}).get("provenance")
            if trained_on is None or not provenance.matches(trained_on, self.provenance):
                what = provenance.summary(trained_on) if trained_on else "data it did not record"
                # The likely slip first: a session opened on other data than the run's
                # (`make lab` without the run's SCALE); retraining is a whole notebook 03.
                lab = provenance.lab_command(trained_on, self.run_id) if trained_on else None
                likely = f"To use these models, open their data: {lab}. " if lab else ""
                raise provenance.ProvenanceError(
                    f"model {split}/{name} of run {self.run_id!r} was trained on {what}; this "
                    f"notebook's data is {provenance.summary(self.provenance)}. {likely}To train "
                    f"models for this data (notebook 03 again): {self.train_command()} --force, "
                    "or use a run id whose models match (make lab RUN_ID=...)"
                )
        return Ranker.load(self.path(split, name))

    def train_command(self) -> str:
        """The `ltrlib run` command that trains this run's models on the store's data."""
        if self.provenance is None:
            return (f"{sessions.cli_command()} run --only 03 --run-id {self.run_id} "
                    "(with this notebook's --dataset, --scale and --seed)")
        return provenance.rebuild_command(self.provenance, self.run_id, only="03")

    def info(self, split: str, name: str) -> dict:
        """The sidecar of ``(split, name)`` without loading the model."""
        side = self.path(split, name).with_suffix(".json")
        if not side.exists():
            raise FileNotFoundError(f"no model {split}/{name} in {self.dir}")
        return json.loads(side.read_text(encoding="utf-8"))

    def keys(self) -> list[tuple[str, str]]:
        """``(split, name)`` of every complete stored model, sorted."""
        if not self.dir.is_dir():
            return []
        return sorted((p.parent.name, p.stem) for p in self.dir.glob("*/[!.]*.json")
                      if p.with_suffix(".txt").exists())

    def list(self) -> pd.DataFrame:
        """One row per stored model: split, model, backend, trees and tuning summary."""
        rows = []
        for split, name in self.keys():
            side = self.info(split, name)
            tuning = side.get("info", {}).get("tuning") or {}
            rows.append({
                "split": split, "model": name, "backend": side["backend"],
                "trees": side["best_iteration"],
                "train_queries": (side.get("info", {}).get("train") or {}).get("queries"),
                "study": tuning.get("study"), "best_value": tuning.get("best_value"),
            })
        return pd.DataFrame(rows, columns=["split", "model", "backend", "trees", "train_queries",
                                           "study", "best_value"])
