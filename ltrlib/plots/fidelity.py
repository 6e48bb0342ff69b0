"""Figures of the fidelity ledger (`ltrlib.fidelity`): each paper's verdicts and its
comparisons' Effect Ratios, drawn from the ledger's frames (never from its Markdown)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

#: The verdicts in the order the ledger's head table counts them, with their colours: the
#: tally's four (and, across seeds, "seed-dependent"), then the checks it does not count.
VERDICT_COLORS = {"holds": "#4c9a5b", "does not hold": "#c8553d", "seed-dependent": "#8e6bb0",
                  "not decided": "#e0b04a", "not available": "#9a9a9a", "outside the tally": "#cfd8e3"}
#: The Effect Ratio axis is cut here: a ratio past it is drawn at the edge as an arrow head
#: with its value (a paper's small effect makes a ratio large without making it readable).
ER_LIMITS = (-2.0, 4.0)


def verdict_counts(df: pd.DataFrame, title: str = "") -> plt.Figure:
    """One horizontal bar per paper, its checks split by verdict (`ltrlib.fidelity.verdict_frame`
    on one run, `ltrlib.studies.ledger_verdict_frame` across seeds: columns ``paper, verdict,
    checks``), each segment labelled with its count. A verdict the frame does not name (one
    run has no "seed-dependent") gets no segment and no legend entry."""
    unknown = set(df.verdict) - set(VERDICT_COLORS)
    if unknown:
        raise ValueError(f"verdict_counts: verdicts {sorted(unknown)} have no colour; known: {list(VERDICT_COLORS)}")
    papers = list(dict.fromkeys(df.paper))
    shown = {v: c for v, c in VERDICT_COLORS.items() if v in set(df.verdict)}
    wide = (df.pivot_table(index="paper", columns="verdict", values="checks", aggfunc="sum", fill_value=0)
            .reindex(index=papers, columns=list(shown), fill_value=0))
    fig, ax = plt.subplots(figsize=(9, 0.55 * max(len(papers), 1) + (1.6 if title else 1.3)))
    left = pd.Series(0.0, index=wide.index)
    for verdict, color in shown.items():
        counts = wide[verdict]
        bars = ax.barh(range(len(papers)), counts, left=left, color=color, label=verdict, edgecolor="white")
        ax.bar_label(bars, labels=[str(int(n)) if n else "" for n in counts], label_type="center", fontsize=8)
        left += counts
    ax.set_yticks(range(len(papers)), [_wrap(p, 38) for p in papers], fontsize=9)
    ax.invert_yaxis()
    ax.set_xlabel("checks (a claim in one scope)")
    ax.legend(ncol=len(shown) if len(shown) <= 5 else 3, fontsize=8, loc="lower center", bbox_to_anchor=(0.5, 1.0), frameon=False)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def effect_ratios(df: pd.DataFrame, title: str = "") -> plt.Figure:
    """A forest of one paper's comparisons: one row each, its Effect Ratio (1: the paper's
    effect, 0: none) with the interval across seeds where the frame has one
    (``effect_ratio_low``/``_high``, `ltrlib.fidelity.across.effect_ratio_intervals`), and
    beside it the paper's improvement and ours. Takes ``fidelity_effects.csv``'s columns
    (or ``effect_ratio_mean`` for ``effect_ratio``); rows without a ratio (no paper number,
    or "unstable") are counted in the title, not drawn."""
    er_col = "effect_ratio" if "effect_ratio" in df else "effect_ratio_mean"
    drawn = df[df[er_col].notna()].reset_index(drop=True)
    left_out = len(df) - len(drawn)
    n = max(len(drawn), 1)
    fig, (ax, side) = plt.subplots(1, 2, figsize=(10, 0.24 * n + 1.5), sharey=True,
                                   gridspec_kw={"width_ratios": [3, 1.3]})
    lo, hi = ER_LIMITS
    for x, style in ((0, dict(color="0.4", lw=0.8)), (1, dict(color="#4c9a5b", lw=1, ls="--"))):
        ax.axvline(x, **style)
    er = drawn[er_col].astype(float)
    shown = er.clip(lo, hi)
    color = sns.color_palette()[0]
    if {"effect_ratio_low", "effect_ratio_high"} <= set(drawn):
        low, high = drawn.effect_ratio_low.clip(lo, hi), drawn.effect_ratio_high.clip(lo, hi)
        ax.hlines(drawn.index, low, high, color=color, lw=1.2)
    inside = (er >= lo) & (er <= hi)
    ax.plot(shown[inside], drawn.index[inside], "o", color=color, ms=4)
    for i in drawn.index[~inside]:
        ax.plot(shown[i], i, ">" if er[i] > hi else "<", color="#c8553d", ms=6)
        ax.annotate(f"{er[i]:.1f}", (shown[i], i), xytext=(-4 if er[i] > hi else 4, 0), textcoords="offset points",
                    ha="right" if er[i] > hi else "left", va="center", fontsize=7, color="#c8553d")
    ax.set_xlim(lo - 0.1, hi + 0.1)
    ax.set_yticks(list(drawn.index), [_row_label(r) for r in drawn.itertuples()], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("Effect Ratio: our improvement / the paper's")
    for col, marker, label in (("paper_improvement", "s", "the paper's"), ("ours_improvement", "o", "ours")):
        if col in drawn:
            side.plot(drawn[col], drawn.index, marker, ms=4, label=label, mfc="none" if marker == "o" else None)
    side.axvline(0, color="0.4", lw=0.8)
    side.set_xlabel("improvement")
    side.legend(fontsize=7, loc="lower right")
    said = f" ({left_out} without a ratio not drawn: no paper number, or unstable)" if left_out else ""
    fig.suptitle(f"{title}: Effect Ratio per comparison{said}" if title else f"Effect Ratio per comparison{said}",
                 fontsize=10)
    fig.tight_layout()
    return fig


def _row_label(r) -> str:
    dataset = getattr(r, "dataset", "")
    on = f" [{dataset}]" if isinstance(dataset, str) and dataset else ""
    return f"{r.claim} · {r.scope} · {r.comparison}{on}"


def _wrap(text: str, width: int) -> str:
    words, lines, line = text.split(), [], ""
    for w in words:
        if line and len(line) + 1 + len(w) > width:
            lines.append(line)
            line = w
        else:
            line = f"{line} {w}".strip()
    return "\n".join([*lines, line])
