"""Where a study stands, `ltrlib.studies.status` (``ltrlib study ... --status``): each seed's
state read from its record, run folder or checkpoint, the hours left at the study's own
pace, and nothing written or locked."""

import datetime as dt
import os
import pickle
import subprocess

import pandas as pd
import pytest

from ltrlib import cli, config
from ltrlib.foltr import RUNS_FOLDER
from ltrlib.manifest import NotebookRecord, RunManifest
from ltrlib.runner import RUN_LOCK
from ltrlib.studies import study_status
from ltrlib.study_record import SeedRecord, StudyDesign

NOW = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.timezone.utc)
A, B = "00_dataset_overview", "07_foltr_noniid"


def _design(reports, seeds=(1, 2, 3, 4, 5)):
    study = reports / "S"
    StudyDesign({"study": "S", "profile": "ledger", "dataset": "synthetic", "scale": "tiny", "seeds": list(seeds),
                 "notebooks": "00,07", "parameters": {"profile": "paper"}, "rule_version": "v2"}).write(study)
    return study


#: Two kinds of FOLTR run, as notebook 07's runs table and kept runs name them.
LINEAR = dict(setting="type1", data="IID", ranker="linear", click="perfect", remedy="none", n_rounds=100, B=5,
              n_clients=3)
NEURAL = {**LINEAR, "ranker": "neural"}


def _recorded(study, seed, seconds, runs=()):
    """A recorded seed with its notebooks' ``seconds``; ``runs``: its notebook 07 runs table's
    rows (kind, seconds)."""
    folder = study / "seeds" / f"seed{seed}"
    SeedRecord({"seed": seed, "wall_seconds": 1.0, "notebook_seconds": seconds, "metrics": {}}).write(folder)
    if runs:
        (folder / "tables" / B).mkdir(parents=True)
        pd.DataFrame([{**kind, "seed": i, "seconds": took} for i, (kind, took) in enumerate(runs)]).to_csv(
            folder / "tables" / B / "runs_online.csv", index=False)


def _run(folder, finished, current=None, since=None, pid=None, runs=0, kind=LINEAR):
    """A run folder (or a checkpoint's mirror of one): ``finished`` notebooks with their
    seconds, ``current`` started at ``since`` and not finished, its lock naming ``pid``, and
    ``runs`` kept FOLTR runs of ``kind``."""
    notebooks = {nb: NotebookRecord("completed", seconds=s, code="c" * 40) for nb, s in finished.items()}
    if current:
        notebooks[current] = NotebookRecord("running", started=since.isoformat(timespec="seconds"), code="d" * 40)
    RunManifest(folder.name, notebooks=notebooks).write(folder)
    if pid is not None:
        (folder / RUN_LOCK).write_text(f"{pid}\n")
    for i in range(runs):
        (folder / RUNS_FOLDER).mkdir(exist_ok=True)
        (folder / RUNS_FOLDER / f"{i:032x}.pickle").write_bytes(  # run_job's result: offline, row, ranker
            pickle.dumps((None, {**kind, "seed": i, "seconds": 1.0}, None)))


def _date_runs(folder, when):
    """Give the kept runs of ``folder`` these modification times, in their order."""
    for path, moment in zip(sorted((folder / RUNS_FOLDER).iterdir()), when):
        os.utime(path, (moment.timestamp(), moment.timestamp()))


