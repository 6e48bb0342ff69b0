"""ltrlib.provenance and ltrlib.sessions.session: a run folder holds results of one dataset,
scale and seed; notebooks and model stores refuse other data with the command that fixes it."""

import json

import pytest

from ltrlib import config, provenance, sessions
from ltrlib.data import load_dataset
from ltrlib.report import Reporter
from ltrlib.train import ModelStore, train_ranker


@pytest.fixture(scope="module")
def tiny():
    return load_dataset("synthetic", scale="tiny", seed=0)


@pytest.fixture(scope="module")
def tiny_seed1():
    return load_dataset("synthetic", scale="tiny", seed=1)


@pytest.fixture(scope="module")
def ranker(tiny):
    return train_ranker(tiny.train, tiny.vali, {"learning_rate": 0.2}, max_trees=20,
                        early_stopping=5, num_threads=1)


def test_describe_names_the_data_and_tells_data_apart(tiny, tiny_seed1):
    a = provenance.describe(tiny)
    assert {k: a[k] for k in ("dataset", "scale", "seed")} == {"dataset": "synthetic", "scale": "tiny", "seed": 0}
    assert provenance.matches(a, provenance.describe(load_dataset("synthetic", scale="tiny", seed=0)))
    b = provenance.describe(tiny_seed1)
    assert a["fingerprint"] != b["fingerprint"] and not provenance.matches(a, b)
    # one training query fewer is other data, though dataset, scale and seed are the same
    fewer = tiny._replace(train=tiny.train.take(range(tiny.train.n_queries - 1)))
    assert provenance.describe(fewer)["fingerprint"] != a["fingerprint"]


def test_real_data_records_no_scale():
    shared = config.SHARED_LIGHTGBM_RANK
    if not shared.exists():
        pytest.skip(f"{shared} not found: the shared real dataset sits beside the project")
    prov = provenance.describe(load_dataset("lightgbm-rank", scale="tiny", seed=3))
    assert prov["dataset"] == "lightgbm-rank" and prov["scale"] is None and prov["seed"] == 3


def test_reporter_refuses_a_run_of_other_data_before_writing(tmp_path, tiny, tiny_seed1):
    Reporter("run", "04_linear_merge", root=tmp_path, data=tiny).metrics(x=1)
    held = json.loads((tmp_path / "run" / provenance.FILE).read_text())
    assert provenance.matches(held, provenance.describe(tiny))
    before = (tmp_path / "run" / "metrics.json").read_text()
    with pytest.raises(provenance.ProvenanceError) as err:
        Reporter("run", "04_linear_merge", root=tmp_path, data=tiny_seed1)
    msg = str(err.value)
    assert "scale tiny, seed 0" in msg and "scale tiny, seed 1" in msg
    assert "ltrlib run --dataset synthetic --scale tiny --seed 1 --run-id run --force" in msg
    assert msg.startswith("run 'run' holds results of synthetic, scale tiny, seed 0")
    assert "open its data: make lab SCALE=tiny SEED=0 RUN_ID=run" in msg
    assert (tmp_path / "run" / "metrics.json").read_text() == before
    Reporter("run", "05_stacking", root=tmp_path, data=tiny)  # the same data is welcome


def test_reporter_and_store_bind_one_run_folder_and_a_bad_notebook_name_writes_nothing(tmp_path, tiny):
    with pytest.raises(ValueError, match="invalid notebook name"):
        Reporter("run", "../04", root=tmp_path, data=tiny)
    assert not (tmp_path / "run").exists()
    rep, store = Reporter("run", "04_linear_merge", root=tmp_path, data=tiny), ModelStore("run", root=tmp_path, data=tiny)
    assert rep.run_dir == store.run_dir == tmp_path / "run"
    assert rep.provenance == store.provenance == json.loads((tmp_path / "run" / provenance.FILE).read_text())


