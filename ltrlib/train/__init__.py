"""Training: LambdaMART rankers behind a backend-agnostic `Ranker`, Optuna tuning over the
non-IID paper's search space, and a per-run model store that later notebooks reload.

    from ltrlib.train import TrainSettings, train_ranker, tune, fit_tuned, ModelStore

Every training takes one `TrainSettings` (backend, tree limit, patience, cut-off, seed,
threads); `TrainSettings.for_scale` builds a notebook's from its parameters and the
per-scale budgets of `ltrlib.config.TRAIN_BUDGETS`.

`tune_worker` (``ltrlib tune-worker``) runs trials of a study shared through a database.
`comparison` holds notebook 08's backend and pair-method comparisons, `distributed` training
on a Dask cluster; their public names are re-exported here like the rest.
"""

from ltrlib.train.comparison import (
    COMPARISON_SETTINGS,
    LIGHTGBM,
    PAIRWISE,
    BackendRuns,
    backend_variants,
    compare_backends,
    comparison_numeric,
    effective_pairs,
    headline_metrics,
    pair_count_settings,
    pair_method_experiment,
    pair_method_summary,
    parse_train_sizes,
    take_train_queries,
)
from ltrlib.train.distributed import cluster_client, fit_on_cluster, query_partitions, stop_early
from ltrlib.train.ranker import (
    BACKENDS,
    MIN_HESSIAN_FLOOR,
    DataCache,
    Ranker,
    evaluate_rankers,
    lightgbm_params,
    monitor_callback,
    quiet_lightgbm,
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
from ltrlib.train.client_models import (
    MODEL_NAMES,
    TEST_SETS,
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
from ltrlib.train.workers import client_data, tune_worker

__all__ = [
    "BACKENDS", "DEFAULT_EARLY_STOPPING", "DEFAULT_EVAL_AT", "DEFAULT_MAX_TREES", "MIN_HESSIAN_FLOOR",
    "lightgbm_params", "quiet_lightgbm",
    "LEARNING_RATES", "PAPER_TABLE6_MEDIAN", "ModelStore", "Ranker", "SEARCH_SPACE", "TUNED_PARAMS", "TrialFailed",
    "TuningResult",
    "ClientModels", "client_metrics", "client_results", "fit_client_models",
    "evaluate_rankers", "fit_side_by_side", "fit_tuned", "in_backend", "study_storage", "suggest_params",
    "TrainSettings", "budget_for_scale", "run_study",
    "train_ranker", "tune", "tune_cv", "tune_worker", "tuned_parameters", "tuning_history",
    "validation_curves", "SEARCH_SPACES", "search_space", "xgboost_propensities",
    "client_means", "second_test_set", "table1_initial", "table3_alternative",
    "MODEL_NAMES", "TEST_SETS", "DataCache", "DEFAULT_NUM_THREADS", "client_data", "monitor_callback",
    # shared studies (tuning)
    "GRACE_PERIOD", "HEARTBEAT_INTERVAL", "JOURNAL_FILE", "database_url", "describe_storage", "is_shared",
    "prune_every", "prune_warmup", "pruner", "pruning_monitor", "pruning_setup", "stored_study",
    "study_database",
    # comparison: backends and pair methods (notebook 08)
    "BackendRuns", "COMPARISON_SETTINGS", "LIGHTGBM", "PAIRWISE", "backend_variants", "compare_backends",
    "comparison_numeric", "effective_pairs", "headline_metrics", "pair_count_settings", "pair_method_experiment",
    "pair_method_summary", "parse_train_sizes", "take_train_queries",
    # distributed: training on a Dask cluster
    "cluster_client", "fit_on_cluster", "query_partitions", "stop_early",
]
