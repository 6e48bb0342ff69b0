"""The parsed-file cache: hits, staleness, corruption, interrupted writes, raw files untouched."""

from __future__ import annotations

import json
import mmap
import os
import shutil

import numpy as np
import pytest

from ltrlib import config
from ltrlib.data import cache as C
from ltrlib.data import readers
from ltrlib.data.dataset import Dataset
from ltrlib.data.readers import read_letor, read_lightgbm
from ltrlib.data.svmlight.fingerprint import fingerprint_blocks
from ltrlib.data.svmlight.write import write_svmlight


def _dataset(n_queries=20, n_features=12, seed=0) -> Dataset:
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 10, n_queries)
    n = int(sizes.sum())
    X = np.round(rng.random((n, n_features)) * 10, 3)
    X[rng.random(X.shape) < 0.4] = 0
    X[:, -1] = 1.5  # every line has the last feature: width is stable across edits
    return Dataset(X=X.astype(np.float32), y=rng.integers(0, 5, n), query_ids=np.arange(n_queries) + 1,
                   offsets=np.concatenate([[0], np.cumsum(sizes)]))


@pytest.fixture
def letor(tmp_path):
    return write_svmlight(_dataset(), tmp_path / "data" / "train.txt")


def _entries(cache_dir):
    root = C.cache_root(cache_dir)
    return sorted(p for p in root.iterdir() if not p.name.startswith(".")) if root.exists() else []


def _temps(cache_dir):
    root = C.cache_root(cache_dir)
    return sorted(p for p in root.iterdir() if p.name.startswith(".tmp-")) if root.exists() else []


def _is_file_backed(a) -> bool:
    while a is not None:
        if isinstance(a, (np.memmap, mmap.mmap)):
            return True
        a = getattr(a, "base", None)
    return False


def _same(a: Dataset, b: Dataset):
    np.testing.assert_array_equal(np.asarray(a.X), np.asarray(b.X))
    np.testing.assert_array_equal(a.y, b.y)
    np.testing.assert_array_equal(a.query_ids, b.query_ids)
    np.testing.assert_array_equal(a.offsets, b.offsets)
    assert a.feature_names == b.feature_names


def test_hit_returns_equal_read_only_arrays(letor, tmp_path):
    cd = tmp_path / "cache"
    first = read_letor(letor, cache_dir=cd)
    assert first.meta["cache"] == "miss" and len(_entries(cd)) == 1
    second = read_letor(letor, cache_dir=cd)
    assert second.meta["cache"] == "hit"
    assert second.meta["content_sha256"] == first.meta["content_sha256"] == C.full_hash(letor)
    _same(first, second)
    _same(second, read_letor(letor, cache=False))
    assert _is_file_backed(second.X) and not second.X.flags.writeable
    assert not first.X.flags.writeable  # same contract on the first run
    assert read_letor(letor, cache_dir=cd, verify="full").meta["cache"] == "hit"
    assert not _temps(cd)


def test_hit_does_not_parse(letor, tmp_path, monkeypatch):
    cd = tmp_path / "cache"
    read_letor(letor, cache_dir=cd)

    def boom(*a, **k):
        raise AssertionError("a cache hit must not open the file for parsing")

    monkeypatch.setattr(readers, "open_source", boom)
    assert read_letor(letor, cache_dir=cd).meta["cache"] == "hit"


def test_raw_files_are_never_modified(tmp_path):
    src = config.SHARED_LIGHTGBM_RANK / "rank.train"
    if not src.exists():
        pytest.skip(f"real LightGBM ranking example data: {src} not found")
    files = [src, src.with_name("rank.train.query")]
    before = [(f.read_bytes(), os.stat(f).st_mtime_ns) for f in files]
    listing = sorted(os.listdir(src.parent))
    cd = tmp_path / "cache"
    read_lightgbm(src, cache_dir=cd)
    read_lightgbm(src, cache_dir=cd)
    read_lightgbm(src, cache_dir=cd, verify="full")
    assert [(f.read_bytes(), os.stat(f).st_mtime_ns) for f in files] == before
    assert sorted(os.listdir(src.parent)) == listing  # nothing written next to the user's data


