"""ltrlib.train.tuning: the paper's search space, resumable studies, CV tuning."""

import numpy as np
import optuna
import pytest
from optuna.distributions import CategoricalDistribution, IntDistribution

from ltrlib.data import load_dataset
from ltrlib.train import ModelStore, TrainSettings, TuningSettings, fit_tuned, tune, tune_cv, tuned_parameters
from ltrlib.train import tuning as tuning_mod
from ltrlib.train.tuning import rankers as tuning_rankers

# Quick trials: few trees. The search space is the paper's, whatever the limits.
QUICK = TrainSettings(max_trees=25, early_stopping=5, num_threads=1)
FAST = dict(settings=QUICK)


def quiet(n_trials, **changes):
    """A budget of ``n_trials`` trials without a progress bar (``changes``: other fields)."""
    return TuningSettings(n_trials=n_trials, progress=False, **changes)


@pytest.fixture(scope="module")
def splits():
    return load_dataset("synthetic", scale="tiny", seed=0)


def _journal_trials(path, name):
    study = optuna.load_study(study_name=name, storage=tuning_mod.study_storage(path))
    return study.get_trials(deepcopy=False)


def test_search_space_is_the_papers(tmp_path, splits):
    path = tmp_path / "optuna.journal"
    tune(splits.train, splits.vali, tuning=quiet(3, storage=path), study_name="s", **FAST)
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
    res = tune(splits.train, splits.vali, tuning=quiet(2), **FAST)
    assert res.ranker is not None
    assert res.ranker.best_score == pytest.approx(res.best_value, abs=1e-9)
    for k, v in res.best_params.items():
        assert res.ranker.params[k] == v
    assert res.best_iteration == res.ranker.best_iteration


def test_interrupted_study_resumes_and_finished_one_is_reused(tmp_path, splits):
    path = tmp_path / "optuna.journal"
    first = tune(splits.train, splits.vali, tuning=quiet(2, storage=path), study_name="Split1.M1", **FAST)
    assert first.n_new == 2 and first.n_trials == 2
    more = tune(splits.train, splits.vali, tuning=quiet(4, storage=path), study_name="Split1.M1", **FAST)
    assert more.n_new == 2 and more.n_trials == 4
    assert len(_journal_trials(path, "Split1.M1")) == 4
    again = tune(splits.train, splits.vali, tuning=quiet(4, storage=path), study_name="Split1.M1", **FAST)
    assert again.n_new == 0 and again.ranker is None
    assert again.best_params == more.best_params and again.best_value == more.best_value
    # Another study in the same file is independent.
    other = tune(splits.train, splits.vali, tuning=quiet(1, storage=path), study_name="Split1.M2", **FAST)
    assert other.n_new == 1


def test_resumed_study_equals_uninterrupted_one(tmp_path, splits):
    a = tmp_path / "a.journal"
    tune(splits.train, splits.vali, tuning=quiet(2, storage=a), study_name="s", **FAST)
    resumed = tune(splits.train, splits.vali, tuning=quiet(4, storage=a), study_name="s", **FAST)
    straight = tune(splits.train, splits.vali, tuning=quiet(4, storage=tmp_path / "b.journal"), study_name="s",
                    **FAST)
    cols = ["value", "learning_rate", "num_leaves", "min_data_in_leaf", "min_sum_hessian_in_leaf"]
    assert resumed.trials[cols].equals(straight.trials[cols])
    # Fewer trials than stored: the first n, as a fresh study of n trials would give.
    fewer = tune(splits.train, splits.vali, tuning=quiet(2, storage=a), study_name="s", **FAST)
    assert fewer.n_new == 0 and fewer.trials[cols].equals(straight.trials[cols].iloc[:2])


def test_running_trial_left_by_a_crash_is_failed_and_redone(tmp_path, splits):
    path = tmp_path / "optuna.journal"
    tune(splits.train, splits.vali, tuning=quiet(1, storage=path), study_name="s", **FAST)
    study = optuna.load_study(study_name="s", storage=tuning_mod.study_storage(path))
    study.ask()  # a trial that never finished
    res = tune(splits.train, splits.vali, tuning=quiet(2, storage=path), study_name="s", **FAST)
    assert res.n_new == 1 and res.n_trials == 2
    states = [t.state for t in _journal_trials(path, "s")]
    assert states.count(optuna.trial.TrialState.FAIL) == 1
    # Finished = completed or pruned: the pruner may stop the second trial.
    TS = optuna.trial.TrialState
    assert states.count(TS.COMPLETE) + states.count(TS.PRUNED) == 2


