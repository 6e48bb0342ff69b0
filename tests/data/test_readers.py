"""LETOR / SVMlight / LightGBM readers: exactness against scikit-learn, layouts, folders,
categories, and one test per kind of bad input (the error names file, line and token)."""

from __future__ import annotations

import dataclasses
import inspect

import numpy as np
import pytest

from ltrlib import config
from ltrlib.data.dataset import Dataset
from ltrlib.data.readers import (
    LetorFormatError,
    ReadOptions,
    read_letor,
    read_letor_folder,
    read_lightgbm,
)
from ltrlib.data.svmlight.parse import open_source, run_parse, sample_index_range
from ltrlib.data.svmlight.write import write_lightgbm, write_svmlight

sk = pytest.importorskip("sklearn.datasets")


def _write(path, text: str, binary: bool = False):
    path.write_bytes(text if binary else text.encode())
    return path


def _random_dataset(n_queries=30, n_features=25, seed=0, zero_share=0.4) -> Dataset:
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 15, n_queries)
    n = int(sizes.sum())
    X = rng.lognormal(0, 2, (n, n_features)) * rng.choice([-1, 1], (n, n_features))
    digits = rng.integers(1, 8, (n, n_features))
    X = np.array([[float(f"{v:.{d}g}") for v, d in zip(row, drow)] for row, drow in zip(X, digits)])
    X[rng.random(X.shape) < zero_share] = 0
    return Dataset(X=X.astype(np.float32), y=rng.integers(0, 5, n),
                   query_ids=rng.choice(10_000, n_queries, replace=False),
                   offsets=np.concatenate([[0], np.cumsum(sizes)]), name="rand")


# --------------------------------------------------------------------------- real data
@pytest.fixture(scope="module")
def real_dir():
    path = config.SHARED_LIGHTGBM_RANK
    if not (path / "rank.train").exists():
        pytest.skip(f"real LightGBM ranking example data: {path} not found")
    return path


@pytest.mark.parametrize("split", ["rank.train", "rank.test"])
def test_real_lightgbm_files_match_sklearn(real_dir, split, tmp_path):
    path = real_dir / split
    Xs, ys = sk.load_svmlight_file(str(path), dtype=np.float32)
    groups = np.loadtxt(real_dir / f"{split}.query", dtype=np.int64)
    for cache in (False, True, True):  # no cache, first parse (miss), reload (hit)
        ds = read_lightgbm(path, cache=cache, cache_dir=tmp_path)
        # exact: same float32 bits as strtod + cast (sklearn's path)
        np.testing.assert_array_equal(np.asarray(ds.X), Xs.toarray())
        np.testing.assert_array_equal(ds.y, ys.astype(np.int32))
        np.testing.assert_array_equal(ds.group_sizes, groups)
        np.testing.assert_array_equal(ds.query_ids, np.arange(groups.size))
        assert ds.feature_names[0] == "f1" and ds.n_features == Xs.shape[1]
    assert ds.meta["cache"] == "hit"


def test_real_data_as_letor_round_trip(real_dir, tmp_path):
    train = read_lightgbm(real_dir / "rank.train", cache=False)
    out = write_svmlight(train, tmp_path / "train.txt")
    back = read_letor(out, cache=False)
    np.testing.assert_array_equal(np.asarray(back.X), np.asarray(train.X))
    np.testing.assert_array_equal(back.offsets, train.offsets)
    Xs, ys, qs = sk.load_svmlight_file(str(out), query_id=True, dtype=np.float32)
    np.testing.assert_array_equal(Xs.toarray(), np.asarray(back.X))
    np.testing.assert_array_equal(qs, back.qid)


# --------------------------------------------------------------------------- exactness
def test_random_round_trip_and_sklearn_agree(tmp_path):
    ds = _random_dataset()
    path = write_svmlight(ds, tmp_path / "r.txt")
    back = read_letor(path, cache=False, n_features=ds.n_features)
    np.testing.assert_array_equal(np.asarray(back.X), ds.X)
    np.testing.assert_array_equal(back.y, ds.y)
    np.testing.assert_array_equal(back.query_ids, ds.query_ids)
    np.testing.assert_array_equal(back.offsets, ds.offsets)
    Xs, ys, qs = sk.load_svmlight_file(str(path), query_id=True, dtype=np.float32,
                                       n_features=ds.n_features)
    np.testing.assert_array_equal(Xs.toarray(), np.asarray(back.X))
    np.testing.assert_array_equal(qs, back.qid)


