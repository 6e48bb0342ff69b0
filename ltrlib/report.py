"""Saving a notebook's outputs: tables, figures and scalar metrics of one run.

Layout of one run (``reports/<run_id>/``)::

    notebooks/<NN_topic>.ipynb          executed notebooks (written by ltrlib.runner)
    tables/<NN_topic>/<name>.csv + .md  every table, as data and as Markdown
    figures/<NN_topic>/<name>.png       every figure
    metrics.json                        {notebook: {key: scalar}}; keys below
    index.html                          one page: contents, then a section per notebook (write_index:
                                        the runner builds it after each notebook; `ltrlib index RUN`
                                        on demand, e.g. after working in JupyterLab)
    index.md, pages/<NN_topic>.md       the same as Markdown, a page per notebook (JupyterLab)
    run.json                            the runner's manifest

Notebooks create one :class:`Reporter` from their parameters, with their own name spelled
out (papermill gives a kernel no reliable way to learn which notebook it runs)::

    rep = Reporter(run_id, "01_category_analysis")
    rep.table(stats, "category_stats", caption="Queries per category")
    rep.figure(fig, "ndcg_by_category")
    rep.metrics(ndcg_at_10=0.71, n_queries=250)

Keys of ``metrics.json`` follow one scheme, `ltrlib.metrics.keys`.

Every file is written atomically (temporary file in the same directory, then ``os.replace``),
so an interrupted run never leaves a half-written table, figure or metrics file behind.
"""

from __future__ import annotations

import base64
import html
import json
import math
import numbers
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from ltrlib import provenance
from ltrlib.atomic import atomic_path, atomic_write_text, exclusive
from ltrlib.manifest import FILE as MANIFEST_FILE
from ltrlib.manifest import RunManifest
from ltrlib.metrics.keys import flatten_metrics, metric_key_part
from ltrlib.metrics.significance import MarkedTable
from ltrlib.provenance import RunFolder, validate_name

__all__ = [
    "Reporter",
    "RunFolder",
    "atomic_path",
    "atomic_write_text",
    "clear_notebook_outputs",
    "embedded_png",
    "flatten_metrics",
    "metric_key_part",
    "numbers_caption",
    "printed_table",
    "read_metrics",
    "settings_frame",
    "table_csv",
    "html_page",
    "validate_name",
    "write_index",
    "write_table",
]

METRICS_FILE = "metrics.json"
#: The fidelity ledger's section of ``index.html``, an HTML fragment with its pictures, written
#: beside ``fidelity.html`` by `ltrlib.fidelity.write_fidelity` (once per run: the index, rebuilt
#: after every notebook, embeds it and draws nothing).
LEDGER_SECTION = "fidelity_section.html"
# Written by ltrlib.fidelity after a batch run; linked from the index when present.
RUN_LEVEL_FILES = (("fidelity.html", "Fidelity ledger as a page"),
                   ("fidelity.md", "as Markdown"),
                   ("fidelity_claims.csv", "every claim"),
                   ("fidelity_effects.csv", "every comparison's Effect Ratio"),
                   ("fidelity.csv", "the non-IID paper's numbers"),
                   ("fidelity_published.csv", "the papers' numbers on their own dataset"))


def settings_frame(**named: Any):
    """Settings as a notebook shows them, one row per value (columns ``setting, value``):
    a dataclass or a mapping is spread into its fields (``settings.max_trees``). A tuple of
    settings objects would print as one long repr."""
    import dataclasses

    import pandas as pd

    rows = []
    for name, value in named.items():
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            value = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        if isinstance(value, Mapping):
            rows += [(f"{name}.{key}", str(v)) for key, v in value.items()]
        else:
            rows.append((name, str(value)))
    return pd.DataFrame(rows, columns=["setting", "value"])


# --------------------------------------------------------------------------- tables


def _markdown_cell(value: Any) -> str:
    if isinstance(value, float):
        text = f"{value:.6g}"
    else:
        text = str(value)
    # A pipe would end the cell and a newline the row.
    return text.replace("|", "\\|").replace("\n", " ")


def _pipe_table(df, index: bool) -> str:
    """A GitHub pipe table; the fallback when pandas' ``to_markdown`` lacks ``tabulate``."""
    frame = df.reset_index() if index else df
    header = [_markdown_cell(c) for c in frame.columns]
    numeric = [frame[c].dtype.kind in "iufb" for c in frame.columns]
    rule = ["---:" if num else ":---" for num in numeric]
    rows = [[_markdown_cell(v) for v in row] for row in frame.itertuples(index=False, name=None)]
    lines = ["| " + " | ".join(cells) + " |" for cells in (header, rule, *rows)]
    return "\n".join(lines)


def table_to_markdown(df, index: bool = False, caption: str | None = None) -> str:
    """Markdown for ``df``: an optional caption paragraph, then a pipe table."""
    try:
        body = df.to_markdown(index=index)
    except ImportError:  # pandas needs the optional `tabulate` package for to_markdown
        body = _pipe_table(df, index)
    return (f"{caption}\n\n" if caption else "") + body + "\n"


