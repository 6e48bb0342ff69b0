"""Evaluating merged models per query: the paper's result tables and where merging helps.

`score_models` and `per_query_frame` give the tidy per-query results every merging
method is judged by (the full test set, as in Tables 4 and 5); `marked_table` turns
them into a Table 4/5 layout with the paper's significance superscripts (two-sided
paired t-tests against M1 = a and M2 = b). `query_categories` and `category_deltas`
go beyond the paper: for which query categories does a merged model gain over a local
model, and where does it lose.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ltrlib.data.dataset import Scorer
from ltrlib.metrics.keys import flatten_metrics
from ltrlib.metrics.ranking import evaluate
from ltrlib.metrics.comparison import Comparison, compare
from ltrlib.metrics.significance import MarkedTable, corrected
from ltrlib.trec import RunFile, run_records

__all__ = [
    "BASELINE_LABEL",
    "LOCAL_MODELS",
    "PAPER_BASELINES",
    "TABLE_METRICS",
    "category_deltas",
    "collect",
    "compare_models",
    "merge_metrics",
    "hold_base_models",
    "load_local_models",
    "means_table",
    "merged_model_name",
    "per_query_frame",
    "query_categories",
    "marked_table",
    "merged_run_files",
    "score_base_models",
    "score_models",
]

#: The metrics of Tables 4 and 5. The paper's tables print "MAP" while its §5.1 says it
#: evaluates "MAP@10"; both are reported so that neither reading is assumed.
TABLE_METRICS = ("ndcg@10", "map", "map@10", "mrr@10")
#: The baselines of Tables 4 and 5 and their markers (paired t-tests against M1 = a, M2 = b),
#: and how `marked_table` labels their rows (``M1 (a)``). Named once: `ltrlib.fidelity.upgrade`
#: reads a printed table of these rows back.
PAPER_BASELINES = {"M1": "a", "M2": "b"}
BASELINE_LABEL = "{model} ({marker})"


def score_models(models: Mapping[str, Scorer], ds) -> dict[str, np.ndarray]:
    """``{name: model.score(ds)}`` as float64; a clear error if a model cannot score ``ds``.

    Any `ltrlib.data.Scorer` will do: a local ranker, or a merged model (which scores its
    own base models). A `Ranker` reuses the scores of queries it has scored before (the
    merge notebooks score each client model on D_merge and the test set of several
    experiments)."""
    out = {}
    for name, model in models.items():
        if not isinstance(model, Scorer):
            raise TypeError(f"model {name!r} ({type(model).__name__}) has no score(dataset) method")
        s = np.asarray(model.score(ds), dtype=np.float64).ravel()
        if s.size != ds.n_docs:
            raise ValueError(
                f"model {name!r} returned {s.size} scores for {ds.n_docs} documents of {ds.name!r}"
            )
        out[str(name)] = s
    return out


def hold_base_models(names: Sequence[str], models: Mapping[str, Scorer] | None) -> dict[str, Scorer]:
    """The base models a merged model keeps, ``{name: Scorer}`` in the merged model's order
    ``names``; ``{}`` for ``models=None`` (a merged model fitted from bare score arrays,
    which can then score only from such arrays). Raises if a name has no model or a model
    is no `ltrlib.data.Scorer`."""
    if models is None:
        return {}
    missing = [n for n in names if n not in models]
    if missing:
        raise KeyError(f"models lack {missing} (the merged model reads {list(names)})")
    held = {n: models[n] for n in names}
    for name, model in held.items():
        if not isinstance(model, Scorer):
            raise TypeError(f"model {name!r} ({type(model).__name__}) has no score(dataset) method")
    return held


def score_base_models(merged, ds) -> dict[str, np.ndarray]:
    """The scores of ``merged.base_models`` on ``ds``: what a merged model's ``score`` reads."""
    if not merged.base_models:
        kind = type(merged).__name__
        raise ValueError(f"this {kind} holds no base models (it was fitted from score arrays "
                         "alone): fit it with models=..., or call score_from_base(data, scores)")
    return score_models(merged.base_models, ds)


def merged_model_name(client: int, n_clients: int, suffix: str) -> str:
    """The paper's names: client 1 merging with client 2 gives ``M12α`` / ``M12S``.

    The own model's index comes first, then the others in order (``M21α`` for client 2).
    """
    order = [client + 1] + [j + 1 for j in range(n_clients) if j != client]
    return "M" + "".join(map(str, order)) + suffix


