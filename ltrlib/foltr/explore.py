"""Interactive view of the FOLTR curves (notebook 07): dropdowns over setting and remedy
around `ltrlib.plots.foltr_curves`; batch runs call the plot function directly."""

from __future__ import annotations


def curve_explorer(summary):
    """Dropdowns over ``setting`` and ``remedy`` of a `summarise_offline` frame."""
    import ipywidgets as w
    import matplotlib.pyplot as plt

    from ltrlib import plots

    def show(setting: str, remedy: str):
        part = summary[(summary.setting == setting) & (summary.remedy == remedy)]
        if part.empty:
            print(f"no runs for {setting} with remedy {remedy}")
            return
        plt.show(plots.foltr_curves(part, row="ranker", col="click", hue="data", style="",
                                    title=f"{setting} · {remedy}"))

    return w.interact(show, setting=w.Dropdown(options=list(summary.setting.unique()), description="setting"),
                      remedy=w.Dropdown(options=list(summary.remedy.unique()), description="remedy"))
