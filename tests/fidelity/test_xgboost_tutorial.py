"""XGBoost's tutorial advice as claims on notebook 08's pair-method study."""

import numpy as np
import pandas as pd

from ltrlib.fidelity import tutorial_claims
from ltrlib.fidelity.xgboost_tutorial import section
from ltrlib.train import comparison


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
    m = comparison.headline_metrics(numeric, _summary(), tutorial_claims(_summary()))
    assert m["xgb_ndcg_mean.ndcg10"] == 0.5 and m["train_queries3000.topk_k_10.ndcg1"] == 0.5
    assert sum(k.endswith(".holds") for k in m) == 4 and sum(v is True for v in m.values()) == 3


def test_a_run_without_the_study_gives_not_available_naming_the_table(tmp_path):
    s = section(tmp_path, {})
    assert s.missing == ["tables/08_xgboost_backends/pair_method_summary.csv"]
    assert set(s.claims.ours) == {"not available"} and set(s.claims.claim) == {
        "mean_more_effective_pairs", "mean_better_small", "topk_better_top_large"}
