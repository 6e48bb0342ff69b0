"""The two-stage data of §5.2: stage-1 λMART by 10-fold cross-validation, top-k lists.

Stage 1 is LightGBM λMART. The queries of the train, validation and test partitions are
each split into ``folds`` folds; model ``i`` trains on the training queries outside fold
``i``, early-stops on the validation queries outside fold ``i`` and scores the queries of
fold ``i`` of all three partitions. No query is thus scored by a model that saw it, so the
second stage is trained on honest first-stage scores.

Each query keeps its top ``top_k`` documents by stage-1 score (ties: input order),
in their original relative order, with the stage-1 score appended as the last feature
``stage1_score``. Each query also keeps the ideal DCG of its *full* first-stage list at
the cut-offs ``cutoffs``: λMART*, Bi-λMART and every stage-2 evaluation normalise by it,
so relevant documents stage 1 failed to retrieve count against the model.

Stage 1 (the costly part) is cached under ``<cache_dir>/bivariate/`` as the kept rows,
the stage-1 scores and the full-list ideal DCGs, keyed by a fingerprint of the data and
every setting; the entry is written to a temporary file and renamed, so an interrupted
run leaves no half-written entry.
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pandas as pd
from numba import njit, prange

from ltrlib import config, processes, randomness
from ltrlib.atomic import atomic_path
from ltrlib.data.dataset import Dataset, Splits
from ltrlib.metrics import ideal_dcg
from ltrlib.train.settings import TrainSettings, TuningSettings

__all__ = ["CUTOFFS", "FOLD_STREAMS", "STAGE1_PARAMS", "STAGE1_SETTINGS", "SCORE_FEATURE", "Stage1Tuning", "TwoStage",
           "build_two_stage", "table1", "top_k_mask", "tune_stage1"]

CUTOFFS = (1, 3, 5, 10, 20)
SCORE_FEATURE = "stage1_score"
# Stage 1's default point, the batch's fixed settings (`tune_stage1` with n_trials=0; the
# paper tunes stage 1 once by NDCG@20 with hyperopt, `tune_stage1` with trials). A high rate
# and half the features per tree keep the K-fold run affordable on small machines (one
# model at the small scale: ~70 s to 260 trees at rate 0.1 with all features); pass
# params= to replace them. With half the features per tree, column-wise histograms skip
# the unused half: 0.23 s a tree against 0.38 s row-wise (small, 313k documents x 220).
STAGE1_PARAMS = {"learning_rate": 0.2, "num_leaves": 31, "min_data_in_leaf": 50,
                 "feature_fraction": 0.5, "force_col_wise": True}
# Stage 1's training: the paper's §5.4 limits (2000 trees, patience 30), early stopping on
# NDCG@20, the depth of the kept lists; one thread per fold (see `build_two_stage`).
STAGE1_SETTINGS = TrainSettings(max_trees=2000, early_stopping=30, eval_at=20, num_threads=1)
_FORMAT = 2
_PARTS = ("train", "vali", "test")
#: How a run's seed draws the folds of its three parts. ``spawned``: three streams of
#: `ltrlib.randomness.stream_seeds`, shared with no other run seed (issue 41: the ledger study's
#: seeds must not share a stream). ``seed + part``: seeds ``seed``, ``seed + 1`` and
#: ``seed + 2``, so run seeds s and s + 1 share one; what both Bi-LambdaMART studies were
#: registered with, and keep (`ltrlib.bilambdamart.preregistration.REGISTERED_PARAMETERS`).
FOLD_STREAMS = ("spawned", "seed + part")


def _fold_seeds(seed: int, fold_streams: str) -> list[int]:
    if fold_streams == "seed + part":
        return [seed + i for i in range(len(_PARTS))]
    return randomness.stream_seeds(seed, "stage-1 folds", len(_PARTS))


@njit(cache=True, parallel=True)
def _top_k(scores, offsets, k, keep):
    for q in prange(offsets.size - 1):
        a = offsets[q]
        n = offsets[q + 1] - a
        order = np.argsort(-scores[a:a + n], kind="mergesort")
        for r in range(min(k, n)):
            keep[a + order[r]] = True


def top_k_mask(scores, offsets, k: int) -> np.ndarray:
    """Boolean mask of each query's ``k`` best-scored documents (ties: input order)."""
    if isinstance(k, bool) or int(k) != k or k < 1:
        raise ValueError(f"top_k must be a positive integer, got {k!r}")
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    keep = np.zeros(int(offsets[-1]), dtype=np.bool_)
    _top_k(np.ascontiguousarray(scores, dtype=np.float64), offsets, int(k), keep)
    return keep


