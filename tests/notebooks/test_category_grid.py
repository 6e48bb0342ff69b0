"""Notebooks 00-02 on the small real dataset over a grid of category features and bin counts,
at the tiny scale: every choice either runs through or is refused before any work, by
`ltrlib run`'s own check, with the parameter named.

The notebooks' cells are executed in this process (what a kernel would run, without the
kernel's start-up per notebook and choice): the batch smoke test covers the kernels.
"""

import warnings

import jupytext
import matplotlib
import pytest

from ltrlib import config
from ltrlib.noniid.checks import check_category_choices
from ltrlib import runner
from ltrlib.runner import declared_parameters, load_notebook

matplotlib.use("Agg")

NOTEBOOKS = ("00_dataset_overview", "01_category_analysis", "02_split_stats")
#: f1: 16 distinct values, f10: 23 (continuous, mostly 0), f2: 3 values, f220: Istella's
#: category feature number, here continuous with heavy ties; bins 0 take the values as they are.
GRID = [(feature, bins) for feature in ("f1", "f2", "f10", "f220") for bins in (0, 2, 5)]


def execute_in_process(name: str, parameters: dict) -> dict:
    """Run notebook ``name``'s code cells in a fresh namespace, the parameters injected after
    its parameters cell as papermill does; return the namespace."""
    import matplotlib.pyplot as plt
    from IPython.display import display

    namespace = {"display": display}
    for cell in jupytext.read(config.NOTEBOOKS_DIR / f"{name}.py").cells:
        if cell.cell_type != "code":
            continue
        exec(compile(cell.source, f"{name}.py", "exec"), namespace)
        if "parameters" in cell.metadata.get("tags", []):
            namespace.update(parameters)
    plt.close("all")
    return namespace


@pytest.mark.slow
@pytest.mark.parametrize("feature, bins", GRID)
def test_every_category_choice_runs_or_is_refused_up_front(feature, bins, tmp_path, monkeypatch):
    if not config.SHARED_LIGHTGBM_RANK.exists():
        pytest.skip(f"shared example data not found at {config.SHARED_LIGHTGBM_RANK}")
    monkeypatch.setattr(config, "REPORTS_DIR", tmp_path)
    choice = {"category_feature": feature, "category_bins": bins}
    standard = {"dataset": "lightgbm-rank", "data_dir": "", "scale": "tiny", "seed": 0,
                "run_id": f"grid-{feature}-{bins}", "interactive": False}
    # The plan as `ltrlib run` makes it, and the values its pre-flight check sees.
    declared = {name: declared_parameters(load_notebook(config.NOTEBOOKS_DIR / f"{name}.py")) for name in NOTEBOOKS}
    plan = runner._plan_parameters(declared, {k: v for k, v in standard.items() if k != "interactive"}, choice)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            check_category_choices(runner._running_parameters(plan, declared), given=choice)
    except ValueError as exc:
        assert "category_feature" in str(exc) or "category_bins" in str(exc), exc
        return
    for name in NOTEBOOKS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            execute_in_process(name, {**standard, **choice})
    assert (tmp_path / standard["run_id"] / "tables" / "02_split_stats" / "merge_summary.csv").exists()
