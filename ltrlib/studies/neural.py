"""The neural competitors across seeds, ``ltrlib study neural``: the Bi-LambdaMART paper's
networks at every seed of a recorded Bi-LambdaMART study, at trial parity with its trees and
paired query by query with them, and the paper's neural claims decided across the seeds
(`ltrlib.fidelity.bilambdamart.neural_across_seeds`). The loop is every study's
(`ltrlib.studies.loop.run_study`).
"""

from __future__ import annotations

import math
import os
import shutil
from pathlib import Path
from typing import Sequence

import pandas as pd

from ltrlib import config, sessions
from ltrlib.atomic import atomic_write_text
from ltrlib.bilambdamart import preregistration
from ltrlib.records import read_table
from ltrlib.report import table_to_markdown, validate_name
from ltrlib.studies import cluster
from ltrlib.studies.bilambdamart import NOTEBOOK
from ltrlib.studies.checkpoints import NEURAL_JOURNAL
from ltrlib.studies.cluster import THREADS_PER_SEED
from ltrlib.studies.figures import FIGURES_DIR, figure_lines, save_figure
from ltrlib.studies.loop import Study, _seed_code, _seed_minutes, reports_folder, run_study
from ltrlib.studies.records import _recorded, _seed_dir
from ltrlib.study_record import SeedRecord, StudyDesign

__all__ = ["NEURAL_KEPT", "NEURAL_NOTEBOOK", "NEURAL_PROFILES", "NEURAL_SHARED", "networks_across_seeds",
           "neural_design", "run_neural_study", "write_neural_summary"]

NEURAL_NOTEBOOK = "06_neural_competitors"
assert NEURAL_JOURNAL == f"{NEURAL_NOTEBOOK}.journal"  # what a checkpoint keeps of a seed in progress
#: What a neural seed keeps, by notebook, in a run's layout (``tables/<notebook>/<file>``), so
#: the record reads as a run (`ltrlib.fidelity.bilambdamart.neural_across_seeds`): the
#: networks' tables, and the trees' per-query results and tuning summary it was paired with.
NEURAL_KEPT = {NEURAL_NOTEBOOK: ("per_query_neural.parquet", "neural_tuning_summary.csv", "neural_tuning_trials.csv",
                                 "table3_neural_lambdarank.csv", "table4_gsf.csv", "table5_neural_softmax.csv",
                                 "table3_neural_lambdarank_numbers.csv", "table4_gsf_numbers.csv",
                                 "table5_neural_softmax_numbers.csv", "table6_neural_hyperparameters.csv",
                                 "table7_attention.csv", "ranker_means.csv"),
               NOTEBOOK: ("per_query_test.parquet", "tuning_summary.csv", "table2_lambdarank.csv", "table5_softmax.csv",
                          "table2_lambdarank_numbers.csv", "table5_softmax_numbers.csv")}
#: Notebook 06's parameters the neural notebook declares too ("notebook 06's"): taken from the
#: source study's design, so the networks re-rank the very lists its trees did.
NEURAL_SHARED = ("folds", "stage1_max_trees", "stage1_trials", "stage2_features", "train_queries", "max_trees",
                 "early_stopping", "fold_streams")
#: The networks' training budget per profile. Trials are the source study's ``n_trials``
#: (parity with its trees); the first is the paper's Tables 6-7 point. ``gpu``: the issue's
#: convergence budget (patience 2,000 steps, 64 epochs of 1,000 queries; at most 20,000),
#: widths as tuned. ``cpu``: sized for about an hour a seed on 2 cores by a pilot on a seed
#: outside the study (`bench/bench_neural_seed.py`: 5,000 steps at width 128 projected 2.9 h
#: a seed, and the λRank networks' best steps sat at that cap all the same, so the extra
#: steps bought no convergence); a seed then measured 1.7 h quiet, the pilot's three trials a
#: network not predicting sixteen. What it leaves out is stated in docs/bilambdamart.md, "The
#: neural competitors across seeds". ``cpu-v2``: registered after issue 61's pilot of the
#: chunked loop (seed 198, 3 trials a network: 9 of 11 kept fits stopped by patience at the
#: steps ``cpu``'s hour now buys, 3,000 x 1.30; the issue's rule asked for 80 %), before any
#: of its study's seeds ran (docs/bilambdamart.md, "A pilot of the chunked loop").
#: ``tiny``: the tests'.
NEURAL_PROFILES: dict[str, dict] = {
    "gpu": {"max_steps": 20_000, "patience": 2_000, "eval_every": 250, "max_width": 0},
    "cpu": {"max_steps": 3_000, "patience": 1_000, "eval_every": 100, "max_width": 64},
    "cpu-v2": {"max_steps": 3_900, "patience": 1_000, "eval_every": 100, "max_width": 64},
    "tiny": {"max_steps": 40, "patience": 20, "eval_every": 10, "max_width": 16},
}


