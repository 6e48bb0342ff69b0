"""Reading LETOR collections into `Dataset`s, with an on-disk cache.

* `read_letor` - one SVMlight/LETOR file with ``qid:`` (Istella-S, MSLR-WEB, Yahoo LTRC, MQ2007/8).
* `read_lightgbm` - one file in LightGBM's format, with query groups in ``<file>.query``.
* `read_letor_folder` - ``[FoldN/]train.txt, vali.txt, test.txt`` into `Splits` with one
  common feature layout.

The three take the same keyword options (below); `ReadOptions` holds them in one value, with
their defaults and checks.

Conventions (see `ltrlib.data.svmlight` for the text format)
--------------------------------------------------------------
* ``zero_based="auto"``: zero-based if any index 0 appears (in any file of a folder).
  Column ``c`` of ``X`` is file index ``c + base`` and is named ``f{c + base}``, so with a
  one-based MSLR file ``X[:, 0]`` is ``f1``, the feature the file writes as ``1:...``.
* Width: the largest index seen (over the three files of a folder), or ``n_features=``. A
  width read from the indices is bounded by ``max_features`` (default 100,000, far above the
  700 of Yahoo LTRC): the matrix is dense, so one mistyped index would ask for gigabytes;
  the error names the file, line and token, and a larger ``max_features`` lifts the bound.
* Query ids: LETOR files keep the file's qids. LightGBM files have none, so their queries are
  numbered ``0..n_queries-1`` in file order.
* Labels must be integers within ``label_range`` (default ``(0, 4)``, the grades of every
  public web collection); ``label_range=None`` turns the check off.
* Categories: ``category_feature`` names the feature holding each document's topic category,
  as the file index (``220``) or its name (``"f220"``). ``category_bins=(feature, n_bins)``
  bins a continuous feature (e.g. MSLR's PageRank) by quantiles; in a folder the bin edges
  come from the training file and apply to all three, so a category means the same thing in
  every split.
* Cache: ``cache=True`` stores each parsed file under ``cache_dir`` (default
  ``ltrlib.config.CACHE_DIR``) and reloads it memory-mapped; see `ltrlib.data.cache` for what
  the staleness check does and does not catch, and ``verify="full"`` for a full-content check.
  ``X`` is read-only in every case: with the cache on it is a memory map of the entry's
  ``X.npy`` (on a hit, and also after a first parse, which writes X straight into the new
  entry); without it, an in-memory array made read-only too, so code that would write into a
  cached matrix fails on the first run already. Use ``np.array(ds.X)`` for a private writable
  copy. Remove cache entries by deleting them (``rm``, `ltrlib.data.cache.clear`), never by
  truncating files in place: a live memory map of a truncated file crashes the process.
* ``Dataset.meta`` records ``source``, ``index_base``, ``cache`` (``"hit"``, ``"miss"`` or
  ``"off"``), ``cache_entry`` and, after a first parse with the cache on, the file's SHA-256.
"""

from __future__ import annotations

import os
import re
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ltrlib.data import cache as _cache
from ltrlib.data.catalogue import fold_folder
from ltrlib.data.dataset import Dataset, Splits
from ltrlib.data.svmlight.parse import (
    MAX_FEATURES,
    LetorFormatError,
    check_n_features,
    check_width,
    check_zero_based,
    finish_parse,
    open_source,
    read_group_file,
    resolve_layout,
    run_parse,
    sample_index_range,
)

__all__ = ["read_letor", "read_lightgbm", "read_letor_folder", "ReadOptions", "LetorFormatError"]


@dataclass
class _Unit:
    path: Path
    query_file: Path | None  # LightGBM format when set
    name: str

    @property
    def file_format(self) -> str:
        return "letor" if self.query_file is None else "lightgbm"


