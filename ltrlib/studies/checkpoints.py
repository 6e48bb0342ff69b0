"""A seed in progress kept in the study folder, so that a checkout without its run folder
carries on from it (`checkpoint`, `_restore`): a bilambdamart or neural seed's Optuna journal
(its finished trials), a ledger seed's run folder, mirrored file by file (its finished
notebooks), under ``<study>/progress/``.
"""

from __future__ import annotations

import shutil
import tempfile
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
    """Where `checkpoint` keeps a seed in progress: a ledger seed's run folder, mirrored
    (``seed<N>/``); a bilambdamart or neural seed's Optuna journal (``seed<N>.journal``)."""
    name = f"seed{seed}" if design["profile"] == "ledger" else f"seed{seed}.journal"
    return study_dir / "progress" / name


def _packed_run(study_dir: Path, seed: int) -> Path:
    """Where checkpoints before the mirror kept a ledger seed's run folder: one gzip tarball,
    which a checkout still puts back (`_restore`), and the next `checkpoint` replaces."""
    return study_dir / "progress" / f"seed{seed}.tar.gz"


def _drop_progress(study_dir: Path, design: dict, seed: int) -> None:
    """Remove a seed's checkpoint, in whichever form it is kept (the seed is recorded)."""
    kept = _progress_file(study_dir, design, seed)
    if kept.is_dir():
        shutil.rmtree(kept)
    else:
        kept.unlink(missing_ok=True)
    _packed_run(study_dir, seed).unlink(missing_ok=True)


def checkpoint(study_dir: Path, reports: Path) -> list[int]:
    """Keep what each seed in progress (run folder there, seed not yet recorded) has done
    under ``<study>/progress/``, so that a checkout without the run folder carries on from it
    (`_restore`): a bilambdamart or neural seed's Optuna journal (its finished trials,
    ``seed<N>.journal``, `_journal_of`); a ledger seed's run folder (its finished notebooks and the journal
    of the one running, ``seed<N>/``, `_mirror_run`). Returns those seeds. A recorded
    seed's checkpoint is removed."""
    design = StudyDesign.read(study_dir)
    recorded, saved = _recorded(study_dir), []
    for seed in design["seeds"]:
        kept = _progress_file(study_dir, design, seed)
        if seed in recorded:
            _drop_progress(study_dir, design, seed)
            continue
        run_dir = reports / f"{design['study']}-seed{seed}"
        if design["profile"] == "ledger" and (run_dir / MANIFEST_FILE).exists():
            _mirror_run(run_dir, kept)
            _packed_run(study_dir, seed).unlink(missing_ok=True)
            saved.append(seed)
        elif design["profile"] != "ledger" and (run_dir / _journal_of(design)).exists():
            _journal_copy(run_dir / _journal_of(design), kept)
            saved.append(seed)
    return saved


#: The run files' folder (`ltrlib.report.Reporter.run_file`), which a checkpoint leaves out.
RUN_FILES_FOLDER = "runs"


def _kept_in_checkpoint(name: str) -> bool:
    """Whether the run folder's file ``name`` (relative, POSIX) belongs in a checkpoint: not
    hidden (the run's lock, kernel logs, a writer's temporary files), not a lock, not a TREC
    run file (``runs/``), nor a running notebook's progress bars (``.<notebook>.progress/``);
    notebook 07's finished FOLTR runs (``.07_foltr_noniid.runs/``) are kept."""
    parts = name.split("/")
    return not (parts[-1].startswith(".") or name.endswith(".lock") or parts[0] == RUN_FILES_FOLDER
                or any(p.startswith(".") and p.endswith(".progress") for p in parts[:-1]))


