"""Parse speed: ltrlib's LETOR reader against scikit-learn, and the cached reload.

Builds a LETOR-style file of ``--mb`` megabytes (default 150) in a temporary directory, from
the synthetic Istella-like generator (220 features, ~40% zeros, 2-4 significant digits) when
``ltrlib.data.synthetic`` is there, else from random data with realistic sparsity. Then, in
one run on the same file:

1. ``sklearn.datasets.load_svmlight_file(path, query_id=True)``;
2. ``read_letor`` with a cold cache directory: the first parse, including writing the cache;
3. ``read_letor`` again: the cached reload.

Goals (from the issue): first parse >= 10x sklearn; reload >= 50x faster than the first parse.
The numba kernels are compiled (or loaded from numba's on-disk cache) on a tiny file before
the timings: compilation is a once-per-install cost, reported separately.

    python bench/bench_parse.py [--mb 150] [--repeat 3] [--keep DIR]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ltrlib.data.dataset import Dataset, concat  # noqa: E402
from ltrlib.data.readers import read_letor  # noqa: E402
from ltrlib.data.svmlight.write import write_svmlight  # noqa: E402


def _random_dataset(n_docs: int, seed: int = 0) -> Dataset:
    rng = np.random.default_rng(seed)
    n_features = 136
    X = rng.lognormal(0.0, 1.5, size=(n_docs, n_features))
    digits = rng.integers(2, 7, size=n_features)  # 2-6 significant digits per feature
    mag = np.floor(np.log10(X))
    X = np.round(X / 10.0 ** (mag - digits[None, :] + 1)) * 10.0 ** (mag - digits[None, :] + 1)
    X[rng.random(X.shape) < 0.4] = 0.0
    sizes = rng.integers(20, 200, size=n_docs // 50 + 2)
    sizes = sizes[np.cumsum(sizes) <= n_docs]
    sizes = np.append(sizes, n_docs - sizes.sum()) if n_docs > sizes.sum() else sizes
    return Dataset(X=X.astype(np.float32), y=rng.integers(0, 5, n_docs),
                   query_ids=np.arange(1, sizes.size + 1), offsets=np.concatenate([[0], np.cumsum(sizes)]),
                   name="random")


def build_file(path: Path, mb: float, source: str) -> str:
    """Write a LETOR file of about ``mb`` MB; returns a description of the data."""
    target = mb * 1e6
    if source == "synthetic":
        try:
            from ltrlib.data.synthetic import make_synthetic
        except ImportError:
            source = "random"
    if source == "synthetic":
        base = make_synthetic("small", seed=0).train
        desc = "synthetic (make_synthetic 'small' train, tiled)"
    else:
        base = _random_dataset(200_000)
        desc = "random (136 features, 2-6 significant digits, 40% zeros)"
    probe = path.with_suffix(".probe")
    sample = base.take(np.arange(min(200, base.n_queries)))
    write_svmlight(sample, probe)
    per_doc = probe.stat().st_size / sample.n_docs
    probe.unlink()
    need = int(target / per_doc)
    parts, have, k = [], 0, 0
    while have < need:
        # Tile the base set with fresh query ids until the target size is reached.
        take = base
        if have + base.n_docs > need:
            nq = int(np.searchsorted(base.offsets, need - have)) + 1
            take = base.take(np.arange(min(nq, base.n_queries)))
        parts.append(Dataset(X=take.X, y=take.y, query_ids=take.query_ids + k * 10_000_000,
                             offsets=take.offsets, feature_names=take.feature_names))
        have += take.n_docs
        k += 1
    ds = concat(parts, name="bench")
    write_svmlight(ds, path)
    return f"{desc}: {ds.n_queries} queries, {ds.n_docs} documents, {ds.n_features} features"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=float, default=150.0, help="size of the LETOR file (MB)")
    ap.add_argument("--repeat", type=int, default=3, help="reloads timed (best is reported)")
    ap.add_argument("--source", choices=("synthetic", "random"), default="synthetic")
    ap.add_argument("--keep", type=Path, default=None, help="build the file here and keep it")
    ap.add_argument("--skip-sklearn", action="store_true")
    args = ap.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="bench_parse_")) if args.keep is None else args.keep
    work.mkdir(parents=True, exist_ok=True)
    try:
        path = work / "bench.txt"
        t0 = time.perf_counter()
        desc = build_file(path, args.mb, args.source)
        size_mb = path.stat().st_size / 1e6
        print(f"file: {path} {size_mb:.1f} MB, {desc} (built in {time.perf_counter() - t0:.1f} s)")

        # numba compile / load from its cache, on a tiny file
        tiny = work / "tiny.txt"
        tiny.write_text("1 qid:1 1:0.5 3:2\n0 qid:1 2:1e-3\n")
        t0 = time.perf_counter()
        read_letor(tiny, cache=False)  # X in memory
        read_letor(tiny, cache_dir=work / "warmup-cache")  # X parsed into a memmap
        print(f"numba kernels ready in {time.perf_counter() - t0:.2f} s "
              "(compiled once per install, then loaded from numba's cache)")

        t_sk = float("nan")
        if not args.skip_sklearn:
            from sklearn.datasets import load_svmlight_file

            t0 = time.perf_counter()
            Xs, ys, qs = load_svmlight_file(str(path), query_id=True, dtype=np.float32)
            t_sk = time.perf_counter() - t0
            print(f"sklearn load_svmlight_file: {t_sk:7.3f} s  {size_mb / t_sk:8.1f} MB/s")

        cache_dir = work / "cache"
        shutil.rmtree(cache_dir, ignore_errors=True)
        t0 = time.perf_counter()
        ds = read_letor(path, cache_dir=cache_dir)
        t_first = time.perf_counter() - t0
        print(f"ltrlib first parse (cold cache, incl. cache write): {t_first:7.3f} s  "
              f"{size_mb / t_first:8.1f} MB/s   [{ds}]")
        t0 = time.perf_counter()
        read_letor(path, cache=False)
        t_nocache = time.perf_counter() - t0
        print(f"ltrlib parse without cache:                          {t_nocache:7.3f} s  "
              f"{size_mb / t_nocache:8.1f} MB/s")

        times = []
        for _ in range(max(1, args.repeat)):
            t0 = time.perf_counter()
            ds2 = read_letor(path, cache_dir=cache_dir)
            times.append(time.perf_counter() - t0)
        assert ds2.meta["cache"] == "hit", ds2.meta
        t_reload = min(times)
        print(f"ltrlib cached reload: best {t_reload * 1e3:.1f} ms of {len(times)} "
              f"(all: {', '.join(f'{t * 1e3:.1f}' for t in times)} ms)")

        if not args.skip_sklearn:
            same = (np.array_equal(Xs.toarray(), np.asarray(ds.X)) and np.array_equal(ys, ds.y)
                    and np.array_equal(qs, ds.qid))
            print(f"identical to sklearn (X, y, qid): {same}")
        r1 = t_sk / t_first
        r2 = t_first / t_reload
        ok1 = "PASS" if r1 >= 10 else "FAIL"
        ok2 = "PASS" if r2 >= 50 else "FAIL"
        print(f"first parse vs sklearn: {r1:6.1f}x  (goal >= 10x)  {ok1}")
        print(f"reload vs first parse:  {r2:6.1f}x  (goal >= 50x)  {ok2}")
        return 0
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
