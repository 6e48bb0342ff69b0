"""Finished FOLTR runs kept on disk (`ltrlib.foltr.store`): a grid interrupted or run again
resumes with the runs it has, and gets the numbers it would have computed."""

import os

import numpy as np
import pandas as pd
import pytest

from ltrlib.foltr import partition as P
from ltrlib.foltr import simulate as S
from ltrlib.foltr import store as store_module
from tests.foltr.test_run_files import _toy


@pytest.fixture(scope="module")
def toy():
    return P.prepare_data(_toy(30, 0, "toy"), _toy(15, 1, "toy_test"))


def _jobs():
    return S.grid(["type1", "type2_R1"], [0, 1], rankers=("linear",), n_rounds=4, eval_every=2)


def _counting(monkeypatch, fail_at=None):
    """Count the runs computed; raise KeyboardInterrupt at the ``fail_at``-th (from 1)."""
    calls = []
    run_job = S.run_job

    def counted(data, job, keep_ranker=False):
        calls.append(job)
        if fail_at is not None and len(calls) == fail_at:
            raise KeyboardInterrupt
        return run_job(data, job, keep_ranker)

    monkeypatch.setattr(S, "run_job", counted)
    return calls


def _same(a, b):
    pd.testing.assert_frame_equal(a[0], b[0])
    pd.testing.assert_frame_equal(a[1].drop(columns="seconds"), b[1].drop(columns="seconds"))


def test_a_grid_run_again_reads_its_runs_back_with_the_same_numbers(toy, tmp_path, monkeypatch):
    jobs = _jobs()
    keep = S.table2_jobs(jobs, 0)
    plain = S.run_jobs(toy, jobs, progress=False, keep_rankers=keep)
    first = S.run_jobs(toy, jobs, progress=False, keep_rankers=keep, store=tmp_path / "runs")
    _same(plain, first)
    assert len(list((tmp_path / "runs").glob("*.pickle"))) == len(jobs)
    calls = _counting(monkeypatch)
    again = S.run_jobs(toy, jobs, progress=False, keep_rankers=keep, store=tmp_path / "runs")
    assert calls == []
    _same(first, again)
    pd.testing.assert_frame_equal(first[1], again[1])  # the seconds too: the stored runs' own
    for job in keep:
        assert np.array_equal(again[2][job].weights, plain[2][job].weights)


def test_an_interrupted_grid_keeps_its_finished_runs_and_resumes_with_the_rest(toy, tmp_path, monkeypatch):
    jobs = _jobs()
    calls = _counting(monkeypatch, fail_at=3)
    with pytest.raises(KeyboardInterrupt):
        S.run_jobs(toy, jobs, progress=False, store=tmp_path / "runs")
    files = sorted((tmp_path / "runs").iterdir())
    assert len(files) == 2 and all(f.suffix == ".pickle" for f in files)  # no half-written file
    assert len(store_module.RunStore(tmp_path / "runs")) == 2 and len(store_module.RunStore(tmp_path / "none yet")) == 0
    monkeypatch.undo()
    calls = _counting(monkeypatch)
    resumed = S.run_jobs(toy, jobs, progress=False, store=tmp_path / "runs")
    assert calls == jobs[2:]
    monkeypatch.undo()
    _same(S.run_jobs(toy, jobs, progress=False), resumed)


def test_the_kept_runs_read_back_as_rows_dated_by_their_files_without_a_save_in_progress(toy, tmp_path):
    jobs = _jobs()[:2]
    S.run_jobs(toy, jobs, progress=False, store=tmp_path / "runs")
    kept = store_module.RunStore(tmp_path / "runs")
    for path, moment in zip(sorted((tmp_path / "runs").iterdir()), (1_000.0, 2_000.0)):
        os.utime(path, (moment, moment))
    (tmp_path / "runs" / ".0123abcd.x1y2.tmp.pickle").write_bytes(b"half")  # atomic_path's, mid-save
    (tmp_path / "runs" / f"{'f' * 32}.pickle").write_bytes(b"not a pickle")  # computed again by load

    rows = list(kept.rows())

    assert len(kept) == 3 and len(rows) == 2  # the unreadable file is counted, not read
    assert sorted(saved for _, saved in rows) == [1_000.0, 2_000.0]
    names = {(r["setting"], r["ranker"], r["seed"]) for r, _ in rows}
    assert names == {(j.setting, j.ranker, j.seed) for j in jobs} and all(r["seconds"] > 0 for r, _ in rows)
    assert list(store_module.RunStore(tmp_path / "none yet").rows()) == []


def test_runs_of_other_settings_data_or_code_are_computed_again(toy, tmp_path, monkeypatch):
    jobs = _jobs()[:2]
    S.run_jobs(toy, jobs, progress=False, store=tmp_path / "runs")
    calls = _counting(monkeypatch)
    S.run_jobs(toy, [j.__class__(**{**j.__dict__, "lr": 0.05}) for j in jobs], progress=False,
               store=tmp_path / "runs")
    assert len(calls) == 2
    other = P.prepare_data(_toy(30, 2, "toy"), _toy(15, 1, "toy_test"))
    S.run_jobs(other, jobs, progress=False, store=tmp_path / "runs")
    assert len(calls) == 4
    monkeypatch.setattr(store_module, "_code_digest", lambda: "other code")
    S.run_jobs(toy, jobs, progress=False, store=tmp_path / "runs")
    assert len(calls) == 6


def test_an_unreadable_run_is_computed_again_and_replaced(toy, tmp_path, monkeypatch):
    jobs = _jobs()[:2]
    before = S.run_jobs(toy, jobs, progress=False, store=tmp_path / "runs")
    for path in (tmp_path / "runs").glob("*.pickle"):
        path.write_bytes(path.read_bytes()[:40])  # cut short, as by a full disk
    calls = _counting(monkeypatch)
    after = S.run_jobs(toy, jobs, progress=False, store=tmp_path / "runs")
    assert len(calls) == 2
    _same(before, after)
    calls.clear()
    S.run_jobs(toy, jobs, progress=False, store=tmp_path / "runs")
    assert calls == []


def test_worker_processes_store_each_run_as_it_finishes(toy, tmp_path):
    jobs = _jobs()
    serial = S.run_jobs(toy, jobs, progress=False)
    parallel = S.run_jobs(toy, jobs, n_jobs=2, progress=False, store=tmp_path / "runs")
    _same(serial, parallel)
    assert len(list((tmp_path / "runs").glob("*.pickle"))) == len(jobs)
