"""Training: LambdaMART rankers behind a backend-agnostic `Ranker`, Optuna tuning over the
non-IID paper's search space, and a per-run model store that later notebooks reload.

    from ltrlib.train import TrainSettings, train_ranker, tune, fit_tuned, ModelStore

Every training takes one `TrainSettings` (backend, tree limit, patience, cut-off, seed,
threads); `TrainSettings.for_scale` builds a notebook's from its parameters and the
per-scale budgets of `ltrlib.config.TRAIN_BUDGETS`.

`tune_worker` (``ltrlib tune-worker``) runs trials of a study shared through a database.
"""

from ltrlib.train.ranker import BACKENDS, Ranker, evaluate_rankers, train_ranker, validation_curves
from ltrlib.train.settings import (
    DEFAULT_EARLY_STOPPING,
    DEFAULT_EVAL_AT,
    DEFAULT_MAX_TREES,
    TrainSettings,
    budget_for_scale,
)
from ltrlib.train.client_models import (
    ClientModels,
    client_metrics,
    client_results,
    fit_client_models,
)
from ltrlib.train.client_tables import (
    client_means,
    second_test_set,
    table1_initial,
    table3_alternative,
)
from ltrlib.train.store import ModelStore
from ltrlib.train.xgboost_backend import xgboost_propensities
from ltrlib.train.tuning import (
    LEARNING_RATES,
    PAPER_TABLE6_MEDIAN,
    SEARCH_SPACE,
    SEARCH_SPACES,
    TUNED_PARAMS,
    TuningResult,
    fit_side_by_side,
    fit_tuned,
    in_backend,
    run_study,
    search_space,
    study_storage,
    suggest_params,
    tune,
    tune_cv,
    tuned_parameters,
    tuning_history,
)
from ltrlib.train.workers import tune_worker

__all__ = [
    "BACKENDS", "DEFAULT_EARLY_STOPPING", "DEFAULT_EVAL_AT", "DEFAULT_MAX_TREES",
    "LEARNING_RATES", "PAPER_TABLE6_MEDIAN", "ModelStore", "Ranker", "SEARCH_SPACE", "TUNED_PARAMS", "TuningResult",
    "ClientModels", "client_metrics", "client_results", "fit_client_models",
    "evaluate_rankers", "fit_side_by_side", "fit_tuned", "in_backend", "study_storage", "suggest_params",
    "TrainSettings", "budget_for_scale", "run_study",
    "train_ranker", "tune", "tune_cv", "tune_worker", "tuned_parameters", "tuning_history",
    "validation_curves", "SEARCH_SPACES", "search_space", "xgboost_propensities",
    "client_means", "second_test_set", "table1_initial", "table3_alternative",
]
