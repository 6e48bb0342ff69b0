"""Where a study stands, read without touching it (`study_status`, ``ltrlib study ...
--status``): which seeds are recorded, which are in progress and how far (the notebooks
finished, the one running or stopped and since when, notebook 07's FOLTR runs kept), which
are only checkpointed (a checkout without the run folder) and which have not started, and
the hours of notebooks left at the study's own measured pace.

A background study runs for days across many sessions; its log says little with
``--no-progress``, and the question each session starts with is how far it got and how long
it has to go. Everything here is read: no lock is taken (a probe of the run's lock could make
a starting run refuse to start), nothing is written, so it is safe beside the running study.
Whether a run folder's process is alive is read from the PID its lock file names
(`ltrlib.runner.RUN_LOCK`), on this machine only.
"""

from __future__ import annotations

import datetime as _dt
import os
import statistics
from dataclasses import dataclass
from pathlib import Path

from ltrlib.manifest import RunManifest
from ltrlib.study_record import SeedRecord, StudyDesign
from ltrlib.studies.checkpoints import _progress_file
from ltrlib.studies.loop import _seed_code
from ltrlib.studies.records import _recorded

__all__ = ["SeedState", "StudyStatus", "study_status"]


@dataclass(frozen=True)
class SeedState:
    """One seed of the design. ``state``: ``recorded``; ``running`` (its run's process is
    alive here); ``stopped`` (a run folder, no process); ``checkpointed`` (no run folder, a
    checkpoint under ``<study>/progress/``, which the next start puts back); ``not started``.
    ``finished``: its notebooks finished, with their seconds; ``current``: the notebook
    running or stopped mid-way, and ``since`` when it started (UTC, ISO); ``runs_kept``:
    notebook 07's finished FOLTR runs; ``code``: the commits its notebooks ran."""

    seed: int
    state: str
    finished: dict[str, float]
    current: str | None = None
    since: str | None = None
    runs_kept: int = 0
    code: str = ""


@dataclass(frozen=True)
class StudyStatus:
    """A study's seeds (`SeedState`, in the design's order), the notebooks a seed runs, each
    notebook's expected seconds at the study's own pace (the median over its recorded
    seeds, else over the finished notebooks of its seeds in progress; absent when no seed
    of the study has finished it) and the seconds of notebooks left."""

    study: str
    design: StudyDesign
    notebooks: tuple[str, ...]
    seeds: tuple[SeedState, ...]
    expected: dict[str, float]
    now: _dt.datetime

    @property
    def unmeasured(self) -> tuple[str, ...]:
        """The notebooks no seed of the study has finished yet: the time left leaves them out."""
        return tuple(nb for nb in self.notebooks if nb not in self.expected)

    def seconds_left(self) -> float:
        """Seconds of notebooks left, one seed after another, at the study's pace: every
        notebook of a seed not recorded that has not finished, the running one less the time
        it has run (never below nothing); notebooks not yet measured count nothing."""
        left = 0.0
        for s in self.seeds:
            if s.state == "recorded":
                continue
            for nb in self.notebooks:
                if nb in s.finished or nb not in self.expected:
                    continue
                spent = _elapsed(s.since, self.now) if nb == s.current and s.state == "running" else 0.0
                left += max(self.expected[nb] - spent, 0.0)
        return left

    def render(self) -> str:
        """The status as lines to print."""
        recorded = sum(s.state == "recorded" for s in self.seeds)
        rule = self.design.get("rule_version")
        lines = [f"{self.study}: {recorded} of {len(self.seeds)} seeds recorded (design: {self.design.profile}, "
                 f"scale {self.design['scale']}, seeds {_seed_list([s.seed for s in self.seeds])}"
                 + (f", rule {rule}" if rule else "")
                 # A ledger design's notebook parameters are its own (`-p`); the others' are their profile's.
                 + "".join(f", -p {k} {v}" for k, v in (self.design.get("parameters") or {}).items()
                           if self.design.profile == "ledger") + ")"]
        waiting = [s.seed for s in self.seeds if s.state == "not started"]
        for s in self.seeds:
            if s.state != "not started":
                lines.append(f"  seed {s.seed}: {self._seed_words(s)}")
        if waiting:
            lines.append(f"  seed{'s' if len(waiting) > 1 else ''} {_seed_list(waiting)}: not started")
        lines.append("  " + self._left_words())
        return "\n".join(lines)

    def _seed_words(self, s: SeedState) -> str:
        if s.state == "recorded":
            took = f"{_hours(sum(s.finished.values()))} of notebooks" if s.finished else "its time not recorded"
            return f"recorded ({took}; code {_commits(s.code)})"
        words = f"{s.state}, {len(s.finished)} of {len(self.notebooks)} notebooks finished"
        if s.current:
            doing = "running" if s.state == "running" else "stopped in"
            words += f"; {doing} {s.current}"
            if s.since and s.state == "running":
                words += f" since {s.since[11:16]} UTC ({_hours(_elapsed(s.since, self.now))})"
        if s.runs_kept:
            words += f"; {s.runs_kept} FOLTR runs kept"
        return words + (f" (code {_commits(s.code)})" if s.code else "")

    def _left_words(self) -> str:
        if all(s.state == "recorded" for s in self.seeds):
            return "left: nothing; the study has run to its end"
        if not self.expected:
            return "left: not known yet: no seed of the study has finished a notebook"
        measured = "its recorded seeds" if any(s.state == "recorded" for s in self.seeds) else \
            "the notebooks its seeds in progress have finished"
        words = (f"left: {'at least ' if self.unmeasured else ''}{_hours(self.seconds_left())} of notebooks, one seed "
                 f"after another, at the pace of {measured} (divide by the seeds run side by side)")
        if self.unmeasured:
            words += f"; not yet measured in this study, so not counted: {', '.join(self.unmeasured)}"
        return words


