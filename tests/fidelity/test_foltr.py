"""The FOLTR paper's findings as claims on notebook 07's runs, and the exact online check."""


import numpy as np
import pandas as pd
import pytest

from ltrlib.fidelity import foltr as FO
from ltrlib.fidelity.claims import EFFECT_COLUMNS, MIN_PAIRS, UNSTABLE_BELOW
from ltrlib.fidelity.foltr import foltr_claims
from ltrlib.foltr import partition as P
from ltrlib.foltr import simulate as S
from ltrlib.foltr.federated import cumulative_online, discount_sum


def _verdicts(claims):
    return claims.groupby("claim").ours.agg(lambda v: ",".join(sorted(set(v)))).to_dict()


def _counted(claims):
    """The paper's claims in the scopes it ran (what the ledger's tally counts)."""
    return claims[(claims.kind == "claim") & ~claims.beyond.astype(bool)]


def test_the_papers_pattern_makes_every_claim_hold(tmp_path, tables):
    claims, effects, missing = foltr_claims(tables.write_foltr_runs(tmp_path,
                                                                    tables.foltr_runs(np.random.default_rng(0))))
    assert missing == []
    assert list(effects.columns) == EFFECT_COLUMNS
    v = _verdicts(_counted(claims))
    for name in ("type1_hurts", "type2_R1_hurts", "type2_R1_larger_b_better_perfect",
                 "type2_R2_gap_minimal", "type2_R2_far_above_R1",
                 "sharing_improves_type2_R1", "fedprox_fedper_no_gain_type2_R1", "type3_no_difference"):
        assert v[name] == "holds", (name, claims[claims.claim == name].evidence.tolist())
    # #R = 2's gap of 0.01 within ±0.02 (TOST over 15 runs); Table 3's rise with B a note.
    assert "against ±0.02" in claims[claims.claim == "type2_R2_gap_minimal"].evidence.iloc[0]
    note = claims[claims.claim == "type2_R1_iid_online_rises_with_b"]
    assert set(note.kind) == {"note"} and set(note.ours) == {"holds"} and len(note) == 6
    assert "type2_R1_iid_online_rises_with_b" not in v
    # Type 4 on top of Types 1 and 2 did not run: not available, naming the parameter.
    t4 = claims[claims.claim == "type4_no_difference"].set_index("scope")
    assert t4.loc["type4 linear offline", "ours"] == "holds" and t4.loc["type4 linear online", "ours"] == "holds"
    assert t4.loc["type4_type1", "ours"] == "not available" and "`settings`" in t4.loc["type4_type1", "evidence"]
    # Type 2 #R = 1 at each B of the sweep.
    assert set(claims[claims.claim == "type2_R1_hurts"].scope) == {
        f"{s} {r} offline" for s in ("type2_R1_B2", "type2_R1", "type2_R1_B10") for r in ("linear", "neural")}
    # The exact check is no finding of the paper: its own kind, out of the tally.
    exact = claims[claims.claim == "type2_R1_online_constant"]
    assert exact.kind.tolist() == ["exact"] and exact.ours.tolist() == ["holds"] and exact.paper.tolist() == ["holds"]
    assert "type2_R1_online_constant" not in set(_counted(claims).claim)
    # Type 1 in four scopes: each ranker, offline and online, paired over 3 clicks x 5 seeds.
    t1 = claims[claims.claim == "type1_hurts"].set_index("scope")
    assert list(t1.index) == [f"type1 {r} {m}" for r in ("linear", "neural") for m in ("offline", "online")]
    assert "15 runs" in t1.loc["type1 linear offline", "evidence"]
    # Online against the paper's Table 2 (its ▲), one comparison per click model, in the
    # paper's quantity (cumulative online NDCG over the rounds that ran). These runs have
    # T = 300 against the paper's 10,000: the sums are different quantities, so no Effect
    # Ratio (test_the_papers_table2_as_ours_gives_effect_ratio_one has one at the paper's T).
    online = t1.loc["type1 linear online"]
    assert online.paper == "holds" and "1002.36" in online.paper_evidence
    e = effects[(effects.claim == "type1_hurts") & (effects.scope == "type1 linear online")].set_index("comparison")
    assert sorted(e.index) == sorted(f"IID vs non-IID, {c} clicks" for c in tables.CLICKS)
    for click, (iid, non) in FO.PAPER_TABLE2["linear"].items():
        row = e.loc[f"IID vs non-IID, {click} clicks"]
        assert row.stability == "not comparable: T = 300 against 10,000" and np.isnan(row.effect_ratio)
        assert row.paper_improvement == pytest.approx(iid - non)
        assert row.ours_improvement == pytest.approx(0.2 * discount_sum(300), rel=0.05)
    # Offline the paper shows a figure: its verdict is where it says so; the comparisons are
    # ours alone, with no ratio.
    offline = t1.loc["type1 linear offline"]
    assert offline.paper == "holds" and "Figure 3" in offline.paper_evidence
    e_off = effects[(effects.claim == "type1_hurts") & (effects.scope == "type1 linear offline")]
    assert len(e_off) == 3 and e_off.effect_ratio.isna().all() and set(e_off.stability) == {"no source number"}
    # Table 3's IID rows rise with B: one ratio per ranker and click model, B = 10 against B = 2.
    rise = effects[(effects.claim == "type2_R1_iid_online_rises_with_b")].set_index("scope")
    linear_perfect = FO.PAPER_TABLE3_IID[("linear", "perfect")]
    assert rise.loc["linear perfect", "paper_improvement"] == pytest.approx(linear_perfect[2] - linear_perfect[0])
    assert rise.loc["linear perfect", "stability"].startswith("not comparable")
    at_paper_t = tables.foltr_runs(np.random.default_rng(0), rounds=10_000)
    _, effects_t, _ = foltr_claims(tables.write_foltr_runs(tmp_path / "paper_T", at_paper_t))
    rise_t = effects_t[effects_t.claim == "type2_R1_iid_online_rises_with_b"].set_index("scope")
    paper_rise = linear_perfect[2] - linear_perfect[0]
    assert rise_t.loc["linear perfect", "effect_ratio"] == pytest.approx(0.1 * discount_sum(10_000) / paper_rise)
    # No type1 remedies here: not available, saying which parameter.
    assert v["type1_remedies_do_not_close_gap"] == "not available"
    assert "remedy_setting" in claims[claims.claim == "type1_remedies_do_not_close_gap"].evidence.iloc[0]


