"""TREC run files and qrels: a model's test ranking in the form trec_eval, ranx,
ir_measures and repro_eval read.

A run file has TREC's six columns, one line per document of every query::

    qid Q0 docno rank score tag

and a qrels file four (``qid 0 docno rel``), one line per judged document (every document of
the data, label 0 included: trec_eval then counts it as judged non-relevant, as our metrics
do).

**Document ids** (``docno``). The LETOR formats carry no document id our readers keep, so a
document is named by its query and its row within the query in the data as read:
``<qid>-<row>``, the row zero-padded to the longest query's width (``17-007``). The id is
stable for a dataset (the same file, the same scale and seed of the twin) and its lexical
order is the rows' order.

**Ties.** Our metrics rank a query's documents by descending score, tied scores in row
order (a stable sort, LightGBM's convention, `ltrlib.metrics.ranking`). The ``rank`` column
states that order. trec_eval ignores the rank column and re-sorts by score, breaking ties by
``docno``; ranx sorts by score with an unstable sort. So where a
query has tied scores those tools may order it otherwise, and its metrics may differ from
ours; where scores are distinct they agree (tests/test_trec.py checks NDCG@k, MAP and MRR
query by query against ranx and ir_measures).

**Scores** are written with 17 significant digits, so a float64 score reads back exactly
and ties stay ties. A file whose name ends in ``.gz`` is gzip-compressed.
"""

from __future__ import annotations

import gzip
import io
import os
from pathlib import Path

import numpy as np
import pandas as pd

from ltrlib.atomic import atomic_path

__all__ = ["RUN_COLUMNS", "QRELS_COLUMNS", "docnos", "import_ranx", "list_runs", "read_qrels", "read_run",
           "run_order", "write_qrels", "write_run"]


def import_ranx():
    """``import ranx``, keeping numba's threading layer as it was. ranx sets numba's layer to
    ``workqueue`` when imported; that layer aborts the process when two threads launch
    parallel kernels at once, as FOLTR's Dask threads do with our NDCG kernel (a pytest
    worker died of it). Every import of ranx in ltrlib and its tests goes through here."""
    import numba

    layer = numba.config.THREADING_LAYER
    try:
        import ranx
    finally:
        numba.config.THREADING_LAYER = layer
    return ranx

RUN_COLUMNS = ("qid", "Q0", "docno", "rank", "score", "tag")
QRELS_COLUMNS = ("qid", "iteration", "docno", "rel")


def docnos(query_ids, offsets) -> np.ndarray:
    """Every document's id, ``<qid>-<row within its query>``, the row zero-padded to the
    longest query's width (module docstring), in the data's row order."""
    offsets = np.asarray(offsets, dtype=np.int64)
    sizes = np.diff(offsets)
    if np.asarray(query_ids).shape != sizes.shape:
        raise ValueError(f"docnos: {np.asarray(query_ids).size} query ids for {sizes.size} queries")
    if offsets[-1] == 0:  # no document (an empty D_merge of a small collection)
        return np.empty(0, dtype=str)
    width = len(str(max(int(sizes.max(initial=1)) - 1, 0)))
    rows = np.arange(offsets[-1]) - np.repeat(offsets[:-1], sizes)
    qids = np.repeat(np.asarray(query_ids).astype(str), sizes)
    return np.char.add(np.char.add(qids, "-"), np.char.zfill(rows.astype(str), width))


def run_order(scores, offsets) -> np.ndarray:
    """The rows in ranked order: query by query, descending score, ties in row order (our
    metrics' order, `ltrlib.metrics.ranking`)."""
    scores = np.asarray(scores, dtype=np.float64)
    offsets = np.asarray(offsets, dtype=np.int64)
    if scores.shape != (offsets[-1],):
        raise ValueError(f"run_order: {scores.size} scores for {offsets[-1]} documents")
    if not np.all(np.isfinite(scores)):
        bad = int(np.flatnonzero(~np.isfinite(scores))[0])
        raise ValueError(f"run_order: score of row {bad} is {scores[bad]}; a run needs finite scores")
    query = np.repeat(np.arange(offsets.size - 1), np.diff(offsets))
    # lexsort's last key is the primary one: query, then descending score, then row.
    return np.lexsort((np.arange(scores.size), -scores, query))


def _open_text(path: Path, mode: str):
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path, mode + "b"), encoding="utf-8")
    return open(path, mode, encoding="utf-8")


def _tag(tag: str) -> str:
    tag = "_".join(str(tag).split())
    if not tag:
        raise ValueError("a run's tag must not be empty")
    return tag


