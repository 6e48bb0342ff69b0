"""Interactive wrappers: plain functions first, widgets only around them.

Each function here is what a notebook calls under ``if interactive:``; the batch runner
calls the plain plot function instead, so both paths stay tested.
"""

from __future__ import annotations

from ltrlib import plots
from ltrlib.data import overview
from ltrlib.data.dataset import Dataset


def feature_explorer(ds: Dataset):
    """A dropdown over features showing the chosen feature's values per relevance label."""
    import ipywidgets as w
    import matplotlib.pyplot as plt

    def show(feature: str):
        fig = plots.feature_by_label(overview.feature_by_label(ds, feature), feature)
        plt.show(fig)

    return w.interact(show, feature=w.Dropdown(options=list(ds.feature_names), description="feature"))