def numbers_caption(name: str) -> str:
    """The caption of ``<name>_numbers``, the numbers `Reporter.table` saves beside marked table ``name``."""
    return f"The numbers of `{name}`: means, and its marks as booleans (marked_<mark>)"


def printed_table(table: MarkedTable, index: bool = False):
    """The printed form `Reporter.table` saves of a `ltrlib.metrics.MarkedTable`: its
    `formatted` table with several column keys joined into one header; ``index=False`` moves
    the row labels into columns."""
    df = table.formatted(flat=True)
    return df if index else df.reset_index()


def table_csv(df, index: bool = False) -> bytes:
    """The bytes `Reporter.table` saves as a table's CSV: pandas' CSV of ``df``, UTF-8. One
    function, so that a check that a rebuilt table prints as a saved one (`ltrlib.fidelity.upgrade`)
    compares what the report would write."""
    return df.to_csv(index=index).encode("utf-8")


def write_table(df, csv_path: str | os.PathLike, caption: str | None = None, index: bool = False, *,
                replace: bool = True) -> Path:
    """Save ``df`` as ``csv_path`` (`table_csv`) and as Markdown beside it (``.md``, with
    ``caption``), each atomically; return the CSV path. ``replace=False``: never replace an
    existing file (`ltrlib.atomic.atomic_path`; the CSV is written first, so a FileExistsError
    for the Markdown leaves the CSV written)."""
    csv_path = Path(csv_path)
    with atomic_path(csv_path, replace=replace) as tmp:
        tmp.write_bytes(table_csv(df, index))
    atomic_write_text(csv_path.with_suffix(".md"), table_to_markdown(df, index=index, caption=caption),
                      replace=replace)
    return csv_path


# --------------------------------------------------------------------------- metrics


