"""Notebook 06's experiments beyond the paper: each gives None where it does not apply, so the
notebook neither shows nor saves it; where it applies it gives the table the notebook saves."""

import numpy as np
import pandas as pd

from ltrlib.bilambdamart import beyond
from ltrlib.bilambdamart.experiment import MODELS, STAGE1_ROW, Stage2Runs
from ltrlib.data import ORACLE, Dataset
from ltrlib.metrics import MarkedTable
from ltrlib.train import TuningSettings


def _per_query(models, n=30, seed=0):
    rng = np.random.default_rng(seed)
    base = rng.random(n) * 0.5
    return pd.concat([pd.DataFrame({"model": m, "metric": "ndcg@5", "qid": np.arange(n),
                                    "value": base + 0.01 * i + rng.normal(0, 0.001, n)})
                      for i, m in enumerate(models)], ignore_index=True)


def test_what_does_not_apply_is_none():
    pq = _per_query(["λMART*", "Bi-λMART"])
    assert beyond.headroom_table(pq, {}) is None  # not the synthetic twin: no oracles
    assert beyond.pairwise_uptakes(None, {}, {"λMART*": np.zeros(3)}) is None
    assert beyond.control_experiment(None, "synthetic", "", "tiny", 0, wanted=False) is None
    assert beyond.control_results(None, None) is None and beyond.control_table(None) is None
    assert beyond.headroom_pvalues(pq, {}) is None and beyond.control_pvalues(None) is None
    assert beyond.listwise_ablation(None, wanted=False, tuning=TuningSettings(n_trials=1), n_jobs=1) is None
    assert beyond.ablation_table(None) is None
    assert list(beyond.model_groups("exp", None, ["λMART*"])) == [beyond.MAIN_GROUP]


def test_what_applies_gives_the_tables_the_notebook_saves():
    oracles = {ORACLE: None, "oracle without pairs": None}
    pq = _per_query(["λMART*", "Bi-λMART", *oracles])
    headroom = beyond.headroom_table(pq, oracles)
    assert isinstance(headroom, MarkedTable)
    assert list(headroom.formatted().index) == ["a. λMART*", "b. Bi-λMART", f"c. {ORACLE}", "d. oracle without pairs"]
    # The control's rows in the order its results list them (stage 1, models, oracles).
    control = _per_query([STAGE1_ROW, "λMART*", "Bi-λMART", ORACLE])
    assert list(beyond.control_table(control).numbers.model.unique()) == [STAGE1_ROW, "λMART*", "Bi-λMART", ORACLE]
    # Beside each, its marks' tests with Holm's step-down over the table's family, as
    # statsmodels gives it on the raw p-values; the marks stay the uncorrected tests'.
    from statsmodels.stats.multitest import multipletests

    for table, tests in ((headroom, beyond.headroom_pvalues(pq, oracles)),
                         (beyond.control_table(control), beyond.control_pvalues(control))):
        assert len(tests) == 6 and {"p", "marked", "p_holm", "marked_holm"} <= set(tests.columns)
        np.testing.assert_allclose(tests.p_holm, multipletests(tests.p, method="holm")[1])
        assert (tests.marked_holm == ((tests.p_holm < 0.01) & (tests["diff"] > 0))).all()
        assert table.numbers.filter(like="marked_").to_numpy().sum() == tests.marked.sum()
    ablation = beyond.ablation_table(_per_query(list(beyond.ABLATION_ROWS)))
    assert list(ablation.numbers.model.unique()) == list(beyond.ABLATION_ROWS)
    groups = beyond.model_groups("exp", "control", "λMART*,Bi-λMART")  # the notebook's parameter
    assert groups == {beyond.MAIN_GROUP: ("exp", list(MODELS)), beyond.CONTROL_GROUP: ("control", ["λMART*", "Bi-λMART"])}


def test_stage2_run_records_name_their_runs_and_qrels():
    judged = Dataset(np.zeros((4, 1), np.float32), np.array([1, 0, 2, 0]), np.array([7, 8]), np.array([0, 2, 4]))
    runs = Stage2Runs(judged, np.array([0, 1, 0, 1]), {"stage1": np.arange(4.0), "Bi-λMART": -np.arange(4.0)})
    records = runs.records(prefix="control.", qrels="qrels.control")
    assert [(r.name, r.qrels) for r in records] == [("control.stage1", "qrels.control"),
                                                    ("control.Bi-λMART", "qrels.control")]
    assert all(r.data is judged and r.docnos is runs.docnos for r in records)
