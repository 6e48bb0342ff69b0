"""A fast, strict parser and writer for SVMlight / LETOR ranking files.

The text format, one document per line::

    <label> [qid:<Q>] <index>:<value> <index>:<value> ... [# comment]

as shipped by Istella-S, MSLR-WEB10K/30K, Yahoo LTRC and MQ2007/2008 (with ``qid:``), and by
LightGBM's examples (without ``qid:``; query groups come from a separate ``.query`` file).

Conventions
-----------
* Features are sparse: an index that a line does not mention is 0.
* Indices are one-based (LETOR) or zero-based. ``zero_based="auto"`` does what scikit-learn's
  ``load_svmlight_file`` does: the file is zero-based if any index 0 appears in it.
* Column ``c`` of ``X`` holds file index ``c + base`` (``base`` is 0 or 1); the readers name it
  ``f{c + base}``, so feature names match the indices a user sees in the file.
* Indices on a line must be strictly increasing (as scikit-learn requires): a repeated index
  would make the dense value ambiguous.
* Labels are integers (``2`` or ``2.0``); blank lines and lines holding only a ``# comment``
  are skipped; a line ends at LF, CRLF or a lone CR (classic Mac files), and a UTF-8
  byte-order mark is accepted. Line numbers in error messages are 1-based physical line
  numbers, counting blank and comment lines.
* Values: decimal numbers with optional sign, fraction and exponent (``-1.5``, ``.25``,
  ``1e-05``). ``nan`` and ``inf`` are refused, and so are values that overflow float32.

Exactness
---------
A value is parsed as its decimal mantissa (an integer) times a power of ten. When the mantissa
has at most 15-16 significant digits (``<= 2**53``) and the exponent is within +-22 both
factors are exact float64 numbers, so the one multiplication or division is correctly rounded:
the float64 equals what C's ``strtod`` returns. It is then cast to float32, which is exactly
what scikit-learn's ``load_svmlight_file(..., dtype=np.float32)`` does, so the two agree bit for
bit. Every LETOR collection stays on this path. Longer mantissas (e.g. 17-digit float64 reprs)
or extreme exponents take a path that is within ~2.5 float64 ulps; that only matters when the
value lies within a few ulps of a float32 rounding midpoint, so such values are flagged and
their line is re-converted in Python with ``float()`` (correctly rounded). The result is thus
identical to strtod-then-cast for every input.

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
code and the byte offset of the offending token, and Python turns that into a
`LetorFormatError` naming file, line and token.
"""

from __future__ import annotations

import hashlib
import math
import mmap
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

import numba
import numpy as np
from numba import njit, prange

from ltrlib.atomic import atomic_path

__all__ = [
    "LetorFormatError",
    "Source",
    "RawParse",
    "Parsed",
    "open_source",
    "sample_index_range",
    "run_parse",
    "finish_parse",
    "resolve_layout",
    "MAX_FEATURES",
    "check_width",
    "check_not_compressed",
    "read_group_file",
    "write_svmlight",
    "write_lightgbm",
]


class LetorFormatError(ValueError):
    """A ranking file that cannot be read as it is. Carries ``path``, ``line`` (1-based,
    or None when the problem is not one line's) and ``token`` (the offending text or None)."""

    def __init__(self, message: str, path=None, line: int | None = None, token: str | None = None):
        super().__init__(message)
        self.path = None if path is None else str(path)
        self.line = line
        self.token = token


# --------------------------------------------------------------------------- constants
# Error codes the kernels return (0 = fine). Python maps them to messages in _ERROR_TEXT.
E_TOKEN, E_LABEL, E_LABEL_NONINT, E_QID, E_INDEX, E_VALUE = 1, 2, 3, 4, 5, 6
E_NONFINITE, E_ORDER, E_QID_POS, E_OVERFLOW = 7, 8, 9, 11

_ERROR_TEXT = {
    E_TOKEN: "malformed token: expected 'index:value' or 'qid:N'",
    E_LABEL: "the label (first token) is not a number",
    E_LABEL_NONINT: "the label is not an integer (relevance grades are integers)",
    E_QID: "malformed qid: expected 'qid:' followed by a non-negative integer",
    E_INDEX: "feature index too large",
    E_VALUE: "malformed feature value: expected a decimal number",
    E_NONFINITE: "feature value is NaN or infinite; ltrlib refuses non-finite features",
    E_ORDER: "feature indices must be strictly increasing along a line "
    "(this one repeats or goes back)",
    E_QID_POS: "qid must appear once, right after the label and before the features",
    E_OVERFLOW: "feature value does not fit in float32 (|x| > 3.4e38)",
}