def test_number_forms_are_parsed_like_strtod(tmp_path):
    rng = np.random.default_rng(1)
    forms = ["0", "-0", "1", "+3", "1.", ".5", "-.25", "0.000001", "1e-05", "1E+3", "2.5e10",
             "-7.125E-3", "123456789012", "0.1", "0.2", "0.30000000000000004",
             "3.4028234e38", "1.17549435e-38", "1e-45", "1e-50", "9.999999e-41",
             "12345678901234567890123", "0.000000000000000000001234567890123456789",
             "1.0000000596046448", "16777217", "0.33333333333333333333333333"]
    # random decimals with 1-17 significant digits and exponents across float32's range
    for _ in range(3000):
        d = rng.integers(1, 18)
        m = rng.integers(10 ** (d - 1), 10**d)
        forms.append(f"{m}e{rng.integers(-40, 30)}")
        forms.append(f"{rng.random() * 10.0 ** rng.integers(-6, 7):.{rng.integers(1, 10)}f}")
    # Decimals within a few float64 ulps of a float32 rounding midpoint: only a correctly
    # rounded float64 (then cast) lands on the right side, so these catch a sloppy conversion
    # that plain random values would not.
    x = (rng.random(3000) * 10.0 ** rng.integers(-8, 9, 3000)).astype(np.float32)
    mid = (x.astype(np.float64) + np.nextafter(x, np.float32(np.inf)).astype(np.float64)) / 2
    for v, d in zip(mid, rng.integers(14, 17, mid.size)):
        forms.append(f"{v:.{d}g}")
    forms = [f for f in forms if abs(float(f)) < 3.4e38]
    lines = [f"1 qid:1 {k + 1}:{v}" for k, v in enumerate(forms)]
    path = _write(tmp_path / "n.txt", "\n".join(lines) + "\n")
    ds = read_letor(path, cache=False)
    got = np.asarray(ds.X)[np.arange(len(forms)), np.arange(len(forms))]
    want = np.array([np.float32(float(f)) for f in forms])  # correctly rounded, then cast
    bad = np.flatnonzero(got.view(np.int32) != want.view(np.int32))
    assert bad.size == 0, [(forms[i], got[i], want[i]) for i in bad[:5]]


def test_writer_shortest_decimal_round_trips(tmp_path):
    rng = np.random.default_rng(2)
    bits = rng.integers(0, 2**31 - 2**23, 4000, dtype=np.int64).astype(np.int32)  # finite
    vals = bits.view(np.float32) * rng.choice(np.float32([-1, 1]), bits.size)
    vals = np.concatenate([vals, np.float32([0.1, 1e-7, 100, 123456789, 1.5, 2.0**-149])])
    vals = vals[vals != 0]
    ds = Dataset(X=vals[:, None], y=np.zeros(vals.size, np.int32), query_ids=[1],
                 offsets=[0, vals.size])
    path = write_svmlight(ds, tmp_path / "w.txt")
    text = path.read_text().splitlines()
    assert text[-6:-1] == ["0 qid:1 1:0.1", "0 qid:1 1:1e-07", "0 qid:1 1:100",
                           "0 qid:1 1:123456790", "0 qid:1 1:1.5"]
    back = read_letor(path, cache=False, label_range=None)
    np.testing.assert_array_equal(np.asarray(back.X)[:, 0].view(np.int32), vals.view(np.int32))
    # shortest: never longer than numpy's shortest round-trip repr
    for v, line in zip(vals[:200], text[:200]):
        ours = line.split(":")[-1]
        theirs = np.format_float_scientific(v, unique=True).lstrip("-")
        assert len(ours.lstrip("-").replace(".", "").split("e")[0].strip("0")) <= \
            len(theirs.split("e")[0].replace(".", "").strip("0")), (v, ours, theirs)


