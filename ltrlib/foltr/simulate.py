"""Experiment grids: settings x seeds, run in parallel, gathered into tidy frames.

A ``Job`` names a setting (``SETTINGS``), IID or non-IID, a ranker, a click model, a
remedy and a seed. ``run_jobs`` runs many of them through joblib (processes, one core each;
``n_jobs``) or, when ``scheduler`` is an address such as ``tcp://host:8786`` and dask is
installed, on that Dask cluster, with a tqdm progress bar. Results:

- ``offline``: one row per evaluation (``round, metric, value`` of the offline NDCG@10 and
  ``setting, data, ranker, click, remedy, seed``; ``data`` is ``IID`` or ``non-IID``);
- ``online``: one row per run with the cumulative discounted online NDCG (gamma 0.9995),
  the mean online NDCG, the interactions performed and the wall time;
- with ``keep_rankers``, the final rankers of those jobs (`FoltrRanker`), which
  ``final_run_files`` turns into TREC run files of the data their offline NDCG ranks.

On a collection in cross-validation folds (MSLR-WEB10K's ``Fold1``..``Fold5``), as the paper
averages every curve "across dataset splits and experimental runs", ``load_online_data``
gives the data of each fold (``{fold: FoltrData}``: its ``train.txt`` for the clients, its
``test.txt`` for offline evaluation), each job runs on its ``Job.fold``, and the rows carry a
``fold`` column; each fold's runs have seeds of their own (`run_seeds`), so a seed names one
run and every table that pairs or counts by seed (IID against non-IID, a remedy against
FedAvg, the fidelity ledger) pairs the runs of one fold and averages over runs x folds. On
a dataset of one split nothing carries a fold.

The partition seed (Type 1 intent groups and per-query shuffles, the data-sharing subset)
is the run's seed, so each seed is also a different re-labelling, as in the paper.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace

import numpy as np
import pandas as pd

from ltrlib import timing
from ltrlib.randomness import stream_seeds
from ltrlib.foltr import partition as P
from ltrlib.foltr.federated import run_federated
from ltrlib.foltr.intents import read_intent_collection
from ltrlib.foltr.rankers import PRECISIONS, FoltrRanker
from ltrlib.foltr.store import RunStore
from ltrlib.metrics import compare
from ltrlib.metrics.keys import flatten_metrics
from ltrlib.trec import RunFile

SETTINGS = ("iid", "type1", "type2_R1", "type2_R2", "type3_sdbn", "type3_pbm", "type4", "type4_type1",
            "type4_type2")
REMEDIES = ("none", "fedprox", "fedper", "sharing")


@dataclass(frozen=True)
class Job:
    setting: str
    noniid: bool = True
    ranker: str = "linear"
    click: str = "perfect"
    remedy: str = "none"
    mu: float = 0.0
    seed: int = 0
    n_rounds: int = 1000
    eval_every: int = 100
    B: int = 5
    n_clients: int = 0          # 0: the setting's default
    share_fraction: float = 0.1
    warmup_interactions: int = 0  # server warm-up on the shared queries (not in the paper)
    lr: float = 0.1
    label: str = ""             # display name of the setting (e.g. type2_R1 with 10 clients)
    prox_every_interaction: bool = True  # FedProx's pull also without a click update (the reference's)
    label_overlap: bool = False  # Type 2: a document may go to several clients (the reference's runs)
    precision: str = "float32"   # the neural ranker's arithmetic; float64: ltrlib's numbers before issue 60
    fold: int = 0                # the collection's fold it runs on (1-5 of MSLR's); 0: a dataset of one split

    def __post_init__(self):
        if self.setting not in SETTINGS:
            raise ValueError(f"Job: setting must be one of {SETTINGS}, got {self.setting!r}")
        if self.remedy not in REMEDIES:
            raise ValueError(f"Job: remedy must be one of {REMEDIES}, got {self.remedy!r}")
        if self.remedy == "fedper" and self.ranker != "neural":
            raise ValueError("Job: remedy fedper needs ranker='neural'")
        if self.remedy == "fedprox" and self.mu <= 0:
            raise ValueError(f"Job: remedy fedprox needs mu > 0, got {self.mu}")
        if self.precision not in PRECISIONS:
            raise ValueError(f"Job: precision must be one of {PRECISIONS}, got {self.precision!r}")
        if self.fold < 0:
            raise ValueError(f"Job: fold must be 0 (one split) or a fold number, got {self.fold}")


def build_federation(data: P.FoltrData, job: Job):
    s, nc = job.setting, (job.n_clients or None)
    if s == "iid":
        fed = P.iid(data, nc or 5, job.B, job.click)
    elif s == "type1":
        fed = P.type1(data, job.noniid, nc or P.N_INTENTS, job.B, job.click, seed=job.seed)
    elif s in ("type2_R1", "type2_R2"):
        fed = P.type2(data, job.noniid, R=int(s[-1]), n_clients=nc, B=job.B, click=job.click,
                      overlap=job.label_overlap, seed=job.seed)
    elif s in ("type3_sdbn", "type3_pbm"):
        fed = P.type3(data, job.noniid, s.split("_")[1], job.B)
    else:
        mix = s[len("type4_"):] if s != "type4" else ""
        fed = P.type4(data, job.noniid, click=job.click, mix=mix, seed=job.seed)
    if job.remedy == "sharing":
        fed = P.with_data_sharing(fed, data, job.share_fraction, seed=job.seed)
    return fed


def run_job(data: P.FoltrData, job: Job,
            keep_ranker: bool = False) -> tuple[pd.DataFrame, dict, FoltrRanker | None]:
    """One run: its offline rows, its online row, and its final ranker when ``keep_ranker``
    (else None: a neural ranker's weights are ~100 kB, not worth sending back from every
    worker when a few are wanted)."""
    t0 = time.perf_counter()
    fed = build_federation(data, job)
    res = run_federated(fed, job.ranker, job.n_rounds, seed=job.seed, lr=job.lr,
                        mu=job.mu if job.remedy == "fedprox" else 0.0, fedper=job.remedy == "fedper",
                        eval_every=job.eval_every, warmup_interactions=job.warmup_interactions,
                        prox_every_interaction=job.prox_every_interaction, precision=job.precision)
    tags = _tags(job)
    off = res.offline.assign(**tags)
    row = dict(tags, cumulative_online=res.cumulative_online,
               mean_online=float(np.nanmean(res.online.online_ndcg)),
               final_offline=float(res.offline.value.iloc[-1]),
               interactions=res.interactions, n_clients=len(fed.clients),
               seconds=time.perf_counter() - t0)
    return off, row, res.ranker if keep_ranker else None


def _tags(job: Job) -> dict:
    d = asdict(job)
    remedy = job.remedy if job.remedy != "fedprox" else f"fedprox(mu={job.mu:g})"
    if job.remedy == "fedprox" and not job.prox_every_interaction:
        remedy = f"fedprox(mu={job.mu:g}, on updates)"
    if job.remedy == "sharing":
        # §6.3 describes Zhao et al.'s method with a server warm-up on the shared data; the
        # authors' code has none. Both run in the batch, so the label says which.
        remedy = "sharing (as described)" if job.warmup_interactions > 0 else "sharing (authors' code)"
    fold = {"fold": job.fold} if job.fold else {}  # a dataset of one split keeps its tables' columns
    return dict(setting=job.label or job.setting, data="non-IID" if job.noniid else "IID", ranker=job.ranker,
                click=job.click if not job.setting.startswith("type3") else job.setting.split("_")[1],
                remedy=remedy, **fold, seed=job.seed, n_rounds=d["n_rounds"], B=job.B)


#: Global rounds T and seeds per curve by scale (shortened), and the paper's protocol.
ROUNDS_AND_SEEDS = {"tiny": (40, 1), "small": (300, 2), "paper": (10_000, 5)}
PROFILES = {"": None, "paper": ROUNDS_AND_SEEDS["paper"]}


def rounds_and_seeds(profile: str, scale: str) -> tuple[int, int]:
    """``(T, n_seeds)`` of notebook 07: the ``profile``'s ("paper": T = 10,000 and 5 seeds,
    on any data), else the scale's (a user collection counts as ``small``)."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; expected '' (by scale) or 'paper'")
    return PROFILES[profile] or ROUNDS_AND_SEEDS.get(scale, ROUNDS_AND_SEEDS["small"])


