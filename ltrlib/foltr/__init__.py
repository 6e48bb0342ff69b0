"""Federated online learning to rank (FPDGD) under non-IID data.

- ``clicks``: click models (SDBN presets of Table 4, PBM) and the compiled click kernel;
- ``rankers``: linear and one-hidden-layer neural rankers on flat parameter vectors, and
  ``FoltrRanker``, a trained one scoring a ``Dataset``;
- ``pdgd``: Plackett-Luce sampling, preference inference, rho weights and the update, compiled;
- ``views`` / ``partition``: client views and the non-IID Types 1-4 with IID baselines, data sharing;
- ``intents``: the intent-change collection (judged intents for Type 1);
- ``rounds``: Algorithm 1's rounds between two evaluations in one compiled call;
- ``federated``: Algorithm 1 (FedAvg by interactions), FedProx, FedPer, offline/online metrics;
- ``simulate``: settings x seeds grids in parallel (joblib, or Dask given a scheduler) as frames,
  on one split or on each fold of a collection in folds (averaged over runs x folds, as the
  paper averages over dataset splits), and the final rankers of some runs as TREC run files
  (``final_run_files``);
- ``store``: finished runs kept on disk (``RUNS_FOLDER`` of a run folder), so that a grid resumes.
"""

from ltrlib.foltr.clicks import PBM, SDBN, click_model, simulate_clicks
from ltrlib.foltr.federated import Federation, run_federated
from ltrlib.foltr.intents import read_intent_collection
from ltrlib.foltr.partition import N_INTENTS, online_training_queries, prepare_data
from ltrlib.foltr.rankers import RankerSpec, make_ranker
from ltrlib.foltr.store import RUNS_FOLDER
from ltrlib.foltr.simulate import (
    Job,
    experiment_grid,
    folds_of,
    load_online_data,
    settings_the_data_supports,
    final_run_files,
    gap_metrics,
    grid,
    noniid_gaps,
    online_data_sizes,
    online_table,
    online_table_caption,
    protocol_caption,
    remedy_click_models,
    remedy_table,
    remedies_table,
    rounds_and_seeds,
    run_seeds,
    run_jobs,
    runs_by_fold,
    shared_query_count,
    summarise_offline,
    table2_jobs,
    table2_layout,
    table3_layout,
)

__all__ = [
    "SDBN", "PBM", "click_model", "simulate_clicks", "Federation", "run_federated", "N_INTENTS",
    "online_training_queries", "prepare_data", "load_online_data", "settings_the_data_supports",
    "read_intent_collection", "RankerSpec", "make_ranker", "Job", "grid", "experiment_grid", "run_jobs",
    "online_table", "summarise_offline", "gap_metrics", "noniid_gaps", "online_table_caption", "protocol_caption", "remedy_click_models", "remedy_table", "remedies_table",
    "rounds_and_seeds", "run_seeds", "runs_by_fold", "folds_of", "shared_query_count", "online_data_sizes",
    "table2_layout", "table3_layout", "table2_jobs", "final_run_files", "RUNS_FOLDER",
]
