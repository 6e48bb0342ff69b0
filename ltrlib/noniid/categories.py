"""Query categories from document categories (§3.1 of the non-IID paper) and their statistics.

The faithful reading of §3.1: a query ``q`` takes the most frequent category among its
*relevant* documents ``R_q`` (label > 0). Ties on that count are broken, in order, by

1. the highest sum of relevance labels of the tied categories' relevant documents;
2. the category holding the single most relevant document (the highest label); when the
   highest label occurs in several of the still-tied categories the tie remains;
3. a seeded random choice among the categories still tied.

Queries without any relevant document get no category: :data:`NO_CATEGORY` (-1), with
``decided_by = "none"``. The paper does not say what it does with them; they simply have
no relevant document whose category could be propagated.

Everything is vectorised over the flat arrays of a :class:`~ltrlib.data.Dataset`: one
``(n_queries x n_categories)`` matrix each for relevant-document counts, label sums and
maximum labels, built with ``np.bincount`` on ``query_position * n_categories + column``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ltrlib.data.dataset import Dataset, Splits
from ltrlib.metrics.keys import flatten_metrics

#: The category of a query without relevant documents.
NO_CATEGORY = -1

#: How a query's category was decided, in the order the rules are tried.
DECIDED_BY = ("count", "label_sum", "max_label", "random", "none")

#: The DS1 strategies of §5.2 (see :mod:`ltrlib.noniid.splits`).
STRATEGIES = ("tie_breaking", "no_tie_breaking", "exclusive")

#: The statistics the paper reports for the Istella-S training set (text after Table 1):
#: (queries, printed percentage). The training set has 19,245 queries.
PAPER_TRAIN_QUERIES = 19_245
PAPER_DOMINANCE = {
    "all_in_dominant": (1_939, 0.07),
    "tie": (2_372, 0.12),
    "lead_1_to_3": (8_579, 0.45),
    "lead_over_3": (6_885, 0.36),
}


def _require_categories(ds: Dataset) -> np.ndarray:
    if ds.category is None:
        raise ValueError(
            f"dataset {ds.name!r} has no document categories: load it with "
            "category_feature=<the feature holding the topic category> (e.g. f220 on Istella-S), "
            "or category_feature + category_bins to bin a continuous feature"
        )
    return ds.category


def category_universe(data: Splits | Dataset) -> np.ndarray:
    """Sorted category ids present in any partition (the columns of every count matrix).

    Using one universe for train, validation and test keeps the columns aligned, so a
    category absent from the test part still has a (zero) column there.
    """
    parts = [data] if isinstance(data, Dataset) else [d for _, d in data.items()]
    cats = np.unique(np.concatenate([_require_categories(d) for d in parts]))
    if np.any(cats == NO_CATEGORY):
        raise ValueError(
            f"document category {NO_CATEGORY} is reserved for queries without relevant "
            "documents; recode the category feature (e.g. shift it by one)"
        )
    return cats


@dataclass(frozen=True)
class CategoryCounts:
    """Per query and category: relevant documents, their label sum and their maximum label,
    and documents of any label.

    Rows follow the dataset's query order; columns follow ``categories`` (sorted ids, which
    may be sparse or negative: only their position is used).
    """

    query_ids: np.ndarray  # (n_queries,)
    categories: np.ndarray  # (n_categories,) sorted category ids
    count: np.ndarray  # (n_queries, n_categories) relevant documents
    label_sum: np.ndarray  # (n_queries, n_categories) sum of their labels
    max_label: np.ndarray  # (n_queries, n_categories) highest label, 0 when none
    doc_count: np.ndarray  # (n_queries, n_categories) documents of any label

    @property
    def n_relevant(self) -> np.ndarray:
        return self.count.sum(axis=1)

    def column(self, category: int, parameter: str = "category") -> int:
        """Column of a category id; ValueError naming ``parameter`` if it is not in the data."""
        pos = int(np.searchsorted(self.categories, category))
        if pos >= self.categories.size or self.categories[pos] != category:
            raise ValueError(
                f"{parameter}={category!r} is not a document category of this data "
                f"(categories: {self.categories.tolist()})"
            )
        return pos

    def columns(self, categories, parameter: str = "category") -> np.ndarray:
        """Boolean column mask of a set of category ids."""
        mask = np.zeros(self.categories.size, dtype=bool)
        for c in categories:
            mask[self.column(int(c), parameter)] = True
        return mask

    def in_set(self, categories, parameter: str = "category") -> np.ndarray:
        """Relevant documents per query whose category is in ``categories``."""
        return self.count[:, self.columns(categories, parameter)].sum(axis=1)

    def docs_in_set(self, categories, parameter: str = "category") -> np.ndarray:
        """Documents of any label per query whose category is in ``categories``."""
        return self.doc_count[:, self.columns(categories, parameter)].sum(axis=1)


def category_counts(ds: Dataset, categories: np.ndarray | None = None) -> CategoryCounts:
    """The count, label-sum and max-label matrices of ``ds`` (relevant documents only).

    ``categories`` fixes the columns (default: the categories of ``ds``); pass
    :func:`category_universe` of all partitions to align train, validation and test.
    """
    cat = _require_categories(ds)
    cats = category_universe(ds) if categories is None else np.asarray(categories)
    col = np.searchsorted(cats, cat)
    bad = (col >= cats.size) | (cats[np.minimum(col, cats.size - 1)] != cat)
    if bad.any():
        raise ValueError(
            f"dataset {ds.name!r} has categories {np.unique(cat[bad]).tolist()} missing from "
            f"the categories given ({cats.tolist()})"
        )
    rel = ds.y > 0
    n_q, n_c = ds.n_queries, cats.size
    flat = (ds.doc_query_index[rel] * n_c + col[rel]).astype(np.int64)
    size = n_q * n_c
    count = np.bincount(flat, minlength=size).reshape(n_q, n_c)
    label_sum = np.bincount(flat, weights=ds.y[rel], minlength=size).astype(np.int64).reshape(n_q, n_c)
    max_label = np.zeros(size, dtype=np.int32)
    np.maximum.at(max_label, flat, ds.y[rel])
    every = np.bincount((ds.doc_query_index * n_c + col).astype(np.int64), minlength=size)
    return CategoryCounts(ds.query_ids, cats, count, label_sum, max_label.reshape(n_q, n_c),
                          every.reshape(n_q, n_c))


def _hash_uniform(seed: int, qids: np.ndarray, cats: np.ndarray) -> np.ndarray:
    """A uniform number in [0, 1) per (query id, category), a pure function of the seed.

    A splitmix64 hash rather than a generator stream: a query's random tie-break then does
    not depend on which other queries are in the dataset (train alone, or a subset of it),
    so the same query gets the same category wherever it is computed.
    """
    with np.errstate(over="ignore"):
        x = (qids.astype(np.uint64)[:, None] * np.uint64(0x9E3779B97F4A7C15)
             + cats.astype(np.int64).astype(np.uint64)[None, :] * np.uint64(0xD1B54A32D192ED03)
             + np.uint64(seed & 0xFFFFFFFFFFFFFFFF) * np.uint64(0x94D049BB133111EB))
        x ^= x >> np.uint64(30)
        x *= np.uint64(0xBF58476D1CE4E5B9)
        x ^= x >> np.uint64(27)
        x *= np.uint64(0x94D049BB133111EB)
        x ^= x >> np.uint64(31)
    return (x >> np.uint64(11)).astype(np.float64) / float(1 << 53)


def assign_query_categories(
    ds: Dataset, seed: int = 0, counts: CategoryCounts | None = None
) -> pd.DataFrame:
    """One row per query (dataset order): the query's category by §3.1 and how it was decided.

    Columns
    -------
    qid, category (-1 without relevant documents), n_relevant, dominant_count (relevant
    documents of the most frequent category), runner_up_count (of the next category; equal
    to dominant_count on a tie), lead (their difference), tie (at least two categories share
    the top count), all_in_dominant (every relevant document is in the assigned category),
    decided_by (one of :data:`DECIDED_BY`).

    ``seed`` drives rule 3 only (a random choice among categories still tied after rules
    1-2); see :func:`_hash_uniform` for why it is a hash of (seed, qid, category).
    """
    cc = counts if counts is not None else category_counts(ds)
    C, S, M = cc.count, cc.label_sum, cc.max_label
    n_rel = C.sum(axis=1)
    has_rel = n_rel > 0

    top = C.max(axis=1, initial=0)
    cand = (C == top[:, None]) & has_rel[:, None]  # rule 0: most relevant documents
    n_cand0 = cand.sum(axis=1)
    # Each rule keeps, among the candidates so far, those with the best value of its key.
    # Non-candidates get -1, below any candidate's value: a candidate holds at least one
    # relevant document, so its label sum and maximum label are >= 1.
    steps = []
    for key in (S, M):
        masked = np.where(cand, key, -1)
        cand = masked == masked.max(axis=1, keepdims=True)
        cand &= has_rel[:, None]
        steps.append(cand.sum(axis=1))
    n_cand1, n_cand2 = steps
    u = np.where(cand, _hash_uniform(seed, cc.query_ids, cc.categories), -1.0)
    pick = np.argmax(u, axis=1)

    decided = np.select(
        [~has_rel, n_cand0 == 1, n_cand1 == 1, n_cand2 == 1],
        ["none", "count", "label_sum", "max_label"],
        "random",
    )
    second = np.sort(C, axis=1)[:, -2] if C.shape[1] > 1 else np.zeros_like(top)
    category = np.where(has_rel, cc.categories[pick], NO_CATEGORY)
    return pd.DataFrame({
        "qid": cc.query_ids,
        "category": category.astype(np.int64),
        "n_relevant": n_rel,
        "dominant_count": top,
        "runner_up_count": second,
        "lead": top - second,
        "tie": n_cand0 >= 2,
        "all_in_dominant": has_rel & (top == n_rel),
        "decided_by": pd.Categorical(decided, categories=list(DECIDED_BY)),
    })


def assign_all(splits: Splits, seed: int = 0) -> pd.DataFrame:
    """:func:`assign_query_categories` for every partition, with a ``split`` column."""
    cats = category_universe(splits)
    return pd.concat(
        [assign_query_categories(ds, seed, category_counts(ds, cats)).assign(split=part)
         for part, ds in splits.items()],
        ignore_index=True,
    )


# --------------------------------------------------------------------------- Figure 2


def relevant_vs_query_categories(ds: Dataset, seed: int = 0) -> pd.DataFrame:
    """Figure 2: the category distribution of relevant documents and of queries.

    Columns: category, distribution ("relevant documents" or "queries"), count, share.
    Queries without relevant documents have no category and are left out of the shares.
    """
    cc = category_counts(ds)
    q = assign_query_categories(ds, seed, cc)
    q = q[q.category != NO_CATEGORY]
    rel = cc.count.sum(axis=0)
    queries = q.category.value_counts().reindex(cc.categories, fill_value=0).to_numpy()
    frames = []
    for label, counts in (("relevant documents", rel), ("queries", queries)):
        frames.append(pd.DataFrame({
            "category": cc.categories, "distribution": label, "count": counts,
            "share": counts / max(int(counts.sum()), 1),
        }))
    return pd.concat(frames, ignore_index=True)


# --------------------------------------------------------------------------- choosing categories

#: Parameter value that picks a split category from the data (`resolve_split_categories`).
AUTO = "auto"


def leading_query_categories(ds: Dataset, n: int = 2, seed: int = 0) -> tuple[int, ...]:
    """The ``n`` most frequent query categories (§3.1 assignment) of ``ds``, most frequent
    first; equal counts go to the smaller category number.

    The paper picks its split categories this way: "the two most popular categories in the
    dataset, namely categories 11 and 14 (see Figure 2b)", and Figure 2b counts queries.
    """
    assigned = assign_query_categories(ds, seed).category
    counts = assigned[assigned != NO_CATEGORY].value_counts()
    if len(counts) < n:
        raise ValueError(f"{ds.name}: {n} query categories needed, the data has {len(counts)} "
                         f"({sorted(counts.index.tolist())}); with category_bins, more bins may help")
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return tuple(int(c) for c, _ in ranked[:n])


def _category_value(value, name: str) -> int | None:
    """An explicit category as an int, or None for `AUTO`; refuses anything else by name."""
    if isinstance(value, str):
        text = value.strip().lower()
        if text == AUTO:
            return None
        if text.lstrip("-").isdigit():
            return int(text)
    elif isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return int(value)
    raise ValueError(f"{name} must be a category number or {AUTO!r}, got {value!r}")


def _check_known(ds: Dataset, name: str, category: int) -> int:
    known = np.unique(_require_categories(ds)).tolist()
    if category not in known:
        raise ValueError(f"{name}={category} is not a document category of {ds.name} "
                         f"(categories: {known}); use {AUTO!r} to pick from the data")
    return category


def resolve_category(ds: Dataset, value="auto", name: str = "category", seed: int = 0) -> int:
    """One category parameter: `AUTO` is the most frequent query category of ``ds``; an
    explicit value (int, or digit string) must be a document category of ``ds``. ``name``
    is the parameter's name, used in errors."""
    c = _category_value(value, name)
    return _check_known(ds, name, leading_query_categories(ds, 1, seed)[0] if c is None else c)


