"""``ltrlib study bilambdamart`` at the tiny profile: two seeds of notebook 06, an
interruption after the first, and a resume that runs only the second."""

import json
import os
import re
import shutil
import signal
import time
from pathlib import Path

import pandas as pd
import pytest

from ltrlib import cli, config, studies as study
from ltrlib.foltr import RUNS_FOLDER
from ltrlib.studies import cluster as study_cluster

pytestmark = pytest.mark.slow


def test_study_runs_records_resumes_and_summarises(tmp_path, monkeypatch, capsys, one_core_parameters):
    from ltrlib import runner

    monkeypatch.setenv("LTRLIB_CACHE_DIR", str(tmp_path / "cache"))
    unpatched, calls = runner.run_all, []

    def real_run_all(**kwargs):  # one model at a time on an xdist worker (tests/conftest.py)
        return unpatched(**{**kwargs, "parameters": {**kwargs["parameters"], **one_core_parameters}})

    def interrupted_at_seed_1(**kwargs):
        calls.append(kwargs["seed"])
        if kwargs["seed"] == 1:
            raise RuntimeError("interrupted")
        return real_run_all(**kwargs)

    # One Dask worker, a thread of this process (the 2-core default): the patch reaches it,
    # in place of the seed's batch process (`_batch`, tested by the interruption tests).
    monkeypatch.setattr(study_cluster, "_batch", lambda stop, **kw: interrupted_at_seed_1(**kw))
    with pytest.raises(RuntimeError, match=r"seeds \[1\] failed"):
        study.run_bilambdamart_study("tiny", study="s", reports_dir=tmp_path, progress=False, workers=1)
    study_dir = tmp_path / "s"
    assert calls == [0, 1]
    assert sorted(p.name for p in (study_dir / "seeds").iterdir()) == ["seed0"]  # no half-written seed1
    assert "Interim, not the verdict: 1 of 2 seeds" in (study_dir / "study.md").read_text()
    seed0 = json.loads((study_dir / "seeds" / "seed0" / "seed.json").read_text())
    assert seed0["run"] == "s-seed0" and seed0["wall_seconds"] > 0
    per_query = pd.read_parquet(study_dir / "seeds" / "seed0" / "per_query_test.parquet")
    assert set(per_query.variant) == {"main", "control"}
    assert {"Bi-GBT_Softmax", "GBT_Softmax"} <= set(per_query[per_query.variant == "control"].model)

    # Resume through the command line: seed 0 is read back, only seed 1 runs.
    monkeypatch.setattr(study_cluster, "_batch", lambda stop, **kw: (calls.append(kw["seed"]), real_run_all(**kw))[1])
    from ltrlib import config

    monkeypatch.setattr(config, "REPORTS_DIR", tmp_path)
    assert cli.main(["study", "bilambdamart", "--profile", "tiny", "--study", "s", "--no-progress", "--workers",
                     "1"]) == 0
    out = capsys.readouterr().out
    assert calls == [0, 1, 1] and "seed 0: recorded, not rerun" in out
    text = (study_dir / "study.md").read_text()
    # Two tiny seeds of one trial each decide nothing, but the rule is applied and stated.
    assert "Interim" not in text and "**Verdict (" in text
    table = pd.read_csv(study_dir / "study.csv")
    assert set(table[table.table == "per_seed"].seed) == {0, 1}
    # Both registered studies' seeds draw their folds as registered, not as the batch now does.
    ran = json.loads((tmp_path / "s-seed1" / "run.json").read_text())["notebooks"]["06_bilambdamart"]
    assert ran["parameters"]["fold_streams"] == "seed + part"
    assert {"bi_lambdamart/main", "bi_lambdamart/did", "bi_softmax/control"} <= set(table.endpoint.dropna())

    # Another design under the same study id is refused, naming what differs.
    with pytest.raises(ValueError, match=r"another design \(differs in \['seeds'\]"):
        study.run_bilambdamart_study("tiny", study="s", seeds=(0, 1, 2), reports_dir=tmp_path)

    # The networks at seed 0, paired with the trees the study recorded, at their trial count.
    assert cli.main(["study", "neural", "--from", "s", "--profile", "tiny", "--seeds", "0", "--no-progress",
                     "--workers", "1"]) == 0
    neural = tmp_path / "s-neural"
    design = json.loads((neural / "design.json").read_text())
    assert design["source"] == "s" and design["parameters"]["neural_trials"] == 1 and design["seeds"] == [0]
    assert design["parameters"]["fold_streams"] == "seed + part"  # the very lists the trees re-ranked
    record = neural / "seeds" / "seed0" / "tables"
    assert (record / "06_bilambdamart" / "tuning_summary.csv").exists()
    spent = pd.read_csv(record / "06_neural_competitors" / "neural_tuning_summary.csv")
    assert len(spent) == 11 and set(spent.stop_reason) <= {"patience", "step cap", "diverged"}
    assert json.loads((neural / "seeds" / "seed0" / "seed.json").read_text())["metrics"]["device"] == "cpu"
    across = pd.read_csv(neural / "study.csv")
    assert set(across[across.table == "across_seeds"].verdict) == {"not decided: 1 seeds, fewer than 5"}
    # The seed's training time is its trials' own, summed: the wall counts only a resume's part.
    trials = pd.read_csv(record / "06_neural_competitors" / "neural_tuning_trials.csv")
    text = (neural / "study.md").read_text()
    assert re.search(r"notebook_minutes \|\s+trial_minutes \| device", text)
    assert "`wall_minutes` counts a resumed seed's last session only" in text
    kept = re.search(r"## Kept fits across seeds\n\n(.*?)\n\n", text, re.S).group(1).splitlines()[2:]
    assert len(kept) == 11  # a row a network, its one seed's kept fit counted once by how it stopped
    for row, (_, fit) in zip(kept, spent.iterrows()):
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[0] == fit.model and cells[1] == "1"
        assert [int(c) for c in cells[2:5]] == [int(fit.stop_reason == r) for r in ("patience", "step cap", "diverged")]
    # The picture of the models across seeds: a network hollow where its kept fit did not converge.
    from ltrlib.studies.neural import networks_across_seeds

    models = networks_across_seeds({0: neural / "seeds" / "seed0"})
    nets = models[models.kind == "network"].set_index("model")
    assert dict(nets.converged) == dict(zip(spent.model, spent.converged.astype(bool)))
    assert models[models.kind == "tree"].converged.isna().all() and len(models[models.kind == "tree"])
    assert (models.groupby("loss").apply(lambda g: g[g.kind == "network"].gap.max(), include_groups=False) == 0).all()
    assert (neural / "figures" / "networks.png").exists() and "](figures/networks.png)" in text
    # Read as a number: the Markdown table writes 1.0 as "1".
    shown = re.search(r"\|\s+0 \|[^\n]*\|\s+([\d.]+) \| cpu", text)
    assert shown and float(shown.group(1)) == pytest.approx(trials.seconds.sum() / 60, abs=0.05)
    with pytest.raises(ValueError, match=r"not seeds of 's'"):
        study.neural_design("tiny", "s", "x", seeds=(7,), reports_dir=tmp_path)


