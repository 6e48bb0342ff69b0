"""ltrlib.clicklog: click logs with displayed positions, and the click-bias experiment."""

import numpy as np
import pytest

from ltrlib.clicklog import (
    click_bias_experiment,
    curve_table,
    click_bias_metrics,
    propensity_errors,
    simulate_click_log,
)
from ltrlib.clicklog.logs import shown_lists
from ltrlib.data import load_dataset
from ltrlib.data.dataset import Dataset
from ltrlib.foltr.clicks import pbm, sdbn
from ltrlib.train import TrainSettings, train_ranker


def _toy():
    # Two queries: 4 and 2 documents; feature 0 is the document's own id.
    y = np.array([0, 3, 1, 4, 2, 0])
    return Dataset(X=np.arange(6, dtype=np.float32)[:, None], y=y, query_ids=np.array([7, 9]),
                   offsets=np.array([0, 4, 6]))


def test_shown_lists_top_k_by_score_ties_in_input_order():
    ds = _toy()
    rows, off = shown_lists(ds, np.array([0.1, 0.9, 0.5, 0.5, 0.0, 1.0]), top_k=3)
    assert off.tolist() == [0, 3, 5]
    assert rows.tolist() == [1, 2, 3, 5, 4]
    with pytest.raises(ValueError, match="top_k"):
        shown_lists(ds, np.zeros(6), top_k=0)
    with pytest.raises(ValueError, match="scores"):
        shown_lists(ds, np.zeros(5), top_k=2)


def test_log_layout_positions_and_sources():
    ds = _toy()
    scores = np.array([0.1, 0.9, 0.5, 0.5, 0.0, 1.0])
    log = simulate_click_log(ds, scores, pbm(1.0), n_sessions=50, top_k=3, seed=1)
    assert log.n_sessions == 50 and log.data.n_queries == 50
    for s in range(50):
        lo, hi = log.data.offsets[s], log.data.offsets[s + 1]
        q = log.session_query[s]
        expect = [1, 2, 3] if q == 0 else [5, 4]
        # Rows are the shown list in displayed order; positions count from 0.
        assert log.source_row[lo:hi].tolist() == expect
        assert log.position[lo:hi].tolist() == list(range(hi - lo))
        assert log.data.X[lo:hi, 0].tolist() == expect
    assert np.array_equal(log.true_label, ds.y[log.source_row])
    assert set(np.unique(log.data.y)) <= {0, 1}
    # The "perfect" PBM never clicks a label-0 document.
    assert log.data.y[log.true_label == 0].sum() == 0
    again = simulate_click_log(ds, scores, pbm(1.0), n_sessions=50, top_k=3, seed=1)
    assert np.array_equal(again.data.y, log.data.y) and np.array_equal(again.session_query, log.session_query)


def test_first_sessions_nest():
    ds = _toy()
    log = simulate_click_log(ds, np.zeros(6), pbm(0.5), n_sessions=40, top_k=2, seed=0)
    head = log.first_sessions(10)
    end = log.data.offsets[10]
    assert head.n_sessions == 10 and np.array_equal(head.data.y, log.data.y[:end])
    assert np.array_equal(head.position, log.position[:end])
    with pytest.raises(ValueError, match="n must be"):
        log.first_sessions(41)


def test_click_rates_follow_pbm_eta():
    # Every shown document has label 4 (click prob 1 under "perfect"): the click-through
    # rate at rank r is exactly (1/r)^eta in expectation.
    n_docs = 10
    ds = Dataset(X=np.zeros((n_docs, 1), np.float32), y=np.full(n_docs, 4), query_ids=np.array([0]),
                 offsets=np.array([0, n_docs]))
    for eta in (0.0, 1.0, 2.0):
        log = simulate_click_log(ds, np.zeros(n_docs), pbm(eta), n_sessions=20_000, top_k=10, seed=3)
        ctr = log.click_rate_by_position()
        np.testing.assert_allclose(ctr, 1.0 / np.arange(1, 11) ** eta, atol=0.015)


def test_cascade_models_work_too():
    ds = _toy()
    log = simulate_click_log(ds, np.zeros(6), sdbn("navigational"), n_sessions=20, top_k=4, seed=0)
    assert log.data.n_docs == log.position.size


def test_bad_inputs_are_named():
    ds = _toy()
    with pytest.raises(ValueError, match="n_sessions"):
        simulate_click_log(ds, np.zeros(6), pbm(1.0), n_sessions=0)
    with pytest.raises(TypeError, match="ClickModel"):
        simulate_click_log(ds, np.zeros(6), "pbm1", n_sessions=3)
    bad = Dataset(X=np.zeros((2, 1), np.float32), y=np.array([0, 7]), query_ids=np.array([0]),
                  offsets=np.array([0, 2]))
    with pytest.raises(ValueError, match="label 7"):
        simulate_click_log(bad, np.zeros(2), pbm(1.0), n_sessions=3)


def test_both_backends_train_on_a_log_with_positions():
    sp = load_dataset("synthetic", scale="tiny", seed=0)
    log = simulate_click_log(sp.train, sp.train.X[:, 0], pbm(1.0), n_sessions=300, seed=0)
    xgb = train_ranker(log.data, None, {"lambdarank_unbiased": True, "lambdarank_num_pair_per_sample": 10},
                       backend="xgboost", max_trees=3, num_threads=1, position=log.position)
    lgb = train_ranker(log.data, None, {}, max_trees=3, num_threads=1, position=log.position)
    assert xgb.score(sp.test).shape == lgb.score(sp.test).shape == (sp.test.n_docs,)


def test_experiment_frames():
    sp = load_dataset("synthetic", scale="tiny", seed=0)
    res = click_bias_experiment(sp, etas=(0.0, 2.0), sessions=(100, 300),
                                settings=TrainSettings(max_trees=3, num_threads=1), ceiling_trees=10)
    c = res.curves
    assert set(c.model) == {"logging ranker", "true labels (ceiling)", "XGB unbiased", "XGB biased",
                            "LightGBM positions"}
    assert len(c) == 2 + 2 * 2 * 3 and c.value.between(0, 1).all()
    assert res.logging_queries == 3  # 1% of 150 rounded up, at least 3
    wide = curve_table(c)
    assert len(wide) == 4 and "true labels (ceiling)" in wide.columns
    p = res.propensities
    assert len(p) == 2 * 10 and np.allclose(p[p["rank"] == 1].estimated, 1.0)
    assert np.allclose(p[p.eta == 2.0]["true"], 1.0 / np.arange(1, 11) ** 2)
    assert len(propensity_errors(p)) == 2
    # The eta 2 log is far more top-heavy than the eta 0 log.
    r = res.click_rates
    top = r[r["rank"] == 1].set_index("eta").ctr
    low = r[r["rank"] == 10].set_index("eta").ctr
    assert low[2.0] / top[2.0] < low[0.0] / top[0.0]
    m = click_bias_metrics(res)
    assert "xgb_unbiased.eta2.ndcg10" in m and "eta2.propensity_mae" in m
    assert m["logging_queries"] == 3 and "true_labels_ceiling.ndcg10" in m
