# %% [markdown]
# # 05 · Merging by stacking (Table 5, Figure 3) and per-query ranker selection
#
# **What it shows.** §4 and §5.3 of the non-IID paper: on each client, the scores of M1 and
# M2 are appended to the features of D_merge as features |x|+1 and |x|+2 (named `score_M1`,
# `score_M2`), and a LambdaMART meta-model is trained on it: M12S on client 1, M21S on
# client 2. D_merge is small and is the only labelled data a client may use for merging,
# so the meta-model is tuned with Optuna by `n_folds`-fold cross-validation over D_merge's
# queries (the paper does not say on which data it tuned), then refitted on all of D_merge.
# Table 5 compares M12S and M21S with M1 (a) and M2 (b) on the full test set; Figure 3
# shows the meta-models' feature importance by gain and by split count, the score features
# in red. Beyond the paper: per-query *selection* of one local model by a classifier on
# query-level feature aggregates (M12sel, M21sel), compared with α-merging and stacking in
# one table, with the oracle choice (by the test labels) as an upper bound, and ranx's
# standard fusion methods as notebook 04 runs them.
#
# **Inputs.** The local models M1 and M2 of every split from notebook `03_client_models`
# (same `run_id`; reloaded, not retrained) and the same data and split parameters.
#
# **Departure from the paper (time budget).** The paper tunes its meta-models without
# stating the number of trials (its tuned meta-models have 60-473 trees). Here each
# meta-model gets a short TPE search of `n_trials` = 6 trials, each a `n_folds`-fold
# cross-validation over D_merge, made cheap rather than few: trial 0 is a setting that can
# split on a small D_merge (learning rate 0.1, 31 leaves, min data in leaf 20, min sum of
# Hessian 1), so the search can only improve on it; TPE models the results from trial 4 on;
# every fold allows up to 500 trees with the paper's early-stopping patience of 100, and a
# trial whose best held-out NDCG@10 so far, 50 trees into a fold (or any later multiple of
# 10), is below the median of the completed trials on that fold at that tree count is stopped
# (Optuna's `MedianPruner`; pruned trials count as trials); each fold's binned data are
# built once per study. Most random draws on a D_merge of a few hundred queries or less
# (learning rates of 0.005 or less, large leaf minimums) are pruned after 50 trees. For a
# longer search pass e.g. `-p n_trials 30` (studies resume). On the `tiny` scale at most 2
# trials are run (see the cell after the parameters).
#
# **Outputs** under `reports/<run_id>/`: tables `table5_stacking`, `table5_stacking_numeric`,
# `stacking_params`, `comparison` (with `comparison_numeric`: means, p-values and Holm's),
# `selection_choices`, `category_deltas`; figures `figure3_importance`, `category_deltas_vs_M2`; Optuna studies `<split>.M12S`/`.M21S` in
# `optuna.journal`; TREC run files in `runs/05_stacking/`, `<split>.<model>.run.gz` for M12S,
# M21S, M12sel and M21sel (each model's ranking of the full test set) beside `qrels`.

# %%
# The standard parameters default to this JupyterLab session's data, scale, seed and run id
# (`make lab SCALE=tiny RUN_ID=...`); a batch run injects its own after the next cell.
from ltrlib.sessions import session

defaults = session()

