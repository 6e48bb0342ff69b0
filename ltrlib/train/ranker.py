"""Rankers behind one interface, whatever library trains them.

The non-IID paper (§5.1) trains every model with LightGBM's LambdaMART ("lambdarank"),
at most 3000 trees, stopping early once NDCG@10 on the validation set has not improved for
100 consecutive trees. `train_ranker` does exactly that by default::

    ranker = train_ranker(client.train, client.vali, {"learning_rate": 0.05}, TrainSettings(seed=0))
    scores = ranker.score(client.test)            # ranker.predict(X) for a bare feature matrix
    ranker.best_iteration, ranker.feature_importance("gain"), ranker.save(path)

A `Ranker` is a plain record (backend name, full training parameters, best iteration,
feature names, validation curve) around the backend's model object. Everything that
depends on the library goes through a `Backend` entry in `BACKENDS`: ``"lightgbm"`` and
``"xgboost"`` (`ltrlib.train.backends.xgboost`: objectives ``rank:ndcg``, ``rank:pairwise``,
``rank:map``, ``lambdarank_pair_method`` mean/topk, ``lambdarank_num_pair_per_sample``,
``ndcg_exp_gain``, unbiased LambdaMART). Notebooks and the merging code call the same
methods whichever trained the model::

    train_ranker(train, vali, {"objective": "rank:pairwise", "lambdarank_pair_method": "mean"},
                 TrainSettings(backend="xgboost"))

Click logs: ``train_ranker(..., position=...)`` passes each training row's displayed
position (0 = top) to the library's position-bias correction (LightGBM: the Dataset's
``position``, learned jointly as in its ``lambdarank_position_bias_regularization``;
XGBoost: ``lambdarank_unbiased=True``, Unbiased LambdaMART).

Many trainings on the same data (the trials of a tuning study) share one `DataCache`: the
backend's own copies of the data (LightGBM's binned ``Dataset``s, XGBoost's ``DMatrix``es)
are built by the first training and reused by the next ones::

    cache = DataCache(train, vali)
    for params in candidates:
        train_ranker(train, vali, params, cache=cache, monitor=report)

``monitor(trees, value)`` is called with the validation NDCG@eval_at after every tree; it
may raise to stop the training (tuning's pruner raises ``optuna.TrialPruned``).

Determinism: the same data, parameters and ``seed`` give the same model, bit for bit
(LightGBM's ``deterministic=True`` with ``force_row_wise=True``; see the LightGBM docs:
without them the row/column-wise choice and multithreaded histogram sums can vary).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from ltrlib import timing
from ltrlib.data.dataset import Dataset
from ltrlib.metrics import evaluate
from ltrlib.train.backends import xgboost as _xgb
from ltrlib.train.backends.base import Backend, DataCache
from ltrlib.train.backends.lightgbm import LIGHTGBM
from ltrlib.train.settings import DEFAULT_EVAL_AT, TrainSettings

__all__ = [
    "BACKENDS",
    "Ranker",
    "evaluate_rankers",
    "xgboost_propensities",
    "train_ranker",
    "validation_curves",
]


# Parameters `train_ranker` sets from its `TrainSettings`; passing them in ``params`` as well
# would make two sources of truth for one setting.
_RESERVED = {
    "num_iterations": "max_trees", "num_iteration": "max_trees", "n_iter": "max_trees",
    "num_tree": "max_trees", "num_trees": "max_trees", "num_round": "max_trees",
    "num_rounds": "max_trees", "num_boost_round": "max_trees", "n_estimators": "max_trees",
    "max_iter": "max_trees", "early_stopping_round": "early_stopping",
    "early_stopping_rounds": "early_stopping", "early_stopping": "early_stopping",
    "n_iter_no_change": "early_stopping", "eval_at": "eval_at", "ndcg_eval_at": "eval_at",
    "ndcg_at": "eval_at", "map_eval_at": "eval_at", "map_at": "eval_at",
}


# --------------------------------------------------------------------------- backends


BACKENDS: dict[str, Backend] = {"lightgbm": LIGHTGBM, "xgboost": _xgb.XGBOOST}


def _backend(name: str) -> Backend:
    try:
        return BACKENDS[name]
    except KeyError:
        raise ValueError(
            f"unknown backend {name!r}; supported backends: {', '.join(sorted(BACKENDS))}"
        ) from None


# --------------------------------------------------------------------------- Ranker


@dataclass(eq=False)
class Ranker:
    """A trained ranking model.

    Attributes
    ----------
    backend : ``"lightgbm"`` or ``"xgboost"``
    model : the backend's model object (a ``lightgbm.Booster`` or ``xgboost.Booster``)
    params : every training parameter passed to the backend (defaults included)
    best_iteration : number of trees used for prediction (the early-stopping optimum)
    feature_names : the training data's feature names, in column order
    curve : validation NDCG@eval_at after each tree (empty without validation data)
    info : free-form record: training sizes, tuning study, ...; saved in the sidecar
    """

    backend: str
    model: Any
    params: dict
    best_iteration: int
    feature_names: tuple[str, ...]
    curve: list[float] = field(default_factory=list)
    info: dict = field(default_factory=dict)
    # Scores of the queries this ranker has already scored, by query fingerprint (see
    # `score`); not part of the record, never saved.
    _query_scores: dict = field(default_factory=dict, init=False, repr=False)

    def __repr__(self) -> str:
        lr = self.params.get("learning_rate", "?")
        return (f"Ranker({self.backend}, {self.best_iteration} trees, learning_rate={lr}, "
                f"{len(self.feature_names)} features)")

    @property
    def n_trees(self) -> int:
        """Trees used for prediction (= ``best_iteration``)."""
        return self.best_iteration

    @property
    def best_score(self) -> float:
        """Validation NDCG@eval_at at the best iteration (NaN without validation data)."""
        if not self.curve:
            return float("nan")
        return self.curve[self.best_iteration - 1]

    def score(self, data: Dataset) -> np.ndarray:
        """Scores of ``data`` (float64, one per row, in row order) using the first
        ``best_iteration`` trees: the `ltrlib.data.Scorer` contract.

        Queries this ranker has scored before (the same test query in DS, in DS1 and in a
        merge experiment) are not predicted again."""
        if not isinstance(data, Dataset):
            raise TypeError(f"score needs a ltrlib Dataset, got {type(data).__name__}; "
                            "score a bare feature matrix with predict(X)")
        # Prediction is the costly part of evaluation: LightGBM needs ~0.1 µs per tree and
        # document, 12 s for a 1,100-tree M_full on 1,000 test queries of 106 documents,
        # and the notebooks score one model on many overlapping query sets. A query is
        # recognised by a hash of its feature rows (in order) and the tree count, so a
        # reordered, re-featured or truncated query is scored afresh.
        keys = [(hashlib.blake2b(memoryview(np.ascontiguousarray(data.X[a:b])), digest_size=16)
                 .digest(), self.best_iteration)
                for a, b in zip(data.offsets[:-1].tolist(), data.offsets[1:].tolist())]
        missing = [i for i, k in enumerate(keys) if k not in self._query_scores]
        if missing:
            part = data if len(missing) == data.n_queries else data.take(missing)
            scores = self._predict_rows(part.X)
            for i, a, b in zip(missing, part.offsets[:-1].tolist(), part.offsets[1:].tolist()):
                self._query_scores[keys[i]] = scores[a:b]
        if not keys:  # an empty part (a tiny D_merge)
            return np.empty(0, dtype=np.float64)
        return np.concatenate([self._query_scores[k] for k in keys])

    def predict(self, X: np.ndarray | Dataset) -> np.ndarray:
        """Scores of the rows of a feature matrix ``X`` (float64), for callers without a
        `Dataset` (scikit-learn style); a `Dataset` is passed on to `score`."""
        if isinstance(X, Dataset):
            return self.score(X)
        return self._predict_rows(X)

    def _predict_rows(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X)
        if X.ndim != 2 or X.shape[1] != len(self.feature_names):
            raise ValueError(
                f"predict: X must have shape (n, {len(self.feature_names)}) like the training "
                f"data, got {X.shape}"
            )
        return np.asarray(_backend(self.backend).predict(self.model, X, self.best_iteration),
                          dtype=np.float64)

    def feature_importance(self, kind: str = "gain") -> pd.Series:
        """Total gain or number of splits per feature (by name), over the used trees."""
        if kind not in ("gain", "split"):
            raise ValueError(f"kind must be 'gain' or 'split', got {kind!r}")
        values = _backend(self.backend).importance(self.model, kind, self.best_iteration)
        return pd.Series(np.asarray(values, dtype=np.float64), index=list(self.feature_names),
                         name=kind).rename_axis("feature")

    # ---------------------------------------------------------------- persistence
    def sidecar(self) -> dict:
        """The JSON-able description saved next to the model file."""
        return {
            "backend": self.backend,
            "best_iteration": self.best_iteration,
            "params": self.params,
            "feature_names": list(self.feature_names),
            "curve": self.curve,
            "info": self.info,
        }

    def save(self, path: str | os.PathLike) -> Path:
        """Write the model (LightGBM text format) to ``path`` and its sidecar to
        ``path`` with suffix ``.json``; both atomically, the model first, so a sidecar
        present means a complete model beside it. Returns the model path."""
        from ltrlib.atomic import atomic_write_text

        path = Path(path)
        if path.suffix == ".json":
            raise ValueError(f"model path {path} would collide with its .json sidecar")
        atomic_write_text(path, _backend(self.backend).dumps(self.model, self.best_iteration))
        atomic_write_text(path.with_suffix(".json"),
                          json.dumps(self.sidecar(), indent=1, default=_json_default) + "\n")
        return path

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Ranker":
        """Read a model written by `save` (model file plus its ``.json`` sidecar)."""
        path = Path(path)
        side_path = path.with_suffix(".json")
        if not path.exists() or not side_path.exists():
            missing = [str(p) for p in (path, side_path) if not p.exists()]
            raise FileNotFoundError(f"cannot load ranker: missing {', '.join(missing)}")
        try:
            side = json.loads(side_path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ValueError(f"{side_path}: not valid JSON (line {exc.lineno}): {exc.msg}") from exc
        for key in ("backend", "best_iteration", "params", "feature_names"):
            if key not in side:
                raise ValueError(f"{side_path}: sidecar lacks the key {key!r}")
        model = _backend(side["backend"]).loads(path.read_text(encoding="utf-8"))
        return cls(backend=side["backend"], model=model, params=side["params"],
                   best_iteration=int(side["best_iteration"]),
                   feature_names=tuple(side["feature_names"]), curve=side.get("curve", []),
                   info=side.get("info", {}))


def _json_default(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"cannot store {type(value).__name__} in a model sidecar")


# --------------------------------------------------------------------------- training


def _check_data(train, vali) -> None:
    if not isinstance(train, Dataset):
        raise TypeError(f"train must be a ltrlib Dataset, got {type(train).__name__}")
    if vali is not None:
        if not isinstance(vali, Dataset):
            raise TypeError(f"vali must be a ltrlib Dataset or None, got {type(vali).__name__}")
        if vali.feature_names != train.feature_names:
            raise ValueError(
                f"vali {vali.name!r} has other features than train {train.name!r} "
                f"({vali.n_features} vs {train.n_features})"
            )


@timing.fitting()
def train_ranker(
    train: Dataset,
    vali: Dataset | None = None,
    params: Mapping[str, Any] | None = None,
    settings: TrainSettings = TrainSettings(),
    *,
    position: np.ndarray | None = None,
    cluster=None,
    split_queries: bool = False,
    cache: DataCache | None = None,
    monitor: Callable[[int, float], None] | None = None,
    checkpoint: str | os.PathLike | None = None,
    **changes,
) -> Ranker:
    """Train a LambdaMART ranker as the paper does (§5.1).

    ``params`` override the backend defaults (for LightGBM: ``objective="lambdarank"``,
    ``metric="ndcg"``, ``eval_at=[eval_at]``, ``seed``, ``deterministic=True``,
    ``force_row_wise=True``, ``num_threads``, quiet). Backend, tree count, patience, cutoff,
    seed and threads are ``settings`` (a `TrainSettings`; the default is the paper's), not
    params: at most ``settings.max_trees`` trees; with ``vali`` given, training stops
    once NDCG@``eval_at`` on ``vali`` has not improved for ``early_stopping`` trees and
    the model keeps the best iteration. Without ``vali`` exactly ``max_trees`` trees are
    grown (e.g. a final model retrained with a tuned tree count). ``changes`` (field names
    of `TrainSettings`) change ``settings`` for this call only:
    ``train_ranker(train, vali, params, seed=1)`` trains with ``TrainSettings(seed=1)``.

    ``settings.backend``: ``"lightgbm"`` or ``"xgboost"`` (defaults of the latter: see
    `ltrlib.train.backends.xgboost`). ``position``: for click logs, each training row's
    displayed position (int, 0 = top); it switches on the backend's position-bias model.
    ``cluster``: None trains in this process; ``"local"`` starts a Dask ``LocalCluster``
    for this call; a scheduler address (``"tcp://host:8786"``) or a
    ``distributed.Client`` trains on that cluster (see `ltrlib.train.backends.dask`);
    ``split_queries`` (XGBoost on a cluster only) then cuts the rows through query groups.

    ``cache``: a `DataCache` of exactly ``train`` and ``vali``; the backend's copies of the
    data are built once in it and reused by later calls (a tuning study's trials).
    ``monitor``: called as ``monitor(trees, value)`` with validation NDCG@``eval_at`` after
    every tree (needs ``vali``); an exception it raises ends the training and propagates
    (tuning's pruning raises ``optuna.TrialPruned``). Neither works with ``cluster``.
    ``checkpoint``: a file where the fit keeps its trees while it runs, so that the same call
    after an interruption resumes it with the same result, to the bit (LightGBM in this
    process only; see `ltrlib.train.backends.lightgbm`); tuning gives each trial one
    (`ltrlib.train.tuning.fit_checkpoint`).
    """
    if not isinstance(settings, TrainSettings):
        raise TypeError(f"settings must be a TrainSettings, got {type(settings).__name__}")
    if changes:
        settings = settings.replace(**changes)
    backend, max_trees, early_stopping = settings.backend, settings.max_trees, settings.early_stopping
    eval_at = settings.eval_at
    be = _backend(backend)
    _check_data(train, vali)
    user = dict(params or {})
    clash = sorted(k for k in user if k in _RESERVED)
    if clash:
        raise ValueError(
            f"params {clash} are set through train_ranker's settings "
            f"({', '.join(sorted({_RESERVED[k] for k in clash}))}); remove them from params"
        )
    full = be.complete({**be.defaults(settings.seed, eval_at, settings.threads), **user})
    if position is not None:
        position = np.asarray(position)
        if position.shape != (train.n_docs,) or not np.issubdtype(position.dtype, np.integer) \
                or (position.size and position.min() < 0):
            raise ValueError(f"position must hold one non-negative integer per training row "
                             f"({train.n_docs}), got dtype {position.dtype} shape {position.shape}")
    if full.get("lambdarank_unbiased") and position is None:
        # Checked here once for the in-process and the Dask path alike.
        raise ValueError("lambdarank_unbiased=True needs the displayed positions of the training "
                         "rows (train_ranker(..., position=...)); labelled data have none")
    if cache is not None and (cache.train is not train or cache.vali is not vali):
        raise ValueError("cache holds other data than train and vali; use DataCache(train, vali)")
    if (cache is not None or monitor is not None) and (cluster is not None or position is not None):
        raise ValueError("cache and monitor work for in-process training without position only")
    if monitor is not None and vali is None:
        raise ValueError("monitor watches the validation curve: it needs vali")
    if checkpoint is not None and (not be.resumes or cluster is not None or position is not None):
        raise ValueError(f"checkpoint resumes LightGBM fits in this process without position only, "
                         f"not backend={backend!r}" + (" on a cluster" if cluster is not None else "")
                         + (" with position" if position is not None else ""))
    if split_queries and cluster is None:
        raise ValueError("split_queries cuts the training rows over a Dask cluster's workers: it needs cluster")
    if cluster is None:
        extra = {k: v for k, v in (("cache", cache), ("monitor", monitor), ("checkpoint", checkpoint))
                 if v is not None}
        model, best, curve = be.fit(full, train, vali, max_trees, early_stopping, position=position,
                                    **extra)
    else:
        from ltrlib.train.backends.dask import fit_on_cluster

        model, best, curve = fit_on_cluster(cluster, backend, full, train, vali, max_trees,
                                            early_stopping, position=position, split_queries=split_queries)
    info = {
        "train": {"name": train.name, "queries": train.n_queries, "documents": train.n_docs},
        "vali": None if vali is None else {"name": vali.name, "queries": vali.n_queries,
                                           "documents": vali.n_docs},
        "max_trees": max_trees,
        "early_stopping": early_stopping if vali is not None else None,
        "eval_at": eval_at,
        "position_bias": position is not None,
        "cluster": None if cluster is None else str(cluster if isinstance(cluster, str) else "client"),
        # With early stopping LightGBM keeps only the best trees in the returned booster;
        # the curve still tells how many were grown.
        "trees_grown": len(curve) if curve else be.n_trees(model),
    }
    return Ranker(backend=backend, model=model, params=full, best_iteration=int(best),
                  feature_names=tuple(train.feature_names), curve=curve, info=info)


# --------------------------------------------------------------------------- evaluation


def evaluate_rankers(
    rankers: Mapping[str, Ranker],
    tests: Mapping[str, Dataset],
    metrics=("ndcg@10",),
) -> pd.DataFrame:
    """Every ranker on every test set, per query.

    Returns a tidy frame ``model, test_set, qid, metric, value`` (models and test sets in
    the order given), ready for `ltrlib.metrics.compare` (``by="test_set"``
    for one metric, the paper's Tables 1 and 3).
    """
    if not rankers or not tests:
        raise ValueError("evaluate_rankers needs at least one ranker and one test set")
    return pd.concat([evaluate_scores({name: ranker.score(ds) for name, ranker in rankers.items()}, ds, test_name,
                                      metrics) for test_name, ds in tests.items()], ignore_index=True)


def evaluate_scores(scores: Mapping[str, np.ndarray], ds: Dataset, test_set: str = "test",
                    metrics=("ndcg@10",)) -> pd.DataFrame:
    """`evaluate_rankers`' frame (``model, test_set, qid, metric, value``) from scores a
    caller already holds: ``{model name: one score per row of ds}``, on the test set named
    ``test_set``."""
    parts = []
    for model_name, model_scores in scores.items():
        pq = evaluate(ds, model_scores, metrics=metrics, per_query=True)
        pq.insert(0, "test_set", test_set)
        pq.insert(0, "model", model_name)
        parts.append(pq)
    return pd.concat(parts, ignore_index=True)


def validation_curves(rankers: Mapping[Any, Ranker]) -> pd.DataFrame:
    """Validation NDCG@eval_at after each tree, tidy: the key's parts, ``tree, metric, value,
    best`` (metric ``ndcg@<eval_at>``).

    Keys are model names or ``(split, model)`` tuples (columns ``split, model``); ``best``
    marks the early-stopping optimum. Rankers trained without validation data are skipped.
    """
    parts = []
    for key, r in rankers.items():
        if not r.curve:
            continue
        split, model = key if isinstance(key, tuple) else ("", key)
        trees = np.arange(1, len(r.curve) + 1)
        metric = f"ndcg@{r.info.get('eval_at', DEFAULT_EVAL_AT)}"
        parts.append(pd.DataFrame({"split": split, "model": model, "tree": trees, "metric": metric,
                                   "value": np.asarray(r.curve, dtype=np.float64),
                                   "best": trees == r.best_iteration}))
    if not parts:
        return pd.DataFrame(columns=["split", "model", "tree", "metric", "value", "best"])
    return pd.concat(parts, ignore_index=True)


def xgboost_propensities(ranker: Ranker) -> tuple[np.ndarray, np.ndarray]:
    """Position biases an unbiased XGBoost ranker estimated: ``(t_plus, t_minus)``, one value
    per position of the top k, position 1 first and equal to 1 (see Hu et al., WWW 2019)."""
    if ranker.backend != "xgboost":
        raise ValueError(f"propensities come from XGBoost's unbiased LambdaMART; this ranker is {ranker.backend}")
    return _xgb.propensities(ranker.model)
