"""Pairwise uptake: how much of the synthetic twin's within-host term a model's scores hold.

On the synthetic twin (`ltrlib.data.synthetic`) a document's utility is a univariate
part plus a *pairwise* term, its standing on freshness among the same host's documents
in its list. `ltrlib.data.synthetic.oracle_scores` gives both per document
(term = ``ORACLE - ORACLE_UNIVARIATE``). NDCG tells whether a stage-2 model ranks
better, not whether it got there through the pairwise structure; the uptake asks that
directly.

Definition
    The within-query partial correlation between a model's scores ``s`` and the term
    ``t``, controlling for the univariate utility ``u``:

    1. centre ``s``, ``u`` and ``t`` within each query (query fixed effects), because a
       ranking only compares documents of one list, so anything constant per query
       (a model's per-query offset, a query's difficulty) must not count;
    2. residualise the centred ``s`` and ``t`` on the centred ``u`` by one OLS slope
       pooled over all queries, so that a model is not credited for the part of the
       term that the univariate utility already predicts, nor for ranking well on
       ``u`` alone;
    3. correlate the two residuals.

    It is scale-free: positive rescaling and per-query shifts of the scores leave it
    unchanged, so models on different score scales compare. 1 means that all the
    scores' variation beyond ``u`` is the term (the oracle ``u + t``); 0 means none of
    it is (the univariate oracle ``u``); a negative value ranks against the standing.

    Being a correlation, it measures how cleanly the term is present in the scores, not
    the weight a model gives it: ``u + 0.01 t`` scores 1, as ``u + t`` does, because the
    term can be read back exactly from either. For a real model, whose scores also carry
    errors of their own, the uptake grows with the weight on the term relative to those
    errors. Squared, it is the share of the term's variance beyond ``u`` that a linear
    function of the scores' variation beyond ``u`` recovers.

Conventions
    * NaN when the term has no within-query variance left after residualisation (e.g.
      ``pairwise_weight=0``, or lists without two documents of one host): there is
      nothing to take up.
    * 0 when the scores have no within-query variance left after residualisation (they
      are constant within queries, or a function of ``u`` alone): nothing is taken up.
    * A residual whose norm is below ``1e-9`` of the norm before the step is treated as
      zero: that is float64 rounding (of centring scores with large per-query offsets),
      not signal, and a correlation would turn it into an arbitrary value in [-1, 1].

`pairwise_uptake_by_query` is the same statistic within each query on its own (its
own slope on ``u``), for paired comparisons of models over queries. `uptake_table`
compares named models with a reference.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["pairwise_uptake", "pairwise_uptake_by_query", "uptake_table"]

# Residual norms at or below this share of the norm before the step are float64 rounding.
_ROUNDING = 1e-9


def pairwise_uptake(scores, univariate_utility, pairwise_term, offsets) -> float:
    """The pooled within-query partial correlation of ``scores`` with ``pairwise_term``
    given ``univariate_utility`` (see the module docstring), in [-1, 1], NaN when the
    term has no within-query variance beyond the univariate utility.

    All arrays are flat, one entry per document; query ``q`` owns rows
    ``offsets[q]:offsets[q+1]``.
    """
    return _Baseline.of(univariate_utility, pairwise_term, offsets, pooled=True).uptake(scores)


def pairwise_uptake_by_query(scores, univariate_utility, pairwise_term, offsets) -> np.ndarray:
    """The uptake of each query on its own: one float64 per query (``len(offsets) - 1``),
    each query residualised on its own slope. NaN for a query whose term has no variance
    beyond the univariate utility (single-document lists, lists without two documents of
    one host). Meant for paired tests between models over queries; the mean of these is
    not `pairwise_uptake`, which pools the slope and the sums over queries.
    """
    return _Baseline.of(univariate_utility, pairwise_term, offsets, pooled=False).uptake(scores)


def uptake_table(scores_by_model: Mapping[str, np.ndarray], univariate_utility, pairwise_term, offsets,
                 reference: str | None = "λMART*") -> pd.DataFrame:
    """One row per model, in the mapping's order: ``model, uptake, uptake_minus_reference``.

    ``uptake_minus_reference`` is the model's `pairwise_uptake` minus the ``reference``
    model's (0 on the reference's own row); NaN for every row when ``reference`` is None
    or not among the models. The default is the stage-2 univariate λMART of the
    Bi-LambdaMART tables, the model a bivariate one has to improve on.
    """
    if not isinstance(scores_by_model, Mapping):
        raise TypeError(f"scores_by_model must map model names to score arrays, got "
                        f"{type(scores_by_model).__name__}")
    baseline = _Baseline.of(univariate_utility, pairwise_term, offsets, pooled=True)
    uptake = {str(name): baseline.uptake(scores, f"scores_by_model[{name!r}]")
              for name, scores in scores_by_model.items()}
    ref = uptake.get(reference, np.nan) if reference is not None else np.nan
    return pd.DataFrame({"model": list(uptake), "uptake": list(uptake.values()),
                         "uptake_minus_reference": [u - ref for u in uptake.values()]},
                        columns=["model", "uptake", "uptake_minus_reference"])


@dataclass(frozen=True)
class _Queries:
    """The query layout, and whether sums run over all queries (the pooled uptake) or
    per query (`pairwise_uptake_by_query`)."""

    query: np.ndarray  # row -> query index
    n_queries: int
    pooled: bool

    def sum(self, values: np.ndarray) -> np.ndarray | float:
        return float(values.sum()) if self.pooled else self._per_query(values)

    def spread(self, per_query_or_pooled) -> np.ndarray | float:
        """A per-query (or pooled) value spread over the rows."""
        return per_query_or_pooled if self.pooled else per_query_or_pooled[self.query]

    def centre(self, x: np.ndarray) -> np.ndarray:
        """``x`` minus its query mean; a query whose values are equal up to rounding
        becomes exactly 0, so that rounding is not mistaken for within-query variation."""
        sizes = np.bincount(self.query, minlength=self.n_queries)
        centred = x - (self._per_query(x) / np.maximum(sizes, 1))[self.query]
        flat = self._per_query(centred * centred) <= _ROUNDING**2 * self._per_query(x * x)
        centred[flat[self.query]] = 0.0
        return centred

    def _per_query(self, values: np.ndarray) -> np.ndarray:
        return np.bincount(self.query, weights=values, minlength=self.n_queries)


@dataclass(frozen=True)
class _Baseline:
    """What every model's uptake on one partition shares, computed once: the centred
    univariate utility and the term residualised on it."""

    queries: _Queries
    univariate: np.ndarray  # centred within queries
    term: np.ndarray  # centred, then residualised on the univariate utility
    term_sq: np.ndarray | float  # the term's sum of squares; 0 where nothing is left

    @classmethod
    def of(cls, univariate_utility, pairwise_term, offsets, pooled: bool) -> "_Baseline":
        u = _as_values(univariate_utility, "univariate_utility")
        t = _as_values(pairwise_term, "pairwise_term", len(u), "univariate_utility")
        offsets = _as_offsets(offsets, len(u))
        n_queries = offsets.size - 1
        queries = _Queries(np.repeat(np.arange(n_queries), np.diff(offsets)), n_queries, pooled)
        univariate = queries.centre(u)
        term, term_sq = _residualise(queries, queries.centre(t), univariate)
        return cls(queries, univariate, term, term_sq)

    def uptake(self, scores, name: str = "scores") -> np.ndarray | float:
        s = _as_values(scores, name, self.univariate.size, "univariate_utility")
        residual, residual_sq = _residualise(self.queries, self.queries.centre(s), self.univariate)
        covariance = self.queries.sum(residual * self.term)
        with np.errstate(invalid="ignore", divide="ignore"):
            r = covariance / np.sqrt(residual_sq * self.term_sq)
        # No score variation beyond u: nothing taken up (0); no term left: undefined (NaN).
        r = np.where(residual_sq > 0, r, 0.0)
        r = np.where(self.term_sq > 0, r, np.nan)
        r = np.clip(r, -1.0, 1.0)  # rounding can step just past +-1 for the oracle
        return float(r) if self.queries.pooled else r


def _residualise(queries: _Queries, x: np.ndarray, univariate: np.ndarray):
    """``x`` (centred) minus its OLS fit on the centred univariate utility, and the
    residual's sum of squares, 0 where the residual is rounding."""
    uu = queries.sum(univariate * univariate)
    with np.errstate(invalid="ignore", divide="ignore"):
        slope = np.where(uu > 0, queries.sum(x * univariate) / uu, 0.0)
    residual = x - queries.spread(slope) * univariate
    residual_sq = queries.sum(residual * residual)
    residual_sq = np.where(residual_sq <= _ROUNDING**2 * queries.sum(x * x), 0.0, residual_sq)
    return residual, (float(residual_sq) if queries.pooled else residual_sq)


