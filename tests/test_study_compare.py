"""Two ledger studies side by side (`ltrlib.studies.compare`): the ladder of readings names
each step at which a check's verdict moved, on hand-made verdicts whose answers are known,
and on two committed ledger-small seeds registered twice, whose last step must move
nothing (the same seeds)."""

import json
import shutil

import pandas as pd
import pytest

from ltrlib import cli, config, studies as study
from ltrlib.fidelity.across import REASONS_V2, SEED_DEPENDENT
from ltrlib.fidelity.claims import NOT_DECIDED
from ltrlib.studies.compare import ARM, LADDER, _code_words, _undecided, ladder_changes, protocol_changes
from ltrlib.studies.loop import _seed_code


def _reading(rows):
    """A reading's table from ``(source, claim, scope, verdict)`` rows, every one a counted claim."""
    return pd.DataFrame([{"source": s, "claim": c, "kind": "claim", "scope": sc, "beyond": False, "verdict": v}
                         for s, c, sc, v in rows])


def test_the_ladder_names_the_step_at_which_each_verdict_moved():
    first = _reading([("noniid", "mended", "a", "holds"), ("noniid", "ruled", "a", "holds"),
                      ("noniid", "seeded", "a", "holds"), ("foltr", "protocol", "a", "holds"),
                      ("foltr", "gone", "a", "holds"), ("noniid", "still", "a", "holds"),
                      ("noniid", "back", "a", "holds")])
    today = _reading([("noniid", "mended", "a", "does not hold"), ("noniid", "ruled", "a", "holds"),
                      ("noniid", "seeded", "a", "holds"), ("foltr", "protocol", "a", "holds"),
                      ("foltr", "new", "a", "holds"), ("noniid", "still", "a", "holds"),
                      ("noniid", "back", "a", "seed-dependent")])
    by_rule = today.assign(verdict=today.verdict.mask(today.claim == "ruled", NOT_DECIDED)
                           .mask(today.claim == "back", NOT_DECIDED))
    second = by_rule.assign(verdict=by_rule.verdict.mask(by_rule.claim.isin(["seeded", "protocol"]), "does not hold")
                            .mask(by_rule.claim == "back", "holds"))
    out = ladder_changes(dict(zip(LADDER, (first, today, by_rule, second))), "v1", "v2",
                         {"foltr": "07_foltr_noniid: profile (default) → \"paper\""}).set_index("claim")
    assert out.loc["mended", "why"] == "the check, mended since the first study"
    assert out.loc["ruled", "why"] == "the rule (v1 → v2)"
    assert out.loc["seeded", "why"] == "the seeds"
    assert out.loc["protocol", "why"] == "the protocol (07_foltr_noniid: profile (default) → \"paper\") or the seeds"
    assert out.loc["new", "why"] == "a check new since the first study" and pd.isna(out.loc["new", "first"])
    assert out.loc["gone", "why"] == "a check gone since the first study" and pd.isna(out.loc["gone", "second"])
    # Moved at three steps and back where it began: unchanged overall, every step still named.
    back = out.loc["back"]
    assert not back.changed and back.why == "the check, mended since the first study; the rule (v1 → v2); the seeds"
    assert out.loc["still", "why"] == "" and not out.loc["still", "changed"]
    assert out.changed.sum() == 6 and list(out.mended) == [c in ("mended", "back") for c in out.index]


def test_a_protocol_arm_splits_the_last_step_into_the_seeds_and_the_protocol():
    """With the arm's reading (the second study's seeds at the first's protocol) between the
    first study's seeds by the new rule and the second study, a change is the seeds' or the
    protocol's, never "the protocol or the seeds"; a paper whose protocol did not change
    moves at the seeds' step alone; a scope only the new protocol runs says so."""
    protocol = {"foltr": "07_foltr_noniid: profile (default) → \"paper\""}
    by_rule = _reading([("noniid", "seeded", "a", "holds"), ("foltr", "seeds", "a", "holds"),
                        ("foltr", "protocol", "a", "holds"), ("foltr", "both", "a", "holds"),
                        ("foltr", "still", "a", "holds")])
    arm = _reading([("noniid", "seeded", "a", "does not hold"), ("foltr", "seeds", "a", "does not hold"),
                    ("foltr", "protocol", "a", "holds"), ("foltr", "both", "a", NOT_DECIDED),
                    ("foltr", "still", "a", "holds")])
    second = _reading([("noniid", "seeded", "a", "does not hold"), ("foltr", "seeds", "a", "does not hold"),
                       ("foltr", "protocol", "a", "does not hold"), ("foltr", "both", "a", "does not hold"),
                       ("foltr", "still", "a", "holds"), ("foltr", "paper only", "a", "holds")])
    readings = dict(zip(LADDER, (by_rule, by_rule, by_rule, second))) | {ARM: arm}
    out = ladder_changes(readings, "v2", "v2", protocol).set_index("claim")
    assert [c for c in out.columns if c in (*LADDER, ARM)] == [*LADDER[:-1], ARM, LADDER[-1]]  # the arm's before the second's
    assert out.loc["seeded", "why"] == "the seeds" and out.loc["seeds", "why"] == "the seeds"
    assert out.loc["protocol", "why"] == f"the protocol ({protocol['foltr']})"
    assert out.loc["both", "why"] == f"the seeds; the protocol ({protocol['foltr']})"
    assert out.loc["paper only", "why"] == f"the protocol ({protocol['foltr']}): a check only one protocol's runs have"
    assert out.loc["still", "why"] == "" and list(out.by_protocol) == [c in ("protocol", "both") for c in out.index]
    # Without the arm, the same changes are the protocol's or the seeds', and the new scope says so too.
    alone = ladder_changes(dict(zip(LADDER, (by_rule, by_rule, by_rule, second))), "v2", "v2", protocol)
    alone = alone.set_index("claim")
    assert alone.loc["both", "why"] == f"the protocol ({protocol['foltr']}) or the seeds" and not alone.by_protocol.any()
    assert alone.loc["paper only", "why"] == f"the protocol ({protocol['foltr']}) or the seeds: a check only one of them has"


