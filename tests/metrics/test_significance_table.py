"""ltrlib.metrics.compare(...).marked(...): the one builder of the papers' marked tables.

Every expected marker here comes from scipy.stats.ttest_rel on the cell's own queries, not
from ltrlib, so a table that marks the wrong cell (or misses one) fails.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from ltrlib.metrics import compare, paired_ttest

SUP = {"a": "ᵃ", "b": "ᵇ", "c": "ᶜ"}


def significance_table(per_query, baselines=None, *, columns="metric", by=None, models=None, alpha=0.05,
                       alternative="two-sided", earlier_only=False, fmt="{:.4f}", style="unicode", label=None):
    """The former verb, spelled as the views of `ltrlib.metrics.compare` (issue 65, item 1)."""
    columns = [columns] if isinstance(columns, str) else list(columns)
    by = [] if by is None else [by] if isinstance(by, str) else list(by)
    return compare(per_query, baselines, by=[*by, *columns], models=models, alpha=alpha,
                   alternative=alternative).marked(columns, by, earlier_only=earlier_only,
                                                   label=label).formatted(fmt, style)


def _tidy(shifts: dict[str, float], keys: dict, n: int, rng, noise: float = 0.05) -> pd.DataFrame:
    base = rng.uniform(0.2, 0.7, n)
    return pd.concat([pd.DataFrame({**keys, "model": m, "qid": np.arange(n),
                                    "value": base + s + rng.normal(0, noise, n)})
                      for m, s in shifts.items()], ignore_index=True)


def _scipy_p(part: pd.DataFrame, model: str, base: str, alternative="two-sided") -> float:
    wide = part.pivot(index="qid", columns="model", values="value")
    return stats.ttest_rel(wide[model], wide[base], alternative=alternative).pvalue


@pytest.fixture
def borderline():
    """Three test sets x two metrics; shifts of about one standard error, so that some
    cells are significant at 0.05 and others are not."""
    rng = np.random.default_rng(11)
    parts = []
    for test_set, n in (("DS1", 30), ("DS2'", 45), ("DS", 60)):
        for metric in ("ndcg@10", "map"):
            shifts = {"M1": 0.0, "M2": rng.normal(0, 0.012), "M_full": rng.normal(0, 0.012)}
            parts.append(_tidy(shifts, {"test_set": test_set, "metric": metric}, n, rng))
    return pd.concat(parts, ignore_index=True)


def test_markers_exactly_where_the_paired_test_is_significant(borderline):
    metric = borderline[borderline.metric == "map"]
    for alpha in (0.01, 0.05, 0.2):
        table = significance_table(metric, "M_full", columns="test_set", alpha=alpha)
        assert list(table.index) == ["M1", "M2", "M_full"]
        assert list(table.columns) == ["DS1", "DS2'", "DS"]
        for test_set, part in metric.groupby("test_set"):
            for model in ("M1", "M2"):
                significant = _scipy_p(part, model, "M_full") < alpha
                cell = table.loc[model, test_set]
                assert cell.endswith("ᵃ") == significant, (alpha, test_set, model, cell)
                mean = part[part.model == model].value.mean()
                assert cell == f"{mean:.4f}" + ("ᵃ" if significant else "")
            assert table.loc["M_full", test_set][-1].isdigit()  # never against itself
    # The fixture is borderline: at 0.05 some cells are marked and some are not.
    marked = significance_table(metric, "M_full", columns="test_set").loc[["M1", "M2"]]
    ends = {c.endswith("ᵃ") for c in marked.to_numpy().ravel()}
    assert ends == {True, False}


def test_one_sided_alternative():
    rng = np.random.default_rng(3)
    # A sample where "up" is better than "base" with a two-sided p in (0.05, 0.1), so its
    # one-sided p is below 0.05: the two tests disagree at alpha = 0.05.
    for _ in range(500):
        pq = _tidy({"base": 0.0, "up": 0.02, "down": -0.05}, {"metric": "ndcg@5"}, 40, rng)
        p_two = _scipy_p(pq, "up", "base")
        if 0.05 < p_two < 0.1:
            break
    else:
        pytest.fail("no borderline sample found")
    p_greater = _scipy_p(pq, "up", "base", "greater")
    assert p_greater == pytest.approx(p_two / 2) and p_greater < 0.05
    assert _scipy_p(pq, "down", "base") < 0.05  # "down" is significantly worse
    two = significance_table(pq, "base")["ndcg@5"]
    greater = significance_table(pq, "base", alternative="greater")["ndcg@5"]
    less = significance_table(pq, "base", alternative="less")["ndcg@5"]
    assert not two["up"].endswith("ᵃ") and greater["up"].endswith("ᵃ")  # one-sided finds it
    assert two["down"].endswith("ᵃ") and not greater["down"].endswith("ᵃ")  # worse: no mark
    assert less["down"].endswith("ᵃ") and not less["up"].endswith("ᵃ")
    # paired_ttest gives scipy's one-sided p-values.
    wide = pq.pivot(index="qid", columns="model", values="value")
    assert paired_ttest(wide.up, wide.base, "greater").p == pytest.approx(p_greater, rel=1e-12)
    assert paired_ttest(wide.up, wide.base, "less").p == pytest.approx(1 - p_greater, rel=1e-12)


def test_one_sided_zero_variance_points_one_way():
    a = np.array([0.1, 0.5, 0.9, 0.3])
    assert paired_ttest(a + 0.25, a, "greater").p == 0.0
    assert paired_ttest(a + 0.25, a, "less").p == 1.0
    assert paired_ttest(a - 0.25, a, "less").p == 0.0
    assert paired_ttest(a, a.copy(), "greater").p == 1.0  # identical: no evidence
    with pytest.raises(ValueError, match="alternative must be one of"):
        paired_ttest(a, a, "bigger")


def test_several_baselines(borderline):
    ndcg = borderline[borderline.metric == "ndcg@10"]
    table = significance_table(ndcg, {"M1": "a", "M2": "b"}, columns="test_set",
                               label="{model} ({marker})")
    assert list(table.index) == ["M1 (a)", "M2 (b)", "M_full"]
    rows = {"M1": "M1 (a)", "M2": "M2 (b)", "M_full": "M_full"}
    seen = set()
    for test_set, part in ndcg.groupby("test_set"):
        for model, row in rows.items():
            expect = "".join(SUP[letter] for base, letter in (("M1", "a"), ("M2", "b"))
                             if base != model and _scipy_p(part, model, base) < 0.05)
            mean = part[part.model == model].value.mean()
            assert table.loc[row, test_set] == f"{mean:.4f}{expect}", (test_set, model)
            seen.add(expect)
    assert "" in seen and len(seen) > 1  # some cells marked, some not
    # Markers follow the order the baselines are given in, whatever their letters.
    frame = _tidy({"M1": 0.0, "M2": 0.3, "M3": 0.1}, {"metric": "m"}, 80,
                  np.random.default_rng(0), noise=0.01)
    assert significance_table(frame, {"M2": "b", "M1": "a"})["m"]["M3"].endswith("ᵇᵃ")
    assert significance_table(frame, ["M1", "M2"], style="latex")["m"]["M3"].endswith("$^{ab}$")


def test_earlier_only_marks_point_up_the_table():
    frame = _tidy({"A": 0.0, "B": 0.1, "C": 0.2}, {"metric": "m"}, 60,
                  np.random.default_rng(1), noise=0.01)
    all_pairs = significance_table(frame, ["A", "B", "C"])["m"]
    assert all_pairs.str[-2:].tolist() == ["ᵇᶜ", "ᵃᶜ", "ᵃᵇ"]
    earlier = significance_table(frame, ["A", "B", "C"], models=["C", "B", "A"],
                                 earlier_only=True, label="{marker}. {model}")["m"]
    # Rows in the order of models; C is first, so nothing is above it.
    assert list(earlier.index) == ["c. C", "b. B", "a. A"]
    assert earlier["c. C"][-1].isdigit()
    assert earlier["b. B"].endswith("ᶜ") and earlier["a. A"].endswith("ᵇᶜ")


def test_layout_by_blocks_and_nested_columns():
    rng = np.random.default_rng(2)
    # Rows come split by split, metric inside; Split2 lists its metrics the other way round.
    parts = [_tidy({"M1": 0.0, "M2": 0.01}, {"split": s, "metric": m}, 10, rng)
             for s, metrics in (("Split1", ("ndcg@10", "map")), ("Split2", ("map", "ndcg@10")))
             for m in metrics]
    pq = pd.concat(parts, ignore_index=True)
    wide = significance_table(pq, "M1", columns=["split", "metric"])
    assert list(wide.columns) == [("Split1", "ndcg@10"), ("Split1", "map"),
                                  ("Split2", "map"), ("Split2", "ndcg@10")]
    assert list(wide.columns.names) == ["split", "metric"] and wide.index.name == "model"
    blocks = significance_table(pq, None, by="split")
    assert list(blocks.index) == [("Split1", "M1"), ("Split1", "M2"),
                                  ("Split2", "M1"), ("Split2", "M2")]
    assert list(blocks.index.names) == ["split", "model"]
    assert list(blocks.columns) == ["ndcg@10", "map"]
    # Without baselines: the plain means, as floats.
    cell = pq[(pq.split == "Split2") & (pq.metric == "map") & (pq.model == "M2")].value.mean()
    assert blocks.loc[("Split2", "M2"), "map"] == cell


def test_a_cell_must_hold_one_value_per_model_and_query(borderline):
    with pytest.raises(ValueError, match=r"several values for one \(model, qid\) at test_set='DS1'"):
        significance_table(borderline, "M_full", columns="test_set")  # two metrics left in
    missing = borderline[~((borderline.model == "M2") & (borderline.qid == 3))]
    with pytest.raises(ValueError, match="not evaluated on the same queries"):
        significance_table(missing, "M_full", columns=["test_set", "metric"])
    with pytest.raises(KeyError, match="'M9'"):
        significance_table(borderline, "M_full", columns=["test_set", "metric"], models=["M9"])
    with pytest.raises(KeyError, match="missing columns \\['split'\\]"):
        significance_table(borderline, "M_full", by="split")
    with pytest.raises(ValueError, match="alternative must be one of"):
        significance_table(borderline, "M_full", columns=["test_set", "metric"],
                           alternative="up")
    with pytest.raises(ValueError, match="no rows"):
        significance_table(borderline.iloc[:0], "M_full")
