"""Type 1 splits (DS1 strategies, DS2'), D_merge, Table 2 and the n-client generalisation."""

import re

import numpy as np
import pytest

from ltrlib.data import Dataset, Splits
from ltrlib.noniid import splits as S


def build(queries, qids, name):
    """A Dataset from queries given as lists of (label, category) documents."""
    docs = [d for q in queries for d in q]
    return Dataset(
        X=np.zeros((len(docs), 1)), y=[d[0] for d in docs], query_ids=qids,
        offsets=np.concatenate([[0], np.cumsum([len(q) for q in queries])]),
        category=[d[1] for d in docs], name=name,
    )


# Category c = 1 throughout. One query per case, with its expected membership.
CASES = {
    # qid: (documents, in DS1 by strategy (tb, ntb, excl), in DS2')
    1: ([(1, 1), (2, 1), (0, 2)], (True, True, True), False),  # all relevant in 1
    2: ([(1, 1), (1, 1), (3, 2), (0, 3)], (True, True, False), False),  # 1 leads 2:1
    3: ([(2, 1), (1, 2), (0, 1)], (True, False, False), False),  # tie, label sum -> 1
    4: ([(1, 2), (1, 2), (4, 1)], (False, False, False), False),  # 2 dominates: pool
    5: ([(1, 2), (1, 3), (0, 2), (0, 3)], (False, False, False), True),  # no document of 1
    # DS2' has no document of 1 of any label: irrelevant 1s keep a query out
    6: ([(0, 1), (0, 2)], (False, False, False), False),
    7: ([(3, 3)], (False, False, False), True),
    8: ([(0, 2)], (False, False, False), True),  # no relevant document, no document of 1
}
STRATS = ("tie_breaking", "no_tie_breaking", "exclusive")


def pool_query(key):
    # key relevant documents of category 1, key + 1 of category 2: never in DS1 or DS2'.
    return [(1, 1)] * key + [(1, 2)] * (key + 1) + [(0, 3)]


POOL = {10: 1, 11: 3, 12: 1, 13: 2, 14: 5, 15: 2}  # qid -> relevant documents of category 1


@pytest.fixture(scope="module")
def splits():
    train = build([v[0] for v in CASES.values()], list(CASES), "train")
    vali_q = [v[0] for v in CASES.values()] + [pool_query(k) for k in POOL.values()]
    vali = build(vali_q, [q + 100 for q in CASES] + list(POOL), "vali")
    test = build([v[0] for v in CASES.values()], [q + 200 for q in CASES], "test")
    return Splits(train, vali, test)


def qids(ds):
    return set(ds.query_ids.tolist())


@pytest.mark.parametrize("k", range(3))
def test_each_strategy_and_ds2_prime_on_every_partition(splits, k):
    strategy = STRATS[k]
    ns = S.make_split(splits, category=1, strategy=strategy, name="x", merge_size=0)
    c1, c2 = ns.clients
    ds1 = {q for q, (_, member, _) in CASES.items() if member[k]}
    ds2 = {q for q, (_, _, prime) in CASES.items() if prime}
    for part, shift in (("train", 0), ("vali", 100), ("test", 200)):
        assert qids(getattr(c1, part)) == {q + shift for q in ds1}, part
        assert qids(getattr(c2, part)) == {q + shift for q in ds2}, part
    assert (ns.name, ns.category, ns.strategy) == ("x", 1, strategy)
    assert ns.full is splits
    assert c1.categories == frozenset({1}) and c2.categories is None


def test_ds2_prime_is_the_same_for_every_strategy(splits):
    parts = [S.make_split(splits, 1, s, merge_size=0).clients[1] for s in STRATS]
    for p in ("train", "vali", "test"):
        assert len({frozenset(qids(getattr(c, p))) for c in parts}) == 1


