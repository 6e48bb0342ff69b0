"""One comparison of models over per-query values, and its views (after ranx's ``Report``).

`compare` runs every paired test once and keeps the numbers: each cell's means, the tests
against the baselines with their wins, ties and losses, and the marks as booleans. The
papers' tables are views of that one result, so a marked table, its p-values and its means
can never disagree: `Comparison.marked` (the marked table, a
`ltrlib.metrics.significance.MarkedTable`), `Comparison.pvalues` (the tests, with Holm's
correction over a family), `Comparison.differences` (each model's mean, its difference to
each baseline's and the test's t and p), `Comparison.means_frame` and `Comparison.to_frame`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ltrlib.metrics.significance import (
    CORRECTIONS,
    MarkedTable,
    _check_alpha,
    _check_alternative,
    _check_too_few,
    _letters,
    _nested_groups,
    corrected,
    paired_tests,
)

__all__ = ["CELL_ORDERS", "PAIRINGS", "Comparison", "compare"]

#: How `compare` pairs a cell's models: on every unit of the cell, or on the units common to all.
PAIRINGS = ("every", "common")
#: How `compare` orders its cells: nested order of appearance, or order of each cell's first row.
CELL_ORDERS = ("nested", "appearance")


@dataclass(frozen=True)
class Comparison:
    """The numbers of one comparison; views format them at the end.

    * ``means``: one row per cell and model, cells in the data's nested order: the ``keys``
      columns, ``rows``, ``mean`` (over the model's non-NaN values), ``queries`` (its
      non-NaN values), ``units`` (the cell's queries) and ``appearance`` (the row of the
      input where the model first appears in the cell, which orders every view as the
      data did).
    * ``tests``: one row per cell, model and baseline present in it (not the model itself):
      the ``keys`` columns and `paired_tests`' columns (``model, baseline, marker, n,
      mean_model, mean_baseline, mean_diff, t, p, significant``), then ``wins, ties,
      losses``: the queries where the model is above, equal to and below the baseline.
    * ``markers``: ``{baseline: marker}``; ``keys``: the columns whose values make the cells;
      ``rows``: the column naming the models; ``models``: the models asked for, in order.
    * ``alpha``, ``alternative``: the tests' level and alternative (`paired_ttest`).
    """

    means: pd.DataFrame
    tests: pd.DataFrame
    markers: Mapping[str, str]
    keys: tuple[str, ...]
    rows: str = "model"
    models: tuple[str, ...] | None = None
    alpha: float = 0.05
    alternative: str = "two-sided"
    # Cells whose models hold different queries, and baselines absent from a cell: the
    # marked table refuses both (its marks would compare different things); other views
    # show what was there.
    uneven: tuple[str, ...] = field(default=(), repr=False)
    absent: Mapping[str, list[str]] = field(default_factory=dict, repr=False)

    def _in_order(self) -> pd.DataFrame:
        return self.means.sort_values("appearance", kind="stable")

    def marked(self, columns: str | Sequence[str] | None = None, by: str | Sequence[str] = (), *,
               earlier_only: bool = False, better_only: bool = False,
               label: str | None = None) -> MarkedTable:
        """The papers' marked table: one mean per model and cell, marked where the test
        against a baseline is significant (``p < alpha``).

        ``by``: the keys whose values make blocks of rows (the row index becomes ``by,
        rows``); ``columns``: the keys over the columns, nested (default: the keys not in
        ``by``). Rows in the order of ``models``, or else of appearance in each block.
        ``earlier_only``: a model is marked only against baselines in rows before its own,
        so a letter points up the table. ``better_only``: only marks where the model is
        better (``t > 0``); with ``alternative="two-sided"`` at ``alpha`` this is exactly
        a one-sided test at ``alpha / 2``, as scipy's two-sided p is twice the one-sided
        tail. ``label``: a format for the baselines' row names, fields ``model, marker``.
        """
        by = [by] if isinstance(by, str) else list(by)
        columns = ([k for k in self.keys if k not in by] if columns is None
                   else [columns] if isinstance(columns, str) else list(columns))
        if sorted([*by, *columns]) != sorted(self.keys):
            raise ValueError(f"by {by} and columns {columns} must split the keys {list(self.keys)}")
        self._check_markable()
        rows, markers = self.rows, tuple(self.markers.values())
        hits = self._hits(better_only)
        cells = []
        for _, block in _nested_groups(self._in_order(), by):
            position = {m: i for i, m in enumerate(self._block_order(block))}
            for _, part in _nested_groups(block, columns):
                for r in part.sort_values(rows, key=lambda s: s.map(position), kind="stable").to_dict("records"):
                    marked = hits.get((*(r[k] for k in self.keys), r[rows]), set())
                    if earlier_only:
                        marked = {b for b in marked if position[b] < position[r[rows]]}
                    cells.append({**{k: r[k] for k in by}, rows: r[rows], **{k: r[k] for k in columns},
                                  "mean": r["mean"],
                                  **{f"marked_{mk}": b in marked for b, mk in self.markers.items()}})
        numbers = pd.DataFrame(cells, columns=[*by, rows, *columns, "mean", *(f"marked_{m}" for m in markers)])
        labels = {} if label is None else {m: label.format(model=m, marker=mk) for m, mk in self.markers.items()}
        tests = self.tests
        if not tests.empty:
            tests = tests[[*by, *columns, *(c for c in tests.columns if c not in self.keys)]]
        return MarkedTable(numbers, markers, rows=rows, columns=tuple(columns), by=tuple(by),
                           tests=tests.drop(columns=["wins", "ties", "losses"], errors="ignore"),
                           order=self.models, labels=labels)

    def _check_markable(self) -> None:
        if self.models is not None:
            unknown = [m for m in self.models if m not in set(self.means[self.rows])]
            if unknown:
                raise KeyError(f"models {unknown} are not in per_query "
                               f"(has {list(pd.unique(self._in_order()[self.rows]))})")
        if self.uneven:
            raise ValueError(f"models were not evaluated on the same queries at {self.uneven[0]}")
        for where, missing in self.absent.items():
            raise KeyError(f"baselines {missing} are not columns of per_query at {where}")

    def _block_order(self, block: pd.DataFrame) -> list[str]:
        present = list(pd.unique(block[self.rows]))
        return present if self.models is None else [m for m in self.models if m in present]

    def _hits(self, better_only: bool) -> dict[tuple, set[str]]:
        """``{(cell keys..., model): baselines it is marked against}``."""
        out: dict[tuple, set[str]] = {}
        if self.tests.empty:
            return out
        sig = self.tests[self.tests.significant & ((self.tests.t > 0) if better_only else True)]
        for r in sig.to_dict("records"):
            out.setdefault((*(r[k] for k in self.keys), r["model"]), set()).add(r["baseline"])
        return out

    def pvalues(self, correction: str | None = None, *, earlier_only: bool = False,
                baselines_tested: bool = True) -> pd.DataFrame:
        """The tests, tidy: the ``keys``, ``model, baseline, diff`` (the difference of the
        two means, `means`), ``t, p, wins, ties, losses``, in the order cells, models (as in
        `means`), baselines. The family is the rows returned: ``earlier_only`` keeps a
        model's tests against baselines in rows before its own in the cell,
        ``baselines_tested=False`` drops the rows of models that are baselines themselves.
        ``correction`` (one of `CORRECTIONS`): ``p_<correction>``, the p-values adjusted over
        that family (`corrected`)."""
        if correction is not None and correction not in CORRECTIONS:
            raise ValueError(f"correction must be one of {CORRECTIONS} or None, got {correction!r}")
        columns = [*self.keys, "model", "baseline", "diff", "t", "p", "wins", "ties", "losses"]
        if self.tests.empty:
            return pd.DataFrame(columns=columns + ([f"p_{correction}"] if correction else []))
        cell = [*self.keys, self.rows]
        means = self.means.set_index(cell)
        where = self.means.set_index(cell).index
        slot = {key: i for i, key in enumerate(where)}
        tests = self.tests.rename(columns={"model": self.rows}) if self.rows != "model" else self.tests
        own = tests.set_index(cell).index
        base = pd.MultiIndex.from_arrays([*(tests[k] for k in self.keys), tests.baseline])
        tests = tests.assign(diff=means["mean"].reindex(own).to_numpy() - means["mean"].reindex(base).to_numpy(),
                             _slot=[slot[k] for k in own], _base=[slot[k] for k in base])
        if earlier_only:
            tests = tests[tests._base < tests._slot]
        if not baselines_tested:
            tests = tests[~tests[self.rows].isin(list(self.markers))]
        order = {b: i for i, b in enumerate(self.markers)}
        tests = tests.assign(_b=tests.baseline.map(order)).sort_values(["_slot", "_b"], kind="stable")
        out = tests.rename(columns={self.rows: "model"})[columns].reset_index(drop=True)
        if correction is not None:
            out[f"p_{correction}"] = corrected(out.p.to_numpy(dtype=float), correction)
        return out

    def to_frame(self) -> pd.DataFrame:
        """Every test with the model's mean beside it: `tests` joined to `means` on the cell and model."""
        means = self.means[[*self.keys, self.rows, "mean", "queries", "units"]]
        return self.tests.merge(means.rename(columns={self.rows: "model"}), on=[*self.keys, "model"], how="left")

    def differences(self) -> pd.DataFrame:
        """The "mean, difference, p-value" table: one row per cell, model (as in `means`) and
        baseline (in ``markers``' order), the model's own row against itself included.

        Columns: the ``keys``, ``rows`` (named as given), ``baseline, units`` (the cell's),
        ``count`` (the model's values), ``mean, mean_baseline, diff`` (``mean -
        mean_baseline``: a difference of the means shown), ``rel_diff`` (``diff /
        mean_baseline``; a zero baseline mean gives inf or NaN), ``t, p``. ``t`` and ``p``
        are NaN for the baseline itself and in a cell without the baseline, where
        ``mean_baseline`` is NaN too."""
        keys, rows = list(self.keys), self.rows
        means = {(*(r[k] for k in keys), r[rows]): r["mean"] for r in self.means.to_dict("records")}
        tests = {} if self.tests.empty else {
            (*(r[k] for k in keys), r["model"], r["baseline"]): (r["t"], r["p"]) for r in self.tests.to_dict("records")}
        out = []
        for r in self.means.to_dict("records"):
            cell = tuple(r[k] for k in keys)
            for base in self.markers:
                mean_base = means.get((*cell, base), np.nan)
                t, p = tests.get((*cell, r[rows], base), (np.nan, np.nan))
                out.append({**{k: r[k] for k in keys}, rows: r[rows], "baseline": base, "units": r["units"],
                            "count": r["queries"], "mean": r["mean"], "mean_baseline": mean_base,
                            "diff": r["mean"] - mean_base, "t": t, "p": p})
        out = pd.DataFrame(out, columns=[*keys, rows, "baseline", "units", "count", "mean", "mean_baseline",
                                         "diff", "t", "p"])
        # Divided as float64 columns: a zero baseline mean gives inf or NaN, not an error.
        out.insert(out.columns.get_loc("diff") + 1, "rel_diff", out["diff"] / out["mean_baseline"])
        return out

    def means_frame(self) -> pd.DataFrame:
        """`means` without its ordering column, in the data's order."""
        return self.means.drop(columns="appearance").reset_index(drop=True)


