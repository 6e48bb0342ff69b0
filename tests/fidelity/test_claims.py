"""One Claim type for every paper: deciding a claim, and the Effect Ratio and ΔRI beside it."""

import math

import pandas as pd
import pytest

from ltrlib import fidelity as F
from ltrlib.fidelity import noniid as N
from ltrlib.fidelity import noniid as N
from ltrlib.fidelity.claims import Claim, Effect, Finding, decide, delta_ri, effect_ratio


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


def test_the_paper_reproduces_itself_with_effect_ratio_one():
    """Every comparative non-IID claim, with the paper's numbers as ours: ER 1, ΔRI 0."""
    paper = N.paper_numbers()
    claims = N.check_claims(paper, paper)
    comparative = claims.dropna(subset=["effect_ratio"])
    assert len(comparative) >= 10
    assert comparative.effect_ratio.tolist() == pytest.approx([1.0] * len(comparative))
    assert comparative.delta_ri.abs().max() < 1e-12
    # Closeness claims compare nothing: no ratio.
    assert claims[claims.claim == "full_close_to_best"].effect_ratio.isna().all()


def test_decide_takes_the_paper_side_from_its_numbers_its_own_check_or_its_words():
    def check(x):
        return [Finding("A", x > 0, f"x = {x}", Effect.of([x + 1], [1.0])),
                Finding("B", None, "missing")]

    rows = pd.DataFrame(decide("p", [Claim("c", "x is positive", check)], 2.0, paper=1.0))
    assert rows.columns.tolist() == F.CLAIM_COLUMNS
    assert rows.ours.tolist() == ["holds", "not available"] and rows.paper.tolist() == ["holds", "not available"]
    assert rows.effect_ratio[0] == 2.0 and math.isnan(rows.effect_ratio[1])
    stated = Claim("c", "x is positive", check, stated="Figure 9")
    rows = pd.DataFrame(decide("p", [stated], -1.0))
    assert rows.ours.tolist() == ["does not hold", "not available"]
    assert rows.paper.tolist() == ["holds", "holds"] and rows.paper_evidence[0] == "stated: Figure 9"
    own = Claim("c", "x is positive", check, on_paper=lambda: [Finding("B", False, "printed")])
    rows = pd.DataFrame(decide("p", [own], 1.0, paper=5.0))
    # A one-finding paper side stands for every scope of ours.
    assert rows.paper.tolist() == ["does not hold", "does not hold"]
