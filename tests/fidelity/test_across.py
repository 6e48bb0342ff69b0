"""The rule across seeds (`ltrlib.fidelity.across`) on hand-made per-seed results whose
answers are known: each rule can hold, fail, split and decide nothing."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from ltrlib.fidelity.across import MIN_SEEDS, RULE, SEED_DEPENDENT, decide_across, rule_of
from ltrlib.fidelity.bilambdamart import BUDGET
from ltrlib.fidelity.claims import ACROSS_RULES, CLAIM_COLUMNS, EFFECT_COLUMNS
from ltrlib.fidelity.ledger import PAPERS
from ltrlib.metrics.significance import corrected

SEEDS = range(MIN_SEEDS)
#: Real claims of each rule (their `Claim.across` decides which rule the table gets).
EFFECT, NO_DIFF, NO_GAIN, VERDICTS = (("foltr", "type1_hurts"), ("foltr", "type3_no_difference"),
                                      ("foltr", "fedprox_fedper_no_gain_type2_R1"),
                                      ("foltr", "type2_R1_iid_online_rises_with_b"))


def _check(claim, scope, verdicts, improvements=None, evidence=""):
    """One check's rows at each seed and, with ``improvements``, one comparison's effect rows."""
    source, name = claim
    rows = [dict.fromkeys(CLAIM_COLUMNS, "") | {"source": source, "claim": name, "kind": "claim", "scope": scope,
                                                 "beyond": False, "ours": v, "evidence": evidence, "seed": s}
            for s, v in enumerate(verdicts)]
    effects = [dict.fromkeys(EFFECT_COLUMNS, np.nan) | {"source": source, "claim": name, "scope": scope,
                                                         "comparison": "A vs B", "dataset": "", "ours_improvement": d,
                                                         "seed": s}
               for s, d in enumerate(improvements or [])]
    return pd.DataFrame(rows), pd.DataFrame(effects, columns=[*EFFECT_COLUMNS, "seed"])


def _decide(*checks):
    claims = pd.concat([c for c, _ in checks], ignore_index=True)
    effects = pd.concat([e for _, e in checks], ignore_index=True)
    return decide_across(claims, effects).set_index("scope")


def test_every_claim_names_a_rule_and_the_rule_says_each():
    assert set(RULE) == set(ACROSS_RULES)
    assert {c.across for p in PAPERS.values() for c in p.claims} <= set(ACROSS_RULES)
    assert rule_of(*EFFECT) == "effect" and rule_of(*VERDICTS) == "verdicts" and rule_of("foltr", "gone") == "verdicts"


def test_an_effect_holds_fails_or_splits_by_its_test_across_seeds():
    up = [0.010, 0.012, 0.009, 0.011, 0.010]
    out = _decide(_check(EFFECT, "up", ["holds", "does not hold", "holds", "holds", "holds"], up),
                  _check(EFFECT, "down", ["does not hold"] * 3 + ["holds"] * 2, [-x for x in up]),
                  _check(EFFECT, "noise", ["holds", "does not hold"] * 2 + ["holds"], [0.01, -0.012, 0.008, -0.009, 0.002]))
    t = stats.ttest_1samp(up, 0, alternative="greater")
    assert out.loc["up", "p"] == pytest.approx(t.pvalue)
    # Holm over the paper's three effect checks.
    assert out.p_holm.to_numpy() == pytest.approx(corrected(out.p.to_numpy()))
    assert out.loc["up", "verdict"] == "holds" and out.loc["up", "per_seed"] == "✓ ✗ ✓ ✓ ✓"
    assert out.loc["down", "verdict"] == "does not hold" and "below 0" in out.loc["down", "evidence"]
    assert out.loc["noise", "verdict"] == SEED_DEPENDENT
    assert "A vs B: +0.0104 [" in out.loc["up", "evidence"]


def test_an_effect_that_fails_at_every_seed_does_not_hold_and_agreeing_seeds_without_a_test_decide_nothing():
    small = [0.004, -0.001, 0.003, 0.0, 0.002]
    out = _decide(_check(EFFECT, "fails", ["does not hold"] * 5, small),
                  _check(EFFECT, "agree", ["holds"] * 5, small),
                  _check(EFFECT, "few", ["holds"] * 4, small[:4]))
    assert out.loc["fails", "verdict"] == "does not hold" and "every one of 5" in out.loc["fails", "evidence"]
    assert out.loc["agree", "verdict"] == "not decided" and "the seeds agree" in out.loc["agree", "evidence"]
    assert out.loc["few", "verdict"] == "not decided" and "needs 5" in out.loc["few", "evidence"]


def test_no_difference_holds_only_as_no_evidence_with_the_power_it_had():
    out = _decide(_check(NO_DIFF, "same", ["holds"] * 5, [0.002, -0.003, 0.001, -0.001, 0.0015]),
                  _check(NO_DIFF, "differs", ["holds"] * 5, [-0.02, -0.021, -0.019, -0.022, -0.02]),
                  _check(NO_GAIN, "lower", ["holds"] * 5, [-0.02, -0.021, -0.019, -0.022, -0.02]),
                  _check(NO_GAIN, "gains", ["holds"] * 5, [0.02, 0.021, 0.019, 0.022, 0.02]))
    assert out.loc["same", "verdict"] == "holds" and "no evidence of a difference" in out.loc["same", "evidence"]
    assert "80% power to see" in out.loc["same", "evidence"]
    # A difference every seed missed (each "holds") is found across them.
    assert out.loc["differs", "verdict"] == "does not hold"
    # "No gain" is one-sided: a loss is no gain, a gain is.
    assert out.loc["lower", "verdict"] == "holds" and out.loc["gains", "verdict"] == "does not hold"
    assert np.isnan(out.loc["same", "p_holm"])  # no correction that would favour the claim


def test_verdicts_need_every_decided_seed_to_agree():
    out = _decide(_check(VERDICTS, "all", ["holds"] * 5), _check(VERDICTS, "none", ["does not hold"] * 5),
                  _check(VERDICTS, "split", ["holds"] * 4 + ["does not hold"]),
                  _check(VERDICTS, "short", ["holds"] * 4 + ["not decided"]),
                  _check(VERDICTS, "absent", ["not available"] * 5))
    assert out.loc["all", "verdict"] == "holds" and "p = 0.031" in out.loc["all", "evidence"]
    assert out.loc["none", "verdict"] == "does not hold"
    assert out.loc["split", "verdict"] == SEED_DEPENDENT
    assert out.loc["short", "verdict"] == "not decided"
    assert out.loc["absent", "verdict"] == "not available"


def test_the_budget_gate_holds_across_seeds():
    """A seed not decided for unequal budgets gives its effect to no test: five such seeds
    decide nothing, however large the effect."""
    out = _decide(_check(("bilambdamart", "trees_beat_networks"), "gated", ["not decided"] * 5, [0.05] * 5,
                         evidence=f"{BUDGET}: the networks had 4 trials"))
    assert out.loc["gated", "verdict"] == "not decided"
