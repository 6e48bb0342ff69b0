"""The power analysis that sizes a ledger study (`ltrlib.fidelity.power`)."""

import math

import numpy as np
import pandas as pd
import pytest

from ltrlib.fidelity import power


def _simulated(kind, n, effect, sd, margin, level, reps=40_000, seed=0):
    """rule v2's test of ``kind`` run on ``reps`` simulated studies of ``n`` seeds."""
    from scipy.stats import t

    x = np.random.default_rng(seed).normal(effect, sd, size=(reps, n))
    mean, se = x.mean(axis=1), x.std(axis=1, ddof=1) / math.sqrt(n)
    c = t.ppf(1 - level, n - 1)
    if kind == "effect":
        return float(np.mean(mean / se > c))
    if kind == "no gain":
        return float(np.mean((mean - margin) / se < -c))
    return float(np.mean(((mean + margin) / se > c) & ((mean - margin) / se < -c)))


@pytest.mark.parametrize("kind, n, effect, sd, margin", [
    ("effect", 6, 0.01, 0.01, math.nan), ("effect", 12, 0.004, 0.01, math.nan),
    ("no gain", 8, 0.0, 0.005, 0.005), ("no difference", 10, 0.001, 0.004, 0.005),
    ("no difference", 20, 0.0, 0.006, 0.005)])
def test_power_is_what_the_rules_test_achieves_on_simulated_studies(kind, n, effect, sd, margin):
    assert power.power_at(kind, n, effect, sd, margin) == pytest.approx(_simulated(kind, n, effect, sd, margin, 0.05),
                                                                         abs=0.015)


def test_the_seeds_needed_are_the_fewest_with_80_percent_power():
    from statsmodels.stats.power import TTestPower

    n = power._seeds("effect", 0.01, 0.02, math.nan, 0.05)
    solved = TTestPower().solve_power(effect_size=0.5, alpha=0.05, power=0.8, alternative="larger")
    assert n == math.ceil(solved)
    assert power.power_at("effect", n - 1, 0.01, 0.02, math.nan) < 0.8 <= power.power_at("effect", n, 0.01, 0.02,
                                                                                           math.nan)
    assert power._seeds("effect", -0.01, 0.02, math.nan, 0.05) == math.inf  # a paper effect the wrong way
    assert power._seeds("no difference", 0.006, 0.002, 0.005, 0.05) == math.inf  # beyond the margin


def _frames():
    """Two seeds' worth is too few to spread; five seeds of three comparisons: an effect claim
    with the paper's number, a FOLTR online comparison at T = 300 (the paper's is over 10,000)
    and a no-difference claim with the paper's number."""
    rng = np.random.default_rng(1)
    rows, effects = [], []
    checks = [("noniid", "local_models_specialise", "s1", "A vs B", 0.02, 0.01, 0),
              ("foltr", "type1_hurts", "type1 linear online", "IID vs non-IID", 3.0, 0.5, 300),
              ("foltr", "type3_no_difference", "type3_pbm linear offline", "IID vs non-IID", 0.001, 0.003, 0)]
    for seed in range(5):
        for source, claim, scope, comparison, paper, sd, horizon in checks:
            rows.append({"source": source, "claim": claim, "kind": "claim", "scope": scope, "beyond": False,
                         "ours": "holds", "evidence": "", "seed": seed})
            effects.append({"source": source, "claim": claim, "scope": scope, "comparison": comparison,
                            "ours_improvement": paper * 0.5 + rng.normal(0, sd), "paper_improvement": paper,
                            "horizon": horizon, "seed": seed})
    return pd.DataFrame(rows), pd.DataFrame(effects)


def test_each_comparison_is_sized_at_the_papers_effect_where_it_is_comparable():
    per_seed, effects = _frames()
    c = power.comparison_seeds(per_seed, effects, n=10).set_index("claim")
    assert list(c.kind) == ["effect", "effect", "no difference"]
    assert c.loc["local_models_specialise", "effect"] == 0.02 and c.effect_from.iloc[0] == "the paper's"
    online = c.loc["type1_hurts"]
    assert online.effect_from.startswith("observed mean (the paper's is over T = 10,000")
    assert online.effect == pytest.approx(effects[effects.claim == "type1_hurts"].ours_improvement.mean())
    sd = effects[effects.claim == "local_models_specialise"].ours_improvement.std(ddof=1)
    assert c.loc["local_models_specialise", "sd"] == pytest.approx(sd)
    assert c.loc["local_models_specialise", "seeds_at_alpha"] == power._seeds("effect", 0.02, sd, math.nan, 0.05)
    # m: the paper's tested checks in its tally (foltr has two here); 0.05 / m needs more seeds.
    assert c.loc["type3_no_difference", "family"] == 2
    assert (c.seeds_at_alpha_over_m >= c.seeds_at_alpha).all()
    assert (c.power_at_alpha_over_m <= c.power_at_alpha).all()


def test_the_report_counts_each_papers_checks_with_enough_power_by_seeds():
    per_seed, effects = _frames()
    by_seeds, checks, _ = power.power_tables(per_seed, effects, chosen=10, seeds=(5, 10, 30))
    assert list(by_seeds.seeds.unique()) == [5, 10, 30]
    foltr = by_seeds[by_seeds.paper == "foltr"].set_index("seeds")
    assert (foltr["tested tally checks"] == 2).all()
    assert foltr["80 % power at 0.05"].is_monotonic_increasing
    assert checks.in_tally.all() and set(checks.columns) >= {"seeds_at_alpha", "power_at_alpha"}


def test_the_power_report_says_its_assumptions_and_every_checks_seeds():
    per_seed, effects = _frames()
    by_seeds, checks, _ = power.power_tables(per_seed, effects, chosen=10, seeds=(5, 10))
    text = power.power_markdown(by_seeds, checks, "S", 10, command="ltrlib study ledger --study S --power 10")
    assert "were the true effect **the paper's**" in text and "`ltrlib study ledger --study S --power 10`" in text
    assert text.count("| foltr ") >= 2 + 2 and "power at 10 (0.05 / m)" in text
