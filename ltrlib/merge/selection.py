"""Per-query ranker selection: beyond the paper, a third way to merge local models.

Instead of blending scores (linear combination) or learning on them (stacking), pick *one*
local model per query. A classifier trained on the client's D_merge predicts, from
query-level aggregates of the features, which local model ranks the query better by
NDCG@10; at test time each query is ranked by the model it picks. The motivation is the
non-IID setting itself: a query that looks like client 1's data (its category mix shows in
its feature aggregates) should be ranked by M1.

Training labels and weights
    The label of a D_merge query is the model with the highest per-query NDCG@10 there.
    Queries on which the models tie carry no information and are left out. Each query is
    weighted by its *regret* (best minus second-best NDCG@10), rescaled to mean 1, so the
    weighted log-loss focuses on queries where the choice matters. With fewer than
    ``min_queries`` informative queries, or only one winning model among them, the
    selector falls back to the model with the best mean on D_merge (``info["fallback"]``).

Features (`query_aggregates`)
    Per query and feature: mean, standard deviation and maximum over its documents, plus
    the number of documents; optionally the same aggregates of every local model's scores
    and the within-query correlation of each pair of models' scores (where the models
    agree the choice matters little). All are computed with ``np.add.reduceat`` /
    ``np.maximum.reduceat`` over query offsets, with no per-query loop.

The classifier is a small LightGBM model (binary for two models, multiclass beyond).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations

import numpy as np
import pandas as pd

from ltrlib import timing
from ltrlib.data.dataset import Dataset, Scorer
from ltrlib.merge.analysis import hold_base_models, score_base_models
from ltrlib.metrics.ranking import ndcg, parse_metric, evaluate

__all__ = [
    "AGGREGATES",
    "OracleChoice",
    "RankerSelector",
    "fit_selector",
    "oracle_choice",
    "per_query_metric",
    "query_aggregates",
    "select_scores",
    "selection_experiment",
]

AGGREGATES = ("mean", "std", "max", "min")
_TIE = 1e-12

DEFAULT_SELECTOR_PARAMS = {
    # D_merge holds a few hundred queries: shallow trees, strong leaf minimum, subsampling.
    "learning_rate": 0.05,
    "num_leaves": 7,
    "min_data_in_leaf": 10,
    "feature_fraction": 0.5,
    "bagging_fraction": 0.8,
    "bagging_freq": 1,
    "lambda_l2": 1.0,
    "verbosity": -1,
    "deterministic": True,
    "force_row_wise": True,
    "num_threads": 1,  # one row per query: too little work per tree to share between threads
}


def _reduce(values: np.ndarray, offsets: np.ndarray, stats: Sequence[str]) -> list[np.ndarray]:
    """Per-query aggregates of the columns of ``values`` (n_docs, k) -> list of (n_queries, k)."""
    starts, sizes = offsets[:-1], np.diff(offsets)[:, None]
    out = []
    mean = None
    for stat in stats:
        if stat == "mean" or (stat == "std" and mean is None):
            mean = np.add.reduceat(values, starts, axis=0) / sizes
        if stat == "mean":
            out.append(mean)
        elif stat == "std":
            centred = values - np.repeat(mean, sizes.ravel(), axis=0)
            out.append(np.sqrt(np.add.reduceat(centred * centred, starts, axis=0) / sizes))
        elif stat == "max":
            out.append(np.maximum.reduceat(values, starts, axis=0))
        elif stat == "min":
            out.append(np.minimum.reduceat(values, starts, axis=0))
        else:
            raise ValueError(f"stats entries must be among {AGGREGATES}, got {stat!r}")
    return out


def query_aggregates(ds, scores: Mapping[str, np.ndarray] | None = None, *,
                     stats: Sequence[str] = ("mean", "std", "max"),
                     agreement: bool = True) -> pd.DataFrame:
    """Query-level features: one row per query (index ``qid``, dataset order).

    Columns ``<feature>:<stat>`` for every feature of ``ds`` and every stat in ``stats``
    (population std), then ``n_docs``; with ``scores`` also ``score_<model>:<stat>`` and,
    if ``agreement``, ``corr_<a>_<b>``: the within-query Pearson correlation of two models'
    scores (0 when either is constant in the query).
    """
    stats = tuple(stats)
    if not stats:
        raise ValueError(f"stats must name at least one of {AGGREGATES}")
    off = ds.offsets
    X = ds.X.astype(np.float64)
    blocks = _reduce(X, off, stats)
    cols = {f"{f}:{s}": None for s in stats for f in ds.feature_names}
    data = np.concatenate(blocks, axis=1)
    frame = pd.DataFrame(data, columns=list(cols), index=pd.Index(ds.query_ids, name="qid"))
    frame["n_docs"] = ds.group_sizes.astype(np.float64)
    if scores:
        names = [str(k) for k in scores]
        S = np.column_stack([np.asarray(scores[k], dtype=np.float64) for k in scores])
        if S.shape[0] != ds.n_docs:
            raise ValueError(f"scores have {S.shape[0]} documents, {ds.name!r} has {ds.n_docs}")
        for s, block in zip(stats, _reduce(S, off, stats)):
            for j, name in enumerate(names):
                frame[f"score_{name}:{s}"] = block[:, j]
        if agreement and len(names) > 1:
            sizes = np.diff(off)
            mean = np.add.reduceat(S, off[:-1], axis=0) / sizes[:, None]
            C = S - np.repeat(mean, sizes, axis=0)
            sd = np.sqrt(np.add.reduceat(C * C, off[:-1], axis=0))
            for a, b in combinations(range(len(names)), 2):
                cov = np.add.reduceat(C[:, a] * C[:, b], off[:-1])
                den = sd[:, a] * sd[:, b]
                corr = np.zeros_like(cov)
                np.divide(cov, den, out=corr, where=den > 1e-12)
                frame[f"corr_{names[a]}_{names[b]}"] = corr
    return frame


def per_query_metric(ds, scores: Mapping[str, np.ndarray], metric: str = "ndcg@10") -> np.ndarray:
    """(n_queries, n_models) per-query values of ``metric`` for each model's scores."""
    spec = parse_metric(metric)
    cols = []
    for s in scores.values():
        if spec.kind == "ndcg":
            cols.append(ndcg(ds.y, s, ds.offsets, spec.k))
        else:
            pq = evaluate(ds, s, metrics=(spec.name,), per_query=True)
            cols.append(pq.value.to_numpy())
    return np.column_stack(cols)


