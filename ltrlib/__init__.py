"""ltrlib: learning to rank on non-IID data, the helper package behind the notebooks."""

__version__ = "0.1.0"
