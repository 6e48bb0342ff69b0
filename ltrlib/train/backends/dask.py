"""Training a ranker on a Dask cluster: ``train_ranker(..., cluster=...)``.

``cluster`` is ``"local"`` (a `distributed.LocalCluster` started for the call, 2 worker
processes with one thread each, closed afterwards), a scheduler address such as
``"tcp://10.0.0.5:8786"`` (an existing cluster; nothing is started or stopped), or a
``distributed.Client``. LightGBM trains with ``lightgbm.dask.DaskLGBMRanker`` (data
parallel: each worker builds histograms on its rows, the sums are reduced), XGBoost with
``xgboost.dask.train`` on a ``DaskDMatrix`` with ``qid``.

Data: the training rows are cut into one partition per worker at query boundaries, so no
query group is split across workers (LightGBM requires it). XGBoost accepts split groups
("theoretically sound but can affect accuracy", its tutorial notes): ``split_queries=True``
cuts the rows into equal parts wherever the cut falls, inside a query or not, which is how
notebook 08 tests the note. Every worker must reach the
data: here they are sent from this process, which suits data that fit in its memory; for
larger collections load them on the workers (dask.dataframe.read_parquet) and call the
libraries directly.

Early stopping: DaskLGBMRanker has none, so both libraries grow ``max_trees`` trees on the
cluster; then the validation NDCG@k after every tree is computed here, and the
early-stopping rule of the single-process path is applied to that curve (first maximum;
stop once ``early_stopping`` trees brought no improvement). The returned model, best
iteration and curve therefore mean exactly what they mean in a single-process run; only
the trees grown past the stopping point were wasted work.
"""

from __future__ import annotations

import contextlib
import warnings
from typing import Any, Iterator

import numpy as np

from ltrlib.data.dataset import Dataset
from ltrlib.metrics import evaluate

__all__ = ["cluster_client", "fit_on_cluster", "query_partitions", "stop_early"]

LOCAL_WORKERS = 2


@contextlib.contextmanager
def cluster_client(cluster) -> Iterator[Any]:
    """A ``distributed.Client`` for ``cluster`` ("local", an address, or a Client)."""
    from distributed import Client, LocalCluster

    if isinstance(cluster, Client):
        yield cluster
        return
    if cluster == "local":
        # Processes, not threads: LightGBM's and XGBoost's collectives expect one process
        # per worker. No dashboard: nothing to serve in a batch run.
        with LocalCluster(n_workers=LOCAL_WORKERS, threads_per_worker=1, processes=True,
                          dashboard_address=None) as lc, Client(lc) as client:
            yield client
        return
    if isinstance(cluster, str) and "://" in cluster:
        with Client(cluster) as client:
            yield client
        return
    raise ValueError(f"cluster must be None, 'local', a scheduler address like "
                     f"'tcp://host:8786' or a distributed.Client, got {cluster!r}")


def query_partitions(data: Dataset, n_parts: int) -> np.ndarray:
    """Query indices where partitions start (plus the end), so that each of ``n_parts``
    contiguous blocks of whole queries holds about the same number of rows."""
    n_parts = max(1, min(int(n_parts), data.n_queries))
    targets = np.arange(1, n_parts) * data.n_docs / n_parts
    cuts = np.searchsorted(data.offsets, targets)
    bounds = np.unique(np.concatenate([[0], cuts, [data.n_queries]]))
    return bounds


def _dask_arrays(data: Dataset, bounds: np.ndarray, label: np.ndarray, split_queries: bool = False):
    """X, y, group sizes and qid as Dask arrays chunked at ``bounds`` (query indices); with
    ``split_queries`` the rows are cut into as many equal parts instead, through queries
    (group sizes are then None: only qid says which rows belong together)."""
    import dask.array as da

    n_parts = len(bounds) - 1
    if split_queries:
        cuts = np.unique(np.linspace(0, data.n_docs, n_parts + 1).astype(np.int64))
        row_chunks = tuple(int(v) for v in np.diff(cuts))
    else:
        row_chunks = tuple(int(v) for v in np.diff(data.offsets[bounds]))
    X = da.from_array(data.X, chunks=(row_chunks, data.n_features))
    y = da.from_array(label, chunks=(row_chunks,))
    group = None if split_queries else da.from_array(data.group_sizes.astype(np.int64),
                                                     chunks=(tuple(int(v) for v in np.diff(bounds)),))
    qid = da.from_array(data.doc_query_index.astype(np.int64), chunks=(row_chunks,))
    return X, y, group, qid


