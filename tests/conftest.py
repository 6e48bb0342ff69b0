"""Test-session settings shared by every test directory.

The suite runs on two pytest-xdist workers (``addopts`` in pyproject.toml). Tests that
share an expensive module- or session-scoped fixture must run in the same worker, or each
worker would build the fixture again: the tiny batch run (`tiny_run`, about four minutes),
the batch on the real data (`real_run`), the calibration's four simulated samples
(`spread`, about 17 s) and its 10,000-query collection (`generated`, about 8 s), the binned
stage-2 rows of tests/bilambdamart/test_two_stage.py (`rows40`, about 8 s),
tests/data/test_synthetic.py's memoised Type 1 gap (`type1_gap`, about 10 s), the pairwise
term's regressions (`pairwise_r2`, about 18 s), the PostgreSQL server of the shared-study
tests (`postgres`, about 12 s) and tests/train/test_dask.py's LocalCluster (`dask_client`).
They are grouped by the fixture they use, so a new test that asks for one joins its group
without a marker.
"""

import os

import pytest

from ltrlib.config import CACHE_DIR
from ltrlib.processes import thread_env

# Two workers each running LightGBM or XGBoost with two OpenMP threads share two cores.
# OpenMP's default is to spin-wait between parallel regions, and a spinning thread holds a
# core the other worker needs (timings inflate several-fold); passive waiting yields it.
# Set before any test imports a library that starts OpenMP, and inherited by the notebook
# kernels the batch tests start.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
# Each of the two xdist workers is a one-core machine: together they already fill the cores,
# so a second thread (or a notebook's pool of worker processes, `one_core_parameters`) in a worker
# only adds synchronisation, process start-ups and imports. Results do not depend on it: the
# tiny batch's tables, metrics and ledger are byte-identical with one thread and no pools
# (bench/results_digest.py). A test that asks for a thread count in its parameters still
# gets it. Inherited by the notebook kernels the batch tests start.
ON_XDIST_WORKER = bool(os.environ.get("PYTEST_XDIST_WORKER"))
if ON_XDIST_WORKER:
    for _name, _count in thread_env(1).items():
        os.environ.setdefault(_name, _count)
# One compilation cache for the whole suite (`ltrlib.neural.ranker.use_compilation_cache`),
# pinned here because many tests move LTRLIB_CACHE_DIR to a temporary folder: networks of
# shapes compiled before (an earlier batch, an earlier run of the suite on this machine) are
# loaded rather than compiled again. A fresh clone compiles each shape once, as before.
# Inherited by the notebook kernels.
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", str(CACHE_DIR / "jax"))
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")

#: Fixture name -> xdist group of every test that uses it.
SHARED_FIXTURE_GROUPS = {"tiny_run": "tiny_batch", "real_run": "real_data_batch", "spread": "calibration",
                         "generated": "calibration", "rows40": "two_stage",
                         "type1_gap": "type1_gap", "pairwise_r2": "pairwise_r2", "postgres": "postgres",
                         "dask_client": "dask_cluster"}
#: A test file all of whose tests are in a group (see `pytest_xdist_node_collection_finished`).
ALWAYS_GROUPED = "tests/notebooks/test_notebooks.py::"


# tryfirst: xdist's own hook reads the group markers to tag the tests for its scheduler.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    # The end-to-end runs (marked slow) first: the scheduler hands out work in collection
    # order (after the groups), and a run of minutes handed out last leaves the other worker
    # idle while it finishes; longest first keeps the two workers' ends within a few seconds.
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
    for item in items:
        for fixture, group in SHARED_FIXTURE_GROUPS.items():
            if fixture in item.fixturenames:
                item.add_marker(pytest.mark.xdist_group(group))
                break


def pytest_xdist_node_collection_finished(node, ids):
    # A worker of `--dist loadgroup` tags each grouped test's node id with "@<group>" for
    # the scheduler. Untagged, the groups are scattered and each worker runs the shared
    # batch itself (pytest 9.2 with pytest-xdist 3.8): refuse rather than run slowly.
    # Every test of test_notebooks.py uses the tiny batch run, so its ids must carry a tag.
    if node.config.option.dist == "loadgroup" and any(i.startswith(ALWAYS_GROUPED) for i in ids) \
            and not any("@" in i for i in ids):
        pytest.exit("pytest-xdist did not tag the grouped tests: this pytest and pytest-xdist do not "
                    "work together for --dist loadgroup (pytest-xdist issue #1386); install the versions "
                    "pyproject.toml asks for (pip install -e '.[dev]'), or run with -n 0", returncode=4)


@pytest.fixture(scope="session")
def one_core_parameters() -> dict[str, int]:
    """The notebook parameters a batch run adds on an xdist worker (see the thread budget at
    the top): the models a notebook trains side by side in its own worker processes train
    one after another in its kernel. The pools themselves are tested where they are built
    (tests/train, tests/bilambdamart/test_two_stage.py, tests/foltr, tests/clients), and end to
    end in the batch on real data (tests/notebooks/test_real_data.py), which keeps them."""
    return {"n_jobs": 1} if ON_XDIST_WORKER else {}
