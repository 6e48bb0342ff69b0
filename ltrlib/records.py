"""Reading the project's own records back: a study's ``design.json`` and ``seed.json``, a run's
``metrics.json``, and the CSV tables the fidelity ledger and the studies' summaries read. One
place, so that a damaged file is refused the same way wherever it is read: a `RecordError`
(a ValueError, which the command line prints as one line) naming the file and what is wrong
with it, instead of a parser's message that names neither (pandas' "No columns to parse from
file", json's "Unterminated string starting at: line 4 column 13") or an AttributeError some
lines later.

Every record and table is written whole (`ltrlib.atomic`), so a file that is empty, ends
mid-line or holds half a JSON value was damaged after it was written (a disk filled up, a sync
cut it, a hand edit went wrong), and nothing is read from it: a record read in part would
change a study's evidence without a word.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

__all__ = ["RecordError", "read_json", "read_table"]

#: JSON's names for what ``json.loads`` returns, for messages about what a file holds.
_JSON_NAMES = {dict: "an object", list: "an array", str: "a string", int: "a number", float: "a number",
               bool: "true or false", type(None): "null"}


class RecordError(ValueError):
    """A record or table the project wrote that cannot be read as written: ``path`` and what is
    wrong with it (``problem``)."""

    def __init__(self, path: str | os.PathLike, problem: str):
        self.path, self.problem = Path(path), problem
        super().__init__(f"{path}: {problem}")


def _restore_hint(path: Path) -> str:
    return (f"the project writes it whole, so it was damaged afterwards; restore it (`git checkout -- {path}` "
            "where it is committed) or rerun what wrote it")


def read_json(path: str | os.PathLike, expect: type = dict, keys: Iterable[str] = ()) -> Any:
    """The JSON value in ``path``, checked to be an ``expect`` (an object by default) holding
    ``keys``. `RecordError` naming the file: missing, empty, not UTF-8, not JSON (with the
    line and column, and whether the file ends before the value does), another kind of
    value, or a key missing.

    A UTF-8 byte order mark is accepted: editors on Windows add one when a file is saved, it
    changes no value, and the LETOR readers and pandas accept it too; refusing it would send a
    user hunting for an invisible character."""
    path = Path(path)
    if not path.is_file():
        raise RecordError(path, "is a folder, not a JSON file" if path.is_dir() else "does not exist")
    data = path.read_bytes()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise RecordError(path, f"is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})") from None
    if not text.strip():
        raise RecordError(path, f"is empty ({len(data)} bytes); {_restore_hint(path)}")
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        cut = exc.pos >= len(text.rstrip()) or exc.msg.startswith("Unterminated string")
        raise RecordError(path, f"is not valid JSON ({exc.msg}: line {exc.lineno} column {exc.colno})"
                          + (f": the file ends before its JSON does, cut short; {_restore_hint(path)}" if cut else "")
                          ) from None
    if not isinstance(value, expect):
        raise RecordError(path, f"holds {_JSON_NAMES.get(type(value), type(value).__name__)} where "
                          f"{_JSON_NAMES.get(expect, expect.__name__)} was expected")
    missing = [k for k in keys if k not in value]
    if missing:
        raise RecordError(path, f"lacks {', '.join(map(repr, missing))}")
    return value


def read_table(path: str | os.PathLike, **read_csv: Any) -> pd.DataFrame:
    """The CSV table at ``path`` (``read_csv``: `pandas.read_csv`'s options), refused with a
    `RecordError` naming it when it is missing, empty, has no header, or its last line is cut.

    A table is cut when its last byte is not a newline: every table the project writes is
    pandas' ``to_csv``, which ends every line, the last one too, with a newline (a table of no
    columns is a lone newline), and is written whole (`ltrlib.atomic`). pandas itself reads a
    cut last line as a shorter row (a number cut to fewer digits, missing cells as NaN), which
    would change the evidence a claim is decided on without a word."""
    path = Path(path)
    if not path.is_file():
        raise RecordError(path, "is a folder, not a table" if path.is_dir() else "does not exist")
    with open(path, "rb") as f:
        size = f.seek(0, os.SEEK_END)
        if size == 0:
            raise RecordError(path, f"is empty (0 bytes), not even a header line; {_restore_hint(path)}")
        f.seek(-1, os.SEEK_END)
        if f.read(1) != b"\n":
            raise RecordError(path, f"its last line is cut (the file does not end with a newline); "
                              f"{_restore_hint(path)}")
    try:
        return pd.read_csv(path, **read_csv)
    except pd.errors.EmptyDataError:
        # Only what pandas writes for a frame of no columns (a lone newline) or blank lines get here.
        raise RecordError(path, "holds no columns (blank lines only): no table the ledger or a study reads "
                          "is empty, so it was emptied or written from an empty frame") from None
    except ValueError as exc:  # pandas' parser and dtype errors, a wrong encoding: none names the file
        raise RecordError(path, f"cannot be read as a table: {exc}") from None
