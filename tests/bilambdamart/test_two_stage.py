"""Two-stage data: top-k cut, full-list ideal DCG, the stage-2 evaluation, the cache."""

import math

import numpy as np
import pytest

from ltrlib.bilambdamart import two_stage
from ltrlib.bilambdamart.two_stage import STAGE1_SETTINGS, build_two_stage, table1, top_k_mask
from ltrlib.data import Dataset, Splits
from ltrlib.metrics import ideal_dcg, ndcg

# Stage 1 of the fixtures: few trees, NDCG@20 as stage 1 always early-stops on, one thread.
QUICK_STAGE1 = STAGE1_SETTINGS.replace(max_trees=40, early_stopping=5)


def test_full_list_ideal_dcg_counts_lost_documents():
    # One query of 5 documents; stage 1 keeps its top 2 and misses a label-2 document.
    y = np.array([2, 0, 1, 0, 2])
    stage1 = np.array([0.9, 0.8, 0.1, 0.0, -1.0])
    keep = top_k_mask(stage1, [0, 5], 2)
    np.testing.assert_array_equal(keep, [True, True, False, False, False])
    full = ideal_dcg(y, [0, 5], 2)
    assert full[0] == pytest.approx(3 + 3 / np.log2(3))
    # Perfect re-ranking of the kept documents is not NDCG 1 against the full list.
    kept_y, s2 = y[keep], np.array([1.0, 0.0])
    assert ndcg(kept_y, s2, [0, 2], 2)[0] == pytest.approx(1.0)
    assert ndcg(kept_y, s2, [0, 2], 2, ideal_dcg=full)[0] == pytest.approx(3 / full[0])


@pytest.fixture(scope="module")
def two(tmp_path_factory):
    from ltrlib.data import make_synthetic

    splits = make_synthetic("tiny", 0)
    cache = tmp_path_factory.mktemp("cache")
    params = {"learning_rate": 0.2, "num_leaves": 15, "min_data_in_leaf": 20}
    return splits, cache, params, build_two_stage(splits, folds=2, top_k=20, params=params,
                                                  settings=QUICK_STAGE1, cache_dir=cache)


@pytest.fixture(scope="module")
def rows40(two):
    """Stage 2 of `two` on 40 training queries at NDCG@5, one thread: the rows the module's
    stage-2 fits train on, binned once; each test trains them its own way
    (`Stage2Experiment.with_settings`)."""
    from ltrlib.bilambdamart import experiment
    from ltrlib.train import TrainSettings

    return experiment.Stage2Experiment(two[3], train_queries=40, settings=TrainSettings(
        max_trees=8, early_stopping=3, eval_at=5, num_threads=1))


def test_stage2_lists_and_normalisers(two):
    splits, _, _, ts = two
    for part in ("train", "vali", "test"):
        full, s2 = getattr(splits, part), ts.part(part)
        assert s2.n_queries == full.n_queries
        np.testing.assert_array_equal(s2.group_sizes, np.minimum(full.group_sizes, 20))
        assert s2.feature_names[-1] == "stage1_score"
        for k in (1, 5, 20):
            np.testing.assert_allclose(ts.ideal(part, k), ideal_dcg(full.y, full.offsets, k))
            assert np.all(ts.ideal(part, k) >= ideal_dcg(s2.y, s2.offsets, k) - 1e-12)
    with pytest.raises(ValueError, match="cutoffs"):
        ts.ideal("test", 7)


def test_stage1_ranking_evaluated_at_stage2_equals_full_list_ndcg(two):
    # The first row of Table 2: the stage-1 score ranks the kept top-20 exactly as it ranks
    # the full list's first 20, so NDCG@k (k <= 20) against the full-list IDCG must equal
    # the full-list NDCG@k recomputed from the stage-1 scores.
    splits, cache, params, ts = two
    full, s2 = splits.test, ts.part("test")
    cached = two_stage._load(next(cache.glob("bivariate/*.npz")))
    for k in (1, 5, 10, 20):
        at_stage2 = ndcg(s2.y, s2.X[:, -1], s2.offsets, k, ideal_dcg=ts.ideal("test", k))
        at_stage1 = ndcg(full.y, cached["score_test"], full.offsets, k)
        np.testing.assert_allclose(at_stage2, at_stage1, rtol=1e-12)


