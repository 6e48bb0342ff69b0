"""ltrlib.sessions: the one parser of list-valued notebook parameters, and how a notebook
kernel shows warnings."""

import pytest

from ltrlib import sessions
from ltrlib.sessions import parse_list


def test_parse_list_casts_strips_and_skips_blank_items():
    assert parse_list("0, 0.5,,1", float, "etas") == [0.0, 0.5, 1.0]
    assert parse_list(" type1 ,type2_R1", name="settings") == ["type1", "type2_R1"]
    assert parse_list("2,10", int, "type2_R1_B_sweep") == [2, 10]


def test_parse_list_names_the_parameter_and_the_bad_item():
    with pytest.raises(ValueError, match=r"etas: 'x' is not a valid float"):
        parse_list("0,x", float, "etas")
    with pytest.raises(ValueError, match=r"sessions: '2.5' is not a valid int"):
        parse_list("1,2.5", int, "sessions")


def test_parse_list_refuses_an_empty_list_unless_allowed():
    with pytest.raises(ValueError, match=r"rankers: empty list ' , '"):
        parse_list(" , ", name="rankers")
    assert parse_list("", float, "mu_grid", allow_empty=True) == []


def test_a_notebook_kernel_shows_each_warning_once_as_a_plain_line(monkeypatch, capsys):
    import sys
    import types
    import warnings

    monkeypatch.setitem(sys.modules, "ipykernel", types.ModuleType("ipykernel"))
    monkeypatch.setattr(warnings, "showwarning", warnings.showwarning)  # restored after the test
    monkeypatch.setattr(sessions, "_SHOWN_WARNINGS", set())
    sessions.session()
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        for _ in range(2):
            warnings.warn("Split1 left out: too few queries", UserWarning)
        warnings.warn("old API", FutureWarning)
    out, err = capsys.readouterr()
    assert out == "⚠ Split1 left out: too few queries\n⚠ FutureWarning: old API\n" and err == ""
