"""Reading a ranking file into arrays: map it, find its lines, parse, check.

`open_source` maps the file and finds its lines; `sample_index_range` guesses the layout;
`run_parse` parses every line into a float32 matrix; `resolve_layout` and `check_width` settle
the common layout of several files; `finish_parse` checks labels, indices and qids and builds
the dataset's arrays; `read_group_file` reads LightGBM's ``.query`` group sizes. The text
format and its conventions are described in `ltrlib.data.svmlight`.

Speed
-----
The file is mapped read-only (mmap) and read as bytes. A numba pass finds the line
boundaries. The dense width must be known before the matrix exists, but a separate pass to
find it would cost a third of the time; so the layout (zero-based? largest index?) is guessed
from ~4000 sampled lines, and one full pass parses every line straight into a float32
``(n_lines, width)`` matrix while recording each line's true index range. If the true range
gives another layout (an index the sample missed), the pass is run again with it: the result
is always exact, and only a badly unrepresentative sample costs a second pass. Lines are
split into chunks run by ``prange`` on all cores. Kernels never raise: they return an error
code and the byte offset of the offending token, and this module turns that into a
`LetorFormatError` naming file, line and token.
"""

from __future__ import annotations

import hashlib
import mmap
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ltrlib.data.svmlight.fingerprint import fingerprint_bytes
from ltrlib.data.svmlight.kernels import (
    E_QID,
    _CR,
    _ERROR_TEXT,
    _KERNEL_LOCK,
    _NL,
    _SP,
    _TAB,
    _count_breaks,
    _count_newlines,
    _first_line_beyond,
    _line_bounds,
    _nchunks,
    _parse_all,
    _sample_range,
)

__all__ = [
    "LetorFormatError",
    "Source",
    "RawParse",
    "Parsed",
    "open_source",
    "sample_index_range",
    "run_parse",
    "finish_parse",
    "check_zero_based",
    "check_n_features",
    "resolve_layout",
    "MAX_FEATURES",
    "check_width",
    "check_plain_text",
    "read_group_file",
]


class LetorFormatError(ValueError):
    """A ranking file that cannot be read as it is. Carries ``path``, ``line`` (1-based,
    or None when the problem is not one line's) and ``token`` (the offending text or None)."""

    def __init__(self, message: str, path=None, line: int | None = None, token: str | None = None):
        super().__init__(message)
        self.path = None if path is None else str(path)
        self.line = line
        self.token = token




class _Hasher(threading.Thread):
    """SHA-256 of a whole buffer in a background thread: hashlib releases the GIL, so this
    overlaps with the (nogil) parse. SHA-256 rather than blake2b because CPUs with SHA
    extensions hash it ~3x faster (measured here: 1 GB/s vs 370 MB/s)."""

    def __init__(self, data):
        super().__init__(daemon=True)
        self._data = data
        self.digest: str | None = None

    def run(self) -> None:
        self.digest = hashlib.sha256(memoryview(self._data).cast("B")).hexdigest()
        self._data = None

    def result(self) -> str | None:
        self.join()
        return self.digest


def _map_file(path: Path):
    """The file's bytes as a read-only uint8 array, and (size, mtime_ns) from the same open.

    A private read-only mmap with MAP_POPULATE maps the page cache directly: in this VM it is
    ~10x faster than np.fromfile, which must fault in and copy into fresh memory. The file is
    never written through it (PROT_READ). Caveat: truncating the file while it is being parsed
    would crash the process (SIGBUS), as with any mmap reader."""
    with open(path, "rb") as fh:
        st = os.fstat(fh.fileno())
        if st.st_size == 0:
            return np.zeros(0, dtype=np.uint8), st
        try:
            flags = getattr(mmap, "MAP_PRIVATE", 0) | getattr(mmap, "MAP_POPULATE", 0)
            mm = mmap.mmap(fh.fileno(), 0, flags=flags, prot=mmap.PROT_READ)
        except (AttributeError, TypeError, OSError, ValueError):  # no POSIX mmap: read it
            return np.fromfile(fh, dtype=np.uint8), st
        return np.frombuffer(mm, dtype=np.uint8), st