def test_types_3_and_4_with_the_neural_ranker_are_beyond_the_paper(tmp_path, tables):
    claims, _, _ = foltr_claims(tables.write_foltr_runs(tmp_path, tables.foltr_runs(np.random.default_rng(0))))
    beyond = claims[claims.beyond.astype(bool)]
    # The paper ran Types 3 and 4 with the linear ranker only (§7, Figures 8-9).
    assert set(beyond.claim) == {"type3_no_difference", "type4_no_difference"}
    assert beyond.scope.str.contains(" neural ").all() and len(beyond) == 3 * 2  # 3 settings x 2 measures
    assert set(beyond.paper) == {"not run"} and beyond.paper_evidence.str.startswith("beyond the source").all()
    assert set(beyond.ours) == {"holds"}  # decided and reported, only not the paper's
    linear = claims[claims.claim.isin(["type3_no_difference", "type4_no_difference"])
                    & claims.scope.str.contains(" linear ")]
    assert not linear.beyond.astype(bool).any() and set(linear.paper) == {"holds"}
    # Every other claim's neural scope is the paper's own (it ran both rankers there).
    t1 = claims[(claims.claim == "type1_hurts") & claims.scope.str.contains("neural")]
    assert not t1.beyond.astype(bool).any() and set(t1.paper) == {"holds"}


def test_claims_fail_when_the_runs_say_otherwise(tmp_path, tables):
    runs = tables.foltr_runs(np.random.default_rng(1), type1_gap=0.0, sharing_gain=0.0)
    runs.loc[(runs.setting == "type4") & (runs.data == "non-IID"), "final_offline"] -= 0.1
    runs.loc[(runs.setting == "type2_R1") & (runs.data == "non-IID"), "cumulative_online"] *= 0.99
    # #R = 2 further below IID than #R = 1 (gap 0.22 against 0.2): no minimal gap, not above #R = 1.
    r2 = (runs.setting == "type2_R2") & (runs.data == "non-IID")
    runs.loc[r2, "final_offline"] -= 0.21
    # B = 10 no better than B = 2 with perfect clicks, and IID online not rising with B.
    b10 = runs.setting == "type2_R1_B10"
    runs.loc[b10 & (runs.data == "non-IID"), "final_offline"] -= 0.1
    iid_b10 = b10 & (runs.data == "IID")
    runs.loc[iid_b10, "cumulative_online"] = 0.4 * runs.loc[iid_b10, "n_rounds"].map(discount_sum)
    # FedProx above FedAvg significantly: a gain the paper says it does not give.
    fedprox = (runs.setting == "type2_R1") & (runs.remedy == "fedprox(mu=0.1)")
    runs.loc[fedprox, "final_offline"] += 0.05
    claims, _, _ = foltr_claims(tables.write_foltr_runs(tmp_path, runs))
    v = _verdicts(claims)
    assert v["type1_hurts"] == "does not hold" and v["sharing_improves_type2_R1"] == "does not hold"
    assert v["type2_R1_online_constant"] == "does not hold"
    assert "does not hold" in v["type4_no_difference"]
    assert v["type2_R2_gap_minimal"] == "does not hold" and v["type2_R2_far_above_R1"] == "does not hold"
    assert v["type2_R1_larger_b_better_perfect"] == "does not hold"
    assert v["type2_R1_iid_online_rises_with_b"] == "does not hold"
    assert v["fedprox_fedper_no_gain_type2_R1"] == "does not hold"