def _json_scalar(key: str, value: Any) -> Any:
    """Convert a metric value to a JSON scalar, or raise ValueError naming the metric."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if hasattr(value, "item") and getattr(value, "shape", None) == ():  # numpy scalar / 0-d array
        value = value.item()
    if isinstance(value, bool):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        value = float(value)
        # JSON has no NaN or infinity; null keeps the file valid and the key visible.
        return value if math.isfinite(value) else None
    raise ValueError(
        f"metric {key!r} must be a scalar (number, bool, str or None), got {type(value).__name__}"
    )


def read_metrics(run_dir: str | os.PathLike) -> dict[str, dict[str, Any]]:
    """The contents of ``<run_dir>/metrics.json`` ({} if it does not exist yet)."""
    path = Path(run_dir) / METRICS_FILE
    if not path.exists():
        return {}
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not valid JSON (line {exc.lineno}): {exc.msg}") from exc


def clear_notebook_outputs(run_dir: str | os.PathLike, notebook: str) -> None:
    """Remove one notebook's tables, figures, run files and metrics from a run (before it is
    rerun)."""
    import shutil

    run_dir = Path(run_dir)
    validate_name(notebook, "notebook name")
    for sub in ("tables", "figures", "runs"):
        shutil.rmtree(run_dir / sub / notebook, ignore_errors=True)
    with exclusive(run_dir / METRICS_FILE):  # notebooks running side by side write it too
        data = read_metrics(run_dir)
        if notebook in data:
            del data[notebook]
            atomic_write_text(run_dir / METRICS_FILE, json.dumps(data, indent=2, sort_keys=True) + "\n")


# --------------------------------------------------------------------------- Reporter


class Reporter(RunFolder):
    """Writes the tables, figures and metrics of one notebook into ``<root>/<run_id>/``.

    Parameters
    ----------
    run_id:
        The run's directory name, normally the notebook's ``run_id`` parameter
        ("interactive" when a user runs the notebook by hand).
    notebook:
        The notebook's name without extension, e.g. ``"00_dataset_overview"``. Given
        explicitly because a kernel cannot reliably tell which notebook it is running.
    root:
        Directory holding all runs; defaults to ``ltrlib.config.REPORTS_DIR``.
    data:
        The `Splits` the notebook works on. The run folder is bound to their provenance
        (`ltrlib.provenance.bind_run`): a run holding results of other data is refused here,
        before anything is computed or overwritten.
    """

    def __init__(self, run_id: str, notebook: str, root: str | os.PathLike | None = None, data=None):
        # The notebook name is checked first: binding the run folder writes to it.
        self.notebook = validate_name(notebook, "notebook name")
        super().__init__(run_id, root, data)
        self._qrels: dict[str, tuple] = {}  # qrels name -> the data it was written for (`run_file`)
        self._stems: dict[str, str] = {}  # run file name -> the model written there (`run_file`)
        self._qrels_written: set[str] = set()  # the qrels names whose file `run_file` wrote

    def __repr__(self) -> str:
        return f"Reporter(run_id={self.run_id!r}, notebook={self.notebook!r}, root={str(self.root)!r})"

    @property
    def tables_dir(self) -> Path:
        return self.run_dir / "tables" / self.notebook

    @property
    def figures_dir(self) -> Path:
        return self.run_dir / "figures" / self.notebook

    def table(self, df, name: str, caption: str | None = None, index: bool = False,
              digits: int | None = None) -> Path | None:
        """Save ``df`` as ``<name>.csv`` and ``<name>.md``; return the CSV path.

        ``index=True`` keeps the frame's index as leading column(s), for frames whose index
        carries meaning (a pivot table); tidy frames keep their keys in columns. ``digits``:
        round the numbers to that many decimals first. ``df`` None (an optional experiment
        that did not run) saves nothing and returns None.

        A `ltrlib.metrics.MarkedTable` is printed here (its `formatted` table, several column
        keys joined into one header; ``index=False`` moves the row labels into columns) and
        its numbers are saved beside it as ``<name>_numbers``: the means and the marks as
        booleans, for readers that need numbers (the fidelity ledger).
        """
        validate_name(name, "table name")
        if df is None:
            return None
        if isinstance(df, MarkedTable):
            self.table(df.numbers, f"{name}_numbers", caption=numbers_caption(name))
            df = printed_table(df, index)
        if digits is not None:
            df = df.round(digits)
        return write_table(df, self.tables_dir / f"{name}.csv", caption, index)

    def frame(self, df, name: str) -> Path:
        """Save ``df`` as ``<name>.parquet`` beside the tables, atomically; return its path.
        For data too long to read as a table (per-query results), kept for later analysis."""
        validate_name(name, "table name")
        path = self.tables_dir / f"{name}.parquet"
        with atomic_path(path) as tmp:
            df.to_parquet(tmp, index=False)
        return path

    @property
    def runs_dir(self) -> Path:
        return self.run_dir / "runs" / self.notebook

    def run_file(self, model: str, data, scores, qrels: str = "qrels", docnos=None, *,
                 other_labels=None) -> Path:
        """Save one model's ranking of ``data`` (a `ltrlib.data.Dataset`, one score per row)
        as a gzip-compressed TREC run file ``runs/<notebook>/<model>.run.gz`` and the data's
        labels as ``runs/<notebook>/<qrels>.gz`` beside it (`ltrlib.trec`: document ids, ties);
        return the run's path. Compressed because a run lists every test document: plain,
        notebook 04's runs at ``small`` would outweigh the run folder. The model's name is
        the run's tag; in the file name, characters other than letters, digits, ``.``, ``-``
        and ``_`` become ``_``, and two models whose names become one file name are refused.
        One ``qrels`` name stands for one dataset, labels included: runs judged on other data
        (or other labels of the same queries) get another name. A qrels file is written
        once per notebook, by its first run.

        ``docnos``: for a run of part of ``data``'s documents (a re-ranker's top-k lists,
        `ltrlib.trec.lists_of`), one id per score in row order, each naming a document of
        ``data``; the qrels still hold every document of ``data``.

        ``other_labels``: further qrels that judge the same ranking, ``{qrels name: Dataset}``,
        each the same queries and documents as ``data`` under other labels (FOLTR's Type 1,
        judged under each intent); the index beside the runs (`ltrlib.trec.RUN_INDEX`) lists
        the run with every one."""
        import numpy as np

        from ltrlib import trec

        # Only dots are stripped (no hidden file): stripping the "_" a replaced character left
        # made "λMART*" write "λMART", over λMART's own run.
        stem = "".join(c if c.isalnum() or c in ".-_" else "_" for c in str(model)).strip(".") or "model"
        if self._stems.setdefault(stem, model) != model:
            raise ValueError(f"run_file({model!r}): its file name {stem}.run.gz is already "
                             f"{self._stems[stem]!r}'s; give the models names that differ in letters or digits")
        judges = {qrels: data, **dict(other_labels or {})}
        for name, labelled in judges.items():
            if not (np.array_equal(labelled.query_ids, data.query_ids)
                    and np.array_equal(labelled.offsets, data.offsets)):
                raise ValueError(f"run_file({model!r}): other_labels[{name!r}] holds other queries or documents "
                                 "than data; give each the same data under other labels")
            self._check_qrels(model, name, labelled)
        if docnos is not None and np.size(docnos) != np.size(scores):
            raise ValueError(f"run_file({model!r}): docnos holds {np.size(docnos)} ids for {np.size(scores)} scores; "
                             "give one per score, in row order")
        offsets = data.offsets if docnos is None else trec.lists_of(data.query_ids, data.offsets, docnos)
        path = trec.write_run(self.runs_dir / f"{stem}.run.gz", data.query_ids, offsets, scores, model,
                              docnos=docnos)
        for name, labelled in judges.items():
            # Compressed too: FOLTR's Type 1 judges every training query under each intent.
            # Written once per notebook: rewritten with every run, they cost a third of the
            # runs' writing at `small`.
            judged = self.runs_dir / f"{name}.gz"
            if name not in self._qrels_written or not judged.exists():
                trec.write_qrels(judged, labelled.query_ids, labelled.offsets, labelled.y)
                self._qrels_written.add(name)
            trec.index_run(self.runs_dir, path.name, judged.name)
        return path

    def _check_qrels(self, model: str, qrels: str, data) -> None:
        """Refuse a second dataset (or other labels) under a qrels name of this notebook."""
        import hashlib

        import numpy as np

        key = (tuple(str(q) for q in data.query_ids), int(data.offsets[-1]),
               hashlib.sha1(np.ascontiguousarray(data.y).tobytes()).hexdigest())
        if self._qrels.setdefault(validate_name(qrels, "qrels name"), key) != key:
            raise ValueError(f"run_file({model!r}): {self.runs_dir / qrels} holds the labels of other data; "
                             "give runs judged on other data or other labels their own qrels name")

    def run_files(self, scorers, data, prefix: str = "", qrels: str = "qrels") -> dict[str, Path]:
        """Every scorer's ranking of ``data`` (each a `ltrlib.data.Scorer`: ``score(data)``)
        as a run file (`run_file`), named ``<prefix><name>``; returns name -> path."""
        return {name: self.run_file(f"{prefix}{name}", data, scorer.score(data), qrels)
                for name, scorer in scorers.items()}

    def run_file_records(self, records) -> dict[str, Path]:
        """`run_file` for each `ltrlib.trec.RunFile` record (name, data, scores, qrels, other
        labels, document ids); returns name -> path."""
        return {r.name: self.run_file(r.name, r.data, r.scores, qrels=r.qrels, docnos=r.docnos,
                                      other_labels=r.other_labels)
                for r in records}

    def figure(self, fig, name: str, dpi: int = 120, close: bool = False,
               caption: str | None = None) -> None:
        """Save the matplotlib figure ``fig`` as ``<name>.png`` (and ``caption``, shown under
        it in the index, as ``<name>.caption.txt``).

        The figure stays open by default so the notebook still displays it; pass
        ``close=True`` in loops that draw many figures. Returns nothing, so a notebook cell
        ending in it echoes nothing (`figure_path` says where it went). ``fig`` None (a plot
        of an optional table that was not made) saves nothing, as `table` does.
        """
        if fig is None:
            return
        path = self.figure_path(name)
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format="png", dpi=dpi, bbox_inches="tight")
        caption_path = path.with_suffix(".caption.txt")
        if caption:
            atomic_write_text(caption_path, caption.strip() + "\n")
        else:
            caption_path.unlink(missing_ok=True)
        if close:
            import matplotlib.pyplot as plt

            plt.close(fig)

    def figures(self, figs: Mapping[str, Any], prefix: str = "", close: bool = False,
                caption: str | None = None) -> None:
        """`figure` for each of ``figs`` (name -> figure), saved as ``<prefix><name>``: a
        notebook's figure per setting or per model in one call, each with ``caption``."""
        for name, fig in figs.items():
            self.figure(fig, f"{prefix}{name}", close=close, caption=caption)

    def show(self, view, name: str | None = None) -> None:
        """Show what an explorer of `ltrlib.plots` returned for the notebook's
        ``interactive`` flag: a batch run's figure is saved as ``name`` (as `figure` saves
        it; the notebook displays it), a widget or a table is displayed, None shows nothing,
        and a tuple shows each of its views in turn. Returns nothing, so a cell ending in it
        echoes nothing more."""
        import matplotlib.figure

        if view is None:
            return
        if isinstance(view, tuple):
            for part in view:
                self.show(part, name)
            return
        if isinstance(view, matplotlib.figure.Figure):
            if not name:
                raise ValueError("Reporter.show: a figure needs a name to be saved under")
            self.figure(view, name)
            return
        from IPython.display import display

        display(view)

    def figure_path(self, name: str) -> Path:
        """Where `figure` saves the figure ``name``."""
        return self.figures_dir / f"{validate_name(name, 'figure name')}.png"

    def metrics(self, **values: Any) -> None:
        """Merge scalar results into ``metrics.json`` under this notebook's key.

        Values must be scalars; NaN and infinities are stored as null. Notebooks of one run
        may execute side by side (`ltrlib.runner.run_all`'s ``jobs``), so the
        read-modify-write holds the file's lock (`ltrlib.atomic.exclusive`) and replaces it
        atomically. Returns nothing (no raw dict at the end of a notebook); `read_metrics`
        reads them back.
        """
        converted = {validate_name(k, "metric name"): _json_scalar(k, v) for k, v in values.items()}
        path = self.run_dir / METRICS_FILE
        with exclusive(path):
            data = read_metrics(self.run_dir)
            data[self.notebook] = {**data.get(self.notebook, {}), **converted}
            atomic_write_text(path, json.dumps(data, indent=2, sort_keys=True) + "\n")


