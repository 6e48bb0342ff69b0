"""The neural competitors' cost on this machine: training time per 1,000 steps and scoring
throughput, per model, at the paper's WEB30K size (Tables 6-7) and capped.

Data shaped like notebook 06's stage 2 at the small scale: lists of 20 documents with 110
listwise-expanded features (random values: the cost does not depend on them). Training
time per step is `NeuralRanker.seconds_per_step` (the steps after the first, which
compiles, without the validation passes), in batches of 32 lists; scoring runs over
1,000 lists after a warm-up. JAX uses every core it finds; run it with nothing else on the machine:

    .venv/bin/python bench/bench_neural.py                    # every model, paper size and width 256
    .venv/bin/python bench/bench_neural.py --models DNN --widths 0
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from ltrlib.data.dataset import Dataset
from ltrlib.neural import NeuralBudget, NeuralRanker
from ltrlib.neural.competitors import NEURAL_MODELS, PAPER_POINTS, architecture


def lists(n_queries: int, n_features: int = 110, size: int = 20, seed: int = 0) -> Dataset:
    rng = np.random.default_rng(seed)
    offsets = np.arange(n_queries + 1, dtype=np.int64) * size
    X = rng.normal(size=(offsets[-1], n_features)).astype(np.float32)
    y = rng.integers(0, 5, offsets[-1]).astype(np.int32)
    return Dataset(X, y, np.arange(n_queries), offsets)


def fit_seconds(name: str, width: int, train: Dataset, vali: Dataset, steps: int) -> tuple[float, NeuralRanker]:
    spec = NEURAL_MODELS[name]
    point = PAPER_POINTS[spec.family]
    ranker = NeuralRanker(architecture(spec, point, width), loss=spec.loss, learning_rate=point["learning_rate"],
                          order_by=train.n_features - 1,
                          budget=NeuralBudget(max_steps=steps, patience=steps, eval_every=steps))
    ones = np.ones(train.n_queries)
    start = time.perf_counter()
    ranker.fit(train, vali, train_ideal=ones, vali_ideal=np.ones(vali.n_queries))
    return time.perf_counter() - start, ranker


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="DNN,GSF(2),GSF(2) with d,GSF(20),ATTN-DIN,SetRank")
    parser.add_argument("--widths", default="0,256", help="layer caps to time; 0 = the paper's sizes")
    parser.add_argument("--steps", type=int, default=60, help="training steps timed per model")
    args = parser.parse_args()
    import jax

    train, vali, test = lists(1000, seed=1), lists(32, seed=2), lists(1000, seed=3)
    print(f"jax {jax.__version__} on {jax.devices()[0].platform}, {jax.device_count()} device(s); "
          f"lists of 20 documents x {train.n_features} features, batches of 32 lists")
    print(f"{'model':<16}{'width':>7}{'s / 1,000 steps':>17}{'lists / s scored':>18}")
    for name in args.models.split(","):
        for width in (int(w) for w in args.widths.split(",")):
            _, ranker = fit_seconds(name, width, train, vali, args.steps)
            per_step = ranker.seconds_per_step
            ranker.score(test)  # warm-up: compiled once per shape
            start = time.perf_counter()
            ranker.score(test)
            rate = test.n_queries / (time.perf_counter() - start)
            print(f"{name:<16}{width or 'paper':>7}{1000 * per_step:>17.1f}{rate:>18.0f}", flush=True)


if __name__ == "__main__":
    main()
