"""Figures of learning from biased click logs (notebook 09; `ltrlib.clicklog`)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from ltrlib.plots._style import tick_log_x_at_measured


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
            ax.plot(g.sessions, g.value, marker="o", ms=3, color=palette[model], label=model)
        for model, g in fixed.groupby("model", sort=False):
            ax.axhline(float(g.value.mean()), color=palette[model], ls="--", lw=1, label=model)
        ax.set(title=f"η = {eta:g}", xlabel="logged sessions", xscale="log")
        tick_log_x_at_measured(ax, part.sessions)
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

