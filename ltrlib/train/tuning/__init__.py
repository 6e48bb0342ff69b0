"""Hyper-parameter tuning with Optuna's TPE over the non-IID paper's search space, in four parts:

* `space`: the paper's search space (§5.1), its XGBoost translation, the first point;
* `study`: the study runner behind every search (resumption, replaced failures, pruning);
* `storage`: where studies live (a journal file, or a database that workers share);
* `rankers`: tuning a `Ranker` (`tune`, `tune_cv`, `fit_tuned`, `fit_side_by_side`) and
  the tables of its parameters and trials.

Notebook 03's workers of a shared study are `ltrlib.clients.tune_worker`
(``ltrlib tune-worker``).
"""

from ltrlib.train.tuning.rankers import (
    fit_side_by_side,
    fit_tuned,
    tune,
    tune_cv,
    tuned_parameters,
    tuning_history,
)
from ltrlib.train.tuning.space import (
    LEARNING_RATES,
    PAPER_TABLE6_MEDIAN,
    SEARCH_SPACE,
    SEARCH_SPACES,
    TUNED_PARAMS,
    in_backend,
    paper_start,
    search_space,
    suggest_params,
)
from ltrlib.train.tuning.storage import (
    GRACE_PERIOD,
    HEARTBEAT_INTERVAL,
    JOURNAL_FILE,
    database_url,
    describe_storage,
    fit_checkpoint,
    is_shared,
    stored_study,
    study_database,
    study_storage,
)
from ltrlib.train.tuning.loop import (
    TrialFailed,
    TuningResult,
    prune_every,
    prune_warmup,
    pruner,
    pruning_monitor,
    pruning_setup,
    run_study,
    watch,
)

__all__ = [
    "fit_side_by_side", "fit_tuned", "tune", "tune_cv", "tuned_parameters", "tuning_history",
    "LEARNING_RATES", "PAPER_TABLE6_MEDIAN", "SEARCH_SPACE", "SEARCH_SPACES", "TUNED_PARAMS", "in_backend",
    "paper_start", "search_space", "suggest_params",
    "GRACE_PERIOD", "HEARTBEAT_INTERVAL", "JOURNAL_FILE", "database_url", "describe_storage", "fit_checkpoint",
    "is_shared",
    "stored_study", "study_database", "study_storage",
    "TrialFailed", "TuningResult", "prune_every", "prune_warmup", "pruner", "pruning_monitor", "pruning_setup",
    "run_study", "watch",
]
