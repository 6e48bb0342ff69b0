"""The `Dataset` type: a LETOR collection as flat arrays with query offsets.

Documents of one query are contiguous. Query ``i`` owns rows ``offsets[i]:offsets[i+1]``.
Every per-query computation in ltrlib works on these flat arrays (numpy or numba), never
on a Python list of per-query frames.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import NamedTuple, Protocol, runtime_checkable

import numpy as np
import pandas as pd


class Query(NamedTuple):
    """One query's documents: views into the parent `Dataset`'s arrays, no copies."""

    qid: int
    X: np.ndarray
    y: np.ndarray
    category: np.ndarray | None


class Splits(NamedTuple):
    """The train / validation / test partitions of one collection (a LETOR fold)."""

    train: "Dataset"
    vali: "Dataset | None" = None
    test: "Dataset | None" = None

    def items(self) -> list[tuple[str, "Dataset"]]:
        return [(k, v) for k, v in zip(self._fields, self) if v is not None]


@dataclass(frozen=True, eq=False)
class Dataset:
    """A learning-to-rank dataset.

    Attributes
    ----------
    X : float32 array (n_docs, n_features)
    y : int32 array (n_docs,), graded relevance labels
    query_ids : int64 array (n_queries,), the id of each query, unique
    offsets : int64 array (n_queries + 1,), query ``i`` is rows ``offsets[i]:offsets[i+1]``
    feature_names : names of the columns of ``X``
    category : optional int32 array (n_docs,), each document's topic category
    name : a label used in tables and figures
    """

    X: np.ndarray
    y: np.ndarray
    query_ids: np.ndarray
    offsets: np.ndarray
    feature_names: tuple[str, ...] = ()
    category: np.ndarray | None = None
    name: str = "dataset"
    meta: dict = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        X = np.asarray(self.X)
        if X.ndim != 2:
            raise ValueError(f"Dataset {self.name!r}: X must be 2-D, got shape {X.shape}")
        if X.dtype != np.float32:
            X = X.astype(np.float32)
        y = np.asarray(self.y)
        if y.dtype != np.int32:
            if not (np.all(np.isfinite(y)) and np.all(y == np.round(y))):
                raise ValueError(f"Dataset {self.name!r}: labels must be integers")
            y = y.astype(np.int32)
        qids = np.asarray(self.query_ids, dtype=np.int64)
        offsets = np.asarray(self.offsets, dtype=np.int64)
        n = X.shape[0]
        if y.shape != (n,):
            raise ValueError(f"Dataset {self.name!r}: y has shape {y.shape}, expected ({n},)")
        if offsets.shape != (qids.size + 1,):
            raise ValueError(
                f"Dataset {self.name!r}: offsets has {offsets.size} entries, "
                f"expected n_queries + 1 = {qids.size + 1}"
            )
        if offsets[0] != 0 or offsets[-1] != n or np.any(np.diff(offsets) <= 0):
            raise ValueError(
                f"Dataset {self.name!r}: offsets must start at 0, end at n_docs={n} "
                "and give every query at least one document"
            )
        if np.unique(qids).size != qids.size:
            raise ValueError(f"Dataset {self.name!r}: query ids must be unique")
        names = tuple(self.feature_names) or tuple(f"f{i}" for i in range(X.shape[1]))
        if len(names) != X.shape[1]:
            raise ValueError(
                f"Dataset {self.name!r}: {len(names)} feature names for {X.shape[1]} features"
            )
        cat = self.category
        if cat is not None:
            cat = np.asarray(cat)
            if cat.shape != (n,):
                raise ValueError(
                    f"Dataset {self.name!r}: category has shape {cat.shape}, expected ({n},)"
                )
            cat = cat.astype(np.int32, copy=False)
        # frozen dataclass: normalised arrays are written back through object.__setattr__
        for key, value in (("X", X), ("y", y), ("query_ids", qids), ("offsets", offsets),
                           ("feature_names", names), ("category", cat)):
            object.__setattr__(self, key, value)

    # ------------------------------------------------------------------ shape
    @property
    def n_docs(self) -> int:
        return int(self.X.shape[0])

    @property
    def n_queries(self) -> int:
        return int(self.query_ids.size)

    @property
    def n_features(self) -> int:
        return int(self.X.shape[1])

    @property
    def group_sizes(self) -> np.ndarray:
        """Documents per query, in query order (LightGBM's ``group``)."""
        return np.diff(self.offsets)

    @property
    def doc_query_index(self) -> np.ndarray:
        """For each document, the position of its query (0..n_queries-1)."""
        return np.repeat(np.arange(self.n_queries), self.group_sizes)

    @property
    def qid(self) -> np.ndarray:
        """Per-document query id, as in a LETOR file."""
        return np.repeat(self.query_ids, self.group_sizes)

    def __len__(self) -> int:
        return self.n_queries

    def __repr__(self) -> str:
        cat = "" if self.category is None else f", {np.unique(self.category).size} categories"
        return (
            f"Dataset({self.name!r}: {self.n_queries} queries, {self.n_docs} documents, "
            f"{self.n_features} features{cat})"
        )

    # ------------------------------------------------------------------ selection
    def take(self, query_index: Sequence[int] | np.ndarray, name: str | None = None) -> "Dataset":
        """The queries at the given positions, in the order given."""
        idx = np.asarray(query_index, dtype=np.int64)
        if idx.size and (idx.min() < 0 or idx.max() >= self.n_queries):
            raise IndexError(f"query positions out of range 0..{self.n_queries - 1}")
        sizes = self.group_sizes[idx]
        # Row indices of the selected queries, built without a per-query Python loop:
        # each query contributes offsets[q] + 0..size-1.
        starts = np.repeat(self.offsets[idx], sizes)
        within = np.arange(sizes.sum()) - np.repeat(np.cumsum(sizes) - sizes, sizes)
        rows = starts + within
        offsets = np.concatenate([[0], np.cumsum(sizes)])
        return Dataset(
            X=self.X[rows],
            y=self.y[rows],
            query_ids=self.query_ids[idx],
            offsets=offsets,
            feature_names=self.feature_names,
            category=None if self.category is None else self.category[rows],
            name=name or self.name,
            meta=dict(self.meta),
        )

    def subset(self, qids: Sequence[int] | np.ndarray, name: str | None = None) -> "Dataset":
        """The queries with the given ids, kept in this dataset's order.

        Raises ``KeyError`` naming the ids that are not in the dataset.
        """
        wanted = np.unique(np.asarray(qids, dtype=np.int64))
        mask = np.isin(self.query_ids, wanted)
        if mask.sum() != wanted.size:
            missing = np.setdiff1d(wanted, self.query_ids)
            raise KeyError(
                f"{missing.size} query ids not in {self.name!r}, e.g. {missing[:5].tolist()}"
            )
        return self.take(np.flatnonzero(mask), name=name)

    def sample_queries(self, n: int, seed: int | np.random.Generator = 0,
                       name: str | None = None) -> "Dataset":
        """``n`` queries drawn without replacement with ``seed``, kept in this dataset's order.

        ``n = 0`` or ``n >= n_queries`` keeps every query: nothing is drawn and this Dataset
        itself is returned (renamed when ``name`` is given). Otherwise the draw is
        ``sorted(default_rng(seed).choice(n_queries, n, replace=False))``, the one every
        "train on n queries" in ltrlib makes, so a seed picks the same queries everywhere.
        ``name``: the sample's name (default: this dataset's).
        """
        if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)) or n < 0:
            raise ValueError(f"Dataset {self.name!r}: sample_queries needs a non-negative "
                             f"integer number of queries, got n={n!r}")
        if n == 0 or n >= self.n_queries:
            return self if name is None else replace(self, name=name, meta=dict(self.meta))
        pick = np.sort(np.random.default_rng(seed).choice(self.n_queries, size=int(n), replace=False))
        return self.take(pick, name=name)

    def __iter__(self) -> Iterator[Query]:
        for i in range(self.n_queries):
            a, b = self.offsets[i], self.offsets[i + 1]
            cat = None if self.category is None else self.category[a:b]
            yield Query(int(self.query_ids[i]), self.X[a:b], self.y[a:b], cat)

    def split(
        self,
        fractions: Sequence[float] = (0.6, 0.2, 0.2),
        seed: int | np.random.Generator = 0,
        names: Sequence[str] | None = None,
    ) -> tuple["Dataset", ...]:
        """Split by query into parts of the given fractions (shuffled with ``seed``)."""
        fr = np.asarray(fractions, dtype=float)
        if fr.ndim != 1 or fr.size < 2 or np.any(fr <= 0) or not np.isclose(fr.sum(), 1.0):
            raise ValueError(f"fractions must be >= 2 positive numbers summing to 1, got {fractions}")
        rng = np.random.default_rng(seed)
        perm = rng.permutation(self.n_queries)
        cuts = np.round(np.cumsum(fr)[:-1] * self.n_queries).astype(int)
        names = names or [f"{self.name}[{i}]" for i in range(fr.size)]
        return tuple(self.take(np.sort(p), name=n) for p, n in zip(np.split(perm, cuts), names))

    def kfold(
        self, k: int = 5, seed: int | np.random.Generator = 0
    ) -> Iterator[tuple["Dataset", "Dataset"]]:
        """Yield ``(train, test)`` for each of ``k`` folds by query."""
        if not 2 <= k <= self.n_queries:
            raise ValueError(f"k must be in 2..n_queries={self.n_queries}, got {k}")
        folds = self.fold_ids(k, seed)
        for f in range(k):
            yield (
                self.take(np.flatnonzero(folds != f), name=f"{self.name}-train{f}"),
                self.take(np.flatnonzero(folds == f), name=f"{self.name}-test{f}"),
            )

    def fold_ids(self, k: int, seed: int | np.random.Generator = 0) -> np.ndarray:
        """A fold number 0..k-1 for each query, balanced, shuffled with ``seed``."""
        rng = np.random.default_rng(seed)
        folds = np.arange(self.n_queries) % k
        rng.shuffle(folds)
        return folds

    # ------------------------------------------------------------------ categories
    def with_category(self, category: np.ndarray | None) -> "Dataset":
        return replace(self, category=category)

    def with_category_from_feature(self, feature: int | str) -> "Dataset":
        """Take each document's category from a feature column (Istella-S carries one)."""
        col = self.feature_index(feature)
        values = self.X[:, col]
        if not np.all(values == np.round(values)):
            raise ValueError(
                f"feature {feature!r} of {self.name!r} has non-integer values; "
                "use with_category_from_quantiles to bin a continuous feature"
            )
        return self.with_category(values.astype(np.int32))

    def with_category_from_quantiles(self, feature: int | str, n_bins: int = 10) -> "Dataset":
        """Categories as quantile bins of a feature, e.g. PageRank on MSLR (the paper's suggestion)."""
        if n_bins < 2:
            raise ValueError(f"n_bins must be >= 2, got {n_bins}")
        values = self.X[:, self.feature_index(feature)]
        edges = np.unique(np.quantile(values, np.linspace(0, 1, n_bins + 1)[1:-1]))
        return self.with_category(np.searchsorted(edges, values, side="right").astype(np.int32))

    def feature_index(self, feature: int | str) -> int:
        """Column of ``X`` for a feature given by column number or by name."""
        if isinstance(feature, str):
            try:
                return self.feature_names.index(feature)
            except ValueError:
                raise KeyError(f"no feature named {feature!r} in {self.name!r}") from None
        col = int(feature)
        if not 0 <= col < self.n_features:
            raise IndexError(
                f"feature column {feature} does not exist in {self.name!r} "
                f"(columns 0..{self.n_features - 1})"
            )
        return col

    # ------------------------------------------------------------------ statistics
    def stats(self) -> dict[str, int]:
        """The statistics the papers report: queries, relevant documents, query-document pairs."""
        return {
            "queries": self.n_queries,
            "relevant_documents": int(np.count_nonzero(self.y > 0)),
            "query_document_pairs": self.n_docs,
        }

    def query_frame(self) -> pd.DataFrame:
        """One row per query: id, documents, relevant documents, max label."""
        rel = np.add.reduceat((self.y > 0).astype(np.int64), self.offsets[:-1])
        return pd.DataFrame(
            {
                "qid": self.query_ids,
                "n_docs": self.group_sizes,
                "n_relevant": rel,
                "max_label": np.maximum.reduceat(self.y, self.offsets[:-1]),
            }
        )

    # ------------------------------------------------------------------ LightGBM
    def lightgbm_inputs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(X, y, group)`` as LightGBM's ranking API takes them."""
        return self.X, self.y, self.group_sizes

    def to_lightgbm(self, reference=None, **params):
        """A ``lightgbm.Dataset`` with query groups and feature names set."""
        import lightgbm as lgb

        return lgb.Dataset(
            self.X,
            label=self.y,
            group=self.group_sizes,
            feature_name=[_lgb_safe(n) for n in self.feature_names],
            reference=reference,
            params=params or None,
            free_raw_data=False,
        )