@dataclass
class TwoStage:
    """Stage-2 partitions plus what the evaluation needs from stage 1.

    ``stage2``: train / vali / test with the top-``top_k`` documents and the extra last
    feature ``stage1_score``. ``full_ideal[part]``: (n_queries, len(cutoffs)) ideal DCG of
    each query's full stage-1 list. ``stage1``: the full partitions, for statistics.
    ``kept[part]``: which rows of the stage-1 partition are the stage-2 rows (in order).
    """

    stage1: Splits
    stage2: Splits
    full_ideal: dict[str, np.ndarray]
    cutoffs: tuple[int, ...]
    top_k: int
    folds: int
    kept: dict[str, np.ndarray] = field(default_factory=dict)
    info: dict = field(default_factory=dict)

    def ideal(self, part: str, k: int) -> np.ndarray:
        """Full-list IDCG@k of each query of stage-2 partition ``part``."""
        if part not in self.full_ideal:
            raise KeyError(f"no partition {part!r}; have {sorted(self.full_ideal)}")
        if k not in self.cutoffs:
            raise ValueError(f"IDCG@{k} was not kept; cutoffs are {self.cutoffs} "
                             "(pass cutoffs= to build_two_stage)")
        return self.full_ideal[part][:, self.cutoffs.index(k)]

    def part(self, name: str) -> Dataset:
        return getattr(self.stage2, name)

    def relabelled(self, splits: Splits) -> "TwoStage":
        """The same two stages over ``splits``: the same documents as `stage1` (features,
        queries and order identical) with other labels, e.g. the synthetic twin generated
        with another ``synthetic_config``. Stage 1's lists, models and scores are kept; the
        stage-2 labels and the full-list ideal DCGs are those of ``splits``.

        Why: a control that changes only the labels then differs from the main run in its
        labels alone, not also in stage-1 models retrained on them, and costs no stage 1.
        Leak-free as stage 1 is: every query is still scored by the fold model that never
        saw it (nor its documents under either labelling)."""
        for p in _PARTS:
            old, new = getattr(self.stage1, p), getattr(splits, p, None)
            if new is None:
                raise ValueError(f"relabelled needs train, vali and test partitions; {p} is missing")
            same = (np.array_equal(old.query_ids, new.query_ids) and np.array_equal(old.offsets, new.offsets)
                    and old.X.shape == new.X.shape and np.array_equal(old.X, new.X))
            if not same:
                raise ValueError(f"relabelled: partition {p} ({new.name}) does not hold the same documents "
                                 f"as stage 1's ({old.name}); only the labels may differ")
        parts = {p: replace(self.part(p), y=getattr(splits, p).y[self.kept[p]]) for p in _PARTS}
        ideal = {p: np.stack([ideal_dcg(getattr(splits, p).y, getattr(splits, p).offsets, k)
                              for k in self.cutoffs], axis=1) for p in _PARTS}
        return replace(self, stage1=Splits(splits.train, splits.vali, splits.test),
                       stage2=Splits(parts["train"], parts["vali"], parts["test"]), full_ideal=ideal,
                       info={**self.info, "relabelled": True})


def _fingerprint(ds: Dataset) -> str:
    h = hashlib.sha256()
    step = max(1, ds.n_docs // 4096)
    for arr in (ds.query_ids, ds.offsets, ds.y, np.ascontiguousarray(ds.X[::step])):
        h.update(np.ascontiguousarray(arr).tobytes())
    h.update(repr((ds.n_docs, ds.n_features, ds.feature_names)).encode())
    return h.hexdigest()[:24]


def _cache_key(splits: Splits, settings: dict) -> str:
    payload = {"format": _FORMAT, "settings": settings,
               "data": [_fingerprint(getattr(splits, p)) for p in _PARTS]}
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:32]


