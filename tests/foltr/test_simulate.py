

def test_no_two_batch_seeds_share_a_foltr_run():
    """Notebook 07's runs per curve, drawn from the batch seed: batch seeds 0-9 at the paper's
    5 runs each share none (``seed, seed + 1, ...`` made s and s + 1 share four)."""
    from ltrlib.foltr import run_seeds

    runs = [run_seeds(seed, 5) for seed in range(10)]
    assert all(len(set(r)) == 5 for r in runs)
    assert len({s for r in runs for s in r}) == 50
    assert run_seeds(3, 5) == run_seeds(3, 5) and run_seeds(3, 2) == run_seeds(3, 5)[:2]
