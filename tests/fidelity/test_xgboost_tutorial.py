"""XGBoost's notes (seed 004) read as advice: claims on notebooks 08 and 09's experiments."""

import numpy as np
import pandas as pd
import pytest

from ltrlib.fidelity import tutorial_claims
from ltrlib.fidelity import xgboost_tutorial as X
from ltrlib.fidelity.claims import CLAIM_COLUMNS, decide
from ltrlib.fidelity.xgboost_tutorial import section
from ltrlib.xgboost_tutorial import comparison
from ltrlib.xgboost_tutorial.advice import ULP_CONTROL


def test_the_advice_is_decided_at_equal_budgets_with_every_size_in_the_evidence(tables):
    claims = tutorial_claims(tables.notes())
    assert list(claims.columns) == CLAIM_COLUMNS and set(claims.kind) == {"claim", "control"}
    # Arithmetic of the settings is no finding: no claim reads the effective-pairs count.
    assert "mean_more_effective_pairs" not in set(claims.claim)
    claims = claims.set_index(["claim", "scope"])
    small = claims.loc[("mean_better_small", "ndcg@10, 150 training queries")]
    assert small.ours == "holds" and "150 queries -0.0200" in small.evidence
    assert "3000 queries +0.0300" in small.evidence
    assert small.paper == "holds" and "seed 004" in small.paper_evidence
    assert "equal pair budgets" in small.test and "ours" in small.threshold
    assert claims.loc[("topk_better_large", "ndcg@10, 3000 training queries"), "ours"] == "holds"
    trend = claims.loc[("topk_gains_with_size", "150 to 3000 training queries")]
    assert trend.ours == "holds" and "change +0.0500" in trend.evidence
    # The notes print no effect: no comparison, so no Effect Ratio.
    assert decide(X.SOURCE, X.ALL_CLAIMS, tables.notes())[1] == []
    # The right sign without the test's agreement does not hold.
    weak = tutorial_claims(tables.notes(pair_method_trend=tables.trend(change_p=0.3)))
    assert weak[weak.claim == "topk_gains_with_size"].ours.tolist() == ["does not hold"]


def test_the_notes_other_statements_hold_and_fail(tables):
    ours = tutorial_claims(tables.notes()).set_index(["claim", "scope"]).ours
    assert ours.loc["graded_labels_not_map"].tolist() == ["holds", "holds"]
    assert ours.loc["same_result_any_hardware"].tolist() == ["holds", "holds"]  # mean's beyond the notes
    assert ours.loc[("bitwise_sees_a_difference", f"topk, k=10, {ULP_CONTROL}")] == "holds"
    assert ours.loc["scattered_groups_sound"].tolist() == ["holds"]
    # Eta 0 has no position bias: only eta > 0 is a scope.
    assert list(ours.loc["unbiased_debiases_clicks"].index) == ["eta 1, 3000 sessions", "eta 2, 3000 sessions"]
    worse = tutorial_claims(tables.notes(graded_objectives=tables.graded(-0.02),
                                         reproducibility=tables.reproducible(False, ulp_identical=True),
                                         distributed_training=tables.spread(0.3),
                                         click_curves=tables.curves(-0.01)))
    worse = worse.set_index("claim").ours
    for claim in ("graded_labels_not_map", "same_result_any_hardware", "bitwise_sees_a_difference",
                  "scattered_groups_sound", "unbiased_debiases_clicks"):
        assert "does not hold" in set(np.atleast_1d(worse.loc[claim])), claim


def test_tutorial_metrics_carry_every_verdict(tables):
    numeric = pd.DataFrame({"model": ["XGB ndcg/mean"], "metric": ["ndcg@10"], "mean": [0.5]})
    claims = tutorial_claims(tables.notes())
    m = comparison.tutorial_metrics(numeric, None, claims)
    assert m["xgb_ndcg_mean.ndcg10"] == 0.5
    assert sum(k.endswith(".holds") for k in m) == len(claims) and all(m[k] for k in m if k.endswith(".holds"))


def test_a_run_without_the_study_gives_not_available_naming_the_tables(tmp_path):
    s = section(tmp_path, {})
    assert s.missing == [f"tables/{nb}/{name}.csv" for name, nb in X.TABLES.items()]
    assert set(s.claims.ours) == {"not available"} and set(s.claims.claim) == {c.name for c in X.ALL_CLAIMS}
    assert s.effects.empty
    with pytest.raises(ValueError, match="reads"):
        tutorial_claims({"pair_method_summary": None})


def _sweep(gain_16=0.02, p16=0.01, pairwise=-0.01, p_pairwise=0.4):
    rows = []
    for setting, pairs, diff, p, seconds in (("mean, 1 pair", 20.0, 0.0, np.nan, 1.0),
                                             ("mean, 4 pairs", 60.0, 0.01, 0.2, 2.0),
                                             ("mean, 16 pairs", 150.0, gain_16, p16, 5.0),
                                             ("rank:pairwise, mean, 1 pair", 20.0, pairwise, p_pairwise, 1.0)):
        rows.append({"train_queries": 150, "metric": "ndcg@10", "setting": setting, "mean": 0.5 + diff,
                     "diff_vs_reference": diff, "p_value": p, "effective_pairs_per_query": pairs, "seconds": seconds})
    return pd.DataFrame(rows)


def test_the_pair_count_sweep_decides_more_pairs_and_rank_pairwise(tables):
    from ltrlib.xgboost_tutorial.comparison import pair_count_settings

    settings = pair_count_settings([4, 16])
    assert list(settings) == ["mean, 1 pair", "mean, 4 pairs", "mean, 16 pairs", "rank:pairwise, mean, 1 pair"]
    assert settings["rank:pairwise, mean, 1 pair"]["objective"] == "rank:pairwise"
    claims = tutorial_claims(tables.notes(pair_count_sweep=_sweep())).set_index(["claim", "scope"])
    # One finding: the NDCG gain of the most pairs over one, with the pair counts and times.
    more = claims.loc["more_pairs_more_effective"]
    assert list(more.index) == ["16 pairs vs 1, ndcg@10"]
    assert more.ours.iloc[0] == "holds" and "+0.0200 (p = 0.01)" in more.evidence.iloc[0]
    assert "5.0 s against 1.0 s" in more.evidence.iloc[0] and "16: 150.0" in more.evidence.iloc[0]
    assert claims.ours.loc["pairwise_suits_small_data"].tolist() == ["holds"]
    worse = tutorial_claims(tables.notes(pair_count_sweep=_sweep(gain_16=-0.01, pairwise=-0.05, p_pairwise=0.001)))
    worse = worse.set_index(["claim", "scope"]).ours
    assert worse[("more_pairs_more_effective", "16 pairs vs 1, ndcg@10")] == "does not hold"
    assert worse.loc["pairwise_suits_small_data"].tolist() == ["does not hold"]
    # The right sign without the test's agreement does not hold either.
    weak = tutorial_claims(tables.notes(pair_count_sweep=_sweep(p16=0.2))).set_index(["claim", "scope"]).ours
    assert weak[("more_pairs_more_effective", "16 pairs vs 1, ndcg@10")] == "does not hold"
    # Without the sweep: not available, saying so.
    alone = tutorial_claims(tables.notes(pair_count_sweep=None))
    pairwise = alone[alone.claim == "pairwise_suits_small_data"]
    assert pairwise.ours.tolist() == ["not available"] and "pair_count_sweep" in pairwise.evidence.iloc[0]