def _elapsed(since: str | None, now: _dt.datetime) -> float:
    return max((now - _dt.datetime.fromisoformat(since)).total_seconds(), 0.0) if since else 0.0


def _commits(code: str) -> str:
    """`_seed_code`'s "; "-joined commits with "and", so they do not read as clauses."""
    return " and ".join(code.split("; "))


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:.1f} h" if seconds >= 3600 else f"{seconds / 60:.0f} min"


def _seed_list(seeds: list[int]) -> str:
    """``[10, 11, 12, 15]`` as ``10-12, 15``."""
    spans: list[list[int]] = []
    for s in sorted(seeds):
        if spans and s == spans[-1][1] + 1:
            spans[-1][1] = s
        else:
            spans.append([s, s])
    return ", ".join(f"{a}-{b}" if b > a else str(a) for a, b in spans)


def _design_notebooks(design: StudyDesign) -> tuple[str, ...]:
    """The notebooks each seed of ``design`` runs: a ledger study's batch (all, or its
    ``notebooks``), a neural study's networks, a bilambdamart study's notebook 06."""
    if design.profile == "ledger":
        from ltrlib.runner import discover, select_notebooks

        only = None if design["notebooks"] == "all" else design["notebooks"]
        return tuple(p.stem for p in select_notebooks(discover(), only))
    if "source" in design:
        from ltrlib.studies.neural import NEURAL_NOTEBOOK

        return (NEURAL_NOTEBOOK,)
    from ltrlib.studies.bilambdamart import NOTEBOOK

    return (NOTEBOOK,)


def _alive(run_dir: Path) -> bool:
    """Whether the process named in the run's lock file is alive on this machine."""
    from ltrlib.runner import RUN_LOCK

    try:
        pid = int((run_dir / RUN_LOCK).read_text().strip())
        os.kill(pid, 0)
    except (OSError, ValueError):  # no lock file, no PID in it, or no such process
        return False
    return True


def _in_progress(seed: int, folder: Path, manifest: RunManifest, state: str, notebooks: tuple[str, ...]
                 ) -> SeedState:
    """A seed's state from a run folder (or a checkpoint's mirror of one) and its record."""
    entries = manifest.notebooks
    finished = {nb: float(e.seconds or 0.0) for nb, e in entries.items() if e.completed and nb in notebooks}
    current = next((nb for nb in notebooks if nb in entries and not entries[nb].completed), None)
    from ltrlib.foltr.store import RUNS_FOLDER, RunStore  # the simulator's import, only for a seed in progress

    return SeedState(seed, state, finished, current, entries[current].started if current else None,
                     len(RunStore(folder / RUNS_FOLDER)), _seed_code(folder))


def study_status(study_dir: str | os.PathLike, reports: str | os.PathLike | None = None,
                 now: _dt.datetime | None = None) -> StudyStatus:
    """Where the study in ``study_dir`` stands (`StudyStatus`), its run folders read from
    ``reports`` (default: the study folder's parent), at ``now`` (default: the clock)."""
    study_dir = Path(study_dir)
    reports = Path(reports) if reports is not None else study_dir.parent
    if not StudyDesign.exists(study_dir):
        known = sorted(p.parent.name for p in study_dir.parent.glob(f"*/{StudyDesign.path(study_dir).name}"))
        raise ValueError(f"{study_dir}: no study here (no {StudyDesign.path(study_dir).name}); the studies under "
                         f"{study_dir.parent}: {', '.join(known) or 'none'}")
    design = StudyDesign.read(study_dir)
    notebooks = _design_notebooks(design)
    recorded = _recorded(study_dir)
    seeds = []
    for seed in design.seeds:
        run_dir = reports / f"{design.study}-seed{seed}"
        kept = _progress_file(study_dir, design, seed)
        if seed in recorded:
            seconds = SeedRecord.read(recorded[seed]).get("notebook_seconds", {})
            seconds = seconds if isinstance(seconds, dict) else {notebooks[0]: seconds}
            seeds.append(SeedState(seed, "recorded", {k: float(v) for k, v in seconds.items()},
                                   code=_seed_code(recorded[seed])))
        elif (manifest := RunManifest.read(run_dir)) is not None:
            seeds.append(_in_progress(seed, run_dir, manifest, "running" if _alive(run_dir) else "stopped",
                                      notebooks))
        elif kept.is_dir() and (manifest := RunManifest.read(kept)) is not None:
            seeds.append(_in_progress(seed, kept, manifest, "checkpointed", notebooks))
        elif kept.exists():  # a bilambdamart or neural seed's journal: its trials, not its notebooks
            seeds.append(SeedState(seed, "checkpointed", {}))
        else:
            seeds.append(SeedState(seed, "not started", {}))
    source = [s for s in seeds if s.state == "recorded"] or seeds
    expected = {nb: statistics.median(times) for nb in notebooks
                if (times := [s.finished[nb] for s in source if nb in s.finished])}
    return StudyStatus(design.study, design, notebooks, tuple(seeds), expected,
                       now or _dt.datetime.now(_dt.timezone.utc))
