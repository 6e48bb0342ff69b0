"""Adding the numbers of marked tables to runs and study records saved before tables kept them.

Since marked tables became `ltrlib.metrics.MarkedTable`, `ltrlib.report.Reporter.table`
saves a marked table's numbers beside its printed form (``<name>_numbers.csv``: each cell's
mean and its marks as booleans), and the ledger reads only those (`ltrlib.fidelity.sources`).
A run folder or study seed record saved before then holds the printed tables alone, and the
ledger would read their claims as "not available" (`ltrlib.fidelity.sources.lacking_numbers` finds
them). `upgrade_record` adds the missing numbers of the
tables the ledger reads (`REBUILDS`), and never rewrites a file that is there:

* From per-query results, where the record keeps them (notebook 06's ``per_query_test.parquet``;
  06_neural_competitors' ``per_query_neural.parquet`` with 06's trees): the table is rebuilt
  with the builder and the arguments its notebook uses, so its numbers are those the notebook
  would have saved, at full precision.
* From the printed table itself, where no per-query results are kept (notebook 04's
  ``fusion_baselines``): means at the printed decimals, marks read from the superscripts. The
  numbers' caption (``<name>_numbers.md``) and the command's report say so.

Either way the rebuilt table, printed as `Reporter.table` prints it (`ltrlib.report.printed_table`,
`ltrlib.report.table_csv`), must equal the saved ``<name>.csv`` byte for byte; otherwise that
table is refused, with the reason naming the file, and nothing is written for it. A table the
run did not write (the control off the synthetic twin, a run without notebook 04) is skipped.
``ltrlib upgrade RUN_OR_RECORD ...`` runs it and reports per folder.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ltrlib import records
from ltrlib.bilambdamart.beyond import control_table
from ltrlib.bilambdamart.experiment import STAGE1_ROW, ndcg_table
from ltrlib.fidelity.bilambdamart import NEURAL_NOTEBOOK, NOTEBOOK
from ltrlib.fidelity.sources import recorded_seeds
from ltrlib.metrics.significance import MarkedTable
from ltrlib.report import numbers_caption, printed_table, table_csv, write_table

__all__ = ["ADDED", "PRESENT", "REBUILDS", "REFUSED", "Rebuild", "Upgrade", "record_folders", "table_folders",
           "upgrade_record"]

#: `Upgrade.outcome`: the numbers were written; they were there already (left as they are);
#: the table could not be rebuilt to print as saved (nothing written).
ADDED, PRESENT, REFUSED = "added", "present", "refused"
MERGE_NOTEBOOK = "04_linear_merge"
PER_QUERY_06 = "per_query_test.parquet"
PER_QUERY_06N = "per_query_neural.parquet"

Folders = dict  # notebook -> the directory holding its tables (`table_folders`)


@dataclass(frozen=True)
class Rebuild:
    """How one printed marked table of a notebook is rebuilt: ``build(folders, printed)``
    returns the `MarkedTable`; ``call`` is the notebook's line that builds it (a test holds
    the notebook to it), ``provenance`` what the numbers' caption says of where they come from."""

    notebook: str
    table: str
    call: str
    provenance: str
    build: Callable[[Folders, Path], MarkedTable]


@dataclass(frozen=True)
class Upgrade:
    """What `upgrade_record` did with one printed marked table (``table``, its ``.csv``): ``outcome``
    one of `ADDED`, `PRESENT`, `REFUSED`; ``note`` where the numbers come from, or why not."""

    table: Path
    outcome: str
    note: str

    @property
    def numbers(self) -> Path:
        return self.table.with_name(f"{self.table.stem}_numbers.csv")


# --------------------------------------------------------------------------- where the tables are


def table_folders(record: str | Path) -> Folders:
    """Where a run folder or a study seed record keeps each notebook's tables: a run's layout,
    ``tables/<notebook>/`` (runs; the ledger's and the neural study's seed records), or a
    Bi-LambdaMART study's seed record, notebook 06's files at its top (`ltrlib.studies.KEPT_TABLES`).
    ValueError naming the folder for anything else."""
    record = Path(record)
    if (record / "tables").is_dir():
        return {d.name: d for d in sorted((record / "tables").iterdir()) if d.is_dir()}
    if (record / "seed.json").exists():
        return {NOTEBOOK: record}
    raise ValueError(f"{record} is neither a run folder (tables/<notebook>/) nor a study seed record (seed.json): "
                     "give a run, a record under reports/<study>/seeds/, or a study folder")


