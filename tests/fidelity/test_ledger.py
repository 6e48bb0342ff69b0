"""The ledger of a run: one section per paper the run executed, and a head table that counts."""

import json

import numpy as np
import pandas as pd
import pytest

from ltrlib import fidelity as F
from ltrlib.fidelity.claims import EFFECT_COLUMNS, MIN_PAIRS
from ltrlib.fidelity.across import ACROSS_COLUMNS_V2, effect_ratio_intervals


def _run_dir(tables, tmp_path, seed=4):
    run = tables.bilambdamart_run(tmp_path)
    # At the paper's T, so that the online comparisons have Effect Ratios to average.
    tables.write_foltr_runs(run, tables.foltr_runs(np.random.default_rng(seed), rounds=10_000))
    t08 = run / "tables" / "08_xgboost_backends"
    t08.mkdir(parents=True)
    for name, frame in tables.notes().items():
        if name != "click_curves":  # notebook 09 did not run
            frame.to_csv(t08 / f"{name}.csv", index=False)
    params = {"dataset": "synthetic", "scale": "small", "seed": seed}
    notebooks = {nb: {"status": "completed"} for nb in ("06_bilambdamart", "07_foltr_noniid", "08_xgboost_backends")}
    (run / "run.json").write_text(json.dumps({"run_id": "r", "params": params, "notebooks": notebooks}))
    return run


def test_a_section_per_executed_paper_and_a_summary_that_counts_them(tables, tmp_path):
    run = _run_dir(tables, tmp_path)
    text = F.write_fidelity(run).read_text()
    claims = pd.read_csv(run / F.FIDELITY_CLAIMS_CSV)
    # The same ledger as a page to look at: the verdict chart, a forest per paper with
    # comparisons, the claims with their evidence folded; its section is the index's.
    page, section = (run / F.FIDELITY_HTML).read_text(), (run / "fidelity_section.html").read_text()
    assert section in page and 'alt="Verdicts per paper"' in section
    assert section.count('<img src="data:image/png;base64,') == 1 + F.fidelity_report(run).effects.source.nunique()
    assert section.count("<summary>evidence</summary>") == len(claims)
    assert F.verdict_frame(F.fidelity_report(run)).groupby("paper").checks.sum().sum() == len(claims)
    assert list(claims.columns) == F.CLAIM_COLUMNS
    assert list(pd.unique(claims.source)) == ["bilambdamart", "foltr", "xgboost"]
    # Notebooks 00-05 did not run: no non-IID section and no numbers file.
    assert "Learning to Rank for Non-IID Datasets" not in text and not (run / F.FIDELITY_CSV).exists()
    for paper in ("Bi-LambdaMART", "Federated Online Learning to Rank", "XGBoost's learning-to-rank notes"):
        assert f"## {paper}" in text or paper in text
    head = F.summary_table(F.fidelity_report(run)).set_index("paper")
    assert list(head.reset_index().columns) == ["paper", "notebooks", "data", "scale", "seed", "holds",
                                                "does not hold", "not decided", "not available",
                                                "outside the tally"]
    for source, paper in F.PAPERS.items():
        if source == "noniid":
            continue
        mine = claims[claims.source == source]
        # The tally counts the paper's claims in the scopes it ran, and nothing else.
        counted = mine[(mine.kind == "claim") & ~mine.beyond]
        row = head.loc[paper.title]
        for verdict in ("holds", "does not hold", "not decided", "not available"):
            assert row[verdict] == (counted.ours == verdict).sum(), (source, verdict)
        assert row[["holds", "does not hold", "not decided", "not available"]].sum() == len(counted)
        assert (row.data, row.scale, row.seed) == ("synthetic", "small", 4)
    # What stands outside: Bi-LambdaMART's control, FOLTR's neural Types 3-4 and its exact check.
    bi, foltr = head.loc[F.PAPERS["bilambdamart"].title], head.loc[F.PAPERS["foltr"].title]
    assert bi["outside the tally"] == "our controls 1"
    # Table 3's rise with B is a note on the paper's numbers (issue 62), its six scopes outside.
    assert foltr["outside the tally"] == ("beyond the paper 6, notes on the source's own numbers 6, exact checks of "
                                          "our code against the source 1")
    notes = head.loc[F.PAPERS["xgboost"].title]
    # The mean pair method, which the notes except from "the same regardless of hardware", beyond them.
    assert notes["outside the tally"] == "beyond the paper 1, our controls 1"
    # Notebook 09 did not run: its claim is not available, every other of the notes' holds.
    assert (notes.holds, notes["not available"], notes["does not hold"]) == (9, 1, 0)
    assert foltr["not available"] == 3  # no type1 remedies, no Type 4 on Types 1-2
    # "No gain" asks for a gain shown below +0.005: at this seed one FedProx arm's one-sided
    # bound is +0.0051 (the fixture's noise is 0.005 an arm), so it is not decided.
    assert (foltr.holds, foltr["not decided"]) == (25, 1)
    # Every comparison's Effect Ratio, in its own file and in its section.
    effects = pd.read_csv(run / "fidelity_effects.csv", keep_default_na=False, na_values=[""])
    assert list(effects.columns) == EFFECT_COLUMNS
    assert list(pd.unique(effects.source)) == ["bilambdamart", "foltr"]  # the tutorial prints no effect
    assert effects[effects.stability == "stable"].effect_ratio.notna().all()
    assert effects[effects.stability != "stable"].effect_ratio.isna().all()
    assert "| Is Non-IID Data a Threat" in text  # the head table is in the Markdown
    assert "### Effect Ratios, comparison by comparison" in text and "The central claim over seeds." in text
    assert "### Beyond the paper" in text and "### Our controls (not counted)" in text
    assert "### Exact checks of our code against the source (not counted)" in text
    assert "median effect ratio" not in text


