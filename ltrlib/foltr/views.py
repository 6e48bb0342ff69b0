"""Client views: which documents a client sees, with which labels, and how it clicks.

A ``ClientView`` is a set of queries over the rows of the shared (normalised) training
matrix: ``rows[q_off[q]:q_off[q+1]]`` are the documents of its query ``q`` and ``labels``
the labels *this client* judges them with (they differ between clients under Type 1).
Views only hold indices, never feature copies, so 10 clients cost a few arrays of ints.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ltrlib.foltr.pdgd import LIST_SIZE, ideal_dcgs
from ltrlib.metrics.ranking import check_gain_labels


@dataclass(frozen=True, eq=False)
class ClientView:
    name: str
    rows: np.ndarray          # int64 (n,), rows of the training matrix
    labels: np.ndarray        # int64 (n,), this client's labels of those rows
    q_off: np.ndarray         # int64 (n_queries + 1,)
    model_choices: np.ndarray  # int64 (m,), indices into the federation's click models
    n_updates: int = 5        # interactions per round (B; varies under Type 4)

    def __post_init__(self):
        for attr in ("rows", "labels", "q_off", "model_choices"):
            object.__setattr__(self, attr, np.ascontiguousarray(getattr(self, attr), dtype=np.int64))
        if len(self.rows) != len(self.labels):
            raise ValueError(f"client {self.name!r}: {len(self.rows)} rows but {len(self.labels)} labels")
        if len(self.q_off) < 1 or self.q_off[0] != 0 or self.q_off[-1] != len(self.rows) or np.any(np.diff(self.q_off) < 1):
            raise ValueError(f"client {self.name!r}: q_off must start at 0, end at {len(self.rows)} and "
                             "give every query at least one document")
        if len(self.model_choices) < 1:
            raise ValueError(f"client {self.name!r}: needs at least one click model")
        if int(self.n_updates) < 0:
            raise ValueError(f"client {self.name!r}: n_updates must be >= 0, got {self.n_updates}")
        object.__setattr__(self, "n_updates", int(self.n_updates))
        if len(self.labels) and self.labels.min() < 0:
            # PDGD's NDCG once counted a negative label as 0 and the shared gain kernel
            # would not; relevance grades start at 0, so refuse them instead.
            raise ValueError(f"client {self.name!r}: labels must be >= 0, got {int(self.labels.min())}")
        check_gain_labels(self.labels, self.q_off, where=f"client {self.name!r}")
        object.__setattr__(self, "ideal", ideal_dcgs(self.labels, self.q_off, LIST_SIZE))

    @property
    def n_queries(self) -> int:
        return len(self.q_off) - 1

    def label_set(self) -> set[int]:
        return set(np.unique(self.labels).tolist())

    def with_(self, **changes) -> "ClientView":
        d = dict(name=self.name, rows=self.rows, labels=self.labels, q_off=self.q_off,
                 model_choices=self.model_choices, n_updates=self.n_updates)
        d.update(changes)
        return ClientView(**d)


def view_of_queries(name, offsets, labels, query_index=None, keep=None, model_choices=(0,),
                    n_updates=5) -> ClientView:
    """A view of whole queries (``query_index``; default all), optionally keeping only the
    documents where ``keep`` (bool per training row) is True; queries left empty are dropped.
    """
    offsets = np.asarray(offsets, dtype=np.int64)
    labels = np.asarray(labels, dtype=np.int64)
    nq = len(offsets) - 1
    qi = np.arange(nq) if query_index is None else np.asarray(query_index, dtype=np.int64)
    sizes = offsets[qi + 1] - offsets[qi]
    starts = np.repeat(offsets[qi], sizes)
    local = np.arange(sizes.sum()) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    rows = starts + local
    qpos = np.repeat(np.arange(len(qi)), sizes)
    if keep is not None:
        m = np.asarray(keep, dtype=bool)[rows]
        rows, qpos = rows[m], qpos[m]
    counts = np.bincount(qpos, minlength=len(qi))
    counts = counts[counts > 0]
    q_off = np.concatenate([[0], np.cumsum(counts)])
    return ClientView(name, rows, labels[rows], q_off, np.asarray(model_choices), n_updates)


def concat_views(name, views) -> ClientView:
    """One view with the queries of several (the data-sharing union)."""
    views = list(views)
    rows = np.concatenate([v.rows for v in views])
    labels = np.concatenate([v.labels for v in views])
    sizes = np.concatenate([np.diff(v.q_off) for v in views])
    return views[0].with_(name=name, rows=rows, labels=labels,
                          q_off=np.concatenate([[0], np.cumsum(sizes)]))


def without_queries(view: ClientView, offsets, query_index) -> ClientView:
    """``view`` without its queries that are training queries ``query_index`` (positions
    in the training matrix's ``offsets``); every view query is part of one training query."""
    offsets = np.asarray(offsets, dtype=np.int64)
    sizes = np.diff(view.q_off)
    owner = np.searchsorted(offsets, view.rows[view.q_off[:-1]], side="right") - 1
    keep = ~np.isin(owner, np.asarray(query_index, dtype=np.int64))
    rows = np.repeat(keep, sizes)
    return view.with_(rows=view.rows[rows], labels=view.labels[rows],
                      q_off=np.concatenate([[0], np.cumsum(sizes[keep])]))