def test_merge_selection_order_sizes_and_disjointness(splits):
    ns = S.make_split(splits, 1, "no_tie_breaking", merge_size=2)
    c1, c2 = ns.clients
    # Queries 3 (a tie) and 4 of the validation copy (qids 103, 104) are in the pool too,
    # with 1 relevant document of category 1 each. Sorted by (key, qid):
    # 10(1) 12(1) 103(1) 104(1) 13(2) 15(2) 11(3) 14(5).
    assert qids(ns.merge_pool) == set(POOL) | {103, 104}
    assert qids(c1.merge) == {10, 12}  # key 1, the smallest ids first
    assert qids(c2.merge) == {11, 14}
    for c in ns.clients:
        assert not qids(c.merge) & (qids(ns.clients[0].vali) | qids(ns.clients[1].vali))
    assert ns.notes == []


def test_merge_shrinks_overlaps_or_refuses(splits):
    ns = S.make_split(splits, 1, "no_tie_breaking", merge_size=5)  # 5 + 5 > pool of 8
    c1, c2 = ns.clients
    assert (c1.merge.n_queries, c2.merge.n_queries) == (4, 4)  # 5 * 8 // 10
    assert qids(c1.merge) == {10, 12, 103, 104} and qids(c2.merge) == {13, 15, 11, 14}
    assert c1.merge_requested == 5 and ns.notes and "shrunk" in ns.notes[0]
    ov = S.make_split(splits, 1, "no_tie_breaking", merge_size=5, merge_overflow="overlap")
    assert qids(ov.clients[0].merge) & qids(ov.clients[1].merge) == {104, 13}
    with pytest.raises(ValueError, match="exceed the pool"):
        S.make_split(splits, 1, "no_tie_breaking", merge_size=5, merge_overflow="error")


def test_merge_size_counts_training_queries_by_default(splits):
    ns = S.make_split(splits, 1, "tie_breaking")  # train: DS1 3 queries, DS2' 3 queries
    assert [c.merge_requested for c in ns.clients] == [1, 1]
    assert qids(ns.clients[0].merge) == {10} and qids(ns.clients[1].merge) == {14}
    ns = S.make_split(splits, 1, "tie_breaking", merge_size="vali_queries_half")
    assert [c.merge_requested for c in ns.clients] == [1, 1]


def test_table2_on_hand_built_data(splits):
    t = S.table2(splits, categories=(1,), strategies=("no_tie_breaking", "exclusive"))
    v = t.set_index(["partition", "statistic", "strategy", "part"]).value
    assert v[("train", "queries", "", "DS")] == 8
    assert v[("train", "relevant_documents", "", "DS")] == 2 + 3 + 2 + 3 + 2 + 0 + 1 + 0
    assert v[("train", "query_document_pairs", "", "DS")] == 3 + 4 + 3 + 3 + 4 + 2 + 1 + 1
    # without tie-breaking: queries 1 and 2
    assert v[("train", "queries", "no_tie_breaking", "DS1")] == 2
    assert v[("train", "relevant_documents", "no_tie_breaking", "DS1")] == 5
    assert v[("train", "query_document_pairs", "no_tie_breaking", "DS1")] == 7
    # exclusive: query 1; DS2': queries 5, 7, 8 under both strategies
    assert v[("train", "query_document_pairs", "exclusive", "DS1")] == 3
    for s in ("no_tie_breaking", "exclusive"):
        assert v[("train", "queries", s, "DS2'")] == 3
        assert v[("train", "relevant_documents", s, "DS2'")] == 3
        assert v[("train", "query_document_pairs", s, "DS2'")] == 6
    assert v[("vali", "queries", "", "DS")] == 14
    wide = S.table2_wide(t)
    assert list(wide.columns[:3]) == ["partition", "statistic", "DS"]
    assert wide.shape == (9, 3 + 4)
    assert wide.iloc[0, 3] == 2  # train queries, without tie-breaking, DS1
    paper = S.table2_wide(S.paper_table2())
    assert paper.loc[0, "DS"] == 19245 and paper.shape == (9, 11)


