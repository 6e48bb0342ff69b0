"""Speed of the FPDGD simulator (``ltrlib.foltr``) on one core, against an earlier version of
the code in the same run.

Run: ``.venv/bin/python bench/bench_foltr.py [--baseline REF] [--rounds 2000] [--small-rounds 200]``

Each version runs in a process of its own (one numba, BLAS and OpenMP thread; JIT warmed up
before anything is timed): this checkout, and ``--baseline`` (a git ref; default
``7d3748a``, the code before the compiled rounds of issue 60), extracted with ``git archive``
into a temporary folder. ``--baseline ''`` times this checkout alone. Printed, per version
and as the ratio baseline / this checkout:

1. Interactions per second on LightGBM's example ranking data (300 features, ~15 documents
   per query; ``../shared/data/lightgbm-rank``): 5 IID clients, B = 5, SDBN perfect and
   informational clicks, linear and neural rankers, offline evaluation only at the start and
   the end, so the figure is the per-interaction work plus the per-round FedAvg.
2. Microseconds per interaction of one run of each of notebook 07's settings (non-IID
   data, perfect clicks where the setting has a choice) on the ``small`` synthetic twin
   (~104 documents a query, 220 features), T = ``--small-rounds``, evaluated every T/10
   rounds as the notebook does, timed as ``runs_online.csv``'s ``seconds`` (the whole
   ``run_job``, partition included).
3. With ``--paper``: one paper-length linear run (T = 10,000, 5 IID clients, B = 5, evaluated
   every 100 rounds) on the ``small`` twin, this checkout only.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ONE_THREAD = {v: "1" for v in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
SETTINGS = ("iid", "type1", "type2_R1", "type2_R2", "type3_sdbn", "type3_pbm", "type4")


def measure(rounds: int, neural_rounds: int, small_rounds: int) -> dict:
    """The figures of items 1 and 2, run by whichever ``ltrlib`` this process imports."""
    from ltrlib.data import load_dataset
    from ltrlib.foltr import partition as P
    from ltrlib.foltr.federated import run_federated
    from ltrlib.foltr.simulate import Job, run_job

    out = {"rate": {}, "us_per_interaction": {}}
    s = load_dataset("lightgbm-rank", "", "small", 0)
    data = P.prepare_data(s.train, s.test)
    for ranker, n in (("linear", rounds), ("neural", neural_rounds)):
        for click in ("perfect", "informational"):
            fed = P.iid(data, 5, 5, click)
            run_federated(fed, ranker, 5, seed=0, eval_every=5)  # JIT warm-up
            t0 = time.perf_counter()
            res = run_federated(fed, ranker, n, seed=1, eval_every=n)
            out["rate"][f"{ranker} {click}"] = res.interactions / (time.perf_counter() - t0)
    s = load_dataset("synthetic", "", "small", 0)
    data = P.prepare_data(P.online_training_queries(s), s.test)
    for ranker in ("linear", "neural"):
        for setting in SETTINGS:
            run_job(data, Job(setting, True, ranker, n_rounds=2, eval_every=1))  # JIT warm-up
            _, row, _ = run_job(data, Job(setting, True, ranker, n_rounds=small_rounds,
                                          eval_every=max(1, small_rounds // 10)))
            out["us_per_interaction"][f"{ranker} {setting}"] = row["seconds"] / row["interactions"] * 1e6
    return out


def run_version(src: Path, args) -> dict:
    """``measure`` in a fresh process importing ``ltrlib`` from ``src``."""
    env = dict(os.environ, **ONE_THREAD, PYTHONPATH=str(src))
    cmd = [sys.executable, str(Path(__file__).resolve()), "--measure", str(args.rounds), str(args.neural_rounds),
           str(args.small_rounds)]
    done = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"bench_foltr: the version at {src} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def extract(ref: str, into: Path) -> Path:
    """``ltrlib`` at git ``ref``, extracted under ``into``."""
    archive = into / "ltrlib.tar"
    with open(archive, "wb") as f:
        subprocess.run(["git", "archive", "--format=tar", ref, "ltrlib"], cwd=ROOT, stdout=f, check=True)
    with tarfile.open(archive) as t:
        t.extractall(into, filter="data")
    return into


def paper_run() -> None:
    from ltrlib.data import load_dataset
    from ltrlib.foltr import partition as P
    from ltrlib.foltr.federated import run_federated

    s = load_dataset("synthetic", "", "small", 0)
    data = P.prepare_data(s.train, s.test)
    fed = P.iid(data, 5, 5, "perfect")
    run_federated(fed, "linear", 2, seed=0, eval_every=1)  # JIT warm-up
    t0 = time.perf_counter()
    res = run_federated(fed, "linear", 10_000, seed=0, eval_every=100)
    dt = time.perf_counter() - t0
    print(f"paper-length run (small twin, T = 10,000, 5 IID clients, B = 5, linear, {len(res.offline)} offline "
          f"evaluations): {dt:.1f} s for {res.interactions:,} interactions ({dt / res.interactions * 1e6:.1f} us each); "
          f"offline NDCG@10 {res.offline.value.iloc[0]:.3f} -> {res.offline.value.iloc[-1]:.3f}")


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] == "--measure":
        print(json.dumps(measure(*map(int, sys.argv[2:]))))
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--baseline", default="7d3748a", help="git ref of the code to compare with ('' for none)")
    ap.add_argument("--rounds", type=int, default=2000, help="rounds of the linear throughput runs")
    ap.add_argument("--neural-rounds", type=int, default=500, help="rounds of the neural throughput runs")
    ap.add_argument("--small-rounds", type=int, default=200, help="T of the runs on the small twin")
    ap.add_argument("--paper", action="store_true", help="also time a paper-length linear run")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        base = run_version(extract(args.baseline, Path(tmp)), args) if args.baseline else None
        head = run_version(ROOT, args)
    print(f"one core; baseline {args.baseline or '(none)'} against this checkout")
    print("1. interactions/s on lightgbm-rank (5 IID clients, B = 5)")
    for key, rate in head["rate"].items():
        was = f"{base['rate'][key]:10,.0f}/s -> " if base else ""
        ratio = f"  ({rate / base['rate'][key]:.1f}x)" if base else ""
        print(f"  {key:22s} {was}{rate:10,.0f}/s{ratio}")
    print(f"2. us per interaction, one run a setting on the small twin (T = {args.small_rounds}, non-IID)")
    for key, us in head["us_per_interaction"].items():
        was = f"{base['us_per_interaction'][key]:8.1f} -> " if base else ""
        ratio = f"  ({base['us_per_interaction'][key] / us:.1f}x)" if base else ""
        print(f"  {key:22s} {was}{us:8.1f}{ratio}")
    if args.paper:
        paper_run()


if __name__ == "__main__":
    main()
