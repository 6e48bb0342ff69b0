"""A category choice is refused before any work, naming the parameter (`ltrlib.noniid.checks`,
called by `ltrlib.runner.run_all` before a kernel starts or a report folder is made)."""

import pytest

from ltrlib import config, runner
from ltrlib.noniid.checks import check_category_choices


@pytest.fixture
def shared_data():
    if not config.SHARED_LIGHTGBM_RANK.exists():
        pytest.skip(f"shared example data not found at {config.SHARED_LIGHTGBM_RANK}")


def plan(notebook="03_client_models", dataset="lightgbm-rank", **params):
    """One notebook's parameters as the runner plans them: the standard ones, then the
    category parameters notebooks 02-05 declare (01 declares ``category`` instead)."""
    standard = {"dataset": dataset, "data_dir": "", "scale": "tiny", "seed": 0, "run_id": "t"}
    declared = {"category_feature": "", "category_bins": 0}
    if notebook.startswith("01"):
        declared["category"] = "auto"
    else:
        declared.update(split1_category="auto", split2_category="auto", split3_category="auto",
                        merge_size="train_queries_half", merge_overflow="shrink")
    if notebook.startswith("02"):
        declared["three_client_sets"] = "auto"
    if notebook[:2] in ("03", "04", "05"):
        declared["splits_to_run"] = "Split1,Split2,Split3"
    return {notebook: {**standard, **declared, **params}}


@pytest.mark.parametrize("params, said", [
    ({"category_feature": "f0"}, "category_feature='f0': feature index 0 does not exist"),
    ({"category_feature": "f0", "category_bins": 4}, "category_feature='f0'"),
    ({"category_feature": "f10"}, "category_feature f10 has non-integer values (0.79, 0.8, 0.81, ...)"),
    ({"category_feature": "f10", "category_bins": 1}, "category_bins=1"),
    ({"category_bins": 4}, "category_bins needs category_feature"),
    ({"category_feature": "f10", "category_bins": 2},
     "-p category_feature f10 -p category_bins 2 gives too few query categories"),
    ({"category_feature": "f220", "category_bins": 5, "split3_category": "7"},
     "split3_category=7 is not a document category"),
])
def test_a_choice_the_data_cannot_honour_is_refused_by_name(shared_data, params, said):
    with pytest.raises(ValueError, match="notebook 03_client_models cannot run") as e:
        check_category_choices(plan(**params), given=params)
    assert said in str(e.value)


def test_splits_that_cannot_be_trained_are_notes_until_none_is_left(shared_data):
    # f220 in 5 bins puts nearly every query in category 1: Split1 and Split2 have no
    # DS2' and are left out (said as notes), Split3 can be trained.
    choice = {"category_feature": "f220", "category_bins": 5}
    notes = check_category_choices(plan(**choice), given=choice)
    assert any(n.startswith("split Split1 left out") and "client2 train 0" in n for n in notes)
    assert any("gave 2 categories" in n for n in notes) and len(notes) == len(set(notes))
    # Asking only for the splits that were left out is refused, with the reasons beside.
    with pytest.raises(ValueError, match=r"(?s)splits_to_run='Split1,Split2'.*\n  \(split Split1 left out"):
        check_category_choices(plan(**choice, splits_to_run="Split1,Split2"), given=choice)
    # Notebook 01 needs no split: one category is a result there (said once), not an error.
    one = {"category_feature": "f10", "category_bins": 2}
    notes = check_category_choices(plan("01_category_analysis", **one), given=one)
    assert notes and all(n.startswith("category_bins: 2 quantile bins of f10 gave 1 category in rank.")
                         for n in notes)


def test_the_synthetic_default_is_not_loaded_unless_a_category_is_chosen(monkeypatch):
    import ltrlib.data.loading as loading

    def refuse(*args, **kwargs):
        raise AssertionError("the synthetic default was generated for nothing")

    monkeypatch.setattr(loading, "load_dataset", refuse)
    assert check_category_choices(plan(dataset="synthetic"), given={"n_trials": 2}) == []
    with pytest.raises(AssertionError):
        check_category_choices(plan(dataset="synthetic", split3_category="3"), given={"split3_category": "3"})


def test_a_refused_run_leaves_no_report_folder(shared_data, tmp_path):
    reports = tmp_path / "reports"
    with pytest.raises(ValueError, match="category_feature f10 has non-integer values"):
        runner.run_all(dataset="lightgbm-rank", scale="tiny", run_id="refused", reports_dir=reports,
                       only="00,01,02", parameters={"category_feature": "f10"}, progress=False)
    assert not (reports / "refused").exists()


def test_bins_that_leave_one_query_category_are_refused_before_notebook_01_with_a_count_that_works(
        shared_data, tmp_path):
    # Nothing but the category choice is given: notebook 02's split categories are its "auto"
    # defaults, which the check must resolve as the notebook does (it once saw only the
    # parameters given, and the run stopped inside notebook 02 with two notebooks done).
    reports = tmp_path / "reports"
    with pytest.raises(ValueError, match="notebook 02_split_stats cannot run") as e:
        runner.run_all(dataset="lightgbm-rank", scale="tiny", run_id="one-category", reports_dir=reports,
                       only="00,01,02", parameters={"category_feature": "f10", "category_bins": 2}, progress=False)
    said = str(e.value)
    assert "-p category_feature f10 -p category_bins 2 gives too few query categories" in said
    suggested = int(said.split("-p category_feature f10 -p category_bins ")[2].split()[0])
    assert not (reports / "one-category").exists()
    # The suggested count passes the same check, and no smaller count above 2 does.
    choice = {"category_feature": "f10", "category_bins": suggested}
    check_category_choices(plan("02_split_stats", **choice), given=choice)
    for bins in range(3, suggested):
        with pytest.raises(ValueError, match="too few query categories"):
            check_category_choices(plan("02_split_stats", category_feature="f10", category_bins=bins),
                                   given={"category_feature": "f10", "category_bins": bins})