def test_two_clients_reduce_to_ds1_and_ds2_prime(splits):
    for strat in STRATS:
        ref = S.make_split(splits, 1, strat, merge_size=2)
        gen = S.make_clients(splits, [{1}, None], strat, merge_size=2)
        for a, b in zip(ref.clients, gen.clients):
            for p in ("train", "vali", "test", "merge"):
                assert qids(getattr(a, p)) == qids(getattr(b, p)), (strat, p)
        # An explicit complement with the exclusive rule is DS2' minus the queries without
        # any relevant document (those only the rest client takes).
        explicit = S.make_clients(splits, [{1}, {2, 3}], [strat, "exclusive"], merge_size=0)
        assert qids(explicit.clients[1].train) == qids(ref.clients[1].train) - {8}


def test_three_clients(splits):
    ns = S.make_clients(splits, [{1}, 2, None], "no_tie_breaking", merge_size=1,
                        merge_overflow="overlap")
    c1, c2, c3 = ns.clients
    assert qids(c1.train) == {1, 2}
    assert qids(c2.train) == {4}  # 2 strictly dominates
    assert qids(c3.train) == {7}  # no document of 1 or 2
    # every training query in at most one client; query 3 (tie) and 5 (tie 2-3) in none
    owned = [q for c in ns.clients for q in qids(c.train)]
    assert len(owned) == len(set(owned)) and not set(owned) & {3, 5}
    # The pool queries (key k of category 1, k + 1 of category 2) now belong to client2;
    # the validation pool is 103 (tie 1-2) and 105 (tie 2-3). Client1 takes the fewest
    # relevant documents of 1 (105), client2 of 2 (1 each: smaller id, 103), the rest
    # client the most relevant documents of 1 and 2 (103: 2).
    assert qids(ns.merge_pool) == {103, 105}
    assert [qids(c.merge) for c in ns.clients] == [{105}, {103}, {103}]
    assert c2.categories == frozenset({2})
    assert ns.category == 1 and len(ns.statistics().client.unique()) == 3


def test_paper_splits_api(splits):
    ns = S.paper_splits(splits, categories=(1, 1, 2), merge_size=1)
    assert list(ns) == ["Split1", "Split2", "Split3"]
    assert [(v.name, v.category, v.strategy) for v in ns.values()] == [
        ("Split1", 1, "exclusive"), ("Split2", 1, "no_tie_breaking"), ("Split3", 2, "no_tie_breaking")]
    c = ns["Split1"].clients[0]
    assert isinstance(c, S.Client) and c.name == "client1" and isinstance(c.merge, Dataset)
    assert ns["Split2"].clients[1].name == "client2"
    summary = S.merge_summary(ns)
    assert len(summary) == 6 and (summary.merge_queries == 1).all()
    pool = S.merge_pool_frame(ns["Split2"])
    assert set(pool.client) <= {"client1", "client2", "unused"} and (pool.client != "unused").sum() == 2
    # Every split's statistics and pools as one frame each, and notebook 02's scalars from them.
    stats = S.client_statistics(ns)
    assert list(stats.split.unique()) == list(ns) and S.merge_pools(ns).split.unique().tolist() == list(ns)
    three = S.make_clients(splits, [{1}, {2}], name="three").statistics()
    metrics = S.split_metrics(S.table2(splits, categories=(1, 2)), ns, summary, stats, three, ("1", 1, 2))
    assert metrics["split1_category"] == 1 and metrics["split1_train_ds1"] == ns["Split1"].clients[0].train.n_queries
    assert metrics["train_queries"] == splits.train.n_queries and metrics["merge_shrunk"] is False
    assert metrics["split2_merge_client2"] == 1 and len(metrics) == 16