def test_study_on_other_data_is_refused(tmp_path, splits):
    path = tmp_path / "optuna.journal"
    tune(splits.train, splits.vali, tuning=quiet(1, storage=path), study_name="s", **FAST)
    with pytest.raises(ValueError, match=r"another setup.*train"):
        tune(splits.train.take(np.arange(100)), splits.vali, tuning=quiet(1, storage=path), study_name="s", **FAST)


def test_fit_tuned_stores_and_then_reuses(tmp_path, splits, monkeypatch):
    store = ModelStore("run", root=tmp_path)
    ranker, res = fit_tuned(splits.train, splits.vali, store=store, split="Split1", name="M1",
                            tuning=quiet(2), **FAST)
    assert (tmp_path / "run" / "optuna.journal").exists() and store.exists("Split1", "M1")
    side = store.info("Split1", "M1")
    assert side["info"]["tuning"]["study"] == "Split1.M1"
    assert side["info"]["tuning"]["best_value"] == pytest.approx(res.best_value)

    def no_training(*a, **k):
        raise AssertionError("a finished study with a stored model must not train")

    monkeypatch.setattr(tuning_rankers, "train_ranker", no_training)
    again, res2 = fit_tuned(splits.train, splits.vali, store=store, split="Split1", name="M1",
                            tuning=quiet(2), **FAST)
    assert res2.n_new == 0
    assert np.array_equal(again.score(splits.test), ranker.score(splits.test))
    monkeypatch.undo()
    # Model file lost but study finished: retrained with the best params, same model.
    store.path("Split1", "M1").unlink()
    third, res3 = fit_tuned(splits.train, splits.vali, store=store, split="Split1", name="M1",
                            tuning=quiet(2), **FAST)
    assert res3.n_new == 0
    assert np.array_equal(third.score(splits.test), ranker.score(splits.test))
    table = tuned_parameters({("Split1", "M1"): third})
    assert table.loc[0, "trees"] == third.best_iteration
    assert table.loc[0, "learning_rate"] == res.best_params["learning_rate"]


def test_tune_cv_runs_k_folds(tmp_path, splits):
    res = tune_cv(splits.train, 3, tuning=quiet(2, storage=tmp_path / "cv.journal"), **FAST)
    trials = _journal_trials(tmp_path / "cv.journal", "tuning-cv")
    assert trials[0].state == optuna.trial.TrialState.COMPLETE  # the pruner needs one first
    for t in trials:
        if t.state != optuna.trial.TrialState.COMPLETE:
            continue
        folds = t.user_attrs["fold_values"]
        assert len(folds) == 3 and len(t.user_attrs["fold_iterations"]) == 3
        assert t.value == pytest.approx(np.mean(folds))
    assert res.n_trials == 2 and res.best_iteration >= 1
    with pytest.raises(ValueError, match="n_folds"):
        tune_cv(splits.train, 1, tuning=quiet(1), **FAST)


@pytest.mark.parametrize("kwargs, match", [
    (dict(params={"num_leaves": 31}), "tuned"),
    (dict(settings=QUICK.replace(backend="xgb")), "unknown backend"),
])
def test_bad_arguments(splits, kwargs, match):
    with pytest.raises(ValueError, match=match):
        tune(splits.train, splits.vali, **{**FAST, "tuning": quiet(1), **kwargs})


def test_a_search_takes_its_budget_as_one_value(splits):
    # The loose arguments of before are gone: each names the one argument that holds it now.
    for loose in (dict(n_trials=2), dict(prune=False), dict(storage=None), dict(progress=False)):
        with pytest.raises(TypeError, match=list(loose)[0]):
            tune(splits.train, splits.vali, **loose, **FAST)
    with pytest.raises(TypeError, match="tuning must be a TuningSettings.*dict"):
        tuning_mod.run_study(lambda trial, monitor: 0.0, {"n_trials": 1}, study_name="s", seed=0, setup={})
    # A search without a pruner refuses a budget that asks for pruning, rather than ignore it.
    with pytest.raises(ValueError, match="tuning.prune"):
        tuning_mod.run_study(lambda trial, monitor: 0.0, quiet(1), study_name="s", seed=0, setup={})


