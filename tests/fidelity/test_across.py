"""The rule across seeds (`ltrlib.fidelity.across`) on hand-made per-seed results whose
answers are known: each rule of each version can hold, fail, split and decide nothing. v1
decided ``reports/ledger-small``; v2 (issue 62) decides a new study."""

import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from ltrlib import config
from ltrlib.fidelity.across import (
    ACROSS_COLUMNS,
    ACROSS_COLUMNS_V2,
    FLOOR,
    MARGINS,
    MIN_SEEDS,
    READINGS_V2,
    REASONS_V2,
    RULE,
    RULE_V2,
    RULES,
    SEED_DEPENDENT,
    WHY_ABSENT,
    WHY_FEW_SEEDS,
    WHY_HETEROGENEOUS,
    WHY_MORE_SEEDS,
    WHY_PART,
    WHY_SPLIT,
    WHY_UNTESTABLE,
    decide_across,
    design_terms,
    margin_of,
    rule_of,
    rule_version,
)
from ltrlib.fidelity.bilambdamart import BUDGET
from ltrlib.fidelity.claims import ACROSS_RULES, CLAIM_COLUMNS, EFFECT_COLUMNS, MIN_PAIRS, UNSTABLE_BELOW, Effect
from ltrlib.fidelity.ledger import PAPERS
from ltrlib.foltr.federated import discount_sum
from ltrlib.metrics.significance import corrected

SEEDS = range(MIN_SEEDS)
#: Real claims of each rule (their `Claim.across` decides which rule the table gets).
EFFECT, NO_DIFF, NO_GAIN, VERDICTS = (("foltr", "type1_hurts"), ("foltr", "type3_no_difference"),
                                      ("foltr", "fedprox_fedper_no_gain_type2_R1"),
                                      ("foltr", "type2_R1_iid_online_rises_with_b"))


def _check(claim, scope, verdicts, improvements=None, evidence="", se=np.nan, units=1):
    """One check's rows at each seed and, with ``improvements``, one comparison's effect rows,
    each with the within-seed standard error ``se`` (one number, or one per seed) from ``units``."""
    source, name = claim
    rows = [dict.fromkeys(CLAIM_COLUMNS, "") | {"source": source, "claim": name, "kind": "claim", "scope": scope,
                                                 "beyond": False, "ours": v, "evidence": evidence, "seed": s}
            for s, v in enumerate(verdicts)]
    ses = np.broadcast_to(np.asarray(se, dtype=float), (len(improvements or []),))
    effects = [dict.fromkeys(EFFECT_COLUMNS, np.nan) | {"source": source, "claim": name, "scope": scope,
                                                         "comparison": "A vs B", "dataset": "", "ours_improvement": d,
                                                         "ours_se": e, "ours_units": units, "horizon": 0, "seed": s}
               for s, (d, e) in enumerate(zip(improvements or [], ses))]
    return pd.DataFrame(rows), pd.DataFrame(effects, columns=[*EFFECT_COLUMNS, "seed"])


def _decide(*checks, rule="v1"):
    claims = pd.concat([c for c, _ in checks], ignore_index=True)
    effects = pd.concat([e for _, e in checks], ignore_index=True)
    return decide_across(claims, effects, rule).set_index("scope")


def _v2(*checks):
    return _decide(*checks, rule="v2")


def test_every_claim_names_a_rule_and_the_rule_says_each():
    assert set(RULE) == set(ACROSS_RULES) and set(RULE_V2) >= set(ACROSS_RULES) and set(RULES) == {"v1", "v2"}
    assert {c.across for p in PAPERS.values() for c in p.claims} <= set(ACROSS_RULES)
    assert rule_of(*EFFECT) == "effect" and rule_of(*VERDICTS) == "verdicts" and rule_of("foltr", "gone") == "verdicts"
    # Every margin and reading names a claim that exists, and a margin says whose number it is.
    names = {(source, c.name) for source, p in PAPERS.items() for c in p.claims}
    assert set(MARGINS) <= names and set(READINGS_V2) <= names
    assert all(m.whose in ("the paper's", "ours") and m.value > 0 for m in [*MARGINS.values(), FLOOR])


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


# --------------------------------------------------------------------------- rule v2

FEW_RUNS = ("foltr", "type1_remedies_do_not_close_gap")  # decided on its seeds' means (`READINGS_V2`)
SIMILAR = ("noniid", "no_tie_locals_similar")  # a margin the paper gives (`MARGINS`)


