"""A Ranker reuses the scores of queries it has already scored, and only those."""

import numpy as np
import pytest

from ltrlib.data.dataset import Dataset
from ltrlib.train import train_ranker


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    sizes = rng.integers(5, 15, size=60)
    n = int(sizes.sum())
    X = rng.normal(size=(n, 6)).astype(np.float32)
    y = np.clip((X[:, 0] + rng.normal(scale=0.5, size=n)).round(), 0, 3).astype(np.int64)
    ds = Dataset(X=X, y=y, query_ids=np.arange(60), offsets=np.concatenate([[0], np.cumsum(sizes)]))
    ranker = train_ranker(ds.take(range(40)), ds.take(range(40, 50)), max_trees=20,
                          early_stopping=5, seed=0)
    return ds, ranker


def test_subsets_and_reorders_score_as_a_fresh_prediction(data):
    ds, ranker = data
    test = ds.take(range(50, 60))
    full = ranker.score(test)
    np.testing.assert_array_equal(full, ranker._predict_rows(test.X))
    # a subset in another order reuses the stored queries and matches a fresh prediction
    part = test.take([7, 2, 5])
    np.testing.assert_array_equal(ranker.score(part), ranker._predict_rows(part.X))
    # the same query ids with reordered documents are scored afresh, not served stale
    rows = np.concatenate([np.arange(a, b)[::-1] for a, b in zip(test.offsets[:-1], test.offsets[1:])])
    flipped = Dataset(X=test.X[rows], y=test.y[rows], query_ids=test.query_ids, offsets=test.offsets)
    np.testing.assert_array_equal(ranker.score(flipped), full[rows])


def test_a_query_is_predicted_once(data, monkeypatch):
    ds, ranker = data
    ranker._query_scores.clear()  # the module's ranker may have scored these queries
    seen = []
    original = ranker._predict_rows
    monkeypatch.setattr(ranker, "_predict_rows", lambda X: seen.append(len(X)) or original(X))
    test = ds.take(range(50, 60))
    ranker.score(test.take([0, 1]))
    ranker.score(test)
    ranker.score(test.take([3]))
    assert seen == [int(test.group_sizes[:2].sum()), int(test.group_sizes[2:].sum())]


def test_an_empty_part_gets_no_scores(data):
    ds, ranker = data
    assert ranker.score(ds.take([])).shape == (0,)