def test_cache_is_reused_and_settings_change_the_key(two, monkeypatch):
    splits, cache, params, ts = two

    def boom(*a, **k):
        raise AssertionError("stage 1 retrained despite a cached entry")

    monkeypatch.setattr(two_stage, "_stage1_scores", boom)
    again = build_two_stage(splits, folds=2, params=params, settings=QUICK_STAGE1.replace(num_threads=2),
                            cache_dir=cache, n_features=5, keep_features=())
    np.testing.assert_array_equal(again.part("train").X[:, -1], ts.part("train").X[:, -1])
    assert again.part("train").n_features == 6
    with pytest.raises(AssertionError, match="retrained"):
        build_two_stage(splits, folds=3, params=params, settings=QUICK_STAGE1, cache_dir=cache)
    with pytest.raises(AssertionError, match="retrained"):
        build_two_stage(splits, folds=2, params=params, settings=QUICK_STAGE1.replace(eval_at=10),
                        cache_dir=cache)
    with pytest.raises(AssertionError, match="retrained"):
        build_two_stage(splits, folds=2, params=params, settings=QUICK_STAGE1, cache_dir=cache,
                        fold_streams="seed + part")


def test_spawned_fold_streams_are_shared_by_no_two_run_seeds():
    """Issue 41: the ledger study's seeds 0-4 draw their folds from 15 distinct streams. The
    studies' registered scheme, kept for their remaining seeds, does share one between run
    seeds s and s + 1: the reason it is not the default."""
    spawned = [s for seed in range(5) for s in two_stage._fold_seeds(seed, "spawned")]
    assert len(set(spawned)) == len(spawned) == 15
    assert two_stage._fold_seeds(3, "spawned") == two_stage._fold_seeds(3, "spawned")
    registered = [set(two_stage._fold_seeds(seed, "seed + part")) for seed in (0, 1)]
    assert registered[0] & registered[1] == {1, 2}


def test_gain_selection_keeps_the_pairwise_features(two):
    """The synthetic twin's host id has no univariate gain; the selection keeps it (and
    freshness) anyway, by default from the data's meta, or as named."""
    from ltrlib.data.synthetic import PAIRWISE_FEATURES

    splits, cache, params, _ = two
    quick = dict(folds=2, params=params, settings=QUICK_STAGE1, cache_dir=cache, n_features=3)
    names = build_two_stage(splits, **quick).part("train").feature_names
    assert set(PAIRWISE_FEATURES) <= set(names) and len(names) <= 3 + len(PAIRWISE_FEATURES) + 1
    by_gain = build_two_stage(splits, **quick, keep_features=()).part("train").feature_names
    assert len(by_gain) == 4 and not set(PAIRWISE_FEATURES) <= set(by_gain)
    assert "f7" in build_two_stage(splits, **quick, keep_features="f7").part("train").feature_names
    with pytest.raises(ValueError, match="f999"):
        build_two_stage(splits, **quick, keep_features=["f999"])


def test_table1_counts(two):
    _, _, _, ts = two
    t = table1(ts)
    m = ts.part("train").n_features
    assert list(t.partition) == ["train", "vali", "test"]
    assert set(t.stage2_features) == {5 * m} and set(t.pair_features) == {11 * m}
    sizes = ts.part("train").group_sizes
    assert t.stage2_pairs[0] == int((sizes * (sizes - 1)).sum())
    assert 0 < t.relevant_kept[0] <= 1


