"""ltrlib.progress: a widget bar interactively, sparse text lines on stderr in batch runs."""

import tqdm.std

from ltrlib import config, progress


def test_batch_runs_get_a_sparse_text_bar(monkeypatch, capsys):
    monkeypatch.setenv(config.BATCH_ENV, "1")
    with progress.bar(total=3, desc="tuning full.M_full") as b:
        assert type(b) is tqdm.std.tqdm and b.mininterval == progress.BATCH_INTERVAL
        b.update(3)
    err = capsys.readouterr().err
    assert "tuning full.M_full" in err and "3/3" in err


def test_interactive_sessions_get_tqdm_auto_and_disabled_bars_print_nothing(monkeypatch, capsys):
    from tqdm.auto import tqdm as auto

    monkeypatch.delenv(config.BATCH_ENV, raising=False)
    assert isinstance(progress.bar(total=1, enabled=False), auto)
    assert list(progress.bar(range(3), desc="folds", enabled=False)) == [0, 1, 2]
    assert capsys.readouterr().err == ""