@dataclass
class Source:
    """A ranking file opened for parsing: its bytes, line boundaries and identity."""

    path: Path
    buf: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    size: int
    mtime_ns: int
    fingerprint: str
    hasher: _Hasher | None = field(default=None, repr=False)

    @property
    def n_lines(self) -> int:
        return int(self.starts.size)

    def line_text(self, li: int) -> str:
        return bytes(self.buf[self.starts[li]:self.ends[li]]).decode("utf-8", "replace")

    def content_hash(self) -> str | None:
        return None if self.hasher is None else self.hasher.result()


def _split_lines(buf, nb: int, start0: int, cr_breaks: bool):
    """``(starts, ends, lone_crs)`` of the lines of buf; see `_bounds_range`."""
    with _KERNEL_LOCK:
        if not buf.size:
            counts = np.zeros(1, np.int64)
        else:
            counts = _count_breaks(buf, nb) if cr_breaks else _count_newlines(buf, nb)
    n_breaks = int(counts.sum())
    last = int(buf[-1]) if buf.size else _NL
    ends_with_break = last == _NL or (cr_breaks and last == _CR)
    n_lines = n_breaks + int(buf.size > 0 and not ends_with_break)
    starts = np.empty(n_breaks + 1, dtype=np.int64)
    ends = np.empty(n_lines, dtype=np.int64)
    lone = 0
    if buf.size:
        first = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
        with _KERNEL_LOCK:
            lone = int(_line_bounds(buf, nb, first, starts, ends, start0, cr_breaks))
    return starts[:n_lines], ends, lone  # no line starts after the final line end


#: Leading bytes of compressed files, which would otherwise be parsed as garbage.
_COMPRESSED = {b"\x1f\x8b": ("gzip", "gunzip -k"), b"BZh": ("bzip2", "bunzip2 -k"),
               b"\xfd7zXZ\x00": ("xz", "unxz -k"), b"\x28\xb5\x2f\xfd": ("zstd", "unzstd"),
               b"PK\x03\x04": ("zip", "unzip")}


#: Byte-order marks of the wide Unicode encodings, longest first (UTF-32's LE mark begins
#: with UTF-16's). Their text has a zero byte in every character, which no parser of ASCII
#: numbers reads: the first error would blame a label.
_WIDE_TEXT = {b"\xff\xfe\x00\x00": "UTF-32LE", b"\x00\x00\xfe\xff": "UTF-32BE", b"\xff\xfe": "UTF-16LE",
              b"\xfe\xff": "UTF-16BE"}


def check_plain_text(path, head: bytes) -> None:
    """Raise `LetorFormatError` naming ``path`` if its first bytes ``head`` (8 are enough) are
    those of a compressed file, or of text in a wide Unicode encoding, each with the command
    that converts it."""
    for magic, (kind, command) in _COMPRESSED.items():
        if head.startswith(magic):
            raise LetorFormatError(
                f"{path}: this is a {kind}-compressed file (it starts with the {kind} magic "
                f"bytes {magic.hex(' ')}), not SVMlight/LETOR text; decompress it first "
                f"(e.g. {command} {path}) and read the decompressed file", path, None, None)
    encoding = next((enc for mark, enc in _WIDE_TEXT.items() if head.startswith(mark)), None)
    if encoding is None and len(head) >= 2 and b"\x00" in head[:2]:
        encoding = "UTF-16LE" if head[1:2] == b"\x00" else "UTF-16BE"  # wide text without a mark
    if encoding is not None:
        raise LetorFormatError(
            f"{path}: this file is {encoding}-encoded text (Windows tools write it), not the ASCII "
            f"or UTF-8 text of SVMlight/LETOR files; convert it first, e.g. "
            f"iconv -f {encoding} -t UTF-8 {path} > {Path(path).stem}.utf8.txt", path, None, None)


