"""LightGBM λMART against XGBoost's ranking objectives and pair methods, on the same splits.

    variants = backend_variants()                       # name -> (backend, params)
    runs = compare_backends(splits, variants, settings=TrainSettings(max_trees=500, seed=0))
    compare(runs.per_query, LIGHTGBM).marked()          # ltrlib.metrics; ᵃ: differs from it
    runs.timing                                         # seconds, trees per variant

The same data, the same tree limit, early stopping on validation NDCG@10 and the same
learning rate for every variant (one `TrainSettings`; notebook 08's by scale,
``TrainSettings.for_scale(scale, "backend_comparison")``); only the library, objective and
pair construction differ.
``pair_method_experiment`` runs the experiment behind the advice of XGBoost's ranking
tutorial (the "mean" method gives more effective pairs on small data, "topk" helps at the
top ranks on large data) on several training-set sizes; `ltrlib.fidelity.tutorial_claims`
decides the advice on it.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ltrlib import sessions
from ltrlib.data.dataset import Dataset, Splits
from ltrlib.metrics import compare
from ltrlib.metrics.keys import flatten_metrics
from ltrlib.metrics.significance import corrected
from ltrlib.train.ranker import Ranker, evaluate_rankers, evaluate_scores, train_ranker
from ltrlib.train.settings import TrainSettings

__all__ = ["BackendRuns", "COMPARISON_SETTINGS", "LIGHTGBM", "backend_variants", "compare_backends",
           "comparison_numeric", "effective_pairs", "tutorial_metrics", "pair_method_experiment",
           "PAIRWISE", "pair_count_settings", "pair_method_summary", "parse_train_sizes", "take_train_queries",
           "training_subsets"]

METRICS = ("ndcg@10", "map", "mrr@10")
LIGHTGBM = "LightGBM λMART"
# The functions' default limits, short of the paper's (each variant and pair setting is
# one training); notebook 08 takes its own by scale.
COMPARISON_SETTINGS = TrainSettings(max_trees=500, early_stopping=50)


def backend_variants(objectives: Sequence[str] = ("rank:ndcg", "rank:pairwise", "rank:map"),
                     pair_methods: Sequence[str] = ("topk", "mean"),
                     num_pair_per_sample: int | None = None,
                     ndcg_exp_gain: bool = True) -> dict[str, tuple[str, dict]]:
    """LightGBM's λMART first, then XGBoost with every objective x pair method.

    ``num_pair_per_sample`` None keeps each method's default (topk: 30, LightGBM's
    truncation level; mean: 1, XGBoost's)."""
    out: dict[str, tuple[str, dict]] = {LIGHTGBM: ("lightgbm", {})}
    for obj in objectives:
        for method in pair_methods:
            params: dict[str, Any] = {"objective": obj, "lambdarank_pair_method": method}
            if num_pair_per_sample is not None:
                params["lambdarank_num_pair_per_sample"] = int(num_pair_per_sample)
            if not ndcg_exp_gain:
                params["ndcg_exp_gain"] = False
            out[f"XGB {obj.split(':')[1]}/{method}"] = ("xgboost", params)
    return out


@dataclass
class BackendRuns:
    """Rankers, per-query test metrics (``model, test_set, qid, metric, value``), one
    timing row per model (``model, backend, objective, pair_method, seconds, trees``) and
    the models' test scores those metrics were computed from (what a run file holds)."""

    rankers: dict[str, Ranker]
    per_query: pd.DataFrame
    timing: pd.DataFrame
    test_scores: dict[str, np.ndarray] = field(default_factory=dict, repr=False)


