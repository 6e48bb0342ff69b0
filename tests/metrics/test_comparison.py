"""ltrlib.metrics.compare and its views, pinned to the tables the code before `Comparison`
wrote on one fixed input (tests/metrics/frozen/, written by `marked_means`,
`significance_table`, `merge.means_table` and `bilambdamart.ndcg_pvalues` as they were)."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ltrlib import bilambdamart, merge
from ltrlib.metrics import compare, paired_ttest
from ltrlib.metrics.comparison import Comparison

FROZEN = Path(__file__).parent / "frozen"
ROWS = ["M1", "M2", "M12α", "plus", "copy", "M21α"]


def per_query() -> pd.DataFrame:
    """Tidy ``split, model, qid, metric, value``: two splits, three metrics, five models (one
    a copy of M1: ties; one M1 plus a constant: zero variance), 12 queries."""
    rng = np.random.default_rng(65)
    rows = []
    for split in ("Split1", "Split2"):
        base = rng.uniform(0.2, 0.8, size=(3, 12))
        shifts = {"M1": 0.0, "M2": 0.04, "M12α": 0.09, "M21α": -0.05}
        for model, shift in shifts.items():
            noise = rng.normal(0, 0.08, size=base.shape)
            for i, metric in enumerate(("ndcg@10", "map", "mrr@10")):
                values = base[i] + shift + (0 if model == "M1" else noise[i])
                rows += [dict(split=split, model=model, qid=q, metric=metric, value=v)
                         for q, v in enumerate(values)]
        m1 = [r for r in rows if r["split"] == split and r["model"] == "M1"]
        rows += [dict(r, model="copy") for r in m1]
        rows += [dict(r, model="plus", value=r["value"] + 0.01) for r in m1]
    return pd.DataFrame(rows)


def _frozen(name: str) -> pd.DataFrame:
    return pd.read_csv(FROZEN / f"{name}.csv", keep_default_na=False, na_values=[""])


def _same(got: pd.DataFrame, name: str) -> None:
    # Through the CSV the tables were written as: every printed string and number exactly.
    again = pd.read_csv(pd.io.common.StringIO(got.to_csv(index=False)), keep_default_na=False, na_values=[""])
    pd.testing.assert_frame_equal(again, _frozen(name), check_exact=True)


def test_merge_tables_are_views_of_one_comparison():
    pq = per_query()
    models = ["M1", "M2", "M12α", "M21α", "copy", "plus"]
    table = merge.marked_table(pq, models=models)
    _same(table.numbers, "merge_marked_numbers")
    _same(table.formatted(flat=True).reset_index(), "merge_marked_printed")
    _same(merge.means_table(pq, models=models), "merge_means_table")


def test_ndcg_tables_are_views_of_one_comparison():
    one = per_query().query("split == 'Split1'")
    table = bilambdamart.ndcg_table(one, ROWS)
    _same(table.numbers, "ndcg_table_numbers")
    _same(table.formatted(flat=True).reset_index(), "ndcg_table_printed")
    _same(bilambdamart.ndcg_pvalues(one, ROWS), "ndcg_pvalues")


def test_marked_layouts_as_significance_table_printed_them():
    pq = per_query()
    blocks = compare(pq, ["M1", "M2"], by=["split", "metric"]).marked(by="split", columns="metric")
    _same(blocks.formatted(style="latex").reset_index(), "blocks_printed")
    plain = compare(pq, None, by=["split", "metric"]).marked()
    _same(plain.formatted().reset_index(), "plain_means")


def test_views_hold_the_tests_with_wins_ties_and_losses():
    pq = per_query().query("split == 'Split1' and metric == 'map'")
    result = compare(pq, "M1")
    assert isinstance(result, Comparison)
    wide = pq.pivot(index="qid", columns="model", values="value")
    row = result.pvalues().set_index("model").loc["M2"]
    assert row.p == paired_ttest(wide.M2, wide.M1).p
    assert row["diff"] == wide.M2.mean() - wide.M1.mean()
    d = wide.M2 - wide.M1
    assert (row.wins, row.ties, row.losses) == ((d > 0).sum(), (d == 0).sum(), (d < 0).sum())
    copy = result.pvalues().set_index("model").loc["copy"]
    assert (copy.wins, copy.ties, copy.losses, copy.p) == (0, 12, 0, 1.0)
    means = result.means_frame().set_index("model")["mean"]
    assert means.to_dict() == pytest.approx(wide.mean().to_dict(), abs=0)
    holm = result.pvalues("holm")
    assert np.all(holm.p_holm >= holm.p)
    frame = result.to_frame()
    assert {"mean", "p", "wins", "significant"} <= set(frame.columns) and len(frame) == len(holm)


def test_marked_refuses_what_the_marked_table_refused():
    pq = per_query().query("split == 'Split1' and metric == 'map'")
    with pytest.raises(KeyError, match="M9"):
        compare(pq, "M1", models=["M1", "M9"]).marked()
    with pytest.raises(ValueError, match="same queries"):
        compare(pq[~((pq.model == "M2") & (pq.qid == 3))], "M1").marked()
    with pytest.raises(ValueError, match="must split the keys"):
        compare(pq, "M1").marked(columns="split")
    with pytest.raises(ValueError, match="correction"):
        compare(pq, "M1").pvalues("bonferonni")
