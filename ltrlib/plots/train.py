"""Figures of model training (notebooks 03, 06 and 08; `ltrlib.train`): validation curves,
tuning histories, and the backend and pair-method comparisons."""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.ticker import MaxNLocator
import pandas as pd
import seaborn as sns

from ltrlib.plots._style import tick_log_x_at_measured


def validation_curves(df: pd.DataFrame) -> plt.Figure:
    """Validation NDCG@10 after each tree (`ltrlib.train.validation_curves`), one panel per
    split, one line per model; a dot marks the early-stopping optimum."""
    splits = list(pd.unique(df.split)) or [""]
    fig, axes = plt.subplots(1, len(splits), figsize=(4.2 * len(splits), 3.4), squeeze=False,
                             sharey=True)
    for ax, split in zip(axes[0], splits):
        part = df[df.split == split]
        for i, (model, g) in enumerate(part.groupby("model", sort=False)):
            color = sns.color_palette()[i % 10]
            ax.plot(g.tree, g.value, color=color, label=model, lw=1.2)
            best = g[g.best]
            ax.scatter(best.tree, best.value, color=color, s=18, zorder=3)
        ax.set(title=split or "validation", xlabel="trees", xscale="log")
        ax.legend(fontsize=8)
    axes[0][0].set_ylabel("validation NDCG@10")
    fig.tight_layout()
    return fig


def tuning_history(df: pd.DataFrame) -> plt.Figure:
    """Optuna trials (`ltrlib.train.tuning_history`): each trial's validation NDCG@10 (dots)
    and the best so far (line), one panel per split, one colour per model."""
    splits = list(pd.unique(df.split))
    fig, axes = plt.subplots(1, len(splits), figsize=(4.2 * len(splits), 3.4), squeeze=False)
    for ax, split in zip(axes[0], splits):
        part = df[df.split == split]
        for i, (model, g) in enumerate(part.groupby("model", sort=False)):
            color = sns.color_palette()[i % 10]
            ax.scatter(g.trial + 1, g.value, color=color, s=14, alpha=0.6)
            ax.step(g.trial + 1, g.best_so_far, where="post", color=color, label=model)
        ax.set(title=split, xlabel="trial")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # trials are counted, not measured
        ax.legend(fontsize=8)
    axes[0][0].set_ylabel("validation NDCG@10")
    fig.tight_layout()
    return fig


def backend_comparison(numeric: pd.DataFrame) -> plt.Figure:
    """Mean test metric per model (`ltrlib.xgboost_tutorial.comparison.comparison_numeric`), one panel
    per metric, plus training seconds; hatched bars differ from the baseline (p < 0.05)."""
    metrics = list(pd.unique(numeric.metric))
    models = list(pd.unique(numeric.model))
    colors = [sns.color_palette()[i % 10] for i in range(len(models))]
    fig, axes = plt.subplots(1, len(metrics) + 1, figsize=(3.3 * (len(metrics) + 1), 3.6))
    for ax, metric in zip(axes, metrics):
        part = numeric[numeric.metric == metric].set_index("model").loc[models]
        bars = ax.barh(models, part["mean"], color=colors)
        for bar, p in zip(bars, part["p_value"]):
            if p < 0.05:
                bar.set_hatch("//")
        lo = float(part["mean"].min())
        ax.set(title=metric, xlim=(max(0.0, lo - 0.1), float(part["mean"].max()) + 0.02))
        ax.invert_yaxis()
    first = numeric.drop_duplicates("model").set_index("model").loc[models]
    axes[-1].barh(models, first["seconds"], color=colors)
    axes[-1].set(title="training seconds")
    axes[-1].invert_yaxis()
    for ax in axes[1:]:
        ax.set_yticklabels([])
    fig.tight_layout()
    return fig


def pair_method_sizes(summary: pd.DataFrame) -> plt.Figure:
    """XGBoost pair methods against training-set size (`pair_method_summary`): one panel per
    metric, test mean against training queries, one line per pair setting."""
    metrics = list(pd.unique(summary.metric))
    fig, axes = plt.subplots(1, len(metrics), figsize=(3.4 * len(metrics), 3.2), squeeze=False)
    for ax, metric in zip(axes[0], metrics):
        part = summary[summary.metric == metric]
        for i, (setting, g) in enumerate(part.groupby("setting", sort=False)):
            g = g.sort_values("train_queries")
            ax.plot(g.train_queries, g["mean"], marker="o", color=sns.color_palette()[i % 10], label=setting)
        ax.set(title=metric, xlabel="training queries", xscale="log")
        tick_log_x_at_measured(ax, part.train_queries)
    axes[0][0].set_ylabel("test mean")
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    return fig

