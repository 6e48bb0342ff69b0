"""Speed of the FPDGD simulator (``ltrlib.foltr``) on one core, against an earlier version of
the code in the same run.

Run: ``.venv/bin/python bench/bench_foltr.py [--baseline REF] [--rounds 2000] [--small-rounds 200]``
or ``.venv/bin/python bench/bench_foltr.py --floor [RUN]``

Each version runs in a process of its own (one numba, BLAS and OpenMP thread; JIT warmed up
before anything is timed): this checkout, and ``--baseline`` (a git ref; default
``7d3748a``, the code before the compiled rounds of issue 60), extracted with ``git archive``
into a temporary folder. ``--baseline ''`` times this checkout alone. Printed, per version
and as the ratio baseline / this checkout:

1. Interactions per second on LightGBM's example ranking data (300 features, ~15 documents
   per query; ``../shared/data/lightgbm-rank``): 5 IID clients, B = 5, SDBN perfect and
   informational clicks, linear and neural rankers, offline evaluation only at the start and
   the end, so the figure is the per-interaction work plus the per-round FedAvg.
2. Microseconds per interaction of each of notebook 07's settings (non-IID data, perfect
   clicks where the setting has a choice) on the ``small`` synthetic twin (~104 documents
   a query, 220 features), over ``--small-rounds`` rounds, and what a notebook 07 run pays
   besides its rounds (its partition and 11 offline evaluations; `measure`).
   From them, notebook 07's cost at ``-p profile paper`` is projected for both versions
   (`paper_protocol_seconds`).
   ``--scales small,paper`` runs item 2 and its projection on each twin in turn, in the
   same process, and prints each twin's cost a round and fixed cost as a ratio to the
   first's: what the scale does to notebook 07, measured in one run (the twins' lists are
   of a length, ~104 and ~106 documents, so a round should cost the same; the offline
   evaluations over the training queries grow with them). Give it ``--baseline ''``: the
   older code at ``paper`` adds nothing but time.
3. With ``--paper``: paper-length runs of each ranker (T = 10,000, 5 IID clients, B = 5,
   evaluated every 1,000 rounds) on the ``small`` twin, this checkout only, beside what
   item 2 projects for them (`paper_runs`).
4. With ``--floor RUN`` (default ``reports/foltr-paper-protocol/paper``, a recorded run of
   notebook 07 at ``-p profile paper``), and nothing else: the arithmetic floor of that
   run's neural interactions (`floor`). Their forward passes alone are
   interactions x (a list's documents x features x hidden units) multiply-adds; they are
   timed at one core's float32 peak (a 2048-cube product), at the rate of the list-shaped
   product itself, and, for comparison only, in bfloat16 (JAX, 25 lists a call as a
   batched simulator would make them), a precision below the float32 the issue allows.
   The minutes of 2 cores each rate gives are set against notebook 07's 30-minute goal.
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


def _seconds(fn, repeats: int) -> float:
    """The fastest of ``repeats`` timings of ``fn()``: the machine's noise only adds."""
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def measure(rounds: int, neural_rounds: int, small_rounds: int, scales: tuple[str, ...] = ("small",)) -> dict:
    """The figures of items 1 and 2, run by whichever ``ltrlib`` this process imports.

    Item 2, per setting and ranker, on its federation (built once, and timed: the
    partition): a run of one round (its start, two offline evaluations and the round) and a
    run of ``small_rounds`` rounds evaluated at the start and the end; their difference is
    the cost of the rounds, half the first the cost of an evaluation. Each is the fastest
    of repeated timings. Item 2 runs on each of ``scales``' twins (its figures under
    ``out["scales"][scale]``), one after the other, each twin freed before the next."""
    from ltrlib.data import load_dataset
    from ltrlib.foltr import partition as P
    from ltrlib.foltr.federated import run_federated

    out = {"rate": {}, "scales": {}}
    s = load_dataset("lightgbm-rank", "", "small", 0)
    data = P.prepare_data(s.train, s.test)
    for ranker, n in (("linear", rounds), ("neural", neural_rounds)):
        for click in ("perfect", "informational"):
            fed = P.iid(data, 5, 5, click)
            run_federated(fed, ranker, 5, seed=0, eval_every=5)  # JIT warm-up
            t0 = time.perf_counter()
            res = run_federated(fed, ranker, n, seed=1, eval_every=n)
            out["rate"][f"{ranker} {click}"] = res.interactions / (time.perf_counter() - t0)
    for scale in scales:
        out["scales"][scale] = _measure_settings(scale, small_rounds)
    return out


