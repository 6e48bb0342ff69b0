"""The search space of the non-IID paper (§5.1), and its translation to each backend.

The paper: "Hyper-parameter tuning is performed using the Optuna library, which uses the
Tree-structured Parzen Estimator (TPE) algorithm. We optimized four learning parameters:
learning_rate in [0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.2, 0.3], num_leaves in
15,255, min_data_in_leaf in 10,500, with a step size of 5, and min_sum_hessian_in_leaf in
1,100. The hyper-parameters of the models are tuned on the validation set based on the
NDCG@10 metric." Our reading, in `SEARCH_SPACE`:

* ``learning_rate``: categorical over the nine listed values (a list, not a range).
* ``num_leaves``: integer, 15..255 inclusive.
* ``min_data_in_leaf``: integer, 10..500 inclusive, step 5.
* ``min_sum_hessian_in_leaf``: integer, 1..100 inclusive. The paper gives no type, but every
  value it reports (Table 6: 1, 1, 1, 1, 1, 5; §5.2 stacking: 21, 3, 66, 90, 26) is an
  integer, so the study was almost certainly an integer search (``suggest_int``).

Every trial trains with the paper's limits (at most 3000 trees, early stopping after 100
trees without improvement of validation NDCG@10) and scores the early-stopped model's
NDCG@10 on the validation set, computed with `ltrlib.metrics` (equal to LightGBM's own).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "LEARNING_RATES", "PAPER_TABLE6_MEDIAN", "SEARCH_SPACE", "SEARCH_SPACES", "TUNED_PARAMS", "in_backend",
    "paper_start", "search_space", "suggest_params",
]


LEARNING_RATES = (0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.2, 0.3)


def _search_space() -> dict:
    from optuna.distributions import CategoricalDistribution, IntDistribution

    return {
        "learning_rate": CategoricalDistribution(LEARNING_RATES),
        "num_leaves": IntDistribution(15, 255),
        "min_data_in_leaf": IntDistribution(10, 500, step=5),
        "min_sum_hessian_in_leaf": IntDistribution(1, 100),
    }


SEARCH_SPACE: dict = _search_space()


def _xgboost_search_space() -> dict:
    from optuna.distributions import CategoricalDistribution, IntDistribution

    # The paper's space in XGBoost's words. num_leaves is max_leaves (our XGBoost defaults
    # grow leaf-wise like LightGBM) and min_sum_hessian_in_leaf is min_child_weight, the
    # same quantity. XGBoost has no minimum document count per leaf (min_data_in_leaf), so
    # its space has three dimensions.
    return {
        "learning_rate": CategoricalDistribution(LEARNING_RATES),
        "max_leaves": IntDistribution(15, 255),
        "min_child_weight": IntDistribution(1, 100),
    }


SEARCH_SPACES: dict[str, dict] = {"lightgbm": SEARCH_SPACE, "xgboost": _xgboost_search_space()}


def search_space(backend: str = "lightgbm") -> dict:
    """The tuned parameters and their distributions for ``backend``."""
    try:
        return SEARCH_SPACES[backend]
    except KeyError:
        raise ValueError(f"unknown backend {backend!r}; supported backends: "
                         f"{', '.join(sorted(SEARCH_SPACES))}") from None
# The per-parameter medians of the six local models of the paper's Table 6 (learning rate
# 0.05 everywhere; leaves 77..237; min data 20..375; min hessian 1..5), on the search grid.
# `tune(tuning=TuningSettings(first_params=PAPER_TABLE6_MEDIAN))` evaluates it as trial 0:
# with the few trials a quick run can afford, the study then starts from a known good region instead of
# depending on TPE's random start-up draws alone, and its best can only improve on it.
# Not in the paper; notebook 03 enqueues it by default (`start_from_paper`).
PAPER_TABLE6_MEDIAN = {"learning_rate": 0.05, "num_leaves": 180, "min_data_in_leaf": 60,
                       "min_sum_hessian_in_leaf": 1}
TUNED_PARAMS = tuple(SEARCH_SPACE)


def in_backend(params: Mapping[str, Any], backend: str = "lightgbm") -> dict[str, Any]:
    """A point given in the paper's LightGBM names (`PAPER_TABLE6_MEDIAN`, a stacking
    setting) in ``backend``'s names, so one switch changes the backend of a whole notebook:
    ``tune(..., settings=TrainSettings(backend="xgboost"),
    tuning=TuningSettings(first_params=in_backend(PAPER_TABLE6_MEDIAN, "xgboost")))``."""
    search_space(backend)  # names the supported backends if ``backend`` is unknown
    if backend == "xgboost":
        from ltrlib.train.backends.xgboost import from_lightgbm_names

        return from_lightgbm_names(dict(params))
    return dict(params)


def paper_start(backend: str = "lightgbm", wanted: bool = True) -> dict[str, Any] | None:
    """The paper's Table 6 median point (`PAPER_TABLE6_MEDIAN`) in ``backend``'s names, the
    first trial of a study that starts from the paper; None unless ``wanted``."""
    return in_backend(PAPER_TABLE6_MEDIAN, backend) if wanted else None


def suggest_params(trial, backend: str = "lightgbm") -> dict[str, Any]:
    """One point of the backend's search space (`SEARCH_SPACE` for LightGBM), drawn
    through ``trial`` (an ``optuna.Trial``)."""
    from optuna.distributions import CategoricalDistribution

    point = {}
    for name, dist in search_space(backend).items():
        if isinstance(dist, CategoricalDistribution):
            point[name] = trial.suggest_categorical(name, dist.choices)
        else:
            point[name] = trial.suggest_int(name, dist.low, dist.high, step=dist.step)
    return point