def test_errors_name_the_parameter():
    X = np.zeros((4, 2), dtype=np.float32)
    ds = Dataset(X, np.array([1, 0, 1, 0]), [1, 2], [0, 2, 4])
    with pytest.raises(ValueError, match="vali"):
        build_two_stage(Splits(ds, None, ds))
    with pytest.raises(ValueError, match="folds"):
        build_two_stage(Splits(ds, ds, ds), folds=3)
    with pytest.raises(ValueError, match="fold_streams"):
        build_two_stage(Splits(ds, ds, ds), folds=2, fold_streams="seed+1")
    with pytest.raises(ValueError, match="top_k"):
        top_k_mask([1.0], [0, 1], 0)


def test_stage2_experiment_with_and_without_listwise_features(two):
    from ltrlib.bilambdamart.experiment import MODELS, Stage2Experiment

    _, _, _, ts = two
    base = ts.part("train").n_features  # base features + the stage-1 score
    full = Stage2Experiment(ts, train_queries=50)
    bare = Stage2Experiment(ts, train_queries=50, listwise=False)
    assert full.parts["train"].n_features == 5 * base and bare.parts["train"].n_features == base
    assert full.n_diff == bare.n_diff == base
    assert bare.parts["train"].feature_names == ts.part("train").feature_names
    # Pairs: both documents' features (the query-level means and stds once) and the
    # differences over the base-plus-score columns.
    spec = MODELS["Bi-λMART"]
    assert len(full.rank_data("vali", spec).row_feature_names) == 5 * base + 3 * base + base
    assert len(bare.rank_data("vali", spec).row_feature_names) == 3 * base
    # The stage-1 row reads the stage-1 score from the same column either way.
    for exp in (full, bare):
        np.testing.assert_array_equal(exp.parts["test"].X[:, exp.n_diff - 1], ts.part("test").X[:, -1])


def test_unusable_cache_folder_degrades_to_a_warning(tmp_path, monkeypatch):
    # A cache folder under a file (or under a parent that cannot be searched) must not throw
    # away the stage-1 training: it warns and returns the result, uncached.
    from ltrlib.data import make_synthetic

    splits = make_synthetic("tiny", 0)
    fake = {p: np.linspace(0, 1, getattr(splits, p).n_docs) for p in ("train", "vali", "test")}
    monkeypatch.setattr(two_stage, "_stage1_scores",
                        lambda *a, **k: (fake, [1, 1], np.ones(splits.train.n_features)))
    (tmp_path / "afile").write_text("")
    with pytest.warns(RuntimeWarning, match="could not cache the stage-1 scores"):
        ts = build_two_stage(splits, folds=2, cache_dir=tmp_path / "afile" / "cache")
    assert np.isin(ts.part("test").X[:, -1], fake["test"].astype(np.float32)).all()
    assert not (tmp_path / "afile").is_dir()

    def denied(self, *a, **k):
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(two_stage.Path, "exists", denied)
    with pytest.warns(RuntimeWarning, match="cannot read the cache"):
        assert two_stage._load(tmp_path / "x.npz") is None


def test_a_point_lightgbm_cannot_train_fails_and_is_replaced(two, rows40, monkeypatch):
    """LightGBM's split check (its issue #4739) failing on a point fails that trial, with
    its message kept; another trial replaces it, so the model still gets its n_trials
    usable trials, and the summary counts the replacement."""
    lgb = pytest.importorskip("lightgbm")
    from ltrlib.bilambdamart import experiment

    _, _, _, ts = two
    exp = rows40.with_settings(hessian="exact")
    assert exp.train_queries == 40 and exp.settings.max_trees == 8
    real_fit, calls = exp.fit, []

    def flaky(spec, params, seed=None, monitor=None):
        calls.append(params)
        if len(calls) == 2:
            raise lgb.basic.LightGBMError("Check failed: (best_split_info.left_count) > (0) at x.cpp")
        return real_fit(spec, params, seed, monitor)

    monkeypatch.setattr(exp, "fit", _never_degenerate(flaky))
    fitted = experiment.fit_models(exp, ["Bi-λMART"], tuning=experiment.STAGE2_TUNING.replace(n_trials=3))
    trials = fitted["Bi-λMART"].tuning
    assert len(calls) == 4 and len(trials) == 3 and set(trials.state) == {"complete"}
    summary = experiment.tuning_summary(fitted).iloc[0]
    assert (summary.trials, summary.usable, summary.replaced, summary.replaced_lightgbm) == (3, 3, 1, 1)
    assert summary.why == "1 LightGBM could not train this point"
    assert fitted["Bi-λMART"].failures[0].startswith("LightGBM could not train this point: Check failed")
    assert fitted["Bi-λMART"].model.info["hessian"] == "exact"
    with pytest.raises(ValueError, match="hessian"):
        experiment.Stage2Experiment(ts, hessian="newton")


