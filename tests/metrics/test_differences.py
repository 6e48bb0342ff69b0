"""Tests for `ltrlib.metrics.compare`'s pairing options and `Comparison.differences`, the
"mean, difference, p-value" tables (what ``compare_tidy`` gave before it folded into `compare`)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from ltrlib.metrics import compare, paired_ttest
from ltrlib.metrics.significance import paired_tests

A = [0.2, 0.4, 0.6, 0.8]
B = [0.3, 0.7, 0.6, 1.0]
C = [0.1, 0.4, 0.2, 0.5]


def _tidy(values: dict[str, list[float]], qids=None, **columns) -> pd.DataFrame:
    qids = list(range(len(next(iter(values.values()))))) if qids is None else qids
    rows = [(m, q, v) for m, vs in values.items() for q, v in zip(qids, vs)]
    return pd.DataFrame(rows, columns=["model", "qid", "value"]).assign(**columns)


def _differences(frame: pd.DataFrame, baselines, by=(), **options) -> pd.DataFrame:
    return compare(frame, baselines, by=by, **options).differences()


def test_means_differences_and_p_values_by_hand():
    out = _differences(_tidy({"A": A, "B": B, "C": C}), "A")
    assert list(out.columns) == ["model", "baseline", "units", "count", "mean", "mean_baseline", "diff",
                                 "rel_diff", "t", "p"]
    assert list(out.model) == ["A", "B", "C"] and set(out.baseline) == {"A"}
    assert (out.units == 4).all() and (out["count"] == 4).all()
    b = out.set_index("model").loc["B"]
    assert b["mean"] == pytest.approx(0.65) and b.mean_baseline == pytest.approx(0.5)
    assert b["diff"] == pytest.approx(0.15) and b.rel_diff == pytest.approx(0.3)
    # Differences 0.1, 0.3, 0, 0.2: mean 0.15, sample sd sqrt(0.05 / 3), t = 0.15 / (sd / 2).
    t = 0.15 / (np.sqrt(0.05 / 3) / 2)
    assert b.t == pytest.approx(t, rel=1e-12)
    assert b.p == pytest.approx(2 * stats.t.sf(t, df=3), rel=1e-9)
    for model, values in (("B", B), ("C", C)):
        ref = stats.ttest_rel(values, A)
        row = out.set_index("model").loc[model]
        assert (row.t, row.p) == (pytest.approx(ref.statistic, rel=1e-12), pytest.approx(ref.pvalue, rel=1e-12))
    own = out.set_index("model").loc["A"]
    assert own["diff"] == 0 and np.isnan(own.t) and np.isnan(own.p)


def test_the_differences_agree_with_the_other_views():
    comparison = compare(_tidy({"A": A, "B": B, "C": C}, metric="map"), ["A", "B"])
    out = comparison.differences()
    tests = comparison.pvalues().set_index(["model", "baseline"])
    mine = out.set_index(["model", "baseline"]).loc[tests.index]
    assert (mine["diff"] == tests["diff"]).all() and (mine.p == tests.p).all() and (mine.t == tests.t).all()
    means = comparison.means_frame().set_index("model")
    assert (out.set_index("model")["mean"].groupby(level=0).first() == means["mean"]).all()


def test_groups_models_and_several_baselines():
    split1 = _tidy({"A": A, "B": B, "C": C}, split="S1")
    split2 = _tidy({"C": [0.5, 0.5, 0.9], "A": [0.1, 0.2, 0.4], "B": [0.3, 0.1, 0.2]}, qids=[9, 7, 8], split="S2")
    frame = pd.concat([split1, split2], ignore_index=True)
    out = _differences(frame, ["A", "B"], by="split")
    # Cells, then models in order of appearance within the cell, then baselines.
    assert list(zip(out.split, out.model, out.baseline)) == [
        ("S1", "A", "A"), ("S1", "A", "B"), ("S1", "B", "A"), ("S1", "B", "B"), ("S1", "C", "A"), ("S1", "C", "B"),
        ("S2", "C", "A"), ("S2", "C", "B"), ("S2", "A", "A"), ("S2", "A", "B"), ("S2", "B", "A"), ("S2", "B", "B")]
    row = out[(out.split == "S2") & (out.model == "C") & (out.baseline == "B")].iloc[0]
    # Pairs by query id: qids 7, 8, 9 -> C = 0.5, 0.9, 0.5 and B = 0.1, 0.2, 0.3.
    assert row.p == pytest.approx(stats.ttest_rel([0.5, 0.9, 0.5], [0.1, 0.2, 0.3]).pvalue, rel=1e-12)
    assert row["diff"] == pytest.approx(np.mean([0.5, 0.5, 0.9]) - np.mean([0.3, 0.1, 0.2]))
    # ``models`` picks and orders them, and drops the others before anything is computed.
    picked = _differences(frame, "A", by=["split"], models=["C", "A", "Z"])
    assert list(zip(picked.split, picked.model)) == [("S1", "C"), ("S1", "A"), ("S2", "C"), ("S2", "A")]


def test_cells_nested_or_in_order_of_their_first_row():
    # Cells (x, p), (y, p), (x, q) in that order of first rows: nested order takes x's cells
    # together; "appearance" keeps the rows' order, as pandas' groupby(sort=False) does.
    frame = pd.concat([_tidy({"A": A, "B": B}, split="x", metric="p"), _tidy({"A": A, "B": C}, split="y", metric="p"),
                       _tidy({"A": A, "B": B}, split="x", metric="q")], ignore_index=True)
    nested = _differences(frame, "A", by=["split", "metric"])
    first = _differences(frame, "A", by=["split", "metric"], cell_order="appearance")
    cells = lambda out: list(dict.fromkeys(zip(out.split, out.metric)))  # noqa: E731
    assert cells(nested) == [("x", "p"), ("x", "q"), ("y", "p")]
    assert cells(first) == [("x", "p"), ("y", "p"), ("x", "q")]
    assert list(first.columns) == list(nested.columns)
    assert sorted(map(tuple, first.astype(str).to_numpy())) == sorted(map(tuple, nested.astype(str).to_numpy()))
    # One key orders the same either way.
    one = frame[frame.metric == "p"]
    pd.testing.assert_frame_equal(_differences(one, "A", by="split"),
                                  _differences(one, "A", by="split", cell_order="appearance"))


def test_a_cell_without_the_baseline_or_too_small_is_not_tested():
    frame = pd.concat([_tidy({"A": A, "B": B}, split="S1"), _tidy({"B": B, "C": C}, split="S2"),
                       _tidy({"A": [0.5], "B": [0.7]}, split="S3")], ignore_index=True)
    out = _differences(frame, "A", by="split").set_index(["split", "model"])
    assert out.loc[("S2", "B"), ["mean_baseline", "diff", "t", "p"]].isna().all()
    one = out.loc[("S3", "B")]
    assert one.units == 1 and np.isnan(one.p) and one["diff"] == pytest.approx(0.2)
    with pytest.raises(ValueError, match="at least 2 queries"):
        _differences(frame, "A", by="split", too_few="raise")
    # Every cell with 2 units or more is tested under "raise".
    assert not _differences(frame[frame.split != "S3"], "A", by="split", too_few="raise").empty


def test_nan_values_and_ties():
    b = [0.3, np.nan, 0.6, 1.0]
    out = _differences(_tidy({"A": A, "B": b, "T": A}), "A").set_index("model")
    # Skipped in the mean (over 3 values) and in the test (3 pairs) ...
    assert out.loc["B", "count"] == 3 and out.loc["B", "mean"] == pytest.approx(np.mean([0.3, 0.6, 1.0]))
    keep = [0, 2, 3]
    assert out.loc["B", "p"] == pytest.approx(stats.ttest_rel(np.array(b)[keep], np.array(A)[keep]).pvalue)
    # ... or a NaN mean with skipna=False, the test unchanged.
    plain = _differences(_tidy({"A": A, "B": b}), "A", skipna=False).set_index("model")
    assert np.isnan(plain.loc["B", "mean"]) and np.isnan(plain.loc["B", "diff"])
    assert plain.loc["B", "p"] == out.loc["B", "p"]
    # Identical values: p = 1 (paired_ttest's rule); raw=True gives scipy's NaN, and a NaN value
    # makes the whole test NaN.
    assert out.loc["T", "p"] == 1.0 and out.loc["T", "t"] == 0.0
    raw = _differences(_tidy({"A": A, "B": b, "T": A}), "A", raw=True).set_index("model")
    assert np.isnan(raw.loc["T", "p"]) and np.isnan(raw.loc["B", "p"])
    c = _differences(_tidy({"A": A, "C": C}), "A", raw=True).set_index("model")
    assert c.loc["C", "p"] == stats.ttest_rel(C, A).pvalue


def test_common_pairing_pairs_only_what_every_model_has():
    frame = pd.concat([_tidy({"IID": [1.0, 2.0, 3.0, 4.0]}, qids=[3, 1, 0, 2]),
                       _tidy({"non": [1.5, np.nan, 2.0]}, qids=[0, 1, 5])], ignore_index=True)
    out = _differences(frame, "IID", pairing="common").set_index("model")
    # Units 0 and 1: the NaN value of unit 1 still makes it common.
    assert out.loc["non", "units"] == 2 and out.loc["non", "count"] == 1
    assert out.loc["non", "mean_baseline"] == pytest.approx(2.5)  # IID on units 0 (3.0) and 1 (2.0)
    assert out.loc["non", "mean"] == pytest.approx(1.5)
    # Without: every unit, a missing one NaN (units 0, 1, 2, 3, 5; non's mean over 0 and 5).
    everything = _differences(frame, "IID").set_index("model")
    assert everything.loc["non", "units"] == 5 and everything.loc["non", "mean"] == pytest.approx(1.75)
    # The units need not be queries: seeds, named by ``qid``.
    seeds = frame.rename(columns={"qid": "seed", "model": "data"})
    by_seed = compare(seeds, "IID", by=(), rows="data", qid="seed", pairing="common").differences()
    assert list(by_seed.columns[:2]) == ["data", "baseline"] and list(by_seed.units) == [2, 2]


def test_relative_difference_of_a_zero_baseline_is_infinite():
    out = _differences(_tidy({"A": [0.0, 0.0], "B": [0.1, 0.3]}), "A").set_index("model")
    assert out.loc["B", "rel_diff"] == np.inf and out.loc["B", "p"] > 0


def test_errors():
    frame = _tidy({"A": A, "B": B})
    with pytest.raises(ValueError, match="several values for one"):
        _differences(pd.concat([frame, frame.iloc[:1]]), "A")
    with pytest.raises(KeyError, match="missing columns"):
        _differences(frame, "A", by="split")
    with pytest.raises(ValueError, match="too_few must be one of"):
        _differences(frame, "A", too_few="skip")
    with pytest.raises(ValueError, match="baselines is empty"):
        _differences(frame, [])
    with pytest.raises(ValueError, match="pairing must be one of"):
        _differences(frame, "A", pairing="all")
    with pytest.raises(ValueError, match="cell_order must be one of"):
        _differences(frame, "A", cell_order="sorted")
    with pytest.raises(ValueError, match="give baselines"):
        compare(frame, None, by=(), pairing="common")


def test_paired_tests_and_paired_ttest_options():
    one = pd.DataFrame({"M1": [0.5], "M2": [0.9]})
    assert np.isnan(paired_tests(one, "M1").p[0])
    with pytest.raises(ValueError, match="at least 2 queries"):
        paired_tests(one, "M1", too_few="raise")
    a = np.array(A)
    assert paired_ttest(a, a).p == 1.0 and np.isnan(paired_ttest(a, a, raw=True).p)
    b = np.array([0.3, np.nan, 0.6, 1.0])
    assert paired_ttest(b, a).n == 3 and paired_ttest(b, a, raw=True).n == 4
    assert np.isnan(paired_ttest(b, a, raw=True).p)
