"""The ledger's pictures across seeds (`ltrlib.plots.fidelity`): the verdict chart with the
rule's "seed-dependent", and the Effect Ratio forest of `effect_ratio_intervals`' frame."""

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from ltrlib import plots
from ltrlib.fidelity.across import effect_ratio_intervals


def test_the_verdict_chart_across_seeds_has_a_seed_dependent_segment_and_one_run_has_none():
    counts = (("holds", 3), ("does not hold", 1), ("seed-dependent", 2), ("not decided", 0),
              ("not available", 1), ("outside the tally", 4))
    df = pd.DataFrame([("Paper A", v, n) for v, n in counts], columns=["paper", "verdict", "checks"])
    fig = plots.verdict_counts(df, "L: checks by verdict across 5 of 5 seeds")
    ax = fig.axes[0]
    assert [p.get_width() for p in ax.patches] == [n for _, n in counts]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [v for v, _ in counts]
    assert fig._suptitle.get_text() == "L: checks by verdict across 5 of 5 seeds"
    plt.close(fig)
    one_run = df[df.verdict != "seed-dependent"]  # `verdict_frame` of one run names no such verdict
    fig = plots.verdict_counts(one_run)
    assert "seed-dependent" not in [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert len(fig.axes[0].patches) == 5 and fig._suptitle is None
    plt.close(fig)
    with pytest.raises(ValueError, match=r"verdicts \['maybe'\] have no colour"):
        plots.verdict_counts(pd.DataFrame([("Paper A", "maybe", 1)], columns=["paper", "verdict", "checks"]))


def test_the_forest_across_seeds_draws_each_comparisons_interval_and_the_papers_effect_beside_ours():
    base = {"source": "p", "claim": "c", "scope": "s", "dataset": "", "paper_improvement": 0.02}
    effects = pd.DataFrame([{**base, "comparison": comp, "seed": seed, "ours_improvement": ours,
                             "effect_ratio": ours / 0.02 if comp != "unstable" else np.nan}
                            for seed, (a, b) in enumerate(((0.01, 0.03), (0.02, 0.01), (0.03, 0.02)))
                            for comp, ours in (("A vs B", a), ("unstable", b))])
    intervals = effect_ratio_intervals(effects)
    a = intervals.set_index("comparison").loc["A vs B"]
    assert a.ours_improvement == pytest.approx(0.02) and a.paper_improvement == 0.02
    assert a.effect_ratio_mean == pytest.approx(1.0) and a.effect_ratio_low < 1 < a.effect_ratio_high
    fig = plots.effect_ratios(intervals, "P, 3 seeds")
    er, side = fig.axes
    assert [t.get_text() for t in er.get_yticklabels()] == ["c · s · A vs B"]
    (segment,) = er.collections[0].get_segments()  # the interval across seeds
    assert segment[:, 0] == pytest.approx([a.effect_ratio_low, a.effect_ratio_high])
    paper, ours = side.lines[:2]
    assert paper.get_xdata()[0] == 0.02 and ours.get_xdata()[0] == pytest.approx(0.02)
    assert "1 without a ratio not drawn" in fig._suptitle.get_text()
    plt.close(fig)
