

def test_no_two_batch_seeds_share_a_foltr_run():
    """Notebook 07's runs per curve, drawn from the batch seed: batch seeds 0-9 at the paper's
    5 runs each share none (``seed, seed + 1, ...`` made s and s + 1 share four)."""
    from ltrlib.foltr import run_seeds

    runs = [run_seeds(seed, 5) for seed in range(10)]
    assert all(len(set(r)) == 5 for r in runs)
    assert len({s for r in runs for s in r}) == 50
    assert run_seeds(3, 5) == run_seeds(3, 5) and run_seeds(3, 2) == run_seeds(3, 5)[:2]


def test_notebook_07s_grid_holds_every_setting_the_sweeps_and_the_remedies_in_order():
    from collections import Counter

    from ltrlib.foltr import experiment_grid, table2_jobs

    settings = ["type1", "type2_R1", "type2_R2", "type3_sdbn", "type3_pbm", "type4", "type4_type1", "type4_type2"]
    jobs = experiment_grid(settings, [7], rankers=["linear", "neural"], clicks=["perfect", "navigational",
                                                                               "informational"],
                           n_rounds=10, eval_every=5, B=5, label_overlap=False, type2_R1_with_10_clients=True,
                           type2_R1_B_sweep=[2, 5, 10], remedy_settings=["type1", "type2_R1"],
                           remedy_clicks=["perfect"], mus=[0.001, 0.01, 0.1, 1, 10], share_fraction=0.1,
                           warmup_interactions=30)
    assert len(jobs) == 142  # the notebook's default grid, a seed
    by = Counter((j.setting, j.label, j.remedy) for j in jobs)
    # Type 3 brings its own click models: 2 rankers x IID/non-IID, perfect only.
    assert by[("type3_sdbn", "", "none")] == 4 and by[("type1", "", "none")] == 12
    assert by[("type2_R1", "type2_R1_10clients", "none")] == 12
    assert by[("type2_R1", "type2_R1_B2", "none")] == 12 and not by[("type2_R1", "type2_R1_B5", "none")]
    # Remedies on the non-IID data only: FedProx per mu for both rankers, FedPer for the
    # network only, data sharing (without and with a warm-up) except on Type 1.
    assert by[("type1", "", "fedprox")] == 10 and by[("type1", "", "fedper")] == 1 and not by[("type1", "", "sharing")]
    sharing = [j for j in jobs if j.remedy == "sharing"]
    assert len(sharing) == 4 and sorted({j.warmup_interactions for j in sharing}) == [0, 30]
    assert all(j.noniid for j in jobs if j.remedy != "none")
    # The plain settings come first, the remedies last, as the notebook's tables list them.
    assert [j.remedy for j in jobs].index("fedprox") > max(i for i, j in enumerate(jobs) if j.remedy == "none")
    kept = table2_jobs(jobs, 7, click="perfect")
    assert len(kept) == 4 and {(j.ranker, j.noniid) for j in kept} == {(r, n) for r in ("linear", "neural")
                                                                        for n in (False, True)}