def compare(per_query: pd.DataFrame, baselines: Mapping[str, str] | Sequence[str] | str | None = None, *,
            by: str | Sequence[str] = "metric", rows: str = "model", models: Sequence[str] | None = None,
            alpha: float = 0.05, alternative: str = "two-sided", qid: str = "qid",
            value: str = "value", pairing: str = "every", skipna: bool = True, too_few: str = "nan",
            raw: bool = False, cell_order: str = "nested") -> Comparison:
    """Paired t-tests of every model against every baseline in every cell, run once.

    ``per_query``: tidy, one row per (cell, model, query), e.g. ``split, model, qid, metric,
    value``, or runs with one row per seed (``qid="seed"``: the units a test pairs need not
    be queries). ``by``: the columns whose values make the cells; each cell is tested on its
    own units. ``baselines``: names, or a mapping ``{baseline: marker}`` (a list gets a, b,
    c, ...; one name gets a); None: means only, no tests. ``models``: keep these, in this
    order (the others are dropped before anything is computed). ``alpha``, ``alternative``:
    as in `paired_ttest` (about model minus baseline).

    How a cell's models are paired and averaged:

    * ``pairing`` (one of `PAIRINGS`): ``"every"`` pairs the models on every unit of the
      cell, in sorted order (a unit a model lacks is NaN for it, and drops out of its
      pairs); ``"common"`` only on the units every model of the cell has a row for (a NaN
      value counts as a row), in the order of ``pandas.Index.intersection`` from the first
      baseline's units (in general the order of its rows), so means, counts and tests are
      over the same units. A cell without the first baseline then has no units.
    * ``skipna``: means over a model's non-NaN values; False: a NaN value gives a NaN mean
      (the tests drop NaN pairs either way, unless ``raw``).
    * ``too_few`` (``"nan"`` or ``"raise"``): a pair with fewer than 2 units with values
      gives NaN ``t`` and ``p`` (never significant), or raises `paired_ttest`'s
      ``ValueError``; ``"raise"`` is how a caller demands a test of every cell.
    * ``raw``: scipy's ``ttest_rel`` numbers as they are (`paired_ttest`): NaN units are
      kept, identical values give NaN rather than ``p = 1``.
    * ``cell_order`` (one of `CELL_ORDERS`): ``"nested"`` (a split's metrics stay together:
      the first key's values in order of appearance, within each the second's, and so on)
      or ``"appearance"``: cells in the order of their first row, as pandas'
      ``groupby(by, sort=False)`` gives them (rows with a missing key make no cell). One
      key gives the same order either way. It orders `Comparison.means`, ``tests`` and the
      tidy views; `Comparison.marked` nests its blocks and columns whatever it is.

    Raises ``ValueError`` for several values of one (model, unit) in a cell.
    """
    if not isinstance(per_query, pd.DataFrame):
        raise TypeError(f"per_query must be a tidy DataFrame, got {type(per_query).__name__}")
    keys = [by] if isinstance(by, str) else list(by)
    missing = [c for c in dict.fromkeys([*keys, rows, qid, value]) if c not in per_query.columns]
    if missing:
        raise KeyError(f"per_query is missing columns {missing} (has {list(per_query.columns)})")
    if per_query.empty:
        raise ValueError("per_query has no rows")
    letters = {} if baselines is None else _letters(baselines)
    _check_alpha(alpha)
    _check_alternative(alternative)
    _check_too_few(too_few)
    if pairing not in PAIRINGS:
        raise ValueError(f"pairing must be one of {PAIRINGS}, got {pairing!r}")
    if cell_order not in CELL_ORDERS:
        raise ValueError(f"cell_order must be one of {CELL_ORDERS}, got {cell_order!r}")
    if pairing == "common" and not letters:
        raise ValueError("pairing='common' pairs on the first baseline's units: give baselines")
    frame = per_query.reset_index(drop=True)
    if models is not None:
        models = list(models)
        frame = frame[frame[rows].isin(models)]
    cells = _nested_groups(frame, keys)
    if cell_order == "appearance":
        cells = sorted(((k, p) for k, p in cells if len(p)), key=lambda kp: kp[1].index[0])
    means, tests, uneven, absent = [], [], [], {}
    for key, part in cells:
        cell = dict(zip(keys, key))
        where = ", ".join(f"{k}={v!r}" for k, v in cell.items())
        if part.duplicated([rows, qid]).any():
            raise ValueError(f"per_query has several values for one ({rows}, {qid}) at {where}")
        present = list(pd.unique(part[rows]))
        order = present if models is None else [m for m in models if m in present]
        wide = part.pivot(index=qid, columns=rows, values=value)
        if pairing == "common":
            wide = wide.loc[_common_units(part, wide.columns, rows, qid, next(iter(letters)))]
        wide = wide[order]
        if wide.isna().any().any() and not part[value].isna().any():
            uneven.append(where)
        first = pd.Series(part.index, index=part[rows].to_numpy()).groupby(level=0, sort=False).min()
        # A column's mean (pandas skips NaN, summing as np.nanmean does) for the marked and
        # numeric tables alike; the plain tables without tests have always printed the
        # frame's mean, whose 2-D sum can differ in the last bit. numpy's mean lets a NaN through.
        plain = wide.mean() if not letters and skipna else None
        for m in order:
            mean = (float(plain[m]) if plain is not None else float(wide[m].mean()) if skipna
                    else float(wide[m].to_numpy(np.float64).mean()))
            means.append({**cell, rows: m, "mean": mean, "queries": int(wide[m].notna().sum()),
                          "units": len(wide), "appearance": int(first[m])})
        tested = {b: mk for b, mk in letters.items() if b in wide}
        if len(tested) < len(letters):
            absent[where] = [b for b in letters if b not in wide]
        if tested:
            tests.append(_with_wins(paired_tests(wide, tested, alpha=alpha, alternative=alternative,
                                                 too_few=too_few, raw=raw), wide).assign(**cell))
    means = pd.DataFrame(means, columns=[*keys, rows, "mean", "queries", "units", "appearance"])
    tests = pd.concat(tests, ignore_index=True) if tests else pd.DataFrame()
    if not tests.empty:
        tests = tests[[*keys, *(c for c in tests.columns if c not in keys)]]
    return Comparison(means, tests, letters, tuple(keys), rows, None if models is None else tuple(models),
                      alpha, alternative, tuple(uneven), absent)


def _common_units(part: pd.DataFrame, models, rows: str, qid: str, baseline: str) -> pd.Index:
    """The units of a cell every one of ``models`` has a row for (``pairing="common"``)."""
    # Rows, not values, make a unit common (a NaN value counts). Index.intersection sets the
    # order, which a mean's last bit depends on: in general the order of the baseline's rows
    # (pandas may sort units it holds as a range).
    units = part[part[rows] == baseline].set_index(qid).index
    for m in models.drop(baseline, errors="ignore"):
        units = units.intersection(part[part[rows] == m].set_index(qid).index)
    return units


def _with_wins(tests: pd.DataFrame, wide: pd.DataFrame) -> pd.DataFrame:
    """``tests`` with each pair's wins, ties and losses over the queries both have values for."""
    counts = []
    for r in tests.itertuples(index=False):
        d = wide[r.model].to_numpy(np.float64) - wide[r.baseline].to_numpy(np.float64)
        d = d[~np.isnan(d)]
        counts.append((int((d > 0).sum()), int((d == 0).sum()), int((d < 0).sum())))
    return tests.assign(wins=[c[0] for c in counts], ties=[c[1] for c in counts], losses=[c[2] for c in counts])