def record_folders(paths: Iterable[str | Path]) -> list[Path]:
    """The folders `upgrade_record` works on: each path, a study folder (``seeds/seed<N>/``, without
    tables of its own) standing for its recorded seeds in seed order."""
    out = []
    for path in map(Path, paths):
        seeds = recorded_seeds(path)
        if seeds and not (path / "tables").is_dir():
            out += seeds.values()
        else:
            out.append(path)
    return out


# --------------------------------------------------------------------------- the rebuilds


def _per_query(folders: Folders, notebook: str, name: str) -> pd.DataFrame:
    path = folders[notebook] / name
    if not path.exists():
        raise ValueError(f"{path} is absent: no per-query results to rebuild the table from")
    return pd.read_parquet(path)


def _notebook06(folders: Folders, variant: str) -> pd.DataFrame:
    """Notebook 06's per-query results of its main run or its control, as the notebook held
    them (``model, metric, qid, value``, in its order) before `per_query_frame` joined them."""
    both = _per_query(folders, NOTEBOOK, PER_QUERY_06)
    return both[both.variant == variant].drop(columns="variant").reset_index(drop=True)


def _tree_models(rows: list[str]):
    """`ltrlib.bilambdamart.ndcg_table` of notebook 06's main run with ``rows``."""
    def build(folders: Folders, _printed: Path) -> MarkedTable:
        return ndcg_table(_notebook06(folders, "main"), rows)
    return build


def _control(folders: Folders, _printed: Path) -> MarkedTable:
    control = _notebook06(folders, "control")
    if control.empty:
        raise ValueError(f"{folders[NOTEBOOK] / PER_QUERY_06} holds no control results")
    return control_table(control)


def _neural(which: str):
    """Notebook 06_neural_competitors' table ``which`` from its per-query results and notebook
    06's trees read as the notebook reads them (`ltrlib.neural.competitors.tree_rows`); its
    networks are those its per-query results hold, in their order (the notebook's ``names``:
    each network it fitted, scored in that order)."""
    def build(folders: Folders, _printed: Path) -> MarkedTable:
        # Imported here: the networks' module loads JAX, which a record without the neural
        # notebook does without.
        from ltrlib.neural.competitors import table3, table4_rows, table5, tree_rows

        networks = _per_query(folders, NEURAL_NOTEBOOK, PER_QUERY_06N)
        trees, _ = tree_rows(folders.get(NOTEBOOK, folders[NEURAL_NOTEBOOK].parent / NOTEBOOK) / PER_QUERY_06,
                             networks)
        both = pd.concat([networks, trees], ignore_index=True)
        names = [m for m in pd.unique(networks.model) if m != STAGE1_ROW]
        if which == "table4_gsf":
            return ndcg_table(both, table4_rows(both))
        return (table3 if which == "table3_neural_lambdarank" else table5)(both, names)
    return build


def _printed_marks(markers: tuple[str, ...]) -> dict[str, frozenset[str]]:
    """Every set of ``markers`` by the suffix a `MarkedTable` prints for it (``"ᵃᵇ"``), from
    the table's own printing, so that reading a cell back cannot drift from writing it."""
    out = {}
    for n in range(len(markers) + 1):
        for chosen in itertools.combinations(markers, n):
            one = pd.DataFrame([{"model": "m", "metric": "x", "mean": 0.0,
                                 **{f"marked_{m}": m in chosen for m in markers}}])
            out[MarkedTable(one, markers).formatted().iloc[0, 0].removeprefix(f"{0.0:.4f}")] = frozenset(chosen)
    return out


