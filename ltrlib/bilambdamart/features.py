"""Listwise feature expansion (§5.5 of the Bi-LambdaMART paper).

For every column ``f`` of the base matrix (the original features plus the first-stage
score), four per-query features are appended: the mean and the (population) standard
deviation of ``f`` over the query's list, the rank of the document by ``f`` within the
query, and ``f`` standardised within the query. ``m`` base columns become ``5·m``
(MSLR: 137 → 685), laid out as ``[base | mean | std | rank | z]``.

Every value is a function of the *set* of the query's documents, never of their order,
so the expansion keeps the scores of any model built on it invariant to permutations:

* rank 1 is the largest value; ties share the best rank (1 + the number of strictly
  larger values), so tied documents get equal ranks whatever their input order;
* sums run in float64 and are cast to float32 at the end;
* a feature constant within a query has std 0 and z-score 0.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

__all__ = ["EXPANSIONS", "expand_listwise", "expanded_names", "query_level_columns"]

EXPANSIONS = ("mean", "std", "rank", "z")
# The expansions that are a function of the query alone: equal for every document of it.
QUERY_LEVEL = ("mean", "std")


@njit(cache=True, parallel=True)
def _expand(X, offsets, out):
    m = X.shape[1]
    for q in prange(offsets.size - 1):
        a = offsets[q]
        n = offsets[q + 1] - a
        for f in range(m):
            total = 0.0
            for r in range(a, a + n):
                total += X[r, f]
            mean = total / n
            sq = 0.0
            for r in range(a, a + n):
                d = X[r, f] - mean
                sq += d * d
            std = np.sqrt(sq / n)
            for r in range(a, a + n):
                x = X[r, f]
                larger = 0
                for t in range(a, a + n):
                    if X[t, f] > x:
                        larger += 1
                out[r, f] = x
                out[r, m + f] = mean
                out[r, 2 * m + f] = std
                out[r, 3 * m + f] = 1 + larger
                out[r, 4 * m + f] = (x - mean) / std if std > 0.0 else 0.0


def expand_listwise(X, offsets) -> np.ndarray:
    """The ``[base | mean | std | rank | z]`` float32 matrix, shape ``(n_docs, 5·m)``.

    ``X``: base features (float32 or float64, one row per document); ``offsets``: query
    ``q`` owns rows ``offsets[q]:offsets[q+1]``. Rank counting is O(n²) per query, meant
    for second-stage lists (tens of documents).
    """
    X = np.asarray(X)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (documents x features), got shape {X.shape}")
    if offsets.ndim != 1 or offsets.size < 1 or offsets[0] != 0 or offsets[-1] != X.shape[0] \
            or np.any(np.diff(offsets) <= 0):
        raise ValueError(f"offsets must rise strictly from 0 to n_docs={X.shape[0]}")
    if not np.all(np.isfinite(X)):
        raise ValueError("X has NaN or infinite values; the listwise statistics need finite ones")
    out = np.empty((X.shape[0], 5 * X.shape[1]), dtype=np.float32)
    _expand(np.ascontiguousarray(X, dtype=np.float64), offsets, out)
    return out


def expanded_names(names) -> tuple[str, ...]:
    """Column names of `expand_listwise`'s output: ``f``, then ``f_mean``, ``f_std``, ..."""
    names = tuple(names)
    return names + tuple(f"{n}_{kind}" for kind in EXPANSIONS for n in names)


def query_level_columns(n_base: int) -> tuple[int, ...]:
    """Indices of `expand_listwise`'s columns that are equal for every document of a query
    (the means and standard deviations of ``n_base`` base columns): a pair row needs them
    once (`ltrlib.bilambdamart.model.RankData.from_dataset`'s ``query_level``)."""
    blocks = (1 + EXPANSIONS.index(kind) for kind in QUERY_LEVEL)  # block 0 is the base columns
    return tuple(c for b in blocks for c in range(b * n_base, (b + 1) * n_base))
