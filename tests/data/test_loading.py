import numpy as np
import pytest

from ltrlib import config
from ltrlib.data import load_dataset, overview
from ltrlib.data.loading import locate_dataset
from ltrlib.data.readers import read_letor
from ltrlib.data.svmlight.write import write_svmlight


def test_synthetic_by_name():
    s = load_dataset("synthetic", scale="tiny", seed=0)
    assert s.train.n_queries == 150 and s.vali.n_queries == 50 and s.test.n_queries == 50
    with pytest.raises(ValueError, match="synthetic"):
        load_dataset("synthetic", scale="tiny", category_feature="f3")


def test_unknown_dataset_names_where_it_looked(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope"):
        load_dataset("nope", data_dir=tmp_path)


def test_lightgbm_rank_example_gets_a_validation_part():
    if not config.SHARED_LIGHTGBM_RANK.exists():
        pytest.skip(f"shared example data not found at {config.SHARED_LIGHTGBM_RANK}")
    s = load_dataset("lightgbm-rank", seed=0)
    assert s.train.n_queries + s.vali.n_queries == 201 and s.test.n_queries == 50
    assert s.vali.meta["vali_from_train"] == 0.2
    assert s.train.n_features == 300


def test_user_folder_with_quantile_categories(tmp_path):
    tiny = load_dataset("synthetic", scale="tiny", seed=0)
    folder = tmp_path / "coll"
    folder.mkdir()
    for part, fname in ((tiny.train, "train.txt"), (tiny.vali, "vali.txt"), (tiny.test, "test.txt")):
        write_svmlight(part, folder / fname)
    s = load_dataset("coll", data_dir=tmp_path, category_feature="f1", category_bins=4,
                     cache_dir=tmp_path / "cache")
    assert s.train.n_queries == 150
    assert set(np.unique(s.train.category)) == {0, 1, 2, 3}
    # the category feature itself, by its file index
    s2 = load_dataset(str(folder), category_feature=220, cache_dir=tmp_path / "cache")
    np.testing.assert_array_equal(s2.train.category, tiny.train.category)


def test_overview_tables():
    s = load_dataset("synthetic", scale="tiny", seed=0)
    st = overview.split_statistics(s)
    assert st.queries.tolist() == [150, 50, 50]
    labels = overview.label_distribution(s)
    assert np.allclose(labels.groupby("split").share.sum(), 1.0)
    cats = overview.category_distribution(s)
    assert set(cats[cats.split == "train"].nlargest(2, "share_relevant").category) == {11, 14}
    sp = overview.feature_sparsity(s.train)
    assert len(sp) == 220 and {"binary", "sparse", "continuous"} <= set(sp.kind)
    assert overview.most_label_correlated(s.train) in s.train.feature_names


def test_read_letor_roundtrip_of_synthetic(tmp_path):
    tiny = load_dataset("synthetic", scale="tiny", seed=0).test
    write_svmlight(tiny, tmp_path / "t.txt")
    back = read_letor(tmp_path / "t.txt", cache=False, n_features=220)
    np.testing.assert_array_equal(back.y, tiny.y)
    np.testing.assert_array_equal(back.query_ids, tiny.query_ids)
    np.testing.assert_allclose(back.X, tiny.X, rtol=1e-6)


def test_quantile_bins_that_collapse_are_reported(recwarn):
    if not config.SHARED_LIGHTGBM_RANK.exists():
        pytest.skip(f"shared example data not found at {config.SHARED_LIGHTGBM_RANK}")
    with pytest.warns(UserWarning, match=r"10 quantile bins of f10 gave (\d) categories"):
        s = load_dataset("lightgbm-rank", seed=0, category_feature="f10", category_bins=10)
    assert np.unique(s.train.category).size < 10


def test_a_single_valued_category_feature_is_refused(tmp_path):
    folder = tmp_path / "flat"
    folder.mkdir()
    lines = [f"{y} qid:{q} 1:{q} 2:0.5 3:{d}" for q in (1, 2) for d, y in enumerate((1, 0, 0))]
    for name in ("train.txt", "vali.txt", "test.txt"):
        (folder / name).write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=r"train.txt: the category feature f2 has a single value \(0.5\)"):
        load_dataset("flat", data_dir=tmp_path, category_feature="f2", cache_dir=tmp_path / "cache")
    with pytest.raises(ValueError, match="the category feature f2 has a single value"):
        load_dataset("flat", data_dir=tmp_path, category_feature="f2", category_bins=3,
                     cache_dir=tmp_path / "cache")


def test_locate_dataset_resolves_without_reading(tmp_path):
    # What `ltrlib run` checks before it starts anything (see tests/test_runner.py).
    import gzip

    assert locate_dataset("synthetic").kind == "synthetic"
    coll = tmp_path / "MSLR" / "Fold1"
    coll.mkdir(parents=True)
    (coll / "train.txt").write_text("1 qid:1 1:1\n")
    src = locate_dataset("MSLR", data_dir=tmp_path)
    assert (src.kind, src.path, src.fold, src.files[0]) == ("folder", tmp_path / "MSLR", 1, "train.txt")
    (tmp_path / "f.txt").write_text("1 1:1\n")
    assert locate_dataset(str(tmp_path / "f.txt")).kind == "letor"
    (tmp_path / "f.txt.query").write_text("1\n")
    assert locate_dataset(str(tmp_path / "f.txt")).kind == "lightgbm"

    with pytest.raises(FileNotFoundError, match="does not exist"):
        locate_dataset(str(tmp_path / "none"))
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.md").write_text("")
    with pytest.raises(FileNotFoundError, match=r"not a LETOR collection: no .*other.train\.txt.*holds \['notes.md'\]"):
        locate_dataset(str(tmp_path / "other"))
    (tmp_path / "z.txt").write_bytes(gzip.compress(b"1 qid:1 1:1\n"))
    with pytest.raises(ValueError, match="gzip-compressed"):
        locate_dataset(str(tmp_path / "z.txt"))
