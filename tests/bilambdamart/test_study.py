"""The Bi-LambdaMART study's statistics and verdict on hand-made per-seed results whose
answer is known."""

import math
import re

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from ltrlib import studies as study_runner
from ltrlib.bilambdamart import preregistration as study


def _per_query(rng, gains_pct: dict[tuple[str, str], float], queries: int = 200, noise: float = 0.0):
    """Per-query results where each (variant, comparison) model scores its baseline times
    (1 + gain) on every query, plus optional noise on the model."""
    rows = []
    qid = np.arange(queries)
    for (variant, name), gain in gains_pct.items():
        _, model, baseline = next(c for c in study.COMPARISONS if c[0] == name)
        base = rng.uniform(0.4, 0.9, queries)
        value = base * (1 + gain / 100) + noise * rng.normal(size=queries)
        for m, v in ((baseline, base), (model, value)):
            rows.append(pd.DataFrame({"variant": variant, "model": m, "metric": study.ENDPOINT, "qid": qid,
                                      "value": v}))
    return pd.concat(rows, ignore_index=True)


def _seeds(gains: list[float], control: list[float], softmax: list[float], seed: int = 0):
    rng = np.random.default_rng(seed)
    return {s: (_per_query(rng, {("main", "bi_lambdamart"): g, ("control", "bi_lambdamart"): c,
                                 ("main", "bi_softmax"): sm, ("control", "bi_softmax"): 0.0}), None)
            for s, (g, c, sm) in enumerate(zip(gains, control, softmax))}


def test_per_seed_gain_and_across_seed_interval_are_the_textbook_ones():
    gains = [1.0, 0.6, 0.9, 1.2, 0.8]
    summary = study.summarise(_seeds(gains, [0.0] * 5, [2.0] * 5), planned=5)
    per_seed = summary.gains.query("comparison == 'bi_lambdamart' and variant == 'main'")
    np.testing.assert_allclose(per_seed.gain_pct, gains, rtol=1e-12)
    row = summary.seeds.set_index("endpoint").loc["bi_lambdamart/main"]
    mean, sd = np.mean(gains), np.std(gains, ddof=1)
    half = stats.t.ppf(0.975, 4) * sd / math.sqrt(5)
    assert (row.seeds, row["mean"]) == (5, pytest.approx(mean))
    assert (row.ci_low, row.ci_high) == (pytest.approx(mean - half), pytest.approx(mean + half))
    assert row.p == pytest.approx(stats.ttest_1samp(gains, 0).pvalue)
    did = summary.seeds.set_index("endpoint").loc["bi_lambdamart/did"]
    assert did["mean"] == pytest.approx(mean)  # the control's gain is 0 at every seed


def test_verdicts_follow_the_preregistered_rule():
    shown = study.summarise(_seeds([1.0, 0.9, 1.1, 1.0, 0.95], [0.0, 0.1, -0.1, 0.05, 0.0], [2.0] * 5), 5)
    assert shown.verdict == "shown" and "Shown on the twin" in shown.words
    refuted = study.summarise(_seeds([0.05, -0.1, 0.0, 0.1, -0.05], [0.0] * 5, [2.0, 2.3, 1.9, 2.1, 2.2]), 5)
    assert refuted.verdict == "refuted" and "upper end is below +0.5 %" in refuted.words
    # Large spread: the interval holds both 0 and +0.5 %.
    unsure = study.summarise(_seeds([1.0, -0.2, 0.0, 0.4, -1.0], [0.0] * 5, [2.0] * 5), 5)
    assert unsure.verdict == "inconclusive" and "95 % interval" in unsure.words
    # Shown's gain without a control that lacks it is not shown: the gain is not the pairs'.
    same_in_control = study.summarise(_seeds([1.0, 0.9, 1.1, 1.0, 0.95], [1.0, 0.9, 1.1, 1.0, 0.95], [2.0] * 5), 5)
    assert same_in_control.verdict == "inconclusive"
    # Refuted needs the softmax pair model to learn the pairs.
    blind = study.summarise(_seeds([0.05, -0.1, 0.0, 0.1, -0.05], [0.0] * 5, [0.1, -0.1, 0.0, 0.05, -0.05]), 5)
    assert blind.verdict == "inconclusive"
    interim = study.summarise(_seeds([1.0, 0.9, 1.1], [0.0] * 3, [2.0] * 3), planned=10)
    assert interim.verdict == "interim" and "3 of 10 seeds" in interim.words


