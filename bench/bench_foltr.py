"""Speed of the FPDGD simulator (``ltrlib.foltr``) on one core.

Run: ``.venv/bin/python bench/bench_foltr.py [--rounds 4000] [--paper-rounds 10000]``

1. Interactions per second on LightGBM's example ranking data (300 features, ~15 documents
   per query; /work/shared/data/lightgbm-rank via ``load_dataset("lightgbm-rank")``): the
   federated loop with 5 clients, B = 5, SDBN perfect clicks, linear and neural rankers.
   Offline evaluation only at the end, so the figure is the per-interaction work (sampling,
   clicks, rho, update) plus the per-round FedAvg. The reference implementation does about
   850 interactions/s per core on this kind of data; the goal is 10x (8,500/s).
2. Wall time of a paper-scale run: T = 10,000 rounds, 5 clients, B = 5 (250,000
   interactions), linear ranker, on the ``small`` synthetic data, offline NDCG@10 on the
   test set every 100 rounds; goal under 2 minutes on one core. Includes data preparation
   (query-wise normalisation) but not data generation/loading.

Everything is JIT-warmed first (a short run), and numba is limited to one thread.
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

from ltrlib.data import load_dataset  # noqa: E402
from ltrlib.foltr import partition as P  # noqa: E402
from ltrlib.foltr.federated import run_federated  # noqa: E402


def rate(data, ranker: str, rounds: int, click: str = "perfect") -> tuple[float, float]:
    fed = P.iid(data, 5, 5, click)
    run_federated(fed, ranker, 5, seed=0, eval_every=5)   # JIT warm-up
    t0 = time.perf_counter()
    res = run_federated(fed, ranker, rounds, seed=1, eval_every=rounds)
    dt = time.perf_counter() - t0
    return res.interactions / dt, float(res.offline.value.iloc[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=4000, help="rounds of the throughput runs")
    ap.add_argument("--neural-rounds", type=int, default=1000)
    ap.add_argument("--paper-rounds", type=int, default=10_000)
    ap.add_argument("--skip-paper", action="store_true")
    args = ap.parse_args()

    s = load_dataset("lightgbm-rank", "", "small", 0)
    data = P.prepare_data(s.train, s.test)
    print(f"lightgbm-rank: {data.train.n_queries} train queries, {data.train.n_features} features, "
          f"{data.train.n_docs / data.train.n_queries:.1f} docs/query")
    for ranker, rounds in (("linear", args.rounds), ("neural", args.neural_rounds)):
        for click in ("perfect", "informational"):
            r, nd = rate(data, ranker, rounds, click)
            print(f"  {ranker:7s} {click:14s} {r:10,.0f} interactions/s  ({r / 850:5.1f}x the reference 850/s; "
                  f"final offline NDCG@10 {nd:.3f})")

    if args.skip_paper:
        return
    t0 = time.perf_counter()
    s = load_dataset("synthetic", "", "small", 0)
    t_load = time.perf_counter() - t0
    t0 = time.perf_counter()
    data = P.prepare_data(s.train, s.test)
    fed = P.iid(data, 5, 5, "perfect")
    run_federated(fed, "linear", 2, seed=0, eval_every=1)   # JIT warm-up
    t_prep = time.perf_counter() - t0
    t0 = time.perf_counter()
    res = run_federated(fed, "linear", args.paper_rounds, seed=0, eval_every=100)
    t_run = time.perf_counter() - t0
    print(f"paper-scale run: synthetic small ({data.train.n_queries} train queries, {data.train.n_docs} docs, "
          f"{data.train.n_features} features), T={args.paper_rounds}, 5 clients, B=5, linear, "
          f"{len(res.offline)} offline evaluations")
    print(f"  wall time {t_run:.1f} s for {res.interactions:,} interactions ({res.interactions / t_run:,.0f}/s); "
          f"+ {t_prep:.1f} s normalisation/warm-up, {t_load:.1f} s loading; "
          f"offline NDCG@10 {res.offline.value.iloc[0]:.3f} -> {res.offline.value.iloc[-1]:.3f}")


if __name__ == "__main__":
    main()