@dataclass(frozen=True)
class ReadOptions:
    """The keyword options the three readers share, in one value with their defaults; the
    module docstring says what each does. Built by each reader from its keywords, and checked
    here when built, with the errors the readers raise: category_feature and category_bins
    together, a label_range that is not two integers, a max_features that is not a positive
    integer, a bad zero_based or a negative n_features. ``label_range`` is stored as a tuple
    of ints. ``verify`` is checked when the cache is read (`ltrlib.data.cache.load`): with
    ``cache=False`` it is never used."""

    zero_based: bool | str = "auto"
    n_features: int | None = None
    max_features: int = MAX_FEATURES
    label_range: tuple[int, int] | None = (0, 4)
    category_feature: int | str | None = None
    category_bins: tuple[int | str, int] | None = None
    cache: bool = True
    cache_dir: str | os.PathLike | None = None
    verify: str = "sample"

    def __post_init__(self):
        if self.category_feature is not None and self.category_bins is not None:
            raise ValueError("give category_feature or category_bins, not both")
        if self.label_range is not None:
            lo, hi = int(self.label_range[0]), int(self.label_range[1])
            object.__setattr__(self, "label_range", (lo, hi))  # frozen: set once, here
        mf = self.max_features
        if isinstance(mf, bool) or not isinstance(mf, (int, np.integer)) or mf < 1:
            raise ValueError(f"max_features must be a positive integer, got {mf!r}")
        check_zero_based(self.zero_based)
        check_n_features(self.n_features)


def read_letor(
    path,
    *,
    zero_based="auto",
    n_features: int | None = None,
    max_features: int = MAX_FEATURES,
    label_range: tuple[int, int] | None = (0, 4),
    category_feature: int | str | None = None,
    category_bins: tuple[int | str, int] | None = None,
    name: str | None = None,
    cache: bool = True,
    cache_dir=None,
    verify: str = "sample",
) -> Dataset:
    """Read one SVMlight/LETOR file (``label qid:Q idx:val ... # comment``) into a `Dataset`.

    Raises `LetorFormatError` (a ``ValueError``) naming file, line and token on any malformed
    input; nothing is skipped silently. See the module docstring for the conventions.
    """
    unit = _Unit(_existing(path), None, name or Path(path).stem)
    (ds,) = _read_units([unit], ReadOptions(
        zero_based=zero_based, n_features=n_features, max_features=max_features,
        label_range=label_range, category_feature=category_feature, category_bins=category_bins,
        cache=cache, cache_dir=cache_dir, verify=verify))
    return ds


def read_lightgbm(
    path,
    *,
    query_file=None,
    zero_based="auto",
    n_features: int | None = None,
    max_features: int = MAX_FEATURES,
    label_range: tuple[int, int] | None = (0, 4),
    category_feature: int | str | None = None,
    category_bins: tuple[int | str, int] | None = None,
    name: str | None = None,
    cache: bool = True,
    cache_dir=None,
    verify: str = "sample",
) -> Dataset:
    """Read a file in LightGBM's ranking format: ``label idx:val ...`` lines and group sizes,
    one per line, in ``query_file`` (default ``<path>.query``). Queries get ids
    ``0..n_queries-1`` in file order; ``qid:`` tokens in the data file, if any, are ignored.
    A missing query file, or group sizes that do not add up to the data lines, raise
    `LetorFormatError` naming both files and both numbers."""
    p = _existing(path)
    qf = Path(query_file) if query_file is not None else p.with_name(p.name + ".query")
    if qf.is_dir():
        raise IsADirectoryError(f"{p}: query group file {qf} is a directory; expected a file "
                                "with one group size per line")
    if not qf.exists():
        raise LetorFormatError(
            f"{p}: query group file {qf} not found; LightGBM-format files need one "
            "(pass query_file=... if it lives elsewhere, or use read_letor for files with qid:)",
            qf, None, None)
    unit = _Unit(p, qf, name or p.name)
    (ds,) = _read_units([unit], ReadOptions(
        zero_based=zero_based, n_features=n_features, max_features=max_features,
        label_range=label_range, category_feature=category_feature, category_bins=category_bins,
        cache=cache, cache_dir=cache_dir, verify=verify))
    return ds


