"""Dataset overview analyses (notebook 00): each returns a tidy frame for `ltrlib.plots`.

Every function takes `Splits` (or a single `Dataset`) and works on the flat arrays, so the
same call summarises the 250-query LightGBM example and the 3.4M-row paper scale.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ltrlib.data.dataset import Dataset, Splits


def _parts(data: Splits | Dataset) -> list[tuple[str, Dataset]]:
    return [("all", data)] if isinstance(data, Dataset) else data.items()


def split_statistics(data: Splits | Dataset) -> pd.DataFrame:
    """Queries, relevant documents and query-document pairs per partition (Table 2's DS)."""
    rows = []
    for part, ds in _parts(data):
        st = ds.stats()
        qf = ds.query_frame()
        rows.append({
            "split": part,
            "queries": st["queries"],
            "relevant_documents": st["relevant_documents"],
            "query_document_pairs": st["query_document_pairs"],
            "docs_per_query": round(float(qf.n_docs.mean()), 2),
            "relevant_share": round(st["relevant_documents"] / st["query_document_pairs"], 4),
            "queries_without_relevant": int((qf.n_relevant == 0).sum()),
            "features": ds.n_features,
        })
    return pd.DataFrame(rows)


def label_distribution(data: Splits | Dataset) -> pd.DataFrame:
    """Documents per relevance label and partition: columns split, label, documents, share."""
    frames = []
    for part, ds in _parts(data):
        counts = np.bincount(ds.y)
        frames.append(pd.DataFrame({"split": part, "label": np.arange(counts.size),
                                    "documents": counts, "share": counts / counts.sum()}))
    return pd.concat(frames, ignore_index=True)


def per_query_counts(data: Splits | Dataset) -> pd.DataFrame:
    """One row per query: split, qid, n_docs, n_relevant, max_label."""
    return pd.concat([ds.query_frame().assign(split=part) for part, ds in _parts(data)],
                     ignore_index=True)


def category_distribution(data: Splits | Dataset) -> pd.DataFrame:
    """Share of all documents and of relevant documents per category, per partition.

    Columns: split, category, documents, relevant_documents, share_documents,
    share_relevant. Empty when the data carry no category.
    """
    frames = []
    for part, ds in _parts(data):
        if ds.category is None:
            continue
        cats = ds.category - ds.category.min()  # bincount needs non-negative values
        n = int(cats.max()) + 1
        alld = np.bincount(cats, minlength=n)
        rel = np.bincount(cats[ds.y > 0], minlength=n)
        frames.append(pd.DataFrame({
            "split": part, "category": np.arange(n) + ds.category.min(),
            "documents": alld, "relevant_documents": rel,
            "share_documents": alld / alld.sum(), "share_relevant": rel / max(rel.sum(), 1),
        }))
    cols = ["split", "category", "documents", "relevant_documents", "share_documents", "share_relevant"]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=cols)


def feature_sparsity(ds: Dataset, max_rows: int = 200_000, seed: int = 0) -> pd.DataFrame:
    """Per feature: share of zeros, number of distinct values, and a kind.

    Distinct values are counted on a seeded sample of at most ``max_rows`` documents, so the
    3.4M-row scale stays quick; the zero share uses every row.
    """
    X = ds.X
    zero_share = np.count_nonzero(X == 0, axis=0) / X.shape[0]
    rows = np.arange(X.shape[0])
    if rows.size > max_rows:
        rows = np.sort(np.random.default_rng(seed).choice(rows, max_rows, replace=False))
    sample = np.sort(X[rows], axis=0)
    distinct = 1 + np.count_nonzero(np.diff(sample, axis=0), axis=0)
    kind = np.select(
        [distinct == 1, distinct == 2, distinct <= 20, zero_share >= 0.5],
        ["constant", "binary", "few-valued", "sparse"],
        "continuous",
    )
    return pd.DataFrame({"feature": list(ds.feature_names), "zero_share": zero_share,
                         "distinct_values": distinct, "kind": kind})


def feature_by_label(ds: Dataset, feature: int | str) -> pd.DataFrame:
    """One feature's values with each document's label: columns label, value."""
    col = ds.feature_index(feature)
    return pd.DataFrame({"label": ds.y, "value": ds.X[:, col]})


def label_correlations(ds: Dataset, max_rows: int = 200_000, seed: int = 0) -> pd.Series:
    """Spearman correlation of every feature with the label (on at most ``max_rows``
    sampled documents), features ordered by its absolute value, strongest first."""
    from scipy.stats import rankdata

    rows = np.arange(ds.n_docs)
    if rows.size > max_rows:
        rows = np.sort(np.random.default_rng(seed).choice(rows, max_rows, replace=False))
    ranks = rankdata(ds.X[rows], axis=0)
    y = rankdata(ds.y[rows])
    rc = ranks - ranks.mean(0)
    yc = y - y.mean()
    denom = np.sqrt((rc**2).sum(0) * (yc**2).sum())
    corr = np.divide(rc.T @ yc, denom, out=np.zeros(ds.n_features), where=denom > 0)
    order = np.argsort(-np.abs(corr), kind="stable")
    return pd.Series(corr[order], index=[ds.feature_names[i] for i in order], name="spearman")


def most_label_correlated(ds: Dataset, max_rows: int = 200_000, seed: int = 0) -> str:
    """Name of the feature with the largest absolute Spearman correlation with the label."""
    return label_correlations(ds, max_rows, seed).index[0]


def overview_metrics(stats: pd.DataFrame, sparsity: pd.DataFrame, categories: pd.DataFrame) -> dict:
    """Notebook 00's metrics from its tables (`split_statistics`, `feature_sparsity`,
    `category_distribution`): the training partition's queries, relevant share and list
    length, the features and how many are sparse, and the categories (0 without any)."""
    train = stats.set_index("split").loc["train"]
    return dict(
        train_queries=int(train.queries),
        train_relevant_share=float(train.relevant_share),
        train_docs_per_query=float(train.docs_per_query),
        n_features=int(train.features),
        sparse_features=int((sparsity.kind == "sparse").sum()),
        n_categories=int(categories.category.nunique()) if not categories.empty else 0,
    )
