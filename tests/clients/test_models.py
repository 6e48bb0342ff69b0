"""ltrlib.clients.models: notebook 03's client models, fitted once and reused."""

import numpy as np
import pytest

from ltrlib.config import Scale
from ltrlib.data import make_synthetic
from ltrlib.train import ModelStore, TrainSettings, TuningSettings
from ltrlib.train import tuning as tuning_mod
from ltrlib.train.tuning import rankers as tuning_rankers


@pytest.fixture(scope="module")
def splits():
    # Twice tiny's training queries: Split1's exclusive DS1 holds 1.2% of the queries, about
    # 1.7 of tiny's 150 (often none, and then the split cannot be trained); here 3 / 1 / 1.
    return make_synthetic(Scale("client-models", 300, 100, 100, 106.0), seed=0)


def test_fit_client_models_trains_each_distinct_model_once(tmp_path, splits, monkeypatch):
    from ltrlib.clients import client_metrics, client_results, fit_client_models
    from ltrlib.metrics import compare
    from ltrlib.noniid.splits import paper_splits

    nsplits = paper_splits(splits, categories=(11, 11, 14), seed=0)
    store = ModelStore("run", root=tmp_path)
    fast = dict(tuning=TuningSettings(n_trials=1, progress=False),
                settings=TrainSettings(max_trees=10, early_stopping=5, num_threads=1))
    models = fit_client_models(nsplits, store, **fast)
    assert set(models.rankers) == {(s, m) for s in ("Split1", "Split2", "Split3")
                                   for m in ("M1", "M2", "M_full")}
    # DS2' of Split2 equals Split1's (both category 11): reused, still stored per split.
    assert models.reused == {("Split2", "M2"): ("Split1", "M2")}
    assert {k for k in store.keys()} == {("full", "M_full")} | {
        (s, m) for s in ("Split1", "Split2", "Split3") for m in ("M1", "M2")}
    assert models.rankers[("Split1", "M_full")] is models.rankers[("Split3", "M_full")]

    def no_training(*a, **k):
        raise AssertionError("everything is stored: nothing may train")

    monkeypatch.setattr(tuning_rankers, "train_ranker", no_training)
    again = fit_client_models(nsplits, store, splits="Split3,Split1", **fast)
    assert list(again.tests) == ["Split3", "Split1"]

    per_query = client_results(again)
    table = compare(per_query, None, by=["split", "test_set"]).marked(by="split").formatted()
    assert list(table.columns) == ["DS1", "DS2'", "DS"]
    assert list(table.index)[:3] == [("Split3", "M1"), ("Split3", "M2"), ("Split3", "M_full")]
    flat = client_metrics(again, per_query)
    assert flat["split1.m_full.ds.ndcg10"] == pytest.approx(table.loc[("Split1", "M_full"), "DS"])
    assert "split1.m2.ds2p.ndcg10" in flat and flat["split3.m1.trees"] >= 1
    with pytest.raises(ValueError, match="Split9"):
        fit_client_models(nsplits, store, splits="Split9", **fast)


def test_models_side_by_side_equal_the_sequential_ones(tmp_path, splits, monkeypatch):
    # n_jobs=2 trains the distinct models in two worker processes (one thread each), then
    # loads them; with one thread per model either way, they are the same models.
    from ltrlib.clients import fit_client_models
    from ltrlib.noniid.splits import paper_splits

    nsplits = paper_splits(splits, categories=(11, 11, 14), seed=0)
    quick = TrainSettings(max_trees=10, early_stopping=5)
    fast = dict(tuning=TuningSettings(n_trials=1, progress=False))
    seq = fit_client_models(nsplits, ModelStore("seq", root=tmp_path), settings=quick.replace(num_threads=1),
                            **fast)
    par_store = ModelStore("par", root=tmp_path)
    par = fit_client_models(nsplits, par_store, settings=quick.replace(num_threads=2), n_jobs=2, **fast)
    assert set(par.rankers) == set(seq.rankers) and par.reused == seq.reused
    for key, ranker in seq.rankers.items():
        other = par.rankers[key]
        assert other.info["tuning"]["best_value"] == ranker.info["tuning"]["best_value"], key
        np.testing.assert_array_equal(other.score(splits.test), ranker.score(splits.test))
        assert other.params["num_threads"] == 1  # num_threads // n_jobs per worker

    # the parent only loaded what the workers stored: a second run trains nothing
    def no_training(*a, **k):
        raise AssertionError("everything is stored: nothing may train")

    monkeypatch.setattr(tuning_rankers, "train_ranker", no_training)
    fit_client_models(nsplits, par_store, settings=quick.replace(num_threads=1), **fast)
    with pytest.raises(ValueError, match="n_jobs must be >= 1"):
        tuning_mod.fit_side_by_side([], par_store, n_jobs=0)


def test_client_models_subset_keeps_the_named_splits():
    from ltrlib.clients import ClientModels

    m = ClientModels({("A", "M1"): 1, ("B", "M1"): 2}, {("A", "M1"): "r"}, {"A": {}, "B": {}},
                     {("B", "M2"): ("A", "M2")})
    sub = m.subset(["B"])
    assert sub.rankers == {("B", "M1"): 2} and sub.results == {} and list(sub.tests) == ["B"]
    assert sub.reused == {("B", "M2"): ("A", "M2")}
    with pytest.raises(ValueError, match="not fitted"):
        m.subset(["C"])


def test_notebook_03_tunes_the_run_then_the_other_configurations_then_the_initial_split():
    from ltrlib.clients import training_order
    from ltrlib.train import PAPER_TABLE6_MEDIAN, paper_start

    order = training_order(["Split1", "Split3"], {"Split3": 0, "Split4": 0}, {"initial-c11": 0})
    assert order == ["Split1", "Split3", "Split4", "initial-c11"]
    assert paper_start("lightgbm") == PAPER_TABLE6_MEDIAN and paper_start("lightgbm", wanted=False) is None
    assert "max_leaves" in paper_start("xgboost")  # in XGBoost's names