# %% tags=["parameters"]
dataset: str = defaults.dataset  # synthetic, lightgbm-rank, or a LETOR path or name under data_dir
data_dir: str = defaults.data_dir  # folder of user collections; empty means data/raw
scale: str = defaults.scale  # synthetic size: tiny, small or paper
seed: int = defaults.seed  # seed of the data, of the splits random tie-break, of tuning and of the models
run_id: str = defaults.run_id  # reports/run_id/ holds the models of notebook 03 and receives the results
interactive: bool = defaults.interactive  # widgets when True; plain figures in batch runs
category_feature: str = ""  # real data: feature with the topic category (f220 on Istella-S); empty means none
category_bins: int = 0  # above 0: quantile-bin category_feature into this many categories
split1_category: str = "auto"  # Split1: exclusive partitioning on this category; auto: the most frequent query category (11 on Istella-S)
split2_category: str = "auto"  # Split2: partitioning without tie-breaking on this category; auto: as Split1's
split3_category: str = "auto"  # Split3: partitioning without tie-breaking on this category; auto: the second most frequent (14 on Istella-S)
merge_size: str = "train_queries_half"  # D_merge size Q/2 counts the train_queries_half or vali_queries_half of a client
merge_overflow: str = "shrink"  # pool too small: shrink, overlap or error
n_trials: int = 6  # Optuna TPE trials per meta-model, pruned ones included; each trains up to n_folds models
n_folds: int = 3  # cross-validation folds over the queries of D_merge for tuning
max_trees: int = 500  # most trees per meta-model (the paper's tuned meta-models have 60-473), patience 100
prune: bool = True  # stop hopeless trials early (Optuna's MedianPruner); False trains every trial to early stopping
alpha_step: float = 0.01  # grid step of alpha for the linear merge in the comparison table
normalisation: str = "none"  # score normalisation of that linear merge: none (paper), zscore or minmax
top_k: int = 15  # features per panel of Figure 3 (score features are always shown)
splits_to_run: str = "Split1,Split2,Split3"  # comma-separated subset of Split1, Split2, Split3
backend: str = "lightgbm"  # meta-models: lightgbm (the paper) or xgboost; local models come from notebook 03
storage: str = ""  # Optuna database for the meta-model studies, e.g. postgresql://user@host:5432/db; empty means the run's optuna.journal

# %%
# The tiny scale exists for tests: two trials per meta-model keep the notebook to seconds
# (`ltrlib.config.TRAIN_BUDGETS`). The meta-models train with stacking's own limits.
from ltrlib import merge
from ltrlib.train import TuningSettings

tuning = TuningSettings.for_scale(scale, "stacking", n_trials=n_trials, prune=prune, storage=storage, progress=True,
                                  first_params=merge.STACKING_TUNING.first_params)
settings = merge.STACKING_SETTINGS.replace(seed=seed, backend=backend, max_trees=max_trees)
from ltrlib.report import settings_frame

settings_frame(tuning=tuning, settings=settings)

# %%
import pandas as pd

from ltrlib import merge, plots
from ltrlib.noniid import load_paper_splits, splits_table
from ltrlib.report import Reporter
from ltrlib.train import JOURNAL_FILE, ModelStore

# "auto" categories are the data's most frequent query categories (the paper's reason for 11
# and 14); a split a client of which holds too few queries to train on is left out, with a warning.
setup = load_paper_splits(dataset, data_dir, scale, seed, (split1_category, split2_category, split3_category),
                          category_feature=category_feature, category_bins=category_bins, merge_size=merge_size,
                          merge_overflow=merge_overflow, splits_to_run=splits_to_run)
splits, nsplits, split_names = setup.data, setup.splits, setup.names
report = Reporter(run_id, "05_stacking", data=splits)
store = ModelStore(run_id, data=splits)
models = merge.load_local_models(store, split_names)
splits_table(setup.selected())

# %% [markdown]
# ## Stacking: tuning and training the meta-models
# Each study is stored in the run's Optuna journal, so a rerun with the same parameters
# reuses it. `cv_ndcg@10` is the mean held-out NDCG@10 over the folds of D_merge;
# `splits_in_model = 0` would flag a meta-model that learnt nothing (a constant ranker).

# %%
# Without a storage parameter the studies go to the run's journal, beside notebook 03's.
stacked = merge.per_split(merge.stacking_experiment, nsplits, models, split_names, n_folds=n_folds, settings=settings,
                          tuning=tuning.replace(storage=tuning.storage or store.run_dir / JOURNAL_FILE),
                          metrics=merge.TABLE_METRICS)
params = merge.collect(stacked, "params")
report.table(params, "stacking_params", caption="Tuned meta-models (cf. the text after Table 5)")
params

# %% [markdown]
# ## Table 5: M1 (a), M2 (b), M12S and M21S on the full test set
# Assumptions: the meta-models are tuned by cross-validation over D_merge (the paper does
# not say on which data it tuned them; see `ltrlib.merge.stacking`); MAP and MAP@10 are
# both given (the paper's §5.1 says MAP@10, its tables MAP); superscripts are two-sided
# paired t-tests, p < 0.05. Numbers in `table5_stacking_numeric`; the run's `fidelity.md`
# compares them with the paper's.

