"""One catalogue of collections: the reader, the layout writer and the ledger all read it,
so a collection added to it is found, written and declared with no other change."""

import numpy as np
import pytest

from ltrlib.data import load_dataset
from ltrlib.data.catalogue import COLLECTIONS, Collection, in_layout, layouts
from ltrlib.data.formats import write_layout
from ltrlib.data.loading import dataset_folds, locate_dataset
from ltrlib.fidelity.datasets import check_declaration, paper_dataset, paper_datasets


@pytest.fixture(scope="module")
def tiny():
    return load_dataset("synthetic", scale="tiny", seed=0)


def test_the_catalogue_holds_what_the_three_modules_held():
    # The layouts `ltrlib formats` wrote and the papers' datasets, as they were declared
    # before the catalogue took them in.
    assert {layout: in_layout(layout).width for layout in layouts()} == {"mslr": 136, "istella": 220, "yahoo": 700}
    assert {k: ((c.fewest_features, c.width), c.queries, c.papers) for k, c in paper_datasets().items()} == {
        "istella-s": ((220, 220), (19245, 7211, 6562), ("noniid",)),
        "mslr-web10k": ((136, 136), (6000, 2000, 2000), ("bilambdamart", "foltr")),
        "mslr-web30k": ((136, 136), (18919, 6306, 6306), ("bilambdamart",)),
        "yahoo-ltrc": ((500, 700), (19944, 2944, 6983), ("bilambdamart",)),
    }
    for key in paper_datasets():
        assert paper_dataset(key) is COLLECTIONS[key]
    # Collections sharing a layout ship alike, or the writer could not stand for them all.
    for c in COLLECTIONS.values():
        first = in_layout(c.layout)
        assert (c.files, c.folds, c.width, c.index_base) == (first.files, first.folds, first.width, first.index_base)


@pytest.mark.parametrize("key", sorted(paper_datasets()))
def test_the_twin_in_a_collections_layout_reads_as_that_collection(key, tiny, tmp_path):
    collection = COLLECTIONS[key]
    folder = write_layout(tiny, tmp_path / key, collection.layout)
    where = folder / "Fold1" if collection.folds else folder
    assert sorted(p.name for p in where.iterdir()) == sorted(collection.files)
    assert dataset_folds(str(folder)) == list(range(1, collection.folds + 1))
    s = load_dataset(str(folder), cache_dir=tmp_path / "cache")
    assert s.train.meta["index_base"] == collection.index_base
    queries = (s.train.n_queries, s.vali.n_queries, s.test.n_queries)
    declaration = check_declaration(key, s.train.n_features, queries)  # the ledger accepts it as the collection
    assert declaration.dataset is collection and not declaration.whole


TOY_FOLDS = Collection("toy-folds", "Toy, three folds", "toyfolds", ("part.train", "part.vali", "part.test"),
                       3, 220, 220, 1, "f220", (30, 10, 10), ("noniid",))
TOY_FLAT = Collection("toy-flat", "Toy, zero-based", "toyflat", ("a.learn", "a.tune", "a.eval"),
                      0, 220, 220, 0, None, (1, 1, 1), ())


def test_a_collection_added_to_the_catalogue_is_written_read_and_declared(tiny, tmp_path, monkeypatch):
    monkeypatch.setitem(COLLECTIONS, TOY_FOLDS.key, TOY_FOLDS)
    monkeypatch.setitem(COLLECTIONS, TOY_FLAT.key, TOY_FLAT)
    assert {"toyfolds", "toyflat"} <= set(layouts())
    total = tiny.train.n_queries + tiny.vali.n_queries + tiny.test.n_queries

    # The writer: its folds, each holding its files; every query tested in one fold.
    folds = write_layout(tiny, tmp_path / "toy-folds", "toyfolds")
    assert sorted(p.name for p in folds.iterdir()) == ["Fold1", "Fold2", "Fold3"]
    assert sorted(p.name for p in (folds / "Fold2").iterdir()) == ["part.test", "part.train", "part.vali"]
    # The reader: the folder of folds is found by the record's files and reads Fold1.
    assert dataset_folds(str(folds)) == [1, 2, 3]
    assert locate_dataset(str(folds)).files == TOY_FOLDS.files
    tested = []
    for k in (1, 2, 3):
        s = load_dataset(str(folds), fold=k, category_feature=TOY_FOLDS.category_feature, cache_dir=tmp_path / "c")
        assert s.train.n_features == 220 and s.train.name.startswith(f"Fold{k}/")
        assert s.train.n_queries + s.vali.n_queries + s.test.n_queries == total
        tested.append(set(s.test.query_ids.tolist()))
    assert len(set().union(*tested)) == total == sum(map(len, tested))

    # A flat, zero-based collection: written from index 0, and read back as it was.
    flat = write_layout(tiny, tmp_path / "toy-flat", "toyflat")
    assert sorted(p.name for p in flat.iterdir()) == ["a.eval", "a.learn", "a.tune"]
    s = load_dataset(str(flat), cache_dir=tmp_path / "c")
    assert s.train.meta["index_base"] == 0 and s.train.n_features == 220
    np.testing.assert_array_equal(s.test.X, tiny.test.X)

    # The ledger: a record with papers is a paper dataset; one without is not.
    assert check_declaration("toy-folds", 220, (30, 10, 10)).whole
    with pytest.raises(ValueError, match="is not one of the papers' datasets: .*toy-folds$"):
        paper_dataset("toy-flat")

    # A folder holding none of the collections' files is refused naming the record's too.
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match=r"Toyfolds's part\.train, part\.vali, part\.test, "
                                                r"Toyflat's a\.learn, a\.tune, a\.eval, or Fold1\.\.Fold5"):
        locate_dataset(str(tmp_path / "empty"))
