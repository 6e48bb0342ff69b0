"""Where a study stands, read without touching it (`study_status`, ``ltrlib study ...
--status``): which seeds are recorded, which are in progress and how far (the notebooks
finished, the one running or stopped and since when, notebook 07's FOLTR runs kept), which
are only checkpointed (a checkout without the run folder) and which have not started, and
the hours of notebooks left at the study's own measured pace.

Notebook 07 is most of a ledger seed and resumes from its kept runs, so once a seed is
recorded it is timed by its runs (`RunCosts`): a seed's runs, as the recorded seeds' runs
tables list them, less those it has kept, each weighed by the recorded seconds of its kind
(a neural run costs several linear ones). The weight becomes time at the pace of a seed
running 07 here (its time since 07 started over the weight of the runs saved since), or,
with none, at the recorded seeds' 07 time over their runs' weight. The live pace is the
truer: a recorded seed that resumed 07 recorded its last stretch only before run.json
schema 5, and since then its earlier attempts as far as they recorded them
(`NotebookRecord.attempts_seconds`, a floor). It is the pace of the seed's last hour
(`PACE_WINDOW`), so that it follows the machine as it is now, not as it was when the
stretch began (a background study's share of the cores changes with what else runs).

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

#: A seed running notebook 07 sets the pace once it has saved this many runs since its notebook
#: started (ours: fewer would time a handful of runs and the kernel's start).
MIN_RUNS_FOR_PACE = 20
#: ... by the runs it saved in this last stretch of time (or since 07 started, if later) over
#: their weight (ours: long enough that the bursts in which runs are saved, joblib handing
#: back results in the grid's order, are a small part of it).
PACE_WINDOW = _dt.timedelta(hours=1)
#: What sets a FOLTR run's cost, of notebook 07's runs table's columns (ours): all that
#: names the run but its seed.
RUN_KIND = ("setting", "data", "ranker", "click", "remedy", "n_rounds", "B", "n_clients")


@dataclass(frozen=True)
class RunCosts:
    """Notebook 07's runs as the study's recorded seeds made them: the mean seconds of a run
    of each kind (`RUN_KIND`), and a seed's runs and the sum of their seconds (medians over
    the seeds). A run's seconds are its worker's wall time, which the machine's load
    stretches: they weigh runs against one another, and a pace turns the weight into time."""

    by_kind: dict[tuple[str, ...], float]
    runs: int
    seconds: float

    def of(self, row: dict) -> float:
        """The weight of a run like ``row`` (a kind no recorded seed ran: their mean run's)."""
        return self.by_kind.get(tuple(str(row.get(k)) for k in RUN_KIND), self.seconds / self.runs)


@dataclass(frozen=True)
class SeedState:
    """One seed of the design. ``state``: ``recorded``; ``running`` (its run's process is
    alive here); ``stopped`` (a run folder, no process); ``checkpointed`` (no run folder, a
    checkpoint under ``<study>/progress/``, which the next start puts back); ``not started``.
    ``finished``: its notebooks finished, with their seconds; ``current``: the notebook
    running or stopped mid-way, and ``since`` when it started (UTC, ISO); ``runs_kept``:
    notebook 07's finished FOLTR runs, ``runs_since`` those saved since ``paced_from`` (the
    later of ``since`` and `PACE_WINDOW` ago; counted for a seed running 07 only), and
    ``work_kept`` and ``work_since`` their weights (`RunCosts.of`; 0 before a seed is
    recorded); ``code``: the commits its notebooks ran."""

    seed: int
    state: str
    finished: dict[str, float]
    current: str | None = None
    since: str | None = None
    runs_kept: int = 0
    runs_since: int = 0
    work_kept: float = 0.0
    work_since: float = 0.0
    code: str = ""
    paced_from: str | None = None


@dataclass(frozen=True)
class StudyStatus:
    """A study's seeds (`SeedState`, in the design's order), the notebooks a seed runs, each
    notebook's expected seconds at the study's own pace (the median over its recorded
    seeds, else over the finished notebooks of its seeds in progress; absent when no seed
    of the study has finished it), notebook 07's runs as the recorded seeds made them
    (`RunCosts`; None before the first is recorded) and the seconds of notebooks left."""

    study: str
    design: StudyDesign
    notebooks: tuple[str, ...]
    seeds: tuple[SeedState, ...]
    expected: dict[str, float]
    now: _dt.datetime
    runs: RunCosts | None = None

    @property
    def unmeasured(self) -> tuple[str, ...]:
        """The notebooks no seed of the study has finished yet: the time left leaves them out."""
        return tuple(nb for nb in self.notebooks if nb not in self.expected)

    def run_pace(self) -> tuple[float, tuple[SeedState, ...]] | None:
        """Seconds of notebook 07 a second of run weight (`RunCosts`), and the seeds it is
        read from: the median over the seeds running 07 here that have saved
        `MIN_RUNS_FOR_PACE` runs since their ``paced_from`` (`PACE_WINDOW` ago, or 07's start
        if later), of that time over those runs' weight; None when there is no such seed, or
        no recorded seed to weigh by."""
        timed = tuple(s for s in self.seeds if s.runs_since >= MIN_RUNS_FOR_PACE and s.work_since > 0)
        if not timed or self.runs is None:
            return None
        return statistics.median(_elapsed(s.paced_from, self.now) / s.work_since for s in timed), timed

    def seconds_left(self) -> float:
        """Seconds of notebooks left, one seed after another, at the study's pace: every
        notebook of a seed not recorded that has not finished, the running one less the time
        it has run (never below nothing); notebooks not yet measured count nothing. Notebook
        07, once a seed is recorded, by the weight of its runs not kept, at `run_pace`, else
        at its expected seconds over a seed's weight."""
        left = 0.0
        pace = self.run_pace()
        for s in self.seeds:
            if s.state == "recorded":
                continue
            for nb in self.notebooks:
                if nb in s.finished or nb not in self.expected:
                    continue
                if nb == _foltr_notebook() and self.runs is not None:
                    rate = pace[0] if pace else self.expected[nb] / self.runs.seconds
                    left += max(self.runs.seconds - s.work_kept, 0.0) * rate
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
        if self.runs is not None and _foltr_notebook() in self.expected \
                and any(s.state != "recorded" for s in self.seeds):
            lines.append("  " + self._runs_words())
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
            words += f"; {s.runs_kept}{f' of {self.runs.runs}' if self.runs else ''} FOLTR runs kept"
        return words + (f" (code {_commits(s.code)})" if s.code else "")

    def _runs_words(self) -> str:
        runs = self.runs
        words = (f"{_foltr_notebook()}: timed by its FOLTR runs, {runs.runs} a seed (its recorded seeds' "
                 "runs tables) less those kept, each weighed by its kind's recorded seconds; ")
        if (pace := self.run_pace()) is None:
            return words + (f"{self.expected[_foltr_notebook()] / runs.runs:.1f} s a run on average (its recorded "
                            "seeds' notebook time)")
        rate, timed = pace
        return words + f"{rate * runs.seconds / runs.runs:.1f} s a run on average, at the pace of " + ", ".join(
            f"seed {s.seed}'s {s.runs_since} runs since {s.paced_from[11:16]} UTC" for s in timed)

    def _left_words(self) -> str:
        if all(s.state == "recorded" for s in self.seeds):
            return "left: nothing; the study has run to its end"
        if not self.expected:
            return "left: not known yet: no seed of the study has finished a notebook"
        measured = "its recorded seeds" if any(s.state == "recorded" for s in self.seeds) else \
            "the notebooks its seeds in progress have finished"
        if self.run_pace() is not None:
            measured += f", {_foltr_notebook()} at its live pace above"
        words = (f"left: {'at least ' if self.unmeasured else ''}{_hours(self.seconds_left())} of notebooks, one seed "
                 f"after another, at the pace of {measured} (divide by the seeds run side by side)")
        if self.unmeasured:
            words += f"; not yet measured in this study, so not counted: {', '.join(self.unmeasured)}"
        return words


def _foltr_notebook() -> str:
    """The notebook whose finished runs a run folder keeps (`ltrlib.foltr.RUNS_FOLDER`)."""
    from ltrlib.fidelity.foltr import RUNS

    return RUNS[0]


def _run_costs(seed_folders: list[Path]) -> RunCosts | None:
    """`RunCosts` from the recorded seeds' notebook 07 runs tables (one row a run); None when
    none has one with every column of `RUN_KIND` and some ``seconds``."""
    import pandas as pd

    from ltrlib.fidelity.foltr import RUNS
    from ltrlib.fidelity.sources import read_table

    tables = [t for folder in seed_folders if (t := read_table(folder, *RUNS, missing=[])) is not None]
    tables = [t for t in tables if {*RUN_KIND, "seconds"} <= set(t.columns) and t.seconds.sum() > 0]
    if not tables:
        return None
    frame = pd.concat(tables, ignore_index=True)
    by_kind = frame.groupby([frame[k].astype(str) for k in RUN_KIND]).seconds.mean()
    return RunCosts({tuple(kind): float(mean) for kind, mean in by_kind.items()},
                    round(statistics.median(len(t) for t in tables)),
                    statistics.median(float(t.seconds.sum()) for t in tables))


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


def _in_progress(seed: int, folder: Path, manifest: RunManifest, state: str, notebooks: tuple[str, ...],
                 costs: RunCosts | None, now: _dt.datetime) -> SeedState:
    """A seed's state from a run folder (or a checkpoint's mirror of one) and its record, its
    kept FOLTR runs weighed by ``costs``, at ``now``."""
    entries = manifest.notebooks
    finished = {nb: float(e.seconds or 0.0) for nb, e in entries.items() if e.completed and nb in notebooks}
    current = next((nb for nb in notebooks if nb in entries and not entries[nb].completed), None)
    from ltrlib.foltr.store import RUNS_FOLDER, RunStore  # the simulator's import, only for a seed in progress

    since = entries[current].started if current else None
    kept = list(RunStore(folder / RUNS_FOLDER).rows())
    # Only a live run's own files date its stretch: a checkpoint's copy may not keep file times.
    live = state == "running" and current == _foltr_notebook() and since is not None
    paced_from = max(_dt.datetime.fromisoformat(since), now - PACE_WINDOW) if live else None
    latest = [row for row, saved in kept if live and saved >= paced_from.timestamp()]
    weigh = costs.of if costs is not None else (lambda row: 0.0)
    return SeedState(seed, state, finished, current, since, len(kept), len(latest),
                     sum(weigh(row) for row, _ in kept), sum(map(weigh, latest)), _seed_code(folder),
                     paced_from.isoformat(timespec="seconds") if live else None)


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
    now = now or _dt.datetime.now(_dt.timezone.utc)
    recorded = _recorded(study_dir)
    costs = _run_costs(list(recorded.values())) if _foltr_notebook() in notebooks else None
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
                                      notebooks, costs, now))
        elif kept.is_dir() and (manifest := RunManifest.read(kept)) is not None:
            seeds.append(_in_progress(seed, kept, manifest, "checkpointed", notebooks, costs, now))
        elif kept.exists():  # a bilambdamart or neural seed's journal: its trials, not its notebooks
            seeds.append(SeedState(seed, "checkpointed", {}))
        else:
            seeds.append(SeedState(seed, "not started", {}))
    source = [s for s in seeds if s.state == "recorded"] or seeds
    expected = {nb: statistics.median(times) for nb in notebooks
                if (times := [s.finished[nb] for s in source if nb in s.finished])}
    return StudyStatus(design.study, design, notebooks, tuple(seeds), expected, now, costs)