# --------------------------------------------------------------------------- syntax
def test_comments_blank_lines_crlf_bom_tabs_sparse(tmp_path):
    text = ("\ufeff# a header comment\r\n"
            "2 qid:10 1:0.5 3:1.5 # docid = GX000\r\n"
            "\r\n"
            "   \r\n"
            "0\tqid:10\t2:-1e-05\r\n"
            "1 qid:7 #only a comment after qid\r\n"
            "# trailing comment line\r\n"
            "4 qid:8 3:2")  # no final newline
    path = _write(tmp_path / "c.txt", text)
    ds = read_letor(path, cache=False)
    np.testing.assert_array_equal(ds.query_ids, [10, 7, 8])
    np.testing.assert_array_equal(ds.offsets, [0, 2, 3, 4])
    np.testing.assert_array_equal(ds.y, [2, 0, 1, 4])
    np.testing.assert_array_equal(np.asarray(ds.X), np.float32(
        [[0.5, 0, 1.5], [0, -1e-05, 0], [0, 0, 0], [0, 0, 2]]))
    assert ds.feature_names == ("f1", "f2", "f3")


def test_cr_only_line_ends_read_like_lf(tmp_path):
    # Classic Mac files end lines with a lone CR. Read as one line, everything after the
    # first '# comment' vanished into that comment (3 documents loaded as 1).
    text = "# header\n2 qid:1 1:0.5 # docid = a\n1 qid:1 2:1\n\n# gap\n0 qid:2 1:3 2:.25\n"
    lf = read_letor(_write(tmp_path / "lf.txt", text), cache=False)
    path = _write(tmp_path / "cr.txt", text.replace("\n", "\r"))
    for cache in (False, True, True):  # no cache, first parse into the cache's memmap, reload
        cr = read_letor(path, cache=cache, cache_dir=tmp_path / "cache")
        np.testing.assert_array_equal(np.asarray(cr.X), np.asarray(lf.X))
        np.testing.assert_array_equal(cr.y, [2, 1, 0])
        np.testing.assert_array_equal(cr.offsets, lf.offsets)
    assert cr.meta["cache"] == "hit"
    # Errors name the physical line (CR counts as a line end) and an uncut token.
    bad = _write(tmp_path / "bad.txt", b"2 qid:1 1:0.5\r1 qid:1 2:x1\r", binary=True)
    with pytest.raises(LetorFormatError, match="malformed feature value") as e:
        read_letor(bad, cache=False)
    assert (e.value.line, e.value.token) == (2, "2:x1")
    # No final line end, and a stray CR in an LF file, also end lines.
    tail = _write(tmp_path / "t.txt", b"2 qid:1 1:0.5\n1 qid:1 2:1\r0 qid:2 1:3", binary=True)
    np.testing.assert_array_equal(read_letor(tail, cache=False).y, [2, 1, 0])


def test_cr_only_line_ends_across_parallel_chunks(tmp_path):
    # > 2 MiB, so line ends are found by several parallel chunks; lone CRs sit on chunk edges.
    lines = [f"{i % 5} qid:{i // 7} 1:{i} 3:0.5 # doc {i}" for i in range(80_000)]
    lf = read_letor(_write(tmp_path / "lf.txt", "\n".join(lines) + "\n"), cache=False)
    cr = read_letor(_write(tmp_path / "cr.txt", "\r".join(lines)), cache=False)
    assert (tmp_path / "cr.txt").stat().st_size > 2 << 20
    np.testing.assert_array_equal(np.asarray(cr.X), np.asarray(lf.X))
    np.testing.assert_array_equal(cr.y, lf.y)
    np.testing.assert_array_equal(cr.query_ids, lf.query_ids)


