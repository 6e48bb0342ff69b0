"""Non-IID learning to rank data (the non-IID paper, §3 and §5.2).

* :mod:`ltrlib.noniid.categories`: query categories from relevant documents (§3.1), the
  Figure 2 distributions and the dominance statistics of §5.2.
* :mod:`ltrlib.noniid.splits`: the DS1 / DS2' strategies, the paper's Split1-3 with their
  D_merge sets, Table 2, and the n-client generalisation.
* :mod:`ltrlib.noniid.calibration`: the synthetic twin's calibration on the paper's data
  statistics (``ltrlib calibrate`` runs its search; notebook 00 shows its table).
* :mod:`ltrlib.noniid.checks`: a notebook's category choice checked against the data before
  any work (`ltrlib run` refuses what the data cannot honour).
"""

from ltrlib.noniid.calibration import calibration_applies, calibration_table, calibration_tables, subset_table
from ltrlib.noniid.categories import (
    AUTO,
    STRATEGIES,
    assign_all,
    assign_query_categories,
    category_analysis_metrics,
    decided_by_summary,
    dominance_statistics,
    relevant_vs_query_categories,
    resolve_category,
)
from ltrlib.noniid.checks import check_category_choices
from ltrlib.noniid.splits import (
    PAPER_SPLITS,
    Client,
    NonIIDSplit,
    alternative_splits,
    initial_splits,
    load_paper_splits,
    load_split_data,
    make_clients,
    make_split,
    merge_pool_frame,
    merge_pools,
    merge_summary,
    paper_splits,
    paper_table2,
    parse_client_sets,
    split_metrics,
    client_statistics,
    splits_table,
    strategy_query_counts,
    table2,
    table2_wide,
)

__all__ = [
    "calibration_applies", "calibration_table", "calibration_tables", "subset_table", "AUTO", "STRATEGIES", "assign_all",
    "assign_query_categories", "category_analysis_metrics", "dominance_statistics", "relevant_vs_query_categories",
    "resolve_category", "Client", "NonIIDSplit", "alternative_splits", "initial_splits", "load_paper_splits",
    "load_split_data", "make_clients", "make_split", "paper_splits", "parse_client_sets", "table2", "table2_wide",
    "decided_by_summary", "strategy_query_counts", "PAPER_SPLITS", "merge_pool_frame", "merge_pools", "merge_summary",
    "paper_table2", "split_metrics", "client_statistics", "splits_table", "check_category_choices",
]