def remedy_click_models(remedy_clicks: str, profile: str, clicks) -> list[str]:
    """The click models of notebook 07's remedy runs: ``remedy_clicks`` (comma-separated)
    when given; otherwise every one of ``clicks`` under the paper's protocol (the paper runs
    each setting, remedies included, under its three SDBN click models, so a remedy's
    comparison with FedAvg pairs 3 click models x 5 runs), and perfect clicks alone by scale
    (the batch's budget)."""
    from ltrlib.sessions import parse_list

    if remedy_clicks:
        return parse_list(remedy_clicks, name="remedy_clicks")
    rounds_and_seeds(profile, "small")  # refuses an unknown profile
    return list(clicks) if profile == "paper" else ["perfect"]


def run_seeds(seed: int, n: int, fold: int = 0) -> list[int]:
    """The seeds of notebook 07's ``n`` runs per curve, drawn from the batch's ``seed``
    (`ltrlib.randomness.stream_seeds`): no two batch seeds share a run, so runs of a multi-seed
    study are independent (``seed, seed + 1, ...`` made batch seeds s and s + 1 share one).

    ``fold``: on a collection in folds, each fold's runs have seeds of their own, the
    ``fold``-th ``n`` of the same stream: fold 1's are a dataset of one split's (``fold=0``),
    a fold's are the same whichever other folds run, and a seed names one run of one fold."""
    if fold < 0:
        raise ValueError(f"run_seeds: fold must be 0 (one split) or a fold number, got {fold}")
    k = max(fold, 1)
    return stream_seeds(seed, "foltr runs", n * k)[n * (k - 1):]


