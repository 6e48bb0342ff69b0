"""Project paths, scale presets and training budgets: the one place notebooks and modules
take them from.

Notebooks never build paths themselves, so they run the same from JupyterLab, from the
batch runner, or from any working directory.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
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


@dataclass(frozen=True)
class Budget:
    """One experiment's training budget at one scale (`TRAIN_BUDGETS`).

    ``by_scale``: what a notebook parameter of 0 (or an empty string) stands for. ``caps``:
    upper limits on whatever the parameter says. Resolved by
    `ltrlib.train.settings.budget_for_scale` and `ltrlib.train.TrainSettings.for_scale`.
    """

    by_scale: Mapping[str, int | str] = field(default_factory=dict)
    caps: Mapping[str, int] = field(default_factory=dict)


#: Scale-dependent training budgets, per scale and experiment (named after its notebook's
#: topic). ``max_trees`` and ``early_stopping`` are `TrainSettings` fields; the others
#: (trial counts, folds, logged sessions, the click experiment's ceiling) are the
#: experiments' own. An experiment without an entry at a scale runs its parameters as they
#: are there; another dataset than a synthetic scale takes small's budgets.
TRAIN_BUDGETS: dict[str, dict[str, Budget]] = {
    # The smoke test: every notebook in seconds.
    "tiny": {
        # On 150 training queries the validation NDCG of 50 queries keeps creeping up for a
        # thousand trees at the paper's settings; two trials (the second meets the pruner).
        "client_models": Budget(caps={"max_trees": 300, "n_trials": 2}),
        "stacking": Budget(caps={"n_trials": 2}),
        "bilambdamart": Budget(caps={"folds": 3, "n_trials": 1, "stage1_trials": 1}),
        # Every network at the paper's point, narrowed and trained for a few steps.
        "neural_competitors": Budget(by_scale={"max_width": 32}, caps={"neural_trials": 1, "max_steps": 20,
                                                                       "patience": 20, "eval_every": 10,
                                                                       "max_width": 32}),
        "backend_comparison": Budget(by_scale={"max_trees": 25, "early_stopping": 5}),
        # max_trees: the models trained on clicks; ceiling_trees: the true-label ceiling's limit
        "click_bias": Budget(by_scale={"max_trees": 10, "ceiling_trees": 40, "sessions": "200,600"}),
    },
    "small": {
        "backend_comparison": Budget(by_scale={"max_trees": 150, "early_stopping": 15}),
        "click_bias": Budget(by_scale={"max_trees": 50, "ceiling_trees": 200, "sessions": "600,2000,6000"}),
    },
    # The paper's limits (3000 trees, patience 100) where an experiment follows the paper.
    "paper": {
        "backend_comparison": Budget(by_scale={"max_trees": 3000, "early_stopping": 100}),
        "click_bias": Budget(by_scale={"max_trees": 300, "ceiling_trees": 3000,
                                       "sessions": "3000,30000,300000"}),
    },
}
