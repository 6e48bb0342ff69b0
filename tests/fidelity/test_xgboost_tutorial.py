"""XGBoost's tutorial advice as claims on notebook 08's pair-method study."""

import numpy as np
import pandas as pd

from ltrlib.fidelity import tutorial_claims
from ltrlib.fidelity.xgboost_tutorial import section
from ltrlib.xgboost_tutorial import comparison


def test_the_advice_holds_with_the_sign_and_the_test_and_lists_every_size(tables):
    _summary = tables.pair_summary
    claims = tutorial_claims(_summary()).set_index(["claim", "scope"])
    assert claims.loc[("mean_more_effective_pairs", "topk, k=10, 150 training queries"), "ours"] == "does not hold"
    small = claims.loc[("mean_better_small", "topk, k=10, ndcg@10, 150 training queries")]
    assert small.ours == "holds" and "150 queries -0.0200" in small.evidence
    assert "3000 queries +0.0300" in small.evidence
    assert small.paper == "holds" and "tutorial" in small.paper_evidence and np.isnan(small.effect_ratio)
    assert claims.loc[("topk_better_top_large", "topk, k=10, ndcg@1, 3000 training queries"), "ours"] == "holds"
    # The right sign without the test's agreement does not hold.
    weak = tutorial_claims(_summary(p=0.3))
    assert weak[weak.claim == "mean_better_small"].ours.tolist() == ["does not hold"]
    # metrics.json: one key per claim and scope, its verdict a bool.
    numeric = pd.DataFrame({"model": ["XGB ndcg/mean"], "metric": ["ndcg@10"], "mean": [0.5]})
    m = comparison.tutorial_metrics(numeric, _summary(), tutorial_claims(_summary()))
    assert m["xgb_ndcg_mean.ndcg10"] == 0.5 and m["train_queries3000.topk_k_10.ndcg1"] == 0.5
    # Four checks of the size study, two not available without the pair-count sweep.
    assert sum(k.endswith(".holds") for k in m) == 6 and sum(v is True for v in m.values()) == 3


def test_a_run_without_the_study_gives_not_available_naming_the_table(tmp_path):
    s = section(tmp_path, {})
    assert s.missing == ["tables/08_xgboost_backends/pair_method_summary.csv",
                         "tables/08_xgboost_backends/pair_count_sweep.csv"]
    assert set(s.claims.ours) == {"not available"} and set(s.claims.claim) == {
        "mean_more_effective_pairs", "mean_better_small", "topk_better_top_large", "more_pairs_more_effective",
        "pairwise_suits_small_data"}


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
    claims = tutorial_claims(tables.pair_summary(), _sweep()).set_index(["claim", "scope"]).ours
    assert claims[("more_pairs_more_effective", "1 to 16 pairs")] == "holds"
    assert claims[("more_pairs_more_effective", "16 pairs vs 1, ndcg@10")] == "holds"
    assert claims.loc["pairwise_suits_small_data"].tolist() == ["holds"]
    worse = tutorial_claims(tables.pair_summary(), _sweep(gain_16=-0.01, pairwise=-0.05, p_pairwise=0.001))
    worse = worse.set_index(["claim", "scope"]).ours
    assert worse[("more_pairs_more_effective", "16 pairs vs 1, ndcg@10")] == "does not hold"
    assert worse.loc["pairwise_suits_small_data"].tolist() == ["does not hold"]
    # Without the sweep: not available, saying so.
    alone = tutorial_claims(tables.pair_summary())
    pairwise = alone[alone.claim == "pairwise_suits_small_data"]
    assert pairwise.ours.tolist() == ["not available"] and "pair_count_sweep" in pairwise.evidence.iloc[0]
