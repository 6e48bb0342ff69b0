"""One tiny batch run per test session, shared by the notebook smoke tests and the
JupyterLab browser test (which reuses its models rather than training its own)."""

import pytest

from ltrlib import runner


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory):
    """The whole batch at ``tiny``, seed 0, exactly as `make reproduce` runs it."""
    reports = tmp_path_factory.mktemp("reports")
    return runner.run_all(scale="tiny", seed=0, run_id="smoke", reports_dir=reports, progress=False)
