"""What a LambdaMART document tree of notebook 03 costs, exact against quantized gradients.

Notebook 03's biggest model, M_full (the whole ``small`` training collection: 3,000
queries, 312,726 documents x 220 features), trained at the paper's Table 6 median on one
thread (as each of the notebook's two side-by-side workers does) for a fixed number of
trees, once with exact gradients (what the batch does) and once per ``--quantized`` bin
count with LightGBM's quantized training (``use_quantized_grad``, leaves renewed with the
exact gradients, ``quant_train_renew_leaf``, as LightGBM advises for ranking). Prints the
seconds per tree, the ratio to exact, the best validation NDCG@10 within those trees and
the test NDCG@10 of the model cut at that best tree, so speed and accuracy are read side
by side.

This is the evidence behind the statement (docs/benchmarks.md) that quantized gradients are
the one lever left for the batch's time, and why it is not taken: the batch trains the
papers' learner with exact gradients. Run it on a quiet machine.

Run: .venv/bin/python bench/bench_tree_cost.py [--trees 200] [--quantized 4,16] [--seed 0]
"""

from __future__ import annotations

import argparse
import time

from ltrlib.data.loading import load_dataset
from ltrlib.train import PAPER_TABLE6_MEDIAN, TrainSettings, train_ranker
from ltrlib.train.backends.base import DataCache
from ltrlib.train.ranker import evaluate_rankers


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trees", type=int, default=200, help="trees per model (no early stopping)")
    ap.add_argument("--quantized", default="4,16", help="comma-separated gradient bin counts to try")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    splits = load_dataset("synthetic", "", "small", args.seed)
    print(f"M_full data: {splits.train.n_queries} queries, {splits.train.n_docs} documents x "
          f"{splits.train.n_features} features; {args.trees} trees at {PAPER_TABLE6_MEDIAN}, one thread")
    # Early stopping far beyond the tree count: every model grows exactly --trees trees.
    settings = TrainSettings(max_trees=args.trees, early_stopping=args.trees + 1, seed=args.seed,
                             num_threads=1)
    variants = [("exact", {})] + [
        (f"quantized, {bins} bins", {"use_quantized_grad": True, "quant_train_renew_leaf": True,
                                     "num_grad_quant_bins": bins})
        for bins in (int(b) for b in args.quantized.split(",") if b.strip())]
    # The data are binned once, outside the timings, as a tuning study's trials share them.
    cache = DataCache(splits.train, splits.vali)
    train_ranker(splits.train, splits.vali, PAPER_TABLE6_MEDIAN, settings.replace(max_trees=1), cache=cache)
    print(f"  {'gradients':20s} {'s/tree':>8s} {'vs exact':>9s} {'vali NDCG@10':>13s} {'test NDCG@10':>13s}")
    exact = None
    for label, extra in variants:
        start = time.perf_counter()
        ranker = train_ranker(splits.train, splits.vali, {**PAPER_TABLE6_MEDIAN, **extra}, settings,
                              cache=cache)
        per_tree = (time.perf_counter() - start) / len(ranker.curve)
        exact = exact or per_tree
        test = evaluate_rankers({label: ranker}, {"test": splits.test}, metrics=("ndcg@10",)).value.mean()
        print(f"  {label:20s} {per_tree:8.3f} {per_tree / exact:9.2f} {max(ranker.curve):13.4f} {test:13.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
