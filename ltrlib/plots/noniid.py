"""Figures of the non-IID analyses (notebooks 01-02; `ltrlib.noniid.categories` and
`ltrlib.noniid.splits`)."""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.ticker import MaxNLocator
import pandas as pd
import seaborn as sns


def relevant_vs_query_categories(df: pd.DataFrame) -> plt.Figure:
    """Figure 2 of the non-IID paper: categories of (a) relevant documents, (b) queries."""
    dists = ["relevant documents", "queries"]
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.6), sharey=True)
    order = sorted(df.category.unique())
    for ax, dist, letter, color in zip(axes, dists, "ab", sns.color_palette()[:2]):
        part = df[df.distribution == dist].set_index("category").reindex(order)
        ax.bar([str(c) for c in order], part["share"].to_numpy(), color=color)
        ax.set(title=f"({letter}) {dist} (n = {int(part['count'].sum()):,})", xlabel="category",
               ylabel="share")
        ax.tick_params(axis="x", labelsize=8)
    fig.suptitle("Category distributions, training set")
    fig.tight_layout()
    return fig


def dominance_statistics(df: pd.DataFrame) -> plt.Figure:
    """Our share of queries per dominance group next to the paper's (printed and recomputed)."""
    rows = df[df.statistic.isin(["all_in_dominant", "tie", "lead_1_to_3", "lead_over_3"])]
    long = pd.concat([
        pd.DataFrame({"statistic": rows.statistic, "source": "ours", "share": rows["share"]}),
        pd.DataFrame({"statistic": rows.statistic, "source": "paper (printed %)",
                      "share": rows.paper_share_printed}),
        pd.DataFrame({"statistic": rows.statistic, "source": "paper (count / 19,245)",
                      "share": rows.paper_share_of_count}),
    ])
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    sns.barplot(data=long, x="statistic", y="share", hue="source", ax=ax)
    ax.set(title="How clearly the dominant category leads (training queries)", xlabel="",
           ylabel="share of queries")
    fig.tight_layout()
    return fig


def strategy_query_counts(df: pd.DataFrame, category: int | None = None) -> plt.Figure:
    """Queries in DS1 per strategy and in DS2', per partition, for one category."""
    if category is None:
        category = int(df.groupby("category").queries.sum().idxmax())
    part = df[df.category == category]
    fig, ax = plt.subplots(figsize=(7, 3.6))
    sns.barplot(data=part, x="strategy", y="queries", hue="split", ax=ax)
    ax.set(title=f"Category {category}: queries in DS1 by strategy, and in DS2'", xlabel="")
    fig.tight_layout()
    return fig


def merge_pool_frame(df: pd.DataFrame) -> plt.Figure:
    """D_merge selection: pool queries by relevant documents of client 1's category, per client.

    An empty pool (real data whose categories leave no query outside every client's training
    set) has no rows: the figure then says so instead of having no panel."""
    splits = list(dict.fromkeys(df.split))
    if not splits:
        fig, ax = plt.subplots(figsize=(4.2, 1.6))
        ax.text(0.5, 0.5, "the D_merge pool is empty: no query to draw", ha="center", va="center")
        ax.set_axis_off()
        return fig
    fig, axes = plt.subplots(1, len(splits), figsize=(4.2 * len(splits), 3.6), squeeze=False)
    for ax, name in zip(axes[0], splits):
        part = df[df.split == name]
        counts = part.groupby(["key", "client"]).size().rename("queries").reset_index()
        clients = sorted(c for c in part.client.unique() if c != "unused")
        palette = dict(zip(clients, sns.color_palette()), unused="0.7")
        sns.barplot(data=counts, x="key", y="queries", hue="client", ax=ax,
                    hue_order=clients + ["unused"], palette=palette)
        ax.set(title=f"{name}: D_merge pool", xlabel="relevant documents of client 1's category")
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # query counts
        ax.tick_params(axis="x", labelsize=8)
    fig.tight_layout()
    return fig

