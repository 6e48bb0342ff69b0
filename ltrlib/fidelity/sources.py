"""Which tables each notebook writes that the fidelity ledger reads: one registry for every paper.

A table is ``tables/<notebook>/<name>.csv`` under the run directory (`ltrlib.report.Reporter`).
The paper modules name a table by notebook and name (`path`, `read`), so a renamed table is
changed here once, and a missing one is reported by the path a reader can look for.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

__all__ = ["NOTEBOOK_TABLES", "read_table", "table_path"]

NOTEBOOK_TABLES: dict[str, tuple[str, ...]] = {
    "00_dataset_overview": ("calibration", "calibration_subsets"),
    "03_client_models": ("table1_initial_split_numeric", "table3_alternative_splits_numeric"),
    "04_linear_merge": ("table4_linear_numeric", "alpha_choices"),
    "05_stacking": ("table5_stacking_numeric", "figure3_importance"),
    "06_bilambdamart": ("table2_lambdarank", "table4_difference", "table5_softmax", "control_table2"),
    "07_foltr_noniid": ("runs_online", "remedies"),
    "08_xgboost_backends": ("pair_method_summary",),
}


def table_path(notebook: str, name: str) -> Path:
    """Where ``notebook`` writes table ``name``, relative to the run directory."""
    if name not in NOTEBOOK_TABLES.get(notebook, ()):
        raise KeyError(f"the fidelity ledger reads no table {name!r} of notebook {notebook!r}; "
                       f"add it to ltrlib.fidelity.sources.NOTEBOOK_TABLES")
    return Path("tables") / notebook / f"{name}.csv"


def read_table(run_dir: str | Path, notebook: str, name: str, missing: list[str]) -> pd.DataFrame | None:
    """The table, or None with its path appended to ``missing``."""
    rel = table_path(notebook, name)
    path = Path(run_dir) / rel
    if not path.exists():
        missing.append(rel.as_posix())
        return None
    return pd.read_csv(path)
