"""Figures of model merging (notebooks 04-05; `ltrlib.merge`): the linear merge's alpha
sweep, the stacking meta-models' feature importance and the per-category deltas."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Patch
import pandas as pd
import seaborn as sns


def selected_alpha_for(selected_alpha, split=None, client=None):
    """The selected alpha of one (split, client) merge, as `alpha_sweep` and the alpha
    explorer mark it: ``selected_alpha`` itself when it is a number (or None), else the
    ``alpha`` of the matching row of a choices frame (``split, client, alpha``; the
    ``choices`` of `ltrlib.merge.linear_experiment`), None when no row matches."""
    if selected_alpha is None or isinstance(selected_alpha, (int, float, np.floating)):
        return selected_alpha
    rows = selected_alpha
    if split is not None and "split" in rows:
        rows = rows[rows.split == split]
    if client is not None and "client" in rows:
        rows = rows[rows.client == client]
    return float(rows.alpha.iloc[0]) if len(rows) else None


def alpha_sweep(sweep: pd.DataFrame, current_alpha: float | None = None,
                selected_alpha=None, metric: str = "ndcg@10") -> plt.Figure:
    """``metric`` of the merged model against alpha (the weight of M2), one line per test set
    (D_merge, test); the selected alpha in red, the current one (a slider) dashed grey.

    ``sweep``: `ltrlib.merge.alpha_sweep` output, optionally with ``split``/``client``
    columns: then one panel per (split, client), rows splits, columns clients, and
    ``selected_alpha`` may be the choices frame (``split, client, alpha``).
    """
    part = sweep[sweep.metric == metric]
    if part.empty:
        raise ValueError(f"sweep has no rows for metric {metric!r} (has {sorted(sweep.metric.unique())})")
    splits = list(pd.unique(part.split)) if "split" in part else [None]
    clients = list(pd.unique(part.client)) if "client" in part else [None]
    single = len(splits) * len(clients) == 1  # the explorer's one panel: large enough to read
    fig, axes = plt.subplots(len(splits), len(clients), squeeze=False, sharex=True,
                             figsize=(8, 4.6) if single else (4.6 * len(clients) + 0.8, 2.9 * len(splits) + 0.4))
    palette = dict(zip(sorted(part.test_set.unique()), sns.color_palette()))
    for r, split in enumerate(splits):
        for c, client in enumerate(clients):
            ax = axes[r, c]
            panel = part
            if split is not None:
                panel = panel[panel.split == split]
            if client is not None:
                panel = panel[panel.client == client]
            for ds_name, g in panel.groupby("test_set", sort=True):
                ax.plot(g.alpha, g.value, label=ds_name, color=palette[ds_name], lw=1.6)
            sel = selected_alpha_for(selected_alpha, split, client)
            if sel is not None:
                ax.axvline(sel, color="tab:red", lw=1.4, label=f"selected α={sel:.2f}")
            if current_alpha is not None:
                ax.axvline(current_alpha, color="0.4", ls="--", lw=1.2,
                           label=f"current α={current_alpha:.2f}")
            title = " · ".join(str(x) for x in (split, client) if x is not None)
            ax.set(title=title or None, xlim=(0, 1), ylabel=metric if c == 0 else "")
            if r == len(splits) - 1:
                ax.set_xlabel("α (weight of M2)")
            ax.legend(fontsize=10 if single else 7, loc="best")
    fig.tight_layout()
    return fig


def stacking_importance(importance: pd.DataFrame, top_k: int | None = None) -> plt.Figure:
    """Figure 3: each meta-model's feature importance by gain and by split count.

    ``importance``: `ltrlib.merge.feature_importance` output. Bars are shares of the
    model's total; the local models' score features are highlighted in red.
    """
    models = list(pd.unique(importance.model))
    if not models:  # no meta-model was learnt: every client's D_merge was empty
        fig, ax = plt.subplots(figsize=(5.8, 1.6))
        ax.text(0.5, 0.5, "no meta-model: every client's D_merge is empty", ha="center", va="center")
        ax.set_axis_off()
        return fig
    kinds = [k for k in ("gain", "split") if k in set(importance.kind)]
    n_rows = max(int(importance.groupby(["model", "kind"]).size().max()), 1)
    fig, axes = plt.subplots(len(models), len(kinds), squeeze=False,
                             figsize=(5.8 * len(kinds), 0.26 * n_rows * len(models) + 1.2 * len(models) + 0.5))
    base, hi = sns.color_palette()[0], "tab:red"
    for r, model in enumerate(models):
        for c, kind in enumerate(kinds):
            ax = axes[r, c]
            d = importance[(importance.model == model) & (importance.kind == kind)]
            if top_k is not None:
                d = d[(d["rank"] <= top_k) | d.is_score]
            d = d.sort_values("rank")
            labels = [f"{f} (#{k})" for f, k in zip(d.feature, d["rank"])]
            ax.barh(labels, d.share, color=[hi if s else base for s in d.is_score])
            if not (d.value > 0).any():
                ax.text(0.5, 0.5, "no splits: a constant model", transform=ax.transAxes,
                        ha="center", va="center", color="tab:red")
            ax.invert_yaxis()
            ax.tick_params(axis="y", labelsize=9)
            ax.set(title=f"{model}: {kind}", xlabel=f"share of total {kind}")
    fig.legend(handles=[Patch(color=hi, label="local model score (s₁, s₂)"), Patch(color=base, label="document feature")],
               loc="upper center", ncol=2, frameon=False, bbox_to_anchor=(0.5, 1.0))
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.5 / fig.get_figheight()))
    return fig


def merge_category_deltas(deltas: pd.DataFrame, baseline: str | None = None) -> plt.Figure:
    """Where merging helps and hurts: mean per-query delta (model minus ``baseline``) per
    query category, one panel per split, one bar colour per merged model; the number of
    queries per category is printed under the axis."""
    d = deltas if baseline is None else deltas[deltas.baseline == baseline]
    if d.empty:
        fig, ax = plt.subplots(figsize=(6, 2))
        ax.text(0.5, 0.5, f"no query category with enough queries (baseline {baseline})",
                ha="center", va="center")
        ax.set_axis_off()
        return fig
    splits = list(pd.unique(d.split))
    fig, axes = plt.subplots(len(splits), 1, squeeze=False, figsize=(10, 2.9 * len(splits) + 0.4))
    for ax, split in zip(axes[:, 0], splits):
        part = d[d.split == split].copy()
        part["category"] = part.category.astype(int).astype(str).replace({"-1": "none"})
        order = sorted(part.category.unique(), key=lambda s: (s == "none", int(s) if s != "none" else 0))
        counts = part.drop_duplicates("category").set_index("category").n_queries.reindex(order)
        sns.barplot(data=part, x="category", y="mean_delta", hue="model", order=order, ax=ax)
        ax.axhline(0, color="0.3", lw=0.8)
        ax.set_xticks(range(len(order)))
        ax.set_xticklabels([f"{c}\n{n}q" for c, n in zip(order, counts)], fontsize=7)
        base = baseline or ", ".join(pd.unique(part.baseline))
        ax.set(title=f"{split}: per-query change of {'ndcg@10'} vs {base}, by query category",
               xlabel="query category (queries)", ylabel="mean delta")
        # Beside the axes, never over the bars (it covered Split3's).
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.005, 1), borderaxespad=0, title="model")
    fig.tight_layout()
    return fig