def compare_backends(splits: Splits, variants: Mapping[str, tuple[str, dict]], *,
                     common: Mapping[str, Any] | None = None, metrics: Sequence[str] = METRICS,
                     settings: TrainSettings = COMPARISON_SETTINGS, progress: bool = True) -> BackendRuns:
    """Train every variant on ``splits.train`` (early stopping on ``splits.vali``) and score
    it on ``splits.test``. ``common`` params (e.g. the learning rate) go to every variant;
    each trains with ``settings`` in its own backend (``settings.backend`` is not used).
    ``progress``: a bar over the variants (`ltrlib.progress`)."""
    from ltrlib.progress import bar

    if splits.vali is None or splits.test is None:
        raise ValueError("compare_backends needs train, vali and test partitions")
    if not variants:
        raise ValueError("compare_backends needs at least one variant")
    rankers, rows = {}, []
    for name, (backend, params) in bar(variants.items(), total=len(variants), desc="backend variants",
                                       unit="model", enabled=progress):
        start = time.perf_counter()
        r = train_ranker(splits.train, splits.vali, {**dict(common or {}), **params},
                         settings.replace(backend=backend))
        seconds = time.perf_counter() - start
        rankers[name] = r
        rows.append({"model": name, "backend": backend,
                     "objective": r.params.get("objective"),
                     "pair_method": r.params.get("lambdarank_pair_method", "topk (truncation)"),
                     "pairs_per_sample": r.params.get("lambdarank_num_pair_per_sample",
                                                      r.params.get("lambdarank_truncation_level", 30)),
                     "seconds": seconds, "trees": r.best_iteration,
                     "trees_grown": r.info["trees_grown"], "vali_ndcg10": r.best_score})
    test_scores = {name: r.score(splits.test) for name, r in rankers.items()}
    per_query = evaluate_scores(test_scores, splits.test, "test", metrics)
    return BackendRuns(rankers, per_query, pd.DataFrame(rows), test_scores)


def comparison_numeric(per_query: pd.DataFrame, timing: pd.DataFrame | None = None,
                       baseline: str = LIGHTGBM, alpha: float = 0.05) -> pd.DataFrame:
    """Tidy numbers: ``model, metric, mean, diff`` (minus the baseline), ``p_value`` of the
    two-sided paired t-test against the baseline (the ᵃ of notebook 08's
    ``backend_comparison``: ``p_value < alpha``), ``p_holm``: those p-values Holm-corrected
    over the table's family (every model against the baseline at every metric; NaN for the
    baseline's own rows) and ``marked_holm``, where ``p_holm < alpha``; plus training
    seconds and trees when given. The printed table keeps its uncorrected marks (ours, as
    every marked table of the project); ``marked_holm`` says which of them Holm keeps."""
    stats = _against(per_query, baseline, ["metric"], "model")
    out = pd.DataFrame([{"model": r["model"], "metric": r["metric"], "mean": r["mean"], "diff": r["diff"],
                         "p_value": r["p"]} for r in stats])
    if not out.empty:
        out["p_holm"] = corrected(out.p_value.to_numpy(dtype=float))
        out["marked_holm"] = out.p_holm < alpha
    if timing is not None:
        out = out.merge(timing[["model", "seconds", "trees"]], on="model", how="left")
    return out


def _against(frame: pd.DataFrame, baseline: str, by: list[str], model: str) -> list[dict]:
    """`ltrlib.metrics.comparison.Comparison.differences`' rows for this module's tables: means over every
    query (a NaN gives a NaN mean), every group tested, KeyError for a group without the
    baseline and ValueError for a model with fewer than 2 queries with values."""
    for _, part in frame.groupby(by, sort=False):
        if baseline not in set(part[model]):
            raise KeyError(baseline)
    return compare(frame, baseline, by=by, rows=model, skipna=False, too_few="raise",
                   cell_order="appearance").differences().to_dict("records")


# --------------------------------------------------------------------------- pair methods


def effective_pairs(data: Dataset, method: str, num_pair_per_sample: int) -> float:
    """Pairs with different labels (those that carry a gradient) per query, on average, that
    a pair method builds from an unordered list: ``mean`` samples ``n`` partners per
    document (expected count: ``n`` x the share of its query's other documents with another
    label); ``topk`` pairs each of the first ``k`` documents with every other document.
    The list order is the data's; topk's real top k follows the model's ranking, which
    changes during training, so this is the count at the first iteration."""
    if method not in ("mean", "topk"):
        raise ValueError(f"method must be 'mean' or 'topk', got {method!r}")
    y, off = data.y, data.offsets
    sizes = np.diff(off)
    q = data.doc_query_index
    levels = int(y.max()) + 1
    hist = np.zeros((data.n_queries, levels), dtype=np.int64)
    np.add.at(hist, (q, y), 1)
    # Per document: how many documents of its query carry another label.
    other = (sizes[q] - hist[q, y]).astype(np.float64)
    if method == "mean":
        total = float((num_pair_per_sample * other / np.maximum(sizes[q] - 1, 1)).sum())
    else:
        top = (np.arange(data.n_docs) - off[q]) < num_pair_per_sample
        top_hist = np.zeros((data.n_queries, levels), dtype=np.int64)
        np.add.at(top_hist, (q[top], y[top]), 1)
        top_size = top_hist.sum(1)
        # Pairs with both ends in the top k are reached from either end: count them once.
        inside = 0.5 * ((top_size[:, None] - top_hist) * top_hist).sum()
        total = float(other[top].sum() - inside)
    return total / data.n_queries


