"""ltrlib.fidelity.beside: one paper's checks in two runs' one-seed ledgers, side by side."""

import json

import pandas as pd

from ltrlib.fidelity.beside import ledgers_beside, setup_difference

CLAIMS = ["source", "claim", "kind", "scope", "beyond", "ours", "paper", "evidence"]


def _run(folder, verdicts, *, scale="small", seed=0, extra=None):
    """A run folder with a ledger: ``verdicts`` maps (claim, scope) to our verdict; one
    check of another paper and one beyond the paper's scopes ride along, and are not counted."""
    folder.mkdir()
    rows = [("noniid", c, "claim", s, False, v, "holds", f"{c} {s}: {v}") for (c, s), v in verdicts.items()]
    rows += [("noniid", "extra", "claim", "beyond", True, "holds", "holds", "beyond the paper"),
             ("foltr", "other", "claim", "Type 1", False, "does not hold", "holds", "another paper")]
    pd.DataFrame(rows, columns=CLAIMS).to_csv(folder / "fidelity_claims.csv", index=False)
    pd.DataFrame([("noniid", c, s, "A vs B", 1.0 if v == "holds" else 0.2) for (c, s), v in verdicts.items()],
                 columns=["source", "claim", "scope", "comparison", "effect_ratio"]).to_csv(
        folder / "fidelity_effects.csv", index=False)
    params = {"dataset": "synthetic", "data_dir": "", "scale": scale, "seed": seed, **(extra or {})}
    (folder / "run.json").write_text(json.dumps({"params": params, "notebooks": {"03_client_models": {
        "status": "completed", "parameters": {**params, "run_id": folder.name}}}}))
    return folder


def test_two_ledgers_side_by_side_count_and_list_the_verdicts_that_moved(tmp_path):
    small = _run(tmp_path / "small", {("a", "x"): "holds", ("b", "x"): "does not hold", ("c", "y"): "holds"})
    paper = _run(tmp_path / "paper", {("a", "x"): "holds", ("b", "x"): "holds", ("c", "y"): "not decided"},
                 scale="paper")
    side = ledgers_beside(small, paper, "noniid", ("scale small", "scale paper"))
    assert len(side.counted) == 3 and len(side.both) == 4  # the check beyond the paper is kept, not counted
    assert side.verdicts.to_dict() == {"scale small": {"does not hold": 1, "holds": 2, "not decided": 0},
                                       "scale paper": {"does not hold": 0, "holds": 2, "not decided": 1}}
    assert sorted(side.moved.index) == [("b", "x"), ("c", "y")]
    assert side.transitions.set_index(["ours (scale small)", "ours (scale paper)"]).checks.to_dict() == {
        ("does not hold", "holds"): 1, ("holds", "not decided"): 1}
    assert side.ratios.loc[("b", "x", "A vs B")].tolist() == [0.2, 1.0]
    ratios = side.ratios_markdown("Ratios").splitlines()
    assert ratios[:2] == ["Ratios:", ""] and "effect_ratio (scale small)" in ratios[2]
    assert [line.split("|")[1:3] for line in ratios[4:7]] == [[" a       ", " x       "], [" b       ", " x       "],
                                                          [" c       ", " y       "]]
    assert ledgers_beside(small, small, "noniid", ("x", "x")).labels == ("first, x", "second, x")


def test_setup_difference_names_every_parameter_and_the_seed_that_differ(tmp_path):
    a = _run(tmp_path / "a", {("a", "x"): "holds"})
    assert setup_difference(a, _run(tmp_path / "b", {("a", "x"): "holds"})) == {}
    assert setup_difference(a, _run(tmp_path / "c", {}, scale="paper", seed=3, extra={"n_trials": 5})) == {
        "run": {"n_trials": (None, 5), "scale": ("small", "paper"), "seed": (0, 3)}}


def test_today_rebuilds_both_ledgers_from_the_tables_not_from_what_the_runs_wrote(tmp_path):
    """Runs made by different code wrote their ledgers with different checks; ``today``
    compares them by today's checks. The same recorded seed twice, one copy's written ledger
    falsified: as written, verdicts move; rebuilt, none does."""
    import shutil

    from ltrlib import config

    seed = config.PROJ_ROOT / "reports" / "ledger-small" / "seeds" / "seed0"
    a, b = shutil.copytree(seed, tmp_path / "a"), shutil.copytree(seed, tmp_path / "b")
    written = pd.read_csv(b / "fidelity_claims.csv")
    written.loc[written.source == "noniid", "ours"] = "holds"
    written.to_csv(b / "fidelity_claims.csv", index=False)
    assert len(ledgers_beside(a, b, "noniid").moved) > 0
    side = ledgers_beside(a, b, "noniid", today=True)
    assert side.moved.empty and len(side.counted) == 35
    assert (side.counted["ours (first)"] != "holds").any()  # today's verdicts, not the falsified file's
