"""Paired significance tests over per-query metric values, and the papers' marked tables.

Input layout: a wide frame of per-query values, one row per query and one column per
model (all models evaluated on the same queries, in the same row order). From the tidy
output of ``evaluate(..., per_query=True)`` collected for several models (columns
``model, qid, metric, value``) take one metric and pivot::

    wide = tidy[tidy.metric == "ndcg@10"].pivot(index="qid", columns="model", values="value")

or let `ltrlib.metrics.compare` do it: it tests every cell of a tidy per-query frame once
and returns a `ltrlib.metrics.comparison.Comparison`, whose views are every marked table of the
notebooks (`MarkedTable`, kept here) and the numbers behind them, among them the "mean,
difference, p-value" rows (`Comparison.differences`). `compare` is the one verb that
compares models over a tidy frame; this module holds the tests it runs on each cell.

Tests are paired t-tests (``scipy.stats.ttest_rel``), two-sided unless an ``alternative``
is given. Queries where either model has NaN (``no_relevant="exclude"``) are dropped from
that pair.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import pandas as pd
from scipy import stats

__all__ = ["CORRECTIONS", "MarkedTable", "PairedTTest", "corrected", "paired_tests", "paired_ttest"]

_SUPERSCRIPT = dict(zip(
    "abcdefghijklmnoprstuvwxyz0123456789+-",
    "ᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖʳˢᵗᵘᵛʷˣʸᶻ⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻",
))
_STYLES = ("unicode", "latex", "plain")
_ALTERNATIVES = ("two-sided", "greater", "less")
_TOO_FEW = ("nan", "raise")
# Per-query metric values are O(1); differences this small are floating-point noise
# from computing the same ranking two ways, not a difference between models.
_TIE = 1e-12


class PairedTTest(NamedTuple):
    """Result of a paired t-test of ``a`` against ``b`` (``mean_diff = mean(a - b)``)."""

    mean_diff: float
    t: float
    p: float
    n: int


def paired_ttest(a, b, alternative: str = "two-sided", *, raw: bool = False) -> PairedTTest:
    """Paired t-test of per-query values ``a`` vs ``b``.

    ``alternative`` as in scipy: ``"two-sided"`` (any difference), ``"greater"`` (the
    mean of ``a - b`` is above 0) or ``"less"``. Pairs with NaN on either side are dropped.
    Identical inputs (every difference 0, or below 1e-12 in absolute value) give
    ``t = 0, p = 1`` rather than scipy's NaN: no evidence of a difference, whatever the
    alternative. A constant non-zero difference has zero variance and gives ``t = ±inf``
    and ``p = 0``, or ``p = 1`` when a one-sided alternative points the other way. Raises
    ``ValueError`` for different lengths or fewer than 2 pairs.

    ``raw``: scipy's ``ttest_rel`` as it is, without those rules: pairs with NaN are kept
    (a NaN gives NaN), identical inputs give NaN and a difference constant up to rounding
    gives scipy's noise. For `ltrlib.foltr.noniid_gaps`, whose tables have always shown it.
    """
    _check_alternative(alternative)
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.ndim != 1 or b.ndim != 1:
        raise ValueError(f"a and b must be 1-D per-query values, got shapes {a.shape}, {b.shape}")
    if a.size != b.size:
        raise ValueError(
            f"a and b must hold the same queries: a has {a.size} values, b has {b.size}"
        )
    keep = np.ones(a.size, dtype=bool) if raw else ~(np.isnan(a) | np.isnan(b))
    diff = a[keep] - b[keep]
    n = int(diff.size)
    if n < 2:
        raise ValueError(f"a paired t-test needs at least 2 queries with values, got {n}")
    mean_diff = float(diff.mean())
    if not raw and np.all(np.abs(diff) <= _TIE):
        return PairedTTest(mean_diff, 0.0, 1.0, n)
    if not raw and np.ptp(diff) <= 1e-12 * np.abs(diff).max():
        # Zero variance (up to rounding, e.g. (a + c) - a): scipy warns about precision
        # loss and returns noise or NaN; the difference is certain.
        t = float(np.copysign(np.inf, mean_diff))
        against = (alternative == "greater" and t < 0) or (alternative == "less" and t > 0)
        return PairedTTest(mean_diff, t, 1.0 if against else 0.0, n)
    res = stats.ttest_rel(a[keep], b[keep], alternative=alternative)
    return PairedTTest(mean_diff, float(res.statistic), float(res.pvalue), n)


def _check_alternative(alternative: str) -> None:
    if alternative not in _ALTERNATIVES:
        raise ValueError(f"alternative must be one of {_ALTERNATIVES}, got {alternative!r}")


def _check_too_few(too_few: str) -> None:
    if too_few not in _TOO_FEW:
        raise ValueError(f"too_few must be one of {_TOO_FEW}, got {too_few!r}")


def _letters(baselines) -> dict[str, str]:
    """``{baseline: marker}`` from a mapping, a list (letters a, b, c, ...) or one name."""
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
    if len(set(letters.values())) != len(letters):
        raise ValueError(f"baselines must have distinct markers, got {letters}")
    return letters


def _check_frame(per_query: pd.DataFrame, baselines) -> dict[str, str]:
    if not isinstance(per_query, pd.DataFrame):
        raise TypeError(
            "per_query must be a DataFrame with one row per query and one column per model, "
            f"got {type(per_query).__name__}"
        )
    letters = _letters(baselines)
    missing = [m for m in letters if m not in per_query.columns]
    if missing:
        raise KeyError(
            f"baselines {missing} are not columns of per_query (models: {list(per_query.columns)})"
        )
    return letters


#: Multiple-comparison corrections `paired_tests` and `Comparison.pvalues` apply (``correction=``),
#: by statsmodels' name (`statsmodels.stats.multitest.multipletests`): Holm's step-down (family-wise error).
CORRECTIONS = ("holm",)


def corrected(p, method: str = "holm") -> np.ndarray:
    """``p`` adjusted for multiple comparisons over the family of its finite values
    (statsmodels' `multipletests`, e.g. Holm's step-down); NaN stays NaN (no test)."""
    from statsmodels.stats.multitest import multipletests

    if method not in CORRECTIONS:
        raise ValueError(f"correction must be one of {CORRECTIONS} or None, got {method!r}")
    p = np.asarray(p, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    tested = np.isfinite(p)
    if tested.any():
        out[tested] = multipletests(p[tested], method=method)[1]
    return out


def paired_tests(per_query: pd.DataFrame, baselines: Mapping[str, str] | Sequence[str] | str, *,
                 alpha: float = 0.05, alternative: str = "two-sided", too_few: str = "nan",
                 raw: bool = False, correction: str | None = None) -> pd.DataFrame:
    """Paired t-test of every model (column) of one wide frame against every baseline (not
    itself): the tests of one cell of `ltrlib.metrics.compare`, which calls it per cell.

    ``baselines``: baseline column names, or a mapping ``{baseline: letter}`` (a plain
    list gets letters a, b, c, ... in order). ``alternative`` (see `paired_ttest`) is
    about model minus baseline: ``"greater"`` asks whether the model is better.

    Returns a tidy frame, one row per (model, baseline): ``model, baseline, marker, n,
    mean_model, mean_baseline, mean_diff, t, p, significant`` where ``mean_diff`` is
    model minus baseline over the queries both have values for, and ``significant``
    is ``p < alpha``. With fewer than 2 such queries no test is possible: ``t`` and ``p``
    are NaN and ``significant`` is False, or with ``too_few="raise"`` `paired_ttest`
    raises. ``raw``: scipy's numbers as they are (see `paired_ttest`); NaN queries are kept.
    ``correction`` (one of `CORRECTIONS`): the p-values also adjusted over the call's
    comparisons as one family (`corrected`), in ``p_corrected`` and ``significant_corrected``
    (``p_corrected < alpha``) beside the uncorrected ones.
    """
    if correction is not None and correction not in CORRECTIONS:
        raise ValueError(f"correction must be one of {CORRECTIONS} or None, got {correction!r}")
    letters = _check_frame(per_query, baselines)
    _check_alpha(alpha)
    _check_alternative(alternative)
    _check_too_few(too_few)
    rows = []
    for model in per_query.columns:
        for base, marker in letters.items():
            if model == base:
                continue
            a = per_query[model].to_numpy(np.float64)
            b = per_query[base].to_numpy(np.float64)
            keep = np.ones(a.size, dtype=bool) if raw else ~(np.isnan(a) | np.isnan(b))
            n = int(keep.sum())
            if n < 2 and too_few == "nan":
                # A test set of one query (a rare category's exclusive split on a small
                # scale) admits no test: the row says so (p NaN, never significant)
                # instead of failing the whole table.
                diff = float(a[keep].sum() - b[keep].sum()) if n else np.nan
                res = PairedTTest(diff, np.nan, np.nan, n)
            else:
                res = paired_ttest(a, b, alternative, raw=raw)
            rows.append({
                "model": model, "baseline": base, "marker": marker, "n": res.n,
                "mean_model": float(a[keep].mean()) if n else np.nan,
                "mean_baseline": float(b[keep].mean()) if n else np.nan,
                "mean_diff": res.mean_diff, "t": res.t, "p": res.p,
                "significant": bool(res.p < alpha),
            })
    out = pd.DataFrame(rows, columns=["model", "baseline", "marker", "n", "mean_model",
                                      "mean_baseline", "mean_diff", "t", "p", "significant"])
    if correction is not None:
        out["p_corrected"] = corrected(out.p.to_numpy(), correction)
        out["significant_corrected"] = out.p_corrected < alpha
    return out


def _check_alpha(alpha: float) -> None:
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")


def _check_style(style: str) -> None:
    if style not in _STYLES:
        raise ValueError(f"style must be one of {_STYLES}, got {style!r}")


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


@dataclass(frozen=True)
class MarkedTable:
    """A results table kept as numbers until it is written: each cell's mean and, as
    booleans, the marks a paper prints beside it. `ltrlib.report.Reporter.table` writes the
    printed table (`formatted`) and these numbers beside it (``<name>_numbers.csv``), which
    is what a reader such as the fidelity ledger reads.

    * ``numbers``: tidy, one row per cell: the ``by`` columns, the ``rows`` column, the
      ``columns`` columns, ``mean``, and ``marked_<m>`` (bool) for each marker ``m`` of
      ``markers``, in print order (blocks, then column keys, then rows).
    * ``tests``: the paired tests behind the marks (`paired_tests`' rows with the cell's keys:
      differences, t, p), for a reader who wants more than the marks; may be empty.
    * ``order``: the rows of every block, in print order (absent ones print empty); None:
      each block's rows in their order in ``numbers``.
    * ``labels``: the row label printed for a model (default: its name).
    * ``superscript``: markers print as superscripts in the style `formatted` is given;
      False: as they are (the † and * of the Bi-LambdaMART paper's Tables 3 and 5).
    * ``named_columns``: the printed table's column axis carries the ``columns`` names.
    * ``empty_columns``: the printed columns of a table without cells.
    """

    numbers: pd.DataFrame
    markers: tuple[str, ...]
    rows: str = "model"
    columns: tuple[str, ...] = ("metric",)
    by: tuple[str, ...] = ()
    tests: pd.DataFrame = field(default_factory=pd.DataFrame, repr=False)
    order: tuple[str, ...] | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    superscript: bool = True
    named_columns: bool = True
    empty_columns: tuple[str, ...] = ()

    def marks(self, row) -> str:
        """The markers set in a row of ``numbers``, in print order (``"ab"``, ``"†*"``)."""
        return "".join(m for m in self.markers if bool(row[f"marked_{m}"]))

    def formatted(self, fmt: str = "{:.4f}", style: str = "unicode", flat: bool = False) -> pd.DataFrame:
        """The printed table: rows (in blocks by ``by``) x column keys, each cell the mean in
        ``fmt`` with its markers (``style``: ``"unicode"`` superscripts, ``"latex"``
        (``0.7140$^{ab}$``) or ``"plain"`` (``0.7140^ab``)); a table without markers
        gives the plain float means. ``flat``: several column keys joined by a space into one
        header (``"Split1 ndcg@10"``), for CSV and Markdown files."""
        _check_style(style)
        if self.numbers.empty:
            out = pd.DataFrame(columns=pd.Index(list(self.empty_columns), name=self.columns[0]),
                               index=pd.Index([], name=self.rows))
            return out if self.named_columns else out.rename_axis(columns=None)
        blocks = {}
        for block_key, block in _nested_groups(self.numbers, list(self.by)):
            order = list(self.order) if self.order is not None else list(pd.unique(block[self.rows]))
            cells = {}
            for column_key, part in _nested_groups(block, list(self.columns)):
                if self.markers:
                    cell = pd.Series(
                        {r[self.rows]: fmt.format(r["mean"]) + self._printed(self.marks(r), style)
                         for r in part.to_dict("records")}, dtype=object)
                else:
                    cell = pd.Series(part["mean"].to_numpy(np.float64), index=part[self.rows].to_numpy())
                cells[column_key[0] if len(self.columns) == 1 else column_key] = cell
            table = pd.DataFrame(cells).reindex(order)
            if self.labels:
                table.index = [self.labels.get(m, m) for m in table.index]
            table = table.rename_axis(index=self.rows)
            table.columns.names = list(self.columns)
            blocks[block_key[0] if len(self.by) == 1 else block_key] = table
        out = blocks[()] if not self.by else pd.concat(blocks, names=[*self.by, self.rows])
        if flat and isinstance(out.columns, pd.MultiIndex):
            out.columns = [" ".join(map(str, c)) for c in out.columns]
        return out if self.named_columns else out.rename_axis(columns=None)

    def _printed(self, marks: str, style: str) -> str:
        return _markers(marks, style) if self.superscript else marks

    def _repr_html_(self) -> str:
        return self.formatted()._repr_html_()

    def __repr__(self) -> str:
        return repr(self.formatted())


def _nested_groups(frame: pd.DataFrame, keys: list[str]):
    """``(values of keys, rows)`` as nested loops would give them: the first key's values
    in order of appearance, within each the second key's values in order of appearance
    in those rows, and so on (so a split's metrics stay together as the tables show them)."""
    if not keys:
        yield (), frame
        return
    for v in pd.unique(frame[keys[0]]):
        for rest, part in _nested_groups(frame[frame[keys[0]] == v], keys[1:]):
            yield (v, *rest), part
