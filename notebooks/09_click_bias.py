# %% [markdown]
# # 09 · Unbiased LambdaMART on position-biased clicks
#
# **What it shows.** Learning to rank from simulated clicks. A logging ranker (LightGBM
# λMART trained on 1% of the labelled training queries) ranks the training queries;
# sessions show its top 10 and users click following the position-based model (PBM) of
# `ltrlib.foltr`: P(click at rank r) = c[label] · (1/r)^η, for η ∈ {0, 0.5, 1, 1.5, 2}. The
# log records each document's displayed position. On logs of a growing number of sessions
# we train XGBoost's Unbiased LambdaMART (`lambdarank_unbiased=True`) against the same
# model without debiasing, and LightGBM with the positions in its Dataset (its
# position-bias model), and score them on the test set's true labels, beside the logging
# ranker and a λMART trained on the true labels of every training query (the ceiling).
# Then the propensities XGBoost estimated against the true examination ratio 1/rank^η.
#
# **Inputs.** The dataset (`synthetic` by default) at `scale`. Logs of different sizes
# for one η are nested (the first sessions of one log). Models trained on clicks grow a
# fixed number of trees (`click_trees`): a click setting has no labelled validation set.
#
# **Outputs** under `reports/<run_id>/`: tables `click_curves` (tidy), `click_curves_wide`,
# `propensities`, `propensity_errors`, `click_rates`; figures `click_bias_curves`,
# `propensities`; headline numbers in `metrics.json`; TREC run files under
# `runs/09_click_bias/`: the test rankings of the logging ranker, the ceiling and every model
# trained on the largest log at the smallest and the largest η.
#
# Sizes by scale (0 or empty parameters): tiny 200 and 600 sessions, small 600, 2000 and
# 6000, paper 3000, 30000 and 300000 with the paper's tree limits, one parameter away
# (`ltrlib run --scale paper --only 09`).

# %%
# The standard parameters default to this JupyterLab session's data, scale, seed and run id
# (`make lab SCALE=tiny RUN_ID=...`); a batch run injects its own after the next cell.
from ltrlib.sessions import session

defaults = session()

# %% tags=["parameters"]
dataset: str = defaults.dataset  # synthetic, lightgbm-rank, or a LETOR path or name under data_dir
data_dir: str = defaults.data_dir  # folder of user collections; empty means data/raw
scale: str = defaults.scale  # synthetic size: tiny, small or paper
seed: int = defaults.seed  # seed of the data, of the sessions and clicks and of the models
run_id: str = defaults.run_id  # reports/run_id/ receives the tables and figures
interactive: bool = defaults.interactive  # widgets when True; plain figures in batch runs
etas: str = "0,0.5,1,1.5,2"  # PBM position-bias exponents
sessions: str = ""  # comma-separated numbers of logged sessions; empty means by scale
top_k: int = 10  # documents shown per session
logging_fraction: float = 0.01  # share of labelled training queries the logging ranker learns from
click_trees: int = 0  # trees of every model trained on clicks; 0 means by scale
ceiling_trees: int = 0  # tree limit of the true-label ceiling; 0 means by scale

# %%
from ltrlib import clicklog
from ltrlib import plots, trec
from ltrlib.sessions import parse_list
from ltrlib.data import load_dataset
from ltrlib.report import Reporter, settings_frame
from ltrlib.train import TrainSettings, budget_for_scale

splits = load_dataset(dataset, data_dir, scale, seed)
report = Reporter(run_id, "09_click_bias", data=splits)
# 0 or empty parameters take the scale's budgets (`ltrlib.config.TRAIN_BUDGETS`); the models
# trained on clicks grow `max_trees` trees.
settings = TrainSettings.for_scale(scale, "click_bias", max_trees=click_trees, seed=seed)
budget = budget_for_scale(scale, "click_bias", sessions=sessions, ceiling_trees=ceiling_trees)
session_counts = parse_list(budget["sessions"], int, "sessions")
eta_values = parse_list(etas, float, "etas")
settings_frame(settings=settings, budget=budget)

# %% [markdown]
# ## NDCG@10 against the number of logged sessions, one panel per η
# Dashed lines: the logging ranker (what the clicks come from) and the true-label ceiling.

# %%
result = clicklog.click_bias_experiment(splits, eta_values, session_counts, top_k=top_k,
                                        logging_fraction=logging_fraction, settings=settings,
                                        ceiling_trees=budget["ceiling_trees"])
wide = clicklog.curve_table(result.curves)
report.table(result.curves, "click_curves")
report.table(wide, "click_curves_wide",
             caption=f"Test NDCG@10; logging ranker trained on {result.logging_queries} labelled queries")
report.figure(plots.click_bias_curves(result.curves), "click_bias_curves")
wide

# %% [markdown]
# ## Run files
# The test rankings behind the curves' ends, at the largest log, the smallest and the largest
# η (every point would multiply the files by the sizes and the η's), the logging ranker's and
# the ceiling's.

# %%
report.run_file_records(trec.run_records(result.test_scores, splits.test))

# %% [markdown]
# ## How biased the logs are
# Observed click-through rate per displayed rank in the largest log of each η.

# %%
rates = result.click_rates.pivot(index="rank", columns="eta", values="ctr")
report.table(result.click_rates, "click_rates")
rates

# %% [markdown]
# ## XGBoost's propensity estimates against the truth
# `estimated` is t+ of Unbiased LambdaMART (position bias on clicked documents, relative
# to rank 1) from the model trained on the largest log; `true` is 1/rank^η.

# %%
errors = clicklog.propensity_errors(result.propensities)
report.table(result.propensities, "propensities")
report.table(errors, "propensity_errors")
report.figure(plots.propensity_estimates(result.propensities), "propensities")
errors

# %%
report.metrics(**clicklog.click_bias_metrics(result))
