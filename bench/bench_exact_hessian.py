"""Bi-λMART with the exact pair hessian against the diagonal one it trains with by default.

The LB objective's pair hessian is ``(h_i + h_j)/(n-1)²`` (diagonal, an approximation of eq. 7) or
``(h_i + h_j + 2 c_ij)/(n-1)²`` (exact, ``hessian="exact"``; `ltrlib.bilambdamart.objective`).
The exact one is larger on coupled pairs, so its Newton steps there are shorter. Does that
change the model? On the synthetic twin, with the two-stage data notebook 06 builds
(stage 1: ``--folds`` λMART models of at most ``--stage1-max-trees`` trees, top
``--top-k`` documents, ``--features`` base features; stage 2: ``--train-queries``
training queries, listwise expansion), this trains Bi-λMART at its default point
(`experiment.MODELS["Bi-λMART"].first_params`, early stopping as the notebook) with each
hessian and prints:

* the ratio exact / diagonal of the pair hessians at the first iteration (all scores 0),
  mean and max over the pairs with a positive diagonal hessian, and the mean over the
  coupled pairs (λ-pairs) alone;
* per hessian: trees (early-stopped), validation and test NDCG@5 (full-list IDCG, as
  `ltrlib.bilambdamart.experiment`), fit seconds and seconds per tree grown;
* the paired two-sided t-test p of test NDCG@5, exact against diagonal.

Stage 1 is cached under ``data/cache/bivariate/`` as in the notebook, so a rerun starts
at stage 2. One LightGBM thread; ``--n-jobs`` stage-1 folds side by side.

    OMP_NUM_THREADS=1 .venv/bin/python bench/bench_exact_hessian.py                # small
    OMP_NUM_THREADS=1 .venv/bin/python bench/bench_exact_hessian.py --scale tiny   # a check
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

MODEL = "Bi-λMART"
K = 5  # the notebook's cut-off: λRank truncation, early stopping and the reported NDCG


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", default="small", help="synthetic scale: tiny, small or paper")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--folds", type=int, default=5,
                    help="stage-1 folds (the tiny scale caps them at 3)")
    ap.add_argument("--stage1-max-trees", type=int, default=200)
    ap.add_argument("--top-k", type=int, default=20)
    ap.add_argument("--features", type=int, default=20, help="base features kept at stage 2")
    ap.add_argument("--train-queries", type=int, default=1000)
    ap.add_argument("--max-trees", type=int, default=2000)
    ap.add_argument("--early-stopping", type=int, default=30)
    ap.add_argument("--n-jobs", type=int, default=2, help="stage-1 folds trained side by side")
    return ap.parse_args()


def stage2(args):
    """The notebook's two-stage data and stage-2 experiment, at the notebook's budgets."""
    from ltrlib.bilambdamart import STAGE1_SETTINGS, build_two_stage, experiment
    from ltrlib.data.loading import load_dataset
    from ltrlib.train import TrainSettings, budget_for_scale

    folds = budget_for_scale(args.scale, "bilambdamart", folds=args.folds)["folds"]
    settings = TrainSettings.for_scale(args.scale, "bilambdamart", max_trees=args.max_trees,
                                       early_stopping=args.early_stopping, eval_at=K,
                                       seed=args.seed, num_threads=1)
    stage1 = settings.replace(max_trees=args.stage1_max_trees, eval_at=STAGE1_SETTINGS.eval_at)
    splits = load_dataset("synthetic", "", args.scale, args.seed)
    two = build_two_stage(splits, folds=folds, top_k=args.top_k, n_features=args.features,
                          settings=stage1, n_jobs=args.n_jobs)
    exp = experiment.Stage2Experiment(two, settings=settings, train_queries=args.train_queries)
    print(f"scale={args.scale} seed={args.seed} stage-1 folds={folds}; stage 2: "
          f"{exp.parts['train'].n_queries} train / {exp.parts['vali'].n_queries} vali / "
          f"{exp.parts['test'].n_queries} test queries, {settings}")
    return exp


def first_iteration_ratios(train, loss: str) -> dict[str, float]:
    """Exact / diagonal pair hessians where LightGBM starts a custom objective: all 0."""
    zeros = np.zeros(train.n_rows)
    _, diag = train.objective(loss, K, hessian="diagonal")(zeros)
    _, exact = train.objective(loss, K, hessian="exact")(zeros)
    curved = diag > 0
    ratio = exact[curved] / diag[curved]
    coupled = ratio > 1.0
    return {"pairs": int(diag.size), "curved": int(curved.sum()), "coupled": int(coupled.sum()),
            "mean": float(ratio.mean()), "max": float(ratio.max()),
            "mean_coupled": float(ratio[coupled].mean()) if coupled.any() else float("nan")}


def fit_both(exp) -> tuple[pd.DataFrame, dict[str, np.ndarray]]:
    """Bi-λMART at its default point with each hessian: the table rows and per-query test
    NDCG@K."""
    from ltrlib.bilambdamart import experiment, fit_lb
    from ltrlib.metrics import ndcg

    spec = experiment.MODELS[MODEL]
    train, vali = exp.rank_data("train", spec), exp.rank_data("vali", spec)
    vali.lgb_dataset(reference=train)  # binned once, outside the timed fits
    test = exp.parts["test"]
    rows, per_query = [], {}
    for hessian in ("diagonal", "exact"):
        t = time.perf_counter()
        model = fit_lb(train, vali, spec.first_params, loss=spec.loss, hessian=hessian,
                       settings=exp.settings)
        seconds = time.perf_counter() - t
        per_query[hessian] = ndcg(test.y, model.score(test), test.offsets, K,
                                  ideal_dcg=exp.ideal_at("test", K))
        rows.append({"hessian": hessian, "trees": model.best_iteration,
                     "grown": model.info["trees_grown"],
                     f"vali_ndcg@{K}": exp.vali_score(model),
                     f"test_ndcg@{K}": float(per_query[hessian].mean()),
                     "fit_s": seconds, "s_per_tree": seconds / model.info["trees_grown"]})
    return pd.DataFrame(rows), per_query


def main() -> None:
    from ltrlib.bilambdamart import experiment
    from ltrlib.metrics import paired_ttest

    args = parse_args()
    t0 = time.perf_counter()
    exp = stage2(args)
    spec = experiment.MODELS[MODEL]
    train = exp.rank_data("train", spec)
    print(f"data ready in {time.perf_counter() - t0:.0f} s; {train.n_rows:,} training pairs")
    # Also compiles (or loads) both objectives' kernels, so neither fit below pays for it.
    r = first_iteration_ratios(train, spec.loss)
    print(f"first-iteration pair hessians, exact / diagonal: mean {r['mean']:.4f}, "
          f"max {r['max']:.4f} over {r['curved']:,} pairs with a positive diagonal "
          f"({r['pairs']:,} pairs); mean {r['mean_coupled']:.4f} over the "
          f"{r['coupled']:,} coupled (λ-)pairs")
    table, per_query = fit_both(exp)
    # Each row's first-iteration pair hessian relative to the diagonal one (1 for itself).
    table = table.assign(**{"h/h_diag_mean": [1.0, r["mean"]], "h/h_diag_max": [1.0, r["max"]]})
    print(table.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    test = paired_ttest(per_query["exact"], per_query["diagonal"])
    print(f"paired t-test of test NDCG@{K}, exact - diagonal: mean difference "
          f"{test.mean_diff:+.4f}, t = {test.t:.3f}, p = {test.p:.4g} over {test.n} queries")


if __name__ == "__main__":
    main()