def test_seed_lists_parse_or_are_refused_by_token():
    assert study.parse_seeds("0-3,7") == (0, 1, 2, 3, 7)
    with pytest.raises(ValueError, match="'x' is neither a seed"):
        study.parse_seeds("0,x")
    with pytest.raises(ValueError, match="distinct"):
        study.parse_seeds("0-2,1")


def test_checkpoint_keeps_the_finished_trials_of_a_seed_in_progress(tmp_path):
    """--checkpoint copies a running seed's journal up to its last complete record; a
    checkout without the run folder gets it back before the seed runs again."""
    design = study.study_design("tiny", "s")
    study._check_design(tmp_path / "s", design)
    run = tmp_path / "s-seed1"
    run.mkdir()
    (run / study.JOURNAL).write_bytes(b'{"op": 1}\n{"op": 2}\n{"op": 3, "half')  # a writer mid-record
    assert study.checkpoint(tmp_path / "s", tmp_path) == [1]
    kept = tmp_path / "s" / "progress" / "seed1.journal"
    assert kept.read_bytes() == b'{"op": 1}\n{"op": 2}\n'
    fresh = tmp_path / "elsewhere" / "s-seed1"
    assert study._restore(tmp_path / "s", fresh, 1) and (fresh / study.JOURNAL).read_bytes() == kept.read_bytes()
    assert not study._restore(tmp_path / "s", fresh, 1)  # a run folder's own journal is never replaced
    (tmp_path / "s" / "seeds" / "seed1").mkdir(parents=True)
    (tmp_path / "s" / "seeds" / "seed1" / "seed.json").write_text("{}")
    assert study.checkpoint(tmp_path / "s", tmp_path) == [] and not kept.exists()  # recorded: dropped


