"""A seed in progress kept in the study folder, so that a checkout without its run folder
carries on from it (`checkpoint`, `_restore`): a bilambdamart or neural seed's Optuna journal
(its finished trials), a ledger seed's run folder, packed (its finished notebooks), under
``<study>/progress/``.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path
from typing import Sequence

from ltrlib.atomic import atomic_path
from ltrlib.manifest import FILE as MANIFEST_FILE
from ltrlib.studies.records import _recorded
from ltrlib.study_record import StudyDesign

__all__ = ["JOURNAL", "NEURAL_JOURNAL", "RUN_FILES_FOLDER", "checkpoint"]


#: The Optuna journals a seed in progress is kept by: notebook 06's (a bilambdamart seed's),
#: and the neural notebook's (`ltrlib.studies.neural.NEURAL_NOTEBOOK`), whose design names
#: its source study.
JOURNAL = "06_bilambdamart.journal"
NEURAL_JOURNAL = "06_neural_competitors.journal"


def _journal_of(design: dict) -> str:
    """The Optuna journal a seed of a bilambdamart or neural study tunes in (notebook
    06's, or 06_neural_competitors' for a neural study, whose design names its source)."""
    return NEURAL_JOURNAL if "source" in design else JOURNAL


def _complete_records(journal: bytes) -> bytes:
    """An Optuna journal's bytes up to its last complete record (a writer may be appending
    the next one)."""
    return journal[:journal.rfind(b"\n") + 1]


def _journal_copy(source: Path, target: Path) -> None:
    """Copy an Optuna journal up to its last complete record, atomically."""
    with atomic_path(target) as tmp:
        tmp.write_bytes(_complete_records(source.read_bytes()))


def _progress_file(study_dir: Path, design: dict, seed: int) -> Path:
    """Where `checkpoint` keeps a seed in progress: a ledger seed's run folder, packed; a
    bilambdamart or neural seed's Optuna journal."""
    name = f"seed{seed}.tar.gz" if design["profile"] == "ledger" else f"seed{seed}.journal"
    return study_dir / "progress" / name


def checkpoint(study_dir: Path, reports: Path) -> list[int]:
    """Keep what each seed in progress (run folder there, seed not yet recorded) has done
    under ``<study>/progress/``, so that a checkout without the run folder carries on from it
    (`_restore`): a bilambdamart or neural seed's Optuna journal (its finished trials,
    ``seed<N>.journal``, `_journal_of`); a ledger seed's run folder (its finished notebooks and the journal
    of the one running, ``seed<N>.tar.gz``, `_pack_run`). Returns those seeds. A recorded
    seed's checkpoint is removed."""
    design = StudyDesign.read(study_dir)
    recorded, saved = _recorded(study_dir), []
    for seed in design["seeds"]:
        kept = _progress_file(study_dir, design, seed)
        if seed in recorded:
            kept.unlink(missing_ok=True)
            continue
        run_dir = reports / f"{design['study']}-seed{seed}"
        if design["profile"] == "ledger" and (run_dir / MANIFEST_FILE).exists():
            _pack_run(run_dir, kept)
            saved.append(seed)
        elif design["profile"] != "ledger" and (run_dir / _journal_of(design)).exists():
            _journal_copy(run_dir / _journal_of(design), kept)
            saved.append(seed)
    return saved


#: The run files' folder (`ltrlib.report.Reporter.run_file`), which a checkpoint leaves out.
RUN_FILES_FOLDER = "runs"


def _pack_run(run_dir: Path, target: Path) -> None:
    """``run_dir`` as a gzip tarball at ``target``, written atomically, while its batch may be
    running. Its ``run.json`` is read first: every notebook it calls completed had written
    its files by then (the runner records a notebook once it has finished), so the
    tarball holds each of them whole; a notebook still running is rerun on resume, over
    whatever part of its files came along. Optuna journals are cut at their last complete
    record (`_complete_records`), and notebook 07's finished FOLTR runs (files in its hidden
    ``.07_foltr_noniid.runs/``, `ltrlib.foltr.store`) come along, so that a resumed notebook
    07 reruns only the runs it had not finished. Left out: hidden files (the run's lock,
    kernel logs), lock files, and the TREC run files (``runs/``), which no notebook reads back and the
    study does not keep, and which are half of a `small` seed's packed size (40 of 77 MB
    after notebook 06): a resumed seed's folder lacks those of the notebooks packed."""
    import io
    import tarfile

    def add(tar, name: str, data: bytes) -> None:
        info = tarfile.TarInfo(name)
        info.size, info.mtime = len(data), int(time.time())
        tar.addfile(info, io.BytesIO(data))

    manifest = (run_dir / MANIFEST_FILE).read_bytes()
    target.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(target) as tmp, tarfile.open(tmp, "w:gz") as tar:
        add(tar, MANIFEST_FILE, manifest)
        for path in sorted(run_dir.rglob("*")):
            name = path.relative_to(run_dir).as_posix()
            if not path.is_file() or name == MANIFEST_FILE or path.name.startswith(".") or path.suffix == ".lock" \
                    or name.startswith(f"{RUN_FILES_FOLDER}/"):
                continue
            data = path.read_bytes()
            add(tar, name, _complete_records(data) if path.suffix == ".journal" else data)


def _restore(study_dir: Path, run_dir: Path, seed: int) -> bool:
    """Put a seed's checkpoint (`checkpoint`) back where a fresh checkout has no run folder
    for it, or (a bilambdamart seed) a run folder without a journal; True if it did."""
    design = StudyDesign.read(study_dir)
    kept = _progress_file(study_dir, design, seed)
    if not kept.exists():
        return False
    if design["profile"] == "ledger":
        if run_dir.exists():
            return False
        import tarfile

        unpacking = Path(tempfile.mkdtemp(prefix=f".{run_dir.name}.", dir=run_dir.parent))
        try:
            with tarfile.open(kept, "r:gz") as tar:
                members = tar.getmembers()
                strays = [m.name for m in members if not m.isfile() or m.name.startswith("/") or ".." in m.name]
                if strays:
                    raise ValueError(f"{kept}: not a checkpoint of a run folder (holds {strays[:3]})")
                # Python >= 3.11.4 also checks each name itself ("data" filter).
                tar.extractall(unpacking, members, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
            unpacking.rename(run_dir)  # whole or not at all
        finally:
            shutil.rmtree(unpacking, ignore_errors=True)  # gone once renamed; a failed unpacking leaves nothing
        return True
    if (run_dir / _journal_of(design)).exists():
        return False
    run_dir.mkdir(parents=True, exist_ok=True)
    _journal_copy(kept, run_dir / _journal_of(design))
    return True


def _restore_checkpoints(study_dir: Path, reports: Path, design: dict, seeds: Sequence[int], log) -> None:
    """`_restore` each of ``seeds`` (about to run) from its checkpoint, saying which."""
    resumed = ("the finished notebooks of its checkpointed run folder" if design["profile"] == "ledger"
               else "the finished trials of its checkpointed journal")
    for seed in seeds:
        if _restore(study_dir, reports / f"{design['study']}-seed{seed}", seed):
            log(f"seed {seed}: resuming {resumed}")
