"""Training: LambdaMART rankers behind a backend-agnostic `Ranker`, Optuna tuning over the
non-IID paper's search space, and a per-run model store that later notebooks reload.

    from ltrlib.train import TrainSettings, train_ranker, tune, fit_tuned, ModelStore

Every training takes one `TrainSettings` (backend, tree limit, patience, cut-off, seed,
threads), and every search one `TuningSettings` (trials, pruning, storage, progress, first
point); their ``for_scale`` builds a notebook's from its parameters and the per-scale
budgets of `ltrlib.config.TRAIN_BUDGETS`.

The parts behind these names: `ltrlib.train.backends` (LightGBM, XGBoost and a Dask
cluster behind one interface) and `ltrlib.train.tuning` (search space, studies and
pruning, storage and shared studies). The experiments built on this engine live beside
their analyses: notebook 03's client models in `ltrlib.clients`, notebook 08's backend and
pair-method comparisons in `ltrlib.xgboost_tutorial`.
"""

from ltrlib.train.ranker import (
    BACKENDS,
    Ranker,
    evaluate_rankers,
    evaluate_scores,
    train_ranker,
    validation_curves,
    xgboost_propensities,
)
from ltrlib.train.settings import TrainSettings, TuningSettings, budget_for_scale
from ltrlib.train.store import ModelStore
from ltrlib.train.tuning import (
    JOURNAL_FILE,
    PAPER_TABLE6_MEDIAN,
    fit_tuned,
    in_backend,
    paper_start,
    run_study,
    search_space,
    study_storage,
    tune,
    tune_cv,
    tuned_parameters,
    tuning_history,
)

__all__ = [
    "BACKENDS", "PAPER_TABLE6_MEDIAN", "ModelStore", "Ranker", "evaluate_rankers", "evaluate_scores", "fit_tuned",
    "in_backend", "paper_start", "study_storage", "TrainSettings", "TuningSettings", "budget_for_scale", "run_study", "train_ranker", "tune", "tune_cv",
    "tuned_parameters", "tuning_history", "validation_curves", "search_space", "xgboost_propensities",
    "JOURNAL_FILE",
]