def _load(path: Path) -> dict | None:
    try:
        if not path.exists():
            return None
    except OSError as exc:  # a cache folder that cannot be searched: compute, as for a miss
        warnings.warn(f"cannot read the cache {path}: {exc}", RuntimeWarning, stacklevel=3)
        return None
    try:
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except Exception:  # a corrupt entry is rebuilt, never trusted
        path.unlink(missing_ok=True)
        return None


def _save(path: Path, arrays: dict[str, np.ndarray]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(path) as tmp:
            with open(tmp, "wb") as fh:
                np.savez(fh, **arrays)
    except OSError as exc:
        # A read-only, full or unreachable cache must not throw away the stage-1 training
        # just done: the results are fine, they are only not kept for next time.
        warnings.warn(f"could not cache the stage-1 scores in {path}: {exc}", RuntimeWarning,
                      stacklevel=3)


def _stage1_scores(splits: Splits, folds: int, params: Mapping[str, Any], settings: TrainSettings,
                   n_jobs: int, progress: bool, fold_streams: str
                   ) -> tuple[dict[str, np.ndarray], list[int], np.ndarray]:
    from joblib import Parallel, delayed

    from ltrlib import timing
    from ltrlib.progress import bar

    fold_of = {p: getattr(splits, p).fold_ids(folds, s)
               for p, s in zip(_PARTS, _fold_seeds(settings.seed, fold_streams))}
    scores = {p: np.full(getattr(splits, p).n_docs, np.nan) for p in _PARTS}
    iterations = [0] * folds
    gain = np.zeros(splits.train.n_features)
    fit = delayed(_fit_fold)
    calls = (fit(splits, fold_of, f, params, settings) for f in range(folds))
    # The folds are independent: n_jobs of them train side by side in worker processes,
    # as `ltrlib.train.tuning.fit_side_by_side` does; n_jobs=1 trains them in this process.
    # Fitting time is counted here, in the notebook's process (the run's timing log counts
    # the kernel's own lines only, so workers' lines are not added twice).
    with timing.fitting(), processes.worker_processes(n_jobs):
        done = Parallel(n_jobs=n_jobs, return_as="generator_unordered")(calls)
        for f, best, fold_gain, fold_scores in bar(done, total=folds, desc="stage-1 folds",
                                                   leave=False, enabled=progress):
            iterations[f] = best
            gain += fold_gain
            for p, (docs, s) in fold_scores.items():
                scores[p][docs] = s
    return scores, iterations, gain


def _fit_fold(splits: Splits, fold_of: dict[str, np.ndarray], f: int, params: Mapping[str, Any],
              settings: TrainSettings):
    """Stage-1 model ``f``: trained outside fold ``f``, scoring fold ``f`` of every part."""
    from ltrlib.train import train_ranker

    ranker = train_ranker(splits.train.take(np.flatnonzero(fold_of["train"] != f)),
                          splits.vali.take(np.flatnonzero(fold_of["vali"] != f)),
                          dict(params), settings)
    fold_scores = {}
    for p in _PARTS:
        ds = getattr(splits, p)
        queries = np.flatnonzero(fold_of[p] == f)
        docs = np.flatnonzero(np.isin(ds.doc_query_index, queries))
        fold_scores[p] = (docs, ranker.score(ds.take(queries)))
    return f, ranker.best_iteration, ranker.feature_importance("gain").to_numpy(), fold_scores


def build_two_stage(
    splits: Splits,
    *,
    folds: int = 10,
    top_k: int = 20,
    cutoffs=CUTOFFS,
    params: Mapping[str, Any] | None = None,
    settings: TrainSettings = STAGE1_SETTINGS,
    n_features: int = 0,
    keep_features=None,
    n_jobs: int = 2,
    fold_streams: str = "spawned",
    cache_dir: str | os.PathLike | None = None,
    use_cache: bool = True,
    progress: bool = False,
) -> TwoStage:
    """Run (or reload) stage 1 and cut every query to its top ``top_k`` documents.

    Every stage-1 model trains with ``settings`` (`STAGE1_SETTINGS`: early stopping on
    NDCG@20; its seed also draws the folds, as ``fold_streams`` says: `FOLD_STREAMS`). The
    folds train ``n_jobs`` at a time in worker processes, ``settings.num_threads`` LightGBM
    threads each. On 2 cores at the small scale, two one-thread folds side by side (five
    folds in 277 s) match one two-thread fold at a time (48-58 s a fold), and leave no core
    idle as one one-thread fold at a time did (81 s a fold); at the tiny scale 2 threads per
    fold ran 10x slower, hence `STAGE1_SETTINGS`' one thread.

    ``n_features > 0`` keeps only the base features with the largest total gain in the
    stage-1 models (kept in column order), besides the stage-1 score: not in the paper, a way to
    make the pair matrix (2·5·(m+1) + (m+1) columns) affordable on small machines; 0
    keeps them all, as the paper does. ``keep_features`` (names) are kept besides them
    whatever their gain: features that only matter in pairs, such as the synthetic twin's
    host id, have next to no univariate gain. None keeps the training data's
    ``meta["pairwise_features"]`` (`ltrlib.data.synthetic.PAIRWISE_FEATURES`), if any.
    """
    for p in _PARTS:
        if getattr(splits, p, None) is None:
            raise ValueError(f"build_two_stage needs train, vali and test partitions; {p} is missing")
    if isinstance(folds, bool) or int(folds) != folds or folds < 2:
        raise ValueError(f"folds must be an integer >= 2, got {folds!r}")
    smallest = min(getattr(splits, p).n_queries for p in _PARTS)
    if folds > smallest:
        raise ValueError(f"folds={folds} exceeds the queries of the smallest partition ({smallest})")
    if fold_streams not in FOLD_STREAMS:
        raise ValueError(f"fold_streams must be one of {FOLD_STREAMS}, got {fold_streams!r}")
    cutoffs = tuple(sorted({int(k) for k in cutoffs}))
    if not cutoffs or cutoffs[0] < 1:
        raise ValueError(f"cutoffs must be positive integers, got {cutoffs}")
    params = dict(STAGE1_PARAMS if params is None else params)
    # Everything the stage-1 scores depend on (the thread count does not: deterministic).
    key = {"folds": int(folds), "top_k": int(top_k), "params": params, "backend": settings.backend,
           "max_trees": settings.max_trees, "early_stopping": settings.early_stopping,
           "eval_at": settings.eval_at, "seed": settings.seed, "fold_streams": fold_streams}
    path = Path(cache_dir or config.CACHE_DIR) / "bivariate" / f"two-stage-{_cache_key(splits, key)}.npz"
    cached = _load(path) if use_cache else None
    if cached is None:
        scores, iterations, gain = _stage1_scores(splits, int(folds), params, settings, int(n_jobs), progress,
                                                fold_streams)
        cached = {f"score_{p}": scores[p] for p in _PARTS}
        cached["iterations"] = np.asarray(iterations, dtype=np.int64)
        cached["gain"] = gain
        if use_cache:
            _save(path, cached)
    if isinstance(n_features, bool) or int(n_features) != n_features or n_features < 0:
        raise ValueError(f"n_features must be a non-negative integer, got {n_features!r}")
    if n_features:
        # Stable sort: equal gains keep column order, so the choice is reproducible.
        by_gain = np.argsort(-cached["gain"], kind="stable")[:int(n_features)]
        columns = np.union1d(by_gain, _columns_of(splits.train, keep_features))
    else:
        columns = np.arange(splits.train.n_features)
    names = tuple(splits.train.feature_names[c] for c in columns)
    stage2, full_ideal, kept = {}, {}, {}
    for p in _PARTS:
        ds = getattr(splits, p)
        score = cached[f"score_{p}"]
        if score.shape != (ds.n_docs,) or not np.all(np.isfinite(score)):
            raise RuntimeError(f"stage-1 scores of {p} are incomplete; delete {path}")
        keep = kept[p] = top_k_mask(score, ds.offsets, top_k)
        full_ideal[p] = np.stack([ideal_dcg(ds.y, ds.offsets, k) for k in cutoffs], axis=1)
        sizes = np.add.reduceat(keep.astype(np.int64), ds.offsets[:-1])
        X = np.concatenate([ds.X[keep][:, columns], score[keep, None].astype(np.float32)], axis=1)
        stage2[p] = Dataset(X=X, y=ds.y[keep], query_ids=ds.query_ids,
                            offsets=np.concatenate([[0], np.cumsum(sizes)]),
                            feature_names=names + (SCORE_FEATURE,),
                            category=None if ds.category is None else ds.category[keep],
                            name=f"{ds.name}-top{top_k}", meta={"stage": 2})
    info = {"cache": str(path), "stage1_iterations": cached["iterations"].tolist(),
            "stage2_base_features": list(names), **key}
    return TwoStage(stage1=Splits(splits.train, splits.vali, splits.test),
                    stage2=Splits(stage2["train"], stage2["vali"], stage2["test"]),
                    full_ideal=full_ideal, cutoffs=cutoffs, top_k=int(top_k), folds=int(folds),
                    kept=kept, info=info)


def _columns_of(ds: Dataset, names) -> np.ndarray:
    if names is None:
        names = ds.meta.get("pairwise_features", ())
    if isinstance(names, str):
        names = (names,)
    unknown = [n for n in names if n not in ds.feature_names]
    if unknown:
        raise ValueError(f"keep_features {unknown} are not features of {ds.name} "
                         f"(it has {ds.n_features}: {', '.join(ds.feature_names[:5])}, ...)")
    return np.array([ds.feature_names.index(n) for n in names], dtype=np.int64)


#: Stage 1's parameters that `tune_stage1` leaves as `STAGE1_PARAMS` sets them (speed, not
#: in §5.4's space).
_STAGE1_FIXED = ("feature_fraction", "force_col_wise")
STAGE1_MODEL = "λMART (stage 1)"


@dataclass
class Stage1Tuning:
    """What stage 1's K fold models train with: ``params`` (LightGBM's), from ``trials``
    Optuna trials (0: `STAGE1_PARAMS` as they are, untuned), the best trial's tree count
    and validation NDCG@``eval_at`` (NaN untuned), the trials table, and the trials LightGBM
    could not train that were replaced (``failed``)."""

    params: dict
    trials: int
    eval_at: int
    best_iteration: int = 0
    vali_ndcg: float = float("nan")
    tuning: pd.DataFrame = field(default_factory=pd.DataFrame)
    failed: int = 0

    def row(self, two: "TwoStage | None" = None) -> dict[str, Any]:
        """Stage 1's row of Table 8 (`ltrlib.bilambdamart.experiment.tuned_table`). ``trees``:
        the median early-stopped tree count of ``two``'s fold models, the ones that made the
        lists (without ``two``, the best trial's)."""
        folds = (two.info.get("stage1_iterations") if two is not None else None) or []
        return {"model": STAGE1_MODEL, "learning_rate": self.params["learning_rate"],
                "min_data_in_leaf": self.params["min_data_in_leaf"], "num_leaves": self.params["num_leaves"],
                # LightGBM's default when the point does not set it.
                "min_sum_hessian_in_leaf": self.params.get("min_sum_hessian_in_leaf", 1e-3),
                "trees": int(np.median(folds)) if folds else (self.best_iteration or None), "trials": self.trials,
                # "-": the open λRank settings are stage 2's (LightGBM's defaults here).
                "vali_ndcg": self.vali_ndcg, "norm": "-", "truncation": "-", "hessian": "-"}


def stage1_tuning(stage1_trials: int, tuning: TuningSettings) -> TuningSettings | None:
    """Stage 1's search for `tune_stage1`: ``tuning`` (storage, progress) with
    ``stage1_trials`` trials and no pruning, or None for 0 trials (stage 1 keeps its fixed
    settings). ValueError unless ``stage1_trials`` is a non-negative integer."""
    if isinstance(stage1_trials, bool) or not isinstance(stage1_trials, (int, np.integer)) or stage1_trials < 0:
        raise ValueError(f"stage1_trials must be a non-negative integer, got {stage1_trials!r}")
    return tuning.replace(n_trials=int(stage1_trials), prune=False) if stage1_trials else None


def tune_stage1(splits: Splits, *, tuning: TuningSettings | None, settings: TrainSettings = STAGE1_SETTINGS,
                study_name: str = "06.stage1") -> Stage1Tuning:
    """Tune stage 1 as the paper does (§5.2): once, by validation NDCG@``settings.eval_at``
    (20), the same point then training all K fold models (`build_two_stage(params=...)`).

    Each trial trains one λMART on the whole training partition with early stopping on the
    whole validation partition (``settings``: its tree limit, patience and threads), over
    §5.4's space as every stage-2 model (`ltrlib.bilambdamart.space.suggest`), with
    `STAGE1_PARAMS`' speed settings (`_STAGE1_FIXED`) kept. The first trial is
    `STAGE1_PARAMS`' point, so the tuned point is never worse on validation than the
    batch's fixed one. A trial's value is LightGBM's validation NDCG@eval_at at its
    early-stopped tree (the list's own IDCG: stage 1 sees whole lists). ``tuning``: the
    search's trials, storage (a run's journal resumes an interrupted study) and progress,
    as `ltrlib.train.run_study` takes them; its trials are not pruned (``tuning.prune``
    must be False) and its first point is `STAGE1_PARAMS`', whatever
    ``tuning.first_params`` says. ``tuning=None`` tunes nothing and returns `STAGE1_PARAMS`
    (`stage1_tuning` turns a notebook's trial count, 0 for none, into one or the other).
    """
    from ltrlib.bilambdamart.space import TUNED, suggest
    from ltrlib.train.backends.base import DataCache
    from ltrlib.train.ranker import train_ranker
    from ltrlib.train.tuning import run_study

    if tuning is None:
        return Stage1Tuning(dict(STAGE1_PARAMS), 0, settings.eval_at)
    fixed = {k: STAGE1_PARAMS[k] for k in _STAGE1_FIXED}
    first = {k: STAGE1_PARAMS.get(k, 1e-3) for k in TUNED}  # LightGBM's default min hessian
    cache = DataCache(splits.train, splits.vali)

    def objective(trial, monitor):
        ranker = train_ranker(splits.train, splits.vali, {**fixed, **suggest(trial)}, settings, cache=cache,
                              monitor=monitor)
        trial.set_user_attr("best_iteration", ranker.best_iteration)
        trial.set_user_attr("trees", len(ranker.curve))
        return float(ranker.curve[ranker.best_iteration - 1])

    setup = {"model": STAGE1_MODEL, "data": [_fingerprint(getattr(splits, p)) for p in ("train", "vali")],
             "fixed": fixed, "max_trees": settings.max_trees, "early_stopping": settings.early_stopping,
             "eval_at": settings.eval_at, "seed": settings.seed}
    result = run_study(objective, tuning.replace(first_params=first), study_name=study_name,
                       seed=settings.seed, setup=setup, searched=TUNED)
    return Stage1Tuning({**fixed, **result.best_params}, tuning.n_trials, settings.eval_at,
                        result.best_iteration, result.best_value, result.trials, result.failed)


def table1(two: TwoStage, difference: bool = True) -> pd.DataFrame:
    """Table 1 for our data: per partition, queries, documents and features at each stage.

    Beyond the paper: ``relevant_kept``, the share of the full lists' relevant documents
    that stage 1 kept in the top ``top_k``, and ``idcg20_kept``, the mean ratio of the
    stage-2 list's ideal DCG@20 to the full list's (1.0 = nothing lost).
    """
    rows = []
    for p in _PARTS:
        s1, s2 = getattr(two.stage1, p), getattr(two.stage2, p)
        m = s2.n_features  # base + stage-1 score
        sizes = s2.group_sizes
        full = two.full_ideal[p][:, -1]
        kept = ideal_dcg(s2.y, s2.offsets, two.cutoffs[-1])
        ratio = np.where(full > 0, kept / np.where(full > 0, full, 1.0), np.nan)
        rows.append({
            "partition": p, "queries": s1.n_queries,
            "stage1_docs": s1.n_docs, "stage1_features": s1.n_features,
            "stage2_docs": s2.n_docs, "stage2_features": 5 * m,
            "stage2_pairs": int(np.sum(sizes * (sizes - 1))),
            "pair_features": 2 * 5 * m + (m if difference else 0),
            "relevant_kept": float((s2.y > 0).sum() / max(1, (s1.y > 0).sum())),
            f"idcg{two.cutoffs[-1]}_kept": float(np.nanmean(ratio)),
        })
    return pd.DataFrame(rows)