def _never_degenerate(fit, degenerate=()):
    """``fit`` whose models peak after their first tree, except at the calls numbered in
    ``degenerate`` (1-based), which peak at it: the tiny twin's own fits peak at tree 1 or
    not by chance."""
    from dataclasses import replace

    calls = []

    def wrapped(spec, params, seed=None, monitor=None):
        calls.append(params)
        model = fit(spec, params, seed, monitor)
        return replace(model, best_iteration=1 if len(calls) in degenerate else max(2, model.best_iteration))
    return wrapped


def test_a_trial_that_peaks_at_its_first_tree_is_replaced(rows40, monkeypatch):
    """A trial whose validation NDCG peaked at tree 1 measured one tree, not a model: it is
    replaced, with its reason; once the study's replacements (n_trials) are spent, one more
    is kept and counted as not usable."""
    from ltrlib.bilambdamart import experiment
    from ltrlib.train import TrainSettings

    exp = rows40.with_settings(TrainSettings(max_trees=6, early_stopping=3, eval_at=5, num_threads=1))
    real_fit = exp.fit
    monkeypatch.setattr(exp, "stage1_vali_ndcg", math.nan, raising=False)  # no tie with stage 1 by the tiny twin's chance
    monkeypatch.setattr(exp, "fit", _never_degenerate(real_fit, degenerate={2}))
    fitted = experiment.fit_models(exp, ["λMART*"], tuning=experiment.STAGE2_TUNING.replace(n_trials=2))
    summary = experiment.tuning_summary(fitted).iloc[0]
    assert (summary.trials, summary.usable, summary.replaced, summary.replaced_degenerate) == (2, 2, 1, 1)
    assert summary.why == f"1 {experiment.DEGENERATE}"
    assert fitted["λMART*"].failures[0].startswith("best at tree 1: validation NDCG@5 did not rise in the 3 trees")
    # The replaced trial's validation value is kept, and set against the kept best.
    (gave_up,) = fitted["λMART*"].replaced_values
    assert 0 <= gave_up <= 1 and summary.replaced_best == gave_up
    assert summary.replaced_above_kept == int(gave_up > fitted["λMART*"].vali_ndcg)
    # Every trial degenerate: two replaced (n_trials), then two kept, neither usable.
    monkeypatch.setattr(exp, "fit", _never_degenerate(real_fit, degenerate=set(range(1, 10))))
    fitted = experiment.fit_models(exp, ["λMART*"], tuning=experiment.STAGE2_TUNING.replace(n_trials=2),
                                   study_prefix="all")
    summary = experiment.tuning_summary(fitted).iloc[0]
    assert (summary.trials, summary.usable, summary.kept_degenerate, summary.replaced) == (2, 0, 2, 2)


def test_a_trial_that_ranks_as_stage_1_is_degenerate():
    """The second way a trial measures nothing: its kept model ties stage 1's validation
    NDCG (it ranks every list as stage 1 does); a tree-1 peak is the first way."""
    from types import SimpleNamespace

    from ltrlib.bilambdamart.experiment import DEGENERATE, STAGE1_TIE, _degenerate
    from ltrlib.train import TrainSettings

    exp = SimpleNamespace(settings=TrainSettings(max_trees=2000, early_stopping=30, eval_at=5), cutoff=5,
                          stage1_vali_ndcg=0.7266356952868929)
    at = SimpleNamespace(best_iteration=2)
    assert _degenerate(exp, at, 0.7266356952868929).startswith(f"{STAGE1_TIE}: validation NDCG@5 0.7266, stage 1's")
    assert _degenerate(exp, at, 0.7267) is None
    assert _degenerate(exp, SimpleNamespace(best_iteration=1), 0.74).startswith(DEGENERATE)