def _read_cell(cell: str, suffixes: dict[str, frozenset[str]], where: str) -> tuple[float, frozenset[str]]:
    """A printed cell (``"0.7145ᵃᵇ"``) as its mean and marks; ValueError naming ``where``."""
    for suffix in sorted(suffixes, key=len, reverse=True):
        if cell.endswith(suffix):
            try:
                return float(cell[:len(cell) - len(suffix)]), suffixes[suffix]
            except ValueError:
                continue
    raise ValueError(f"{where}: cell {cell!r} is not a mean followed by marks {sorted(''.join(suffixes))}")


def _merge_table_from_print(_folders: Folders, printed: Path) -> MarkedTable:
    """`ltrlib.merge.marked_table`'s table read back from its printed CSV: rows labelled as
    the builder labels its baselines, columns ``"<split> <metric>"`` (a metric name holds no
    space), cells a mean and its superscripts; an empty cell is a model the split lacks."""
    from ltrlib.merge.analysis import BASELINE_LABEL, PAPER_BASELINES

    cells = records.read_table(printed, dtype=str, keep_default_na=False, index_col=0)
    markers = tuple(PAPER_BASELINES.values())
    labels = {m: BASELINE_LABEL.format(model=m, marker=k) for m, k in PAPER_BASELINES.items()}
    model_of = {label: m for m, label in labels.items()}
    models = [model_of.get(label, label) for label in cells.index]
    suffixes = _printed_marks(markers)
    rows = []
    for header in cells.columns:
        if " " not in header:
            raise ValueError(f"{printed}: column {header!r} is not '<split> <metric>'")
        split, metric = header.rsplit(" ", 1)
        for model, cell in zip(models, cells[header]):
            if cell != "":
                mean, marks = _read_cell(cell, suffixes, f"{printed}, row {model!r}, column {header!r}")
                rows.append({"model": model, "split": split, "metric": metric, "mean": mean,
                             **{f"marked_{m}": m in marks for m in markers}})
    numbers = pd.DataFrame(rows, columns=["model", "split", "metric", "mean", *(f"marked_{m}" for m in markers)])
    return MarkedTable(numbers, markers, columns=("split", "metric"), order=tuple(models), labels=labels)


_FULL = "at full precision"
#: Every printed marked table the ledger reads as numbers (the ``*_numbers`` of
#: `ltrlib.fidelity.ledger.notebook_tables`), and how it is rebuilt; the calls are the notebooks' own, a test holds them to it.
REBUILDS = (
    Rebuild(NOTEBOOK, "table2_lambdarank", 'rows2 = [bilambdamart.STAGE1_ROW, "λMART", "λMART*", "Bi-λMART"]',
            f"rebuilt from {PER_QUERY_06} (main) with notebook 06's ndcg_table and Table 2's rows, {_FULL}",
            _tree_models([STAGE1_ROW, "λMART", "λMART*", "Bi-λMART"])),
    Rebuild(NOTEBOOK, "table4_difference", 'bilambdamart.ndcg_table(per_query, ["Bi-λMART w/o d", "Bi-λMART"])',
            f"rebuilt from {PER_QUERY_06} (main) with notebook 06's ndcg_table and Table 4's rows, {_FULL}",
            _tree_models(["Bi-λMART w/o d", "Bi-λMART"])),
    Rebuild(NOTEBOOK, "table5_softmax", 'bilambdamart.ndcg_table(per_query, ["GBT_Softmax", "Bi-GBT_Softmax"])',
            f"rebuilt from {PER_QUERY_06} (main) with notebook 06's ndcg_table and Table 5's rows, {_FULL}",
            _tree_models(["GBT_Softmax", "Bi-GBT_Softmax"])),
    Rebuild(NOTEBOOK, "control_table2", "bilambdamart.control_table(control_pq)",
            f"rebuilt from {PER_QUERY_06} (control) with notebook 06's control_table, {_FULL}", _control),
    Rebuild(NEURAL_NOTEBOOK, "table3_neural_lambdarank", "neural.table3(both, names)",
            f"rebuilt from {PER_QUERY_06N} and notebook 06's {PER_QUERY_06} with the notebook's table3, {_FULL}",
            _neural("table3_neural_lambdarank")),
    Rebuild(NEURAL_NOTEBOOK, "table4_gsf", "bilambdamart.ndcg_table(both, neural.table4_rows(both))",
            f"rebuilt from {PER_QUERY_06N} and notebook 06's {PER_QUERY_06} with the notebook's ndcg_table, {_FULL}",
            _neural("table4_gsf")),
    Rebuild(NEURAL_NOTEBOOK, "table5_neural_softmax", "neural.table5(both, names)",
            f"rebuilt from {PER_QUERY_06N} and notebook 06's {PER_QUERY_06} with the notebook's table5, {_FULL}",
            _neural("table5_neural_softmax")),
    Rebuild(MERGE_NOTEBOOK, "fusion_baselines", "fusion_table = merge.marked_table(fused, models=fusion_rows)",
            "rebuilt from the printed table itself, notebook 04 keeping no per-query results: the means at its "
            "printed 4 decimals, NOT full precision, and the marks read from its superscripts",
            _merge_table_from_print),
)