def _measure_settings(scale: str, T: int) -> dict:
    """Item 2 on the ``scale`` twin (`measure`)."""
    from ltrlib.data import load_dataset
    from ltrlib.foltr import partition as P
    from ltrlib.foltr.federated import run_federated
    from ltrlib.foltr.simulate import Job, build_federation

    out = {"us_per_interaction": {}, "per_round": {}, "fixed": {}}
    s = load_dataset("synthetic", "", scale, 0)
    train = P.online_training_queries(s)
    data = P.prepare_data(train, s.test)
    out["documents"] = int(train.offsets[-1])
    out["queries"] = int(len(train.offsets) - 1)
    del s, train
    for ranker in ("linear", "neural"):
        for setting in SETTINGS:
            job = Job(setting, True, ranker, seed=1)
            partition = _seconds(lambda: build_federation(data, job), 2)
            fed = build_federation(data, job)
            run_federated(fed, ranker, 2, seed=0, eval_every=1)  # JIT warm-up
            one = _seconds(lambda: run_federated(fed, ranker, 1, seed=1, eval_every=1), 3)
            full = _seconds(lambda: run_federated(fed, ranker, T, seed=1, eval_every=T), 2)
            per_round = (full - one) / (T - 1)
            if per_round <= 0:  # the machine's noise outweighed T rounds: no figure, not a wrong one
                sys.exit(f"bench_foltr: {ranker} {setting} at {scale}: {T} rounds took no longer than one "
                         f"({full:.3f} s against {one:.3f} s): the machine is too loaded for so few rounds; "
                         "give --small-rounds more (1000 beside other work)")
            interactions = run_federated(fed, ranker, 1, seed=1, eval_every=1).interactions
            key = f"{ranker} {setting}"
            out["per_round"][key] = per_round
            out["us_per_interaction"][key] = per_round / interactions * 1e6
            # What a notebook 07 run pays besides its rounds: its partition and 11 evaluations.
            out["fixed"][key] = partition + 11 * one / 2
    return out


def paper_protocol_seconds(head: dict) -> tuple[dict[str, float], int]:
    """Projected CPU-seconds of notebook 07 at ``-p profile paper`` on the small twin (its
    default grid, remedies under every click model), and its number of runs: per run, the
    fixed cost of its ranker and setting (item 2) plus T rounds at that setting's measured
    cost a round, scaled by its interactions a round (clients x B) against the measured
    run's. A projection from item 2's runs, not a measurement of the notebook. Returns the
    CPU-seconds per ranker."""
    from ltrlib.foltr.simulate import experiment_grid, remedy_click_models, rounds_and_seeds

    T, n_seeds = rounds_and_seeds("paper", "small")
    clicks = ["perfect", "navigational", "informational"]
    jobs = experiment_grid(SETTINGS[1:] + ("type4_type1", "type4_type2"), list(range(n_seeds)),
                           rankers=["linear", "neural"], clicks=clicks, n_rounds=T, eval_every=T // 10, B=5,
                           label_overlap=False, type2_R1_with_10_clients=True, type2_R1_B_sweep=[2, 10],
                           remedy_settings=["type1", "type2_R1"], remedy_clicks=remedy_click_models("", "paper", clicks),
                           mus=[0.001, 0.01, 0.1, 1, 10], share_fraction=0.1, warmup_interactions=300)
    base_clients = {"type1": 4, "type2_R2": 10, "type3_sdbn": 3}
    total = {"linear": 0.0, "neural": 0.0}
    for job in jobs:
        setting = "type4" if job.setting.startswith("type4") else job.setting
        key = f"{job.ranker} {setting}"
        scale = ((job.n_clients or base_clients.get(job.setting, 5)) * job.B) / (base_clients.get(setting, 5) * 5)
        total[job.ranker] += head["fixed"][key] + T * head["per_round"][key] * scale
    return total, len(jobs)