def test_an_arm_between_studies_of_one_protocol_splits_nothing_and_is_refused(tmp_path):
    from ltrlib.studies.compare import _check_arm

    (tmp_path / "T").mkdir()
    (tmp_path / "T" / "design.json").write_text(json.dumps(study.ledger_design("T", "small", rule="v2")))
    with pytest.raises(ValueError, match="--arm T: the two studies ran every paper's notebooks alike"):
        _check_arm(tmp_path / "T", "v2", {}, {"first": {}, "second": {}})


def _manifest(folder, seed, parameters):
    folder.mkdir(parents=True)
    notebooks = {nb: {"status": "completed",
                      "parameters": {"run_id": f"x-seed{seed}", "seed": seed, "scale": "small", **extra}}
                 for nb, extra in parameters.items()}
    (folder / "run.json").write_text(json.dumps({"notebooks": notebooks}))
    return folder


def test_the_protocol_is_what_a_papers_notebooks_ran_with_beyond_their_run_and_seed(tmp_path):
    first = {s: _manifest(tmp_path / "a" / str(s), s, {"03_client_models": {}, "07_foltr_noniid": {}})
             for s in (0, 1)}
    second = {s: _manifest(tmp_path / "b" / str(s), s, {"03_client_models": {},
                                                        "07_foltr_noniid": {"profile": "paper"}})
              for s in (10, 11)}
    assert protocol_changes(first, second) == {"foltr": '07_foltr_noniid: profile (default) → "paper"'}
    assert protocol_changes(first, first) == {}


