"""Flat arrays with query offsets <-> padded lists, the shape a neural ranker trains on.

A network scores a batch of lists at once, so the documents of each query are laid out in
a ``(n_queries, list_size, n_features)`` array with a validity mask; the scores come back
to the flat row order. Within its list a query's documents are put in a *canonical order*
(descending on one column, the stage-1 score in a re-ranking pipeline), so a model that
reads positions (GSF's groups of neighbours) gives the same scores whatever order the rows
of a query arrive in. The layout is vectorised over all rows: no per-query loop.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["PaddedLists", "pad_lists"]


@dataclass(frozen=True)
class PaddedLists:
    """Queries as padded lists.

    ``X``: float32 ``(n_queries, list_size, n_features)``, zeros at padded slots;
    ``y``: float32 ``(n_queries, list_size)``, labels (0 at padded slots); ``mask``: bool,
    True at a real document; ``rows``: int64 ``(n_queries, list_size)``, the flat row each
    slot holds (-1 at a padded slot), so ``flat[rows[mask]] = padded[mask]`` scatters back.
    """

    X: np.ndarray
    y: np.ndarray
    mask: np.ndarray
    rows: np.ndarray

    @property
    def n_queries(self) -> int:
        return self.X.shape[0]

    def to_flat(self, padded_scores: np.ndarray) -> np.ndarray:
        """Per-slot scores ``(n_queries, list_size)`` back to flat row order (float64)."""
        out = np.empty(int(self.mask.sum()), dtype=np.float64)
        out[self.rows[self.mask]] = np.asarray(padded_scores, dtype=np.float64)[self.mask]
        return out


def pad_lists(X: np.ndarray, offsets: np.ndarray, y: np.ndarray | None = None, *,
              list_size: int | None = None, order_by: int | None = None) -> PaddedLists:
    """Lay out the queries of flat ``X`` (rows ``offsets[q]:offsets[q+1]``) as padded lists.

    ``list_size``: slots per list, at least the longest query (default: the longest).
    ``order_by``: a column of ``X``; each list is sorted by it, descending, ties in row order
    (None keeps the rows' order).
    """
    X = np.asarray(X, dtype=np.float32)
    offsets = np.asarray(offsets, dtype=np.int64)
    if X.ndim != 2 or offsets.ndim != 1 or offsets.size < 1 or offsets[0] != 0 or offsets[-1] != X.shape[0]:
        raise ValueError(f"offsets must run from 0 to the {X.shape[0]} rows of X, got {offsets[:3]}...{offsets[-1:]}")
    lengths = np.diff(offsets)
    if (lengths < 0).any():
        raise ValueError("offsets must be non-decreasing")
    longest = int(lengths.max(initial=0))
    size = longest if list_size is None else int(list_size)
    if size < longest:
        raise ValueError(f"list_size = {size} is shorter than the longest query ({longest} documents)")
    n_queries = lengths.size
    query = np.repeat(np.arange(n_queries), lengths)
    if order_by is None:
        rows = np.arange(X.shape[0])
    else:
        if not 0 <= int(order_by) < X.shape[1]:
            raise ValueError(f"order_by = {order_by} is not a column of X ({X.shape[1]} columns)")
        # Sort by query, then by the column descending; lexsort is stable, so ties keep row order.
        rows = np.lexsort((-X[:, int(order_by)], query))
    slot = np.arange(X.shape[0]) - offsets[query]  # rows[k] goes to slot k - offsets[its query]
    padded_rows = np.full((n_queries, size), -1, dtype=np.int64)
    padded_rows[query, slot] = rows
    mask = padded_rows >= 0
    Xp = np.zeros((n_queries, size, X.shape[1]), dtype=np.float32)
    Xp[mask] = X[padded_rows[mask]]
    yp = np.zeros((n_queries, size), dtype=np.float32)
    if y is not None:
        yp[mask] = np.asarray(y, dtype=np.float32)[padded_rows[mask]]
    return PaddedLists(Xp, yp, mask, padded_rows)
