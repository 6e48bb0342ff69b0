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