def folds_of(data) -> list[int]:
    """The folds ``data`` holds (`load_online_data`): ``[]`` for a `FoltrData` of one split,
    the fold numbers of a ``{fold: FoltrData}``."""
    return sorted(data) if isinstance(data, Mapping) else []


def runs_by_fold(data, seed: int, n: int):
    """The seeds of each curve's runs on ``data``, for `experiment_grid`: `run_seeds`'s list
    on a dataset of one split; ``{fold: run_seeds(seed, n, fold)}`` on a collection in folds."""
    folds = folds_of(data)
    return {k: run_seeds(seed, n, k) for k in folds} if folds else run_seeds(seed, n)


def _by_fold(data) -> dict[int, P.FoltrData]:
    """``data`` keyed by the fold its jobs name: ``{0: data}`` for one split."""
    if isinstance(data, Mapping):
        if not data or 0 in data:
            raise ValueError(f"notebook 07's data by fold: expected fold numbers 1, 2, ..., got {sorted(data)}")
        return dict(data)
    return {0: data}


def _data_of(by_fold: dict[int, P.FoltrData], job: Job, where: str) -> P.FoltrData:
    if job.fold not in by_fold:
        held = "one split" if list(by_fold) == [0] else f"folds {sorted(by_fold)}"
        wanted = "one split" if job.fold == 0 else f"fold {job.fold}"
        raise ValueError(f"{where}: job {job_run_name(job)} (seed {job.seed}) runs on {wanted}, but the data "
                         f"holds {held}")
    return by_fold[job.fold]


def shared_query_count(data, fraction: float) -> int:
    """The training queries data sharing gives every client (`ltrlib.foltr.partition.with_data_sharing`):
    ``fraction`` of them, at least one; notebook 07's default server warm-up makes one
    interaction per shared query. On a collection in folds, its first fold's: MSLR's folds
    train on three of its five parts each, so their counts differ by a query or two."""
    first = _by_fold(data)
    train = first[min(first)].train
    return max(1, int(round(fraction * train.n_queries)))


def online_data_sizes(data) -> pd.DataFrame:
    """Training queries, test queries and features of ``data``, one row per fold (a
    ``fold`` column on a collection in folds)."""
    rows = [dict({"fold": k} if k else {}, train_queries=d.train.n_queries, test_queries=d.test.n_queries,
                 features=d.train.n_features) for k, d in _by_fold(data).items()]
    return pd.DataFrame(rows)


def _averaged(n_seeds: int, n_folds: int) -> str:
    """``averaged over 5 folds and 2 runs`` (each fold's), as the paper's captions say it."""
    return f"averaged over {n_folds} fold{'s' if n_folds != 1 else ''} and {n_seeds} run{'s' if n_seeds != 1 else ''}"


def protocol_caption(n_rounds: int, n_seeds: int, n_folds: int = 0) -> str:
    """What notebook 07's figures were run at, against the paper's protocol: its captions.
    ``n_folds``: the folds of a collection in folds the curves average over (0: one split)."""
    paper_T, paper_runs = ROUNDS_AND_SEEDS["paper"]
    if n_folds:
        said = f"T = {n_rounds:,} rounds, {_averaged(n_seeds, n_folds)} a fold"
        if (n_rounds, n_seeds) == (paper_T, paper_runs):
            return f"The paper's protocol: {said}."
        return f"{said}: shorter than the paper's T = {paper_T:,} and {paper_runs} runs (`-p profile paper` runs them)."
    if (n_rounds, n_seeds) == (paper_T, paper_runs):
        return f"The paper's protocol: T = {paper_T:,} rounds, {paper_runs} runs a curve."
    return (f"T = {n_rounds:,} rounds, {n_seeds} run{'s' if n_seeds != 1 else ''} a curve: shorter than the "
            f"paper's T = {paper_T:,} and {paper_runs} runs (`-p profile paper` runs them).")


def online_table_caption(n_rounds: int, n_seeds: int, n_folds: int = 0) -> str:
    """Caption of the Tables 2-3 counterpart, saying when its values compare with the paper's:
    cumulative online NDCG sums over the rounds, so only at the paper's T. ``n_folds`` as
    `protocol_caption`'s."""
    paper_T = ROUNDS_AND_SEEDS["paper"][0]
    comparable = ("the paper's T: its values compare with Tables 2-3" if n_rounds == paper_T else
                  f"the paper has T = {paper_T}: compare gaps and orderings with its Tables 2-3, not values")
    over = f"{_averaged(n_seeds, n_folds)} a fold" if n_folds else f"mean over {n_seeds} seeds"
    return f"Cumulative discounted online NDCG@10, {over}, T = {n_rounds} ({comparable})"


