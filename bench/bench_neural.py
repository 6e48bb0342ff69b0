"""The neural competitors' training speed: the per-step loop of before issue 61
(`reference_neural.py`) against `NeuralRanker.fit`'s chunked loop, in the same run, and
their compiles per seed.

Data shaped like notebook 06's stage 2: lists of 20 documents with 110 listwise-expanded
features (random values: the cost does not depend on them), 1,000 training lists,
``--vali`` validation lists, batches of 32, validation every ``--eval-every`` steps.

**Speed** (the default): for each network at the width cap ``--width`` (64, the `cpu`
profile's; 0 = the paper's sizes), ``--rounds`` rounds, each fitting the network for
``--steps`` steps with the old loop and with the new one, the two interleaved (their order
alternating by round). Steps per second counts every step and every validation of a fit but
not its compiles: the old loop compiles in every fit, so its first step (compile and one
step) is left out (`reference_neural.py` records it); the new loop compiles a shape once
per process, so each network is fitted once before the rounds. Medians over the rounds; the
ratio is new over old; "together" is the eleven networks' summed step times at the same
number of steps. A third column (off with ``--no-side-by-side``) times the new loop as
`fit_neural_models` runs it: two fits of the network at once, each in a worker process of
one core and one thread (`ltrlib.neural.competitors.network_workers`), counted as the
machine's steps in the time the two overlap (each fit's own rate, which includes the moments
it ran alone, so a little above the pure pair's). Each round trains at another learning
rate (the paper's, times 1.001, 1.002, ...), as each trial of a study has its own; the compile columns are then the old
loop's compile in every fit (its first step, less one step's time) and the new loop's in the
first fit of a shape (the first fit's time less a second one's).

**Compiles per seed** (``--compiles``): one seed's trials as a study runs them (every
network, ``--trials`` points each: the paper's Tables 6-7 point, then points of the search
space drawn by Optuna's random sampler; `cpu` widths), each fitted for a few steps,
counted by JAX's own events (a backend compile, or a program loaded from the persistent
compilation cache), for two seeds in two fresh processes sharing one compilation cache,
as a study's seeds do. JAX uses every core it finds; run with nothing else on the machine:

    .venv/bin/python bench/bench_neural.py                          # speed, the eleven networks
    .venv/bin/python bench/bench_neural.py --models DNN,SetRank --rounds 5
    .venv/bin/python bench/bench_neural.py --compiles --trials 16
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def reference():
    """`reference_neural.py`, the per-step loop (bench/ is not a package)."""
    spec = importlib.util.spec_from_file_location("reference_neural", HERE / "reference_neural.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def lists(n_queries: int, n_features: int = 110, size: int = 20, seed: int = 0):
    from ltrlib.data.dataset import Dataset

    rng = np.random.default_rng(seed)
    offsets = np.arange(n_queries + 1, dtype=np.int64) * size
    X = rng.normal(size=(offsets[-1], n_features)).astype(np.float32)
    y = rng.choice(5, offsets[-1], p=[0.5, 0.25, 0.15, 0.07, 0.03]).astype(np.int32)
    return Dataset(X, y, np.arange(n_queries), offsets)


def ranker(name: str, point: dict, width: int, budget, rate_factor: float = 1.0):
    from ltrlib.neural import NeuralRanker
    from ltrlib.neural.competitors import NEURAL_MODELS, architecture

    spec = NEURAL_MODELS[name]
    return NeuralRanker(architecture(spec, point, width), loss=spec.loss,
                        learning_rate=float(point["learning_rate"]) * rate_factor, order_by=109, budget=budget)


def fit(loop: str, r, train, vali, ref):
    from ltrlib.metrics import ideal_dcg

    kw = dict(train_ideal=ideal_dcg(train.y, train.offsets, 5), vali_ideal=ideal_dcg(vali.y, vali.offsets, 5))
    start = time.perf_counter()
    if loop == "old":
        ref.fit_per_step(r, train, vali, **kw)
    else:
        r.fit(train, vali, **kw)
    return time.perf_counter() - start


def speed(args) -> None:
    import jax

    from ltrlib.neural import NeuralBudget, neural_model_list
    from ltrlib.neural.competitors import NEURAL_MODELS, PAPER_POINTS

    ref = reference()
    train, vali = lists(1000, seed=1), lists(args.vali, seed=2)
    budget = NeuralBudget(max_steps=args.steps, patience=args.steps, eval_every=args.eval_every)
    names = neural_model_list(args.models)
    print(f"jax {jax.__version__} on {jax.devices()[0].platform} ({jax.devices()[0].device_kind}), "
          f"{os.cpu_count()} cores; lists of 20 x 110 features, batches of 32, {args.vali} validation lists every "
          f"{args.eval_every} steps; {args.steps} steps a fit, width {args.width or 'paper'}, {args.rounds} rounds",
          flush=True)
    compile_new = {}
    for name in names:  # the new loop compiles each shape once per process: do it before the rounds
        r = ranker(name, PAPER_POINTS[NEURAL_MODELS[name].family], args.width, budget)
        first = fit("new", r, train, vali, ref)
        again = fit("new", ranker(name, PAPER_POINTS[NEURAL_MODELS[name].family], args.width, budget), train, vali,
                    ref)
        compile_new[name] = max(first - again, 0.0)
    times = {name: {"old": [], "new": [], "old_compile": [], "pair": []} for name in names}
    loops = ("old", "new", "pair") if args.side_by_side else ("old", "new")
    for round_ in range(args.rounds):
        for name in names:
            point = PAPER_POINTS[NEURAL_MODELS[name].family]
            for loop in (loops if round_ % 2 == 0 else loops[::-1]):
                # Another learning rate each round, as each trial has its own: the old loop's
                # program, which holds the rate, cannot be loaded from the persistent cache.
                rate = 1 + (round_ + 1) / 1000
                if loop == "pair":
                    times[name]["pair"].append(side_by_side(name, args, rate))
                    continue
                r = ranker(name, point, args.width, budget, rate_factor=rate)
                seconds = fit(loop, r, train, vali, ref)
                if loop == "old":  # its first step compiles: left out, with the step it ran
                    step = (seconds - r.first_step_seconds) / (args.steps - 1)
                    times[name]["old_compile"].append(r.first_step_seconds - step)
                    times[name]["old"].append(step)
                else:
                    times[name]["new"].append(seconds / args.steps)
        print(f"round {round_ + 1} done", file=sys.stderr, flush=True)
    pair_head = " | two side by side, one core each: steps/s | ratio" if args.side_by_side else ""
    print(f"\n| network | old steps/s | new steps/s | ratio{pair_head} | old: compile s in every fit | "
          "new: compile s once a shape |")
    print("|---|---|---|---|" + ("---|---|" if args.side_by_side else "") + "---|---|")
    total = {"old": 0.0, "new": 0.0, "pair": 0.0}
    for name in names:
        step = {loop: statistics.median(times[name][loop]) for loop in loops}
        for loop in loops:
            total[loop] += step[loop]
        pair = f" | {1 / step['pair']:.1f} | {step['old'] / step['pair']:.2f}" if args.side_by_side else ""
        print(f"| {name} | {1 / step['old']:.1f} | {1 / step['new']:.1f} | {step['old'] / step['new']:.2f}{pair} | "
              f"{statistics.median(times[name]['old_compile']):.2f} | {compile_new[name]:.2f} |")
    pair = (f" | {len(names) / total['pair']:.1f} | {total['old'] / total['pair']:.2f}" if args.side_by_side else "")
    print(f"| together (summed step times) | {len(names) / total['old']:.1f} | {len(names) / total['new']:.1f} | "
          f"{total['old'] / total['new']:.2f}{pair} | | |")


def side_by_side(name: str, args, rate: float) -> float:
    """Seconds a step of ``name`` costs the machine when two of its fits run at once, each in
    a worker of one core and one thread as `fit_neural_models` trains networks: the two
    workers' steps over the time they overlap. Each worker fits once to compile (or load the
    program from the persistent cache), then the timed fit."""
    from ltrlib.neural.competitors import network_workers

    with network_workers(2) as pool:
        calls = [pool.submit(_timed_fit, name, args.width, args.steps, args.eval_every, args.vali, rate)
                 for _ in range(2)]
        spans = [call.result() for call in calls]
    start, end = max(s for s, _ in spans), min(e for _, e in spans)
    if end <= start:
        raise RuntimeError(f"{name}: the two fits did not overlap ({spans}); the machine is too loaded to measure")
    # Both workers advance at their own pace during the overlap: the machine's steps in it.
    steps = sum(args.steps * (end - start) / (e - s) for s, e in spans)
    return (end - start) / steps


def _timed_fit(name: str, width: int, steps: int, eval_every: int, n_vali: int, rate: float):
    """In a worker: one fit to compile, then the timed one; its start and end (wall clock)."""
    from ltrlib.neural import NeuralBudget
    from ltrlib.neural.competitors import NEURAL_MODELS, PAPER_POINTS

    train, vali = lists(1000, seed=1), lists(n_vali, seed=2)
    budget = NeuralBudget(max_steps=steps, patience=steps, eval_every=eval_every)
    point = PAPER_POINTS[NEURAL_MODELS[name].family]
    fit("new", ranker(name, point, width, budget, rate_factor=rate), train, vali, None)
    start = time.time()
    fit("new", ranker(name, point, width, budget, rate_factor=rate), train, vali, None)
    return start, time.time()


def count_seed(args) -> None:
    """One seed's trials with one loop, in this process: prints a JSON line of counts."""
    import jax
    import optuna

    from ltrlib.neural import NeuralBudget, neural_model_list
    from ltrlib.neural.competitors import NEURAL_MODELS, PAPER_POINTS, suggest

    counts = {"compiles": 0, "compile_seconds": 0.0, "cache_hits": 0}

    def on_duration(event, seconds, **_):
        if event == "/jax/core/compile/backend_compile_duration":
            counts["compiles"] += 1
            counts["compile_seconds"] += seconds

    def on_event(event, **_):
        if event == "/jax/compilation_cache/cache_hits":
            counts["cache_hits"] += 1

    jax.monitoring.register_event_duration_secs_listener(on_duration)
    jax.monitoring.register_event_listener(on_event)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    ref = reference()
    train, vali = lists(1000, seed=1), lists(args.vali, seed=2)
    budget = NeuralBudget(max_steps=4, patience=4, eval_every=2, seed=args.count_seed)
    start, fits = time.perf_counter(), 0
    for name in neural_model_list(args.models):
        family = NEURAL_MODELS[name].family
        study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=args.count_seed))
        study.enqueue_trial(PAPER_POINTS[family])
        for _ in range(args.trials):
            trial = study.ask()
            r = ranker(name, suggest(trial, family), args.width, budget)
            fit(args.loop, r, train, vali, ref)
            r.score(vali)  # the study scores its best model: the scoring program counts too
            study.tell(trial, 0.0)
            fits += 1
    print(json.dumps({**counts, "fits": fits, "seconds": time.perf_counter() - start}))


