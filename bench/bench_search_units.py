"""How far one tree moves the documents' scores: pair models against document models.

The pair models' search space is drawn in document units and converted for pair rows
(`ltrlib.bilambdamart.space`): the rate over ``n - 1``, the minimum data times ``n - 1``, the
minimum hessian times ``2/(n-1)``. This measures why and whether it works. On the two-stage
data notebook 06 builds (`bench_exact_hessian.stage2`, at this bench's flags), each of
λMART*, Bi-λMART, GBT_Softmax and Bi-GBT_Softmax grows one tree at the same point (learning
rate ``--learning-rate``, 31 leaves, minimum data 50, minimum hessian 0.001), given to
LightGBM as is and converted; printed per model: the mean absolute within-query
(query-centred) training score after that tree, and its ratio to the document model with
the same loss. A ratio near 1 means the same point takes the same step.

    OMP_NUM_THREADS=1 .venv/bin/python bench/bench_search_units.py --train-queries 300
    OMP_NUM_THREADS=1 .venv/bin/python bench/bench_search_units.py --scale tiny      # a check

Measured (small, seed 0, 2 stage-1 folds of 40 trees, 300 training queries, rate 0.05):
as is, Bi-λMART 15.8 and Bi-GBT_Softmax 17.4 times the document models' step; converted,
0.84 and 0.92.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_exact_hessian import stage2  # noqa: E402  (the same data as the hessian bench)

POINT = {"num_leaves": 31, "min_data_in_leaf": 50, "min_sum_hessian_in_leaf": 0.001}


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", default="small", help="synthetic scale: tiny, small or paper")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--folds", type=int, default=2)
    ap.add_argument("--stage1-max-trees", type=int, default=40)
    ap.add_argument("--top-k", type=int, default=20)
    ap.add_argument("--features", type=int, default=20)
    ap.add_argument("--train-queries", type=int, default=300)
    ap.add_argument("--learning-rate", type=float, default=0.05)
    ap.add_argument("--n-jobs", type=int, default=2)
    # One tree, no early stopping: the hessian bench's settings flags at their end.
    ap.set_defaults(max_trees=1, early_stopping=1)
    return ap.parse_args()


def centred_step(model, ds) -> float:
    """Mean |score - its query's mean score| after the model's trees: the within-query step."""
    s = model.score(ds)
    sizes = np.diff(ds.offsets)
    return float(np.abs(s - np.repeat(np.add.reduceat(s, ds.offsets[:-1]) / sizes, sizes)).mean())


def main() -> None:
    from ltrlib.bilambdamart import experiment
    from ltrlib.bilambdamart.space import lightgbm_point, pairs_per_document

    args = parse_args()
    exp = stage2(args)
    ds = exp.parts["train"]
    k = pairs_per_document(ds.offsets)
    point = {"learning_rate": args.learning_rate, **POINT}
    rows = []
    for name in ("λMART*", "Bi-λMART", "GBT_Softmax", "Bi-GBT_Softmax"):
        spec = experiment.MODELS[name]
        for units in ("as is", "converted"):
            lgb = lightgbm_point(point, k if spec.bivariate and units == "converted" else None)
            model = exp.fit_lightgbm(spec, lgb)
            rows.append({"model": name, "loss": spec.loss, "point": units, "step": centred_step(model, ds)})
    table = pd.DataFrame(rows)
    document = table[~table.model.str.startswith("Bi-")].groupby("loss").step.first()
    table["ratio_to_documents"] = table.step / table.loss.map(document)
    print(f"n - 1 = {k} pair rows per document; one tree at learning rate {args.learning_rate}")
    print(table.to_string(index=False, float_format=lambda v: f"{v:.4f}"))


if __name__ == "__main__":
    main()
