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
without documents); what cannot compare it says so by name: `agreement` warns
(`TrecWarning`), `reproduction` refuses it.
"""

from __future__ import annotations

import functools
import gzip
import io
import os
import re
import warnings
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

__all__ = ["RANX_NAMES", "REPRO_MEASURES", "RUN_COLUMNS", "QRELS_COLUMNS", "RUN_INDEX", "RunFile", "agreement",
           "agreement_counts", "docnos", "find_run", "index_run", "import_ranx", "list_runs", "lists_of",
           "RANX_KEY_DIGITS", "ranx_keys", "ranx_qrels", "ranx_run", "read_qrels", "read_run", "reproduction",
           "run_order", "run_records", "TrecFormatError", "TrecWarning", "write_qrels", "write_run"]


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
    _cache_typed_containers()
    return ranx


@functools.cache
def _cache_typed_containers() -> None:
    """Let numba keep its typed ``Dict`` and ``List`` operations on disk, as it keeps ranx's
    own kernels (``cache=True``). ranx holds runs and qrels in typed dicts, whose operations
    numba compiles in every new process: about 9 of the 11 s that notebook 04's fusions took
    at `tiny` (quiet), again in each kernel and test worker that touches ranx; read from
    numba's cache, the fusions took 2.8 s. Numba keys each entry by the function's source,
    the argument types and the CPU, as for any cached function. Where no cache folder is
    writable, compiling each time is left as it was."""
    from numba.core.dispatcher import Dispatcher
    from numba.typed import typeddict, typedlist

    for module in (typeddict, typedlist):
        for operation in vars(module).values():
            if isinstance(operation, Dispatcher) and operation.py_func.__module__ == module.__name__:
                try:
                    operation.enable_caching()
                except RuntimeError:  # numba found no writable cache folder for it
                    return


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


def ranx_run(path: str | os.PathLike):
    """A run file, plain or gzip-compressed, as a ``ranx.Run`` named by its tag (ranx's own
    ``Run.from_file`` reads plain files only; the Reporter writes ``.run.gz``)."""
    run = read_run(path)
    return _ranx_run(run, run.tag.iloc[0] if len(run) else Path(path).name)


def ranx_qrels(path: str | os.PathLike):
    """A qrels file, plain or gzip-compressed, as a ``ranx.Qrels``."""
    return _ranx_qrels(read_qrels(path))


def _ranx_run(run: pd.DataFrame, name: str):
    ids = {"qid": object, "docno": object}  # ranx asks for object columns, not pandas' strings
    out = import_ranx().Run.from_df(run.astype(ids), q_id_col="qid", doc_id_col="docno", score_col="score")
    out.name = name
    return out


def _ranx_qrels(qrels: pd.DataFrame):
    qrels = qrels.astype({"qid": object, "docno": object})
    return import_ranx().Qrels.from_df(qrels, q_id_col="qid", doc_id_col="docno", score_col="rel")


#: Digits of the document keys our own ranx calls use (`ranx_keys`): the fusions' and
#: `agreement`'s. ranx turns document ids into numpy strings as wide as the longest, and
#: numba compiles its kernels anew for each width, so ids whose width varied with the
#: collection and the notebook (as `docnos` do) compiled ranx again for each of them: about
#: 30 s a width at `tiny`, paid by every fresh environment. One width is compiled once per
#: environment and read from numba's cache after that.
RANX_KEY_DIGITS = 12


def ranx_keys(codes) -> np.ndarray:
    """Document keys of `RANX_KEY_DIGITS` digits for non-negative integer ``codes`` (rows,
    or codes of `pandas.factorize`), as the object strings ranx wants. Zero-padded, so
    their lexical order is the codes' order. ValueError for a code too wide."""
    codes = np.asarray(codes, dtype=np.int64)
    if codes.size and (codes.min() < 0 or codes.max() >= 10**RANX_KEY_DIGITS):
        raise ValueError(f"ranx_keys: codes must lie in [0, 10^{RANX_KEY_DIGITS}); got {codes.min()}..{codes.max()}")
    return np.char.zfill(codes.astype(str), RANX_KEY_DIGITS).astype(object)


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