# --------------------------------------------------------------------------- index


def _href(path: Path, run_dir: Path) -> str:
    return quote(path.relative_to(run_dir).as_posix())


def _collect(run_dir: Path) -> dict[str, dict[str, Any]]:
    """Per notebook: status from run.json, executed notebook, tables and figures on disk."""
    manifest = RunManifest.read(run_dir)
    statuses = manifest.statuses() if manifest else {}

    names = set(statuses)
    for sub in ("tables", "figures"):
        if (run_dir / sub).is_dir():
            names.update(p.name for p in (run_dir / sub).iterdir() if p.is_dir())
    nb_dir = run_dir / "notebooks"
    if nb_dir.is_dir():
        names.update(p.name.split(".")[0] for p in nb_dir.glob("*.ipynb") if not p.name.startswith("."))

    entries = {}
    for name in sorted(names):
        executed = nb_dir / f"{name}.ipynb"
        failed = nb_dir / f"{name}.failed.ipynb"
        tables_dir = run_dir / "tables" / name
        figures_dir = run_dir / "figures" / name
        as_html = nb_dir / f"{name}.html"
        entries[name] = {
            "status": statuses.get(name),
            "notebook": executed if executed.exists() else None,
            "notebook_html": as_html if as_html.exists() and executed.exists() else None,
            "failed_notebook": failed if failed.exists() else None,
            "tables": sorted(tables_dir.glob("[!.]*.csv")) if tables_dir.is_dir() else [],
            "figures": sorted(figures_dir.glob("[!.]*.png")) if figures_dir.is_dir() else [],
        }
    return entries


