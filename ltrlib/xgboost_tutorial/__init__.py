"""Notebook 08's experiment, on the engine of `ltrlib.train`: LightGBM λMART against
XGBoost's ranking objectives and pair methods on the same splits, and the experiment behind
XGBoost's advice on ``lambdarank_pair_method`` and ``lambdarank_num_pair_per_sample``, and
the notes' other testable statements (`ltrlib.xgboost_tutorial.advice`).

    runs = xgboost_tutorial.compare_backends(splits, xgboost_tutorial.backend_variants(), settings=...)
"""

from ltrlib.xgboost_tutorial.advice import (
    EQUIVALENCE_MARGIN,
    distributed_against_single,
    equal_budget_metric,
    equal_budget_settings,
    graded_objectives,
    pair_method_trend,
    reproducibility,
)
from ltrlib.xgboost_tutorial.comparison import (
    LIGHTGBM,
    BackendRuns,
    backend_variants,
    compare_backends,
    comparison_numeric,
    pair_count_settings,
    pair_method_experiment,
    pair_method_summary,
    parse_train_sizes,
    take_train_queries,
    training_subsets,
    tutorial_metrics,
)

__all__ = [
    "BackendRuns", "LIGHTGBM", "backend_variants", "compare_backends", "comparison_numeric", "tutorial_metrics",
    "pair_count_settings", "pair_method_experiment", "pair_method_summary", "parse_train_sizes",
    "take_train_queries", "training_subsets", "EQUIVALENCE_MARGIN", "distributed_against_single",
    "equal_budget_metric", "equal_budget_settings",
    "graded_objectives", "pair_method_trend", "reproducibility",
]