def _filled_lines(text: str) -> list[int]:
    """The numbers (1-based) of ``text``'s lines that hold more than whitespace: row r of
    pandas' frame is line ``[r]``, pandas skipping blank lines."""
    return [i for i, line in enumerate(re.split(r"\r\n|\r|\n", text), 1) if line.strip()]


def _line_of(text: str, row: int) -> int:
    """The file line of a frame's ``row``; for the error paths (it splits the whole text)."""
    return _filled_lines(text)[row]


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
    return index.assign(line=_filled_lines(text)[1:len(index) + 1])  # after the header


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


#: ranx's names of our metrics (`agreement`): our NDCG gains 2^label - 1, ranx's ndcg_burges.
RANX_NAMES = {"ndcg": "ndcg_burges@{k}", "map": "map", "mrr": "mrr"}


def agreement(run_path: str | os.PathLike, qrels_path: str | os.PathLike, k: int = 10) -> pd.DataFrame:
    """A run file scored query by query by `ltrlib.metrics` and by ranx: ``qid, metric,
    ours, ranx, tied, agree`` for each query with a relevant document (for the others the
    conventions differ: ranx scores 0, ours 1, `ltrlib.metrics.ranking`). Ours ranks by the
    file's ``rank`` column, ranx by the scores, so they may part only where a query has
    ``tied`` scores. NDCG@k divides by the ideal DCG of every judged document of the query
    (a re-ranker's run lists its top-k only); AP and RR are compared where the run holds
    every relevant document (else NaN). Scored over flat arrays with query offsets, all
    queries at once. An empty run or qrels leaves nothing to compare: a `TrecWarning` names
    it and the frame is empty."""
    from ltrlib.metrics import average_precision, ideal_dcg, ndcg, reciprocal_rank

    run, qrels = read_run(run_path), read_qrels(qrels_path)
    if run.empty or qrels.empty:
        # The writers write such files for data without documents; ranx would fail on them
        # with a numpy message naming neither.
        empty = [str(p) for p, f in ((run_path, run), (qrels_path, qrels)) if f.empty]
        warnings.warn(f"{' and '.join(empty)}: no lines; nothing to compare", TrecWarning, stacklevel=2)
        return pd.DataFrame(columns=["qid", "metric", "ours", "ranx", "tied", "agree"])
    ranx = import_ranx()
    names = {m: name.format(k=k) for m, name in RANX_NAMES.items()}
    # ranx meets the documents under keys of one width (`ranx_keys`), the same key for a
    # docno in the run and the qrels: the scores, and so every untied order, are the file's.
    codes = pd.factorize(pd.concat([qrels.docno, run.docno], ignore_index=True))[0]
    judged_qrels = _ranx_qrels(qrels.assign(docno=ranx_keys(codes[:len(qrels)])))
    keyed_run = _ranx_run(run.assign(docno=ranx_keys(codes[len(qrels):])), Path(run_path).name)
    theirs = ranx.evaluate(judged_qrels, keyed_run, list(names.values()), return_mean=False)
    theirs = pd.DataFrame({m: np.atleast_1d(theirs[name]) for m, name in names.items()},
                          index=pd.Index(list(judged_qrels.keys()), name="qid"))
    # The queries compared: in the run, in ranx's result, with a relevant judged document
    # (without one, ranx scores 0 and ours 1 by convention).
    relevant = qrels[qrels.rel > 0]
    keep = run.qid.isin(theirs.index) & run.qid.isin(relevant.qid)
    run = run[keep].sort_values(["qid", "rank"], kind="stable")
    if run.empty:
        return pd.DataFrame(columns=["qid", "metric", "ours", "ranx", "tied", "agree"])
    y = run.merge(qrels[["qid", "docno", "rel"]], on=["qid", "docno"], how="left").rel.fillna(0).to_numpy(np.float64)
    qids, starts = np.unique(run.qid.to_numpy(), return_index=True)  # sorted by qid, as the run is
    offsets = np.append(starts, len(run))
    order = -np.arange(len(run), dtype=np.float64)  # the file's order, no ties
    full = qrels[qrels.qid.isin(qids)].sort_values("qid", kind="stable")
    full_offsets = np.append(np.unique(full.qid.to_numpy(), return_index=True)[1], len(full))
    ndcgs = ndcg(y, order, offsets, k, ideal_dcg=ideal_dcg(full.rel.to_numpy(np.float64), full_offsets, k))
    # AP and RR divide by, or look for, every relevant document: only where the run holds all.
    found = np.add.reduceat((y > 0).astype(np.int64), starts)
    whole = found == relevant.groupby("qid").size().reindex(qids).to_numpy()
    aps = np.where(whole, average_precision(y, order, offsets), np.nan)
    rrs = np.where(whole, reciprocal_rank(y, order, offsets), np.nan)
    tied = run.duplicated(["qid", "score"]).groupby(run.qid.to_numpy()).any().reindex(qids).to_numpy()
    parts = []
    for m, ours in (("ndcg", ndcgs), ("map", aps), ("mrr", rrs)):
        value = theirs[m].reindex(qids).to_numpy()
        agree = pd.array(np.abs(ours - value) < 1e-9, dtype="boolean")
        agree[np.isnan(ours)] = pd.NA
        parts.append(pd.DataFrame({"qid": qids, "metric": names[m], "ours": ours, "ranx": value, "tied": tied,
                                   "agree": agree}))
    return pd.concat(parts, ignore_index=True)