def test_a_zero_minimum_hessian_reaches_lightgbm_as_the_floor(rows40):
    """A minimum hessian of 0 (Bi-λMART, learning rate 0.005, 31 leaves, min data 5: the point
    LightGBM's split check once stopped on, 'left_count > 0' by tree 4 on the tiny twin of
    the time) reaches LightGBM as MIN_HESSIAN_FLOOR, and the model trains to its last tree.
    Today's twin no longer trips the check at that point even given 0 (every stage-2 row,
    one or two threads), so the floor is checked where it is applied: the parameters the
    model trained with. A failing point's replacement is tested with the failure injected
    (`test_a_point_lightgbm_cannot_train_fails_and_is_replaced`)."""
    from ltrlib.bilambdamart import experiment
    from ltrlib.train.backends import MIN_HESSIAN_FLOOR, lightgbm_params

    assert lightgbm_params({"min_sum_hessian_in_leaf": 0.0})["min_sum_hessian_in_leaf"] == MIN_HESSIAN_FLOOR
    assert lightgbm_params({"min_sum_hessian_in_leaf": 0.1, "x": 1}) == {"min_sum_hessian_in_leaf": 0.1, "x": 1}
    point = {"learning_rate": 0.005, "num_leaves": 31, "min_data_in_leaf": 5, "min_sum_hessian_in_leaf": 0.0}
    model = rows40.fit(experiment.MODELS["Bi-λMART"], point)
    assert model.info["trees_grown"] == rows40.settings.max_trees
    assert model.params["min_sum_hessian_in_leaf"] == MIN_HESSIAN_FLOOR


def test_open_settings_fixed_or_tuned_alike(two, rows40):
    """norm and truncation apply to the λRank models, the hessian to the pair models; a
    tuned one is a categorical dimension of their search, its first trial at our default,
    and the fitted model reports what it trained with."""
    from ltrlib.bilambdamart import experiment
    from ltrlib.train import TrainSettings

    _, _, _, ts = two
    quick = TrainSettings(max_trees=6, early_stopping=3, eval_at=5, num_threads=1)
    exp = rows40.with_settings(quick, norm="tuned", truncation="tuned", hessian="tuned")
    models = experiment.MODELS
    assert exp.open_choices(models["λMART*"]) == {"norm": ("on", "off"), "truncation": ("cutoff", "all")}
    assert set(exp.open_choices(models["Bi-λMART"])) == {"norm", "truncation", "hessian"}
    assert exp.open_choices(models["GBT_Softmax"]) == {}
    assert exp.open_choices(models["Bi-GBT_Softmax"]) == {"hessian": ("diagonal", "exact")}
    fitted = experiment.fit_models(exp, ["λMART", "Bi-λMART"], tuning=experiment.STAGE2_TUNING.replace(n_trials=2))
    trials = fitted["Bi-λMART"].tuning
    assert {"norm", "truncation", "hessian"} <= set(trials.columns)
    assert tuple(trials.loc[0, ["norm", "truncation", "hessian"]]) == ("on", "cutoff", "diagonal")
    screen = experiment.settings_screen(fitted)
    assert set(screen.setting[screen.model == "Bi-λMART"]) <= {"norm", "truncation", "hessian"}
    assert "hessian" not in set(screen.setting[screen.model == "λMART"])
    assert (screen.groupby(["model", "setting"]).trials.sum() == 2).all()  # every trial, once per setting
    assert experiment.settings_screen({}) is None  # nothing tuned: nothing to show or save
    table8 = experiment.tuned_table(fitted).set_index("model")
    assert table8.loc["Bi-λMART", "hessian"] in ("diagonal", "exact")
    assert table8.loc["λMART", "norm"] in ("on", "off") and table8.loc["λMART", "hessian"] == "-"
    # The chosen settings reach the learner.
    best = fitted["Bi-λMART"]
    assert best.model.info["norm"] == (best.params["norm"] == "on")
    assert best.model.info["truncation"] == (5 if best.params["truncation"] == "cutoff" else ts.top_k)
    fixed = rows40.with_settings(quick, norm="off", truncation="all")
    model = fixed.fit(models["λMART*"], dict(models["λMART*"].first_params))
    assert (model.info["norm"], model.info["truncation"]) == (False, ts.top_k)
    with pytest.raises(ValueError, match="truncation must be one of"):
        experiment.Stage2Experiment(ts, truncation="top5")
    with pytest.raises(ValueError, match="truncation must be one of"):
        rows40.with_settings(truncation="top5")
    with pytest.raises(ValueError, match=r"unknown open settings \['depth'\]"):
        rows40.with_settings(depth="on")
    with pytest.raises(ValueError, match=r"eval_at and seed choose the rows"):
        rows40.with_settings(quick.replace(eval_at=10))
    # The settings are the copy's own; the rows and their binned Datasets are shared.
    assert (rows40.open_settings, rows40.settings.max_trees) == (
        {"norm": "on", "truncation": "cutoff", "hessian": "diagonal"}, 8)
    assert fixed.parts is rows40.parts and fixed.rank_data("train", models["Bi-λMART"]) is \
        rows40.rank_data("train", models["Bi-λMART"])