def test_store_records_provenance_and_refuses_models_of_other_data(tmp_path, tiny, tiny_seed1, ranker):
    ModelStore("run", root=tmp_path, data=tiny).save(ranker, "Split1", "M1")
    side = json.loads((tmp_path / "run" / "models" / "Split1" / "M1.json").read_text())
    assert provenance.matches(side["info"]["provenance"], provenance.describe(tiny))
    assert ModelStore("run", root=tmp_path, data=tiny).load("Split1", "M1").best_iteration == ranker.best_iteration

    # The same models under a run folder bound to other data (a copied run, say).
    other = tmp_path / "other"
    (other / "models").mkdir(parents=True)
    (tmp_path / "run" / "models" / "Split1").rename(other / "models" / "Split1")
    store = ModelStore("other", root=tmp_path, data=tiny_seed1)
    with pytest.raises(provenance.ProvenanceError) as err:
        store.load("Split1", "M1")
    msg = str(err.value)
    assert "model Split1/M1 of run 'other' was trained on synthetic, scale tiny, seed 0" in msg
    assert "ltrlib run --only 03 --dataset synthetic --scale tiny --seed 1 --run-id other --force" in msg
    # The likely slip first: a session on other data than the models' (make lab without SCALE=).
    assert msg.index("open their data: make lab SCALE=tiny SEED=0 RUN_ID=other") < msg.index("--force")
    assert err.value._render_traceback_() == [f"ProvenanceError: {msg}"]  # in a notebook: the message alone
    with pytest.raises(FileNotFoundError, match="--scale tiny --seed 1 --run-id other"):
        store.load("Split2", "M1")


def test_a_model_without_provenance_is_refused(tmp_path, tiny, ranker):
    ModelStore("old", root=tmp_path).save(ranker, "Split1", "M1")  # as stored before provenance
    with pytest.raises(provenance.ProvenanceError, match="data it did not record"):
        ModelStore("old", root=tmp_path, data=tiny).load("Split1", "M1")


def test_session_defaults_come_from_the_environment(monkeypatch):
    for name in [*sessions.SESSION_ENV.values(), sessions.BATCH_ENV]:
        monkeypatch.delenv(name, raising=False)
    s = sessions.session()
    assert (s.dataset, s.scale, s.seed, s.interactive) == ("synthetic", "small", 0, True)
    assert s.run_id == "interactive-synthetic-small-seed0"
    monkeypatch.setenv("LTRLIB_SCALE", "tiny")
    monkeypatch.setenv("LTRLIB_SEED", "4")
    monkeypatch.setenv(sessions.BATCH_ENV, "1")
    s = sessions.session()
    assert (s.scale, s.seed, s.run_id, s.interactive) == ("tiny", 4, "interactive-synthetic-tiny-seed4", False)
    monkeypatch.setenv("LTRLIB_RUN_ID", "mine")
    assert sessions.session().run_id == "mine"
    monkeypatch.setenv("LTRLIB_SEED", "four")
    with pytest.raises(ValueError, match="LTRLIB_SEED='four' is not an integer"):
        sessions.session()
    monkeypatch.setenv("LTRLIB_SEED", "0")
    monkeypatch.setenv("LTRLIB_SCALE", "huge")
    with pytest.raises(ValueError, match="unknown scale 'huge'"):
        sessions.session()


def test_missing_models_name_the_command_with_the_scale(tmp_path, tiny):
    from ltrlib.merge.analysis import load_local_models

    with pytest.raises(FileNotFoundError) as err:
        load_local_models(ModelStore("fresh", root=tmp_path, data=tiny), ["Split1"])
    assert "ltrlib run --only 03 --dataset synthetic --scale tiny --seed 0 --run-id fresh" in str(err.value)


def test_categories_chosen_on_real_data_do_not_change_the_collection():
    """Notebooks 00-05 bin a category feature, 06-09 do not: one run, one collection."""
    shared = config.SHARED_LIGHTGBM_RANK
    if not shared.exists():
        pytest.skip(f"{shared} not found: the shared real dataset sits beside the project")
    plain = provenance.describe(load_dataset("lightgbm-rank", seed=0))
    binned = provenance.describe(load_dataset("lightgbm-rank", seed=0, category_feature="f216", category_bins=6))
    assert provenance.matches(plain, binned)
    assert not provenance.matches(plain, provenance.describe(load_dataset("lightgbm-rank", seed=1)))