def agreement_counts(run_dir: str | os.PathLike, k: int = 10) -> pd.DataFrame:
    """`agreement` of every run file of a run folder against each qrels that judges it
    (`list_runs`), counted: ``notebook, run, qrels, metric, compared, agree, differ_tied,
    differ_untied``. ``differ_untied``
    would be a disagreement our documented conventions do not explain. A run or qrels the
    indexes list but that is missing is a `TrecFormatError`: the counts would leave it out."""
    rows = []
    for r in list_runs(run_dir, strict=True).itertuples():
        folder = Path(run_dir) / "runs" / r.notebook
        for qrels in r.qrels.split(", ") if r.qrels else []:
            a = agreement(folder / r.run, folder / qrels, k).dropna(subset=["agree"])
            for metric, g in a.groupby("metric", sort=False):
                rows.append({"notebook": r.notebook, "run": r.run, "qrels": qrels, "metric": metric, "compared": len(g),
                             "agree": int(g.agree.sum()),
                             "differ_tied": int((~g.agree.astype(bool) & g.tied).sum()),
                             "differ_untied": int((~g.agree.astype(bool) & ~g.tied).sum())})
    return pd.DataFrame(rows, columns=["notebook", "run", "qrels", "metric", "compared", "agree", "differ_tied",
                                       "differ_untied"])


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


#: repro_eval's measures `reproduction` reports by default, in ir_measures' names: trec_eval's
#: nDCG@10 (it gains the label itself, where our tables gain 2^label - 1), AP and RR.
REPRO_MEASURES = ("nDCG@10", "AP", "RR")


