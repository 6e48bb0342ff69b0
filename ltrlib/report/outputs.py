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

import json
import math
import numbers
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ltrlib.atomic import atomic_path, atomic_write_text, exclusive
from ltrlib.metrics.significance import MarkedTable
from ltrlib.provenance import RunFolder, validate_name

__all__ = ["LEDGER_SECTION", "METRICS_FILE", "RUN_LEVEL_FILES", "Reporter", "clear_notebook_outputs", "numbers_caption",
           "printed_table", "read_metrics", "settings_frame", "table_csv", "table_to_markdown", "validate_name",
           "write_table"]

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