def test_checkpoint_mirrors_a_ledger_seeds_run_folder_and_a_fresh_checkout_carries_on_from_it(tmp_path, capsys,
                                                                                             monkeypatch):
    """A ledger seed in progress is checkpointed as its run folder: the manifest as it was
    read first, finished notebooks' files, the running notebook's journal up to its last
    complete record, notebook 07's finished FOLTR runs, no locks, kernel logs, progress bars
    or run files. A checkout without the run folder gets it back whole before the seed runs;
    one with it keeps its own."""
    import shutil

    from ltrlib import cli

    monkeypatch.setattr(config, "REPORTS_DIR", tmp_path)
    study_dir = tmp_path / "L"
    study._check_design(study_dir, study.ledger_design("L", "tiny", seeds=(3, 4)))
    run = tmp_path / "L-seed3"
    (run / "tables" / "02_split_stats").mkdir(parents=True)
    (run / "run.json").write_text('{"notebooks": {"02_split_stats": {"status": "completed"}}}')
    (run / "tables" / "02_split_stats" / "merge_summary.csv").write_text("a,b\n1,2\n")
    (run / "optuna.journal").write_bytes(b'{"op": 1}\n{"op": 2, "half')
    (run / RUNS_FOLDER).mkdir()
    (run / RUNS_FOLDER / "ab12.pickle").write_bytes(b"a finished FOLTR run")
    (run / "runs" / "02_split_stats").mkdir(parents=True)
    (run / "notebooks" / ".03_client_models.progress").mkdir(parents=True)
    for left_out in (".run.lock", ".03_client_models.kernel.log", "metrics.json.lock", "runs/02_split_stats/m.run.gz",
                     "notebooks/.03_client_models.progress/123.json"):
        (run / left_out).write_text("x")
    assert cli.main(["study", "ledger", "--study", "L", "--scale", "tiny", "--seeds", "3,4", "--checkpoint",
                     "--no-progress"]) == 0
    assert "checkpointed the run folders of seeds [3] in progress" in capsys.readouterr().out
    kept = study_dir / "progress" / "seed3"
    expected = [f"{RUNS_FOLDER}/ab12.pickle", "optuna.journal", "run.json", "tables/02_split_stats/merge_summary.csv"]
    assert sorted(p.relative_to(kept).as_posix() for p in kept.rglob("*") if p.is_file()) == expected
    fresh = tmp_path / "elsewhere" / "L-seed3"
    fresh.parent.mkdir()
    assert study._restore(study_dir, fresh, 3)
    assert sorted(p.relative_to(fresh).as_posix() for p in fresh.rglob("*") if p.is_file()) == expected
    assert (fresh / "optuna.journal").read_bytes() == b'{"op": 1}\n'
    assert (fresh / "run.json").read_bytes() == (run / "run.json").read_bytes()
    assert [p.name for p in fresh.parent.iterdir()] == ["L-seed3"]  # copied beside it, renamed into place
    (fresh / "run.json").write_text("{}")
    assert not study._restore(study_dir, fresh, 3) and (fresh / "run.json").read_text() == "{}"
    shutil.rmtree(fresh)
    (kept / "run.json").unlink()  # not what --checkpoint writes: refused, nothing left behind
    with pytest.raises(ValueError, match=r"seed3: not a checkpoint of a run folder \(no run.json\)"):
        study._restore(study_dir, fresh, 3)
    assert list(fresh.parent.iterdir()) == []
    (study_dir / "seeds" / "seed3").mkdir(parents=True)
    (study_dir / "seeds" / "seed3" / "seed.json").write_text("{}")
    assert study.checkpoint(study_dir, tmp_path) == [] and not kept.exists()  # recorded: dropped


