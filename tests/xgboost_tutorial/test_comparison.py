"""ltrlib.xgboost_tutorial.comparison: backend variants, effective pairs, claims, query subsets."""

import numpy as np
import pandas as pd
import pytest

from ltrlib.data import load_dataset
from ltrlib.data.dataset import Dataset, Splits
from ltrlib.metrics import compare
from ltrlib.train import TrainSettings
from ltrlib.xgboost_tutorial import comparison


def _tiny_labels(labels_per_query):
    y = np.concatenate(labels_per_query)
    sizes = [len(q) for q in labels_per_query]
    return Dataset(X=np.zeros((len(y), 2), np.float32), y=y, query_ids=np.arange(len(sizes)),
                   offsets=np.concatenate([[0], np.cumsum(sizes)]))


def test_effective_pairs_by_hand():
    ds = _tiny_labels([[2, 0, 0, 1], [1, 1]])
    # Query 1: labels 2,0,0,1 -> other-label counts 3,2,2,3; query 2: none differ.
    # mean, n pairs: n * other / (size - 1) summed: n * (3+2+2+3)/3 = n * 10/3.
    assert comparison.effective_pairs(ds, "mean", 3) == pytest.approx((10.0) / 2)
    # topk, k=2: docs 2 and 0 paired with all others of another label: 3 + 2, minus the
    # (2, 0) pair counted from both ends -> 4 pairs in query 1, 0 in query 2.
    assert comparison.effective_pairs(ds, "topk", 2) == pytest.approx(4 / 2)
    # k >= list size: every differing pair once: query 1 has 6 - 1 (the two 0s) = 5.
    assert comparison.effective_pairs(ds, "topk", 10) == pytest.approx(5 / 2)
    with pytest.raises(ValueError, match="method"):
        comparison.effective_pairs(ds, "all", 1)


def test_variants_and_sizes():
    v = comparison.backend_variants()
    assert list(v)[0] == comparison.LIGHTGBM and len(v) == 7
    assert v["XGB map/mean"] == ("xgboost", {"objective": "rank:map", "lambdarank_pair_method": "mean"})
    assert comparison.parse_train_sizes("150, 1000,all", 3000) == [150, 1000, 3000]
    assert comparison.parse_train_sizes("150,1000,all", 150) == [150]
    with pytest.raises(ValueError, match="pair_train_queries"):
        comparison.parse_train_sizes("150,lots", 3000)


def test_take_train_queries_keeps_vali_and_test():
    sp = load_dataset("synthetic", scale="tiny", seed=0)
    sub = comparison.take_train_queries(sp, 40, seed=3)
    assert sub.train.n_queries == 40 and sub.vali is sp.vali and sub.test is sp.test
    assert set(sub.train.query_ids) <= set(sp.train.query_ids)
    assert np.array_equal(comparison.take_train_queries(sp, 40, seed=3).train.query_ids, sub.train.query_ids)
    assert comparison.take_train_queries(sp, 0).train is sp.train
    # Every size of the notebook's parameter at once, ascending, each seeded as above.
    subsets = comparison.training_subsets(sp, "40,all", seed=3)
    assert list(subsets) == [40, sp.train.n_queries] and subsets[sp.train.n_queries].train is sp.train
    assert np.array_equal(subsets[40].train.query_ids, sub.train.query_ids)


def test_the_equal_budget_trend_is_read_where_the_pairs_are_spent_and_a_switch_off_gives_none():
    from ltrlib.xgboost_tutorial import advice

    assert [advice.equal_budget_metric(k) for k in (1, 3, 10, 30)] == ["ndcg@1", "ndcg@3", "ndcg@10", "ndcg@10"]
    assert advice.distributed_against_single(None, {}, None, wanted=False) is None


def test_compare_backends_tables():
    sp = load_dataset("synthetic", scale="tiny", seed=0)
    sp = Splits(sp.train, sp.vali, sp.test.take(np.arange(20)))
    variants = {comparison.LIGHTGBM: ("lightgbm", {}),
                "XGB ndcg/mean": ("xgboost", {"lambdarank_pair_method": "mean"})}
    runs = comparison.compare_backends(sp, variants, settings=TrainSettings(max_trees=5, early_stopping=5,
                                                                             num_threads=1))
    assert list(runs.timing.model) == list(variants) and (runs.timing.seconds > 0).all()
    # The scores the run files hold are those the metrics were computed from, and the rankers'.
    from ltrlib.train import evaluate_rankers

    pd.testing.assert_frame_equal(runs.per_query, evaluate_rankers(runs.rankers, {"test": sp.test},
                                                                   metrics=comparison.METRICS))
    for name, r in runs.rankers.items():
        np.testing.assert_array_equal(runs.test_scores[name], r.score(sp.test))
    table = compare(runs.per_query, comparison.LIGHTGBM).marked().formatted()
    assert list(table.columns) == ["ndcg@10", "map", "mrr@10"] and list(table.index) == list(variants)
    numeric = comparison.comparison_numeric(runs.per_query, runs.timing)
    base = numeric[numeric.model == comparison.LIGHTGBM]
    assert (base["diff"] == 0).all() and base.p_value.isna().all()
    # Holm's step-down over the table's family (every model against LightGBM at every metric).
    from statsmodels.stats.multitest import multipletests

    tested = numeric[numeric.model != comparison.LIGHTGBM]
    np.testing.assert_allclose(tested.p_holm, multipletests(tested.p_value, method="holm")[1])
    assert base.p_holm.isna().all() and (numeric.marked_holm == (numeric.p_holm < 0.05)).all()
    metrics = comparison.tutorial_metrics(numeric)
    assert "lightgbm_lambdamart.ndcg10" in metrics and metrics["lightgbm_lambdamart.seconds"] > 0


def test_a_setting_already_trained_is_reused_not_trained_again(monkeypatch):
    sp = load_dataset("synthetic", scale="tiny", seed=0)
    sp = Splits(sp.train, sp.vali, sp.test.take(np.arange(20)))
    settings = TrainSettings(max_trees=5, early_stopping=5, num_threads=1)
    pairs = {"mean, 1 pair": {"lambdarank_pair_method": "mean", "lambdarank_num_pair_per_sample": 1},
             "topk, k=10": {"lambdarank_pair_method": "topk", "lambdarank_num_pair_per_sample": 10}}
    first = comparison.pair_method_experiment({150: sp}, {"topk, k=10": pairs["topk, k=10"]}, settings=settings,
                                              progress=False)
    fresh = comparison.pair_method_experiment({150: sp}, pairs, settings=settings, progress=False)
    calls = []
    real = comparison.train_ranker
    monkeypatch.setattr(comparison, "train_ranker", lambda *a, **k: calls.append(1) or real(*a, **k))
    reused = comparison.pair_method_experiment({150: sp}, pairs, settings=settings, progress=False, reuse=first)
    # One model trained (mean), one taken as it was; rows in the settings' order, as fresh.
    assert len(calls) == 1
    cols = ["scale", "train_queries", "setting", "qid", "metric", "value", "effective_pairs", "trees"]
    pd.testing.assert_frame_equal(reused[cols].reset_index(drop=True), fresh[cols].reset_index(drop=True))