def test_a_v1_study_keeps_its_table_and_design_and_a_new_one_is_v2():
    """v1's table is the one that decided ledger-small, column for column; its stored design is
    what `design_terms("v1")` rebuilds, so the study is still decided by v1."""
    check = _check(NO_DIFF, "wide", ["holds"] * 5, [0.02, -0.03, 0.01, -0.02, 0.025])
    assert list(_decide(check).reset_index()[ACROSS_COLUMNS].columns) == ACROSS_COLUMNS
    assert list(decide_across(*check, "v1").columns) == ACROSS_COLUMNS
    assert list(decide_across(*check, "v2").columns) == ACROSS_COLUMNS_V2
    # v1 calls it holding on p ≥ 0.05 alone; v2 asks for equivalence and does not get it.
    assert _decide(check).loc["wide", "verdict"] == "holds" and _v2(check).loc["wide", "verdict"] == "not decided"
    stored = json.loads((config.PROJ_ROOT / "reports" / "ledger-small" / "design.json").read_text())
    assert rule_version(stored) == "v1" and {k: stored[k] for k in design_terms("v1")} == design_terms("v1")
    assert "rule_version" not in design_terms("v1") and design_terms("v2")["rule_version"] == "v2"
    assert rule_version(design_terms("v2")) == "v2" and design_terms("v2")["rule"] == RULE_V2
    with pytest.raises(ValueError, match="'v3' is not a rule version"):
        decide_across(*check, "v3")


def test_v2_effect_holds_fails_and_without_heterogeneity_needs_more_seeds():
    up = [0.010, 0.012, 0.009, 0.011, 0.010]
    out = _v2(_check(EFFECT, "up", ["holds", "does not hold", "holds", "holds", "holds"], up),
              _check(EFFECT, "down", ["holds"] * 5, [-0.004, -0.006, -0.005, -0.002, -0.003]),
              # Noise around +0.001, each seed's effect known to ±0.01: no heterogeneity, more seeds.
              _check(EFFECT, "noise", ["holds", "does not hold"] * 2 + ["holds"], [0.012, -0.01, 0.011, -0.008, 0.0],
                     se=0.01, units=1000),
              # The same spread with no within-seed SE (two means compared): Q cannot be computed.
              _check(EFFECT, "means", ["holds", "does not hold"] * 2 + ["holds"], [0.012, -0.01, 0.011, -0.008, 0.0]))
    t = stats.ttest_1samp(up, 0, alternative="greater")
    assert out.loc["up", "p"] == pytest.approx(t.pvalue) and out.loc["up", "verdict"] == "holds"
    assert out.p_holm.to_numpy() == pytest.approx(corrected(out.p.to_numpy()))  # Holm over the paper's tests
    # The seeds' votes split at "up" and agree at "down": neither counts, the means do.
    assert out.loc["down", "verdict"] == "does not hold" and "below 0" in out.loc["down", "evidence"]
    low, high = stats.t.interval(0.90, 4, loc=np.mean(up), scale=stats.sem(up))
    assert (out.loc["up", "low"], out.loc["up", "high"]) == pytest.approx((low, high))
    noise = out.loc["noise"]
    assert noise.verdict == "not decided" and noise.evidence.startswith("more seeds needed")
    assert noise.q_p > 0.05 and "no heterogeneity shown" in noise.evidence
    assert math.isfinite(noise.seeds_needed) and noise.seeds_needed > MIN_SEEDS
    assert f"about {noise.seeds_needed:.0f} seeds" in noise.evidence
    means = out.loc["means"]
    assert means.verdict == "not decided" and math.isnan(means.q_p)
    assert "heterogeneity not testable: no within-seed SE" in means.evidence
    # The reason a closing count groups by: empty where a test decides.
    assert (noise.reason, means.reason) == (WHY_MORE_SEEDS, WHY_UNTESTABLE)
    assert out.loc[["up", "down"], "reason"].tolist() == ["", ""]


