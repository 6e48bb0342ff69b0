"""A run declared one of the papers' datasets: checked against the data, and the papers'
printed numbers for it beside the run's."""

import json

import pandas as pd
import pytest

from ltrlib import fidelity as F
from ltrlib.fidelity.datasets import check_declaration, paper_dataset


def test_a_declaration_the_features_contradict_is_refused_naming_both():
    with pytest.raises(ValueError, match="has 136 features, Istella-S has 220"):
        check_declaration("istella-s", 136, (10, 5, 5), source="dataset 'x'")
    with pytest.raises(ValueError, match="is not one of the papers' datasets: istella-s, mslr-web10k"):
        paper_dataset("mslr-web20k")
    whole = check_declaration("mslr-web10k", 136, (6000, 2000, 2000))
    assert whole.whole and "the paper's printed numbers are this data's" in whole.note()
    part = check_declaration("yahoo-ltrc", 658, (100, 40, 40))  # sparse: the twin's highest index is 658
    assert not part.whole and "a part of the collection" in part.note() and "19,944" in part.note()
    with pytest.raises(ValueError, match="has 220 features, Yahoo! LTRC, set 1 has 500 to 700"):
        check_declaration("yahoo-ltrc", 220, (100, 40, 40))


def test_the_ledger_compares_the_published_numbers_of_the_declared_dataset(tables, tmp_path):
    run = tables.bilambdamart_run(tmp_path, cutoffs=("ndcg@1", "ndcg@5", "ndcg@10", "ndcg@20"))
    manifest = {"run_id": "r", "params": {"dataset": "/data/MSLR-WEB30K", "scale": "small", "seed": 0,
                                          "paper_dataset": "mslr-web30k"},
                "paper_dataset_queries": [18919, 6306, 6306], "notebooks": {"06_bilambdamart": {"status": "completed"}}}
    (run / "run.json").write_text(json.dumps(manifest))
    text = F.write_fidelity(run).read_text()
    published = pd.read_csv(run / F.FIDELITY_PUBLISHED_CSV)
    # Tables 2, 4 and 5 of WEB30K: 4 + 2 + 2 tree models; the networks' Table 3 (5), Table 4's
    # GSF rows with its Bi-λMART rows (4) and Table 5 (5 networks, 2 trees); at five cutoffs.
    assert len(published) == (8 + 5 + 4 + 7) * 5 and set(published.source) == {"bilambdamart"}
    dnn = published[(published.table == "table3") & (published.model == "DNN") & (published.metric == "ndcg@5")]
    assert (dnn.paper.item(), dnn.ours.item()) == (0.4880, 0.67)
    row = published[(published.table == "table2") & (published.model == "Bi-λMART")
                    & (published.metric == "ndcg@5")].iloc[0]
    assert (row.paper, row.ours) == (0.5291, 0.71) and row["diff"] == pytest.approx(0.71 - 0.5291)
    # These test tables have no NDCG@3: those numbers are missing, not invented.
    assert published[published.metric == "ndcg@3"].ours.isna().all()
    assert "the paper's printed numbers are this data's" in text
    # Undeclared, the section says its numbers are not comparable and writes none.
    manifest["params"].pop("paper_dataset")
    (run / "run.json").write_text(json.dumps(manifest))
    (run / F.FIDELITY_PUBLISHED_CSV).unlink()
    text = F.write_fidelity(run).read_text()
    assert "absolute values are not comparable" in text and not (run / F.FIDELITY_PUBLISHED_CSV).exists()


def test_the_runner_refuses_a_declaration_before_anything_runs(tmp_path):
    from ltrlib import runner

    with pytest.raises(ValueError, match="synthetic' has 220 features, MSLR-WEB10K, Fold1 has 136"):
        runner.run_all("synthetic", scale="tiny", only="00", reports_dir=tmp_path, progress=False,
                       paper_dataset="mslr-web10k")
    assert not any(tmp_path.iterdir())  # no report folder
