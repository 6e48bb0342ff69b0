"""Tests for ltrlib.metrics.ranking: hand fixtures, LightGBM and ranx agreement, errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ltrlib.data.dataset import Dataset
from ltrlib.metrics import (
    average_precision,
    evaluate,
    ideal_dcg,
    ndcg,
    parse_metric,
    reciprocal_rank,
)
from ltrlib.trec import import_ranx

L3 = math.log2(3.0)  # discount of rank 2
L4 = 2.0  # discount of rank 3


def offsets_of(*sizes):
    return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)


# ============================================================================ hand fixtures


def test_graded_gain_and_log2_discount():
    # Ranked: label 0, label 3, label 1. DCG = 0 + 7/log2(3) + 1/log2(4).
    y = np.array([0, 3, 1])
    s = np.array([0.9, 0.5, 0.1])
    off = offsets_of(3)
    dcg = 7 / L3 + 1 / L4
    ideal = 7 + 1 / L3
    assert ndcg(y, s, off)[0] == pytest.approx(dcg / ideal, abs=1e-15)
    assert ndcg(y, s, off, k=1)[0] == 0.0
    assert ndcg(y, s, off, k=2)[0] == pytest.approx((7 / L3) / (7 + 1 / L3), abs=1e-15)


def test_k_larger_than_list_is_whole_list():
    y = np.array([1, 0, 2])
    s = np.array([0.1, 0.2, 0.3])
    off = offsets_of(3)
    full = ndcg(y, s, off)
    assert ndcg(y, s, off, k=10)[0] == full[0]
    assert ndcg(y, s, off, k=3)[0] == full[0]
    assert average_precision(y, s, off, k=50)[0] == average_precision(y, s, off)[0]
    assert full[0] == pytest.approx((3 + 1 / L4) / (3 + 1 / L3), abs=1e-15)


def test_k_equal_one():
    y = np.array([1, 2, 0, 0, 1])
    s = np.array([0.5, 0.4, 0.3, 0.9, 0.1])
    off = offsets_of(2, 3)
    # query 0: top doc label 1 of ideal 2 -> (2^1-1)/(2^2-1); query 1: top doc label 0.
    np.testing.assert_allclose(ndcg(y, s, off, k=1), [1 / 3, 0.0], atol=1e-15)
    np.testing.assert_array_equal(reciprocal_rank(y, s, off, k=1), [1.0, 0.0])
    np.testing.assert_array_equal(average_precision(y, s, off, k=1), [0.5, 0.0])


def test_single_document_queries():
    y = np.array([2, 0])
    s = np.array([-3.0, 7.0])
    off = offsets_of(1, 1)
    for no_rel, fill in (("one", 1.0), ("zero", 0.0)):
        for f in (ndcg, average_precision, reciprocal_rank):
            np.testing.assert_array_equal(f(y, s, off, no_relevant=no_rel), [1.0, fill])
            np.testing.assert_array_equal(f(y, s, off, k=5, no_relevant=no_rel), [1.0, fill])


@pytest.mark.parametrize("no_relevant, fill", [("one", 1.0), ("zero", 0.0), ("exclude", np.nan)])
def test_queries_without_relevant_documents(no_relevant, fill):
    y = np.array([0, 0, 0, 1, 0])
    s = np.array([0.3, 0.2, 0.1, 0.1, 0.2])
    off = offsets_of(3, 2)
    second = {"ndcg@1": 0.0, "ndcg": 1 / L3, "map": 0.5, "mrr": 0.5, "mrr@1": 0.0}
    table = evaluate(y, s, off, list(second), no_relevant=no_relevant, per_query=True)
    for metric, expected in second.items():
        values = table[table.metric == metric].value.to_numpy()
        np.testing.assert_allclose(values, [fill, expected], atol=1e-15)
    means = evaluate(y, s, off, list(second), no_relevant=no_relevant)
    for metric, expected in second.items():
        want = expected if np.isnan(fill) else (fill + expected) / 2
        assert means[metric] == pytest.approx(want, abs=1e-15)


def test_exclude_with_no_query_left_gives_nan_mean():
    y = np.zeros(4, dtype=int)
    means = evaluate(y, np.arange(4.0), offsets_of(2, 2), ("ndcg@3", "map"), no_relevant="exclude")
    assert all(np.isnan(v) for v in means.values())


def test_ties_keep_input_order():
    # Equal scores: the document that comes first in the input ranks first (stable sort,
    # as LightGBM's std::stable_sort).
    s = np.array([0.5, 0.5])
    off = offsets_of(2)
    assert ndcg(np.array([0, 1]), s, off, k=1)[0] == 0.0
    assert ndcg(np.array([1, 0]), s, off, k=1)[0] == 1.0
    assert reciprocal_rank(np.array([0, 1]), s, off)[0] == 0.5
    # A tie group below a higher score: order 2 (0.9), then 0, 3, 1 (0.4 ties in input
    # order, then 0.1).
    y = np.array([1, 0, 0, 2])
    s = np.array([0.4, 0.1, 0.9, 0.4])
    dcg = 0 + 1 / L3 + 3 / L4
    assert ndcg(y, s, offsets_of(4))[0] == pytest.approx(dcg / (3 + 1 / L3), abs=1e-15)
    # -0.0 and 0.0 are equal scores, so they tie too.
    assert ndcg(np.array([0, 1]), np.array([-0.0, 0.0]), off, k=1)[0] == 0.0


def test_average_precision_divides_by_all_relevant():
    y = np.array([0, 1, 1])
    s = np.array([0.3, 0.2, 0.1])
    off = offsets_of(3)
    assert average_precision(y, s, off)[0] == pytest.approx((1 / 2 + 2 / 3) / 2, abs=1e-15)
    assert average_precision(y, s, off, k=2)[0] == pytest.approx(0.25, abs=1e-15)
    # trec_eval/ranx map_cut: divide by R=3 relevant overall, not by min(R, k)=2 as
    # LightGBM's map@k does.
    y = np.array([1, 0, 1, 1])
    s = np.array([0.4, 0.3, 0.2, 0.1])
    assert average_precision(y, s, offsets_of(4), k=2)[0] == pytest.approx(1 / 3, abs=1e-15)


def test_rel_threshold():
    y = np.array([1, 2, 0])
    s = np.array([0.9, 0.5, 0.1])
    off = offsets_of(3)
    assert reciprocal_rank(y, s, off)[0] == 1.0
    assert reciprocal_rank(y, s, off, rel_threshold=2)[0] == 0.5
    assert average_precision(y, s, off, rel_threshold=2)[0] == 0.5
    # No document reaches 3: MAP undefined, NDCG (graded) unaffected by the threshold.
    assert average_precision(y, s, off, rel_threshold=3, no_relevant="zero")[0] == 0.0
    assert np.isnan(reciprocal_rank(y, s, off, rel_threshold=3, no_relevant="exclude")[0])
    means = evaluate(y, s, off, ("ndcg", "map"), rel_threshold=3, no_relevant="exclude")
    assert means["ndcg"] == pytest.approx(ndcg(y, s, off)[0]) and np.isnan(means["map"])


def test_ideal_dcg_helper_and_external_normaliser():
    # Full list of 4 candidates; a first stage keeps the top 2 by stage-one score.
    y_full = np.array([2, 0, 1, 3])
    off_full = offsets_of(4)
    assert ideal_dcg(y_full, off_full)[0] == pytest.approx(7 + 3 / L3 + 1 / L4, abs=1e-14)
    assert ideal_dcg(y_full, off_full, 2)[0] == pytest.approx(7 + 3 / L3, abs=1e-14)
    assert ideal_dcg(y_full, off_full, 1)[0] == 7.0
    # Truncated list: labels 2 and 0 survived; the re-ranker puts label 2 first.
    y_top = np.array([0, 2])
    s_top = np.array([0.1, 0.8])
    off_top = offsets_of(2)
    full_ideal = ideal_dcg(y_full, off_full, 2)
    got = ndcg(y_top, s_top, off_top, k=2, ideal_dcg=full_ideal)[0]
    assert got == pytest.approx(3 / (7 + 3 / L3), abs=1e-15)
    # Without the external normaliser the truncated list looks perfect.
    assert ndcg(y_top, s_top, off_top, k=2)[0] == 1.0
    # Same through evaluate, as one array and as a mapping (other NDCG from the list).
    assert evaluate(y_top, s_top, off_top, "ndcg@2", ideal_dcg=full_ideal)["ndcg@2"] == got
    both = evaluate(y_top, s_top, off_top, ("ndcg@1", "ndcg@2"),
                    ideal_dcg={"NDCG@2": full_ideal})
    assert both == {"ndcg@1": 1.0, "ndcg@2": got}
    # A zero external normaliser follows no_relevant.
    assert ndcg(y_top, s_top, off_top, ideal_dcg=[0.0], no_relevant="zero")[0] == 0.0


def test_perfect_ranking_scores_one():
    rng = np.random.default_rng(3)
    sizes = rng.integers(1, 40, size=50)
    y = rng.integers(0, 5, size=sizes.sum())
    off = offsets_of(*sizes)
    out = evaluate(y, y + 0.0, off, ("ndcg@3", "ndcg", "map", "mrr@1"), no_relevant="exclude",
                   per_query=True)
    assert np.allclose(out.value.dropna(), 1.0, atol=1e-14)
    has_rel = np.add.reduceat(y > 0, off[:-1]) > 0
    assert out.value.isna().sum() == 4 * np.count_nonzero(~has_rel)


def test_reversed_ranking_is_worse_and_per_query_values_follow_queries():
    rng = np.random.default_rng(4)
    sizes = rng.integers(2, 30, size=40)
    y = rng.integers(0, 5, size=sizes.sum())
    off = offsets_of(*sizes)
    s = rng.normal(size=y.size)
    base = ndcg(y, s, off, 5)
    # Shuffling the order of queries permutes the per-query values accordingly.
    perm = rng.permutation(sizes.size)
    ds = Dataset(np.zeros((y.size, 1)), y, np.arange(sizes.size), off)
    sub = ds.take(perm)
    s_perm = np.concatenate([s[off[q]:off[q + 1]] for q in perm])
    np.testing.assert_array_equal(ndcg(sub.y, s_perm, sub.offsets, 5), base[perm])
    assert ndcg(y, y + 0.0, off, 5).mean() > ndcg(y, -y + 0.0, off, 5).mean()


# ============================================================================ front door


def test_evaluate_dataset_and_tidy_frame():
    y = np.array([1, 0, 0, 2, 1])
    s = np.array([0.1, 0.9, 0.3, 0.5, 0.4])
    ds = Dataset(np.zeros((5, 2)), y, np.array([17, 4]), offsets_of(2, 3))
    out = evaluate(ds, s, metrics=("NDCG@2", "map", "ndcg@2", "mrr"), per_query=True)
    assert list(out.columns) == ["qid", "metric", "value"]
    assert list(out.metric.astype(str)) == ["ndcg@2"] * 2 + ["map"] * 2 + ["mrr"] * 2
    assert list(out.qid) == [17, 4] * 3
    np.testing.assert_allclose(out.value, [1 / L3, 1.0, 0.5, 1.0, 0.5, 1.0], atol=1e-15)
    flat = evaluate(y, s, ds.offsets, ("ndcg@2", "map", "mrr"))
    assert flat == evaluate(ds, s, metrics=("ndcg@2", "map", "mrr"))
    assert flat["map"] == pytest.approx(0.75)
    positions = evaluate(y, s, ds.offsets, "map", per_query=True)
    assert list(positions.qid) == [0, 1]
    assert evaluate(ds, s).keys() == {"ndcg@10", "map", "mrr@10"}


def test_parse_metric():
    assert parse_metric("ndcg@10") == ("ndcg", 10)
    assert parse_metric(" MAP ").name == "map"
    assert parse_metric("mrr@1").name == "mrr@1"
    assert parse_metric("ndcg").k is None


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda y, s, o: evaluate(y, s[:-1], o), "scores has 5 entries but y has 6"),
        (lambda y, s, o: ndcg(y, s[:, None], o), "scores must be 1-D"),
        (lambda y, s, o: evaluate(y, s, o[:-1]), "offsets must start at 0 and end at len"),
        (lambda y, s, o: evaluate(y, s, np.array([0, 4, 4, 6])), "strictly increasing"),
        (lambda y, s, o: evaluate(y, s, o.astype(float)), "offsets must be integers"),
        (lambda y, s, o: evaluate(y, s, o, ("ndcg@10", "precision@5")), "unknown metric 'precision@5'"),
        (lambda y, s, o: evaluate(y, s, o, "ndcg@0"), "k must be a positive integer"),
        (lambda y, s, o: evaluate(y, s, o, "map@-3"), "k must be a positive integer"),
        (lambda y, s, o: ndcg(y, s, o, k=0), "k must be a positive integer"),
        (lambda y, s, o: ndcg(y, s, o, k=2.5), "k must be a positive integer"),
        (lambda y, s, o: evaluate(y, np.where(s > 0.5, np.nan, s), o), r"scores contains 3 NaN values \(first at position 1\)"),
        (lambda y, s, o: evaluate(-y, s, o), "y must be non-negative"),
        (lambda y, s, o: evaluate(y, s, o, no_relevant="ignore"), "no_relevant must be one of"),
        (lambda y, s, o: evaluate(y, s, o, ()), "metrics is empty"),
        (lambda y, s, o: ndcg(y, s, o, ideal_dcg=[1.0]), r"ideal_dcg must have one value per query"),
        (lambda y, s, o: evaluate(y, s, o, ("ndcg@1", "ndcg@3"), ideal_dcg=np.ones(2)), "exactly one NDCG"),
        (lambda y, s, o: evaluate(y, s, o, ("ndcg@1",), ideal_dcg={"map": np.ones(2)}), "not an NDCG metric"),
        (lambda y, s, o: evaluate(y, s, o, per_query=True, query_ids=[1]), "query_ids must have one id"),
        (lambda y, s, o: evaluate(y, s), "offsets is required"),
    ],
)
def test_bad_input_gives_clear_errors(call, match):
    y = np.array([0, 1, 2, 0, 1, 1])
    s = np.array([0.1, 0.6, 0.3, 0.9, 0.2, 0.7])
    o = offsets_of(4, 2)
    with pytest.raises((ValueError, TypeError), match=match):
        call(y, s, o)


def test_labels_whose_gain_overflows_are_refused():
    # 2**1100 - 1 is inf: the query's ideal DCG was NaN, the query was dropped even under
    # no_relevant="one", and evaluate reported NDCG 1.0.
    y, s, o = [1100, 0, 2, 1, 0], [1, 2, 3, 1, 0], [0, 3, 5]
    for call in (lambda: evaluate(y, s, o), lambda: evaluate(y, s, o, "ndcg", no_relevant="one"),
                 lambda: ndcg(y, s, o, k=3), lambda: ideal_dcg(y, o)):
        with pytest.raises(ValueError, match=r"label 1100, too large for NDCG.*below 1024"):
            call()
    # Below 1024 the gain is finite, but two such gains in one query sum to inf.
    with pytest.raises(ValueError, match=r"label 1023: in query 0 \(3 documents\)"):
        evaluate([1023, 1023, 0, 1, 0], s, o)
    assert evaluate([1023, 0, 2, 1, 0], s, o)["ndcg@10"] == pytest.approx(0.75)
    # MAP and MRR use no gain: such labels are only thresholded there.
    assert evaluate(y, s, o, ("map", "mrr"))["map"] == pytest.approx(11 / 12)


def test_dataset_with_offsets_is_an_error():
    ds = Dataset(np.zeros((2, 1)), [0, 1], [0], offsets_of(2))
    with pytest.raises(TypeError, match="offsets come from the Dataset"):
        evaluate(ds, np.zeros(2), ("ndcg@1",))


# ============================================================================ references


def random_collection(seed, n_queries=300, tie_decimals=None):
    """Random labels 0-4 with varied list sizes, some queries with no relevant document."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 60, size=n_queries)
    sizes[:5] = [1, 1, 2, 59, 3]
    y = rng.choice(5, size=sizes.sum(), p=[0.55, 0.25, 0.1, 0.06, 0.04]).astype(np.int32)
    off = offsets_of(*sizes)
    for q in rng.choice(n_queries, size=25, replace=False):  # force no-relevant queries
        y[off[q]:off[q + 1]] = 0
    scores = rng.normal(size=y.size) + 0.4 * y
    if tie_decimals is not None:
        scores = np.round(scores, tie_decimals)
    return y, scores, off


