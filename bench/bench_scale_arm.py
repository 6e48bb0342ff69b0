"""What notebook 03 (and notebooks 00-05) would cost at a scale, from one measured tuning trial.

Issue 62, item 3, first step: "Measure one tuning trial of notebook 03 at `paper` scale
first. If the notebooks' projected cost exceeds 8 hours on 2 cores, run the arm at the
largest scale that fits, and say so."

For each scale, in a process of its own (so peak RSS and CPU time are that scale's):

1. the data and the splits, through notebook 03's own call (`ltrlib.noniid.load_paper_splits`,
   which generates the twin through `ltrlib.data.load_dataset`, as notebook 00 does; the
   generation is timed on its own by wrapping that call). The synthetic twin is never cached
   on disk: `load_dataset` regenerates it on every call (`data/cache/` holds LETOR parses only);
2. notebook 03's other splits (`initial_splits`, `alternative_splits`) and its fit plan
   (`ltrlib.clients.models._fit_plan`): the models the notebook trains, and their sizes;
3. exactly ONE tuning trial of ONE model (default M_full, the biggest, which the notebook
   starts first) as the notebook's tuner runs it: `ltrlib.train.tune` with ``n_trials=1``,
   the notebook's settings (`TrainSettings.for_scale(scale, "client_models", ...)`: at most
   3000 trees, early stopping after 100, NDCG@10), trial 0 = the paper's Table 6 median
   (`paper_start`, never pruned), on ``num_threads // n_jobs`` = 1 thread as each of the
   notebook's two side-by-side workers does, the binned data built inside the trial as in a
   study's first trial. The study lives in memory (the notebook's journal write per 10 trees
   is left out). Wall and process CPU time; trees grown; the seconds before the first tree
   (binning).

Then the projections (assumptions printed with them):

* notebook 03 = trial cost x trials per model (the notebook's ``n_trials`` after the scale's
  caps, `budget_for_scale`) x models (the fit plan's distinct models), (a) with every model
  costing the measured one's trial, (b) with each model's trial cost in proportion to its
  training documents. CPU seconds; wall on 2 quiet cores = CPU / 2 (two 1-thread workers).
  Every trial is taken to cost what trial 0 costs (pruned trials cost less, trials with a
  small learning rate more).
* with the small scale measured in the same run, a calibrated projection: the shipped seconds
  of notebook 03 at small (`ltrlib.timing.NOTEBOOK_SECONDS`, a quiet 2-core VM) over the
  small projection (b), times the scale's projection (b).
* (c), pruning-aware, with ``--records`` (tuning_trials.csv of recorded small runs of notebook
  03): M_full's trial 0 x the record's tree-documents over its M_full trial 0's (most trials
  after trial 0 are pruned at 50 trees; this carries that pattern to the scale). Where the
  measured trial was stopped (``--trial-cap-cpu-s``) its cost is extrapolated from its
  per-tree CPU at the small trial's tree count, and again at max_trees.
* notebooks 00-05 = notebook 03's projection x (sum of 00-05's shipped small seconds / 03's):
  assumes every notebook grows with the scale as 03 does.

Measured 2026-11-29 (2 shared cores, load 4-9; small ran to its end, paper's trial stopped at
240 s CPU): small's M_full trial 0 576 s CPU, 973 trees, 0.56 s CPU a tree; paper's data
37 s CPU to generate, 10.5 GiB with notebook 03's splits, 12.3 GiB peak in the trial; 60 s
CPU binning, 3.1 s CPU a tree (5.6x small's for 6.4x the documents). Contention inflates CPU
time too: the recorded ledger run of the same trial (seed 0) took 388 s on its worker.

Run (nice it; the numbers are CPU time beside wall time, and the load average is printed):
    nice -n 10 .venv/bin/python bench/bench_scale_arm.py --scales small,paper --trial-cap-cpu-s 240 \
        --records reports/ledger-small/seeds/seed0/tables/03_client_models/tuning_trials.csv
    .venv/bin/python bench/bench_scale_arm.py --from-json a.json,b.json --records ...  # report saved runs
    nice -n 10 .venv/bin/python bench/bench_scale_arm.py --scales small --train-queries 8000
``--train-queries N`` adds a custom scale of N training queries, with paper's proportions of
validation and test queries and its 106 documents per query (`make_synthetic` takes any
`ltrlib.config.Scale`); such a scale takes small's training budgets, as the notebooks give
any non-preset data.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

NOTEBOOKS_00_05 = ("00", "01", "02", "03", "04", "05")
EIGHT_HOURS = 8 * 3600


def _cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def _peak_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2  # KiB on Linux


def _rss_gib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024**2
    return float("nan")


class Phase:
    """Wall, process CPU, RSS after, peak RSS and the 1-minute load at the end of a phase."""

    def __init__(self, name: str, record: dict):
        self.name, self.record = name, record

    def __enter__(self):
        self.wall0, self.cpu0 = time.perf_counter(), _cpu()
        return self

    def __exit__(self, *exc):
        self.record[self.name] = {"wall_s": time.perf_counter() - self.wall0, "cpu_s": _cpu() - self.cpu0,
                                  "rss_gib": _rss_gib(), "peak_rss_gib": _peak_gib(),
                                  "load1": os.getloadavg()[0]}
        return False


def _scale(name: str, train_queries: int):
    from ltrlib.config import SCALES, Scale

    if name != "custom":
        return SCALES[name]
    paper = SCALES["paper"]
    n = int(train_queries)
    return Scale(f"custom{n}", n, round(n * paper.n_vali / paper.n_train),
                 round(n * paper.n_test / paper.n_train), paper.docs_per_query)


class TrialCapped(Exception):
    """The measured trial passed ``--trial-cap-cpu-s``: stopped, and extrapolated from its trees."""


def measure(scale_name: str, seed: int, model: str, train_queries: int, n_jobs: int, num_threads: int,
            cap_cpu_s: float = 0.0) -> dict:
    """One scale's measurement, in this process."""
    from ltrlib import clients, train
    from ltrlib.clients.models import _client, _fit_plan
    from ltrlib.noniid import alternative_splits, initial_splits, load_paper_splits
    import ltrlib.noniid.splits as splits_module
    import ltrlib.train.tuning.rankers as rankers_module

    sc = _scale(scale_name, train_queries)
    scale_arg = sc.name if scale_name != "custom" else sc
    out: dict = {"scale": sc.name, "queries": [sc.n_train, sc.n_vali, sc.n_test], "seed": seed,
                 "load_start": os.getloadavg(), "phases": {}}
    phases = out["phases"]

    # Generation timed on its own, inside notebook 03's call: wrap the name it calls.
    real_load = splits_module.load_dataset

    def timed_load(*args, **kwargs):
        with Phase("generate (load_dataset)", phases):
            data = real_load(*args, **kwargs)
        return data

    splits_module.load_dataset = timed_load
    with Phase("data + paper splits (load_paper_splits)", phases):
        setup = load_paper_splits("synthetic", "", scale_arg, seed)
    splits_module.load_dataset = real_load
    data = setup.data
    out["documents"] = int(sum(p.n_docs for _, p in data.items()))
    out["train_documents"] = int(data.train.n_docs)
    split2, split3 = setup.categories[1], setup.categories[2]

    with Phase("initial + alternative splits", phases):
        initial = initial_splits(data, split2, seed=seed)
        alternatives = alternative_splits(data, setup.splits, categories=(split2, split3), seed=seed)
    every = {**setup.splits, **alternatives, **initial}
    names = clients.training_order(setup.names, alternatives, initial)
    plan = _fit_plan(every, names)
    full = every[names[0]].full
    own = {("full", "M_full"): full}
    own.update({key: _client(every, key) for key, trained_as in plan.items() if trained_as == key})
    out["models"] = {f"{s}.{m}": {"train_docs": int(p.train.n_docs), "train_queries": int(p.train.n_queries)}
                     for (s, m), p in own.items()}
    out["reused"] = {f"{k[0]}.{k[1]}": f"{v[0]}.{v[1]}" for k, v in plan.items() if v != k}

    # Notebook 03's parameters cell and the cell after it, at this scale.
    settings = train.TrainSettings.for_scale(scale_arg, "client_models", max_trees=3000, early_stopping=100,
                                             seed=seed, num_threads=num_threads, backend="lightgbm")
    trials = train.budget_for_scale(scale_arg, "client_models", n_trials=6)["n_trials"]
    worker = settings.replace(num_threads=max(1, settings.threads // n_jobs))  # fit_side_by_side's
    out["n_trials"], out["n_models"] = int(trials), len(own)
    out["settings"] = {"max_trees": worker.max_trees, "early_stopping": worker.early_stopping,
                       "eval_at": worker.eval_at, "num_threads": worker.threads, "n_jobs": n_jobs}

    key = ("full", "M_full") if model == "M_full" else tuple(model.split("."))
    if key not in own:
        raise SystemExit(f"--model {model!r}: not a model notebook 03 trains here; choose from "
                         f"{sorted(out['models'])}")
    part = own[key]
    out["measured_model"] = f"{key[0]}.{key[1]}"

    # Record when each tree ends (wall, CPU) beside the tuner's own monitor.
    ticks: list[tuple[int, float, float]] = []
    real_train = rankers_module.train_ranker

    def recording_train(*args, monitor=None, **kwargs):
        def record(trees, value):
            ticks.append((trees, time.perf_counter(), _cpu()))
            if cap_cpu_s and ticks[-1][2] - cpu0 > cap_cpu_s:
                raise TrialCapped(f"{trees} trees after {ticks[-1][2] - cpu0:.0f} s CPU")
            if monitor is not None:
                monitor(trees, value)

        return real_train(*args, monitor=record, **kwargs)

    rankers_module.train_ranker = recording_train
    wall0, cpu0 = time.perf_counter(), _cpu()
    capped = None
    with Phase("one tuning trial", phases):
        try:
            tuning = train.TuningSettings(n_trials=1, first_params=train.paper_start("lightgbm"), progress=False)
            result = train.tune(part.train, part.vali, tuning=tuning, study_name=out["measured_model"],
                                settings=worker)
        except TrialCapped as stop:
            capped = str(stop)
    rankers_module.train_ranker = real_train
    if capped is None:
        row = result.trials.iloc[0]
        state, trees, best_it, value = row["state"], int(row["trees"]), int(row["best_iteration"]), float(row["value"])
    else:
        state, trees, best_it, value = f"capped ({capped})", ticks[-1][0], -1, float("nan")
    out["trial"] = {"state": state, "trees": trees, "best_iteration": best_it, "value": value,
                    "capped": capped is not None,
                    "first_tree_wall_s": ticks[0][1] - wall0 if ticks else None,
                    "first_tree_cpu_s": ticks[0][2] - cpu0 if ticks else None}
    if len(ticks) > 1:
        out["trial"]["per_tree_wall_s"] = (ticks[-1][1] - ticks[0][1]) / (ticks[-1][0] - ticks[0][0])
        out["trial"]["per_tree_cpu_s"] = (ticks[-1][2] - ticks[0][2]) / (ticks[-1][0] - ticks[0][0])
    out["load_end"] = os.getloadavg()
    out["peak_rss_gib"] = _peak_gib()
    return out


def project(m: dict, small: dict | None) -> dict:
    from ltrlib.timing import NOTEBOOK_SECONDS

    trial = dict(m["phases"]["one tuning trial"])
    t = m["trial"]
    if t.get("capped"):
        # Stopped early: binning + per-tree CPU x the trees a completed trial 0 would grow,
        # taken as the small scale's (more data usually needs more trees: a low estimate).
        trees = small["trial"]["trees"] if small is not None else m["settings"]["max_trees"]
        trial["cpu_s"] = t["first_tree_cpu_s"] + t["per_tree_cpu_s"] * trees
    measured_docs = m["models"][m["measured_model"]]["train_docs"]
    docs_share = sum(v["train_docs"] for v in m["models"].values()) / measured_docs
    p = {"trial_cpu": trial["cpu_s"], "cpu_a": trial["cpu_s"] * m["n_trials"] * m["n_models"],
         "cpu_b": trial["cpu_s"] * m["n_trials"] * docs_share, "docs_share": docs_share}
    # Two one-thread workers on two cores: wall = CPU / 2 on a quiet machine; the data and
    # splits are made once, in the kernel (one core).
    once = m["phases"]["data + paper splits (load_paper_splits)"]["cpu_s"] + \
        m["phases"]["initial + alternative splits"]["cpu_s"]
    p["once"] = once
    p["wall_a"] = p["cpu_a"] / 2 + once
    p["wall_b"] = p["cpu_b"] / 2 + once
    shipped = NOTEBOOK_SECONDS["small"]
    p["nb_ratio"] = sum(shipped[n] for n in NOTEBOOKS_00_05) / shipped["03"]
    if small is not None:
        ps = project(small, None)
        p["calibration"] = shipped["03"] / ps["wall_b"]
        p["wall_cal"] = p["wall_b"] * p["calibration"]
    for k in ("wall_a", "wall_b", "wall_cal"):
        if k in p:
            p[k.replace("wall", "all")] = p[k] * p["nb_ratio"]
    return p


def record_ratios(paths: list[str], small: dict) -> list[float]:
    """Per recorded small run of notebook 03 (its ``tuning_trials.csv``): the notebook's
    tree-documents (sum over its trials of trees grown x the model's training documents)
    over those of M_full's trial 0. The table holds the run splits' models only (Split1-3
    and M_full), not Table 1's and 3's extra ones; those are counted in proportion to their
    training documents."""
    import pandas as pd

    docs = {k: v["train_docs"] for k, v in small["models"].items()}
    out = []
    for path in paths:
        t = pd.read_csv(path)
        t["key"] = t["split"].where(t["model"] != "M_full", "full") + "." + t["model"]
        t = t[t["key"].isin(docs)].drop_duplicates(["key", "trial"])
        t["td"] = t["trees"] * t["key"].map(docs)
        first = t[(t["key"] == "full.M_full") & (t["trial"] == 0)]["td"].iloc[0]
        in_table = sum(docs[k] for k in t["key"].unique())
        out.append(float(t["td"].sum() / first * sum(docs.values()) / in_table))
    return out


def _h(s: float) -> str:
    return f"{s / 3600:.2f} h" if s >= 3600 else f"{s:.0f} s"


def report(results: list[dict], records: list[str] = ()) -> None:
    small = next((r for r in results if r["scale"] == "small"), None)
    print()
    print("## Measurements (seed 0; CPU = this process's user+system time, LightGBM threads included)")
    for r in results:
        print(f"\n### {r['scale']}: queries train/vali/test {r['queries']}, {r['documents']:,} documents "
              f"({r['train_documents']:,} training); load avg at start {r['load_start'][0]:.2f}, "
              f"at end {r['load_end'][0]:.2f}")
        print("| phase | wall s | CPU s | RSS after GiB | peak RSS GiB | load1 at end |")
        print("|---|---:|---:|---:|---:|---:|")
        for name, ph in r["phases"].items():
            print(f"| {name} | {ph['wall_s']:.1f} | {ph['cpu_s']:.1f} | {ph['rss_gib']:.2f} | "
                  f"{ph['peak_rss_gib']:.2f} | {ph['load1']:.2f} |")
        t = r["trial"]
        print(f"\ntrial: model {r['measured_model']} ({r['models'][r['measured_model']]['train_docs']:,} training "
              f"documents), {t['state']}, {t['trees']} trees (best {t['best_iteration']}), vali NDCG@10 "
              f"{t['value']:.4f}; before the first tree {t['first_tree_wall_s']:.1f} s wall / "
              f"{t['first_tree_cpu_s']:.1f} s CPU (binning); per tree {t.get('per_tree_wall_s', float('nan')):.3f} s "
              f"wall / {t.get('per_tree_cpu_s', float('nan')):.3f} s CPU; settings {r['settings']}")
        if t.get("capped"):
            print(f"trial STOPPED by --trial-cap-cpu-s ({t['state']}); its projected cost = binning CPU + per-tree "
                  f"CPU x {small['trial']['trees'] if small else r['settings']['max_trees']} trees "
                  f"({'the small scale trial' + chr(39) + 's trees' if small else 'max_trees'}); "
                  f"up to max_trees {r['settings']['max_trees']}: "
                  f"{_h(t['first_tree_cpu_s'] + t['per_tree_cpu_s'] * r['settings']['max_trees'])} CPU per trial")
        print(f"notebook 03 at this scale: {r['n_trials']} trials per model x {r['n_models']} models: "
              + ", ".join(f"{k} {v['train_docs']:,}" for k, v in r["models"].items())
              + (f"; reused (no training): {r['reused']}" if r["reused"] else ""))
    if small is not None:
        for r in results:
            if r is small:
                continue
            print(f"\nratio {r['scale']}/small{' (trial capped: CPU, wall and trees are partial)' if r['trial'].get('capped') else ''}: trial CPU "
                  f"{r['phases']['one tuning trial']['cpu_s'] / small['phases']['one tuning trial']['cpu_s']:.2f}x, "
                  f"trial wall {r['phases']['one tuning trial']['wall_s'] / small['phases']['one tuning trial']['wall_s']:.2f}x, "
                  f"trees {r['trial']['trees'] / small['trial']['trees']:.2f}x, training documents "
                  f"{r['train_documents'] / small['train_documents']:.2f}x, per-tree CPU "
                  f"{r['trial'].get('per_tree_cpu_s', 0) / small['trial'].get('per_tree_cpu_s', 1):.2f}x")
    print("\n## Projections (2 quiet cores, the notebook's n_jobs = 2 one-thread workers: wall = CPU / 2 + data)")
    print("| scale | 03 CPU (a) | 03 wall (a) | 03 CPU (b) | 03 wall (b) | 03 wall calibrated | 00-05 wall (a) "
          "| 00-05 wall (b) | 00-05 calibrated | fits 8 h? |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in results:
        p = project(r, small if r is not small else None)
        if r is small:
            p["calibration"] = None
        best = p.get("all_cal", p["all_b"])
        print(f"| {r['scale']} | {_h(p['cpu_a'])} | {_h(p['wall_a'])} | {_h(p['cpu_b'])} | {_h(p['wall_b'])} | "
              f"{_h(p['wall_cal']) if 'wall_cal' in p else '-'} | {_h(p['all_a'])} | {_h(p['all_b'])} | "
              f"{_h(p['all_cal']) if 'all_cal' in p else '-'} | {'yes' if best <= EIGHT_HOURS else 'no'} |")
        r["projection"] = p
    if records and small is not None:
        ratios = sorted(record_ratios(list(records), small))
        print(f"\n## Pruning-aware projection (c) from {len(ratios)} recorded small runs of notebook 03")
        print("notebook 03's tree-documents / M_full trial 0's, per record: " + ", ".join(f"{x:.2f}" for x in ratios))
        print("| scale | M_full trial 0 CPU | 03 wall (c) min / median / max | 00-05 wall (c) min / median / max "
              "| fits 8 h (median)? |")
        print("|---|---:|---:|---:|---|")
        rows = [(r["scale"], r["projection"]["trial_cpu"], r["projection"]) for r in results]
        # A stopped trial's tree count is unknown: also at its ceiling, max_trees.
        rows += [(f"{r['scale']} (trial 0 at {r['settings']['max_trees']} trees)",
                  r["trial"]["first_tree_cpu_s"] + r["trial"]["per_tree_cpu_s"] * r["settings"]["max_trees"],
                  r["projection"]) for r in results if r["trial"].get("capped")]
        for name, t0, p in rows:
            walls = [t0 * x / 2 + p["once"] for x in (ratios[0], ratios[len(ratios) // 2], ratios[-1])]
            print(f"| {name} | {_h(t0)} | " + " / ".join(_h(w) for w in walls) + " | "
                  + " / ".join(_h(w * p["nb_ratio"]) for w in walls)
                  + f" | {'yes' if walls[1] * p['nb_ratio'] <= EIGHT_HOURS else 'no'} |")
        print("(c): M_full trial 0's CPU x the record's ratio (the recorded trials' pruning and tree counts, in "
              "tree-documents, carried to this scale), / 2 cores, + the data; a tree's cost taken as in proportion "
              "to its documents.")
    print("\nAssumptions: (a) every model's trial costs the measured model's; (b) a model's trial cost is in "
          "proportion to its training documents (same tree count); every trial costs what trial 0 (the paper's "
          "Table 6 median) costs; 'calibrated' multiplies (b) by NOTEBOOK_SECONDS['small']['03'] / small's "
          "projection (b) (pruning, evaluation, the rest of the notebook, as measured at small); 00-05 = 03 x "
          f"{project(results[0], None)['nb_ratio']:.3f} (sum of 00-05's shipped small seconds / 03's), i.e. every "
          "notebook grows with the scale as 03 does.")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scales", default="paper", help="comma-separated: tiny, small, paper, custom")
    ap.add_argument("--train-queries", type=int, default=0, help="training queries of the 'custom' scale")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--model", default="M_full", help="the model whose trial is measured: M_full or <split>.<M1|M2>")
    ap.add_argument("--n-jobs", type=int, default=2, help="notebook 03's n_jobs (threads per worker: num_threads // n_jobs)")
    ap.add_argument("--num-threads", type=int, default=2, help="notebook 03's num_threads")
    ap.add_argument("--json", default="", help="write the measurements here (one scale: this process's)")
    ap.add_argument("--trial-cap-cpu-s", type=float, default=0.0,
                    help="stop the measured trial after this much process CPU time and extrapolate its cost "
                         "from its per-tree CPU x the small scale's trees (0: run it to its end)")
    ap.add_argument("--from-json", default="", help="comma-separated measurement files to report together")
    ap.add_argument("--records", default="",
                    help="comma-separated tuning_trials.csv of recorded small runs of notebook 03 (e.g. "
                         "reports/<run>/tables/03_client_models/tuning_trials.csv): adds projection (c)")
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    scales = [s.strip() for s in args.scales.split(",") if s.strip()]
    if "custom" in scales and args.train_queries < 1:
        ap.error("the custom scale needs --train-queries N")

    if args.one:
        m = measure(scales[0], args.seed, args.model, args.train_queries, args.n_jobs, args.num_threads,
                    args.trial_cap_cpu_s)
        Path(args.json).write_text(json.dumps(m, default=float))
        return 0
    if args.from_json:
        results = [json.loads(Path(f).read_text()) for f in args.from_json.split(",") if f.strip()]
        results.sort(key=lambda r: r["scale"] != "small")
        report(results, [f for f in args.records.split(",") if f.strip()])
        return 0

    results = []
    for s in scales:
        # Each scale in its own process: peak RSS and CPU time are that scale's alone.
        out = Path(args.json or "/tmp") / f"bench_scale_arm.{s}.{os.getpid()}.json" if not args.json \
            else Path(f"{args.json}.{s}.json")
        cmd = [sys.executable, __file__, "--one", "--scales", s, "--seed", str(args.seed), "--model", args.model,
               "--train-queries", str(args.train_queries), "--n-jobs", str(args.n_jobs),
               "--num-threads", str(args.num_threads), "--trial-cap-cpu-s", str(args.trial_cap_cpu_s),
               "--json", str(out)]
        print(f"measuring {s} ... (load {os.getloadavg()[0]:.2f})", flush=True)
        wall0 = time.perf_counter()
        rc = subprocess.run(cmd).returncode
        child = resource.getrusage(resource.RUSAGE_CHILDREN)
        print(f"  {s}: rc {rc}, {time.perf_counter() - wall0:.0f} s wall; children's CPU so far "
              f"{child.ru_utime + child.ru_stime:.0f} s, children's peak RSS {child.ru_maxrss / 1024**2:.2f} GiB",
              flush=True)
        if rc != 0:
            print(f"  {s} failed (rc {rc}); its measurement is left out")
            continue
        results.append(json.loads(out.read_text()))
    if results:
        # small first: the calibration of the other scales uses it.
        results.sort(key=lambda r: r["scale"] != "small")
        report(results, [f for f in args.records.split(",") if f.strip()])
        if args.json:
            Path(f"{args.json}.all.json").write_text(json.dumps(results, default=float, indent=1))
    return 0 if len(results) == len(scales) else 1


if __name__ == "__main__":
    sys.exit(main())