def test_a_later_checkpoint_rewrites_only_what_changed_and_drops_what_went(tmp_path):
    """The mirror of a run folder is updated in place: a file unchanged is not written again
    (the same git object when committed), a grown one is, a file gone from the run folder
    (a finished fit's checkpoint) goes, with its emptied folder; the run.json is the one read
    first. A checkpoint kept as a tarball by earlier versions is put back, and replaced by
    the mirror at the next checkpoint."""
    import os
    import tarfile

    study_dir = tmp_path / "L"
    study._check_design(study_dir, study.ledger_design("L", "tiny", seeds=(3,)))
    run = tmp_path / "L-seed3"
    (run / "tables").mkdir(parents=True)
    (run / "optuna.journal.fits").mkdir()
    (run / "run.json").write_text('{"notebooks": {}}')
    (run / "tables" / "t.csv").write_text("a\n1\n")
    (run / "optuna.journal.fits" / "full.M_full-ab.json").write_text('{"trees": 10}')
    packed = study_dir / "progress" / "seed3.tar.gz"
    packed.parent.mkdir(parents=True)
    with tarfile.open(packed, "w:gz") as tar:
        tar.add(run / "run.json", arcname="run.json")
        tar.add(run / "tables" / "t.csv", arcname="tables/t.csv")
    fresh = tmp_path / "elsewhere" / "L-seed3"
    fresh.parent.mkdir()
    assert study._restore(study_dir, fresh, 3)  # an earlier version's tarball
    assert sorted(p.relative_to(fresh).as_posix() for p in fresh.rglob("*") if p.is_file()) == ["run.json", "tables/t.csv"]

    assert study.checkpoint(study_dir, tmp_path) == [3] and not packed.exists()
    kept = study_dir / "progress" / "seed3"
    table = kept / "tables" / "t.csv"
    os.utime(table, (0, 0))  # a rewrite would set the time anew
    (run / "optuna.journal.fits" / "full.M_full-ab.json").write_text('{"trees": 20}')
    (run / "optuna.journal.fits" / "initial-c11.M2-cd.json").write_text('{"trees": 5}')
    study.checkpoint(study_dir, tmp_path)
    assert table.stat().st_mtime == 0
    assert (kept / "optuna.journal.fits" / "full.M_full-ab.json").read_text() == '{"trees": 20}'
    for fit in (run / "optuna.journal.fits").iterdir():
        fit.unlink()  # both fits ended
    (run / "run.json").write_text('{"notebooks": {"03_client_models": {"status": "completed"}}}')
    study.checkpoint(study_dir, tmp_path)
    assert sorted(p.relative_to(kept).as_posix() for p in kept.rglob("*")) == ["run.json", "tables", "tables/t.csv"]
    assert (kept / "run.json").read_text() == (run / "run.json").read_text()


def test_checkpoint_keeps_a_neural_seeds_network_trials(tmp_path, capsys, monkeypatch):
    """A neural seed in progress keeps its networks' journal (not notebook 06's, which its
    run folder lacks); a checkout without it gets it back under the neural notebook's name."""
    from ltrlib import cli

    monkeypatch.setattr(config, "REPORTS_DIR", tmp_path)
    study._check_design(tmp_path / "s", study.study_design("tiny", "s"))
    study._check_design(tmp_path / "s-neural", study.neural_design("tiny", "s", "s-neural", reports_dir=tmp_path))
    run = tmp_path / "s-neural-seed1"
    run.mkdir()
    (run / "06_neural_competitors.journal").write_bytes(b'{"op": 1}\n{"op": 2, "half')
    assert cli.main(["study", "neural", "--from", "s", "--profile", "tiny", "--checkpoint", "--no-progress"]) == 0
    assert "checkpointed the journals of seeds [1] in progress" in capsys.readouterr().out
    fresh = tmp_path / "elsewhere" / "s-neural-seed1"
    assert study._restore(tmp_path / "s-neural", fresh, 1)
    assert [p.name for p in fresh.iterdir()] == ["06_neural_competitors.journal"]
    assert (fresh / "06_neural_competitors.journal").read_bytes() == b'{"op": 1}\n'


def test_ledger_seeds_on_two_dask_workers_write_what_a_sequential_run_writes(tmp_path, monkeypatch):
    """Two tiny seeds of the ledger study (notebook 02 only), each a task on a LocalCluster of
    two worker processes, then the same two runs one after the other in this process: the
    tables are byte-identical, and the summary decides nothing on two seeds."""
    from ltrlib import runner

    monkeypatch.setenv("LTRLIB_CACHE_DIR", str(tmp_path / "cache"))
    across = study.run_ledger_study("tiny", study="L", seeds=(0, 1), notebooks="02", reports_dir=tmp_path,
                                    progress=False, workers=2, threads=1, log=lambda _: None)
    records = tmp_path / "L" / "seeds"
    workers = {json.loads((records / f"seed{s}" / "seed.json").read_text())["worker"] for s in (0, 1)}
    assert len(workers) == 2 and "" not in workers  # each seed on its own worker
    for seed in (0, 1):
        sequential = runner.run_all(scale="tiny", seed=seed, run_id=f"seq{seed}", only="02",
                                    reports_dir=tmp_path / "seq", progress=False)
        ours = sorted(p.relative_to(records / f"seed{seed}") for p in (records / f"seed{seed}" / "tables").rglob("*.csv"))
        assert ours and ours == sorted(p.relative_to(sequential) for p in (sequential / "tables").rglob("*.csv"))
        for name in ours:
            assert (records / f"seed{seed}" / name).read_bytes() == (sequential / name).read_bytes(), name
    assert not across.empty and set(across.verdict) <= {"not decided", "not available"}
    text = (tmp_path / "L" / "study.md").read_text()
    assert "Across 2 of 2 seeds" in text and "`effect`: each comparison's per-seed improvement" in text