def test_zero_and_one_based(tmp_path):
    path = _write(tmp_path / "z.txt", "1 qid:1 0:5 2:7\n0 qid:1 1:3\n")
    auto = read_letor(path, cache=False)
    assert auto.feature_names == ("f0", "f1", "f2") and auto.meta["index_base"] == 0
    np.testing.assert_array_equal(np.asarray(auto.X), [[5, 0, 7], [0, 3, 0]])
    with pytest.raises(LetorFormatError, match="index 0 in a file read as one-based") as e:
        read_letor(path, cache=False, zero_based=False)
    assert (e.value.line, e.value.token) == (1, "0:5")

    one = _write(tmp_path / "o.txt", "1 qid:1 1:5 3:7\n")
    d1 = read_letor(one, cache=False)
    assert d1.feature_names == ("f1", "f2", "f3")
    np.testing.assert_array_equal(np.asarray(d1.X), [[5, 0, 7]])
    d0 = read_letor(one, cache=False, zero_based=True)
    assert d0.feature_names == ("f0", "f1", "f2", "f3")
    np.testing.assert_array_equal(np.asarray(d0.X), [[0, 5, 0, 7]])
    Xs, _ = sk.load_svmlight_file(str(one), zero_based=True, dtype=np.float32)
    np.testing.assert_array_equal(Xs.toarray(), np.asarray(d0.X))
    with pytest.raises(ValueError, match="zero_based"):
        read_letor(one, cache=False, zero_based="yes")


def test_n_features_forces_width(tmp_path):
    path = _write(tmp_path / "n.txt", "1 qid:1 1:5 3:7\n0 qid:1 2:1\n")
    wide = read_letor(path, cache=False, n_features=6)
    assert wide.X.shape == (2, 6) and wide.feature_names[-1] == "f6"
    with pytest.raises(LetorFormatError) as e:
        read_letor(path, cache=False, n_features=2)
    msg = str(e.value)
    assert str(path) in msg and "line 1" in msg and "'3:7'" in msg and "n_features=2" in msg
    assert (e.value.line, e.value.token) == (1, "3:7")


def test_huge_feature_index_is_refused_before_allocating(tmp_path, monkeypatch):
    # One index of 10**8 used to ask for a (3, 10**8) float32 matrix (or an 11 GiB cache
    # file) and end in a bare MemoryError, with no file, line or token.
    from ltrlib.data import readers

    widths = []
    real_parse = readers.run_parse
    monkeypatch.setattr(readers, "run_parse",
                        lambda src, zb, width, out=None: widths.append(width) or real_parse(src, zb, width, out))
    path = _write(tmp_path / "h.txt", "1 qid:1 1:0.5\n0 qid:1 2:1 100000000:3\n2 qid:2 1:1\n")
    with pytest.raises(LetorFormatError) as e:
        read_letor(path, cache=True, cache_dir=tmp_path / "cache")
    msg = str(e.value)
    assert str(path) in msg and "line 2:" in msg and "'100000000:3'" in msg, msg
    assert "max_features=100000" in msg and "max_features=100000000" in msg, msg
    assert (e.value.line, e.value.token) == (2, "100000000:3")
    assert widths == []  # refused before any matrix was allocated

    # The bound is a reader option; n_features, the caller's own width, is not bounded.
    ok = _write(tmp_path / "w.txt", "1 qid:1 1:0.5 300:2\n")
    assert read_letor(ok, cache=False, max_features=300).n_features == 300
    with pytest.raises(LetorFormatError, match="max_features=299"):
        read_letor(ok, cache=False, max_features=299)
    assert read_letor(ok, cache=False, max_features=10, n_features=400).n_features == 400
    with pytest.raises(ValueError, match="max_features must be a positive integer"):
        read_letor(ok, cache=False, max_features=0)


def test_huge_index_missed_by_the_sample_or_known_from_the_cache_is_refused(tmp_path, monkeypatch):
    from ltrlib.data import readers

    # Line 100 is not among the sampled lines (see the test below): the first parse uses
    # the guessed width, and the check runs before the re-parse at the true width.
    lines = [f"{i % 3} qid:{i // 10} 1:{i} 2:0.5" for i in range(10_000)]
    lines[100] = "1 qid:10 2:0.5 5000000:3"
    path = _write(tmp_path / "g.txt", "\n".join(lines) + "\n")
    widths = []
    real_parse = readers.run_parse
    monkeypatch.setattr(readers, "run_parse",
                        lambda src, zb, width, out=None: widths.append(width) or real_parse(src, zb, width, out))
    with pytest.raises(LetorFormatError) as e:
        read_letor(path, cache=False, max_features=1000)
    assert (e.value.line, e.value.token) == (101, "5000000:3")
    assert widths == [2]

    # A cache entry made with a larger bound records the range; a read with a smaller one
    # is refused from it, naming the line all the same.
    small = _write(tmp_path / "s.txt", "1 qid:1 1:0.5\n0 qid:1 2000:1\n")
    assert read_letor(small, cache_dir=tmp_path / "c", max_features=2000).n_features == 2000
    widths.clear()
    with pytest.raises(LetorFormatError) as e:
        read_letor(small, cache_dir=tmp_path / "c", max_features=1000)
    assert (e.value.line, e.value.token) == (2, "2000:1") and widths == []


