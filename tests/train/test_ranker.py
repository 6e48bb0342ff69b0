"""ltrlib.train.ranker: LambdaMART training with the paper's limits, the Ranker interface."""

import numpy as np
import pytest

from ltrlib.data import Scorer, load_dataset
from ltrlib.metrics import compare, evaluate
from ltrlib.train import Ranker, evaluate_rankers, train_ranker, validation_curves

FAST = dict(max_trees=60, early_stopping=10, num_threads=1)


@pytest.fixture(scope="module")
def splits():
    return load_dataset("synthetic", scale="tiny", seed=0)


@pytest.fixture(scope="module")
def ranker(splits):
    return train_ranker(splits.train, splits.vali, {"learning_rate": 0.2}, seed=0, **FAST)


def test_paper_defaults_are_the_signature_defaults():
    import inspect

    from ltrlib.train import TrainSettings

    default = inspect.signature(train_ranker).parameters["settings"].default
    assert default == TrainSettings()
    assert (default.max_trees, default.early_stopping, default.eval_at, default.backend) == \
        (3000, 100, 10, "lightgbm")


def test_lambdarank_params_and_determinism_flags(ranker):
    p = ranker.params
    assert p["objective"] == "lambdarank" and p["metric"] == "ndcg" and p["eval_at"] == [10]
    assert p["deterministic"] is True and p["force_row_wise"] is True
    assert p["seed"] == 0 and p["num_threads"] == 1 and p["learning_rate"] == 0.2
    assert ranker.backend == "lightgbm"


def test_early_stopping_keeps_best_and_respects_patience(ranker):
    grown = ranker.info["trees_grown"]
    assert len(ranker.curve) == grown <= 60
    assert 1 <= ranker.best_iteration <= grown
    # best_iteration is the argmax of the validation curve (first maximum)
    assert ranker.best_iteration == int(np.argmax(ranker.curve)) + 1
    if grown < 60:  # it stopped early: exactly `patience` trees after the best one
        assert grown == ranker.best_iteration + 10
        assert max(ranker.curve[ranker.best_iteration:]) <= ranker.best_score


def test_stops_early_with_small_patience(splits):
    r = train_ranker(splits.train, splits.vali, {"learning_rate": 0.3}, max_trees=500,
                     early_stopping=3, num_threads=1)
    assert r.info["trees_grown"] == r.best_iteration + 3 < 500


def test_max_trees_is_a_hard_limit_without_vali(splits):
    r = train_ranker(splits.train, None, {"learning_rate": 0.1}, max_trees=7, num_threads=1)
    assert r.best_iteration == 7 and r.curve == [] and np.isnan(r.best_score)


def test_best_score_is_our_ndcg_at_10(splits, ranker):
    ours = evaluate(splits.vali, ranker.score(splits.vali), metrics="ndcg@10")["ndcg@10"]
    assert ours == pytest.approx(ranker.best_score, abs=1e-9)


def test_score_shape_and_determinism(splits, ranker):
    scores = ranker.score(splits.test)
    assert scores.shape == (splits.test.n_docs,) and scores.dtype == np.float64
    assert np.array_equal(scores, ranker.predict(splits.test.X))
    again = train_ranker(splits.train, splits.vali, {"learning_rate": 0.2}, seed=0, **FAST)
    assert again.best_iteration == ranker.best_iteration
    assert np.array_equal(again.score(splits.test), scores)
    other = train_ranker(splits.train, splits.vali,
                         {"learning_rate": 0.2, "bagging_fraction": 0.7, "bagging_freq": 1},
                         seed=1, **FAST)
    assert not np.array_equal(other.score(splits.test), scores)


def test_a_ranker_is_a_scorer_of_datasets(splits, ranker):
    assert isinstance(ranker, Scorer)
    with pytest.raises(TypeError, match=r"predict\(X\)"):
        ranker.score(splits.test.X)
    # predict, the feature-matrix path, passes a Dataset on to score
    assert np.array_equal(ranker.predict(splits.test), ranker.score(splits.test))


