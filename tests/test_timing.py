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
