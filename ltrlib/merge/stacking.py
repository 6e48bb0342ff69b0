"""Model stacking (§4 of the non-IID paper): a meta-ranker on score-augmented D_merge.

The faithful reading of §4: each query-document pair of the client's D_merge is described
by its ``|x|`` features; the scores ``s_i`` of the ``n`` local models are appended as
features ``f_{|x|+1} .. f_{|x|+n}`` (in model order), and "a new simple model" is trained
on this augmented D_merge. §5.3 tunes it with Optuna (it reports tree counts, learning
rates, leaves, minimum data and minimum Hessian per leaf, i.e. the same LambdaMART search
space as the local models) and calls the meta-models ``M12S`` (client 1) and ``M21S``
(client 2); Figure 3 plots their feature importance, where the score features (221 and
222 on Istella-S) dominate.

Our choices where the paper is silent
    * Score features are *named* ``score_<model>`` (``score_M1``, ``score_M2``) and sit in
      columns ``|x| .. |x|+n-1`` (0-based), i.e. features ``|x|+1 .. |x|+n`` as in the paper.
    * Tuning data. The paper tunes "on M_S" without saying on which held-out data; D_merge
      is the only labelled data the client may use for merging and it is small, so we tune
      by ``n_folds``-fold cross-validation over D_merge's queries (`ltrlib.train.tune_cv`:
      mean held-out NDCG@10, early stopping on the held-out fold), then refit on all of
      D_merge with the best parameters and the mean early-stopped tree count.
    * Search space: the local models' (`ltrlib.train.tuning.SEARCH_SPACE`), with trial 0 fixed to
      `STACKING_FIRST_PARAMS` (much of the space cannot split on a small D_merge: large
      ``min_sum_hessian_in_leaf`` with LambdaMART's small Hessians gives a constant model).
      Tree limit (`STACKING_SETTINGS`): at most 500 trees (the paper's tuned meta-models have
      60-473, so its range fits) with the paper's patience of 100 trees, instead of the local
      models' 3000; trials are pruned from the held-out folds' curves as the local models'
      are (`ltrlib.train.tuning`).
    * The local models' scores on D_merge are out-of-sample for both models (D_merge comes
      from validation data neither was trained on), so no cross-fitting is needed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ltrlib.data.dataset import Dataset, Scorer
from ltrlib.merge.analysis import (hold_base_models, merged_model_name, per_query_frame,
                                   score_base_models, score_models)
from ltrlib.train.settings import TrainSettings, TuningSettings

__all__ = [
    "SCORE_PREFIX",
    "STACKING_SETTINGS",
    "STACKING_TUNING",
    "StackingExperiment",
    "StackingModel",
    "feature_importance",
    "optimize_stacking",
    "score_feature_names",
    "stack_features",
    "stacking_experiment",
    "train_stacking",
]

SCORE_PREFIX = "score_"
# The meta-models' training settings. The paper's meta-models have 60-473 trees (§5.3): a
# cap of 500 holds that whole range; the patience is the paper's 100.
# num_threads None: ltrlib's DEFAULT_NUM_THREADS (2; LTRLIB_NUM_THREADS). On a quiet 2-core
# machine two threads tune a meta-model on a 289-query D_merge 1.56x faster than one (27 s
# against 43 s, 3 trials of 3 folds). One thread pays off only when the cores are already
# busy (OpenMP threads then spin against other processes): set LTRLIB_NUM_THREADS=1 there.
STACKING_SETTINGS = TrainSettings(max_trees=500, early_stopping=100, num_threads=None)
# Trial 0 of every study: a point of the search space that can split on a few hundred
# queries (most random draws of min_sum_hessian_in_leaf >= 20 cannot: the meta-model
# would be a constant ranker), so tuning always has one working candidate.
STACKING_FIRST_PARAMS = {"learning_rate": 0.1, "num_leaves": 31, "min_data_in_leaf": 20,
                         "min_sum_hessian_in_leaf": 1}
# A meta-model's search by default: a short one, pruned, from STACKING_FIRST_PARAMS.
STACKING_TUNING = TuningSettings(n_trials=10, prune=True, progress=False, first_params=STACKING_FIRST_PARAMS)
# Used only when D_merge has fewer than 2 queries (no cross-validation possible, e.g. the
# tiny smoke-test scale): the most common values in the paper's reported meta-models.
UNTUNED_PARAMS = {"learning_rate": 0.1, "num_leaves": 63, "min_data_in_leaf": 10,
                  "min_sum_hessian_in_leaf": 1}
UNTUNED_TREES = 100


def score_feature_names(models: Sequence[str]) -> tuple[str, ...]:
    """``score_<model>`` for each model, in order (the names of features |x|+1..|x|+n)."""
    return tuple(f"{SCORE_PREFIX}{m}" for m in models)


def stack_features(ds: Dataset, scores: Mapping[str, np.ndarray], name: str | None = None) -> Dataset:
    """``ds`` with the local models' scores appended as features ``|x|+1 .. |x|+n``.

    Columns ``ds.n_features + i`` hold ``scores`` of the i-th model (mapping order), named
    ``score_<model>``. Raises if a score array does not match ``ds`` or a name collides.
    """
    if not scores:
        raise ValueError("stack_features needs the scores of at least one local model")
    names = score_feature_names([str(k) for k in scores])
    clash = sorted(set(names) & set(ds.feature_names))
    if clash:
        raise ValueError(f"{ds.name!r} already has features named {clash}; rename the models")
    cols = []
    for model, s in scores.items():
        s = np.asarray(s, dtype=np.float64).ravel()
        if s.size != ds.n_docs:
            raise ValueError(f"scores of {model!r} have {s.size} values, {ds.name!r} has {ds.n_docs} documents")
        if not np.all(np.isfinite(s)):
            raise ValueError(f"scores of {model!r} contain NaN or infinite values")
        cols.append(s)
    X = np.concatenate([ds.X, np.column_stack(cols).astype(np.float32)], axis=1)
    return Dataset(X=X, y=ds.y, query_ids=ds.query_ids, offsets=ds.offsets,
                   feature_names=(*ds.feature_names, *names), category=ds.category,
                   name=name or f"{ds.name}+scores", meta=dict(ds.meta))


def optimize_stacking(ds: Dataset, scores: Mapping[str, np.ndarray], *, tuning: TuningSettings = STACKING_TUNING,
                      n_folds: int = 3, study_name: str = "stacking",
                      settings: TrainSettings = STACKING_SETTINGS):
    """Tune the meta-model on the score-augmented ``ds`` by k-fold CV over its queries,
    every fold's model trained with ``settings``.

    Returns `ltrlib.train.tuning.TuningResult` (``best_params``, ``best_iteration`` = mean
    early-stopped trees of the best trial, ``trials``). ``tuning``: the search
    (`STACKING_TUNING` by default); ``tuning.storage`` an Optuna journal path, so an
    interrupted run resumes (see `ltrlib.train.tuning`); ``tuning.prune`` stops hopeless
    trials early from the held-out folds' validation curves (`ltrlib.train.tune_cv`).
    ``settings.backend``: the meta-model's, ``"lightgbm"`` or ``"xgboost"``
    (``tuning.first_params`` are given in LightGBM's names and translated,
    `ltrlib.train.in_backend`).
    """
    from ltrlib.train import in_backend, tune_cv

    if isinstance(n_folds, bool) or not isinstance(n_folds, (int, np.integer)) or n_folds < 2:
        raise ValueError(f"n_folds must be an integer >= 2, got {n_folds!r}")
    if n_folds > ds.n_queries:
        raise ValueError(f"n_folds={n_folds} exceeds the {ds.n_queries} queries of D_merge {ds.name!r}")
    aug = stack_features(ds, scores)
    if tuning.first_params is not None:
        tuning = tuning.replace(first_params=in_backend(tuning.first_point, settings.backend))
    return tune_cv(aug, int(n_folds), tuning=tuning, study_name=study_name, settings=settings)


@dataclass
class StackingModel:
    """A meta-ranker and the local models whose scores it reads (``models``: their names in
    feature order): a `ltrlib.data.Scorer`. ``base_models``: ``{name: Scorer}`` in that
    order, empty when trained from score arrays alone (then only `score_from_base` works).
    """

    ranker: object  # a `ltrlib.train.Ranker`
    models: tuple[str, ...]
    tuning: object = field(default=None, repr=False)
    base_models: dict[str, Scorer] = field(default_factory=dict, repr=False)

    @property
    def score_features(self) -> tuple[str, ...]:
        return score_feature_names(self.models)

    def score(self, data: Dataset) -> np.ndarray:
        """Meta-model scores of ``data``: its base models score it, the meta-ranker reads
        their scores beside its features."""
        return self.score_from_base(data, score_base_models(self, data))

    def score_from_base(self, data: Dataset, base_scores: Mapping[str, np.ndarray]) -> np.ndarray:
        """Meta-model scores of ``data`` from the local models' scores on it (by name, any
        order), for callers that hold those scores already."""
        missing = [m for m in self.models if m not in base_scores]
        if missing:
            raise KeyError(f"scores lack models {missing} (meta-model reads {list(self.models)})")
        return self.ranker.score(stack_features(data, {m: base_scores[m] for m in self.models}))


def train_stacking(ds: Dataset, scores: Mapping[str, np.ndarray], *, params: Mapping | None = None,
                   n_trees: int = 100, settings: TrainSettings = STACKING_SETTINGS,
                   tuning=None, models: Mapping[str, Scorer] | None = None) -> StackingModel:
    """Fit the meta-ranker (LambdaMART) on all of the score-augmented ``ds``, ``n_trees`` trees
    (in place of ``settings.max_trees``; no validation data, so no early stopping).

    ``params``: e.g. ``tuning.best_params`` from `optimize_stacking` (in
    ``settings.backend``'s names), with ``n_trees=tuning.best_iteration``. ``models``: the
    local models behind ``scores``, by the same names; the meta-model holds them, so that
    its ``score(data)`` works on new data. None: ``score_from_base`` only.
    """
    from ltrlib.train import train_ranker

    names = tuple(str(k) for k in scores)
    held = hold_base_models(names, models)
    aug = stack_features(ds, scores)
    ranker = train_ranker(aug, None, dict(params or {}), settings.replace(max_trees=int(n_trees)))
    return StackingModel(ranker, names, tuning, held)


def feature_importance(meta: Mapping[str, StackingModel], top_k: int = 15,
                       always_scores: bool = True) -> pd.DataFrame:
    """Figure 3: each meta-model's feature importance by gain and by split count.

    Tidy: ``model, kind ("gain"/"split"), feature, value, share`` (of the model's total),
    ``rank`` (1 = most important) and ``is_score`` (a local model's score feature), keeping
    the ``top_k`` used features per model and kind; with ``always_scores`` the score
    features are kept even outside the top k (or unused), so the figure always shows where
    they stand.
    """
    if top_k < 1:
        raise ValueError(f"top_k must be >= 1, got {top_k}")
    frames = []
    for name, m in meta.items():
        scores = set(m.score_features)
        for kind in ("gain", "split"):
            imp = m.ranker.feature_importance(kind)
            total = float(imp.sum())
            df = pd.DataFrame({"feature": imp.index, "value": imp.to_numpy(np.float64)})
            df["share"] = df.value / total if total > 0 else 0.0
            df = df.sort_values(["value", "feature"], ascending=[False, True], kind="stable")
            df["rank"] = np.arange(1, len(df) + 1)
            df["is_score"] = df.feature.isin(scores)
            # Unused features (value 0) are never "top": a model with few splits shows few bars.
            keep = ((df["rank"] <= top_k) & (df.value > 0)) | (df.is_score & always_scores)
            frames.append(df[keep].assign(model=name, kind=kind))
    columns = ["model", "kind", "feature", "value", "share", "rank", "is_score"]
    if not frames:  # no meta-model: every client's D_merge was empty (`stacking_experiment`)
        return pd.DataFrame(columns=columns)
    return pd.concat(frames, ignore_index=True)[columns]


@dataclass
class StackingExperiment:
    """§5.3 stacking on one split.

    ``per_query``: tidy test results (``split, model, qid, metric, value``) for M12S, M21S;
    ``params``: one row per meta-model with its tuned parameters, tree count and CV value
    (the paper's text after Table 5); ``trials``: the tuning trials; ``meta``: the models;
    ``scorers``: every model of ``per_query`` as a `ltrlib.data.Scorer`, by its name there
    (the meta-models, and a client's uniform `LinearMerge` where its D_merge was empty), to
    score other data; ``test_scores``: those models' scores on the full test set, by the
    same names, what a notebook writes run files from (`ltrlib.report.Reporter.run_file`),
    not scored again.
    """

    split: str
    per_query: pd.DataFrame
    params: pd.DataFrame
    trials: pd.DataFrame
    meta: dict[str, StackingModel]
    scorers: dict[str, Scorer] = field(default_factory=dict, repr=False)
    test_scores: dict[str, np.ndarray] = field(default_factory=dict, repr=False)


def stacking_experiment(split, models: Mapping[str, object], *, tuning: TuningSettings = STACKING_TUNING,
                        n_folds: int = 3, settings: TrainSettings = STACKING_SETTINGS,
                        metrics: Sequence[str] = ("ndcg@10", "map", "mrr@10"),
                        test_scores: Mapping[str, np.ndarray] | None = None) -> StackingExperiment:
    """Tune and train each client's meta-model on its D_merge; evaluate on the full test set.
    ``tuning``: each meta-model's search (`optimize_stacking`).

    ``split`` as in `ltrlib.merge.linear.linear_experiment`; ``tuning.storage`` an Optuna journal
    file (studies named ``<split>.<M12S|M21S>``) so that reruns reuse finished studies.
    A D_merge with fewer queries than ``n_folds`` is cross-validated with one fold per
    query; one with a single query is not tuned (``UNTUNED_PARAMS``, ``cv_folds = 0`` in
    ``params``); an empty one falls back on the uniform linear combination (``note``).
    ``params["splits_in_model"] == 0`` flags a meta-model that learnt no
    split at all (a constant ranker: its tuned leaf minimums exceed what D_merge holds).
    ``settings``: the meta-models' training (`STACKING_SETTINGS`: at most 500 trees); its
    backend (``"lightgbm"``, the paper, or ``"xgboost"``) is the meta-models', whatever the
    local models' backend is.
    """
    from ltrlib.train import in_backend

    test = split.full.test
    test_scores = dict(test_scores) if test_scores is not None else score_models(models, test)
    local = {m: test_scores[m] for m in models}
    out, rows, trials, meta, scorers = {}, [], [], {}, {}
    for i, client in enumerate(split.clients):
        name = merged_model_name(i, len(split.clients), "S")
        merge_scores = score_models(models, client.merge)
        nq = client.merge.n_queries
        if nq == 0:
            # No D_merge query (a rare category's exclusive split on a small scale): no
            # meta-model can be learnt. The client falls back on what an empty D_merge gives
            # the linear merge, the uniform combination, and the row says so.
            scorers[name] = _uniform_merge(models)
            out[name] = scorers[name].score_from_base(test, local)
            rows.append({"split": split.name, "client": str(getattr(client, "name", f"client{i + 1}")),
                         "model": name, "merge_queries": 0, "cv_folds": 0, "trees": 0,
                         "cv_ndcg@10": np.nan, "trials": 0, "splits_in_model": 0,
                         "note": "empty D_merge: uniform linear combination, no meta-model"})
            continue
        # A D_merge smaller than n_folds (tiny data) gets as many folds as it has queries;
        # one query cannot be cross-validated, so it gets the untuned configuration.
        folds = min(int(n_folds), nq)
        if folds >= 2:
            res = optimize_stacking(client.merge, merge_scores, tuning=tuning, n_folds=folds,
                                    study_name=f"{split.name}.{name}", settings=settings)
            params, n_trees, cv_value, n_done = res.best_params, res.best_iteration, res.best_value, res.n_trials
            trials.append(res.trials.assign(split=split.name, model=name))
        else:
            res, params, n_trees, cv_value, n_done = (None, in_backend(UNTUNED_PARAMS, settings.backend),
                                                      UNTUNED_TREES, np.nan, 0)
        m = train_stacking(client.merge, merge_scores, params=params, n_trees=n_trees,
                           settings=settings, tuning=res, models=models)
        meta[name] = scorers[name] = m
        out[name] = m.score_from_base(test, local)
        rows.append({"split": split.name, "client": str(getattr(client, "name", f"client{i + 1}")),
                     "model": name, "merge_queries": nq, "cv_folds": folds if folds >= 2 else 0,
                     "trees": n_trees, **params, "cv_ndcg@10": cv_value, "trials": n_done,
                     "splits_in_model": int(m.ranker.feature_importance("split").sum())})
    pq = per_query_frame(test, out, metrics).assign(split=split.name)
    return StackingExperiment(split.name, pq[["split", "model", "qid", "metric", "value"]],
                              pd.DataFrame(rows),
                              pd.concat(trials, ignore_index=True) if trials else pd.DataFrame(),
                              meta, scorers, out)


def _uniform_merge(models: Mapping[str, Scorer]):
    """The equal-weight `LinearMerge` of ``models``: a client's stand-in for a meta-model when
    its D_merge is empty (no data to tune or judge on, so no value and no trace)."""
    from ltrlib.merge.linear import LinearMerge

    names = [str(m) for m in models]
    return LinearMerge({m: 1 / len(names) for m in names}, float("nan"), "ndcg@10", "none", "uniform",
                       pd.DataFrame(columns=[*names, "value", "round"]), hold_base_models(names, models))