def test_remedies_on_type1_are_checked_against_the_gap_on_the_same_runs(tmp_path, tables):
    runs = tables.foltr_runs(np.random.default_rng(2))
    t1 = runs[(runs.setting == "type1") & (runs.data == "non-IID")]
    small = t1.assign(remedy="fedprox(mu=1)", final_offline=t1.final_offline + 0.02)
    large = t1.assign(remedy="fedprox(mu=10)", final_offline=t1.final_offline + 0.15)
    claims, _, _ = foltr_claims(tables.write_foltr_runs(tmp_path, pd.concat([runs, small, large])))
    rem = claims[claims.claim == "type1_remedies_do_not_close_gap"].set_index("scope")
    assert rem.loc["type1 linear fedprox(mu=1)", "ours"] == "holds"
    assert rem.loc["type1 linear fedprox(mu=10)", "ours"] == "does not hold"  # closes 75 % of the gap
    gap = _gap(runs, "linear")
    assert f"closes {0.15 / gap.mean():.2f} of the IID gap" in rem.loc["type1 linear fedprox(mu=10)", "evidence"]
    assert f"closes {0.02 / gap.mean():.2f} of the IID gap" in rem.loc["type1 linear fedprox(mu=1)", "evidence"]


def _gap(runs, ranker):
    """Type 1's IID − FedAvg non-IID offline per run (click, seed)."""
    t1 = runs[(runs.setting == "type1") & (runs.ranker == ranker) & (runs.remedy == "none")]
    by = t1.set_index(["data", "click", "seed"]).final_offline
    return by["IID"] - by["non-IID"]


def test_the_remedy_gap_is_the_remedys_runs_gap(tmp_path, tables):
    """The IID gap a remedy is measured against is FedAvg's on the remedy's own runs: where
    FedAvg lost far more on runs the remedy did not run, the gap over every run would
    halve the share it closes."""
    runs = tables.foltr_runs(np.random.default_rng(3))
    t1 = (runs.setting == "type1") & (runs.data == "non-IID") & (runs.remedy == "none")
    informational = runs.click == "informational"
    # On the informational runs FedAvg's gap is 0.7, not 0.2; the remedy skipped them.
    runs.loc[t1 & informational, "final_offline"] -= 0.5
    mine = runs[t1 & ~informational]
    remedy = mine.assign(remedy="fedper", final_offline=mine.final_offline + 0.15)
    claims, _, _ = foltr_claims(tables.write_foltr_runs(tmp_path, pd.concat([runs, remedy])))
    row = claims[(claims.claim == "type1_remedies_do_not_close_gap")].set_index("scope").loc["type1 linear fedper"]
    # Over its 10 runs the remedy closes 0.15 of a 0.2 gap; over all 15 it would close 0.15 of
    # (10 × 0.2 + 5 × 0.7) / 15 ≈ 0.37, about 0.41: "limited", wrongly.
    gap = _gap(runs, "linear")
    same = gap.drop("informational", level="click")
    assert len(same) == 10 and 0.15 / gap.mean() < FO.LIMITED < 0.15 / same.mean()
    assert row.ours == "does not hold" and f"closes {0.15 / same.mean():.2f} of the IID gap" in row.evidence
    assert "10 runs" in row.evidence