def neural_design(profile: str, source: str, study: str, seeds: Sequence[int] | None = None,
                  reports_dir: str | os.PathLike | None = None) -> dict:
    """The neural study's design: the source Bi-LambdaMART study's data, scale, stage-2
    parameters and seeds (those given must be among its design's), its ``n_trials`` for
    every network, the profile's training budget, and the rule: a registered study's own
    version of it (`NEURAL_SEEDS_RULES`), so a study keeps the rule it was fixed with, and
    `NEURAL_SEEDS_RULE` for a new one."""
    from ltrlib.fidelity.bilambdamart import NEURAL_SEEDS_RULE, NEURAL_SEEDS_RULES

    if profile not in NEURAL_PROFILES:
        raise ValueError(f"unknown neural profile {profile!r}; choose from {', '.join(NEURAL_PROFILES)}")
    reports = Path(reports_dir) if reports_dir is not None else Path(config.REPORTS_DIR)
    if not StudyDesign.exists(reports / source):
        raise ValueError(f"--from {source!r}: {StudyDesign.path(reports / source)} does not exist (run or fetch that "
                         "study first)")
    src = StudyDesign.read(reports / source, keys=("parameters",))
    chosen = [int(s) for s in (src["seeds"] if seeds is None else seeds)]
    foreign = [s for s in chosen if s not in src["seeds"]]
    if foreign:
        raise ValueError(f"--seeds {foreign}: not seeds of {source!r} (its seeds: {src['seeds']})")
    source_parameters = {**preregistration.REGISTERED_PARAMETERS, **src["parameters"]}
    parameters = {k: v for k, v in source_parameters.items() if k in NEURAL_SHARED}
    parameters.update(NEURAL_PROFILES[profile], neural_trials=int(src["parameters"]["n_trials"]))
    rule = NEURAL_SEEDS_RULE
    if StudyDesign.exists(reports / study):
        registered = StudyDesign.read(reports / study).get("rule")
        rule = registered if registered in NEURAL_SEEDS_RULES.values() else rule
    return {"study": validate_name(study, "study id"), "profile": f"neural-{profile}", "source": source,
            "dataset": src["dataset"], "scale": src["scale"], "seeds": chosen, "parameters": parameters,
            "rule": rule}


def _trees_of(source_dir: Path, seed: int, run_dir: Path) -> None:
    """Put the source study's recorded trees of ``seed`` where the neural notebook reads
    notebook 06's results (its per-query results for the tables, its tuning summary for the
    budget gate). ValueError when the source has not recorded the seed."""
    record = _seed_dir(source_dir, seed)
    if not SeedRecord.exists(record):
        raise ValueError(f"{source_dir.name} has not recorded seed {seed}: its trees are not there to pair with")
    target = run_dir / "tables" / NOTEBOOK
    target.mkdir(parents=True, exist_ok=True)
    for name in NEURAL_KEPT[NOTEBOOK]:
        if (record / name).exists():
            shutil.copy2(record / name, target / name)


def _trial_minutes(seed_dir: Path) -> dict[str, float]:
    """``trial_minutes``: the networks' Optuna trials' own times summed, in minutes, from a
    recorded neural seed's ``neural_tuning_trials.csv``. It counts every session the seed
    ran in, where ``wall_minutes`` counts only the last one when the notebook itself was
    resumed mid-way (its trials read back from the journal), as a neural seed of one to two
    hours often is, and ``notebook_minutes`` the earlier ones as far as its run.json recorded
    them (a floor; none before run.json schema 5). It is the seed's training time, slowed by
    whatever else shared the machine; where networks train side by side (notebook 06n's
    ``n_jobs``, two from the v2 study on), it is that many times the training's wall time."""
    trials = seed_dir / "tables" / NEURAL_NOTEBOOK / "neural_tuning_trials.csv"
    seconds = read_table(trials, usecols=["seconds"]).seconds.sum() if trials.exists() else math.nan
    return {"trial_minutes": round(float(seconds) / 60, 1)}


