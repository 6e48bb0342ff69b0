"""The paper's neural competitors: their points, marks and the pairing with notebook 06."""
import numpy as np
import optuna
import pandas as pd
import pytest

from ltrlib.neural.competitors import (
    NEURAL_MODELS,
    PAPER_POINTS,
    architecture,
    neural_model_list,
    paper_marks,
    suggest,
    tree_rows,
)


def test_every_family_and_loss_is_there_and_gsf2_comes_without_and_with_differences():
    assert len(NEURAL_MODELS) == 11
    for family in PAPER_POINTS:
        assert {NEURAL_MODELS[family].loss, NEURAL_MODELS[f"{family}_Softmax"].loss} == {"lambdarank", "softmax"}
    assert not NEURAL_MODELS["GSF(2)"].difference and NEURAL_MODELS["GSF(2) with d"].difference
    assert neural_model_list("all") == list(NEURAL_MODELS)
    with pytest.raises(ValueError, match="neural_models: unknown models \\['RNN'\\]"):
        neural_model_list("DNN,RNN")


@pytest.mark.parametrize("family", list(PAPER_POINTS))
def test_the_papers_point_is_a_point_of_the_search_space(family):
    """Tables 6-7's WEB30K values are the first trial: every one must lie in the space."""
    study = optuna.create_study(direction="maximize")
    study.enqueue_trial(PAPER_POINTS[family])
    trial = study.ask()
    assert suggest(trial, family) == PAPER_POINTS[family]


def test_the_width_cap_narrows_every_layer_and_the_attention():
    din = architecture(NEURAL_MODELS["ATTN-DIN"], PAPER_POINTS["ATTN-DIN"], max_width=256)
    assert din.hidden == (256, 128, 32) and din.heads * din.size == 256
    gsf = architecture(NEURAL_MODELS["GSF(2) with d"], PAPER_POINTS["GSF(2)"])
    assert gsf.hidden == (4096, 1024, 256, 64) and gsf.group_size == 2 and gsf.difference
    assert architecture(NEURAL_MODELS["SetRank"], PAPER_POINTS["SetRank"], max_width=100).size == 100


