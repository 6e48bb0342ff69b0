"""Plots: each takes the tidy frame of the analysis function with the same name and
returns a matplotlib `Figure`, so notebooks can display it and `Reporter` can save it.

A name here and in an analysis subpackage is such a pair, the table and the figure of it
(one name, one meaning: the analysis's frame, drawn here). The pairs, which
tests/test_plots.py holds to the packages' public names, so that a new shared name is a
declared pair or a renamed plot:

- ``ltrlib.data``: ``feature_by_label``, ``feature_sparsity``, ``label_distribution``,
  ``per_query_counts``;
- ``ltrlib.noniid``: ``calibration_table``, ``dominance_statistics``, ``merge_pool_frame``,
  ``relevant_vs_query_categories``, ``strategy_query_counts``;
- ``ltrlib.train``: ``tuning_history``, ``validation_curves``;
- ``ltrlib.merge``: ``alpha_sweep``;
- ``ltrlib.neural``: ``ranker_means``.

One module per subpackage whose analyses it draws, all re-exported here so notebooks
call ``plots.<figure>(...)``:

- ``data``: the dataset overview and the calibration of the synthetic twin (notebook 00);
- ``noniid``: query categories, Type 1 strategies and D_merge pools (notebooks 01-02);
- ``train``: validation curves, tuning histories, backend and pair-method comparisons
  (notebooks 03, 06, 08);
- ``merge``: the linear merge's alpha sweep, stacking importance, per-category deltas
  (notebooks 04-05);
- ``neural``: the networks beside the trees (notebook 06_neural_competitors), and across a
  neural study's seeds (`ltrlib.studies.neural`);
- ``foltr``: federated online LTR curves and online gaps (notebook 07);
- ``clicklog``: learning from biased clicks (notebook 09);
- ``fidelity``: the fidelity ledger's verdicts and Effect Ratios (`ltrlib.fidelity`).

``explore`` holds the interactive explorers (ipywidgets around these plot functions,
``plots.<name>_explorer``); each imports ipywidgets when called, so plotting never needs
it. ``_style`` sets the shared seaborn theme on import.
"""

from ltrlib.plots import _style  # noqa: F401  (the shared theme, before any figure is drawn)
from ltrlib.plots.clicklog import click_bias_curves, propensity_estimates
from ltrlib.plots.data import (
    calibration_table,
    category_shares,
    feature_by_label,
    feature_sparsity,
    label_distribution,
    per_query_counts,
)
from ltrlib.plots.explore import (
    alpha_explorer,
    curve_explorer,
    feature_explorer,
    importance_explorer,
    strategy_explorer,
)
from ltrlib.plots.fidelity import effect_ratios, verdict_counts
from ltrlib.plots.foltr import foltr_curves, foltr_online_gaps, foltr_remedy_curves, foltr_setting_curves
from ltrlib.plots.merge import alpha_sweep, merge_category_deltas, stacking_importance
from ltrlib.plots.neural import networks_across_seeds, ranker_means
from ltrlib.plots.noniid import (
    dominance_statistics,
    merge_pool_frame,
    relevant_vs_query_categories,
    strategy_query_counts,
)
from ltrlib.plots.train import backend_comparison, pair_method_sizes, tuning_history, validation_curves

__all__ = [
    # explorers (ipywidgets)
    "feature_explorer", "strategy_explorer", "alpha_explorer", "importance_explorer", "curve_explorer",
    # data (notebook 00)
    "label_distribution", "per_query_counts", "category_shares", "feature_sparsity",
    "feature_by_label", "calibration_table",
    # noniid (notebooks 01-02)
    "relevant_vs_query_categories", "dominance_statistics", "strategy_query_counts", "merge_pool_frame",
    # train (notebooks 03, 06, 08)
    "validation_curves", "tuning_history", "backend_comparison", "pair_method_sizes",
    # merge (notebooks 04-05)
    "alpha_sweep", "stacking_importance", "merge_category_deltas",
    # neural (notebook 06_neural_competitors; a neural study's seeds)
    "ranker_means", "networks_across_seeds",
    # foltr (notebook 07)
    "foltr_curves", "foltr_online_gaps", "foltr_remedy_curves", "foltr_setting_curves",
    # clicklog (notebook 09)
    "click_bias_curves", "propensity_estimates",
    # fidelity (the ledger)
    "verdict_counts", "effect_ratios",
]