def run_jobs(data, jobs, n_jobs: int = 1, scheduler: str = "", progress: bool = True,
             keep_rankers=None, store=None):
    """Run ``jobs``; returns ``(offline, online)`` frames (see module docstring).

    ``data``: a `FoltrData`, or on a collection in folds ``{fold: FoltrData}``
    (`load_online_data`), each job running on its ``Job.fold``'s; a job whose fold the data
    does not hold is refused before anything runs.

    ``keep_rankers``: some of ``jobs`` (e.g. `table2_jobs`) whose final rankers to bring back
    from the workers; then returns ``(offline, online, rankers)``, ``rankers`` mapping each
    of those jobs to its `FoltrRanker`. FedPer jobs have no single final ranker (their
    offline NDCG averages the clients' personalised models) and are refused.

    ``store``: a folder (`ltrlib.foltr.store.RunStore`) where each run is written as it
    finishes and read back instead of run again: a grid interrupted, or run again, resumes
    with the runs it has. The results are the same as without it."""
    jobs = list(jobs)
    if not jobs:
        raise ValueError("run_jobs: no jobs")
    by_fold = _by_fold(data)
    parts = [_data_of(by_fold, j, "run_jobs") for j in jobs]
    keep = None if keep_rankers is None else set(keep_rankers)
    if keep is not None:
        missing = keep - set(jobs)
        if missing:
            raise ValueError(f"run_jobs: keep_rankers holds {len(missing)} job(s) not among jobs, "
                             f"e.g. {next(iter(missing))}")
        fedper = [j for j in keep if j.remedy == "fedper"]
        if fedper:
            raise ValueError(f"run_jobs: keep_rankers holds a FedPer job ({fedper[0]}), which has no single "
                             "final ranker: its offline NDCG averages the clients' personalised models")
    kept = [keep is not None and j in keep for j in jobs]
    runs = None if store is None else RunStore(store)
    results = [None if runs is None else runs.load(d, j, k) for d, j, k in zip(parts, jobs, kept)]
    todo = [i for i, r in enumerate(results) if r is None]
    from ltrlib.progress import bar as progress_bar

    bar = progress_bar(total=len(jobs), initial=len(jobs) - len(todo), desc="foltr runs", enabled=progress)
    # One wall-clock span of fitting, whether the runs are here or in worker processes.
    with timing.fitting():
        for i, result in _run_todo(by_fold, parts, jobs, kept, todo, n_jobs, scheduler):
            results[i] = result
            if runs is not None:
                runs.save(parts[i], jobs[i], kept[i], result)
            bar.update()
    bar.close()
    offline = pd.concat([r[0] for r in results], ignore_index=True)
    online = pd.DataFrame([r[1] for r in results])
    if keep is None:
        return offline, online
    return offline, online, {j: r[2] for j, k, r in zip(jobs, kept, results) if k}


def _indexed_run(i: int, data, job: Job, keep_ranker: bool):
    return i, run_job(data, job, keep_ranker)


def _run_todo(by_fold, parts, jobs, kept, todo, n_jobs, scheduler):
    """Yield ``(index, run_job's result)`` for each index in ``todo``, as each run finishes."""
    if not todo:
        return
    if scheduler:
        yield from _run_dask(by_fold, jobs, kept, todo, scheduler)
    elif n_jobs == 1:
        for i in todo:
            yield _indexed_run(i, parts[i], jobs[i], kept[i])
    else:
        from joblib import Parallel, delayed

        from ltrlib.processes import worker_processes

        with worker_processes(n_jobs):
            par = Parallel(n_jobs=n_jobs, return_as="generator_unordered")
            yield from par(delayed(_indexed_run)(i, parts[i], jobs[i], kept[i]) for i in todo)


def _run_dask(by_fold, jobs, kept, todo, scheduler):
    try:
        from dask.distributed import Client, as_completed
    except ImportError:
        raise ImportError(f"run_jobs: scheduler={scheduler!r} needs dask.distributed, which is not "
                          "installed; leave scheduler empty to use joblib") from None
    with Client(scheduler) as client:
        # Each fold's data goes to every worker once, not with each of its jobs.
        folds = {jobs[i].fold for i in todo}
        scattered = {fold: client.scatter(d, broadcast=True) for fold, d in by_fold.items() if fold in folds}
        futures = [client.submit(_indexed_run, i, scattered[jobs[i].fold], jobs[i], kept[i], pure=False)
                   for i in todo]
        for f in as_completed(futures):
            yield f.result()


def grid(settings, seeds, *, noniid=(False, True), rankers=("linear",), clicks=("perfect",),
         remedies=(("none", 0.0),), **common) -> list[Job]:
    """Every combination, as Jobs; ``remedies`` holds (name, mu) pairs."""
    jobs = []
    for s in settings:
        for nn in noniid:
            for rk in rankers:
                for ck in (clicks if not s.startswith("type3") else ("perfect",)):
                    for rem, mu in remedies:
                        if rem == "fedper" and rk != "neural":
                            continue
                        for seed in seeds:
                            jobs.append(Job(s, nn, rk, ck, rem, mu, seed, **common))
    return jobs