def floor_rates(lists: int = 25, repeats: int = 5) -> dict:
    """The float32 and bfloat16 multiply-add rates that bound a neural interaction, on the
    one core this process is pinned to (`floor`): G multiply-adds a second."""
    import numpy as np

    from ltrlib.data import load_dataset
    from ltrlib.foltr import partition as P
    from ltrlib.foltr.rankers import RankerSpec

    s = load_dataset("synthetic", "", "small", 0)
    train = P.online_training_queries(s)
    L = float(np.diff(train.offsets).mean())  # queries are drawn uniformly, so the mean list
    F, H = train.X.shape[1], RankerSpec("neural", train.X.shape[1]).hidden
    rng = np.random.default_rng(0)

    def rate(a, b, n_macs):
        return n_macs / _seconds(lambda: a @ b, repeats) / 1e9

    big = rng.random((2048, 2048), dtype=np.float32)
    X = rng.random((round(L), F), dtype=np.float32)
    W = rng.random((F, H), dtype=np.float32)
    out = {"list": [L, F, H], "peak_float32": rate(big, big, 2048.0 ** 3),
           "list_float32": rate(X, W, round(L) * F * H)}
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return out
    product = jax.jit(lambda a, b: jnp.einsum("snf,sfh->snh", a, b, preferred_element_type=jnp.float32))
    for name, dtype in (("batched_float32", jnp.float32), ("batched_bfloat16", jnp.bfloat16)):
        a = jnp.asarray(rng.random((lists, round(L), F)), dtype=dtype)
        b = jnp.asarray(rng.random((lists, F, H)), dtype=dtype)
        product(a, b).block_until_ready()  # compile
        seconds = _seconds(lambda: product(a, b).block_until_ready(), repeats)
        out[name] = lists * round(L) * F * H / seconds / 1e9
    return out


def floor(run: Path) -> None:
    """Item 4: the arithmetic floor of ``run``'s neural interactions, in a process of its
    own pinned to one core (`floor_rates`)."""
    import pandas as pd

    runs = run / "tables" / "07_foltr_noniid" / "runs_online.csv"
    if not runs.is_file():
        sys.exit(f"bench_foltr: {runs} not found; --floor wants a run folder of notebook 07")
    online = pd.read_csv(runs)
    neural = online[online.ranker == "neural"]
    env = dict(os.environ, **ONE_THREAD, XLA_FLAGS="--xla_cpu_multi_thread_eigen=false")
    code = ("import json, os, sys; os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}); "
            f"sys.path.insert(0, {str(Path(__file__).resolve().parent)!r}); import bench_foltr; "
            "print(json.dumps(bench_foltr.floor_rates()))")
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"bench_foltr: the floor's rates failed:\n{done.stderr[-3000:]}")
    rates = json.loads(done.stdout.strip().splitlines()[-1])
    L, F, H = rates.pop("list")
    interactions = int(neural.interactions.sum())
    macs = interactions * L * F * H
    print(f"4. the floor of {run}'s {len(neural)} neural runs: {interactions:,} interactions x "
          f"({L:.1f} documents x {F} features x {H} hidden) = {macs:.2e} multiply-adds of forward passes")
    print(f"   recorded: {neural.seconds.sum() / 3600:.1f} CPU-hours of neural runs "
          f"({neural.seconds.sum() / interactions * 1e6:.0f} us an interaction, as the run's machine gave them)")
    for name, g in rates.items():
        print(f"   {name:17s} {g:6.1f} G multiply-adds/s on one core: the forward passes alone take "
              f"{macs / g / 1e9 / 2 / 60:5.1f} min of 2 cores (the goal: 30 min for the whole notebook)")


