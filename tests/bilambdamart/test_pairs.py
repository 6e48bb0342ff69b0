"""Ordered-pair construction over flat arrays and the chunked pair rows."""

import numpy as np
import pytest

from ltrlib.bilambdamart.pairs import PairSequence, pair_feature_names, pair_index, pair_rows


def test_pair_index_enumerates_ordered_pairs_per_query():
    pairs = pair_index([0, 3, 4, 6])  # queries of 3, 1 and 2 documents
    np.testing.assert_array_equal(pairs.pair_offsets, [0, 6, 6, 8])
    got = list(zip(pairs.left.tolist(), pairs.right.tolist()))
    assert got == [(0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1), (4, 5), (5, 4)]


def test_pair_rows_layout_and_ablation():
    X = np.arange(12, dtype=np.float32).reshape(3, 4)  # 3 documents, 4 features
    rows = pair_rows(X, [0, 2], [1, 0], n_diff=2)
    assert rows.shape == (2, 10) and rows.dtype == np.float32
    np.testing.assert_array_equal(rows[0], np.r_[X[0], X[1], X[0, :2] - X[1, :2]])
    np.testing.assert_array_equal(rows[1], np.r_[X[2], X[0], X[2, :2] - X[0, :2]])
    no_diff = pair_rows(X, [0, 2], [1, 0], n_diff=2, difference=False)
    np.testing.assert_array_equal(no_diff, rows[:, :8])
    assert pair_feature_names(["a", "b", "c"], 2) == ("i_a", "i_b", "i_c", "j_a", "j_b", "j_c",
                                                      "d_a", "d_b")
    with pytest.raises(ValueError, match="n_diff"):
        pair_rows(X, [0], [1], n_diff=5)


def test_pair_sequence_agrees_with_pair_rows():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(7, 3)).astype(np.float32)
    pairs = pair_index([0, 4, 7])
    seq = PairSequence(X, pairs, n_diff=2, batch_size=5)
    full = pair_rows(X, pairs.left, pairs.right, 2)
    assert len(seq) == pairs.n_pairs == 18
    np.testing.assert_array_equal(seq[3:11], full[3:11])
    np.testing.assert_array_equal(seq[[0, 17, 5]], full[[0, 17, 5]])
    one = seq[9]
    assert one.dtype == np.float64  # LightGBM's bin sampling wants float64 rows
    np.testing.assert_array_equal(one, full[9].astype(np.float64))
    with pytest.raises(TypeError, match="index"):
        seq["a"]


def test_query_level_columns_enter_a_pair_once():
    X = np.arange(12, dtype=np.float32).reshape(3, 4)
    rows = pair_rows(X, [0, 2], [1, 0], n_diff=2, query_level=(1, 3))
    assert rows.shape == (2, 4 + 2 + 2)
    np.testing.assert_array_equal(rows[1], np.r_[X[2], X[0, [0, 2]], X[2, :2] - X[0, :2]])
    assert pair_feature_names(["a", "b", "c", "d"], 2, query_level=(1, 3)) == (
        "i_a", "i_b", "i_c", "i_d", "j_a", "j_c", "d_a", "d_b")
    pairs = pair_index([0, 3])
    seq = PairSequence(X, pairs, n_diff=2, batch_size=4, query_level=(1, 3))
    full = pair_rows(X, pairs.left, pairs.right, 2, query_level=(1, 3))
    np.testing.assert_array_equal(seq[1:5], full[1:5])
    np.testing.assert_array_equal(seq[5], full[5].astype(np.float64))
    with pytest.raises(ValueError, match="query_level"):
        pair_rows(X, [0], [1], n_diff=2, query_level=(4,))