def _kept_fits(budget: pd.DataFrame) -> pd.DataFrame:
    """Per network, over the recorded seeds, how its kept fit (its best trial on validation)
    stopped: by patience (converged), at the step cap, or diverged; and the steps at which
    the kept fits peaked."""
    reasons = pd.crosstab(budget.model, budget.stop_reason).reindex(columns=["patience", "step cap", "diverged"],
                                                                     fill_value=0)
    peaks = budget.groupby("model").best_step.agg(["min", "max"])
    table = reasons.assign(seeds=reasons.sum(axis=1), best_steps=peaks["min"].astype(str) + "-" + peaks["max"].astype(str))
    return (table.reindex(budget.model.drop_duplicates()).reset_index()
            [["model", "seeds", "patience", "step cap", "diverged", "best_steps"]])


#: The chance that every planned seed passes a claim's budget gate, which `_gate_odds` sizes
#: a per-fit convergence rate for: ours, the power convention's 80 %.
GATE_ODDS = 0.8


def _gate_odds(budget: pd.DataFrame, planned: int) -> pd.DataFrame:
    """Per neural claim, how often its budget gate's convergence part let a seed decide it
    (every network it compares stopped by patience there; ``passed`` of ``seeds``), and what
    that implies for a design of ``planned`` seeds whose rule asks every seed to decide:
    ``a_seed``, the product of the compared networks' observed convergence rates (as if
    networks converged independently, an assumption the observed ``passed`` checks), its
    ``planned``-th power ``every_seed``, and ``rate_needed``, the per-fit rate, the same for
    every compared network, at which all planned seeds pass with probability `GATE_ODDS`.
    ``budget``: the recorded seeds' ``neural_tuning_summary.csv`` rows (``seed, model,
    converged``), whose ``converged`` is the very field the gate reads
    (`ltrlib.fidelity.bilambdamart.spent_budgets`)."""
    from ltrlib.fidelity.bilambdamart import COMPARED, NEURAL_CLAIMS

    # A network a seed's summary does not name counts as unconverged there: nothing shows it converged.
    converged = budget.assign(ok=budget.converged.astype(bool)).pivot_table(
        index="seed", columns="model", values="ok", aggfunc="first").fillna(False).astype(bool)
    rows = []
    for claim in (c.name for c in NEURAL_CLAIMS):
        nets = [m for m in COMPARED.get(claim, ()) if m in converged.columns]
        if not nets:
            continue
        a_seed = float(converged[nets].mean().prod())
        rows.append({"claim": claim, "networks": len(nets), "seeds": len(converged),
                     "passed": int(converged[nets].all(axis=1).sum()), "a_seed": round(a_seed, 3),
                     "every_seed": round(a_seed ** planned, 4),
                     "rate_needed": round(GATE_ODDS ** (1 / (len(nets) * planned)), 4)})
    return pd.DataFrame(rows, columns=["claim", "networks", "seeds", "passed", "a_seed", "every_seed", "rate_needed"])


NETWORKS_FIGURE = "networks"
NETWORKS_CAPTION = ("Each dot is a seed: a model's mean test NDCG@5 over the seed's test queries minus the best "
                    "network's of the same loss at that seed (`ranker_means.csv`). Networks are filled where the "
                    "seed's kept fit stopped by patience and hollow where it ran to the step cap or diverged: a "
                    "claim comparing a hollow network is not decided at that seed (the budget gate). A tree right "
                    "of 0 beat every network of its loss at that seed.")


def _tuning_summaries(recorded: dict[int, Path]) -> dict[int, pd.DataFrame]:
    """Each recorded seed's ``neural_tuning_summary.csv`` (``{seed: its rows}``), read once
    for every table and figure of a summary; seeds without one are left out."""
    found = {seed: d / "tables" / NEURAL_NOTEBOOK / "neural_tuning_summary.csv" for seed, d in recorded.items()}
    return {seed: read_table(f) for seed, f in sorted(found.items()) if f.exists()}


