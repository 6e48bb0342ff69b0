"""Paired significance tests over per-query metric values, and table markers.

Input layout: a wide frame of per-query values, one row per query and one column per
model (all models evaluated on the same queries, in the same row order). From the tidy
output of ``evaluate(..., per_query=True)`` collected for several models (columns
``model, qid, metric, value``) take one metric and pivot::

    wide = tidy[tidy.metric == "ndcg@10"].pivot(index="qid", columns="model", values="value")

or let `significance_table` do it for every metric at once.

Tests are two-sided paired t-tests (``scipy.stats.ttest_rel``). Queries where either
model has NaN (``no_relevant="exclude"``) are dropped from that pair.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np
import pandas as pd
from scipy import stats

__all__ = ["PairedTTest", "compare", "mark_significance", "paired_ttest", "significance_table"]

_SUPERSCRIPT = dict(zip(
    "abcdefghijklmnoprstuvwxyz0123456789+-",
    "ᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖʳˢᵗᵘᵛʷˣʸᶻ⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻",
))
_STYLES = ("unicode", "latex", "plain")
# Per-query metric values are O(1); differences this small are floating-point noise
# from computing the same ranking two ways, not a difference between models.
_TIE = 1e-12


class PairedTTest(NamedTuple):
    """Result of a paired t-test of ``a`` against ``b`` (``mean_diff = mean(a - b)``)."""

    mean_diff: float
    t: float
    p: float
    n: int


def paired_ttest(a, b) -> PairedTTest:
    """Two-sided paired t-test of per-query values ``a`` vs ``b``.

    Pairs with NaN on either side are dropped. Identical inputs (every difference 0,
    or below 1e-12 in absolute value) give ``t = 0, p = 1`` rather than scipy's NaN: no
    evidence of a difference. A constant non-zero difference has zero variance and gives
    ``t = ±inf, p = 0``. Raises ``ValueError`` for different lengths or fewer than 2 pairs.
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.ndim != 1 or b.ndim != 1:
        raise ValueError(f"a and b must be 1-D per-query values, got shapes {a.shape}, {b.shape}")
    if a.size != b.size:
        raise ValueError(
            f"a and b must hold the same queries: a has {a.size} values, b has {b.size}"
        )
    keep = ~(np.isnan(a) | np.isnan(b))
    diff = a[keep] - b[keep]
    n = int(diff.size)
    if n < 2:
        raise ValueError(f"a paired t-test needs at least 2 queries with values, got {n}")
    mean_diff = float(diff.mean())
    if np.all(np.abs(diff) <= _TIE):
        return PairedTTest(mean_diff, 0.0, 1.0, n)
    if np.ptp(diff) <= 1e-12 * np.abs(diff).max():
        # Zero variance (up to rounding, e.g. (a + c) - a): scipy warns about precision
        # loss and returns noise or NaN; the difference is certain.
        return PairedTTest(mean_diff, float(np.copysign(np.inf, mean_diff)), 0.0, n)
    res = stats.ttest_rel(a[keep], b[keep])
    return PairedTTest(mean_diff, float(res.statistic), float(res.pvalue), n)


def _check_frame(per_query: pd.DataFrame, baselines) -> dict[str, str]:
    if not isinstance(per_query, pd.DataFrame):
        raise TypeError(
            "per_query must be a DataFrame with one row per query and one column per model, "
            f"got {type(per_query).__name__}"
        )
    if isinstance(baselines, Mapping):
        letters = {str(k): str(v) for k, v in baselines.items()}
    elif isinstance(baselines, str):
        letters = {baselines: "a"}
    else:
        names = list(baselines)
        if len(names) > 26:
            raise ValueError("more than 26 baselines; pass a mapping {baseline: marker}")
        letters = {str(m): chr(ord("a") + i) for i, m in enumerate(names)}
    if not letters:
        raise ValueError("baselines is empty")
    missing = [m for m in letters if m not in per_query.columns]
    if missing:
        raise KeyError(
            f"baselines {missing} are not columns of per_query (models: {list(per_query.columns)})"
        )
    if len(set(letters.values())) != len(letters):
        raise ValueError(f"baselines must have distinct markers, got {letters}")
    return letters