def test_two_studies_of_the_same_seeds_move_nothing(tmp_path, monkeypatch, capsys):
    """The committed ledger-small seeds registered twice by rule v2, the first with today's
    reading of them as its summary (`reports/ledger-small-reading-v2`), the second's notebook
    07 given another profile: no step moves a verdict (the same seeds, checks and rule), the
    second reading is that committed reading, the protocol and the commits are named, the
    not-decided checks are counted by the rule's reason, and neither study is written to.
    The ladder's steps themselves are the hand-made test's above."""
    committed = config.PROJ_ROOT / "reports"
    reading = pd.read_csv(committed / "ledger-small-reading-v2" / "reading.csv")
    dirs = {}
    for name in ("A", "B"):
        folder = dirs[name] = tmp_path / name
        shutil.copytree(committed / "ledger-small" / "seeds", folder / "seeds")
        (folder / "design.json").write_text(json.dumps(study.ledger_design(name, "small", rule="v2")))
    reading.to_csv(dirs["A"] / "study.csv", index=False)
    for manifest in (dirs["B"] / "seeds").glob("seed*/run.json"):
        run = json.loads(manifest.read_text())
        run["notebooks"]["07_foltr_noniid"]["parameters"]["profile"] = "paper"
        manifest.write_text(json.dumps(run))
    before = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*")}
    monkeypatch.setattr(config, "REPORTS_DIR", tmp_path)
    assert cli.main(["study", "ledger", "--study", "B", "--beside", "A"]) == 0
    out = tmp_path / "B-beside-A"
    assert capsys.readouterr().out.strip() == str(out / "beside.md")
    assert {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*") if p in before} == before  # neither study touched
    changes = pd.read_csv(out / "changes.csv")
    assert not changes[["changed", "mended", "by_rule", "by_seeds"]].any().any() and (changes.why.isna()).all()
    keyed = ["source", "claim", "scope"]
    assert changes.set_index(keyed).second.to_dict() == reading.set_index(keyed).verdict.to_dict()
    text = (out / "beside.md").read_text()
    assert '07_foltr_noniid: profile (default) → "paper"' in text and "Interim" not in text
    assert "has no `study.md` of its own yet" in text
    assert "](figures/verdicts.png)" in text and (out / "figures" / "verdicts.svg").is_file()
    # ledger-small's seeds ran before commits were kept: said so, not as a commit.
    assert {_seed_code(d) for d in (dirs["A"] / "seeds").iterdir()} == {"not recorded"}
    assert "- Code: A's seeds did not record their code; B's seeds did not record their code." in text
    assert _code_words("S", ["36df26aba2", "65e28da5c1; 36df26aba2"]) == "S's seeds ran 36df26aba2, 65e28da5c1; 36df26aba2"
    assert _code_words("S", ["36df26aba2", "not recorded"]) == "S's seeds ran 36df26aba2 (some recorded none)"
    # Every check rule v2 leaves undecided, and only those, says why, in the rule's words.
    undecided = reading.verdict.isin([NOT_DECIDED, SEED_DEPENDENT, "not available"])
    assert (reading.reason.notna() == undecided).all() and set(reading.reason.dropna()) <= set(REASONS_V2)
    counted = reading[(reading.kind == "claim") & ~reading.beyond & reading.verdict.isin([NOT_DECIDED, SEED_DEPENDENT])]
    assert _undecided(reading).checks.sum() == len(counted) > 0
    # A protocol arm: B's seeds with notebook 07 as A ran it. Nothing moves at either of its
    # steps. Two seeds of each study, to keep it short: every verdict is then "not decided".
    for name in ("A", "B"):
        for seed in (2, 3, 4):
            shutil.rmtree(dirs[name] / "seeds" / f"seed{seed}")
    arm = tmp_path / "T"
    shutil.copytree(dirs["A"] / "seeds", arm / "seeds")
    (arm / "design.json").write_text(json.dumps(study.ledger_design("T", "small", notebooks="07", rule="v2")))
    assert cli.main(["study", "ledger", "--study", "B", "--beside", "A", "--arm", "T"]) == 0
    capsys.readouterr()
    changes = pd.read_csv(out / "changes.csv")
    assert ARM in changes and not changes[["by_seeds", "by_protocol"]].any().any()
    assert (changes[ARM] == changes.second).all()
    text = (out / "beside.md").read_text()
    assert "4. B's seeds at A's protocol (T), v2" in text and "5. B, today's checks, v2" in text
    assert "| 4 → 5: the protocol (a paper whose notebooks ran otherwise; the same seeds) |" in text
    assert "The protocol arm T ran B's seeds with those papers' notebooks as A ran them" in text
    # The arm's reading is drawn for FOLTR only: another paper's would be the second study's own, twice.
    head = [line.split("|") for line in text.splitlines() if line.startswith("| ") and line.count("|") > 3]
    arm_rows = [cells[1].strip() for cells in head if cells[2].strip() == "4. B's seeds at A's protocol (T), v2"]
    assert arm_rows == ["FOLTR"]
    # In the ladder's order, though the papers before FOLTR have no fourth reading.
    assert [cells[2].strip()[:2] for cells in head if cells[1].strip() == "FOLTR"] == ["1.", "2.", "3.", "4.", "5."]
    # Arms that are not one are refused by name, before any seed's tables are read.
    wrong = tmp_path / "W"
    shutil.copytree(dirs["B"] / "seeds", wrong / "seeds")
    (wrong / "design.json").write_text(json.dumps(study.ledger_design("W", "small", rule="v2")))
    with pytest.raises(ValueError, match=r"--arm W: it ran foltr's notebooks otherwise than the first study \(07_fol"):
        study.write_study_changes(dirs["A"], dirs["B"], arm_dir=wrong)
    (wrong / "design.json").write_text(json.dumps(study.ledger_design("W", "small", rule="v1")))
    with pytest.raises(ValueError, match="--arm W: registered with rule v1, the study with v2"):
        study.write_study_changes(dirs["A"], dirs["B"], arm_dir=wrong)
    provenance = arm / "seeds" / "seed1" / "provenance.json"
    provenance.write_text(json.dumps({**json.loads(provenance.read_text()), "fingerprint": "0123456789abcdef"}))
    with pytest.raises(ValueError, match=r"--arm T: seed 1 is not shown to have run on the study's data \(synthetic, "
                       r"scale small, seed 1 \(data 0123456789abcdef\), the study's synthetic"):
        study.write_study_changes(dirs["A"], dirs["B"], arm_dir=arm)
    shutil.rmtree(arm / "seeds" / "seed1")
    with pytest.raises(ValueError, match=r"--arm T: it has not recorded seeds \[1\] of the study's"):
        study.write_study_changes(dirs["A"], dirs["B"], arm_dir=arm)
    with pytest.raises(SystemExit, match="--arm: a protocol arm splits"):
        cli.main(["study", "ledger", "--study", "B", "--arm", "T"])
    # A first study without a summary is refused before any seed is read.
    (tmp_path / "C").mkdir()
    (tmp_path / "C" / "design.json").write_text(json.dumps(study.ledger_design("C", "small", rule="v1")))
    with pytest.raises(FileNotFoundError, match=r"C/study.csv: the study has no summary"):
        study.write_study_changes(tmp_path / "C", dirs["B"])
