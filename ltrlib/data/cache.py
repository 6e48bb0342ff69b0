"""An atomic, staleness-checked on-disk cache of parsed ranking files.

Layout: ``<cache_dir>/letor/<stem>-<pathhash>-<key>/`` holding ``X.npy``, ``y.npy``,
``query_ids.npy``, ``offsets.npy`` and ``meta.json``. ``cache_dir`` defaults to
``ltrlib.config.CACHE_DIR``; the ``letor/`` level keeps these entries apart from other caches.

What makes an entry valid
-------------------------
The entry name contains a key: a hash of the format version, the parser options and, for each
source file (the data file, and the ``.query`` file for LightGBM's format), its resolved path,
size, modification time (``st_mtime_ns``) and a *sampled* content fingerprint: SHA-256 of the
size, the first and last MiB and 16 evenly spaced 64 KiB blocks (small files, <= 4 MiB, whole;
`ltrlib.data.svmlight.fingerprint` computes it).
SHA-256 rather than blake2b: with the CPU's SHA extensions it is ~3x faster here, and the
fingerprint is paid on every load.

Why sampled: a reload must cost milliseconds; hashing a 1.4 GB file on every load would take
about a second and defeat the cache. What this catches, honestly: any change of size or
mtime (every ordinary edit, copy or re-download), and a same-size change with the mtime put
back by hand only if the change touches a sampled block (the whole file when <= 4 MiB). A
same-size, same-mtime edit elsewhere in a large file is not seen by the default check; load
with ``verify="full"`` to compare against the full-file SHA-256, which the first parse computes
in a background thread and stores in ``meta.json`` (``sources[i].sha256``) for provenance.

Atomicity and recovery
----------------------
Protects against killed and interrupted runs, not against power loss: nothing is fsync'ed
(that would cost a synchronous disk write of X on every first parse). After a crash of the
machine itself, clear the cache (`clear`) to be safe.

An entry is written into ``.tmp-*`` inside the cache directory and renamed into place, so
the real name only ever holds a complete entry. A killed run leaves at most a ``.tmp-*``
directory, which lookups ignore and which `cleanup_temp` removes once it is an hour old (a
younger one may belong to a concurrent writer). An entry that fails to load (missing or
truncated array, unreadable or mismatched ``meta.json``) is deleted and rebuilt, never trusted.
After a store, entries for the same source path whose recorded source no longer matches the
file (stale) are removed. The cache never writes next to, or modifies, the source files.
Loaded ``X`` is a read-only memory map.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import shutil
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ltrlib import config
from ltrlib.data.svmlight.fingerprint import fingerprint_file

__all__ = [
    "FORMAT_VERSION",
    "CacheHit",
    "PendingEntry",
    "full_hash",
    "source_signature",
    "cache_root",
    "load",
    "store",
    "index_range",
    "purge_stale",
    "cleanup_temp",
    "clear",
]

#: Bump when the parser's output or the entry layout changes: old entries then never match.
FORMAT_VERSION = 2  # 2: a lone CR ends a line (CR-only files used to read as one line)
_SIG_FIELDS = ("path", "size", "mtime_ns", "fingerprint")
_TMP_PREFIX = ".tmp-"
_TEMP_MAX_AGE_S = 3600.0


def cache_root(cache_dir=None) -> Path:
    return Path(config.CACHE_DIR if cache_dir is None else cache_dir) / "letor"


# --------------------------------------------------------------------------- signatures
def full_hash(path) -> str:
    """SHA-256 of the whole file, streamed."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(8 << 20):
            h.update(chunk)
    return h.hexdigest()


def source_signature(path) -> dict:
    """``{path, size, mtime_ns, fingerprint}`` of a source file, as the cache key uses it."""
    p = Path(path).resolve()
    st = os.stat(p)
    return {"path": str(p), "size": st.st_size, "mtime_ns": st.st_mtime_ns,
            "fingerprint": fingerprint_file(p, st.st_size)}


def _core(sig: dict) -> dict:
    return {k: sig[k] for k in _SIG_FIELDS}


def _key(sources: list[dict], options: dict) -> str:
    blob = json.dumps({"v": FORMAT_VERSION, "sources": [_core(s) for s in sources],
                       "options": options}, sort_keys=True)
    return hashlib.blake2b(blob.encode(), digest_size=10).hexdigest()


def _path_hash(sources: list[dict]) -> str:
    blob = "\n".join(s["path"] for s in sources)
    return hashlib.blake2b(blob.encode(), digest_size=5).hexdigest()


