"""Tests for ltrlib.metrics.significance."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from ltrlib.metrics import compare as compare_models, evaluate, paired_ttest
from ltrlib.metrics.significance import paired_tests as compare


def test_paired_ttest_matches_scipy():
    rng = np.random.default_rng(0)
    a = rng.uniform(size=120)
    b = np.clip(a + rng.normal(0.02, 0.1, size=120), 0, 1)
    ref = stats.ttest_rel(a, b)
    res = paired_ttest(a, b)
    assert res.t == pytest.approx(ref.statistic, rel=1e-12)
    assert res.p == pytest.approx(ref.pvalue, rel=1e-12)
    assert res.mean_diff == pytest.approx(np.mean(a - b), rel=1e-12)
    assert res.n == 120


def test_clearly_significant_and_clearly_not():
    rng = np.random.default_rng(1)
    base = rng.uniform(0.3, 0.8, size=300)
    better = base + 0.05 + rng.normal(0, 0.05, size=300)
    assert paired_ttest(better, base).p < 1e-20
    assert paired_ttest(better, base).mean_diff > 0
    same = base + rng.normal(0, 0.05, size=300)  # no true difference
    assert paired_ttest(same, base).p > 0.2


def test_identical_inputs_give_p_one():
    a = np.array([0.1, 0.5, 0.9, 0.3])
    res = paired_ttest(a, a.copy())
    assert (res.t, res.p, res.mean_diff) == (0.0, 1.0, 0.0)


def test_constant_difference_is_certain():
    a = np.array([0.1, 0.5, 0.9, 0.3])
    res = paired_ttest(a + 0.25, a)
    assert res.p == 0.0 and res.t == np.inf and res.mean_diff == pytest.approx(0.25)


def test_nan_pairs_are_dropped():
    rng = np.random.default_rng(2)
    a, b = rng.uniform(size=50), rng.uniform(size=50)
    a[[3, 7]] = np.nan  # e.g. queries scored NaN under no_relevant="exclude"
    b[9] = np.nan
    keep = np.ones(50, bool)
    keep[[3, 7, 9]] = False
    res = paired_ttest(a, b)
    assert res.n == 47
    assert res.p == pytest.approx(stats.ttest_rel(a[keep], b[keep]).pvalue, rel=1e-12)


def test_paired_ttest_errors():
    with pytest.raises(ValueError, match="a has 3 values, b has 4"):
        paired_ttest([1, 2, 3], [1, 2, 3, 4])
    with pytest.raises(ValueError, match="at least 2 queries"):
        paired_ttest([1.0, np.nan], [1.0, 2.0])


def test_a_one_query_test_set_gets_no_marker_instead_of_an_error():
    one = pd.DataFrame({"M1": [0.5], "M2": [0.9]})
    table = compare(one, "M1")
    assert table.n.tolist() == [1] and np.isnan(table.p[0]) and not table.significant[0]
    assert mark_significance(one, "M1").tolist() == ["0.5000", "0.9000"]


@pytest.fixture
def three_models():
    """M1 baseline; M2 = M1 + 0.05 (significant); M3 = M2 + noise (not significant vs M2)."""
    rng = np.random.default_rng(5)
    m1 = rng.uniform(0.3, 0.8, size=200)
    m2 = m1 + 0.05 + rng.normal(0, 0.03, size=200)
    m3 = m2 + rng.normal(0, 0.03, size=200)
    frame = pd.DataFrame({"M1": m1, "M2": m2, "M3": m3})
    assert stats.ttest_rel(frame.M3, frame.M2).pvalue > 0.05
    return frame


def test_compare_is_tidy(three_models):
    out = compare(three_models, {"M1": "a", "M2": "b"})
    assert list(out.columns) == ["model", "baseline", "marker", "n", "mean_model",
                                 "mean_baseline", "mean_diff", "t", "p", "significant"]
    assert list(zip(out.model, out.baseline)) == [
        ("M1", "M2"), ("M2", "M1"), ("M3", "M1"), ("M3", "M2")]
    row = out[(out.model == "M3") & (out.baseline == "M2")].iloc[0]
    assert not row.significant and row.p > 0.05
    row = out[(out.model == "M2") & (out.baseline == "M1")].iloc[0]
    assert row.significant and row.mean_diff == pytest.approx(
        (three_models.M2 - three_models.M1).mean())


def test_mark_significance(three_models):
    marked = mark_significance(three_models, {"M1": "a", "M2": "b"})
    means = three_models.mean()
    assert marked["M1"] == f"{means.M1:.4f}ᵇ"
    assert marked["M2"] == f"{means.M2:.4f}ᵃ"
    assert marked["M3"] == f"{means.M3:.4f}ᵃ"  # differs from M1, not from M2
    # A list gets letters in order; the threshold matters.
    assert mark_significance(three_models, ["M1", "M2"], alpha=1e-300)["M2"] == f"{means.M2:.4f}"
    assert mark_significance(three_models, ["M2", "M1"], style="latex")["M3"] == f"{means.M3:.4f}$^{{b}}$"
    assert mark_significance(three_models, "M1", fmt="{:.2f}", style="plain")["M3"] == f"{means.M3:.2f}^a"


def test_mark_significance_orders_markers_by_baseline():
    rng = np.random.default_rng(6)
    m1 = rng.uniform(size=100)
    frame = pd.DataFrame({"M1": m1, "M2": m1 + 0.3 + rng.normal(0, 0.01, 100),
                          "M3": m1 + 0.1 + rng.normal(0, 0.01, 100)})
    marked = mark_significance(frame, {"M2": "b", "M1": "a"}, fmt="{:.1f}")
    assert marked["M3"].endswith("ᵇᵃ")  # in the order baselines were given


def test_bad_baselines(three_models):
    with pytest.raises(KeyError, match="'M9'"):
        compare(three_models, ["M9"])
    with pytest.raises(ValueError, match="distinct markers"):
        compare(three_models, {"M1": "a", "M2": "a"})
    with pytest.raises(TypeError, match="per_query must be a DataFrame"):
        compare(three_models.to_numpy(), ["M1"])
    with pytest.raises(ValueError, match="style must be one of"):
        mark_significance(three_models, ["M1"], style="html")


def test_significance_table_from_evaluate_output():
    rng = np.random.default_rng(7)
    sizes = rng.integers(5, 30, size=150)
    off = np.concatenate([[0], np.cumsum(sizes)])
    y = rng.integers(0, 5, size=off[-1])
    noise = rng.normal(size=y.size)
    runs = {"random": noise, "weak": noise + 0.3 * y, "strong": noise + 3.0 * y}
    tidy = pd.concat(
        [evaluate(y, s, off, ("ndcg@5", "map"), per_query=True).assign(model=name)
         for name, s in runs.items()],
        ignore_index=True,
    )
    table = significance_table(tidy, {"random": "a", "weak": "b"})
    assert list(table.index) == ["random", "weak", "strong"]
    assert list(table.columns) == ["ndcg@5", "map"]
    assert table.loc["strong", "ndcg@5"].endswith("ᵃᵇ")
    assert table.loc["random", "map"].endswith("ᵇ")
    mean = tidy[(tidy.model == "strong") & (tidy.metric == "map")].value.mean()
    assert table.loc["strong", "map"] == f"{mean:.4f}ᵃᵇ"


def test_rounding_noise_counts_as_identical():
    rng = np.random.default_rng(8)
    a = rng.uniform(size=30)
    noisy = (a + 0.1) - 0.1  # same values computed another way
    assert not np.array_equal(a, noisy)
    assert paired_ttest(noisy, a).p == 1.0


def test_holm_correction_by_hand_and_beside_the_uncorrected_marks():
    """Holm over p = 0.01, 0.04, 0.03 (and an untested NaN): sorted, times 3, 2, 1, then
    the running maximum: 0.03, 0.06, 0.06; NaN stays NaN."""
    from ltrlib.metrics.significance import corrected

    np.testing.assert_allclose(corrected([0.01, 0.04, 0.03, np.nan]), [0.03, 0.06, 0.06, np.nan])
    rng = np.random.default_rng(0)
    base = rng.normal(size=60)
    per_query = pd.DataFrame({"base": base, "a": base + 0.3 + rng.normal(0, 1, 60),
                              "b": base + 0.25 + rng.normal(0, 1, 60), "c": base + rng.normal(0, 1, 60)})
    table = compare(per_query, ["base"], alpha=0.05, correction="holm")
    np.testing.assert_allclose(table.p_corrected, corrected(table.p))
    assert (table.p_corrected >= table.p).all() and (table.significant_corrected <= table.significant).all()
    assert "p_corrected" not in compare(per_query, ["base"]).columns  # the paper's marks stay as they were
    with pytest.raises(ValueError, match="correction must be one of"):
        compare(per_query, ["base"], correction="bonferonni")


def mark_significance(wide, baselines, *, alpha=0.05, fmt="{:.4f}", style="unicode"):
    """The former wide-frame verb, spelled as the views of `ltrlib.metrics.compare`."""
    if not isinstance(wide, pd.DataFrame):
        raise TypeError("a wide frame")
    tidy = wide.rename_axis(index="qid", columns="model").stack(future_stack=True).rename("value").reset_index()
    return compare_models(tidy.assign(metric="m"), baselines, alpha=alpha).marked().formatted(fmt, style)["m"]


def significance_table(per_query, baselines=None):
    return compare_models(per_query, baselines).marked().formatted()
