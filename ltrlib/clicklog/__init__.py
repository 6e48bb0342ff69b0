"""Click logs with displayed positions, and learning to rank from them (notebook 09):
simulated PBM click logs from a logging ranker, unbiased LambdaMART (XGBoost) and
LightGBM's position-bias model against the biased baseline and a true-label ceiling."""

from ltrlib.clicklog.experiment import (
    ClickBiasResult,
    click_bias_experiment,
    click_bias_metrics,
    curve_table,
    propensity_errors,
)
from ltrlib.clicklog.logs import ClickLog, simulate_click_log

__all__ = [
    "ClickBiasResult", "click_bias_experiment", "curve_table", "click_bias_metrics", "propensity_errors",
    "ClickLog", "simulate_click_log",
]
