"""Tables 1 and 3 in the paper's layout from hand-made per-query results."""

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from ltrlib.clients import tables as T


def split(name, strategy, category, rest="exclusive"):
    return SimpleNamespace(name=name, strategy=strategy, category=category,
                           clients=[SimpleNamespace(strategy=strategy), SimpleNamespace(strategy=rest)])


def per_query(split_name, base):
    rng = np.random.default_rng(0)
    rows = []
    for i, model in enumerate(("M1", "M2", "M_full")):
        for j, test in enumerate(("DS1", "DS2'", "DS")):
            for q in range(6):
                rows.append((split_name, model, test, q, "ndcg@10",
                             base + 0.1 * i + 0.01 * j + rng.normal(0, 1e-3)))
    return pd.DataFrame(rows, columns=["split", "model", "test_set", "qid", "metric", "value"])


def test_table1_names_the_full_ds2():
    init = split("initial-c11", "tie_breaking", 11, rest="tie_breaking")
    pq = per_query("initial-c11", 0.5)
    t = T.table1_initial(pq, {init.name: init}, baseline=None).formatted()
    assert list(t.index) == ["M1", "M2", "M_full"] and list(t.columns) == ["DS1", "DS2", "DS"]
    assert t.loc["M2", "DS2"] == pytest.approx(0.61, abs=2e-3)
    table = T.table1_initial(pq, {init.name: init})
    marked = table.formatted()
    assert marked.loc["M1", "DS"].endswith("ᵃ") and "ᵃ" not in marked.loc["M_full", "DS"]
    # Client 2's test set is named DS2 in the numbers too, and its tests.
    assert set(table.numbers.test_set) == {"DS1", "DS2", "DS"} and set(table.tests.test_set) == {"DS1", "DS2", "DS"}
    means = T.client_means(pq, {init.name: init})
    assert set(means.test_set) == {"DS1", "DS2", "DS"} and len(means) == 9
    assert set(means.strategy) == {"tie_breaking"} and set(means.category) == {11}


def test_tables_are_empty_when_their_splits_were_left_out():
    # Data on which no initial split or Table 3 configuration can be trained
    # (`ltrlib.noniid.splits.initial_splits`, `alternative_splits`) gets empty tables, not an error.
    pq = per_query("Split1", 0.5)
    empty = T.table1_initial(pq, {}).formatted()
    assert empty.empty and list(empty.columns) == ["DS1", "DS2", "DS"]
    assert T.table3_alternative(pq, {}).empty


def test_table3_blocks_by_strategy_and_columns_by_category():
    alt = {"Split2": split("Split2", "no_tie_breaking", 11), "Split3": split("Split3", "no_tie_breaking", 14),
           "Split1": split("Split1", "exclusive", 11), "exclusive-c14": split("exclusive-c14", "exclusive", 14)}
    pq = pd.concat([per_query(n, 0.3 + 0.05 * k) for k, n in enumerate(alt)], ignore_index=True)
    t = T.table3_alternative(pq, alt, baseline=None)
    assert list(t.columns) == [f"Category {c} {s}" for c in (11, 14) for s in ("DS1", "DS2'", "DS")]
    assert list(t.index.get_level_values("partitioning").unique()) == [
        "Partitioning without tie-breaking", "Exclusive partitioning"]
    assert list(t.index.get_level_values("model")[:3]) == ["M1", "M2'", "M_full"]
    # exclusive-c14 (the 4th split, base 0.45): M1 on its DS1.
    assert t.loc[("Exclusive partitioning", "M1"), "Category 14 DS1"] == pytest.approx(0.45, abs=2e-3)
    with pytest.raises(KeyError, match="no results for splits"):
        T.table3_alternative(pq[pq.split != "Split3"], alt)