def test_pooled_test_weights_seeds_by_their_precision():
    rng = np.random.default_rng(1)
    per_seed = {0: (_per_query(rng, {("main", "bi_lambdamart"): 1.0}, queries=400, noise=0.01), None),
                1: (_per_query(rng, {("main", "bi_lambdamart"): 0.0}, queries=100, noise=0.04), None)}
    summary = study.summarise(per_seed, planned=2)
    g = summary.gains.set_index("seed")
    w = 1 / g.diff_se**2
    expected = float((w * g.diff_mean).sum() / w.sum())
    row = summary.pooled.iloc[0]
    assert row.pooled_diff == pytest.approx(expected)
    assert row.pooled_se == pytest.approx(1 / math.sqrt(w.sum()))
    # The precise seed dominates: the pooled difference sits near seed 0's.
    assert abs(row.pooled_diff - g.diff_mean[0]) < abs(row.pooled_diff - g.diff_mean[1])


def test_summary_markdown_states_design_verdict_and_walls():
    summary = study.summarise(_seeds([1.0, 0.9], [0.0, 0.0], [2.0, 2.0]), planned=2)
    design = {"study": "s", "profile": "tiny", "scale": "tiny", "seeds": [0, 1], "parameters": {"n_trials": 1}}
    text = study_runner.summary_markdown(summary, design=design, command="ltrlib study bilambdamart",
                                         walls={0: {**study_runner._seed_minutes(
                                             {"wall_seconds": 120.0, "notebook_seconds": {"06": 60.0, "07": 6.0}}),
                                             "code": "9f3c0a1b2d"}})
    assert "**Verdict (" in text and study.DECISION_RULE in text and "n_trials = 1" in text
    assert "ltrlib study bilambdamart" in text
    # Seed 0 finished in this process (2 minutes) after notebooks that ran 1.1 minutes in all,
    # earlier sessions included, on the code it names; seed 1 has no record.
    assert re.search(r"wall_minutes \|\s+notebook_minutes \| code\s+\|\n", text)
    assert re.search(r"\|\s+2 \|\s+1\.1 \| 9f3c0a1b2d \|\n", text)


def test_one_seed_gives_no_interval():
    interim = study.summarise(_seeds([1.0], [0.0], [2.0]), planned=10)
    assert interim.verdict == "interim" and "no interval from one seed" in interim.words
    assert "nan" not in interim.words


def test_the_t_tests_power_is_what_simulation_gives():
    """The noncentral-t power against 4,000 simulated studies of 16 seeds at effect 0.9."""
    from scipy import stats

    from ltrlib.bilambdamart.preregistration import seeds_for_power, t_test_power

    rng = np.random.default_rng(0)
    draws = rng.normal(0.9, 1.0, size=(4000, 16))
    simulated = float(np.mean(stats.ttest_1samp(draws, 0.0, axis=1).pvalue < 0.01))
    assert t_test_power(0.9, 16) == pytest.approx(simulated, abs=0.03)
    n = seeds_for_power(0.9, 1.0)
    assert t_test_power(0.9, n) >= 0.8 > t_test_power(0.9, n - 1)
    with pytest.raises(ValueError, match="sd > 0"):
        seeds_for_power(0.5, 0.0)


def test_the_follow_up_has_the_seeds_its_sizing_derives_from_the_first_study():
    """Sized from the committed first study's spread for 80 % power on the primary endpoint;
    fresh seeds (none of the first study's); the design says what it changes and why it
    has that many seeds."""
    from ltrlib.bilambdamart.preregistration import CONFIRMATORY_STUDY, FOLLOWUP_SEEDS, PROFILES, followup_sizing
    from ltrlib.studies import study_design

    n, words = followup_sizing(CONFIRMATORY_STUDY)
    assert n == len(FOLLOWUP_SEEDS) and not set(FOLLOWUP_SEEDS) & set(PROFILES["confirmatory"]["seeds"])
    assert PROFILES["followup"]["parameters"] == PROFILES["confirmatory"]["parameters"]
    design = study_design("followup", "bilambdamart-followup")
    assert design["sizing"] == words and "document units" in design["changes"]
    assert "changes" not in study_design("confirmatory", "bilambdamart-confirmatory")