#: The per-notebook Markdown pages of a run (``pages/<NN_topic>.md``), which ``index.md``
#: lists: JupyterLab renders them with their figures (its Markdown preview fetches images as
#: the app itself, where its HTML viewer's sandbox is refused them).
PAGES_DIR = "pages"


@dataclass(frozen=True)
class _TableView:
    """One table as both indexes show it, read once: its caption, its first
    `INDEX_TABLE_ROWS` rows (or why it could not be read) and how many rows it has beyond."""

    csv: Path
    caption: str
    head: Any = None  # a DataFrame, None when unreadable
    error: str = ""
    more: int = 0
    frame: Any = None  # the whole table, for its HTML page and the index's fold


@dataclass(frozen=True)
class _NotebookView:
    name: str
    status: str
    notebook: Path | None
    notebook_html: Path | None
    failed_notebook: Path | None
    tables: tuple[_TableView, ...]
    figures: tuple[tuple[Path, str], ...]  # (png, caption)


def _table_view(csv: Path) -> _TableView:
    import pandas as pd

    caption = _table_caption(csv) or csv.stem.replace("_", " ")
    try:
        frame = pd.read_csv(csv)
    except (pd.errors.EmptyDataError, pd.errors.ParserError) as exc:
        return _TableView(csv, caption, error=str(exc))
    return _TableView(csv, caption, frame.head(INDEX_TABLE_ROWS), more=len(frame) - INDEX_TABLE_ROWS, frame=frame)


def _run_view(run_dir: Path) -> tuple[list[_NotebookView], list[tuple[str, str]]]:
    """What both indexes show, gathered once: each notebook's view (`_collect`, its tables
    read and its captions found) and the run-level files as (label, file)."""
    notebooks = [_NotebookView(name, e["status"] or "", e["notebook"], e["notebook_html"], e["failed_notebook"],
                               tuple(_table_view(csv) for csv in e["tables"]),
                               tuple((png, _figure_caption(png)) for png in e["figures"]))
                 for name, e in _collect(run_dir).items()]
    links = [("Metrics", METRICS_FILE)] if (run_dir / METRICS_FILE).exists() else []
    if (run_dir / MANIFEST_FILE).exists():
        links.append(("Run manifest", MANIFEST_FILE))
    links += [(label, f) for f, label in RUN_LEVEL_FILES if (run_dir / f).exists()]
    return notebooks, links


def _index_markdown(run_dir: Path, notebooks: list[_NotebookView], links: list[tuple[str, str]]) -> str:
    """``index.md``: the run's files and one line per notebook, linking its page."""
    lines = [f"# Report {run_dir.name}", ""]
    held = provenance.read_run(run_dir)
    if held:
        lines += [f"Data: {provenance.summary(held)}", ""]
    if links:
        lines += [" · ".join(f"{label}: [{f}]({f})" for label, f in links), ""]
    if notebooks:
        lines += ["| notebook | status | tables | figures |", "|---|---|--:|--:|"]
        lines += [f"| [{nb.name}]({PAGES_DIR}/{quote(nb.name)}.md) | {nb.status} | {len(nb.tables)} | "
                  f"{len(nb.figures)} |" for nb in notebooks]
        lines.append("")
    return "\n".join(lines)