def reproduction(original: str | os.PathLike, reproduced: str | os.PathLike, notebook: str, baseline: str,
                 advanced: str, measures=REPRO_MEASURES, qrels: str = "") -> tuple[str, pd.DataFrame]:
    """repro_eval (Breuer et al., SIGIR 2020) between two runs of ours: the ``baseline`` and
    ``advanced`` models of ``notebook`` (`find_run`) in the ``original`` run folder, and the
    same two in the ``reproduced`` one.

    Where both folders judge the runs by the same qrels (the same data: a run again, on
    another machine or after a change), the pair is a *reproduction* (repro_eval's
    ``RpdEvaluator``): Kendall's τ Union and RBO between the two document orders, the RMSE
    between the per-query scores, the Effect Ratio and ΔRI of the advanced model's
    improvement, and the paired t-test's p per model. Where the qrels differ (another seed
    of the twin draws other queries and documents; the twin against a real collection) it
    is a *replication* (``RplEvaluator``): the orders and per-query scores cannot be paired,
    so only the Effect Ratio, ΔRI and the unpaired t-test apply.

    Returns the kind (``"reproduction"`` or ``"replication"``) and a frame ``statistic,
    model, measure, value`` (``model`` is ``baseline``, ``advanced`` or ``both``; ``measure``
    is ``order`` for KTU and RBO). repro_eval's own conventions hold: ties are broken by
    descending ``docno`` as trec_eval does, and RBO is its non-extrapolated form (p = 0.95,
    depth 1000), so two identical lists of n documents score 1 - 0.95^n, not 1.
    """
    import tempfile

    try:
        with warnings.catch_warnings():  # repro_eval 0.5 imports scipy.stats.stats, deprecated
            warnings.simplefilter("ignore", DeprecationWarning)
            import ir_measures
            from repro_eval.Evaluator import RplEvaluator, RpdEvaluator
    except ImportError as err:
        raise ImportError(f"reproduction needs repro_eval ({err}); pip install repro-eval") from None
    files = {}
    for name, folder in (("orig", original), ("rep", reproduced)):
        (files[f"run_b_{name}"], judged_b), (files[f"run_a_{name}"], judged_a) = (
            find_run(folder, notebook, model, qrels) for model in (baseline, advanced))
        # One qrels judges both models of a folder: their improvement is measured on one set of labels.
        if judged_b != judged_a and not read_qrels(judged_b).equals(read_qrels(judged_a)):
            raise ValueError(f"{folder}: {baseline!r} is judged by {judged_b.name} and {advanced!r} by "
                             f"{judged_a.name}, other labels; compare two models judged by one qrels")
        files[f"qrels_{name}"] = judged_a
    parsed = [ir_measures.parse_measure(m) for m in measures]
    same = read_qrels(files["qrels_orig"]).equals(read_qrels(files["qrels_rep"]))
    with tempfile.TemporaryDirectory() as tmp:
        plain = {}
        for key, path in files.items():  # repro_eval reads plain files only
            text, frame = (_load(path, QRELS_COLUMNS, _QRELS_TYPES) if key.startswith("qrels")
                           else _load(path, RUN_COLUMNS, _RUN_TYPES))
            if frame.empty:
                # repro_eval fails on one with an AttributeError or KeyError naming no file.
                raise TrecFormatError(f"{path}: no lines; repro_eval has nothing to compare", path)
            plain[key] = str(Path(tmp) / f"{key}.txt")
            with open(plain[key], "w", encoding="utf-8") as out:
                out.write(text)
        paths = {f"{k}_path": v for k, v in plain.items() if k != "qrels_rep"}
        with warnings.catch_warnings():  # its constructor's ir_measures.convert_trec_name, deprecated
            warnings.simplefilter("ignore", DeprecationWarning)
            ev = RpdEvaluator(**paths) if same else RplEvaluator(**paths, qrels_rpl_path=plain["qrels_rep"])
        ev.measures = parsed  # all of trec_eval's by default: minutes on a large run
        ev.trim()
        ev.evaluate()
        rows = []

        def per_model(statistic: str, result: dict) -> None:
            # {model: value} of the document order (KTU, RBO), or {model: {measure: value}}
            for model, value in result.items():
                measures = value if isinstance(value, dict) else {"order": value}
                rows.extend((statistic, model, str(m), float(v)) for m, v in measures.items())

        def of_both(statistic: str, result: dict) -> None:
            # {measure: value} of the advanced model's improvement over the baseline (ER, ΔRI)
            rows.extend((statistic, "both", str(m), float(v)) for m, v in result.items())

        if same:
            per_model("KTU", ev.ktu())
            per_model("RBO", ev.rbo())
            per_model("RMSE", ev.rmse())
        of_both("ER", ev.er())
        of_both("ΔRI", ev.dri())
        per_model("t-test p", ev.ttest())
    frame = pd.DataFrame(rows, columns=["statistic", "model", "measure", "value"])
    return ("reproduction" if same else "replication"), frame
