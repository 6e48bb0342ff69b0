"""Type 1 non-IID splits (§3.2, §5.2 of the non-IID paper), D_merge, and Table 2.

The paper's reading, implemented here
-------------------------------------
For a category ``c`` the partition DS1 holds, by strategy (§5.2):

* ``"tie_breaking"``: queries whose §3.1 category (with the tie-breaking chain) is ``c``;
* ``"no_tie_breaking"``: queries where ``c`` has strictly more relevant documents than
  every other category;
* ``"exclusive"``: queries whose relevant documents all have category ``c``.

DS2' holds the queries with *no document of category* ``c``, of any label: "a filtered
variant of DS2 obtained by excluding from DS2 all the documents belonging to category 11
... by eliminating all queries of DS2 containing those specific query-document pairs"
(§5.2). The Split1 description says "did not contain any relevant documents of category
11" instead, but Table 2 settles it: DS2' holds 7% of the training queries with 65
documents per query against 106 overall. Removing every query with *any* category-11
document selects short lists, as printed; removing only those with a relevant one would
leave 93% of Istella-S's queries holding a relevant category-11 document while category
11 leads in only 18% of them, and would not favour short lists. DS2' is the same for
every strategy, as the paper says, and disjoint from DS1 under every strategy (a DS1
query has a relevant ``c`` document). The same rules apply to training, validation and
test.

D_merge (§5.2): the validation queries in neither DS1 nor DS2' form a pool, sorted by
their number of relevant documents of ``c`` (ties by query id, so the order is
deterministic). Client 1, whose model saw many ``c`` documents, takes the ``|Q1|/2``
queries with the fewest; client 2 the ``|Q2|/2`` with the most. ``|Qi|`` defaults to
client i's number of *training* queries ("M_1 was trained on |Q_1| queries"), halved and
rounded down (``merge_size="train_queries_half"``). When the pool is too small for both,
both sizes shrink in proportion (``merge_overflow="shrink"``, recorded in ``notes``), so the
two D_merge sets stay disjoint as the two ends of one sorted list.

Generalisation to n clients (:func:`make_clients`)
--------------------------------------------------
Client i is given a set of categories ``S_i`` (pairwise disjoint) and a strategy:
``tie_breaking`` (the §3.1 category is in ``S_i``), ``no_tie_breaking`` (one category has
strictly the most relevant documents and it is in ``S_i``) or ``exclusive`` (every relevant
document is in ``S_i``). For a singleton set these are the DS1 rules above. At most one
client may take "the rest" (``None``): the categories of no other client. With the
``exclusive`` rule (the default) it holds the queries with no document of any other
client's categories, exactly DS2'; with another rule it holds the queries whose relevant
documents put them in the rest by that rule, plus the queries without relevant documents.
The paper's split is therefore ``make_clients(splits, [{c}, None], strategy)``.
Disjoint sets make the clients' queries disjoint whatever the strategies (a query has one
strictly dominant / assigned category, and "all relevant documents in S_i" implies it).
Validation queries in no client form the D_merge pool; a client with a set takes the
pool queries with the fewest relevant documents in its set, the rest client those with the
most relevant documents in the other clients' sets (both: stable order by query id). With
more than two clients two D_merge sets may share queries (different clients sort by
different keys); with two they are the two ends of one list and never do.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ltrlib import sessions
from ltrlib.data.dataset import Dataset, Splits
from ltrlib.data.loading import load_dataset
from ltrlib.noniid.categories import (
    AUTO,
    STRATEGIES,
    CategoryCounts,
    assign_query_categories,
    category_counts,
    category_universe,
    resolve_split_categories,
)

#: What ``|Q_i|`` means for the D_merge size ``|Q_i| / 2``.
MERGE_SIZES = ("train_queries_half", "vali_queries_half")
#: What to do when the D_merge pool is smaller than the sizes asked for.
MERGE_OVERFLOWS = ("shrink", "overlap", "error")
#: The paper's three splits (§5.2): name -> strategy; categories are parameters.
PAPER_SPLITS = {"Split1": "exclusive", "Split2": "no_tie_breaking", "Split3": "no_tie_breaking"}
STRATEGY_LABELS = {
    "tie_breaking": "Partitioning with tie-breaking",
    "no_tie_breaking": "Partitioning without tie-breaking",
    "exclusive": "Exclusive partitioning",
}


def _check_strategy(strategy: str, parameter: str = "strategy") -> str:
    if strategy not in STRATEGIES:
        raise ValueError(f"{parameter}={strategy!r} is not a strategy; use one of {STRATEGIES}")
    return strategy


# --------------------------------------------------------------------------- masks


def set_mask(cc: CategoryCounts, assigned: np.ndarray, categories, strategy: str,
             parameter: str = "category") -> np.ndarray:
    """Queries whose category, by ``strategy``, lies in the set ``categories``."""
    _check_strategy(strategy)
    cols = cc.columns(categories, parameter)
    C = cc.count
    n_rel = C.sum(axis=1)
    if strategy == "tie_breaking":
        return np.isin(assigned, cc.categories[cols])
    if strategy == "no_tie_breaking":
        top = C.max(axis=1, initial=0)
        unique_top = ((C == top[:, None]).sum(axis=1) == 1) & (top > 0)
        return unique_top & cols[np.argmax(C, axis=1)]
    return (n_rel > 0) & (C[:, cols].sum(axis=1) == n_rel)  # exclusive


def ds1_mask(cc: CategoryCounts, assigned: np.ndarray, category: int, strategy: str) -> np.ndarray:
    """DS1 of ``category`` under ``strategy`` (see the module docstring)."""
    return set_mask(cc, assigned, [category], strategy)


def ds2_prime_mask(cc: CategoryCounts, category: int) -> np.ndarray:
    """DS2': queries with no document of ``category``, of any label (module docstring)."""
    return cc.doc_count[:, cc.column(category)] == 0