def test_errors_name_the_parameter(splits):
    with pytest.raises(ValueError, match="strategy='greedy'"):
        S.make_split(splits, 1, "greedy")
    with pytest.raises(ValueError, match="category=42"):
        S.make_split(splits, 42, "exclusive")
    with pytest.raises(ValueError, match=r"category_sets\[1\]"):
        S.make_clients(splits, [{1}, {1, 2}])
    with pytest.raises(ValueError, match="merge_size"):
        S.make_split(splits, 1, "exclusive", merge_size="all")
    with pytest.raises(ValueError, match="categories"):
        S.paper_splits(splits, categories=(1, 2))
    no_cat = Splits(*(d.with_category(None) for d in splits))
    with pytest.raises(ValueError, match="category_feature"):
        S.make_split(no_cat, 1, "exclusive")


def test_shrinking_keeps_the_proportions():
    assert S._merge_sizes([2, 6], 4, "shrink") == ([1, 3], S._merge_sizes([2, 6], 4, "shrink")[1])
    assert "shrunk" in S._merge_sizes([2, 6], 4, "shrink")[1]
    assert S._merge_sizes([2, 6], 10, "shrink") == ([2, 6], None)
    assert S._merge_sizes([2, 6], 4, "overlap")[0] == [2, 4]


def test_initial_split_is_tie_breaking_ds1_and_the_full_ds2(splits):
    ns = S.initial_split(splits, category=1)
    c1, c2 = ns.clients
    assert ns.name == "initial-c1" and ns.strategy == "tie_breaking" and ns.category == 1
    ds1 = {q for q, (_, member, _) in CASES.items() if member[0]}
    assert ds1 == {1, 2, 3}
    # DS2 is every other query: the one another category outranks (4) stays in it, unlike
    # DS2' which drops every query with a relevant document of category 1.
    assert qids(c1.train) == ds1 and qids(c2.train) == set(CASES) - ds1
    assert 4 in qids(c2.train) and 4 not in qids(S.make_split(splits, 1, "tie_breaking").clients[1].train)
    assert qids(c1.test) == {q + 200 for q in ds1}
    assert qids(c2.test) == {q + 200 for q in CASES} - qids(c1.test)
    # The pool queries (category 2 dominates) are DS2 too: nothing is left for D_merge.
    assert qids(c2.vali) == {q + 100 for q in CASES if q not in ds1} | set(POOL)
    assert c1.merge.n_queries == c2.merge.n_queries == 0
    for part in ("train", "vali", "test"):
        total = getattr(splits, part).n_queries
        assert getattr(c1, part).n_queries + getattr(c2, part).n_queries == total, part


def test_alternative_splits_reuse_the_kept_splits(splits):
    kept = S.paper_splits(splits, categories=(1, 1, 2), merge_size=0)
    alt = S.alternative_splits(splits, kept, categories=(1, 2), merge_size=0, min_queries=0)
    assert list(alt) == ["Split2", "Split3", "Split1", "exclusive-c2"]
    assert all(alt[k] is kept[k] for k in ("Split1", "Split2", "Split3"))
    new = alt["exclusive-c2"]
    assert (new.strategy, new.category) == ("exclusive", 2)
    # DS2' depends on the category only: the same queries as Split3's.
    assert qids(new.clients[1].train) == qids(kept["Split3"].clients[1].train)
    with pytest.raises(ValueError, match="2 entries"):
        S.alternative_splits(splits, kept, categories=(1,))
    # No query has all its relevant documents in category 2: by default that configuration
    # is left out, with a warning, rather than failing to train.
    with pytest.warns(UserWarning, match="exclusive-c2 left out"):
        few = S.alternative_splits(splits, kept, categories=(1, 2), merge_size=0)
    assert list(few) == ["Split2", "Split3", "Split1"]


def test_splits_too_small_to_train_are_left_out_with_their_sizes(splits):
    import dataclasses

    ns = S.paper_splits(splits, categories=(1, 1, 2), merge_size=0)
    first, *rest = ns["Split1"].clients
    empty = dataclasses.replace(first, train=first.train.take([]))  # as binned real data can give
    with pytest.warns(UserWarning) as warned:
        kept = S.trainable_splits({**ns, "Split1": dataclasses.replace(ns["Split1"], clients=[empty, *rest])})
    assert any(re.search(r"split Split1 left out: too few queries to train and test it \(client1 train 0", str(w.message))
               for w in warned)
    assert "Split1" not in kept and "Split2" in kept
    assert S.select_splits(kept, "Split1,Split2") == ["Split2"]  # left out above: skipped
    with pytest.raises(ValueError, match="splits_to_run='Split9'"):
        S.select_splits(kept, "Split9")
    with pytest.raises(ValueError, match="none of these splits can be trained"):
        S.select_splits(kept, "Split1")


