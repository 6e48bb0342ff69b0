"""One ranker interface, two backends: LightGBM and XGBoost behave alike through `Ranker`."""

import numpy as np
import pytest

from ltrlib.data import load_dataset
from ltrlib.data.dataset import Dataset
from ltrlib.metrics import evaluate
from ltrlib.train import (
    ModelStore, Ranker, TrainSettings, TuningSettings, evaluate_rankers, fit_tuned, search_space, train_ranker, tune,
    tuned_parameters, validation_curves, xgboost_propensities,
)

FAST = dict(max_trees=40, early_stopping=5, num_threads=1)
XGB_FAST = TrainSettings(backend="xgboost", **FAST)
BACKENDS = ("lightgbm", "xgboost")


@pytest.fixture(scope="module")
def splits():
    return load_dataset("synthetic", scale="tiny", seed=0)


@pytest.fixture(scope="module")
def rankers(splits):
    return {b: train_ranker(splits.train, splits.vali, {"learning_rate": 0.2}, backend=b, seed=0, **FAST)
            for b in BACKENDS}


@pytest.mark.parametrize("backend", BACKENDS)
def test_same_interface_and_early_stopping(splits, rankers, backend):
    r = rankers[backend]
    assert r.backend == backend and r.params["learning_rate"] == 0.2
    grown = r.info["trees_grown"]
    assert len(r.curve) == grown <= 40 and r.best_iteration == int(np.argmax(r.curve)) + 1
    if grown < 40:
        assert grown == r.best_iteration + 5
    # The recorded validation curve is our NDCG@10 for either library.
    ours = evaluate(splits.vali, r.score(splits.vali), metrics="ndcg@10")["ndcg@10"]
    assert ours == pytest.approx(r.best_score, abs=1e-6)
    scores = r.score(splits.test)
    assert scores.shape == (splits.test.n_docs,) and scores.dtype == np.float64
    assert np.array_equal(scores, r.predict(splits.test.X))
    gain = r.feature_importance("gain")
    assert list(gain.index) == list(splits.train.feature_names) and gain.sum() > 0
    assert r.feature_importance("split").sum() >= 1
    # A model far better than chance: the synthetic labels are learnable by both.
    assert evaluate(splits.test, scores, metrics="ndcg@10")["ndcg@10"] > 0.3


@pytest.mark.parametrize("backend", BACKENDS)
def test_deterministic(splits, rankers, backend):
    again = train_ranker(splits.train, splits.vali, {"learning_rate": 0.2}, backend=backend, seed=0, **FAST)
    assert again.best_iteration == rankers[backend].best_iteration
    assert np.array_equal(again.score(splits.test), rankers[backend].score(splits.test))


@pytest.mark.parametrize("backend", BACKENDS)
def test_store_round_trip(tmp_path, splits, rankers, backend):
    store = ModelStore("run", root=tmp_path)
    store.save(rankers[backend], "full", backend)
    back = store.load("full", backend)
    assert back.backend == backend and back.best_iteration == rankers[backend].best_iteration
    assert np.array_equal(back.score(splits.test), rankers[backend].score(splits.test))
    assert back.feature_importance("gain").equals(rankers[backend].feature_importance("gain"))
    assert set(store.list().backend) == {backend}


def test_evaluate_rankers_mixes_backends(splits, rankers):
    pq = evaluate_rankers(rankers, {"test": splits.test}, metrics=("ndcg@10", "map", "mrr@10"))
    assert set(pq.model) == set(BACKENDS) and len(pq) == 2 * 3 * splits.test.n_queries
    assert len(validation_curves(rankers)) == sum(len(r.curve) for r in rankers.values())


@pytest.mark.parametrize("backend", BACKENDS)
def test_tree_limit_without_vali(splits, backend):
    r = train_ranker(splits.train, None, {}, backend=backend, max_trees=6, num_threads=1)
    assert r.best_iteration == r.info["trees_grown"] == 6 and r.curve == []


@pytest.mark.parametrize("objective", ["rank:ndcg", "rank:pairwise", "rank:map"])
@pytest.mark.parametrize("method", ["mean", "topk"])
def test_xgboost_objectives_and_pair_methods(splits, objective, method):
    r = train_ranker(splits.train, splits.vali, {"objective": objective, "lambdarank_pair_method": method},
                     backend="xgboost", max_trees=8, early_stopping=8, num_threads=1)
    p = r.params
    assert p["objective"] == objective and p["lambdarank_pair_method"] == method
    # Defaults per method: LightGBM's truncation level for topk, XGBoost's 1 for mean.
    assert p["lambdarank_num_pair_per_sample"] == (30 if method == "topk" else 1)
    # rank:map trains on binarised labels but early-stops on graded NDCG@10, like the rest.
    ours = evaluate(splits.vali, r.score(splits.vali), metrics="ndcg@10")["ndcg@10"]
    assert ours == pytest.approx(r.best_score, abs=1e-6)


def test_xgboost_options_change_the_model(splits):
    base = dict(backend="xgboost", max_trees=10, early_stopping=10, num_threads=1)
    a = train_ranker(splits.train, None, {"lambdarank_pair_method": "mean"}, **base).score(splits.test)
    b = train_ranker(splits.train, None, {"lambdarank_pair_method": "mean",
                                          "lambdarank_num_pair_per_sample": 8}, **base).score(splits.test)
    c = train_ranker(splits.train, None, {"ndcg_exp_gain": False}, **base).score(splits.test)
    d = train_ranker(splits.train, None, {}, **base).score(splits.test)
    assert not np.array_equal(a, b) and not np.array_equal(c, d)