# --------------------------------------------------------------------------- upgrading


def _printed_of(folders: Folders) -> list[tuple[Rebuild, Path]]:
    """The printed tables of `REBUILDS` that a record's ``folders`` hold (those the run wrote)."""
    return [(r, folders[r.notebook] / f"{r.table}.csv") for r in REBUILDS
            if r.notebook in folders and (folders[r.notebook] / f"{r.table}.csv").exists()]


def _first_difference(saved: bytes, rebuilt: bytes) -> str:
    saved_lines, rebuilt_lines = saved.decode("utf-8", "replace").splitlines(), rebuilt.decode("utf-8").splitlines()
    for i, (a, b) in enumerate(itertools.zip_longest(saved_lines, rebuilt_lines, fillvalue="(none)"), start=1):
        if a != b:
            return f"line {i}: saved {a!r}, rebuilt {b!r}"
    return "the same lines, other line ends or encoding"


def _rebuilt(rebuild: Rebuild, folders: Folders, printed: Path) -> MarkedTable:
    """The rebuilt table, checked to print as ``printed`` byte for byte (ValueError naming it)."""
    try:
        table = rebuild.build(folders, printed)
    except (ValueError, KeyError) as exc:
        raise ValueError(f"{printed}: cannot rebuild it ({exc.args[0] if exc.args else exc!r})") from exc
    saved, again = printed.read_bytes(), table_csv(printed_table(table, index=True), index=True)
    if again != saved:
        raise ValueError(f"{printed}: rebuilt ({rebuild.provenance}), it does not print as the saved table "
                         f"({_first_difference(saved, again)}); nothing written for it")
    return table


def _upgrade_one(rebuild: Rebuild, folders: Folders, printed: Path) -> Upgrade:
    numbers = printed.with_name(f"{rebuild.table}_numbers.csv")
    if numbers.exists():
        return Upgrade(printed, PRESENT, f"{numbers.name} is there; left as it is")
    if numbers.with_suffix(".md").exists():
        return Upgrade(printed, REFUSED, f"{numbers.with_suffix('.md')} exists without {numbers.name}; "
                                         "move it away to add the numbers")
    try:
        table = _rebuilt(rebuild, folders, printed)
        caption = (f"{numbers_caption(rebuild.table)}. Added afterwards by `ltrlib upgrade` to a record saved "
                   f"before marked tables kept their numbers: {rebuild.provenance}; printed again, it equals "
                   f"`{printed.name}` byte for byte.")
        write_table(table.numbers, numbers, caption=caption, replace=False)
    except (ValueError, FileExistsError) as exc:
        return Upgrade(printed, REFUSED, str(exc))
    return Upgrade(printed, ADDED, rebuild.provenance)


def upgrade_record(record: str | Path) -> list[Upgrade]:
    """Add the missing numbers (``<name>_numbers.csv`` and ``.md``) of every printed marked
    table of `REBUILDS` that the run folder or seed record ``record`` holds, each written
    atomically and never over an existing file; one `Upgrade` per such table, in `REBUILDS`'
    order. A table that cannot be rebuilt to print as saved is `REFUSED` (nothing written for
    it) and the others go on; a table the run did not write is skipped."""
    folders = table_folders(record)
    return [_upgrade_one(r, folders, printed) for r, printed in _printed_of(folders)]