def test_the_readme_quotes_the_committed_ledger_study_and_the_headline_counts_its_verdicts(tmp_path):
    """The "Across seeds" line of the README and of docs/fidelity.md is `ledger_headline` of
    the committed study, word for word (regenerated after each recorded seed); the headline
    counts each paper's claims, not its notes or the checks beyond the paper, and says
    "interim" until every seed is in."""
    for doc in ("README.md", "docs/fidelity.md"):
        text = " ".join((config.PROJ_ROOT / doc).read_text(encoding="utf-8").split())
        assert study.ledger_headline() in text, f"{doc}'s ledger headline is not the committed study's"
    folder = tmp_path / "L"
    (folder / "seeds" / "seed3").mkdir(parents=True)
    (folder / "seeds" / "seed3" / "seed.json").write_text("{}")
    (folder / "design.json").write_text(json.dumps(study.ledger_design("L", "tiny", seeds=(3, 4))))
    assert "recorded no seed" in study.ledger_headline(folder)
    rows = [("noniid", "claim", False, "holds"), ("noniid", "claim", False, "seed-dependent"),
            ("noniid", "note", False, "holds"), ("noniid", "claim", True, "holds"),
            ("foltr", "claim", False, "does not hold")]
    pd.DataFrame(rows, columns=["source", "kind", "beyond", "verdict"]).to_csv(folder / "study.csv", index=False)
    line = study.ledger_headline(folder)
    assert line.startswith("Interim, not the verdicts: 1 of 2 seeds recorded")
    assert "across 1 of 2 seeds (seed 3)" in line
    assert "non-IID 1 / 0 / 1 / 0 / 0; FOLTR 0 / 1 / 0 / 0 / 0." in line
    # A v2 study's "holds" is a shown effect or a shown equivalence, and says so; v1's did not.
    assert "claims holding (an effect, or an equivalence within the claim's margin, shown across the seeds) / " in line
    assert "not holding / seed-dependent (heterogeneity shown) / not decided" in line
    assert "claims holding / not holding / seed-dependent /" in study.ledger_headline()  # ledger-small, v1
    (folder / "seeds" / "seed4").mkdir()
    (folder / "seeds" / "seed4" / "seed.json").write_text("{}")
    assert study.ledger_headline(folder).startswith("The ledger study at `tiny`, across 2 of 2 seeds (seeds 3, 4)")


def test_a_recorded_study_gets_its_verdict_chart_from_its_study_csv_deciding_nothing(tmp_path):
    """`ltrlib study ledger --figures` draws the chart from the recorded verdicts, leaving the
    record as it is; the README shows the committed study's chart beside its headline."""
    readme = (config.PROJ_ROOT / "README.md").read_text(encoding="utf-8")
    assert "](reports/ledger-small/figures/verdicts.png)" in readme
    assert (config.PROJ_ROOT / "reports" / "ledger-small" / "figures" / "verdicts.png").exists()
    folder = tmp_path / "L"
    (folder / "seeds" / "seed3").mkdir(parents=True)
    (folder / "seeds" / "seed3" / "seed.json").write_text("{}")
    (folder / "design.json").write_text(json.dumps(study.ledger_design("L", "tiny", seeds=(3, 4))))
    with pytest.raises(FileNotFoundError, match="study.csv"):
        study.write_recorded_verdicts(folder)
    rows = [("noniid", "claim", False, "holds"), ("noniid", "claim", False, "does not hold"),
            ("foltr", "note", False, "holds")]
    pd.DataFrame(rows, columns=["source", "kind", "beyond", "verdict"]).to_csv(folder / "study.csv", index=False)
    (folder / "study.md").write_text("# recorded")
    record = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    png = study.write_recorded_verdicts(folder)
    assert png == folder / "figures" / "verdicts.png" and png.with_suffix(".svg").exists()
    assert {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()} == record
    assert study.ledger_verdict_frame(pd.read_csv(folder / "study.csv")).checks.sum() == 3