def test_client_sets_parameter_parses_sets_rest_and_auto():
    from ltrlib.noniid.splits import parse_client_sets

    assert parse_client_sets("11+3/14/rest") == [{11, 3}, {14}, None]
    assert parse_client_sets(" auto ", auto=(11, 14)) == [{11}, {14}, None]
    with pytest.raises(ValueError, match=r"three_client_sets='11/x/rest': 'x' is not categories"):
        parse_client_sets("11/x/rest")


def test_paper_split_setup_resolves_keeps_trainable_and_selects(capsys):
    from ltrlib.data.loading import load_dataset
    from ltrlib.noniid.splits import paper_split_setup

    splits = load_dataset("synthetic", "", "tiny", 0)
    setup = paper_split_setup(splits, "auto", "auto", "14", seed=0, splits_to_run="Split3,Split2")
    assert setup.categories[0] == setup.categories[1] and setup.categories[2] == 14
    assert f"split categories: Split1 {setup.categories[0]}, " in capsys.readouterr().out
    assert setup.names == [n for n in ("Split3", "Split2") if n in setup.splits]
    assert list(setup.selected()) == setup.names
    with pytest.raises(ValueError, match="splits_to_run='Split9'"):
        paper_split_setup(splits, splits_to_run="Split9")


def test_load_paper_splits_is_load_dataset_then_paper_split_setup(capsys):
    """The notebooks' one call gives what its two parts give, from the same parameters."""
    from ltrlib.data.loading import load_dataset
    from ltrlib.noniid.splits import load_paper_splits, paper_split_setup

    kw = dict(seed=3, merge_size="vali_queries_half", merge_overflow="overlap", splits_to_run="Split2,Split3")
    expected = paper_split_setup(load_dataset("synthetic", "", "tiny", 3), "auto", "auto", "auto", **kw)
    expected_out = capsys.readouterr().out
    setup = load_paper_splits("synthetic", "", "tiny", 3, ("auto", "auto", "auto"), category_feature="",
                              category_bins=0, **{k: v for k, v in kw.items() if k != "seed"})
    assert capsys.readouterr().out == expected_out
    assert setup.categories == expected.categories and setup.names == expected.names
    assert np.array_equal(setup.data.train.X, expected.data.train.X)
    for name, ns in expected.splits.items():
        for got, want in zip(setup.splits[name].clients, ns.clients):
            for part in ("train", "vali", "test", "merge"):
                assert list(getattr(got, part).query_ids) == list(getattr(want, part).query_ids), (name, part)


def test_load_split_data_resolves_categories_and_refuses_a_bad_count(capsys):
    from ltrlib.noniid.splits import load_split_data

    data, categories = load_split_data("synthetic", "", "tiny", 0, ("auto", "auto", "14"), show=False)
    assert categories[0] == categories[1] and categories[2] == 14 and data.train.n_queries == 150
    assert capsys.readouterr().out == ""
    load_split_data("synthetic", "", "tiny", 0, ("auto", "auto", "14"))
    assert capsys.readouterr().out == f"split categories: Split1 {categories[0]}, Split2 {categories[1]}, Split3 14\n"
    with pytest.raises(ValueError, match=r"categories needs 3 entries"):
        load_split_data("synthetic", "", "tiny", 0, ("auto", "auto"))
    with pytest.raises(ValueError, match="category_feature does not apply to the synthetic dataset"):
        load_split_data("synthetic", "", "tiny", 0, category_feature="f220")
