"""ltrlib.train.settings: TrainSettings, its per-scale construction and the other budgets."""

import numpy as np
import pytest

from ltrlib import config
from ltrlib.train import TrainSettings, TuningSettings, budget_for_scale
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


# --------------------------------------------------------------------------- TuningSettings


def test_tuning_defaults_and_checks_name_the_field():
    t = TuningSettings()
    assert (t.n_trials, t.prune, t.storage, t.progress, t.first_params) == (20, True, None, True, None)
    assert type(TuningSettings(n_trials=np.int64(3)).n_trials) is int
    for bad in (dict(n_trials=0), dict(n_trials=2.0), dict(n_trials=True), dict(prune=1), dict(progress="yes"),
                dict(storage=3), dict(first_params=5), dict(first_params={1: 2})):
        with pytest.raises(ValueError, match=next(iter(bad))):
            TuningSettings(**bad)


def test_tuning_keeps_paths_as_strings_and_the_first_point_frozen_in_order(tmp_path):
    import json

    import optuna

    assert TuningSettings(storage=tmp_path / "a.journal").storage == str(tmp_path / "a.journal")
    assert TuningSettings(storage="").storage is None  # a notebook's empty storage parameter
    memory = optuna.storages.InMemoryStorage()
    assert TuningSettings(storage=memory).storage is memory
    given = {"num_leaves": 31, "learning_rate": 0.1}
    t = TuningSettings(first_params=given)
    given["num_leaves"] = 7  # the budget holds its own copy
    assert t.first_params == (("num_leaves", 31), ("learning_rate", 0.1))
    assert t.first_point == {"num_leaves": 31, "learning_rate": 0.1}
    # A study's setup records the point as the mapping gave it, key order included.
    assert json.dumps(t.first_point) == '{"num_leaves": 31, "learning_rate": 0.1}'
    assert hash(t) == hash(TuningSettings(first_params={"num_leaves": 31, "learning_rate": 0.1}))
    with pytest.raises(AttributeError):
        t.n_trials = 3


def test_tuning_replace_is_checked_and_names_the_real_fields():
    t = TuningSettings(n_trials=4, prune=False)
    assert t.replace(n_trials=6) == TuningSettings(n_trials=6, prune=False)
    with pytest.raises(TypeError, match=r"TuningSettings has no field \['trials'\].*n_trials.*first_params"):
        t.replace(trials=6)
    with pytest.raises(ValueError, match="n_trials"):
        t.replace(n_trials=-1)


def test_tuning_for_scale_resolves_trials_as_budget_for_scale(monkeypatch):
    # The caps: tiny client_models allows 2 trials, whatever the notebook asks for.
    assert TuningSettings.for_scale("tiny", "client_models", n_trials=6).n_trials == 2
    assert TuningSettings.for_scale("small", "client_models", n_trials=6).n_trials == 6
    for scale in ("tiny", "small", "paper", "my-collection"):
        for asked in (1, 2, 6, 30):
            expected = budget_for_scale(scale, "stacking", n_trials=asked)["n_trials"]
            assert TuningSettings.for_scale(scale, "stacking", n_trials=asked).n_trials == expected
    # Not given: the scale's value, else the default (20), capped.
    assert TuningSettings.for_scale("small", "stacking").n_trials == 20
    assert TuningSettings.for_scale("tiny", "stacking").n_trials == 2
    # 0: the scale's value; without one there is no budget to run.
    monkeypatch.setitem(config.TRAIN_BUDGETS["small"], "stacking", config.Budget(by_scale={"n_trials": 5}))
    assert TuningSettings.for_scale("small", "stacking", n_trials=0).n_trials == 5
    with pytest.raises(ValueError, match="n_trials"):
        TuningSettings.for_scale("paper", "stacking", n_trials=0)
    # The other fields are taken as given.
    t = TuningSettings.for_scale("tiny", "bilambdamart", n_trials=10, prune=False, storage="x.journal")
    assert (t.n_trials, t.prune, t.storage, t.progress) == (1, False, "x.journal", True)
    with pytest.raises(TypeError, match="TuningSettings has no field"):
        TuningSettings.for_scale("tiny", "stacking", trials=3)
    with pytest.raises(ValueError, match="unknown experiment"):
        TuningSettings.for_scale("tiny", "no_such", n_trials=3)
    with pytest.raises(ValueError, match="n_trials"):
        TuningSettings.for_scale("tiny", "stacking", n_trials=-1)


def test_stage1_tuning_is_none_for_no_trials():
    from ltrlib.bilambdamart import stage1_tuning

    base = TuningSettings(n_trials=10, storage="j.journal")
    assert stage1_tuning(0, base) is None
    assert stage1_tuning(3, base) == TuningSettings(n_trials=3, prune=False, storage="j.journal")
    with pytest.raises(ValueError, match="stage1_trials"):
        stage1_tuning(-1, base)