def test_layout_guess_missed_by_sample_is_corrected(tmp_path):
    # 10_000 lines: the sampled blocks cover lines 0-63, 157-220, ...; line 100 is not sampled
    # and alone holds index 0 and the largest index.
    lines = [f"{i % 3} qid:{i // 10} 1:{i} 2:0.5" for i in range(10_000)]
    lines[100] = "1 qid:10 0:9 2:0.5 40:3.25"
    path = _write(tmp_path / "g.txt", "\n".join(lines) + "\n")
    src = open_source(path)
    assert sample_index_range(src) == (1, 2)  # the guess is wrong...
    ds = read_letor(path, cache=False)
    assert ds.meta["index_base"] == 0 and ds.n_features == 41  # ...and the result is not
    assert ds.X[100, 0] == 9 and ds.X[100, 40] == 3.25 and ds.X[5, 1] == 5
    Xs, _, _ = sk.load_svmlight_file(str(path), query_id=True, dtype=np.float32)
    np.testing.assert_array_equal(Xs.toarray(), np.asarray(ds.X))


# --------------------------------------------------------------------------- bad input
BAD = [
    # (file content, line, token, words the message must contain)
    ("1 qid:1 1:0.5\n1 qid:1 3;0.5\n", 2, "3;0.5", "malformed token"),
    ("1 qid:1 1:0.5 abc\n", 1, "abc", "malformed token"),
    ("1 qid:1 1:abc\n", 1, "1:abc", "malformed feature value"),
    ("1 qid:1 1:0.5x\n", 1, "1:0.5x", "malformed feature value"),
    ("1 qid:1 1:\n", 1, "1:", "malformed feature value"),
    ("1 qid:1 1:0.5 2:nan\n", 1, "2:nan", "NaN or infinite"),
    ("1 qid:1 1:-inf\n", 1, "1:-inf", "NaN or infinite"),
    ("1 qid:1 1:Infinity\n", 1, "1:Infinity", "NaN or infinite"),
    ("1 qid:1 1:1e39\n", 1, "1:1e39", "float32"),
    ("1 qid:1 3:1 2:1\n", 1, "2:1", "strictly increasing"),
    ("1 qid:1 3:1 3:2\n", 1, "3:2", "strictly increasing"),
    ("1.5 qid:1 1:1\n", 1, "1.5", "not an integer"),
    ("abc qid:1 1:1\n", 1, "abc", "label"),
    ("qid:1 1:1\n", 1, "qid:1", "label"),
    ("1 qid:x 1:1\n", 1, "qid:x", "malformed qid"),
    ("1 qid:-3 1:1\n", 1, "qid:-3", "malformed qid"),
    ("1 1:1 qid:3\n", 1, "qid:3", "qid must appear once"),
    ("1 qid:1 qid:2 1:1\n", 1, "qid:2", "qid must appear once"),
    ("1 qid:1 99999999999999999999:1\n", 1, "99999999999999999999:1", "index too large"),
    ("1 qid:1 1:1\n2 qid:1 1:1\n7 qid:2 1:1\n", 3, "7", "label 7 is outside label_range=(0, 4)"),
    ("-1 qid:1 1:1\n", 1, "-1", "label_range"),
    ("1 qid:1 1:1\n0 1:1\n", 2, "0", "without 'qid:'"),
    ("0 qid:5 1:1\n0 qid:5 1:1\n0 qid:6 1:1\n# c\n0 qid:5 1:2\n", 5, "qid:5",
     "qid 5 reappears after other queries: its documents began at line 1 and qid 6 started at line 3"),
]


