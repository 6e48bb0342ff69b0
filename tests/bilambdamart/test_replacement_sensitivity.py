"""The follow-up study's replacement sensitivity (issue 62, item 5): kept trials numbered past
the budget, counted on hand-made records, the adjusted endpoints' tests, and the README,
docs and notebook 06 quoting the committed study's figures."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from ltrlib import config
from ltrlib.bilambdamart import preregistration as study

N_TRIALS = 3


def _trials(rows: dict[str, list[tuple[int, float]]]) -> pd.DataFrame:
    """A seed's ``tuning_trials``: per model its usable trials as (Optuna number, validation
    value); a number missing below the largest is a replaced trial (it has no row)."""
    return pd.DataFrame([{"split": "stage 2", "model": m, "number": n, "value": v}
                         for m, trials in rows.items() for n, v in trials])


# Seed 0: Bi-λMART's best is trial 3, run only because trial 2 was replaced (lead 0.03 over
# the best of trials 0-2). Seed 1: Bi-λMART ran trial 4 but keeps trial 0; λMART* keeps trial 3
# (lead 0.01). Seed 2: Bi-λMART keeps trial 5 (lead 0.74 - 0.71); λMART*'s trial 1 was pruned.
TRIALS = {
    0: _trials({"Bi-λMART": [(0, 0.70), (1, 0.72), (3, 0.75)], "λMART*": [(0, 0.71), (1, 0.73), (2, 0.72)]}),
    1: _trials({"Bi-λMART": [(0, 0.74), (2, 0.70), (4, 0.73)], "λMART*": [(0, 0.70), (1, 0.71), (3, 0.72)]}),
    2: _trials({"Bi-λMART": [(0, 0.70), (1, 0.71), (5, 0.74)], "λMART*": [(0, 0.70), (1, math.nan), (2, 0.72)]}),
}
# Test means (model, baseline) per seed and variant.
TEST = {(0, "main"): (0.80, 0.78), (0, "control"): (0.81, 0.80), (1, "main"): (0.79, 0.78),
        (1, "control"): (0.80, 0.80), (2, "main"): (0.82, 0.79), (2, "control"): (0.80, 0.79)}


def _gains() -> pd.DataFrame:
    return pd.DataFrame([{"seed": s, "comparison": "bi_lambdamart", "variant": v, "model": m, "baseline": b,
                          "gain_pct": 100 * (m / b - 1)} for (s, v), (m, b) in TEST.items()])


def test_kept_trials_marks_those_past_the_budget():
    kept = study.kept_trials(TRIALS[0], N_TRIALS).set_index("model")
    assert kept.loc["Bi-λMART", "kept_number"] == 3 and kept.loc["Bi-λMART", "beyond"]
    assert kept.loc["Bi-λMART", "advantage"] == pytest.approx(0.03)
    assert not kept.loc["λMART*", "beyond"] and kept.loc["λMART*", "advantage"] == 0
    # A later trial run but not kept leaves the kept one inside the budget.
    assert not study.kept_trials(TRIALS[1], N_TRIALS).set_index("model").loc["Bi-λMART", "beyond"]
    with pytest.raises(ValueError, match="number"):
        study.kept_trials(TRIALS[0].drop(columns="number"), N_TRIALS)


def test_replacement_sensitivity_counts_and_retests_the_adjusted_gains():
    found = study.replacement_sensitivity(TRIALS, _gains(), N_TRIALS)
    assert (found.seeds, found.beyond("Bi-λMART"), found.beyond("λMART*")) == (3, 2, 1)
    # Each seed's test means less its kept trials' validation leads, model and baseline alike.
    adjusted = np.array([100 * ((0.80 - 0.03) / 0.78 - 1), 100 * (0.79 / (0.78 - 0.01) - 1),
                         100 * ((0.82 - 0.03) / 0.79 - 1)])
    main = found.gains[found.gains.variant == "main"].sort_values("seed")
    np.testing.assert_allclose(main.adjusted_gain_pct, adjusted, rtol=1e-12)
    assert found.test("main").p == pytest.approx(stats.ttest_1samp(adjusted, 0).pvalue)
    assert found.test("main")["mean"] == pytest.approx(adjusted.mean())
    # The control has no trial records: its gains stand, and the words say so.
    control = np.array([100 * (m / b - 1) for (s, v), (m, b) in sorted(TEST.items()) if v == "control"])
    assert found.test("did").p == pytest.approx(stats.ttest_1samp(adjusted - control, 0).pvalue)
    assert not found.control_adjusted and "its gain stands as measured" in found.words
    assert found.words.startswith("A sensitivity analysis after the fact, not the registered verdict")
    assert "at 2 of 3 seeds Bi-λMART's kept trial" in found.words and "(λMART*: 1 of 3)" in found.words
    assert study.replacement_sensitivity({}, _gains(), N_TRIALS) is None


def test_the_committed_follow_up_gives_the_issues_figures_and_the_docs_quote_them():
    """Issue 62's figures, computed from the committed follow-up study's seeds, and the same
    paragraph in its study.md, the README, docs/bilambdamart.md and notebook 06."""
    found = study.study_replacement_sensitivity(study.FOLLOWUP_STUDY)
    assert (found.seeds, found.beyond("Bi-λMART"), found.beyond("λMART*")) == (16, 8, 0)
    assert f"{found.test('main').p:.2g}" == "0.0064" and f"{found.test('did').p:.2g}" == "0.069"
    words = study.replacement_sensitivity_words()
    assert words.endswith(found.words)
    summary = (study.FOLLOWUP_STUDY / "study.md").read_text(encoding="utf-8")
    assert f"**Replacement sensitivity.** {found.words}" in summary
    for doc in ("README.md", "docs/bilambdamart.md"):
        text = " ".join((config.PROJ_ROOT / doc).read_text(encoding="utf-8").split())
        assert words in text, f"{doc}'s replacement sensitivity is not the committed study's"
    notebook = (config.PROJ_ROOT / "notebooks" / "06_bilambdamart.py").read_text(encoding="utf-8")
    assert "print(replacement_sensitivity_words())" in notebook
