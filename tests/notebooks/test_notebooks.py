"""Smoke test: the batch runner executes every notebook at the tiny scale, exactly as
`make reproduce` does, and the recorded results are checked with loose bounds."""

import json

import pandas as pd
import pytest

from ltrlib import runner

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    reports = tmp_path_factory.mktemp("reports")
    return runner.run_all(scale="tiny", seed=0, run_id="smoke", reports_dir=reports, progress=False)


def test_every_notebook_ran(run_dir):
    manifest = json.loads((run_dir / "run.json").read_text())
    names = [p.stem for p in runner.discover()]
    assert names and names[0] == "00_dataset_overview"
    for name in names:
        assert (run_dir / "notebooks" / f"{name}.ipynb").exists(), name
    statuses = {k: v["status"] for k, v in manifest["notebooks"].items()}
    assert set(statuses) == set(names) and set(statuses.values()) == {"completed"}
    index = (run_dir / "index.html").read_text()
    assert "00_dataset_overview" in index and ".png" in index


def test_dataset_overview_results(run_dir):
    metrics = json.loads((run_dir / "metrics.json").read_text())["00_dataset_overview"]
    assert metrics["train_queries"] == 150
    assert 0.08 < metrics["train_relevant_share"] < 0.14
    assert metrics["n_features"] == 220 and metrics["n_categories"] == 20
    stats = pd.read_csv(run_dir / "tables" / "00_dataset_overview" / "split_statistics.csv")
    assert list(stats.split) == ["train", "vali", "test"]
    assert list(stats.queries) == [150, 50, 50]
    cats = pd.read_csv(run_dir / "tables" / "00_dataset_overview" / "category_distribution.csv")
    top2 = cats[cats.split == "train"].nlargest(2, "share_relevant").category
    assert set(top2) == {11, 14}
    for fig in ("label_distribution", "per_query_counts", "category_distribution",
                "feature_sparsity", "feature_by_label"):
        png = run_dir / "figures" / "00_dataset_overview" / f"{fig}.png"
        assert png.stat().st_size > 5_000, fig