def write_run(path: str | os.PathLike, query_ids, offsets, scores, tag: str) -> Path:
    """Write one model's ranking of a dataset's queries (``query_ids``, ``offsets``, one score
    per document) as a TREC run file, atomically; ``tag`` names the model (whitespace becomes
    ``_``). Returns the path."""
    order = run_order(scores, offsets)
    offsets = np.asarray(offsets, dtype=np.int64)
    sizes = np.diff(offsets)
    qid = np.repeat(np.asarray(query_ids).astype(str), sizes)[order]
    rank = np.arange(order.size) - np.repeat(offsets[:-1], sizes) + 1
    frame = pd.DataFrame({"qid": qid, "Q0": "Q0", "docno": docnos(query_ids, offsets)[order], "rank": rank,
                          "score": np.char.mod("%.17g", np.asarray(scores, dtype=np.float64)[order]),
                          "tag": _tag(tag)})
    return _write(Path(path), frame)


def write_qrels(path: str | os.PathLike, query_ids, offsets, labels) -> Path:
    """Write a dataset's relevance labels as TREC qrels (``qid 0 docno rel``, every document),
    atomically. Returns the path."""
    offsets = np.asarray(offsets, dtype=np.int64)
    labels = np.asarray(labels)
    if labels.shape != (offsets[-1],):
        raise ValueError(f"write_qrels: {labels.size} labels for {offsets[-1]} documents")
    frame = pd.DataFrame({"qid": np.repeat(np.asarray(query_ids).astype(str), np.diff(offsets)), "iteration": 0,
                          "docno": docnos(query_ids, offsets), "rel": labels.astype(np.int64)})
    return _write(Path(path), frame)


def _write(path: Path, frame: pd.DataFrame) -> Path:
    # The temporary file keeps the destination's suffix, so a .gz destination is compressed.
    with atomic_path(path) as tmp, _open_text(tmp, "w") as out:
        frame.to_csv(out, sep=" ", header=False, index=False)
    return path


def read_run(path: str | os.PathLike) -> pd.DataFrame:
    """A run file as a frame of `RUN_COLUMNS` (``score`` float64, ``rank`` int)."""
    return _read(Path(path), RUN_COLUMNS, {"qid": str, "Q0": str, "docno": str, "rank": np.int64,
                                           "score": np.float64, "tag": str})


def read_qrels(path: str | os.PathLike) -> pd.DataFrame:
    """A qrels file as a frame of `QRELS_COLUMNS`."""
    return _read(Path(path), QRELS_COLUMNS, {"qid": str, "iteration": str, "docno": str, "rel": np.int64})


def _read(path: Path, columns, dtypes) -> pd.DataFrame:
    with _open_text(path, "r") as f:
        try:
            frame = pd.read_csv(f, sep=r"\s+", header=None, names=list(columns), dtype=str,
                                keep_default_na=False, na_values=[])
        except pd.errors.ParserError as err:
            raise ValueError(f"{path}: not a TREC file of {len(columns)} columns ({err})") from None
    short = (frame == "").any(axis=1) | frame.isna().any(axis=1)
    if short.any():
        line = int(np.flatnonzero(short.to_numpy())[0]) + 1
        raise ValueError(f"{path}: not a TREC file of {len(columns)} columns (line {line} has fewer)")
    try:
        return frame.astype(dtypes)
    except ValueError as err:
        raise ValueError(f"{path}: {err}") from None


def list_runs(run_dir: str | os.PathLike) -> pd.DataFrame:
    """The run files of a run folder (``runs/<notebook>/*.run``, ``.run.gz``), one row each:
    ``notebook, run, tag, queries, documents, kilobytes, qrels`` (the qrels file beside it that
    its notebook wrote: ``qrels`` unless the run's name says another, see
    `ltrlib.report.Reporter.run_file`). Empty when the run wrote none."""
    rows = []
    for path in sorted(Path(run_dir).glob("runs/*/*.run*")):
        if not path.name.endswith((".run", ".run.gz")):
            continue
        run = read_run(path)
        qrels = sorted(p.name for p in path.parent.glob("qrels*"))
        rows.append({"notebook": path.parent.name, "run": path.name, "tag": run.tag.iloc[0] if len(run) else "",
                     "queries": run.qid.nunique(), "documents": len(run),
                     "kilobytes": round(path.stat().st_size / 1024, 1), "qrels": ", ".join(qrels)})
    return pd.DataFrame(rows, columns=["notebook", "run", "tag", "queries", "documents", "kilobytes", "qrels"])
