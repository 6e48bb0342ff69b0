# %% [markdown]
# # 07 · Federated online LTR under non-IID data (FPDGD, Types 1-4)
#
# **What it shows.** §3-7 and the appendix of Wang & Zuccon, *Is Non-IID Data a Threat in
# Federated Online Learning to Rank?* (SIGIR 2022), on our data: FPDGD (federated PDGD,
# FedAvg weighted by the interactions each client performed) with a linear and a neural
# ranker, for each non-IID type against its IID baseline. Type 1: intents synthesised from
# groups of document categories, shuffled across clients per query, and evaluated as the
# paper does, on the training queries under every intent, averaged. Type 2: label skew,
# each client holds the documents of one label (R = 1) or of two (R = 2), no document
# held twice (the paper's text; `Job(label_overlap=True)` for the authors' runs). Type 3: a click
# model per client (3 SDBN or 5 PBM); IID draws one per interaction. Type 4: clients
# perform 1, 3, 5, 7, 9 interactions per round, alone and on top of Type 1 and Type 2 non-IID
# data; its baseline gives every client 5 on the same data, so the gap is the quantity
# skew's alone. Then the remedies: FedProx (mu grid) and FedPer (neural, output layer kept
# local; offline NDCG averaged over the clients' personalised models) on Type 1 (Figure 4)
# and on Type 2 #R = 1 (Figure 7), and there also data sharing (10% of the training
# queries, whole and with their true labels, replace the clients' own parts of them) in
# both readings: "as the authors' code" (no warm-up) and "as described" in §6.3 (a server
# warm-up on the shared data before round 1).
#
# **Inputs.** The dataset (`synthetic` by default; Type 1 needs document categories, so a
# real collection needs `category_feature`). The paper's own Type 1 collection, the
# intent-change collection (a LETOR file whose lines end in `# docid = ...`, and one TREC
# qrels file per intent), is read when `intent_qrels` names its qrels files: then `dataset`
# is its features file, Type 1 uses the judged intents, and, as the paper (it has no test
# set), every setting is evaluated offline on its training queries (Type 1 under each
# intent, averaged). A collection in cross-validation folds (MSLR-WEB10K's `Fold1`-`Fold5`,
# or the twin `ltrlib formats mslr` writes) runs the whole grid on each fold, every fold's
# `train.txt` for the clients and its `test.txt` for offline evaluation (`vali.txt` unused),
# and averages every curve and table over runs x folds, as the paper averages "across
# dataset splits and experimental runs"; `folds` (default: every fold the collection has)
# picks some, e.g. `-p folds 1` for one fold's cost. Each fold's runs have seeds of their
# own, and every run's row names its fold. A dataset of one split (the default synthetic
# one) has no folds. Shortened defaults by scale (T = 300, 2 runs a curve and the remedies
# under perfect clicks at `small`); the paper's protocol, T = 10,000 rounds, 5 runs a curve
# and the remedies under every click model, is one flag on any data:
# `ltrlib run --only 07 -p profile paper` (scale `paper` sets T and the runs too; runs are
# each fold's on a collection in folds). Online
# cumulative NDCG is comparable with the paper's Tables 2-3 only at T = 10,000, since it
# sums over the rounds. The neural ranker computes in float32 (`-p precision float64`
# gives the numbers of ltrlib before 2026-11-28, to the bit).
#
# **Outputs** under `reports/<run_id>/`: tables `runs_offline`, `runs_online` (every run,
# with its `fold` on a collection in folds),
# `noniid_gaps` (IID against non-IID, online and final offline, paired t-test over seeds),
# `online_table` (the counterpart of Tables 2-3: cumulative discounted online NDCG@10,
# gamma 0.9995, tidy), `table2_paper_layout` and `table3_paper_layout` (the same in the
# paper's layout), `remedies` (with p-values against FedAvg); figures `offline_<setting>`
# (offline NDCG@10 against rounds,
# mean and 95% band over seeds), `online_gaps`, `remedies_<setting>`; headline gaps in
# `metrics.json`; TREC run files under `runs/07_foltr_noniid/`: Table 2's perfect-click runs
# (Type 1, no remedy) of the first run seed (of the first fold),
# `type1.<data>.<ranker>.perfect.none.run.gz`, on the training queries they are evaluated
# on, with one qrels per intent (`qrels.intent0`, ...).
#
# Conventions: offline NDCG@10 skips test queries without relevant documents; online
# NDCG@10 counts them as 0 (as the reference does). Features are min-max scaled per query.

# %%
# The standard parameters default to this JupyterLab session's data, scale, seed and run id
# (`make lab SCALE=tiny RUN_ID=...`); a batch run injects its own after the next cell.
from ltrlib.sessions import session

defaults = session()