def oracle_choice(ds, scores: Mapping[str, np.ndarray], metric: str = "ndcg@10") -> np.ndarray:
    """The best model per query by ``metric`` on ``ds``'s own labels (first on ties).

    On a test set this is an upper bound for any selector, not a method.
    """
    return per_query_metric(ds, scores, metric).argmax(axis=1)


def select_scores(ds, scores: Mapping[str, np.ndarray], choice: np.ndarray) -> np.ndarray:
    """Per document, the score of the model chosen for its query."""
    S = np.column_stack([np.asarray(v, dtype=np.float64) for v in scores.values()])
    choice = np.asarray(choice, dtype=np.int64)
    if choice.shape != (ds.n_queries,) or choice.min() < 0 or choice.max() >= S.shape[1]:
        raise ValueError(f"choice must hold one model index in 0..{S.shape[1] - 1} per query")
    return S[np.arange(ds.n_docs), np.repeat(choice, ds.group_sizes)]


@dataclass
class RankerSelector:
    """A fitted per-query selector (see the module docstring): a `ltrlib.data.Scorer`.

    ``models``: model names in score order; ``booster``: the LightGBM classifier (None
    for the fallback); ``default``: the model index used by the fallback; ``columns``:
    the query-feature columns it was trained on; ``info``: training summary;
    ``base_models``: ``{name: Scorer}`` in score order, empty when fitted from score arrays
    alone (then only `score_from_base` works).
    """

    models: tuple[str, ...]
    booster: object
    default: int
    columns: tuple[str, ...]
    include_scores: bool
    info: dict = field(default_factory=dict)
    base_models: dict[str, Scorer] = field(default_factory=dict, repr=False)

    def _features(self, ds, scores) -> np.ndarray:
        missing = [m for m in self.models if m not in scores]
        if missing:
            raise KeyError(f"scores lack models {missing} (selector trained on {list(self.models)})")
        ordered = {m: scores[m] for m in self.models}
        agg = query_aggregates(ds, ordered if self.include_scores else None)
        absent = [c for c in self.columns if c not in agg.columns]
        if absent:
            raise ValueError(f"{ds.name!r} lacks query features the selector was trained on, e.g. {absent[:3]}")
        return agg[list(self.columns)].to_numpy(np.float64)

    def proba(self, ds, scores) -> np.ndarray:
        """(n_queries, n_models) probability that each model ranks the query best."""
        n = len(self.models)
        if self.booster is None:
            return np.eye(n)[np.full(ds.n_queries, self.default)]
        p = np.asarray(self.booster.predict(self._features(ds, scores)))
        return np.column_stack([1 - p, p]) if p.ndim == 1 else p

    def choose(self, ds, scores) -> np.ndarray:
        """The chosen model index per query (ties to the first model)."""
        return self.proba(ds, scores).argmax(axis=1)

    def score(self, data: Dataset) -> np.ndarray:
        """Per-document scores of ``data``: its base models score it, and each query is
        ranked by the model chosen for it."""
        return self.score_from_base(data, score_base_models(self, data))

    def score_from_base(self, data: Dataset, base_scores: Mapping[str, np.ndarray]) -> np.ndarray:
        """`score` from the base models' scores on ``data`` (by name), for callers that hold
        those scores already."""
        ordered = {m: base_scores[m] for m in self.models}
        return select_scores(data, ordered, self.choose(data, base_scores))


