"""Merging independently trained local rankers (§4 of the non-IID paper) and beyond.

One module per algorithm, each with its optimiser beside it (ranx-style):

* `ltrlib.merge.linear`: the linear combination ``sum_i alpha_i s_i`` (`linear_merge`)
  and `optimize_linear` (grid over the simplex, or coordinate ascent), `alpha_sweep`,
  and `linear_experiment`, the paper's §5.3 protocol on one split (Table 4).
* `ltrlib.merge.stacking`: the score-augmented meta-model (`stack_features`,
  `optimize_stacking` = Optuna tuning by k-fold CV over D_merge's queries,
  `train_stacking`, `feature_importance`) and `stacking_experiment` (Table 5, Figure 3).
* `ltrlib.merge.selection`: beyond the paper, per-query ranker selection by a classifier
  on query-level feature aggregates (`query_aggregates`, `RankerSelector`).
* `ltrlib.merge.analysis`: per-query results, the Table 4/5 layout with significance
  markers (`marked_table`) and per-category gains and losses (`category_deltas`).

Every merged model (`LinearMerge`, `StackingModel`, `RankerSelector`) is a
`ltrlib.data.Scorer`: fitted with ``models=``, it holds its base models and
``merged.score(ds)`` scores them itself; ``merged.score_from_base(ds, base_scores)`` takes
their scores when a caller holds them already (`score_models` scores any set of Scorers).
"""

from ltrlib.merge import analysis, linear, selection, stacking
from ltrlib.merge.analysis import (
    LOCAL_MODELS,
    TABLE_METRICS,
    category_deltas,
    collect,
    flatten_columns,
    merge_metrics,
    hold_base_models,
    load_local_models,
    means_table,
    merged_model_name,
    per_query_frame,
    query_categories,
    marked_table,
    score_base_models,
    score_models,
)
from ltrlib.merge.linear import (
    NORMALISATIONS,
    LinearExperiment,
    LinearMerge,
    alpha_grid,
    alpha_sweep,
    linear_experiment,
    linear_merge,
    normalise_scores,
    optimize_linear,
    simplex_grid,
    sweep_at,
)
from ltrlib.merge.selection import (
    AGGREGATES,
    RankerSelector,
    fit_selector,
    oracle_choice,
    per_query_metric,
    query_aggregates,
    select_scores,
    selection_experiment,
)
from ltrlib.merge.stacking import (
    SCORE_PREFIX,
    STACKING_SETTINGS,
    StackingExperiment,
    StackingModel,
    feature_importance,
    optimize_stacking,
    score_feature_names,
    stack_features,
    stacking_experiment,
    train_stacking,
)

# Each module lists its public names once; the package hands all of them on.
__all__ = [*analysis.__all__, *linear.__all__, *selection.__all__, *stacking.__all__]