def open_source(path, *, hash_content: bool = False) -> Source:
    """Map a file and find its lines. With ``hash_content`` a background thread computes the
    full-file SHA-256 meanwhile (`Source.content_hash`)."""
    path = Path(path)
    buf, st = _map_file(path)
    check_plain_text(path, buf[:8].tobytes())
    hasher = None
    if hash_content and buf.size:
        hasher = _Hasher(buf)
        hasher.start()
    fp = fingerprint_bytes(buf)
    start0 = 3 if buf[:3].tobytes() == b"\xef\xbb\xbf" else 0  # UTF-8 byte-order mark
    nb = _nchunks(max(1, buf.size >> 20))
    starts, ends, lone = _split_lines(buf, nb, start0, False)
    if lone:
        # CR-only line ends (classic Mac): split again with CR as a line end too. Files with
        # LF or CRLF ends never get here, so they keep the fast newline count.
        starts, ends, _ = _split_lines(buf, nb, start0, True)
    return Source(path, buf, starts, ends, st.st_size, st.st_mtime_ns, fp, hasher)


def sample_index_range(src: Source, n_blocks: int = 64, block: int = 64) -> tuple[int, int]:
    """A guess of ``(min_index, max_index)`` from ``n_blocks`` evenly spaced runs of ``block``
    lines (the whole file when it is small)."""
    n = src.n_lines
    if n <= n_blocks * block:
        lines = np.arange(n, dtype=np.int64)
    else:
        heads = np.linspace(0, n - block, n_blocks).astype(np.int64)
        lines = (heads[:, None] + np.arange(block)[None, :]).ravel()
    lo, hi = _sample_range(src.buf, src.starts, src.ends, lines)
    return int(lo), int(hi)


def _token_at(buf: np.ndarray, pos: int) -> str:
    end = pos
    n = buf.size
    while end < n and end - pos < 200 and buf[end] not in (_SP, _TAB, _NL, _CR):
        end += 1
    return bytes(buf[pos:end]).decode("utf-8", "replace")


def _raise_kernel_error(path, buf, starts, err_code, err_pos) -> None:
    bad = np.flatnonzero(err_code)
    if bad.size == 0:
        return
    c = bad[np.argmin(err_pos[bad])]  # chunks cover the file in order: the first error
    code, pos = int(err_code[c]), int(err_pos[c])
    li = int(np.searchsorted(starts, pos, side="right")) - 1
    token = _token_at(buf, pos)
    text = _ERROR_TEXT[code]
    digits = token[4:] if token.startswith("qid:") else ""
    if code == E_QID and digits.isdigit() and len(digits) > 18:
        # Not malformed: too long for the int64 a qid is stored in.
        text = (f"qid too large: {len(digits)} digits, where a qid is stored as a 64-bit integer of "
                "at most 18 digits; renumber the queries")
    raise LetorFormatError(f"{path}: line {li + 1}: {text} (token {token!r})", path, li + 1, token)


@dataclass
class RawParse:
    """One full pass over a `Source` with a given layout (``zero_based``, ``width``).
    ``X`` has one row per physical line; ``min_index``/``max_index`` are the file's true
    feature index range, whatever the layout."""

    src: Source
    zero_based: bool
    width: int
    X: np.ndarray
    flags: np.ndarray
    labels: np.ndarray
    qids: np.ndarray
    mins: np.ndarray
    maxs: np.ndarray
    data_lines: np.ndarray
    min_index: int
    max_index: int

    @property
    def index_range(self) -> tuple[int, int]:
        return self.min_index, self.max_index