def test_tests_over_fewer_than_five_pairs_are_not_decided(tmp_path, tables):
    # One seed: 3 pairs (one per click model) for Type 1, 1 for Type 3.
    runs = tables.foltr_runs(np.random.default_rng(4), seeds=1)
    t1 = runs[(runs.setting == "type1") & (runs.data == "non-IID")]
    remedy = t1.assign(remedy="fedprox(mu=1)", final_offline=t1.final_offline + 0.02)
    claims, effects, _ = foltr_claims(tables.write_foltr_runs(tmp_path, pd.concat([runs, remedy])))
    v = _verdicts(claims)
    for name in ("type1_hurts", "type2_R1_hurts", "type2_R2_gap_minimal", "type2_R2_far_above_R1",
                 "sharing_improves_type2_R1", "fedprox_fedper_no_gain_type2_R1", "type3_no_difference",
                 "type1_remedies_do_not_close_gap", "type2_R1_larger_b_better_perfect"):
        assert v[name] == "not decided", (name, claims[claims.claim == name].evidence.tolist())
    t1_rows = claims[claims.claim == "type1_hurts"].set_index("scope")
    said = t1_rows.loc["type1 linear online", "evidence"]
    assert "3 runs" in said and f"fewer than {MIN_PAIRS} pairs decide nothing" in said
    # A mean order decides without a test: Table 3's rise with B (a note) is decided on one seed.
    assert v["type2_R1_iid_online_rises_with_b"] == "holds"
    # An undecided test still shows its comparisons' effects beside the paper's.
    e = effects[(effects.claim == "type1_hurts") & (effects.scope == "type1 linear online")]
    assert len(e) == 3 and e.ours_improvement.notna().all() and e.paper_improvement.notna().all()
    # Five seeds of Type 3 (one click model each) decide; four do not.
    claims4, _, _ = foltr_claims(tables.write_foltr_runs(tmp_path / "four",
                                                         tables.foltr_runs(np.random.default_rng(4), seeds=4)))
    t3 = claims4[claims4.claim == "type3_no_difference"]
    assert set(t3.ours) == {"not decided"} and t3.evidence.str.contains("4 runs").all()
    assert _verdicts(claims4)["type1_hurts"] == "holds"  # 12 pairs


def test_the_papers_table2_as_ours_gives_effect_ratio_one(tmp_path, tables):
    """Type 1 runs at the paper's T whose online values are Table 2's: every comparison's
    Effect Ratio is 1 and its ΔRI 0."""
    rows = []
    for ranker, cells in FO.PAPER_TABLE2.items():
        for click, (iid, non) in cells.items():
            for seed in range(5):
                for data, value in (("IID", iid), ("non-IID", non)):
                    rows.append({"setting": "type1", "data": data, "ranker": ranker, "click": click,
                                 "remedy": "none", "seed": seed, "n_rounds": 10_000, "cumulative_online": value,
                                 "final_offline": 0.5, "mean_online": value / discount_sum(10_000)})
    _, effects, _ = foltr_claims(tables.write_foltr_runs(tmp_path, pd.DataFrame(rows)))
    online = effects[effects.scope.str.endswith("online") & (effects.claim == "type1_hurts")]
    assert len(online) == 6 and set(online.stability) == {"stable"}
    assert online.effect_ratio.tolist() == pytest.approx([1.0] * 6)
    assert online.delta_ri.abs().max() < 1e-12
    assert (online.paper_improvement.abs() >= UNSTABLE_BELOW).all()


def test_a_missing_table_makes_every_claim_not_available_and_names_it(tmp_path):
    claims, effects, missing = foltr_claims(tmp_path)
    assert missing == ["tables/07_foltr_noniid/runs_online.csv"]
    assert set(claims.ours) == {"not available"} and effects.empty
    assert set(claims.claim) == {c.name for c in FO.ALL_CLAIMS}


def test_the_online_metric_gives_the_papers_constant():
    assert round(cumulative_online(np.full(10_000, 0.8)), 2) == 1589.23
    assert cumulative_online(np.array([1.0, np.nan, 1.0]), gamma=0.5) == 1.25  # a round without interactions counts 0
    assert discount_sum(3, gamma=0.5) == 1.75