def _entry_name(sources: list[dict], options: dict) -> str:
    stem = re.sub(r"[^A-Za-z0-9_.]+", "_", Path(sources[0]["path"]).name)[:40]
    return f"{stem}-{_path_hash(sources)}-{_key(sources, options)}"


# --------------------------------------------------------------------------- load
@dataclass
class CacheHit:
    path: Path
    arrays: dict[str, np.ndarray]
    meta: dict


def _discard(d: Path) -> None:
    # Rename first so the real name disappears at once, then delete at leisure.
    trash = d.parent / f"{_TMP_PREFIX}trash-{uuid.uuid4().hex}"
    try:
        os.rename(d, trash)
    except OSError:
        return  # already gone (another process got there first)
    shutil.rmtree(trash, ignore_errors=True)


def _meta_key(d: Path) -> str | None:
    try:
        with open(d / "meta.json", encoding="utf-8") as fh:
            return json.load(fh).get("key")
    except Exception:  # noqa: BLE001
        return None


def _read_entry(d: Path, key: str, sources: list[dict]) -> CacheHit:
    """Load an entry or raise (any exception = corrupt)."""
    with open(d / "meta.json", encoding="utf-8") as fh:
        meta = json.load(fh)
    if meta.get("format_version") != FORMAT_VERSION or meta.get("key") != key:
        raise ValueError("meta.json does not match the entry's key")
    if [_core(s) for s in meta["sources"]] != [_core(s) for s in sources]:
        raise ValueError("meta.json names other sources")
    arrays = {}
    for name, spec in meta["arrays"].items():
        # X is memory-mapped (the 50x reload); the small arrays are read into memory.
        a = np.load(d / f"{name}.npy", mmap_mode="r" if name == "X" else None, allow_pickle=False)
        if list(a.shape) != spec["shape"] or str(a.dtype) != spec["dtype"]:
            raise ValueError(f"{name}.npy has shape {a.shape} {a.dtype}, meta says {spec}")
        arrays[name] = a
    return CacheHit(d, arrays, meta)


def load(sources: list[dict], options: dict, cache_dir=None, verify: str = "sample") -> CacheHit | None:
    """The entry for these source signatures and options, or None (absent, corrupt or, with
    ``verify="full"``, content that differs from the recorded full hash)."""
    if verify not in ("sample", "full"):
        raise ValueError(f"verify must be 'sample' or 'full', got {verify!r}")
    d = cache_root(cache_dir) / _entry_name(sources, options)
    if not d.is_dir():
        return None
    try:
        hit = _read_entry(d, _key(sources, options), sources)
    except Exception:  # noqa: BLE001 - whatever is wrong with it, it is not trusted
        _discard(d)
        return None
    if verify == "full":
        for rec, s in zip(hit.meta["sources"], sources):
            if rec.get("sha256") is None or rec["sha256"] != full_hash(s["path"]):
                _discard(d)
                return None
    return hit


def _entries_for(sources: list[dict], cache_dir) -> list[Path]:
    root = cache_root(cache_dir)
    if not root.is_dir():
        return []
    tag = f"-{_path_hash(sources)}-"
    return [p for p in root.iterdir() if tag in p.name and not p.name.startswith(_TMP_PREFIX)]


def index_range(sources: list[dict], cache_dir=None) -> tuple[int, int] | None:
    """``(min_index, max_index)`` of the file's features as recorded by any valid entry for
    exactly these sources: lets a reader resolve ``zero_based="auto"`` and the width without
    scanning the file again."""
    core = [_core(s) for s in sources]
    for d in _entries_for(sources, cache_dir):
        try:
            with open(d / "meta.json", encoding="utf-8") as fh:
                meta = json.load(fh)
            if meta.get("format_version") == FORMAT_VERSION and \
                    [_core(s) for s in meta["sources"]] == core:
                return int(meta["min_index"]), int(meta["max_index"])
        except Exception:  # noqa: BLE001 - a bad entry just gives no answer here
            continue
    return None


