"""Standard rank fusion beside the paper's merges (beyond the paper), on ranx.

The non-IID paper merges two local rankers by a linear combination whose weight each client
tunes on its D_merge (`ltrlib.merge.linear`): weighted-sum fusion. The fusion methods a
reviewer would name first are its baselines here, each from ranx (`ranx.fuse`), on the
local models' test rankings:

==============  ==========================================================================
``CombSUM``     the sum of the models' scores, each min-max normalised per query
``CombMNZ``     CombSUM times the number of models that retrieved the document (every model
                ranks every document here, so it orders as CombSUM does)
``RRF``         reciprocal rank fusion, Σ 1/(k + rank), ranx's default k = 60
``M12wsum``,    ranx's weighted sum of min-max normalised scores, its weights tuned by
``M21wsum``     `ranx.optimize_fusion` on client 1's (M12) or client 2's (M21) D_merge by
                NDCG@10: the paper's protocol with ranx's optimiser and normalisation
==============  ==========================================================================

Scores go to ranx as runs keyed by row (`ltrlib.trec.ranx_keys`) and come back as one float64 per row
of the data, so the fused models are scored by our metrics like every other model, and each
is a `FusedModel`, a `ltrlib.data.Scorer` (`fusion_models`), whose ranking a notebook writes
as a run file with the documents' `ltrlib.trec.docnos`. ranx breaks score ties unstably.
RRF ties wherever two documents' ranks swap between the models (1/(k+1) + 1/(k+2) both ways
round), so its queries often hold tied scores, which our metrics order by row (`ltrlib.trec`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ltrlib.atomic import atomic_path
from ltrlib.data.dataset import Dataset, Scorer
from ltrlib.merge.analysis import TABLE_METRICS, hold_base_models, merged_model_name, per_query_frame, score_models
from ltrlib.trec import import_ranx, ranx_keys

__all__ = ["FUSIONS", "FusedModel", "fuse_scores", "fusion_baselines", "fusion_experiment", "fusion_models",
           "tuned_wsum"]

#: Name -> (ranx method, ranx normalisation) of the untuned fusions.
FUSIONS = {"CombSUM": ("sum", "min-max"), "CombMNZ": ("mnz", "min-max"), "RRF": ("rrf", "rank")}
#: The metric ``optimize_fusion`` tunes the weighted sum by on D_merge, the paper's choice of α.
TUNE_METRIC = "ndcg@10"


def _runs(data, scores: Sequence[np.ndarray], names: Sequence[str]):
    """ranx Runs of the score arrays, each document keyed by its row at one width
    (`ranx_keys`, compiled once whatever the collection): in row order within each query,
    as `docnos` are, so ranx meets the documents in the same order."""
    Run = import_ranx().Run
    ids = ranx_keys(np.arange(data.n_docs))
    qids = np.repeat(np.asarray(data.query_ids).astype(str), np.diff(data.offsets)).astype(object)
    runs = []
    for s, name in zip(scores, names):
        s = np.asarray(s, dtype=np.float64)
        if s.shape != (data.n_docs,):
            raise ValueError(f"fusion: model {name!r} has {s.size} scores for {data.n_docs} documents")
        frame = pd.DataFrame({"q_id": qids, "doc_id": ids, "score": s}).astype({"q_id": object, "doc_id": object})
        runs.append(Run.from_df(frame, q_id_col="q_id", doc_id_col="doc_id", score_col="score", name=name))
    return runs, ids, qids


def _back(fused, ids, qids) -> np.ndarray:
    """A fused ranx Run as one score per row, in the data's order. Iterates ranx's typed
    dicts by ``items()``: `ranx.Run.to_dict` looks each document up through numba's typed
    ``__getitem__``, 3x slower at `small` (1.3 s a run, where it was 40 % of the fusions'
    time)."""
    row = {key: i for i, key in enumerate(zip(qids, ids))}
    out = np.full(ids.size, np.nan)
    for q, docs in fused.run.items():
        for d, score in docs.items():
            out[row[q, d]] = score
    if np.isnan(out).any():
        missing = int(np.flatnonzero(np.isnan(out))[0])
        raise RuntimeError(f"ranx's fused run lacks document {ids[missing]!r} of query {qids[missing]!r}")
    return out


def fuse_scores(data, scores: Mapping[str, np.ndarray], method: str, norm: str, params=None,
                runs=None) -> np.ndarray:
    """The models' scores on ``data`` fused by ranx (``method``, ``norm``, ``params`` as
    `ranx.fuse` takes them), one float64 per row of ``data``. ``runs``: `_runs` of those
    scores, built once by a caller that fuses them several ways (ranx's normalisations
    return new runs and leave these as they were)."""
    fuse = import_ranx().fuse
    runs, ids, qids = runs or _runs(data, list(scores.values()), list(scores))
    return _back(fuse(runs=runs, norm=norm, method=method, params=params), ids, qids)


@dataclass
class FusedModel:
    """One fusion of base models by ranx (``method``, ``norm``, ``params`` as `fuse_scores`
    takes them; ``params`` None for the untuned `FUSIONS`): a `ltrlib.data.Scorer`.
    ``base_models``: ``{name: Scorer}``, the runs it fuses, in order."""

    method: str
    norm: str
    params: dict | None = None
    base_models: dict[str, Scorer] = field(default_factory=dict, repr=False)

    def score(self, data: Dataset) -> np.ndarray:
        """Fused scores of ``data``: its base models score it, then ranx fuses their runs."""
        return self.score_from_base(data, score_models(self.base_models, data))

    def score_from_base(self, data: Dataset, base_scores: Mapping[str, np.ndarray], runs=None) -> np.ndarray:
        """Fused scores of ``data`` from the base models' scores on it (by name, any order),
        for callers that hold those scores already (and their ranx runs: `fuse_scores`)."""
        missing = [m for m in self.base_models if m not in base_scores]
        if missing:
            raise KeyError(f"scores lack models {missing} (the fusion reads {list(self.base_models)})")
        return fuse_scores(data, {m: base_scores[m] for m in self.base_models}, self.method, self.norm,
                           self.params, runs=runs)


def fusion_models(models: Mapping[str, Scorer], weights: pd.DataFrame | None = None) -> dict[str, FusedModel]:
    """The fusion baselines of the local ``models`` as Scorers, by the names of
    `fusion_experiment`'s tables: the untuned `FUSIONS`, then one weighted sum per row of
    ``weights`` (its second frame, for one split: ``model, weights``), with the weights tuned
    there; so a notebook writes the rankings it judged without tuning again."""
    fused = {name: FusedModel(method, norm, None, hold_base_models(list(models), models))
             for name, (method, norm) in FUSIONS.items()}
    if weights is None:
        return fused
    if "split" in weights and weights.split.nunique() > 1:
        raise ValueError(f"fusion_models: weights holds splits {sorted(weights.split.unique())}; "
                         "pass one split's rows (the models are one split's)")
    for row in weights.itertuples(index=False):
        if len(row.weights) != len(models):
            raise ValueError(f"fusion_models: weights of {row.model!r} are {row.weights}, "
                             f"for {len(models)} models {list(models)}")
        fused[row.model] = FusedModel("wsum", "min-max", {"weights": tuple(row.weights)},
                                      hold_base_models(list(models), models))
    return fused


def tuned_wsum(merge_data, merge_scores: Mapping[str, np.ndarray]) -> dict:
    """ranx's weighted-sum parameters tuned on ``merge_data`` (a client's D_merge) by
    `TUNE_METRIC` (`ranx.optimize_fusion`, min-max normalisation, its default weight grid)."""
    ranx = import_ranx()
    Qrels, optimize_fusion = ranx.Qrels, ranx.optimize_fusion
    runs, ids, qids = _runs(merge_data, list(merge_scores.values()), list(merge_scores))
    judged = pd.DataFrame({"q_id": qids, "doc_id": ids, "score": np.asarray(merge_data.y, np.int64)})
    qrels = Qrels.from_df(judged.astype({"q_id": object, "doc_id": object}), q_id_col="q_id",
                          doc_id_col="doc_id", score_col="score")
    return optimize_fusion(qrels=qrels, runs=runs, norm="min-max", method="wsum",
                           metric=TUNE_METRIC.replace("ndcg", "ndcg_burges"), show_progress=False)


def _inputs_key(split, names: Sequence[str], base: Mapping[str, np.ndarray],
                merge_scores: Sequence[Mapping[str, np.ndarray]], metrics: Sequence[str]) -> str:
    """A digest of everything `fusion_experiment`'s result follows from: the models' scores
    and the labels, queries and documents of the test set and of each D_merge, the metrics,
    the fusions and ranx's version."""
    import hashlib

    ranx = import_ranx()
    h = hashlib.sha256(repr((split.name, list(names), list(metrics), FUSIONS, TUNE_METRIC,
                             getattr(ranx, "__version__", ""))).encode())
    for data, scores in ((split.full.test, base), *((c.merge, m) for c, m in zip(split.clients, merge_scores))):
        for a in (data.query_ids, data.offsets, data.y, *(scores[n] for n in names)):
            h.update(np.ascontiguousarray(a).tobytes())
            h.update(str(np.asarray(a).dtype).encode())
    return h.hexdigest()[:20]