def strategy_query_counts(data: Splits | Dataset, seed: int = 0) -> pd.DataFrame:
    """Queries in DS1 (per strategy) and DS2' for every category and partition.

    Columns: split, category, strategy (the three DS1 strategies, then "DS2'"), queries.
    The interactive view of notebook 01 filters this frame by category.
    """
    parts = [("all", data)] if isinstance(data, Dataset) else data.items()
    cats = category_universe(data)
    rows = []
    for part, ds in parts:
        cc = category_counts(ds, cats)
        assigned = assign_query_categories(ds, seed, cc).category.to_numpy()
        for c in cats:
            for s in STRATEGIES:
                rows.append((part, int(c), s, int(ds1_mask(cc, assigned, int(c), s).sum())))
            rows.append((part, int(c), "DS2'", int(ds2_prime_mask(cc, int(c)).sum())))
    return pd.DataFrame(rows, columns=["split", "category", "strategy", "queries"])


# --------------------------------------------------------------------------- types


@dataclass(eq=False)
class Client:
    """One client of a non-IID split: its local data and its private D_merge.

    ``categories`` is the client's category set, or None for the client holding the rest
    (DS2' in the paper's splits). ``merge_requested`` is the D_merge size asked for before
    any shrinking.
    """

    name: str
    train: Dataset
    vali: Dataset | None
    test: Dataset | None
    merge: Dataset
    categories: frozenset[int] | None
    strategy: str
    merge_requested: int = 0

    def __repr__(self) -> str:
        parts = ", ".join(f"{k}={getattr(self, k).n_queries}q" for k in ("train", "vali", "test", "merge")
                          if getattr(self, k) is not None)
        cats = "rest" if self.categories is None else sorted(self.categories)
        return f"Client({self.name!r}, categories={cats}, {self.strategy}: {parts})"


@dataclass(eq=False)
class NonIIDSplit:
    """A Type 1 non-IID split of a collection into clients.

    ``category`` and ``strategy`` describe client 1 (the paper's DS1); ``full`` is the whole
    collection (DS). ``notes`` records any adjustment made (a shrunk D_merge).
    """

    name: str
    category: int | None
    strategy: str
    full: Splits
    clients: list[Client]
    seed: int = 0
    merge_size: str | int = "train_queries_half"
    merge_pool: Dataset | None = None
    notes: list[str] = field(default_factory=list)

    def __repr__(self) -> str:
        return (f"NonIIDSplit({self.name!r}, category={self.category}, strategy={self.strategy!r}, "
                f"clients={self.clients})")

    def _repr_html_(self) -> str:
        # In a notebook a split shows as its clients' sizes, not as a one-line repr.
        return splits_table({self.name: self}).to_html(index=False)

    def statistics(self) -> pd.DataFrame:
        """Tidy sizes: split, client, part (train/vali/test/merge), queries, relevant_documents,
        query_document_pairs, own_category_share (share of the relevant documents in the
        client's categories; for the rest client, outside every other client's categories)."""
        explicit = set().union(*(c.categories for c in self.clients if c.categories is not None))
        rows = []
        for cl in self.clients:
            for part in ("train", "vali", "test", "merge"):
                ds = getattr(cl, part)
                if ds is None:
                    continue
                st = ds.stats()
                rel = ds.y > 0
                own = (np.isin(ds.category[rel], list(cl.categories)) if cl.categories is not None
                       else ~np.isin(ds.category[rel], list(explicit)))
                rows.append({"split": self.name, "client": cl.name, "part": part, **st,
                             "own_category_share": float(own.mean()) if rel.any() else np.nan})
        return pd.DataFrame(rows)


# --------------------------------------------------------------------------- construction


def _normalise_sets(category_sets, universe: np.ndarray) -> list[frozenset[int] | None]:
    if len(category_sets) < 2:
        raise ValueError(f"category_sets needs at least 2 clients, got {len(category_sets)}")
    out: list[frozenset[int] | None] = []
    seen: dict[int, int] = {}
    known = set(universe.tolist())
    for i, s in enumerate(category_sets):
        if s is None or (isinstance(s, str) and s == "rest"):
            if None in out:
                raise ValueError("category_sets: at most one client may take the rest (None)")
            out.append(None)
            continue
        fs = frozenset(int(c) for c in ([s] if np.isscalar(s) else s))
        if not fs:
            raise ValueError(f"category_sets[{i}] is empty")
        missing = sorted(fs - known)
        if missing:
            raise ValueError(f"category_sets[{i}] has categories {missing} that no document of "
                             f"the data carries (categories: {sorted(known)})")
        for c in fs:
            if c in seen:
                raise ValueError(f"category {c} is in category_sets[{seen[c]}] and "
                                 f"category_sets[{i}]; the sets must be disjoint")
            seen[c] = i
        out.append(fs)
    return out