def resolve_split_categories(ds: Dataset, split1="auto", split2="auto", split3="auto",
                             seed: int = 0) -> tuple[int, int, int]:
    """The categories of Split1-3 (`ltrlib.noniid.splits.paper_splits`) with `AUTO` filled
    in from the training set ``ds``: Split1 and Split2 on the most frequent query category,
    Split3 on the second, as the paper's 11, 11 and 14 on Istella-S. Explicit values (ints,
    or digit strings as papermill may pass them) are kept, and must be categories of ``ds``.
    """
    given = {f"split{i}_category": _category_value(v, f"split{i}_category")
             for i, v in enumerate((split1, split2, split3), start=1)}
    if any(v is None for v in given.values()):
        first, second = leading_query_categories(ds, 2, seed)
        auto = dict(zip(given, (first, first, second)))
        given = {k: auto[k] if v is None else v for k, v in given.items()}
    return tuple(_check_known(ds, name, c) for name, c in given.items())


# --------------------------------------------------------------------------- §5 statistics


def dominance_statistics(assignments: pd.DataFrame) -> pd.DataFrame:
    """How clearly each query's dominant category leads, next to the paper's numbers.

    The paper (§5.2, after Table 1) reports for the 19,245 Istella-S training queries:
    1,939 (7%) with all relevant documents in the dominant category, 2,372 (12%) ties,
    8,579 (45%) with a lead of at most 3 relevant documents over the next category and
    6,885 (36%) with a lead over 3. The percentages sum to 100 but the counts sum to 19,775,
    more than the training set, and 1,939 / 19,245 is 10%, not 7%. So the four groups
    cannot be disjoint. The reading consistent with the counts: ties (lead 0), leads 1-3 and
    leads over 3 partition the queries with relevant documents (12 + 45 + 36 = 93% of the
    training set), and "all in dominant" is a subset of the two lead groups (a query whose
    relevant documents share one category is never a tie). The printed 7% then looks like
    the remainder 100 - 93; we print it, and the count's own share (10.1%), side by side.

    Rows (statistic): all_in_dominant, tie, lead_1_to_3, lead_over_3 (the paper's),
    no_relevant (queries without relevant documents), and the two lead groups without the
    all-in-dominant queries, the disjoint reading of the printed percentages.
    Columns: statistic, queries, share, paper_queries, paper_share_printed,
    paper_share_of_count, in_partition (True for the rows that partition all queries).
    """
    a = assignments
    has = a.n_relevant > 0
    groups = {
        "all_in_dominant": a.all_in_dominant,
        "tie": a.tie,
        "lead_1_to_3": has & ~a.tie & (a.lead <= 3),
        "lead_over_3": has & (a.lead > 3),
        "no_relevant": ~has,
        "lead_1_to_3_mixed": has & ~a.tie & (a.lead <= 3) & ~a.all_in_dominant,
        "lead_over_3_mixed": has & (a.lead > 3) & ~a.all_in_dominant,
    }
    n = max(len(a), 1)
    rows = []
    for name, mask in groups.items():
        paper = PAPER_DOMINANCE.get(name)
        rows.append({
            "statistic": name,
            "queries": int(mask.sum()),
            "share": float(mask.sum()) / n,
            "paper_queries": paper[0] if paper else np.nan,
            "paper_share_printed": paper[1] if paper else np.nan,
            "paper_share_of_count": paper[0] / PAPER_TRAIN_QUERIES if paper else np.nan,
            "in_partition": name in ("tie", "lead_1_to_3", "lead_over_3", "no_relevant"),
        })
    return pd.DataFrame(rows)