def _as_values(values, name: str, n: int | None = None, other: str = "") -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D (one value per document), got shape {arr.shape}")
    if arr.dtype.kind not in "biuf":
        raise ValueError(f"{name} must be numeric, got dtype {arr.dtype}")
    if n is not None and arr.size != n:
        raise ValueError(f"{name} has {arr.size} entries but {other} has {n}; they must be equal")
    arr = arr.astype(np.float64)  # a copy: the caller's array is never written
    bad = ~np.isfinite(arr)
    if bad.any():
        raise ValueError(f"{name} has {int(bad.sum())} NaN or infinite values (first at position "
                         f"{int(np.argmax(bad))}); the uptake needs finite ones")
    return arr


def _as_offsets(offsets, n_docs: int) -> np.ndarray:
    arr = np.asarray(offsets)
    if arr.ndim != 1 or arr.size < 1:
        raise ValueError(f"offsets must be 1-D with n_queries + 1 entries, got shape {arr.shape}")
    if arr.dtype.kind not in "iuf" or (arr.dtype.kind == "f" and not np.all(arr == np.round(arr))):
        raise ValueError(f"offsets must be integers, got dtype {arr.dtype}")
    arr = arr.astype(np.int64)
    if arr[0] != 0 or arr[-1] != n_docs:
        raise ValueError(f"offsets must run from 0 to the number of documents ({n_docs}), "
                         f"got offsets[0]={arr[0]}, offsets[-1]={arr[-1]}")
    down = np.flatnonzero(np.diff(arr) < 0)
    if down.size:
        q = int(down[0])
        raise ValueError(f"offsets must be non-decreasing; offsets[{q}]={arr[q]} > offsets[{q + 1}]={arr[q + 1]}")
    return arr
