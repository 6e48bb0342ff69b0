"""The explorers open on informative views (issue 15): notebook 00's feature dropdown on the
most label-correlated feature, notebook 05's Figure-3 explorer on a meta-model that splits."""

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
import pytest

from ltrlib.data import overview
from ltrlib.data.dataset import Dataset

w = pytest.importorskip("ipywidgets")


@pytest.fixture(scope="module")
def ds():
    rng = np.random.default_rng(0)
    nq, docs = 30, 10
    y = rng.integers(0, 4, nq * docs)
    X = rng.normal(size=(nq * docs, 5))
    X[:, 3] = y + 0.3 * rng.normal(size=y.size)  # f3 tracks the label
    X[:, 1] = -y + 1.5 * rng.normal(size=y.size)  # f1 tracks it inversely, more loosely
    return Dataset(X=X, y=y, query_ids=np.arange(nq), offsets=np.arange(nq + 1) * docs,
                   feature_names=tuple(f"f{i}" for i in range(5)))


def test_label_correlations_are_ordered_by_strength(ds):
    corr = overview.label_correlations(ds)
    assert list(corr.index[:2]) == ["f3", "f1"] and corr["f3"] > 0.9 and corr["f1"] < -0.3
    assert list(np.abs(corr)) == sorted(np.abs(corr), reverse=True)
    assert overview.most_label_correlated(ds) == "f3"


def test_feature_explorer_starts_on_the_most_label_correlated_feature(ds):
    from ltrlib.plots.explore import feature_explorer

    box = feature_explorer(ds)
    dropdown = next(c for c in box.widget.children if isinstance(c, w.Dropdown))
    assert dropdown.value == "f3"
    assert dropdown.options[0][0].startswith("f3  ρ=+0.9") and dropdown.options[1][1] == "f1"


def test_importance_explorer_starts_on_a_meta_model_that_splits():
    from ltrlib.plots.explore import importance_explorer

    rows = []
    for model, value in (("Split1 M12S", 0.0), ("Split1 M21S", 5.0)):
        for kind in ("gain", "split"):
            rows.append({"model": model, "kind": kind, "feature": "s1", "value": value, "share": 1.0 if value else 0.0,
                         "rank": 1, "is_score": True})
    box = importance_explorer(pd.DataFrame(rows))
    dropdown = next(c for c in box.widget.children if isinstance(c, w.Dropdown))
    assert dropdown.value == "Split1 M21S" and dropdown.options[0] == "Split1 M12S"