def read_letor_folder(
    root,
    fold: int | str | None = None,
    *,
    files: tuple[str, str, str] = ("train.txt", "vali.txt", "test.txt"),
    zero_based="auto",
    n_features: int | None = None,
    max_features: int = MAX_FEATURES,
    label_range: tuple[int, int] | None = (0, 4),
    category_feature: int | str | None = None,
    category_bins: tuple[int | str, int] | None = None,
    cache: bool = True,
    cache_dir=None,
    verify: str = "sample",
) -> Splits:
    """Read ``root/[FoldN/]{train,vali,test}.txt`` into ``Splits(train, vali, test)``.

    ``fold=None`` reads the files in ``root`` itself (Istella-S); ``fold=1`` reads
    ``root/Fold1`` (MSLR-WEB, MQ2007/8); a string names the subfolder. The three files share
    one layout: zero-based if any of them uses index 0 (under ``"auto"``), and the width is
    the largest index over all three unless ``n_features`` is given. The training file must
    exist; a missing validation or test file gives ``None`` in its place.
    """
    root = Path(root)
    folder = root if fold is None else root / (fold_folder(fold) if isinstance(fold, int) else str(fold))
    if folder.is_file():
        raise NotADirectoryError(f"{folder} is a file, not a LETOR folder: read one file with read_letor "
                                 "(or load_dataset); read_letor_folder reads a folder holding "
                                 f"{', '.join(files)}")
    if not folder.is_dir():
        have = sorted(p.name for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
        raise FileNotFoundError(f"LETOR folder {folder} not found (subfolders of {root}: {have})")
    tag = folder.name if fold is not None else root.name
    units, slots = [], []
    for slot, fname in zip(("train", "vali", "test"), files):
        p = folder / fname
        if not p.exists():
            if slot == "train":
                have = sorted(q.name for q in folder.iterdir())
                raise FileNotFoundError(f"{p} not found; {folder} holds {have}")
            continue
        units.append(_Unit(_existing(p, f"{slot} file"), None, f"{tag}/{slot}"))
        slots.append(slot)
    parts = _read_units(units, ReadOptions(
        zero_based=zero_based, n_features=n_features, max_features=max_features,
        label_range=label_range, category_feature=category_feature, category_bins=category_bins,
        cache=cache, cache_dir=cache_dir, verify=verify))
    got = dict(zip(slots, parts))
    return Splits(got["train"], got.get("vali"), got.get("test"))


# --------------------------------------------------------------------------- internals
def _existing(path, what: str = "ranking file") -> Path:
    p = Path(path)
    if p.is_dir():
        raise IsADirectoryError(
            f"{what} {p} is a directory; expected one SVMlight/LETOR file (for a collection "
            "folder with train.txt, vali.txt, test.txt use read_letor_folder or load_dataset)")
    if not p.is_file():
        raise FileNotFoundError(f"{what} {p} not found")
    return p


def _feature_file_index(feature, what: str) -> int:
    if isinstance(feature, str):
        m = re.fullmatch(r"f?(\d+)", feature.strip())  # "f220", or "220" as a notebook parameter gives it
        if not m:
            raise ValueError(f"{what}={feature!r}: expected a file feature index or a name like 'f220'")
        return int(m.group(1))
    if isinstance(feature, (bool, np.bool_)) or not isinstance(feature, (int, np.integer)):
        raise ValueError(f"{what}={feature!r}: expected a file feature index or a name like 'f220'")
    return int(feature)


def _category_column(feature, what: str, base: int, width: int, path) -> int:
    idx = _feature_file_index(feature, what)
    col = idx - base
    if not 0 <= col < width:
        valid = f"{base}..{base + width - 1}" if width else "none (the file has no features)"
        raise ValueError(
            f"{what}={feature!r}: feature index {idx} does not exist in {path}; valid feature "
            f"indices are {valid} ({'zero' if base == 0 else 'one'}-based, {width} features)")
    return col


def _signatures(unit: _Unit) -> list[dict]:
    sigs = [_cache.source_signature(unit.path)]
    if unit.query_file is not None:
        sigs.append(_cache.source_signature(unit.query_file))
    return sigs


def _scan_signatures(unit: _Unit, src) -> list[dict]:
    # The signature of the bytes actually parsed (stat taken when the file was opened), so a
    # file that changes while it is read is keyed by what was read; _store's re-stat sees it.
    sigs = [{"path": str(unit.path.resolve()), "size": src.size, "mtime_ns": src.mtime_ns,
             "fingerprint": src.fingerprint}]
    if unit.query_file is not None:
        sigs.append(_cache.source_signature(unit.query_file))
    return sigs


class _Files:
    """The files of one read and what is open for them while it runs: the mapped sources,
    full parses made while settling the layout (kept when that layout is the final one),
    and cache entries being written."""

    def __init__(self, units: list[_Unit], options: ReadOptions):
        self.units = units
        self.options = options
        self.sigs = [_signatures(u) for u in units] if options.cache else [None] * len(units)
        self.srcs: dict[int, object] = {}
        self.raws: dict[int, object] = {}
        self.pending: dict[int, _cache.PendingEntry] = {}

    def map_source(self, i: int):
        self.srcs[i] = open_source(self.units[i].path, hash_content=self.options.cache)
        return self.srcs[i]

    def parse(self, i: int, zero_based: bool, width: int):
        # With the cache on, X is parsed straight into the new entry's X.npy (a memmap).
        o = self.options
        src = self.srcs.get(i)
        if src is None:
            src = self.map_source(i)
        out = None
        if o.cache and src.n_lines * width > 0:
            try:
                if i not in self.pending:
                    self.pending[i] = _cache.PendingEntry(o.cache_dir)
                out = self.pending[i].array("X", (src.n_lines, width), np.float32)
            except OSError as exc:
                _warn(f"cannot write the cache under {_cache.cache_root(o.cache_dir)}: {exc}",
                      RuntimeWarning)
        return run_parse(src, zero_based, width, out=out)

    def bound_width(self, index_ranges, zero_based: bool) -> None:
        # Before parse() allocates (n_lines, width): a width read from the files' indices is
        # bounded; one given as n_features is the caller's choice.
        o = self.options
        if o.n_features is not None:
            return
        for i, (_, hi) in enumerate(index_ranges):
            if hi - (0 if zero_based else 1) + 1 > o.max_features:
                # The range may come from the cache, with the file not opened yet.
                src = self.srcs.get(i) or open_source(self.units[i].path)
                check_width(src, zero_based, hi, o.max_features)

    def abort_pending(self) -> None:
        for p in self.pending.values():  # entries not committed (an error, or a cache hit)
            p.abort()


def _read_units(units: list[_Unit], options: ReadOptions) -> list[Dataset]:
    """The files as `Dataset`s with one common layout: settle the layout, then parse or load
    each file, then give every file the same categories."""
    files = _Files(units, options)
    try:
        zero_based, width = _common_layout(files)
        cat_col, n_bins = _category_setup(options, zero_based, width, units[0].path)
        out = [_parse_or_load(files, i, zero_based, width) for i in range(len(units))]
    finally:
        files.abort_pending()
    if cat_col is not None:
        out = _categorise(out, cat_col, n_bins, units[0].path)
    return out


def _common_layout(files: _Files) -> tuple[bool, int]:
    """``(zero_based, width)`` shared by the files.

    It needs every file's true feature index range. A cache entry of the same content records
    it; otherwise the file is parsed in full with a layout guessed from sampled lines, which
    gives the true range and, when the guess was right (the usual case), already the final
    result (kept in ``files.raws``). With the layout fixed by the caller nothing is read."""
    o, n = files.options, len(files.units)
    ranges = []
    auto = isinstance(o.zero_based, str)  # ReadOptions admits one string: "auto"
    if auto or o.n_features is None:
        known = {}
        for i in range(n):
            r = _cache_lookup(lambda: _cache.index_range(files.sigs[i], o.cache_dir), o.cache_dir) \
                if o.cache else None
            if r is not None:
                known[i] = r
        if len(known) < n:
            for i in range(n):
                if i not in known:
                    files.map_source(i)
            guess = [known[i] if i in known else sample_index_range(files.srcs[i])
                     for i in range(n)]
            g_zb, g_width = resolve_layout(guess, o.zero_based, o.n_features)
            files.bound_width(guess, g_zb)
            for i in list(files.srcs):
                files.raws[i] = files.parse(i, g_zb, g_width)
        ranges = [known[i] if i in known else files.raws[i].index_range for i in range(n)]
    zero_based, width = resolve_layout(ranges, o.zero_based, o.n_features)
    files.bound_width(ranges, zero_based)  # a sampled guess may have missed the widest line
    return zero_based, width


def _parse_or_load(files: _Files, i: int, zero_based: bool, width: int) -> Dataset:
    """File ``i`` in the final layout: the parse made while settling the layout if it used
    this layout, else the cache, else a (new) full parse, which is then stored."""
    o, u = files.options, files.units[i]
    base = 0 if zero_based else 1
    opts = {"zero_based": zero_based, "n_features": width,
            "label_range": None if o.label_range is None else list(o.label_range),
            "format": u.file_format}  # the parser options of the cache key
    raw = files.raws.pop(i, None)
    if raw is not None and (raw.zero_based, raw.width) != (zero_based, width):
        raw = files.parse(i, zero_based, width)  # the sampled guess missed: parse again
    hit = None
    if raw is None and o.cache:
        hit = _cache_lookup(lambda: _cache.load(files.sigs[i], opts, o.cache_dir, o.verify),
                            o.cache_dir)
    meta = {"source": str(u.path), "format": u.file_format, "index_base": base}
    if hit is not None:
        a = hit.arrays
        X, y, qids, offsets = a["X"], a["y"], a["query_ids"], a["offsets"]
        meta.update(cache="hit", cache_entry=str(hit.path),
                    content_sha256=hit.meta["sources"][0].get("sha256"))
    else:
        if raw is None:
            raw = files.parse(i, zero_based, width)
        parsed = finish_parse(raw, label_range=o.label_range, require_qid=u.query_file is None)
        X, y, qids, offsets = parsed.X, parsed.y, parsed.query_ids, parsed.offsets
        if u.query_file is not None:
            sizes = read_group_file(u.query_file, y.size, u.path)
            offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
            qids = np.arange(sizes.size, dtype=np.int64)
        X.flags.writeable = False
        meta["cache"] = "off"
        if o.cache:
            meta.update(_store(u, files.srcs[i], files.pending.pop(i, None), opts, parsed, X, y,
                               qids, offsets, o.cache_dir))
        files.srcs.pop(i, None)
        del raw  # release the file mapping
    names = tuple(f"f{c + base}" for c in range(width))
    return Dataset(X=X, y=y, query_ids=qids, offsets=offsets, feature_names=names, name=u.name,
                   meta=meta)


def _category_setup(options: ReadOptions, zero_based: bool, width: int, path):
    """``(column, n_bins)`` of the category feature (both None without one), checked against
    the layout before any file is parsed in it."""
    base = 0 if zero_based else 1
    cat_col = n_bins = None
    if options.category_feature is not None:
        cat_col = _category_column(options.category_feature, "category_feature", base, width,
                                   path)
    if options.category_bins is not None:
        feat, n_bins = options.category_bins
        # The feature is the category feature's, whichever option carries it.
        cat_col = _category_column(feat, "category_feature", base, width, path)
        if int(n_bins) < 2:
            raise ValueError(f"category_bins={n_bins}: quantile bins of the category feature must number "
                             "at least 2 (0 takes the feature's own values as categories)")
    return cat_col, n_bins


def _categorise(out: list[Dataset], cat_col: int, n_bins, path: Path) -> list[Dataset]:
    """Every file's categories from column ``cat_col``: its values, or with ``n_bins`` its
    quantile bin, with the edges from the first file (the training split of a folder)."""
    feature, ref = out[0].feature_names[cat_col], out[0].X[:, cat_col]
    distinct = np.unique(ref)
    if distinct.size < 2:
        raise ValueError(f"{path}: the category feature {feature} has a single value "
                         f"({distinct[0] if distinct.size else 'none'}), so every document would be "
                         "in one category; choose another feature")
    if n_bins is None:
        fractional = distinct[distinct != np.round(distinct)]
        if fractional.size:
            shown = ", ".join(f"{v:g}" for v in fractional[:3])
            raise ValueError(f"category_feature {feature} has non-integer values ({shown}, ...) in {path}, so "
                             f"they are not category ids; give category_bins (e.g. 10) to bin it into quantile "
                             "categories")
        return [d.with_category_from_feature(cat_col) for d in out]
    edges = np.unique(np.quantile(ref, np.linspace(0, 1, int(n_bins) + 1)[1:-1]))
    made = np.unique(np.searchsorted(edges, ref, side="right")).size
    if made < int(n_bins):
        # Quantiles of a feature with many ties coincide, and equal edges merge bins.
        _warn(f"category_bins: {int(n_bins)} quantile bins of {feature} gave {made} "
              f"{'category' if made == 1 else 'categories'} in {path.name}: the feature has only "
              f"{distinct.size} distinct values or heavy ties at the bin edges", UserWarning)
    return [d.with_category(np.searchsorted(edges, d.X[:, cat_col], side="right")
                            .astype(np.int32)) for d in out]


def _warn(message: str, category) -> None:
    """Warn at the reader's caller, the first frame outside this module: the call depth
    inside the readers differs from warning to warning, and a warning pointing into them
    tells the user nothing."""
    frame, level = sys._getframe(1), 2  # level 2: _warn's caller
    while frame is not None and frame.f_code.co_filename == __file__:
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)


