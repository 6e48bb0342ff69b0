"""Data layer: the `Dataset` type, LETOR readers with a cache, and the synthetic generator."""

from ltrlib.data.dataset import Dataset, Query, Splits, concat

__all__ = ["Dataset", "Query", "Splits", "concat"]
