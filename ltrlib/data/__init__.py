"""Data layer: the `Dataset` type, the `Scorer` contract of everything that ranks one,
LETOR readers with a cache, the catalogue of the public collections, the synthetic generator
and its writers in the collections' layouts, and the overview analyses of notebook 00."""

from ltrlib.data.dataset import Dataset, Query, Scorer, Splits, concat
from ltrlib.data.catalogue import COLLECTIONS, Collection, layouts
from ltrlib.data.formats import write_layout
from ltrlib.data.loading import dataset_folds, load_dataset, locate_dataset, resolve_dataset
from ltrlib.data.overview import (
    category_distribution,
    feature_by_label,
    feature_sparsity,
    label_distribution,
    most_label_correlated,
    overview_metrics,
    per_query_counts,
    split_statistics,
)
from ltrlib.data.readers import LetorFormatError, ReadOptions, read_letor, read_letor_folder, read_lightgbm
from ltrlib.data.synthetic import ORACLE, ORACLE_UNIVARIATE, make_synthetic, oracle_scores

__all__ = [
    "Dataset", "Query", "Scorer", "Splits", "concat", "dataset_folds", "load_dataset", "make_synthetic", "read_letor",
    "read_letor_folder", "read_lightgbm", "LetorFormatError", "ReadOptions", "locate_dataset", "resolve_dataset",
    "ORACLE", "ORACLE_UNIVARIATE", "oracle_scores", "COLLECTIONS", "Collection", "layouts", "write_layout",
    "category_distribution", "feature_by_label", "feature_sparsity", "label_distribution", "most_label_correlated",
    "overview_metrics", "per_query_counts", "split_statistics",
]
