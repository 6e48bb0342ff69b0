"""The interactive explorers: each wraps one plot function of `ltrlib.plots` in ipywidgets.

Each takes the notebook's ``interactive`` flag. Interactively it returns its widget (not yet
on screen); in a batch run it returns its plain face instead: its first view as a figure
(or a table), or None where a batch run shows nothing more. A notebook hands either to
`ltrlib.report.Reporter.show`, which writes a figure and displays the rest, so a cell stays
one call and one display and both paths stay tested. They live together here, beside the
plot modules they drive, and call only public functions; ipywidgets is imported inside each
explorer, after the batch face returns, so that plotting never needs it.
"""

from __future__ import annotations

import pandas as pd

from ltrlib.data import overview
from ltrlib.data.dataset import Dataset
from ltrlib.merge.linear import sweep_at
from ltrlib.plots.data import feature_by_label
from ltrlib.plots.foltr import foltr_curves
from ltrlib.plots.merge import alpha_sweep, selected_alpha_for, stacking_importance
from ltrlib.plots.noniid import strategy_query_counts


# ---- dataset overview (notebook 00)


def feature_explorer(ds: Dataset, interactive: bool = True):
    """A dropdown over features showing the chosen feature's values per relevance label.

    The features are listed by absolute Spearman correlation with the label, strongest
    first and shown first, each with its correlation ("f12  ρ=+0.41"); typing a name in
    the open list jumps to it. Batch face: the first, most label-correlated, feature's
    figure (`ltrlib.plots.feature_by_label`)."""
    corr = overview.label_correlations(ds)
    if not interactive:
        return feature_by_label(overview.feature_by_label(ds, corr.index[0]), corr.index[0])
    import ipywidgets as w
    import matplotlib.pyplot as plt

    def show(feature: str):
        fig = feature_by_label(overview.feature_by_label(ds, feature), feature)
        plt.show(fig)

    options = [(f"{name}  ρ={rho:+.2f}", name) for name, rho in corr.items()]
    return w.interactive(show, feature=w.Dropdown(options=options, value=corr.index[0],
                                                  description="feature"))


# ---- query categories (notebook 01)


def strategy_explorer(counts: pd.DataFrame, category: int | None = None, interactive: bool = True):
    """A dropdown over categories showing that category's DS1 / DS2' query counts, from
    ``category`` (the first category when None or absent).

    ``counts`` is the frame of `ltrlib.noniid.splits.strategy_query_counts`. Batch face:
    ``ltrlib.plots.strategy_query_counts(counts, category)``.
    """
    if not interactive:
        return strategy_query_counts(counts, category)
    import ipywidgets as w
    import matplotlib.pyplot as plt
    from IPython.display import display

    def show(category: int):
        display(counts[counts.category == category]
                .pivot(index="strategy", columns="split", values="queries"))
        plt.show(strategy_query_counts(counts, category))

    cats = sorted(counts.category.unique().tolist())
    start = category if category in cats else cats[0]
    return w.interactive(show, category=w.Dropdown(options=cats, value=start, description="category"))


# ---- merging (notebooks 04-05)


