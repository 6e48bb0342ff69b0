"""The non-IID paper in the fidelity ledger: paper constants, the diff column, claims that
hold and fail, and a run directory with missing tables."""

import json
import re

import pandas as pd
import pytest

from ltrlib import fidelity as F
from ltrlib.fidelity import noniid as N
from ltrlib.fidelity import sources as S
from ltrlib.fidelity.claims import EFFECT_COLUMNS
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
    # The paper's own numbers, as ours: every claim is decided as on the paper.
    claims, _ = N.check_claims(paper, paper)
    stated = claims.claim.isin(["score_features_most_important", "no_tie_locals_similar"])
    assert (claims.ours == claims.paper)[~stated].all()
    # Decided in words on the paper's side; ours needs notebook 03's and 05's tables.
    assert set(claims[stated].paper) == {"holds"} and set(claims[stated].ours) == {"not available"}
    failing = claims[(claims.ours != "holds") & ~stated]
    # The inconsistency (a note, out of the tally) and the claim that "every metric" improves
    # on Split2 with stacking, which the paper's own MAP and MRR@10 cells do not bear out.
    assert set(failing.claim) == {"same_model_same_number", "stacking_beats_when_comparable"}
    assert set(failing[failing.claim == "stacking_beats_when_comparable"].scope) == {
        "Table 5 Split2 MAP", "Table 5 Split2 MRR@10"}
    assert _claim(claims, "same_model_same_number").kind == "note"
    assert set(claims[claims.claim != "same_model_same_number"].kind) == {"claim"}
    assert "full_close_to_best" not in set(claims.claim)
    # Split1 M21α beats M2 here: the claim (iii) must not hold, and say why in numbers.
    ours = paper.copy()
    ours.loc[(ours.table == "Table 4") & (ours.split == "Split1") & (ours.model == "M21α")
             & (ours.metric == "ndcg@10"), "value"] = 0.740
    claims, effects = N.check_claims(ours, paper)
    c = _claim(claims, "split1_m21_loses_to_m2")
    assert c.ours == "does not hold" and c.paper == "holds"
    assert "0.740" in c.evidence and "0.727" in c.evidence
    assert _claim(claims, "merge_beats_locals_most").ours == "holds"  # now 6/6
    # Its Effect Ratio is reversed: M2 − M21α is -0.013 here, +0.008 on the paper.
    e = effects[effects.claim == "split1_m21_loses_to_m2"].iloc[0]
    assert e.comparison == "Split1 M2 vs M21α" and e.effect_ratio == pytest.approx(-0.013 / 0.008)


def _set(frame, table, split, model, value, metric="ndcg@10", column="value"):
    out = frame.copy()
    out.loc[(out.table == table) & (out.split == split) & (out.model == model) & (out.metric == metric),
            column] = value
    return out


def test_the_alpha_pattern_the_abstracts_gains_and_the_marks_can_fail():
    paper = N.paper_numbers()
    # Client 2's α above client 1's on Split2: that split's scope fails, the others hold.
    ours = _set(paper, "alpha", "Split2", "M21α", 0.6, metric="alpha")
    alpha = N.check_claims(ours, paper)[0].query("claim == 'alpha_client2_weights_m1_more'").set_index("scope")
    assert alpha.ours.to_dict() == {"Split1": "holds", "Split2": "does not hold", "Split3": "holds"}
    assert "client 2 0.60" in alpha.loc["Split2", "evidence"]
    # A gain over M1 without the significance mark does not hold, nor does it agree with the
    # paper's marks.
    ours = _set(paper, "Table 4", "Split1", "M12α", "b", column="marks")
    claims, _ = N.check_claims(ours, paper)
    gain = claims[claims.claim == "linear_merge_gain_over_m1"].set_index("scope").ours
    assert gain.to_dict() == {"Table 4 Split1 nDCG@10": "does not hold", "Table 4 Split1 MAP": "holds"}
    marks = claims[claims.claim == "merged_marks_as_paper"].set_index("scope")
    assert marks.loc["Table 4 nDCG@10", "ours"] == "does not hold"
    assert "5 of 6 cells marked as the paper" in marks.loc["Table 4 nDCG@10", "evidence"]
    assert (marks.drop("Table 4 nDCG@10").ours == "holds").all() and set(marks.paper) == {"holds"}
    # The abstract's gain below M1: does not hold, with the gain in its evidence.
    ours = _set(paper, "Table 5", "Split1", "M21S", 0.600)
    stack = _claim(N.check_claims(ours, paper)[0], "stacking_gain_over_m1", "Table 5 Split1 nDCG@10")
    assert stack.ours == "does not hold" and "M21S 0.600 (-3.07 %, a)" in stack.evidence


