"""The twin written in the public collections' layouts reads back through the real-data path."""

import numpy as np
import pytest

from ltrlib.data import load_dataset
from ltrlib.data.formats import write_layout


@pytest.fixture(scope="module")
def tiny():
    return load_dataset("synthetic", scale="tiny", seed=0)


def test_mslr_folds_rotate_five_parts_and_read_back_with_binned_categories(tiny, tmp_path):
    write_layout(tiny, tmp_path / "MSLR-WEB10K", "mslr")
    assert sorted(p.name for p in (tmp_path / "MSLR-WEB10K").iterdir()) == [f"Fold{k}" for k in range(1, 6)]
    total = tiny.train.n_queries + tiny.vali.n_queries + tiny.test.n_queries
    tests = []
    for k in range(1, 6):
        s = load_dataset("MSLR-WEB10K", data_dir=tmp_path, fold=k, category_feature="f130",
                         category_bins=10, cache_dir=tmp_path / "cache")
        assert s.train.n_features == 136 and s.train.feature_names[129] == "f130"
        assert s.train.n_queries + s.vali.n_queries + s.test.n_queries == total
        assert set(np.unique(s.train.y)) <= {0, 1, 2, 3, 4}
        assert np.unique(s.train.category).size == 10
        tests.append(set(s.test.query_ids.tolist()))
    # A folder of folds given as the dataset, as the README's MSLR command does, reads Fold1.
    first = load_dataset(str(tmp_path / "MSLR-WEB10K"), cache_dir=tmp_path / "cache")
    assert first.train.name.startswith("Fold1/") and set(first.test.query_ids.tolist()) == tests[0]
    # every query is tested in exactly one fold
    assert sum(len(t) for t in tests) == total and len(set().union(*tests)) == total
    # the features are the twin's first 136 columns, with its authority score as f130
    q = tiny.train.query_ids[0]
    fold = next(k for k, t in enumerate(tests, start=1) if q in t)
    s = load_dataset("MSLR-WEB10K", data_dir=tmp_path, fold=fold, cache_dir=tmp_path / "cache")
    twin = tiny.train.subset([q]).X
    np.testing.assert_array_equal(s.test.subset([q]).X, np.c_[twin[:, :129], twin[:, 210], twin[:, 130:136]])


def test_istella_layout_keeps_the_category_at_f220(tiny, tmp_path):
    write_layout(tiny, tmp_path / "istella-s", "istella")
    s = load_dataset("istella-s", data_dir=tmp_path, category_feature="f220", cache_dir=tmp_path / "cache")
    assert s.train.n_features == 220
    np.testing.assert_array_equal(s.train.category, tiny.train.category)
    np.testing.assert_array_equal(s.test.y, tiny.test.y)


def test_yahoo_layout_spreads_the_features_over_700_indices(tiny, tmp_path):
    folder = write_layout(tiny, tmp_path / "yahoo", "yahoo")
    assert sorted(p.name for p in folder.iterdir()) == ["set1.test.txt", "set1.train.txt", "set1.valid.txt"]
    from ltrlib.data.readers import read_letor

    train = read_letor(folder / "set1.train.txt", n_features=700, cache=False)
    # Given as a dataset folder, Yahoo's set1.{train,valid,test}.txt are found by their names.
    s = load_dataset(str(folder), cache_dir=tmp_path / "cache")
    assert (s.train.n_queries, s.vali.n_queries, s.test.n_queries) == (
        tiny.train.n_queries, tiny.vali.n_queries, tiny.test.n_queries)
    assert train.n_features == 700 and train.n_queries == tiny.train.n_queries
    np.testing.assert_array_equal(train.X[:, 3 * np.arange(220)], tiny.train.X)
    assert not train.X[:, 1::3].any()
    with pytest.raises(ValueError, match="layout 'letor' unknown"):
        write_layout(tiny, tmp_path / "x", "letor")


def test_the_command_line_writes_a_layout_and_names_an_unknown_one(tmp_path, capsys):
    from ltrlib.cli import main

    assert main(["formats", "yahoo", str(tmp_path / "y"), "--scale", "tiny", "--seed", "1"]) == 0
    assert sorted(p.name for p in (tmp_path / "y").iterdir()) == ["set1.test.txt", "set1.train.txt", "set1.valid.txt"]
    assert main(["formats", "letor4", str(tmp_path / "z")]) == 1
    assert "layout 'letor4' unknown; choose from istella, mslr, yahoo" in capsys.readouterr().err
    assert not (tmp_path / "z").exists()  # refused before anything was written
