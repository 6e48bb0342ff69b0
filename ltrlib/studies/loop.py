"""The loop every multi-seed study runs (`run_study`), told what is its own by a `Study`:
register the design (`_check_design`), say which seeds are left (`_to_run`), put back what
a checkpoint kept of a seed in progress (`ltrlib.studies.checkpoints`), run each seed left
as a task on a Dask cluster (`ltrlib.studies.cluster.dispatch`), record it
(`ltrlib.studies.records`) and rewrite the study's summary after each. A study is then its
design, how one seed runs, and how its summary is written: one module each
(`ltrlib.studies.bilambdamart`, `ltrlib.studies.neural`, `ltrlib.studies.ledger`), so a
fourth study is a fourth module, not a fourth copy of this loop.

Also here, for every study's summary: a recorded seed's time (`_seed_minutes`) and the code
it ran (`_seed_code`), and ``--seeds``' parser (`parse_seeds`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Sequence

from ltrlib import config
from ltrlib.manifest import FILE as MANIFEST_FILE
from ltrlib.records import RecordError, read_json
from ltrlib.studies.checkpoints import _drop_progress, _restore_checkpoints, checkpoint
from ltrlib.studies.cluster import THREADS_PER_SEED, dispatch
from ltrlib.studies.records import _recorded
from ltrlib.study_record import StudyDesign

__all__ = ["Study", "parse_seeds", "run_study"]


def parse_seeds(text: str) -> tuple[int, ...]:
    """``"0-9"``, ``"0,2,5"`` or ``"0-3,7"`` as a tuple of distinct seeds; ValueError naming
    the token otherwise."""
    seeds: list[int] = []
    for token in str(text).split(","):
        token = token.strip()
        try:
            if "-" in token:
                a, b = (int(x) for x in token.split("-", 1))
                if b < a:
                    raise ValueError
                seeds.extend(range(a, b + 1))
            else:
                seeds.append(int(token))
        except ValueError:
            raise ValueError(f"--seeds: {token!r} is neither a seed nor a range like 0-9") from None
    if len(set(seeds)) != len(seeds) or any(s < 0 for s in seeds):
        raise ValueError(f"--seeds {text!r}: seeds must be distinct and non-negative")
    return tuple(seeds)


def _check_design(study_dir: Path, design: dict) -> None:
    """Write ``design`` as the study's `StudyDesign` before its first seed, or check that it
    is the one the study was registered with: ValueError naming what differs."""
    path = StudyDesign.path(study_dir)
    if not path.exists():
        # Seeds ran under a design that has gone: writing today's in its place would pass
        # them off as run under it (the seeds, budgets and rule may differ).
        ran = [f"seeds/{d.name}" for d in _recorded(study_dir).values()]
        ran += [f"progress/{p.name}" for p in sorted((study_dir / "progress").glob("seed*"))]
        if ran:
            raise RecordError(path, f"does not exist, but the study holds what seeds ran under it "
                              f"({', '.join(ran)}); a design is fixed before its first seed and never "
                              f"re-created: restore it (`git checkout -- {path}` where it is committed), or "
                              "use another study id")
        study_dir.mkdir(parents=True, exist_ok=True)
        StudyDesign(design, path).write(study_dir)
        return
    stored = StudyDesign.read(study_dir)
    differ = stored.differs(design)
    if differ:
        raise ValueError(f"{path} holds another design (differs in {differ}: stored "
                         f"{[stored.get(k) for k in differ]}, now {[design.get(k) for k in differ]}); "
                         "a pre-registered study keeps its design: use another study id")


def _to_run(design: dict, recorded: dict[int, Path], summarise_only: bool, doing: str, log):
    """The design's seeds not yet recorded, in order, each announced (``doing``); a recorded
    seed is said to be read back. None when ``summarise_only``."""
    for seed in ([] if summarise_only else design["seeds"]):
        if seed in recorded:
            log(f"seed {seed}: recorded, not rerun")
            continue
        log(f"seed {seed}: {doing} ({len(recorded)} of {len(design['seeds'])} recorded)")
        yield seed


def _seed_minutes(meta: dict) -> dict[str, float]:
    """A recorded seed's time (its ``seed.json``), in minutes: ``wall_minutes``, the wall time
    of the process that finished it (a seed resumed in a later session counts only that
    session's part, and a seed whose notebooks had all finished counts almost nothing), and
    ``notebook_minutes``, its notebooks' own run times summed over every session it ran in
    (a notebook resumed mid-way counts its earlier attempts as its run.json records them, a
    floor, from run.json schema 5 on; before that, its last run only)."""
    notebooks = meta.get("notebook_seconds", math.nan)
    notebooks = sum(notebooks.values()) if isinstance(notebooks, dict) else notebooks
    return {"wall_minutes": round(meta["wall_seconds"] / 60, 1), "notebook_minutes": round(notebooks / 60, 1)}


def _seed_code(seed_dir: Path) -> str:
    """The code a recorded seed ran: its notebooks' commits (`ltrlib.manifest.code_commit`,
    in its ``run.json``), shortened, "; "-joined where they differ (a seed resumed on other
    code), or "not recorded" (runs from before commits were kept, or a record without its
    ``run.json``)."""
    manifest = seed_dir / MANIFEST_FILE
    notebooks = read_json(manifest).get("notebooks", {}) if manifest.exists() else {}
    codes = sorted({str(e.get("code")) for e in notebooks.values() if isinstance(e, dict) and e.get("code")})
    return "; ".join(c[:10] + c[40:] for c in codes) or "not recorded"


def _run_seeds(to_run: Sequence[int], run_seed, design: dict, reports: Path, summarise, *, progress: bool,
               scheduler: str, threads: int, workers: int, resume: str, log) -> None:
    """Run and record ``to_run`` through `dispatch` with ``run_seed`` (one of the studies'
    ``_<study>_seed``), and as each seed is recorded rewrite the study's summary:
    ``summarise(seed)`` returns the words that end the seed's log line ("" for none)."""
    def done(seed: int, result: dict) -> None:
        words = summarise(seed)
        log(f"seed {seed}: recorded in {math.ceil(result['wall'])} s" + (f"; {words}" if words else ""))

    dispatch(to_run, partial(run_seed, progress=progress), design, reports, on_done=done, scheduler=scheduler,
             threads=threads, workers=workers, resume=resume, log=log)