def decided_by_summary(assignments: pd.DataFrame) -> pd.DataFrame:
    """Queries per deciding rule (and split, when present): columns [split,] decided_by, queries, share."""
    keys = ["split", "decided_by"] if "split" in assignments else ["decided_by"]
    out = assignments.groupby(keys, observed=False).size().rename("queries").reset_index()
    total = out.groupby(keys[:-1])["queries"].transform("sum") if len(keys) > 1 else out.queries.sum()
    out["share"] = out.queries / np.maximum(total, 1)
    return out


def category_analysis_metrics(train_assignments: pd.DataFrame, dominance: pd.DataFrame,
                              strategy_counts: pd.DataFrame, figure2: pd.DataFrame,
                              category: int) -> dict[str, float | int]:
    """Notebook 01's headline numbers for ``metrics.json`` (keys by
    `ltrlib.metrics.flatten_metrics`): the §3.1 dominance shares (``tie.share``), the share
    of queries decided by the random tie-break (``decided_randomly.share``), the two most
    frequent query categories (Figure 2b; ``top_query_category``,
    ``second_query_category``, each left out when the data has fewer), and ``category``'s
    training queries in DS1 per strategy and in DS2' (``train.exclusive.queries``,
    ``train.ds2p.queries``). A strategy that puts no query of ``category`` in DS1 counts 0
    (binned real data often has such). Inputs are the frames of `assign_all` (training
    rows), `dominance_statistics`, `strategy_query_counts` and
    `relevant_vs_query_categories`."""
    dom = dominance.set_index("statistic")["share"]
    shown = ["all_in_dominant", "tie", "lead_1_to_3", "lead_over_3", "no_relevant"]
    shares = pd.DataFrame({"statistic": [*shown, "decided_randomly"], "metric": "share",
                           "value": [*(float(dom[s]) for s in shown),
                                     float((train_assignments.decided_by == "random").mean())]})
    top2 = figure2[figure2.distribution == "queries"].nlargest(2, "count").category
    # Binned real data can leave one query category (or none): the missing ranks are left out.
    ranks = dict(zip(("top_query_category", "second_query_category"), (int(c) for c in top2)))
    train = strategy_counts[(strategy_counts.split == "train") & (strategy_counts.category == category)]
    train = train.set_index("strategy")["queries"].reindex([*STRATEGIES, "DS2'"], fill_value=0)
    counts = pd.DataFrame({"split": "train", "strategy": train.index, "metric": "queries",
                           "value": train.to_numpy(np.int64)})
    return {**flatten_metrics([shares, counts], keys=["statistic", "split", "strategy"]),
            **flatten_metrics(ranks)}
