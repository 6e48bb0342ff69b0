"""ltrlib.train.tuning: the paper's search space, resumable studies, CV tuning."""

import numpy as np
import optuna
import pytest
from optuna.distributions import CategoricalDistribution, IntDistribution

from ltrlib.data import load_dataset
from ltrlib.train import ModelStore, fit_tuned, tune, tune_cv, tuned_parameters
from ltrlib.train import tuning as tuning_mod

# Quick trials: few trees. The search space is the paper's, whatever the limits.
FAST = dict(max_trees=25, early_stopping=5, num_threads=1, progress=False)


@pytest.fixture(scope="module")
def splits():
    return load_dataset("synthetic", scale="tiny", seed=0)


def _journal_trials(path, name):
    study = optuna.load_study(study_name=name, storage=tuning_mod.study_storage(path))
    return study.get_trials(deepcopy=False)


def test_search_space_is_the_papers(tmp_path, splits):
    path = tmp_path / "optuna.journal"
    tune(splits.train, splits.vali, n_trials=3, study_name="s", storage=path, **FAST)
    trials = _journal_trials(path, "s")
    assert len(trials) == 3
    for t in trials:
        assert t.distributions == {
            "learning_rate": CategoricalDistribution(
                (0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.2, 0.3)),
            "num_leaves": IntDistribution(15, 255),
            "min_data_in_leaf": IntDistribution(10, 500, step=5),
            "min_sum_hessian_in_leaf": IntDistribution(1, 100),
        }
        assert isinstance(t.params["min_sum_hessian_in_leaf"], int)
        assert t.params["min_data_in_leaf"] % 5 == 0


def test_trial_value_is_vali_ndcg_of_the_trained_params(splits):
    res = tune(splits.train, splits.vali, n_trials=2, **FAST)
    assert res.ranker is not None
    assert res.ranker.best_score == pytest.approx(res.best_value, abs=1e-9)
    for k, v in res.best_params.items():
        assert res.ranker.params[k] == v
    assert res.best_iteration == res.ranker.best_iteration


def test_interrupted_study_resumes_and_finished_one_is_reused(tmp_path, splits):
    path = tmp_path / "optuna.journal"
    first = tune(splits.train, splits.vali, n_trials=2, study_name="Split1.M1", storage=path, **FAST)
    assert first.n_new == 2 and first.n_trials == 2
    more = tune(splits.train, splits.vali, n_trials=4, study_name="Split1.M1", storage=path, **FAST)
    assert more.n_new == 2 and more.n_trials == 4
    assert len(_journal_trials(path, "Split1.M1")) == 4
    again = tune(splits.train, splits.vali, n_trials=4, study_name="Split1.M1", storage=path, **FAST)
    assert again.n_new == 0 and again.ranker is None
    assert again.best_params == more.best_params and again.best_value == more.best_value
    # Another study in the same file is independent.
    other = tune(splits.train, splits.vali, n_trials=1, study_name="Split1.M2", storage=path, **FAST)
    assert other.n_new == 1


def test_resumed_study_equals_uninterrupted_one(tmp_path, splits):
    a = tmp_path / "a.journal"
    tune(splits.train, splits.vali, n_trials=2, study_name="s", storage=a, **FAST)
    resumed = tune(splits.train, splits.vali, n_trials=4, study_name="s", storage=a, **FAST)
    straight = tune(splits.train, splits.vali, n_trials=4, study_name="s",
                    storage=tmp_path / "b.journal", **FAST)
    cols = ["value", "learning_rate", "num_leaves", "min_data_in_leaf", "min_sum_hessian_in_leaf"]
    assert resumed.trials[cols].equals(straight.trials[cols])
    # Fewer trials than stored: the first n, as a fresh study of n trials would give.
    fewer = tune(splits.train, splits.vali, n_trials=2, study_name="s", storage=a, **FAST)
    assert fewer.n_new == 0 and fewer.trials[cols].equals(straight.trials[cols].iloc[:2])


def test_running_trial_left_by_a_crash_is_failed_and_redone(tmp_path, splits):
    path = tmp_path / "optuna.journal"
    tune(splits.train, splits.vali, n_trials=1, study_name="s", storage=path, **FAST)
    study = optuna.load_study(study_name="s", storage=tuning_mod.study_storage(path))
    study.ask()  # a trial that never finished
    res = tune(splits.train, splits.vali, n_trials=2, study_name="s", storage=path, **FAST)
    assert res.n_new == 1 and res.n_trials == 2
    states = [t.state for t in _journal_trials(path, "s")]
    assert states.count(optuna.trial.TrialState.FAIL) == 1
    assert states.count(optuna.trial.TrialState.COMPLETE) == 2


def test_study_on_other_data_is_refused(tmp_path, splits):
    path = tmp_path / "optuna.journal"
    tune(splits.train, splits.vali, n_trials=1, study_name="s", storage=path, **FAST)
    with pytest.raises(ValueError, match=r"another setup.*train"):
        tune(splits.train.take(np.arange(100)), splits.vali, n_trials=1, study_name="s",
             storage=path, **FAST)