def run_version(src: Path, args) -> dict:
    """``measure`` in a fresh process importing ``ltrlib`` from ``src``."""
    env = dict(os.environ, **ONE_THREAD, PYTHONPATH=str(src))
    cmd = [sys.executable, str(Path(__file__).resolve()), "--measure", str(args.rounds), str(args.neural_rounds),
           str(args.small_rounds), ",".join(args.scales)]
    done = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"bench_foltr: the version at {src} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def extract(ref: str, into: Path) -> Path:
    """``ltrlib`` at git ``ref``, extracted under ``into``."""
    archive = into / "source.tar"
    with open(archive, "wb") as f:
        subprocess.run(["git", "archive", "--format=tar", ref, "ltrlib"], cwd=ROOT, stdout=f, check=True)
    with tarfile.open(archive) as t:
        t.extractall(into, filter="data")
    return into


def paper_runs(head: dict) -> None:
    """Paper-length runs (T = 10,000, 5 IID clients, B = 5, evaluated every 1,000 rounds as
    notebook 07 does) of each ranker on the small twin, beside what item 2's figures project
    for them: the rounds of a trained model cost more than the first rounds' (its lists
    concentrate, so Plackett-Luce sampling recomputes more exponentials, and more clicks
    make more updates), which the projection does not see."""
    from ltrlib.data import load_dataset
    from ltrlib.foltr import partition as P
    from ltrlib.foltr.federated import run_federated

    s = load_dataset("synthetic", "", "small", 0)
    data = P.prepare_data(P.online_training_queries(s), s.test)
    fed = P.iid(data, 5, 5, "perfect")
    for ranker in ("linear", "neural"):
        run_federated(fed, ranker, 2, seed=0, eval_every=1)  # JIT warm-up
        t0 = time.perf_counter()
        res = run_federated(fed, ranker, 10_000, seed=0, eval_every=1000)
        dt = time.perf_counter() - t0
        small = head["scales"]["small"]
        projected = small["fixed"][f"{ranker} iid"] + 10_000 * small["per_round"][f"{ranker} iid"]
        print(f"  {ranker}: {dt:.1f} s for {res.interactions:,} interactions ({dt / res.interactions * 1e6:.1f} us each; "
              f"item 2 projects {projected:.1f} s); offline NDCG@10 {res.offline.value.iloc[0]:.3f} -> "
              f"{res.offline.value.iloc[-1]:.3f}")


