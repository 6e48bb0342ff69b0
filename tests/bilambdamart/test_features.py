"""Listwise feature expansion on hand-built queries."""

import numpy as np
import pytest

from ltrlib.bilambdamart.features import expand_listwise, expanded_names


def test_expansion_of_a_hand_built_query():
    # Query 0: four documents, two features (the second plays the stage-1 score).
    # Query 1: two documents with a constant first feature.
    X = np.array([[1, 5], [3, 5], [3, 2], [5, 0],
                  [7, 1], [7, 3]], dtype=np.float32)
    out = expand_listwise(X, [0, 4, 6])
    assert out.shape == (6, 10) and out.dtype == np.float32
    base, mean, std, rank, z = np.split(out, 5, axis=1)
    np.testing.assert_array_equal(base, X)
    np.testing.assert_allclose(mean[:4], [[3, 3]] * 4)
    np.testing.assert_allclose(std[:4, 0], np.sqrt(2.0))  # population sd of 1, 3, 3, 5
    np.testing.assert_allclose(std[:4, 1], np.sqrt(4.5))  # of 5, 5, 2, 0
    # Rank 1 = largest; ties share the best rank.
    np.testing.assert_array_equal(rank[:4, 0], [4, 2, 2, 1])
    np.testing.assert_array_equal(rank[:4, 1], [1, 1, 3, 4])
    np.testing.assert_allclose(z[:4, 0], (X[:4, 0] - 3) / np.sqrt(2.0), rtol=1e-6)
    # The second query is independent of the first; a constant feature has std 0, z 0.
    np.testing.assert_allclose(mean[4:], [[7, 2], [7, 2]])
    np.testing.assert_array_equal(std[4:, 0], [0, 0])
    np.testing.assert_array_equal(z[4:, 0], [0, 0])
    np.testing.assert_array_equal(rank[4:], [[1, 2], [1, 1]])
    np.testing.assert_allclose(z[4:, 1], [-1, 1])


def test_expansion_is_order_invariant_within_a_query():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(9, 3)).round(1)
    perm = rng.permutation(9)
    np.testing.assert_array_equal(expand_listwise(X, [0, 9])[perm], expand_listwise(X[perm], [0, 9]))


def test_names_and_errors():
    assert expanded_names(["a", "s"]) == ("a", "s", "a_mean", "s_mean", "a_std", "s_std",
                                          "a_rank", "s_rank", "a_z", "s_z")
    with pytest.raises(ValueError, match="offsets"):
        expand_listwise(np.zeros((3, 2)), [0, 2])
    with pytest.raises(ValueError, match="NaN"):
        expand_listwise(np.array([[np.nan], [1.0]]), [0, 2])