def test_our_own_files_untouched_too(letor, tmp_path):
    before = (letor.read_bytes(), os.stat(letor).st_mtime_ns)
    cd = tmp_path / "cache"
    for _ in range(2):
        read_letor(letor, cache_dir=cd)
    assert (letor.read_bytes(), os.stat(letor).st_mtime_ns) == before
    assert sorted(os.listdir(letor.parent)) == ["train.txt"]


def test_modified_file_is_stale_and_old_entry_removed(letor, tmp_path):
    cd = tmp_path / "cache"
    read_letor(letor, cache_dir=cd)
    old = _entries(cd)
    with open(letor, "a") as fh:
        fh.write("3 qid:999 1:7.5\n")
    ds = read_letor(letor, cache_dir=cd)
    assert ds.meta["cache"] == "miss" and ds.query_ids[-1] == 999 and ds.X[-1, 0] == 7.5
    new = _entries(cd)
    assert len(new) == 1 and new != old  # the stale entry is gone
    assert read_letor(letor, cache_dir=cd).meta["cache"] == "hit"


def _edit_same_size_same_mtime(path, offset: int, old: bytes, new: bytes):
    st = os.stat(path)
    data = bytearray(path.read_bytes())
    assert data[offset:offset + len(old)] == old and len(old) == len(new)
    data[offset:offset + len(old)] = new
    path.write_bytes(bytes(data))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(path).st_size == st.st_size and os.stat(path).st_mtime_ns == st.st_mtime_ns


def test_same_size_same_mtime_edit_in_small_file_is_caught(letor, tmp_path):
    # Files up to 4 MiB are fingerprinted whole: any edit is caught.
    cd = tmp_path / "cache"
    before = read_letor(letor, cache_dir=cd)
    text = letor.read_bytes()
    pos = text.rindex(b":1.5")
    _edit_same_size_same_mtime(letor, pos, b":1.5", b":2.5")
    after = read_letor(letor, cache_dir=cd)
    assert after.meta["cache"] == "miss"
    assert after.X[-1, -1] == 2.5 and before.X[-1, -1] == 1.5


def test_same_size_same_mtime_edit_in_large_file(tmp_path):
    """Honest about the sampled fingerprint: an edit in a sampled block is caught; one
    between blocks is not (the stale entry is served) unless verify="full" is used."""
    ds = _dataset(n_queries=4500, n_features=40, seed=5)
    path = write_svmlight(ds, tmp_path / "big.txt")
    size = path.stat().st_size
    assert size > 4 << 20, size
    blocks = fingerprint_blocks(size)
    cd = tmp_path / "cache"
    read_letor(path, cache_dir=cd)
    text = path.read_bytes()

    def find_value(lo, hi):
        i = text.index(b":1.5", lo)
        assert i + 4 < hi
        return i

    # 1. inside a sampled block (the 3rd of the 16 middle ones): caught
    off, n = blocks[3]
    _edit_same_size_same_mtime(path, find_value(off + 10, off + n), b":1.5", b":2.5")
    hit = read_letor(path, cache_dir=cd)
    assert hit.meta["cache"] == "miss" and (np.asarray(hit.X)[:, -1] == 2.5).sum() == 1

    # 2. between sampled blocks: not seen by the default check...
    gap_lo = blocks[5][0] + blocks[5][1] + 100
    gap_hi = blocks[6][0] - 100
    _edit_same_size_same_mtime(path, find_value(gap_lo, gap_hi), b":1.5", b":3.5")
    stale = read_letor(path, cache_dir=cd)
    assert stale.meta["cache"] == "hit" and (np.asarray(stale.X)[:, -1] == 3.5).sum() == 0
    # ...but verify="full" compares the recorded full-file hash and rebuilds
    fresh = read_letor(path, cache_dir=cd, verify="full")
    assert fresh.meta["cache"] == "miss" and (np.asarray(fresh.X)[:, -1] == 3.5).sum() == 1
    assert fresh.meta["content_sha256"] == C.full_hash(path)


