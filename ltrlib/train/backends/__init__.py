"""The training libraries side by side behind one interface (`Backend`): LightGBM
(`lightgbm`, the default), XGBoost (`xgboost`) and training on a Dask cluster (`dask`, either
library's distributed counterpart of ``fit``). `ltrlib.train.Ranker` and `train_ranker` reach
them by name through `ltrlib.train.BACKENDS` (each module's ``LIGHTGBM``, ``XGBOOST``
entry); notebooks never call a backend directly.
"""

from ltrlib.train.backends.base import Backend, DataCache
from ltrlib.train.backends.dask import cluster_client, fit_on_cluster, query_partitions, stop_early
from ltrlib.train.backends.lightgbm import (
    MIN_HESSIAN_FLOOR,
    lightgbm_params,
    monitor_callback,
    quiet_lightgbm,
)

__all__ = [
    "Backend", "DataCache", "cluster_client", "fit_on_cluster", "query_partitions", "stop_early",
    "MIN_HESSIAN_FLOOR", "lightgbm_params", "monitor_callback", "quiet_lightgbm",
]