# %% tags=["parameters"]
dataset: str = defaults.dataset  # synthetic, lightgbm-rank, or a LETOR path or name under data_dir
data_dir: str = defaults.data_dir  # folder of user collections; empty means data/raw
scale: str = defaults.scale  # synthetic size: tiny, small or paper
seed: int = defaults.seed  # seed the runs' seeds are drawn from (ltrlib.foltr.run_seeds): no other seed's runs share them
run_id: str = defaults.run_id  # reports/run_id/ receives the tables and figures
interactive: bool = defaults.interactive  # widgets when True; plain figures in batch runs
category_feature: str = ""  # real data: feature with the document category for Type 1; empty means none
category_bins: int = 0  # above 0: quantile-bin category_feature into this many categories
intent_qrels: str = ""  # intent-change collection: comma-separated qrels files, one per intent; dataset is its features file
folds: str = ""  # collection in folds (MSLR's Fold1-Fold5): comma-separated folds to run and average over; empty means all it has
profile: str = ""  # paper: 10000 rounds and 5 seeds as in the paper, on this data; empty: by scale
n_rounds: int = 0  # global rounds T; 0 means by profile or scale, 40 tiny, 300 small, 10000 paper (the paper value)
n_seeds: int = 0  # runs per curve (per fold on a collection in folds); 0 means by profile or scale, 1 tiny, 2 small, 5 paper
eval_every: int = 0  # rounds between offline evaluations; 0 means T/10
B: int = 5  # local PDGD updates per client and round (paper 5)
rankers: str = "linear,neural"  # comma-separated: linear, neural
clicks: str = "perfect,navigational,informational"  # SDBN click models for Types 1, 2 and 4
settings: str = "type1,type2_R1,type2_R2,type3_sdbn,type3_pbm,type4,type4_type1,type4_type2"  # non-IID settings to run
type2_R1_with_10_clients: bool = True  # also run one label per client with 10 clients, the fair comparison with two labels
type2_R1_B_sweep: str = "2,10"  # label skew with one label per client again at these B, beside B above (the paper uses 2, 5 and 10); empty skips
remedy_settings: str = "type1,type2_R1"  # settings where FedProx and FedPer are tried (Figures 4 and 7), and data sharing except on type1; empty skips
remedy_clicks: str = ""  # click models of the remedy runs, comma-separated; empty means by profile: every one of clicks at the paper's protocol, else perfect
mu_grid: str = "0.001,0.01,0.1,1,10"  # FedProx mu values
share_fraction: float = 0.1  # data sharing: share of training queries given to every client
warmup_interactions: int = 0  # data sharing "as described" (§6.3): server warm-up interactions on the shared queries before round 1; 0 means one per shared query
label_overlap: bool = False  # Type 2: False gives no document to two clients (the paper's text); True lets them overlap (the authors' runs)
precision: str = "float32"  # the neural ranker's arithmetic; float64 gives ltrlib's numbers before 2026-11-28 to the bit
n_jobs: int = 2  # parallel processes for the runs
scheduler: str = ""  # Dask scheduler address such as tcp://host:8786; empty means joblib here

# %%
from ltrlib.sessions import parse_list
from ltrlib import foltr
from ltrlib.foltr import online_table_caption, rounds_and_seeds, run_seeds

