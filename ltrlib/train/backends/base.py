"""The one interface every training library is reached through (`Backend`), and the cache
of a library's own copies of the data that many trainings share (`DataCache`).

`ltrlib.train.ranker.BACKENDS` maps a backend name to its `Backend`: ``"lightgbm"``
(`ltrlib.train.backends.lightgbm`) and ``"xgboost"`` (`ltrlib.train.backends.xgboost`).
Training on a Dask cluster (`ltrlib.train.backends.dask`) is each backend's distributed
counterpart of ``fit``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ltrlib.data.dataset import Dataset

__all__ = ["Backend", "DataCache"]


@dataclass(eq=False)
class DataCache:
    """The backend's own copies of ``train`` (and ``vali``), built on first use and reused by
    every `train_ranker` call given ``cache=`` this object: the trials of a study then bin
    the data once instead of once per trial.

    ``native`` maps ``(backend, key)`` to ``(train, vali)`` in the backend's format, where
    ``key`` holds the parameters the conversion depends on (XGBoost: the label transform and
    thread count; LightGBM: none, since ``lightgbm.train`` itself rebuilds a constructed
    ``Dataset`` whose binning parameters changed). ``builds`` counts the conversions.
    LightGBM's datasets keep their raw data (``free_raw_data=False``), which that rebuild
    needs; the validation set is binned with the training set as ``reference``.
    """

    train: Dataset
    vali: Dataset | None = None
    native: dict = field(default_factory=dict, repr=False)
    builds: int = 0

    def get(self, backend: str, key: tuple, build: Callable[[], tuple[Any, Any]]) -> tuple[Any, Any]:
        """The cached ``(train, vali)`` for ``(backend, key)``, built with ``build()`` once."""
        if (backend, key) not in self.native:
            self.native[(backend, key)] = build()
            self.builds += 1
        return self.native[(backend, key)]


@dataclass(frozen=True)
class Backend:
    """What a ranking library must provide. ``fit`` returns (model, best_iteration, curve)."""

    defaults: Callable[[int, int, int], dict]  # (seed, eval_at, num_threads) -> params
    fit: Callable[..., tuple[Any, int, list[float]]]
    predict: Callable[[Any, np.ndarray, int], np.ndarray]
    importance: Callable[[Any, str, int], np.ndarray]
    n_trees: Callable[[Any], int]
    dumps: Callable[[Any, int], str]
    loads: Callable[[str], Any]
    model_suffix: str
    # Checks and completes the merged parameters (defaults that depend on user choices).
    complete: Callable[[dict], dict] = dict
    # Whether ``fit`` takes ``checkpoint=`` and resumes a fit cut off from it (in this process,
    # without positions): `train_ranker` refuses a checkpoint for a backend that does not.
    resumes: bool = False