_SP, _TAB, _NL, _CR, _HASH, _COLON = 32, 9, 10, 13, 35, 58
_PLUS, _MINUS, _DOT = 43, 45, 46
_MAX_LABEL = 2.0**31 - 1

# Correctly rounded float64 powers of ten (float(str) rounds correctly; 10.0**k relies on libm).
_P10 = np.array([float(f"1e{k}") for k in range(309)], dtype=np.float64)
_I10 = np.array([10**k for k in range(19)], dtype=np.int64)
_TWO53 = 2**53


# --------------------------------------------------------------------------- numba kernels
@njit(cache=True, nogil=True)
def _to_float64(m, e, inexact):
    """``(m * 10**e as float64, exact)``. ``exact``: the result is the correctly rounded
    float64 (Clinger's fast path: m <= 2**53, |e| <= 22, both factors exact, one IEEE
    operation). Otherwise it is within ~2.5 float64 ulps."""
    if m == 0:
        return 0.0, True
    if not inexact and m <= _TWO53:
        if 0 <= e <= 22:
            return m * _P10[e], True
        if -22 <= e < 0:
            return m / _P10[-e], True
        if 22 < e <= 22 + 15:
            # Clinger's extension: move surplus powers into the mantissa while it stays exact.
            mm = m * _I10[e - 22]
            if mm <= _TWO53 and mm // _I10[e - 22] == m:
                return mm * _P10[22], True
    fm = float(m)
    if e >= 0:
        if e > 308:
            return np.inf, False
        return fm * _P10[e], False
    k = -e
    if k <= 308:
        return fm / _P10[k], False
    fm = fm / _P10[308]
    k -= 308
    if k > 308:
        return 0.0, False
    return fm / _P10[k], False


@njit(cache=True, nogil=True)
def _near_float32_midpoint(v):
    """True when an error of a few float64 ulps in v could change its float32 rounding:
    1e-15 relative is ~4.5 ulps, above the slow path's worst case."""
    return np.float32(v * (1.0 + 1e-15)) != np.float32(v * (1.0 - 1e-15))


@njit(cache=True, nogil=True, inline="always")
def _is_delim(buf, i, e):
    # A token ends at end of line, a blank, or the start of a comment.
    if i >= e:
        return True
    c = buf[i]
    return c == _SP or c == _TAB or c == _HASH


@njit(cache=True, nogil=True)
def _parse_long_mantissa(buf, i, e):
    """Slow path for mantissas with more than 18 digits: keep the first 18 significant digits.
    Returns (m, dexp, inexact, end)."""
    m = np.int64(0)
    nd = 0
    dexp = 0
    inexact = False
    while i < e:
        d = np.int64(buf[i]) - 48
        if d < 0 or d > 9:
            break
        if nd < 18:
            m = m * 10 + d
            if m > 0:
                nd += 1
        else:
            dexp += 1
            if d != 0:
                inexact = True
        i += 1
    if i < e and buf[i] == _DOT:
        i += 1
        while i < e:
            d = np.int64(buf[i]) - 48
            if d < 0 or d > 9:
                break
            if nd < 18:
                m = m * 10 + d
                if m > 0:
                    nd += 1
                dexp -= 1
            elif d != 0:
                inexact = True
            i += 1
    return m, dexp, inexact, i


@njit(cache=True, nogil=True)
def _nonfinite_word(buf, i, e):
    """At buf[i] (a letter): 2 if the word is nan/inf/infinity (any case), else 1; and its end."""
    j = i
    while j < e and 97 <= (np.int64(buf[j]) | 32) <= 122:
        j += 1
    n = j - i
    w0 = np.int64(buf[i]) | 32
    if n == 3 and w0 == 110 and (np.int64(buf[i + 1]) | 32) == 97 and (np.int64(buf[i + 2]) | 32) == 110:
        return 2, j
    if (n == 3 or n == 8) and w0 == 105 and (np.int64(buf[i + 1]) | 32) == 110 \
            and (np.int64(buf[i + 2]) | 32) == 102:
        return 2, j
    return 1, j