def load_online_data(dataset: str, data_dir: str, scale: str, seed: int, *, category_feature: str = "",
                     category_bins: int = 0, intent_qrels=(), folds=None):
    """Notebook 07's data from its parameters, and the `ltrlib.data.Splits` it came from
    (None for an intent collection, read outside `load_dataset`, which records no
    provenance). With ``intent_qrels`` (one qrels file per intent): the intent-change
    collection at ``dataset`` (`ltrlib.foltr.intents.read_intent_collection`); otherwise the collection's
    training queries (a validation part cut out of its training file goes back in:
    `ltrlib.foltr.partition.online_training_queries`) and its test queries, `ltrlib.foltr.partition.prepare_data`'d.

    ``folds``: on a collection in cross-validation folds (`ltrlib.data.dataset_folds`:
    MSLR-WEB10K's ``Fold1``..``Fold5``), the fold numbers to read, every fold it has when
    empty; the data is then ``{fold: FoltrData}``, each fold's training part for the clients
    and its test part for offline evaluation (its ``vali.txt`` unused, as the paper's), and the
    splits returned are the collection as `load_dataset` reads it without a fold (``Fold1``),
    the reading every other notebook of a batch binds its run folder to. ``None`` (the
    default) reads one split whatever the layout: a collection in folds gives its ``Fold1``.
    Folds named on a dataset of one split are refused."""
    from ltrlib.data import dataset_folds, load_dataset, resolve_dataset

    chosen = []
    if folds is not None:
        chosen = _chosen_folds(dataset, list(folds), [] if intent_qrels else dataset_folds(dataset, data_dir))
    if intent_qrels:
        if dataset == "synthetic":
            raise ValueError("intent_qrels needs --dataset set to the intent-change features file")
        return read_intent_collection(resolve_dataset(dataset, data_dir), list(intent_qrels)), None
    options = dict(category_feature=category_feature or None, category_bins=category_bins)
    splits = load_dataset(dataset, data_dir, scale, seed, **options)
    if not chosen:
        return P.prepare_data(P.online_training_queries(splits), splits.test), splits
    by_fold = {}
    for k in chosen:
        part = splits if k == 1 else load_dataset(dataset, data_dir, scale, seed, fold=k, **options)
        by_fold[k] = P.prepare_data(P.online_training_queries(part), part.test)
    return by_fold, splits


def _chosen_folds(dataset: str, folds: list[int], available: list[int]) -> list[int]:
    """The folds `load_online_data` reads: ``folds``, or every one of ``available`` when empty;
    ``[]`` on a dataset of one split (which refuses named folds)."""
    if not available:
        if folds:
            raise ValueError(f"folds={','.join(map(str, folds))}: dataset {dataset!r} is one split, not a collection "
                             "in folds (Fold1, Fold2, ... folders); leave folds empty")
        return []
    unknown = [k for k in folds if k not in available]
    if unknown or len(set(folds)) != len(folds):
        raise ValueError(f"folds={','.join(map(str, folds))}: dataset {dataset!r} has folds "
                         f"{','.join(map(str, available))}" + (f" (no fold {unknown[0]})" if unknown else
                                                               " (a fold named twice)"))
    return folds or available


#: The settings whose intents are synthesised from document categories (`ltrlib.foltr`'s Type 1).
TYPE1_SETTINGS = ("type1", "type4_type1")


def settings_the_data_supports(data, settings, remedy_settings) -> tuple[list[str], list[str]]:
    """``settings`` and ``remedy_settings`` without the Type 1 ones when the data cannot
    synthesise Type 1's intents (groups of document categories, at least one per intent:
    `ltrlib.foltr.partition.N_INTENTS`) and has no intents of its own; says so when it drops any.
    On a collection in folds (``{fold: FoltrData}``), every fold must be able to."""
    parts = list(_by_fold(data).values())
    n_categories = min(0 if d.train.category is None else len(set(d.train.category.tolist())) for d in parts)
    if all(d.intents is not None for d in parts) or n_categories >= P.N_INTENTS \
            or not any(s in settings or s in remedy_settings for s in TYPE1_SETTINGS):
        return list(settings), list(remedy_settings)
    print(f"Type 1 settings are skipped: {n_categories} document categories, fewer than the "
          f"{P.N_INTENTS} intents (set category_feature, and category_bins)")
    return ([s for s in settings if s not in TYPE1_SETTINGS], [s for s in remedy_settings if s not in TYPE1_SETTINGS])


