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

Labels are the twin's 0-4 grades in every layout. Files are written atomically.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ltrlib.data.dataset import Dataset, Splits, concat
from ltrlib.data.svmlight.write import write_svmlight

__all__ = ["LAYOUTS", "write_layout"]

#: Layout name -> number of feature indices of the collection.
LAYOUTS = {"mslr": 136, "istella": 220, "yahoo": 700}


def _columns(ds: Dataset, source: np.ndarray, target: np.ndarray, width: int, name: str) -> Dataset:
    """A ``width``-wide copy of ``ds`` with its columns ``source`` at columns ``target``
    (zeros elsewhere, which the writer leaves out as the sparse files do)."""
    X = np.zeros((ds.n_docs, width), dtype=np.float32)
    X[:, target] = ds.X[:, source]
    return Dataset(X=X, y=ds.y, query_ids=ds.query_ids, offsets=ds.offsets, name=name)


# MSLR's f130 (PageRank) is a dense, heavy-tailed document score that users bin into
# categories; the twin's f130 is a sparse match feature, so its authority score (f211, a
# per-query level plus noise) takes that place. Otherwise the first 136 columns, in order.
_MSLR_SOURCE = np.r_[0:129, 210, 130:136]


def write_layout(splits: Splits, folder: str | Path, layout: str) -> Path:
    """Write ``splits`` (train, vali, test) under ``folder`` in ``layout``'s files; returns
    ``folder``. Nothing outside ``folder`` is touched; existing files there are replaced."""
    if layout not in LAYOUTS:
        raise ValueError(f"layout {layout!r} unknown; choose from {sorted(LAYOUTS)}")
    width = LAYOUTS[layout]
    parts = [p for p in (splits.train, splits.vali, splits.test) if p is not None]
    if len(parts) != 3:
        raise ValueError("write_layout needs train, vali and test partitions")
    if parts[0].n_features < min(width, 220):
        raise ValueError(f"{layout} needs {min(width, 220)} features, the data has {parts[0].n_features}")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    if layout == "mslr":
        everything = concat(parts, name="all")
        chunks = np.array_split(np.arange(everything.n_queries), 5)
        qids = everything.query_ids
        for k in range(5):
            order = [chunks[(k + i) % 5] for i in range(5)]  # S_k.. rotating, as MSLR's folds
            fold = folder / f"Fold{k + 1}"
            fold.mkdir(exist_ok=True)
            for fname, idx in (("train.txt", np.concatenate(order[:3])), ("vali.txt", order[3]),
                               ("test.txt", order[4])):
                part = everything.subset(qids[np.sort(idx)], name=fname)
                write_svmlight(_columns(part, _MSLR_SOURCE, np.arange(width), width, fname), fold / fname)
        return folder
    if layout == "istella":
        target, names = np.arange(width), ("train.txt", "vali.txt", "test.txt")
    else:  # yahoo
        target, names = 3 * np.arange(220), ("set1.train.txt", "set1.valid.txt", "set1.test.txt")
    for part, fname in zip(parts, names):
        write_svmlight(_columns(part, np.arange(220), target, width, fname), folder / fname)
    return folder
