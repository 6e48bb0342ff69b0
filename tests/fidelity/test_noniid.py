"""The non-IID paper in the fidelity ledger: paper constants, the diff column, claims that
hold and fail, and a run directory with missing tables."""

import json

import pandas as pd
import pytest

from ltrlib import fidelity as F
from ltrlib.fidelity import noniid as N
from ltrlib.fidelity import sources as S
from ltrlib.report import write_index


def test_paper_numbers_transcribe_the_tables():
    p = N.paper_numbers()
    # 9 + 4 x 9 NDCG@10 cells, 2 tables x 3 splits x 4 models x 3 metrics, 6 alphas.
    assert (p.table == "Table 1").sum() == 9 and (p.table == "Table 3").sum() == 36
    assert (p.table == "Table 4").sum() == 36 and (p.table == "Table 5").sum() == 36
    assert (p.table == "alpha").sum() == 6
    get = N._Numbers(p)
    assert get("Table 1", "initial (tie-breaking) c11", "M_full", "DS") == 0.789
    assert get("Table 3", "exclusive c14", "M1", "DS2'") == 0.296
    assert get("Table 4", "Split3", "M21α", "DS", "map") == 0.873
    assert get("Table 5", "Split2", "M21S", "DS", "mrr@10") == 0.962
    # The paper's inconsistency is kept as printed, not corrected.
    assert get("Table 3", "exclusive c11", "M1") == 0.543 and get("Table 4", "Split1", "M1") == 0.619


def _ours(rows):
    return pd.DataFrame([(*r, "", r[1]) for r in rows], columns=N.COLUMNS)


def test_compare_diff_is_ours_minus_paper_and_missing_is_nan():
    ours = _ours([("Table 4", "Split1", "M1", "DS", "ndcg@10", 0.600),
                  ("Table 4", "Split1", "M1", "DS", "map@10", 0.700),
                  ("Table 4", "Split9", "M1", "DS", "ndcg@10", 0.5)])  # no paper counterpart
    out = N.compare(N.paper_numbers(), ours)
    row = out[(out.table == "Table 4") & (out.split == "Split1") & (out.model == "M1")
              & (out.metric == "ndcg@10")].iloc[0]
    assert row.paper == 0.619 and row.ours == 0.600 and row["diff"] == pytest.approx(-0.019)
    at10 = out[(out.table == "Table 4") & (out.split == "Split1") & (out.model == "M1")
               & (out.metric == "map@10")].iloc[0]
    assert at10.paper == 0.713 and at10.ours == 0.700 and "MAP" in at10.note  # paper's MAP column
    other = out[(out.table == "Table 4") & (out.split == "Split2")]
    assert other.ours.isna().all() and other["diff"].isna().all()
    assert "Split9" not in set(out.split)
    assert list(out.columns[:8]) == ["table", "split", "model", "test_set", "metric", "paper", "ours", "diff"]


def _claim(claims, name, scope=None):
    c = claims[claims.claim == name]
    if scope is not None:
        c = c[c.scope == scope]
    assert len(c) == 1, (name, scope, claims.claim.unique())
    return c.iloc[0]


def test_claims_hold_on_the_paper_and_can_fail():
    paper = N.paper_numbers()
    # The paper's own numbers, as ours: every claim but the inconsistency holds.
    claims = N.check_claims(paper, paper)
    assert (claims.ours == claims.paper)[claims.claim != "score_features_most_important"].all()
    failing = set(claims[claims.ours != "holds"].claim)
    assert failing == {"same_model_same_number", "score_features_most_important"}
    # Split1 M21α beats M2 here: the claim (iii) must not hold, and say why in numbers.
    ours = paper.copy()
    ours.loc[(ours.table == "Table 4") & (ours.split == "Split1") & (ours.model == "M21α")
             & (ours.metric == "ndcg@10"), "value"] = 0.740
    claims = N.check_claims(ours, paper)
    c = _claim(claims, "split1_m21_loses_to_m2")
    assert c.ours == "does not hold" and c.paper == "holds"
    assert "0.740" in c.evidence and "0.727" in c.evidence
    assert _claim(claims, "merge_beats_locals_most").ours == "holds"  # now 6/6


def test_claim_needing_a_missing_number_is_not_available():
    ours = _ours([("Table 4", "Split1", "M2", "DS", "ndcg@10", 0.7)])
    claims = N.check_claims(ours)
    assert _claim(claims, "split1_m21_loses_to_m2").ours == "not available"
    assert set(claims.ours) == {"not available"}
    assert set(claims.paper) == {"holds", "does not hold"}


def test_figure3_claim_reads_the_importance_table():
    imp = pd.DataFrame({"model": ["S1 M12S"] * 3 + ["S1 M21S"] * 3, "kind": "gain",
                        "feature": ["score_M1", "score_M2", "f3", "f3", "score_M1", "score_M2"],
                        "value": [9.0, 5.0, 1.0, 9.0, 5.0, 1.0], "share": 0.0,
                        "rank": [1, 2, 3, 1, 2, 3], "is_score": [True, True, False, False, True, True]})
    (finding,) = N._figure3(imp)
    assert finding.holds is False and "S1 M21S: top 2 by gain = f3, score_M1" in finding.evidence
    assert N._figure3(imp[imp.model == "S1 M12S"])[0].holds is True
    row = _claim(N.check_claims(N.paper_numbers(), importance=imp), "score_features_most_important")
    assert row.ours == "does not hold" and row.paper == "holds" and "stated: §5.2" in row.paper_evidence