def test_first_params_is_trial_zero_even_after_a_crash(tmp_path, splits):
    from ltrlib.train import PAPER_TABLE6_MEDIAN

    path = tmp_path / "optuna.journal"
    study = optuna.create_study(study_name="s", storage=tuning_mod.study_storage(path),
                                direction="maximize")
    study.ask()  # the first trial was interrupted
    res = tune(splits.train, splits.vali, tuning=quiet(2, storage=path, first_params=PAPER_TABLE6_MEDIAN),
               study_name="s", **FAST)
    first = res.trials.iloc[0]
    assert {k: first[k] for k in PAPER_TABLE6_MEDIAN} == PAPER_TABLE6_MEDIAN
    assert res.trials.iloc[1]["num_leaves"] != 180 or res.trials.iloc[1]["learning_rate"] != 0.05
    with pytest.raises(ValueError, match="min_data_in_leaf"):
        tune(splits.train, splits.vali, tuning=quiet(1, first_params={**PAPER_TABLE6_MEDIAN, "min_data_in_leaf": 62}),
             **FAST)


def test_setup_key_missing_on_one_side_is_named(tmp_path):
    # A key stored as None and absent now is still a different setup, and the message says
    # which key it is.
    path = tmp_path / "optuna.journal"
    run = dict(study_name="s", seed=0)
    study = optuna.create_study(study_name="s", storage=tuning_mod.study_storage(path))
    study.set_user_attr("setup", {"a": None, "b": 1})
    with pytest.raises(ValueError, match=r"differs in \['a'\].*<absent>"):
        tuning_mod.run_study(lambda trial, monitor: 0.0, quiet(1, storage=path, prune=False), setup={"b": 1}, **run)


# --------------------------------------------------------------------------- cheap trials


def _queued_study(path, *points):
    study = optuna.create_study(study_name="s", storage=tuning_mod.study_storage(path),
                                direction="maximize")
    for p in points:
        study.enqueue_trial(p)


def test_absurd_learning_rate_is_pruned_against_the_enqueued_start(tmp_path, splits):
    from ltrlib.train import PAPER_TABLE6_MEDIAN

    absurd = {**PAPER_TABLE6_MEDIAN, "learning_rate": 0.0001}
    patience = 20
    limits = dict(settings=TrainSettings(max_trees=60, early_stopping=patience, num_threads=1))
    _queued_study(tmp_path / "a.journal", PAPER_TABLE6_MEDIAN, absurd)
    res = tune(splits.train, splits.vali, tuning=quiet(2, storage=tmp_path / "a.journal"), study_name="s", **limits)
    assert list(res.trials.state) == ["complete", "pruned"]
    assert res.trials.learning_rate.tolist() == [0.05, 0.0001]
    pruned = res.trials.iloc[1]
    # Pruned at the first check after the warm-up (half the patience), when the start's curve
    # has passed the absurd trial's best.
    assert pruned.pruned_at == patience // 2 and pruned.trees == patience // 2 and np.isnan(pruned.value)
    assert res.best_trial == 0
    assert res.trials.best_so_far.tolist() == [res.best_value] * 2
    # Without pruning the same trial runs on until early stopping ends it.
    _queued_study(tmp_path / "b.journal", PAPER_TABLE6_MEDIAN, absurd)
    full = tune(splits.train, splits.vali, tuning=quiet(2, storage=tmp_path / "b.journal", prune=False),
                study_name="s", **limits)
    assert list(full.trials.state) == ["complete", "complete"]
    assert full.trials.trees.iloc[1] > patience
    assert full.trials.value.iloc[1] < full.trials.value.iloc[0]
    # The pruning rule is part of the study's setup: no silent resumption without it.
    with pytest.raises(ValueError, match="pruning"):
        tune(splits.train, splits.vali, tuning=quiet(2, storage=tmp_path / "a.journal", prune=False),
             study_name="s", **limits)