@dataclass
class OracleChoice:
    """Per query, the base model that ranks it best by ``metric`` on the data's own labels
    (`oracle_choice`): an upper bound for any selector, not a method, since it reads the
    labels it is judged by. A `ltrlib.data.Scorer`, so that its ranking is written and read
    back like the selectors'. ``base_models``: ``{name: Scorer}`` in choice order."""

    base_models: dict[str, Scorer]
    metric: str = "ndcg@10"

    def score(self, data: Dataset) -> np.ndarray:
        """Per-document scores of ``data``: each query ranked by its best base model."""
        return self.score_from_base(data, score_base_models(self, data))

    def score_from_base(self, data: Dataset, base_scores: Mapping[str, np.ndarray]) -> np.ndarray:
        """`score` from the base models' scores on ``data`` (by name), for callers that hold
        those scores already."""
        missing = [m for m in self.base_models if m not in base_scores]
        if missing:
            raise KeyError(f"scores lack models {missing} (the oracle chooses among {list(self.base_models)})")
        ordered = {m: base_scores[m] for m in self.base_models}
        return select_scores(data, ordered, oracle_choice(data, ordered, self.metric))


def fit_selector(ds, scores: Mapping[str, np.ndarray], *, metric: str = "ndcg@10",
                 include_scores: bool = True, num_boost_round: int = 100,
                 params: Mapping | None = None, min_queries: int = 20,
                 seed: int = 0, models: Mapping[str, Scorer] | None = None) -> RankerSelector:
    """Train a per-query selector on ``ds`` (the client's D_merge) and the local models' scores.

    ``models``: the local models behind ``scores``, by the same names; the selector holds
    them, so that its ``score(data)`` works on new data. None: ``score_from_base`` only."""
    if len(scores) < 2:
        raise ValueError(f"selection needs at least 2 models, got {list(scores)}")
    names = tuple(str(k) for k in scores)
    held = hold_base_models(names, models)
    values = per_query_metric(ds, scores, metric)
    order = np.sort(values, axis=1)
    regret = order[:, -1] - order[:, -2]
    informative = regret > _TIE
    label = values.argmax(axis=1)
    means = values.mean(axis=0)
    default = int(np.argmax(means))
    agg = query_aggregates(ds, scores if include_scores else None)
    columns = tuple(agg.columns)
    info = {"queries": int(ds.n_queries), "informative_queries": int(informative.sum()),
            "wins": {m: int((label[informative] == i).sum()) for i, m in enumerate(names)},
            "metric": parse_metric(metric).name, "fallback": False}
    classes = np.unique(label[informative])
    if informative.sum() < min_queries or classes.size < 2:
        info["fallback"] = True
        return RankerSelector(names, None, default, columns, include_scores, info, held)

    import lightgbm as lgb

    n = len(names)
    w = regret[informative] / regret[informative].mean()
    p = {**DEFAULT_SELECTOR_PARAMS, **(params or {}), "seed": int(seed)}
    p.update({"objective": "binary"} if n == 2 else {"objective": "multiclass", "num_class": n})
    dtrain = lgb.Dataset(agg.to_numpy(np.float64)[informative], label=label[informative],
                         weight=w, params={"feature_pre_filter": False, "verbosity": -1})
    with timing.fitting():
        booster = lgb.train(p, dtrain, num_boost_round=int(num_boost_round))
    return RankerSelector(names, booster, default, columns, include_scores, info, held)


