# %% [markdown]
# # 03 · Client models
#
# **What it shows.** The local models of the non-IID paper (§5.1-§5.2): LambdaMART
# (LightGBM `lambdarank`) models M1 trained on DS1 (client 1), M2 trained on DS2′ (client 2;
# the paper writes M′2, and from §5.2 on simply M2) and the baseline M_full trained on the
# whole collection DS, each tuned with Optuna TPE by NDCG@10 on its own validation part over
# the paper's search space. Then every model on the test parts of DS1, DS2′ and DS:
# Tables 1 and 3 of the paper, with a paired t-test against M_full, and Table 6, the tuned
# hyper-parameters.
#
# **Inputs.** The collection of notebook 00 (`dataset`, `scale`, `seed`, ...) and the split
# definitions of notebook 02 (`split1_category` ..., as `paper_splits`). Training follows the
# paper: at most `max_trees` = 3000 trees, early stopping after `early_stopping` = 100 trees
# without improvement of validation NDCG@10, TPE over the paper's four parameters.
#
# **Departure from the paper (time budget).** The paper does not state its number of
# trials. `make reproduce` must run all notebooks at the small scale in about 25 minutes on
# 2 cores, where one training of M_full at the paper's settings alone takes minutes. So each
# model gets a short TPE search, `n_trials` = 6, made cheap rather than skipped:
# with `start_from_paper=True` trial 0 is the median of the paper's Table 6 settings
# (learning rate 0.05, 180 leaves, min data in leaf 60, min sum of Hessian 1), so the search
# can only improve on it; TPE models the results from trial 4 on (Optuna's default of 10
# random start-up trials would make the whole study a random search); a trial whose best
# validation NDCG@10 after 50 trees (half the patience), or any later multiple of 10 trees,
# is below the median of the completed trials at the same tree count is stopped (Optuna's
# `MedianPruner`; a pruned trial counts as one of the `n_trials`); the binned data are built
# once per study. Table 6 is thus a result, of a short search: pruning favours fast learners
# (a learning rate below 0.05 rarely keeps up with the start's curve after 50 trees), and a
# longer search is one parameter away (`-p n_trials 30`; studies resume, so a rerun with
# the same `run_id` only adds the missing trials). The trials table shows each trial's
# state (complete or pruned) and trees grown. On the `tiny` scale 2 trials are run whatever
# `n_trials` says (the smoke test must take seconds; the second one meets the pruner).
#
# **Backend.** `backend="xgboost"` trains every model with XGBoost's `rank:ndcg` instead,
# tuned over the same space in XGBoost's names (`max_leaves`, `min_child_weight`; XGBoost
# has no minimum document count per leaf) and started from the same Table 6 median.
# Notebooks 04 and 05 read the backend from the stored models. Give such a run its own
# `run_id` (`ltrlib run --run-id xgb -p backend xgboost`): a study remembers its backend.
#
# **Outputs** under `reports/<run_id>/`: the models in `models/<split>/{M1,M2}.txt` and
# `models/full/M_full.txt` with JSON sidecars (notebooks 04-05 reload them), the Optuna
# studies in `optuna.journal` (a rerun resumes or reuses them), tables `client_models`
# (Tables 1/3), `client_models_numeric`, `hyperparameters` (Table 6), `tuning_trials`;
# figures `validation_curves`, `tuning_history`; NDCG@10 per split, model and test set in
# `metrics.json`; TREC run files in `runs/03_client_models/`: `<split>.M1.run.gz`,
# `<split>.M2.run.gz` and `M_full.run.gz` (each model's ranking of DS's test set) beside `qrels`.

# %%
# The standard parameters default to this JupyterLab session's data, scale, seed and run id
# (`make lab SCALE=tiny RUN_ID=...`); a batch run injects its own after the next cell.
from ltrlib.sessions import session

defaults = session()

