"""One Claim type for every paper: deciding a claim, and the Effect Ratio and ΔRI beside it."""

import math

import pandas as pd
import pytest

from ltrlib import fidelity as F
from ltrlib.fidelity import noniid as N
from ltrlib.fidelity.claims import (
    EFFECT_COLUMNS,
    KINDS,
    MIN_PAIRS,
    UNSTABLE_BELOW,
    Claim,
    Comparison,
    Effect,
    Finding,
    claim_frames,
    decide,
    delta_ri,
    effect_ratio,
)

#: What every Claim must say of itself.
META = {"place": "§1", "quote": "x is positive", "test": "the sign", "threshold": "none: a direction"}


def test_effect_ratio_and_delta_ri_follow_breuer_et_al_on_a_hand_made_example():
    # Breuer et al. (SIGIR 2020), §3.2, with three topics. Original: baseline b, advanced a;
    # reproduction on other data: b', a'. ER = mean_j(a'_j - b'_j) / mean_j(a_j - b_j);
    # RI = (mean a - mean b) / mean b, and ΔRI = RI - RI'.
    b, a = [0.20, 0.40, 0.60], [0.30, 0.50, 0.90]       # improvements 0.1, 0.1, 0.3: mean 0.5/3
    b2, a2 = [0.10, 0.30, 0.50], [0.15, 0.30, 0.60]     # improvements 0.05, 0, 0.1: mean 0.05
    paper, ours = Effect.of(a, b), Effect.of(a2, b2)
    assert effect_ratio(ours, paper) == pytest.approx(0.05 / (0.5 / 3))
    ri, ri2 = (1.7 - 1.2) / 1.2, (1.05 - 0.9) / 0.9     # sums of a and b: the means' 1/3 cancels
    assert delta_ri(ours, paper) == pytest.approx(ri - ri2)
    # A reversed effect has a negative ratio; the same effect, 1 and ΔRI 0.
    assert effect_ratio(Effect.of(b, a), paper) == pytest.approx(-1.0)
    assert effect_ratio(paper, paper) == 1.0 and delta_ri(paper, paper) == 0.0
    assert math.isnan(effect_ratio(ours, None)) and math.isnan(delta_ri(None, paper))
    assert math.isnan(effect_ratio(ours, Effect(0.0, 0.5)))  # no effect to reproduce
    with pytest.raises(ValueError, match="as many values"):
        Effect.of([1.0], [1.0, 2.0])


def test_a_comparison_is_one_cell_against_one_baseline_and_missing_numbers_drop_it():
    c = Comparison.of("A vs B", 0.7, 0.6, dataset="WEB30K")
    assert (c.label, c.dataset) == ("A vs B", "WEB30K")
    assert c.effect.improvement == pytest.approx(0.1) and c.effect.baseline == 0.6
    paired = Comparison.of("A vs B", [0.7, 0.9], [0.6, 0.6])
    assert paired.effect.improvement == pytest.approx(0.2) and paired.effect.baseline == 0.6
    assert Comparison.of("A vs B", float("nan"), 0.6) is None
    # A finding leaves out the comparisons whose numbers were missing.
    f = Finding("s", True, "e", (c, Comparison.of("C vs B", float("nan"), 0.6)))
    assert f.comparisons == (c,)


def test_the_paper_reproduces_itself_with_effect_ratio_one():
    """Every comparison of the non-IID claims, with the paper's numbers as ours: ER 1 where
    the paper's effect is stable, NaN ("unstable") where it is below `UNSTABLE_BELOW`; ΔRI 0
    throughout. Ratios are per comparison, never pooled."""
    paper = N.paper_numbers()
    claims, effects = N.check_claims(paper, paper)
    assert list(effects.columns) == EFFECT_COLUMNS and "effect_ratio" not in claims.columns
    stable = effects[effects.stability == "stable"]
    assert len(stable) >= 30
    assert stable.effect_ratio.tolist() == pytest.approx([1.0] * len(stable))
    assert (stable.paper_improvement.abs() >= UNSTABLE_BELOW).all()
    assert effects.delta_ri.abs().max() < 1e-12
    unstable = effects[effects.stability != "stable"]
    assert len(unstable) >= 5 and unstable.effect_ratio.isna().all()
    assert unstable.stability.str.startswith("unstable: the source's effect").all()
    assert (unstable.paper_improvement.abs() < UNSTABLE_BELOW).all()
    # Each row is one comparison of one scope: no two rows of a scope share a label.
    assert not effects.duplicated(["claim", "scope", "comparison", "dataset"]).any()
    # Claims that compare no cells (an order of gaps, the marks, a note) have no rows.
    assert not set(effects.claim) & {"locals_comparable_split2", "same_model_same_number", "merged_marks_as_paper",
                                     "exclusive14_worst", "t1_m1_loses_off_category"}


def _check(x):
    return [Finding("A", x > 0, f"x = {x}", (Comparison.of("x+1 vs 1", x + 1, 1.0),)),
            Finding("B", None, "missing")]