def main() -> None:
    if len(sys.argv) == 6 and sys.argv[1] == "--measure":
        print(json.dumps(measure(*map(int, sys.argv[2:5]), tuple(sys.argv[5].split(",")))))
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--baseline", default="7d3748a", help="git ref of the code to compare with ('' for none)")
    ap.add_argument("--rounds", type=int, default=2000, help="rounds of the linear throughput runs")
    ap.add_argument("--neural-rounds", type=int, default=500, help="rounds of the neural throughput runs")
    ap.add_argument("--small-rounds", type=int, default=200, help="T of item 2's runs on each twin of --scales")
    ap.add_argument("--paper", action="store_true", help="also time a paper-length run of each ranker")
    ap.add_argument("--scales", default="small", type=lambda v: tuple(v.split(",")),
                    help="twins of item 2 and its projection, comma-separated (small,paper: the ratio in one run; "
                         "paper's twin takes about 6 GB)")
    ap.add_argument("--floor", nargs="?", const=ROOT / "reports" / "foltr-paper-protocol" / "paper", type=Path,
                    metavar="RUN", help="only the arithmetic floor of RUN's neural interactions (item 4)")
    args = ap.parse_args()
    if args.paper and "small" not in args.scales:
        ap.error("--paper compares with item 2's small-twin figures: give --scales with small in it")
    if args.floor:
        floor(args.floor)
        return

    with tempfile.TemporaryDirectory() as tmp:
        base = run_version(extract(args.baseline, Path(tmp)), args) if args.baseline else None
        head = run_version(ROOT, args)
    print(f"one core; baseline {args.baseline or '(none)'} against this checkout")
    print("1. interactions/s on lightgbm-rank (5 IID clients, B = 5)")
    for key, rate in head["rate"].items():
        was = f"{base['rate'][key]:10,.0f}/s -> " if base else ""
        ratio = f"  ({rate / base['rate'][key]:.1f}x)" if base else ""
        print(f"  {key:22s} {was}{rate:10,.0f}/s{ratio}")
    projected = {}  # this checkout's notebook 07 at -p profile paper, CPU-seconds by twin
    for scale in args.scales:
        now, was = head["scales"][scale], base["scales"][scale] if base else None
        print(f"2. us per interaction ({args.small_rounds} rounds) and a notebook 07 run's fixed seconds (partition "
              f"and 11 evaluations), a setting on the {scale} twin (non-IID; {now['queries']:,} online training "
              f"queries, {now['documents']:,} documents)")
        for key, us in now["us_per_interaction"].items():
            before = f"{was['us_per_interaction'][key]:8.1f} -> " if was else ""
            ratio = f"  ({was['us_per_interaction'][key] / us:4.1f}x)" if was else ""
            fixed = f"{was['fixed'][key]:6.2f} -> " if was else ""
            print(f"  {key:22s} {before}{us:8.1f}{ratio}   fixed {fixed}{now['fixed'][key]:6.2f} s")
        for name, figures in (("baseline", was), ("this checkout", now)):
            if figures:
                by_ranker, runs = paper_protocol_seconds(figures)
                cpu = sum(by_ranker.values())
                if figures is now:
                    projected[scale] = cpu
                print(f"3. notebook 07 at -p profile paper on the {scale} twin, {name} (projected, {runs} runs): "
                      f"{cpu / 3600:.1f} CPU-hours ({', '.join(f'{r} {v / 3600:.1f}' for r, v in by_ranker.items())}), "
                      f"{cpu / 2 / 3600:.1f} h on 2 cores, {cpu / 16 / 60:.0f} min on 16")
    if len(args.scales) > 1:
        first = head["scales"][args.scales[0]]
        for scale in args.scales[1:]:
            now = head["scales"][scale]
            for part in ("per_round", "fixed"):
                ratios = sorted(now[part][k] / first[part][k] for k in first[part])
                print(f"   {scale} against {args.scales[0]}, this checkout, {part.replace('_', ' ')}: "
                      f"{ratios[0]:.2f}-{ratios[-1]:.2f}x over the {len(ratios)} settings and rankers")
            # A round costs what its list costs, and the twins' lists are of a length: the scale's
            # own cost is its fixed costs, projected here with the first twin's rounds.
            mixed = {"per_round": first["per_round"], "fixed": now["fixed"]}
            same_rounds = sum(paper_protocol_seconds(mixed)[0].values())
            print(f"   notebook 07 at -p profile paper with {args.scales[0]}'s rounds and {scale}'s fixed costs: "
                  f"{same_rounds / 3600:.1f} CPU-hours, {(same_rounds - projected[args.scales[0]]) / 3600:+.1f} "
                  f"over {args.scales[0]}'s")
    if args.paper:
        print("4. paper-length runs on the small twin (T = 10,000, 5 IID clients, B = 5), this checkout")
        paper_runs(head)


if __name__ == "__main__":
    main()