@pytest.mark.parametrize("text,line,token,words", BAD, ids=[b[3][:30] + f"-{i}" for i, b in enumerate(BAD)])
def test_bad_input_names_file_line_token(tmp_path, text, line, token, words):
    path = _write(tmp_path / "bad.txt", text)
    with pytest.raises(LetorFormatError) as e:
        read_letor(path, cache=True, cache_dir=tmp_path / "cache")
    msg = str(e.value)
    assert words in msg, msg
    assert str(path) in msg and f"line {line}:" in msg and repr(token) in msg, msg
    assert (e.value.path, e.value.line, e.value.token) == (str(path), line, token)
    assert isinstance(e.value, ValueError)
    # nothing half-done is left in the cache
    root = tmp_path / "cache" / "letor"
    assert not root.exists() or not list(root.iterdir())


def test_label_range_can_be_changed_or_disabled(tmp_path):
    path = _write(tmp_path / "l.txt", "7 qid:1 1:1\n-1 qid:1 1:2\n")
    assert read_letor(path, cache=False, label_range=(-1, 10)).y.tolist() == [7, -1]
    assert read_letor(path, cache=False, label_range=None).y.tolist() == [7, -1]
    assert read_letor(_write(tmp_path / "f.txt", "2.0 qid:1 1:1\n"), cache=False).y.tolist() == [2]


@pytest.mark.parametrize("text", ["", "\n\n", "# only\n# comments\n", "\ufeff"])
def test_empty_files_are_refused(tmp_path, text):
    path = _write(tmp_path / "e.txt", text)
    with pytest.raises(LetorFormatError, match="no data lines") as e:
        read_letor(path, cache=False)
    assert str(path) in str(e.value)


def test_first_error_in_the_file_is_reported_across_chunks(tmp_path):
    lines = [f"1 qid:{i // 10} 1:{i}" for i in range(5000)]
    lines[4000] = "1 qid:400 1:bad"
    lines[300] = "1 qid:30 1:0.5 2:zz"
    path = _write(tmp_path / "m.txt", "\n".join(lines) + "\n")
    with pytest.raises(LetorFormatError) as e:
        read_letor(path, cache=False)
    assert (e.value.line, e.value.token) == (301, "2:zz")


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.txt"):
        read_letor(tmp_path / "nope.txt")


def test_directory_where_a_file_is_expected_says_so(tmp_path):
    # It used to say "not found", though the path exists.
    (tmp_path / "d.txt").mkdir()
    with pytest.raises(IsADirectoryError, match=r"ranking file .*d\.txt is a directory; expected one "
                       r"SVMlight/LETOR file .*read_letor_folder"):
        read_letor(tmp_path / "d.txt")
    data = _write(tmp_path / "l.train", "1 1:1\n0 2:1\n")
    (tmp_path / "l.train.query").mkdir()
    with pytest.raises(IsADirectoryError, match=r"query group file .*l\.train\.query is a directory"):
        read_lightgbm(data)
    (tmp_path / "F" / "train.txt").mkdir(parents=True)
    with pytest.raises(IsADirectoryError, match=r"train file .*train\.txt is a directory"):
        read_letor_folder(tmp_path / "F")


def test_compressed_file_is_named_and_refused(tmp_path):
    import gzip

    text = b"1 qid:1 1:0.5\n0 qid:1 2:1\n"
    path = tmp_path / "train.txt.gz"
    path.write_bytes(gzip.compress(text))
    with pytest.raises(LetorFormatError) as e:
        read_letor(path, cache=True, cache_dir=tmp_path / "cache")
    msg = str(e.value)
    assert str(path) in msg and "gzip-compressed" in msg and "1f 8b" in msg, msg
    assert f"gunzip -k {path}" in msg and e.value.path == str(path)


