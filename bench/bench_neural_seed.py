"""What one seed of `ltrlib study neural` costs on this machine, measured on a pilot seed.

A neural seed trains each of the eleven networks for ``n_trials`` Optuna trials (the source
study's, 16), each until its patience fires or it reaches the step cap. How long a trial
runs depends on where its validation curve peaks, which random data cannot tell: so this
runs a few trials of every network on the very lists notebook 06_neural_competitors builds
(the source study's stage-2 parameters, read from its ``design.json``), for a seed that is
*not* one of the study's (its results are not looked at, only its steps and seconds), and
projects a whole seed from them:

    projected seed = sum over networks of n_trials x (mean seconds of a pilot trial)

The first trial is the paper's Tables 6-7 point, the rest Optuna's random start-up points,
as in the study. Its studies go to ``--journal`` (a rerun resumes them). Run it with nothing
else on the machine (JAX uses every core):

    .venv/bin/python bench/bench_neural_seed.py --source bilambdamart-followup --profile cpu --seed 199
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import pandas as pd


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source", default="bilambdamart-followup", help="Bi-LambdaMART study whose design to use")
    parser.add_argument("--profile", default="cpu", help="a key of ltrlib.studies.NEURAL_PROFILES")
    parser.add_argument("--seed", type=int, default=199, help="pilot seed: not one of the study's seeds")
    parser.add_argument("--n-jobs", type=int, default=2,
                        help="networks side by side in the projection, as notebook 06n's n_jobs (default 2)")
    parser.add_argument("--trials", type=int, default=3, help="pilot trials per network")
    parser.add_argument("--models", default="all", help="comma-separated networks, or all")
    parser.add_argument("--journal", default="data/cache/bench_neural_seed.journal")
    parser.add_argument("--max-steps", type=int, help="override the profile's step cap")
    parser.add_argument("--patience", type=int, help="override the profile's patience")
    parser.add_argument("--max-width", type=int, help="override the profile's width cap")
    args = parser.parse_args()

    from ltrlib import neural
    from ltrlib.bilambdamart import STAGE1_SETTINGS, Stage2Experiment, build_two_stage, stage1_tuning, tune_stage1
    from ltrlib.data import load_dataset
    from ltrlib.neural import NeuralBudget
    from ltrlib.neural.ranker import CONVERGED
    from ltrlib.studies import NEURAL_PROFILES, neural_design
    from ltrlib.train import TrainSettings, TuningSettings

    design = neural_design(args.profile, source=args.source, study="pilot")
    if args.seed in design["seeds"]:
        raise SystemExit(f"--seed {args.seed} is one of {args.source}'s seeds: pick a pilot seed outside {design['seeds']}")
    p = dict(design["parameters"])
    for key in ("max_steps", "patience", "max_width"):
        if getattr(args, key) is not None:
            p[key] = getattr(args, key)
    print(f"profile {args.profile} ({NEURAL_PROFILES[args.profile]}), used: max_steps {p['max_steps']}, "
          f"patience {p['patience']}, eval_every {p['eval_every']}, max_width {p['max_width']}; "
          f"{design['parameters']['neural_trials']} trials a network in the study, {args.trials} here")

    start = time.perf_counter()
    splits = load_dataset(design["dataset"], "", design["scale"], args.seed)
    settings = TrainSettings.for_scale(design["scale"], "bilambdamart", max_trees=p["max_trees"],
                                       early_stopping=p["early_stopping"], eval_at=5, seed=args.seed, num_threads=1)
    stage1_settings = settings.replace(max_trees=p["stage1_max_trees"], eval_at=STAGE1_SETTINGS.eval_at)
    journal = Path(args.journal)
    journal.parent.mkdir(parents=True, exist_ok=True)
    stage1 = tune_stage1(splits, tuning=stage1_tuning(p["stage1_trials"], TuningSettings(storage=journal, progress=False)),
                         settings=stage1_settings.replace(num_threads=2))
    two = build_two_stage(splits, folds=p["folds"], top_k=20, n_features=p["stage2_features"], params=stage1.params,
                          settings=stage1_settings, n_jobs=2, fold_streams=p["fold_streams"])
    exp = Stage2Experiment(two, settings=settings, train_queries=p["train_queries"])
    print(f"stage 1 and stage-2 data: {time.perf_counter() - start:.0f} s "
          f"({exp.parts['train'].n_queries} training, {exp.parts['vali'].n_queries} validation lists)")

    steps = NeuralBudget(max_steps=p["max_steps"], patience=p["patience"], eval_every=p["eval_every"],
                         cutoff=5, seed=args.seed)
    rows = []
    for name in neural.neural_model_list(args.models):
        fitted = neural.fit_neural_models(exp, [name], budget=steps,
                                          tuning=TuningSettings(n_trials=args.trials, prune=False, storage=journal,
                                                                progress=False),
                                          study_prefix=f"pilot{args.seed}.{args.profile}", max_width=p["max_width"])
        trials = fitted[name].tuning
        row = {"model": name, "trials": len(trials), "mean_steps": trials["trees"].mean(),
               "at_cap": int((trials["stop_reason"] == "step cap").sum()),
               "mean_seconds": trials["seconds"].mean(),
               # The kept fit (the best trial on validation) and why it stopped: what the
               # budget gate reads (issue 61's pilot: how many kept fits stop by patience).
               "kept_stop": fitted[name].model.stop_reason, "kept_best_step": fitted[name].model.best_step}
        row["projected_seconds"] = design["parameters"]["neural_trials"] * row["mean_seconds"]
        rows.append(row)
        print(json.dumps(row), flush=True)
    table = pd.DataFrame(rows)
    print(table.round(1).to_string(index=False))
    total = table["projected_seconds"].sum()
    print(f"projected seed ({design['parameters']['neural_trials']} trials a network), one network at a time: "
          f"{total / 3600:.2f} h")
    # The notebook trains n_jobs networks side by side, one core each, slowest first
    # (`fit_neural_models`): the seed takes the busiest worker's time. Each network here ran
    # alone on the machine; two at once each run a little slower (bench/bench_neural.py's
    # side-by-side column), which this leaves out.
    workers = [0.0] * args.n_jobs
    for seconds in sorted(table["projected_seconds"], reverse=True):
        workers[workers.index(min(workers))] += seconds
    print(f"projected seed, {args.n_jobs} networks side by side: {max(workers) / 3600:.2f} h "
          "(each network's time alone; pairs run somewhat slower)")
    converged = int((table["kept_stop"] == CONVERGED).sum())
    print(f"kept fits stopped by patience: {converged} of {len(table)}")


if __name__ == "__main__":
    main()
