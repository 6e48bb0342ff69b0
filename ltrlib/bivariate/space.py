"""The search space of the Bi-LambdaMART paper's §5.4, shared by stage 1 and stage 2.

Every LightGBM model of notebook 06, stage 1's λMART and each stage-2 model, is tuned by
Optuna over the same four parameters (§5.4: learning rate, minimum data in leaf, number of
leaves and minimum hessian), on grids wide enough to hold every optimum of the paper's
Table 8: a comparison is only fair when every model had the same search.
"""

from __future__ import annotations

from typing import Any

__all__ = ["LEARNING_RATES", "MIN_DATA_IN_LEAF", "MIN_HESSIANS", "NUM_LEAVES", "TUNED", "suggest"]

LEARNING_RATES = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.2)
# Pair hessians are (h_i + h_j)/(n-1)^2, hundreds of times smaller than document ones,
# so the grid reaches 0 (the paper's Bi-λMART value) and spans six decades, up to past
# the largest value of the paper's Table 8 (λMART, 240).
MIN_HESSIANS = (0.0, 0.001, 0.01, 0.1, 1.0, 10.0, 100.0, 500.0)
# Wide enough to hold every optimum of Table 8: Bi-λMART used 300-1530 leaves and a
# minimum of 1790-7150 pairs per leaf.
NUM_LEAVES = (7, 2048)
MIN_DATA_IN_LEAF = (5, 10_000)
TUNED = ("learning_rate", "num_leaves", "min_data_in_leaf", "min_sum_hessian_in_leaf")


def suggest(trial) -> dict[str, Any]:
    """One point of the search space (the four parameters of §5.4), the same for every
    model, drawn through ``trial`` (an ``optuna.Trial``)."""
    return {
        "learning_rate": trial.suggest_categorical("learning_rate", LEARNING_RATES),
        "num_leaves": trial.suggest_int("num_leaves", *NUM_LEAVES, log=True),
        "min_data_in_leaf": trial.suggest_int("min_data_in_leaf", *MIN_DATA_IN_LEAF, log=True),
        "min_sum_hessian_in_leaf": trial.suggest_categorical("min_sum_hessian_in_leaf", MIN_HESSIANS),
    }
