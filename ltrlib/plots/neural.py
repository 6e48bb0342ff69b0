"""Figures of the Bi-LambdaMART paper's neural competitors (notebook 06_neural_competitors;
`ltrlib.neural`)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns


_LOSS_TITLES = {"lambdarank": "λRank loss", "softmax": "softmax loss"}


def _loss_panels(df: pd.DataFrame, rows: int, width: float, pad: float):
    """A figure of one panel per loss ``df`` holds (λRank first), ``width`` inches each and tall
    enough for ``rows`` models, sharing their x axis: ``(fig, [(ax, loss), ...], colours by
    kind)``, the networks' and the trees' colours."""
    losses = [loss for loss in ("lambdarank", "softmax") if loss in set(df.loss)] or [""]
    fig, axes = plt.subplots(1, len(losses), figsize=(width * len(losses), 0.4 * rows + pad), squeeze=False,
                             sharex=True)
    return fig, list(zip(axes[0], losses)), {"network": sns.color_palette()[0], "tree": sns.color_palette()[3]}


def ranker_means(df: pd.DataFrame, metric: str = "NDCG@5") -> plt.Figure:
    """Every network's and tree model's test ``metric`` minus the best network's of its loss,
    with the paired 95 % interval over queries (`ltrlib.neural.ranker_means`), one panel per
    loss, best at the top, networks and trees in two colours: a tree whose interval clears
    zero beats every network."""
    rows = int(df.groupby("loss").size().max()) if len(df) else 4  # models in the fuller panel
    fig, panels, colors = _loss_panels(df, rows, width=4.6, pad=1.4)
    for ax, loss in panels:
        part = df[df.loss == loss].sort_values("gap").reset_index(drop=True)
        ax.axvline(0, color="0.5", lw=0.8)
        for kind, color in colors.items():
            g = part[part.kind == kind]
            ax.errorbar(g.gap, g.index, xerr=[g.gap - g.gap_low, g.gap_high - g.gap], fmt="o", color=color,
                        label=f"{kind}s", capsize=2, lw=1)
        ax.set_yticks(list(part.index), part.model)
        best = part.best_network.iloc[0] if len(part) else ""
        ax.set(title=_LOSS_TITLES.get(loss, loss), xlabel=f"{metric} − {best}")
    panels[0][0].legend(fontsize=8, loc="lower right")
    fig.suptitle(f"Test {metric} minus the best network's, paired 95 % intervals over queries", fontsize=10)
    fig.tight_layout()
    return fig


def networks_across_seeds(df: pd.DataFrame, metric: str = "NDCG@5") -> plt.Figure:
    """A neural study's models across its seeds (``seed, model, loss, kind, gap, converged``,
    `ltrlib.studies.neural.networks_across_seeds`): each dot a seed's test ``metric`` minus
    that seed's best network of the same loss, one panel per loss, the best on average at the
    top, the seeds a little apart within a row; networks filled where their kept fit stopped by
    patience and hollow where it did not (the budget gate leaves undecided the claims that
    compare it), trees in their own colour. A tree right of 0 at every seed beat every
    network at every seed."""
    rows = int(df.groupby("loss").model.nunique().max()) if len(df) else 4
    fig, panels, colors = _loss_panels(df, rows, width=4.8, pad=1.6)
    for ax, loss in panels:
        part = df[df.loss == loss]
        order = part.groupby("model", sort=False).gap.mean().sort_values().index
        # Each seed a little apart within its model's row, so that dots at the same value
        # (every seed's best network sits at 0) stay visible.
        seeds = sorted(df.seed.unique())
        dodge = dict(zip(seeds, np.linspace(-0.2, 0.2, len(seeds)) if len(seeds) > 1 else [0.0]))
        y = part.model.map({m: i for i, m in enumerate(order)}) + part.seed.map(dodge)
        ax.axvline(0, color="0.5", lw=0.8)
        for kind, color in colors.items():
            for converged, face, label in ((True, color, f"{kind}s" if kind == "tree" else "networks, converged"),
                                           (False, "none", "networks, not converged")):
                pick = (part.kind == kind) & (part.converged.fillna(True).astype(bool) == converged)
                if pick.any():
                    ax.scatter(part.gap[pick], y[pick], s=28, facecolors=face, edgecolors=color, linewidths=1.2,
                               label=label, zorder=3)
        ax.set_yticks(range(len(order)), list(order))
        ax.set(title=_LOSS_TITLES.get(loss, loss), xlabel=f"{metric} − the seed's best network")
    # One legend below the panels, of every kind either panel drew, clear of the dots.
    handles = {label: h for ax, _ in panels for h, label in zip(*ax.get_legend_handles_labels())}
    fig.legend(handles.values(), handles.keys(), loc="lower center", ncol=len(handles), fontsize=8, frameon=False)
    fig.suptitle(f"Test {metric} minus the best network's, a dot a seed ({df.seed.nunique()} seeds)", fontsize=10)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    return fig