def test_enqueued_start_is_trial_zero_and_the_best_never_worse(splits):
    from ltrlib.train import PAPER_TABLE6_MEDIAN

    res = tune(splits.train, splits.vali,
               tuning=quiet(4, first_params=PAPER_TABLE6_MEDIAN, storage=optuna.storages.InMemoryStorage()), **FAST)
    first = res.trials.iloc[0]
    assert first.number == 0 and first.state == "complete"
    assert {k: first[k] for k in PAPER_TABLE6_MEDIAN} == PAPER_TABLE6_MEDIAN
    assert res.n_trials == 4 and set(res.trials.state) <= {"complete", "pruned"}
    assert res.best_value >= first.value
    assert res.trials.best_so_far.is_monotonic_increasing
    assert res.trials.best_so_far.iloc[0] == first.value


def test_trials_share_one_binned_lightgbm_dataset(splits, monkeypatch):
    import lightgbm as lgb

    built = []
    lazy_init = lgb.Dataset._lazy_init

    def counting(self, *a, **k):
        built.append(self)
        return lazy_init(self, *a, **k)

    monkeypatch.setattr(lgb.Dataset, "_lazy_init", counting)
    res = tune(splits.train, splits.vali, tuning=quiet(3, prune=False), **FAST)
    assert res.n_trials == 3
    # Binned once: the training set and the validation set (with reference=), for 3 trials.
    assert len(built) == 2 and built[1].reference is built[0]
    assert built[0].free_raw_data is False


def test_trials_share_one_xgboost_dmatrix(splits, monkeypatch):
    from ltrlib.train.backends import xgboost as xgboost_backend

    calls = []
    dmatrix = xgboost_backend.dmatrix
    monkeypatch.setattr(xgboost_backend, "dmatrix", lambda *a, **k: calls.append(a[0]) or dmatrix(*a, **k))
    res = tune(splits.train, splits.vali, tuning=quiet(3), settings=QUICK.replace(backend="xgboost"))
    assert res.n_trials == 3
    assert calls == [splits.train, splits.vali]


def test_cv_trials_are_pruned_per_fold_and_share_binned_folds(tmp_path, splits, monkeypatch):
    from ltrlib.train import PAPER_TABLE6_MEDIAN

    absurd = {**PAPER_TABLE6_MEDIAN, "learning_rate": 0.0001}
    _queued_study(tmp_path / "cv.journal", PAPER_TABLE6_MEDIAN, absurd, PAPER_TABLE6_MEDIAN)
    import lightgbm as lgb

    built = []
    lazy_init = lgb.Dataset._lazy_init
    monkeypatch.setattr(lgb.Dataset, "_lazy_init",
                        lambda self, *a, **k: built.append(self) or lazy_init(self, *a, **k))
    reports = []
    report = optuna.trial.Trial.report
    monkeypatch.setattr(optuna.trial.Trial, "report",
                        lambda self, v, step: reports.append((self.number, step)) or report(self, v, step))
    res = tune_cv(splits.train, 2, tuning=quiet(3, storage=tmp_path / "cv.journal"), study_name="s",
                  settings=TrainSettings(max_trees=40, early_stopping=10, num_threads=1))
    assert list(res.trials.state) == ["complete", "pruned", "complete"]
    # Fold f reports at steps f * max_trees + trees: both folds of trial 0 are reported.
    steps0 = [s for n, s in reports if n == 0]
    assert min(steps0) == 5 and max(steps0) > 40
    assert [s for n, s in reports if n == 1] == [5]
    assert len(built) == 4  # each fold's training and held-out part, once for all trials


def test_monitor_sees_the_curve_and_can_stop_training(splits):
    from ltrlib.train import train_ranker

    seen = []
    r = train_ranker(splits.train, splits.vali, {"learning_rate": 0.1}, max_trees=15,
                     early_stopping=100, num_threads=1, monitor=lambda t, v: seen.append((t, v)))
    assert [t for t, _ in seen] == list(range(1, 16))
    assert [v for _, v in seen] == pytest.approx(r.curve)

    class Stop(Exception):
        pass

    def stop_at_5(trees, value):
        if trees == 5:
            raise Stop

    for backend in ("lightgbm", "xgboost"):
        with pytest.raises(Stop):
            train_ranker(splits.train, splits.vali, max_trees=15, num_threads=1, backend=backend,
                         monitor=stop_at_5)
    with pytest.raises(ValueError, match="cache holds other data"):
        from ltrlib.train.backends.base import DataCache

        train_ranker(splits.train, splits.vali, cache=DataCache(splits.train, splits.test))


