"""Reading LETOR collections into `Dataset`s, with an on-disk cache.

* `read_letor` - one SVMlight/LETOR file with ``qid:`` (Istella-S, MSLR-WEB, Yahoo LTRC, MQ2007/8).
* `read_lightgbm` - one file in LightGBM's format, with query groups in ``<file>.query``.
* `read_letor_folder` - ``[FoldN/]train.txt, vali.txt, test.txt`` into `Splits` with one
  common feature layout.

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
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ltrlib.data import cache as _cache
from ltrlib.data.dataset import Dataset, Splits
from ltrlib.data.svmlight.parse import (
    MAX_FEATURES,
    LetorFormatError,
    check_width,
    finish_parse,
    open_source,
    read_group_file,
    resolve_layout,
    run_parse,
    sample_index_range,
)

__all__ = ["read_letor", "read_lightgbm", "read_letor_folder", "LetorFormatError"]


@dataclass
class _Unit:
    path: Path
    query_file: Path | None  # LightGBM format when set
    name: str

    @property
    def fmt(self) -> str:
        return "letor" if self.query_file is None else "lightgbm"


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
    (ds,) = _read_units([unit], zero_based, n_features, max_features, label_range,
                        category_feature, category_bins, cache, cache_dir, verify)
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
    (ds,) = _read_units([unit], zero_based, n_features, max_features, label_range,
                        category_feature, category_bins, cache, cache_dir, verify)
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
    folder = root if fold is None else root / (f"Fold{fold}" if isinstance(fold, int) else str(fold))
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
    parts = _read_units(units, zero_based, n_features, max_features, label_range,
                        category_feature, category_bins, cache, cache_dir, verify)
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


def _read_units(units, zero_based, n_features, max_features, label_range, category_feature,
                category_bins, cache, cache_dir, verify) -> list[Dataset]:
    if category_feature is not None and category_bins is not None:
        raise ValueError("give category_feature or category_bins, not both")
    if label_range is not None:
        label_range = (int(label_range[0]), int(label_range[1]))
    if isinstance(max_features, bool) or not isinstance(max_features, (int, np.integer)) \
            or max_features < 1:
        raise ValueError(f"max_features must be a positive integer, got {max_features!r}")
    sigs = [_signatures(u) for u in units] if cache else [None] * len(units)

    # 1. The common layout needs every file's true feature index range. A cache entry of the
    #    same content records it; otherwise the file is parsed in full with a layout guessed
    #    from sampled lines, which gives the true range and, when the guess was right (the
    #    usual case), already the final result.
    raws: dict[int, object] = {}
    srcs: dict[int, object] = {}
    pending: dict[int, _cache.PendingEntry] = {}

    def parse(i, zb_, width_):
        # With the cache on, X is parsed straight into the new entry's X.npy (a memmap).
        src = srcs.get(i)
        if src is None:
            src = srcs[i] = open_source(units[i].path, hash_content=cache)
        out = None
        if cache and src.n_lines * width_ > 0:
            try:
                if i not in pending:
                    pending[i] = _cache.PendingEntry(cache_dir)
                out = pending[i].array("X", (src.n_lines, width_), np.float32)
            except OSError as exc:
                warnings.warn(f"cannot write the cache under {_cache.cache_root(cache_dir)}: "
                              f"{exc}", RuntimeWarning, stacklevel=4)
        return run_parse(src, zb_, width_, out=out)

    def bound_width(index_ranges, zb_):
        # Before parse() allocates (n_lines, width): a width read from the file's indices is
        # bounded; one given as n_features is the caller's choice.
        if n_features is not None:
            return
        for i, (_, hi) in enumerate(index_ranges):
            if hi - (0 if zb_ else 1) + 1 > max_features:
                src = srcs.get(i) or open_source(units[i].path)  # the range may come from the cache
                check_width(src, zb_, hi, max_features)

    try:
        if isinstance(zero_based, str) and zero_based == "auto" or n_features is None:
            known = {}
            for i in range(len(units)):
                r = _cache_lookup(lambda: _cache.index_range(sigs[i], cache_dir), cache_dir) \
                    if cache else None
                if r is not None:
                    known[i] = r
            if len(known) < len(units):
                for i, u in enumerate(units):
                    if i not in known:
                        srcs[i] = open_source(u.path, hash_content=cache)
                guess = [known[i] if i in known else sample_index_range(srcs[i])
                         for i in range(len(units))]
                g_zb, g_width = resolve_layout(guess, zero_based, n_features)
                bound_width(guess, g_zb)
                for i in list(srcs):
                    raws[i] = parse(i, g_zb, g_width)
            ranges = [known[i] if i in known else raws[i].index_range for i in range(len(units))]
        else:
            ranges = []
        zb, width = resolve_layout(ranges, zero_based, n_features)
        bound_width(ranges, zb)  # a sampled guess may have missed the widest line
        base = 0 if zb else 1
        cat_col = bins = None
        if category_feature is not None:
            cat_col = _category_column(category_feature, "category_feature", base, width,
                                       units[0].path)
        if category_bins is not None:
            feat, bins = category_bins
            cat_col = _category_column(feat, "category_bins", base, width, units[0].path)
            if int(bins) < 2:
                raise ValueError(f"category_bins: n_bins must be >= 2, got {bins}")
        options = {"zero_based": zb, "n_features": width,
                   "label_range": None if label_range is None else list(label_range)}

        # 2. Each file: the parse from step 1 if its layout is the final one, else the cache,
        #    else a (new) full parse, which is then stored.
        out = []
        names = tuple(f"f{c + base}" for c in range(width))
        for i, u in enumerate(units):
            opts = dict(options, format=u.fmt)
            raw = raws.pop(i, None)
            if raw is not None and (raw.zero_based, raw.width) != (zb, width):
                raw = parse(i, zb, width)  # the sampled guess missed: parse again
            hit = None
            if raw is None and cache:
                hit = _cache_lookup(lambda: _cache.load(sigs[i], opts, cache_dir, verify), cache_dir)
            meta = {"source": str(u.path), "format": u.fmt, "index_base": base}
            if hit is not None:
                a = hit.arrays
                X, y, qids, offsets = a["X"], a["y"], a["query_ids"], a["offsets"]
                meta.update(cache="hit", cache_entry=str(hit.path),
                            content_sha256=hit.meta["sources"][0].get("sha256"))
            else:
                if raw is None:
                    raw = parse(i, zb, width)
                parsed = finish_parse(raw, label_range=label_range,
                                      require_qid=u.query_file is None)
                X, y, qids, offsets = parsed.X, parsed.y, parsed.query_ids, parsed.offsets
                if u.query_file is not None:
                    sizes = read_group_file(u.query_file, y.size, u.path)
                    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
                    qids = np.arange(sizes.size, dtype=np.int64)
                X.flags.writeable = False
                meta["cache"] = "off"
                if cache:
                    meta.update(_store(u, srcs[i], pending.pop(i, None), opts, parsed, X, y,
                                       qids, offsets, cache_dir))
                srcs.pop(i, None)
                del raw  # release the file mapping
            out.append(Dataset(X=X, y=y, query_ids=qids, offsets=offsets, feature_names=names,
                               name=u.name, meta=meta))
    finally:
        for p in pending.values():  # entries not committed (an error, or a cache hit)
            p.abort()

    # 3. Categories (bin edges from the first file: the training split of a folder).
    if cat_col is not None:
        feature, ref = out[0].feature_names[cat_col], out[0].X[:, cat_col]
        distinct = np.unique(ref)
        if distinct.size < 2:
            raise ValueError(f"{units[0].path}: the category feature {feature} has a single value "
                             f"({distinct[0] if distinct.size else 'none'}), so every document would be "
                             "in one category; choose another feature")
        if bins is None:
            out = [d.with_category_from_feature(cat_col) for d in out]
        else:
            edges = np.unique(np.quantile(ref, np.linspace(0, 1, int(bins) + 1)[1:-1]))
            made = np.unique(np.searchsorted(edges, ref, side="right")).size
            if made < int(bins):
                # Quantiles of a feature with many ties coincide, and equal edges merge bins.
                warnings.warn(f"category_bins: {int(bins)} quantile bins of {feature} gave {made} "
                              f"categories in {units[0].path.name}: the feature has only "
                              f"{distinct.size} distinct values or heavy ties at the bin edges",
                              UserWarning, stacklevel=3)
            out = [d.with_category(np.searchsorted(edges, d.X[:, cat_col], side="right")
                                   .astype(np.int32)) for d in out]
    return out


def _cache_lookup(lookup, cache_dir):
    """``lookup()``, or None (a miss) when the cache cannot be read: a cache folder under a
    parent that cannot be searched, or under a file, must not stop the read any more than a
    read-only one does (the data are fine, only slower to load)."""
    try:
        return lookup()
    except OSError as exc:
        warnings.warn(f"cannot read the cache under {_cache.cache_root(cache_dir)}: {exc}",
                      RuntimeWarning, stacklevel=4)
        return None


def _store(u: _Unit, src, pending, opts, parsed, X, y, qids, offsets, cache_dir) -> dict:
    sigs = _scan_signatures(u, src)
    sigs[0]["sha256"] = src.content_hash()
    st = os.stat(u.path)
    if (st.st_size, st.st_mtime_ns) != (src.size, src.mtime_ns):
        warnings.warn(f"{u.path} changed while it was read; the result is not cached",
                      RuntimeWarning, stacklevel=4)
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
        warnings.warn(f"could not cache {u.path}: {exc}", RuntimeWarning, stacklevel=4)
        return {"cache": "miss", "content_sha256": sigs[0]["sha256"]}
    return {"cache": "miss", "cache_entry": str(entry), "content_sha256": sigs[0]["sha256"]}
