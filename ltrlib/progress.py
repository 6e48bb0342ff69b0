"""Progress bars for long work: tuning trials, models, cross-validation folds, federated runs.

One helper, so every long loop reports the same way in both places a notebook runs:

* **interactively** (JupyterLab): ``tqdm.auto``, a live widget bar;
* **in a batch run** (the runner sets ``LTRLIB_BATCH``): a plain-text bar on stderr that
  updates at most every `BATCH_INTERVAL` seconds. It lands in the executed notebook as a
  few readable lines (a widget bar would be saved without its state and show nothing), and
  in the terminal with ``ltrlib run --log-output``.
"""

from __future__ import annotations

import sys

from ltrlib import config

__all__ = ["BATCH_INTERVAL", "bar"]

#: Seconds between two updates of a batch run's text bar.
BATCH_INTERVAL = 30.0


def bar(iterable=None, *, total: int | None = None, desc: str = "", enabled: bool = True, **kwargs):
    """A tqdm bar over ``iterable`` (or to `update` by hand), as the module docstring says;
    ``enabled=False`` gives a bar that prints nothing."""
    if config.in_batch():
        from tqdm.std import tqdm

        kwargs = {"file": sys.stderr, "mininterval": BATCH_INTERVAL, "ascii": True, "dynamic_ncols": False,
                  "ncols": 100, **kwargs}
    else:
        from tqdm.auto import tqdm
    return tqdm(iterable, total=total, desc=desc, disable=not enabled, **kwargs)