def _redo_line_exactly(src: Source, li: int, X: np.ndarray, base: int) -> None:
    """Re-convert a line's values with Python's float() (correctly rounded, like strtod).
    Only reached for values with more than ~16 significant digits or extreme exponents that
    land within a few float64 ulps of a float32 rounding midpoint: essentially never in real
    collections, but it keeps the result identical to strtod-then-cast in every case. The
    kernel has validated the line already."""
    for tok in src.line_text(li).split("#", 1)[0].split()[1:]:
        if tok.startswith("qid:"):
            continue
        idx, val = tok.split(":", 1)
        col = int(idx) - base
        if 0 <= col < X.shape[1]:
            X[li, col] = np.float32(float(val))


def run_parse(src: Source, zero_based: bool, width: int, out: np.ndarray | None = None) -> RawParse:
    """The full parse. Raises `LetorFormatError` on a malformed line (the first in the file)
    and on a file without data lines. Layout problems are left to `finish_parse`.
    ``out``: a zero-filled float32 ``(n_lines, width)`` array to parse into (e.g. a memmap in
    a cache entry), instead of a new one."""
    n = src.n_lines
    base = 0 if zero_based else 1
    if out is None:
        X = np.zeros((n, width), dtype=np.float32)
    else:
        if out.shape != (n, width) or out.dtype != np.float32 or not out.flags.c_contiguous:
            raise ValueError(f"out must be C-contiguous float32 {(n, width)}, got {out.shape} {out.dtype}")
        X = out
    flags = np.zeros(n, dtype=np.uint8)
    labels = np.zeros(n, dtype=np.float64)
    qids = np.zeros(n, dtype=np.int64)
    mins = np.full(n, -1, dtype=np.int64)
    maxs = np.full(n, -1, dtype=np.int64)
    nc = _nchunks(n)
    err_code = np.zeros(nc, dtype=np.int64)
    err_pos = np.zeros(nc, dtype=np.int64)
    if n:
        with _KERNEL_LOCK:
            _parse_all(src.buf, src.starts, src.ends, nc, X, base, flags, labels, qids, mins,
                       maxs, err_code, err_pos)
        _raise_kernel_error(src.path, src.buf, src.starts, err_code, err_pos)
        for li in np.flatnonzero(flags & 4):
            _redo_line_exactly(src, int(li), X, base)
    data_lines = np.flatnonzero(flags & 1).astype(np.int64)
    if data_lines.size == 0:
        raise LetorFormatError(
            f"{src.path}: no data lines ({src.size} bytes, {n} lines, all blank or comments)",
            src.path, None, None,
        )
    dmins = mins[data_lines]
    has = dmins >= 0
    min_index = int(dmins[has].min()) if has.any() else -1
    max_index = int(maxs[data_lines].max())
    return RawParse(src, bool(zero_based), int(width), X, flags, labels, qids, mins, maxs,
                    data_lines, min_index, max_index)


def check_zero_based(zero_based) -> None:
    """Refuse a ``zero_based`` that is not ``"auto"``, True or False."""
    if not (isinstance(zero_based, str) and zero_based == "auto") \
            and not isinstance(zero_based, (bool, np.bool_)):
        raise ValueError(f"zero_based must be 'auto', True or False, got {zero_based!r}")


def check_n_features(n_features) -> None:
    """Refuse a negative ``n_features`` (None, the width read from the file, is fine)."""
    if n_features is not None and int(n_features) < 0:
        raise ValueError(f"n_features must be >= 0, got {n_features}")


def resolve_layout(
    index_ranges: list[tuple[int, int]], zero_based="auto", n_features: int | None = None
) -> tuple[bool, int]:
    """``(zero_based, width)`` shared by files with the given ``(min_index, max_index)``:
    auto means zero-based if any file uses index 0; the width is the largest index over all
    files (plus one when zero-based) unless ``n_features`` forces it."""
    check_zero_based(zero_based)
    check_n_features(n_features)
    if isinstance(zero_based, str):  # "auto"
        zb = any(lo == 0 for lo, _ in index_ranges)
    else:
        zb = bool(zero_based)
    base = 0 if zb else 1
    if n_features is not None:
        return zb, int(n_features)
    top = max((hi for _, hi in index_ranges), default=-1)
    return zb, max(0, top - base + 1)


