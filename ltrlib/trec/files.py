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

**Runs of part of the judged documents** (a re-ranker's top-k lists, notebook 06) name
their documents explicitly: ``write_run(..., docnos=...)``, one id per scored row, the id
the *full* data give that document (its row within the full query: ``17-042`` may be the
first document of query 17's top-k list). The qrels then hold every document of the full queries, so
trec_eval and ranx normalise by the full lists' ideal DCG, as our full-list NDCG does, and
the documents the run leaves out count as not retrieved.

**Ties.** Our metrics rank a query's documents by descending score, tied scores in row
order (a stable sort, LightGBM's convention, `ltrlib.metrics.ranking`). The ``rank`` column
states that order. trec_eval ignores the rank column and re-sorts by score, breaking ties by
descending ``docno`` (as pytrec_eval, ir_measures and repro_eval's ``break_ties`` do); ranx
sorts by score with an unstable sort. So where a
query has tied scores those tools may order it otherwise, and its metrics may differ from
ours; where scores are distinct they agree (tests/test_trec.py checks NDCG@k, MAP and MRR
query by query against ranx and ir_measures).

**Scores** are written as Python's ``repr`` of the float64, the shortest text that reads
back to the same number, so a score reads back exactly and ties stay ties. A file whose
name ends in ``.gz`` is gzip-compressed.

**Reading** (`read_run`, `read_qrels`, and through them every reader here) refuses what
our writers never write, with a `TrecFormatError` naming the file and, where there is one,
the line: a gzip file cut short or corrupt, a ``.gz`` that is not gzip (or gzip under
another name), text that is not UTF-8, a line of too few or too many columns, a rank or
label that is not an integer, a score that is not a finite number, a document listed twice
for one query. An empty file is read as an empty frame (the writers write one for data
without documents); what cannot compare it says so by name: `ltrlib.reproducibility`'s `agreement`
warns (`TrecWarning`), its `reproduction` refuses it.
"""

from __future__ import annotations

import gzip
import io
import os
import re
import zlib
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import pandas as pd

from ltrlib.atomic import atomic_path

if TYPE_CHECKING:
    from ltrlib.data.dataset import Dataset

__all__ = ["QRELS_COLUMNS", "RUN_COLUMNS", "RunFile", "TrecFormatError", "TrecWarning", "docnos", "filled_lines",
           "lists_of", "read_checked", "read_qrels", "read_run", "run_order", "run_records", "write_qrels",
           "write_run"]


class RunFile(NamedTuple):
    """The arguments of one `ltrlib.report.Reporter.run_file` call: a run's name, the data
    it ranks (labels included), its scores, the qrels name standing for those labels, the
    further qrels that judge the same ranking (``{qrels name: Dataset}``: FOLTR's Type 1
    intents) and the documents' ids (`docnos`; None: each row's position in its query).
    Notebooks hand a batch of them to `Reporter.run_file_records`."""

    name: str
    data: Dataset
    scores: np.ndarray
    qrels: str
    other_labels: Mapping[str, Dataset] = MappingProxyType({})  # read-only: one default for every record
    docnos: np.ndarray | None = None


def run_records(scores: Mapping[str, np.ndarray], data: Dataset, qrels: str = "qrels", *, prefix: str = "",
                docnos: np.ndarray | None = None) -> list[RunFile]:
    """One `RunFile` per model of ``scores`` (name -> one score per row of ``data``), named
    ``<prefix><model>``, judged by the qrels named ``qrels``, its rows named by ``docnos``
    (None: their positions): a notebook's runs of one test set in one call."""
    return [RunFile(f"{prefix}{name}", data, s, qrels, docnos=docnos) for name, s in scores.items()]


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


_row_docnos = docnos  # `write_run`'s argument of that name shadows the function there


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


#: gzip's level for the files written: at `small` a test-set run (106k lines) compresses to
#: the same size at 6 as at Python's default 9 (1.643 against 1.639 MB) in 0.23 s, not 0.59 s.
GZIP_LEVEL = 6


def _open_text(path: Path, mode: str):
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path, mode + "b", compresslevel=GZIP_LEVEL), encoding="utf-8")
    return open(path, mode, encoding="utf-8")


def _tag(tag: str) -> str:
    tag = "_".join(str(tag).split())
    if not tag:
        raise ValueError("a run's tag must not be empty")
    return tag


def write_run(path: str | os.PathLike, query_ids, offsets, scores, tag: str, docnos=None) -> Path:
    """Write one model's ranking of a dataset's queries (``query_ids``, ``offsets``, one score
    per document) as a TREC run file, atomically; ``tag`` names the model (whitespace becomes
    ``_``). ``docnos``: the documents' ids, one per row of ``scores`` in row order, where
    they are not the rows' own (module docstring: runs of part of the judged documents);
    None names each row by its place in ``offsets`` (`docnos`). Returns the path."""
    order = run_order(scores, offsets)
    offsets = np.asarray(offsets, dtype=np.int64)
    sizes = np.diff(offsets)
    if docnos is None:
        ids = _row_docnos(query_ids, offsets)
    else:
        ids = np.asarray(docnos).astype(str)
        if ids.shape != (offsets[-1],):
            raise ValueError(f"write_run: docnos holds {ids.size} ids for {offsets[-1]} scored documents; "
                             "give one per row of scores, in row order")
        # trec_eval and ranx key a query's documents by id: a repeated one would drop a row.
        repeated = pd.Index(ids).duplicated()
        if repeated.any():
            raise ValueError(f"write_run: docnos repeats {ids[np.flatnonzero(repeated)[0]]!r}; "
                             "each scored document needs its own id")
    qid = np.repeat(np.asarray(query_ids).astype(str), sizes)[order]
    rank = np.arange(order.size) - np.repeat(offsets[:-1], sizes) + 1
    tag = _tag(tag)
    # One f-string per line, not a DataFrame's to_csv: half the time at `small` (0.13 s
    # against 0.29 s for 101k lines), a run being written for every model of notebooks 03-09.
    ranked = np.asarray(scores, dtype=np.float64)[order]
    lines = (f"{q} Q0 {d} {r} {v!r} {tag}\n" for q, d, r, v in
             zip(qid.tolist(), ids[order].tolist(), rank.tolist(), ranked.tolist()))
    return _write_lines(Path(path), lines)


def lists_of(query_ids, offsets, docnos) -> np.ndarray:
    """The offsets of a run of part of a dataset's documents (``query_ids``, ``offsets``),
    named by ``docnos`` (ids as `docnos` gives them, query by query in the dataset's query
    order): one list per query of the dataset, empty where none of its documents is scored.
    ValueError naming ``docnos`` when an id names no document of the dataset or the ids
    leave their queries' order."""
    offsets = np.asarray(offsets, dtype=np.int64)
    ids = np.asarray(docnos).astype(str)
    judged = _row_docnos(query_ids, offsets)
    rows = pd.Index(judged).get_indexer(ids)
    if (rows < 0).any():
        raise ValueError(f"docnos {ids[rows < 0][0]!r} names no document of the judged data "
                         f"(its ids look like {judged[0]!r}: ltrlib.trec.docnos)")
    query = np.searchsorted(offsets, rows, side="right") - 1
    if (np.diff(query) < 0).any():
        raise ValueError(f"docnos must come query by query in the judged data's query order; id "
                         f"{ids[int(np.flatnonzero(np.diff(query) < 0)[0]) + 1]!r} does not")
    return np.concatenate([[0], np.cumsum(np.bincount(query, minlength=offsets.size - 1))])


def write_qrels(path: str | os.PathLike, query_ids, offsets, labels) -> Path:
    """Write a dataset's relevance labels as TREC qrels (``qid 0 docno rel``, every document),
    atomically. Returns the path."""
    offsets = np.asarray(offsets, dtype=np.int64)
    labels = np.asarray(labels)
    if labels.shape != (offsets[-1],):
        raise ValueError(f"write_qrels: {labels.size} labels for {offsets[-1]} documents")
    qid = np.repeat(np.asarray(query_ids).astype(str), np.diff(offsets))
    lines = (f"{q} 0 {d} {r}\n" for q, d, r in
             zip(qid.tolist(), docnos(query_ids, offsets).tolist(), labels.astype(np.int64).tolist()))
    return _write_lines(Path(path), lines)


def _write_lines(path: Path, lines) -> Path:
    # The temporary file keeps the destination's suffix, so a .gz destination is compressed.
    with atomic_path(path) as tmp, _open_text(tmp, "w") as out:
        out.write("".join(lines))
    return path


_RUN_TYPES = {"qid": str, "Q0": str, "docno": str, "rank": np.int64, "score": np.float64, "tag": str}
_QRELS_TYPES = {"qid": str, "iteration": str, "docno": str, "rel": np.int64}


def read_run(path: str | os.PathLike) -> pd.DataFrame:
    """A run file as a frame of `RUN_COLUMNS` (``score`` float64, ``rank`` int);
    `TrecFormatError` naming the file and line where it is not one (module docstring)."""
    return _read(Path(path), RUN_COLUMNS, _RUN_TYPES)


def read_qrels(path: str | os.PathLike) -> pd.DataFrame:
    """A qrels file as a frame of `QRELS_COLUMNS`; `TrecFormatError` naming the file and line
    where it is not one (module docstring)."""
    return _read(Path(path), QRELS_COLUMNS, _QRELS_TYPES)


class TrecFormatError(ValueError):
    """A run or qrels file that cannot be read as it is (module docstring: Reading). Carries
    ``path`` and ``line`` (1-based, or None where the problem is the whole file's), as
    `ltrlib.data.LetorFormatError` does for the LETOR readers."""

    def __init__(self, message: str, path, line: int | None = None):
        super().__init__(message)
        self.path = str(path)
        self.line = line


class TrecWarning(UserWarning):
    """A run folder or file that can be read on, but that leaves something out: a run
    `RUN_INDEX` lists that is missing on disk (`list_runs`), an empty run or qrels that
    `agreement` has nothing to compare in."""


_GZIP_MAGIC = b"\x1f\x8b"


def _read_text(path: Path) -> str:
    """The text of a run or qrels file, decompressed where its name ends in ``.gz``. A
    missing file raises FileNotFoundError, as Python's ``open`` does."""
    raw = path.read_bytes()
    # Read whole, then parse: a gzip stream cut short would otherwise fail inside pandas'
    # parser as an EOFError naming no file.
    if path.suffix == ".gz":
        if not raw:
            raise TrecFormatError(f"{path}: an empty file (0 bytes), where gzip writes a header even for no "
                                  "lines: the file is incomplete; write it again", path)
        if raw[:2] != _GZIP_MAGIC:
            raise TrecFormatError(f"{path}: named .gz but not gzip-compressed (it starts with {raw[:12]!r}); "
                                  "compress it (gzip) or drop .gz from its name", path)
        try:
            raw = gzip.decompress(raw)
        except EOFError:
            raise TrecFormatError(f"{path}: the gzip stream is cut short ({len(raw)} bytes, no end marker): "
                                  "the file is incomplete; write it again", path) from None
        except (gzip.BadGzipFile, zlib.error) as err:
            raise TrecFormatError(f"{path}: corrupt gzip data ({err}); write it again", path) from None
    elif raw[:2] == _GZIP_MAGIC:
        raise TrecFormatError(f"{path}: gzip-compressed (it starts with gzip's magic bytes 1f 8b) but its name "
                              f"does not end in .gz; name it {path.name}.gz or decompress it", path)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + 1
        raise TrecFormatError(f"{path}: line {line}: not UTF-8 text (byte {raw[err.start]:#04x}); TREC files "
                              "are plain text", path, line) from None


def filled_lines(text: str) -> list[int]:
    """The numbers (1-based) of ``text``'s lines that hold more than whitespace: row r of
    pandas' frame is line ``[r]``, pandas skipping blank lines."""
    return [i for i, line in enumerate(re.split(r"\r\n|\r|\n", text), 1) if line.strip()]


def _line_of(text: str, row: int) -> int:
    """The file line of a frame's ``row``; for the error paths (it splits the whole text)."""
    return filled_lines(text)[row]


def _first_bad(values, convert) -> int:
    """The first row of ``values`` that ``convert`` refuses; -1 where none is."""
    for row, value in enumerate(values):
        try:
            convert(value)
        except (ValueError, OverflowError):
            return row
    return -1


def _read(path: Path, columns, dtypes) -> pd.DataFrame:
    return _load(path, columns, dtypes)[1]


def _load(path: Path, columns, dtypes) -> tuple[str, pd.DataFrame]:
    """A run or qrels file's text and its frame, checked (module docstring: Reading)."""
    text = _read_text(path)
    try:
        frame = pd.read_csv(io.StringIO(text), sep=r"\s+", header=None, names=list(columns), dtype=str,
                            keep_default_na=False, na_values=[])
    except pd.errors.ParserError as err:
        found = re.search(r"Expected \d+ fields in line (\d+), saw (\d+)", str(err))
        if found is None:
            raise TrecFormatError(f"{path}: not a TREC file of {len(columns)} columns ({err})", path) from None
        line = int(found.group(1))
        raise TrecFormatError(f"{path}: not a TREC file of {len(columns)} columns (line {line} has "
                              f"{found.group(2)})", path, line) from None
    short = (frame == "").any(axis=1) | frame.isna().any(axis=1)
    if short.any():
        line = _line_of(text, int(np.flatnonzero(short.to_numpy())[0]))
        raise TrecFormatError(f"{path}: not a TREC file of {len(columns)} columns (line {line} has fewer)",
                              path, line)
    words = frame  # the file's own text, for the messages
    try:
        frame = words.astype(dtypes)
    except (ValueError, OverflowError) as err:
        for column, dtype in dtypes.items():
            if dtype is str:
                continue
            row = _first_bad(words[column].tolist(), (lambda v: np.int64(int(v))) if dtype is np.int64 else float)
            if row >= 0:
                line = _line_of(text, row)
                kind = "a 64-bit integer" if dtype is np.int64 else "a number"
                raise TrecFormatError(f"{path}: line {line}: {column} {words[column].iloc[row]!r} is not {kind}",
                                      path, line) from None
        raise TrecFormatError(f"{path}: {err}", path) from None
    if "score" in frame:
        # The writer refuses such scores (`run_order`): ranx, trec_eval and our metrics
        # would each place a NaN or an infinity otherwise, and their numbers would part.
        bad = ~np.isfinite(frame.score.to_numpy())
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            line = _line_of(text, row)
            raise TrecFormatError(f"{path}: line {line}: score {words.score.iloc[row]!r} of docno "
                                  f"{frame.docno.iloc[row]!r} is not a finite number; a run needs finite scores",
                                  path, line)
    # trec_eval, ranx and repro_eval key a query's documents by docno: a second line for
    # one would be dropped or counted twice, each tool its own way (`write_run` refuses it).
    again = frame.duplicated(["qid", "docno"]).to_numpy()
    if again.any():
        second = int(np.flatnonzero(again)[0])
        qid, docno = frame.qid.iloc[second], frame.docno.iloc[second]
        first = int(np.flatnonzero(((frame.qid == qid) & (frame.docno == docno)).to_numpy())[0])
        line = _line_of(text, second)
        raise TrecFormatError(f"{path}: line {line}: docno {docno!r} of query {qid!r} again (first at line "
                              f"{_line_of(text, first)}); each document once per query", path, line)
    return text, frame


def read_checked(path: str | os.PathLike, kind: str) -> tuple[str, pd.DataFrame]:
    """A ``kind`` (``"run"`` or ``"qrels"``) file's text, unpacked, and its frame, read and
    checked as `read_run` and `read_qrels` read them: for tools that take plain files."""
    columns = {"run": (RUN_COLUMNS, _RUN_TYPES), "qrels": (QRELS_COLUMNS, _QRELS_TYPES)}
    if kind not in columns:
        raise ValueError(f"read_checked: kind must be 'run' or 'qrels', got {kind!r}")
    return _load(Path(path), *columns[kind])