def networks_across_seeds(recorded: dict[int, Path],
                          summaries: dict[int, pd.DataFrame] | None = None) -> pd.DataFrame:
    """Per recorded seed (``{seed: record folder}``) and model, its test NDCG@5 minus the
    seed's best network of the same loss (``gap``, from the seed's ``ranker_means.csv``), and
    for a network whether its kept fit converged (``converged``, the field of its
    ``neural_tuning_summary.csv`` that the budget gate reads; False where that does not name
    it, since nothing shows it converged; empty for a tree): ``seed, model, loss, kind, gap,
    converged``, what `ltrlib.plots.networks_across_seeds` draws. ``summaries``: those
    tables as `_tuning_summaries` reads them, when the caller has them already. Seeds
    without ``ranker_means.csv`` are left out."""
    summaries = _tuning_summaries(recorded) if summaries is None else summaries
    frames = []
    for seed, d in sorted(recorded.items()):
        tables = d / "tables" / NEURAL_NOTEBOOK
        if not (tables / "ranker_means.csv").exists():
            continue
        means = read_table(tables / "ranker_means.csv", usecols=["model", "loss", "kind", "gap"])
        kept = summaries.get(seed)
        fits = (kept.set_index("model").converged.astype(bool) if kept is not None
                else pd.Series(dtype=bool))
        converged = means.model.map(fits).fillna(False).astype(object).where(means.kind == "network")
        frames.append(means.assign(seed=seed, converged=converged))
    columns = ["seed", "model", "loss", "kind", "gap", "converged"]
    return pd.concat(frames, ignore_index=True)[columns] if frames else pd.DataFrame(columns=columns)


def write_neural_summary(study_dir: Path, command: str) -> pd.DataFrame:
    """``study.md`` and ``study.csv`` of a neural study from its recorded seeds: the claims'
    verdicts at each seed and across seeds (`neural_across_seeds`), the networks' budget
    and convergence, each seed's wall time and device. Returns the across-seed table."""
    from ltrlib.fidelity.bilambdamart import neural_across_seeds

    design = StudyDesign.read(study_dir)
    recorded = {s: d for s, d in _recorded(study_dir).items() if s in design["seeds"]}
    per_seed, across = neural_across_seeds(recorded, planned=len(design["seeds"]), rule=design["rule"])
    summaries = _tuning_summaries(recorded)
    walls = []
    for seed, d in recorded.items():
        meta = SeedRecord.read(d)
        walls.append({"seed": seed, **_seed_minutes(meta), **_trial_minutes(d),
                      "device": meta["metrics"].get("device", ""), "code": _seed_code(d)})
    params = ", ".join(f"{k} = {v}" for k, v in design["parameters"].items())
    grid = (per_seed.pivot_table(index="claim", columns="seed", values="ours", aggfunc="first")
            .reindex(across.claim) if not per_seed.empty else pd.DataFrame())
    lines = [f"# Study {design['study']}: the Bi-LambdaMART paper's neural claims across seeds", "",
             f"- Trees: `{design['source']}`'s recorded seeds {design['seeds']} (scale `{design['scale']}`), "
             "paired query by query with the networks trained here on the same lists.",
             f"- Networks: notebook 06_neural_competitors with {params} (profile `{design['profile']}`).",
             f"- Rule: {design['rule']}", "",
             f"Regenerate: `{command}` (finished seeds are read back, not rerun).", "",
             "## Across seeds", "", table_to_markdown(across.drop(columns="statement")), "",
             "## Per seed", "", table_to_markdown(grid, index=True) if not grid.empty else "(no seed yet)", ""]
    models = networks_across_seeds(recorded, summaries)
    if not models.empty:
        from ltrlib import plots

        figure = save_figure(plots.networks_across_seeds(models), study_dir / FIGURES_DIR, NETWORKS_FIGURE)
        lines += figure_lines(figure, "Each model's test NDCG@5 minus the best network's, a dot a seed",
                              NETWORKS_CAPTION)
    if summaries:
        spent = pd.concat([rows.assign(seed=seed) for seed, rows in summaries.items()])
        budget = spent[["seed", "model", "usable", "stop_reason", "best_step", "steps", "trials_converged"]]
        lines += ["## Kept fits across seeds", "", table_to_markdown(_kept_fits(budget)), "",
                  "A claim is decided at a seed only where every network it compares stopped by patience there "
                  "(the budget gate).", "",
                  "## The budget gate, claim by claim", "",
                  table_to_markdown(_gate_odds(spent, len(design["seeds"]))), "",
                  f"`passed`: the recorded seeds at which every network the claim compares converged. `a_seed`: "
                  "the chance of that at a seed, the product of those networks' convergence rates over the "
                  "recorded seeds (as if they converged independently, our assumption; `passed` is what "
                  f"happened). `every_seed`: the chance that all {len(design['seeds'])} planned seeds pass, which "
                  "a verdict needs under a rule that asks every seed to decide. `rate_needed`: the convergence "
                  f"rate a kept fit of each compared network would need for all planned seeds to pass with "
                  f"probability {GATE_ODDS:.0%} (ours, the power convention). The gate's other part, equal usable "
                  "trials, is not counted here.", "",
                  "## The networks' budget and convergence", "", table_to_markdown(budget), ""]
    if walls:
        lines += ["## Time per seed", "", table_to_markdown(pd.DataFrame(walls)), "",
                  "`wall_minutes` counts a resumed seed's last session only, and `notebook_minutes` "
                  "its notebook's earlier attempts as far as its run.json recorded them (its last "
                  "session only before run.json schema 5); `trial_minutes` sums its trials over every "
                  "session, and over the networks that trained side by side.", ""]
    atomic_write_text(study_dir / "study.md", "\n".join(lines))
    table = pd.concat([across.assign(table="across_seeds"), per_seed.assign(table="per_seed")], ignore_index=True)
    atomic_write_text(study_dir / "study.csv", table.to_csv(index=False))
    return across