def _page_markdown(nb: _NotebookView, run_dir: Path) -> str:
    """``pages/<name>.md``: one notebook's executed notebook, figures (the paper's first) and
    tables (their first `INDEX_TABLE_ROWS` rows), every link relative to the page."""
    def href(path: Path) -> str:
        return "../" + _href(path, run_dir)

    status = f" ({nb.status})" if nb.status else ""
    lines = [f"# {nb.name}{status}", "", f"[Report {run_dir.name}](../index.md)", ""]
    if nb.notebook:
        page = f" ([as a page]({href(nb.notebook_html)}))" if nb.notebook_html else ""
        lines.append(f"- Executed notebook: [{nb.notebook.name}]({href(nb.notebook)}){page}")
    if nb.failed_notebook:
        lines.append(f"- Failed notebook (partial): [{nb.failed_notebook.name}]({href(nb.failed_notebook)})")
    lines.append("")
    for png, caption in _papers_figures_first(nb.figures):
        lines += [f"## Figure `{png.stem}`", "", caption, "", f"![{png.stem}]({href(png)})", ""]
    for t in nb.tables:
        lines += [f"## Table `{t.csv.stem}`", "", t.caption, ""]
        if t.head is None:
            lines += [f"unreadable: {t.error}", ""]
            continue
        rest = f"; {t.more} more rows there" if t.more > 0 else ""
        lines += [table_to_markdown(t.head), "", f"[csv]({href(t.csv)}){rest}", ""]
    return "\n".join(lines)


#: Rows of a table in the Markdown pages; the CSV holds them all.
INDEX_TABLE_ROWS = 25
#: Rows of a table index.html shows open; all of them (up to `FOLDED_TABLE_ROWS` more) one click
#: away in a fold, which its "table" link opens, and every row on the table's own page.
OPEN_TABLE_ROWS = 5
FOLDED_TABLE_ROWS = 500


def _table_caption(csv: Path) -> str:
    """The caption `Reporter.table` wrote above the Markdown table, or ""."""
    md = csv.with_suffix(".md")
    if not md.exists():
        return ""
    head = md.read_text(encoding="utf-8").split("\n\n", 1)[0]
    return "" if head.lstrip().startswith("|") else head.strip()


def _figure_caption(png: Path) -> str:
    """The caption given to `Reporter.figure`, else the figure's name in words."""
    path = png.with_suffix(".caption.txt")
    return path.read_text(encoding="utf-8").strip() if path.exists() else png.stem.replace("_", " ")


def _frame_html(frame) -> str:
    return frame.to_html(index=False, border=0, na_rep="", float_format=lambda v: f"{v:.4g}")


_STYLE = ("body{font-family:sans-serif;max-width:75em;margin:auto;padding:0 1em}"
          "img{max-width:100%;border:1px solid #ddd}figure{margin:1.2em 0}"
          "figcaption{margin:.3em 0;color:#333}table{border-collapse:collapse;font-size:90%}"
          "th,td{padding:.15em .6em;border-bottom:1px solid #ddd;text-align:right;vertical-align:top}"
          "figure.table{overflow-x:auto}summary{cursor:pointer}summary h2{display:inline}"
          "details{margin:.6em 0}details.section{border-top:1px solid #ddd;padding-top:.4em}"
          "table.claims td{text-align:left}table.claims details{margin:0;max-width:40em}"
          "table.claims details p{margin:.2em 0}tr.v-holds td:nth-child(3){color:#2e7d3a}"
          "tr.v-does-not-hold td:nth-child(3){color:#b23b2a}"
          # Two figures, or two tables, side by side: a section shows its results in half the height.
          ".grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(34em,1fr));gap:0 1.5em}"
          ".grid>figure{margin:.8em 0;min-width:0}"
          # A table's fold of all its rows, open, replaces its first rows above it.
          "figure.table:has(>details[open])>.head{display:none}"
          # A link to a table's rows shows its caption above them.
          "figure.table [id]{scroll-margin-top:4em}")

#: Links into the page open what they name and every fold around it: a closed <details> ignores
#: a link to it (Chromium opens the folds around a link's target, but not the target itself).
_OPEN_ON_LINK = ("<script>function ltrOpen(id){var d=document.getElementById(id);if(!d)return;"
                 "for(var p=d;p;p=p.parentElement)if(p.tagName==='DETAILS')p.open=true;d.scrollIntoView();}"
                 "document.addEventListener('click',function(e){var a=e.target.closest('a[href^=\"#\"]');"
                 "if(a)ltrOpen(decodeURIComponent(a.getAttribute('href').slice(1)));});"
                 "window.addEventListener('hashchange',function(){ltrOpen(decodeURIComponent(location.hash.slice(1)));});"
                 "if(location.hash)ltrOpen(decodeURIComponent(location.hash.slice(1)));</script>")