def test_not_decided_checks_are_counted_as_such(tables, tmp_path):
    """One seed of FOLTR runs: its paired tests have 3 pairs, fewer than `MIN_PAIRS`."""
    run = _run_dir(tables, tmp_path)
    tables.write_foltr_runs(run, tables.foltr_runs(np.random.default_rng(4), seeds=1))
    head = F.summary_table(F.fidelity_report(run)).set_index("paper")
    foltr = head.loc[F.PAPERS["foltr"].title]
    claims = F.fidelity_report(run).claims.query("source == 'foltr' and kind == 'claim' and not beyond")
    assert foltr["not decided"] == (claims.ours == "not decided").sum() >= 10
    assert foltr.holds == (claims.ours == "holds").sum()
    text = F.write_fidelity(run).read_text()
    assert "not decided" in text and f"fewer than {MIN_PAIRS} pairs" in text


def test_a_missing_table_is_named_in_its_section(tables, tmp_path):
    run = _run_dir(tables, tmp_path)
    (run / "tables" / "07_foltr_noniid" / "runs_online.csv").unlink()
    text = F.write_fidelity(run).read_text()
    assert "`tables/07_foltr_noniid/runs_online.csv`" in text
    foltr = pd.read_csv(run / F.FIDELITY_CLAIMS_CSV).query("source == 'foltr'")
    assert set(foltr.ours) == {"not available"}
    assert "foltr" not in set(pd.read_csv(run / "fidelity_effects.csv").source)


def test_across_seeds_each_check_has_its_verdicts_per_seed_and_an_interval_per_comparison(tables, tmp_path, capsys):
    from scipy import stats

    from ltrlib import cli

    runs = [_run_dir(tables, tmp_path / f"s{seed}", seed) for seed in (4, 5, 6)]
    per_run, summary = F.across_runs(runs)
    assert sorted(per_run.seed.unique()) == [4, 5, 6]
    assert list(summary.columns) == [*ACROSS_COLUMNS_V2, "effect_ratios"]  # a new reading goes by rule v2
    row = summary.set_index(["claim", "scope"]).loc[("type1_hurts", "type1 linear online")]
    assert (row.seeds, row.holds, row.kind, row.rule, row.per_seed) == (3, 3, "claim", "effect", "✓ ✓ ✓")
    # Three seeds are fewer than the rule needs: nothing is decided across them.
    assert row.verdict == "not decided" and "needs 5" in row.evidence
    assert summary.set_index("claim").loc["control_no_pairwise_gain", "kind"] == "control"
    # Each comparison's ratio over the seeds, with its 95 % t-interval: never pooled over clicks.
    effects = pd.concat([F.fidelity_report(r).effects.assign(seed=s) for s, r in zip((4, 5, 6), runs)])
    intervals = effect_ratio_intervals(effects)
    mine = intervals[(intervals.claim == "type1_hurts") & (intervals.scope == "type1 linear online")]
    assert len(mine) == 3  # one per click model
    for click in tables.CLICKS:
        label = f"IID vs non-IID, {click} clicks"
        er = effects[(effects.claim == "type1_hurts") & (effects.scope == "type1 linear online")
                     & (effects.comparison == label)].effect_ratio
        half = stats.t.ppf(0.975, 2) * er.std(ddof=1) / np.sqrt(3)
        got = mine.set_index("comparison").loc[label]
        assert got.seeds_with_ratio == 3 and got.effect_ratio_mean == pytest.approx(er.mean())
        assert got.effect_ratio_low == pytest.approx(er.mean() - half)
        assert got.effect_ratio_high == pytest.approx(er.mean() + half) and got.effect_ratio_high > got.effect_ratio_low
        assert f"{label}: ER {er.mean():.2f} [{er.mean() - half:.2f}, {er.mean() + half:.2f}]" in row.effect_ratios
    # An unstable comparison has no ratio to average; one without comparisons says nothing.
    central = summary.set_index("claim").loc["bi_beats_univariate", "effect_ratios"]
    assert "Bi-λMART vs λMART (WEB30K): no stable ratio" in central
    assert summary.set_index("claim").loc["without_d_close_to_star", "effect_ratios"] == ""
    # The command: each run's ledger, then the checks with their verdict per seed.
    out_csv = tmp_path / "seeds.csv"
    assert cli.main(["fidelity", *map(str, runs), "--csv", str(out_csv)]) == 0
    out = capsys.readouterr().out
    assert "✓ ✓ ✓" in out and "type1_hurts" in out and all((r / "fidelity.md").exists() for r in runs)
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
