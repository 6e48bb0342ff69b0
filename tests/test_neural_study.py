"""What a neural study's summary says of its budget gate (`ltrlib.studies.neural._gate_odds`):
how often each claim's compared networks all converged at a seed, and what that leaves a
design whose rule asks every seed to decide."""

import pandas as pd
import pytest

from ltrlib.fidelity.bilambdamart import COMPARED, NEURAL_LAMBDARANK
from ltrlib.neural.ranker import CONVERGED
from ltrlib.studies.neural import GATE_ODDS, _gate_odds


def _budget(stops: dict[int, dict[str, str]]) -> pd.DataFrame:
    """Summary rows as a neural seed records them: its ``converged`` is stopping by patience."""
    return pd.DataFrame([{"seed": seed, "model": m, "stop_reason": r, "converged": r == CONVERGED}
                         for seed, fits in stops.items() for m, r in fits.items()])


def test_the_gate_counts_seeds_whose_compared_networks_all_converged_and_sizes_the_rate_needed():
    every = {m: "patience" for m in (*NEURAL_LAMBDARANK, "GSF(2) with d")}
    # Seed 1: DNN ran to the cap; seed 2: GSF(2) with d diverged; seed 3: all converged.
    budget = _budget({1: {**every, "DNN": "step cap"}, 2: {**every, "GSF(2) with d": "diverged"}, 3: every})
    odds = _gate_odds(budget, planned=5).set_index("claim")

    trees = odds.loc["trees_beat_networks"]  # the five λRank networks
    assert trees.networks == 5 and trees.seeds == 3 and trees.passed == 2
    assert trees.a_seed == pytest.approx(2 / 3, abs=1e-3)  # DNN 2 of 3, the others 3 of 3
    assert trees.every_seed == pytest.approx((2 / 3) ** 5, abs=1e-4)
    assert trees.rate_needed == pytest.approx(GATE_ODDS ** (1 / 25), abs=1e-4)
    # GSF(2) and GSF(2) with d: the trees in the comparison are not networks, so not counted.
    differences = odds.loc["differences_matter_more_to_trees"]
    assert differences.networks == 2 == sum(m in every for m in COMPARED["differences_matter_more_to_trees"])
    assert differences.passed == 2 and differences.a_seed == pytest.approx(2 / 3, abs=1e-3)
    # No softmax network was recorded, so the claims over them alone are left out, and the
    # claims over both losses count the recorded ones.
    assert "gbt_softmax_beats_networks" not in odds.index
    assert odds.loc["softmax_helps_networks"].networks == 5
    # A network a seed's summary lacks counts as unconverged there.
    lacking = _gate_odds(_budget({1: every, 2: {m: r for m, r in every.items() if m != "SetRank"}}), planned=5)
    assert lacking.set_index("claim").loc["trees_beat_networks", "passed"] == 1
    # A network converged everywhere needs no more: at rate 1 every seed passes.
    assert _gate_odds(_budget({1: every, 2: every}), planned=5).every_seed.eq(1).all()