def test_models_tuned_side_by_side_equal_one_after_another(rows40, tmp_path):
    # Worker processes get the experiment without its LightGBM Datasets or stage 1's full
    # partitions, rebuild what they need, and must reach the very same studies and models.
    # Two groups in one pool, as notebook 06 tunes its main run and its control.
    from ltrlib.bilambdamart import experiment

    exp = rows40
    names = ["λMART*", "Bi-λMART"]
    alone = experiment.fit_models(exp, names, tuning=experiment.STAGE2_TUNING.replace(n_trials=1))
    journal = tmp_path / "studies.journal"
    groups = experiment.fit_model_groups({"main": (exp, names), "other": (exp, names[:1])},
                                         tuning=experiment.STAGE2_TUNING.replace(n_trials=1, storage=journal), n_jobs=2)
    assert {p: list(g) for p, g in groups.items()} == {"main": names, "other": names[:1]}
    for group in groups.values():
        for name, side in group.items():
            assert side.params == alone[name].params and side.vali_ndcg == alone[name].vali_ndcg
            np.testing.assert_array_equal(side.model.score(exp.parts["test"]),
                                          alone[name].model.score(exp.parts["test"]))
    # The studies landed in the one journal the workers shared, and are resumed from it.
    again = experiment.fit_models(exp, names, tuning=experiment.STAGE2_TUNING.replace(n_trials=1, storage=journal),
                                  study_prefix="main")
    assert all(again[n].tuning["number"].tolist() == groups["main"][n].tuning["number"].tolist()
               for n in names)
    assert exp.two.stage1 is not None  # pickling for the workers left the parent's intact
    # An LB model's tuning value is read off its validation curve: it must be the NDCG its
    # fresh scores get with the full-list IDCG.
    ds = exp.parts["vali"]
    for name in names:
        model = alone[name].model
        fresh = ndcg(ds.y, model.score(ds), ds.offsets, 5, ideal_dcg=exp.ideal_at("vali", 5)).mean()
        assert alone[name].vali_ndcg == pytest.approx(fresh, abs=1e-12)
    with pytest.raises(ValueError, match="n_jobs"):
        experiment.fit_models(exp, names, n_jobs=0)


