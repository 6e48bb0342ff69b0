"""Merging independently trained local rankers (§4 of the non-IID paper) and beyond.

One module per algorithm, each with its optimiser beside it (ranx-style):

* `ltrlib.merge.linear`: the linear combination ``sum_i alpha_i s_i`` (`linear_merge`)
  and `optimize_linear` (grid over the simplex, or coordinate ascent), `alpha_sweep`,
  and `linear_experiment`, the paper's §5.3 protocol on one split (Table 4).
* `ltrlib.merge.stacking`: the score-augmented meta-model (`stack_features`,
  `optimize_stacking` = Optuna tuning by k-fold CV over D_merge's queries,
  `train_stacking`, `feature_importance`) and `stacking_experiment` (Table 5, Figure 3).
* `ltrlib.merge.fusion`: beyond the paper, the standard fusion methods on ranx (CombSUM,
  CombMNZ, RRF, and the weighted sum tuned on D_merge), the baselines of the paper's merges;
  `fusion_models` gives them as Scorers (`FusedModel`).
* `ltrlib.merge.selection`: beyond the paper, per-query ranker selection by a classifier
  on query-level feature aggregates (`query_aggregates`, `RankerSelector`).
* `ltrlib.merge.analysis`: per-query results, the Table 4/5 layout with significance
  markers (`marked_table`) and per-category gains and losses (`category_deltas`).

Every merged model (`LinearMerge`, `StackingModel`, `RankerSelector`, `FusedModel`) is a
`ltrlib.data.Scorer`: fitted with ``models=``, it holds its base models and
``merged.score(ds)`` scores them itself; ``merged.score_from_base(ds, base_scores)`` takes
their scores when a caller holds them already (`score_models` scores any set of Scorers).
Each experiment's ``scorers`` holds every model of its ``per_query`` as a Scorer, by the
same name, to score other data; its ``test_scores`` their scores on the full test set, the
ones its tables judged, which the notebooks write as run files (`ltrlib.report.Reporter.run_file`).
"""

from ltrlib.merge.analysis import (
    TABLE_METRICS,
    category_deltas,
    collect,
    load_local_models,
    marked_table,
    means_table,
    merge_metrics,
    meta_models,
    per_split,
    query_categories,
    merged_run_files,
    score_models,
)
from ltrlib.merge.fusion import FUSIONS, FusedModel, fusion_baselines, fusion_experiment, fusion_models
from ltrlib.merge.linear import LinearMerge, alpha_sweep, linear_experiment, linear_merge, optimize_linear, sweep_at
from ltrlib.merge.selection import RankerSelector, selection_experiment
from ltrlib.merge.stacking import (
    STACKING_SETTINGS,
    STACKING_TUNING,
    StackingModel,
    feature_importance,
    optimize_stacking,
    stacking_experiment,
)

__all__ = [
    "FUSIONS", "FusedModel", "fusion_baselines", "fusion_experiment", "fusion_models", "TABLE_METRICS",
    "category_deltas", "collect", "merge_metrics", "meta_models", "per_split", "load_local_models", "merged_run_files",
    "means_table", "query_categories", "marked_table", "score_models", "LinearMerge", "alpha_sweep",
    "linear_experiment", "linear_merge", "optimize_linear", "sweep_at", "RankerSelector", "selection_experiment",
    "STACKING_SETTINGS", "STACKING_TUNING", "StackingModel", "feature_importance", "optimize_stacking", "stacking_experiment",
]
