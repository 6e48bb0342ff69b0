"""Damaged study records and tables, as the user meets them (``ltrlib study ... --summarise-only``,
``ltrlib fidelity``): one case per kind of damage, each refused with a message naming the file
and what is wrong, and nothing the user owns changed (`ltrlib.records`). Laid out as the LETOR
readers' matrix (tests/data/test_readers.py)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from ltrlib import cli, config, records
from ltrlib import studies as study

CURVES = "tables/09_click_bias/click_curves.csv"
LEDGER = ["study", "ledger", "--study", "L", "--scale", "tiny", "--seeds", "0,1", "--summarise-only", "--no-progress"]


@pytest.fixture
def reports(tmp_path, monkeypatch):
    """A ledger study ``L`` (seeds 0 and 1) with seed 0 recorded, and a run ``R``, each
    holding one table the ledger reads (notebook 09's click curves), as the project writes
    them."""
    monkeypatch.setattr(config, "REPORTS_DIR", tmp_path)
    study._check_design(tmp_path / "L", study.ledger_design("L", "tiny", seeds=(0, 1)))
    curves = pd.DataFrame([{"model": m, "eta": eta, "sessions": n, "metric": "ndcg@10",
                            "value": 0.6 + (0.05 if m == "XGB unbiased" else 0.0)}
                           for m in ("XGB unbiased", "XGB biased") for eta in (0.0, 1.0) for n in (300, 3000)])
    for folder in (tmp_path / "L" / "seeds" / "seed0", tmp_path / "R"):
        (folder / CURVES).parent.mkdir(parents=True)
        (folder / CURVES).write_text(curves.to_csv(index=False))
    seed = {"seed": 0, "run": "L-seed0", "wall_seconds": 60.0, "metrics": {}, "worker": ""}
    (tmp_path / "L" / "seeds" / "seed0" / "seed.json").write_text(json.dumps(seed, indent=1) + "\n")
    return tmp_path


def _files(root):
    return {p.relative_to(root).as_posix(): p.read_bytes() if p.is_file() else None for p in root.rglob("*")}


def _cut(text: str) -> str:
    return text[:len(text) // 2]


def _cut_mid_line(text: str) -> str:
    """The table with its last line cut inside its last number (0.6 -> 0.), which pandas
    reads as another number without a word."""
    return text.rstrip("\n")[:-1]


#: (case, file damaged, damage (old text -> new bytes or None to delete), command, words the
#: message must hold besides the file's path)
BAD = [
    ("design cut short", "L/design.json", lambda t: _cut(t).encode(), LEDGER,
     "is not valid JSON (Unterminated string"),
    ("design empty", "L/design.json", lambda t: b"", LEDGER, "is empty (0 bytes)"),
    ("design a list", "L/design.json", lambda t: b"[0, 1]\n", LEDGER,
     "holds an array where an object was expected"),
    ("design not UTF-8", "L/design.json", lambda t: t.replace("tiny", "t\xefny").encode("latin-1"), LEDGER,
     "is not UTF-8 text (byte 0xef"),
    ("design without its seeds", "L/design.json", lambda t: b'{"study": "L"}\n', LEDGER,
     "lacks 'profile', 'dataset', 'scale', 'seeds'"),
    ("design deleted after a seed", "L/design.json", lambda t: None, LEDGER,
     "does not exist, but the study holds what seeds ran under it (seeds/seed0); a design is fixed before its "
     "first seed and never re-created"),
    ("seed record cut short", "L/seeds/seed0/seed.json", lambda t: _cut(t).encode(), LEDGER,
     "the file ends before its JSON does, cut short"),
    ("seed table empty", f"L/seeds/seed0/{CURVES}", lambda t: b"", LEDGER, "is empty (0 bytes)"),
    ("seed table of no columns", f"L/seeds/seed0/{CURVES}", lambda t: b"\n", LEDGER, "holds no columns"),
    ("seed table cut mid-line", f"L/seeds/seed0/{CURVES}", lambda t: _cut_mid_line(t).encode(), LEDGER,
     "its last line is cut (the file does not end with a newline)"),
    ("run table empty", f"R/{CURVES}", lambda t: b"", ["fidelity", "R"], "is empty (0 bytes)"),
    ("run table cut mid-line", f"R/{CURVES}", lambda t: _cut_mid_line(t).encode(), ["fidelity", "R"],
     "its last line is cut"),
]


@pytest.mark.parametrize("case,damaged,damage,command,words", BAD, ids=[b[0] for b in BAD])
def test_a_damaged_record_or_table_is_refused_naming_it(reports, capsys, case, damaged, damage, command, words):
    path = reports / damaged
    new = damage(path.read_text(encoding="utf-8"))
    if new is None:
        path.unlink()
    else:
        path.write_bytes(new)
    before = _files(reports)
    assert cli.main(command) == 1
    err = capsys.readouterr().err
    assert f"error: {path}: " in err and words in err, err
    assert "Traceback" not in err
    assert _files(reports) == before  # nothing written, re-created or removed


def test_the_undamaged_study_and_run_are_read(reports, capsys):
    """The matrix's study and run, as written: both are read, so each refusal above is its damage."""
    assert cli.main(LEDGER) == 0 and "Across 1 of 2 seeds" in (reports / "L" / "study.md").read_text()
    assert cli.main(["fidelity", "R"]) == 0 and (reports / "R" / "fidelity.md").exists()


def test_a_design_with_a_byte_order_mark_is_read(reports):
    """A BOM (an editor on Windows saving the file) changes no value: accepted, and the file left as it is."""
    design = reports / "L" / "design.json"
    design.write_bytes(b"\xef\xbb\xbf" + design.read_bytes())
    before = design.read_bytes()
    assert cli.main(LEDGER) == 0
    assert design.read_bytes() == before


def test_a_folder_under_seeds_that_is_no_seed_is_ignored_with_a_note(reports):
    """A user's backup copy ``seeds/seed0.bak`` used to stop the summary ("invalid literal for
    int()"); it is no seed record: named in a warning, left alone, and not counted."""
    import shutil

    shutil.copytree(reports / "L" / "seeds" / "seed0", reports / "L" / "seeds" / "seed0.bak")
    (reports / "L" / "seeds" / "seed01").mkdir()  # not how a seed's folder is named either
    backup = _files(reports / "L" / "seeds" / "seed0.bak")
    with pytest.warns(UserWarning, match=r"seeds: ignored seed0\.bak, seed01, not seed records"):
        assert cli.main(LEDGER) == 0
    assert "Across 1 of 2 seeds" in (reports / "L" / "study.md").read_text()
    assert _files(reports / "L" / "seeds" / "seed0.bak") == backup


@pytest.mark.parametrize("where,words", [("missing/dir/x.csv", "the folder {root}/missing/dir does not exist"),
                                         ("R", "is a folder; give a file path")])
def test_fidelity_csv_into_a_folder_that_does_not_exist_is_refused(reports, capsys, where, words):
    """``--csv`` used to create the folders it named; it is refused before any ledger is written."""
    before = _files(reports)
    assert cli.main(["fidelity", "R", "R", "--csv", str(reports / where)]) == 1
    err = capsys.readouterr().err
    assert f"error: --csv {reports / where}: {words.format(root=reports)}" in err, err
    assert _files(reports) == before and not (reports / "missing").exists()


@pytest.mark.parametrize("text,options,words", [
    ("a,b\n1,2\n", {"usecols": ["seconds"]}, "cannot be read as a table: Usecols do not match columns"),
    ('a,b\n1,"2\n', {}, "cannot be read as a table"),
    ("a,b\n1,2", {}, "its last line is cut"),
])
def test_read_table_names_the_file_for_every_refusal(tmp_path, text, options, words):
    path = tmp_path / "t.csv"
    path.write_text(text)
    with pytest.raises(records.RecordError) as e:
        records.read_table(path, **options)
    assert str(e.value).startswith(f"{path}: ") and words in str(e.value) and e.value.path == path
    assert isinstance(e.value, ValueError)


def test_read_json_names_the_file_for_every_refusal(tmp_path):
    with pytest.raises(records.RecordError, match=r"nope\.json: does not exist"):
        records.read_json(tmp_path / "nope.json")
    (tmp_path / "n.json").write_text("3\n")
    with pytest.raises(records.RecordError, match=r"n\.json: holds a number where an array was expected"):
        records.read_json(tmp_path / "n.json", list)
    (tmp_path / "b.json").write_text('{"a": 1,}\n')
    with pytest.raises(records.RecordError, match=r"b\.json: is not valid JSON \(Expecting property name enclosed "
                       r"in double quotes: line 1 column 9\)$"):
        records.read_json(tmp_path / "b.json")
