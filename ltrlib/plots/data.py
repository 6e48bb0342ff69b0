"""Figures of the dataset overview (notebook 00; `ltrlib.data.overview` and
`ltrlib.noniid.calibration`)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns


def label_distribution(df: pd.DataFrame) -> plt.Figure:
    """Share of documents per relevance label and partition, on a log scale
    (`ltrlib.data.label_distribution`)."""
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    sns.barplot(data=df, x="label", y="share", hue="split", ax=ax)
    ax.set_yscale("log")
    ax.set(title="Relevance labels", xlabel="label", ylabel="share of documents (log)")
    fig.tight_layout()
    return fig


def per_query_counts(df: pd.DataFrame) -> plt.Figure:
    """Histograms of documents and of relevant documents per query
    (`ltrlib.data.per_query_counts`)."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.6))
    for ax, col, title in zip(axes, ("n_docs", "n_relevant"),
                              ("Documents per query", "Relevant documents per query")):
        bins = np.arange(0, df[col].max() + 2) if df[col].max() <= 60 else 40
        sns.histplot(data=df, x=col, hue="split", bins=bins, stat="density",
                     common_norm=False, element="step", ax=ax)
        ax.set(title=title, xlabel=col.replace("_", " "))
    fig.tight_layout()
    return fig


def category_shares(df: pd.DataFrame, split: str = "train") -> plt.Figure:
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
    """Share of zero values per feature, and the features counted by kind (constant, binary,
    few-valued, sparse, continuous; `ltrlib.data.feature_sparsity`)."""
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
    """One feature's values per relevance label, as box plots (`ltrlib.data.feature_by_label`)."""
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    sns.boxplot(data=df, x="label", y="value", ax=ax, showfliers=False)
    ax.set(title=f"Feature {feature} by relevance label", ylabel=feature or "value")
    fig.tight_layout()
    return fig


def calibration_table(df: pd.DataFrame | None) -> plt.Figure | None:
    """Each data-level target's miss in units of its tolerance: inside the band is met.
    None for no table (`ltrlib.noniid.calibration_tables` where the targets do not apply)."""
    if df is None:
        return None
    d = df[df.tolerance > 0].copy()
    d["miss"] = (d.achieved - d.paper) / d.tolerance
    fig, ax = plt.subplots(figsize=(7.5, 0.32 * len(d) + 1.2))
    ax.axvspan(-1, 1, color="tab:green", alpha=0.12, label="within tolerance")
    colors = np.where(d.miss.abs() <= 1, "tab:green", "tab:red")
    ax.scatter(d.miss.clip(-4, 4), np.arange(len(d)), c=colors, zorder=3)
    ax.set_yticks(np.arange(len(d)), d.statistic)
    ax.invert_yaxis()
    ax.axvline(0, color="0.3", lw=0.8)
    ax.set(xlim=(-4.2, 4.2), title="Synthetic twin against Istella-S's data statistics",
           xlabel="(twin - paper) / tolerance   (clipped at ±4)")
    ax.legend(loc="lower right", fontsize="small")
    fig.tight_layout()
    return fig

