"""Click logs with displayed positions, and learning to rank from them (notebook 09):
simulated PBM click logs from a logging ranker, unbiased LambdaMART (XGBoost) and
LightGBM's position-bias model against the biased baseline and a true-label ceiling."""

from ltrlib.clicklog import experiment, logs
from ltrlib.clicklog.experiment import (
    CLICK_MODELS, LOGGING_SETTINGS, ClickBiasResult, click_bias_experiment, curve_table,
    click_bias_metrics, logging_ranker, propensity_errors,
)
from ltrlib.clicklog.logs import ClickLog, shown_lists, simulate_click_log

# Each module lists its public names once; the package hands all of them on.
__all__ = [*experiment.__all__, *logs.__all__]
