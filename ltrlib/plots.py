"""Plots: each takes the tidy frame of the analysis function with the same name and
returns a matplotlib `Figure`, so notebooks can display it and `Reporter` can save it."""

from __future__ import annotations


import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns


sns.set_theme(style="whitegrid", context="notebook")


def label_distribution(df: pd.DataFrame) -> plt.Figure:
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    sns.barplot(data=df, x="label", y="share", hue="split", ax=ax)
    ax.set_yscale("log")
    ax.set(title="Relevance labels", xlabel="label", ylabel="share of documents (log)")
    fig.tight_layout()
    return fig


def per_query_counts(df: pd.DataFrame) -> plt.Figure:
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.6))
    for ax, col, title in zip(axes, ("n_docs", "n_relevant"),
                              ("Documents per query", "Relevant documents per query")):
        bins = np.arange(0, df[col].max() + 2) if df[col].max() <= 60 else 40
        sns.histplot(data=df, x=col, hue="split", bins=bins, stat="density",
                     common_norm=False, element="step", ax=ax)
        ax.set(title=title, xlabel=col.replace("_", " "))
    fig.tight_layout()
    return fig


def category_distribution(df: pd.DataFrame, split: str = "train") -> plt.Figure:
    """All documents next to relevant documents per category (cf. Figure 2 of the non-IID paper)."""
    fig, ax = plt.subplots(figsize=(9, 3.6))
    if df.empty:
        ax.text(0.5, 0.5, "no category feature in this dataset", ha="center", va="center")
        ax.set_axis_off()
        return fig
    part = df[df.split == split] if split in set(df.split) else df
    long = part.melt(id_vars="category", value_vars=["share_documents", "share_relevant"],
                     var_name="documents", value_name="share")
    long["documents"] = long["documents"].map({"share_documents": "all", "share_relevant": "relevant"})
    sns.barplot(data=long, x="category", y="share", hue="documents", ax=ax)
    ax.set(title=f"Category distribution ({part.split.iloc[0]})", ylabel="share")
    fig.tight_layout()
    return fig


def feature_sparsity(df: pd.DataFrame) -> plt.Figure:
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.6))
    sns.histplot(df.zero_share, bins=20, ax=axes[0])
    axes[0].set(title="Share of zeros per feature", xlabel="share of zero values", ylabel="features")
    order = ["constant", "binary", "few-valued", "sparse", "continuous"]
    counts = df.kind.value_counts().reindex(order, fill_value=0)
    axes[1].bar(counts.index, counts.values, color=sns.color_palette()[1])
    axes[1].set(title="Features by kind", ylabel="features")
    fig.tight_layout()
    return fig


def feature_by_label(df: pd.DataFrame, feature: str = "") -> plt.Figure:
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    sns.boxplot(data=df, x="label", y="value", ax=ax, showfliers=False)
    ax.set(title=f"Feature {feature} by relevance label", ylabel=feature or "value")
    fig.tight_layout()
    return fig


# ---- non-IID (notebooks 01-02)


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
    """D_merge selection: pool queries by relevant documents of client 1's category, per client."""
    splits = list(dict.fromkeys(df.split))
    fig, axes = plt.subplots(1, len(splits), figsize=(4.2 * len(splits), 3.6), squeeze=False)
    for ax, name in zip(axes[0], splits):
        part = df[df.split == name]
        counts = part.groupby(["key", "client"]).size().rename("queries").reset_index()
        sns.barplot(data=counts, x="key", y="queries", hue="client", ax=ax,
                    hue_order=sorted(part.client.unique()))
        ax.set(title=f"{name}: D_merge pool", xlabel="relevant documents of client 1's category")
        ax.tick_params(axis="x", labelsize=8)
    fig.tight_layout()
    return fig