def test_write_fidelity_on_a_run_without_tables(tmp_path):
    run = tmp_path / "r"
    run.mkdir()
    manifest = {"run_id": "r", "params": {"dataset": "/data/x", "scale": "small", "seed": 3}, "notebooks": {}}
    (run / "run.json").write_text(json.dumps(manifest))
    text = F.write_fidelity(run).read_text()
    # No paper's notebook ran: no section, no numbers.
    assert "executed none of the papers' notebooks" in text and not (run / F.FIDELITY_CSV).exists()
    manifest["notebooks"]["03_client_models"] = {"status": "failed"}
    (run / "run.json").write_text(json.dumps(manifest))
    text = F.write_fidelity(run).read_text()
    assert "Not in this run" in text and "table4_linear_numeric.csv" in text
    assert "seed: `3`" in text and "neither the synthetic" in text and "### Assumptions" in text
    assert "## Learning to Rank for Non-IID Datasets" in text and "FOLTR" not in text
    numbers = pd.read_csv(run / F.FIDELITY_CSV)
    assert len(numbers) > 100 and numbers.ours.isna().all()
    claims = pd.read_csv(run / F.FIDELITY_CLAIMS_CSV)
    assert set(claims.ours) == {"not available"}
    write_index(run)
    assert 'href="fidelity.md"' in (run / "index.html").read_text()
    assert "(fidelity.md)" in (run / "index.md").read_text()


def test_write_fidelity_reads_the_notebook_tables(tmp_path):
    run = tmp_path / "r"
    t03 = run / "tables" / "03_client_models"
    t04 = run / "tables" / "04_linear_merge"
    t03.mkdir(parents=True)
    t04.mkdir(parents=True)
    pd.DataFrame({"split": ["Split1"] * 3 + ["exclusive-c3"], "strategy": "exclusive",
                  "category": [11, 11, 11, 3], "model": ["M1", "M2", "M_full", "M1"], "test_set": "DS",
                  "metric": "ndcg@10", "value": [0.5, 0.6, 0.7, 0.1], "queries": 50}).to_csv(
        t03 / "table3_alternative_splits_numeric.csv", index=False)
    pd.DataFrame({"split": "Split1", "model": ["M1", "M2", "M12α"], "metric": "ndcg@10",
                  "value": [0.5, 0.6, 0.65], "queries": 50, "p_vs_M1": [float("nan"), 0.01, 0.01],
                  "p_vs_M2": [0.01, float("nan"), 0.2]}).to_csv(t04 / "table4_linear_numeric.csv", index=False)
    F.write_fidelity(run)
    numbers = pd.read_csv(run / F.FIDELITY_CSV, keep_default_na=False, na_values=[""])
    t3 = numbers[(numbers.table == "Table 3") & (numbers.split == "exclusive c11") & (numbers.test_set == "DS")]
    assert dict(zip(t3.model, t3.ours)) == {"M1": 0.5, "M2": 0.6, "M_full": 0.7}
    assert set(t3.our_split) == {"Split1"}
    t4 = numbers[(numbers.table == "Table 4") & (numbers.metric == "ndcg@10")
                 & (numbers.split == "Split1")].set_index("model")
    # Superscripts from the p-values, on the merged models only (the paper's convention).
    assert t4.loc["M12α", "ours_marks"] == "a" and t4.loc["M12α", "paper_marks"] == "ab"
    assert pd.isna(t4.loc["M2", "ours_marks"]) and t4.loc["M12α", "diff"] == pytest.approx(0.65 - 0.730)
    claims = pd.read_csv(run / F.FIDELITY_CLAIMS_CSV)
    assert _claim(claims, "same_model_same_number").ours == "holds"
    text = (run / F.FIDELITY_MD).read_text()
    assert "table5_stacking_numeric.csv" in text
    assert "**Not compared.**" in text and "Table 3 exclusive c3" in text  # no paper counterpart
    assert "Data-level calibration" not in text  # notebook 00 wrote no calibration table


def test_fidelity_shows_the_data_level_calibration(tmp_path):
    run = tmp_path / "r"
    calibration = run / S.table_path("00_dataset_overview", "calibration")
    subsets = run / S.table_path("00_dataset_overview", "calibration_subsets")
    calibration.parent.mkdir(parents=True)
    pd.DataFrame({"statistic": ["tie", "exclusive_11"], "paper": [0.123, 0.014],
                  "achieved": [0.125, 0.03], "tolerance": [0.03, 0.005], "within": [True, False],
                  "source": "§5.2", "mechanism": "purity"}).to_csv(calibration, index=False)
    text = F.write_fidelity(run).read_text()
    assert "### Data-level calibration" in text and "1 of 2 within tolerance" in text
    assert "exclusive_11" in text and "Table 2's subsets" not in text  # no subsets table written
    pd.DataFrame({"subset": ["exclusive_11"], "queries": [37], "docs_per_query": [87.108],
                  "paper_docs_per_query": [104.319]}).to_csv(subsets, index=False)
    text = F.write_fidelity(run).read_text()
    assert "Table 2's subsets, out of sample" in text and "| exclusive_11 |" in text and "87.11" in text


def test_cli_rebuilds_the_report_and_the_index(tmp_path, capsys):
    from ltrlib import cli

    run = tmp_path / "r"
    run.mkdir()
    assert cli.main(["fidelity", str(run)]) == 0
    assert capsys.readouterr().out.strip().endswith("fidelity.md")
    assert (run / "fidelity_claims.csv").exists() and "fidelity.md" in (run / "index.md").read_text()
    assert cli.main(["fidelity", str(tmp_path / "nope")]) == 1
    assert "no run" in capsys.readouterr().err