@pytest.mark.parametrize("params, match", [
    ({"objective": "lambdarank"}, "objective"),
    ({"lambdarank_pair_method": "all"}, "lambdarank_pair_method"),
    ({"lambdarank_num_pair_per_sample": 0}, "lambdarank_num_pair_per_sample"),
    ({"num_leaves": 31}, "max_leaves"),
    ({"min_data_in_leaf": 20}, "no equivalent"),
    ({"lambdarank_unbiased": True}, "position"),
    ({"lambdarank_unbiased": True, "lambdarank_pair_method": "mean"}, "topk"),
])
def test_xgboost_bad_options_are_named(splits, params, match):
    with pytest.raises(ValueError, match=match):
        train_ranker(splits.train, splits.vali, params, backend="xgboost", max_trees=2, num_threads=1)


def test_position_must_match_rows(splits):
    with pytest.raises(ValueError, match="position"):
        train_ranker(splits.train, None, {}, max_trees=2, num_threads=1, position=np.zeros(3, dtype=int))


def _shuffled_within_queries(ds, seed):
    rng = np.random.default_rng(seed)
    order = np.concatenate([lo + rng.permutation(hi - lo) for lo, hi in zip(ds.offsets[:-1], ds.offsets[1:])])
    return Dataset(
        X=ds.X[order], y=ds.y[order], query_ids=ds.query_ids, offsets=ds.offsets,
        feature_names=ds.feature_names, name=ds.name), order


def test_xgboost_reads_positions_from_row_order(splits):
    # Training rows given out of position order train the same model as rows in order:
    # the backend sorts each query by displayed position, which XGBoost reads from order.
    train = splits.train
    position = np.concatenate([np.arange(n) for n in train.group_sizes])
    params = {"lambdarank_unbiased": True, "lambdarank_num_pair_per_sample": 5}
    kw = dict(backend="xgboost", max_trees=5, num_threads=1)
    in_order = train_ranker(train, None, params, position=position, **kw)
    shuffled, order = _shuffled_within_queries(train, 1)
    out_of_order = train_ranker(shuffled, None, params, position=position[order], **kw)
    np.testing.assert_allclose(out_of_order.score(splits.test), in_order.score(splits.test), rtol=1e-6)
    t_plus, t_minus = xgboost_propensities(in_order)
    assert t_plus.shape == t_minus.shape == (5,) and t_plus[0] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="propensities"):
        xgboost_propensities(train_ranker(train, None, {}, **kw))


def test_lightgbm_takes_positions(splits):
    train = splits.train
    position = np.concatenate([np.arange(n) for n in train.group_sizes])
    kw = dict(max_trees=5, num_threads=1)
    with_pos = train_ranker(train, None, {}, position=position, **kw)
    without = train_ranker(train, None, {}, **kw)
    assert with_pos.info["position_bias"] and not without.info["position_bias"]
    # LightGBM learns a bias per position jointly with the trees: another model.
    assert not np.array_equal(with_pos.score(splits.test), without.score(splits.test))


def test_tuning_uses_the_backend_space(tmp_path, splits):
    assert set(search_space("xgboost")) == {"learning_rate", "max_leaves", "min_child_weight"}
    res = tune(splits.train, splits.vali, tuning=TuningSettings(n_trials=2, progress=False), settings=XGB_FAST)
    assert set(res.best_params) == set(search_space("xgboost")) and res.n_trials == 2
    with pytest.raises(ValueError, match="tuned"):
        tune(splits.train, splits.vali, tuning=TuningSettings(n_trials=1, progress=False), settings=XGB_FAST,
             params={"max_leaves": 8})
    store = ModelStore("run", root=tmp_path)
    ranker, _ = fit_tuned(splits.train, splits.vali, store=store, split="full", name="X",
                          tuning=TuningSettings(n_trials=1, progress=False), settings=XGB_FAST)
    table = tuned_parameters({("full", "X"): ranker})
    assert {"max_leaves", "min_child_weight"} <= set(table.columns)
    assert isinstance(store.load("full", "X"), Ranker)


def test_paper_points_carry_over_to_xgboost_names(tmp_path, splits):
    from ltrlib.train import PAPER_TABLE6_MEDIAN, in_backend

    assert in_backend(PAPER_TABLE6_MEDIAN, "lightgbm") == PAPER_TABLE6_MEDIAN
    # num_leaves -> max_leaves, min_sum_hessian_in_leaf -> min_child_weight, and
    # min_data_in_leaf (no XGBoost equivalent) dropped: exactly the XGBoost search space.
    xgb = in_backend(PAPER_TABLE6_MEDIAN, "xgboost")
    assert xgb == {"learning_rate": 0.05, "max_leaves": 180, "min_child_weight": 1}
    assert set(xgb) == set(search_space("xgboost"))
    with pytest.raises(ValueError, match="supported backends"):
        in_backend(PAPER_TABLE6_MEDIAN, "catboost")
    # As notebook 03 uses it: trial 0 of an XGBoost study is the translated paper point.
    res = tune(splits.train, splits.vali, tuning=TuningSettings(n_trials=1, first_params=xgb, progress=False), settings=XGB_FAST)
    assert res.best_params == xgb
