

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
