"""A study's records: its ``design.json`` (`StudyDesign`) and each recorded seed's
``seed.json`` (`SeedRecord`), as `ltrlib.manifest.RunManifest` is a run's ``run.json``.

Each class is the one place that reads, checks and writes its file, so a new field, or a
new layout, is one edit here; nothing else in the package parses them (a test reads every
module for a JSON read of either file). Damaged files are refused naming the file and what
is wrong (`ltrlib.records.read_json`), and every write is atomic (`ltrlib.atomic`).

Both behave as read-only mappings of their file's fields, in the file's order, so that the
studies' summaries, `ltrlib.fidelity.across.rule_version` and the design builders' callers
read them as they read the plain dicts before them; ``to_json`` gives the file's value.

``schema_version`` says which layout a file has. Every file written so far, the committed
studies' included, has layout 1 and no such field: a file without one reads as version 1,
and a version-1 record is written without it, so a study's files stay byte for byte what
they were. A later layout writes its number; a number newer than this package knows is
refused by name.

They sit in the data layer, beside `ltrlib.manifest`, so that an analysis that reads a
committed study (`ltrlib.bilambdamart.preregistration`'s verdicts) reads it through them; the
seed folders themselves (how a finished run becomes a record) are `ltrlib.studies.records`'.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Sequence

from ltrlib.atomic import atomic_write_text
from ltrlib.records import RecordError, read_json

__all__ = ["DESIGN_FILE", "DESIGN_KEYS", "SCHEMA_VERSION", "SEED_FILE", "SeedRecord", "StudyDesign"]

DESIGN_FILE = "design.json"
SEED_FILE = "seed.json"
#: 1: the layout of every study to 2026-11, with no ``schema_version`` field.
SCHEMA_VERSION = 1
#: What every study's ``design.json`` holds (`ltrlib.studies.bilambdamart.study_design`,
#: `ltrlib.studies.neural.neural_design`, `ltrlib.studies.ledger.ledger_design`).
DESIGN_KEYS = ("study", "profile", "dataset", "scale", "seeds")
#: What every ``seed.json`` holds; the rest (``seed``, ``run``, ``notebook_seconds``,
#: ``fit_seconds``, ``worker``) was added over time, ``worker`` last, and older records lack it.
SEED_KEYS = ("wall_seconds", "metrics")


class _StudyRecord(Mapping):
    """A study record's fields as a read-only mapping, with its file, the keys it must hold,
    and its schema version."""

    FILE = ""
    REQUIRED: tuple[str, ...] = ()

    def __init__(self, fields: Mapping[str, Any], path: str | os.PathLike | None = None):
        path = Path(path) if path is not None else Path(self.FILE)
        if not isinstance(fields, Mapping):
            raise RecordError(path, f"a study record is a JSON object, not {type(fields).__name__}")
        missing = [k for k in self.REQUIRED if k not in fields]
        if missing:
            raise RecordError(path, f"lacks {', '.join(map(repr, missing))}")
        version = fields.get("schema_version", 1)
        if isinstance(version, bool) or not isinstance(version, int) or not 1 <= version <= SCHEMA_VERSION:
            raise RecordError(path, f"schema_version {version!r} is not one this ltrlib reads (1 to "
                              f"{SCHEMA_VERSION}); a newer ltrlib wrote it")
        self._fields = dict(fields)

    @classmethod
    def _read(cls, folder: str | os.PathLike, keys: Sequence[str] = ()):
        path = cls.path(folder)
        return cls(read_json(path, keys=tuple(cls.REQUIRED) + tuple(keys)), path)

    @classmethod
    def path(cls, folder: str | os.PathLike) -> Path:
        """Where the record of ``folder`` (a study's, or a recorded seed's) lives."""
        return Path(folder) / cls.FILE

    @classmethod
    def exists(cls, folder: str | os.PathLike) -> bool:
        return cls.path(folder).exists()

    def __getitem__(self, key: str) -> Any:
        return self._fields[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._fields)

    def __len__(self) -> int:
        return len(self._fields)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._fields!r})"

    @property
    def schema_version(self) -> int:
        return self._fields.get("schema_version", 1)

    def to_json(self) -> dict[str, Any]:
        """The file's value: the fields in their order (``schema_version`` only from layout 2)."""
        return dict(self._fields)

    def write(self, folder: str | os.PathLike) -> Path:
        """Write the record into ``folder`` atomically, as every study record has been written
        (one-space indent, UTF-8 as is, a final newline)."""
        text = json.dumps(self.to_json(), indent=1, ensure_ascii=False) + "\n"
        return atomic_write_text(Path(folder) / self.FILE, text)


class StudyDesign(_StudyRecord):
    """A study's ``design.json``: its seeds, budgets, endpoint and rule, fixed before its first
    seed (the module docstring). The fields beyond `DESIGN_KEYS` are the study's own (a
    bilambdamart study's ``parameters``, ``endpoint`` and ``rule``; a neural study's
    ``source``; a ledger study's ``notebooks`` and its rule's terms)."""

    FILE = DESIGN_FILE
    REQUIRED = DESIGN_KEYS

    @classmethod
    def read(cls, study_dir: str | os.PathLike, keys: Sequence[str] = ()) -> StudyDesign:
        """The design of ``study_dir``, holding `DESIGN_KEYS` and ``keys``; `RecordError`
        naming the file when it is missing or damaged."""
        return cls._read(study_dir, keys)

    @property
    def study(self) -> str:
        return self["study"]

    @property
    def profile(self) -> str:
        return self["profile"]

    @property
    def seeds(self) -> list[int]:
        return list(self["seeds"])

    def differs(self, other: Mapping[str, Any]) -> list[str]:
        """The fields in which ``other`` (a design as built now) is another design, sorted;
        the schema version is how a design is written, not what it says."""
        mine, theirs = self.to_json(), dict(other)
        mine.pop("schema_version", None)
        theirs.pop("schema_version", None)
        return sorted(k for k in set(mine) | set(theirs) if mine.get(k) != theirs.get(k))


class SeedRecord(_StudyRecord):
    """A recorded seed's ``seed.json`` (`ltrlib.studies.records._record`): the seed, its run, its wall time, its
    notebooks' seconds and fit seconds, the Dask worker it ran on and its notebooks' metrics."""

    FILE = SEED_FILE
    REQUIRED = SEED_KEYS

    @classmethod
    def read(cls, seed_dir: str | os.PathLike) -> SeedRecord:
        """The record of ``seed_dir``; `RecordError` naming the file when missing or damaged."""
        return cls._read(seed_dir)

    @property
    def wall_seconds(self) -> float:
        return self["wall_seconds"]

    @property
    def metrics(self) -> dict:
        return self["metrics"]