def test_group_file_change_is_stale(tmp_path):
    ds = _dataset()
    from ltrlib.data.svmlight.write import write_lightgbm

    data, qf = write_lightgbm(ds, tmp_path / "d.train")
    cd = tmp_path / "cache"
    a = read_lightgbm(data, cache_dir=cd)
    sizes = ds.group_sizes.tolist()
    sizes = [sizes[0] + sizes[1]] + sizes[2:]  # merge the first two queries
    qf.write_text("".join(f"{s}\n" for s in sizes))
    b = read_lightgbm(data, cache_dir=cd)
    assert b.meta["cache"] == "miss" and b.n_queries == a.n_queries - 1
    assert len(_entries(cd)) == 1


@pytest.mark.parametrize("damage", ["missing_X", "truncated_X", "missing_y", "bad_meta",
                                    "empty_meta", "wrong_shape_meta"])
def test_corrupt_entry_is_rebuilt(letor, tmp_path, damage):
    cd = tmp_path / "cache"
    good = read_letor(letor, cache=False)
    read_letor(letor, cache_dir=cd)
    (entry,) = _entries(cd)

    def replace_bytes(f, data):
        # Damage by replacing the file, as a crash would leave it: truncating it in place
        # would pull the pages from under any live memory map of it (SIGBUS), which is why
        # ltrlib itself only ever renames and unlinks cache files.
        tmp = f.with_suffix(".damaged")
        tmp.write_bytes(data)
        os.replace(tmp, f)

    if damage == "missing_X":
        (entry / "X.npy").unlink()
    elif damage == "truncated_X":
        data = (entry / "X.npy").read_bytes()
        replace_bytes(entry / "X.npy", data[: len(data) // 2])
    elif damage == "missing_y":
        (entry / "y.npy").unlink()
    elif damage == "bad_meta":
        replace_bytes(entry / "meta.json", b"{not json")
    elif damage == "empty_meta":
        replace_bytes(entry / "meta.json", b"")
    elif damage == "wrong_shape_meta":
        meta = json.loads((entry / "meta.json").read_text())
        meta["arrays"]["y"]["shape"] = [1]
        replace_bytes(entry / "meta.json", json.dumps(meta).encode())
    again = read_letor(letor, cache_dir=cd)
    assert again.meta["cache"] == "miss"
    _same(good, again)
    assert len(_entries(cd)) == 1
    assert read_letor(letor, cache_dir=cd).meta["cache"] == "hit"


def test_interrupted_rename_leaves_no_entry(letor, tmp_path, monkeypatch):
    cd = tmp_path / "cache"

    def fail_rename(src, dst):
        raise OSError(28, "No space left on device (simulated)")

    monkeypatch.setattr(C.os, "rename", fail_rename)
    with pytest.warns(RuntimeWarning, match="could not cache"):
        ds = read_letor(letor, cache_dir=cd)
    _same(ds, read_letor(letor, cache=False))  # the data are still returned, and right
    assert not _entries(cd) and not _temps(cd)
    monkeypatch.undo()
    assert read_letor(letor, cache_dir=cd).meta["cache"] == "miss"
    assert read_letor(letor, cache_dir=cd).meta["cache"] == "hit"


def test_interrupt_during_save_leaves_no_entry(letor, tmp_path, monkeypatch):
    cd = tmp_path / "cache"
    real_save = np.save
    calls = []

    def save_then_interrupt(file, arr, **kw):
        calls.append(file)
        if len(calls) == 2:  # y.npy written, query_ids.npy not: a Ctrl-C mid-way
            raise KeyboardInterrupt
        return real_save(file, arr, **kw)

    monkeypatch.setattr(C.np, "save", save_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        read_letor(letor, cache_dir=cd)
    assert not _entries(cd) and not _temps(cd)
    monkeypatch.undo()
    ds = read_letor(letor, cache_dir=cd)
    assert ds.meta["cache"] == "miss"
    _same(ds, read_letor(letor, cache_dir=cd))


def test_killed_run_temp_dir_is_ignored_then_cleaned(letor, tmp_path):
    cd = tmp_path / "cache"
    root = C.cache_root(cd)
    root.mkdir(parents=True)
    # What a SIGKILL mid-write leaves: a temp dir with a partial entry under a real-looking key
    stray = root / ".tmp-12345-abcd"
    stray.mkdir()
    (stray / "X.npy").write_bytes(b"\x93NUMPY partial")
    ds = read_letor(letor, cache_dir=cd)
    assert ds.meta["cache"] == "miss" and stray.exists()  # young: may be a live writer's
    assert C.cleanup_temp(cd, max_age_s=3600) == 0
    old = os.stat(stray).st_mtime - 7200
    os.utime(stray, (old, old))
    read_letor(letor, cache_dir=cd, zero_based=True)  # any store cleans old temp dirs
    assert not stray.exists()
    assert read_letor(letor, cache_dir=cd).meta["cache"] == "hit"


def test_options_get_their_own_entries(letor, tmp_path):
    cd = tmp_path / "cache"
    a = read_letor(letor, cache_dir=cd)
    b = read_letor(letor, cache_dir=cd, zero_based=True)
    c = read_letor(letor, cache_dir=cd, n_features=20)
    d = read_letor(letor, cache_dir=cd, label_range=(0, 10))
    assert [x.meta["cache"] for x in (a, b, c, d)] == ["miss"] * 4
    assert len(_entries(cd)) == 4  # same content, other options: not stale, all kept
    assert b.n_features == a.n_features + 1 and c.n_features == 20
    assert read_letor(letor, cache_dir=cd, zero_based=True).meta["cache"] == "hit"
    assert read_letor(letor, cache_dir=cd).meta["cache"] == "hit"


def test_cache_off_writes_nothing(letor, tmp_path):
    cd = tmp_path / "cache"
    read_letor(letor, cache=False, cache_dir=cd)
    assert not cd.exists()


def test_default_cache_dir_is_config(monkeypatch, tmp_path):
    monkeypatch.setattr(config, "CACHE_DIR", tmp_path / "cfg-cache")
    assert C.cache_root() == tmp_path / "cfg-cache" / "letor"


def test_blank_lines_and_cache(tmp_path):
    # blank lines make the parsed matrix compacted after parsing: the entry must hold that
    path = tmp_path / "b.txt"
    path.write_text("1 qid:1 1:1\n\n# c\n0 qid:1 2:2\n")
    cd = tmp_path / "cache"
    a = read_letor(path, cache_dir=cd)
    b = read_letor(path, cache_dir=cd)
    assert b.meta["cache"] == "hit" and b.X.shape == (2, 2)
    _same(a, b)


def test_clear(letor, tmp_path):
    cd = tmp_path / "cache"
    read_letor(letor, cache_dir=cd)
    C.clear(cd)
    assert not C.cache_root(cd).exists()
    shutil.rmtree(cd, ignore_errors=True)
    assert read_letor(letor, cache_dir=cd).meta["cache"] == "miss"


def _blocked(monkeypatch, prefix):
    """Every stat, mkdir and listing under ``prefix`` fails with EACCES, as under a parent
    without search permission (mode 000), which root's tests cannot produce otherwise."""
    import errno

    for name in ("stat", "mkdir", "listdir", "scandir"):
        real = getattr(os, name)

        def guarded(p, *a, _real=real, **k):
            if str(os.fspath(p)).startswith(str(prefix)):
                raise PermissionError(errno.EACCES, "Permission denied", str(p))
            return _real(p, *a, **k)

        monkeypatch.setattr(os, name, guarded)


def test_unusable_cache_folder_degrades_to_a_warning(letor, tmp_path, monkeypatch):
    # A read-only cache already warned; a cache folder under a file, or under a parent that
    # cannot be searched, stopped the read (NotADirectoryError / PermissionError).
    plain = read_letor(letor, cache=False)
    (tmp_path / "afile").write_text("")
    with pytest.warns(RuntimeWarning, match="cache"):
        ds = read_letor(letor, cache_dir=tmp_path / "afile" / "cache")
    assert ds.meta["cache"] == "miss"
    _same(ds, plain)

    monkeypatch.setattr(config, "CACHE_DIR", tmp_path / "noaccess" / "cache")  # LTRLIB_CACHE_DIR
    _blocked(monkeypatch, tmp_path / "noaccess")
    with pytest.warns(RuntimeWarning, match="cannot read the cache under .*noaccess.*Permission denied"):
        ds = read_letor(letor)
    assert ds.meta["cache"] == "miss"
    _same(ds, plain)
