"""Plots: each takes the tidy frame of the analysis function with the same name and
returns a matplotlib `Figure`, so notebooks can display it and `Reporter` can save it."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator
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


def calibration_table(df: pd.DataFrame) -> plt.Figure:
    """Each data-level target's miss in units of its tolerance: inside the band is met."""
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
        clients = sorted(c for c in part.client.unique() if c != "unused")
        palette = dict(zip(clients, sns.color_palette()), unused="0.7")
        sns.barplot(data=counts, x="key", y="queries", hue="client", ax=ax,
                    hue_order=clients + ["unused"], palette=palette)
        ax.set(title=f"{name}: D_merge pool", xlabel="relevant documents of client 1's category")
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # query counts
        ax.tick_params(axis="x", labelsize=8)
    fig.tight_layout()
    return fig


# ---- merging (notebooks 04-05)


def _alpha_lookup(selected_alpha, split=None, client=None):
    """A float, or the ``alpha`` of the matching row of a choices frame (split, client, alpha)."""
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
    """``metric`` of the merged model against alpha (the weight of M2), one line per dataset
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
    palette = dict(zip(sorted(part.dataset.unique()), sns.color_palette()))
    for r, split in enumerate(splits):
        for c, client in enumerate(clients):
            ax = axes[r, c]
            panel = part
            if split is not None:
                panel = panel[panel.split == split]
            if client is not None:
                panel = panel[panel.client == client]
            for ds_name, g in panel.groupby("dataset", sort=True):
                ax.plot(g.alpha, g.value, label=ds_name, color=palette[ds_name], lw=1.6)
            sel = _alpha_lookup(selected_alpha, split, client)
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


# ---- training (notebook 03)


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
            ax.plot(g.tree, g.ndcg, color=color, label=model, lw=1.2)
            best = g[g.best]
            ax.scatter(best.tree, best.ndcg, color=color, s=18, zorder=3)
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


# ---- federated online LTR (notebook 07, ltrlib.foltr) ----


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
