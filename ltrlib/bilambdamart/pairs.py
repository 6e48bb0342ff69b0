"""Ordered pairs of documents within queries, over flat arrays, and their feature rows.

A query with ``n`` documents has ``n(n-1)`` ordered pairs ``⟨i, j⟩``, ``i ≠ j``, stored
query after query, ``i`` major: query ``q`` owns pairs ``pair_offsets[q]:pair_offsets[q+1]``
and pair ``p`` joins the document rows ``left[p]`` (i) and ``right[p]`` (j).

The feature row of ``⟨i, j⟩`` (§5.5) is ``[x_i | x_j | x_i[:n_diff] - x_j[:n_diff]]``:
the expanded features of both documents and, unless ``difference=False`` (the ablation of
Table 4), the differences of the first ``n_diff`` columns (base features + first-stage
score). Columns declared ``query_level`` (equal for every document of a query: the
listwise means and standard deviations) are left out of the x_j part, since x_i carries
the same values; a tree can split on them exactly as before (a tie between identical
columns goes to the first), while histograms are built over 2m fewer columns. Rows are
only ever built in float32 chunks (`pair_rows`, `PairSequence`): at MSLR-WEB10K size the
full matrix would hold 2.2M x 1507 values.
"""

from __future__ import annotations

import numbers
from typing import NamedTuple

import numpy as np
from numba import njit

__all__ = ["PairIndex", "PairSequence", "pair_feature_names", "pair_index", "pair_rows"]


class PairIndex(NamedTuple):
    pair_offsets: np.ndarray  # int64 (n_queries + 1,)
    left: np.ndarray  # int64 (n_pairs,), document row of i
    right: np.ndarray  # int64 (n_pairs,), document row of j

    @property
    def n_pairs(self) -> int:
        return int(self.pair_offsets[-1])

    def as_tuple(self):
        return (self.pair_offsets, self.left, self.right)


@njit(cache=True)
def _fill_index(offsets, pair_offsets, left, right):
    for q in range(offsets.size - 1):
        a = offsets[q]
        n = offsets[q + 1] - a
        p = pair_offsets[q]
        for i in range(n):
            for j in range(n):
                if i != j:
                    left[p] = a + i
                    right[p] = a + j
                    p += 1


def pair_index(offsets) -> PairIndex:
    """Every ordered pair of distinct documents of every query."""
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    if offsets.ndim != 1 or offsets.size < 1 or offsets[0] != 0 or np.any(np.diff(offsets) < 0):
        raise ValueError("offsets must be non-decreasing and start at 0")
    sizes = np.diff(offsets)
    pair_offsets = np.concatenate([[0], np.cumsum(sizes * (sizes - 1))]).astype(np.int64)
    left = np.empty(pair_offsets[-1], dtype=np.int64)
    right = np.empty(pair_offsets[-1], dtype=np.int64)
    _fill_index(offsets, pair_offsets, left, right)
    return PairIndex(pair_offsets, left, right)


@njit(cache=True)
def _fill_rows(X, left, right, j_columns, n_diff, out):
    m = X.shape[1]
    mj = j_columns.size
    for r in range(left.size):
        i = left[r]
        j = right[r]
        for f in range(m):
            out[r, f] = X[i, f]
        for c in range(mj):
            out[r, m + c] = X[j, j_columns[c]]
        for f in range(n_diff):
            out[r, m + mj + f] = X[i, f] - X[j, f]


def j_columns(n_features: int, query_level=()) -> np.ndarray:
    """The columns of x_j in a pair row: all but the ``query_level`` ones."""
    query_level = np.asarray(query_level, dtype=np.int64).reshape(-1)
    if query_level.size and (query_level.min() < 0 or query_level.max() >= n_features):
        raise ValueError(f"query_level columns must be in 0..{n_features - 1}, got "
                         f"{query_level.min()}..{query_level.max()}")
    keep = np.ones(n_features, dtype=bool)
    keep[query_level] = False
    return np.flatnonzero(keep).astype(np.int64)


def pair_width(n_features: int, n_diff: int, difference: bool = True, query_level=()) -> int:
    return n_features + j_columns(n_features, query_level).size + (n_diff if difference else 0)


def pair_rows(X, left, right, n_diff: int, difference: bool = True, out=None,
              query_level=()) -> np.ndarray:
    """Float32 feature rows of the pairs ``(left[k], right[k])``."""
    X = np.ascontiguousarray(X, dtype=np.float32)
    left = np.ascontiguousarray(left, dtype=np.int64)
    right = np.ascontiguousarray(right, dtype=np.int64)
    if not 0 <= n_diff <= X.shape[1]:
        raise ValueError(f"n_diff must be in 0..{X.shape[1]} (the feature count), got {n_diff}")
    jc = j_columns(X.shape[1], query_level)
    width = X.shape[1] + jc.size + (n_diff if difference else 0)
    if out is None:
        out = np.empty((left.size, width), dtype=np.float32)
    _fill_rows(X, left, right, jc, n_diff if difference else 0, out)
    return out


def pair_feature_names(names, n_diff: int, difference: bool = True,
                       query_level=()) -> tuple[str, ...]:
    names = tuple(names)
    diff = tuple(f"d_{n}" for n in names[:n_diff]) if difference else ()
    j_names = tuple(f"j_{names[c]}" for c in j_columns(len(names), query_level))
    return tuple(f"i_{n}" for n in names) + j_names + diff


try:
    from lightgbm import Sequence as _LgbSequence
except ImportError:  # pragma: no cover - lightgbm is a dependency
    _LgbSequence = object


class PairSequence(_LgbSequence):
    """The pair matrix as a ``lightgbm.Sequence``: rows are built on demand, in float32
    batches of ``batch_size``, so a LightGBM Dataset can be binned without the matrix."""

    def __init__(self, X, pairs: PairIndex, n_diff: int, difference: bool = True,
                 batch_size: int = 8192, query_level=()):
        self.X = np.ascontiguousarray(X, dtype=np.float32)
        self.left, self.right = pairs.left, pairs.right
        self.n_diff = int(n_diff)
        self.difference = bool(difference)
        self.batch_size = int(batch_size)
        self.query_level = tuple(int(c) for c in query_level)
        self.j_columns = j_columns(self.X.shape[1], self.query_level)
        self.width = pair_width(self.X.shape[1], self.n_diff, self.difference, self.query_level)

    def __len__(self) -> int:
        return int(self.left.size)

    def __getitem__(self, idx):
        if isinstance(idx, numbers.Integral):
            k = int(idx)
            i, j = self.left[k], self.right[k]
            xi, xj = self.X[i], self.X[j]
            parts = [xi, xj[self.j_columns]] + ([xi[:self.n_diff] - xj[:self.n_diff]] if self.difference else [])
            # Single rows serve LightGBM's bin sampling, which insists on float64; the
            # difference is taken in float32 first so sampled and pushed rows agree.
            return np.concatenate(parts).astype(np.float64)
        if isinstance(idx, slice):
            sl = slice(*idx.indices(len(self)))
            return pair_rows(self.X, self.left[sl], self.right[sl], self.n_diff, self.difference,
                             query_level=self.query_level)
        if isinstance(idx, (list, np.ndarray)):
            rows = np.asarray(idx, dtype=np.int64)
            return pair_rows(self.X, self.left[rows], self.right[rows], self.n_diff,
                             self.difference, query_level=self.query_level)
        raise TypeError(f"PairSequence index must be an integer, slice or list, "
                        f"got {type(idx).__name__}")