def test_relabelled_keeps_stage1_and_takes_the_new_labels(two):
    from ltrlib.data import make_synthetic
    from ltrlib.data.synthetic import with_config

    splits, _, _, ts = two
    control = make_synthetic("tiny", 0, config=with_config(pairwise_weight=0.0))
    rel = ts.relabelled(control)
    changed = 0
    for p in ("train", "vali", "test"):
        new, full = rel.part(p), getattr(control, p)
        # Stage 1's lists and scores are kept: the same rows, features and offsets ...
        np.testing.assert_array_equal(new.X, ts.part(p).X)
        np.testing.assert_array_equal(new.offsets, ts.part(p).offsets)
        np.testing.assert_array_equal(rel.kept[p], ts.kept[p])
        # ... with the control's labels, and its full lists' ideal DCG.
        np.testing.assert_array_equal(new.y, full.y[ts.kept[p]])
        np.testing.assert_allclose(rel.ideal(p, 5), ideal_dcg(full.y, full.offsets, 5))
        changed += int((new.y != ts.part(p).y).sum())
    assert changed > 0  # the control's labels differ: the test would see a no-op
    assert ts.part("train").y is not rel.part("train").y and rel.stage1.train is control.train
    other = make_synthetic("tiny", 1)
    with pytest.raises(ValueError, match="same documents"):
        ts.relabelled(other)
    # The control's experiment: the main one's settings on the relabelled lists.
    from ltrlib.bilambdamart import experiment
    from ltrlib.train import TrainSettings

    quick = TrainSettings(max_trees=6, early_stopping=3, eval_at=5, num_threads=1)
    main = experiment.Stage2Experiment(ts, settings=quick, train_queries=40, norm="off", truncation="all")
    ctl = main.relabelled(control)
    assert (ctl.settings, ctl.train_queries, ctl.listwise, ctl.open_settings) == \
        (main.settings, 40, True, {"norm": "off", "truncation": "all", "hessian": "diagonal"})
    np.testing.assert_array_equal(ctl.parts["train"].X, main.parts["train"].X)  # the same training sample
    assert (ctl.parts["test"].y != main.parts["test"].y).any() and ctl.two.stage1.test is control.test


def test_pair_models_search_in_document_units(rows40):
    """A point of the search takes the same step for a pair model as for a document model:
    converted for pair rows, one Bi-λMART tree moves the within-query scores about as far as
    one λMART* tree; given to LightGBM as is, about n - 1 times as far."""
    from ltrlib.bilambdamart import experiment
    from ltrlib.bilambdamart.space import lightgbm_point, pairs_per_document
    from ltrlib.train import TrainSettings

    point = {"learning_rate": 0.05, "num_leaves": 31, "min_data_in_leaf": 50, "min_sum_hessian_in_leaf": 0.001}
    assert lightgbm_point(point, None) == point
    assert lightgbm_point(point, 19) == {"learning_rate": 0.05 / 19, "num_leaves": 31, "min_data_in_leaf": 950,
                                         "min_sum_hessian_in_leaf": 0.001 * 2 / 19}
    assert pairs_per_document([0, 20, 40, 48, 49]) == 19  # median of 20, 20, 8 (the 1-document list has no pairs)
    with pytest.raises(ValueError, match="no query has two documents"):
        pairs_per_document([0, 1, 2])
    exp = rows40.with_settings(TrainSettings(max_trees=1, early_stopping=1, eval_at=5, num_threads=1))
    ds, k = exp.parts["train"], exp.pairs_per_document
    assert k == 19

    def step(model):
        s, sizes = model.score(ds), np.diff(ds.offsets)
        return np.abs(s - np.repeat(np.add.reduceat(s, ds.offsets[:-1]) / sizes, sizes)).mean()

    doc = step(exp.fit(experiment.MODELS["λMART*"], point))
    pair = experiment.MODELS["Bi-λMART"]
    assert 0.5 < step(exp.fit(pair, point)) / doc < 2
    assert step(exp.fit_lightgbm(pair, point)) / doc > 5