def _neural_seed(design: dict, seed: int, reports: Path, progress: bool = False, stop=None):
    """The networks at ``seed``, paired with the source study's trees of that seed
    (`_trees_of`), into ``<study>-seed<N>``; what `NEURAL_KEPT` keeps, in a run's layout.
    ``stop``: as `_batch`'s."""
    run_dir = reports / f"{design['study']}-seed{seed}"
    _trees_of(reports / design["source"], seed, run_dir)
    cluster._batch(stop, dataset=design["dataset"], scale=design["scale"], seed=seed, run_id=run_dir.name,
            only=NEURAL_NOTEBOOK, parameters=design["parameters"], reports_dir=reports, progress=progress)
    files = {run_dir / "tables" / nb / name: f"tables/{nb}/{name}" for nb, names in NEURAL_KEPT.items()
             for name in names}
    return run_dir, (NEURAL_NOTEBOOK,), files


def run_neural_study(profile: str, *, source: str, study: str | None = None, seeds: Sequence[int] | None = None,
                     reports_dir: str | os.PathLike | None = None, summarise_only: bool = False,
                     save_progress: bool = False, progress: bool = True, scheduler: str = "",
                     threads: int = THREADS_PER_SEED, workers: int = 0, log=print) -> pd.DataFrame:
    """Train the paper's networks at every seed of a recorded Bi-LambdaMART study, at trial
    parity with its trees, and decide the neural claims across seeds; returns the
    across-seed table.

    Each seed not yet recorded is a task of `dispatch` (`_neural_seed`, with the design's
    parameters, `neural_design`); the summary is rewritten after every seed
    (`write_neural_summary`, `ltrlib.studies.loop.run_study`). JAX trains on a GPU when the
    installed JAX has one, with no change here; each seed's record says which device.
    ``save_progress``: run nothing, `checkpoint` the seeds in progress (their networks'
    finished trials).
    """
    study = study or f"{source}-neural"
    reports = reports_folder(reports_dir)
    design = neural_design(profile, source, study, seeds, reports)
    seeds_arg = ",".join(str(s) for s in design["seeds"])
    command = (f"{sessions.cli_command()} study neural --from {source} --profile {profile} --study {study} "
               f"--seeds {seeds_arg}")
    run_study(NEURAL, design, reports / study, reports, command, summarise_only=summarise_only,
              save_progress=save_progress, progress=progress, scheduler=scheduler, threads=threads,
              workers=workers, log=log)
    across = write_neural_summary(reports / study, command)
    log(table_to_markdown(across[["claim", "seeds", "verdict"]]))
    return across


def _summarised(study_dir: Path, command: str) -> str:
    """`write_neural_summary`, with no words for a recorded seed's log line."""
    write_neural_summary(study_dir, command)
    return ""


NEURAL = Study(run_seed=_neural_seed, summarise=_summarised, doing="to train the networks", kept="journals")