# --------------------------------------------------------------------------- LightGBM format
def test_lightgbm_format_and_group_file_errors(tmp_path):
    ds = _random_dataset(n_queries=8, seed=3)
    data, qf = write_lightgbm(ds, tmp_path / "l.train")
    back = read_lightgbm(data, cache=False, n_features=ds.n_features)
    np.testing.assert_array_equal(np.asarray(back.X), ds.X)
    np.testing.assert_array_equal(back.offsets, ds.offsets)
    np.testing.assert_array_equal(back.query_ids, np.arange(8))

    other = tmp_path / "sizes.txt"
    other.write_text("\n".join(str(s) for s in ds.group_sizes) + "\n")
    assert read_lightgbm(data, query_file=other, cache=False).n_queries == 8

    qf.unlink()
    with pytest.raises(LetorFormatError, match="not found") as e:
        read_lightgbm(data, cache=False)
    assert str(qf) in str(e.value) and str(data) in str(e.value)

    qf.write_text("3\n4\n")
    with pytest.raises(LetorFormatError) as e:
        read_lightgbm(data, cache=False)
    msg = str(e.value)
    assert "sum to 7" in msg and f"has {ds.n_docs} data lines" in msg
    assert str(qf) in msg and str(data) in msg

    qf.write_text(f"{ds.n_docs}\n0\n")
    with pytest.raises(LetorFormatError, match="positive integer") as e:
        read_lightgbm(data, cache=False)
    assert (e.value.line, e.value.token) == (2, "0")

    # CR-only line ends in both files (classic Mac), as in the data file's parser.
    data.write_bytes(data.read_bytes().replace(b"\n", b"\r"))
    qf.write_bytes("".join(f"{s}\r" for s in ds.group_sizes).encode())
    back = read_lightgbm(data, cache=False, n_features=ds.n_features)
    np.testing.assert_array_equal(np.asarray(back.X), ds.X)
    np.testing.assert_array_equal(back.offsets, ds.offsets)


# --------------------------------------------------------------------------- folders
def _fold(tmp_path, zero_in_test=False):
    root = tmp_path / "MSLR"
    (root / "Fold1").mkdir(parents=True)
    _write(root / "Fold1" / "train.txt", "2 qid:1 1:1 3:0.5\n0 qid:1 2:2\n1 qid:2 1:3\n")
    _write(root / "Fold1" / "vali.txt", "1 qid:3 5:4\n0 qid:3 1:1\n")
    test = "0 qid:4 0:1 2:9\n" if zero_in_test else "0 qid:4 2:9\n"
    _write(root / "Fold1" / "test.txt", test)
    return root


def test_fold_folder_common_width(tmp_path):
    root = _fold(tmp_path)
    s = read_letor_folder(root, fold=1, cache=False)
    assert [d.n_features for d in s] == [5, 5, 5]
    assert s.train.feature_names == s.test.feature_names == tuple(f"f{i}" for i in range(1, 6))
    assert s.vali.X[0, 4] == 4 and s.test.X[0, 1] == 9
    assert s.train.name == "Fold1/train"
    s0 = read_letor_folder(_fold(tmp_path / "z", zero_in_test=True), fold="Fold1", cache=False)
    assert all(d.meta["index_base"] == 0 for d in s0) and s0.train.n_features == 6
    assert s0.train.X[0, 1] == 1 and s0.test.X[0, 0] == 1  # f1 is column 1 everywhere
    with pytest.raises(FileNotFoundError, match="Fold9"):
        read_letor_folder(root, fold=9)
    # fold=None: the files sit in root itself; a missing vali is None
    flat = root / "Fold1"
    (flat / "vali.txt").unlink()
    s2 = read_letor_folder(flat, cache=False, n_features=7)
    assert s2.vali is None and s2.train.n_features == 7 == s2.test.n_features


def test_fold_folder_cached_equals_uncached(tmp_path):
    root = _fold(tmp_path)
    a = read_letor_folder(root, 1, cache=True, cache_dir=tmp_path / "c")
    b = read_letor_folder(root, 1, cache=True, cache_dir=tmp_path / "c")
    c = read_letor_folder(root, 1, cache=False)
    assert [d.meta["cache"] for d in b] == ["hit"] * 3
    for x, y, z in zip(a, b, c):
        np.testing.assert_array_equal(np.asarray(x.X), np.asarray(y.X))
        np.testing.assert_array_equal(np.asarray(y.X), np.asarray(z.X))
        np.testing.assert_array_equal(y.offsets, z.offsets)