def test_decide_takes_the_paper_side_from_its_numbers_its_own_check_or_its_words():
    claim = Claim("c", "x is positive", _check, **META)
    rows, effects = decide("p", [claim], 2.0, paper=1.0)
    rows, effects = pd.DataFrame(rows), pd.DataFrame(effects)
    assert rows.columns.tolist() == F.CLAIM_COLUMNS and effects.columns.tolist() == EFFECT_COLUMNS
    assert rows.ours.tolist() == ["holds", "not available"] and rows.paper.tolist() == ["holds", "not available"]
    assert set(rows.kind) == {"claim"} and not rows.beyond.any()
    assert rows.place[0] == "§1" and rows.quote[0] == "x is positive" and rows.threshold[0] == "none: a direction"
    # One effect row, for the one comparison: ours 2 against the paper's 1.
    assert len(effects) == 1 and effects.comparison[0] == "x+1 vs 1" and effects.scope[0] == "A"
    assert effects.effect_ratio[0] == 2.0 and effects.stability[0] == "stable"
    assert effects.delta_ri[0] == pytest.approx(1 / 1 - 2 / 1)
    stated = Claim("c", "x is positive", _check, stated="Figure 9", **META)
    rows, effects = claim_frames("p", [stated], -1.0)
    assert rows.ours.tolist() == ["does not hold", "not available"]
    assert rows.paper.tolist() == ["holds", "holds"] and rows.paper_evidence[0] == "stated: Figure 9"
    # The paper prints no number here: our comparison stands alone, without a ratio.
    assert len(effects) == 1 and math.isnan(effects.effect_ratio[0]) and effects.stability[0] == "no source number"
    own = Claim("c", "x is positive", _check, on_paper=lambda: [Finding("B", False, "printed")], **META)
    rows, _ = claim_frames("p", [own], 1.0, paper=5.0)
    # A one-finding paper side stands for every scope of ours.
    assert rows.paper.tolist() == ["does not hold", "does not hold"]


def test_a_small_paper_effect_is_unstable_not_a_ratio():
    claim = Claim("c", "x is positive", _check, **META)
    _, effects = claim_frames("p", [claim], 0.01, paper=UNSTABLE_BELOW / 2)
    row = effects.iloc[0]
    assert math.isnan(row.effect_ratio) and row.stability.startswith("unstable")
    assert row.delta_ri == pytest.approx(UNSTABLE_BELOW / 2 - 0.01)  # ΔRI is still given
    _, effects = claim_frames("p", [claim], 0.01, paper=UNSTABLE_BELOW * 2)
    assert effects.iloc[0].effect_ratio == pytest.approx(0.01 / (UNSTABLE_BELOW * 2))
    assert effects.iloc[0].stability == "stable"


def test_comparisons_meet_the_papers_by_label_one_row_per_dataset():
    def ours(_):
        return [Finding("s", True, "e", (Comparison.of("A vs B", 0.7, 0.6), Comparison.of("A vs C", 0.7, 0.5)))]

    def paper():
        return [Finding("s", True, "p", (Comparison.of("A vs B", 0.55, 0.5, "D1"),
                                         Comparison.of("A vs B", 0.8, 0.6, "D2"),
                                         Comparison.of("A vs Z", 0.9, 0.1, "D1")))]

    _, effects = claim_frames("p", [Claim("c", "s", ours, on_paper=paper, **META)], None)
    by = effects.set_index(["comparison", "dataset"]).effect_ratio
    # "A vs B" meets both of the paper's datasets, each its own ratio; "A vs C" has none.
    assert by[("A vs B", "D1")] == pytest.approx(0.1 / 0.05) and by[("A vs B", "D2")] == pytest.approx(0.1 / 0.2)
    assert math.isnan(by[("A vs C", "")]) and len(effects) == 3


def test_not_decided_and_beyond_scopes_say_so():
    def check(_):
        return [Finding.undecided("few", f"3 pairs: fewer than {MIN_PAIRS}", (Comparison.of("A vs B", 0.7, 0.6),)),
                Finding("more", True, "ran", beyond=True)]

    claim = Claim("c", "s", check, on_paper=lambda: [Finding("few", True, "printed"), Finding("more", True, "x")],
                  **META)
    rows, effects = claim_frames("p", [claim], None)
    assert rows.ours.tolist() == ["not decided", "holds"]
    assert rows.paper.tolist() == ["holds", "not run"] and rows.beyond.tolist() == [False, True]
    assert rows.paper_evidence[1].startswith("beyond the source")
    assert len(effects) == 1  # an undecided test still shows its effect
    with pytest.raises(ValueError, match="neither holds nor fails"):
        Finding("x", True, "e", not_decided=True)


def test_a_claim_says_how_it_reads_its_source_and_what_kind_it_is():
    with pytest.raises(ValueError, match="does not say its quote, test"):
        Claim("c", "s", _check, place="§1", threshold="none")
    with pytest.raises(ValueError, match="kind 'finding'"):
        Claim("c", "s", _check, kind="finding", **META)
    assert {Claim("c", "s", _check, kind=k, **META).kind for k in KINDS} == {"claim", "note", "exact", "control"}