# %% tags=["parameters"]
dataset: str = defaults.dataset  # synthetic, lightgbm-rank, or a LETOR path or name under data_dir
data_dir: str = defaults.data_dir  # folder of user collections; empty means data/raw
scale: str = defaults.scale  # synthetic size: tiny, small or paper
seed: int = defaults.seed  # seed of the data, the splits, the Optuna sampler and LightGBM
run_id: str = defaults.run_id  # reports/run_id/ receives models, studies, tables and figures
interactive: bool = defaults.interactive  # widgets when True; plain figures in batch runs
category_feature: str = ""  # real data: feature with the topic category (f220 on Istella-S); empty means none
category_bins: int = 0  # above 0: quantile-bin category_feature into this many categories
split1_category: str = "auto"  # Split1: exclusive partitioning on this category; auto: the most frequent query category (11 on Istella-S)
split2_category: str = "auto"  # Split2: partitioning without tie-breaking on this category; auto: as Split1's
split3_category: str = "auto"  # Split3: partitioning without tie-breaking on this category; auto: the second most frequent (14 on Istella-S)
merge_size: str = "train_queries_half"  # D_merge size, as in notebooks 02 and 04 (does not change the models)
merge_overflow: str = "shrink"  # pool too small: shrink, overlap or error
splits_to_run: str = "Split1,Split2,Split3"  # comma-separated subset of Split1, Split2, Split3
n_trials: int = 6  # Optuna TPE trials per model, pruned ones included; trial 0 is the paper Table 6 median with start_from_paper
max_trees: int = 3000  # most trees per model, as the paper
early_stopping: int = 100  # stop after this many trees without validation NDCG@10 gain, as the paper
num_threads: int = 2  # LightGBM threads
n_jobs: int = 2  # models tuned side by side in worker processes, num_threads // n_jobs threads each; 1: one after another
prune: bool = True  # stop hopeless trials early (Optuna's MedianPruner); False trains every trial to early stopping
start_from_paper: bool = True  # trial 0 of every study is the median of the paper Table 6 settings; the best can only beat it
backend: str = "lightgbm"  # lightgbm (the paper) or xgboost; use a new run_id when switching
storage: str = ""  # Optuna database shared with `ltrlib tune-worker`s, e.g. postgresql://user@host:5432/db; empty means the run's optuna.journal

# %%
# The tiny scale exists for tests: two trials per model (the second meets the pruner) and
# at most 300 trees keep the notebook to seconds (`ltrlib.config.TRAIN_BUDGETS`).
from ltrlib import clients, metrics, plots, train

settings = train.TrainSettings.for_scale(scale, "client_models", max_trees=max_trees,
                                         early_stopping=early_stopping, seed=seed,
                                         num_threads=num_threads, backend=backend)
tuning = train.TuningSettings.for_scale(scale, "client_models", n_trials=n_trials, prune=prune, storage=storage,
                                        first_params=train.paper_start(backend, wanted=start_from_paper))
from ltrlib.report import settings_frame

settings_frame(tuning=tuning, settings=settings)

# %%
from ltrlib.noniid import load_paper_splits, splits_table
from ltrlib.report import Reporter

# "auto" categories are the data's most frequent query categories (the paper's reason for 11
# and 14); a split a client of which holds too few queries to train on is left out, with a warning.
setup = load_paper_splits(dataset, data_dir, scale, seed, (split1_category, split2_category, split3_category),
                          category_feature=category_feature, category_bins=category_bins, merge_size=merge_size,
                          merge_overflow=merge_overflow, splits_to_run=splits_to_run)
splits, nsplits, run_splits = setup.data, setup.splits, setup.names
split1_category, split2_category, split3_category = setup.categories
report = Reporter(run_id, "03_client_models", data=splits)
store = train.ModelStore(run_id, data=splits)
splits_table(nsplits)

# %% [markdown]
# ## Tuning and training
# Each model gets its own Optuna study (`<split>.<model>` in `optuna.journal`); a rerun with
# the same `run_id` runs only missing trials and reloads stored models instead of
# retraining. M_full is tuned once (split `full`). DS2′ is the same in Split1 and Split2
# (both category 11), so its M2 is trained once and stored for both. The models of Tables
# 1 and 3 (below) are tuned in the same pass, so that `n_jobs` of them train side by side:
# on two cores LightGBM's second thread speeds one model up by only 1.2-1.5x, so two
# one-thread models at once finish sooner (`train.fit_side_by_side`). The biggest (M_full,
# Table 1's M2 on all of DS2) start first.

# %%
from ltrlib.noniid import alternative_splits, initial_splits

initial = initial_splits(splits, split2_category, seed=seed)  # empty when a client would have no queries
alternatives = alternative_splits(splits, nsplits, categories=(split2_category, split3_category),
                                  seed=seed, merge_size=merge_size, merge_overflow=merge_overflow)
all_models = clients.fit_client_models(
    {**nsplits, **alternatives, **initial}, store,
    splits=clients.training_order(run_splits, alternatives, initial),
    settings=settings, tuning=tuning, n_jobs=n_jobs)
models = all_models.subset(run_splits)
store.list()

# %% [markdown]
# ## Tables 1 and 3: NDCG@10 of each model on each test set
# Rows are models, columns the test parts of DS1, DS2′ and DS. The paper expects M1 to win
# on DS1 and lose on DS2′, M2 the opposite; M2 should be nearly as good as M_full where M1 loses.
# ᵃ: two-sided paired t-test against M_full over the test set's queries, p < 0.05.

# %%
per_query = clients.client_results(models)
table = metrics.compare(per_query, "M_full", by=["split", "test_set"]).marked(by="split").formatted()
report.table(table.reset_index(), "client_models",
             caption="NDCG@10 per split (rows: models, columns: test sets); ᵃ: p < 0.05 vs M_full")
table