# --------------------------------------------------------------------------- store
class PendingEntry:
    """An entry being written in a ``.tmp-*`` directory; `commit` renames it into place.

    `array` hands out a zero-filled, writable memory map inside the temp directory, so the
    parser can write X straight into the cache file: that saves a second 100+ MB copy
    (np.save) on the first parse. Used as a context manager, an exception aborts the entry.
    """

    def __init__(self, cache_dir=None):
        self.root = cache_root(cache_dir)
        self.root.mkdir(parents=True, exist_ok=True)
        self.cache_dir = cache_dir
        cleanup_temp(cache_dir)
        self.tmp: Path | None = Path(tempfile.mkdtemp(prefix=f"{_TMP_PREFIX}{os.getpid()}-",
                                                      dir=self.root))
        self._maps: dict[str, np.ndarray] = {}

    def array(self, name: str, shape: tuple[int, ...], dtype) -> np.ndarray:
        """A zero-filled writable memmap that becomes ``<name>.npy`` of the entry."""
        f = self.tmp / f"{name}.npy"
        if f.exists():
            f.unlink()  # an earlier map of it (another layout) stays valid until dropped
        m = np.lib.format.open_memmap(f, mode="w+", dtype=dtype, shape=tuple(shape))
        self._maps[name] = m
        return m

    def commit(self, sources: list[dict], options: dict, arrays: dict[str, np.ndarray],
               meta: dict) -> Path:
        """Write the other arrays and meta.json, rename into place, purge stale entries."""
        if self.tmp is None:
            raise RuntimeError("entry already committed or aborted")
        tmp = self.tmp
        try:
            for k, a in arrays.items():
                if a is self._maps.get(k):
                    # Already in the page cache, which every process sees; no msync: a flush
                    # would force a synchronous 100+ MB disk write on the first parse.
                    continue
                f = tmp / f"{k}.npy"
                if f.exists():
                    f.unlink()
                np.save(f, np.ascontiguousarray(a), allow_pickle=False)
            for k in set(self._maps) - set(arrays):
                (tmp / f"{k}.npy").unlink(missing_ok=True)
            full = dict(meta)
            full.update(
                format_version=FORMAT_VERSION,
                key=_key(sources, options),
                created=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                sources=sources,
                options=options,
                arrays={k: {"shape": list(a.shape), "dtype": str(a.dtype)} for k, a in arrays.items()},
            )
            with open(tmp / "meta.json", "w", encoding="utf-8") as fh:
                json.dump(full, fh, indent=1, sort_keys=True)
            final = self.root / _entry_name(sources, options)
            try:
                os.rename(tmp, final)
            except OSError as exc:
                if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST) or not final.is_dir():
                    raise
                if _meta_key(final) == full["key"]:
                    # A concurrent reader of the same file won the race: its entry is
                    # equivalent, keep it.
                    shutil.rmtree(tmp, ignore_errors=True)
                else:
                    # A corrupt entry under our name (its meta.json is unreadable): replace.
                    _discard(final)
                    os.rename(tmp, final)
        except BaseException:
            self.abort()
            raise
        self.tmp = None
        purge_stale(sources, self.cache_dir)
        return final

    def abort(self) -> None:
        """Delete the temp directory (memmaps handed out stay readable until dropped)."""
        if self.tmp is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)
            self.tmp = None

    def __enter__(self) -> "PendingEntry":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None:
            self.abort()


def store(sources: list[dict], options: dict, arrays: dict[str, np.ndarray], meta: dict,
          cache_dir=None) -> Path:
    """Write an entry atomically and remove stale entries of the same source path.
    Returns the entry directory. Raises OSError when the cache cannot be written."""
    with PendingEntry(cache_dir) as pending:
        return pending.commit(sources, options, arrays, meta)


def purge_stale(sources: list[dict], cache_dir=None) -> int:
    """Remove entries for these source paths whose recorded sources no longer match (the file
    changed) or whose meta is unreadable. Entries for the current content with other parser
    options are kept. Returns how many were removed."""
    core = [_core(s) for s in sources]
    removed = 0
    for d in _entries_for(sources, cache_dir):
        try:
            with open(d / "meta.json", encoding="utf-8") as fh:
                meta = json.load(fh)
            if [_core(s) for s in meta["sources"]] == core:
                continue
        except Exception:  # noqa: BLE001
            pass
        _discard(d)
        removed += 1
    return removed


def cleanup_temp(cache_dir=None, max_age_s: float = _TEMP_MAX_AGE_S) -> int:
    """Delete ``.tmp-*`` directories older than ``max_age_s`` (left by killed runs)."""
    root = cache_root(cache_dir)
    if not root.is_dir():
        return 0
    now = time.time()
    removed = 0
    for p in root.iterdir():
        if p.name.startswith(_TMP_PREFIX):
            try:
                if now - p.stat().st_mtime >= max_age_s:
                    shutil.rmtree(p, ignore_errors=True)
                    removed += 1
            except OSError:
                continue
    return removed


def clear(cache_dir=None) -> None:
    """Delete every LETOR cache entry under ``cache_dir``."""
    root = cache_root(cache_dir)
    if root.is_dir():
        shutil.rmtree(root)