def _mirror_run(run_dir: Path, target: Path) -> None:
    """``run_dir``'s files copied under ``target``, while its batch may be running, each file
    written atomically and only where it changed. Its ``run.json`` is read first and written
    last: every notebook it calls completed had written its files by then (the runner
    records a notebook once it has finished), so each of them is there whole; a notebook
    still running is rerun on resume, over whatever part of its files came along, and a
    mirror cut off midway holds the previous manifest, whose finished notebooks' files are
    unchanged. Files gone from the run folder (a finished fit's checkpoint) go from the
    mirror. Optuna journals are cut at their last complete record (`_complete_records`), and
    notebook 07's finished FOLTR runs (`ltrlib.foltr.store`) come along, so that a resumed
    notebook 07 reruns only the runs it had not finished. Left out (`_kept_in_checkpoint`):
    hidden files, locks, progress bars, and the TREC run files (``runs/``), which no
    notebook reads back and the study does not keep, and which are half of a `small`
    seed's size (40 of 77 MB packed after notebook 06).

    Why a folder and not one compressed file: committed one after another, the mirror's
    unchanged files are the same git objects, and a file that grows (a journal, a fit's
    checkpoint whose trees only lengthen) is stored by git as a delta on its last version;
    a tarball is new bytes throughout at every commit (24 MB a commit for the paper-scale
    arm's notebook 03, growing with its trees)."""
    manifest = (run_dir / MANIFEST_FILE).read_bytes()
    mirrored = {MANIFEST_FILE}
    for path in sorted(run_dir.rglob("*")):
        name = path.relative_to(run_dir).as_posix()
        if name == MANIFEST_FILE or not path.is_file() or not _kept_in_checkpoint(name):
            continue
        data = path.read_bytes()
        if path.suffix == ".journal":
            data = _complete_records(data)
        copy = target / name
        if not (copy.is_file() and copy.stat().st_size == len(data) and copy.read_bytes() == data):
            with atomic_path(copy) as tmp:
                tmp.write_bytes(data)
        mirrored.add(name)
    with atomic_path(target / MANIFEST_FILE) as tmp:
        tmp.write_bytes(manifest)
    for path in sorted(target.rglob("*"), reverse=True):  # files before their folders
        if path.is_file() and path.relative_to(target).as_posix() not in mirrored:
            path.unlink()
        elif path.is_dir() and not any(path.iterdir()):
            path.rmdir()


def _restore(study_dir: Path, run_dir: Path, seed: int) -> bool:
    """Put a seed's checkpoint (`checkpoint`) back where a fresh checkout has no run folder
    for it, or (a bilambdamart seed) a run folder without a journal; True if it did. A
    ledger seed's run folder is copied beside it and renamed into place, whole or not at
    all; one kept as a tarball by earlier versions (`_packed_run`) is unpacked so."""
    design = StudyDesign.read(study_dir)
    kept = _progress_file(study_dir, design, seed)
    if design["profile"] == "ledger":
        packed = _packed_run(study_dir, seed)
        if run_dir.exists() or not (kept.is_dir() or packed.exists()):
            return False
        unpacking = Path(tempfile.mkdtemp(prefix=f".{run_dir.name}.", dir=run_dir.parent))
        try:
            if kept.is_dir():
                _copy_mirror(kept, unpacking)
            else:
                _unpack_run(packed, unpacking)
            unpacking.rename(run_dir)  # whole or not at all
        finally:
            shutil.rmtree(unpacking, ignore_errors=True)  # gone once renamed; a failed copy leaves nothing
        return True
    if not kept.exists() or (run_dir / _journal_of(design)).exists():
        return False
    run_dir.mkdir(parents=True, exist_ok=True)
    _journal_copy(kept, run_dir / _journal_of(design))
    return True


def _copy_mirror(kept: Path, into: Path) -> None:
    """A mirrored run folder's files (`_mirror_run`) copied into ``into``; anything else in
    it (a link, a stray temporary file) is refused or left, as a checkout could hold it."""
    strays = [p.relative_to(kept).as_posix() for p in kept.rglob("*") if p.is_symlink()]
    if strays or not (kept / MANIFEST_FILE).is_file():
        raise ValueError(f"{kept}: not a checkpoint of a run folder "
                         + (f"(holds links {strays[:3]})" if strays else f"(no {MANIFEST_FILE})"))
    for path in sorted(kept.rglob("*")):
        name = path.relative_to(kept).as_posix()
        if path.is_file() and _kept_in_checkpoint(name):
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, into / name)


def _unpack_run(packed: Path, into: Path) -> None:
    """A run folder kept as a gzip tarball by earlier versions, unpacked into ``into``."""
    import tarfile

    with tarfile.open(packed, "r:gz") as tar:
        members = tar.getmembers()
        strays = [m.name for m in members if not m.isfile() or m.name.startswith("/") or ".." in m.name]
        if strays:
            raise ValueError(f"{packed}: not a checkpoint of a run folder (holds {strays[:3]})")
        # Python >= 3.11.4 also checks each name itself ("data" filter).
        tar.extractall(into, members, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))


def _restore_checkpoints(study_dir: Path, reports: Path, design: dict, seeds: Sequence[int], log) -> None:
    """`_restore` each of ``seeds`` (about to run) from its checkpoint, saying which."""
    resumed = ("the finished notebooks of its checkpointed run folder" if design["profile"] == "ledger"
               else "the finished trials of its checkpointed journal")
    for seed in seeds:
        if _restore(study_dir, reports / f"{design['study']}-seed{seed}", seed):
            log(f"seed {seed}: resuming {resumed}")
