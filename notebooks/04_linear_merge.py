# %% [markdown]
# # 04 · Merging by a linear combination of scores (Table 4)
#
# **What it shows.** §4 and §5.3 of the non-IID paper: on each client, the scores of the two
# local models are merged as `s = (1 − α)·s₁ + α·s₂` (α is the weight of M2), with α swept
# from 0 to 1 and chosen by NDCG@10 on that client's private D_merge. The merged models
# M12α (client 1) and M21α (client 2) are compared with M1 (a) and M2 (b) on the full test
# set (Table 4; superscripts: two-sided paired t-test, p < 0.05). Ties between α values are
# broken towards α = 0.5 (see `ltrlib.merge.linear`). Beyond the paper: per query category,
# where merging helps and where it hurts.
#
# **Inputs.** The local models M1 and M2 of every split, trained and stored by notebook
# `03_client_models` for the same `run_id` (reloaded here, never retrained), and the same
# data and split parameters as notebooks 02-03.
#
# **Outputs** under `reports/<run_id>/`: tables `alpha_choices`, `table4_linear` (with
# `table4_linear_numeric`: means and p-values), `fusion_baselines` (with
# `fusion_baselines_numeric`: means, p-values and Holm's) and `fusion_weights`
# (beyond the paper), `category_deltas`; figures `alpha_sweep`, `alpha_explorer_batch`, `category_deltas_vs_M1`,
# `category_deltas_vs_M2`; chosen α and mean NDCG@10 per model in `metrics.json`; TREC run
# files in `runs/04_linear_merge/`, `<split>.M12α.run.gz` and `<split>.M21α.run.gz` (each
# merge's ranking of the full test set) beside `qrels`.

# %%
# The standard parameters default to this JupyterLab session's data, scale, seed and run id
# (`make lab SCALE=tiny RUN_ID=...`); a batch run injects its own after the next cell.
from ltrlib.sessions import session

defaults = session()

# %% tags=["parameters"]
dataset: str = defaults.dataset  # synthetic, lightgbm-rank, or a LETOR path or name under data_dir
data_dir: str = defaults.data_dir  # folder of user collections; empty means data/raw
scale: str = defaults.scale  # synthetic size: tiny, small or paper
seed: int = defaults.seed  # seed of the data, of the splits random tie-break and of the models
run_id: str = defaults.run_id  # reports/run_id/ holds the models of notebook 03 and receives the results
interactive: bool = defaults.interactive  # widgets when True; plain figures in batch runs
category_feature: str = ""  # real data: feature with the topic category (f220 on Istella-S); empty means none
category_bins: int = 0  # above 0: quantile-bin category_feature into this many categories
split1_category: str = "auto"  # Split1: exclusive partitioning on this category; auto: the most frequent query category (11 on Istella-S)
split2_category: str = "auto"  # Split2: partitioning without tie-breaking on this category; auto: as Split1's
split3_category: str = "auto"  # Split3: partitioning without tie-breaking on this category; auto: the second most frequent (14 on Istella-S)
merge_size: str = "train_queries_half"  # D_merge size Q/2 counts the train_queries_half or vali_queries_half of a client
merge_overflow: str = "shrink"  # pool too small: shrink, overlap or error
alpha_step: float = 0.01  # grid step of alpha on 0..1; the paper uses 0.01
normalisation: str = "none"  # per-query score normalisation before merging: none (paper), zscore or minmax
splits_to_run: str = "Split1,Split2,Split3"  # comma-separated subset of Split1, Split2, Split3

# %%
import pandas as pd

from ltrlib import merge, plots
from ltrlib.noniid import load_paper_splits, splits_table
from ltrlib.report import Reporter
from ltrlib.train import ModelStore

# "auto" categories are the data's most frequent query categories (the paper's reason for 11
# and 14); a split a client of which holds too few queries to train on is left out, with a warning.
setup = load_paper_splits(dataset, data_dir, scale, seed, (split1_category, split2_category, split3_category),
                          category_feature=category_feature, category_bins=category_bins, merge_size=merge_size,
                          merge_overflow=merge_overflow, splits_to_run=splits_to_run)
splits, nsplits, split_names = setup.data, setup.splits, setup.names
report = Reporter(run_id, "04_linear_merge", data=splits)
store = ModelStore(run_id, data=splits)
models = merge.load_local_models(store, split_names)
splits_table(setup.selected())

# %% [markdown]
# ## Choosing α on each client's D_merge
# For every split and client: α sweeps 0, 0.01, …, 1 and the value with the highest NDCG@10
# on the client's D_merge is kept. A small D_merge makes this choice noisy; `merge_queries`
# says how many queries it rests on.

# %%
experiments = merge.per_split(merge.linear_experiment, nsplits, models, split_names, step=alpha_step,
                              normalisation=normalisation, metrics=merge.TABLE_METRICS)
choices = merge.collect(experiments, "choices")
report.table(choices, "alpha_choices", caption="Chosen alpha (weight of M2) per split and client")
choices