def pair_method_experiment(datasets: Mapping[str, Splits], pair_settings: Mapping[str, dict] | None = None, *,
                           common: Mapping[str, Any] | None = None,
                           settings: TrainSettings = COMPARISON_SETTINGS,
                           metrics: Sequence[str] = ("ndcg@1", "ndcg@3", "ndcg@10", "ndcg"),
                           progress: bool = True, reuse: pd.DataFrame | None = None) -> pd.DataFrame:
    """XGBoost ``rank:ndcg`` with each pair setting on each dataset (e.g. tiny, small, paper),
    trained with ``settings`` (its backend set to XGBoost).

    ``pair_settings``: name -> XGBoost params (default: mean with 1 pair, topk with k = 10
    and k = 30). Returns per-query rows ``scale, train_queries, setting, method, qid, metric,
    value`` plus, per (scale, setting), ``effective_pairs`` per query and ``seconds``.
    ``progress``: a bar over the (dataset, setting) models (`ltrlib.progress`). ``reuse``: an
    earlier result of this function; a (dataset, setting) it holds is taken from it, not
    trained again (training is deterministic, so it would give the same rows: notebook 08's
    later studies share settings with its first). A setting's name must then mean the same
    params in both."""
    from ltrlib.progress import bar

    pair_settings = pair_settings or {
        "mean, 1 pair": {"lambdarank_pair_method": "mean", "lambdarank_num_pair_per_sample": 1},
        "topk, k=10": {"lambdarank_pair_method": "topk", "lambdarank_num_pair_per_sample": 10},
        "topk, k=30": {"lambdarank_pair_method": "topk", "lambdarank_num_pair_per_sample": 30},
    }
    parts = []
    done = set() if reuse is None else set(zip(reuse.scale, reuse.setting))
    todo = [(scale, sp, name, params) for scale, sp in datasets.items() for name, params in pair_settings.items()]
    trained = bar(total=sum((scale, name) not in done for scale, _, name, _ in todo), desc="pair settings",
                  unit="model", enabled=progress)
    for scale, sp, name, params in todo:  # in this order, whether trained or reused
        if (scale, name) in done:
            parts.append(reuse[(reuse.scale == scale) & (reuse.setting == name)])
            continue
        start = time.perf_counter()
        r = train_ranker(sp.train, sp.vali, {**dict(common or {}), "objective": "rank:ndcg", **params},
                         settings.replace(backend="xgboost"))
        seconds = time.perf_counter() - start
        pq = evaluate_rankers({name: r}, {"test": sp.test}, metrics=metrics)
        method = r.params["lambdarank_pair_method"]
        n = r.params["lambdarank_num_pair_per_sample"]
        pq = pq.drop(columns=["test_set"]).rename(columns={"model": "setting"})
        pq.insert(0, "train_queries", sp.train.n_queries)
        pq.insert(0, "scale", scale)
        pq["method"] = method
        pq["effective_pairs"] = effective_pairs(sp.train, method, n)
        pq["seconds"] = seconds
        pq["trees"] = r.best_iteration
        parts.append(pq)
        trained.update(1)
    trained.close()
    return pd.concat(parts, ignore_index=True)


#: The ``rank:pairwise`` setting of the pair-count sweep (`pair_count_settings`).
PAIRWISE = "rank:pairwise, mean, 1 pair"


def pair_count_settings(counts) -> dict[str, dict]:
    """Notebook 08's sweep on the smallest training set: ``rank:ndcg`` with the mean method at
    each ``lambdarank_num_pair_per_sample`` of ``counts`` (1, the studies' reference ``mean, 1 pair``, always runs),
    and ``rank:pairwise`` (RankNet) with mean and 1 pair."""
    counts = sorted({1, *map(int, counts)})
    out = {("mean, 1 pair" if n == 1 else f"mean, {n} pairs"): {"lambdarank_pair_method": "mean",
                                                            "lambdarank_num_pair_per_sample": n} for n in counts}
    out[PAIRWISE] = {"objective": "rank:pairwise", "lambdarank_pair_method": "mean",
                     "lambdarank_num_pair_per_sample": 1}
    return out