def lightgbm_eval(y, scores, off, metric, eval_at):
    """LightGBM's own evaluation of arbitrary scores.

    A validation set with ``init_score=scores`` is evaluated on ``init_score + model``;
    one boosting round with learning rate 1e-300 adds nothing representable to O(1)
    scores (LightGBM refuses learning_rate=0), so the model output is the scores.
    """
    lgb = pytest.importorskip("lightgbm")
    sizes = np.diff(off)
    X = np.arange(y.size, dtype=np.float64)[:, None]
    train = lgb.Dataset(X, label=y, group=sizes)
    valid = lgb.Dataset(X, label=y, group=sizes, init_score=scores, reference=train)
    record = {}
    lgb.train(
        {"objective": "lambdarank", "metric": metric, "eval_at": list(eval_at),
         "learning_rate": 1e-300, "verbose": -1, "num_threads": 1},
        train, num_boost_round=1, valid_sets=[valid], valid_names=["valid"],
        callbacks=[lgb.record_evaluation(record)],
    )
    return {name: values[-1] for name, values in record["valid"].items()}


@pytest.mark.parametrize("tie_decimals", [None, 1])
def test_ndcg_matches_lightgbm(tie_decimals):
    # With tie_decimals=1 most scores tie: this checks our tie order is LightGBM's too.
    y, s, off = random_collection(11, tie_decimals=tie_decimals)
    if tie_decimals is not None:
        assert np.unique(s).size < s.size / 10
    ks = (1, 3, 5, 10)
    theirs = lightgbm_eval(y, s, off, "ndcg", ks)
    ours = evaluate(y, s, off, [f"ndcg@{k}" for k in ks])
    for k in ks:
        assert ours[f"ndcg@{k}"] == pytest.approx(theirs[f"ndcg@{k}"], abs=1e-9, rel=0)
    # ...and the convention matters: "zero" would be far off.
    zero = evaluate(y, s, off, "ndcg@10", no_relevant="zero")["ndcg@10"]
    assert abs(zero - theirs["ndcg@10"]) > 0.01


