"""A notebook's category choice, checked against the data before any work.

`ltrlib run` calls `check_category_choices` with every selected notebook's parameters before
the first kernel starts. A choice the data cannot honour (a feature that is not there, a
continuous feature without bins, bins that leave one query category, a split category the
data lacks, splits none of which can be trained) is refused with the parameter named, and no
report folder is made. The checks are the notebooks' own steps without the training:
loading with the category feature, resolving the category parameters, making the splits and
keeping the trainable ones. So a choice that passes here gets through notebooks 00-05, and
what the data only weakens (splits left out, bins merged by ties) comes back as notes.
"""

from __future__ import annotations

import contextlib
import io
import warnings
from collections.abc import Collection, Mapping
from typing import Any

from ltrlib.noniid.categories import resolve_category, resolve_split_categories
from ltrlib.noniid.splits import make_clients, paper_split_setup, parse_client_sets

__all__ = ["CATEGORY_PARAMETERS", "check_category_choices"]

#: The notebooks' parameters that choose categories: a notebook declaring none of them is not
#: checked, and on the synthetic default the data is loaded only when one of them is given.
CATEGORY_PARAMETERS = ("category_feature", "category_bins", "category", "split1_category", "split2_category",
                       "split3_category", "three_client_sets", "splits_to_run", "merge_size", "merge_overflow")
_SPLIT_PARAMETERS = ("split1_category", "split2_category", "split3_category")


def _given(params: Mapping[str, Any], names: Collection[str]) -> str:
    """``-p name value`` for the ``names`` among ``params``, as the user would type them."""
    return " ".join(f"-p {n} {params[n]}" for n in names if n in params and params[n] not in ("", 0))


def check_category_choices(plan: Mapping[str, Mapping[str, Any]], given: Collection[str] = ()) -> list[str]:
    """Check each notebook's category parameters (``plan``: notebook -> its parameters, the
    standard ones included) against its data; return the notes the data gives, each once.

    ``given`` names the parameters the user set: on the synthetic default with none of
    `CATEGORY_PARAMETERS` given there is nothing to check (its categories are the twin's own,
    calibrated), and its data is not generated here.

    Raises ValueError naming the notebook, the parameters and the reason.
    """
    notes: list[str] = []
    loaded: dict[tuple, Any] = {}
    for notebook, params in plan.items():
        if not any(name in params for name in CATEGORY_PARAMETERS):
            continue
        if params.get("dataset") == "synthetic" and not set(given) & set(CATEGORY_PARAMETERS):
            continue
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                _check_one(params, loaded)
            except (ValueError, KeyError, IndexError) as exc:
                reason = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
                raise ValueError(f"notebook {notebook} cannot run with this category choice: {reason}"
                                 + _said(caught)) from None
        notes += [str(w.message) for w in caught if str(w.message) not in notes]
    return notes


#: The most quantile bins `_bins_that_work` tries when it looks for a bin count to suggest.
MAX_SUGGESTED_BINS = 32


def _bins_that_work(params: Mapping[str, Any], loaded: dict[tuple, Any]) -> int | None:
    """The smallest bin count above the chosen one (at most `MAX_SUGGESTED_BINS`) whose quantile
    bins of ``category_feature`` give the notebook what it needs, or None. Each count is
    screened on the loaded training set (two query categories), and the first that passes is
    confirmed by the whole check, with the data loaded as the notebook would load it."""
    from ltrlib.noniid.categories import leading_query_categories

    feature, bins = params["category_feature"], int(params.get("category_bins") or 1)
    train = _loaded(params, loaded).train
    for n in range(bins + 1, MAX_SUGGESTED_BINS + 1):
        try:
            leading_query_categories(train.with_category_from_quantiles(feature, n), 2, seed=params["seed"])
        except (KeyError, IndexError):  # a feature named as the reader names it (a column number): check whole
            pass
        except ValueError:
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                _check_one({**params, "category_bins": n}, loaded)
        except (ValueError, KeyError, IndexError):
            continue
        return n
    return None


def _said(caught) -> str:
    messages = list(dict.fromkeys(str(w.message) for w in caught))
    return "".join(f"\n  ({m})" for m in messages)


def _loaded(params: Mapping[str, Any], loaded: dict[tuple, Any]):
    """The notebook's data with its category choice, loaded once per choice (``loaded``)."""
    from ltrlib.data.loading import load_dataset

    feature, bins = params.get("category_feature", ""), params.get("category_bins", 0)
    key = (params["dataset"], params["data_dir"], params["scale"], params["seed"], feature, bins)
    if key not in loaded:
        loaded[key] = load_dataset(*key[:4], category_feature=feature or None, category_bins=bins)
    return loaded[key]


def _check_one(params: Mapping[str, Any], loaded: dict[tuple, Any]) -> None:
    feature = params.get("category_feature", "")
    data, seed = _loaded(params, loaded), params["seed"]
    chosen = _given(params, ("category_feature", "category_bins"))
    if "category" in params:
        resolve_category(data.train, params["category"], "category", seed=seed)
    if not any(name in params for name in _SPLIT_PARAMETERS):
        return
    try:
        categories = resolve_split_categories(data.train, *(params.get(n, "auto") for n in _SPLIT_PARAMETERS),
                                              seed=seed)
    except ValueError as exc:
        if chosen and "query categories needed" in str(exc):
            works = _bins_that_work(params, loaded) if feature else None
            hint = (f"; -p category_feature {feature} -p category_bins {works} gives enough" if works else
                    f"; no bin count up to {MAX_SUGGESTED_BINS} gives enough" if feature else "")
            raise ValueError(f"{chosen} gives too few query categories for the non-IID splits: {exc}{hint}") from None
        raise
    if "three_client_sets" in params:
        sets = parse_client_sets(params["three_client_sets"], auto=categories[1:])
        make_clients(data, sets, strategy="no_tie_breaking", name="three_clients", seed=seed,
                     merge_size=params.get("merge_size", "train_queries_half"),
                     merge_overflow=params.get("merge_overflow", "shrink"))
    if "splits_to_run" in params:
        with contextlib.redirect_stdout(io.StringIO()):  # the categories it prints are the notebook's to show
            paper_split_setup(data, *categories, seed=seed,
                              merge_size=params.get("merge_size", "train_queries_half"),
                              merge_overflow=params.get("merge_overflow", "shrink"),
                              splits_to_run=params["splits_to_run"])
