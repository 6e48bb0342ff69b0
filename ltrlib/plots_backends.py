"""Plots of notebooks 08 (backends) and 09 (click bias): each takes the tidy frame of the
analysis function with the same name and returns a matplotlib `Figure`.

Kept beside `ltrlib.plots` (same theme, same contract) rather than inside it so that the
modules of separate workstreams change separate files.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import matplotlib.ticker
import pandas as pd
import seaborn as sns

import ltrlib.plots  # noqa: F401  (sets the shared seaborn theme)


# ---- backends and click bias (notebooks 08, 09; ltrlib.train.comparison, ltrlib.clicklog) ----


def backend_comparison(numeric: pd.DataFrame) -> plt.Figure:
    """Mean test metric per model (`ltrlib.train.comparison.comparison_numeric`), one panel
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


def _tick_at(ax, values) -> None:
    # A log x axis ticked at the measured sizes only: its own minor labels (2x10^3, 3x10^3,
    # ...) overlap on these narrow panels.
    sizes = sorted(pd.unique(values))
    ax.set_xticks(sizes, [f"{int(v):,}" for v in sizes], fontsize=8)
    ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())


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
        _tick_at(ax, part.train_queries)
    axes[0][0].set_ylabel("test mean")
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    return fig


def click_bias_curves(curves: pd.DataFrame) -> plt.Figure:
    """Test NDCG@10 against logged sessions (`ltrlib.clicklog.click_bias_experiment`), one
    panel per eta, one line per model; horizontal lines for models that use no clicks."""
    etas = sorted(pd.unique(curves.eta.dropna()))
    fig, axes = plt.subplots(1, len(etas), figsize=(3.2 * len(etas), 3.3), squeeze=False, sharey=True)
    models = [m for m in pd.unique(curves.model)]
    palette = {m: sns.color_palette()[i % 10] for i, m in enumerate(models)}
    fixed = curves[curves.sessions.isna()]
    for ax, eta in zip(axes[0], etas):
        part = curves[(curves.eta == eta) & curves.sessions.notna()]
        for model, g in part.groupby("model", sort=False):
            g = g.sort_values("sessions")
            ax.plot(g.sessions, g.ndcg10, marker="o", ms=3, color=palette[model], label=model)
        for model, g in fixed.groupby("model", sort=False):
            ax.axhline(float(g.ndcg10.mean()), color=palette[model], ls="--", lw=1, label=model)
        ax.set(title=f"η = {eta:g}", xlabel="logged sessions", xscale="log")
        _tick_at(ax, part.sessions)
    axes[0][0].set_ylabel("test NDCG@10")
    axes[0][-1].legend(fontsize=7)
    fig.tight_layout()
    return fig


def propensity_estimates(props: pd.DataFrame) -> plt.Figure:
    """XGBoost's estimated position propensities (t+, relative to rank 1) against the true
    PBM examination ratio 1/rank^eta, one colour per eta."""
    fig, ax = plt.subplots(figsize=(4.8, 3.6))
    for i, (eta, g) in enumerate(props.groupby("eta", sort=True)):
        color = sns.color_palette()[i % 10]
        ax.plot(g["rank"], g["true"], color=color, ls="--", lw=1)
        # A position without any click gets an estimate of 0, which a log axis cannot show.
        est = g["estimated"].where(g["estimated"] > 0)
        ax.plot(g["rank"], est, color=color, marker="o", ms=3, label=f"η = {eta:g}")
    ax.set(xlabel="displayed rank", ylabel="propensity / propensity at rank 1", yscale="log",
           title="estimated (dots) vs true 1/rank^η (dashed)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
