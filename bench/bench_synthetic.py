"""Time and peak memory of generating the synthetic dataset at a given scale.

Goal (issue 2): the `paper` scale (Istella-S sizes, ~3.4M rows x 220 features) in under
60 s and 4 GB. Run: .venv/bin/python bench/bench_synthetic.py [--scale paper] [--seed 0]
"""

import argparse
import resource
import time

from ltrlib.data.synthetic import make_synthetic


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--scale", default="paper")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    t0 = time.perf_counter()
    splits = make_synthetic(args.scale, args.seed, progress=True)
    seconds = time.perf_counter() - t0
    peak_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2  # ru_maxrss is KiB on Linux
    rows = sum(p.n_docs for p in splits if p is not None)
    print(f"scale={args.scale} seed={args.seed}")
    for name, part in splits.items():
        st = part.stats()
        print(f"  {name:5s} queries={st['queries']:>6d} relevant={st['relevant_documents']:>7d} "
              f"pairs={st['query_document_pairs']:>8d}")
    print(f"rows={rows:,}  time={seconds:.1f} s  peak RSS={peak_gb:.2f} GB")
    if args.scale == "paper":
        ok = seconds < 60 and peak_gb < 4
        print(f"goal <60 s and <4 GB: {'PASS' if ok else 'FAIL'}")


if __name__ == "__main__":
    main()