def html_page(title: str, body: str) -> str:
    """A self-contained HTML page in the report's style: ``body`` under an ``<h1>`` of
    ``title`` (escaped here; ``body`` is HTML)."""
    esc = html.escape(title)
    return ("<!DOCTYPE html>\n"
            f'<html lang="en"><head><meta charset="utf-8"><title>{esc}</title><style>{_STYLE}</style></head>'
            f"<body><h1>{esc}</h1>\n{body}\n{_OPEN_ON_LINK}</body></html>\n")


def _table_page_path(csv: Path) -> Path:
    return csv.with_suffix(".html")


def _write_table_page(t: _TableView, run_dir: Path) -> None:
    """``<name>.html`` beside the table's CSV: every row, readable where a CSV link would
    download. Rewritten only when older than its CSV (the index is rebuilt after every notebook)."""
    page = _table_page_path(t.csv)
    if t.frame is None or (page.exists() and page.stat().st_mtime >= t.csv.stat().st_mtime):
        return
    back = "../" * len(t.csv.relative_to(run_dir).parts[:-1]) + "index.html"
    body = (f"<p>{html.escape(t.caption)}</p><p><small>{len(t.frame)} rows · "
            f'<a href="{quote(t.csv.name)}" download>csv</a> · <a href="{back}">report</a></small></p>'
            f'<figure class="table">{_frame_html(t.frame)}</figure>')
    atomic_write_text(page, html_page(f"{t.csv.parent.name} / {t.csv.stem}", body))


def _table_id(t: _TableView) -> str:
    """The id of a table's rows in the index, which its "table" link names."""
    return f"table-{t.csv.parent.name}-{t.csv.stem}"


def _table_html(t: _TableView, run_dir: Path) -> str:
    """A table in the index: its first `OPEN_TABLE_ROWS` rows, then a fold of all its rows (up
    to `OPEN_TABLE_ROWS` + `FOLDED_TABLE_ROWS`; a longer table's fold links its page, which
    has every row), and links to those rows, its CSV (a download) and its Markdown.

    The "table" link is a link into the page (``#table-<notebook>-<name>``), not to the
    table's page: inside JupyterLab's HTML viewer the index is a ``blob:`` document whose
    ``<base>`` is ``files/.../index.html?_xsrf=...``, and a relative link to another file
    loses that ``_xsrf`` and, from a ``blob:`` document, any Referer, so the Jupyter server
    refuses it (403 "Blocking request from unknown origin"). A link to ``#id`` keeps the
    base's query; the viewer's frame reloads the index from the server at that id, and
    Chromium opens the closed folds around the target of a fragment link, even with scripts
    off (the viewer's sandbox). In a browser the page's script opens them. From there the
    server sends no other file (the page it serves is sandboxed: its links carry no login),
    so the link to a long table's page opens a new tab, which the viewer blocks without
    replacing the report.
    """
    esc = html.escape
    if t.head is None:
        return f"<p>Table <code>{esc(t.csv.stem)}</code>: unreadable ({esc(t.error)})</p>"
    rows_id = _table_id(t)
    links = (f'<a href="#{quote(rows_id)}">table</a> · '
             f'<a href="{_href(t.csv, run_dir)}" download>csv</a>')
    md = t.csv.with_suffix(".md")
    if md.exists():
        links += f' · <a href="{_href(md, run_dir)}">md</a>'
    n = len(t.frame)
    if n <= OPEN_TABLE_ROWS:
        body = f'<div id="{esc(rows_id)}">{_frame_html(t.frame)}</div>'
    else:
        shown = t.frame.head(OPEN_TABLE_ROWS + FOLDED_TABLE_ROWS)
        whole = ""
        if len(shown) < n:
            page = _href(_table_page_path(t.csv), run_dir)
            whole = (f"<p><small>The first {len(shown)} of {n} rows; every row on the table's page, "
                     f'<a href="{page}" target="_blank">{esc(unquote(page))}</a> (in JupyterLab, open it from '
                     "the file browser).</small></p>")
        body = (f'<div class="head">{_frame_html(t.frame.head(OPEN_TABLE_ROWS))}</div>'
                f'<details><summary>all {n} rows</summary><div id="{esc(rows_id)}">{_frame_html(shown)}{whole}'
                "</div></details>")
    return (f'<figure class="table"><figcaption><b>{esc(t.csv.stem)}</b>: {esc(t.caption)} '
            f"<small>({links}; {n} rows)</small></figcaption>{body}</figure>")


def embedded_png(png: Path | bytes) -> str:
    """A figure (a PNG file, or its bytes) as a ``data:`` URI. JupyterLab's HTML viewer shows
    a page in a sandbox whose requests for files the server refuses (403, no referer), and a
    browser opening the page as a file cannot always read its neighbours: inside the page,
    the figure shows anywhere."""
    data = png if isinstance(png, bytes) else png.read_bytes()
    return "data:image/png;base64," + base64.b64encode(data).decode("ascii")


