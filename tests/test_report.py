"""ltrlib.report: tables, figures, metrics, atomic writes and the run index (no kernels)."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import stat

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from ltrlib import config, report, trec
from ltrlib.atomic import atomic_write_text
from ltrlib.metrics.keys import flatten_metrics, metric_key_part
from ltrlib.report import Reporter, clear_notebook_outputs, read_metrics, validate_name, write_index


@pytest.fixture
def rep(tmp_path):
    return Reporter("run1", "00_overview", root=tmp_path)


@pytest.fixture
def frame():
    return pd.DataFrame({"model": ["lgbm", "linear"], "ndcg": [0.712345678, 0.5]})


def _leftovers(directory):
    """Temporary files an atomic write may have left behind (it must leave none)."""
    return [p.name for p in directory.rglob(".*") if p.is_file()]


# --------------------------------------------------------------------------- names


@pytest.mark.parametrize("bad", ["a/b", "../x", "a\\b", "", ".hidden", "with space", "x.", None])
def test_invalid_names_are_rejected_with_the_argument_named(bad):
    with pytest.raises(ValueError, match="invalid table name"):
        validate_name(bad, "table name")


def test_reporter_rejects_bad_run_id_and_table_name(tmp_path, frame):
    with pytest.raises(ValueError, match="run_id"):
        Reporter("../escape", "00_x", root=tmp_path)
    with pytest.raises(ValueError, match="table name 'sub/t'"):
        Reporter("r", "00_x", root=tmp_path).table(frame, "sub/t")
    assert not (tmp_path / "r").exists()


def test_root_defaults_to_config_reports_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(config, "REPORTS_DIR", tmp_path / "elsewhere")
    assert Reporter("r", "00_x").run_dir == tmp_path / "elsewhere" / "r"


# --------------------------------------------------------------------------- tables


def test_table_writes_csv_and_markdown(rep, frame):
    path = rep.table(frame, "scores", caption="Mean nDCG@10")
    assert path == rep.run_dir / "tables" / "00_overview" / "scores.csv"
    pd.testing.assert_frame_equal(pd.read_csv(path), frame)
    md = path.with_suffix(".md").read_text()
    assert md.startswith("Mean nDCG@10\n\n|")
    assert "lgbm" in md and "0.712346" in md
    assert _leftovers(rep.run_dir) == []


def test_table_index_option_keeps_the_index(rep, frame):
    path = rep.table(frame.set_index("model"), "by_model", index=True)
    assert pd.read_csv(path).columns.tolist() == ["model", "ndcg"]


def test_markdown_fallback_without_tabulate(rep, monkeypatch):
    def no_tabulate(self, *args, **kwargs):
        raise ImportError("Missing optional dependency 'tabulate'")

    monkeypatch.setattr(pd.DataFrame, "to_markdown", no_tabulate)
    df = pd.DataFrame({"name": ["a|b", "c"], "value": [1.0, 2.5]})
    md = rep.table(df, "fallback").with_suffix(".md").read_text().splitlines()
    assert md == [
        "| name | value |",
        "| :--- | ---: |",
        "| a\\|b | 1 |",
        "| c | 2.5 |",
    ]


def test_rewriting_a_table_replaces_it(rep, frame):
    rep.table(frame, "t")
    path = rep.table(frame.head(1), "t")
    assert len(pd.read_csv(path)) == 1


# --------------------------------------------------------------------------- figures


def test_figure_writes_png_and_keeps_figure_open(rep):
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    assert rep.figure(fig, "curve") is None  # a cell ending in it echoes no path
    path = rep.figure_path("curve")
    assert path == rep.run_dir / "figures" / "00_overview" / "curve.png"
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert plt.fignum_exists(fig.number)
    rep.figure(fig, "curve2", close=True)
    assert not plt.fignum_exists(fig.number)


def test_failing_savefig_leaves_no_file(rep, monkeypatch):
    fig, _ = plt.subplots()
    rep.figure(fig, "kept")
    before = (rep.figures_dir / "kept.png").read_bytes()

    def broken(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(fig, "savefig", broken)
    with pytest.raises(RuntimeError, match="disk full"):
        rep.figure(fig, "new")
    with pytest.raises(RuntimeError, match="disk full"):
        rep.figure(fig, "kept")
    plt.close(fig)
    assert not (rep.figures_dir / "new.png").exists()
    assert (rep.figures_dir / "kept.png").read_bytes() == before  # the old version survives
    assert _leftovers(rep.run_dir) == []


def test_atomic_write_text_keeps_old_content_on_failure(tmp_path):
    path = atomic_write_text(tmp_path / "a.txt", "old")

    with pytest.raises(UnicodeEncodeError):  # a lone surrogate has no UTF-8 encoding
        atomic_write_text(path, "new \ud800")
    assert path.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]


def test_an_atomic_write_that_must_not_replace_leaves_an_existing_file_as_it_was(tmp_path):
    # An upgrade adds files to a record and must never rewrite one (ltrlib.fidelity.upgrade).
    path = atomic_write_text(tmp_path / "a.txt", "new", replace=False)
    assert path.read_text() == "new"
    with pytest.raises(FileExistsError, match="a.txt already exists"):
        atomic_write_text(path, "newer", replace=False)
    assert path.read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]


def test_atomic_writes_get_the_umask_permissions_not_owner_only(tmp_path):
    # mkstemp creates 0600 files; reports and exported data must stay readable by the lab.
    old = os.umask(0o022)
    try:
        path = atomic_write_text(tmp_path / "b.txt", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


# --------------------------------------------------------------------------- metrics


def test_metrics_merge_per_notebook(tmp_path):
    a = Reporter("run1", "00_a", root=tmp_path)
    b = Reporter("run1", "01_b", root=tmp_path)
    a.metrics(ndcg=0.5, n_queries=np.int64(250))
    b.metrics(flag=True)
    assert a.metrics(ndcg=np.float32(0.75), missing=float("nan"), note="ok") is None  # nothing echoed
    merged = {"ndcg": 0.75, "n_queries": 250, "missing": None, "note": "ok"}
    data = json.loads((tmp_path / "run1" / "metrics.json").read_text())
    assert data == {"00_a": merged, "01_b": {"flag": True}}
    assert isinstance(data["00_a"]["n_queries"], int)
    assert read_metrics(tmp_path / "run1") == data


@pytest.mark.parametrize("value, column, part", [
    ("Split1", None, "split1"), ("M12α", None, "m12a"), ("DS2'", None, "ds2p"),
    ("ndcg@10", None, "ndcg10"), ("a. λMART (stage 1)", None, "a_lambdamart_stage_1"),
    ("λMART*", None, "lambdamart_star"), ("non-IID", None, "non-iid"), ("mean, 1 pair", None, "mean_1_pair"),
    (0.5, "eta", "eta0_5"), (np.float64(2.0), "eta", "eta2"), (np.int64(150), "train_queries", "train_queries150"),
])
def test_metric_key_part(value, column, part):
    assert metric_key_part(value, column) == part
    validate_name(part, "metric name")  # every part is a valid Reporter.metrics name


def test_flatten_metrics_one_key_scheme():
    means = pd.DataFrame({"split": ["Split1", "Split1"], "model": ["M1", "M2"],
                          "test_set": ["DS", "DS2'"], "metric": "ndcg@10", "value": [0.5, 0.25]})
    trees = pd.DataFrame({"split": ["Split1"], "model": ["M1"], "metric": ["trees"], "value": [np.int64(7)]})
    flat = flatten_metrics([means, trees], keys=["split", "model", "test_set"])
    assert flat == {"split1.m1.ds.ndcg10": 0.5, "split1.m2.ds2p.ndcg10": 0.25, "split1.m1.trees": 7}
    assert type(flat["split1.m1.trees"]) is int  # counts stay integers beside float means
    # A missing grouping value is left out of the key; a mapping is keyed by its names alone.
    fixed = pd.DataFrame({"model": ["logging ranker", "XGB"], "eta": [np.nan, 0.5],
                          "metric": "ndcg@10", "value": [0.3, 0.4]})
    assert flatten_metrics(fixed, keys=["model", "eta"]) == {"logging_ranker.ndcg10": 0.3,
                                                             "xgb.eta0_5.ndcg10": 0.4}
    assert flatten_metrics({"n_trials": 3}) == {"n_trials": 3}


def test_flatten_metrics_refuses_colliding_keys():
    twice = pd.DataFrame({"model": ["M1", "m1"], "metric": "ndcg@10", "value": [0.5, 0.6]})
    with pytest.raises(ValueError, match="two rows give the key 'm1.ndcg10'"):
        flatten_metrics(twice, keys=["model"])
    with pytest.raises(ValueError, match="no 'value' column"):
        flatten_metrics(twice.rename(columns={"value": "mean"}), keys=["model"])


def test_metrics_reject_non_scalars_and_leave_file_unchanged(rep):
    rep.metrics(x=1)
    with pytest.raises(ValueError, match="metric 'curve' must be a scalar"):
        rep.metrics(y=2, curve=[1, 2, 3])
    assert read_metrics(rep.run_dir) == {"00_overview": {"x": 1}}


def test_corrupt_metrics_file_is_named(rep):
    rep.run_dir.mkdir(parents=True)
    (rep.run_dir / "metrics.json").write_text("{not json")
    with pytest.raises(ValueError, match="metrics.json is not valid JSON"):
        rep.metrics(x=1)


def test_clear_notebook_outputs(tmp_path, frame):
    a = Reporter("run1", "00_a", root=tmp_path)
    b = Reporter("run1", "01_b", root=tmp_path)
    a.table(frame, "t")
    a.metrics(x=1)
    b.metrics(y=2)
    clear_notebook_outputs(a.run_dir, "00_a")
    assert not a.tables_dir.exists()
    assert read_metrics(a.run_dir) == {"01_b": {"y": 2}}


# --------------------------------------------------------------------------- index


def test_index_links_everything_relatively(tmp_path, frame):
    rep = Reporter("run1", "00_a", root=tmp_path)
    rep.table(frame, "scores")
    fig, _ = plt.subplots()
    rep.figure(fig, "curve", close=True)
    rep.metrics(x=1)
    nb_dir = rep.run_dir / "notebooks"
    nb_dir.mkdir()
    (nb_dir / "00_a.ipynb").write_text("{}")
    (nb_dir / "00_a.html").write_text("<html></html>")
    (nb_dir / "01_b.failed.ipynb").write_text("{}")
    (nb_dir / ".01_b.running.ipynb").write_text("{}")  # a temp file is never listed
    manifest = {"notebooks": {"00_a": {"status": "completed"}, "01_b": {"status": "failed"}}}
    (rep.run_dir / "run.json").write_text(json.dumps(manifest))

    html_path = write_index(rep.run_dir)
    md = (rep.run_dir / "index.md").read_text()
    page = (rep.run_dir / "pages" / "00_a.md").read_text()
    failed = (rep.run_dir / "pages" / "01_b.md").read_text()
    html = html_path.read_text()

    assert "| [00_a](pages/00_a.md) | completed | 1 | 1 |" in md and "| [01_b](pages/01_b.md) | failed | 0 | 0 |" in md
    assert "(metrics.json)" in md and "(run.json)" in md
    assert page.startswith("# 00_a (completed)") and "](../index.md)" in page
    for link in ["(../notebooks/00_a.ipynb)", "(../notebooks/00_a.html)", "(../tables/00_a/scores.csv)",
                 "(../figures/00_a/curve.png)"]:
        assert link in page
    assert "| lgbm " in page and "| linear " in page  # the table itself, as Markdown
    assert "(../notebooks/01_b.failed.ipynb)" in failed
    # The HTML page carries its figures: a sandboxed viewer (JupyterLab's) cannot fetch files.
    assert '<img src="data:image/png;base64,' in html and 'href="figures/00_a/curve.png">png</a>' in html
    assert 'href="tables/00_a/scores.csv"' in html and 'href="metrics.json"' in html
    assert 'href="notebooks/00_a.html">as a page</a>' in html
    assert '<details class="section" id="00_a"><summary><h2>00_a <small>(completed)</small></h2></summary>' in html
    assert '<a href="#01_b">01_b</a></td><td>failed</td>' in html
    assert "running" not in md + page and str(tmp_path) not in md + page + html
    # A notebook whose outputs are gone loses its page.
    shutil.rmtree(rep.run_dir / "tables" / "00_a"), shutil.rmtree(rep.run_dir / "figures" / "00_a")
    (nb_dir / "00_a.ipynb").unlink()
    (rep.run_dir / "run.json").write_text(json.dumps({"notebooks": {"01_b": {"status": "failed"}}}))
    write_index(rep.run_dir)
    assert sorted(p.name for p in (rep.run_dir / "pages").iterdir()) == ["01_b.md"]


def test_outputs_leave_the_index_to_its_builder_which_renders_tables_and_captions(tmp_path):
    rep = Reporter("run1", "00_a", root=tmp_path)
    rows = pd.DataFrame({"model": [f"M{i}" for i in range(40)], "ndcg": np.linspace(0.5, 0.9, 40)})
    rep.table(rows, "many", caption="Table 4: NDCG@10 per model")
    rep.figure(plt.subplots()[0], "alpha_sweep", close=True, caption="NDCG@10 against α on D_merge")
    rep.figure(plt.subplots()[0], "no_caption", close=True)
    rep.figures({"a": plt.subplots()[0], "b": plt.subplots()[0]}, prefix="curve_", close=True, caption="T = 300")
    rep.metrics(x=1)
    # Writing outputs builds no index (the runner builds it after each notebook): a
    # notebook's cost no longer grows with the square of its outputs.
    assert not (rep.run_dir / "index.html").exists() and not (rep.run_dir / "index.md").exists()
    write_index(rep.run_dir)
    html = (rep.run_dir / "index.html").read_text()
    assert "<b>many</b>: Table 4: NDCG@10 per model" in html
    # The first rows open, all of them one click away in a fold that the table link opens (a
    # link into the page: JupyterLab's HTML viewer refuses links to other files), the CSV
    # (a download) beside it, and every row on the table's own page too.
    head, rest = html.split("<summary>all 40 rows</summary>")
    assert "<td>M0</td>" in head and "<td>M4</td>" in head and "<td>M5</td>" not in head
    assert '<div id="table-00_a-many"><table' in rest and "<td>M0</td>" in rest and "<td>M39</td>" in rest
    assert '<a href="#table-00_a-many">table</a> · <a href="tables/00_a/many.csv" download>csv</a>' in html
    assert "table's page" not in html  # every row is in the fold
    page_of_table = (rep.run_dir / "tables" / "00_a" / "many.html").read_text()
    assert "<td>M0</td>" in page_of_table and "<td>M39</td>" in page_of_table and "40 rows" in page_of_table
    assert 'href="../../index.html">report</a>' in page_of_table
    # Figures come before the tables.
    assert html.index("<b>alpha_sweep</b>") < html.index("<b>many</b>")
    assert "<b>alpha_sweep</b>: NDCG@10 against α on D_merge" in html
    assert "<b>no_caption</b>: no caption" in html
    assert "<b>curve_a</b>: T = 300" in html and "<b>curve_b</b>: T = 300" in html
    assert 'Metrics: <a href="metrics.json">' in html
    # The Markdown page shows the same table rows, caption and figures, from the same reading.
    page = (rep.run_dir / "pages" / "00_a.md").read_text()
    assert "Table 4: NDCG@10 per model" in page and "| M24     |" in page and "| M25 " not in page
    assert page.index("## Figure") < page.index("## Table")
    assert "15 more rows there" in page and "NDCG@10 against α on D_merge" in page
    assert "Metrics: [metrics.json](metrics.json)" in (rep.run_dir / "index.md").read_text()


def test_a_long_tables_fold_holds_its_first_rows_and_names_its_page(tmp_path, monkeypatch):
    monkeypatch.setattr(report.pages, "FOLDED_TABLE_ROWS", 10)
    rep = Reporter("run1", "00_a", root=tmp_path)
    rep.table(pd.DataFrame({"q": range(40)}), "long")
    write_index(rep.run_dir)
    fold = (rep.run_dir / "index.html").read_text().split("<summary>all 40 rows</summary>")[1]
    assert "<td>14</td>" in fold and "<td>15</td>" not in fold
    # The page opens in a new tab: JupyterLab's viewer blocks that, where a link in place
    # would replace the report with the server's login page.
    assert ('The first 15 of 40 rows; every row on the table\'s page, '
            '<a href="tables/00_a/long.html" target="_blank">tables/00_a/long.html</a>') in fold
    assert "<td>39</td>" in (rep.run_dir / "tables" / "00_a" / "long.html").read_text()


def test_the_index_shows_the_paper_figures_first_and_the_ledger_section_and_opens_sections_on_links(tmp_path):
    rep = Reporter("run1", "00_a", root=tmp_path)
    rep.figure(plt.subplots()[0], "a_ours", close=True, caption="Our own view")
    rep.figure(plt.subplots()[0], "b_paper", close=True, caption="Figure 3: the paper's")
    (rep.run_dir / "fidelity_section.html").write_text('<p id="ledger-marker">the ledger</p>')
    html = write_index(rep.run_dir).read_text()
    assert html.index("<b>b_paper</b>") < html.index("<b>a_ours</b>")
    assert '<a href="#ledger">fidelity ledger</a>' in html
    assert '<details class="section" id="ledger"><summary><h2>Fidelity ledger</h2></summary>' in html
    assert html.index('id="ledger-marker"') < html.index('id="00_a"')
    assert "p.open=true" in html  # a link into the page opens the section (and fold) it names


def test_index_of_missing_run_dir_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        write_index(tmp_path / "nope")


def test_run_file_writes_a_trec_run_and_its_qrels(rep):
    from ltrlib import trec
    from ltrlib.data import Dataset

    data = Dataset(np.zeros((5, 1), np.float32), np.array([2, 0, 1, 0, 1]), np.array([7, 9]), np.array([0, 3, 5]))
    path = rep.run_file("Bi-λMART w/o d", data, np.array([0.1, 0.3, 0.2, 1.0, 2.0]))
    assert path == rep.run_dir / "runs" / rep.notebook / "Bi-λMART_w_o_d.run.gz"
    run = trec.read_run(path)
    assert run.docno.tolist() == ["7-1", "7-2", "7-0", "9-1", "9-0"] and set(run.tag) == {"Bi-λMART_w/o_d"}
    assert trec.read_qrels(path.parent / "qrels.gz").rel.tolist() == [2, 0, 1, 0, 1]


def test_run_files_score_every_scorer_and_one_qrels_stands_for_one_dataset(rep):
    from ltrlib.data import Dataset
    from ltrlib.report import clear_notebook_outputs

    data = Dataset(np.zeros((5, 1), np.float32), np.array([2, 0, 1, 0, 1]), np.array([7, 9]), np.array([0, 3, 5]))

    class Constant:
        def __init__(self, v):
            self.v = v

        def score(self, ds):
            return np.arange(ds.offsets[-1], dtype=float) * self.v

    paths = rep.run_files({"up": Constant(1.0), "down": Constant(-1.0)}, data, prefix="Split1.")
    assert sorted(p.name for p in paths.values()) == ["Split1.down.run.gz", "Split1.up.run.gz"]
    # One qrels file for both runs, written once: the second run found it there.
    qrels = rep.runs_dir / "qrels.gz"
    qrels.write_bytes(gzip.compress(b"marker"))
    rep.run_file("again", data, np.arange(5.0))
    assert gzip.decompress(qrels.read_bytes()) == b"marker"
    qrels.unlink()  # gone (a user deleted it): written again
    rep.run_file("again", data, np.arange(5.0))
    assert trec.read_qrels(qrels).rel.tolist() == [2, 0, 1, 0, 1]
    # Other labels of the same documents judge the same run; other documents are refused.
    relabelled = Dataset(data.X, np.array([0, 1, 0, 1, 0]), data.query_ids, data.offsets)
    rep.run_file("judged twice", data, np.arange(5.0), other_labels={"qrels.other": relabelled})
    assert trec.list_runs(rep.run_dir).set_index("run").qrels["judged_twice.run.gz"] == "qrels.gz, qrels.other.gz"
    with pytest.raises(ValueError, match=r"other_labels\['qrels.short'\] holds other queries or documents"):
        rep.run_file("judged wrongly", data, np.arange(5.0), other_labels={"qrels.short": data.take(np.array([0]))})
    other = Dataset(np.zeros((2, 1), np.float32), np.array([1, 0]), np.array([3]), np.array([0, 2]))
    with pytest.raises(ValueError, match="holds the labels of other data"):
        rep.run_file("M1", other, np.array([0.5, 0.1]))
    rep.run_file("M12 α", data, np.arange(5.0))
    with pytest.raises(ValueError, match=r"is already 'M12 α''s"):  # one file name, two models
        rep.run_file("M12/α", data, np.arange(5.0))
    assert rep.run_file("M1", other, np.array([0.5, 0.1]), qrels="qrels.DS1").parent == rep.runs_dir
    clear_notebook_outputs(rep.run_dir, rep.notebook)  # a rerun starts without them
    assert not rep.runs_dir.exists()


def test_a_notebooks_batch_of_outputs_is_one_call(rep):
    from ltrlib.data import Dataset
    from ltrlib.trec import RunFile

    figs = {name: plt.subplots()[0] for name in ("type1", "type2_R1")}
    rep.figures(figs, prefix="offline_", close=True)
    assert sorted(p.name for p in rep.figures_dir.iterdir()) == ["offline_type1.png", "offline_type2_R1.png"]
    # An optional table that did not run saves nothing; digits round what is saved.
    assert rep.table(None, "remedies") is None and not (rep.tables_dir / "remedies.csv").exists()
    rep.table(pd.DataFrame({"p": [0.123456]}), "rounded", digits=3)
    assert pd.read_csv(rep.tables_dir / "rounded.csv").p.tolist() == [0.123]
    data = Dataset(np.zeros((3, 1), np.float32), np.array([1, 0, 2]), np.array([4]), np.array([0, 3]))
    written = rep.run_file_records([RunFile("a", data, np.array([0.3, 0.2, 0.1]), "qrels")])
    assert list(written) == ["a"] and written["a"].exists()
