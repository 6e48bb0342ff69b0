"""Notebook 03's experiment, on the engine of `ltrlib.train`: the non-IID paper's client
models (M1 on DS1, M2' on DS2', M_full on DS) per split, tuned with Optuna, their per-query
results and Tables 1 and 3 in the paper's layouts; and the workers that tune them from
several processes or machines through a shared study (``ltrlib tune-worker``).

    models = clients.fit_client_models(splits, store, settings=TrainSettings(seed=0))
    per_query = clients.client_results(models)
"""

from ltrlib.clients.models import (ClientModels, client_metrics, client_results, fit_client_models, run_scorers,
                                   training_order)
from ltrlib.clients.tables import client_means, locals_compared, table1_initial, table3_alternative
from ltrlib.clients.workers import tune_worker

__all__ = [
    "ClientModels", "client_metrics", "client_results", "fit_client_models", "run_scorers", "training_order", "client_means", "locals_compared", "table1_initial",
    "table3_alternative", "tune_worker",
]
