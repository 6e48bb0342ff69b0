import numpy as np
import pytest

from ltrlib.data import Dataset, Splits, concat


@pytest.fixture
def ds():
    rng = np.random.default_rng(0)
    sizes = np.array([3, 1, 4, 2])
    n = sizes.sum()
    return Dataset(
        X=rng.random((n, 3)),
        y=np.array([0, 1, 2, 0, 0, 0, 3, 1, 0, 0]),
        query_ids=[10, 20, 30, 40],
        offsets=np.concatenate([[0], np.cumsum(sizes)]),
        category=np.array([1, 1, 2, 3, 2, 2, 2, 1, 3, 3]),
        name="toy",
    )


def test_types_and_shape(ds):
    assert ds.X.dtype == np.float32 and ds.y.dtype == np.int32
    assert (ds.n_queries, ds.n_docs, ds.n_features) == (4, 10, 3)
    np.testing.assert_array_equal(ds.group_sizes, [3, 1, 4, 2])
    np.testing.assert_array_equal(ds.qid, [10, 10, 10, 20, 30, 30, 30, 30, 40, 40])
    assert ds.feature_names == ("f0", "f1", "f2")


def test_stats_and_query_frame(ds):
    assert ds.stats() == {"queries": 4, "relevant_documents": 4, "query_document_pairs": 10}
    qf = ds.query_frame()
    assert qf.n_relevant.tolist() == [2, 0, 2, 0]
    assert qf.max_label.tolist() == [2, 0, 3, 0]


def test_subset_keeps_dataset_order_and_rows(ds):
    sub = ds.subset([40, 10])
    np.testing.assert_array_equal(sub.query_ids, [10, 40])
    np.testing.assert_array_equal(sub.offsets, [0, 3, 5])
    np.testing.assert_array_equal(sub.X, ds.X[[0, 1, 2, 8, 9]])
    np.testing.assert_array_equal(sub.category, [1, 1, 2, 3, 3])
    with pytest.raises(KeyError, match="99"):
        ds.subset([10, 99])


def test_take_follows_given_order(ds):
    t = ds.take([2, 0])
    np.testing.assert_array_equal(t.query_ids, [30, 10])
    np.testing.assert_array_equal(t.y, [0, 0, 3, 1, 0, 1, 2])


def test_iteration_yields_views(ds):
    qs = list(ds)
    assert [q.qid for q in qs] == [10, 20, 30, 40]
    assert qs[2].X.base is not None  # a view, no copy
    np.testing.assert_array_equal(qs[2].y, [0, 0, 3, 1])


def test_split_and_kfold_partition_queries(ds):
    a, b = ds.split((0.5, 0.5), seed=1)
    assert sorted(np.concatenate([a.query_ids, b.query_ids])) == [10, 20, 30, 40]
    again = ds.split((0.5, 0.5), seed=1)
    np.testing.assert_array_equal(a.query_ids, again[0].query_ids)
    seen = []
    for train, test in ds.kfold(2, seed=0):
        assert not set(train.query_ids) & set(test.query_ids)
        seen.extend(test.query_ids)
    assert sorted(seen) == [10, 20, 30, 40]
    with pytest.raises(ValueError, match="fractions"):
        ds.split((0.5, 0.6))
    with pytest.raises(ValueError, match="k must be"):
        next(ds.kfold(9))


def test_sample_queries_is_seeded_sorted_and_keeps_all_when_asked_for_all(ds):
    a = ds.sample_queries(2, seed=3)
    # The draw every "train on n queries" site made before it moved here.
    pick = np.sort(np.random.default_rng(3).choice(4, size=2, replace=False))
    np.testing.assert_array_equal(a.query_ids, ds.query_ids[pick])
    np.testing.assert_array_equal(a.y, ds.take(pick).y)
    assert a.name == "toy" and ds.sample_queries(2, seed=3, name="s").name == "s"
    np.testing.assert_array_equal(ds.sample_queries(2, seed=3).query_ids, a.query_ids)
    assert np.all(np.diff(a.query_ids) > 0)                # kept in dataset order
    assert {tuple(ds.sample_queries(2, seed=s).query_ids) for s in range(20)} != {tuple(a.query_ids)}
    # 0 and more than there are: every query, the dataset itself (renamed if asked).
    assert ds.sample_queries(0) is ds and ds.sample_queries(4) is ds and ds.sample_queries(99) is ds
    renamed = ds.sample_queries(99, name="all")
    assert renamed.name == "all" and renamed.X is ds.X and ds.name == "toy"
    for bad in (-1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="'toy'.*sample_queries.*n="):
            ds.sample_queries(bad)


def test_categories_from_features(ds):
    X = np.array(ds.X)
    X[:, 1] = [5, 5, 5, 6, 6, 6, 7, 7, 7, 7]
    d2 = Dataset(X, ds.y, ds.query_ids, ds.offsets, ("a", "b", "c"))
    np.testing.assert_array_equal(d2.with_category_from_feature("b").category, X[:, 1])
    with pytest.raises(ValueError, match="non-integer"):
        d2.with_category_from_feature(0)
    with pytest.raises(IndexError, match="column 7 does not exist"):
        d2.with_category_from_feature(7)
    binned = d2.with_category_from_quantiles("a", n_bins=2).category
    assert set(binned) == {0, 1} and np.bincount(binned).min() >= 4


def test_invalid_construction_is_named():
    with pytest.raises(ValueError, match="offsets"):
        Dataset(np.zeros((3, 2)), [0, 0, 0], [1], [0, 2])
    with pytest.raises(ValueError, match="unique"):
        Dataset(np.zeros((3, 2)), [0, 0, 0], [1, 1], [0, 1, 3])
    with pytest.raises(ValueError, match="labels must be integers"):
        Dataset(np.zeros((2, 2)), [0.5, 1], [1], [0, 2])


def test_concat_and_lightgbm(ds):
    a, b = ds.take([0, 1]), ds.take([2, 3])
    c = concat([a, b])
    np.testing.assert_array_equal(c.X, ds.X)
    np.testing.assert_array_equal(c.offsets, ds.offsets)
    X, y, group = ds.lightgbm_inputs()
    assert group.sum() == X.shape[0] == y.size
    lgb_ds = ds.to_lightgbm().construct()
    assert lgb_ds.num_data() == 10
    np.testing.assert_array_equal(np.diff(lgb_ds.get_field("group")), [3, 1, 4, 2])


def test_splits_items(ds):
    s = Splits(ds, None, ds)
    assert [k for k, _ in s.items()] == ["train", "test"]