def test_real_label_skew_runs_have_the_constant_online_value():
    """#R = 1 with 5 clients, run for real: four clients hold one relevant label each (NDCG 1),
    one holds label 0 (NDCG 0), so every round's online NDCG is 0.8."""
    rng = np.random.default_rng(0)
    from ltrlib.data import Dataset

    def toy(n_queries, seed):
        r = np.random.default_rng(seed)
        n = n_queries * 10
        X = r.random((n, 4)).astype(np.float32)
        y = r.integers(0, 5, n).astype(np.int32)
        return Dataset(X=X, y=y, query_ids=np.arange(n_queries), offsets=np.arange(0, n + 1, 10), name=f"t{seed}")

    data = P.prepare_data(toy(60, rng.integers(100)), toy(20, 7))
    _, online = S.run_jobs(data, S.grid(["type2_R1"], [0], n_rounds=20, eval_every=10), n_jobs=1, progress=False)
    non = online[online.data == "non-IID"]
    assert non.cumulative_online.iloc[0] == pytest.approx(0.8 * discount_sum(20), abs=1e-9)


def test_the_ledger_reads_the_significance_claims_again_under_holm(tmp_path, tables):
    """Every test of a claim that says A is significantly above B, Holm-corrected as one
    family: a check that held at p < 0.05 holds under Holm only if its corrected p is too."""
    from statsmodels.stats.multitest import multipletests

    from ltrlib.fidelity.claims import Finding

    run = tables.write_foltr_runs(tmp_path, tables.foltr_runs(np.random.default_rng(0)))
    runs = FO.Runs(pd.read_csv(run / "tables" / "07_foltr_noniid" / "runs_online.csv"))
    claims, _, _ = foltr_claims(run)
    tested = [(c.name, f) for c in FO.CLAIMS if c.across == "effect" for f in c.check(runs)
              if not f.beyond and f.holds is not None and not np.isnan(f.p)]
    assert len(tested) > 10
    holm = multipletests([f.p for _, f in tested], method="holm")[1]
    lost = {(n, f.scope) for (n, f), p in zip(tested, holm) if f.holds and p >= 0.05}
    text = "\n".join(FO.section(run, {}).lines)
    assert "### Under Holm's correction" in text
    for name, scope in lost:
        assert name in text and scope in text
    if not lost:
        assert "No verdict changes under Holm." in text
    # A decided finding carries its test's p; one with no test has none.
    assert all(0 <= f.p <= 1 for _, f in tested) and np.isnan(Finding("s", None, "").p)


def test_a_measure_the_setting_fixes_is_no_test(tmp_path, tables):
    """Type 4 on top of Type 2 #R = 1, online: every run of both arms scores the constant 0.8
    (each client's lists hold one label), so "no difference" cannot fail: not available, and
    the same comparison of two arms that differ is decided."""
    runs = tables.foltr_runs(np.random.default_rng(0))
    base = runs[(runs.setting == "type4") & (runs.ranker == "linear")]
    fixed = base.assign(setting="type4_type2", cumulative_online=0.8 * discount_sum(int(base.n_rounds.iloc[0])))
    claims, _, _ = foltr_claims(tables.write_foltr_runs(tmp_path, pd.concat([runs, fixed])))
    t4 = claims[claims.claim == "type4_no_difference"].set_index("scope")
    assert t4.loc["type4_type2 linear online", "ours"] == "not available"
    assert "the same at every run of both" in t4.loc["type4_type2 linear online", "evidence"]
    assert t4.loc["type4_type2 linear offline", "ours"] == "holds"  # the offline values still vary
    assert FO._significantly_above(pd.Series([0.8] * 6), pd.Series([0.8] * 6), "s", "A", "B").holds is None
    margin = FO.NO_DIFFERENCE
    assert FO._within(pd.Series([0.8] * 6), pd.Series([0.8] * 6), "s", "A", "B", margin).holds is None
    assert FO._within(pd.Series([0.8, 0.7] * 3), pd.Series([0.8, 0.7] * 3), "s", "A", "B", margin).holds is True
    assert FO._no_gain(pd.Series([0.8] * 6), pd.Series([0.8] * 6), "s", "A", "B", margin).holds is None
    # "No gain" holds only when a gain below the margin is shown, fails when one beyond it is,
    # and p >= 0.05 for a gain decides nothing.
    base = pd.Series([0.30, 0.31, 0.29, 0.30, 0.32, 0.28] * 2)
    jitter = pd.Series([0.001, -0.001] * 6)
    assert FO._no_gain(base + jitter, base, "s", "A", "B", margin).holds is True
    assert FO._no_gain(base + 0.05 + jitter, base, "s", "A", "B", margin).holds is False
    wide = pd.Series([0.04, -0.04] * 6)
    undecided = FO._no_gain(base + wide, base, "s", "A", "B", margin)
    assert undecided.holds is None and "neither below nor beyond" in undecided.evidence