def test_predict_rejects_wrong_width(ranker):
    with pytest.raises(ValueError, match=r"shape \(n, 220\)"):
        ranker.predict(np.zeros((3, 5), dtype=np.float32))


def test_feature_importance_by_name(splits, ranker):
    gain = ranker.feature_importance("gain")
    split = ranker.feature_importance("split")
    assert list(gain.index) == list(splits.train.feature_names)
    assert gain.sum() > 0 and (split >= 0).all() and split.sum() >= ranker.best_iteration
    with pytest.raises(ValueError, match="kind"):
        ranker.feature_importance("cover")


def test_save_load_round_trip(tmp_path, splits, ranker):
    path = ranker.save(tmp_path / "m.txt")
    assert path.exists() and path.with_suffix(".json").exists()
    back = Ranker.load(path)
    assert np.array_equal(back.score(splits.test), ranker.score(splits.test))
    assert back.best_iteration == ranker.best_iteration and back.params == ranker.params
    assert back.feature_names == ranker.feature_names and back.curve == ranker.curve
    assert not list(tmp_path.glob(".*"))  # no temporary files left behind


def test_unknown_backend_lists_supported(splits):
    with pytest.raises(ValueError, match=r"unknown backend 'catboost'.*lightgbm"):
        train_ranker(splits.train, splits.vali, backend="catboost")


@pytest.mark.parametrize("kwargs, match", [
    (dict(max_trees=0), "max_trees"),
    (dict(early_stopping=-1), "early_stopping"),
    (dict(eval_at=2.5), "eval_at"),
    (dict(params={"num_iterations": 10}), "max_trees"),
    (dict(params={"eval_at": [5]}), "eval_at"),
])
def test_bad_arguments_are_named(splits, kwargs, match):
    with pytest.raises(ValueError, match=match):
        train_ranker(splits.train, splits.vali, **kwargs)


def test_evaluate_rankers_gives_the_papers_table(splits, ranker):
    weak = train_ranker(splits.train, splits.vali, {"learning_rate": 0.2}, max_trees=1,
                        num_threads=1)
    tests = {"DS1": splits.test.take(np.arange(25)), "DS": splits.test}
    pq = evaluate_rankers({"M1": weak, "M_full": ranker}, tests)
    assert list(pq.columns) == ["model", "test_set", "qid", "metric", "value"]
    assert len(pq) == 2 * (25 + 50)
    table = compare(pq, None, by="test_set").marked().formatted()
    assert list(table.index) == ["M1", "M_full"] and list(table.columns) == ["DS1", "DS"]
    expect = pq[(pq.model == "M_full") & (pq.test_set == "DS")].value.mean()
    assert table.loc["M_full", "DS"] == pytest.approx(expect)
    marked = compare(pq, "M_full", by="test_set").marked().formatted()
    assert marked.loc["M_full", "DS"] == f"{expect:.4f}"  # the baseline carries no marker


def test_validation_curves(ranker):
    df = validation_curves({("Split1", "M1"): ranker})
    assert len(df) == len(ranker.curve) and df.best.sum() == 1
    assert df.loc[df.best, "tree"].item() == ranker.best_iteration
    assert set(df.metric) == {"ndcg@10"} and df.value.tolist() == list(ranker.curve)


def test_a_fit_counts_as_fitting_time(splits, monkeypatch):
    """`ltrlib.timing` counts train_ranker's wall time as model fitting (run.json's fit_seconds)."""
    import dataclasses
    import time

    from ltrlib import timing
    from ltrlib.train import ranker as ranker_mod

    lightgbm = ranker_mod._backend("lightgbm")

    def slow_fit(*args, **kwargs):
        time.sleep(0.3)
        return lightgbm.fit(*args, **kwargs)

    monkeypatch.setattr(ranker_mod, "_backend", lambda name: dataclasses.replace(lightgbm, fit=slow_fit))
    before = timing.seconds
    train_ranker(splits.train, splits.vali, {}, **FAST)
    assert timing.seconds - before >= 0.3