# --------------------------------------------------------------------------- categories
def test_category_feature_by_index_and_name(tmp_path):
    path = _write(tmp_path / "c.txt", "1 qid:1 1:0.5 4:11\n0 qid:1 4:14\n0 qid:2 1:2\n")
    for cf in (4, "f4", "4"):  # "4": a notebook's str parameter given -p category_feature 4
        ds = read_letor(path, cache=False, category_feature=cf)
        assert ds.category.tolist() == [11, 14, 0]
    with pytest.raises(ValueError) as e:
        read_letor(path, cache=False, category_feature=220)
    msg = str(e.value)
    assert "220" in msg and str(path) in msg and "1..4" in msg
    with pytest.raises(ValueError, match="f220"):
        read_letor(path, cache=False, category_feature="f220")
    with pytest.raises(ValueError, match="non-integer"):
        read_letor(path, cache=False, category_feature=1)
    with pytest.raises(ValueError, match="'pagerank'"):
        read_letor(path, cache=False, category_feature="pagerank")


def test_category_bins(tmp_path):
    ds = _random_dataset(n_queries=40, seed=4)
    path = write_svmlight(ds, tmp_path / "b.txt")
    got = read_letor(path, cache=False, category_bins=("f3", 4), n_features=ds.n_features)
    want = ds.with_category_from_quantiles(2, 4)
    np.testing.assert_array_equal(got.category, want.category)
    # a folder bins vali/test with the training file's edges
    root = _fold(tmp_path)
    s = read_letor_folder(root, 1, cache=False, category_bins=(1, 2))
    edges = np.quantile(s.train.X[:, 0], [0.5])
    np.testing.assert_array_equal(s.vali.category, np.searchsorted(edges, s.vali.X[:, 0], "right"))


def test_run_parse_rejects_wrong_out_buffer(tmp_path):
    path = _write(tmp_path / "o.txt", "1 qid:1 1:1\n")
    with pytest.raises(ValueError, match="out must be"):
        run_parse(open_source(path), False, 1, out=np.zeros((2, 1), np.float32))



# --------------------------------------------------------------------------- options
def test_read_options_defaults_are_the_readers_defaults():
    # The readers keep their keyword signatures; ReadOptions is where the options are checked.
    fields = {f.name: f.default for f in dataclasses.fields(ReadOptions)}
    for reader in (read_letor, read_lightgbm, read_letor_folder):
        params = inspect.signature(reader).parameters
        assert {k: params[k].default for k in fields} == fields, reader.__name__


def test_read_options_checks_and_normalises():
    assert ReadOptions(label_range=[np.int64(1), 3.0]).label_range == (1, 3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        ReadOptions().cache = False
    for kwargs, words in [({"category_feature": 1, "category_bins": (1, 3)}, "not both"),
                          ({"max_features": True}, "max_features must be a positive integer"),
                          ({"max_features": 0}, "max_features must be a positive integer"),
                          ({"zero_based": "yes"}, "zero_based must be 'auto', True or False"),
                          ({"n_features": -1}, "n_features must be >= 0")]:
        with pytest.raises(ValueError, match=words):
            ReadOptions(**kwargs)


def test_messages_name_the_real_limit_the_real_problem_and_the_encoding(tmp_path):
    from ltrlib.data.readers import read_letor_folder

    long_qid = tmp_path / "long.txt"
    long_qid.write_text("1 qid:1234567890123456789 1:0.5\n")
    with pytest.raises(LetorFormatError, match=r"line 1: qid too large: 19 digits.*at most 18 digits"):
        read_letor(long_qid, cache=False)
    with pytest.raises(NotADirectoryError, match=r"long.txt is a file, not a LETOR folder: read one file with read_letor"):
        read_letor_folder(long_qid)
    for encoding, name in (("utf-16", "UTF-16LE"), ("utf-16-be", "UTF-16BE"), ("utf-32", "UTF-32LE")):
        wide = tmp_path / f"{encoding}.txt"
        wide.write_bytes("2 qid:1 1:0.5\n".encode(encoding))
        with pytest.raises(LetorFormatError, match=rf"is {name}-encoded text .* iconv -f {name} -t UTF-8"):
            read_letor(wide, cache=False)