@dataclass(frozen=True)
class Study:
    """What one study brings to the loop (`run_study`).

    ``run_seed(design, seed, reports, progress=..., stop=...)``: run a seed's batch
    (`ltrlib.studies.cluster._batch`) and return ``(run folder, its notebooks, {file: path in
    the record})``; a module-level function, for Dask to send it to a worker process.
    ``summarise(study_dir, command)``: rewrite the study's summary from its recorded seeds and
    return the words that end a recorded seed's log line ("" for none). ``doing``: what a seed
    left does, in its log line ("to run notebook 06"). ``kept``: what a checkpoint keeps of a
    seed in progress, in `checkpoint`'s log line ("journals", "run folders")."""

    run_seed: Callable
    summarise: Callable[[Path, str], str]
    doing: str
    kept: str


def run_study(study: Study, design: dict, study_dir: Path, reports: Path, command: str, *,
              summarise_only: bool = False, save_progress: bool = False, progress: bool = True,
              scheduler: str = "", threads: int = THREADS_PER_SEED, workers: int = 0, log=print) -> None:
    """Register ``design`` in ``study_dir`` (`_check_design`), then run and record each of its
    seeds not yet recorded (`dispatch`), the summary rewritten after each
    (``study.summarise``), so an interruption leaves a summary of the seeds done. A seed
    left resumes from its checkpoint where the run folder has gone (`_restore_checkpoints`).
    ``summarise_only``: run nothing. ``save_progress``: run nothing, `checkpoint` the seeds in
    progress. ``command`` regenerates the study; an interruption says it resumes it. The
    caller writes the final summary, which is its return value."""
    _check_design(study_dir, design)
    if save_progress:
        log(f"checkpointed the {study.kept} of seeds {checkpoint(study_dir, reports) or 'none'} in progress")
        summarise_only = True
    to_run = list(_to_run(design, _recorded(study_dir), summarise_only, study.doing, log))
    _restore_checkpoints(study_dir, reports, design, to_run, log)

    def summarise(seed: int) -> str:
        _drop_progress(study_dir, design, seed)  # recorded: no longer in progress
        return study.summarise(study_dir, command)

    _run_seeds(to_run, study.run_seed, design, reports, summarise, progress=progress, scheduler=scheduler,
               threads=threads, workers=workers, resume=command, log=log)


def reports_folder(reports_dir: str | os.PathLike | None) -> Path:
    """The folder a study's runs and its own folder go in: ``reports_dir``, else
    `ltrlib.config.REPORTS_DIR` as it is when the study starts."""
    return Path(reports_dir) if reports_dir is not None else Path(config.REPORTS_DIR)