def test_map_matches_lightgbm_without_cutoff():
    # LightGBM's map@k divides by min(R, k); with k above every list length it is MAP.
    y, s, off = random_collection(12)
    theirs = lightgbm_eval(y, s, off, "map", (100,))
    assert evaluate(y, s, off, "map")["map"] == pytest.approx(theirs["map@100"], abs=1e-9, rel=0)


RANX_METRICS = {
    "ndcg@1": "ndcg_burges@1", "ndcg@3": "ndcg_burges@3", "ndcg@10": "ndcg_burges@10",
    "ndcg": "ndcg_burges", "map": "map", "map@5": "map@5", "mrr@10": "mrr@10", "mrr": "mrr",
}


def ranx_per_query(y, s, off):
    """ranx per-query values, queries in our order (ids zero-padded so they sort alike)."""
    try:  # not pytest.importorskip: ranx's own numba threading layer would abort threaded tests
        ranx = import_ranx()
    except ImportError:
        pytest.skip("ranx is not installed")
    qrels, run = {}, {}
    for q in range(off.size - 1):  # building a reference fixture, not a hot path
        qid = f"q{q:05d}"
        rows = range(off[q], off[q + 1])
        run[qid] = {f"d{i}": float(s[i]) for i in rows}
        # Qrels hold relevant documents only; a label-0 placeholder keeps a query with
        # none in ranx's query set (ranx then scores it 0).
        qrels[qid] = {f"d{i}": int(y[i]) for i in rows if y[i] > 0} or {"none": 0}
    out = ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), list(RANX_METRICS.values()),
                        return_mean=False)
    return {ours: np.asarray(out[theirs]) for ours, theirs in RANX_METRICS.items()}