def compare(per_query: pd.DataFrame, baselines: Mapping[str, str] | Sequence[str] | str, *,
            alpha: float = 0.05) -> pd.DataFrame:
    """Paired t-test of every model (column) against every baseline (not itself).

    ``baselines``: baseline column names, or a mapping ``{baseline: letter}`` (a plain
    list gets letters a, b, c, ... in order).

    Returns a tidy frame, one row per (model, baseline): ``model, baseline, marker, n,
    mean_model, mean_baseline, mean_diff, t, p, significant`` where ``mean_diff`` is
    model minus baseline over the queries both have values for, and ``significant``
    is ``p < alpha``. With fewer than 2 such queries no test is possible: ``t`` and ``p``
    are NaN and ``significant`` is False.
    """
    letters = _check_frame(per_query, baselines)
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    rows = []
    for model in per_query.columns:
        for base, marker in letters.items():
            if model == base:
                continue
            a = per_query[model].to_numpy(np.float64)
            b = per_query[base].to_numpy(np.float64)
            keep = ~(np.isnan(a) | np.isnan(b))
            n = int(keep.sum())
            if n < 2:
                # A test set of one query (a rare category's exclusive split on a small
                # scale) admits no test: the row says so (p NaN, never significant)
                # instead of failing the whole table.
                diff = float(a[keep].sum() - b[keep].sum()) if n else np.nan
                res = PairedTTest(diff, np.nan, np.nan, n)
            else:
                res = paired_ttest(a, b)
            rows.append({
                "model": model, "baseline": base, "marker": marker, "n": res.n,
                "mean_model": float(a[keep].mean()) if n else np.nan,
                "mean_baseline": float(b[keep].mean()) if n else np.nan,
                "mean_diff": res.mean_diff, "t": res.t, "p": res.p,
                "significant": bool(res.p < alpha),
            })
    return pd.DataFrame(rows, columns=["model", "baseline", "marker", "n", "mean_model",
                                       "mean_baseline", "mean_diff", "t", "p", "significant"])


def _markers(letters: str, style: str) -> str:
    if not letters:
        return ""
    if style == "unicode":
        missing = [c for c in letters if c.lower() not in _SUPERSCRIPT]
        if missing:
            raise ValueError(
                f"no unicode superscript for marker characters {missing}; "
                "use other letters or style='latex'/'plain'"
            )
        return "".join(_SUPERSCRIPT[c.lower()] for c in letters)
    if style == "latex":
        return f"$^{{{letters}}}$"
    return f"^{letters}"


def mark_significance(per_query: pd.DataFrame,
                      baselines: Mapping[str, str] | Sequence[str] | str, *,
                      alpha: float = 0.05, fmt: str = "{:.4f}",
                      style: str = "unicode") -> pd.Series:
    """Each model's mean formatted with markers of the baselines it differs from.

    As in results tables of LTR papers: ``"0.7140ᵃᵇ"`` means significantly different
    (two-sided paired t-test, ``p < alpha``) from baseline ``a`` and from baseline ``b``.
    Markers follow the order of ``baselines``. ``style``: ``"unicode"`` superscripts,
    ``"latex"`` (``0.7140$^{ab}$``) or ``"plain"`` (``0.7140^ab``).

    The mean shown is over the model's non-NaN queries. Returns a Series indexed by model.
    """
    if style not in _STYLES:
        raise ValueError(f"style must be one of {_STYLES}, got {style!r}")
    letters = _check_frame(per_query, baselines)
    table = compare(per_query, letters, alpha=alpha)
    sig = table[table.significant]
    out = {}
    for model in per_query.columns:
        hit = set(sig.baseline[sig.model == model])
        marks = "".join(marker for base, marker in letters.items() if base in hit)
        out[model] = fmt.format(float(np.nanmean(per_query[model].to_numpy(np.float64)))) \
            + _markers(marks, style)
    return pd.Series(out, name="value", dtype=object).rename_axis("model")


def significance_table(tidy: pd.DataFrame,
                       baselines: Mapping[str, str] | Sequence[str] | str, *,
                       alpha: float = 0.05, fmt: str = "{:.4f}", style: str = "unicode",
                       model: str = "model", metric: str = "metric", qid: str = "qid",
                       value: str = "value") -> pd.DataFrame:
    """`mark_significance` for every metric of a tidy per-query frame.

    ``tidy`` has columns ``model, metric, qid, value`` (names configurable), e.g. the
    concatenated ``evaluate(..., per_query=True)`` frames of several models with a
    ``model`` column added. Returns a models x metrics frame of marked strings, models
    and metrics in their order of appearance.
    """
    missing = [c for c in (model, metric, qid, value) if c not in tidy.columns]
    if missing:
        raise KeyError(f"tidy is missing columns {missing} (has {list(tidy.columns)})")
    columns = {}
    for name in pd.unique(tidy[metric]):
        part = tidy[tidy[metric] == name]
        if part.duplicated([model, qid]).any():
            raise ValueError(f"tidy has several values for one (model, qid) in metric {name!r}")
        # pivot sorts models by name; tables list them in the order they were given.
        wide = part.pivot(index=qid, columns=model, values=value)[pd.unique(part[model])]
        if wide.isna().any().any() and not part[value].isna().any():
            raise ValueError(
                f"models were not evaluated on the same queries for metric {name!r}"
            )
        columns[str(name)] = mark_significance(wide, baselines, alpha=alpha, fmt=fmt,
                                               style=style)
    return pd.DataFrame(columns).rename_axis(index=model, columns=metric)
