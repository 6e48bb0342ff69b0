"""The explorers of `ltrlib.plots.explore` build and open on informative views (issue 15):
notebook 00's feature dropdown on the most label-correlated feature, notebook 05's Figure-3
explorer on a meta-model that splits; and a batch run's face of each, which
`Reporter.show` writes or displays. (The alpha explorer: tests/merge/test_widget.py.)"""

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
    dropdown = next(c for c in box.children if isinstance(c, w.Dropdown))
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
    dropdown = next(c for c in box.children if isinstance(c, w.Dropdown))
    assert dropdown.value == "Split1 M21S" and dropdown.options[0] == "Split1 M12S"


def test_strategy_explorer_offers_every_category_in_order():
    from ltrlib.plots.explore import strategy_explorer

    counts = pd.DataFrame([{"category": c, "strategy": st, "split": sp, "queries": q}
                           for c in (11, 3) for st in ("tie_breaking", "exclusive")
                           for sp, q in (("DS1", 5), ("DS2'", 7))])
    box = strategy_explorer(counts)
    dropdown = next(c for c in box.children if isinstance(c, w.Dropdown))
    assert list(dropdown.options) == [3, 11] and dropdown.value == 3
    # It opens on the notebook's category where there is one.
    assert next(c for c in strategy_explorer(counts, 11).children if isinstance(c, w.Dropdown)).value == 11


def test_curve_explorer_offers_settings_and_remedies():
    from ltrlib.plots.explore import curve_explorer

    summary = pd.DataFrame([{"setting": st, "remedy": rm, "click": "perfect", "data": d, "ranker": "linear",
                             "round": r, "mean": 0.5, "lo": 0.45, "hi": 0.55}
                            for st in ("Type 1", "Type 2") for rm in ("none", "FedProx")
                            for d in ("IID", "non-IID") for r in (0, 10)])
    box = curve_explorer(summary)
    dropdowns = [c for c in box.children if isinstance(c, w.Dropdown)]
    assert [list(d.options) for d in dropdowns] == [["Type 1", "Type 2"], ["none", "FedProx"]]


def test_each_explorer_has_a_batch_face_that_the_reporter_writes_or_displays(ds, tmp_path, monkeypatch):
    """Batch runs get the explorer's first view as a plain figure or table (or nothing), so
    a notebook cell is one call whichever way it runs; `Reporter.show` saves a figure under
    its name, displays a table and shows nothing for None."""
    import matplotlib.figure

    from ltrlib.plots.explore import curve_explorer, feature_explorer, importance_explorer
    from ltrlib.report import Reporter

    face = feature_explorer(ds, interactive=False)
    assert isinstance(face, matplotlib.figure.Figure)
    assert face.axes[0].get_title() == "Feature f3 by relevance label"
    importance = pd.DataFrame({"model": ["m", "m"], "feature": ["s1", "f0"], "is_score": [True, False]})
    assert importance_explorer(importance, interactive=False).feature.tolist() == ["s1"]
    assert curve_explorer(pd.DataFrame(), interactive=False) is None

    shown = []
    monkeypatch.setattr("IPython.display.display", lambda *v: shown.extend(v))
    report = Reporter("show", "00_dataset_overview", root=tmp_path)
    report.show(face, "feature_by_label")
    assert report.figure_path("feature_by_label").exists() and not shown
    report.show((None, importance))
    assert shown == [importance]
    with pytest.raises(ValueError, match="needs a name"):
        report.show(face)