by_scale = rounds_and_seeds(profile, scale)
T = n_rounds or by_scale[0]
seeds = run_seeds(seed, n_seeds or by_scale[1])
every = eval_every or max(1, T // 10)
ranker_list = parse_list(rankers, name="rankers")
click_list = parse_list(clicks, name="clicks")
setting_list = parse_list(settings, name="settings")
remedy_click_list = foltr.remedy_click_models(remedy_clicks, profile, click_list)
remedy_list = parse_list(remedy_settings, name="remedy_settings", allow_empty=True)
mus = parse_list(mu_grid, float, "mu_grid", allow_empty=True)
fold_list = parse_list(folds, int, "folds", allow_empty=True)
dict(T=T, seeds=seeds, eval_every=every, rankers=ranker_list, clicks=click_list, remedy_clicks=remedy_click_list)

# %%
from ltrlib import foltr, plots
from ltrlib.report import Reporter

# One FoltrData, or {fold: FoltrData} on a collection in folds; `splits`, what the run folder is bound to.
data, splits = foltr.load_online_data(dataset, data_dir, scale, seed, category_feature=category_feature,
                                      category_bins=category_bins,
                                      intent_qrels=parse_list(intent_qrels, name="intent_qrels", allow_empty=True),
                                      folds=fold_list)
report = Reporter(run_id, "07_foltr_noniid", data=splits)
setting_list, remedy_list = foltr.settings_the_data_supports(data, setting_list, remedy_list)
n_folds = len(foltr.folds_of(data))  # 0: one split
foltr.online_data_sizes(data)

# %% [markdown]
# ## The runs
# Every setting, IID and non-IID, for each ranker and click model (Type 3 brings its own
# click models), label skew with one label per client also at the other B of
# `type2_R1_B_sweep` (settings `type2_R1_B2`, `type2_R1_B10`), then the remedies on each
# of `remedy_settings`; on a collection in folds, all of it on each fold. Runs go through
# joblib (or Dask with `scheduler`), one core each.

# %%
# The server warm-up "as described": by default one interaction per shared query.
warmup = warmup_interactions or foltr.shared_query_count(data, share_fraction)
# Each curve's runs: `seeds`, or each fold's own on a collection in folds.
jobs = foltr.experiment_grid(setting_list, foltr.runs_by_fold(data, seed, len(seeds)), rankers=ranker_list,
                             clicks=click_list, n_rounds=T, eval_every=every, B=B, label_overlap=label_overlap,
                             type2_R1_with_10_clients=type2_R1_with_10_clients,
                             type2_R1_B_sweep=parse_list(type2_R1_B_sweep, int, "type2_R1_B_sweep", allow_empty=True),
                             remedy_settings=remedy_list, remedy_clicks=remedy_click_list, mus=mus,
                             share_fraction=share_fraction, warmup_interactions=warmup, precision=precision)
# The final rankers of Table 2's perfect-click column (first run seed, of the first fold) come
# back for the run files; the others stay in the workers: the default grid is 142 runs a seed,
# and each Type 1 run ranks every training query (about 5 MB compressed at `small`).
kept = foltr.table2_jobs(jobs, jobs[0].seed, click="perfect")
# Each finished run is kept in the run folder as it ends, so that a rerun after an interruption
# resumes with the runs already done (`ltrlib.foltr.store`: a run made by other code or data is
# computed again).
offline, online, final_rankers = foltr.run_jobs(data, jobs, n_jobs=n_jobs, scheduler=scheduler, keep_rankers=kept,
                                                store=report.run_dir / foltr.RUNS_FOLDER)
report.table(offline, "runs_offline")
report.table(online, "runs_online")
online.groupby(["setting", "data"]).agg(runs=("seed", "size"), interactions=("interactions", "sum"),
                                        seconds=("seconds", "sum"))

# %% [markdown]
# ## Offline NDCG@10 against rounds, IID against non-IID
# One figure per setting: rows are rankers, columns click models, colours IID and non-IID
# data; bands are 95% intervals over seeds (over runs x folds on a collection in folds; none
# with one run).

# %%
summary = foltr.summarise_offline(offline)
report.figures(plots.foltr_setting_curves(summary), prefix="offline_", close=not interactive,
               caption=foltr.protocol_caption(T, len(seeds), n_folds))
report.show(plots.curve_explorer(summary, interactive=interactive))

# %% [markdown]
# ## Online performance (Tables 2-3) and the IID / non-IID gaps
# Cumulative discounted online NDCG@10 (gamma = 0.9995 over rounds) and the final offline
# NDCG@10; `gap` is non-IID minus IID; `p_value` a paired t-test over seeds.

# %%
table = foltr.online_table(online[online.remedy == "none"])
report.table(table, "online_table", caption=online_table_caption(T, len(seeds), n_folds))
report.table(foltr.table2_layout(online), "table2_paper_layout",
             caption="Table 2's layout: Type 1; ▲ IID significantly above non-IID (paired t-test over seeds, p < 0.05)")
report.table(foltr.table3_layout(online, B), "table3_paper_layout", caption="Table 3's layout: Type 2, #R = 1")
gaps = foltr.noniid_gaps(online)
report.table(gaps.round(4), "noniid_gaps", caption="non-IID minus IID, online and final offline")
report.figure(plots.foltr_online_gaps(gaps), "online_gaps", close=not interactive,
              caption=foltr.protocol_caption(T, len(seeds), n_folds))
gaps.round(3)

# %% [markdown]
# ## Run files of Table 2
# The final rankers of Table 2's perfect-click runs (first run seed, of the first fold) as
# TREC run files, ranking what their offline NDCG@10 ranks: the training queries, judged
# under each intent (`qrels.intent<k>`, one per intent; the offline NDCG is the mean over
# intents of the mean over queries with a relevant document).

# %%
written = report.run_file_records(foltr.final_run_files(data, final_rankers))

# %% [markdown]
# ## Remedies
# FedProx for each mu, FedPer (neural only) and, except on Type 1, data sharing in both
# readings, on the non-IID data of each of `remedy_settings`, against the plain FedAvg runs
# on its IID and non-IID data;
# `p_offline_vs_fedavg` and `p_online_vs_fedavg` are paired t-tests over seeds against
# FedAvg on the same non-IID data (the run's `fidelity.md` decides the paper's claims). FedProx
# pulls the local model towards the global one, `-mu (w - w_global)`, at every
# interaction, also one whose clicks give no gradient, as the authors' code does
# (`Job(prox_every_interaction=False)` pulls only with a click update).

# %%
report.figures(plots.foltr_remedy_curves(summary, remedy_list, remedy_click_list), prefix="remedies_",
               close=not interactive, caption=foltr.protocol_caption(T, len(seeds), n_folds))
remedies = foltr.remedies_table(online, remedy_list)  # None without remedy settings
report.table(remedies, "remedies", digits=4)
remedies

# %%
# `seeds`: runs per curve (per fold); `folds` only on a collection in folds.
report.metrics(runs=len(online), rounds=T, seeds=len(seeds), **({"folds": n_folds} if n_folds else {}),
               interactions=int(online.interactions.sum()), **foltr.gap_metrics(gaps))