def test_matches_ranx_per_query():
    y, s, off = random_collection(13)
    theirs = ranx_per_query(y, s, off)
    has_rel = np.add.reduceat(y > 0, off[:-1]) > 0
    assert 0 < np.count_nonzero(~has_rel) < has_rel.size
    zero = evaluate(y, s, off, list(RANX_METRICS), no_relevant="zero", per_query=True)
    excl = evaluate(y, s, off, list(RANX_METRICS), no_relevant="exclude")
    for metric, values in theirs.items():
        ours = zero[zero.metric == metric].value.to_numpy()
        np.testing.assert_allclose(ours, values, atol=1e-9, rtol=0, err_msg=metric)
        assert excl[metric] == pytest.approx(values[has_rel].mean(), abs=1e-9, rel=0)


def test_shallow_cutoffs_select_the_stable_sorts_top_ranks():
    """NDCG@10 of a long list selects its top ranks by insertion: the same documents in the
    same order as the stable sort of the whole list, ties (and -0.0 against 0.0) included."""
    from ltrlib.metrics.ranking import _SELECT_DEPTH, _ranked

    rng = np.random.default_rng(0)
    for trial in range(2000):
        n, depth = int(rng.integers(1, 120)), int(rng.integers(1, _SELECT_DEPTH + 1))
        scores = rng.integers(-3, 4, n).astype(float) if trial % 2 else rng.normal(size=n)
        scores[rng.random(n) < 0.2 * (trial % 3 == 0)] = -0.0
        top = min(depth, n)
        np.testing.assert_array_equal(_ranked(scores, 0, n, depth)[:top],
                                      np.argsort(-scores, kind="mergesort")[:top])
