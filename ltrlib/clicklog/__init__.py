"""Click logs with displayed positions, and learning to rank from them (notebook 09):
simulated PBM click logs from a logging ranker, unbiased LambdaMART (XGBoost) and
LightGBM's position-bias model against the biased baseline and a true-label ceiling."""

from ltrlib.clicklog.experiment import (
    CLICK_MODELS, ClickBiasResult, click_bias_experiment, curve_table, headline_metrics,
    logging_ranker, propensity_errors, settings_for_scale,
)
from ltrlib.clicklog.logs import ClickLog, shown_lists, simulate_click_log

__all__ = [
    "CLICK_MODELS", "ClickBiasResult", "ClickLog", "click_bias_experiment", "curve_table",
    "headline_metrics", "logging_ranker", "propensity_errors", "shown_lists",
    "settings_for_scale", "simulate_click_log",
]
