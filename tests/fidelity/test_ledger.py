"""The ledger of a run: one section per paper the run executed, and a head table that counts."""

import json

import numpy as np
import pandas as pd
import pytest

from ltrlib import fidelity as F


def _run_dir(tables, tmp_path, seed=4):
    run = tables.bilambdamart_run(tmp_path)
    tables.write_foltr_runs(run, tables.foltr_runs(np.random.default_rng(seed)))
    t08 = run / "tables" / "08_xgboost_backends"
    t08.mkdir(parents=True)
    tables.pair_summary().to_csv(t08 / "pair_method_summary.csv", index=False)
    params = {"dataset": "synthetic", "scale": "small", "seed": seed}
    notebooks = {nb: {"status": "completed"} for nb in ("06_bilambdamart", "07_foltr_noniid", "08_xgboost_backends")}
    (run / "run.json").write_text(json.dumps({"run_id": "r", "params": params, "notebooks": notebooks}))
    return run


def test_a_section_per_executed_paper_and_a_summary_that_counts_them(tables, tmp_path):
    run = _run_dir(tables, tmp_path)
    text = F.write_fidelity(run).read_text()
    claims = pd.read_csv(run / F.FIDELITY_CLAIMS_CSV)
    assert list(claims.columns) == F.CLAIM_COLUMNS
    assert list(pd.unique(claims.source)) == ["bilambdamart", "foltr", "xgboost"]
    # Notebooks 00-05 did not run: no non-IID section and no numbers file.
    assert "Learning to Rank for Non-IID Datasets" not in text and not (run / F.FIDELITY_CSV).exists()
    for paper in ("Bi-LambdaMART", "Federated Online Learning to Rank", "XGBoost's learning-to-rank tutorial"):
        assert f"## {paper}" in text or paper in text
    head = F.summary_table(F.fidelity_report(run)).set_index("paper")
    for source, paper in F.PAPERS.items():
        if source == "noniid":
            continue
        mine = claims[claims.source == source]
        row = head.loc[paper.title]
        assert row.holds == (mine.ours == "holds").sum()
        assert row["does not hold"] + row["not available"] == (mine.ours != "holds").sum()
        assert (row.data, row.scale, row.seed) == ("synthetic", "small", 4)
    bi = head.loc[F.PAPERS["bilambdamart"].title]
    ratios = claims[claims.source == "bilambdamart"].effect_ratio.dropna()
    assert bi["median effect ratio"] == ratios.median()
    assert bi["effect ratios in [0.5, 2]"].endswith(f"of {len(ratios)}")
    assert "| Is Non-IID Data a Threat" in text  # the head table is in the Markdown
    assert "Effect Ratio" in text and "The central claim over seeds." in text


def test_a_missing_table_is_named_in_its_section(tables, tmp_path):
    run = _run_dir(tables, tmp_path)
    (run / "tables" / "07_foltr_noniid" / "runs_online.csv").unlink()
    text = F.write_fidelity(run).read_text()
    assert "`tables/07_foltr_noniid/runs_online.csv`" in text
    foltr = pd.read_csv(run / F.FIDELITY_CLAIMS_CSV).query("source == 'foltr' and scope != 'online metric'")
    assert set(foltr.ours) == {"not available"}


def test_across_seeds_each_check_counts_its_seeds_with_an_interval(tables, tmp_path, capsys):
    from scipy import stats

    from ltrlib import cli

    runs = [_run_dir(tables, tmp_path / f"s{seed}", seed) for seed in (4, 5, 6)]
    per_run, summary = F.across_runs(runs)
    assert sorted(per_run.seed.unique()) == [4, 5, 6]
    row = summary.set_index(["claim", "scope"]).loc[("type1_hurts", "type1 linear online")]
    assert (row.seeds, row.holds) == (3, 3)
    er = per_run[(per_run.claim == "type1_hurts") & (per_run.scope == "type1 linear online")].effect_ratio
    half = stats.t.ppf(0.975, 2) * er.std(ddof=1) / np.sqrt(3)
    assert row.effect_ratio_low == pytest.approx(er.mean() - half) and row.effect_ratio_high > row.effect_ratio_low
    # The command: each run's ledger, then the checks with their verdict per seed.
    out_csv = tmp_path / "seeds.csv"
    assert cli.main(["fidelity", *map(str, runs), "--csv", str(out_csv)]) == 0
    out = capsys.readouterr().out
    assert "seed 4" in out and "type1_hurts" in out and all((r / "fidelity.md").exists() for r in runs)
    assert "notebook 06 across seeds" in out and "Bi-λMART vs λMART*" in out  # its notebook-06 view
    assert len(pd.read_csv(out_csv)) == len(summary)
    # Runs of another setup, or of one seed twice, are refused, naming them.
    other = _run_dir(tables, tmp_path / "other", 7)
    manifest = json.loads((other / "run.json").read_text())
    manifest["params"]["scale"] = "paper"
    (other / "run.json").write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match=r"differ in \['scale'\]"):
        F.across_runs([runs[0], other])
    with pytest.raises(ValueError, match="both seed 4"):
        F.across_runs([runs[0], runs[0]])
