"""A run folder's TREC files: each notebook's run files under ``runs/<notebook>/``, the
index beside them that says which qrels judge each (`RUN_INDEX`), and finding one
(`list_runs`, `find_run`). Missing files an index lists are named, never skipped."""

from __future__ import annotations

import io
import os
import warnings
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

from ltrlib.atomic import atomic_path
from ltrlib.trec.files import TrecFormatError, TrecWarning, filled_lines, read_run

__all__ = ["RUN_INDEX", "find_run", "index_run", "list_runs"]


#: A notebook's run files and the qrels that judge each (`index_run`), beside them.
RUN_INDEX = "runs.csv"


def _read_index(folder: Path) -> pd.DataFrame:
    """``folder``'s `RUN_INDEX` as ``run, qrels, line`` (each row's line in the file);
    empty where there is none. `TrecFormatError` naming it where it is not one."""
    path = folder / RUN_INDEX
    if not path.exists():
        return pd.DataFrame({"run": [], "qrels": [], "line": []}).astype({"run": str, "qrels": str, "line": np.int64})
    try:
        text = path.read_text(encoding="utf-8")
        index = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
    except (UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as err:
        raise TrecFormatError(f"{path}: not a {RUN_INDEX} of columns run,qrels ({err})", path) from None
    if list(index.columns) != ["run", "qrels"]:
        raise TrecFormatError(f"{path}: line 1: columns {','.join(index.columns)}, not run,qrels", path, 1)
    return index.assign(line=filled_lines(text)[1:len(index) + 1])  # after the header


def index_run(folder: str | os.PathLike, run: str, qrels: str) -> None:
    """Record in ``folder``'s `RUN_INDEX` that the qrels file ``qrels`` judges the run file
    ``run`` (a run judged by several, as FOLTR's Type 1 by each intent's, lists each)."""
    path = Path(folder) / RUN_INDEX
    index = _read_index(Path(folder))[["run", "qrels"]]
    if not ((index.run == run) & (index.qrels == qrels)).any():
        index = pd.concat([index, pd.DataFrame({"run": [run], "qrels": [qrels]})], ignore_index=True)
        with atomic_path(path) as tmp:
            index.to_csv(tmp, index=False)


class _Missing(NamedTuple):
    """A file a notebook's `RUN_INDEX` lists that is not on disk."""

    notebook: str
    name: str  # the run's or the qrels' file name
    message: str
    index: Path
    line: int


def _listing(run_dir: str | os.PathLike) -> tuple[pd.DataFrame, list[_Missing]]:
    """`list_runs`'s table, and the files the run folder's indexes list that are missing."""
    rows, indexes = [], {}
    for path in sorted(Path(run_dir).glob("runs/*/*.run*")):
        if not path.name.endswith((".run", ".run.gz")):
            continue
        if path.parent not in indexes:
            indexes[path.parent] = _read_index(path.parent)
        judged = indexes[path.parent]
        run = read_run(path)
        rows.append({"notebook": path.parent.name, "run": path.name, "tag": run.tag.iloc[0] if len(run) else "",
                     "queries": run.qid.nunique(), "documents": len(run),
                     "kilobytes": round(path.stat().st_size / 1024, 1),
                     "qrels": ", ".join(judged.qrels[judged.run == path.name])})
    table = pd.DataFrame(rows, columns=["notebook", "run", "tag", "queries", "documents", "kilobytes", "qrels"])
    missing, seen = [], set()
    for index_path in sorted(Path(run_dir).glob(f"runs/*/{RUN_INDEX}")):
        folder = index_path.parent
        index = indexes[folder] if folder in indexes else _read_index(folder)
        for r in index.itertuples():
            for name, what in ((r.run, f"lists the run {r.run}"), (r.qrels, f"judges {r.run} by {r.qrels}")):
                if name and (folder, name) not in seen and not (folder / name).exists():
                    seen.add((folder, name))
                    missing.append(_Missing(folder.name, name, f"{index_path}: line {r.line} {what}, but "
                                            f"{folder / name} is missing", index_path, r.line))
    return table, missing


def list_runs(run_dir: str | os.PathLike, strict: bool = False) -> pd.DataFrame:
    """The run files of a run folder (``runs/<notebook>/*.run.gz``), one row each:
    ``notebook, run, tag, queries, documents, kilobytes, qrels`` (the qrels files that judge
    it, from the notebook's `RUN_INDEX`). Empty when the run wrote none. A run or qrels file
    an index lists but that is missing on disk is named in a `TrecWarning` (the listing
    shows what is there), or, with ``strict``, in a `TrecFormatError`."""
    table, missing = _listing(run_dir)
    for m in missing:
        if strict:
            raise TrecFormatError(m.message, m.index, m.line)
        warnings.warn(m.message, TrecWarning, stacklevel=2)
    return table


def find_run(run_dir: str | os.PathLike, notebook: str, model: str, qrels: str = "") -> tuple[Path, Path]:
    """The run file of ``model`` in notebook ``notebook`` of a run folder, and the qrels that
    judges it. ``notebook`` is its number (``08``) or its folder's name (a number two
    notebooks share, as 06's, is refused); ``model`` the run file's name, with or without
    ``.run.gz``, or its tag; ``qrels`` names one where `RUN_INDEX` lists several (FOLTR's
    Type 1). ValueError naming what is there otherwise; `TrecFormatError` where the run or
    its qrels is listed in the notebook's `RUN_INDEX` but missing on disk."""
    runs, missing = _listing(run_dir)  # other runs' missing files are not this call's business
    if runs.empty and not missing:
        raise ValueError(f"{run_dir}: no run files (notebooks 03-09 write them under runs/)")
    folders = sorted(set(runs.notebook) | {m.notebook for m in missing})
    stem = str(notebook)
    chosen = [f for f in folders if f == stem or stem.isdigit() and int(f.split("_", 1)[0]) == int(stem)]
    if len(chosen) != 1:
        raise ValueError(f"{run_dir}: notebook {notebook!r} matches {len(chosen)} run folders; give one's "
                         f"name (there: {', '.join(folders)})")
    of = runs[runs.notebook == chosen[0]]
    hit = of[(of.run == model) | (of.run == f"{model}.run.gz") | (of.run == f"{model}.run") | (of.tag == model)]
    lost = {m.name: m for m in missing if m.notebook == chosen[0]}
    for name in (model, f"{model}.run.gz", f"{model}.run"):
        if hit.empty and name in lost:
            raise TrecFormatError(lost[name].message, lost[name].index, lost[name].line)
    if hit.empty:
        raise ValueError(f"{run_dir}: no run {model!r} in {chosen[0]} (runs: {', '.join(of.run)})")
    row = hit.iloc[0]
    judged = [q for q in row.qrels.split(", ") if q] or ["qrels.gz"]
    if qrels:
        if qrels not in judged:
            raise ValueError(f"{run_dir}: {row.run} is judged by {', '.join(judged)}, not by {qrels!r}")
        judged = [qrels]
    if len(judged) > 1:
        raise ValueError(f"{run_dir}: {row.run} is judged by {', '.join(judged)}: name one (--qrels)")
    folder = Path(run_dir) / "runs" / chosen[0]
    if judged[0] in lost:
        raise TrecFormatError(lost[judged[0]].message, lost[judged[0]].index, lost[judged[0]].line)
    if not (folder / judged[0]).exists():
        raise ValueError(f"{folder}: no qrels for {row.run}: {RUN_INDEX} lists none and {judged[0]} is missing")
    return folder / row.run, folder / judged[0]
