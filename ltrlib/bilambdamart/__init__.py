"""The Lambda Bivariate framework (Bi-LambdaMART paper, §4-6) on LightGBM.

    two = build_two_stage(splits)                         # stage-1 λMART by 10-fold CV, top-20
    X = expand_listwise(two.stage2.train.X, two.stage2.train.offsets)   # 5 x (m + 1) columns
    ranker = BivariateRanker(cutoff=5).fit(X, y, qid, ideal_dcg=..., eval_set=(...))
    scores = ranker.predict(X_test, qid_test)

Modules: `two_stage` (§5.2), `features` (§5.5 listwise expansion), `pairs` (ordered pairs
over flat arrays), `objective` (LB gradients, λRank and softmax, diagonal or exact pair
hessians, numba), `model` (training and prediction), `space` (§5.4's search space), `experiment` (the
models of Tables 2, 4, 5 and their tuning), `beyond` (notebook 06's experiments beyond the
paper: headroom, uptake, the control, the listwise ablation), `preregistration` (the
pre-registered multi-seed study). The
paper's claims are decided on notebook 06's tables in `ltrlib.fidelity.bilambdamart`.
"""

from ltrlib.bilambdamart.beyond import (
    CONTROL_GROUP,
    MAIN_GROUP,
    ablation_table,
    control_experiment,
    control_pvalues,
    control_results,
    control_table,
    headroom_pvalues,
    headroom_table,
    listwise_ablation,
    model_groups,
    pairwise_uptakes,
    stage2_run_files,
)
from ltrlib.bilambdamart.experiment import (
    MODELS,
    STAGE1_ROW,
    Stage2Experiment,
    bilambdamart_metrics,
    curves_frame,
    eval_table,
    fit_model_groups,
    fit_models,
    model_list,
    model_scores,
    ndcg_pvalues,
    ndcg_table,
    per_query_frame,
    per_query_results,
    settings_screen,
    stage2_runs,
    tuned_table,
    tuning_frame,
    tuning_label,
    tuning_summary,
)
from ltrlib.bilambdamart.features import expand_listwise, query_level_columns
from ltrlib.bilambdamart.model import BivariateRanker, LBModel, fit_lb
from ltrlib.bilambdamart.preregistration import (DECISION_RULE, PROFILES, replacement_sensitivity_words,
                                             study_verdict, study_verdicts)
from ltrlib.bilambdamart.two_stage import STAGE1_SETTINGS, build_two_stage, stage1_tuning, table1, tune_stage1
from ltrlib.bilambdamart.uptake import uptake_table

__all__ = [
    "CONTROL_GROUP", "MAIN_GROUP", "ablation_table", "control_experiment", "control_pvalues", "control_results", "control_table",
    "headroom_pvalues", "headroom_table", "listwise_ablation",
    "model_groups", "pairwise_uptakes", "stage2_run_files",
    "MODELS", "STAGE1_ROW", "Stage2Experiment", "curves_frame", "eval_table", "fit_model_groups", "fit_models",
    "bilambdamart_metrics", "model_list", "model_scores", "per_query_frame", "per_query_results", "ndcg_pvalues", "ndcg_table",
    "settings_screen", "stage2_runs", "tuned_table", "tuning_frame", "tuning_label", "tuning_summary", "expand_listwise",
    "query_level_columns", "BivariateRanker", "LBModel", "fit_lb", "DECISION_RULE", "PROFILES",
    "replacement_sensitivity_words", "study_verdict", "study_verdicts", "uptake_table", "STAGE1_SETTINGS", "build_two_stage", "stage1_tuning", "table1", "tune_stage1",
]
