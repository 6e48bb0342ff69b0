"""TREC run files of stage-2 lists: the top-k documents named by their row in the full test
query, judged by the full test set's qrels, so ranx's NDCG@k is the tables' full-list one."""

import numpy as np
import pytest

from ltrlib import trec
from ltrlib.bilambdamart import STAGE1_SETTINGS, build_two_stage, per_query_results, stage2_runs
from ltrlib.bilambdamart.experiment import Stage2Experiment
from ltrlib.report import Reporter


class Noise:
    """A stand-in stage-2 model: distinct scores, so ranx's unstable sort cannot reorder ties."""

    def score(self, ds):
        return np.random.default_rng(ds.n_docs).normal(size=ds.n_docs)


@pytest.fixture(scope="module")
def exp(tmp_path_factory):
    from ltrlib.data import make_synthetic

    # top_k = 5 of lists of about 20: stage 1 leaves relevant documents out, so the full
    # list's ideal DCG differs from the kept list's and the test can tell them apart.
    # Stage 1's folds one after the other (n_jobs=1): two worker processes would import
    # ltrlib for a few trees each; test_two_stage.py's stage 1 trains them side by side.
    two = build_two_stage(make_synthetic("tiny", 0), folds=2, top_k=5,
                          params={"learning_rate": 0.2, "num_leaves": 15, "min_data_in_leaf": 20},
                          settings=STAGE1_SETTINGS.replace(max_trees=20, early_stopping=5),
                          cache_dir=tmp_path_factory.mktemp("cache"), n_jobs=1)
    return Stage2Experiment(two, train_queries=50)


def test_runs_of_the_top_k_lists_score_as_the_tables_do(exp, tmp_path):
    from ltrlib.trec import import_ranx

    ranx = import_ranx()
    runs = stage2_runs(exp, {"noise": Noise()})
    assert list(runs.scores) == ["stage1", "noise"] and runs.judged is exp.two.stage1.test
    rep = Reporter("r", "06_bilambdamart", root=tmp_path)
    paths = {n: rep.run_file(n, runs.judged, s, docnos=runs.docnos) for n, s in runs.scores.items()}
    qrels = trec.ranx_qrels(rep.runs_dir / "qrels.gz")
    assert sum(len(d) for d in qrels.to_dict().values()) == runs.judged.n_docs  # the full test set
    pq = per_query_results(exp, {"noise": Noise()}, cutoffs=(5,))
    for name, row in (("stage1", "λMART (stage 1)"), ("noise", "noise")):
        run = trec.read_run(paths[name])
        assert len(run) == exp.parts["test"].n_docs and set(run.docno) <= set(trec.docnos(
            runs.judged.query_ids, runs.judged.offsets))
        theirs = dict(zip(qrels.keys(), ranx.evaluate(qrels, trec.ranx_run(paths[name]),
                                                      "ndcg_burges@5", return_mean=False)))
        ours = pq[pq.model == row].set_index("qid").value
        # Queries without a relevant document: ranx leaves them out, ours score 0.
        judged = [q for q in ours.index if str(q) in theirs]
        assert len(judged) > 10 and ours[judged].lt(1).any()
        np.testing.assert_allclose([theirs[str(q)] for q in judged], ours[judged], atol=1e-9)


def test_bad_docnos_and_a_sampled_part_are_refused(exp, tmp_path):
    runs = stage2_runs(exp, {}, stage1=True)
    rep = Reporter("r", "06_bilambdamart", root=tmp_path)
    s = runs.scores["stage1"]
    with pytest.raises(ValueError, match="docnos holds 3 ids for"):
        rep.run_file("stage1", runs.judged, s, docnos=runs.docnos[:3])
    with pytest.raises(ValueError, match="names no document of"):
        rep.run_file("stage1", runs.judged, s, docnos=np.char.add(runs.docnos, "x"))
    with pytest.raises(ValueError, match="query by query"):
        rep.run_file("stage1", runs.judged, s[::-1], docnos=runs.docnos[::-1])
    # Table 2's λMART and λMART* get a file each (a replaced "*" once made them one).
    names = {rep.run_file(n, runs.judged, s, docnos=runs.docnos).name for n in ("λMART", "λMART*")}
    assert names == {"λMART.run.gz", "λMART_.run.gz"}
    with pytest.raises(ValueError, match="train_queries"):
        stage2_runs(exp, {}, "train")
