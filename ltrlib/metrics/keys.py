"""The keys of a run's ``metrics.json``: one scheme for every notebook's scalars.

Keys of ``metrics.json`` (`ltrlib.report.Reporter.metrics`) follow one scheme, built by
`flatten_metrics` from a tidy frame: the values of its grouping columns in the order given,
then the metric name, each part made a `metric_key_part` and the parts joined by ``"."``::

    split, model, metric, value = Split1, M12α, ndcg@10, 0.71  ->  "split1.m12a.ndcg10"
    split, model, test_set, metric = Split1, M2, DS2', ndcg@10   ->  "split1.m2.ds2p.ndcg10"
    model, eta, metric = XGB unbiased, 0.5, ndcg@10              ->  "xgb_unbiased.eta0_5.ndcg10"

A part is lower-case and spelled in ``[a-z0-9_+-]``: ``λ`` is written ``lambda``, ``α``
``a``, ``'`` ``p`` (DS2' -> ds2p), ``*`` ``_star``, ``@`` is dropped (ndcg@10 -> ndcg10),
and any other run of characters (spaces, dots, brackets) becomes one ``_``. A numeric
grouping value is prefixed by its column's name (``eta0_5``, ``train_queries150``) so the
key says what the number counts; a missing one (NaN, None) is left out of the key, so one
frame can hold rows grouped more finely than others. A scalar with no grouping (a count,
a parameter) is keyed by its name alone (``n_trials``).

It sits with the metrics, below every analysis, because each analysis module builds its
notebook's scalars with `flatten_metrics` (its ``*_metrics`` function:
``merge.merge_metrics``, ``bilambdamart.bilambdamart_metrics``, ...).
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["flatten_metrics", "metric_key_part"]


# Spelled out rather than dropped, so that keys stay distinct and readable.
_KEY_SPELLINGS = {"λ": "lambda", "α": "a", "'": "p", "*": "_star", "@": ""}
_KEY_OTHER_RE = re.compile(r"[^a-z0-9_+-]+")


def metric_key_part(value: Any, column: str | None = None) -> str:
    """One part of a ``metrics.json`` key (the module docstring states the scheme).

    ``column`` names the column a numeric ``value`` came from; it is written in front of
    the number (``metric_key_part(0.5, "eta") == "eta0_5"``).
    """
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        # 150.0 -> "150": a column with a missing value holds its counts as floats.
        number = f"{int(value)}" if float(value).is_integer() else f"{float(value):g}"
        text = f"{column or ''}{number}".lower()
    else:
        text = str(value).lower()
    for char, spelling in _KEY_SPELLINGS.items():
        text = text.replace(char, spelling)
    part = _KEY_OTHER_RE.sub("_", text)
    part = re.sub(r"_+", "_", part).strip("_")
    if not part:
        raise ValueError(f"metrics key part {value!r} has no letter or digit to keep")
    return part


def _python_scalar(value: Any) -> Any:
    return value.item() if hasattr(value, "item") and getattr(value, "shape", None) == () else value


def flatten_metrics(tidy, keys: Sequence[str] = (), value: str = "value",
                    metric: str = "metric") -> dict[str, Any]:
    """The scalars of a tidy result keyed for `Reporter.metrics`: ``{key: value}``.

    ``tidy`` is a frame with the grouping columns ``keys`` (in key order), a ``metric``
    column and a ``value`` column, one row per scalar; or a list of such frames (a column
    of ``keys`` a frame lacks counts as missing, and each frame keeps its value type, so
    integer counts stay integers beside float means); or a mapping ``{metric: value}`` of
    scalars with no grouping. Keys follow the scheme of this module's docstring. Raises
    ValueError when two rows give the same key, which would silently drop one of them.
    """
    import pandas as pd

    if isinstance(tidy, Mapping):
        tidy = pd.DataFrame({metric: list(tidy), value: pd.Series(list(tidy.values()), dtype=object)})
    frames = [tidy] if isinstance(tidy, pd.DataFrame) else list(tidy)
    out: dict[str, Any] = {}
    for frame in frames:
        for col in (metric, value):
            if col not in frame.columns:
                raise ValueError(f"flatten_metrics: no {col!r} column in a frame with columns {list(frame.columns)}")
        present = [k for k in keys if k in frame.columns]
        for row in frame[[*present, metric, value]].itertuples(index=False, name=None):
            parts = [metric_key_part(_python_scalar(v), k) for k, v in zip(present, row)
                     if not pd.isna(v)]
            key = ".".join([*parts, metric_key_part(row[-2])])
            if key in out:
                raise ValueError(f"flatten_metrics: two rows give the key {key!r} "
                                 f"(grouping columns {list(keys)})")
            out[key] = _python_scalar(row[-1])
    return out