def pair_method_summary(runs: pd.DataFrame, reference: str = "mean, 1 pair") -> pd.DataFrame:
    """Per (scale, setting, metric): the mean, the difference to ``reference`` on the same
    queries and its paired t-test p-value; plus effective pairs per query, trees, seconds."""
    stats = _against(runs, reference, ["scale", "metric"], "setting")
    info = runs.groupby(["scale", "metric", "setting"], sort=False)[["train_queries", "effective_pairs", "trees",
                                                                     "seconds"]].first()
    rows = []
    for r in stats:
        at = (r["scale"], r["metric"], r["setting"])
        rows.append({"scale": r["scale"], "train_queries": int(info.loc[at, "train_queries"]),
                     "metric": r["metric"], "setting": r["setting"], "mean": r["mean"],
                     "diff_vs_reference": r["diff"], "p_value": r["p"],
                     "effective_pairs_per_query": float(info.loc[at, "effective_pairs"]),
                     "trees": int(info.loc[at, "trees"]), "seconds": float(info.loc[at, "seconds"])})
    return pd.DataFrame(rows)


def take_train_queries(splits: Splits, n_queries: int, seed: int = 0) -> Splits:
    """``splits`` with a seeded random ``n_queries`` of its training queries (0 or more than
    there are: all of them); validation and test stay as they are."""
    if isinstance(n_queries, bool) or not isinstance(n_queries, (int, np.integer)) or n_queries < 0:
        raise ValueError(f"train_queries must be a non-negative integer, got {n_queries!r}")
    if n_queries == 0 or n_queries >= splits.train.n_queries:
        return splits  # every query: the same splits, the training set keeps its name
    train = splits.train.sample_queries(n_queries, seed, name=f"{splits.train.name}[{n_queries}q]")
    return Splits(train, splits.vali, splits.test)


def training_subsets(splits: Splits, spec: str, seed: int = 0) -> dict[int, Splits]:
    """``splits`` at each training size of ``spec`` (`parse_train_sizes`, ascending), by size:
    seeded random subsets of the training queries (`take_train_queries`)."""
    return {n: take_train_queries(splits, n, seed) for n in parse_train_sizes(spec, splits.train.n_queries)}


def parse_train_sizes(spec: str, available: int) -> list[int]:
    """``"150,1000,all"`` -> sorted distinct training-query counts, each at most ``available``
    (``all`` = ``available``)."""
    sizes = []
    for part in sessions.parse_list(spec, name="pair_train_queries", allow_empty=True):
        if part == "all":
            sizes.append(available)
            continue
        try:
            value = int(part)
        except ValueError:
            raise ValueError(f"pair_train_queries: {part!r} is neither an integer nor 'all'") from None
        if value < 1:
            raise ValueError(f"pair_train_queries: sizes must be positive, got {value}")
        sizes.append(min(value, available))
    if not sizes:
        raise ValueError(f"pair_train_queries: no size in {spec!r}")
    return sorted(set(sizes))



def tutorial_metrics(numeric: pd.DataFrame, pair_summary: pd.DataFrame | None = None,
                     claims: pd.DataFrame | None = None) -> dict[str, float | int | bool]:
    """Scalars for ``metrics.json`` (keys by `ltrlib.metrics.flatten_metrics`): each model's
    mean per metric (``lightgbm_lambdamart.ndcg10``) and training time
    (``lightgbm_lambdamart.seconds``), the pair study's means
    (``train_queries150.topk_k_10.ndcg10``) and the verdicts of the tutorial's claims
    (`ltrlib.fidelity.tutorial_claims`: ``mean_better_small.topk_k_10_ndcg10_150_training_queries.holds``)."""
    parts = [numeric[["model", "metric", "mean"]].rename(columns={"mean": "value"})]
    if "seconds" in numeric.columns:
        times = numeric.drop_duplicates("model")
        parts.append(pd.DataFrame({"model": times.model, "metric": "seconds", "value": times.seconds}))
    if pair_summary is not None:
        parts.append(pair_summary[["train_queries", "setting", "metric", "mean"]]
                     .rename(columns={"mean": "value"}))
    if claims is not None:
        parts.append(pd.DataFrame({"claim": claims.claim, "setting": claims.scope, "metric": "holds",
                                   "value": claims.ours == "holds"}))
    return flatten_metrics(parts, keys=["model", "claim", "train_queries", "setting"])
