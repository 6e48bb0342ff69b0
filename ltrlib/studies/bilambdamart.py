"""The pre-registered Bi-LambdaMART study, ``ltrlib study bilambdamart``: notebook 06 at every
seed of a profile's design (`ltrlib.bilambdamart.preregistration.PROFILES`), each into its own
run ``reports/<study>-seed<N>/``, then ``reports/<study>/study.md``, ``study.csv`` and
``verdict.json`` (`ltrlib.bilambdamart.preregistration`: the statistics and the verdict). The
loop is every study's (`ltrlib.studies.loop.run_study`).
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Sequence

import pandas as pd

from ltrlib import sessions
from ltrlib.atomic import atomic_write_text
from ltrlib.bilambdamart import preregistration
from ltrlib.records import read_table
from ltrlib.report import table_to_markdown, validate_name
from ltrlib.studies import cluster
from ltrlib.studies.cluster import THREADS_PER_SEED
from ltrlib.studies.loop import Study, _seed_code, _seed_minutes, reports_folder, run_study
from ltrlib.studies.records import _record, _recorded
from ltrlib.study_record import SeedRecord, StudyDesign

__all__ = ["KEPT_TABLES", "NOTEBOOK", "record_seed", "run_bilambdamart_study", "study_design", "summary_markdown",
           "write_summary"]

NOTEBOOK = "06_bilambdamart"
#: Files of a finished run kept for the study (under ``tables/06_bilambdamart/``).
KEPT_TABLES = ("per_query_test.parquet", "pairwise_uptake.csv", "tuning_summary.csv", "tuning_trials.csv",
               "settings_screen.csv", "table8_hyperparameters.csv", "table2_lambdarank.csv", "table5_softmax.csv",
               "control_table2.csv", "table2_lambdarank_numbers.csv", "table5_softmax_numbers.csv",
               "control_table2_numbers.csv")


def study_design(profile: str, study: str, seeds: Sequence[int] | None = None,
                 dataset: str = "synthetic") -> dict:
    """The design a study runs: its profile's scale and notebook parameters, its seeds
    (the profile's unless given) and the decision rule, JSON-able."""
    if profile not in preregistration.PROFILES:
        raise ValueError(f"unknown profile {profile!r}; choose from {', '.join(preregistration.PROFILES)}")
    p = preregistration.PROFILES[profile]
    design = {"study": validate_name(study, "study id"), "profile": profile, "dataset": dataset,
              "scale": p["scale"], "seeds": [int(s) for s in (p["seeds"] if seeds is None else seeds)],
              "parameters": dict(p["parameters"]), "endpoint": preregistration.ENDPOINT,
              "rule": preregistration.DECISION_RULE}
    if "changes" in p:  # a later study says what it changes and how its seeds were counted
        design["changes"] = p["changes"]
        design["sizing"] = preregistration.followup_sizing()[1]
    return design


def record_seed(run_dir: Path, study_dir: Path, seed: int, wall_seconds: float, worker: str = "") -> Path:
    """Copy what the study keeps of a finished run (`KEPT_TABLES`, its run.json and
    notebook 06's metrics) into the study, atomically: a temporary folder renamed into
    place. ValueError when the run has not completed notebook 06."""
    tables = run_dir / "tables" / NOTEBOOK
    return _record(run_dir, study_dir, seed, wall_seconds, (NOTEBOOK,),
                   {tables / name: name for name in KEPT_TABLES}, worker)


def write_summary(study_dir: Path, command: str) -> preregistration.Summary:
    """``study.md`` and ``study.csv`` (the across-seed table, then the per-seed gains)
    from the recorded seeds."""
    design = StudyDesign.read(study_dir)
    per_seed, walls, spent, trials = {}, {}, [], {}
    for seed, d in _recorded(study_dir).items():
        if seed not in design["seeds"]:
            continue
        uptake = d / "pairwise_uptake.csv"
        per_seed[seed] = (pd.read_parquet(d / "per_query_test.parquet"),
                          read_table(uptake) if uptake.exists() else None)
        walls[seed] = {**_seed_minutes(SeedRecord.read(d)), "code": _seed_code(d)}
        if (d / "tuning_summary.csv").exists():
            spent.append(read_table(d / "tuning_summary.csv").assign(seed=seed))
        if (d / "tuning_trials.csv").exists():
            trials[seed] = read_table(d / "tuning_trials.csv")
    summary = preregistration.summarise(per_seed, planned=len(design["seeds"]), metric=design["endpoint"])
    # Only a study that replaces trials (the follow-up's design states its changes) can keep one
    # past the budget; the first study ran exactly its trials.
    sensitivity = (preregistration.replacement_sensitivity(trials, summary.gains, design["parameters"]["n_trials"])
                   if "changes" in design and not summary.gains.empty else None)
    text = summary_markdown(summary, design=design, command=command, walls=walls, sensitivity=sensitivity)
    if spent:
        spent = pd.concat(spent)
        # The first study's seeds counted trials that peaked at tree 1 (kept as
        # `stopped_at_tree_1`); since the search's document units degenerate trials are replaced.
        counts = [c for c in ("trials", "completed", "pruned", "usable", "replaced", "replaced_degenerate",
                              "replaced_lightgbm", "replaced_above_kept", "stopped_at_tree_1", "failed_replaced") if c in spent]
        trials = spent.groupby("model", sort=False)[counts].sum()
        text += "\n## Tuning spent, summed over seeds\n\n" + table_to_markdown(trials, index=True) + "\n"
    atomic_write_text(study_dir / "study.md", text)
    done = sum(seed in design["seeds"] for seed in per_seed)
    atomic_write_text(study_dir / preregistration.VERDICT_FILE, json.dumps(
        {"verdict": summary.verdict, "words": summary.words, "seeds_done": done, "planned": len(design["seeds"])},
        indent=1, ensure_ascii=False) + "\n")
    table = pd.concat([summary.seeds.assign(table="across_seeds"), summary.pooled.assign(table="pooled"),
                       summary.gains.assign(table="per_seed")], ignore_index=True)
    atomic_write_text(study_dir / "study.csv", table.to_csv(index=False))
    return summary


def _bilambdamart_seed(design: dict, seed: int, reports: Path, progress: bool = False, stop=None):
    """Notebook 06 at ``seed`` into ``<study>-seed<N>`` with the design's parameters
    (`ltrlib.runner.run_all` resumes an interrupted run); what `record_seed` keeps.
    ``stop``: as `_batch`'s."""
    run_dir = cluster._batch(stop, dataset=design["dataset"], scale=design["scale"], seed=seed,
                      run_id=f"{design['study']}-seed{seed}", only=NOTEBOOK,
                      parameters={**preregistration.REGISTERED_PARAMETERS, **design["parameters"]},
                      reports_dir=reports, progress=progress)
    tables = run_dir / "tables" / NOTEBOOK
    return run_dir, (NOTEBOOK,), {tables / name: name for name in KEPT_TABLES}


def run_bilambdamart_study(profile: str, *, study: str | None = None, seeds: Sequence[int] | None = None,
                           reports_dir: str | os.PathLike | None = None, summarise_only: bool = False,
                           save_progress: bool = False, progress: bool = True, scheduler: str = "",
                           threads: int = THREADS_PER_SEED, workers: int = 0, log=print) -> preregistration.Summary:
    """Run (or resume) the study and write its summary; returns it.

    Each seed not yet recorded runs notebook 06 (`_bilambdamart_seed`) as a task of
    `dispatch`, is recorded, and the summary is rewritten after every seed, so an
    interruption leaves a summary of the seeds done (`ltrlib.studies.loop.run_study`).
    ``summarise_only``: run nothing, rewrite the summary from the recorded seeds.
    ``save_progress``: run nothing, `checkpoint` the seeds in progress.
    """
    study = study or f"bilambdamart-{profile}"
    design = study_design(profile, study, seeds)
    reports = reports_folder(reports_dir)
    seeds_arg = ",".join(str(s) for s in design["seeds"])
    command = f"{sessions.cli_command()} study bilambdamart --profile {profile} --study {study} --seeds {seeds_arg}"
    run_study(BILAMBDAMART, design, reports / study, reports, command, summarise_only=summarise_only,
              save_progress=save_progress, progress=progress, scheduler=scheduler, threads=threads,
              workers=workers, log=log)
    summary = write_summary(reports / study, command)
    log(summary.words)
    return summary


def summary_markdown(summary: preregistration.Summary, *, design: dict, command: str,
                     walls: dict[int, dict[str, float | str]],
                     sensitivity: preregistration.ReplacementSensitivity | None = None) -> str:
    """``study.md``: the design, the verdict in words (and beside it, given, the replacement
    ``sensitivity``, labelled as after the fact), the across-seed and pooled tables and the
    per-seed gains with each seed's time (`_seed_minutes`) and code (`_seed_code`)."""
    params = ", ".join(f"{k} = {v}" for k, v in design["parameters"].items())
    gains = summary.gains.copy()
    if not gains.empty:
        for column in ("wall_minutes", "notebook_minutes", "code"):
            gains[column] = gains.seed.map(lambda s: walls.get(int(s), {}).get(column, math.nan))
    lines = [
        f"# Study {design['study']}: is Bi-λMART better than λMART*? ({design['profile']} profile)", "",
        f"**Verdict ({summary.verdict}).** {summary.words}", "",
        *([f"**Replacement sensitivity.** {sensitivity.words}", ""] if sensitivity is not None else []),
        "## Design (fixed before the confirmatory run)", "",
        f"- Data: the synthetic twin at scale `{design['scale']}`; seeds {list(design['seeds'])} "
        "(each seed draws new data, folds, query sample and Optuna sampler).",
        f"- Notebook 06 parameters: {params}.",
        f"- Endpoint: test {preregistration.ENDPOINT} (full-list IDCG), gain of each model over its baseline.",
        f"- Rule: {preregistration.DECISION_RULE}",
        *([f"- Changes from the first study: {design['changes']}", f"- Seeds: {design['sizing']}"]
          if "changes" in design else []), "",
        f"Regenerate: `{command}` (finished seeds are read back, not rerun).", "",
        "## Across seeds", "",
        table_to_markdown(summary.seeds.round(4)), "",
        "## Pooled over queries, stratified by seed", "",
        table_to_markdown(summary.pooled.round(5)) if not summary.pooled.empty else "(no seed yet)", "",
        "## Per seed", "",
        table_to_markdown(gains.round(4)) if not gains.empty else "(no seed yet)", "",
    ]
    return "\n".join(lines)



def _summary_words(study_dir: Path, command: str) -> str:
    """`write_summary`, its verdict's words ending a recorded seed's log line."""
    return write_summary(study_dir, command).words


BILAMBDAMART = Study(run_seed=_bilambdamart_seed, summarise=_summary_words, doing="to run notebook 06",
                     kept="journals")
