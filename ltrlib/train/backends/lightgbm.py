"""LightGBM as a ranking backend of `ltrlib.train.Ranker` (``backend="lightgbm"``, the
default): LambdaMART (``objective="lambdarank"``), deterministic (``deterministic=True``
with ``force_row_wise=True``), early stopping on validation NDCG@eval_at alone.

`LIGHTGBM` is its `Backend` entry. Public: the parameter and logging helpers that the
bivariate code's own LightGBM fits share (`lightgbm_params`, `quiet_lightgbm`,
`monitor_callback`, `MIN_HESSIAN_FLOOR`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Callable

import numpy as np

from ltrlib.data.dataset import Dataset
from ltrlib.train.backends.base import Backend, DataCache

__all__ = ["LIGHTGBM", "MIN_HESSIAN_FLOOR", "lightgbm_params", "monitor_callback", "quiet_lightgbm"]


def _lgb_defaults(seed: int, eval_at: int, num_threads: int) -> dict:
    return {
        "objective": "lambdarank",
        "metric": "ndcg",
        "eval_at": [eval_at],
        "seed": seed,
        "deterministic": True,
        "force_row_wise": True,
        "num_threads": num_threads,
        "verbosity": -1,
        # Tuning varies min_data_in_leaf; with pre-filtering on, LightGBM would drop features
        # at Dataset construction according to the first value it saw.
        "feature_pre_filter": False,
    }


def _lgb_complete(params: dict) -> dict:
    # Asking for column-wise histograms replaces the row-wise default (LightGBM refuses
    # both); either keeps deterministic=True deterministic.
    if params.get("force_col_wise"):
        params["force_row_wise"] = False
    return params


def _lgb_datasets(train: Dataset, vali: Dataset | None):
    dtrain = train.to_lightgbm(feature_pre_filter=False)
    return dtrain, (None if vali is None else vali.to_lightgbm(reference=dtrain))


def monitor_callback(monitor: Callable[[int, float], None], metric: str, data_name: str = "vali"):
    """A LightGBM callback calling ``monitor(trees, value)`` with ``metric`` on
    ``data_name`` after every tree: how `train_ranker` and `ltrlib.bilambdamart.fit_lb` hand
    the validation curve to a pruner (`ltrlib.train.tuning.pruning_monitor`)."""
    def report(env):
        for name, m, value, _ in env.evaluation_result_list:
            if name == data_name and m == metric:
                monitor(env.iteration + 1, float(value))

    return report


# What a minimum leaf hessian of 0 (the Bi-LambdaMART paper's Bi-λMART value) is passed to
# LightGBM as, by every LightGBM fit (`_lgb_fit`, `ltrlib.bilambdamart.fit_lb`).
# With exactly 0, LightGBM accepts a split whose child is empty and then stops on its own
# check ("Check failed: (best_split_info.left_count) > (0)", its open issue #4739): on the
# tiny twin Bi-λMART at learning rate 0.005, 31 leaves, min data 5 failed by tree 4 with 0
# and trained to the end with 1e-12 or 1e-7 (a hessian floor of 1e-9 on every pair did
# not help). 1e-12 lies far below any leaf worth a split: a pair's hessian is (h_i +
# h_j)/(n-1)^2, 1e-6 to 1e-3 on the twin, and only pairs of queries without a relevant
# document have exactly 0 (and a zero gradient with it).
MIN_HESSIAN_FLOOR = 1e-12


def lightgbm_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` as LightGBM gets them: a minimum leaf hessian of 0 becomes
    `MIN_HESSIAN_FLOOR` (see there); the rest as given."""
    out = dict(params)
    if "min_sum_hessian_in_leaf" in out and float(out["min_sum_hessian_in_leaf"]) < MIN_HESSIAN_FLOOR:
        out["min_sum_hessian_in_leaf"] = MIN_HESSIAN_FLOOR
    return out


def quiet_lightgbm() -> None:
    """Send LightGBM's native log lines (its ``[Warning]`` and ``[Fatal]`` lines) to the
    Python logger ``lightgbm`` at INFO, which prints nothing unless a user configures
    logging, instead of printing them. Why: in a batch run they reach the console, where a
    ``[Fatal]`` line of a trial that was handled reads as a crash; a real failure still
    raises ``LightGBMError`` with the same message. To see them again:
    ``logging.basicConfig(level=logging.INFO)``. Idempotent; every fit calls it, so worker
    processes are quiet too."""
    import logging

    import lightgbm as lgb

    lgb.register_logger(logging.getLogger("lightgbm"))


def _lgb_fit(params: dict, train: Dataset, vali: Dataset | None, max_trees: int,
             early_stopping: int, position: np.ndarray | None = None, cache: DataCache | None = None,
             monitor: Callable[[int, float], None] | None = None) -> tuple[Any, int, list[float]]:
    import lightgbm as lgb

    quiet_lightgbm()
    params = lightgbm_params(params)
    if cache is None:
        dtrain, dvali = _lgb_datasets(train, vali)
    else:
        # No key: a reused Dataset whose binning parameters differ is rebuilt by lgb.train.
        dtrain, dvali = cache.get("lightgbm", (), lambda: _lgb_datasets(train, vali))
    if position is not None:
        dtrain.set_position(position)
    callbacks = []
    valid_sets, curve = [], {}
    key = f"ndcg@{params['eval_at'][0]}"
    if vali is not None:
        valid_sets = [dvali]
        callbacks = [
            # first_metric_only: stop on NDCG@eval_at alone even if a user adds metrics.
            lgb.early_stopping(early_stopping, first_metric_only=True, verbose=False),
            lgb.record_evaluation(curve),
        ]
        if monitor is not None:
            callbacks.append(monitor_callback(monitor, key))
    booster = lgb.train(params, dtrain, num_boost_round=max_trees, valid_sets=valid_sets,
                        valid_names=["vali"] if valid_sets else None, callbacks=callbacks)
    if vali is None:
        return booster, booster.current_iteration(), []
    return booster, int(booster.best_iteration), [float(v) for v in curve["vali"][key]]


def _lgb_loads(text: str):
    import lightgbm as lgb

    return lgb.Booster(model_str=text)


LIGHTGBM = Backend(
    defaults=_lgb_defaults,
    complete=_lgb_complete,
    fit=_lgb_fit,
    predict=lambda m, X, it: m.predict(X, num_iteration=it),
    importance=lambda m, kind, it: m.feature_importance(importance_type=kind, iteration=it),
    n_trees=lambda m: m.current_iteration(),
    # Only the trees up to the best iteration: the saved model predicts what the
    # early-stopped model predicted, and is smaller.
    dumps=lambda m, it: m.model_to_string(num_iteration=it),
    loads=_lgb_loads,
    model_suffix=".txt",
)
