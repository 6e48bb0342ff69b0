"""What the IR-ecosystem outputs cost a finished batch run: time and disk.

Goal (issue 42): the TREC run files and the fusion baselines add at most 60 s to
`make reproduce` (the `small` batch), and the run files do not double the run folder.

Reads a finished run folder, nothing is rerun: per notebook, the wall time of the cells
that write run files or compute the fusion baselines (papermill's per-cell ``duration`` in
the executed notebooks, `MARKERS` in the cell's source), beside the notebook's whole wall
time (``run.json``); then the size of ``runs/`` per notebook beside the rest of the folder.
The cells' times are those of the run: measure on a run made when nothing else ran (on two
cores a parallel job inflates them severalfold).

Notebooks 07 and 08 write their run files behind an hour of training each; ``--standalone``
times the same work alone at `small`, seed 0: Table 2's four final FOLTR rankers (trained
for two rounds: the writing does not depend on the weights) written with the four intents'
qrels, and seven runs of the test set as 08 writes them from held scores.

Run: .venv/bin/python bench/bench_ecosystem.py RUN [RUN ...]   (run ids under reports/, or folders)
     .venv/bin/python bench/bench_ecosystem.py --standalone
"""

import argparse
import json
import sys
import time
from pathlib import Path

import pandas as pd

from ltrlib import config

#: What a cell added for the ecosystem calls: a run file written, or the fusion baselines.
MARKERS = ("run_file(", "run_files(", "fusion_experiment(")
#: The issue's limit on what those cells add to the batch, in seconds.
GOAL_SECONDS = 60


def cell_seconds(notebook: Path) -> tuple[float, list[str]]:
    """Seconds of ``notebook``'s cells whose source calls one of `MARKERS`, and those cells'
    first lines."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    seconds, first_lines = 0.0, []
    for cell in cells:
        source = "".join(cell.get("source", ""))
        if cell["cell_type"] == "code" and any(m in source for m in MARKERS):
            seconds += float(cell.get("metadata", {}).get("papermill", {}).get("duration") or 0.0)
            first_lines.append(source.strip().splitlines()[0][:60])
    return seconds, first_lines


def du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def report(run_dir: Path) -> pd.DataFrame:
    meta = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    rows = []
    for name, entry in meta.get("notebooks", {}).items():
        executed = run_dir / "notebooks" / f"{name}.ipynb"
        if not executed.exists():
            continue
        seconds, cells = cell_seconds(executed)
        runs = run_dir / "runs" / name
        rows.append({"notebook": name, "notebook_s": round(float(entry.get("seconds") or 0.0), 1),
                     "ecosystem_s": round(seconds, 1), "runs_MB": round(du(runs) / 2**20, 1) if runs.exists() else 0.0,
                     "cells": " | ".join(cells)})
    return pd.DataFrame(rows)


def standalone(scale: str = "small", seed: int = 0) -> None:
    """07's and 08's run-file cells' work, timed alone (module docstring)."""
    import tempfile

    import numpy as np

    from ltrlib import foltr
    from ltrlib.data import load_dataset
    from ltrlib.report import Reporter

    splits = load_dataset("synthetic", "", scale, seed)
    data = foltr.prepare_data(foltr.online_training_queries(splits), splits.test)
    jobs = foltr.grid(["type1"], [seed], rankers=("linear", "neural"), clicks=("perfect",), n_rounds=2, eval_every=2)
    _, _, rankers = foltr.run_jobs(data, jobs, n_jobs=1, progress=False, keep_rankers=foltr.table2_jobs(jobs, seed))
    with tempfile.TemporaryDirectory() as root:
        report = Reporter("bench-07", "07_foltr_noniid", root=root)
        start = time.perf_counter()
        for run in foltr.final_run_files(data, rankers):
            report.run_file(run.name, run.data, run.scores, qrels=run.qrels, other_labels=run.other_labels)
        print(f"07: {len(rankers)} Type 1 runs with every intent's qrels in {time.perf_counter() - start:.1f} s")
        report = Reporter("bench-08", "08_xgboost_backends", root=root)
        rng = np.random.default_rng(seed)
        start = time.perf_counter()
        for i in range(7):
            report.run_file(f"model{i}", splits.test, rng.normal(size=splits.test.n_docs))
        print(f"08: 7 runs of {splits.test.n_docs} test documents in {time.perf_counter() - start:.1f} s")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="*", metavar="RUN")
    parser.add_argument("--standalone", action="store_true", help="time 07's and 08's run-file work alone")
    args = parser.parse_args(argv)
    if args.standalone:
        standalone()
    if not args.runs and not args.standalone:
        parser.error("give a RUN, or --standalone")
    for run in args.runs:
        run_dir = Path(run) if Path(run).is_dir() else config.REPORTS_DIR / run
        if not (run_dir / "run.json").exists():
            print(f"{run_dir}: no run.json (not a finished batch run)", file=sys.stderr)
            return 2
        table = report(run_dir)
        with pd.option_context("display.width", 200, "display.max_colwidth", 90):
            print(f"{run_dir}\n{table.to_string(index=False)}")
        runs_mb = du(run_dir / "runs") / 2**20 if (run_dir / "runs").exists() else 0.0
        rest_mb = du(run_dir) / 2**20 - runs_mb
        total = table.ecosystem_s.sum()
        print(f"ecosystem cells: {total:.0f} s of {table.notebook_s.sum():.0f} s "
              f"(goal: at most {GOAL_SECONDS} s: {'met' if total <= GOAL_SECONDS else 'NOT met'}); "
              f"runs/ {runs_mb:.1f} MB beside {rest_mb:.1f} MB for the rest of the folder\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
