"""The alpha explorer widget: moving the slider redraws the figure and the table."""

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest

from ltrlib.data.dataset import Dataset
from ltrlib.merge import linear

pytest.importorskip("ipywidgets")


@pytest.fixture(scope="module")
def sweep():
    rng = np.random.default_rng(0)
    nq, docs = 20, 10
    n = nq * docs
    y = rng.integers(0, 3, n)
    ds = Dataset(X=np.zeros((n, 1)), y=y, query_ids=np.arange(nq), offsets=np.arange(nq + 1) * docs)
    s1, s2 = rng.normal(size=n), y + rng.normal(size=n)
    parts = []
    for split in ("Split1", "Split2"):
        sw = linear.alpha_sweep({"D_merge": (ds, [s1, s2]), "test": (ds, [s2, s1])}, step=0.1)
        parts.append(sw.assign(split=split, client="client1"))
    import pandas as pd
    return pd.concat(parts, ignore_index=True)


def vlines(fig):
    """x positions of the vertical lines (axvline) in the figure's first panel."""
    ax = fig.axes[0]
    return [l.get_xdata()[0] for l in ax.lines if len(set(l.get_xdata())) == 1]


def test_slider_redraws_figure_and_table(sweep):
    from ltrlib.plots.explore import alpha_explorer

    one = sweep[sweep.split == "Split1"].drop(columns=["split", "client"])
    box = alpha_explorer(one, selected_alpha=0.3)
    assert box.state["alpha"] == pytest.approx(0.3)
    assert vlines(box.state["figure"]) == pytest.approx([0.3, 0.3])  # selected, current
    box.slider.value = 0.7  # the observer fires as in the browser
    assert box.state["alpha"] == pytest.approx(0.7)
    assert sorted(vlines(box.state["figure"])) == pytest.approx([0.3, 0.7])
    table = box.state["table"]
    expected = linear.sweep_at(one, 0.7)
    assert table.equals(expected) and "0.70" in table.columns.name
    assert not table.equals(linear.sweep_at(one, 0.3))


def test_dropdown_switches_merge_and_jumps_to_its_alpha(sweep):
    import pandas as pd

    from ltrlib.plots.explore import alpha_explorer

    choices = pd.DataFrame({"split": ["Split1", "Split2"], "client": ["client1", "client1"],
                            "alpha": [0.2, 0.9]})
    box = alpha_explorer(sweep, choices)
    assert box.slider.value == pytest.approx(0.2)
    box.pair.value = ("Split2", "client1")
    assert box.slider.value == pytest.approx(0.9)
    assert box.state["selected"] == pytest.approx(0.9)
    assert "Split2" in box.state["figure"].axes[0].get_title()


def test_plain_plot_function_marks_selected_alpha_per_panel(sweep):
    import pandas as pd

    from ltrlib import plots

    choices = pd.DataFrame({"split": ["Split1", "Split2"], "client": ["client1", "client1"],
                            "alpha": [0.2, 0.9]})
    fig = plots.alpha_sweep(sweep, selected_alpha=choices)
    assert len(fig.axes) == 2
    assert [vlines(type("F", (), {"axes": [ax]})) for ax in fig.axes] == [[0.2], [0.9]]


def test_batch_face_is_the_choices_first_merge_at_its_alpha(sweep):
    """In a batch run the explorer returns its first view without widgets: the choices'
    first merge drawn at its selected alpha, and that alpha's metric table."""
    import pandas as pd

    from ltrlib.plots.explore import alpha_explorer

    choices = pd.DataFrame({"split": ["Split2", "Split1"], "client": ["client1", "client1"],
                            "alpha": [0.9, 0.2]})
    figure, table = alpha_explorer(sweep, choices, interactive=False)
    assert "Split2" in figure.axes[0].get_title() and vlines(figure) == pytest.approx([0.9, 0.9])
    one = sweep[(sweep.split == "Split2") & (sweep.client == "client1")]
    assert table.equals(linear.sweep_at(one, 0.9))
