"""Ranking metrics (NDCG, MAP, MRR) over flat query-offset arrays, and significance tests.

Conventions (gain, ties, queries without relevant documents) are documented in
`ltrlib.metrics.ranking`. The compiled gain, discount and DCG kernels behind every NDCG in
ltrlib (metrics, PDGD, the LB objective) live in `ltrlib.metrics.kernels`, for numba code
to call. `ltrlib.metrics.keys` spells the keys of a run's ``metrics.json``.
"""

from ltrlib.metrics import keys, kernels, ranking, significance
from ltrlib.metrics.keys import flatten_metrics, metric_key_part
from ltrlib.metrics.kernels import (
    dcg_term,
    discount,
    gain,
    query_dcg,
    query_ideal_dcg,
    sorted_ideal_dcg,
)
from ltrlib.metrics.ranking import (
    DEFAULT_METRICS,
    NO_RELEVANT_OPTIONS,
    MetricSpec,
    average_precision,
    check_gain_labels,
    evaluate,
    ideal_dcg,
    ndcg,
    parse_metric,
    reciprocal_rank,
)
from ltrlib.metrics.significance import (
    PairedTTest,
    compare,
    compare_tidy,
    mark_significance,
    paired_ttest,
    parse_marked,
    significance_table,
)

# Each module lists its public names once; the package hands all of them on.
__all__ = [*ranking.__all__, *significance.__all__, *kernels.__all__, *keys.__all__]
