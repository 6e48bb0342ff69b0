"""Finished FOLTR runs kept on disk, so that an interrupted grid resumes where it stopped.

Notebook 07 at the paper's protocol is about 970 runs and hours on 2 cores: a Ctrl-C, a
killed kernel or the end of a session must not lose the runs already done. `RunStore`
writes each finished run (`ltrlib.foltr.simulate.run_job`'s result) as one file, atomically,
named by a key of everything that fixes its numbers:

- the `Job` (setting, ranker, clicks, remedy, seed, T, ...) and whether its ranker is kept;
- the data: `ltrlib.provenance`'s fingerprint of the training and test sets, the label
  scale and the judged intents;
- the code: the sources of `ltrlib.foltr` and `ltrlib.metrics` (the simulation and its
  NDCG), so that a run made by other code is computed again, never served.

A run is either a whole file or absent; a file that cannot be read (a disk that filled
up, a file from another pickle protocol) is computed again and replaced. Nothing else
reads or changes the folder: it is a cache of a run folder's own making, and ``rm -r``
of it costs only the time to compute the runs again.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
from collections.abc import Iterator
from dataclasses import asdict
from functools import cache
from pathlib import Path

import numpy as np

from ltrlib import provenance
from ltrlib.atomic import atomic_path

#: Bumped when the stored result's layout changes.
_FORMAT = 1

#: The folder of a run folder in which notebook 07 keeps its finished runs: a study's
#: checkpoint carries it, and ``ltrlib study --status`` counts what it holds (`len` of a `RunStore`).
RUNS_FOLDER = ".07_foltr_noniid.runs"
#: A stored run's file name: its key, then this.
_SUFFIX = ".pickle"
#: What reading a stored run raises when its file cannot serve (a disk that filled up, a
#: file from another pickle protocol or code): its run is computed again.
_UNREADABLE = (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError)


@cache
def _code_digest() -> str:
    """A hash of the modules whose code makes a run's numbers."""
    package = Path(__file__).parents[1]
    digest = hashlib.blake2b(digest_size=8)
    for folder in ("foltr", "metrics"):
        for path in sorted((package / folder).glob("*.py")):
            digest.update(f"{folder}/{path.name}".encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _data_digest(data) -> str:
    digest = hashlib.blake2b(digest_size=8)
    digest.update(provenance.describe({"train": data.train, "test": data.test})["fingerprint"].encode())
    digest.update(str(data.n_levels).encode())
    if data.intents is not None:
        digest.update(np.ascontiguousarray(data.intents).tobytes())
    return digest.hexdigest()


class RunStore:
    """Finished runs under ``folder`` (made when the first run is saved)."""

    def __init__(self, folder: str | os.PathLike):
        self.folder = Path(folder)
        self._data: dict[int, str] = {}  # id(FoltrData) -> digest, computed once a call

    def _key(self, data, job, keep_ranker: bool) -> str:
        if id(data) not in self._data:
            self._data[id(data)] = _data_digest(data)
        payload = {"format": _FORMAT, "job": asdict(job), "keep_ranker": bool(keep_ranker),
                   "data": self._data[id(data)], "code": _code_digest()}
        return hashlib.blake2b(json.dumps(payload, sort_keys=True).encode(), digest_size=16).hexdigest()

    def _path(self, data, job, keep_ranker: bool) -> Path:
        return self.folder / f"{self._key(data, job, keep_ranker)}{_SUFFIX}"

    def load(self, data, job, keep_ranker: bool = False):
        """The stored result of ``job`` on ``data``, or None when there is none (or none that reads)."""
        path = self._path(data, job, keep_ranker)
        try:
            with path.open("rb") as f:
                return pickle.load(f)
        except FileNotFoundError:
            return None
        except _UNREADABLE:
            return None  # unreadable: computed again, and the file replaced when saved

    def _files(self) -> Iterator[Path]:
        """The stored runs' files; not a save's temporary file (`ltrlib.atomic.atomic_path`'s
        ``.<key>.<random>.tmp.pickle``), which may vanish the next instant."""
        if self.folder.is_dir():
            yield from (p for p in self.folder.glob(f"*{_SUFFIX}") if not p.name.startswith("."))

    def __len__(self) -> int:
        """How many finished runs the folder holds (0 before the first is saved)."""
        return sum(1 for _ in self._files())

    def rows(self) -> Iterator[tuple[dict, float]]:
        """Each kept run's row (`ltrlib.foltr.simulate.run_job`'s: its setting, data, ranker,
        click model, remedy, ..., measures and seconds) and its file's modification time, which
        dates the run only while the files are this machine's own (a copy that does not keep
        file times, such as a git checkout, dates them all to the copy). A file that does not
        read, or holds no such result, is left out: `load` would compute its run again."""
        for path in self._files():
            try:
                with path.open("rb") as f:
                    result = pickle.load(f)
                saved = path.stat().st_mtime
            except _UNREADABLE:
                continue
            if isinstance(result, tuple) and len(result) == 3 and isinstance(result[1], dict):
                yield result[1], saved

    def save(self, data, job, keep_ranker: bool, result) -> None:
        """Write ``result`` for ``job`` on ``data``, whole or not at all."""
        with atomic_path(self._path(data, job, keep_ranker)) as tmp:
            with tmp.open("wb") as f:
                pickle.dump(result, f, protocol=pickle.HIGHEST_PROTOCOL)
