"""The Lambda Bivariate framework (Bi-LambdaMART paper, §4-6) on LightGBM.

    two = build_two_stage(splits)                         # stage-1 λMART by 10-fold CV, top-20
    X = expand_listwise(two.stage2.train.X, two.stage2.train.offsets)   # 5 x (m + 1) columns
    ranker = BivariateRanker(cutoff=5).fit(X, y, qid, ideal_dcg=..., eval_set=(...))
    scores = ranker.predict(X_test, qid_test)

Modules: `two_stage` (§5.2), `features` (§5.5 listwise expansion), `pairs` (ordered pairs
over flat arrays), `objective` (LB gradients, λRank and softmax, diagonal or exact pair
hessians, numba), `model` (training and prediction), `space` (§5.4's search space), `experiment` (the
models of Tables 2, 4, 5 and their tuning), `study` (the pre-registered multi-seed study). The
paper's claims are decided on notebook 06's tables in `ltrlib.fidelity.bilambdamart`.
"""

from ltrlib.bivariate import experiment, features, model, objective, pairs, space, study, two_stage, uptake
from ltrlib.bivariate.experiment import (
    MIN_COMPARISON_TRIALS,
    MODELS,
    STAGE1_ROW,
    ModelSpec,
    OPEN_SETTINGS,
    TUNED_CHOICE,
    Stage2Experiment,
    curves_frame,
    eval_table,
    fit_model_groups,
    fit_models,
    bilambdamart_metrics,
    model_list,
    model_scores,
    per_query_frame,
    per_query_results,
    ndcg_table,
    settings_screen,
    tuned_table,
    tuning_frame,
    tuning_label,
    tuning_summary,
)
from ltrlib.bivariate.features import EXPANSIONS, expand_listwise, expanded_names, query_level_columns
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
    HESSIANS,
    LOSSES,
    LBObjective,
    check_truncation,
    aggregate,
    coupled_gradients,
    item_gradients,
    lambdarank_loss,
    mean_ndcg,
    pair_gradients,
    softmax_loss,
)
from ltrlib.bivariate.pairs import PairIndex, PairSequence, pair_feature_names, pair_index, pair_rows
from ltrlib.bivariate.space import LEARNING_RATES, MIN_DATA_IN_LEAF, MIN_HESSIANS, NUM_LEAVES, TUNED, suggest
from ltrlib.bivariate.study import (
    COMPARISONS,
    CONFIRMATORY_STUDY,
    DECISION_RULE,
    ENDPOINT,
    PROFILES,
    SHOWN_GAIN_PCT,
    VARIANTS,
    VERDICT_FILE,
    Summary,
    across_seed_tests,
    decide,
    pooled_by_seed,
    read_verdict,
    seed_gains,
    study_verdict,
    summarise,
)
from ltrlib.bivariate.two_stage import (
    CUTOFFS,
    SCORE_FEATURE,
    STAGE1_PARAMS,
    STAGE1_SETTINGS,
    Stage1Tuning,
    TwoStage,
    build_two_stage,
    table1,
    top_k_mask,
    tune_stage1,
)

from ltrlib.bivariate.uptake import pairwise_uptake, pairwise_uptake_by_query, uptake_table

# Each module lists its public names once; the package hands all of them on.
__all__ = [*experiment.__all__, *features.__all__, *model.__all__, *objective.__all__, *pairs.__all__,
           *space.__all__, *study.__all__, *uptake.__all__,
           *two_stage.__all__]