def _paired(rows):
    return pd.DataFrame([{"split": f"Split{i}", "strategy": s, "category": c, "model": "M2", "baseline": "M1",
                          "units": n, "mean": 0.7, "mean_baseline": 0.7 - d, "diff": d, "t": 1.0, "p": p}
                         for i, (s, c, d, p, n) in enumerate(rows, 1)],
                        columns=["split", "strategy", "category", "model", "baseline", "units", "mean",
                                 "mean_baseline", "diff", "t", "p"])


def test_no_tie_locals_similar_is_decided_on_notebook_03s_paired_test():
    paper = N.paper_numbers()
    paired = _paired([("no_tie_breaking", 11, -0.018, 0.30, 200), ("no_tie_breaking", 14, -0.028, 0.01, 200)])
    rows = N.check_claims(paper, paper, paired=paired)[0]
    tie = rows[rows.claim == "no_tie_locals_similar"].set_index("scope")
    c11, c14 = tie.loc["Table 3 no tie-breaking c11"], tie.loc["Table 3 no tie-breaking c14"]
    assert c11.ours == "holds" and "over 200 queries, paired t-test p = 0.3000" in c11.evidence
    assert c14.ours == "does not hold"  # significantly different
    # The paper states it and tests nothing: its side is where it says so.
    assert set(tie.paper) == {"holds"} and tie.paper_evidence.str.startswith("stated: §5.2").all()
    # Too few queries to test: not decided; a split the table lacks: not available.
    few = _paired([("no_tie_breaking", 11, -0.018, 0.30, N.MIN_PAIRS - 1)])
    tie = N.check_claims(paper, paper, paired=few)[0].query("claim == 'no_tie_locals_similar'").set_index("scope")
    assert tie.loc["Table 3 no tie-breaking c11", "ours"] == "not decided"
    assert "too few queries" in tie.loc["Table 3 no tie-breaking c11", "evidence"]
    assert tie.loc["Table 3 no tie-breaking c14", "ours"] == "not available"


def test_claim_needing_a_missing_number_is_not_available():
    ours = _ours([("Table 4", "Split1", "M2", "DS", "ndcg@10", 0.7)])
    claims, effects = N.check_claims(ours)
    assert _claim(claims, "split1_m21_loses_to_m2").ours == "not available"
    assert set(claims.ours) == {"not available"}
    assert set(claims.paper) == {"holds", "does not hold"}
    assert effects.empty  # no comparison has both its numbers


def test_figure3_claim_reads_the_importance_table():
    imp = pd.DataFrame({"model": ["S1 M12S"] * 3 + ["S1 M21S"] * 3, "kind": "gain",
                        "feature": ["score_M1", "score_M2", "f3", "f3", "score_M1", "score_M2"],
                        "value": [9.0, 5.0, 1.0, 9.0, 5.0, 1.0], "share": 0.0,
                        "rank": [1, 2, 3, 1, 2, 3], "is_score": [True, True, False, False, True, True]})
    (finding,) = N._figure3(imp)
    assert finding.holds is False and "S1 M21S: top 2 by gain = f3, score_M1" in finding.evidence
    assert N._figure3(imp[imp.model == "S1 M12S"])[0].holds is True
    row = _claim(N.check_claims(N.paper_numbers(), importance=imp)[0], "score_features_most_important")
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
    assert "table3_locals_compared.csv" in text  # notebook 03's paired test is read too
    claims = pd.read_csv(run / F.FIDELITY_CLAIMS_CSV)
    assert set(claims.ours) == {"not available"}
    effects = pd.read_csv(run / "fidelity_effects.csv")
    assert list(effects.columns) == EFFECT_COLUMNS and effects.empty
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
    _paired([("no_tie_breaking", 11, -0.01, 0.4, 50)]).to_csv(t03 / "table3_locals_compared.csv", index=False)
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
    assert _claim(claims, "no_tie_locals_similar", "Table 3 no tie-breaking c11").ours == "holds"
    # Split1 M12α 0.65 against M1 0.5 and the paper's 0.730 against 0.619: one comparison's ratio.
    effects = pd.read_csv(run / "fidelity_effects.csv", keep_default_na=False, na_values=[""])
    e = effects[(effects.claim == "split1_m12_beats_both") & (effects.comparison == "Split1 M12α vs M1")]
    assert e.effect_ratio.tolist() == pytest.approx([(0.65 - 0.5) / (0.730 - 0.619)])
    text = (run / F.FIDELITY_MD).read_text()
    assert "### Notes on the source's own numbers (not counted)" in text and "same_model_same_number" in text
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