def experiment_grid(settings, seeds, *, rankers, clicks, n_rounds: int, eval_every: int, B: int,
                    label_overlap: bool, type2_R1_with_10_clients: bool = False, type2_R1_B_sweep=(),
                    remedy_settings=(), remedy_clicks=(), mus=(), share_fraction: float = 0.0,
                    warmup_interactions: int = 0, precision: str = "float32") -> list[Job]:
    """Notebook 07's runs, in its order: every one of ``settings``, IID and non-IID, for each
    ranker and click model (`grid`); with ``type2_R1_with_10_clients`` and Type 2 #R = 2 run,
    Type 2 #R = 1 on 10 clients (``type2_R1_10clients``); Type 2 #R = 1 at each other B of
    ``type2_R1_B_sweep`` (settings ``type2_R1_B<b>``, each with its IID baseline at that B);
    then on the non-IID data of each of ``remedy_settings`` FedProx at each mu of ``mus``
    and FedPer, and, except on Type 1 (Figure 4 tries FedProx and FedPer only), data sharing
    of ``share_fraction`` without and with a server warm-up of ``warmup_interactions``.
    ``precision``: the neural ranker's arithmetic (`Job`).

    ``seeds``: the runs of each curve, or on a collection in folds ``{fold: seeds}``
    (`runs_by_fold`): then the grid of each fold in turn, its jobs on that fold."""
    if isinstance(seeds, Mapping):
        options = {k: v for k, v in locals().items() if k not in ("settings", "seeds")}
        return [replace(j, fold=int(fold)) for fold, runs in seeds.items()
                for j in experiment_grid(settings, runs, **options)]
    common = dict(n_rounds=n_rounds, eval_every=eval_every, B=B, label_overlap=label_overlap, precision=precision)
    jobs = grid(settings, seeds, rankers=rankers, clicks=clicks, **common)
    if type2_R1_with_10_clients and "type2_R2" in settings:
        jobs += [Job("type2_R1", nn, rk, ck, seed=s, n_clients=10, label="type2_R1_10clients", **common)
                 for nn in (False, True) for rk in rankers for ck in clicks for s in seeds]
    if "type2_R1" in settings:
        for b in [v for v in type2_R1_B_sweep if v != B]:
            jobs += grid(["type2_R1"], seeds, rankers=rankers, clicks=clicks,
                         **{**common, "B": b, "label": f"type2_R1_B{b}"})
    for remedy_setting in remedy_settings:
        remedies = [("fedprox", mu) for mu in mus] + [("fedper", 0.0)]
        jobs += grid([remedy_setting], seeds, noniid=(True,), rankers=rankers, clicks=remedy_clicks,
                     remedies=remedies, **common)
        if remedy_setting != "type1":
            for warm in (0, warmup_interactions):
                jobs += grid([remedy_setting], seeds, noniid=(True,), rankers=rankers, clicks=remedy_clicks,
                             remedies=[("sharing", 0.0)], share_fraction=share_fraction,
                             warmup_interactions=warm, **common)
    return jobs


def table2_jobs(jobs, seed: int, click: str | None = None) -> list[Job]:
    """The jobs behind the paper's Table 2 (`table2_layout`: Type 1 without a remedy, every
    ranker, click model and data) of one run seed, e.g. the first, for `run_jobs`'
    ``keep_rankers``; with ``click``, of that click model only. On a collection in folds a
    seed is one fold's (`run_seeds`), so these are that fold's."""
    return [j for j in jobs if j.setting == "type1" and not j.label and j.remedy == "none" and j.seed == seed
            and (click is None or j.click == click)]


def job_run_name(job: Job) -> str:
    """``<setting>.<data>.<ranker>.<click>.<remedy>`` of a job, as its rows in the tables
    read (``type1.non-IID.linear.perfect.none``)."""
    t = _tags(job)
    return ".".join(str(t[k]) for k in ("setting", "data", "ranker", "click", "remedy"))


def final_run_files(data, rankers) -> list[RunFile]:
    """Run files of final rankers (``{Job: FoltrRanker}``, from `run_jobs`' ``keep_rankers``)
    on the data their offline NDCG@10 ranks (`ltrlib.foltr.partition.evaluation_sets`), as
    `RunFile` records for `Reporter.run_file`, named by `job_run_name`, one per run.

    The test set has qrels ``qrels``. Type 1 ranks the training queries under each intent
    and averages: its runs are judged by every ``qrels.intent<k>`` (one per intent, on the
    training queries; the first is ``qrels``, the others ``other_labels``). A qrels name
    stands for one set of labels: Type 1's synthesised intents differ by run seed, so
    rankers of two seeds that would put two label sets under one name are refused. ``data``
    as `run_jobs`' (each ranker on its job's fold)."""
    by_fold = _by_fold(data)
    out, labels = [], {}  # labels: qrels name -> (seed, labels) of the first run judged by it
    for job, ranker in rankers.items():
        if not isinstance(ranker, FoltrRanker):
            raise TypeError(f"final_run_files: the ranker of {job_run_name(job)} is a {type(ranker).__name__}, "
                            "expected a FoltrRanker (run_jobs' keep_rankers)")
        name = job_run_name(job)
        part = _data_of(by_fold, job, "final_run_files")
        sets = P.evaluation_sets(part, build_federation(part, job))
        named = {"qrels": sets[0]} if len(sets) == 1 else {f"qrels.intent{k}": s for k, s in enumerate(sets)}
        for qrels, ds in named.items():
            seed0, y0 = labels.setdefault(qrels, (job.seed, ds.y))
            if not np.array_equal(y0, ds.y):
                raise ValueError(f"final_run_files: {name} would write other labels under {qrels!r} than a "
                                 f"run of seed {seed0} (its seed: {job.seed}; Type 1's intents are drawn per run "
                                 "seed, and each fold has its own queries); pass the rankers of one seed")
        (first, ds), *others = named.items()
        out.append(RunFile(name, ds, ranker.score(ds), first, dict(others)))
    return out


