"""The search space of the Bi-LambdaMART paper's §5.4, shared by stage 1 and stage 2.

Every LightGBM model of notebook 06, stage 1's λMART and each stage-2 model, is tuned by
Optuna over the same four parameters (§5.4: learning rate, minimum data in leaf, number of
leaves and minimum hessian), on grids wide enough to hold every optimum of the paper's
Table 8: a comparison is only fair when every model had the same search.

**Document units.** A pair model's point means what it means to a document model: the
search draws it in document units and `lightgbm_point` converts it for pair rows (our
choice; the paper tuned each model over ranges it does not give). Why: with ``n`` documents
in a list, a pair row's gradient is ``(g_i - g_j)/(n-1)`` and its hessian
``(h_i + h_j)/(n-1)^2`` (`ltrlib.bilambdamart.objective`, eqs. 6-7), so

* a pair leaf's Newton value, in document-score units once aggregated (eq. 5), is about
  ``n - 1`` times a document leaf's: one tree at the same learning rate moves the
  documents' within-query scores 15.8 (λRank) and 17.4 (softmax) times as far at n = 20
  (`bench/bench_search_units.py`). On the first confirmatory study's pair models the trials
  whose validation NDCG peaked at tree 1 were the high rates: 89 % of trials at 0.1 and
  0.2, 4-15 % at 0.01 or below. The paper's own optima say the same: Bi-λMART at
  0.001-0.005 against λMART*'s 0.045-0.075 (Table 8), a ratio near n - 1 = 19.
* the ordered pairs of a query hold ``2/(n-1)`` of its documents' hessian (each h_i enters
  ``2(n-1)`` pair rows, divided by ``(n-1)^2``), so a minimum leaf hessian set for
  documents forbade nearly every pair split: 47 % and 78 % of trials at 100 and 500
  ended at tree 1.
* each document is in ``n - 1`` pair rows of each order, so a minimum of ``m`` documents
  per leaf is ``m (n-1)`` pair rows.

`lightgbm_point` divides the rate by ``n - 1``, multiplies the minimum data by ``n - 1`` and
the minimum hessian by ``2/(n-1)``; with ``n - 1`` the median list length less one of the
training data (`pairs_per_document`). Converted, one tree moves the pair models' scores
0.84 and 0.92 times as far as the document models' (the same bench).
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

__all__ = ["LEARNING_RATES", "MIN_DATA_IN_LEAF", "MIN_HESSIANS", "NUM_LEAVES", "SEARCH_UNITS", "TUNED",
           "lightgbm_point", "pairs_per_document", "suggest"]

LEARNING_RATES = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.2)
# Spans six decades from 0 (the paper's Bi-λMART value) to past the largest value of the
# paper's Table 8 (λMART, 240).
MIN_HESSIANS = (0.0, 0.001, 0.01, 0.1, 1.0, 10.0, 100.0, 500.0)
# Wide enough to hold every optimum of Table 8 in document units: Bi-λMART's 300-1530
# leaves, and its minimum of 1790-7150 pairs per leaf (94-376 documents at n = 20).
NUM_LEAVES = (7, 2048)
MIN_DATA_IN_LEAF = (5, 10_000)
TUNED = ("learning_rate", "num_leaves", "min_data_in_leaf", "min_sum_hessian_in_leaf")
#: Recorded in every stage-2 study's setup, so a study searched in another space (pair
#: models in LightGBM's units, before this conversion) is refused rather than resumed.
SEARCH_UNITS = "document"


def suggest(trial) -> dict[str, Any]:
    """One point of the search space (the four parameters of §5.4) in document units, the
    same for every model, drawn through ``trial`` (an ``optuna.Trial``)."""
    return {
        "learning_rate": trial.suggest_categorical("learning_rate", LEARNING_RATES),
        "num_leaves": trial.suggest_int("num_leaves", *NUM_LEAVES, log=True),
        "min_data_in_leaf": trial.suggest_int("min_data_in_leaf", *MIN_DATA_IN_LEAF, log=True),
        "min_sum_hessian_in_leaf": trial.suggest_categorical("min_sum_hessian_in_leaf", MIN_HESSIANS),
    }


def pairs_per_document(offsets) -> int:
    """``n - 1`` for the conversion (module docstring): the pair rows each document starts,
    at the median list length of the queries ``offsets`` delimit."""
    sizes = np.diff(np.asarray(offsets, dtype=np.int64))
    sizes = sizes[sizes > 1]
    if sizes.size == 0:
        raise ValueError("pairs_per_document: no query has two documents, so there are no pairs")
    return max(1, int(np.median(sizes)) - 1)


def lightgbm_point(point: Mapping[str, Any], pairs_per_doc: int | None) -> dict[str, Any]:
    """LightGBM's parameters for a point drawn in document units: unchanged for a model
    over documents (``pairs_per_doc=None``), converted for one over ordered pairs (module
    docstring). Other keys pass through."""
    out = dict(point)
    if pairs_per_doc is None:
        return out
    k = int(pairs_per_doc)
    if k < 1:
        raise ValueError(f"pairs_per_doc must be >= 1, got {pairs_per_doc}")
    if "learning_rate" in out:
        out["learning_rate"] = float(out["learning_rate"]) / k
    if "min_data_in_leaf" in out:
        out["min_data_in_leaf"] = int(out["min_data_in_leaf"]) * k
    if "min_sum_hessian_in_leaf" in out:
        out["min_sum_hessian_in_leaf"] = float(out["min_sum_hessian_in_leaf"]) * 2.0 / k
    return out