def test_the_study_cluster_keeps_a_worker_that_went_silent():
    """A seed is one task of up to an hour: a study stopped and continued (or a machine
    suspended) past Dask's worker TTL lost its worker and then waited forever. The study's
    LocalCluster, of one worker thread or of worker processes, never drops one, keeps its
    housekeeping slow, and leaves Dask's configuration as it was."""
    import dask
    import dask.distributed  # noqa: F401 -- registers the "distributed" config; test order must not matter

    from dask.distributed import Client

    before = dask.config.get("distributed.scheduler.worker-ttl"), dask.config.get("distributed.admin.tick.interval")
    for workers in (1, 2):
        cluster = study.local_cluster(workers, 1)
        try:
            assert cluster.scheduler.worker_ttl is None and len(cluster.workers) == workers
            # Its housekeeping is slow (QUIET_DASK), in worker processes too: a seed waits hours.
            with Client(cluster) as client:
                timers = client.run(lambda dask_worker: {k: c.callback_time
                                                          for k, c in dask_worker.periodic_callbacks.items()})
            assert len(timers) == workers and cluster.scheduler.periodic_callbacks["tick"].callback_time == 1000
            for timer in timers.values():
                assert timer["tick"] == 1000 and timer["memory_monitor"] == 1000 and timer["monitor"] == 5000
                assert "profile" not in timer
        finally:
            cluster.close()
    assert (dask.config.get("distributed.scheduler.worker-ttl"), dask.config.get("distributed.admin.tick.interval")) \
        == before


# --------------------------------------------------------------------------- interruptions


#: A study started as from a terminal: SIGINT unblocked and at Python's default, whatever
#: the test process's own state, which it inherits otherwise. Twice in a full suite (never
#: alone) the study under test ran its seed to the end through the group's SIGINT and exited
#: 0 with nothing on stderr, as a study that inherited SIGINT blocked or ignored does (a
#: study started in the background by a script ignores it by design, docs/studies.md). The
#: cause was how those suites were started: a non-interactive shell's ``cmd &`` gives the
#: command SIGINT and SIGQUIT ignored (POSIX, "Signals and Error Handling"), inherited down
#: to pytest's workers (``bash -c 'sleep 9 & grep SigIgn /proc/$!/status'`` shows 0x6). It
#: says on stderr what it inherited, so that a failure shows it.
AS_FROM_A_TERMINAL = (
    "import runpy, signal, sys\n"
    "blocked = signal.SIGINT in signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})\n"
    "ignored = signal.getsignal(signal.SIGINT) is signal.SIG_IGN\n"
    "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
    "print(f'inherited SIGINT: blocked {blocked}, ignored {ignored}', file=sys.stderr)\n"
    "sys.argv = ['ltrlib', *sys.argv[1:]]\n"
    "runpy.run_module('ltrlib', run_name='__main__', alter_sys=True)\n")