@njit(cache=True, nogil=True, inline="always")
def _parse_number(buf, i, e):
    """Parse a decimal number at buf[i:e]. Returns (value, end, status): status 0 ok (the
    correctly rounded float64), 3 ok but only within a few ulps (long mantissa or extreme
    exponent), 1 not a number, 2 nan/inf literal."""
    neg = False
    if i < e and (buf[i] == _MINUS or buf[i] == _PLUS):
        neg = buf[i] == _MINUS
        i += 1
    s = i
    # Hot loop kept minimal: accumulate every digit; > 18 digits (int64 overflow) is redone
    # by the slow path below, which is only reached for such long mantissas.
    m = np.int64(0)
    while i < e:
        d = np.int64(buf[i]) - 48
        if d < 0 or d > 9:
            break
        m = m * 10 + d
        i += 1
    nint = i - s
    nfrac = 0
    if i < e and buf[i] == _DOT:
        i += 1
        f = i
        while i < e:
            d = np.int64(buf[i]) - 48
            if d < 0 or d > 9:
                break
            m = m * 10 + d
            i += 1
        nfrac = i - f
    if nint + nfrac == 0:
        if i < e and 97 <= (np.int64(buf[i]) | 32) <= 122:
            st, j = _nonfinite_word(buf, i, e)
            return 0.0, j, st
        return 0.0, i, 1
    dexp = -nfrac
    inexact = False
    if nint + nfrac > 18:
        m, dexp, inexact, i = _parse_long_mantissa(buf, s, e)
    if i < e and (np.int64(buf[i]) | 32) == 101:  # 'e' / 'E'
        i += 1
        eneg = False
        if i < e and (buf[i] == _MINUS or buf[i] == _PLUS):
            eneg = buf[i] == _MINUS
            i += 1
        k = 0
        nexp = 0
        while i < e:
            d = np.int64(buf[i]) - 48
            if d < 0 or d > 9:
                break
            if k < 100000:  # beyond this the value is 0 or inf anyway
                k = k * 10 + d
            nexp += 1
            i += 1
        if nexp == 0:
            return 0.0, i, 1
        dexp += -k if eneg else k
    v, exact = _to_float64(m, dexp, inexact)
    return (-v if neg else v), i, (0 if exact else 3)


@njit(cache=True, nogil=True)
def _parse_line(buf, s, e, X, row, base, write):
    """Parse one line buf[s:e] (no line end). Returns
    (code, pos, flags, label, qid, min_index, max_index); flags bit 0: data line, bit 1: has qid,
    bit 2: a value's float32 is uncertain (see `_near_float32_midpoint`).
    With write=True values are converted; those whose column ``index - base`` lies inside X
    are stored in X[row]. Others are validated but not stored: the caller compares the true
    index range (returned) with the layout it guessed, and re-parses if they differ. With
    write=False values are only skipped over (used to sample index ranges)."""
    i = s
    while i < e and (buf[i] == _SP or buf[i] == _TAB):
        i += 1
    if i >= e or buf[i] == _HASH:
        return 0, 0, 0, 0.0, np.int64(0), np.int64(-1), np.int64(-1)
    t = i
    label, j, st = _parse_number(buf, i, e)
    if (st != 0 and st != 3) or not _is_delim(buf, j, e):
        return E_LABEL, t, 0, 0.0, np.int64(0), np.int64(-1), np.int64(-1)
    if label != math.floor(label) or abs(label) > _MAX_LABEL:
        return E_LABEL_NONINT, t, 0, 0.0, np.int64(0), np.int64(-1), np.int64(-1)
    i = j
    flags = 1
    qid = np.int64(0)
    mn = np.int64(-1)
    prev = np.int64(-1)
    ncols = X.shape[1]
    while True:
        while i < e and (buf[i] == _SP or buf[i] == _TAB):
            i += 1
        if i >= e or buf[i] == _HASH:
            break
        t = i
        if buf[i] == 113 and e - i >= 4 and buf[i + 1] == 105 and buf[i + 2] == 100 and buf[i + 3] == _COLON:
            if (flags & 2) != 0 or prev >= 0:
                return E_QID_POS, t, 0, 0.0, np.int64(0), np.int64(-1), np.int64(-1)
            i += 4
            q = np.int64(0)
            nd = 0
            while i < e:
                d = np.int64(buf[i]) - 48
                if d < 0 or d > 9:
                    break
                q = q * 10 + d
                nd += 1
                i += 1
            if nd == 0 or nd > 18 or not _is_delim(buf, i, e):
                return E_QID, t, 0, 0.0, np.int64(0), np.int64(-1), np.int64(-1)
            qid = q
            flags |= 2
            continue
        idx = np.int64(0)
        nd = 0
        while i < e:
            d = np.int64(buf[i]) - 48
            if d < 0 or d > 9:
                break
            idx = idx * 10 + d
            nd += 1
            i += 1
        if nd == 0 or i >= e or buf[i] != _COLON:
            return E_TOKEN, t, 0, 0.0, np.int64(0), np.int64(-1), np.int64(-1)
        if nd > 18:
            return E_INDEX, t, 0, 0.0, np.int64(0), np.int64(-1), np.int64(-1)
        i += 1
        if idx <= prev:
            return E_ORDER, t, 0, 0.0, np.int64(0), np.int64(-1), np.int64(-1)
        if prev < 0:
            mn = idx
        prev = idx
        if write:
            v, j, st = _parse_number(buf, i, e)
            if st == 2:
                return E_NONFINITE, t, 0, 0.0, np.int64(0), np.int64(-1), np.int64(-1)
            if (st != 0 and st != 3) or not _is_delim(buf, j, e):
                return E_VALUE, t, 0, 0.0, np.int64(0), np.int64(-1), np.int64(-1)
            f = np.float32(v)
            if np.isinf(f):
                return E_OVERFLOW, t, 0, 0.0, np.int64(0), np.int64(-1), np.int64(-1)
            if st == 3 and _near_float32_midpoint(v):
                flags |= 4  # the caller redoes this line with Python's correctly rounded float()
            col = idx - base
            if col >= 0 and col < ncols:
                X[row, col] = f
            i = j
        else:
            j = i
            while not _is_delim(buf, j, e):
                j += 1
            if j == i:
                return E_VALUE, t, 0, 0.0, np.int64(0), np.int64(-1), np.int64(-1)
            i = j
    return 0, 0, flags, label, qid, mn, prev