# %%
numeric = metrics.compare(per_query, None, by=["split", "test_set"]).marked(by="split").formatted()
report.table(numeric.reset_index(), "client_models_numeric")
numeric

# %% [markdown]
# ## Run files
# Each split's M1 and M2 and M_full ranking DS's test queries, as TREC run files beside DS's
# labels (`qrels`), for trec_eval or ranx (`ltrlib runs RUN` lists them; ties as in
# `ltrlib.trec`). M_full is one model for every split, so it is written once.

# %%
runs = report.run_files(*clients.run_scorers(models))
list(runs)

# %% [markdown]
# ## Tables 1 and 3 in the paper's layout
# **Table 1** is the paper's *initial* split (§3.2, §5.2): DS1 = the queries whose §3.1
# category, with the tie-breaking chain, is `split2_category` (11); M2 is trained on the
# full DS2, every other training query (not DS2′), and tested on DS2's test part.
# **Table 3** is every alternative split: without tie-breaking and exclusive, on
# `split2_category` and `split3_category` (11 and 14). Three of its four configurations
# are the kept splits (no-tie 11 = Split2, no-tie 14 = Split3, exclusive 11 = Split1),
# whose models are reused; only exclusive 14 (`exclusive-c14`) gets a new M1,
# and its M2′ is Split3's (DS2′ depends on the category only). Exclusive 14 is the rarest
# partition: if its DS1 has fewer than 2 training, validation or test queries (the tiny
# scale) it is left out with a warning and its block of Table 3 stays empty. These models
# were tuned above, in the same pass: one study per model (`initial-c11.M1`,
# `initial-c11.M2`, `exclusive-c14.M1`), M_full shared.
# Assumption: the paper names no category for Table 1 beyond "the most frequent" (11), so
# the notebook takes Split2's. ᵃ: two-sided paired t-test (`scipy.stats.ttest_rel`) against
# M_full over the test set's queries, p < 0.05 (the paper marks nothing in these tables).
# Outputs: tables `table1_initial_split`, `table3_alternative_splits` and their `_numeric`
# companions (tidy means), which the run's `fidelity.md` compares with the paper. Note the
# paper's own inconsistency: Split1's M1 (exclusive 11) on DS is 0.543 in its Table 3 and
# 0.619 in its Table 4, the same model on the same test set; here it is one number.

# %%
paper_models = all_models.subset([*alternatives, *initial])
paper_per_query = clients.client_results(paper_models)
splits_table({**alternatives, **initial})

# %%
table1 = clients.table1_initial(paper_per_query, initial)
report.table(table1, "table1_initial_split",
             caption="Table 1: NDCG@10 on the initial split (tie-breaking); ᵃ: p < 0.05 vs M_full")
report.table(clients.client_means(paper_per_query, initial),
             "table1_initial_split_numeric")
table1

# %%
table3 = clients.table3_alternative(paper_per_query, alternatives)
report.table(table3.reset_index(), "table3_alternative_splits",
             caption="Table 3: NDCG@10 on the alternative splits; ᵃ: p < 0.05 vs M_full")
report.table(clients.client_means(paper_per_query, alternatives), "table3_alternative_splits_numeric")
table3

# %% [markdown]
# §5.2 says of the splits without tie-breaking that M1 and M2′ perform "fairly similar" on
# DS, "not significantly different". The ledger decides it on this paired t-test of M2′
# against M1 over DS's test queries (two-sided; the test is ours, the paper names none).

# %%
report.table(clients.locals_compared(paper_per_query, alternatives), "table3_locals_compared")

# %% [markdown]
# ## Table 6: tuned hyper-parameters
# The four tuned parameters, the early-stopped number of trees and the validation NDCG@10
# of the best trial.

# %%
hyper = train.tuned_parameters(models.rankers)
report.table(hyper, "hyperparameters", caption="Tuned hyper-parameters per split and model")
hyper

# %% [markdown]
# ## Validation curves
# Validation NDCG@10 after every tree of each tuned model; the dot is where early stopping
# put the model. A flat curve from the start means a learning rate too small to move.

# %%
curves = train.validation_curves(models.rankers)
report.figure(plots.validation_curves(curves), "validation_curves",
              caption="Validation NDCG@10 against trees; dots mark the early-stopping optimum")

# %% [markdown]
# ## Tuning history
# Every trial's validation NDCG@10 and the best so far. If the line still climbs at the
# last trial, more trials (`n_trials`) would likely pay off.

# %%
history = train.tuning_history(models.results)
report.table(history, "tuning_trials")
report.figure(plots.tuning_history(history), "tuning_history",
              caption="Optuna trials: each trial's validation NDCG@10 and the best so far")

# %%
report.metrics(n_trials=tuning.n_trials, split1_category=int(split1_category), split2_category=int(split2_category),
               split3_category=int(split3_category), **clients.client_metrics(models, per_query))
