"""Ranking metrics over flat arrays with query offsets: NDCG@k, MAP(@k), MRR(@k).

Every function takes the flat layout of `ltrlib.data.Dataset`: ``y`` (labels),
``scores`` (one per document) and ``offsets`` (query ``i`` is rows
``offsets[i]:offsets[i+1]``). All metrics of one call come from a single numba pass
that sorts each query once; there is no Python loop over queries.

Conventions
-----------
Gain and discount (NDCG)
    ``DCG@k = sum_{r=1..k} (2**label_r - 1) / log2(r + 1)``, normalised by the DCG@k of
    the ideal (label-sorted) ordering of the same query. This is exactly LightGBM's
    ``ndcg`` metric (default ``label_gain``) and ranx's ``ndcg_burges``. ``k`` larger than
    the list means the whole list; ``k=None`` (metric string ``"ndcg"``) is the whole list.
    An ideal DCG may be supplied from outside (``ideal_dcg=``), e.g. the ideal DCG of the
    full candidate list when evaluating a truncated top-20 re-ranking; see `ideal_dcg`.
    Labels whose gain (or a query's sum of gains) overflows float64, from label 1024 on,
    are refused (`check_gain_labels`) rather than turned into an inf or NaN NDCG.
    Gain, discount and DCG come from `ltrlib.metrics.kernels`, which PDGD and the LB
    objective call too, so every NDCG in ltrlib is computed the same way, to the bit.

Relevance (MAP, MRR)
    A document is relevant when ``label >= rel_threshold`` (default 1). NDCG uses the
    graded labels and ignores the threshold.

AP@k
    ``AP@k = (1/R) * sum_{r<=k, doc r relevant} precision@r`` where ``R`` is the number of
    relevant documents of the query (the whole list, not only the top k). This is
    trec_eval's ``map_cut`` and ranx's ``map@k``. LightGBM's ``map@k`` divides by
    ``min(R, k)`` instead, so the two differ when a query has more than ``k`` relevant
    documents; without a cutoff they agree.

RR@k
    ``1 / rank`` of the first relevant document if it is within the top ``k``, else 0.

Ties
    Documents with equal scores keep their input order: each query is sorted by
    descending score with a stable sort. LightGBM does the same (``std::stable_sort``),
    so tied scores give LightGBM's numbers. Other tools break ties differently (ranx and
    trec_eval by document id), so with ties expect disagreement with them, not with us.

Queries where the metric is undefined (``no_relevant=``)
    NDCG is undefined when the ideal DCG is 0 (every label is 0); AP and RR are undefined
    when no document reaches ``rel_threshold``. Such a query gets, for every metric:

    - ``"one"`` (default): 1.0. Every ordering of such a query is an ideal ordering, so it
      scores as perfect. This is LightGBM's convention for both ``ndcg`` and ``map``
      (checked against LightGBM 4.x), so our means match LightGBM's eval output.
    - ``"zero"``: 0.0. This is ranx's convention for all its metrics.
    - ``"exclude"``: NaN; means skip it (only queries with relevant documents count: the
      FPDGD reference's convention, notebook 07's. trec_eval, ranx and ir_measures score such
      a query 0 and count it when the qrels list its documents; docs/ecosystem.md).

    One value for all metrics keeps the switch easy to reason about. The choice shifts
    every model's mean by the same amount and leaves paired differences (and so
    significance tests) unchanged, except that ``"exclude"`` changes the number of queries.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple

import numpy as np
import pandas as pd
from numba import njit, prange

from ltrlib.metrics.kernels import dcg_term, query_ideal_dcg, sorted_ideal_dcg

__all__ = [
    "DEFAULT_METRICS",
    "NO_RELEVANT_OPTIONS",
    "MetricSpec",
    "average_precision",
    "check_gain_labels",
    "evaluate",
    "ideal_dcg",
    "ndcg",
    "parse_metric",
    "reciprocal_rank",
]

DEFAULT_METRICS: tuple[str, ...] = ("ndcg@10", "map", "mrr@10")
NO_RELEVANT_OPTIONS: dict[str, float] = {"one": 1.0, "zero": 0.0, "exclude": np.nan}
_KINDS = ("ndcg", "map", "mrr")


# ====================================================================== numba kernels
# Cutoffs reach the kernels as int64 arrays where 0 means "the whole list", so a single
# compiled signature serves every combination of metrics.
# The DCG terms and ideal DCGs themselves are the shared ones of ltrlib.metrics.kernels.


@njit(cache=True, inline="always")
def _cut(k, n):
    if k == 0 or k > n:
        return n
    return k


#: Up to this depth the top ranks are selected by insertion, not by sorting the whole list.
_SELECT_DEPTH = 32


@njit(cache=True)
def _ranked(scores, a, n, depth):
    """Positions of query ``scores[a:a+n]``'s documents by descending score, ties in input
    order (LightGBM's ``std::stable_sort`` with ``score[a] > score[b]``); only the first
    ``depth`` entries are meaningful. A shallow cutoff of a long list (NDCG@10 of 100
    documents) selects its top ranks by insertion, which orders them exactly as the stable
    sort of the whole list does, in about ``n`` comparisons instead of ``n log n``."""
    if depth >= n or depth > _SELECT_DEPTH:
        # Stable sort of the negated scores = descending score, ties in input order.
        return np.argsort(-scores[a : a + n], kind="mergesort")
    order = np.empty(depth, dtype=np.int64)
    kept = 0
    for i in range(n):
        s = scores[a + i]
        if kept == depth and not s > scores[a + order[depth - 1]]:
            continue  # not above the last kept score: a tie goes to the earlier document
        pos = min(kept, depth - 1)
        while pos > 0 and s > scores[a + order[pos - 1]]:
            order[pos] = order[pos - 1]
            pos -= 1
        order[pos] = i
        kept = min(kept + 1, depth)
    return order


@njit(cache=True, parallel=True)
def _metrics_kernel(y, scores, offsets, ndcg_ks, ideal, ap_ks, rr_ks, rel_threshold, fill):
    """Per-query NDCG / AP / RR for all requested cutoffs from one sort per query.

    ``ideal`` is (n_queries, len(ndcg_ks)); NaN entries are computed from the labels.
    Returns (n_queries, len(ndcg_ks) + len(ap_ks) + len(rr_ks)).
    """
    n_queries = offsets.size - 1
    n_ndcg = ndcg_ks.size
    n_ap = ap_ks.size
    n_rr = rr_ks.size
    out = np.empty((n_queries, n_ndcg + n_ap + n_rr))
    for q in prange(n_queries):
        a = offsets[q]
        n = offsets[q + 1] - a
        # Only the top `depth` ranks are ever read, except R (relevant count) below.
        depth = 0
        for j in range(n_ndcg):
            depth = max(depth, _cut(ndcg_ks[j], n))
        for j in range(n_ap):
            depth = max(depth, _cut(ap_ks[j], n))
        for j in range(n_rr):
            depth = max(depth, _cut(rr_ks[j], n))

        order = _ranked(scores, a, n, depth)

        cum_dcg = np.empty(depth)
        cum_ap = np.empty(depth)
        dcg = 0.0
        ap = 0.0
        hits = 0
        first_hit = 0  # 1-based rank of the first relevant document, 0 = none in depth
        for r in range(depth):
            label = y[a + order[r]]
            dcg += dcg_term(label, r)
            if label >= rel_threshold:
                hits += 1
                ap += hits / (r + 1.0)
                if first_hit == 0:
                    first_hit = r + 1
            cum_dcg[r] = dcg
            cum_ap[r] = ap

        if n_ndcg > 0:
            # Ascending labels, read from the end; sorted only when some cutoff needs it.
            ideal_labels = np.empty(0)
            for j in range(n_ndcg):
                if np.isnan(ideal[q, j]):
                    ideal_labels = np.sort(y[a : a + n])
                    break
            for j in range(n_ndcg):
                kk = _cut(ndcg_ks[j], n)
                idcg = ideal[q, j]
                if np.isnan(idcg):
                    idcg = sorted_ideal_dcg(ideal_labels, kk)
                out[q, j] = cum_dcg[kk - 1] / idcg if idcg > 0.0 else fill

        if n_ap + n_rr > 0:
            n_rel = 0
            for i in range(a, a + n):
                if y[i] >= rel_threshold:
                    n_rel += 1
            for j in range(n_ap):
                kk = _cut(ap_ks[j], n)
                out[q, n_ndcg + j] = cum_ap[kk - 1] / n_rel if n_rel > 0 else fill
            for j in range(n_rr):
                kk = _cut(rr_ks[j], n)
                if n_rel == 0:
                    value = fill
                elif first_hit != 0 and first_hit <= kk:
                    value = 1.0 / first_hit
                else:
                    value = 0.0
                out[q, n_ndcg + n_ap + j] = value
    return out


@njit(cache=True, parallel=True)
def _ideal_dcg_kernel(y, offsets, k):
    n_queries = offsets.size - 1
    out = np.empty(n_queries)
    for q in prange(n_queries):
        a = offsets[q]
        n = offsets[q + 1] - a
        out[q] = query_ideal_dcg(y[a : a + n], _cut(k, n))
    return out


# ====================================================================== input checks


def _as_labels(y) -> np.ndarray:
    arr = np.asarray(y)
    if arr.ndim != 1:
        raise ValueError(f"y must be 1-D (one label per document), got shape {arr.shape}")
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"y must be numeric, got dtype {arr.dtype}")
    arr = arr.astype(np.float64, copy=False)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"y has {np.count_nonzero(~np.isfinite(arr))} non-finite labels")
    if arr.size and arr.min() < 0:
        raise ValueError(f"y must be non-negative relevance labels, got min {arr.min():g}")
    return arr


def check_gain_labels(y, offsets, where: str = "y") -> None:
    """Refuse labels whose NDCG gain ``2**label - 1`` is not a finite float64 (label 1024
    and above), or whose gains sum to more than a float64 holds within one query: the ideal
    DCG is then inf or NaN, and such a query silently scored 1.0 or dropped out of the mean.
    ``y`` and ``offsets`` as in `ndcg` (strictly increasing offsets); metrics, PDGD and the
    LB objective all check their labels here."""
    y = np.asarray(y, dtype=np.float64)
    if y.size == 0:
        return
    top = float(y.max())
    offsets = np.asarray(offsets, dtype=np.int64)
    longest = int(np.diff(offsets).max())
    with np.errstate(over="ignore"):
        if np.isfinite((np.exp2(top) - 1.0) * longest):
            return  # every realistic label set: no query's gains can overflow
        if not np.isfinite(np.exp2(top)):
            raise ValueError(
                f"{where} holds label {top:g}, too large for NDCG: its gain 2**label - 1 "
                f"overflows float64 from label 1024 on (labels must be below 1024); relevance "
                f"labels are small integer grades, so check where these come from")
        sums = np.add.reduceat(np.exp2(y) - 1.0, offsets[:-1])
    bad = np.flatnonzero(~np.isfinite(sums))
    if bad.size:
        q = int(bad[0])
        raise ValueError(
            f"{where} holds label {top:g}: in query {q} ({int(offsets[q + 1] - offsets[q])} "
            f"documents) the NDCG gains 2**label - 1 sum to more than a float64 holds; labels "
            f"that large (near 1024) leave no room for several relevant documents, so check "
            f"where these come from")


def _as_scores(scores, n_docs: int) -> np.ndarray:
    arr = np.asarray(scores)
    if arr.ndim != 1:
        raise ValueError(f"scores must be 1-D (one score per document), got shape {arr.shape}")
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"scores must be numeric, got dtype {arr.dtype}")
    if arr.size != n_docs:
        raise ValueError(f"scores has {arr.size} entries but y has {n_docs}; they must match")
    arr = arr.astype(np.float64, copy=False)
    nan = np.isnan(arr)
    if nan.any():
        raise ValueError(
            f"scores contains {int(nan.sum())} NaN values (first at position "
            f"{int(np.argmax(nan))}); NaN has no place in a ranking"
        )
    return arr


def _as_offsets(offsets, n_docs: int) -> np.ndarray:
    arr = np.asarray(offsets)
    if arr.ndim != 1 or arr.size < 1:
        raise ValueError(f"offsets must be 1-D with n_queries + 1 entries, got shape {arr.shape}")
    if arr.dtype.kind not in "iu":
        raise TypeError(f"offsets must be integers, got dtype {arr.dtype}")
    arr = arr.astype(np.int64, copy=False)
    if arr[0] != 0 or arr[-1] != n_docs:
        raise ValueError(
            f"offsets must start at 0 and end at len(y)={n_docs}, "
            f"got offsets[0]={arr[0]}, offsets[-1]={arr[-1]}"
        )
    bad = np.flatnonzero(np.diff(arr) <= 0)
    if bad.size:
        raise ValueError(
            f"offsets must be strictly increasing (every query needs a document); "
            f"query {int(bad[0])} has offsets[{bad[0]}]={arr[bad[0]]}, "
            f"offsets[{bad[0] + 1}]={arr[bad[0] + 1]}"
        )
    return arr


def _check_k(k, name: str = "k") -> int:
    """``None`` -> 0 (whole list), a positive int -> itself."""
    if k is None:
        return 0
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"{name} must be a positive integer or None (whole list), got {k!r}")
    if k <= 0:
        raise ValueError(f"{name} must be a positive integer or None (whole list), got {k}")
    return int(k)


def _fill_value(no_relevant: str) -> float:
    try:
        return NO_RELEVANT_OPTIONS[no_relevant]
    except (KeyError, TypeError):
        raise ValueError(
            f"no_relevant must be one of {sorted(NO_RELEVANT_OPTIONS)}, got {no_relevant!r}"
        ) from None


def _check_threshold(rel_threshold) -> float:
    value = float(rel_threshold)
    if not np.isfinite(value):
        raise ValueError(f"rel_threshold must be finite, got {rel_threshold!r}")
    return value


def _as_ideal(ideal, n_queries: int, name: str = "ideal_dcg") -> np.ndarray:
    arr = np.asarray(ideal, dtype=np.float64)
    if arr.shape != (n_queries,):
        raise ValueError(
            f"{name} must have one value per query, shape ({n_queries},), got {arr.shape}"
        )
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise ValueError(f"{name} must be finite and >= 0")
    return arr


# ====================================================================== metric strings


class MetricSpec(NamedTuple):
    """A parsed metric: ``kind`` in ndcg/map/mrr, ``k`` (None = whole list)."""

    kind: str
    k: int | None

    @property
    def name(self) -> str:
        return self.kind if self.k is None else f"{self.kind}@{self.k}"


_METRIC_RE = re.compile(r"^\s*(ndcg|map|mrr)\s*(?:@\s*(-?\d+))?\s*$", re.IGNORECASE)


def parse_metric(name: str) -> MetricSpec:
    """Parse a ranx-style metric string: ``"ndcg@10"``, ``"ndcg"``, ``"map@100"``, ``"mrr"``."""
    if not isinstance(name, str):
        raise TypeError(f"metrics must be strings like 'ndcg@10', got {name!r}")
    m = _METRIC_RE.match(name)
    if m is None:
        raise ValueError(
            f"unknown metric {name!r} in metrics; supported: 'ndcg', 'ndcg@k', 'map', "
            "'map@k', 'mrr', 'mrr@k' with k a positive integer"
        )
    kind = m.group(1).lower()
    if m.group(2) is None:
        return MetricSpec(kind, None)
    k = int(m.group(2))
    if k <= 0:
        raise ValueError(f"metric {name!r} in metrics: k must be a positive integer, got {k}")
    return MetricSpec(kind, k)


# ====================================================================== core


def _compute(y, scores, offsets, specs: Sequence[MetricSpec], ideal: np.ndarray | None,
             rel_threshold: float, fill: float) -> np.ndarray:
    """Validated arrays in, (n_queries, len(specs)) out, columns in the order of ``specs``."""
    by_kind = {kind: [s for s in specs if s.kind == kind] for kind in _KINDS}
    ks = {kind: np.array([s.k or 0 for s in v], dtype=np.int64) for kind, v in by_kind.items()}
    n_queries = offsets.size - 1
    if ideal is None:
        ideal = np.full((n_queries, len(by_kind["ndcg"])), np.nan)
    values = _metrics_kernel(y, scores, offsets, ks["ndcg"], ideal, ks["map"], ks["mrr"],
                             rel_threshold, fill)
    # Kernel columns are grouped by kind; put them back in the caller's order.
    kernel_order = by_kind["ndcg"] + by_kind["map"] + by_kind["mrr"]
    return values[:, [kernel_order.index(s) for s in specs]]


def _single(kind, y, scores, offsets, k, ideal, rel_threshold, no_relevant) -> np.ndarray:
    y = _as_labels(y)
    scores = _as_scores(scores, y.size)
    offsets = _as_offsets(offsets, y.size)
    spec = MetricSpec(kind, _check_k(k) or None)
    if kind == "ndcg":
        check_gain_labels(y, offsets)
    fill = _fill_value(no_relevant)
    ideal_2d = None
    if ideal is not None:
        ideal_2d = _as_ideal(ideal, offsets.size - 1)[:, None]
    return _compute(y, scores, offsets, [spec], ideal_2d, _check_threshold(rel_threshold),
                    fill)[:, 0]


def ndcg(y, scores, offsets, k: int | None = None, *, ideal_dcg=None,
         no_relevant: str = "one") -> np.ndarray:
    """Per-query NDCG@k (``k=None``: whole list), gain ``2**label - 1``, as LightGBM.

    ``ideal_dcg``: optional per-query normaliser (shape ``(n_queries,)``) replacing the
    ideal DCG@k of the given list, e.g. ``ideal_dcg(y_full, offsets_full, k)`` of the
    full candidate list when ``y``/``scores`` hold only a truncated top-n. A query whose
    normaliser is 0 is scored by ``no_relevant`` (see the module docstring).
    """
    return _single("ndcg", y, scores, offsets, k, ideal_dcg, 1, no_relevant)


def average_precision(y, scores, offsets, k: int | None = None, *, rel_threshold: float = 1,
                      no_relevant: str = "one") -> np.ndarray:
    """Per-query AP@k (``k=None``: whole list); relevant means ``label >= rel_threshold``.

    Divides by the query's total number of relevant documents (trec_eval, ranx).
    """
    return _single("map", y, scores, offsets, k, None, rel_threshold, no_relevant)


def reciprocal_rank(y, scores, offsets, k: int | None = None, *, rel_threshold: float = 1,
                    no_relevant: str = "one") -> np.ndarray:
    """Per-query reciprocal rank of the first relevant document within the top ``k``."""
    return _single("mrr", y, scores, offsets, k, None, rel_threshold, no_relevant)


def ideal_dcg(y, offsets, k: int | None = None) -> np.ndarray:
    """Per-query ideal DCG@k (labels sorted descending), gain ``2**label - 1``.

    Compute it on the full candidate list before truncating, then pass it as
    ``ndcg(..., ideal_dcg=...)`` or ``evaluate(..., ideal_dcg=...)`` for the truncated list.
    """
    y = _as_labels(y)
    offsets = _as_offsets(offsets, y.size)
    check_gain_labels(y, offsets)
    return _ideal_dcg_kernel(y, offsets, np.int64(_check_k(k)))


# ====================================================================== front door


def _labels_and_offsets(data, offsets, query_ids):
    """``(y, offsets, query_ids)`` from a Dataset, or from a label array and its offsets.

    A Dataset is recognised by its ``y`` and ``offsets`` (a label array has neither): the
    metrics sit below the data layer and never import it."""
    if hasattr(data, "y") and hasattr(data, "offsets"):
        if offsets is not None:
            raise TypeError(
                "evaluate(Dataset, scores, ...): offsets come from the Dataset; "
                "pass metrics by keyword (metrics=...)"
            )
        return data.y, data.offsets, data.query_ids if query_ids is None else query_ids
    if offsets is None:
        raise TypeError("evaluate(y, scores, offsets, ...): offsets is required with a label array")
    return data, offsets, query_ids


def _metric_specs(metrics: str | Iterable[str]) -> list[MetricSpec]:
    """The parsed metrics in the order asked, duplicates dropped; at least one."""
    if isinstance(metrics, str):
        metrics = (metrics,)
    specs: list[MetricSpec] = []
    for name in metrics:
        spec = parse_metric(name)
        if spec not in specs:
            specs.append(spec)
    if not specs:
        raise ValueError("metrics is empty; ask for at least one, e.g. 'ndcg@10'")
    return specs


def _ideal_matrix(ideal_dcg: np.ndarray | Mapping[str, np.ndarray], specs: list[MetricSpec],
                  n_queries: int) -> np.ndarray:
    """``evaluate``'s ``ideal_dcg`` as one column per NDCG metric of ``specs``; NaN where
    the ideal DCG of the given list applies."""
    ndcg_specs = [s for s in specs if s.kind == "ndcg"]
    ideal = np.full((n_queries, len(ndcg_specs)), np.nan)
    if isinstance(ideal_dcg, Mapping):
        wanted = {s.name: j for j, s in enumerate(ndcg_specs)}
        for key, arr in ideal_dcg.items():
            name = parse_metric(key).name
            if name not in wanted:
                raise ValueError(
                    f"ideal_dcg has an entry for {key!r}, which is not an NDCG metric "
                    f"in metrics {[s.name for s in specs]}"
                )
            ideal[:, wanted[name]] = _as_ideal(arr, n_queries, f"ideal_dcg[{key!r}]")
    else:
        if len(ndcg_specs) != 1:
            raise ValueError(
                f"ideal_dcg as one array needs exactly one NDCG metric in metrics, got "
                f"{[s.name for s in ndcg_specs]}; pass a mapping {{'ndcg@k': array}}"
            )
        ideal[:, 0] = _as_ideal(ideal_dcg, n_queries)
    return ideal


def _metric_means(values: np.ndarray, names: list[str]) -> dict[str, float]:
    n_queries = values.shape[0]
    with warnings.catch_warnings():
        # An all-NaN column ("exclude" and no query with relevant documents) is NaN.
        warnings.simplefilter("ignore", RuntimeWarning)
        means = np.nanmean(values, axis=0) if n_queries else np.full(len(names), np.nan)
    return {name: float(m) for name, m in zip(names, means)}


def _per_query_frame(values: np.ndarray, names: list[str], query_ids) -> pd.DataFrame:
    n_queries = values.shape[0]
    if query_ids is None:
        qids = np.arange(n_queries)
    else:
        qids = np.asarray(query_ids)
        if qids.shape != (n_queries,):
            raise ValueError(
                f"query_ids must have one id per query, shape ({n_queries},), got {qids.shape}"
            )
    return pd.DataFrame({
        "qid": np.tile(qids, len(names)),
        "metric": pd.Categorical(np.repeat(names, n_queries), categories=names),
        "value": values.T.ravel(),
    })


def evaluate(data, scores, offsets=None, metrics: str | Iterable[str] = DEFAULT_METRICS, *,
             no_relevant: str = "one", rel_threshold: float = 1,
             ideal_dcg: np.ndarray | Mapping[str, np.ndarray] | None = None,
             query_ids=None, per_query: bool = False) -> dict[str, float] | pd.DataFrame:
    """Evaluate one ranking (``scores``) with ranx-style metric strings.

    Parameters
    ----------
    data : a `ltrlib.data.Dataset` (then ``offsets`` and ``query_ids`` come from it), or
        the flat label array ``y`` (then ``offsets`` is required).
    scores : one score per document; higher ranks first, ties keep input order.
    offsets : query ``i`` is rows ``offsets[i]:offsets[i+1]`` (only with a label array).
    metrics : e.g. ``("ndcg@10", "map", "mrr@10")``; ``"ndcg"``/``"map"``/``"mrr"``
        without ``@k`` use the whole list. Case-insensitive, duplicates dropped.
    no_relevant : ``"one"`` (LightGBM), ``"zero"`` (ranx) or ``"exclude"`` (NaN, skipped
        in means). See the module docstring.
    rel_threshold : a label ``>=`` this is relevant for MAP and MRR.
    ideal_dcg : externally given per-query NDCG normaliser: an array when exactly one
        NDCG metric is requested, or a mapping ``{"ndcg@10": array, ...}``; NDCG metrics
        not in the mapping use the ideal DCG of the given list.
    query_ids : ids for the ``qid`` column of the per-query frame (default: the
        Dataset's ids, else query positions 0..n_queries-1).
    per_query : return per-query values instead of means.

    Returns
    -------
    ``{metric: mean}`` (NaN-skipping means under ``"exclude"``), or with
    ``per_query=True`` a tidy frame with columns ``qid, metric, value``, one row per
    query and metric, metrics in the requested order.
    """
    y, offsets, query_ids = _labels_and_offsets(data, offsets, query_ids)
    y = _as_labels(y)
    scores = _as_scores(scores, y.size)
    offsets = _as_offsets(offsets, y.size)
    n_queries = offsets.size - 1
    fill = _fill_value(no_relevant)
    threshold = _check_threshold(rel_threshold)
    specs = _metric_specs(metrics)
    if any(s.kind == "ndcg" for s in specs):
        check_gain_labels(y, offsets)
    ideal = None if ideal_dcg is None else _ideal_matrix(ideal_dcg, specs, n_queries)
    values = _compute(y, scores, offsets, specs, ideal, threshold, fill)
    names = [s.name for s in specs]
    if not per_query:
        return _metric_means(values, names)
    return _per_query_frame(values, names, query_ids)
