"""ltrlib.train.backends.dask: training on a 2-worker Dask LocalCluster matches in-process
training at the tiny scale."""

import numpy as np
import pytest

from ltrlib.data import load_dataset
from ltrlib.metrics import evaluate
from ltrlib.train import train_ranker
from ltrlib.train.backends.dask import query_partitions, stop_early


@pytest.fixture(scope="module")
def splits():
    return load_dataset("synthetic", scale="tiny", seed=0)


@pytest.fixture(scope="module")
def dask_client():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as c:
        yield c


def test_stop_early_matches_the_in_process_rule():
    assert stop_early([0.1, 0.3, 0.2, 0.3, 0.25, 0.2], patience=3) == (2, 5)
    assert stop_early([0.1, 0.2, 0.3], patience=3) == (3, 3)
    assert stop_early([0.5, 0.5, 0.5], patience=2) == (1, 3)  # equal is no improvement


def test_partitions_keep_queries_whole(splits):
    bounds = query_partitions(splits.train, 2)
    assert bounds[0] == 0 and bounds[-1] == splits.train.n_queries and len(bounds) == 3
    rows = np.diff(splits.train.offsets[bounds])
    assert abs(rows[0] - rows[1]) < splits.train.group_sizes.max() + 1


def _ndcg(r, ds):
    return evaluate(ds, r.score(ds), metrics="ndcg@10")["ndcg@10"]


def _held_out_ndcg(r, splits):
    # Mean over the 100 validation and test queries: on 50 queries alone two equally good
    # tiny-scale models differ by up to ~0.06 (measured both ways, both backends).
    n_v, n_t = splits.vali.n_queries, splits.test.n_queries
    return (_ndcg(r, splits.vali) * n_v + _ndcg(r, splits.test) * n_t) / (n_v + n_t)


@pytest.mark.parametrize("backend", ["lightgbm", "xgboost"])
def test_two_workers_close_to_one_process(splits, dask_client, backend):
    kw = dict(backend=backend, max_trees=20, num_threads=1)
    local = train_ranker(splits.train, None, {"learning_rate": 0.2}, **kw)
    remote = train_ranker(splits.train, None, {"learning_rate": 0.2}, cluster=dask_client, **kw)
    assert remote.backend == backend and remote.best_iteration == 20
    # Bin boundaries come from each worker's sample of the rows, so the trees (and scores)
    # differ; the fit and the ranking quality do not, beyond noise.
    assert abs(_ndcg(local, splits.train) - _ndcg(remote, splits.train)) < 0.02
    a, b = _held_out_ndcg(local, splits), _held_out_ndcg(remote, splits)
    assert abs(a - b) < 0.05, (a, b)
    assert b > 0.3  # random scores give ~0.16-0.21 on these queries


def test_address_and_early_stopping_on_the_cluster(splits, dask_client):
    r = train_ranker(splits.train, splits.vali, {"learning_rate": 0.3}, backend="xgboost", max_trees=25,
                     early_stopping=3, num_threads=1, cluster=dask_client.scheduler.address)
    assert r.info["cluster"].startswith("tcp://")
    assert r.best_iteration == int(np.argmax(r.curve)) + 1 and len(r.curve) <= 25
    # The curve is our NDCG@10 of the model cut at each tree count.
    assert _ndcg(r, splits.vali) == pytest.approx(r.best_score, abs=1e-9)


def test_bad_cluster_is_named(splits):
    with pytest.raises(ValueError, match="cluster must be"):
        train_ranker(splits.train, None, {}, max_trees=2, num_threads=1, cluster="somewhere")
