"""XGBoost as a ranking backend of `ltrlib.train.Ranker` (``backend="xgboost"``).

The functions here fill one `ltrlib.train.backends.base.Backend` entry; notebooks never call them
directly (`ltrlib.train.xgboost_propensities` reads, through `propensities` here, the
position biases an unbiased ranker learnt). What they add to plain ``xgboost.train``:

* Query groups go in as ``qid`` (each document's query *index*, non-decreasing, as XGBoost
  requires), taken from the Dataset's offsets; the Dataset's own query ids need not be
  sorted.
* Defaults that mirror the LightGBM λMART the project trains (see `defaults`): leaf-wise
  trees with 31 leaves (``grow_policy="lossguide"``), learning rate 0.1, and ``topk`` pairs
  with ``k = 30``, which is LightGBM's ``lambdarank_truncation_level``: the pairs with at
  least one document in the current top 30. With ``lambdarank_pair_method="mean"`` the
  default number of sampled pairs per document is XGBoost's own, 1.
* ``rank:map`` needs binary labels; graded labels are binarised at ``label >= 1``, the
  relevance threshold of `ltrlib.metrics` (XGBoost itself refuses graded labels).
* Positions for unbiased LambdaMART: XGBoost reads a click's displayed position from the
  row order inside its query, so rows are put in position order before training.
* LightGBM parameter names are refused with the XGBoost name to use, instead of XGBoost's
  warning that they are "not used".

Early stopping watches validation NDCG@eval_at only (an explicit callback; XGBoost's
default would watch the *last* metric listed). XGBoost's ``ndcg@k`` uses the same gain
(``2**label - 1``) and convention for queries without relevant documents (1.0) as
`ltrlib.metrics`, so the curve equals our NDCG@k.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ltrlib.data.dataset import Dataset
from ltrlib.train.backends.base import Backend

# Only what users call is public API (re-exported by `ltrlib.train`); the backend entry points
# (`defaults`, `fit`, `predict`, ...) are reached through `ltrlib.train.ranker.BACKENDS`.
__all__ = ["XGBOOST"]

OBJECTIVES = ("rank:ndcg", "rank:pairwise", "rank:map")
PAIR_METHODS = ("mean", "topk")
# LightGBM's lambdarank_truncation_level: the topk default mirrors LightGBM's lambdarank.
TOPK_DEFAULT_PAIRS = 30
MEAN_DEFAULT_PAIRS = 1
# LightGBM names someone switching backends is likely to pass, with XGBoost's equivalent.
_LIGHTGBM_NAMES = {
    "num_leaves": "max_leaves", "min_sum_hessian_in_leaf": "min_child_weight",
    "min_data_in_leaf": None, "num_threads": "nthread", "bagging_fraction": "subsample",
    "feature_fraction": "colsample_bytree", "lambdarank_truncation_level":
    "lambdarank_num_pair_per_sample", "metric": "eval_metric", "deterministic": None,
    "force_row_wise": None, "label_gain": "ndcg_exp_gain",
}


def defaults(seed: int, eval_at: int, num_threads: int) -> dict:
    return {
        "objective": "rank:ndcg",
        "eval_metric": f"ndcg@{eval_at}",
        "tree_method": "hist",
        # Leaf-wise growth bounded by a leaf count, like LightGBM (XGBoost's own default
        # is depth-wise with depth 6), so tuned num_leaves-like values mean the same.
        "grow_policy": "lossguide",
        "max_depth": 0,
        "max_leaves": 31,
        "learning_rate": 0.1,
        "lambdarank_pair_method": "topk",
        "seed": seed,
        "nthread": num_threads,
        "verbosity": 0,
    }


def from_lightgbm_names(params: dict) -> dict:
    """``params`` in XGBoost's names (`_LIGHTGBM_NAMES`): ``num_leaves`` becomes
    ``max_leaves`` and so on; a name XGBoost has no equivalent for (``min_data_in_leaf``)
    is dropped. Carries a point of the paper's LightGBM search space (a study's first
    trial, a fixed meta-model setting) over to ``backend="xgboost"``."""
    out = {}
    for name, value in params.items():
        if name not in _LIGHTGBM_NAMES:
            out[name] = value
        elif _LIGHTGBM_NAMES[name] is not None:
            out[_LIGHTGBM_NAMES[name]] = value
    return out


def complete(params: dict) -> dict:
    """Check the XGBoost ranking options and fill the pair-count default of the method."""
    p = dict(params)
    for name, instead in _LIGHTGBM_NAMES.items():
        if name in p:
            hint = f"use {instead!r}" if instead else "XGBoost has no equivalent"
            raise ValueError(f"params[{name!r}] is a LightGBM parameter; for backend='xgboost' {hint}")
    if p.get("objective") not in OBJECTIVES:
        raise ValueError(f"params['objective'] must be one of {list(OBJECTIVES)} for backend='xgboost', "
                         f"got {p.get('objective')!r}")
    method = p.get("lambdarank_pair_method")
    if method not in PAIR_METHODS:
        raise ValueError(f"params['lambdarank_pair_method'] must be one of {list(PAIR_METHODS)}, got {method!r}")
    n_pairs = p.setdefault("lambdarank_num_pair_per_sample",
                           TOPK_DEFAULT_PAIRS if method == "topk" else MEAN_DEFAULT_PAIRS)
    if isinstance(n_pairs, bool) or not isinstance(n_pairs, (int, np.integer)) or n_pairs < 1:
        raise ValueError(f"params['lambdarank_num_pair_per_sample'] must be a positive integer, got {n_pairs!r}")
    if p.get("lambdarank_unbiased") and method != "topk":
        # XGBoost estimates one propensity per position of the top k: it needs topk pairs.
        raise ValueError("lambdarank_unbiased=True needs lambdarank_pair_method='topk', got 'mean'")
    return p


def _labels(params: dict, y: np.ndarray) -> np.ndarray:
    if params["objective"] == "rank:map":
        return (y >= 1).astype(np.float32)
    return y.astype(np.float32)


def _position_order(data: Dataset, position: np.ndarray) -> np.ndarray:
    # Rows sorted by (query, displayed position); a stable sort keeps ties in input order.
    return np.lexsort((position, data.doc_query_index))


def dmatrix(data: Dataset, params: dict, rows: np.ndarray | None = None, *, training: bool = True):
    import xgboost as xgb

    X, y, q = data.X, data.y, data.doc_query_index
    if rows is not None:
        X, y, q = X[rows], y[rows], q[rows]
    # Validation keeps the graded labels: early stopping watches graded NDCG@k for every objective.
    label = _labels(params, y) if training else y.astype(np.float32)
    return xgb.DMatrix(X, label=label, qid=q, nthread=int(params.get("nthread", 1)))


def fit(params: dict, train: Dataset, vali: Dataset | None, max_trees: int, early_stopping: int,
        position: np.ndarray | None = None, cache=None, monitor=None) -> tuple[Any, int, list[float]]:
    """``cache``: a `ltrlib.train.backends.base.DataCache`, keyed by what the DMatrix depends on
    (labels binarised for ``rank:map``, thread count); ``monitor(trees, value)``: called with
    validation NDCG@k after every tree."""
    import xgboost as xgb

    rows = None if position is None else _position_order(train, position)

    def build():
        return (dmatrix(train, params, rows),
                None if vali is None else dmatrix(vali, params, training=False))

    if cache is None:
        dtrain, dvali = build()
    else:
        key = (params["objective"] == "rank:map", int(params.get("nthread", 1)))
        dtrain, dvali = cache.get("xgboost", key, build)
    metric = f"ndcg@{params['eval_metric'].split('@')[1]}" if isinstance(params.get("eval_metric"), str) \
        and params["eval_metric"].startswith("ndcg@") else None
    if vali is None:
        booster = xgb.train(params, dtrain, num_boost_round=max_trees, verbose_eval=False)
        return booster, booster.num_boosted_rounds(), []
    if metric is None:
        raise ValueError(f"params['eval_metric'] must be 'ndcg@k' (early stopping watches it), "
                         f"got {params.get('eval_metric')!r}")
    curve: dict = {}
    callbacks = [xgb.callback.EarlyStopping(rounds=early_stopping, metric_name=metric, data_name="vali",
                                            maximize=True, save_best=False)]
    if monitor is not None:
        class _Monitor(xgb.callback.TrainingCallback):
            def after_iteration(self, model, epoch, evals_log):
                monitor(epoch + 1, float(evals_log["vali"][metric][-1]))
                return False

        callbacks.append(_Monitor())
    booster = xgb.train(params, dtrain, num_boost_round=max_trees, evals=[(dvali, "vali")],
                        evals_result=curve, callbacks=callbacks, verbose_eval=False)
    values = [float(v) for v in curve["vali"][metric]]
    # best_iteration is 0-based and is the first maximum (XGBoost needs a strict improvement).
    return booster, int(booster.best_iteration) + 1, values


def predict(model, X: np.ndarray, iteration: int) -> np.ndarray:
    return model.inplace_predict(np.ascontiguousarray(X, dtype=np.float32), iteration_range=(0, iteration))


def _first_trees(model, iteration: int):
    return model if iteration >= model.num_boosted_rounds() else model[:iteration]


def importance(model, kind: str, iteration: int) -> np.ndarray:
    scores = _first_trees(model, iteration).get_score(
        importance_type="total_gain" if kind == "gain" else "weight")
    out = np.zeros(model.num_features(), dtype=np.float64)
    for name, value in scores.items():  # unnamed features: "f0", "f1", ... by column
        out[int(name[1:])] = value
    return out


def n_trees(model) -> int:
    return model.num_boosted_rounds()


def dumps(model, iteration: int) -> str:
    # XGBoost's JSON model (the complete format), trees up to the best iteration only.
    return bytes(_first_trees(model, iteration).save_raw(raw_format="json")).decode("utf-8")


def loads(text: str):
    import xgboost as xgb

    from ltrlib.train.settings import DEFAULT_NUM_THREADS

    booster = xgb.Booster()
    booster.load_model(bytearray(text, "utf-8"))
    # The thread count is not part of a saved model; without it XGBoost takes every core.
    booster.set_param({"nthread": DEFAULT_NUM_THREADS})
    return booster


def propensities(model) -> tuple[np.ndarray, np.ndarray]:
    """The position biases unbiased LambdaMART estimated: ``(t_plus, t_minus)``, one value
    per position of the top k (``t_plus[0] = t_minus[0] = 1``). ``t_plus`` is the ratio of
    click propensities P(examined | position r) / P(examined | position 1)."""
    import json

    obj = json.loads(model.save_config())["learner"]["objective"]
    if "ti+" not in obj:
        raise ValueError("this model was not trained with lambdarank_unbiased=True: no propensities")
    return np.asarray(obj["ti+"], dtype=np.float64), np.asarray(obj["tj-"], dtype=np.float64)


XGBOOST = Backend(
    defaults=defaults,
    fit=fit,
    predict=predict,
    importance=importance,
    n_trees=n_trees,
    dumps=dumps,
    loads=loads,
    # XGBoost's JSON model format, kept under the store's one model suffix.
    model_suffix=".txt",
    complete=complete,
)
