"""Notebook 06's experiments beyond the paper. Each is a named call that gives None when the
experiment does not apply, so the notebook shows and saves nothing then
(`ltrlib.report.Reporter.table` skips None) instead of branching:

* `headroom_table`: the models against oracle rankings by the true utility (synthetic data),
  and `headroom_pvalues`, the tests behind its marks with Holm's correction;
* `pairwise_uptakes`: how much of the pairwise term each model's test scores hold (synthetic);
* the control (synthetic): `control_experiment` (the same experiment on the data generated
  without the pairwise mechanism), `model_groups` (tuned with the main models, in one pool),
  `control_results`, `control_table` and `control_pvalues` (its marks' tests, with Holm's);
* `listwise_ablation` and `ablation_table`: Table 2's models without listwise features;
* `stage2_run_files`: every model's TREC run file, the control's judged by its own labels.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from ltrlib.bilambdamart.experiment import (MODELS, STAGE1_ROW, FittedModel, Stage2Experiment, fit_models, model_list,
                                         ndcg_pvalues, ndcg_table, per_query_results, stage2_runs)
from ltrlib.bilambdamart.uptake import uptake_table
from ltrlib.data import ORACLE, ORACLE_UNIVARIATE, load_dataset, oracle_scores
from ltrlib.metrics import MarkedTable
from ltrlib.train.settings import TuningSettings
from ltrlib.trec import RunFile

__all__ = ["ABLATION_ROWS", "CONTROL_GROUP", "MAIN_GROUP", "ablation_table", "control_experiment", "control_results",
           "control_pvalues", "control_table", "headroom_pvalues", "headroom_table", "listwise_ablation", "model_groups", "pairwise_uptakes",
           "stage2_run_files"]

#: The study prefixes of notebook 06's model groups (`ltrlib.bilambdamart.fit_model_groups`).
MAIN_GROUP, CONTROL_GROUP = "06", "06.control"
#: Table 2's rows, as the listwise ablation trains and shows them.
ABLATION_ROWS = (STAGE1_ROW, "λMART", "λMART*", "Bi-λMART")


def headroom_table(per_query: pd.DataFrame, oracles: Mapping[str, Any]) -> MarkedTable | None:
    """λMART* and Bi-λMART against the oracle rankings ``oracles`` names (Table 2's marks);
    None without oracles (data other than the synthetic twin)."""
    return ndcg_table(per_query, ["λMART*", "Bi-λMART", *oracles]) if oracles else None


def headroom_pvalues(per_query: pd.DataFrame, oracles: Mapping[str, Any]) -> pd.DataFrame | None:
    """The tests behind `headroom_table`'s marks, with Holm's correction over the table's
    marks beside them (`ndcg_pvalues`: ``p_holm``, ``marked_holm``; ours, and the table keeps
    its uncorrected marks); None without oracles."""
    return ndcg_pvalues(per_query, ["λMART*", "Bi-λMART", *oracles]) if oracles else None


def pairwise_uptakes(exp: Stage2Experiment, fitted: Mapping[str, FittedModel],
                     test_scores: Mapping[str, Any]) -> pd.DataFrame | None:
    """`uptake_table` of every fitted model's test scores (`ltrlib.bilambdamart.uptake`), the
    pairwise term being the oracle's utility less its univariate part; None when
    ``test_scores`` hold no oracle rows (data other than the synthetic twin)."""
    if ORACLE not in test_scores:
        return None
    univariate = test_scores[ORACLE_UNIVARIATE]
    return uptake_table({m: test_scores[m] for m in fitted}, univariate, test_scores[ORACLE] - univariate,
                        exp.parts["test"].offsets)


def control_experiment(exp: Stage2Experiment, dataset: str, data_dir, scale: str, seed: int, *,
                       wanted: bool) -> Stage2Experiment | None:
    """The control: ``exp`` on the same documents generated with ``pairwise_weight`` = 0, so
    only the labels lose the within-host standing (`Stage2Experiment.relabelled`; stage 1's
    lists are kept). None unless ``wanted`` (the notebook asks for it on the synthetic twin,
    the only data whose pairwise mechanism can be switched off)."""
    if not wanted:
        return None
    control = load_dataset(dataset, data_dir, scale, seed, synthetic_config={"pairwise_weight": 0.0})
    return exp.relabelled(control)


def model_groups(exp: Stage2Experiment, control: Stage2Experiment | None,
                 control_models) -> dict[str, tuple[Stage2Experiment, list[str]]]:
    """Notebook 06's groups for `ltrlib.bilambdamart.fit_model_groups`: every model of `MODELS`
    on ``exp``, and ``control_models`` (`model_list`) on the control when there is one."""
    groups = {MAIN_GROUP: (exp, list(MODELS))}
    if control is not None:
        groups[CONTROL_GROUP] = (control, model_list(control_models, "control_models"))
    return groups


def control_results(control: Stage2Experiment | None,
                    fitted: Mapping[str, FittedModel] | None) -> pd.DataFrame | None:
    """The control's per-query test NDCG (`per_query_results`): stage 1, its ``fitted``
    models and its own oracles; None without a control."""
    if control is None or fitted is None:
        return None
    return per_query_results(control, fitted, oracles=oracle_scores(control.two.stage1.test))


def control_table(per_query: pd.DataFrame | None) -> MarkedTable | None:
    """Table 2's claim without pairwise structure: the control's rows in the order
    `control_results` gives them (stage 1, the models, the oracles); None without a control."""
    return None if per_query is None else ndcg_table(per_query, list(pd.unique(per_query.model)))


def control_pvalues(per_query: pd.DataFrame | None) -> pd.DataFrame | None:
    """The tests behind `control_table`'s marks, with Holm's correction over the table's
    marks beside them (`ndcg_pvalues`: ``p_holm``, ``marked_holm``; ours, and the table keeps
    its uncorrected marks); None without a control."""
    return None if per_query is None else ndcg_pvalues(per_query, list(pd.unique(per_query.model)))


def listwise_ablation(exp: Stage2Experiment, *, wanted: bool, tuning: TuningSettings,
                      n_jobs: int) -> pd.DataFrame | None:
    """Table 2's models (`ABLATION_ROWS`) on stage 2 without the listwise features (the base
    features and stage-1 score alone; pairs still carry x_i − x_j), tuned as the main models
    with ``tuning`` (studies ``06.no_listwise.<model>`` in ``tuning.storage``), as per-query
    test NDCG; None unless ``wanted``. The ablation trains at the open settings' defaults, whatever ``exp`` uses."""
    if not wanted:
        return None
    bare = Stage2Experiment(exp.two, settings=exp.settings, train_queries=exp.train_queries, listwise=False)
    fitted = fit_models(bare, list(ABLATION_ROWS[1:]), tuning=tuning, n_jobs=n_jobs, study_prefix="06.no_listwise")
    return per_query_results(bare, fitted)


def ablation_table(per_query: pd.DataFrame | None) -> MarkedTable | None:
    """`listwise_ablation`'s results in Table 2's layout; None when it did not run."""
    return None if per_query is None else ndcg_table(per_query, list(ABLATION_ROWS))


def stage2_run_files(exp: Stage2Experiment, fitted: Mapping[str, FittedModel], test_scores: Mapping[str, Any],
              control: Stage2Experiment | None = None,
              control_fitted: Mapping[str, FittedModel] | None = None) -> list[RunFile]:
    """Every model's ranking of the test lists as `ltrlib.trec.RunFile` records
    (`stage2_runs`: judged by the full test partition's qrels), then the control's, named
    ``control.<model>`` and judged by its own labels (qrels ``qrels.control``)."""
    out = stage2_runs(exp, fitted, scores=test_scores).records()
    if control is not None and control_fitted is not None:
        out += stage2_runs(control, control_fitted).records(prefix="control.", qrels="qrels.control")
    return out