def _lgb_safe(name: str) -> str:
    # LightGBM rejects feature names with JSON special characters.
    return "".join(c if c.isalnum() or c in "_-." else "_" for c in name)


def concat(parts: Sequence[Dataset], name: str | None = None) -> Dataset:
    """Stack datasets with disjoint query ids, in order."""
    if not parts:
        raise ValueError("concat needs at least one dataset")
    names = parts[0].feature_names
    for p in parts[1:]:
        if p.feature_names != names:
            raise ValueError(f"cannot concat {p.name!r}: its features differ from {parts[0].name!r}")
    has_cat = [p.category is not None for p in parts]
    if any(has_cat) and not all(has_cat):
        raise ValueError("cannot concat datasets where only some have categories")
    sizes = np.concatenate([p.group_sizes for p in parts])
    return Dataset(
        X=np.concatenate([p.X for p in parts]),
        y=np.concatenate([p.y for p in parts]),
        query_ids=np.concatenate([p.query_ids for p in parts]),
        offsets=np.concatenate([[0], np.cumsum(sizes)]),
        feature_names=names,
        category=np.concatenate([p.category for p in parts]) if all(has_cat) else None,
        name=name or "+".join(p.name for p in parts),
    )


@runtime_checkable
class Scorer(Protocol):
    """What ranks a `Dataset`: every ranker and every merged model of ltrlib is one.

    ``score(data)`` returns one float64 score per row of ``data``, in row order; a higher
    score ranks a document higher within its query. Trained rankers (`ltrlib.train.Ranker`,
    `ltrlib.bilambdamart.LBModel`, `ltrlib.bilambdamart.BivariateRanker`, `ltrlib.foltr.rankers.FoltrRanker`)
    score from the features; merged models (`ltrlib.merge.LinearMerge`, `StackingModel`,
    `RankerSelector`) hold their base models and score them first, so a caller never
    assembles a score matrix. The contract lives here, beside `Dataset`, because every
    subpackage may import the data layer and none may import another's.

    ``isinstance(obj, Scorer)`` checks only that ``obj`` has a ``score`` method (Python's
    runtime protocols cannot check signatures).
    """

    def score(self, data: Dataset) -> np.ndarray:
        ...