# %% [markdown]
# ## Table 4: M1 (a), M2 (b), M12α and M21α on the full test set
# Assumptions where the paper is silent or inconsistent: its §5.1 says MAP@10 but its
# tables say MAP, so both columns are given (`map`, `map@10`; a query without relevant
# documents scores 1, as in LightGBM). Superscripts: two-sided paired t-test over the test
# queries (`scipy.stats.ttest_rel`), p < 0.05; the paper names no test. Equal NDCG@10 on
# D_merge for several α is broken towards α = 0.5 (`ltrlib.merge.linear`). The numbers
# are in `table4_linear_numeric` (means, p-values); `fidelity.md` of the run compares them
# with the paper's.

# %%
per_query = merge.collect(experiments, "per_query")
table4 = merge.marked_table(per_query, models=["M1", "M2", "M12α", "M21α"])
report.table(table4, "table4_linear", index=True,
             caption="Linear combination; superscripts a, b: paired t-test p < 0.05 against M1, M2")
report.table(merge.means_table(per_query, models=["M1", "M2", "M12α", "M21α"]), "table4_linear_numeric")
table4

# %% [markdown]
# ## Beyond the paper: the standard fusion methods on the same two local models
# The paper's linear combination is weighted-sum fusion with its weight tuned on D_merge.
# The fusion methods a reviewer would name first, from ranx, stand beside it as baselines
# the paper did not run (`ltrlib.merge.fusion`): CombSUM and CombMNZ of min-max normalised
# scores, reciprocal rank fusion (k = 60), and ranx's weighted sum with its weights tuned by
# `optimize_fusion` on each client's D_merge (M12wsum, M21wsum). Same test queries and
# superscripts as Table 4 (paired t-test p < 0.05 against M1, M2).

# %%
# Kept in the run folder under a digest of their inputs: notebook 05 reads them back.
fusion_per_query, fusion_weights = merge.fusion_baselines(nsplits, models, experiments, split_names,
                                                          cache_dir=store.run_dir / "fusion")
fused = pd.concat([per_query, fusion_per_query], ignore_index=True)
fusion_rows = ["M1", "M2", "M12α", "M21α", *merge.FUSIONS, "M12wsum", "M21wsum"]
fusion_table = merge.marked_table(fused, models=fusion_rows)
report.table(fusion_table, "fusion_baselines", index=True,
             caption="Beyond the paper: ranx's fusion methods beside the linear merges; superscripts a, b: "
                     "paired t-test p < 0.05 against M1, M2")
# The table keeps Table 4's uncorrected marks; `fusion_baselines_numeric` holds their
# p-values and Holm's correction over the table's marks beside them (ours).
report.table(merge.means_table(fused, models=fusion_rows), "fusion_baselines_numeric")
report.table(fusion_weights, "fusion_weights",
             caption="The weighted sums' weights (M1, M2), tuned by ranx on each client's D_merge by NDCG@10")
fusion_table

# %% [markdown]
# ## Run files
# The two linear merges ranking the full test set, per split, as TREC run files beside the
# test set's labels (`qrels`), for trec_eval or ranx. M1 and M2 are notebook 03's runs. The
# fusions are not written: each is ranx's `fuse` of those two runs (the weighted sums with
# the weights of `fusion_weights`), so ranx rebuilds them exactly, and written they would
# add a fifth of the run folder at `small` (docs/ecosystem.md).

# %%
report.run_file_records(merge.merged_run_files(nsplits, experiments, split_names, models=("M12α", "M21α")))

# %% [markdown]
# ## NDCG@10 against α
# D_merge (where α is chosen) and the full test set (where it is judged). When the two
# curves peak at different α, D_merge's category mix differs from the test set's: the
# paper's explanation of M21α on Split1.

# %%
sweep = merge.collect(experiments, "sweep")
report.figure(plots.alpha_sweep(sweep, selected_alpha=choices), "alpha_sweep",
              caption="NDCG@10 of the merged model against α on D_merge and test; red: the chosen α")

# %% [markdown]
# ## Exploring α
# Interactively, a slider over α redraws the curves and the table of every metric at that
# α for one split and client. In batch runs the first split and client is drawn at its
# chosen α.

# %%
report.show(plots.alpha_explorer(sweep, choices, interactive=interactive), "alpha_explorer_batch")

# %% [markdown]
# ## Where merging helps and where it hurts
# Per query category of the test queries (the §3.1 category of its relevant documents;
# `none` = no relevant document), the mean per-query change of NDCG@10 of each merged
# model against each local model.

# %%
categories = merge.query_categories(splits.test, seed=seed)
deltas = merge.category_deltas(per_query, categories, models=["M12α", "M21α"], min_queries=3)
report.table(deltas, "category_deltas")
report.figure(plots.merge_category_deltas(deltas, baseline="M1"), "category_deltas_vs_M1",
              caption="Per-query change of NDCG@10 against M1, by query category")

# %%
report.figure(plots.merge_category_deltas(deltas, baseline="M2"), "category_deltas_vs_M2",
              caption="Per-query change of NDCG@10 against M2, by query category")

# %%
report.metrics(**merge.merge_metrics(per_query, choices=choices))