def test_v2_seed_dependent_only_where_heterogeneity_is_shown():
    """Cochran's Q over the seeds' effects weighed by their within-seed SEs: a spread far
    beyond those SEs depends on the seed; the same spread with SEs as large is noise; SEs
    from fewer than `MIN_PAIRS` units are not trusted to test it."""
    spread = [0.03, -0.02, 0.025, -0.015, 0.0]
    out = _v2(_check(EFFECT, "real", ["holds"] * 5, spread, se=0.002, units=1000),
              _check(EFFECT, "noise", ["holds"] * 5, spread, se=0.03, units=1000),
              _check(EFFECT, "few", ["not decided"] * 5, spread, se=0.002, units=MIN_PAIRS - 3))
    assert out.loc["real", "verdict"] == SEED_DEPENDENT and out.loc["real", "q_p"] < 1e-6
    assert "heterogeneous (Cochran's Q" in out.loc["real", "evidence"] and math.isnan(out.loc["real", "seeds_needed"])
    assert out.loc["noise", "verdict"] == "not decided" and out.loc["noise", "q_p"] > 0.05
    assert out.loc["few", "verdict"] == "not decided" and f"from {MIN_PAIRS - 3} units" in out.loc["few", "evidence"]
    assert out.reason.tolist() == [WHY_HETEROGENEOUS, WHY_MORE_SEEDS, WHY_UNTESTABLE]
    # One seed (an interim reading): Q has nothing to compare, said so, and no warning from statsmodels.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        one = _v2(_check(EFFECT, "one", ["holds"], spread[:1], se=0.002, units=1000))
    assert one.loc["one", "verdict"] == "not decided" and math.isnan(one.loc["one", "q_p"])


def test_v2_no_difference_holds_only_when_equivalence_is_shown_within_the_margin():
    floor = FLOOR.value
    out = _v2(  # margin: our floor (foltr gives none)
        _check(NO_DIFF, "tight", ["holds"] * 5, [0.001, -0.001, 0.0005, -0.0005, 0.0]),
        # Significantly different from 0, yet inside the floor: v1 says "does not hold", v2 "holds".
        _check(NO_DIFF, "small", ["does not hold"] * 5, [0.0039, 0.0041, 0.0038, 0.0040, 0.0039]),
        _check(NO_DIFF, "beyond", ["holds"] * 5, [-0.02, -0.021, -0.019, -0.022, -0.02]),
        # p ≥ 0.05 and an interval that reaches past the margin: absence of evidence only.
        _check(NO_DIFF, "wide", ["holds"] * 5, [0.02, -0.03, 0.01, -0.02, 0.025]))
    assert out.loc["tight", "verdict"] == "holds" and out.loc["tight", "margin"] == floor
    assert out.loc["tight", "high"] < floor and out.loc["tight", "low"] > -floor
    assert out.loc["small", "verdict"] == "holds"
    assert _decide(_check(NO_DIFF, "small", ["holds"] * 5, [0.0039, 0.0041, 0.0038, 0.0040, 0.0039])
                   ).loc["small", "verdict"] == "does not hold"
    assert out.loc["beyond", "verdict"] == "does not hold" and "beyond the margin" in out.loc["beyond", "evidence"]
    wide = out.loc["wide"]
    assert wide.verdict == "not decided" and stats.ttest_1samp([0.02, -0.03, 0.01, -0.02, 0.025], 0).pvalue > 0.05
    assert wide.low < -floor and wide.high > floor and "ours" in wide.margin_source
    assert "more seeds needed" in wide.evidence and math.isnan(wide.q_p)
    # The paper's own margin where it gives one: the gaps it calls "fairly similar".
    similar = _v2(_check(SIMILAR, "inside", ["does not hold"] * 5, [-0.010, -0.012, -0.011, -0.009, -0.010]),
                  _check(SIMILAR, "outside", ["does not hold"] * 5, [-0.037, -0.040, -0.035, -0.036, -0.038]),
                  _check(SIMILAR, "across it", ["does not hold"] * 5, [-0.025, -0.040, -0.030, -0.035, -0.028]))
    assert similar.loc["inside", "verdict"] == "holds" and similar.loc["inside", "margin"] == 0.028
    assert similar.loc["inside", "margin_source"].startswith("±0.028 (the paper's")
    assert similar.loc["outside", "verdict"] == "does not hold"
    # An interval across the margin, its mean beyond it: the seeds it would take to show it fails.
    across = similar.loc["across it"]
    assert across.verdict == "not decided" and across.low < -0.028 < across.high
    assert f"about {across.seeds_needed:.0f} seeds" in across.evidence and "to show it fails" in across.evidence


def test_v2_margins_say_whose_they_are_and_scale_with_an_online_sum():
    assert margin_of(*SIMILAR) == (0.028, MARGINS[SIMILAR].said())
    value, said = margin_of(*NO_DIFF)
    assert value == UNSTABLE_BELOW and "ours" in said
    value, said = margin_of(*NO_DIFF, horizon=300)
    assert value == pytest.approx(UNSTABLE_BELOW * discount_sum(300)) and "per round over T = 300" in said


