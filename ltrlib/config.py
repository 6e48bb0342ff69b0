"""Project paths and scale presets: the one place notebooks and modules take them from.

Notebooks never build paths themselves, so they run the same from JupyterLab, from the
batch runner, or from any working directory.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


def _find_project_root() -> Path:
    # An explicit override wins (a user running an installed ltrlib against their own tree);
    # otherwise the checkout this package lives in; otherwise the working directory.
    env = os.environ.get("LTRLIB_ROOT")
    if env:
        return Path(env).expanduser().resolve()
    here = Path(__file__).resolve().parent.parent
    if (here / "pyproject.toml").exists():
        return here
    return Path.cwd().resolve()


PROJ_ROOT = _find_project_root()
DATA_DIR = PROJ_ROOT / "data"
RAW_DIR = DATA_DIR / "raw"  # the user's files: read, never written
CACHE_DIR = Path(os.environ.get("LTRLIB_CACHE_DIR", DATA_DIR / "cache"))
SYNTHETIC_DIR = DATA_DIR / "synthetic"
REPORTS_DIR = Path(os.environ.get("LTRLIB_REPORTS_DIR", PROJ_ROOT / "reports"))
NOTEBOOKS_DIR = PROJ_ROOT / "notebooks"
# The small real dataset shipped beside the project (LightGBM's lambdarank example).
SHARED_DIR = PROJ_ROOT.parent / "shared"
SHARED_LIGHTGBM_RANK = SHARED_DIR / "data" / "lightgbm-rank"


@dataclass(frozen=True)
class Scale:
    """Query counts of one synthetic scale (train / validation / test) and list length."""

    name: str
    n_train: int
    n_vali: int
    n_test: int
    docs_per_query: float  # mean; the generator draws list lengths around it

    @property
    def n_queries(self) -> int:
        return self.n_train + self.n_vali + self.n_test


SCALES: dict[str, Scale] = {
    # Every scale keeps Istella-S's list length (106 documents per training query, Table 2 of
    # the non-IID paper): smaller scales have fewer queries, not shorter lists.
    # tests: seconds to generate and to train on
    "tiny": Scale("tiny", 150, 50, 50, 106.0),
    # the default batch run; sized so that `make reproduce` stays within ~25 minutes on 2 cores
    "small": Scale("small", 3000, 1000, 1000, 106.0),
    # Istella-S sizes (Table 2 of the non-IID paper): ~3.4M query-document pairs
    "paper": Scale("paper", 19245, 7211, 6562, 106.0),
}


def get_scale(scale: str | Scale) -> Scale:
    if isinstance(scale, Scale):
        return scale
    try:
        return SCALES[scale]
    except KeyError:
        raise ValueError(f"unknown scale {scale!r}; expected one of {sorted(SCALES)}") from None
