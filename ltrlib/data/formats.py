"""The synthetic twin written in the file layouts of the public LETOR collections.

The real collections cannot be downloaded here, but their *format* can be reproduced: these
writers put a synthetic collection on disk exactly as MSLR-WEB10K/30K, Istella-S and Yahoo
LTRC ship, so the real-data path (reader, cache, category binning, every notebook) is tested
end to end with the commands a user of that collection runs (README, "Your own data").

* ``"mslr"``: ``Fold1``-``Fold5``, each with ``train.txt``, ``vali.txt``, ``test.txt``; 136
  features, one-based; the queries are cut into five parts S1-S5 and fold k trains on three,
  validates on the next and tests on the last, rotating as MSLR does. The twin's first 136
  columns are the features, except f130: MSLR has no category feature and users bin its
  PageRank, f130, so the twin's dense authority score (f211) is put there.
* ``"istella"``: ``train.txt``, ``vali.txt``, ``test.txt``; 220 features, one-based, the
  category at f220 as in Istella-S.
* ``"yahoo"``: ``set1.train.txt``, ``set1.valid.txt``, ``set1.test.txt``; the twin's 220
  features spread over Yahoo's 700 indices (feature c at index 3c + 1, the rest absent, as
  Yahoo's sparse files leave most of their 700 features out).

Labels are the twin's 0-4 grades in every layout. Files are written atomically. A layout's
file names, folds, width and index base are its collection's (`ltrlib.data.catalogue`); this
module says only where the twin's columns go in it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ltrlib.data.catalogue import Collection, fold_folder, in_layout, layouts
from ltrlib.data.dataset import Dataset, Splits, concat
from ltrlib.data.svmlight.write import write_svmlight
from ltrlib.data.synthetic import N_FEATURES

__all__ = ["write_layout"]


def _columns(ds: Dataset, source: np.ndarray, target: np.ndarray, width: int, name: str) -> Dataset:
    """A ``width``-wide copy of ``ds`` with its columns ``source`` at columns ``target``
    (zeros elsewhere, which the writer leaves out as the sparse files do)."""
    X = np.zeros((ds.n_docs, width), dtype=np.float32)
    X[:, target] = ds.X[:, source]
    return Dataset(X=X, y=ds.y, query_ids=ds.query_ids, offsets=ds.offsets, name=name)


# Where the twin's columns go in a layout: (twin columns, the layout's columns). MSLR's f130
# (PageRank) is a dense, heavy-tailed document score that users bin into categories; the
# twin's f130 is a sparse match feature, so its authority score (f211, a per-query level
# plus noise) takes that place, the first 136 columns otherwise in order. Yahoo's sparse
# files leave most of their 700 features out, so the twin's spread over them. A layout not
# named here takes the twin's first columns in order.
_PLACEMENTS = {
    "mslr": (np.r_[0:129, 210, 130:136], np.arange(136)),
    "yahoo": (np.arange(N_FEATURES), 3 * np.arange(N_FEATURES)),
}


def _placement(collection: Collection) -> tuple[np.ndarray, np.ndarray]:
    if collection.layout in _PLACEMENTS:
        return _PLACEMENTS[collection.layout]
    first = np.arange(min(collection.width, N_FEATURES))
    return first, first


def write_layout(splits: Splits, folder: str | Path, layout: str) -> Path:
    """Write ``splits`` (train, vali, test) under ``folder`` in ``layout``'s files (a layout
    of `ltrlib.data.catalogue.layouts`: its collection's file names, folds, width and index
    base); returns ``folder``. Nothing outside ``folder`` is touched; existing files there
    are replaced."""
    if layout not in layouts():
        raise ValueError(f"layout {layout!r} unknown; choose from {layouts()}")
    collection = in_layout(layout)
    width = collection.width
    parts = [p for p in (splits.train, splits.vali, splits.test) if p is not None]
    if len(parts) != 3:
        raise ValueError("write_layout needs train, vali and test partitions")
    if parts[0].n_features < min(width, N_FEATURES):
        raise ValueError(f"{layout} needs {min(width, N_FEATURES)} features, the data has {parts[0].n_features}")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    source, target = _placement(collection)

    def write(part: Dataset, where: Path, fname: str) -> None:
        placed = _columns(part, source, target, width, fname)
        write_svmlight(placed, where / fname, zero_based=collection.index_base == 0)

    if collection.folds:
        everything = concat(parts, name="all")
        n = collection.folds
        chunks = np.array_split(np.arange(everything.n_queries), n)
        qids = everything.query_ids
        for k in range(n):
            # S_k.. rotating, as MSLR's folds: train on all but two parts, validate on the
            # next, test on the last.
            order = [chunks[(k + i) % n] for i in range(n)]
            fold = folder / fold_folder(k + 1)
            fold.mkdir(exist_ok=True)
            for fname, idx in zip(collection.files, (np.concatenate(order[:n - 2]), order[n - 2], order[n - 1])):
                write(everything.subset(qids[np.sort(idx)], name=fname), fold, fname)
        return folder
    for part, fname in zip(parts, collection.files):
        write(part, folder, fname)
    return folder