@njit(cache=True, nogil=True)
def _count_range(buf, lo, hi):
    # A plain function, not inlined into the prange body: LLVM vectorises it there (measured
    # 4x faster than the same loop written inside prange).
    k = np.int64(0)
    for i in range(lo, hi):
        if buf[i] == _NL:
            k += 1
    return k


@njit(parallel=True, cache=True, nogil=True)
def _count_newlines(buf, nchunks):
    n = buf.size
    counts = np.zeros(nchunks, dtype=np.int64)
    for c in prange(nchunks):
        counts[c] = _count_range(buf, c * n // nchunks, (c + 1) * n // nchunks)
    return counts


@njit(cache=True, nogil=True, inline="always")
def _is_lone_cr(buf, i):
    # A CR not followed by LF ends a line (classic Mac files, or one stray CR): such a line
    # end would otherwise glue lines together, silently inside a '# comment'.
    return buf[i] == _CR and (i + 1 >= buf.size or buf[i + 1] != _NL)


@njit(cache=True, nogil=True)
def _count_breaks_range(buf, lo, hi):
    k = np.int64(0)
    for i in range(lo, hi):
        if buf[i] == _NL or _is_lone_cr(buf, i):
            k += 1
    return k


@njit(parallel=True, cache=True, nogil=True)
def _count_breaks(buf, nchunks):
    """Per chunk, the line ends when a lone CR also ends a line (the slow path of
    `_count_newlines`, only taken for files that have one)."""
    n = buf.size
    counts = np.zeros(nchunks, dtype=np.int64)
    for c in prange(nchunks):
        counts[c] = _count_breaks_range(buf, c * n // nchunks, (c + 1) * n // nchunks)
    return counts


@njit(cache=True, nogil=True)
def _bounds_range(buf, lo, hi, k, starts, ends, cr_breaks):
    """Line ends in buf[lo:hi], written from line k on. Returns the number of lone CRs seen:
    with ``cr_breaks`` they end lines too; without, the caller redoes the split when any."""
    lone = 0
    for i in range(lo, hi):
        c = buf[i]
        if c == _NL:
            e = i
            if e > 0 and buf[e - 1] == _CR:
                e -= 1
            ends[k] = e
            starts[k + 1] = i + 1
            k += 1
        elif c == _CR and _is_lone_cr(buf, i):
            lone += 1
            if cr_breaks:
                ends[k] = i
                starts[k + 1] = i + 1
                k += 1
    return lone


@njit(parallel=True, cache=True, nogil=True)
def _line_bounds(buf, nchunks, first, starts, ends, start0, cr_breaks):
    """Fill starts/ends of every line; first[c] is the number of line ends before chunk c.
    Returns the number of lone CRs (see `_bounds_range`)."""
    n = buf.size
    lone = np.zeros(nchunks, dtype=np.int64)
    for c in prange(nchunks):
        lone[c] = _bounds_range(buf, c * n // nchunks, (c + 1) * n // nchunks, first[c], starts,
                                ends, cr_breaks)
    starts[0] = start0
    nl = starts.size - 1  # a final line without a line end (if any) ends at the end of the buffer
    if ends.size > nl:
        e = n
        if e > starts[nl] and buf[e - 1] == _CR:
            e -= 1
        ends[nl] = e
    return lone.sum()


@njit(cache=True, nogil=True)
def _sample_range(buf, starts, ends, lines):
    """(min, max) feature index over the given lines, skipping lines with errors (the full
    parse reports those). A cheap guess of the layout, so that one full pass usually does."""
    dummy = np.zeros((0, 0), dtype=np.float32)
    lo = np.int64(-1)
    hi = np.int64(-1)
    for li in lines:
        code, pos, fl, lab, q, mn, mx = _parse_line(buf, starts[li], ends[li], dummy, 0, 0, False)
        if code == 0 and mn >= 0:
            if lo < 0 or mn < lo:
                lo = mn
            if mx > hi:
                hi = mx
    return lo, hi


@njit(cache=True, nogil=True)
def _first_line_beyond(buf, starts, ends, limit):
    """The first line (0-based) with a feature index above ``limit``, or -1; lines with
    errors are skipped (the full parse reports those)."""
    dummy = np.zeros((0, 0), dtype=np.float32)
    for li in range(starts.size):
        code, pos, fl, lab, q, mn, mx = _parse_line(buf, starts[li], ends[li], dummy, 0, 0, False)
        if code == 0 and mx > limit:
            return li
    return -1


@njit(parallel=True, cache=True, nogil=True)
def _parse_all(buf, starts, ends, nchunks, X, base, flags, labels, qids, mins, maxs,
               err_code, err_pos):
    """The full parse: line li goes to row li of X (blank lines leave a zero row that the
    caller drops). Chunk c stops at its first error and reports (code, byte offset)."""
    n = starts.size
    for c in prange(nchunks):
        lo = c * n // nchunks
        hi = (c + 1) * n // nchunks
        for li in range(lo, hi):
            code, pos, fl, lab, q, mn, mx = _parse_line(buf, starts[li], ends[li], X, li, base, True)
            if code != 0:
                err_code[c] = code
                err_pos[c] = pos
                break
            flags[li] = fl
            labels[li] = lab
            qids[li] = q
            mins[li] = mn
            maxs[li] = mx


# numba's default threading layer (workqueue) aborts the process when two Python threads
# launch parallel kernels at once; readers may be called from thread pools, so serialise.
_KERNEL_LOCK = threading.Lock()


def _nchunks(n: int) -> int:
    # Several chunks per thread balance uneven line lengths; each chunk is still long.
    return int(max(1, min(n, 8 * numba.get_num_threads())))


# --------------------------------------------------------------------------- reading
def _fingerprint_blocks(size: int) -> list[tuple[int, int]]:
    """(offset, length) of the blocks the sampled fingerprint hashes: the first and last MiB
    and 16 evenly spaced 64 KiB blocks. Small files (<= 4 MiB) are hashed whole."""
    if size <= 4 << 20:
        return [(0, size)]
    mib, blk = 1 << 20, 64 << 10
    blocks = [(0, mib)]
    span = size - 2 * mib - blk
    blocks += [(mib + span * (k + 1) // 17, blk) for k in range(16)]
    blocks.append((size - mib, mib))
    return blocks


def fingerprint_bytes(data) -> str:
    """Sampled content fingerprint of an in-memory file (same value as `cache.fingerprint`)."""
    mv = memoryview(data).cast("B")
    h = hashlib.sha256()
    h.update(str(len(mv)).encode())
    for off, n in _fingerprint_blocks(len(mv)):
        h.update(mv[off:off + n])
    return h.hexdigest()


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


def check_not_compressed(path, head: bytes) -> None:
    """Raise `LetorFormatError` naming ``path`` if its first bytes ``head`` are those of a
    compressed file."""
    for magic, (kind, command) in _COMPRESSED.items():
        if head.startswith(magic):
            raise LetorFormatError(
                f"{path}: this is a {kind}-compressed file (it starts with the {kind} magic "
                f"bytes {magic.hex(' ')}), not SVMlight/LETOR text; decompress it first "
                f"(e.g. {command} {path}) and read the decompressed file", path, None, None)


def open_source(path, *, hash_content: bool = False) -> Source:
    """Map a file and find its lines. With ``hash_content`` a background thread computes the
    full-file SHA-256 meanwhile (`Source.content_hash`)."""
    path = Path(path)
    buf, st = _map_file(path)
    check_not_compressed(path, buf[:6].tobytes())
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
    raise LetorFormatError(
        f"{path}: line {li + 1}: {_ERROR_TEXT[code]} (token {token!r})", path, li + 1, token
    )


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


def resolve_layout(
    index_ranges: list[tuple[int, int]], zero_based="auto", n_features: int | None = None
) -> tuple[bool, int]:
    """``(zero_based, width)`` shared by files with the given ``(min_index, max_index)``:
    auto means zero-based if any file uses index 0; the width is the largest index over all
    files (plus one when zero-based) unless ``n_features`` forces it."""
    if isinstance(zero_based, str) and zero_based == "auto":
        zb = any(lo == 0 for lo, _ in index_ranges)
    elif isinstance(zero_based, (bool, np.bool_)):
        zb = bool(zero_based)
    else:
        raise ValueError(f"zero_based must be 'auto', True or False, got {zero_based!r}")
    base = 0 if zb else 1
    if n_features is not None:
        if int(n_features) < 0:
            raise ValueError(f"n_features must be >= 0, got {n_features}")
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


# --------------------------------------------------------------------------- writer
@njit(cache=True, nogil=True)
def _put_int(out, pos, v):
    if v < 0:
        out[pos] = _MINUS
        pos += 1
        v = -v
    n = 1
    t = v
    while t >= 10:
        t //= 10
        n += 1
    for k in range(n - 1, -1, -1):
        out[pos + k] = 48 + v % 10
        v //= 10
    return pos + n


@njit(cache=True, nogil=True)
def _put_float32(out, pos, x):
    """Shortest decimal (<= 9 significant digits) that reads back to the same float32 through
    this module's parser; positional for exponents -5..15, else scientific."""
    a = abs(np.float64(x))
    if x < 0:
        out[pos] = _MINUS
        pos += 1
    ax = np.float32(a)
    e10 = int(math.floor(math.log10(a)))
    m = np.int64(0)
    k = 0
    for p in range(1, 10):
        k = p - 1 - e10
        sc = a * _P10[k] if k >= 0 else a / _P10[-k]
        m = np.int64(math.floor(sc + 0.5))
        if m >= _I10[p]:  # rounding carried into a new digit: 9.99 -> 10.0
            m //= 10
            k -= 1
        if m > 0:
            back, exact = _to_float64(m, -k, False)
            # Not near a float32 midpoint unless exact: the reader then takes its fast path
            # or, if not, gets the same float32 without needing the line redone.
            if np.float32(back) == ax and (exact or not _near_float32_midpoint(back)):
                break
    while m > 0 and m % 10 == 0:
        m //= 10
        k -= 1
    nd = 1
    t = m
    while t >= 10:
        t //= 10
        nd += 1
    E = nd - 1 - k
    digits = np.empty(nd, dtype=np.uint8)
    t = m
    for q in range(nd - 1, -1, -1):
        digits[q] = 48 + t % 10
        t //= 10
    if -5 <= E < 16:
        if k <= 0:
            for q in range(nd):
                out[pos] = digits[q]
                pos += 1
            for q in range(-k):
                out[pos] = 48
                pos += 1
        elif k < nd:
            for q in range(nd - k):
                out[pos] = digits[q]
                pos += 1
            out[pos] = _DOT
            pos += 1
            for q in range(nd - k, nd):
                out[pos] = digits[q]
                pos += 1
        else:
            out[pos] = 48
            out[pos + 1] = _DOT
            pos += 2
            for q in range(k - nd):
                out[pos] = 48
                pos += 1
            for q in range(nd):
                out[pos] = digits[q]
                pos += 1
    else:
        out[pos] = digits[0]
        pos += 1
        if nd > 1:
            out[pos] = _DOT
            pos += 1
            for q in range(1, nd):
                out[pos] = digits[q]
                pos += 1
        out[pos] = 101
        pos += 1
        if E < 0:
            out[pos] = _MINUS
            E = -E
        else:
            out[pos] = _PLUS
        pos += 1
        if E < 10:
            out[pos] = 48
            pos += 1
        pos = _put_int(out, pos, E)
    return pos


@njit(parallel=True, cache=True, nogil=True)
def _format_rows(X, y, qid, with_qid, base, bounds, out, used):
    """Format rows into out; chunk c owns out[bounds[c]:...] and rows given by the chunk
    split; used[c] receives the bytes it wrote."""
    n = X.shape[0]
    nchunks = used.size
    for c in prange(nchunks):
        lo = c * n // nchunks
        hi = (c + 1) * n // nchunks
        pos = bounds[c]
        for r in range(lo, hi):
            pos = _put_int(out, pos, np.int64(y[r]))
            if with_qid:
                out[pos] = _SP
                out[pos + 1] = 113
                out[pos + 2] = 105
                out[pos + 3] = 100
                out[pos + 4] = _COLON
                pos = _put_int(out, pos + 5, qid[r])
            for j in range(X.shape[1]):
                v = X[r, j]
                if v != 0:
                    out[pos] = _SP
                    pos = _put_int(out, pos + 1, np.int64(j + base))
                    out[pos] = _COLON
                    pos = _put_float32(out, pos + 1, v)
            out[pos] = _NL
            pos += 1
        used[c] = pos - bounds[c]


def _atomic_write(path: Path, write) -> None:
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        write(fh)


def _write_rows(ds, fh, with_qid: bool, base: int) -> None:
    X = np.ascontiguousarray(ds.X, dtype=np.float32)
    if not np.all(np.isfinite(X)):
        raise ValueError(f"cannot write {ds.name!r}: X holds NaN or infinite values")
    y = np.ascontiguousarray(ds.y, dtype=np.int32)
    qid = np.ascontiguousarray(ds.qid, dtype=np.int64)
    nnz = np.count_nonzero(X, axis=1)
    # Upper bound per row: label, qid, and per value ' ' + index + ':' + <= 24 chars of float.
    row_ub = 12 + 26 + nnz.astype(np.int64) * 46 + 1
    block_rows = max(1, int((64 << 20) // max(1, int(row_ub.max()))))
    nchunks = 4 * numba.get_num_threads()
    for r0 in range(0, X.shape[0], block_rows):
        r1 = min(X.shape[0], r0 + block_rows)
        ub = row_ub[r0:r1]
        nc = min(nchunks, r1 - r0)
        n = r1 - r0
        cuts = [c * n // nc for c in range(nc + 1)]
        csum = np.concatenate([[0], np.cumsum(ub)])
        bounds = np.array([csum[cuts[c]] for c in range(nc)], dtype=np.int64)
        out = np.empty(int(csum[-1]), dtype=np.uint8)
        used = np.zeros(nc, dtype=np.int64)
        with _KERNEL_LOCK:
            _format_rows(X[r0:r1], y[r0:r1], qid[r0:r1], with_qid, base, bounds, out, used)
        for c in range(nc):
            fh.write(memoryview(out[bounds[c]:bounds[c] + used[c]]))


def write_svmlight(dataset, path, *, zero_based: bool = False, qid: bool = True) -> Path:
    """Write a `Dataset` as a LETOR/SVMlight file, atomically (temp file + rename).

    Only non-zero features are written, as in the published collections, with the shortest
    decimal that reads back to the same float32. Column ``c`` is written as index ``c + 1``
    (``c`` with ``zero_based=True``). ``qid=False`` leaves out the ``qid:`` tokens (LightGBM
    format; see `write_lightgbm`). Categories are not written.
    """
    path = Path(path)
    _atomic_write(path, lambda fh: _write_rows(dataset, fh, qid, 0 if zero_based else 1))
    return path


def write_lightgbm(dataset, path, *, zero_based: bool = False) -> tuple[Path, Path]:
    """Write LightGBM's format: ``path`` without qids and ``path.query`` with group sizes."""
    path = Path(path)
    write_svmlight(dataset, path, zero_based=zero_based, qid=False)
    qpath = path.with_name(path.name + ".query")
    sizes = "".join(f"{int(s)}\n" for s in dataset.group_sizes)
    _atomic_write(qpath, lambda fh: fh.write(sizes.encode()))
    return path, qpath