def test_the_ledger_says_which_claims_change_under_holms_correction(tmp_path):
    """Split1's merges beat M1 at p = 0.03 uncorrected; corrected over the table they do not:
    the claim that reads the marks holds, and under Holm it would not."""
    run = tmp_path / "r"
    t04 = run / "tables" / "04_linear_merge"
    t04.mkdir(parents=True)
    rows = [{"split": "Split1", "model": m, "metric": metric, "value": v, "queries": 50,
             "p_vs_M1": p1, "p_vs_M2": p2, "p_vs_M1_holm": h1, "p_vs_M2_holm": h2}
            for metric in ("ndcg@10", "map")
            for m, v, p1, p2, h1, h2 in (("M1", 0.5, float("nan"), 0.01, float("nan"), float("nan")),
                                         ("M2", 0.6, 0.01, float("nan"), float("nan"), float("nan")),
                                         ("M12α", 0.65, 0.03, 0.2, 0.12, 0.6), ("M21α", 0.64, 0.03, 0.3, 0.12, 0.6))]
    pd.DataFrame(rows).to_csv(t04 / "table4_linear_numeric.csv", index=False)
    F.write_fidelity(run)
    claims = pd.read_csv(run / F.FIDELITY_CLAIMS_CSV)
    assert _claim(claims, "linear_merge_gain_over_m1", "Table 4 Split1 nDCG@10").ours == "holds"
    text = (run / F.FIDELITY_MD).read_text()
    holm = text[text.index("### Under Holm's correction"):text.index("### Assumptions")]
    assert re.search(r"\| linear_merge_gain_over_m1 \| Table 4 Split1 nDCG@10 +\| holds +\| does not hold \|", holm)
    # The same run with corrected p below 0.05: nothing changes.
    frame = pd.DataFrame(rows).assign(p_vs_M1_holm=lambda f: f.p_vs_M1_holm.where(f.p_vs_M1_holm.isna(), 0.04))
    frame.to_csv(t04 / "table4_linear_numeric.csv", index=False)
    assert "No verdict changes under Holm." in F.write_fidelity(run).read_text()


def test_the_standard_fusions_are_asked_table_4s_question_beyond_the_paper(tmp_path):
    """Notebook 04's fusion baselines: does each beat both local models in most splits, as the
    merges do? Reported beyond the paper, never counted as its finding."""
    run = tmp_path / "r"
    t04 = run / "tables" / "04_linear_merge"
    t04.mkdir(parents=True)
    cells = {"M1": 0.50, "M2": 0.52, "RRF": 0.55, "CombSUM": 0.51}
    # The numbers notebook 04 saves beside its marked table (`ltrlib.metrics.MarkedTable`).
    pd.DataFrame([{"split": s, "model": m, "metric": "ndcg@10", "mean": v, "marked_a": True, "marked_b": False}
                  for m, v in cells.items() for s in ("Split1", "Split2", "Split3")]).to_csv(
        t04 / "fusion_baselines_numbers.csv", index=False)
    F.write_fidelity(run)
    claims = pd.read_csv(run / F.FIDELITY_CLAIMS_CSV)
    rrf, combsum = (_claim(claims, "merge_beats_locals_most", f"fusion {m}") for m in ("RRF", "CombSUM"))
    assert rrf.ours == "holds" and combsum.ours == "does not hold"
    assert rrf.beyond and rrf.paper == "not run" and "3/3 beat both" in rrf.evidence
    assert "Fusion Split1" not in F.write_fidelity(run).read_text()  # not a configuration the paper lacks
