# %% [markdown]
# # 02 · Non-IID splits and their statistics
#
# **What it shows.** The Type 1 non-IID splits of the non-IID paper (§3.2, §5.2). For a
# category c, DS1 holds the queries of c under one of three strategies (with tie-breaking,
# without tie-breaking, exclusive: all relevant documents in c) and DS2' the queries with no
# relevant document of c; both are applied to training, validation and test alike.
# Table 2 counts queries, relevant documents and query-document pairs of each. Then the
# three splits the paper keeps (Split1: exclusive on c = 11; Split2, Split3: without
# tie-breaking on 11 and 14), the D_merge set of each client drawn from the validation
# queries in neither DS1 nor DS2', and the same construction for three clients.
#
# **Inputs.** `dataset`, `data_dir`, `scale`, `seed` as in notebook 00; the categories
# of the three splits; `merge_size` (what the |Q_i| of the D_merge size |Q_i|/2 counts)
# and `merge_overflow` (what happens when the pool is too small).
#
# **Outputs** under `reports/<run_id>/`: tables `table2` (the paper's layout),
# `table2_tidy`, `table2_paper` (Istella-S, as printed), `split_statistics`,
# `merge_summary`, `three_clients`; figures `merge_pools`, `three_clients`; metrics in
# `metrics.json`.

# %%
# The standard parameters default to this JupyterLab session's data, scale, seed and run id
# (`make lab SCALE=tiny RUN_ID=...`); a batch run injects its own after the next cell.
from ltrlib.sessions import session

defaults = session()

# %% tags=["parameters"]
dataset: str = defaults.dataset  # synthetic, lightgbm-rank, or a LETOR path or name under data_dir
data_dir: str = defaults.data_dir  # folder of user collections; empty means data/raw
scale: str = defaults.scale  # synthetic size: tiny, small or paper
seed: int = defaults.seed  # seed of the synthetic data and of the random tie-break
run_id: str = defaults.run_id  # reports/run_id/ receives tables and figures
interactive: bool = defaults.interactive  # widgets when True; plain figures in batch runs
category_feature: str = ""  # real data: feature with the topic category (f220 on Istella-S); empty means none
category_bins: int = 0  # above 0: quantile-bin category_feature into this many categories
split1_category: str = "auto"  # Split1: exclusive partitioning on this category; auto: the most frequent query category (11 on Istella-S)
split2_category: str = "auto"  # Split2: partitioning without tie-breaking on this category; auto: as Split1's
split3_category: str = "auto"  # Split3: partitioning without tie-breaking on this category; auto: the second most frequent (14 on Istella-S)
merge_size: str = "train_queries_half"  # D_merge size Q/2 counts the train_queries_half or vali_queries_half of a client
merge_overflow: str = "shrink"  # pool too small: shrink, overlap or error
three_client_sets: str = "auto"  # example with 3 clients: category sets split by a slash, members joined by a plus, rest takes the remainder; auto: Split2's/Split3's/rest (11/14/rest on Istella-S)

# %%
from IPython.display import display

from ltrlib import plots
from ltrlib import noniid
from ltrlib.report import Reporter

# "auto" categories are the data's most frequent query categories (the paper's reason for 11 and 14).
splits, split_categories = noniid.load_split_data(dataset, data_dir, scale, seed,
                                                  (split1_category, split2_category, split3_category),
                                                  category_feature=category_feature, category_bins=category_bins)
split1_category, split2_category, split3_category = split_categories
report = Reporter(run_id, "02_split_stats", data=splits)
table2_categories = tuple(dict.fromkeys([split2_category, split3_category, split1_category]))
client_sets = noniid.parse_client_sets(three_client_sets, auto=(split2_category, split3_category))
splits

# %% [markdown]
# ## Table 2
# Rows: partition x statistic; columns: the whole partition (DS), then DS1 and DS2' per
# strategy and category. DS2' is the same under every strategy (the paper says so; its own
# Istella-S table agrees except for the category-14 test columns, 201 vs 205 queries).

# %%
t2 = noniid.table2(splits, categories=table2_categories,
                   strategies=("no_tie_breaking", "exclusive", "tie_breaking"), seed=seed)
t2_wide = noniid.table2_wide(t2)
report.table(t2, "table2_tidy", caption="Table 2, tidy")
report.table(t2_wide, "table2", caption="Table 2: statistics of the dataset splits")
t2_wide.set_index(["partition", "statistic"]).T

# %% [markdown]
# The paper's Table 2 on Istella-S, for comparison (shares of DS matter more than counts:
# the synthetic data are smaller).

# %%
paper_t2 = noniid.table2_wide(noniid.paper_table2())
report.table(paper_t2, "table2_paper", caption="Table 2 of the paper (Istella-S), as printed")
paper_t2.set_index(["partition", "statistic"]).T

# %% [markdown]
# ## The paper's three splits and their D_merge sets
# The validation queries in neither DS1 nor DS2' are sorted by their relevant documents of
# the split's category (ties by query id); client 1 takes the |Q1|/2 with the fewest,
# client 2 the |Q2|/2 with the most. When the pool is smaller than |Q1|/2 + |Q2|/2 both
# sizes shrink in proportion (`merge_overflow`); the notes say so.

# %%
nsplits = noniid.paper_splits(splits, categories=split_categories, seed=seed,
                              merge_size=merge_size, merge_overflow=merge_overflow)
noniid.splits_table(nsplits)

# %%
split_stats = noniid.client_statistics(nsplits)
report.table(split_stats, "split_statistics",
             caption="Per split, client and part: sizes and the share of relevant documents in the client's categories")
split_stats.pivot_table(index=["split", "client"], columns="part", values="queries")

# %%
merge = noniid.merge_summary(nsplits)
report.table(merge, "merge_summary", caption="D_merge sizes per split and client")
report.figure(plots.merge_pool_frame(noniid.merge_pools(nsplits)), "merge_pools",
              caption="D_merge pools: queries by relevant documents of client 1's category")
merge

# %% [markdown]
# ## More than two clients
# Each client holds a set of categories; a query goes to the client whose set contains its
# dominant category (by the strategy of Split2), and the client marked `rest` takes the
# queries with no document, of any label, of any other client's categories (the DS2' rule). With
# the sets `{c}` and `rest` this is exactly Split2; D_merge comes from the validation
# queries no client holds.

# %%
three = noniid.make_clients(splits, client_sets, strategy="no_tie_breaking", name="three_clients",
                            seed=seed, merge_size=merge_size, merge_overflow=merge_overflow)
three_stats = three.statistics()
report.table(three_stats, "three_clients", caption="Three clients: sizes per part")
report.figure(plots.merge_pool_frame(noniid.merge_pool_frame(three)), "three_clients")
display(three)
three_stats.pivot_table(index="client", columns="part", values="queries")

# %%
# The categories the splits were made on ("auto" resolved to the data's most frequent).
report.metrics(**noniid.split_metrics(t2, nsplits, merge, split_stats, three_stats,
                                      (split1_category, split2_category, split3_category)))