def _study_process(tmp_path, name: str):
    """``ltrlib study ledger`` at tiny, notebook 00 only, one seed, in a session of its own
    (so that a test can signal its process group as a terminal's Ctrl-C does), started as
    from a terminal (`AS_FROM_A_TERMINAL`)."""
    import subprocess
    import sys

    env = {**os.environ, "LTRLIB_REPORTS_DIR": str(tmp_path), "LTRLIB_CACHE_DIR": str(tmp_path / "cache")}
    command = [sys.executable, "-c", AS_FROM_A_TERMINAL, "study", "ledger", "--scale", "tiny", "--seeds", "0",
               "--notebooks", "00", "--study", name, "--no-progress", "--workers", "1"]
    return subprocess.Popen(command, env=env, start_new_session=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _running(path, process, timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.2)


def _descendants(psutil, pid: int) -> dict:
    """The processes under ``pid`` by their command line (one gone since the listing is left out)."""
    out = {}
    for child in psutil.Process(pid).children(recursive=True):
        try:
            out[child] = " ".join(child.cmdline())
        except psutil.Error:
            continue
    return out


@pytest.mark.parametrize("signum, to_group", [(signal.SIGINT, True), (signal.SIGTERM, False)],
                         ids=["ctrl-c to the group", "sigterm to the study"])
def test_a_signal_stops_a_study_within_seconds_keeping_its_seed_resumable(tmp_path, signum, to_group):
    psutil = pytest.importorskip("psutil")
    process = _study_process(tmp_path, "s")
    run = tmp_path / "s-seed0"
    _running(run / "notebooks" / ".00_dataset_overview.running.ipynb", process)
    # papermill writes the notebook before its kernel starts: wait for the kernel (a loaded
    # machine takes seconds), so that the tree holds the batch and its kernel.
    deadline = time.monotonic() + 60
    while not any("ipykernel" in command for command in _descendants(psutil, process.pid).values()):
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()
        time.sleep(0.2)
    tree = list(_descendants(psutil, process.pid))
    # The study's own signal state as the kernel sees it, for a failure's message.
    status = Path(f"/proc/{process.pid}/status")
    masks = [line for line in (status.read_text().splitlines() if status.exists() else [])
             if line.startswith(("SigBlk", "SigIgn", "SigCgt"))]
    start = time.monotonic()
    os.killpg(process.pid, signum) if to_group else process.send_signal(signum)
    out, err = process.communicate(timeout=60)
    said = f"{err}\n(the study's signal masks before the signal: {masks}; its stdout: {out})"
    # Seconds, not the notebook's end: a quiet machine stops in 3.4-4.0 s (2026-11-29), and a
    # full suite's loaded sibling worker once made it 20 s. That the study stopped rather than
    # finished is what the exit code and messages below show; the bound only rules out a hang.
    assert time.monotonic() - start < 45, said
    assert process.returncode == 130, said
    assert "seed 0: interrupted during 00_dataset_overview; nothing finished" in err
    assert "ltrlib study ledger --scale tiny --study s --seeds 0 --notebooks 00` resumes the study" in err
    assert "Traceback" not in err
    # Nothing recorded half; the run says what became of its notebook, and nothing outlives it.
    seeds = tmp_path / "s" / "seeds"
    assert not seeds.exists() or not any(seeds.iterdir())
    manifest = json.loads((run / "run.json").read_text())
    assert manifest["notebooks"]["00_dataset_overview"]["status"] == "interrupted"
    _, alive = psutil.wait_procs(tree, timeout=10)
    assert not alive, [p.cmdline() for p in alive]
    if signum == signal.SIGINT:  # the command it names resumes it (the other case stops as this one)
        again = _study_process(tmp_path, "s")
        out, err = again.communicate(timeout=300)
        assert again.returncode == 0, err
        assert "seed 0: recorded" in out and (tmp_path / "s" / "seeds" / "seed0" / "seed.json").exists()


def test_a_reading_by_the_registered_rule_is_refused_and_writes_nothing(tmp_path):
    study_dir = tmp_path / "ledger-small"
    study_dir.mkdir()
    (study_dir / "design.json").write_bytes((config.PROJ_ROOT / "reports" / "ledger-small" / "design.json").read_bytes())
    with pytest.raises(ValueError, match="ledger-small is registered with v1; its study.md is that reading"):
        study.write_ledger_reading(study_dir, "v1")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ledger-small"]


def test_a_ledger_studys_summary_draws_its_pictures_from_its_frames_and_links_them(tmp_path, monkeypatch):
    """Two committed seeds of ledger-small as a study of their own: the summary writes the
    verdict chart and each paper's Effect Ratio forest as PNG and SVG, study.md embeds them
    (the chart above the head table) and every link is a file; the chart's bars are the
    across-seed table's verdict counts, each forest's rows its comparisons with a ratio, and
    the same frames draw the same bytes (a regenerated study changes no picture)."""
    from ltrlib import plots
    from ltrlib.fidelity.across import effect_ratio_intervals
    from ltrlib.fidelity.ledger import PAPERS

    committed, folder = config.PROJ_ROOT / "reports" / "ledger-small", tmp_path / "L"
    for seed in (0, 1):
        shutil.copytree(committed / "seeds" / f"seed{seed}", folder / "seeds" / f"seed{seed}")
    (folder / "design.json").write_text(json.dumps(study.ledger_design("L", "small", seeds=(0, 1), rule="v1")))
    (folder / "figures").mkdir()
    (folder / "figures" / "effect_ratios_gone.png").write_bytes(b"")  # a paper no longer in the study
    drawn = {}

    def spy(name):
        original = getattr(plots, name)
        monkeypatch.setattr(plots, name, lambda df, *a: drawn.setdefault(name, []).append(df) or original(df, *a))

    spy("verdict_counts")
    spy("effect_ratios")
    across = study.write_ledger_summary(folder, "ltrlib study ledger --study L --summarise-only")
    text = (folder / "study.md").read_text()
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)|\[SVG\]\(([^)]+)\)", text)
    assert links and all((folder / (png or svg)).is_file() for png, svg in links)
    assert text.index("](figures/verdicts.png)") < text.index("| paper ")  # near the top, above the head table
    assert not (folder / "figures" / "effect_ratios_gone.png").exists()
    # The chart counts the across-seed table's verdicts: per paper its counted checks, then the rest.
    (verdicts,) = drawn["verdict_counts"]
    counted = (across.kind == "claim") & ~across.beyond.astype(bool)
    for source, g in across.groupby("source"):
        mine = verdicts[verdicts.paper == PAPERS[source].title].set_index("verdict").checks
        assert mine.drop("outside the tally").to_dict() == {v: int((g.verdict[counted] == v).sum())
                                                            for v in study.LEDGER_VERDICTS}
        assert mine["outside the tally"] == int((~counted[g.index]).sum())
    assert verdicts.checks.sum() == len(across)
    # Each forest draws its paper's comparisons across the seeds, one row per stable ratio.
    _, _, effects, _ = study._ledger_frames(folder, json.loads((folder / "design.json").read_text()))
    intervals = effect_ratio_intervals(effects)
    forests = {f.source.iloc[0]: f for f in drawn["effect_ratios"]}
    assert forests and set(forests) == {s for s, g in intervals.groupby("source") if g.effect_ratio_mean.notna().any()}
    for source, f in forests.items():
        assert f"](figures/effect_ratios_{source}.png)" in text
        pd.testing.assert_frame_equal(f, intervals[intervals.source == source].reset_index(drop=True))
    title = "L: checks by verdict across 2 of 2 seeds (rule v1)"  # the summary's, for a finished v1 study
    again = study.write_ledger_figures(tmp_path / "again", across, effects, title)
    for path in again.values():
        for suffix in (".png", ".svg"):
            name = path[:-4] + suffix
            assert (tmp_path / "again" / name).read_bytes() == (folder / name).read_bytes(), name


