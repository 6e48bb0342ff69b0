"""The Lambda Bivariate framework (Bi-LambdaMART paper, §4-6) on LightGBM.

    two = build_two_stage(splits)                         # stage-1 λMART by 10-fold CV, top-20
    X = expand_listwise(two.stage2.train.X, two.stage2.train.offsets)   # 5 x (m + 1) columns
    ranker = BivariateRanker(cutoff=5).fit(X, y, qid, ideal_dcg=..., eval_set=(...))
    scores = ranker.predict(X_test, qid_test)

Modules: `two_stage` (§5.2), `features` (§5.5 listwise expansion), `pairs` (ordered pairs
over flat arrays), `objective` (LB gradients, λRank and softmax, numba), `model`
(training and prediction), `experiment` (the models of Tables 2, 4, 5 and their tuning).
"""

from ltrlib.bivariate.experiment import (
    MODELS,
    STAGE1_ROW,
    TUNED,
    ModelSpec,
    Stage2Experiment,
    curves_frame,
    eval_table,
    fit_models,
    headline_metrics,
    per_query_results,
    results_table,
    suggest,
    tuned_table,
    tuning_frame,
)
from ltrlib.bivariate.features import EXPANSIONS, expand_listwise, expanded_names
from ltrlib.bivariate.model import (
    LB_SETTINGS,
    BivariateRanker,
    LBModel,
    RankData,
    UnivariateRanker,
    fit_lb,
    offsets_from_qid,
)
from ltrlib.bivariate.objective import (
    LOSSES,
    LBObjective,
    aggregate,
    item_gradients,
    lambdarank_loss,
    mean_ndcg,
    pair_gradients,
    softmax_loss,
)
from ltrlib.bivariate.pairs import PairIndex, PairSequence, pair_feature_names, pair_index, pair_rows
from ltrlib.bivariate.two_stage import (
    CUTOFFS,
    SCORE_FEATURE,
    STAGE1_PARAMS,
    STAGE1_SETTINGS,
    TwoStage,
    build_two_stage,
    table1,
    top_k_mask,
)

__all__ = [
    "BivariateRanker", "CUTOFFS", "LBModel", "LBObjective", "LB_SETTINGS", "PairSequence", "RankData",
    "STAGE1_SETTINGS", "TwoStage", "UnivariateRanker", "aggregate", "build_two_stage", "expand_listwise",
    "expanded_names", "fit_lb", "item_gradients", "lambdarank_loss", "offsets_from_qid",
    "pair_feature_names", "pair_gradients", "pair_index", "pair_rows", "softmax_loss",
    "table1", "top_k_mask",
    # experiment: the models of Tables 2, 4 and 5 (notebook 06)
    "MODELS", "ModelSpec", "STAGE1_ROW", "Stage2Experiment", "TUNED", "curves_frame", "eval_table",
    "fit_models", "headline_metrics", "per_query_results", "results_table", "suggest", "tuned_table",
    "tuning_frame",
    "EXPANSIONS", "LOSSES", "mean_ndcg", "PairIndex", "SCORE_FEATURE", "STAGE1_PARAMS",
]