def test_v2_no_gain_holds_below_the_margin_fails_above_it():
    out = _v2(_check(NO_GAIN, "lower", ["holds"] * 5, [-0.02, -0.021, -0.019, -0.022, -0.02]),
              _check(NO_GAIN, "gains", ["holds"] * 5, [0.02, 0.021, 0.019, 0.022, 0.02]),
              _check(NO_GAIN, "unclear", ["holds"] * 5, [0.03, -0.02, 0.015, -0.01, 0.02]))
    assert out.loc["lower", "verdict"] == "holds" and out.loc["gains", "verdict"] == "does not hold"
    assert out.loc["unclear", "verdict"] == "not decided" and out.loc["unclear", "high"] > FLOOR.value


def test_v2_verdicts_split_is_not_decided_not_seed_dependent():
    out = _v2(_check(VERDICTS, "all", ["holds"] * 5), _check(VERDICTS, "none", ["does not hold"] * 5),
              _check(VERDICTS, "split", ["holds"] * 4 + ["does not hold"]),
              _check(VERDICTS, "absent", ["not available"] * 5))
    assert out.loc["all", "verdict"] == "holds" and out.loc["none", "verdict"] == "does not hold"
    assert out.loc["split", "verdict"] == "not decided" and "no test of dependence" in out.loc["split", "evidence"]
    assert out.loc["absent", "verdict"] == "not available"
    assert out.reason.tolist() == ["", "", WHY_SPLIT, WHY_ABSENT] and set(out.reason) - {""} <= set(REASONS_V2)
    assert out.reason.tolist() == ["", "", WHY_SPLIT, WHY_ABSENT] and set(out.reason) - {""} <= set(REASONS_V2)


def test_v2_few_runs_a_seed_are_decided_on_the_seed_means():
    """Each seed had too few runs to decide (not decided at every seed): v1's vote decides
    nothing; v2 reads the seeds' means by the claim's kind, and where that reads part of the
    claim only, the means can fail it but not make it hold."""
    behind = [0.036, 0.038, 0.037, 0.042, 0.040]  # IID FedAvg above the remedy at every seed
    checks = (_check(FEW_RUNS, "stays below", ["not decided"] * 5, behind, se=0.01, units=2),
              _check(FEW_RUNS, "closes", ["not decided"] * 5, [-x for x in behind], se=0.01, units=2),
              _check(EFFECT, "few pairs", ["not decided"] * 5, behind, se=0.01, units=2))
    v1, v2 = _decide(*checks), _v2(*checks)
    assert (v1.loc[["stays below", "closes"], "verdict"] == "not decided").all()
    assert v2.loc["closes", "verdict"] == "does not hold" and v2.loc["closes", "rule"] == "effect"
    assert v2.loc["stays below", "verdict"] == "not decided"
    assert "reads part of the claim only" in v2.loc["stays below", "evidence"]
    assert v2.loc["stays below", "evidence"].startswith("decided on the seeds' means by `effect`")
    assert v2.loc["few pairs", "verdict"] == "holds"
    assert v2.loc["stays below", "reason"] == WHY_PART and v2.loc["closes", "reason"] == ""


def test_v2_keeps_the_budget_gate_and_the_seed_minimum():
    out = _v2(_check(("bilambdamart", "trees_beat_networks"), "gated", ["not decided"] * 5, [0.05] * 5,
                     evidence=f"{BUDGET}: the networks had 4 trials"),
              _check(EFFECT, "four", ["holds"] * 4, [0.01, 0.012, 0.011, 0.01]))
    assert out.loc["gated", "verdict"] == "not decided"
    assert out.loc["four", "verdict"] == "not decided" and "needs 5" in out.loc["four", "evidence"]
    assert out.reason.tolist() == [WHY_FEW_SEEDS, WHY_FEW_SEEDS]


def test_an_effect_carries_its_standard_error_over_its_units():
    e = Effect.of([0.5, 0.7, 0.6], [0.4, 0.5, 0.55])
    d = np.array([0.1, 0.2, 0.05])
    assert e.units == 3 and e.se == pytest.approx(d.std(ddof=1) / np.sqrt(3))
    assert math.isnan(Effect.of([0.5], [0.4]).se) and Effect.of([0.5], [0.4]).units == 1
    assert MIN_PAIRS == 5
