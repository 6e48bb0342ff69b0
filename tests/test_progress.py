"""ltrlib.progress: a widget bar interactively, sparse text lines on stderr in batch runs, the
batch kernel's bars reported to the runner, and the runner's own bar and ETA."""

import json
import os
import sys
import time
import types

import pytest

import tqdm.std

from ltrlib import progress, sessions


@pytest.fixture
def kernel(monkeypatch):
    """This process as a batch kernel (a worker process has no ipykernel)."""
    monkeypatch.setitem(sys.modules, "ipykernel", types.ModuleType("ipykernel"))
    monkeypatch.setenv(sessions.BATCH_ENV, "1")


def test_batch_runs_get_a_sparse_text_bar(kernel, monkeypatch, capsys):
    monkeypatch.delenv(progress.STATUS_ENV, raising=False)
    with progress.bar(total=3, desc="tuning full.M_full") as b:
        assert type(b) is tqdm.std.tqdm and b.mininterval == progress.BATCH_INTERVAL
        b.update(3)
    err = capsys.readouterr().err
    assert "tuning full.M_full" in err and "3/3" in err


def test_interactive_sessions_get_tqdm_auto_and_disabled_bars_print_nothing(monkeypatch, capsys):
    from tqdm.auto import tqdm as auto

    monkeypatch.delenv(sessions.BATCH_ENV, raising=False)
    assert isinstance(progress.bar(total=1, enabled=False), auto)
    assert list(progress.bar(range(3), desc="folds", enabled=False)) == [0, 1, 2]
    assert capsys.readouterr().err == ""


