"""A LightGBM fit that resumes (`train_ranker`'s ``checkpoint``, `ltrlib.train.tuning.fit_checkpoint`):
cut off by an interrupt, it continues from its checkpoint to the uninterrupted fit's trees,
curve, best iteration and saved model, to the bit."""

import contextlib
import json

import lightgbm as lgb
import numpy as np
import optuna
import pytest

from ltrlib.data import load_dataset
from ltrlib.train import TrainSettings, TuningSettings, train_ranker, tune, tune_cv
from ltrlib.train.backends import lightgbm as lgb_backend
from ltrlib.train.tuning import fit_checkpoint
from ltrlib.train.tuning import rankers as tuning_rankers

# The curve peaks early at this learning rate, so early stopping ends the fit well before
# max_trees, and where it ends depends on the best value seen before the cut.
SETTINGS = TrainSettings(max_trees=150, early_stopping=12, num_threads=1)
PARAMS = {"learning_rate": 0.3, "num_leaves": 15, "min_data_in_leaf": 10}


@pytest.fixture(scope="module")
def splits():
    return load_dataset("synthetic", scale="tiny", seed=0)


@pytest.fixture
def every_tree(monkeypatch):
    """A checkpoint after every tree (the default waits minutes)."""
    monkeypatch.setattr(lgb_backend, "CHECKPOINT_SECONDS", 0.0)


class Cut(KeyboardInterrupt):
    """Ctrl-C at a given tree."""


def _watching(at: int | None = None, seen: list | None = None):
    def monitor(trees, value):
        if seen is not None:
            seen.append((trees, value))
        if trees == at:
            raise Cut(f"cut at tree {trees}")

    return monitor


def _fit(splits, **kwargs):
    return train_ranker(splits.train, splits.vali, PARAMS, SETTINGS, **kwargs)


def test_a_fit_cut_off_resumes_to_the_uninterrupted_fit_bit_for_bit(tmp_path, splits, every_tree):
    whole_seen = []
    whole = _fit(splits, monitor=_watching(seen=whole_seen))
    assert whole.best_iteration + SETTINGS.early_stopping == len(whole.curve) < SETTINGS.max_trees
    # Cut after the best tree and before the stop: only a stopper that knows the best so far
    # stops where the uninterrupted fit stopped.
    at = whole.best_iteration + SETTINGS.early_stopping // 2
    path = tmp_path / "fit.json"
    with pytest.raises(Cut):
        _fit(splits, checkpoint=path, monitor=_watching(at=at))
    state = json.loads(path.read_text())
    assert state["trees"] == at - 1 and len(state["curve"]) == at - 1  # the last tree the cut let finish

    seen = []
    with predictions() as predicted:
        resumed = _fit(splits, checkpoint=path, monitor=_watching(seen=seen))
    assert predicted == []  # the checkpoint's kept scores stood in for the earlier trees' predictions
    assert not path.exists() and not lgb_backend._scores_path(path).exists()
    assert resumed.model.model_to_string() == whole.model.model_to_string()
    assert (resumed.best_iteration, resumed.curve) == (whole.best_iteration, whole.curve)
    assert seen == whole_seen  # a pruner sees the whole curve, the checkpoint's part first
    assert (resumed.score(splits.test) == whole.score(splits.test)).all()