@dataclass
class SelectionExperiment:
    """Per-query selection on one split: ``per_query`` (tidy test results of each client's
    selector, ``M12sel`` / ``M21sel``, and the oracle), ``choices`` (share of test queries
    routed to each model), ``selectors``; ``scorers``: every model of ``per_query`` as a
    `ltrlib.data.Scorer`, by its name there (the selectors and the `OracleChoice`), to score
    other data; ``test_scores``: their scores on the full test set, by the same names, what
    a notebook writes run files from (`ltrlib.report.Reporter.run_file`)."""

    split: str
    per_query: pd.DataFrame
    choices: pd.DataFrame
    selectors: dict[str, RankerSelector]
    scorers: dict[str, Scorer] = field(default_factory=dict, repr=False)
    test_scores: dict[str, np.ndarray] = field(default_factory=dict, repr=False)


def selection_experiment(split, models: Mapping[str, object], *, seed: int = 0,
                         metrics: Sequence[str] = ("ndcg@10", "map", "mrr@10"),
                         select_metric: str = "ndcg@10", oracle: bool = True,
                         test_scores: Mapping[str, np.ndarray] | None = None,
                         ) -> SelectionExperiment:
    """Train each client's selector on its D_merge; evaluate on the full test set.

    ``oracle=True`` adds ``oracle`` (per test query the better local model by its own
    labels), an upper bound that no method can reach, to put the gains in scale.
    """
    from ltrlib.merge.analysis import merged_model_name, per_query_frame, score_models

    test = split.full.test
    test_scores = dict(test_scores) if test_scores is not None else score_models(models, test)
    local = {m: test_scores[m] for m in models}
    out, rows, fitted = {}, [], {}
    for i, client in enumerate(split.clients):
        sel = fit_selector(client.merge, score_models(models, client.merge), metric=select_metric,
                           seed=seed, models=models)
        name = merged_model_name(i, len(split.clients), "sel")
        fitted[name] = sel
        choice = sel.choose(test, local)
        out[name] = select_scores(test, local, choice)
        for j, m in enumerate(sel.models):
            rows.append({"split": split.name, "model": name, "chosen": m,
                         "share_of_test_queries": float((choice == j).mean()),
                         "fallback": sel.info["fallback"]})
    scorers = dict(fitted)
    if oracle:
        scorers["oracle"] = OracleChoice(hold_base_models(list(models), models), select_metric)
        out["oracle"] = scorers["oracle"].score_from_base(test, local)
    pq = per_query_frame(test, out, metrics).assign(split=split.name)
    return SelectionExperiment(split.name, pq[["split", "model", "qid", "metric", "value"]],
                               pd.DataFrame(rows), fitted, scorers, out)
