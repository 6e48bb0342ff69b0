"""ltrlib.timing: the seconds of model fitting, counted once however deeply nested."""

import os
import time

import pytest

from ltrlib import timing


def test_nested_blocks_count_once_and_append_to_the_log(tmp_path, monkeypatch):
    log = tmp_path / "fit.log"
    monkeypatch.setenv(timing.ENV_VAR, str(log))
    before = timing.seconds
    with timing.fitting():
        time.sleep(0.05)
        with timing.fitting():  # e.g. train_ranker inside a tuning objective that is itself timed
            time.sleep(0.05)
    with timing.fitting():
        time.sleep(0.02)
    lines = log.read_text().splitlines()
    assert len(lines) == 2  # one line per outermost block
    assert lines[0].split()[1:] == [str(os.getpid()), str(os.getppid())]
    assert timing.read_log(log) == pytest.approx(timing.seconds - before, abs=1e-5)
    assert 0.12 <= timing.read_log(log) < 1.0


def test_decorated_function_is_timed_even_when_it_raises(tmp_path, monkeypatch):
    log = tmp_path / "fit.log"
    monkeypatch.setenv(timing.ENV_VAR, str(log))

    @timing.fitting()
    def fit():
        time.sleep(0.02)
        raise ValueError("bad parameter")

    with pytest.raises(ValueError, match="bad parameter"):
        fit()
    with pytest.raises(ValueError):
        fit()  # the decorator is reusable, and the depth was reset by the first failure
    assert len(log.read_text().splitlines()) == 2


def test_no_log_file_means_nothing_was_fitted(tmp_path, monkeypatch):
    monkeypatch.delenv(timing.ENV_VAR, raising=False)
    with timing.fitting():
        pass
    assert timing.read_log(tmp_path / "absent.log") is None


def test_only_the_kernels_own_lines_count(tmp_path):
    # Worker processes inherit the log; their lines (another parent) would double-count the
    # wall time the kernel's enclosing block already holds.
    log = tmp_path / "fit.log"
    log.write_text("2.0 100 7\n5.0 200 100\n1.5 101 7\n")
    assert timing.read_log(log) == 8.5
    assert timing.read_log(log, parent=7) == 3.5


class _Clock:
    """A fake `time.monotonic`: ``clock.t += 40`` is forty seconds later."""

    def __init__(self):
        self.t = 1000.0

    def __call__(self):
        return self.t


def test_the_first_estimate_is_the_expectation_with_its_range_whatever_the_probe_said():
    # Issue 64: a loaded machine's probe read 27.6, the notebooks ran 1.2-5 times slower than
    # the table, and an ETA scaled by the probe said 4:13:45 for a run of 28 minutes.
    clock = _Clock()
    assert timing.slow_factor(27.6) == timing.LOADED_PACE == 5.0
    assert timing.slow_factor(1.0) == timing.slow_factor(0.5) == timing.PACE_NOISE
    eta = timing.Estimate({"00": 10, "01": 20, "03": 100, "04": 200}, slow=timing.slow_factor(27.6), clock=clock)
    assert eta.remaining() == 330.0 and eta.pace() is None
    assert eta.bounds() == (round(330 / timing.PACE_NOISE, 1), 1650.0)
    eta.start("00")
    clock.t += 40  # four times slower than expected: the rest of the range is still the expectation's
    assert eta.remaining() == 320.0  # the running notebook counts down to 0 and holds there
    eta.finish("00")
    assert eta.pace() is None  # 10 expected seconds finished: not enough to judge the machine by
    assert eta.remaining() == 320.0 and eta.bounds() == (round(320 / timing.PACE_NOISE, 1), 1600.0)


def test_the_runs_own_pace_counts_once_it_rests_on_enough_finished_work():
    clock = _Clock()
    eta = timing.Estimate({"00": 10, "01": 20, "03": 100, "04": 200}, slow=5.0, clock=clock)
    assert max(timing.ENOUGH_SHARE * 330, timing.ENOUGH_SECONDS) == 66.0
    for name, took in (("00", 40), ("01", 40)):
        eta.start(name)
        clock.t += took
        eta.finish(name)
    assert eta.pace() is None and eta.remaining() == 300.0  # 30 expected seconds of 66 needed
    eta.start("03")
    clock.t += 200
    eta.finish("03")  # 130 expected seconds done, in 280
    assert eta.pace() == pytest.approx(280 / 130)
    assert eta.remaining() == round(200 * 280 / 130, 1) and eta.bounds() is None
    # A notebook never timed here (finished without a start) counts as done, not toward the pace.
    eta.finish("04")
    assert eta.remaining() == 0.0 and eta.pace() == pytest.approx(280 / 130)


def test_the_estimate_never_grows_within_a_notebook_by_more_than_its_elapsed_time():
    # Two notebooks side by side (ltrlib run --jobs 2): 03 finishing late makes the run's pace
    # count, and slow; 04 has been running 150 s, so the ETA may have grown 150 s, no more.
    clock = _Clock()
    eta = timing.Estimate({"00": 10, "01": 20, "03": 100, "04": 200}, clock=clock)
    for name, took in (("00", 300), ("01", 20)):
        eta.start(name)
        clock.t += took
        eta.finish(name)
    eta.start("03")
    eta.start("04")
    at_start = eta.remaining()
    assert at_start == 300.0
    clock.t += 150
    eta.finish("03")
    assert eta.pace() == pytest.approx(470 / 130)  # 200 * 3.6 - 150 = 573 s left by the pace alone
    assert eta.remaining() == at_start + 150
    # Step by step through one notebook on its own, running four times over: never above the
    # estimate at its start plus its elapsed time (here it only falls, then holds).
    eta = timing.Estimate({"a": 100, "b": 100}, slow=5.0, clock=clock)
    eta.start("a")
    start, first = clock.t, eta.remaining()
    seen = []
    for _ in range(40):
        clock.t += 10
        seen.append(eta.remaining())
        assert seen[-1] <= first + (clock.t - start)
    assert seen == sorted(seen, reverse=True) and seen[-1] == 100.0