def _merge_sizes(requested: list[int], pool: int, overflow: str) -> tuple[list[int], str | None]:
    total = sum(requested)
    if total <= pool:
        return requested, None
    if overflow == "error":
        raise ValueError(f"D_merge sizes {requested} exceed the pool of {pool} validation "
                         "queries; pass merge_overflow='shrink' or 'overlap', or a smaller merge_size")
    if overflow == "overlap":
        sizes = [min(k, pool) for k in requested]
        return sizes, f"D_merge sizes {requested} exceed the pool ({pool}); capped at the pool, sets may overlap"
    sizes = [k * pool // total for k in requested]
    return sizes, f"D_merge sizes {requested} exceed the pool ({pool}); shrunk in proportion to {sizes}"


def parse_client_sets(spec: str, auto: tuple[int, ...] = ()) -> list[frozenset[int] | None]:
    """Notebook 02's ``three_client_sets`` in `make_clients`'s form: one category set per
    client, split by ``/``, members joined by ``+``, and ``rest`` for the client taking the
    rest (None). ``"11+3/14/rest"`` -> ``[{11, 3}, {14}, None]``; ``"auto"`` is ``auto``'s
    categories, one per client, and the rest. ValueError naming the parameter otherwise."""
    if spec.strip().lower() == "auto":
        return [frozenset({int(c)}) for c in auto] + [None]
    sets: list[frozenset[int] | None] = []
    for part in spec.split("/"):
        if part.strip().lower() == "rest":
            sets.append(None)
            continue
        try:
            sets.append(frozenset(int(c) for c in part.split("+")))
        except ValueError:
            raise ValueError(f"three_client_sets={spec!r}: {part.strip()!r} is not categories joined "
                             "by '+' or 'rest'; e.g. 11+3/14/rest") from None
    return sets


def _check_merge_settings(splits: Splits, merge_size, merge_overflow: str) -> None:
    if splits.vali is None:
        raise ValueError("make_clients needs a validation partition: D_merge is drawn from it")
    if merge_overflow not in MERGE_OVERFLOWS:
        raise ValueError(f"merge_overflow={merge_overflow!r}; use one of {MERGE_OVERFLOWS}")
    if not (merge_size in MERGE_SIZES or (isinstance(merge_size, (int, np.integer))
                                          and not isinstance(merge_size, bool) and merge_size >= 0)):
        raise ValueError(f"merge_size={merge_size!r}; use one of {MERGE_SIZES} or a non-negative int")


def _client_strategies(sets: list[frozenset[int] | None], strategy: str | list[str],
                       rest_strategy: str) -> list[str]:
    """One checked strategy per client; an error names the parameter the bad one came from."""
    if isinstance(strategy, str):
        strategies = [rest_strategy if s is None else strategy for s in sets]
    else:
        strategies = list(strategy)
        if len(strategies) != len(sets):
            raise ValueError(f"strategy has {len(strategies)} entries for {len(sets)} category_sets")
    for i, s in enumerate(strategies):
        _check_strategy(s, f"strategy[{i}]" if not isinstance(strategy, str) else
                        ("rest_strategy" if sets[i] is None else "strategy"))
    return strategies


def _client_masks(cc: CategoryCounts, assigned: np.ndarray, sets, strategies: list[str],
                  explicit: frozenset[int], rest: frozenset[int]) -> list[np.ndarray]:
    """Each client's queries of one partition (the rules of the module docstring)."""
    has_rel = cc.n_relevant > 0
    masks = []
    for s, strat in zip(sets, strategies):
        if s is None and strat == "exclusive":  # DS2': no document of the others' categories
            m = cc.docs_in_set(explicit) == 0
        elif s is None:
            m = set_mask(cc, assigned, rest, strat) if rest else np.zeros(cc.query_ids.size, bool)
            m = m | ~has_rel
        else:
            m = set_mask(cc, assigned, s, strat)
        masks.append(m)
    return masks


def _partition_clients(splits: Splits, universe: np.ndarray, sets, strategies: list[str],
                       explicit: frozenset[int], seed: int, names: list[str], name: str):
    """Every partition cut into the clients' datasets, ``{part: [one per client]}``, and the
    D_merge pool: the validation data, its category counts, and the pool's query indices."""
    rest = frozenset(universe.tolist()) - explicit
    parts: dict[str, list[Dataset | None]] = {}
    pool = None
    for part, ds in splits.items():
        cc = category_counts(ds, universe)
        assigned = assign_query_categories(ds, seed, cc).category.to_numpy()
        masks = _client_masks(cc, assigned, sets, strategies, explicit, rest)
        owned = np.sum(masks, axis=0)
        if np.any(owned > 1):  # cannot happen with disjoint sets; guard the invariant
            raise RuntimeError(f"{part}: {int((owned > 1).sum())} queries fall in two clients")
        parts[part] = [ds.take(np.flatnonzero(m), name=f"{name}/{nm}/{part}") for m, nm in zip(masks, names)]
        if part == "vali":
            # Queries without relevant documents carry no ranking signal (NDCG is 1 whatever
            # the scores); without a rest client they are dropped rather than pooled.
            in_pool = (owned == 0) & (cc.n_relevant > 0)
            pool = (ds, cc, np.flatnonzero(in_pool))
    return parts, pool


def _requested_merge_sizes(merge_size: str | int, parts: dict[str, list], n_clients: int) -> list[int]:
    if merge_size == "train_queries_half":
        return [p.n_queries // 2 for p in parts["train"]]
    if merge_size == "vali_queries_half":
        return [p.n_queries // 2 for p in parts["vali"]]
    return [int(merge_size)] * n_clients


def _merge_indices(vcc: CategoryCounts, pool_idx: np.ndarray, sets, sizes: list[int],
                   explicit: frozenset[int]) -> list[np.ndarray]:
    """Each client's D_merge as pool query indices: the fewest relevant documents in its
    set first, the rest client the most in the others' sets (module docstring)."""
    pool_qids = vcc.query_ids[pool_idx]
    merges = []
    for s, k in zip(sets, sizes):
        key = vcc.in_set(explicit if s is None else s)[pool_idx]
        order = pool_idx[np.lexsort((pool_qids, key))]  # by key, then query id
        # The rest client takes the tail of the same sorted list: the paper's "most".
        merges.append(order[order.size - k:] if s is None else order[:k])
    return merges


def make_clients(
    splits: Splits,
    category_sets,
    strategy: str | list[str] = "no_tie_breaking",
    *,
    rest_strategy: str = "exclusive",
    name: str = "clients",
    seed: int = 0,
    merge_size: str | int = "train_queries_half",
    merge_overflow: str = "shrink",
) -> NonIIDSplit:
    """A non-IID split into ``len(category_sets)`` clients (see the module docstring).

    ``category_sets``: one set of category ids per client (an int is a singleton), or None
    for the one client taking the rest. ``strategy``: one strategy for every client with a
    set, or a list with one per client; ``rest_strategy`` is the rest client's rule when
    ``strategy`` is a single string (``"exclusive"`` gives the paper's DS2').
    ``seed`` drives the §3.1 random tie-break (``tie_breaking`` strategy only).
    ``merge_size``: ``"train_queries_half"`` (``|Q_i|/2`` with ``Q_i`` the client's training
    queries), ``"vali_queries_half"`` (its validation queries), or an int per client.
    ``merge_overflow``: ``"shrink"`` both sizes in proportion when the pool is too small,
    ``"overlap"`` cap each at the pool, or ``"error"``.
    """
    _check_merge_settings(splits, merge_size, merge_overflow)
    universe = category_universe(splits)
    sets = _normalise_sets(list(category_sets), universe)
    strategies = _client_strategies(sets, strategy, rest_strategy)
    explicit = frozenset().union(*(s for s in sets if s is not None))
    n = len(sets)
    names = [f"client{i + 1}" for i in range(n)]
    parts, (vds, vcc, pool_idx) = _partition_clients(splits, universe, sets, strategies, explicit,
                                                     seed, names, name)
    requested = _requested_merge_sizes(merge_size, parts, n)
    sizes, note = _merge_sizes(requested, pool_idx.size, merge_overflow)
    merges = _merge_indices(vcc, pool_idx, sets, sizes, explicit)
    clients = []
    for i in range(n):
        m = vds.take(np.sort(merges[i]), name=f"{name}/{names[i]}/merge")
        clients.append(Client(
            name=names[i], train=parts["train"][i], vali=parts.get("vali", [None] * n)[i],
            test=parts.get("test", [None] * n)[i], merge=m, categories=sets[i],
            strategy=strategies[i], merge_requested=requested[i],
        ))
    first = sets[0]
    return NonIIDSplit(
        name=name,
        category=next(iter(first)) if first is not None and len(first) == 1 else None,
        strategy=strategies[0], full=splits, clients=clients, seed=seed, merge_size=merge_size,
        merge_pool=vds.take(pool_idx, name=f"{name}/merge_pool"), notes=[note] if note else [],
    )


def make_split(
    splits: Splits,
    category: int = 11,
    strategy: str = "no_tie_breaking",
    name: str | None = None,
    seed: int = 0,
    merge_size: str | int = "train_queries_half",
    merge_overflow: str = "shrink",
) -> NonIIDSplit:
    """The paper's two-client split: client 1 = DS1 of ``category`` by ``strategy``,
    client 2 = DS2'; each with its D_merge from the validation pool (module docstring)."""
    _check_strategy(strategy)
    universe = category_universe(splits)
    if int(category) not in set(universe.tolist()):
        raise ValueError(f"category={category!r} is not a document category of this data "
                         f"(categories: {universe.tolist()})")
    return make_clients(splits, [{int(category)}, None], [strategy, "exclusive"],
                        name=name or f"{strategy}-c{category}", seed=seed,
                        merge_size=merge_size, merge_overflow=merge_overflow)


def paper_splits(
    splits: Splits,
    categories: tuple[int, int, int] = (11, 11, 14),
    seed: int = 0,
    merge_size: str | int = "train_queries_half",
    merge_overflow: str = "shrink",
) -> dict[str, NonIIDSplit]:
    """Split1 (exclusive, categories[0]), Split2 and Split3 (without tie-breaking,
    categories[1] and categories[2]), as chosen in §5.2."""
    if len(categories) != 3:
        raise ValueError(f"categories needs 3 entries (Split1, Split2, Split3), got {categories!r}")
    return {
        nm: make_split(splits, c, strat, nm, seed, merge_size, merge_overflow)
        for (nm, strat), c in zip(PAPER_SPLITS.items(), categories)
    }


def initial_split(
    splits: Splits,
    category: int = 11,
    name: str | None = None,
    seed: int = 0,
) -> NonIIDSplit:
    """The paper's *initial* split (§3.2, Table 1): DS1 = the queries whose §3.1 category,
    with the tie-breaking chain, is ``category``; DS2 = every other query (the full DS2, not
    DS2': queries with relevant documents of ``category`` that another category outranks
    stay in it, and so do queries without relevant documents).

    DS1 and DS2 partition every part, so no validation query is left for a D_merge pool:
    both clients' ``merge`` sets are empty (Table 1 merges nothing). ``seed`` drives the
    §3.1 random tie-break. Client 2 is the rest client with the ``tie_breaking`` rule:
    its §3.1 category is not ``category``.
    """
    universe = category_universe(splits)
    if int(category) not in set(universe.tolist()):
        raise ValueError(f"category={category!r} is not a document category of this data "
                         f"(categories: {universe.tolist()})")
    return make_clients(splits, [{int(category)}, None], ["tie_breaking", "tie_breaking"],
                        name=name or f"initial-c{int(category)}", seed=seed, merge_size=0,
                        merge_overflow="shrink")


def initial_splits(splits: Splits, category: int = 11, seed: int = 0,
                   min_queries: int = 1) -> dict[str, NonIIDSplit]:
    """`initial_split` by name, as Table 1 takes it; empty when one of its clients has fewer
    than ``min_queries`` training, validation or test queries (real data whose categories put
    every query on one side), with a warning naming the sizes (`trainable_splits`)."""
    ns = initial_split(splits, category, seed=seed)
    return trainable_splits({ns.name: ns}, min_queries, what="Table 1's initial split")


#: Table 3's four configurations, in the paper's order: (strategy, index into categories).
TABLE3_CONFIGURATIONS = (("no_tie_breaking", 0), ("no_tie_breaking", 1),
                         ("exclusive", 0), ("exclusive", 1))


def alternative_splits(
    splits: Splits,
    kept: dict[str, NonIIDSplit] | None = None,
    categories: tuple[int, int] = (11, 14),
    seed: int = 0,
    merge_size: str | int = "train_queries_half",
    merge_overflow: str = "shrink",
    min_queries: int = 2,
) -> dict[str, NonIIDSplit]:
    """Table 3's splits: without tie-breaking and exclusive, on each of ``categories``,
    in the paper's order (no-tie c0, no-tie c1, exclusive c0, exclusive c1).

    A configuration equal (same category and strategy) to one of the ``kept`` splits
    (`paper_splits`: Split1 = exclusive 11, Split2 = no-tie 11, Split3 = no-tie 14) *is*
    that split, under its name, so models trained for it are reused; the others are made
    with `make_split` and named ``"<strategy>-c<category>"`` (``exclusive-c14``). A new
    configuration whose DS1 has fewer than ``min_queries`` training, validation or test
    queries (a rare category's exclusive partition on other data) cannot be trained or
    tested: it is left out with a warning naming its sizes, so Table 3 only lacks its block.
    The same holds when its DS2' is that small (a category that holds nearly every query).
    """
    if len(categories) != 2:
        raise ValueError(f"categories needs 2 entries (Table 3's two categories), got {categories!r}")
    kept = dict(kept or {})
    out: dict[str, NonIIDSplit] = {}
    for strategy, i in TABLE3_CONFIGURATIONS:
        c = int(categories[i])
        same = next((nm for nm, ns in kept.items()
                     if ns.category == c and ns.strategy == strategy and len(ns.clients) == 2), None)
        if same is not None:
            out[same] = kept[same]
        else:
            ns = make_split(splits, c, strategy, None, seed, merge_size, merge_overflow)
            out.update(trainable_splits({ns.name: ns}, min_queries, what="Table 3 configuration"))
    return out


def _small_parts(ns: NonIIDSplit, min_queries: int) -> dict[str, int]:
    """The parts (``"client2 train"``) of ``ns`` with fewer than ``min_queries`` queries."""
    return {f"{c.name} {p}": getattr(c, p).n_queries for c in ns.clients
            for p in ("train", "vali", "test") if getattr(c, p).n_queries < min_queries}


def trainable_splits(nsplits: dict[str, NonIIDSplit], min_queries: int = 1,
                     what: str = "split") -> dict[str, NonIIDSplit]:
    """``nsplits`` without the splits that cannot be trained and tested: those with a client
    holding fewer than ``min_queries`` training, validation or test queries (on other data a
    category's exclusive partition can be empty, e.g. binned categories of a real collection,
    and LightGBM cannot train on no rows). Each is left out with a warning naming its sizes
    (``what`` says which kind of split it is); the tables then lack its rows. The default
    keeps any split with a query in every part, as the tiny synthetic scale has (Split1's
    DS1: 1 training query)."""
    import warnings

    kept = {}
    for name, ns in nsplits.items():
        small = _small_parts(ns, min_queries)
        if small:
            sizes = ", ".join(f"{part} {n}" for part, n in small.items())
            warnings.warn(f"{what} {name} left out: too few queries to train and test it ({sizes}; "
                          f"at least {min_queries} needed in every part)", stacklevel=2)
        else:
            kept[name] = ns
    return kept


def select_splits(nsplits: dict[str, NonIIDSplit], splits_to_run: str) -> list[str]:
    """The names in ``splits_to_run`` (``"Split1,Split3"``) among ``nsplits``; a paper split
    that `trainable_splits` left out is skipped. ValueError naming the parameter for an
    unknown name, or when no split is left."""
    names = sessions.parse_list(splits_to_run, name="splits_to_run", allow_empty=True)
    bad = [s for s in names if s not in nsplits and s not in PAPER_SPLITS]
    if not names or bad:
        raise ValueError(f"splits_to_run={splits_to_run!r}: unknown or no split names {bad}; "
                         f"choose from {list(PAPER_SPLITS)}, comma-separated")
    kept = [s for s in names if s in nsplits]
    if not kept:
        raise ValueError(f"splits_to_run={splits_to_run!r}: none of these splits can be trained on this "
                         f"data (each was left out, for the reason said with it); choose other split categories")
    return kept


@dataclass(frozen=True)
class PaperSplitSetup:
    """Where notebooks 03-05 start from (`load_paper_splits`, `paper_split_setup`)."""

    data: Splits  # the collection the splits are made of
    categories: tuple[int, int, int]  # of Split1, Split2, Split3, "auto" resolved
    splits: dict[str, NonIIDSplit]  # the paper splits with trainable clients
    names: list[str]  # those of them in ``splits_to_run``, in its order

    def selected(self) -> dict[str, NonIIDSplit]:
        return {name: self.splits[name] for name in self.names}


def _show_categories(categories: tuple[int, int, int]) -> None:
    # Printed: "auto" may pick other categories than the paper's 11 and 14 on other data.
    print("split categories: " + ", ".join(f"{name} {c}" for name, c in zip(PAPER_SPLITS, categories)))


def _setup(data: Splits, categories: tuple[int, int, int], seed: int, merge_size: str | int,
           merge_overflow: str, splits_to_run: str) -> PaperSplitSetup:
    nsplits = trainable_splits(paper_splits(data, categories=categories, seed=seed, merge_size=merge_size,
                                            merge_overflow=merge_overflow))
    return PaperSplitSetup(data, categories, nsplits, select_splits(nsplits, splits_to_run))


def paper_split_setup(data: Splits, split1_category="auto", split2_category="auto", split3_category="auto", *,
                      seed: int = 0, merge_size: str | int = "train_queries_half",
                      merge_overflow: str = "shrink", splits_to_run: str = ",".join(PAPER_SPLITS)) -> PaperSplitSetup:
    """The paper's Split1-3 of ``data`` as notebooks 03-05 take them from their parameters:
    the split categories with ``"auto"`` resolved on the training set (the data's most
    frequent query categories, the paper's reason for 11 and 14; printed, as every notebook
    shows them), the splits whose clients can be trained on (`trainable_splits`, which warns
    about the rest) and the names of ``splits_to_run`` among them (`select_splits`)."""
    categories = resolve_split_categories(data.train, split1_category, split2_category, split3_category,
                                          seed=seed)
    _show_categories(categories)
    return _setup(data, categories, seed, merge_size, merge_overflow, splits_to_run)


def load_split_data(dataset: str = "synthetic", data_dir: str = "", scale: str = "small", seed: int = 0,
                    categories=(AUTO, AUTO, AUTO), *, category_feature: str | int = "",
                    category_bins: int = 0, show: bool = True) -> tuple[Splits, tuple[int, int, int]]:
    """The data of notebooks 02-05 and `ltrlib tune-worker`, from their parameters, and
    their Split1-3 categories: `load_dataset` (an empty ``category_feature`` means none, as
    the notebooks' default says), then ``categories`` with ``"auto"`` resolved on the
    training set (`resolve_split_categories`), printed when ``show``."""
    if len(categories) != 3:
        raise ValueError(f"categories needs 3 entries (Split1, Split2, Split3), got {categories!r}")
    data = load_dataset(dataset, data_dir, scale, seed,
                        category_feature=category_feature or None, category_bins=category_bins)
    resolved = resolve_split_categories(data.train, *categories, seed=seed)
    if show:
        _show_categories(resolved)
    return data, resolved


def load_paper_splits(dataset: str = "synthetic", data_dir: str = "", scale: str = "small", seed: int = 0,
                      categories=(AUTO, AUTO, AUTO), *, category_feature: str | int = "",
                      category_bins: int = 0, merge_size: str | int = "train_queries_half",
                      merge_overflow: str = "shrink",
                      splits_to_run: str = ",".join(PAPER_SPLITS)) -> PaperSplitSetup:
    """Notebooks 03-05's data and splits from their parameters, in one call: the data and
    categories of `load_split_data`, then `paper_split_setup`'s splits (trainable ones only,
    with a warning for the rest) and the names of ``splits_to_run`` among them."""
    data, resolved = load_split_data(dataset, data_dir, scale, seed, categories,
                                     category_feature=category_feature, category_bins=category_bins)
    return _setup(data, resolved, seed, merge_size, merge_overflow, splits_to_run)


# --------------------------------------------------------------------------- summaries


def splits_table(nsplits: dict[str, NonIIDSplit] | list[NonIIDSplit]) -> pd.DataFrame:
    """One row per split and client, as a notebook shows splits: split, strategy (client
    1's), client, categories ("rest" for the client holding the rest), the queries of its
    train, vali, test and merge parts, and the split's notes (a shrunk D_merge) on its
    first row."""
    items = nsplits.values() if isinstance(nsplits, dict) else nsplits
    rows = []
    for ns in items:
        for i, cl in enumerate(ns.clients):
            parts = {p: getattr(cl, p).n_queries if getattr(cl, p) is not None else 0
                     for p in ("train", "vali", "test", "merge")}
            categories = "rest" if cl.categories is None else ", ".join(map(str, sorted(cl.categories)))
            rows.append({"split": ns.name, "strategy": ns.strategy,
                         "client": cl.name, "categories": categories, **parts,
                         "notes": "; ".join(ns.notes) if i == 0 else ""})
    return pd.DataFrame(rows, columns=["split", "strategy", "client", "categories", "train", "vali", "test",
                                       "merge", "notes"])


def _each_split(nsplits: dict[str, NonIIDSplit] | list[NonIIDSplit]):
    """The splits of a ``{name: split}`` mapping or of a list, in order."""
    return nsplits.values() if isinstance(nsplits, dict) else nsplits


def merge_summary(nsplits: dict[str, NonIIDSplit] | list[NonIIDSplit]) -> pd.DataFrame:
    """D_merge per split and client: split, client, train_queries, requested, merge_queries,
    pool_queries, shrunk, and the mean number of relevant documents of client 1's
    categories in the client's D_merge and training queries (the sorting key)."""
    rows = []
    for ns in _each_split(nsplits):
        key_cats = list(ns.clients[0].categories or [])
        for cl in ns.clients:
            def mean_key(ds):
                if ds is None or ds.n_queries == 0:
                    return np.nan
                hit = (ds.y > 0) & np.isin(ds.category, key_cats)
                return float(hit.sum() / ds.n_queries)
            rows.append({
                "split": ns.name, "client": cl.name, "train_queries": cl.train.n_queries,
                "requested": cl.merge_requested, "merge_queries": cl.merge.n_queries,
                "pool_queries": ns.merge_pool.n_queries if ns.merge_pool is not None else np.nan,
                "shrunk": cl.merge.n_queries < cl.merge_requested,
                "key_relevant_per_query_merge": mean_key(cl.merge),
                "key_relevant_per_query_train": mean_key(cl.train),
            })
    return pd.DataFrame(rows)


def merge_pool_frame(ns: NonIIDSplit) -> pd.DataFrame:
    """The D_merge pool, one row per query: qid, key (relevant documents of client 1's
    categories), client (which client's D_merge holds it; "unused" otherwise)."""
    pool = ns.merge_pool
    cats = list(ns.clients[0].categories or [])
    rel = (pool.y > 0) & np.isin(pool.category, cats)
    key = np.add.reduceat(rel.astype(np.int64), pool.offsets[:-1]) if pool.n_queries else np.zeros(0, int)
    frame = pd.DataFrame({"qid": pool.query_ids, "key": key, "client": "unused"})
    for cl in ns.clients:
        frame.loc[frame.qid.isin(cl.merge.query_ids), "client"] = cl.name
    frame["split"] = ns.name
    return frame


def client_statistics(nsplits: dict[str, NonIIDSplit] | list[NonIIDSplit]) -> pd.DataFrame:
    """`NonIIDSplit.statistics` of every split, one frame (split, client, part, ...)."""
    return pd.concat([ns.statistics() for ns in _each_split(nsplits)], ignore_index=True)


def merge_pools(nsplits: dict[str, NonIIDSplit] | list[NonIIDSplit]) -> pd.DataFrame:
    """`merge_pool_frame` of every split, one frame."""
    return pd.concat([merge_pool_frame(ns) for ns in _each_split(nsplits)], ignore_index=True)


def split_metrics(table2_frame: pd.DataFrame, nsplits: dict[str, NonIIDSplit], merge: pd.DataFrame,
                  statistics: pd.DataFrame, three_statistics: pd.DataFrame, categories) -> dict[str, object]:
    """Notebook 02's scalars for ``metrics.json``: the categories the three splits were made
    on (``categories``, "auto" resolved), Table 2's training queries (``table2_frame``,
    `table2`), the clients' training queries, their D_merge sizes (``merge``, `merge_summary`)
    and whether any shrank, Split1's client-1 share of its own category
    (``statistics``, `client_statistics`) and the three-client example's training queries."""
    train = table2_frame[(table2_frame.partition == "train") & (table2_frame.statistic == "queries")]
    queries = {(r.strategy, r.category, r.part): r.value for r in train.itertuples()}
    sizes = merge.set_index(["split", "client"])
    clients = {(s, i): nsplits[s].clients[i].train.n_queries for s, i in
               (("Split1", 0), ("Split1", 1), ("Split2", 0), ("Split3", 0), ("Split3", 1))}
    own = statistics.query("split == 'Split1' and client == 'client1' and part == 'train'").own_category_share
    return {
        **{f"split{i}_category": int(c) for i, c in enumerate(categories, start=1)},
        "train_queries": int(queries[("", -1, "DS")]),
        "split1_train_ds1": int(clients[("Split1", 0)]), "split1_train_ds2_prime": int(clients[("Split1", 1)]),
        "split2_train_ds1": int(clients[("Split2", 0)]),
        "split3_train_ds1": int(clients[("Split3", 0)]), "split3_train_ds2_prime": int(clients[("Split3", 1)]),
        **{f"{s.lower()}_merge_{c}": int(sizes.loc[(s, c), "merge_queries"])
           for s in ("Split1", "Split2") for c in ("client1", "client2")},
        "merge_shrunk": bool(merge.shrunk.any()),
        "split1_client1_own_share_train": float(own.iloc[0]),
        "three_clients_train_queries": int(three_statistics[three_statistics.part == "train"].queries.sum()),
    }


def _part_stats(ds: Dataset, n_rel: np.ndarray, mask: np.ndarray) -> dict[str, int]:
    return {"queries": int(mask.sum()), "relevant_documents": int(n_rel[mask].sum()),
            "query_document_pairs": int(ds.group_sizes[mask].sum())}


def table2(
    splits: Splits,
    categories=(11, 14),
    strategies=("no_tie_breaking", "exclusive"),
    seed: int = 0,
) -> pd.DataFrame:
    """Table 2 as a tidy frame: partition, statistic, strategy, category, part, value.

    ``part`` is "DS" (the whole partition; strategy and category empty), "DS1" or "DS2'".
    Statistics: queries, relevant_documents, query_document_pairs.
    """
    for s in strategies:
        _check_strategy(s, "strategies")
    universe = category_universe(splits)
    for c in categories:
        if int(c) not in set(universe.tolist()):
            raise ValueError(f"categories contains {c!r}, not a document category of this data "
                             f"(categories: {universe.tolist()})")
    rows = []

    def add(partition, stats, strategy, category, part):
        for stat, value in stats.items():
            rows.append((partition, stat, strategy, category, part, value))

    for partition, ds in splits.items():
        cc = category_counts(ds, universe)
        assigned = assign_query_categories(ds, seed, cc).category.to_numpy()
        n_rel = cc.n_relevant
        add(partition, _part_stats(ds, n_rel, np.ones(ds.n_queries, bool)), "", -1, "DS")
        for s in strategies:
            for c in categories:
                add(partition, _part_stats(ds, n_rel, ds1_mask(cc, assigned, int(c), s)), s, int(c), "DS1")
                add(partition, _part_stats(ds, n_rel, ds2_prime_mask(cc, int(c))), s, int(c), "DS2'")
    return pd.DataFrame(rows, columns=["partition", "statistic", "strategy", "category", "part", "value"])


def table2_wide(tidy: pd.DataFrame) -> pd.DataFrame:
    """Table 2 in the paper's layout: rows partition x statistic; columns DS, then per
    strategy and category DS1 and DS2' (flat column names "<strategy> / category c / part")."""
    ds = tidy[tidy.part == "DS"].set_index(["partition", "statistic"]).value.rename("DS")
    rest = tidy[tidy.part != "DS"].copy()
    rest["column"] = [f"{STRATEGY_LABELS.get(s, s)} / category {c} / {p}"
                      for s, c, p in zip(rest.strategy, rest.category, rest.part)]
    order = list(dict.fromkeys(rest.column))
    wide = rest.pivot_table(index=["partition", "statistic"], columns="column", values="value",
                            aggfunc="first")[order]
    out = pd.concat([ds, wide], axis=1)
    part_order = {p: i for i, p in enumerate(dict.fromkeys(tidy.partition))}
    stat_order = {s: i for i, s in enumerate(("queries", "relevant_documents", "query_document_pairs"))}
    out = out.reset_index()
    out = out.sort_values(["partition", "statistic"],
                          key=lambda s: s.map(part_order if s.name == "partition" else stat_order))
    return out.reset_index(drop=True)


#: Table 2 of the paper (Istella-S), as printed. Note: the paper says DS2' is the same for
#: every strategy; its category-14 test columns disagree (201 vs 205 queries).
_PAPER_T2 = {
    # partition: statistic: [DS, ntb-11 DS1, DS2', ntb-14 DS1, DS2', exc-11 DS1, DS2', exc-14 DS1, DS2']
    "train": {
        "queries": [19245, 3385, 1351, 3243, 1148, 270, 1351, 239, 1148],
        "relevant_documents": [230676, 44547, 13723, 40655, 11600, 3287, 13723, 3002, 11600],
        "query_document_pairs": [2043304, 399487, 88169, 333947, 78025, 28166, 88169, 23642, 78025],
    },
    "vali": {
        "queries": [7211, 1031, 589, 1307, 555, 65, 589, 64, 555],
        "relevant_documents": [80592, 13063, 5219, 14592, 5120, 756, 5219, 732, 5120],
        "query_document_pairs": [684076, 116642, 32649, 115036, 34234, 6742, 32649, 5591, 34234],
    },
    "test": {
        "queries": [6562, 531, 211, 612, 201, 25, 211, 26, 205],
        "relevant_documents": [76956, 6831, 2098, 8141, 1981, 176, 2098, 248, 2022],
        "query_document_pairs": [681250, 59632, 15961, 64816, 16722, 2057, 15961, 2594, 17043],
    },
}


def paper_table2() -> pd.DataFrame:
    """The paper's Table 2 (Istella-S) in the tidy layout of :func:`table2`."""
    cols = [("", -1, "DS")] + [(s, c, p) for s in ("no_tie_breaking", "exclusive")
                               for c in (11, 14) for p in ("DS1", "DS2'")]
    rows = [(part, stat, s, c, p, v)
            for part, stats in _PAPER_T2.items() for stat, values in stats.items()
            for (s, c, p), v in zip(cols, values)]
    return pd.DataFrame(rows, columns=["partition", "statistic", "strategy", "category", "part", "value"])