def alpha_explorer(sweep, selected_alpha, metric: str = "ndcg@10", interactive: bool = True):
    """A slider over alpha (the weight of M2) for one client's linear merge.

    Shows `plots.alpha_sweep` (``metric`` on D_merge and on the test set against alpha,
    the selected and the current alpha marked) and the metric table of the current alpha
    (`ltrlib.merge.linear.sweep_at`). ``sweep``: one client's `alpha_sweep` frame; when it
    holds several (split, client) pairs, a dropdown picks one and ``selected_alpha`` is
    the choices frame (``split, client, alpha``).

    Returns the widget box; ``box.slider``, ``box.pair`` (dropdown or None) and
    ``box.state`` (``alpha``, ``figure``, ``table`` of the last redraw) let tests drive it.
    Batch face: the same two views of the first merge (the choices frame's first row) at its
    selected alpha, `plots.alpha_sweep` and the metric table.
    """
    has_pairs = {"split", "client"} <= set(sweep.columns)
    pairs = list(dict.fromkeys(zip(sweep.split, sweep.client))) if has_pairs else [None]
    if not interactive:
        pair = pairs[0]
        if has_pairs and isinstance(selected_alpha, pd.DataFrame):  # the choices' first merge
            pair = (selected_alpha.split.iloc[0], selected_alpha.client.iloc[0])
        part = sweep if pair is None else sweep[(sweep.split == pair[0]) & (sweep.client == pair[1])]
        sel = selected_alpha_for(selected_alpha, *(pair or ()))
        return alpha_sweep(part, current_alpha=sel, selected_alpha=sel, metric=metric), sweep_at(part, sel)
    import ipywidgets as w
    import matplotlib.pyplot as plt
    import numpy as np
    from IPython.display import clear_output, display

    pair_box = None
    if len(pairs) > 1:
        pair_box = w.Dropdown(options=[(f"{s} · {c}", (s, c)) for s, c in pairs], value=pairs[0],
                              description="merge")
    grid = np.sort(sweep.alpha.unique())
    step = float(np.min(np.diff(grid))) if grid.size > 1 else 0.01

    def current_frame():
        if pairs[0] is None:
            return sweep, selected_alpha
        s, c = pair_box.value if pair_box is not None else pairs[0]
        part = sweep[(sweep.split == s) & (sweep.client == c)]
        return part, selected_alpha_for(selected_alpha, s, c)

    _, sel0 = current_frame()
    slider = w.FloatSlider(value=float(sel0 if sel0 is not None else 0.5), min=float(grid[0]),
                           max=float(grid[-1]), step=step, readout_format=".2f",
                           description="α (M2)", continuous_update=False)
    fig_out, table_out = w.Output(), w.Output()
    state: dict = {}

    def update(change=None):
        part, sel = current_frame()
        alpha = float(grid[np.argmin(np.abs(grid - slider.value))])
        fig = alpha_sweep(part, current_alpha=alpha, selected_alpha=sel, metric=metric)
        table = sweep_at(part, alpha)
        state.update(alpha=alpha, selected=sel, figure=fig, table=table)
        with fig_out:
            clear_output(wait=True)
            display(fig)
        plt.close(fig)  # displayed as an image; keep pyplot's figure list from growing
        with table_out:
            clear_output(wait=True)
            display(table)

    def jump_to_selected(change=None):
        _, sel = current_frame()
        if sel is not None and not np.isclose(slider.value, sel):
            slider.value = float(sel)  # fires update through the slider's observer
        else:
            update()

    slider.observe(update, names="value")
    controls = [slider]
    if pair_box is not None:
        pair_box.observe(jump_to_selected, names="value")
        controls.insert(0, pair_box)
    update()
    box = w.VBox([w.HBox(controls), fig_out, table_out])
    box.slider, box.pair, box.state, box.update = slider, pair_box, state, update
    return box


def importance_explorer(importance, interactive: bool = True):
    """Figure 3 for one meta-model at a time: a dropdown over the meta-models of
    `ltrlib.merge.feature_importance` output and a slider over the number of features.
    Batch face: the table of the base models' score features (``is_score``), whose weight
    in each meta-model Figure 3 is about."""
    if not interactive:
        return importance[importance.is_score]
    import ipywidgets as w
    import matplotlib.pyplot as plt

    def show(model: str, top_k: int):
        plt.show(stacking_importance(importance[importance.model == model], top_k=top_k))

    models = list(importance.model.unique())
    # Start on a meta-model that splits at all: a constant one draws an empty chart.
    used = [m for m in models if (importance[importance.model == m].value > 0).any()]
    return w.interactive(show, model=w.Dropdown(options=models, value=(used or models)[0], description="model"),
                         top_k=w.IntSlider(value=15, min=3, max=40, step=1, description="features"))


# ---- federated online LTR (notebook 07)


def curve_explorer(summary: pd.DataFrame, interactive: bool = True):
    """Dropdowns over ``setting`` and ``remedy`` of a `ltrlib.foltr.summarise_offline` frame,
    drawing `ltrlib.plots.foltr_curves` for the chosen pair. No batch face (None): a batch
    run draws every pair's curves already (`ltrlib.plots.foltr_setting_curves`)."""
    if not interactive:
        return None
    import ipywidgets as w
    import matplotlib.pyplot as plt

    def show(setting: str, remedy: str):
        part = summary[(summary.setting == setting) & (summary.remedy == remedy)]
        if part.empty:
            print(f"no runs for {setting} with remedy {remedy}")
            return
        plt.show(foltr_curves(part, row="ranker", col="click", hue="data", style="",
                                    title=f"{setting} · {remedy}"))

    return w.interactive(show, setting=w.Dropdown(options=list(summary.setting.unique()), description="setting"),
                         remedy=w.Dropdown(options=list(summary.remedy.unique()), description="remedy"))
