"""What every figure of `ltrlib.plots` shares: the seaborn theme, set once when the package
is imported, and the axis helpers that more than one plot module uses."""

from __future__ import annotations

import matplotlib.ticker
import pandas as pd
import seaborn as sns


sns.set_theme(style="whitegrid", context="notebook")


def tick_log_x_at_measured(ax, values) -> None:
    """Tick a log x axis at the measured ``values`` only.

    Its own minor labels (2x10^3, 3x10^3, ...) overlap on the narrow panels of the
    training-set-size and logged-session sweeps."""
    sizes = sorted(pd.unique(values))
    ax.set_xticks(sizes, [f"{int(v):,}" for v in sizes], fontsize=8)
    ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
