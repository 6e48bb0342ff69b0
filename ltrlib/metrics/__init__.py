"""Ranking metrics (NDCG, MAP, MRR) over flat query-offset arrays, and significance tests.

Conventions (gain, ties, queries without relevant documents) are documented in
`ltrlib.metrics.ranking`. The compiled gain, discount and DCG kernels behind every NDCG in
ltrlib (metrics, PDGD, the LB objective) live in `ltrlib.metrics.kernels`, for numba code
to call. `ltrlib.metrics.keys` spells the keys of a run's ``metrics.json``.
"""

from ltrlib.metrics.kernels import discount, gain
from ltrlib.metrics.keys import flatten_metrics
from ltrlib.metrics.ranking import (
    DEFAULT_METRICS,
    average_precision,
    evaluate,
    ideal_dcg,
    ndcg,
    parse_metric,
    reciprocal_rank,
)
from ltrlib.metrics.comparison import compare
from ltrlib.metrics.significance import MarkedTable, PairedTTest, paired_ttest

__all__ = [
    "DEFAULT_METRICS", "average_precision", "evaluate", "ideal_dcg", "ndcg", "parse_metric", "reciprocal_rank",
    "MarkedTable", "PairedTTest", "compare", "paired_ttest", "discount", "gain", "flatten_metrics",
]
