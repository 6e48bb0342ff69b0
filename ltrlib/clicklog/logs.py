"""Simulated click logs with displayed positions, for learning to rank from clicks.

A logging ranker scores every query's documents; each session picks a query (uniformly,
with replacement), shows its top ``top_k`` documents in the logging ranker's order, and a
click model of `ltrlib.foltr.clicks` (PBM for position bias: P(click at rank r) =
c[label] * (1/r)^eta) draws the clicks::

    log = simulate_click_log(train, logging_scores, pbm(1.0), n_sessions=10_000, seed=0)
    log.data          # a Dataset: one query group per session, rows in displayed order,
                      # y = clicks (0/1), X = the shown documents' features
    log.position      # displayed position of every row, 0 = top
    train_ranker(log.data, None, {...}, backend="xgboost", position=log.position)

Everything is flat arrays with offsets: the shown lists come from one lexsort, the
sessions' rows from a gather, and the clicks from one compiled loop over the sessions that
calls the click model's own kernel (`ltrlib.foltr.clicks.simulate_clicks`), so the log
draws exactly what the click model defines.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from ltrlib.data.dataset import Dataset
from ltrlib.foltr.clicks import ClickModel, simulate_clicks

__all__ = ["ClickLog", "shown_lists", "simulate_click_log"]


@dataclass(frozen=True, eq=False)
class ClickLog:
    """A click log.

    data : one query group per session, rows in displayed order (rank 1 first), ``y`` the
        clicks (0/1); query ids are the session numbers 0..n_sessions-1
    position : int32, each row's displayed position (0 = top)
    session_query : int64, each session's query index in the source Dataset
    source_row : int64, each row's row index in the source Dataset
    true_label : int32, each row's true relevance label (for analysis, never for training)
    click_model : the model that drew the clicks
    """

    data: Dataset
    position: np.ndarray
    session_query: np.ndarray
    source_row: np.ndarray
    true_label: np.ndarray
    click_model: ClickModel

    @property
    def n_sessions(self) -> int:
        return self.data.n_queries

    def click_rate_by_position(self) -> np.ndarray:
        """Observed click-through rate at each displayed position (0 = top)."""
        clicks = np.bincount(self.position, weights=self.data.y, minlength=self.position.max() + 1)
        shown = np.bincount(self.position, minlength=self.position.max() + 1)
        return clicks / np.maximum(shown, 1)

    def first_sessions(self, n: int) -> "ClickLog":
        """The log of the first ``n`` sessions (logs of growing size share their sessions)."""
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 1 <= n <= self.n_sessions:
            raise ValueError(f"n must be an integer in 1..{self.n_sessions}, got {n!r}")
        end = int(self.data.offsets[n])
        d = self.data
        data = Dataset(X=d.X[:end], y=d.y[:end], query_ids=d.query_ids[:n], offsets=d.offsets[: n + 1],
                       feature_names=d.feature_names, name=f"{d.name}[:{n}]")
        return ClickLog(data, self.position[:end], self.session_query[:n], self.source_row[:end],
                        self.true_label[:end], self.click_model)


def shown_lists(data: Dataset, scores: np.ndarray, top_k: int) -> tuple[np.ndarray, np.ndarray]:
    """Each query's top ``top_k`` rows by descending score (ties in input order).

    Returns ``(rows, offsets)``: query ``i`` shows rows ``rows[offsets[i]:offsets[i+1]]`` of
    ``data``, best first."""
    scores = np.asarray(scores, dtype=np.float64)
    if scores.shape != (data.n_docs,):
        raise ValueError(f"scores must hold one value per document ({data.n_docs}), got shape {scores.shape}")
    if isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)) or top_k < 1:
        raise ValueError(f"top_k must be a positive integer, got {top_k!r}")
    q = data.doc_query_index
    # lexsort is stable: equal scores keep their input order, as in ltrlib.metrics.
    order = np.lexsort((-scores, q))
    rank = np.arange(data.n_docs) - data.offsets[q[order]]
    keep = rank < top_k
    rows = order[keep]
    shown = np.minimum(data.group_sizes, top_k)
    return rows, np.concatenate([[0], np.cumsum(shown)])


@numba.njit(cache=True)
def _draw_clicks(kind, click_prob, stop_prob, eta, labels, offsets, rng, out):
    for s in range(len(offsets) - 1):
        lo, hi = offsets[s], offsets[s + 1]
        simulate_clicks(kind, click_prob, stop_prob, eta, labels[lo:hi], rng, out[lo:hi])


def simulate_click_log(data: Dataset, scores: np.ndarray, click_model: ClickModel, n_sessions: int, *,
                       top_k: int = 10, seed: int | np.random.Generator = 0) -> ClickLog:
    """``n_sessions`` sessions on ``data``'s queries shown in the order of ``scores``.

    Each session draws its query uniformly with replacement (one Generator draw for all),
    then the clicks of the shown list from ``click_model``. Same seed, same log."""
    if not isinstance(click_model, ClickModel):
        raise TypeError(f"click_model must be a ltrlib.foltr ClickModel, got {type(click_model).__name__}")
    if isinstance(n_sessions, bool) or not isinstance(n_sessions, (int, np.integer)) or n_sessions < 1:
        raise ValueError(f"n_sessions must be a positive integer, got {n_sessions!r}")
    labels = click_model.check_labels(data.y)  # raises on labels the click model cannot use
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    rows, list_off = shown_lists(data, scores, top_k)
    sq = rng.integers(0, data.n_queries, size=int(n_sessions))
    lengths = np.diff(list_off)[sq]
    sess_off = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    # Row j of session s is the (j - sess_off[s])-th shown document of its query.
    session_of_row = np.repeat(np.arange(n_sessions), lengths)
    position = (np.arange(sess_off[-1]) - sess_off[session_of_row]).astype(np.int32)
    source = rows[list_off[sq][session_of_row] + position]
    shown_labels = labels[source]
    clicks = np.zeros(len(source), dtype=np.bool_)
    _draw_clicks(click_model.kind, click_model.click_prob, click_model.stop_prob, click_model.eta,
                 shown_labels, sess_off, rng, clicks)
    log_data = Dataset(X=data.X[source], y=clicks.astype(np.int32), query_ids=np.arange(n_sessions),
                       offsets=sess_off, feature_names=data.feature_names,
                       name=f"{data.name}-clicks-{click_model.name}")
    return ClickLog(log_data, position, sq.astype(np.int64), source.astype(np.int64),
                    data.y[source].astype(np.int32), click_model)
