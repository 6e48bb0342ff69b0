"""What resuming a checkpointed LightGBM fit costs before its first new tree, with the fit's
kept scores against predicting them again (`ltrlib.train.backends.lightgbm`, "A fit that
resumes").

Run: ``.venv/bin/python bench/bench_fit_resume.py [--scale small] [--trees 300 1000]``

For each tree count N, on the synthetic twin's training and validation data at ``--scale``
(seed 0), on one thread as a tuning worker of notebook 03 fits: a fit grown to N trees and
cut there (its checkpoint, and the kept scores beside it, written at the cut), then the
same fit resumed to N + 1 trees twice, timed from the call to its end: once with the kept
scores, once with them removed, so that LightGBM predicts the N trees' scores for the
training and validation data as before. Both resumes give the same model (checked). Printed:
seconds each way and the ratio. Timings are for comparison in one run, not figures to quote
across machines.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path


class _Cut(KeyboardInterrupt):
    pass


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scale", default="small")
    ap.add_argument("--trees", type=int, nargs="+", default=[300, 1000])
    args = ap.parse_args()

    from ltrlib.data import load_dataset
    from ltrlib.train import TrainSettings, train_ranker
    from ltrlib.train.backends import lightgbm as backend

    splits = load_dataset("synthetic", scale=args.scale, seed=0)
    params = {"learning_rate": 0.05, "num_leaves": 63, "min_data_in_leaf": 50}
    print(f"{args.scale}: {splits.train.n_docs:,} training and {splits.vali.n_docs:,} validation documents, "
          "one thread")
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.trees:
            settings = TrainSettings(max_trees=n + 1, early_stopping=n + 1, num_threads=1)
            path = Path(tmp) / f"fit{n}.json"

            def cut(trees, value, n=n):
                if trees == n:
                    backend.CHECKPOINT_SECONDS = 0.0  # write at this tree, before the cut
                if trees == n + 1:
                    raise _Cut()

            saved, backend.CHECKPOINT_SECONDS = backend.CHECKPOINT_SECONDS, float("inf")
            try:
                train_ranker(splits.train, splits.vali, params, settings, checkpoint=path, monitor=cut)
            except _Cut:
                pass
            finally:
                backend.CHECKPOINT_SECONDS = saved
            kept = backend._scores_path(path)
            shutil.copy(path, path.with_suffix(".copy"))
            shutil.copy(kept, kept.with_suffix(".copy"))
            seconds, models = {}, {}
            for way in ("kept scores", "predicted"):
                shutil.copy(path.with_suffix(".copy"), path)
                if way == "kept scores":
                    shutil.copy(kept.with_suffix(".copy"), kept)
                else:
                    kept.unlink(missing_ok=True)
                t0 = time.perf_counter()
                fit = train_ranker(splits.train, splits.vali, params, settings, checkpoint=path)
                seconds[way] = time.perf_counter() - t0
                models[way] = fit.model.model_to_string()
            same = "same model" if models["kept scores"] == models["predicted"] else "MODELS DIFFER"
            print(f"  resumed at {n:5d} trees: kept scores {seconds['kept scores']:6.2f} s, predicted "
                  f"{seconds['predicted']:6.2f} s ({seconds['predicted'] / seconds['kept scores']:.1f}x; {same})")


if __name__ == "__main__":
    main()