@contextlib.contextmanager
def predictions():
    """The LightGBM predictions made meanwhile of an init model's trees (how LightGBM scores
    the data for continued training), each as its tree count."""
    made, predict = [], lgb.basic._InnerPredictor.predict

    def counted(self, *args, **kwargs):
        made.append(self.current_iteration())
        return predict(self, *args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(lgb.basic._InnerPredictor, "predict", counted)
        yield made


@pytest.mark.parametrize("scores", ["gone", "other trees", "other data"])
def test_a_resume_without_its_kept_scores_predicts_them_to_the_same_fit(tmp_path, splits, every_tree, scores):
    """Scores missing (a checkpoint carried to another machine by a study's mirror, which
    leaves the hidden scores file out), of another tree count (cut off between the two
    writes) or of other data (labels or queries) are predicted again, to the same fit."""
    whole = _fit(splits)
    path = tmp_path / "fit.json"
    with pytest.raises(Cut):
        _fit(splits, checkpoint=path, monitor=_watching(at=8))
    kept = lgb_backend._scores_path(path)
    assert kept.exists() and kept.name.startswith(".")
    if scores == "gone":
        kept.unlink()
    elif scores == "other data":
        with np.load(kept) as got:
            arrays = {name: got[name] for name in got.files}
        with open(kept, "wb") as f:
            np.savez(f, **{**arrays, "data": np.str_("another collection")})
    else:
        state = json.loads(path.read_text())
        path.write_text(json.dumps({**state, "trees": state["trees"] - 1, "curve": state["curve"][:-1],
                                    "model": lgb.Booster(model_str=state["model"]).model_to_string(
                                        num_iteration=state["trees"] - 1)}))
    trees = json.loads(path.read_text())["trees"]
    with predictions() as predicted:
        resumed = _fit(splits, checkpoint=path)
    assert predicted == [trees, trees]  # the training and the validation data, as before
    assert resumed.model.model_to_string() == whole.model.model_to_string()
    assert (resumed.best_iteration, resumed.curve) == (whole.best_iteration, whole.curve)


def test_a_fit_ended_otherwise_than_by_an_interrupt_leaves_no_checkpoint(tmp_path, splits, every_tree):
    path = tmp_path / "fit.json"

    def prune(trees, value):
        if trees == 5:
            raise optuna.TrialPruned()

    with pytest.raises(optuna.TrialPruned):
        _fit(splits, checkpoint=path, monitor=prune)
    assert not path.exists()
    _fit(splits, checkpoint=path)
    assert not path.exists()


def test_a_file_that_is_no_checkpoint_of_this_fit_is_refused_by_path(tmp_path, splits):
    path = tmp_path / "fit.json"
    path.write_text("{not json")
    with pytest.raises(ValueError, match=r"fit\.json: not a LightGBM fit checkpoint"):
        _fit(splits, checkpoint=path)
    path.write_text(json.dumps({"trees": 400, "curve": [0.5] * 400, "model": ""}))
    with pytest.raises(ValueError, match=r"fit\.json: a checkpoint of 400 trees .* at most 150 trees"):
        _fit(splits, checkpoint=path)
    assert path.exists()  # the user's file is left for them to look at


def test_only_an_in_process_lightgbm_fit_takes_a_checkpoint(tmp_path, splits):
    with pytest.raises(ValueError, match="checkpoint resumes LightGBM fits .* not backend='xgboost'"):
        train_ranker(splits.train, splits.vali, {}, SETTINGS.replace(backend="xgboost"), checkpoint=tmp_path / "x")


def test_a_tuning_trial_cut_off_resumes_its_fit_and_the_study_equals_an_uninterrupted_one(
        tmp_path, splits, every_tree, monkeypatch):
    settings = TrainSettings(max_trees=60, early_stopping=10, num_threads=1)
    budget = TuningSettings(n_trials=3, progress=False, prune=False)
    whole = tune(splits.train, splits.vali, tuning=budget.replace(storage=tmp_path / "whole.journal"),
                 study_name="s", settings=settings)

    journal = tmp_path / "cut" / "optuna.journal"
    real, calls = tuning_rankers.train_ranker, []

    def cut_in_the_second_trial(*args, **kwargs):
        calls.append(kwargs["checkpoint"])
        if len(calls) == 2:
            kwargs["monitor"] = _watching(at=20)
        return real(*args, **kwargs)

    monkeypatch.setattr(tuning_rankers, "train_ranker", cut_in_the_second_trial)
    with pytest.raises(Cut):
        tune(splits.train, splits.vali, tuning=budget.replace(storage=journal), study_name="s", settings=settings)
    assert calls[1].parent == journal.with_name("optuna.journal.fits") and calls[1].exists()
    read, found = lgb_backend._read_checkpoint, []
    monkeypatch.setattr(lgb_backend, "_read_checkpoint", lambda *a: found.append(read(*a)) or found[-1])
    resumed = tune(splits.train, splits.vali, tuning=budget.replace(storage=journal), study_name="s",
                   settings=settings)
    assert calls[2] == calls[1] and not calls[1].exists()  # the same point found its checkpoint
    assert [None if f is None else f["trees"] for f in found] == [19, None]  # and went on from tree 20
    assert list(journal.with_name("optuna.journal.fits").iterdir()) == []
    # The cut trial was failed and its point run again under the next number.
    assert resumed.trials.number.tolist() == [0, 2, 3]
    columns = ["trial", "value", "learning_rate", "num_leaves", "min_data_in_leaf", "min_sum_hessian_in_leaf",
               "best_iteration", "trees"]
    assert resumed.trials[columns].to_dict("records") == whole.trials[columns].to_dict("records")


def test_a_cross_validated_trial_cut_off_resumes_the_fold_it_was_in(tmp_path, splits, every_tree, monkeypatch):
    settings = TrainSettings(max_trees=40, early_stopping=10, num_threads=1)
    budget = TuningSettings(n_trials=2, progress=False, prune=False)
    whole = tune_cv(splits.train, 3, tuning=budget.replace(storage=tmp_path / "whole.journal"), study_name="cv",
                    settings=settings)
    journal = tmp_path / "cut" / "optuna.journal"
    real, calls = tuning_rankers.train_ranker, []

    def cut_in_the_second_trials_second_fold(*args, **kwargs):
        calls.append(kwargs["checkpoint"])
        if len(calls) == 3 + 2:
            kwargs["monitor"] = _watching(at=15)
        return real(*args, **kwargs)

    monkeypatch.setattr(tuning_rankers, "train_ranker", cut_in_the_second_trials_second_fold)
    with pytest.raises(Cut):
        tune_cv(splits.train, 3, tuning=budget.replace(storage=journal), study_name="cv", settings=settings)
    assert calls[4].name.startswith("cv.fold1-") and calls[4].exists()
    read, found = lgb_backend._read_checkpoint, []
    monkeypatch.setattr(lgb_backend, "_read_checkpoint", lambda *a: found.append(read(*a)) or found[-1])
    resumed = tune_cv(splits.train, 3, tuning=budget.replace(storage=journal), study_name="cv", settings=settings)
    assert [None if f is None else f["trees"] for f in found] == [None, 14, None]  # fold 0 again, fold 1 resumed
    assert list(journal.with_name("optuna.journal.fits").iterdir()) == []
    columns = ["trial", "value", "learning_rate", "num_leaves", "best_iteration", "trees"]
    assert resumed.trials[columns].to_dict("records") == whole.trials[columns].to_dict("records")


def test_the_checkpoint_is_named_by_the_study_setup_and_point_beside_a_journal_only(tmp_path):
    where = fit_checkpoint(tmp_path / "optuna.journal", "full.M_full", {"seed": 0}, {"num_leaves": 31})
    assert where.parent == tmp_path / "optuna.journal.fits" and where.name.startswith("full.M_full-")
    assert where != fit_checkpoint(tmp_path / "optuna.journal", "full.M_full", {"seed": 1}, {"num_leaves": 31})
    assert where != fit_checkpoint(tmp_path / "optuna.journal", "full.M_full", {"seed": 0}, {"num_leaves": 32})
    assert fit_checkpoint(None, "s", {}, {}) is None
    assert fit_checkpoint("postgresql://u@h:5432/db", "s", {}, {}) is None