def per_query_frame(ds, scores: Mapping[str, np.ndarray],
                    metrics: Sequence[str] = ("ndcg@10", "map", "mrr@10")) -> pd.DataFrame:
    """Tidy per-query results ``model, qid, metric, value`` of several score arrays on ``ds``."""
    frames = [evaluate(ds, s, metrics=tuple(metrics), per_query=True).assign(model=name)
              for name, s in scores.items()]
    return pd.concat(frames, ignore_index=True)[["model", "qid", "metric", "value"]]


def compare_models(per_query: pd.DataFrame, baselines: Mapping[str, str] | None = None, *,
                   models: Sequence[str] | None = None, alpha: float = 0.05) -> Comparison:
    """The one comparison behind Tables 4 and 5 (`marked_table`) and their numbers
    (`means_table`): every model against each baseline (default the paper's ``{"M1": "a",
    "M2": "b"}``), two-sided paired t-tests over each split's test queries, per metric."""
    return compare(per_query, baselines or PAPER_BASELINES, by=["split", "metric"], models=models, alpha=alpha)


def marked_table(per_query: pd.DataFrame, baselines: Mapping[str, str] | None = None, *,
                 models: Sequence[str] | None = None, alpha: float = 0.05) -> MarkedTable:
    """Tables 4 and 5: models as rows, (split, metric) as columns, marked means (a
    `ltrlib.metrics.MarkedTable`: numbers and marks until written; the report joins each
    column's split and metric into one header).

    ``per_query``: tidy ``split, model, qid, metric, value`` (several splits). Each cell
    is the mean over the split's test queries with a superscript for every baseline the
    model differs from significantly (paired t-test, ``p < alpha``). Baselines default to
    the paper's ``{"M1": "a", "M2": "b"}``; their rows are labelled ``M1 (a)``, ``M2 (b)``.
    ``models`` picks and orders the rows (default: order of appearance). The marked view
    of `compare_models`, kept here because three notebook cells print it.
    """
    return compare_models(per_query, baselines, models=models, alpha=alpha).marked(label=BASELINE_LABEL)


def means_table(per_query: pd.DataFrame, baselines: Mapping[str, str] | None = None, *,
                models: Sequence[str] | None = None) -> pd.DataFrame:
    """The numbers behind `marked_table`, tidy: ``split, model, metric, value, queries`` and,
    per baseline ``B`` (default M1, M2), ``p_vs_B``: the two-sided paired t-test's p-value
    against it over the split's test queries (NaN for the baseline itself), and
    ``p_vs_B_holm``: those p-values Holm-corrected over the table's family, every comparison
    the table marks (each model that is not a baseline, against each baseline, in every
    split and metric; ours: the paper marks without correction, and the table keeps its
    marks). A baseline's own row gets no corrected p: the paper marks no baseline.
    Read from the same `compare_models` as `marked_table`, so the two cannot disagree."""
    need = {"split", "model", "qid", "metric", "value"}
    if not need <= set(per_query.columns):
        raise KeyError(f"per_query needs columns {sorted(need)}, has {list(per_query.columns)}")
    if per_query.empty or (models is not None and not per_query.model.isin(list(models)).any()):
        return pd.DataFrame()
    return _means_numbers(compare_models(per_query, baselines, models=models))