def test_a_batch_kernel_reports_its_open_bars_to_the_runner(kernel, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv(progress.STATUS_ENV, str(tmp_path))
    monkeypatch.setattr(progress, "STATUS_INTERVAL", 0.0)  # every step written, for the test
    seen = []
    with progress.bar(total=6, desc="tuning Split1.M1") as trials:
        for _ in progress.bar(range(3), desc="models, 2 at a time"):
            trials.update(2)
            seen.append([(b["desc"], b["n"], b["total"]) for b in progress.read_status(tmp_path)])
    assert seen[0] == [("tuning Split1.M1", 2, 6), ("models, 2 at a time", 0, 3)]
    assert seen[-1] == [("tuning Split1.M1", 6, 6), ("models, 2 at a time", 2, 3)]
    assert progress.read_status(tmp_path) == [] and list(tmp_path.iterdir()) == []  # closed: said nothing left
    # The file of a process that has ended is not shown; a live one's is, however old.
    import subprocess

    ended = subprocess.Popen(["true"])
    ended.wait()
    (tmp_path / f"{ended.pid}.json").write_text(json.dumps([{"desc": "dead", "n": 1, "total": 2, "started": 0}]))
    (tmp_path / f"{os.getpid()}.json").write_text(json.dumps([{"desc": "slow", "n": 0, "total": 9, "started": 0}]))
    old = time.time() - 3600
    os.utime(tmp_path / f"{os.getpid()}.json", (old, old))
    assert [b["desc"] for b in progress.read_status(tmp_path)] == ["slow"]


def test_the_run_bar_weights_notebooks_by_their_expected_seconds(tmp_path):
    clock = [100.0]
    run = progress.RunBar({"00_a": 10, "03_b": 100, "04_c": 10}, enabled=False, slow=5.0, clock=lambda: clock[0])
    assert run.remaining() == 120.0  # the expectation, before anything ran (ltrlib.timing.Estimate)
    run.start("00_a")
    clock[0] += 20  # twice as slow as expected
    assert run.position() == 9.5  # the running notebook moves with the clock, to 95 % of its weight
    assert run.remaining() == 110.0  # an overrunning notebook holds the ETA, it does not raise it
    run.finish("00_a")
    assert run.remaining() == 110.0 and run.estimate.bounds() == (round(110 / 1.3, 1), 550.0)
    run.start("03_b", tmp_path)
    clock[0] += 20
    assert run.position() == 30.0 and run.remaining() == 90.0
    run = progress.RunBar({"00_a": 10}, enabled=True, file=open(os.devnull, "w"))
    (tmp_path / "1.json").write_text(json.dumps([{"desc": "tuning full.M_full", "n": 3, "total": 6, "started": 1}]))
    run.start("00_a", tmp_path)
    run._draw()
    assert run.bar.postfix == "00_a: tuning full.M_full 3/6"
    assert "<00:10 (00:07-00:13)" in str(run.bar)  # the bar shows the ETA of `remaining`, with its range
    run.bar.close()


def _bar_columns(line: str) -> int:
    return line.index("| [") - line.index("|") - 1


def test_the_runs_line_fits_the_terminal_and_keeps_its_bar(tmp_path):
    # At 160 columns a long status cut the line and squeezed the bar to "| |".
    first, second = tmp_path / "03", tmp_path / "06"
    first.mkdir(), second.mkdir()
    (first / "1.json").write_text(json.dumps([
        {"desc": "models, 2 at a time", "n": 4, "total": 9, "started": 1},
        {"desc": "tuning Split1.M1_category_feature_220", "n": 3, "total": 6, "started": 2,
         "detail": "trial 3: 340 trees, best NDCG@10 0.4321 so far, pruned 2"}]))
    (second / "2.json").write_text(json.dumps([{"desc": "tuning bilambdamart stage 2 fold 7 of 10", "n": 1,
                                                "total": 20, "started": 3, "detail": "trial 1: 900 trees"}]))
    for columns in (160, 120, 100, 80):
        run = progress.RunBar({"03_client_models": 936, "06_bilambdamart": 666, "09_click_bias": 129},
                              enabled=True, file=open(os.devnull, "w"), slow=5.0, ncols=columns)
        run.start("03_client_models", first)
        run.start("06_bilambdamart", second)
        run._draw()
        line = str(run.bar)
        assert len(line) <= columns and _bar_columns(line) >= progress.RunBar.MIN_BAR, (columns, line)
        assert line.startswith("ltrlib run:") and line.endswith("]") and "03_client" in line
        if columns == 160:  # room for what each notebook does, cut to its share
            assert "03_client_models: tuning Split1" in line and "06_bilambdamart: tuning" in line, line
        run.bar.close()
    # Unlimited, nothing is left out.
    bars = [{"desc": "models", "n": 4, "total": 9}, {"desc": "tuning Split1.M1", "n": 3, "total": 6,
                                                     "detail": "trial 3: 340 trees"}]
    full = "03: models 4/9 · tuning Split1.M1 3/6 (trial 3: 340 trees)"
    assert progress.fit_status([("03", bars)], None) == full
    # Shortened in steps: details go, then all but the innermost bar, then each notebook's part
    # is cut to its share, then only the names are left, and last those are cut.
    assert progress.fit_status([("03", bars)], len(full) - 1) == "03: models 4/9 · tuning Split1.M1 3/6"
    assert progress.fit_status([("03", bars)], 30) == "03: tuning Split1.M1 3/6"
    assert progress.fit_status([("03_client_models", bars), ("06_bilambdamart", bars)], 60) \
        == "03_client_models: tuning Sp… | 06_bilambdamart: tuning Spl…"  # 28 columns each
    assert progress.fit_status([("03_client_models", bars), ("06_bilambdamart", bars)], 40) \
        == "03_client_models | 06_bilambdamart"
    assert progress.fit_status([("03_client_models", bars), ("06_bilambdamart", bars)], 20) \
        == "03_client_models | …"
    assert progress.fit_status([("03", bars)], 0) == ""


def test_a_batch_workers_bars_only_report(monkeypatch, tmp_path, capsys):
    # A joblib worker of a batch kernel: no ipykernel. Its bars print nothing (nobody reads a
    # worker's stderr) and report to the runner when there is one, else they are off.
    monkeypatch.delitem(sys.modules, "ipykernel", raising=False)
    monkeypatch.setenv(sessions.BATCH_ENV, "1")
    monkeypatch.setenv(progress.STATUS_ENV, str(tmp_path))
    with progress.bar(total=4, desc="tuning Split1.M1") as trials:
        trials.update(1)  # right after the bar opened: written once the interval is over
        assert [(b["desc"], b["n"]) for b in progress.read_status(tmp_path)] == [("tuning Split1.M1", 0)]
        time.sleep(progress.STATUS_INTERVAL + 0.5)
        assert [(b["desc"], b["n"]) for b in progress.read_status(tmp_path)] == [("tuning Split1.M1", 1)]
    monkeypatch.delenv(progress.STATUS_ENV)
    assert progress.bar(total=4, desc="off").disable
    assert capsys.readouterr().err == ""


def test_a_bar_closed_by_the_garbage_collector_during_a_status_write_does_not_deadlock(
        kernel, monkeypatch, tmp_path):
    # What a worker of notebook 03 met: a write (its temporary file's random name) set off the
    # garbage collector, which closed a forgotten bar of the same process, whose close wrote too.
    import threading

    from ltrlib import atomic

    monkeypatch.setenv(progress.STATUS_ENV, str(tmp_path))
    forgotten = progress.bar(total=2, desc="forgotten")
    kept = progress.bar(total=3, desc="kept")
    real = atomic.atomic_write_text
    closed = []

    def write_then_collect(path, text):
        if not closed:
            closed.append(True)
            forgotten.close()  # as tqdm's __del__ does, on this thread, mid-write
        return real(path, text)

    monkeypatch.setattr(progress, "atomic_write_text", write_then_collect)
    done = threading.Event()
    threading.Thread(target=lambda: (kept.update(3), kept.close(), done.set()), daemon=True).start()
    assert done.wait(10), "the status write deadlocked"
    assert progress.read_status(tmp_path) == []  # both closed, and the file says so


def test_a_running_trial_shows_its_step_count_beside_its_studys_bar(kernel, monkeypatch, tmp_path):
    # The study's count moves only when a trial ends; the trial's own steps come from the
    # monitor the study hands its objective, and reach the runner's line as the bar's detail.
    from ltrlib.train import TuningSettings
    from ltrlib.train.tuning import run_study

    monkeypatch.setenv(progress.STATUS_ENV, str(tmp_path))
    monkeypatch.setattr(progress, "STATUS_INTERVAL", 0.0)
    seen = []

    def objective(trial, monitor):
        for tree in (1, 2):
            monitor(tree, 0.5)  # the first call shows at once; the next within a second waits
            seen.append([(b["desc"], b["n"], b.get("detail")) for b in progress.read_status(tmp_path)])
        return 0.5

    run_study(objective, TuningSettings(n_trials=2, prune=False, progress=True), study_name="full.M_full", seed=0,
              setup={}, searched=())
    assert seen[0] == [("tuning full.M_full", 0, "trial 0: 1 trees")] == seen[1]
    assert seen[2] == [("tuning full.M_full", 1, "trial 1: 1 trees")]
    line = progress._shown({"desc": "tuning full.M_full", "n": 1, "total": 2, "detail": "trial 1: 340 trees"})
    assert line == "tuning full.M_full 1/2 (trial 1: 340 trees)"
    # Without a bar there is nothing to show, and the objective gets no monitor.
    got = []
    run_study(lambda trial, monitor: got.append(monitor) or 0.5, TuningSettings(n_trials=1, prune=False, progress=False),
              study_name="quiet", seed=0, setup={}, searched=())
    assert got == [None]
