"""Training: LambdaMART rankers behind a backend-agnostic `Ranker`, Optuna tuning over the
non-IID paper's search space, and a per-run model store that later notebooks reload.

    from ltrlib.train import TrainSettings, train_ranker, tune, fit_tuned, ModelStore

Every training takes one `TrainSettings` (backend, tree limit, patience, cut-off, seed,
threads); `TrainSettings.for_scale` builds a notebook's from its parameters and the
per-scale budgets of `ltrlib.config.TRAIN_BUDGETS`.

`backends` holds the libraries behind one interface (LightGBM, XGBoost, a Dask cluster). The experiments built on this engine live beside
their analyses: notebook 03's client models in `ltrlib.clients`, notebook 08's backend and
pair-method comparisons in `ltrlib.xgboost_tutorial`.
"""

from ltrlib.train.backends import (
    MIN_HESSIAN_FLOOR,
    DataCache,
    cluster_client,
    fit_on_cluster,
    lightgbm_params,
    monitor_callback,
    query_partitions,
    quiet_lightgbm,
    stop_early,
)
from ltrlib.train.ranker import (
    BACKENDS,
    Ranker,
    evaluate_rankers,
    train_ranker,
    validation_curves,
    xgboost_propensities,
)
from ltrlib.train.settings import (
    DEFAULT_EARLY_STOPPING,
    DEFAULT_EVAL_AT,
    DEFAULT_MAX_TREES,
    DEFAULT_NUM_THREADS,
    TrainSettings,
    budget_for_scale,
)
from ltrlib.train.store import ModelStore
from ltrlib.train.tuning import (
    GRACE_PERIOD,
    HEARTBEAT_INTERVAL,
    JOURNAL_FILE,
    LEARNING_RATES,
    PAPER_TABLE6_MEDIAN,
    SEARCH_SPACE,
    SEARCH_SPACES,
    TUNED_PARAMS,
    TrialFailed,
    TuningResult,
    database_url,
    describe_storage,
    fit_side_by_side,
    fit_tuned,
    in_backend,
    is_shared,
    prune_every,
    prune_warmup,
    pruner,
    pruning_monitor,
    pruning_setup,
    run_study,
    search_space,
    stored_study,
    study_database,
    study_storage,
    suggest_params,
    tune,
    tune_cv,
    tuned_parameters,
    tuning_history,
)

__all__ = [
    "BACKENDS", "DEFAULT_EARLY_STOPPING", "DEFAULT_EVAL_AT", "DEFAULT_MAX_TREES", "MIN_HESSIAN_FLOOR",
    "lightgbm_params", "quiet_lightgbm",
    "LEARNING_RATES", "PAPER_TABLE6_MEDIAN", "ModelStore", "Ranker", "SEARCH_SPACE", "TUNED_PARAMS", "TrialFailed",
    "TuningResult",
    "evaluate_rankers", "fit_side_by_side", "fit_tuned", "in_backend", "study_storage", "suggest_params",
    "TrainSettings", "budget_for_scale", "run_study",
    "train_ranker", "tune", "tune_cv", "tuned_parameters", "tuning_history",
    "validation_curves", "SEARCH_SPACES", "search_space", "xgboost_propensities",
    "DataCache", "DEFAULT_NUM_THREADS", "monitor_callback",
    # shared studies (tuning)
    "GRACE_PERIOD", "HEARTBEAT_INTERVAL", "JOURNAL_FILE", "database_url", "describe_storage", "is_shared",
    "prune_every", "prune_warmup", "pruner", "pruning_monitor", "pruning_setup", "stored_study",
    "study_database",
    # distributed: training on a Dask cluster
    "cluster_client", "fit_on_cluster", "query_partitions", "stop_early",
]
