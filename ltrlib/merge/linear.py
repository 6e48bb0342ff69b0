"""Linear combination of local rankers' scores (§4 of the non-IID paper), and its optimiser.

The paper's merged model scores a query-document pair as

    s(q, d) = sum_i alpha_i * s_i(q, d),    alpha_i >= 0,  sum_i alpha_i = 1,

with the weights found by a grid search that maximises NDCG@10 on the client's D_merge.
For two models (§5.3) the paper sweeps alpha, *the weight of M2*, from 0 to 1 in steps
of 0.01: ``s = (1 - alpha) * s_1 + alpha * s_2``. The paper combines raw scores; we keep
that as the default (``normalisation="none"``) and offer per-query z-score and min-max
normalisation as options, since raw LambdaMART scores of two models need not share a
scale (then alpha mixes scale and trust).

Ties between weightings
    NDCG is piecewise constant in alpha, so several grid points often share the best
    value. We choose, among the weightings whose value is within ``1e-12`` of the best,
    the one closest (Euclidean) to the uniform weighting ``1/n`` (alpha closest to 0.5 for
    two models), then the first in grid order (the smaller alpha). Rationale: when D_merge
    cannot tell the candidates apart, it gives no evidence for trusting one local model
    more, so the least committed blend is chosen. This is a documented choice; the paper
    does not state one.

API (ranx-style: the algorithm and its optimiser side by side)
    `normalise_scores` per-query normalisation over flat arrays with offsets;
    `linear_merge` apply weights to score arrays; `optimize_linear` choose them (grid over
    the simplex, or coordinate ascent for many models) and return a `LinearMerge`, a
    `ltrlib.data.Scorer` holding the weights and, given ``models=``, the base models;
    `alpha_sweep` the tidy two-model sweep (``alpha, test_set, metric, value``) behind the
    alpha plot and widget, on precomputed scores (one scoring of each base model serves
    all 101 alphas);
    `linear_experiment` the whole §5.3 protocol for one split (both clients).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations

import numpy as np
import pandas as pd

from ltrlib.metrics.ranking import average_precision, ndcg, parse_metric, reciprocal_rank
from ltrlib.data.dataset import Dataset, Scorer
from ltrlib.merge.analysis import (hold_base_models, merged_model_name, per_query_frame,
                                   score_base_models, score_models)

__all__ = [
    "NORMALISATIONS",
    "LinearMerge",
    "LinearExperiment",
    "alpha_grid",
    "alpha_sweep",
    "linear_experiment",
    "linear_merge",
    "normalise_scores",
    "optimize_linear",
    "simplex_grid",
    "sweep_at",
]

NORMALISATIONS = ("none", "zscore", "minmax")
# Metric means closer than this are the same value computed along different paths.
_TIE = 1e-12


# --------------------------------------------------------------------------- normalisation


def _check_offsets(offsets, n_docs: int) -> np.ndarray:
    offsets = np.asarray(offsets, dtype=np.int64)
    if offsets.ndim != 1 or offsets.size < 2 or offsets[0] != 0 or offsets[-1] != n_docs \
            or np.any(np.diff(offsets) <= 0):
        raise ValueError(
            f"offsets must start at 0, end at n_docs={n_docs} and be strictly increasing "
            f"(got {offsets.size} entries ending at {offsets[-1] if offsets.size else 'nothing'})"
        )
    return offsets


def normalise_scores(scores, offsets, method: str = "none") -> np.ndarray:
    """Per-query normalisation of one model's scores, vectorised over query offsets.

    ``"none"`` returns the scores as float64; ``"zscore"`` subtracts the query's mean and
    divides by its (population) standard deviation; ``"minmax"`` maps the query's scores to
    [0, 1]. A query whose scores are all equal becomes all zeros under both (its ranking
    carries no preference, and zeros add nothing to a weighted sum).
    """
    if method not in NORMALISATIONS:
        raise ValueError(f"normalisation must be one of {NORMALISATIONS}, got {method!r}")
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim != 1:
        raise ValueError(f"scores must be 1-D (one per document), got shape {s.shape}")
    if not np.all(np.isfinite(s)):
        raise ValueError("scores contain NaN or infinite values")
    if method == "none":
        return s.copy()
    offsets = _check_offsets(offsets, s.size)
    starts, sizes = offsets[:-1], np.diff(offsets)
    if method == "zscore":
        mean = np.add.reduceat(s, starts) / sizes
        centred = s - np.repeat(mean, sizes)
        std = np.sqrt(np.add.reduceat(centred * centred, starts) / sizes)
        scale = np.repeat(std, sizes)
    else:
        lo = np.minimum.reduceat(s, starts)
        centred = s - np.repeat(lo, sizes)
        scale = np.repeat(np.maximum.reduceat(s, starts) - lo, sizes)
    # Relative test: a spread at rounding level of the scores is no spread.
    flat = scale <= 1e-12 * np.maximum(1.0, np.abs(s))
    out = np.zeros_like(s)
    np.divide(centred, scale, out=out, where=~flat)
    return out


# --------------------------------------------------------------------------- applying weights


def _score_matrix(scores, n_docs: int | None = None) -> tuple[list[str], np.ndarray]:
    """Model names and an (n_docs, n_models) float64 matrix from a mapping or sequence."""
    if isinstance(scores, Mapping):
        names = [str(k) for k in scores]
        cols = list(scores.values())
    elif isinstance(scores, np.ndarray) and scores.ndim == 2:
        names = [f"M{i + 1}" for i in range(scores.shape[1])]
        cols = list(scores.T)
    else:
        cols = list(scores)
        names = [f"M{i + 1}" for i in range(len(cols))]
    if len(cols) < 2:
        raise ValueError(f"merging needs scores of at least 2 models, got {len(cols)}")
    arrays = [np.asarray(c, dtype=np.float64) for c in cols]
    for name, a in zip(names, arrays):
        if a.ndim != 1:
            raise ValueError(f"scores of {name!r} must be 1-D, got shape {a.shape}")
        if a.size != arrays[0].size:
            raise ValueError(
                f"scores of {name!r} have {a.size} documents, those of {names[0]!r} {arrays[0].size}"
            )
    if n_docs is not None and arrays[0].size != n_docs:
        raise ValueError(f"scores have {arrays[0].size} documents, the dataset has {n_docs}")
    return names, np.column_stack(arrays)


def _check_weights(weights, names: Sequence[str]) -> np.ndarray:
    if isinstance(weights, Mapping):
        unknown = set(map(str, weights)) - set(names)
        if unknown:
            raise KeyError(f"weights for unknown models {sorted(unknown)} (models: {list(names)})")
        w = np.array([float(weights.get(n, 0.0)) for n in names])
    else:
        w = np.asarray(weights, dtype=np.float64).ravel()
    if w.size != len(names):
        raise ValueError(f"weights has {w.size} entries for {len(names)} models {list(names)}")
    if np.any(w < 0) or not np.isclose(w.sum(), 1.0, atol=1e-9):
        raise ValueError(
            f"weights must be >= 0 and sum to 1 (the paper's constraint), got {w.tolist()}"
        )
    return w


def linear_merge(scores, weights, offsets=None, normalisation: str = "none") -> np.ndarray:
    """The merged score ``sum_i weights[i] * s_i`` (after per-query normalisation, if any).

    ``scores``: a mapping ``{model: scores}``, a sequence of score arrays, or an
    (n_docs, n_models) array. ``weights``: one per model (a sequence in model order or a
    mapping by model name), non-negative, summing to 1. For two models, weights
    ``(1 - alpha, alpha)`` give the paper's alpha. ``offsets`` is needed only for a
    normalisation other than ``"none"``.
    """
    names, S = _score_matrix(scores)
    w = _check_weights(weights, names)
    S = _normalised(S, offsets, normalisation)
    return S @ w


def _normalised(S: np.ndarray, offsets, normalisation: str) -> np.ndarray:
    if normalisation not in NORMALISATIONS:
        raise ValueError(f"normalisation must be one of {NORMALISATIONS}, got {normalisation!r}")
    if normalisation == "none":
        return S
    if offsets is None:
        raise ValueError(f"normalisation={normalisation!r} is per query and needs offsets")
    return np.column_stack([normalise_scores(c, offsets, normalisation) for c in S.T])


# --------------------------------------------------------------------------- grids


def _steps(step: float, name: str = "step") -> int:
    """Number of grid intervals on [0, 1]; the grid must reach 1 exactly."""
    if not isinstance(step, (int, float)) or not 0 < step <= 1:
        raise ValueError(f"{name} must be in (0, 1], got {step!r}")
    m = round(1.0 / step)
    if not math.isclose(m * step, 1.0, rel_tol=1e-9):
        raise ValueError(
            f"{name}={step} does not divide [0, 1] into equal parts (1/{name} = {1 / step:.6g}); "
            "use e.g. 0.01, 0.02, 0.05, 0.1"
        )
    return m


def alpha_grid(step: float = 0.01) -> np.ndarray:
    """``0, step, ..., 1`` (the paper: step 0.01, 101 values), rounded to kill float drift."""
    m = _steps(step)
    return np.round(np.arange(m + 1) / m, 10)


def simplex_grid(n_models: int, step: float = 0.1) -> np.ndarray:
    """Every weight vector with entries in multiples of ``step`` summing to 1.

    Shape ``(C(m + n - 1, n - 1), n)`` with ``m = 1/step`` (stars and bars), in
    lexicographic order of the bar positions. ``n=2`` gives rows ``(1 - alpha, alpha)`` with
    alpha ascending. For n=3 at step 0.01 that is 5,151 points; beyond that use
    coordinate ascent.
    """
    if n_models < 2:
        raise ValueError(f"n_models must be >= 2, got {n_models}")
    m = _steps(step)
    size = math.comb(m + n_models - 1, n_models - 1)
    if size > 200_000:
        raise ValueError(
            f"a simplex grid of {n_models} models at step {step} has {size:,} points; "
            "use method='coordinate' or a larger step"
        )
    bars = np.array(list(combinations(range(m + n_models - 1), n_models - 1)), dtype=np.int64)
    # Parts are the gaps between consecutive bars (stars and bars).
    edges = np.column_stack([np.full(len(bars), -1), bars, np.full(len(bars), m + n_models - 1)])
    parts = np.diff(edges, axis=1) - 1
    # Reverse so that for two models the first column is 1 - alpha and alpha ascends.
    return np.round(parts[:, ::-1] / m, 10)


# --------------------------------------------------------------------------- optimiser


@dataclass
class LinearMerge:
    """The weights chosen by `optimize_linear`, how they were found, and the models they
    weigh: a `ltrlib.data.Scorer`.

    ``weights``: ``{model: weight}``; ``alpha`` is the weight of the second model (the
    paper's alpha, the weight of M2) when there are two; ``value`` the optimised metric
    on the data it was tuned on; ``trace`` one row per evaluated weighting (columns: one
    per model, ``value``, ``round`` for coordinate ascent); ``base_models``: ``{model:
    Scorer}`` in weight order, empty when tuned from score arrays alone (then only
    `score_from_base` works).
    """

    weights: dict[str, float]
    value: float
    metric: str
    normalisation: str
    method: str
    trace: pd.DataFrame = field(repr=False)
    base_models: dict[str, Scorer] = field(default_factory=dict, repr=False)

    @property
    def alpha(self) -> float:
        if len(self.weights) != 2:
            raise AttributeError(f"alpha is defined for two models, these weights have {len(self.weights)}")
        return float(list(self.weights.values())[1])

    def score(self, data: Dataset) -> np.ndarray:
        """Merged scores of ``data``: its base models score it, then the weights apply."""
        return self.score_from_base(data, score_base_models(self, data))

    def score_from_base(self, data: Dataset, base_scores) -> np.ndarray:
        """Merged scores of ``data`` from the base models' scores on it: a mapping by model
        name (any order) or a sequence in weight order. For callers that hold those scores
        already (an experiment scoring one test set for several merges)."""
        if isinstance(base_scores, Mapping):
            missing = [m for m in self.weights if m not in base_scores]
            if missing:
                raise KeyError(f"scores lack models {missing} (have {list(base_scores)})")
            base_scores = {m: base_scores[m] for m in self.weights}
        return linear_merge(base_scores, list(self.weights.values()), data.offsets,
                            self.normalisation)


# Documents per batched metric call: bounds the memory of the tiled copies (~40 MB).
_BATCH_DOCS = 4_000_000
_KERNELS = {"ndcg": ndcg, "map": average_precision, "mrr": reciprocal_rank}


def metric_means(y, offsets, M: np.ndarray, metrics: Sequence[str]) -> dict[str, np.ndarray]:
    """Mean of each metric for every column of the score matrix ``M`` (n_docs, k).

    The columns are evaluated in a few batched metric calls instead of ``k`` calls: the
    queries are tiled once per column into one long flat list (the per-call overhead of
    the metric kernels, not the sorting, dominates on D_merge-sized data). Values equal
    ``evaluate(y, M[:, j], offsets)`` with its defaults (``no_relevant="one"``).
    """
    y = np.asarray(y)
    offsets = np.asarray(offsets, dtype=np.int64)
    n_docs, k = M.shape
    n_q = offsets.size - 1
    specs = [parse_metric(m) for m in metrics]
    if n_q == 0:  # no queries: no mean (NaN), as numpy's mean of nothing, without its warning
        return {sp.name: np.full(k, np.nan) for sp in specs}
    out = {sp.name: np.empty(k) for sp in specs}
    per = max(1, _BATCH_DOCS // max(n_docs, 1))
    for lo in range(0, k, per):
        hi = min(k, lo + per)
        reps = hi - lo
        yy = np.tile(y, reps)
        oo = np.concatenate([offsets[:-1] + j * n_docs for j in range(reps)] + [[reps * n_docs]])
        ss = np.ascontiguousarray(M[:, lo:hi].T).ravel()
        for sp in specs:
            vals = _KERNELS[sp.kind](yy, ss, oo, sp.k)
            out[sp.name][lo:hi] = vals.reshape(reps, n_q).mean(axis=1)
    return out


def _pick(values: np.ndarray, W: np.ndarray) -> int:
    """Index of the best weighting under the documented tie rule (closest to uniform)."""
    if np.isnan(values).all():
        # An empty D_merge (a rare split on a small scale) gives no evidence: every
        # weighting ties, and the tie rule picks the uniform one.
        tied = np.arange(values.size)
    else:
        tied = np.flatnonzero(values >= np.nanmax(values) - _TIE)
    uniform = np.full(W.shape[1], 1.0 / W.shape[1])
    dist = np.linalg.norm(W[tied] - uniform, axis=1)
    # argmin returns the first minimum: the earliest grid point (smallest alpha) wins.
    return int(tied[np.argmin(np.round(dist, 12))])


def optimize_linear(data, scores, *, metric: str = "ndcg@10", step: float = 0.01,
                    method: str = "auto", normalisation: str = "none",
                    max_rounds: int = 20, models: Mapping[str, Scorer] | None = None) -> LinearMerge:
    """Choose the merge weights that maximise ``metric`` on ``data`` (the client's D_merge).

    Parameters
    ----------
    data : the `Dataset` the weights are tuned on (labels and query offsets).
    scores : ``{model: scores on data}`` (or a sequence; models are then M1, M2, ...).
        For two models the result's ``alpha`` is the weight of the second.
    metric : the selection metric; the paper uses NDCG@10.
    step : grid resolution on [0, 1]; the paper's 0.01.
    method : ``"grid"``: exhaustive search of `simplex_grid` (the paper's grid search;
        for two models exactly the alpha sweep); ``"coordinate"``: coordinate ascent
        (Metzler and Croft): starting from uniform weights, for each model in turn try
        ``w = t * e_i + (1 - t) * w_rest`` for every ``t`` on the grid, keep the best
        (a change only on strict improvement), until a full round changes nothing or
        ``max_rounds``. ``"auto"``: grid when it has at most 20,000 points, else coordinate.
    normalisation : ``"none"`` (paper), ``"zscore"`` or ``"minmax"``, per query.
    models : the base models behind ``scores``, by the same names; the result holds them,
        so that its ``score(data)`` works on new data. None: ``score_from_base`` only.

    Ties are broken by the rule in the module docstring (closest to uniform, then smaller
    alpha / earlier grid point).
    """
    if method not in ("auto", "grid", "coordinate"):
        raise ValueError(f"method must be 'auto', 'grid' or 'coordinate', got {method!r}")
    names, S = _score_matrix(scores, data.n_docs)
    held = hold_base_models(names, models)
    y, off = data.y, data.offsets
    S = _normalised(S, off, normalisation)
    n = S.shape[1]
    m = _steps(step)
    if method == "auto":
        method = "grid" if math.comb(m + n - 1, n - 1) <= 20_000 else "coordinate"
    name = parse_metric(metric).name

    def values_of(W: np.ndarray) -> np.ndarray:
        return metric_means(y, off, S @ W.T, (name,))[name]

    if method == "grid":
        W = simplex_grid(n, step)
        values = values_of(W)
        best = _pick(values, W)
        trace = pd.DataFrame(W, columns=names).assign(value=values, round=0)
        return LinearMerge(dict(zip(names, W[best].tolist())), float(values[best]),
                           parse_metric(metric).name, normalisation, "grid", trace, held)

    ts = alpha_grid(step)
    w = np.full(n, 1.0 / n)
    current = float(values_of(w[None, :])[0])
    rows = [(*w, current, 0)]
    for rnd in range(1, max_rounds + 1):
        changed = False
        for i in range(n):
            rest = w.copy()
            rest[i] = 0.0
            total = rest.sum()
            # w == e_i: the other models have no direction yet; spread evenly over them.
            rest = rest / total if total > 0 else np.where(np.arange(n) == i, 0.0, 1.0 / (n - 1))
            e = np.zeros(n)
            e[i] = 1.0
            cand = np.round(ts[:, None] * e + (1 - ts[:, None]) * rest, 12)
            values = values_of(cand)
            rows.extend((*c, v, rnd) for c, v in zip(cand, values))
            j = _pick(values, cand)
            if values[j] > current + _TIE:
                w, current, changed = cand[j], float(values[j]), True
        if not changed:
            break
    trace = pd.DataFrame(rows, columns=[*names, "value", "round"])
    return LinearMerge(dict(zip(names, w.tolist())), float(current), parse_metric(metric).name,
                       normalisation, "coordinate", trace, held)


# --------------------------------------------------------------------------- sweep


def alpha_sweep(data: Mapping[str, tuple], *, step: float = 0.01,
                metrics: str | Iterable[str] = ("ndcg@10", "map", "mrr@10"),
                normalisation: str = "none") -> pd.DataFrame:
    """Metrics of ``(1 - alpha) * s_1 + alpha * s_2`` for every alpha on the grid.

    ``data``: ``{test set label: (Dataset, (scores_1, scores_2))}``, e.g. D_merge and the
    full test set. Returns a tidy frame ``alpha, test_set, metric, value`` (means over
    queries), alpha ascending.
    """
    alphas = alpha_grid(step)
    metrics = (metrics,) if isinstance(metrics, str) else tuple(metrics)
    frames = []
    for label, (ds, pair) in data.items():
        _, S = _score_matrix(pair, ds.n_docs)
        if S.shape[1] != 2:
            raise ValueError(f"alpha_sweep merges two models; {label!r} has {S.shape[1]}")
        S = _normalised(S, ds.offsets, normalisation)
        means = metric_means(ds.y, ds.offsets, S @ np.stack([1 - alphas, alphas]), metrics)
        wide = pd.DataFrame({"alpha": alphas, **means})
        frames.append(wide.melt(id_vars="alpha", var_name="metric", value_name="value")
                      .assign(test_set=label))
    out = pd.concat(frames, ignore_index=True)[["alpha", "test_set", "metric", "value"]]
    return out.sort_values(["test_set", "metric", "alpha"], kind="stable", ignore_index=True)


# --------------------------------------------------------------------------- the experiment


@dataclass
class LinearExperiment:
    """§5.3 on one split: for each client, alpha tuned on its D_merge, applied to the test.

    ``choices``: one row per client (``split, client, model, alpha, merge_value``);
    ``sweep``: tidy ``split, client, alpha, test_set, metric, value`` with test sets
    ``"D_merge"`` (that client's) and ``"test"`` (the full test set);
    ``per_query``: tidy ``split, model, qid, metric, value`` on the full test set for the
    two local models and each client's merged model (M12α, M21α);
    ``merges``: ``{merged model name: LinearMerge}``; ``test_scores``: every model's scores
    on the full test set, by its name in ``per_query`` (what a notebook writes run files
    from, `ltrlib.report.Reporter.run_file`); ``scorers``: those models as
    `ltrlib.data.Scorer`s (the local models, then the merges), to score other data.
    """

    split: str
    choices: pd.DataFrame
    sweep: pd.DataFrame
    per_query: pd.DataFrame
    merges: dict[str, LinearMerge]
    test_scores: dict[str, np.ndarray] = field(repr=False)
    scorers: dict[str, Scorer] = field(default_factory=dict, repr=False)


def linear_experiment(split, models: Mapping[str, object], *, step: float = 0.01,
                      normalisation: str = "none", select_metric: str = "ndcg@10",
                      metrics: Sequence[str] = ("ndcg@10", "map", "mrr@10"),
                      sweep: bool = True) -> LinearExperiment:
    """Run the paper's linear-combination protocol on one non-IID split.

    ``split``: a `ltrlib.noniid.splits.NonIIDSplit` (any object with ``.name``,
    ``.full.test`` and ``.clients``, each client with ``.merge``). ``models``: the two
    local rankers in client order, ``{"M1": ranker, "M2": ranker}`` (any
    `ltrlib.data.Scorer`). Client ``i`` tunes alpha (the weight of the second model) on its own
    D_merge by ``select_metric``; its merged model is named ``M12α`` for client 1 and
    ``M21α`` for client 2 (the paper's notation). Everything is evaluated on the full
    test set, the paper's yardstick.
    """
    if len(models) != 2:
        raise ValueError(f"linear_experiment merges two local models, got {list(models)}")
    names = list(models)
    test = split.full.test
    test_scores = score_models(models, test)
    choices, sweeps, merged = [], [], {}
    scores_out = dict(test_scores)
    for i, client in enumerate(split.clients):
        merge_scores = score_models(models, client.merge)
        fit = optimize_linear(client.merge, merge_scores, metric=select_metric, step=step,
                              method="grid", normalisation=normalisation, models=models)
        name = merged_model_name(i, len(split.clients), "α")
        merged[name] = fit
        scores_out[name] = fit.score_from_base(test, test_scores)
        choices.append({"split": split.name, "client": _client_name(client, i), "model": name,
                        "alpha": fit.alpha, "merge_queries": client.merge.n_queries,
                        f"merge_{fit.metric}": fit.value})
        if sweep:
            sw = alpha_sweep({"D_merge": (client.merge, [merge_scores[n] for n in names]),
                              "test": (test, [test_scores[n] for n in names])},
                             step=step, metrics=metrics, normalisation=normalisation)
            sweeps.append(sw.assign(split=split.name, client=_client_name(client, i)))
    per_query = per_query_frame(test, scores_out, metrics).assign(split=split.name)
    sweep_frame = (pd.concat(sweeps, ignore_index=True)[
        ["split", "client", "alpha", "test_set", "metric", "value"]] if sweeps
        else pd.DataFrame(columns=["split", "client", "alpha", "test_set", "metric", "value"]))
    return LinearExperiment(split.name, pd.DataFrame(choices), sweep_frame,
                            per_query[["split", "model", "qid", "metric", "value"]], merged,
                            scores_out, {**hold_base_models(names, models), **merged})


def _client_name(client, i: int) -> str:
    return str(getattr(client, "name", None) or f"client{i + 1}")


def sweep_at(sweep: pd.DataFrame, alpha: float) -> pd.DataFrame:
    """The metric table of one alpha: rows ``test_set``, columns ``metric`` (the nearest grid
    alpha is used, so a slider value with float drift still hits the grid)."""
    if sweep.empty:
        raise ValueError("sweep is empty")
    grid = np.sort(sweep.alpha.unique())
    a = float(grid[np.argmin(np.abs(grid - float(alpha)))])
    part = sweep[np.isclose(sweep.alpha, a)]
    table = part.pivot_table(index="test_set", columns="metric", values="value", aggfunc="first")
    table.columns.name = f"alpha = {a:.2f}"
    return table