def fusion_experiment(split, models: Mapping[str, object], test_scores: Mapping[str, np.ndarray] | None = None,
                      metrics: Sequence[str] = ("ndcg@10", "map", "mrr@10"),
                      cache_dir: str | Path | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The fusion baselines (`FUSIONS`, and the weighted sum tuned on each client's D_merge)
    of the two local ``models`` on ``split``'s full test set, as `linear_experiment` runs
    the paper's merges. ``test_scores``: the local models' test scores when the caller holds
    them (`LinearExperiment.test_scores`).

    ``cache_dir``: a folder where the result is kept under a digest of its inputs (the
    scores, the data, the metrics, ranx's version), and read back by a later call on the
    same inputs: notebook 05 sets beside its merges what notebook 04 computed, without
    paying ranx's compilation and tuning again (15 s of 17 at `small`). Other inputs
    (models retrained, other splits) have another digest and are computed afresh.

    Returns ``(per_query, weights)``: tidy ``split, model, qid, metric, value`` on the test
    set, and each tuned weighted sum's weights (``split, model, weights, merge_queries``)."""
    names = list(models)
    test = split.full.test
    scores = test_scores or score_models(models, test)  # scored once, not once per model
    base = {n: scores[n] for n in names}
    merge_scores = [score_models(models, c.merge) for c in split.clients]
    if cache_dir is not None:
        stem = f"fusion-{split.name}-{_inputs_key(split, names, base, merge_scores, metrics)}"
        done, weights_file = Path(cache_dir) / f"{stem}.per_query.parquet", Path(cache_dir) / f"{stem}.weights.parquet"
        if done.exists():  # written last: the pair is whole
            weights = pd.read_parquet(weights_file)
            return pd.read_parquet(done), weights.assign(weights=[tuple(map(float, w)) for w in weights.weights])
    weights = []
    for i, (client, on_merge) in enumerate(zip(split.clients, merge_scores)):
        merge = client.merge
        judged = merge.n_queries > 0 and np.asarray(merge.y).max(initial=0) > 0
        # A D_merge with no relevant document (or none at all, on a small collection) tunes
        # nothing: equal weights, as the linear merge's ties go to α = 0.5.
        params = tuned_wsum(merge, on_merge) if judged else {"weights": (0.5,) * len(names)}
        weights.append({"split": split.name, "model": merged_model_name(i, len(split.clients), "wsum"),
                        "weights": tuple(map(float, params["weights"])), "merge_queries": int(merge.n_queries)})
    weights = pd.DataFrame(weights)
    # The fused models `fusion_models` rebuilds from these weights score the test set here,
    # so a run file written from them holds the rankings these tables judged.
    runs = _runs(test, [base[n] for n in names], names)  # one set for every fusion
    fused = {name: model.score_from_base(test, base, runs=runs)
             for name, model in fusion_models(models, weights).items()}
    per_query = per_query_frame(test, fused, metrics).assign(split=split.name)
    per_query = per_query[["split", "model", "qid", "metric", "value"]].reset_index(drop=True)
    if cache_dir is not None:
        done.parent.mkdir(parents=True, exist_ok=True)
        for frame, path in ((weights.assign(weights=weights.weights.map(list)), weights_file), (per_query, done)):
            with atomic_path(path) as tmp:
                frame.to_parquet(tmp, index=False)
    return per_query, weights


def fusion_baselines(nsplits: Mapping[str, object], models: Mapping[str, Mapping[str, object]],
                     experiments: Mapping[str, object], names: Sequence[str], *,
                     cache_dir: str | Path | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """`fusion_experiment` on each split of ``names`` (in that order) at `TABLE_METRICS`, with
    the local models' test scores its linear experiment holds (``experiments[name].test_scores``):
    every split's per-query results as one frame, and every tuned weighted sum's weights as
    another. Notebooks 04 and 05 set them beside the paper's merges."""
    results = [fusion_experiment(nsplits[n], models[n], experiments[n].test_scores, metrics=TABLE_METRICS,
                                 cache_dir=cache_dir) for n in names]
    return (pd.concat([pq for pq, _ in results], ignore_index=True),
            pd.concat([w for _, w in results], ignore_index=True))
