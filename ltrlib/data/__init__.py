"""Data layer: the `Dataset` type, the `Scorer` contract of everything that ranks one,
LETOR readers with a cache, and the synthetic generator."""

from ltrlib.data.dataset import Dataset, Query, Scorer, Splits, concat
from ltrlib.data.loading import load_dataset
from ltrlib.data.readers import LetorFormatError, read_letor, read_letor_folder, read_lightgbm
from ltrlib.data.synthetic import make_synthetic

__all__ = [
    "Dataset", "Query", "Scorer", "Splits", "concat", "load_dataset", "make_synthetic",
    "read_letor", "read_letor_folder", "read_lightgbm", "LetorFormatError",
]