def test_a_collection_in_folds_runs_each_fold_and_averages_over_runs_and_folds(tmp_path, monkeypatch):
    """Notebook 07 on MSLR's layout (`ltrlib formats mslr`), here a collection of two folds:
    each fold's train.txt for the clients and its test.txt for offline evaluation, each fold's
    runs with seeds of their own, rows naming their fold, and the curves and tables over
    runs x folds; fold 1's runs are those of the one-split reading (Fold1, as before)."""
    import shutil

    import numpy as np
    import pandas as pd
    import pytest

    from ltrlib import config
    from ltrlib.config import Scale
    from ltrlib.data import dataset_folds
    from ltrlib.data.formats import write_layout
    from ltrlib.data.synthetic import make_synthetic
    from ltrlib.foltr import (
        experiment_grid, folds_of, load_online_data, noniid_gaps, online_data_sizes, online_table, protocol_caption,
        run_jobs, run_seeds, runs_by_fold, shared_query_count, summarise_offline,
    )

    monkeypatch.setattr(config, "CACHE_DIR", tmp_path / "cache")
    root = write_layout(make_synthetic(Scale("twin", 30, 10, 10, 20.0), 0), tmp_path / "MSLR-twin", "mslr")
    assert dataset_folds(str(root)) == [1, 2, 3, 4, 5]
    for k in (3, 4, 5):  # a collection of two folds keeps the test to two
        shutil.rmtree(root / f"Fold{k}")
    assert dataset_folds("MSLR-twin", tmp_path) == [1, 2] and dataset_folds("synthetic") == []
    assert dataset_folds(str(root / "Fold2")) == []  # one fold given directly is one split

    data, splits = load_online_data("MSLR-twin", str(tmp_path), "tiny", 0, folds=[])
    assert folds_of(data) == [1, 2] and splits.train.name.startswith("Fold1/")
    sizes = online_data_sizes(data)
    assert list(sizes.columns) == ["fold", "train_queries", "test_queries", "features"]
    assert sizes.test_queries.sum() == 20 and shared_query_count(data, 0.1) == 3  # fold 1's 30 training queries
    assert not set(data[1].test.query_ids.tolist()) & set(data[2].test.query_ids.tolist())
    one, _ = load_online_data("MSLR-twin", str(tmp_path), "tiny", 0)  # one split: Fold1, as before
    np.testing.assert_array_equal(one.test.X, data[1].test.X)
    with pytest.raises(ValueError, match="has folds 1,2 \\(no fold 3\\)"):
        load_online_data("MSLR-twin", str(tmp_path), "tiny", 0, folds=[3])
    with pytest.raises(ValueError, match="'synthetic' is one split"):
        load_online_data("synthetic", "", "tiny", 0, folds=[1])

    runs = runs_by_fold(data, 0, 2)
    assert runs == {1: run_seeds(0, 2), 2: run_seeds(0, 4)[2:]} and runs_by_fold(one, 0, 2) == run_seeds(0, 2)
    grid = dict(rankers=["linear"], clicks=["perfect"], n_rounds=4, eval_every=2, B=2, label_overlap=False)
    jobs = experiment_grid(["type2_R1"], runs, **grid)
    offline, online = run_jobs(data, jobs, progress=False)
    assert list(online.columns[:7]) == ["setting", "data", "ranker", "click", "remedy", "fold", "seed"]
    assert online.groupby("fold").seed.unique().map(sorted).to_dict() == {k: sorted(s) for k, s in runs.items()}
    assert set(offline.fold) == {1, 2}

    # Fold 1's runs are the one-split reading's, to the bit; a single split carries no fold.
    off1, on1 = run_jobs(one, experiment_grid(["type2_R1"], run_seeds(0, 2), **grid), progress=False)
    assert "fold" not in on1 and "fold" not in off1
    pd.testing.assert_frame_equal(offline[offline.fold == 1].drop(columns="fold").reset_index(drop=True), off1)

    # Curves and tables over runs x folds: 2 runs of each of 2 folds, paired by seed.
    summary = summarise_offline(offline)
    last = summary[(summary["round"] == 4) & (summary["data"] == "non-IID")].iloc[0]
    rows = offline[(offline["round"] == 4) & (offline["data"] == "non-IID")]
    assert last.n == 4 and last["mean"] == pytest.approx(rows.value.mean())
    table = online_table(online)
    assert set(table.seeds) == {4} and set(table.folds) == {2}
    assert set(noniid_gaps(online).seeds) == {4}
    assert "averaged over 2 folds and 2 runs a fold" in protocol_caption(4, 2, 2)
    assert protocol_caption(4, 2) == protocol_caption(4, 2, 0) and "fold" not in protocol_caption(4, 2)
    with pytest.raises(ValueError, match="runs on fold 1, but the data holds one split"):
        run_jobs(one, jobs, progress=False)