def summarise_offline(offline: pd.DataFrame, z: float = 1.96) -> pd.DataFrame:
    """Mean offline NDCG@10 per curve and round over its runs (on a collection in folds, every
    fold's: ``n`` counts runs x folds), with a normal-approximation 95% band."""
    keys = [c for c in ("setting", "data", "ranker", "click", "remedy", "round") if c in offline]
    g = offline.groupby(keys, dropna=False)["value"]
    out = g.agg(mean="mean", std="std", n="count").reset_index()
    half = z * out["std"].fillna(0.0) / np.sqrt(out["n"])
    return out.assign(lo=out["mean"] - half, hi=out["mean"] + half)


def online_table(online: pd.DataFrame) -> pd.DataFrame:
    """Counterpart of Tables 2-3: cumulative online NDCG, mean (std) over seeds, IID vs non-IID.
    On a collection in folds, over every fold's runs (``seeds`` counts them all; ``folds``
    how many folds they come from)."""
    keys = [c for c in ("setting", "ranker", "click", "remedy", "data") if c in online]
    g = online.groupby(keys, dropna=False)
    folds = {"folds": ("fold", "nunique")} if "fold" in online else {}
    t = g.agg(cumulative_online=("cumulative_online", "mean"), std=("cumulative_online", "std"),
              final_offline=("final_offline", "mean"), seeds=("seed", "nunique"), **folds).reset_index()
    return t


def noniid_gaps(online: pd.DataFrame) -> pd.DataFrame:
    """IID against non-IID per setting, ranker and click model (runs without a remedy).

    ``gap`` = non-IID - IID cumulative online NDCG (mean over seeds), ``rel_gap`` = gap / IID,
    ``offline_gap`` the same on the final offline NDCG@10, and ``p_value`` a paired t-test over
    seeds (pairs share the seed; NaN with fewer than 2 seeds, and scipy's NaN where the IID and
    non-IID runs are identical or a value is NaN).
    """
    base = online[online.remedy == "none"]
    if base.empty:
        return pd.DataFrame()
    # Pairs: the seeds both sides ran. scipy's own p-values (raw=True): setting "iid" builds
    # the same federation either way, and these tables have always shown NaN for its ties.
    # Rows in the order of each (setting, ranker, click)'s first run, as they always were.
    on, off = (compare(base, "IID", by=["setting", "ranker", "click"], rows="data", qid="seed", value=v,
                       models=["IID", "non-IID"], pairing="common", raw=True,
                       cell_order="appearance").differences().to_dict("records")
               for v in ("cumulative_online", "final_offline"))
    rows = [dict(setting=a["setting"], ranker=a["ranker"], click=a["click"], seeds=a["units"],
                 IID=a["mean_baseline"], **{"non-IID": a["mean"]}, gap=a["diff"], rel_gap=a["rel_diff"],
                 p_value=a["p"], offline_IID=b["mean_baseline"], offline_nonIID=b["mean"],
                 offline_gap=b["diff"], offline_p_value=b["p"])
            for a, b in zip(on, off) if a["data"] == "non-IID" and a["units"] > 0]
    return pd.DataFrame(rows)


def gap_metrics(gaps: pd.DataFrame) -> dict[str, float]:
    """Scalars for ``metrics.json`` (keys by `ltrlib.metrics.flatten_metrics`): per setting,
    ranker and click model of `noniid_gaps`, the final offline gap
    (``type2_r1.linear.perfect.offline_gap``) and the relative online gap
    (``type2_r1.linear.perfect.online_rel_gap``), to 4 decimals (seed noise is larger)."""
    if gaps.empty:  # no setting ran both IID and non-IID: nothing to report
        return {}
    keys = ["setting", "ranker", "click"]
    tidy = (gaps.rename(columns={"rel_gap": "online_rel_gap"})
            .melt(id_vars=keys, value_vars=["offline_gap", "online_rel_gap"], var_name="metric"))
    tidy["value"] = [round(float(v), 4) for v in tidy.value]
    return flatten_metrics(tidy, keys=keys)