def _dead_pid():
    """The PID of a process that has ended."""
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def test_each_seed_is_told_from_its_record_run_folder_or_checkpoint_and_the_time_left_at_the_study_pace(tmp_path):
    study = _design(tmp_path)
    _recorded(study, 1, {A: 60.0, B: 3600.0})
    _recorded(study, 2, {A: 100.0, B: 5400.0})
    _run(tmp_path / "S-seed3", {A: 120.0}, B, NOW - dt.timedelta(minutes=30), pid=os.getpid(), runs=3)
    _run(study / "progress" / "seed4", {A: 90.0}, B, NOW - dt.timedelta(hours=5), runs=2)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))

    status = study_status(study, now=NOW)

    assert [(s.seed, s.state) for s in status.seeds] == [
        (1, "recorded"), (2, "recorded"), (3, "running"), (4, "checkpointed"), (5, "not started")]
    assert status.notebooks == (A, B) and status.unmeasured == ()
    assert status.expected == {A: 80.0, B: 4500.0}  # the recorded seeds' medians, not the seeds in progress
    seed3, seed4 = status.seeds[2], status.seeds[3]
    assert (seed3.current, seed3.runs_kept, seed3.finished) == (B, 3, {A: 120.0})
    assert (seed4.current, seed4.runs_kept) == (B, 2)
    # seed 3: 07 less its 30 minutes; seed 4: 07 whole (nothing runs it); seed 5: both notebooks
    assert status.seconds_left() == pytest.approx((4500 - 1800) + 4500 + (80 + 4500))
    text = status.render()
    assert text.splitlines()[0] == ("S: 2 of 5 seeds recorded (design: ledger, scale tiny, seeds 1-5, rule v2, "
                                    "-p profile paper)")
    assert "seed 3: running, 1 of 2 notebooks finished; running 07_foltr_noniid since 11:30 UTC (30 min); " \
           "3 FOLTR runs kept (code cccccccccc and dddddddddd)" in text
    assert "seed 4: checkpointed, 1 of 2 notebooks finished; stopped in 07_foltr_noniid; 2 FOLTR runs kept" in text
    assert "seed 5: not started" in text and "left: 3.3 h of notebooks" in text and "at least" not in text
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before  # nothing written


def test_a_run_whose_process_has_gone_is_stopped_and_unmeasured_notebooks_make_the_time_a_floor(tmp_path):
    study = _design(tmp_path, seeds=(1, 2))
    _run(tmp_path / "S-seed1", {A: 100.0}, B, NOW - dt.timedelta(minutes=30), pid=_dead_pid())

    status = study_status(study, now=NOW)

    assert [s.state for s in status.seeds] == ["stopped", "not started"]
    assert status.expected == {A: 100.0} and status.unmeasured == (B,)
    assert status.seconds_left() == 100.0  # seed 2's 00; no seed has finished 07
    text = status.render()
    assert "seed 1: stopped, 1 of 2 notebooks finished; stopped in 07_foltr_noniid" in text and "since" not in text
    assert "left: at least 2 min of notebooks" in text and "not counted: 07_foltr_noniid" in text


#: A recorded seed's 100 runs: 50 linear of 20 s, 50 neural of 60 s (4,000 s of weight).
GRID = [(LINEAR, 20.0)] * 50 + [(NEURAL, 60.0)] * 50


def test_notebook_07_is_timed_by_the_weight_of_its_runs_not_kept_at_the_recorded_pace_when_none_runs_it(tmp_path):
    study = _design(tmp_path, seeds=(1, 2, 3, 4))
    _recorded(study, 1, {A: 60.0, B: 4000.0}, runs=GRID)
    _recorded(study, 2, {A: 100.0, B: 5000.0}, runs=GRID)
    _run(study / "progress" / "seed3", {A: 90.0}, B, NOW - dt.timedelta(hours=5), runs=40, kind=NEURAL)

    status = study_status(study, now=NOW)

    assert (status.runs.runs, status.runs.seconds, status.run_pace()) == (100, 4000.0, None)
    assert status.runs.of(NEURAL) == 60.0 and status.runs.of({**NEURAL, "B": 10}) == 40.0  # a kind not run: the mean
    assert "seed 3: checkpointed, 1 of 2 notebooks finished; stopped in 07_foltr_noniid; 40 of 100 FOLTR runs kept" \
        in status.render()
    assert (status.seeds[2].runs_kept, status.seeds[2].work_kept) == (40, 40 * 60.0)
    # 1.125 s of notebook a second of weight (4,500 s over 4,000): seed 3's 1,600 s of weight
    # not kept (40 neural runs are 60% of it, though 40% of the runs); seed 4, 00 and all of 07
    assert status.seconds_left() == pytest.approx(1600 * 1.125 + (80 + 4000 * 1.125))
    assert ("07_foltr_noniid: timed by its FOLTR runs, 100 a seed (its recorded seeds' runs tables) less those "
            "kept, each weighed by its kind's recorded seconds; 45.0 s a run on average (its recorded seeds' "
            "notebook time)") in status.render()