def _per_query(means: dict[str, float], n: int = 40, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    noise = rng.normal(0, 0.05, n)  # shared per query: paired tests see the differences
    return pd.concat([pd.DataFrame({"model": m, "metric": "ndcg@5", "qid": np.arange(n),
                                    "value": v + noise + rng.normal(0, 0.002, n)}) for m, v in means.items()])


def test_paper_marks_dagger_for_beating_every_network_star_for_beating_the_trees():
    pq = _per_query({"DNN": 0.70, "SetRank": 0.72, "GBT": 0.73, "Bi": 0.75, "Close": 0.7201})
    table = paper_marks(pq, ["DNN", "SetRank", "Close", "GBT", "Bi"], ["DNN", "SetRank", "Close"], ["GBT"])
    cells = table.formatted()["ndcg@5"]
    marks = table.numbers.set_index("model")[["marked_†", "marked_*"]]
    assert marks.loc["Bi"].tolist() == [True, True] and marks.loc["SetRank"].tolist() == [False, False]
    assert cells["GBT"].endswith("†") and not cells["GBT"].endswith("*")
    assert cells["Bi"].endswith("†*")
    # SetRank beats DNN but not Close (a network it does not beat): no dagger.
    assert cells["SetRank"][-1].isdigit() and cells["DNN"][-1].isdigit()


def test_tree_rows_pair_only_with_notebook_06_on_the_same_lists(tmp_path):
    ours = _per_query({"λMART (stage 1)": 0.6, "DNN": 0.7})
    theirs = pd.concat([_per_query({"λMART (stage 1)": 0.6, "λMART*": 0.72}).assign(variant="main"),
                        _per_query({"λMART*": 0.70}).assign(variant="control")])
    path = tmp_path / "per_query_test.parquet"
    rows, note = tree_rows(path, ours)
    assert rows.empty and "absent" in note
    theirs.to_parquet(path)
    rows, note = tree_rows(path, ours)
    assert set(rows.model) == {"λMART*"} and len(rows) == 40 and "same 40 test lists" in note
    other = theirs.assign(value=np.where(theirs.model == "λMART (stage 1)", theirs.value + 0.01, theirs.value))
    other.to_parquet(path)
    rows, note = tree_rows(path, ours)
    assert rows.empty and "other lists" in note


def test_the_neural_notebook_defaults_to_notebook_06s_stage_2_settings():
    """Both notebooks build the same stage-2 lists only if their shared parameters agree: a
    default changed in one and not the other would leave the tree rows out (`tree_rows`)."""
    import re

    from ltrlib import config

    def defaults(name):
        text = (config.PROJ_ROOT / "notebooks" / f"{name}.py").read_text(encoding="utf-8")
        return dict(re.findall(r"^(\w+): \w+ = (\S+)", text, re.M))

    trees, networks = defaults("06_bilambdamart"), defaults("06_neural_competitors")
    shared = {"folds", "stage1_max_trees", "stage1_trials", "top_k", "cutoff", "stage2_features", "train_queries",
              "max_trees", "early_stopping"}
    assert shared <= set(networks) and shared <= set(trees)
    assert {k: networks[k] for k in shared} == {k: trees[k] for k in shared}


def test_tables_3_to_5_take_their_rows_by_loss_and_the_trees_present():
    from ltrlib.neural import table3, table4_rows, table5

    pq = _per_query({"DNN": 0.70, "GSF(2)": 0.69, "GSF(2) with d": 0.695, "DNN_Softmax": 0.71,
                     "λMART*": 0.73, "Bi-λMART": 0.74, "GBT_Softmax": 0.72})
    names = ["DNN", "GSF(2)", "GSF(2) with d", "DNN_Softmax"]
    # Table 3: the λRank networks but GSF(2) with d (Table 4's), then the λRank trees there.
    assert list(table3(pq, names).formatted().index) == ["DNN", "GSF(2)", "λMART*", "Bi-λMART"]
    assert table4_rows(pq) == ["GSF(2)", "GSF(2) with d", "Bi-λMART"]  # Bi-λMART w/o d did not run
    assert list(table5(pq, names).formatted().index) == ["DNN_Softmax", "GBT_Softmax"]
    assert table5(pq, names).formatted().loc["GBT_Softmax", "ndcg@5"].endswith("†")


def test_tables_3_4_and_5_carry_holm_beside_their_marks_as_statsmodels_gives_it():
    """The tests behind Tables 3-5's marks (the paper's, kept) with Holm's step-down over each
    table's family beside them, equal to statsmodels' on the table's raw p-values."""
    from statsmodels.stats.multitest import multipletests

    from ltrlib.bilambdamart import ndcg_pvalues
    from ltrlib.neural import table3, table3_pvalues, table4_rows, table5, table5_pvalues

    pq = pd.concat([_per_query({"DNN": 0.70, "GSF(2)": 0.69, "GSF(2) with d": 0.695, "DNN_Softmax": 0.71,
                                "SetRank_Softmax": 0.7101, "λMART*": 0.73, "Bi-λMART": 0.74,
                                "GBT_Softmax": 0.72}, seed=s).assign(metric=m)
                    for s, m in enumerate(["ndcg@1", "ndcg@5"])], ignore_index=True)
    names = ["DNN", "GSF(2)", "GSF(2) with d", "DNN_Softmax", "SetRank_Softmax"]
    for build, pvalues in ((table3, table3_pvalues), (table5, table5_pvalues)):
        tests = pvalues(pq, names)
        assert {"p", "p_holm", "marked_holm"} <= set(tests.columns)
        np.testing.assert_allclose(tests.p_holm, multipletests(tests.p, method="holm")[1])
        assert (tests.marked_holm == ((tests.p_holm < 0.01) & (tests["diff"] > 0))).all()
        # The table's marks are the uncorrected tests': a cell carries its symbol where every
        # test feeding it is marked.
        numbers = build(pq, names).numbers.set_index(["model", "metric"])
        for (model, metric, mark), g in tests.groupby(["model", "metric", "mark"]):
            assert numbers.loc[(model, metric), f"marked_{mark}"] == g.marked.all()
    gsf = ndcg_pvalues(pq, table4_rows(pq))  # Table 4's (notebook 06n's table4_gsf_pvalues)
    np.testing.assert_allclose(gsf.p_holm, multipletests(gsf.p, method="holm")[1])


def test_the_budget_caption_names_the_trials_steps_and_any_width_cap():
    from ltrlib.neural import budget_caption

    assert budget_caption(16, 3000).endswith("the first at the paper's Tables 6-7 point, at most 3000 steps")
    assert budget_caption(16, 3000, 64).endswith("at most 3000 steps, layers capped at 64")
    assert budget_caption(1, 10).startswith("neural networks: 1 trial(s) each")


def test_networks_side_by_side_train_as_they_do_one_at_a_time(tmp_path):
    """`fit_neural_models` trains each network in a worker of one core and one thread, so
    two at a time (``n_jobs=2``) give bit for bit what one at a time gives: the same
    trials, curves, kept steps and test scores, in the order the names were given."""
    from ltrlib.bilambdamart.experiment import Stage2Experiment
    from ltrlib.bilambdamart.two_stage import STAGE1_SETTINGS, build_two_stage
    from ltrlib.data import make_synthetic
    from ltrlib.neural import NeuralBudget, fit_neural_models
    from ltrlib.train import TrainSettings, TuningSettings

    splits = make_synthetic("tiny", 0)
    two = build_two_stage(splits, folds=2, top_k=20, params={"learning_rate": 0.2, "num_leaves": 15},
                          settings=STAGE1_SETTINGS.replace(max_trees=20, early_stopping=5), cache_dir=tmp_path)
    exp = Stage2Experiment(two, train_queries=40, settings=TrainSettings(max_trees=8, eval_at=5, num_threads=1))
    budget = NeuralBudget(max_steps=30, patience=30, eval_every=10, cutoff=5)
    names = ["GSF(2)", "DNN"]
    runs = [fit_neural_models(exp, names, budget=budget, max_width=8, n_jobs=n,
                              tuning=TuningSettings(n_trials=2, prune=False, progress=False)) for n in (1, 2)]
    assert [list(run) for run in runs] == [names, names]
    test = exp.parts["test"]
    for name in names:
        one, side = runs[0][name], runs[1][name]
        assert (one.vali_ndcg, one.best_iteration, one.params) == (side.vali_ndcg, side.best_iteration, side.params)
        assert one.model.curve == side.model.curve
        np.testing.assert_array_equal(one.model.score(test), side.model.score(test))
        assert one.tuning["value"].tolist() == side.tuning["value"].tolist()