def _means_numbers(comparison: Comparison) -> pd.DataFrame:
    """`means_table` from its comparison: cells in order of first appearance, p per baseline."""
    baselines = list(comparison.markers)
    keys = list(comparison.keys)
    # A split of one query is not tested; in a larger one, a pair with fewer than 2 queries
    # with values is an error, as a paired t-test of it would be.
    tests = comparison.to_frame()
    short = tests[(tests.units >= 2) & (tests.n < 2)]
    if not short.empty:
        raise ValueError(f"a paired t-test needs at least 2 queries with values, got {int(short.n.iloc[0])}")
    means = comparison.means
    means = means.assign(_cell=means.groupby(keys, sort=False).appearance.transform("min"))
    means = means.sort_values("_cell", kind="stable")
    p = tests.set_index([*keys, "model", "baseline"]).p
    out = pd.DataFrame({"split": means.split.to_numpy(), "model": means.model.to_numpy(),
                        "metric": means.metric.to_numpy(), "value": means["mean"].to_numpy(),
                        "queries": means.queries.to_numpy()})
    for b in baselines:
        out[f"p_vs_{b}"] = [float(p.get((s, me, m, b), np.nan)) for s, me, m in zip(out.split, out.metric, out.model)]
    marked = ~out.model.isin(baselines)
    p = out.loc[marked, [f"p_vs_{b}" for b in baselines]].to_numpy(dtype=float)
    holm = corrected(p.ravel()).reshape(p.shape)
    for i, b in enumerate(baselines):
        out[f"p_vs_{b}_holm"] = np.nan
        out.loc[marked, f"p_vs_{b}_holm"] = holm[:, i]
    return out


def query_categories(ds, seed: int = 0) -> pd.DataFrame:
    """One category per query: ``qid, category, rule``, by the project's definition
    (`ltrlib.noniid.categories.assign_query_categories`, §3.1: the most frequent category
    among the relevant documents, with its tie-breaking rules; ``seed`` drives its last,
    random rule). Queries without relevant documents get ``-1``. Needs document
    categories (``ds.category``)."""
    from ltrlib.noniid.categories import assign_query_categories

    if ds.category is None:
        raise ValueError(
            f"dataset {ds.name!r} has no document categories; load it with a category feature"
        )
    q = assign_query_categories(ds, seed)
    return pd.DataFrame({"qid": q.qid.to_numpy(), "category": q.category.to_numpy(),
                         "rule": "noniid.categories (paper section 3.1)"})


def category_deltas(per_query: pd.DataFrame, categories: pd.DataFrame, *,
                    baselines: Sequence[str] = ("M1", "M2"), models: Sequence[str] | None = None,
                    metric: str = "ndcg@10", min_queries: int = 1) -> pd.DataFrame:
    """Per query category, how much each merged model gains over each local model.

    ``per_query``: tidy ``[split,] model, qid, metric, value``; ``categories``: ``qid,
    category`` (from `query_categories`). Returns one row per (split, model, baseline,
    category): ``n_queries, mean_delta`` (model minus baseline, ``metric``),
    ``share_better, share_worse`` (queries where it is strictly higher / lower).
    Categories with fewer than ``min_queries`` queries are dropped.
    """
    pq = per_query[per_query.metric == metric]
    if pq.empty:
        raise ValueError(f"per_query has no rows for metric {metric!r}")
    if "split" not in pq.columns:
        pq = pq.assign(split="")
    models = list(models) if models is not None else [m for m in pd.unique(pq.model) if m not in baselines]
    wide = pq.pivot_table(index=["split", "qid"], columns="model", values="value", aggfunc="first")
    missing = [m for m in [*baselines, *models] if m not in wide.columns]
    if missing:
        raise KeyError(f"models {missing} not in per_query (has {list(wide.columns)})")
    cat = categories.drop_duplicates("qid").set_index("qid").category
    qids = wide.index.get_level_values("qid")
    if not np.all(np.isin(qids, cat.index)):
        raise KeyError("categories lacks some query ids of per_query")
    rows = []
    for model in models:
        for base in baselines:
            d = (wide[model] - wide[base]).rename("delta").reset_index()
            d["category"] = cat.reindex(d.qid).to_numpy()
            g = d.groupby(["split", "category"]).delta
            agg = pd.DataFrame({
                "n_queries": g.size(), "mean_delta": g.mean(),
                "share_better": g.apply(lambda s: float((s > 1e-12).mean())),
                "share_worse": g.apply(lambda s: float((s < -1e-12).mean())),
            }).reset_index()
            rows.append(agg.assign(model=model, baseline=base))
    out = pd.concat(rows, ignore_index=True)
    out = out[out.n_queries >= min_queries]
    return out[["split", "model", "baseline", "category", "n_queries", "mean_delta",
                "share_better", "share_worse"]].reset_index(drop=True)


# --------------------------------------------------------------------------- notebook glue

#: The local models notebook 03 stores per split (`ltrlib.train.ModelStore`), in client order.
LOCAL_MODELS = ("M1", "M2")


