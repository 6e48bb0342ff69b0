"""Federated online learning to rank (FPDGD) under non-IID data.

- ``clicks``: click models (SDBN presets of Table 4, PBM) and the compiled click kernel;
- ``rankers``: linear and one-hidden-layer neural rankers on flat parameter vectors, and
  ``FoltrRanker``, a trained one scoring a ``Dataset``;
- ``pdgd``: Plackett-Luce sampling, preference inference, rho weights and the update, compiled;
- ``views`` / ``partition``: client views and the non-IID Types 1-4 with IID baselines, data sharing;
- ``intents``: the intent-change collection (judged intents for Type 1);
- ``federated``: Algorithm 1 (FedAvg by interactions), FedProx, FedPer, offline/online metrics;
- ``simulate``: settings x seeds grids in parallel (joblib, or Dask given a scheduler) as frames.
"""

from ltrlib.foltr.clicks import (
    PBM, PBM_ETAS, SDBN, SDBN_PRESET_NAMES, ClickModel, LabelError, check_labels, click_model, pbm,
    sdbn, simulate_clicks, stack_click_models,
)
from ltrlib.foltr.federated import Federation, RunResult, cumulative_online, discount_sum, fedavg, run_federated
from ltrlib.foltr.intents import intent_matrix, read_doc_ids, read_intent_collection, read_qrels
from ltrlib.foltr.partition import N_INTENTS, FoltrData, online_training_queries, prepare_data
from ltrlib.foltr.rankers import FoltrRanker, RankerSpec, make_ranker
from ltrlib.foltr.simulate import (
    Job, grid, gap_metrics, noniid_gaps, online_table, online_table_caption, remedy_table, rounds_and_seeds,
    run_jobs, summarise_offline, table2_layout, table3_layout,
)

__all__ = [
    "ClickModel", "LabelError", "SDBN", "PBM", "PBM_ETAS", "SDBN_PRESET_NAMES", "sdbn", "pbm",
    "click_model", "check_labels", "stack_click_models", "simulate_clicks",
    "Federation", "RunResult", "cumulative_online", "discount_sum", "fedavg", "run_federated", "FoltrData", "N_INTENTS", "online_training_queries",
    "prepare_data", "read_intent_collection",
    "intent_matrix", "read_doc_ids", "read_qrels",
    "RankerSpec", "FoltrRanker", "make_ranker", "Job", "grid", "run_jobs", "online_table", "summarise_offline",
    "gap_metrics", "noniid_gaps", "online_table_caption", "remedy_table", "rounds_and_seeds",
    "table2_layout", "table3_layout",
]
