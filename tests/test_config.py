"""ltrlib.config: the one parser of list-valued notebook parameters."""

import pytest

from ltrlib.config import parse_list


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