#: Default bound on the width read from a file's indices: far above every LETOR collection
#: (Yahoo LTRC 700 features, Istella 220, MSLR 136), far below an index typed by mistake.
MAX_FEATURES = 100_000


def check_width(src: Source, zero_based: bool, max_index: int, max_features: int) -> None:
    """Refuse, before any matrix is allocated, a file whose largest feature index
    ``max_index`` would make it wider than ``max_features`` columns: the dense matrix has
    one float32 column per index up to the largest, so one stray ``100000000:1`` asks for
    gigabytes. The error names the first line holding such an index."""
    base = 0 if zero_based else 1
    if max_index - base + 1 <= max_features:
        return
    limit = max_features - 1 + base  # the largest index that still fits
    li = int(_first_line_beyond(src.buf, src.starts, src.ends, limit))
    where = f"{src.path}: line {li + 1}: " if li >= 0 else f"{src.path}: "
    line = src.line_text(li) if li >= 0 else ""
    token = _find_token(line, lambda t: _index_of(t) > limit) if li >= 0 else None
    idx = _index_of(token) if token is not None else -1
    if idx <= limit:
        idx = max_index
    raise LetorFormatError(
        f"{where}feature index {idx} would make the feature matrix {idx - base + 1} columns "
        f"wide, more than max_features={max_features} (token {token!r}); the LETOR "
        f"collections have at most 700 features, so this index is probably a mistake. To "
        f"read such a file anyway pass max_features={idx - base + 1} (or more) to the reader",
        src.path, li + 1 if li >= 0 else None, token)


@dataclass
class Parsed:
    """Arrays of one parsed file. ``X[:, c]`` is file index ``c + base``."""

    X: np.ndarray
    y: np.ndarray
    query_ids: np.ndarray
    offsets: np.ndarray
    base: int
    min_index: int
    max_index: int


def _find_token(line: str, pred) -> str:
    for tok in line.split("#", 1)[0].split():
        if pred(tok):
            return tok
    return line[:80]


def _index_of(tok: str) -> int:
    try:
        return int(tok.split(":", 1)[0])
    except ValueError:
        return -1