def test_a_ledger_designs_notebook_parameters_reach_every_seeds_batch(tmp_path, monkeypatch, capsys):
    """`-p profile paper` is part of a ledger study's design (a design without parameters has
    no such key, as ledger-small's), goes to each seed's batch, and a rerun without it is
    refused, naming the difference."""
    from ltrlib import cli

    assert "parameters" not in study.ledger_design("L", "tiny")
    assert study.ledger_design("L", "tiny", parameters={"profile": "paper"})["parameters"] == {"profile": "paper"}
    batches = []
    monkeypatch.setattr(config, "REPORTS_DIR", tmp_path)
    monkeypatch.setattr(study_cluster, "_batch", lambda stop, **kw: batches.append(kw) or (_ for _ in ()).throw(
        RuntimeError("stopped here")))
    with pytest.raises(RuntimeError, match=r"seeds \[7\] failed"):
        cli.main(["study", "ledger", "--study", "P", "--scale", "tiny", "--seeds", "7", "-p", "profile", "paper",
                  "--workers", "1", "--threads", "1", "--no-progress"])
    assert batches[0]["parameters"] == {"profile": "paper"} and batches[0]["seed"] == 7
    assert json.loads((tmp_path / "P" / "design.json").read_text())["parameters"] == {"profile": "paper"}
    with pytest.raises(ValueError, match=r"differs in \['parameters'\]"):
        study.run_ledger_study("tiny", study="P", seeds=(7,), reports_dir=tmp_path, summarise_only=True,
                               progress=False, log=lambda _: None)


def test_the_power_report_sizes_a_new_study_from_recorded_seeds_and_each_summary_names_its_seeds_code(
        tmp_path, monkeypatch):
    """`--power N` reads a recorded study's seeds (two committed ledger-small seeds here) and
    writes the seeds needed beside it, never into it; the study's summary gives each seed's
    code commit from its run.json."""
    from ltrlib import cli

    committed, folder = config.PROJ_ROOT / "reports" / "ledger-small", tmp_path / "L"
    for seed in (0, 1):
        shutil.copytree(committed / "seeds" / f"seed{seed}", folder / "seeds" / f"seed{seed}")
    manifest = folder / "seeds" / "seed1" / "run.json"
    run = json.loads(manifest.read_text())
    for entry in run["notebooks"].values():
        entry["code"] = "0123456789abcdef0123456789abcdef01234567 + local changes"
    manifest.write_text(json.dumps(run))
    (folder / "design.json").write_text(json.dumps(study.ledger_design("L", "small", seeds=(0, 1), rule="v1")))
    before = sorted(p.relative_to(folder) for p in folder.rglob("*"))
    monkeypatch.setattr(config, "REPORTS_DIR", tmp_path)
    assert cli.main(["study", "ledger", "--study", "L", "--power", "10"]) == 0
    assert sorted(p.relative_to(folder) for p in folder.rglob("*")) == before
    text = (tmp_path / "L-power" / "power.md").read_text()
    assert "power from `L`'s spreads" in text and "--study L --power 10" in text
    checks = pd.read_csv(tmp_path / "L-power" / "checks.csv")
    assert {"seeds_at_alpha", "power_at_alpha"} <= set(checks.columns) and checks.in_tally.any()
    study.write_ledger_summary(folder, "ltrlib study ledger --study L --summarise-only")
    times = (folder / "study.md").read_text().split("## Wall time per seed")[1]
    assert "0123456789 + local changes" in times and "not recorded" in times  # seed 0 ran before codes were kept
