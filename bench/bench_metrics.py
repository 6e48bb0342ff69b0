"""Time ltrlib.metrics against ranx on the same synthetic data.

Run: ``.venv/bin/python bench/bench_metrics.py [--queries 6500] [--docs 700000]``

Both libraries JIT-compile with numba, so each is warmed up on the full data first, then
timed as the best of ``--repeats`` runs. ranx is timed two ways: its ``evaluate`` on
``Qrels``/``Run`` objects (what a user calls; includes converting its dicts to numba
typed lists) and on pre-converted typed lists (its kernels alone). Building ranx's
``Qrels``/``Run`` from the flat arrays is reported separately and excluded from both.
Prints a table and the ratio ranx / ltrlib; checks the two agree before timing.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from ltrlib.metrics import evaluate

OURS = ("ndcg@1", "ndcg@3", "ndcg@5", "ndcg@10", "map", "mrr@10")
# ranx spells NDCG with 2**rel - 1 gain "ndcg_burges"; map/mrr are the same definitions.
RANX = {"ndcg@1": "ndcg_burges@1", "ndcg@3": "ndcg_burges@3", "ndcg@5": "ndcg_burges@5",
        "ndcg@10": "ndcg_burges@10", "map": "map", "mrr@10": "mrr@10"}


def make_data(n_queries: int, n_docs: int, seed: int):
    rng = np.random.default_rng(seed)
    # Varied list lengths around the mean, like MSLR (a few short, some long lists).
    sizes = rng.gamma(2.0, n_docs / n_queries / 2.0, size=n_queries)
    sizes = np.maximum(1, np.round(sizes * n_docs / sizes.sum())).astype(np.int64)
    sizes[-1] += n_docs - sizes.sum()
    sizes = np.maximum(sizes, 1)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    n = int(offsets[-1])
    y = rng.choice(5, size=n, p=[0.5, 0.3, 0.13, 0.05, 0.02]).astype(np.int32)
    scores = rng.normal(size=n) + 0.3 * y  # continuous: no ties, so ranx's tie order is moot
    return y, scores, offsets


def best_of(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=6500)
    ap.add_argument("--docs", type=int, default=700_000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    y, scores, offsets = make_data(args.queries, args.docs, args.seed)
    n_queries = offsets.size - 1
    print(f"data: {y.size:,} documents in {n_queries:,} queries; metrics: {', '.join(OURS)}")

    t0 = time.perf_counter()
    ours_mean = evaluate(y, scores, offsets, OURS, no_relevant="zero")
    first_call = time.perf_counter() - t0
    t_ours = best_of(lambda: evaluate(y, scores, offsets, OURS, no_relevant="zero"), args.repeats)

    # ranx's own kernels emit NumbaTypeSafetyWarning on every call; not ours to fix.
    warnings.filterwarnings("ignore", module="ranx")
    warnings.filterwarnings("ignore", message="unsafe cast")
    from ranx import Qrels, Run
    from ranx import evaluate as ranx_evaluate

    t0 = time.perf_counter()
    # Plain dicts: ranx's from_df (a pandas groupby-apply) takes ~40 s at this size.
    # A loop per query is fine here: it builds the reference input, it is not timed.
    doc = [f"d{i}" for i in range(y.size)]
    labels, score_list = y.tolist(), scores.tolist()
    qrels_dict, run_dict = {}, {}
    for i in range(n_queries):
        a, b = int(offsets[i]), int(offsets[i + 1])
        run_dict[f"q{i}"] = dict(zip(doc[a:b], score_list[a:b]))
        # Qrels hold relevant documents; a label-0 placeholder keeps a query without any
        # in ranx's query set (ranx scores it 0, matched by no_relevant="zero" here).
        qrels_dict[f"q{i}"] = {d: l for d, l in zip(doc[a:b], labels[a:b]) if l > 0} or {"none": 0}
    qrels, run = Qrels(qrels_dict), Run(run_dict)
    ranx_build = time.perf_counter() - t0
    metrics = list(RANX.values())

    t0 = time.perf_counter()
    ranx_mean = ranx_evaluate(qrels, run, metrics, save_results_in_run=False)
    ranx_first = time.perf_counter() - t0
    worst = max(abs(ours_mean[m] - ranx_mean[RANX[m]]) for m in OURS)
    if worst > 1e-9:
        raise SystemExit(f"ltrlib and ranx disagree by {worst:.3g}; not timing")
    t_ranx = best_of(lambda: ranx_evaluate(qrels, run, metrics, save_results_in_run=False),
                     args.repeats)
    tq, tr = qrels.to_typed_list(), run.to_typed_list()
    t_ranx_kernels = best_of(lambda: ranx_evaluate(tq, tr, metrics), args.repeats)

    rows = [
        ("ltrlib.metrics.evaluate", t_ours, first_call),
        ("ranx.evaluate(Qrels, Run)", t_ranx, ranx_first),
        ("ranx.evaluate(typed lists)", t_ranx_kernels, float("nan")),
    ]
    print(f"\n{'':30s} {'best s':>9s} {'first call s':>13s} {'ranx / ltrlib':>14s}")
    for name, t, first in rows:
        first_s = "-" if np.isnan(first) else f"{first:.3f}"
        print(f"{name:30s} {t:9.4f} {first_s:>13s} {t / t_ours:14.1f}")
    print(f"\n(ranx Qrels/Run construction from arrays, excluded above: {ranx_build:.2f} s)")
    print(f"agreement with ranx: max |difference| of means = {worst:.2e}")
    print(f"target < 0.5 s: {'met' if t_ours < 0.5 else 'NOT met'} ({t_ours:.4f} s)")


if __name__ == "__main__":
    main()
