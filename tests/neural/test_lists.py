import numpy as np
import pytest

from ltrlib.neural.lists import pad_lists


def test_pad_lists_round_trips_and_orders_each_list_by_the_column():
    X = np.array([[0, 1], [1, 3], [2, 2], [3, 5], [4, 4]], dtype=np.float32)
    lists = pad_lists(X, np.array([0, 3, 5]), y=np.array([1, 2, 0, 4, 3]), list_size=4, order_by=1)
    assert lists.X.shape == (2, 4, 2) and lists.mask.sum() == 5
    assert lists.rows.tolist() == [[1, 2, 0, -1], [3, 4, -1, -1]]  # descending on column 1
    assert lists.y[0].tolist() == [2, 0, 1, 0]
    assert not lists.X[1, 2:].any()  # padded slots hold zeros
    np.testing.assert_array_equal(lists.to_flat(lists.X[..., 0]), X[:, 0])


def test_pad_lists_keeps_row_order_without_a_column_and_refuses_bad_shapes():
    lists = pad_lists(np.arange(6, dtype=np.float32)[:, None], np.array([0, 2, 6]))
    assert lists.rows.tolist() == [[0, 1, -1, -1], [2, 3, 4, 5]]
    with pytest.raises(ValueError, match="list_size = 3 is shorter"):
        pad_lists(np.zeros((6, 1)), np.array([0, 2, 6]), list_size=3)
    with pytest.raises(ValueError, match="offsets must run from 0 to the 6 rows"):
        pad_lists(np.zeros((6, 1)), np.array([0, 2, 5]))
    with pytest.raises(ValueError, match="order_by = 4 is not a column"):
        pad_lists(np.zeros((6, 1)), np.array([0, 6]), order_by=4)
