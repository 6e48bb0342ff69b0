"""ltrlib.cli: what a command says when it ends (`make lab`'s Ctrl-C: tests/test_lab.py)."""

from ltrlib import cli, config, runner


def test_a_batch_ends_by_naming_its_report_page(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(runner, "run_all", lambda **kw: tmp_path / "reports" / "synthetic-tiny-seed0")
    assert cli.main(["run", "--scale", "tiny", "--no-progress"]) == 0
    out, err = capsys.readouterr()
    assert out == f"{tmp_path / 'reports' / 'synthetic-tiny-seed0'}\n"  # the run folder alone, for scripts
    assert err == "ltrlib run: open reports/synthetic-tiny-seed0/index.html\n"
    # A run folder outside the working directory is named in full.
    monkeypatch.setattr(runner, "run_all", lambda **kw: config.PROJ_ROOT / "reports" / "x")
    assert cli.main(["run", "--scale", "tiny", "--no-progress"]) == 0
    assert capsys.readouterr().err == f"ltrlib run: open {config.PROJ_ROOT / 'reports' / 'x' / 'index.html'}\n"