def finish_parse(
    raw: RawParse,
    *,
    label_range: tuple[int, int] | None = (0, 4),
    require_qid: bool = True,
) -> Parsed:
    """Check labels, the layout and qids of a full parse and build the dataset arrays.

    With ``require_qid`` every data line needs ``qid:`` and a query's lines must be contiguous;
    the query ids are the file's qids. Without it qids are ignored (groups come from elsewhere)
    and ``query_ids``/``offsets`` are one-query-per-document placeholders.
    """
    src, dl = raw.src, raw.data_lines
    path = src.path
    zero_based, n_features = raw.zero_based, raw.width
    base = 0 if zero_based else 1

    def fail(li: int, what: str, token: str):
        raise LetorFormatError(f"{path}: line {li + 1}: {what} (token {token!r})", path, li + 1, token)

    # ---- labels
    labels = raw.labels[dl]
    if label_range is not None:
        lo, hi = label_range
        bad = np.flatnonzero((labels < lo) | (labels > hi))
        if bad.size:
            li = int(dl[bad[0]])
            tok = src.line_text(li).split()[0]
            fail(li, f"label {int(labels[bad[0]])} is outside label_range=({lo}, {hi}); pass "
                 "label_range=(low, high) to accept other grades, or label_range=None to "
                 "skip the check", tok)
    y = labels.astype(np.int32)

    # ---- feature indices against the layout
    mins, maxs = raw.mins[dl], raw.maxs[dl]
    if base == 1:
        bad = np.flatnonzero(mins == 0)
        if bad.size:
            li = int(dl[bad[0]])
            fail(li, "feature index 0 in a file read as one-based; pass zero_based=True "
                 "(or 'auto')", _find_token(src.line_text(li), lambda t: _index_of(t) == 0))
    bad = np.flatnonzero(maxs - base >= n_features)
    if bad.size:
        li = int(dl[bad[0]])
        idx = int(maxs[bad[0]])
        rng = f"{base}..{base + n_features - 1}" if n_features else "none"
        fail(li, f"feature index {idx} is beyond n_features={n_features} (valid indices "
             f"{rng} for a {'zero' if zero_based else 'one'}-based file)",
             _find_token(src.line_text(li), lambda t: _index_of(t) == idx))

    # ---- queries
    if require_qid:
        noq = np.flatnonzero((raw.flags[dl] & 2) == 0)
        if noq.size:
            li = int(dl[noq[0]])
            fail(li, "data line without 'qid:'; LETOR files need one on every line (for "
                 "LightGBM files with a .query group file use read_lightgbm)",
                 src.line_text(li).split()[0])
        dq = raw.qids[dl]
        run_starts = np.concatenate([[0], np.flatnonzero(dq[1:] != dq[:-1]) + 1]).astype(np.int64)
        query_ids = dq[run_starts]
        _, first, inv = np.unique(query_ids, return_index=True, return_inverse=True)
        if first.size != query_ids.size:
            first_run = first[inv]
            j = int(np.flatnonzero(first_run != np.arange(query_ids.size))[0])
            k = int(first_run[j])
            q = int(query_ids[j])
            li = int(dl[run_starts[j]])
            began = int(dl[run_starts[k]]) + 1
            other = int(dl[run_starts[k + 1]]) + 1
            fail(li, f"qid {q} reappears after other queries: its documents began at line "
                 f"{began} and qid {int(query_ids[k + 1])} started at line {other}; a query's "
                 "documents must be contiguous",
                 _find_token(src.line_text(li), lambda t: t.startswith("qid:")))
        offsets = np.append(run_starts, dl.size).astype(np.int64)
    else:
        query_ids = np.arange(dl.size, dtype=np.int64)
        offsets = np.arange(dl.size + 1, dtype=np.int64)

    # Blank and comment lines left zero rows: drop them (a copy, only when there are any).
    X = raw.X if dl.size == raw.X.shape[0] else raw.X[dl]
    return Parsed(X, y, query_ids, offsets, base, raw.min_index, raw.max_index)


def read_group_file(path, n_docs: int, data_path) -> np.ndarray:
    """Group sizes from a LightGBM ``.query`` file (one positive integer per line); they must
    add up to ``n_docs``, the data lines of ``data_path``."""
    path = Path(path)
    if not path.exists():
        raise LetorFormatError(
            f"{data_path}: query group file {path} not found; LightGBM-format files need one "
            "(pass query_file=... if it lives elsewhere)", path, None, None)
    sizes = []
    with open(path, "rb") as fh:
        # splitlines: LF, CRLF and CR-only line ends, as the data file's parser accepts.
        for ln, raw in enumerate(fh.read().splitlines(), 1):
            tok = raw.split(b"#", 1)[0].strip()
            if not tok:
                continue
            try:
                v = int(tok)
            except ValueError:
                v = -1
            if v <= 0:
                t = tok.decode("utf-8", "replace")
                raise LetorFormatError(
                    f"{path}: line {ln}: a group size must be a positive integer (token {t!r})",
                    path, ln, t)
            sizes.append(v)
    sizes = np.asarray(sizes, dtype=np.int64)
    if sizes.size == 0:
        raise LetorFormatError(f"{path}: no group sizes in the query file", path, None, None)
    if int(sizes.sum()) != n_docs:
        raise LetorFormatError(
            f"group sizes in {path} sum to {int(sizes.sum())} but {data_path} has {n_docs} data "
            f"lines; the .query file does not belong to this data file", path, None, None)
    return sizes
