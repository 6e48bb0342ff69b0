"""Figures of federated online LTR (notebook 07; `ltrlib.foltr.simulate`)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns


def foltr_curves(summary: pd.DataFrame, row: str = "setting", col: str = "click", hue: str = "data",
                 style: str = "ranker", title: str = "") -> plt.Figure:
    """Offline NDCG@10 against rounds (`ltrlib.foltr.summarise_offline`): mean over seeds with
    its 95% band; panels by ``row`` x ``col``, colour by ``hue``, line style by ``style``."""
    rows = list(pd.unique(summary[row])) if row else [None]
    cols = list(pd.unique(summary[col])) if col else [None]
    hues = list(pd.unique(summary[hue]))
    styles = list(pd.unique(summary[style])) if style else [None]
    dashes = ["-", "--", ":", "-."]
    fig, axes = plt.subplots(len(rows), len(cols), figsize=(3.9 * len(cols), 2.9 * len(rows)),
                             squeeze=False, sharex=True)
    for i, r in enumerate(rows):
        for j, c in enumerate(cols):
            ax = axes[i][j]
            part = summary
            if r is not None:
                part = part[part[row] == r]
            if c is not None:
                part = part[part[col] == c]
            for h_i, h in enumerate(hues):
                for s_i, s in enumerate(styles):
                    g = part[part[hue] == h]
                    if s is not None:
                        g = g[g[style] == s]
                    if g.empty:
                        continue
                    color = sns.color_palette()[h_i % 10]
                    label = f"{h}" + (f", {s}" if s is not None and len(styles) > 1 else "")
                    ax.plot(g["round"], g["mean"], color=color, ls=dashes[s_i % 4], lw=1.3, label=label)
                    ax.fill_between(g["round"], g["lo"], g["hi"], color=color, alpha=0.15, lw=0)
            name = " · ".join(str(v) for v in (r, c) if v is not None)
            ax.set_title(name, fontsize=9)
            if i == len(rows) - 1:
                ax.set_xlabel("round")
            if j == 0:
                ax.set_ylabel("offline NDCG@10")
            if ax.lines:
                ax.legend(fontsize=7)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def foltr_online_gaps(table: pd.DataFrame) -> plt.Figure:
    """Cumulative discounted online NDCG, IID against non-IID, per setting (`foltr.online_gaps`)."""
    t = table.copy()
    t["curve"] = t["setting"] + " · " + t["ranker"] + " · " + t["click"]
    t = t.sort_values("curve")
    fig, ax = plt.subplots(figsize=(8, 0.32 * len(t) + 1.2))
    y = np.arange(len(t))
    ax.barh(y - 0.2, t["IID"], height=0.4, label="IID")
    ax.barh(y + 0.2, t["non-IID"], height=0.4, label="non-IID")
    ax.set_yticks(y, t["curve"], fontsize=7)
    ax.invert_yaxis()
    ax.set(xlabel="cumulative discounted online NDCG@10")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig



def foltr_setting_curves(summary: pd.DataFrame) -> dict[str, plt.Figure]:
    """Notebook 07's figure per setting, without remedies: `foltr_curves` with rankers as
    rows, click models as columns, IID and non-IID data as colours; by setting name."""
    plain = summary[summary.remedy == "none"]
    return {name: foltr_curves(plain[plain.setting == name], row="ranker", col="click", hue="data", style="",
                               title=name)
            for name in plain.setting.unique()}


def foltr_remedy_curves(summary: pd.DataFrame, settings, clicks) -> dict[str, plt.Figure]:
    """Notebook 07's figure per remedy setting: every remedy's curve on that setting (colour:
    data and remedy) for the click models ``clicks``; by setting name."""
    out = {}
    for setting in settings:
        rem = summary[(summary.setting == setting) & summary.click.isin(list(clicks))]
        rem = rem.assign(curve=rem["data"] + " · " + rem["remedy"])
        out[setting] = foltr_curves(rem, row="ranker", col="click", hue="curve", style="",
                                    title=f"remedies on {setting}")
    return out
