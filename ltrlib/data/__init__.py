"""Data layer: the `Dataset` type, LETOR readers with a cache, and the synthetic generator."""

from ltrlib.data.dataset import Dataset, Query, Splits, concat
from ltrlib.data.loading import load_dataset
from ltrlib.data.readers import LetorFormatError, read_letor, read_letor_folder, read_lightgbm
from ltrlib.data.synthetic import make_synthetic

__all__ = [
    "Dataset", "Query", "Splits", "concat", "load_dataset", "make_synthetic",
    "read_letor", "read_letor_folder", "read_lightgbm", "LetorFormatError",
]