# %%
linear_runs = merge.per_split(merge.linear_experiment, nsplits, models, split_names, step=alpha_step,
                              normalisation=normalisation, sweep=False, metrics=merge.TABLE_METRICS)
per_query = merge.collect([linear_runs, stacked], "per_query")
table5 = merge.marked_table(per_query, models=["M1", "M2", "M12S", "M21S"])
report.table(table5, "table5_stacking", index=True,
             caption="Model stacking; superscripts a, b: paired t-test p < 0.05 against M1, M2")
report.table(merge.means_table(per_query, models=["M1", "M2", "M12S", "M21S"]), "table5_stacking_numeric")
table5

# %% [markdown]
# ## Figure 3: feature importance of the meta-models
# By total gain and by number of splits; red bars are the local models' scores.

# %%
importance = merge.feature_importance(merge.meta_models(stacked), top_k=top_k)
report.table(importance, "figure3_importance")
report.figure(plots.stacking_importance(importance), "figure3_importance",
              caption="Figure 3: meta-model feature importance by gain and by splits; red: local model scores")

# %% [markdown]
# ## Beyond the paper: per-query ranker selection
# A classifier trained on D_merge (query-level mean, std and max of every feature and of the
# two models' scores, and their within-query correlation) picks M1 or M2 for each query.
# The share of test queries routed to each model:

# %%
selected = merge.per_split(merge.selection_experiment, nsplits, models, split_names, seed=seed,
                           metrics=merge.TABLE_METRICS)
routing = merge.collect(selected, "choices")
report.table(routing, "selection_choices")
routing

# %% [markdown]
# ## All merging methods side by side
# `oracle` picks, per test query, the better local model by the test labels: an upper
# bound for selection, not a method. Beyond the paper, notebook 04's fusion baselines stand
# beside the paper's merges (`ltrlib.merge.fusion`: read back from the run folder where 04
# left them for the same local models and data, else computed here): CombSUM, CombMNZ,
# RRF, and ranx's weighted sum tuned on each client's D_merge (M12wsum, M21wsum).
# Superscripts as Table 5's.

# %%
fusion_per_query, _ = merge.fusion_baselines(nsplits, models, linear_runs, split_names,
                                             cache_dir=store.run_dir / "fusion")
all_per_query = pd.concat([merge.collect([linear_runs, stacked, selected], "per_query"), fusion_per_query],
                          ignore_index=True)
compared = ["M1", "M2", "M12α", "M21α", "M12S", "M21S", "M12sel", "M21sel", *merge.FUSIONS, "M12wsum", "M21wsum",
            "oracle"]
comparison = merge.marked_table(all_per_query, models=compared)
report.table(comparison, "comparison", index=True,
             caption="Linear merge, stacking, per-query selection and (beyond the paper) ranx's fusion methods "
                     "against M1 (a) and M2 (b)")
# The table keeps Table 5's uncorrected marks; `comparison_numeric` holds their p-values and
# Holm's correction over the table's marks beside them (ours).
report.table(merge.means_table(all_per_query, models=compared), "comparison_numeric")
comparison

# %% [markdown]
# ## Run files
# The stacked models and the selectors ranking the full test set, per split, as
# TREC run files beside the test set's labels (`qrels`), for trec_eval or ranx (M1, M2 and
# the α-merges are notebook 04's).

# %%
# Not the oracle: an upper bound that reads the test labels, not a model to score elsewhere.
report.run_file_records(merge.merged_run_files(nsplits, [stacked, selected], split_names))

# %% [markdown]
# ## Where each method helps and hurts, by query category (against M2)

# %%
categories = merge.query_categories(splits.test, seed=seed)
deltas = merge.category_deltas(all_per_query, categories,
                               models=["M12α", "M21α", "M12S", "M21S", "M12sel", "M21sel", "RRF", "M12wsum",
                                       "M21wsum"],
                               min_queries=3)
report.table(deltas, "category_deltas")
report.figure(plots.merge_category_deltas(deltas, baseline="M2"), "category_deltas_vs_M2",
              caption="Per-query change of NDCG@10 of the merged models against M2, by query category")

# %% [markdown]
# ## Exploring the meta-models
# Interactively, pick a meta-model and a number of features; in batch runs Figure 3 above
# is the output.

# %%
report.show(plots.importance_explorer(importance, interactive=interactive))

# %%
report.metrics(**merge.merge_metrics(all_per_query))