def _cache_lookup(lookup, cache_dir):
    """``lookup()``, or None (a miss) when the cache cannot be read: a cache folder under a
    parent that cannot be searched, or under a file, must not stop the read any more than a
    read-only one does (the data are fine, only slower to load)."""
    try:
        return lookup()
    except OSError as exc:
        _warn(f"cannot read the cache under {_cache.cache_root(cache_dir)}: {exc}", RuntimeWarning)
        return None


def _store(u: _Unit, src, pending, opts, parsed, X, y, qids, offsets, cache_dir) -> dict:
    sigs = _scan_signatures(u, src)
    sigs[0]["sha256"] = src.content_hash()
    st = os.stat(u.path)
    if (st.st_size, st.st_mtime_ns) != (src.size, src.mtime_ns):
        _warn(f"{u.path} changed while it was read; the result is not cached", RuntimeWarning)
        if pending is not None:
            pending.abort()
        return {"cache": "miss"}
    if u.query_file is not None:
        sigs[1]["sha256"] = _cache.full_hash(u.query_file)
    meta = {"min_index": parsed.min_index, "max_index": parsed.max_index, "n_docs": int(y.size)}
    arrays = {"X": X, "y": y, "query_ids": qids, "offsets": offsets}
    try:
        if pending is None:
            entry = _cache.store(sigs, opts, arrays, meta, cache_dir)
        else:
            entry = pending.commit(sigs, opts, arrays, meta)
    except OSError as exc:
        # A full disk or read-only cache must not stop the research: the data are fine.
        _warn(f"could not cache {u.path}: {exc}", RuntimeWarning)
        return {"cache": "miss", "content_sha256": sigs[0]["sha256"]}
    return {"cache": "miss", "cache_entry": str(entry), "content_sha256": sigs[0]["sha256"]}