def load_local_models(store, splits: Sequence[str], names: Sequence[str] = LOCAL_MODELS) -> dict:
    """``{split: {name: Ranker}}`` from notebook 03's model store, never retrained.

    Raises FileNotFoundError listing every missing model and giving the command that
    trains them (notebook 03 on the store's dataset, scale and seed).
    """
    missing = [f"{s}/{n}" for s in splits for n in names if not store.exists(s, n)]
    if missing:
        raise FileNotFoundError(
            f"models {', '.join(missing)} are not in {store.dir}: run notebook 03_client_models "
            f"for run_id={store.run_id!r} first: {store.train_command()}"
        )
    return {s: {n: store.load(s, n) for n in names} for s in splits}


def per_split(experiment, nsplits: Mapping[str, object], models: Mapping[str, object], names,
              **kwargs) -> dict[str, object]:
    """``experiment(nsplits[name], models[name], **kwargs)`` for each split of ``names``, in
    that order: one of notebooks 04-05's experiments over the splits in one call."""
    return {name: experiment(nsplits[name], models[name], **kwargs) for name in names}


def _experiment_groups(experiments: Mapping[str, object] | Sequence[Mapping[str, object]]) -> list:
    """One mapping of experiments (one per split), or several, as a list of mappings."""
    return [experiments] if isinstance(experiments, Mapping) else list(experiments)


def merged_run_files(nsplits: Mapping[str, object],
                     experiments: Mapping[str, object] | Sequence[Mapping[str, object]],
                     names: Sequence[str], models: Sequence[str] | None = None) -> list[RunFile]:
    """Each split's merged models ranking its full test set, as `ltrlib.trec.RunFile` records
    named ``<split>.<model>`` and judged by the test set's labels (qrels ``qrels``), for
    `ltrlib.report.Reporter.run_file_records`. The models: those of the experiments'
    ``test_scores`` (``experiments``: one mapping of experiments per split, or several, in
    order), or only ``models``; never the ``oracle``, which reads the test labels: an upper
    bound, not a model to score elsewhere."""
    out = []
    for name in names:
        scores: dict[str, np.ndarray] = {}
        for group in _experiment_groups(experiments):
            scores.update(group[name].test_scores)
        kept = {m: s for m, s in scores.items() if m != "oracle" and (models is None or m in models)}
        out += run_records(kept, nsplits[name].full.test, prefix=f"{name}.")
    return out


def meta_models(stacked: Mapping[str, object]) -> dict[str, object]:
    """The meta-models of stacking experiments (one per split), named ``"<split> <model>"``:
    what `ltrlib.merge.feature_importance` reads."""
    return {f"{name} {m}": meta for name, experiment in stacked.items() for m, meta in experiment.meta.items()}


def collect(experiments: Mapping[str, object] | Sequence[Mapping[str, object]], attr: str) -> pd.DataFrame:
    """Concatenate one frame attribute (``per_query``, ``choices``, ``sweep``, ...) of several
    experiments (one per split; or several such mappings, in order, e.g. the linear, stacking
    and selection experiments); a model present in several (M1, M2) is kept once per split."""
    frames = [getattr(e, attr) for g in _experiment_groups(experiments) for e in g.values()]
    out = pd.concat([f for f in frames if len(f)], ignore_index=True)
    keys = [c for c in ("split", "model", "qid", "metric") if c in out.columns]
    if attr == "per_query" and len(keys) == 4:
        out = out.drop_duplicates(keys, ignore_index=True)
    return out


def merge_metrics(per_query: pd.DataFrame, metric: str = "ndcg@10",
                     choices: pd.DataFrame | None = None) -> dict[str, float]:
    """Scalars for ``metrics.json`` (keys by `ltrlib.metrics.flatten_metrics`): mean
    ``metric`` per split and model (``split1.m12a.ndcg10``) and the alpha each client chose
    (``split1.client1.alpha``)."""
    pq = per_query[per_query.metric == metric]
    means = pq.groupby(["split", "model", "metric"], sort=False).value.mean().reset_index()
    alphas = [] if choices is None or "alpha" not in choices else \
        [choices[["split", "client"]].assign(metric="alpha", value=choices.alpha.astype(float))]
    return flatten_metrics([means, *alphas], keys=["split", "model", "client"])
