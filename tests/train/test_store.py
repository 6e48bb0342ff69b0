"""ltrlib.train.store: per-run model persistence with JSON sidecars."""

import json

import numpy as np
import pytest

from ltrlib.data import load_dataset
from ltrlib.train import ModelStore, train_ranker


@pytest.fixture(scope="module")
def splits():
    return load_dataset("synthetic", scale="tiny", seed=0)


@pytest.fixture(scope="module")
def ranker(splits):
    r = train_ranker(splits.train, splits.vali, {"learning_rate": 0.2}, max_trees=40,
                     early_stopping=10, num_threads=1)
    r.info["tuning"] = {"study": "Split1.M1", "best_value": r.best_score}
    return r


def test_layout_and_sidecar(tmp_path, splits, ranker):
    store = ModelStore("run1", root=tmp_path)
    path = store.save(ranker, "Split1", "M1")
    assert path == tmp_path / "run1" / "models" / "Split1" / "M1.txt" == store.path("Split1", "M1")
    assert "Tree=0" in path.read_text()  # LightGBM text model
    side = json.loads(path.with_suffix(".json").read_text())
    assert side["backend"] == "lightgbm"
    assert side["best_iteration"] == ranker.best_iteration
    assert side["params"]["objective"] == "lambdarank"
    assert side["info"]["train"]["queries"] == splits.train.n_queries
    assert side["info"]["vali"]["queries"] == splits.vali.n_queries
    assert side["info"]["tuning"]["study"] == "Split1.M1"


def test_round_trip_identical_predictions(tmp_path, splits, ranker):
    store = ModelStore("run1", root=tmp_path)
    assert not store.exists("Split1", "M1")
    store.save(ranker, "Split1", "M1")
    assert store.exists("Split1", "M1")
    back = store.load("Split1", "M1")
    assert np.array_equal(back.score(splits.test), ranker.score(splits.test))
    assert back.info["tuning"]["best_value"] == pytest.approx(ranker.best_score)
    listing = store.list()
    assert listing[["split", "model", "trees"]].values.tolist() == [["Split1", "M1", ranker.best_iteration]]


def test_exists_needs_both_files(tmp_path, ranker):
    store = ModelStore("run1", root=tmp_path)
    store.save(ranker, "full", "M_full")
    store.path("full", "M_full").with_suffix(".json").unlink()
    assert not store.exists("full", "M_full") and store.keys() == []


def test_missing_model_error_names_it(tmp_path, ranker):
    store = ModelStore("run1", root=tmp_path)
    store.save(ranker, "Split1", "M1")
    with pytest.raises(FileNotFoundError, match=r"Split2/M2.*stored: Split1/M1"):
        store.load("Split2", "M2")


def test_failed_write_leaves_previous_model(tmp_path, splits, ranker, monkeypatch):
    store = ModelStore("run1", root=tmp_path)
    store.save(ranker, "Split1", "M1")
    before = store.path("Split1", "M1").read_text()

    def boom(*a, **k):
        raise RuntimeError("disk full")

    monkeypatch.setattr(ranker, "sidecar", boom)
    with pytest.raises(RuntimeError):
        store.save(ranker, "Split1", "M1")
    assert store.path("Split1", "M1").read_text() == before
    assert not [p for p in store.path("Split1", "M1").parent.iterdir() if p.name.startswith(".")]


@pytest.mark.parametrize("split, name", [("../x", "M1"), ("Split1", "a/b"), ("", "M1")])
def test_unsafe_names_rejected(tmp_path, split, name):
    with pytest.raises(ValueError, match="invalid"):
        ModelStore("run1", root=tmp_path).path(split, name)