def stop_early(curve: list[float], patience: int) -> tuple[int, int]:
    """``(best_iteration, trees_grown)`` the single-process early stopping would give on
    ``curve``: the first maximum, and stop after ``patience`` trees without a strict
    improvement (or at the end of the curve)."""
    best, best_t = -np.inf, -1
    for t, v in enumerate(curve):
        if v > best:
            best, best_t = v, t
        elif t - best_t >= patience:
            return best_t + 1, t + 1
    return best_t + 1, len(curve)


def _tree_output(backend: str, model, X: np.ndarray, t: int) -> np.ndarray:
    # The contribution of tree t alone (XGBoost adds its constant base score to each: no
    # effect on the order of documents).
    if backend == "lightgbm":
        return model.predict(X, start_iteration=t, num_iteration=1)
    return model.inplace_predict(X, iteration_range=(t, t + 1))


def _validation_curve(backend: str, model, vali: Dataset, n_trees: int, eval_at: int) -> list[float]:
    # A running sum over the trees orders documents as the model cut at that many trees
    # does; one vector, not a rows x trees matrix (760k validation rows x 3000 trees would
    # be 18 GB at Istella-S size).
    key = f"ndcg@{eval_at}"
    running = np.zeros(vali.n_docs, dtype=np.float64)
    curve = []
    for t in range(n_trees):
        running += _tree_output(backend, model, vali.X, t)
        curve.append(float(evaluate(vali, running, metrics=key)[key]))
    return curve


def _fit_lightgbm(client, params: dict, train: Dataset, bounds: np.ndarray, max_trees: int,
                  position) -> Any:
    from lightgbm.dask import DaskLGBMRanker

    if position is not None:
        raise ValueError("position-bias training is not available on Dask for LightGBM "
                         "(DaskLGBMRanker takes no positions); train in process (cluster=None)")
    X, y, group, _ = _dask_arrays(train, bounds, train.y)
    # No metric: nothing is evaluated on the cluster. Threads are the workers' (one each).
    p = {k: v for k, v in params.items() if k not in ("metric", "eval_at", "num_threads")}
    model = DaskLGBMRanker(client=client, n_estimators=max_trees, **p)
    model.fit(X, y, group=group)
    return model.booster_


def _fit_xgboost(client, params: dict, train: Dataset, bounds: np.ndarray, max_trees: int,
                 position, split_queries: bool = False) -> Any:
    import xgboost.dask as dxgb

    from ltrlib.train.backends import xgboost as xb

    if position is not None:
        order = xb._position_order(train, position)
        train = Dataset(X=train.X[order], y=train.y[order], query_ids=train.query_ids,
                        offsets=train.offsets, feature_names=train.feature_names, name=train.name)
    X, y, _, qid = _dask_arrays(train, bounds, xb._labels(params, train.y), split_queries)
    dtrain = dxgb.DaskDMatrix(client, X, y, qid=qid)
    out = dxgb.train(client, {k: v for k, v in params.items() if k != "eval_metric"}, dtrain,
                     num_boost_round=max_trees)
    booster = out["booster"]
    booster.set_param({"nthread": int(params.get("nthread", 1))})
    return booster


def fit_on_cluster(cluster, backend: str, params: dict, train: Dataset, vali: Dataset | None,
                   max_trees: int, early_stopping: int, position=None,
                   split_queries: bool = False) -> tuple[Any, int, list[float]]:
    """The distributed counterpart of a backend's ``fit``: (model, best_iteration, curve).
    ``split_queries`` (XGBoost only): cut the rows through query groups (module docstring)."""
    if backend not in ("lightgbm", "xgboost"):
        raise ValueError(f"no Dask training for backend {backend!r}")
    if split_queries and backend != "xgboost":
        raise ValueError("split_queries needs the XGBoost backend: LightGBM's Dask ranker needs whole queries "
                         "on each worker")
    with cluster_client(cluster) as client, warnings.catch_warnings():
        # The rows go from this process into the graph (module docstring): Dask's warning
        # that the graph is large says what is meant, at every call.
        warnings.filterwarnings("ignore", message="Sending large graph", category=UserWarning)
        n_workers = max(1, len(client.scheduler_info().get("workers", {})))
        bounds = query_partitions(train, n_workers)
        if backend == "lightgbm":
            model = _fit_lightgbm(client, params, train, bounds, max_trees, position)
        else:
            model = _fit_xgboost(client, params, train, bounds, max_trees, position, split_queries)
    if vali is None:
        return model, max_trees, []
    eval_at = int(params["eval_at"][0]) if backend == "lightgbm" else int(params["eval_metric"].split("@")[1])
    curve = _validation_curve(backend, model, vali, max_trees, eval_at)
    best, grown = stop_early(curve, early_stopping)
    return model, best, curve[:grown]