def _papers_figures_first(figures: tuple[tuple[Path, str], ...]) -> list[tuple[Path, str]]:
    """The paper's figures (their captions name a figure of it: "Figure 3: ...") first, each
    group in its own order."""
    def paper_first(item):
        return not item[1].lstrip().lower().startswith(("figure", "fig.", "paper's figure"))

    return sorted(figures, key=paper_first)


def _section_html(nb: _NotebookView, run_dir: Path) -> list[str]:
    """One notebook's collapsible section: its links, its figures (the paper's first), then
    its tables."""
    esc = html.escape
    status = f" <small>({esc(nb.status)})</small>" if nb.status else ""
    out = [f'<details class="section" id="{esc(nb.name)}"><summary><h2>{esc(nb.name)}{status}</h2></summary>']
    items = []
    if nb.notebook:
        page = (f'<a href="{_href(nb.notebook_html, run_dir)}">as a page</a>, ' if nb.notebook_html else "")
        items.append(f'Executed notebook: {page}<a href="{_href(nb.notebook, run_dir)}">{esc(nb.notebook.name)}</a>')
    if nb.failed_notebook:
        fn = nb.failed_notebook
        items.append(f'Failed notebook (partial): <a href="{_href(fn, run_dir)}">{esc(fn.name)}</a>')
    if items:
        out.append("<ul>" + "".join(f"<li>{i}</li>" for i in items) + "</ul>")
    out.append('<div class="grid">')
    for png, caption in _papers_figures_first(nb.figures):
        out.append(f'<figure><img src="{embedded_png(png)}" alt="{esc(png.stem)}">'
                   f"<figcaption><b>{esc(png.stem)}</b>: {esc(caption)} "
                   f'<small>(<a href="{_href(png, run_dir)}">png</a>)</small></figcaption></figure>')
    out.append('</div><div class="grid">')
    out.extend(_table_html(t, run_dir) for t in nb.tables)
    out.append("</div></details>")
    return out


def _index_html(run_dir: Path, notebooks: list[_NotebookView], links: list[tuple[str, str]]) -> str:
    """``index.html``: one self-contained page, a contents table first, the fidelity ledger
    (`LEDGER_SECTION`, when the run has one) and then one collapsible section per notebook
    (closed: a whole run's figures make a very long page; a contents link opens its section)."""
    esc = html.escape
    out = []
    held = provenance.read_run(run_dir)
    if held:
        out.append(f"<p>Data: {esc(provenance.summary(held))}</p>")
    if links:
        out.append("<p>" + " &middot; ".join(f'{esc(label)}: <a href="{f}">{f}</a>' for label, f in links) + "</p>")
    ledger = run_dir / LEDGER_SECTION
    if notebooks:
        rows = "".join(f'<tr><td style="text-align:left"><a href="#{esc(nb.name)}">{esc(nb.name)}</a></td>'
                       f"<td>{esc(nb.status)}</td><td>{len(nb.tables)}</td><td>{len(nb.figures)}</td></tr>"
                       for nb in notebooks)
        first = ('<tr><td style="text-align:left"><a href="#ledger">fidelity ledger</a></td>'
                 "<td></td><td></td><td></td></tr>" if ledger.exists() else "")
        out.append("<table><tr><th>notebook</th><th>status</th><th>tables</th><th>figures</th></tr>"
                   f"{first}{rows}</table><p><small>Each section opens on a click.</small></p>")
    if ledger.exists():
        out += ['<details class="section" id="ledger"><summary><h2>Fidelity ledger</h2></summary>',
                ledger.read_text(encoding="utf-8"), "</details>"]
    for nb in notebooks:
        out += _section_html(nb, run_dir)
    return html_page(f"Report {run_dir.name}", "\n".join(out))


def write_index(run_dir: str | os.PathLike) -> Path:
    """Write ``index.html``, ``index.md`` and its ``pages/`` for a run directory; return
    the HTML path.

    Built from what is on disk (plus statuses from ``run.json``), so it also describes a
    partial or failed run. All links are relative and the HTML page carries its figures:
    the directory can be moved or zipped, and both indexes read inside JupyterLab.
    """
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise ValueError(f"run directory {run_dir} does not exist")
    notebooks, links = _run_view(run_dir)
    pages = run_dir / PAGES_DIR
    if notebooks:
        pages.mkdir(exist_ok=True)
    for nb in notebooks:
        atomic_write_text(pages / f"{nb.name}.md", _page_markdown(nb, run_dir))
        for t in nb.tables:
            _write_table_page(t, run_dir)
    names = {nb.name for nb in notebooks}
    for stale in pages.glob("[!.]*.md") if pages.is_dir() else ():
        if stale.stem not in names:
            stale.unlink()
    atomic_write_text(run_dir / "index.md", _index_markdown(run_dir, notebooks, links))
    return atomic_write_text(run_dir / "index.html", _index_html(run_dir, notebooks, links))
