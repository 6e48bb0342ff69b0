"""One tiny batch run per test session, shared by the notebook smoke tests and the
JupyterLab browser test (which reuses its models rather than training its own)."""

import json

import pytest

from ltrlib import runner


def paper_setup_seed(scale: str = "tiny", tries: int = 50) -> int:
    """The first seed whose draw at ``scale`` has the paper's setup: category 11 the most
    frequent query category, and Split1-3 all trainable.

    The tests check the notebooks' mechanics on every split, not the twin's science, and a
    tiny draw holds the paper's setup only by chance: 11 leads 14 by about 3 points of query
    share (0.6 sd on tiny's 150 training queries) and the exclusive DS1 holds 1.2 % of the
    queries (1.7 expected, often none). `make reproduce` still runs seed 0 at `small`, where
    both are safe; the calibration tests check the shares themselves.
    """
    from ltrlib.data.loading import load_dataset
    from ltrlib.noniid.splits import PAPER_SPLITS, paper_split_setup

    for seed in range(tries):
        setup = paper_split_setup(load_dataset("synthetic", "", scale, seed), seed=seed)
        if setup.categories[0] == 11 and list(setup.names) == list(PAPER_SPLITS):
            return seed
    raise RuntimeError(f"no seed below {tries} has the paper's setup at scale {scale}")


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory, one_core_parameters):
    """The whole batch at ``tiny`` as `make reproduce` runs it, on `paper_setup_seed`, one
    model at a time on an xdist worker (`one_core_parameters`)."""
    reports = tmp_path_factory.mktemp("reports")
    return runner.run_all(scale="tiny", seed=paper_setup_seed(), run_id="smoke", reports_dir=reports,
                          parameters=one_core_parameters, progress=False)


@pytest.fixture(scope="session")
def tiny_seed(tiny_run) -> int:
    """The seed `tiny_run` used (its run.json)."""
    return int(json.loads((tiny_run / "run.json").read_text())["params"]["seed"])
