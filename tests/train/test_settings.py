"""ltrlib.train.settings: TrainSettings, its per-scale construction and the other budgets."""

import numpy as np
import pytest

from ltrlib import config
from ltrlib.train import TrainSettings, budget_for_scale
from ltrlib.train.settings import DEFAULT_NUM_THREADS


def test_defaults_are_the_papers_and_values_are_checked():
    s = TrainSettings()
    assert (s.backend, s.max_trees, s.early_stopping, s.eval_at, s.seed) == ("lightgbm", 3000, 100, 10, 0)
    assert s.num_threads is None and s.threads == DEFAULT_NUM_THREADS
    # numpy integers are stored as Python ints (studies record settings as JSON)
    assert type(TrainSettings(max_trees=np.int64(5), seed=np.int32(3)).seed) is int
    for bad in (dict(max_trees=0), dict(early_stopping=-1), dict(eval_at=True), dict(num_threads=0)):
        with pytest.raises(ValueError, match=next(iter(bad))):
            TrainSettings(**bad)
    with pytest.raises(ValueError, match="seed"):
        TrainSettings(seed=1.5)
    with pytest.raises(TypeError, match="no field"):
        s.replace(trees=3)
    assert s.replace(seed=4) == TrainSettings(seed=4) and s.seed == 0  # frozen


def test_for_scale_fills_zeros_and_applies_caps():
    # Notebook 08: 0 means by scale; another dataset than a synthetic scale takes small's.
    assert TrainSettings.for_scale("tiny", "backend_comparison", max_trees=0, early_stopping=0) \
        == TrainSettings(max_trees=25, early_stopping=5)
    assert TrainSettings.for_scale("paper", "backend_comparison", max_trees=0, early_stopping=7, seed=2) \
        == TrainSettings(max_trees=3000, early_stopping=7, seed=2)
    assert TrainSettings.for_scale("my-letor", "backend_comparison").max_trees == 150
    # Notebook 03: the paper's limits, capped at the tiny scale only.
    assert TrainSettings.for_scale("tiny", "client_models", max_trees=3000).max_trees == 300
    assert TrainSettings.for_scale("small", "client_models", max_trees=3000).max_trees == 3000
    assert TrainSettings.for_scale("tiny", "client_models").max_trees == 300
    with pytest.raises(ValueError, match="max_trees must be a non-negative integer"):
        TrainSettings.for_scale("small", "backend_comparison", max_trees=-1)
    with pytest.raises(ValueError, match="unknown experiment"):
        TrainSettings.for_scale("small", "client-models")
    with pytest.raises(TypeError, match="no field"):
        TrainSettings.for_scale("small", "client_models", n_trials=3)


def test_budget_for_scale():
    assert budget_for_scale("tiny", "client_models", n_trials=6) == {"n_trials": 2}
    assert budget_for_scale("small", "client_models", n_trials=6) == {"n_trials": 6}
    assert budget_for_scale("tiny", "bilambdamart", folds=5, n_trials=4) == {"folds": 3, "n_trials": 1}
    assert budget_for_scale("small", "click_bias", sessions="", ceiling_trees=0) == \
        {"sessions": "600,2000,6000", "ceiling_trees": 200}
    assert budget_for_scale("tiny", "click_bias", sessions="7", ceiling_trees=9) == \
        {"sessions": "7", "ceiling_trees": 9}
    with pytest.raises(ValueError, match="ceiling_trees"):
        budget_for_scale("tiny", "click_bias", ceiling_trees=-1)
    # Every synthetic scale has its budgets (or none), and nothing else is a key.
    assert set(config.TRAIN_BUDGETS) == set(config.SCALES)