def test_a_seed_running_07_sets_the_pace_by_the_runs_it_saved_since_it_started_once_it_has_enough(tmp_path):
    study = _design(tmp_path, seeds=(1, 2, 3))
    _recorded(study, 1, {A: 60.0, B: 4000.0}, runs=GRID)
    _recorded(study, 2, {A: 100.0, B: 5000.0}, runs=GRID)
    since = NOW - dt.timedelta(minutes=30)
    folder = tmp_path / "S-seed3"
    _run(folder, {A: 90.0}, B, since, pid=os.getpid(), runs=50)
    # 20 linear runs kept from an earlier stretch, 30 saved in this one (600 s of weight)
    _date_runs(folder, [since - dt.timedelta(hours=1)] * 20 + [since + dt.timedelta(minutes=1)] * 30)

    status = study_status(study, now=NOW)

    seed3 = status.seeds[2]
    assert (seed3.runs_kept, seed3.runs_since, seed3.work_kept, seed3.work_since) == (50, 30, 1000.0, 600.0)
    assert status.run_pace() == (pytest.approx(3.0), (seed3,))  # its 1,800 s over 600 s of weight
    assert status.seconds_left() == pytest.approx(3000 * 3.0)  # the 30 minutes are in the pace, not taken off
    text = status.render()
    assert "120.0 s a run on average, at the pace of seed 3's 30 runs since 11:30 UTC" in text
    assert "at the pace of its recorded seeds, 07_foltr_noniid at its live pace above (divide" in text

    _date_runs(folder, [since - dt.timedelta(hours=1)] * 31 + [since + dt.timedelta(minutes=1)] * 19)
    assert study_status(study, now=NOW).run_pace() is None  # 19 runs since: too few to time the grid by

    # 07 started 3 hours ago: the pace is the last hour's, 25 runs of its 60 since (500 s of weight)
    _run(folder, {A: 90.0}, B, NOW - dt.timedelta(hours=3), pid=os.getpid(), runs=60)
    _date_runs(folder, [NOW - dt.timedelta(hours=2)] * 35 + [NOW - dt.timedelta(minutes=30)] * 25)
    status = study_status(study, now=NOW)
    assert (status.seeds[2].runs_since, status.seeds[2].paced_from) == (25, "2026-11-30T11:00:00+00:00")
    assert status.run_pace()[0] == pytest.approx(3600 / 500)
    assert "seed 3's 25 runs since 11:00 UTC" in status.render()


def test_a_study_at_its_end_has_nothing_left_and_a_missing_one_names_the_studies_there(tmp_path):
    study = _design(tmp_path, seeds=(1,))
    _recorded(study, 1, {A: 60.0, B: 3600.0})
    SeedRecord({"wall_seconds": 1.0, "metrics": {}}).write(study / "seeds" / "seed2")  # before times were kept
    StudyDesign({**StudyDesign.read(study), "seeds": [1, 2]}).write(study)
    lines = study_status(study, now=NOW).render().splitlines()
    assert lines[2] == "  seed 2: recorded (its time not recorded; code not recorded)"
    assert lines[-1] == "  left: nothing; the study has run to its end"
    with pytest.raises(ValueError, match=r"no study here \(no design.json\); the studies under .*: S$"):
        study_status(tmp_path / "T")


def test_the_command_prints_the_status_and_runs_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(config, "REPORTS_DIR", tmp_path)
    study = _design(tmp_path, seeds=(1,))
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    assert cli.main(["study", "ledger", "--study", "S", "--status"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("S: 0 of 1 seeds recorded")
    assert printed.splitlines()[-1] == "  left: not known yet: no seed of the study has finished a notebook"
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before
    assert study.exists()