def test_fit_tuned_stores_and_then_reuses(tmp_path, splits, monkeypatch):
    store = ModelStore("run", root=tmp_path)
    ranker, res = fit_tuned(splits.train, splits.vali, store=store, split="Split1", name="M1",
                            n_trials=2, **FAST)
    assert (tmp_path / "run" / "optuna.journal").exists() and store.exists("Split1", "M1")
    side = store.info("Split1", "M1")
    assert side["info"]["tuning"]["study"] == "Split1.M1"
    assert side["info"]["tuning"]["best_value"] == pytest.approx(res.best_value)

    def no_training(*a, **k):
        raise AssertionError("a finished study with a stored model must not train")

    monkeypatch.setattr(tuning_mod, "train_ranker", no_training)
    again, res2 = fit_tuned(splits.train, splits.vali, store=store, split="Split1", name="M1",
                            n_trials=2, **FAST)
    assert res2.n_new == 0
    assert np.array_equal(again.predict(splits.test), ranker.predict(splits.test))
    monkeypatch.undo()
    # Model file lost but study finished: retrained with the best params, same model.
    store.path("Split1", "M1").unlink()
    third, res3 = fit_tuned(splits.train, splits.vali, store=store, split="Split1", name="M1",
                            n_trials=2, **FAST)
    assert res3.n_new == 0
    assert np.array_equal(third.predict(splits.test), ranker.predict(splits.test))
    table = tuned_parameters({("Split1", "M1"): third})
    assert table.loc[0, "trees"] == third.best_iteration
    assert table.loc[0, "learning_rate"] == res.best_params["learning_rate"]


def test_tune_cv_runs_k_folds(tmp_path, splits):
    res = tune_cv(splits.train, 3, n_trials=2, storage=tmp_path / "cv.journal", **FAST)
    trials = _journal_trials(tmp_path / "cv.journal", "tuning-cv")
    for t in trials:
        folds = t.user_attrs["fold_values"]
        assert len(folds) == 3 and len(t.user_attrs["fold_iterations"]) == 3
        assert t.value == pytest.approx(np.mean(folds))
    assert res.n_trials == 2 and res.best_iteration >= 1
    with pytest.raises(ValueError, match="n_folds"):
        tune_cv(splits.train, 1, n_trials=1, **FAST)


@pytest.mark.parametrize("kwargs, match", [
    (dict(n_trials=0), "n_trials"),
    (dict(params={"num_leaves": 31}), "tuned"),
    (dict(backend="xgb"), "unknown backend"),
])
def test_bad_arguments(splits, kwargs, match):
    with pytest.raises(ValueError, match=match):
        tune(splits.train, splits.vali, **{**FAST, "n_trials": 1, **kwargs})


def test_first_params_is_trial_zero_even_after_a_crash(tmp_path, splits):
    from ltrlib.train import PAPER_TABLE6_MEDIAN

    path = tmp_path / "optuna.journal"
    study = optuna.create_study(study_name="s", storage=tuning_mod.study_storage(path),
                                direction="maximize")
    study.ask()  # the first trial was interrupted
    res = tune(splits.train, splits.vali, n_trials=2, study_name="s", storage=path,
               first_params=PAPER_TABLE6_MEDIAN, **FAST)
    first = res.trials.iloc[0]
    assert {k: first[k] for k in PAPER_TABLE6_MEDIAN} == PAPER_TABLE6_MEDIAN
    assert res.trials.iloc[1]["num_leaves"] != 180 or res.trials.iloc[1]["learning_rate"] != 0.05
    with pytest.raises(ValueError, match="min_data_in_leaf"):
        tune(splits.train, splits.vali, n_trials=1,
             first_params={**PAPER_TABLE6_MEDIAN, "min_data_in_leaf": 62}, **FAST)


def test_fit_client_models_trains_each_distinct_model_once(tmp_path, splits, monkeypatch):
    from ltrlib.noniid.splits import paper_splits
    from ltrlib.train import client_metrics, client_results, client_table, fit_client_models

    nsplits = paper_splits(splits, categories=(11, 11, 14), seed=0)
    store = ModelStore("run", root=tmp_path)
    fast = dict(n_trials=1, max_trees=10, early_stopping=5, num_threads=1, progress=False)
    models = fit_client_models(nsplits, store, **fast)
    assert set(models.rankers) == {(s, m) for s in ("Split1", "Split2", "Split3")
                                   for m in ("M1", "M2", "M_full")}
    # DS2' of Split2 equals Split1's (both category 11): reused, still stored per split.
    assert models.reused == {("Split2", "M2"): ("Split1", "M2")}
    assert {k for k in store.keys()} == {("full", "M_full")} | {
        (s, m) for s in ("Split1", "Split2", "Split3") for m in ("M1", "M2")}
    assert models.rankers[("Split1", "M_full")] is models.rankers[("Split3", "M_full")]

    def no_training(*a, **k):
        raise AssertionError("everything is stored: nothing may train")

    monkeypatch.setattr(tuning_mod, "train_ranker", no_training)
    again = fit_client_models(nsplits, store, splits="Split3,Split1", **fast)
    assert list(again.tests) == ["Split3", "Split1"]

    per_query = client_results(again)
    table = client_table(per_query, baseline=None)
    assert list(table.columns) == ["DS1", "DS2'", "DS"]
    assert list(table.index)[:3] == [("Split3", "M1"), ("Split3", "M2"), ("Split3", "M_full")]
    flat = client_metrics(again, per_query)
    assert flat["Split1_M_full_DS_ndcg10"] == pytest.approx(table.loc[("Split1", "M_full"), "DS"])
    assert "Split1_M2_DS2p_ndcg10" in flat and flat["Split3_M1_trees"] >= 1
    with pytest.raises(ValueError, match="Split9"):
        fit_client_models(nsplits, store, splits="Split9", **fast)


def test_setup_key_missing_on_one_side_is_named(tmp_path):
    # A key stored as None and absent now is still a different setup, and the message says
    # which key it is.
    path = tmp_path / "optuna.journal"
    run = dict(n_trials=1, study_name="s", storage=path, seed=0, progress=False)
    study = optuna.create_study(study_name="s", storage=tuning_mod.study_storage(path))
    study.set_user_attr("setup", {"a": None, "b": 1})
    with pytest.raises(ValueError, match=r"differs in \['a'\].*<absent>"):
        tuning_mod._run_study(lambda trial: 0.0, setup={"b": 1}, **run)
