"""Bi-LambdaMART at MSLR-WEB10K size: memory of the pair Dataset and objective overhead.

Builds a synthetic second-stage training set shaped like WEB10K's (Table 1 of the
Bi-LambdaMART paper: 6000 queries, 117,686 documents, 136 features + the stage-1 score,
2,220,174 ordered pairs x 1507 pair features, of which 274 are the j copies of the
query-level means and stds that the pair rows leave out, so 1233), then prints:

1. peak RSS while building the binned LightGBM Dataset of the pairs from float32 chunks
   (goal: < 8 GiB; a float64 pair matrix alone would be 26.8 GB);
2. the custom objective's time per iteration against LightGBM's tree-building time on the
   same pair rows (goal: <= 20%);
3. the time per iteration of Bi-λMART (pairs) against native ``lambdarank`` on the
   document rows (685 expanded features).

Run with one LightGBM thread (the project's machines are shared 2-core boxes):

    .venv/bin/python bench/bench_bilambdamart.py              # WEB10K size (minutes, ~6 GB)
    .venv/bin/python bench/bench_bilambdamart.py --queries 600 --iterations 3   # quick look
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np


def peak_rss_gib() -> float:
    # ru_maxrss is in KiB on Linux.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def web10k_like(n_queries: int, seed: int = 0):
    """Lists of 3..20 documents (mean ~19.6 as WEB10K's top-20), 137 base columns
    (136 features + a stage-1 score) mixing counts, flags and heavy-tailed values."""
    rng = np.random.default_rng(seed)
    sizes = np.where(rng.random(n_queries) < 0.97, 20, rng.integers(3, 20, n_queries))
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n = int(offsets[-1])
    X = np.empty((n, 137), dtype=np.float32)
    X[:, :40] = rng.poisson(2.0, size=(n, 40))
    X[:, 40:60] = rng.random((n, 20)) < 0.2
    X[:, 60:137] = rng.lognormal(0.0, 1.0, size=(n, 77))
    utility = X[:, 136] + 0.5 * X[:, 3] + rng.normal(size=n)
    y = np.digitize(utility, np.quantile(utility, [0.5, 0.8, 0.93, 0.98])).astype(np.int32)
    return X, y, offsets


class TimedObjective:
    """Wraps an objective and accumulates the seconds spent inside it."""

    def __init__(self, inner):
        self.inner, self.seconds, self.calls = inner, 0.0, 0

    def __deepcopy__(self, memo):
        return self  # lightgbm.train deep-copies params; keep counting here

    def __call__(self, preds, data):
        t = time.perf_counter()
        out = self.inner(preds, data)
        self.seconds += time.perf_counter() - t
        self.calls += 1
        return out


def main() -> None:
    import lightgbm as lgb

    from ltrlib.bilambdamart import expand_listwise, query_level_columns
    from ltrlib.bilambdamart.model import RankData

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=6000, help="training queries (WEB10K: 6000)")
    ap.add_argument("--iterations", type=int, default=5, help="boosting iterations to time")
    ap.add_argument("--num-leaves", type=int, default=127)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()

    t0 = time.perf_counter()
    base, y, offsets = web10k_like(args.queries)
    X = expand_listwise(base, offsets)
    del base
    data = RankData.build(X, y, offsets, cutoff=5, bivariate=True, n_diff=137,
                          query_level=query_level_columns(137))
    width = len(data.row_feature_names)
    print(f"documents {X.shape[0]:,} x {X.shape[1]} expanded features; "
          f"pairs {data.n_rows:,} x {width} pair features "
          f"(float64 matrix would be {data.n_rows * width * 8 / 1e9:.1f} GB)")
    print(f"peak RSS before the Dataset: {peak_rss_gib():.2f} GiB "
          f"({time.perf_counter() - t0:.0f} s to generate and expand)")

    t = time.perf_counter()
    dtrain = data.lgb_dataset()
    print(f"pair Dataset built in {time.perf_counter() - t:.0f} s; "
          f"peak RSS {peak_rss_gib():.2f} GiB (goal < 8 GiB)")

    params = {"learning_rate": 0.005, "num_leaves": args.num_leaves, "min_data_in_leaf": 500,
              "min_sum_hessian_in_leaf": 0.0, "num_threads": args.threads, "verbosity": -1,
              "force_col_wise": True, "deterministic": True, "seed": 0, "metric": "None"}
    objective = TimedObjective(data.objective("lambdarank", 5))
    objective(np.zeros(data.n_rows), None)  # compile the numba kernels outside the timing
    objective.seconds, objective.calls = 0.0, 0
    t = time.perf_counter()
    lgb.train({**params, "objective": objective}, dtrain, num_boost_round=args.iterations)
    total = time.perf_counter() - t
    per_it = total / args.iterations
    obj_it = objective.seconds / objective.calls
    trees_it = per_it - obj_it
    print(f"Bi-λMART: {per_it:.2f} s per iteration = objective {obj_it:.3f} s + trees "
          f"{trees_it:.2f} s; objective / tree building = {100 * obj_it / trees_it:.1f}% "
          f"(goal <= 20%); peak RSS {peak_rss_gib():.2f} GiB")

    docs = lgb.Dataset(X, label=y, group=np.diff(offsets), params={"verbosity": -1}).construct()
    t = time.perf_counter()
    lgb.train({**params, "objective": "lambdarank", "learning_rate": 0.05, "min_data_in_leaf": 50,
               "lambdarank_truncation_level": 5, "force_col_wise": False, "force_row_wise": True},
              docs, num_boost_round=args.iterations)
    native_it = (time.perf_counter() - t) / args.iterations
    print(f"native lambdarank on the {X.shape[0]:,} documents: {native_it:.3f} s per iteration; "
          f"Bi-λMART / native = {per_it / native_it:.1f}x")
    print(f"final peak RSS {peak_rss_gib():.2f} GiB")


if __name__ == "__main__":
    main()