def compiles(args) -> None:
    print(f"{args.trials} trials a network (the paper's point, then random points), width {args.width or 'paper'}; "
          "two seeds, each in a fresh process, one compilation cache per loop shared by its two seeds")
    print("\n| loop | seed | fits | backend compiles | compile s | loaded from the cache | wall s |")
    print("|---|---|---|---|---|---|---|")
    for loop in ("old", "new"):
        with tempfile.TemporaryDirectory() as cache:
            env = {k: v for k, v in os.environ.items() if not k.startswith("JAX_COMPILATION_CACHE")}
            env["LTRLIB_CACHE_DIR"] = cache  # use_compilation_cache: <cache>/jax, every program kept
            for seed in (1, 2):
                out = subprocess.run([sys.executable, __file__, "--count-seed", str(seed), "--loop", loop,
                                      "--trials", str(args.trials), "--models", args.models, "--width",
                                      str(args.width), "--vali", str(args.vali)],
                                     env=env, capture_output=True, text=True, check=True)
                c = json.loads(out.stdout.strip().splitlines()[-1])
                print(f"| {loop} | {seed} | {c['fits']} | {c['compiles']} | {c['compile_seconds']:.0f} | "
                      f"{c['cache_hits']} | {c['seconds']:.0f} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="all", help="comma-separated networks, or all")
    parser.add_argument("--width", type=int, default=64, help="layer cap; 0 = the paper's sizes")
    parser.add_argument("--steps", type=int, default=300, help="training steps a timed fit")
    parser.add_argument("--eval-every", type=int, default=100)
    parser.add_argument("--vali", type=int, default=256, help="validation lists")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-side-by-side", dest="side_by_side", action="store_false",
                        help="leave out the new loop's two fits side by side, one core each")
    parser.add_argument("--compiles", action="store_true", help="count compiles per seed instead of timing")
    parser.add_argument("--trials", type=int, default=16, help="trials a network, with --compiles")
    parser.add_argument("--count-seed", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--loop", choices=("old", "new"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.count_seed is not None:
        count_seed(args)
    elif args.compiles:
        compiles(args)
    else:
        speed(args)


if __name__ == "__main__":
    main()