def remedies_table(online: pd.DataFrame, settings) -> pd.DataFrame | None:
    """`remedy_table` of each of ``settings``, one below the other with a ``setting`` column;
    None without a setting."""
    if not len(settings):
        return None
    return pd.concat([remedy_table(online, s).assign(setting=s) for s in settings], ignore_index=True)


def remedy_table(online: pd.DataFrame, setting: str) -> pd.DataFrame:
    """Final offline and cumulative online NDCG of every remedy on one setting (mean, std over
    seeds), and each remedy's paired t-test against plain FedAvg on the same non-IID data
    (``p_offline_vs_fedavg``, ``p_online_vs_fedavg``: pairs share the ranker, click model and
    seed; NaN for FedAvg itself, for IID and with fewer than 2 seeds), and the same p-values
    Holm-corrected over every test of the table, both measures together (``..._holm``; ours:
    the paper marks its remedies uncorrected, and the table keeps those p-values)."""
    from ltrlib.metrics import paired_ttest
    from ltrlib.metrics.significance import corrected

    part = online[online.setting == setting]
    g = part.groupby(["ranker", "click", "data", "remedy"], sort=False)
    table = g.agg(final_offline=("final_offline", "mean"), final_offline_std=("final_offline", "std"),
                  cumulative_online=("cumulative_online", "mean"), seeds=("seed", "nunique")).reset_index()
    fedavg = part[(part.data == "non-IID") & (part.remedy == "none")].set_index(["ranker", "click", "seed"])
    p_values = {"final_offline": [], "cumulative_online": []}
    for r in table.itertuples(index=False):
        mine = part[(part.ranker == r.ranker) & (part.click == r.click) & (part.data == r.data)
                    & (part.remedy == r.remedy)].set_index(["ranker", "click", "seed"])
        common = mine.index.intersection(fedavg.index)
        for measure, out in p_values.items():
            usable = r.data == "non-IID" and r.remedy != "none" and len(common) >= 2
            out.append(paired_ttest(mine.loc[common, measure], fedavg.loc[common, measure]).p if usable else np.nan)
    both = corrected(np.concatenate([p_values["final_offline"], p_values["cumulative_online"]]))
    return table.assign(p_offline_vs_fedavg=p_values["final_offline"],
                        p_online_vs_fedavg=p_values["cumulative_online"],
                        p_offline_vs_fedavg_holm=both[:len(table)], p_online_vs_fedavg_holm=both[len(table):])


def _significantly_above(a: pd.Series, b: pd.Series) -> bool:
    """``a`` above ``b`` with a paired t-test over their common seeds at p < 0.05."""
    from ltrlib.metrics import paired_ttest

    common = a.index.intersection(b.index)
    if len(common) < 2:
        return False
    return bool(a.loc[common].mean() > b.loc[common].mean() and paired_ttest(a.loc[common], b.loc[common]).p < 0.05)


def table2_layout(online: pd.DataFrame) -> pd.DataFrame:
    """Type 1's cumulative online NDCG in the paper's Table 2 layout: rows ranker and data
    (IID, non-IID), columns the click models, means over seeds to two decimals; an IID cell
    carries ▲ when it is significantly above non-IID (paired t-test over seeds, p < 0.05)."""
    part = online[(online.setting == "type1") & (online.remedy == "none")]
    rows = []
    for ranker in pd.unique(part.ranker):
        for data in ("IID", "non-IID"):
            row = {"ranker": ranker, "data": data}
            for click in pd.unique(part.click):
                cell = part[(part.ranker == ranker) & (part.click == click)]
                by = {d: cell[cell.data == d].set_index("seed").cumulative_online for d in ("IID", "non-IID")}
                mark = " ▲" if data == "IID" and _significantly_above(by["IID"], by["non-IID"]) else ""
                row[click] = f"{by[data].mean():.2f}{mark}" if len(by[data]) else ""
            rows.append(row)
    return pd.DataFrame(rows)


def table3_layout(online: pd.DataFrame, B: int = 5) -> pd.DataFrame:
    """Type 2 #R = 1's cumulative online NDCG in the paper's Table 3 layout: rows data and
    click model, columns ranker and B (the B of the ``type2_R1`` setting, and of each
    ``type2_R1_B<b>`` of the sweep), means over seeds to two decimals."""
    settings = {B: "type2_R1"} | {int(s[len("type2_R1_B"):]): s for s in pd.unique(online.setting)
                                  if str(s).startswith("type2_R1_B")}
    part = online[online.setting.isin(settings.values()) & (online.remedy == "none")]
    rows = []
    for data in ("IID", "non-IID"):
        for click in pd.unique(part.click):
            row = {"data": data, "click": click}
            for ranker in pd.unique(part.ranker):
                for b in sorted(settings):
                    cell = part[(part.setting == settings[b]) & (part.data == data) & (part.click == click)
                                & (part.ranker == ranker)].cumulative_online
                    row[f"{ranker} B = {b}"] = f"{cell.mean():.2f}" if len(cell) else ""
            rows.append(row)
    return pd.DataFrame(rows)