def test_the_best_model_is_kept_once_for_every_search_and_only_when_trained_here(tmp_path):
    # One keeper for the three searches (trees, pair models, networks): the objective hands
    # back (value, model); the result holds the study's best model when this call trained it.
    values = {0: 0.2, 1: 0.9, 2: 0.9, 3: 0.5}

    def objective(trial, monitor):
        return values[trial.number], f"model of trial {trial.number}"

    journal = tmp_path / "keep.journal"
    run = dict(study_name="keep", seed=0, setup={}, searched=())
    budget = quiet(2, storage=journal, prune=False)
    first = tuning_mod.run_study(objective, budget, keep_best=True, **run)
    assert first.best_trial == 1 and first.ranker == "model of trial 1"
    # Resumed: trial 2 ties trial 1 (the earliest of equals stays the best), and trial 1 was
    # trained by the first call, so this one has no model to hand back.
    resumed = tuning_mod.run_study(objective, budget.replace(n_trials=3), keep_best=True, **run)
    assert resumed.best_trial == 1 and resumed.ranker is None
    plain = tuning_mod.run_study(lambda trial, monitor: values[trial.number], budget.replace(n_trials=1),
                                 **{**run, "study_name": "plain"})
    assert plain.ranker is None


# --------------------------------------------------------------------------- torn journals


def _journal_with_trials(path, n: int = 4):
    from ltrlib.train.tuning import study_storage

    study = optuna.create_study(storage=study_storage(path), study_name="s")
    study.optimize(lambda t: t.suggest_float("x", 0, 1), n_trials=n)
    return path.read_bytes()


@pytest.mark.parametrize("tear", ["cut mid-record", "a block of zeros"])
def test_a_torn_last_record_is_cut_kept_beside_and_the_study_resumes(tmp_path, tear):
    from ltrlib.train.tuning import study_storage

    path = tmp_path / "optuna.journal"
    whole = _journal_with_trials(path)
    # A power cut mid-write: the last record half written, or written as zeros.
    torn = whole[:-25] if tear == "cut mid-record" else whole + b"\0" * 40 + b"\n"
    path.write_bytes(torn)
    with pytest.warns(UserWarning, match=r"optuna.journal: its last record was cut short .* kept in .*torn-"):
        study = optuna.load_study(storage=study_storage(path), study_name="s")
    kept = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    assert len(kept) == (3 if tear == "cut mid-record" else 4)
    backup, = tmp_path.glob("optuna.journal.torn-*")
    assert torn == path.read_bytes() + backup.read_bytes()  # nothing lost: the cut part is beside it
    study.optimize(lambda t: t.suggest_float("x", 0, 1), n_trials=2)  # resumes, and reads back
    assert len(optuna.load_study(storage=study_storage(path), study_name="s").trials) == len(study.trials)


def test_a_journal_damaged_before_its_last_record_is_refused_by_path_and_line(tmp_path):
    from ltrlib.train.tuning import study_storage
    from ltrlib.train.tuning.storage import JournalDamaged

    path = tmp_path / "optuna.journal"
    lines = _journal_with_trials(path).split(b"\n")
    lines[2] = lines[2][:20]
    path.write_bytes(b"\n".join(lines))
    damaged = path.read_bytes()
    with pytest.raises(JournalDamaged, match=r"optuna.journal: line 3 is not a journal record"):
        study_storage(path)
    assert path.read_bytes() == damaged and sorted(p.name for p in tmp_path.iterdir()) == ["optuna.journal"]


def test_a_whole_journal_is_left_as_it_is(tmp_path, recwarn):
    from ltrlib.train.tuning import study_storage

    path = tmp_path / "optuna.journal"
    whole = _journal_with_trials(path)
    study_storage(path)
    assert path.read_bytes() == whole and not [w for w in recwarn if "journal" in str(w.message)]
