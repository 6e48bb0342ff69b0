"""The numba kernels of the SVMlight/LETOR parser and writer, and the constants they read.

Everything compiled lives here, in one module: numba's on-disk cache (``cache=True``) is keyed
by the file that defines a function, and a kernel inlined from another module would keep
serving code compiled against that module's old source. Kernels never raise: they return an
error code (``E_*``, worded in `_ERROR_TEXT`) and the byte offset of the offending token, and
`ltrlib.data.svmlight.parse` turns that into a `LetorFormatError` naming file, line and token.
Names keep their leading underscore: they are private to the ``svmlight`` package, whose
``parse`` and ``write`` modules are their only callers.

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
their line is re-converted in Python with ``float()`` (correctly rounded; see
`ltrlib.data.svmlight.parse`). The result is thus identical to strtod-then-cast for every input.
"""

from __future__ import annotations

import math
import threading

import numba
import numpy as np
from numba import njit, prange


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


# --------------------------------------------------------------------------- reading kernels
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


# Longer than ~80 lines on purpose: it runs once per line of every file read, and one
# compiled loop over the line's bytes is what bench/bench_parse.py measures; leave it whole.
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


# --------------------------------------------------------------------------- writer kernels
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


# Longer than ~80 lines on purpose: it runs once per value written, and its digit search,
# rounding and exactness check share state in one compiled loop; leave it whole.
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
