"""A study's seed records on disk: where a seed's record lives (`_seed_dir`), how a finished
run becomes one, whole or not at all (`_record`), and which seeds have one (`_recorded`).
The records' files themselves, ``design.json`` and ``seed.json``, are read and written by
`StudyDesign` and `SeedRecord` (`ltrlib.study_record`).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from ltrlib.manifest import FILE as MANIFEST_FILE
from ltrlib.manifest import RunManifest
from ltrlib.records import read_json
from ltrlib.study_record import SeedRecord

__all__: list[str] = []  # the study loops' own helpers; the record classes are `ltrlib.study_record`'s


def _seed_dir(study_dir: Path, seed: int) -> Path:
    return study_dir / "seeds" / f"seed{seed}"


def _record(run_dir: Path, study_dir: Path, seed: int, wall_seconds: float, notebooks: Sequence[str],
            files: dict[Path, str], worker: str = "") -> Path:
    """A seed's record: ``files`` (source -> path in the record; absent ones skipped), the
    run's run.json and a `SeedRecord` with the metrics of ``notebooks`` (of the one
    notebook, when one), the wall time and the Dask worker it ran on, written to a temporary
    folder renamed into place, so a seed is recorded whole or not at all. ValueError when
    one of ``notebooks`` has not completed."""
    manifest = RunManifest.require(run_dir)
    manifest.require_completed(notebooks, run_dir)
    entries = [manifest.notebooks[nb] for nb in notebooks]
    target = _seed_dir(study_dir, seed)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".seed{seed}."))
    try:
        for source, name in files.items():
            if source.exists():
                (tmp / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, tmp / name)
        shutil.copy2(run_dir / MANIFEST_FILE, tmp / MANIFEST_FILE)
        metrics = read_json(run_dir / "metrics.json")
        metrics = metrics.get(notebooks[0], {}) if len(notebooks) == 1 else {nb: metrics.get(nb, {}) for nb in notebooks}
        seconds = [e.attempts_seconds for e in entries]  # a resumed notebook's earlier attempts too
        fits = [e.fit_seconds for e in entries]
        record = {"seed": seed, "run": run_dir.name, "wall_seconds": round(wall_seconds, 1),
                  "notebook_seconds": seconds[0] if len(notebooks) == 1 else dict(zip(notebooks, seconds)),
                  "fit_seconds": fits[0] if len(notebooks) == 1 else dict(zip(notebooks, fits)),
                  "worker": worker, "metrics": metrics}
        SeedRecord(record).write(tmp)
        if target.exists():
            shutil.rmtree(target)
        os.replace(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def _recorded(study_dir: Path) -> dict[int, Path]:
    """The seeds whose record is complete (`ltrlib.fidelity.sources.recorded_seeds`)."""
    from ltrlib.fidelity.sources import recorded_seeds

    return recorded_seeds(study_dir)
