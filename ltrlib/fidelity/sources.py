"""What the fidelity ledger reads from a run: the tables the notebooks write, and the run's
setup, to compare runs that differ in their seed only.

A table is ``tables/<notebook>/<name>.csv`` under the run directory (`ltrlib.report.Reporter`).
Each paper module names the tables it reads in its own constants and gathers them as its
``READS`` (`reads_of`), which its paper's registration carries
(`ltrlib.fidelity.ledger.Paper`'s ``reads``): a new paper's tables are declared once, in its
module. A missing table is reported by the path a reader can look for.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ltrlib import records, sessions
from ltrlib.manifest import FILE as MANIFEST_FILE
from ltrlib.manifest import RunManifest

__all__ = ["Reads", "lacking_numbers", "one_setup_at_several_seeds", "read_table", "recorded_seeds",
           "reads_of", "require_numbers", "run_setup", "table_path", "upgrade_command"]

#: What a paper's checks read: ``{notebook: (table, ...)}`` (a paper module's ``READS``,
#: registered with it as `ltrlib.fidelity.ledger.Paper`'s ``reads``).
Reads = Mapping[str, tuple[str, ...]]


def reads_of(*tables: tuple[str, str]) -> dict[str, tuple[str, ...]]:
    """``{notebook: (table, ...)}`` of ``(notebook, table)`` pairs, in order, each once: a
    paper module's ``READS``, built from the very constants its readers name."""
    out: dict[str, tuple[str, ...]] = {}
    for notebook, name in tables:
        if name not in out.get(notebook, ()):
            out[notebook] = (*out.get(notebook, ()), name)
    return out


def table_path(notebook: str, name: str) -> Path:
    """Where ``notebook`` writes table ``name``, relative to the run directory."""
    return Path("tables") / notebook / f"{name}.csv"


def read_table(run_dir: str | Path, notebook: str, name: str, missing: list[str]) -> pd.DataFrame | None:
    """The table, or None with its path appended to ``missing``; a damaged one is refused,
    naming it (`ltrlib.records.read_table`). A paper module names its tables by the
    constants its ``READS`` is built from."""
    rel = table_path(notebook, name)
    path = Path(run_dir) / rel
    if not path.exists():
        missing.append(rel.as_posix())
        return None
    return records.read_table(path)


#: A seed's record folder, as `ltrlib.studies` names it (``seed<N>``, no leading zero).
SEED_FOLDER = re.compile(r"seed(0|[1-9][0-9]*)")


def recorded_seeds(study_dir: str | Path) -> dict[int, Path]:
    """A study's finished seed records, ``seeds/seed<N>/`` by seed, in seed order: a record is
    complete once its ``seed.json`` is there (`ltrlib.studies.record_seed` renames a record
    into place whole). Another folder there (a user's ``seed0.bak``) is no record: ignored,
    with a warning naming it; hidden ones (``.seed<N>.*``, a record being written) silently."""
    found, strays = {}, []
    for d in sorted((Path(study_dir) / "seeds").glob("*")):
        match = SEED_FOLDER.fullmatch(d.name)
        if match and (d / "seed.json").exists():
            found[int(match.group(1))] = d
        elif not match and d.is_dir() and not d.name.startswith("."):
            strays.append(d.name)
    if strays:
        warnings.warn(f"{Path(study_dir) / 'seeds'}: ignored {', '.join(strays)}, not seed records (a seed's "
                      "folder is seed<N>)", UserWarning, stacklevel=2)
    return dict(sorted(found.items()))


def lacking_numbers(run_dir: str | Path, reads: Reads) -> list[str]:
    """The marked tables ``reads`` takes as numbers (its ``<table>_numbers``; every paper's:
    `ltrlib.fidelity.ledger.notebook_tables`) that ``run_dir`` holds printed (``<table>.csv``)
    but without their numbers, as paths under it: a run or seed record saved before marked
    tables kept their numbers, whose claims on them would read as "not available"
    (`upgrade_command` adds them)."""
    out = []
    for notebook, names in reads.items():
        for name in (n for n in names if n.endswith("_numbers")):
            numbers = table_path(notebook, name)
            printed = numbers.with_name(f"{name.removesuffix('_numbers')}.csv")
            if (Path(run_dir) / printed).exists() and not (Path(run_dir) / numbers).exists():
                out.append(printed.as_posix())
    return out


def require_numbers(recorded: Mapping[int, Path], reads: Reads, reader: str = "the ledger") -> None:
    """Refuse a recorded seed (``{seed: record}``) holding marked tables of ``reads`` without
    their numbers (`lacking_numbers`: a record saved before tables kept them): ``reader`` would read the
    claims on them as "not available" and turn their verdicts across seeds silently.
    ValueError naming the record, its tables and the command that adds the numbers."""
    for seed, d in recorded.items():
        lacking = lacking_numbers(d, reads)
        if lacking:
            raise ValueError(f"seed {seed}'s record {d} holds marked tables without their numbers "
                             f"({', '.join(lacking)} lack <table>_numbers.csv): it was saved before marked "
                             f"tables kept their numbers, and {reader} would read the claims on them as not "
                             f"available; add them with `{upgrade_command(d)}` (docs/fidelity.md), then "
                             "summarise again")


def upgrade_command(record: str | Path) -> str:
    """The command that adds a record's missing numbers (`ltrlib.fidelity.upgrade`), for the
    messages that refuse a record `lacking_numbers` finds wanting."""
    return f"{sessions.cli_command()} upgrade {record}"


def run_setup(run_dir: str | Path, notebooks: Iterable[str] = ()) -> tuple[int, dict[str, Any]]:
    """A run's seed and the rest of what it ran with: the run's parameters and each
    notebook's, without seed and run id, from its ``run.json``. ValueError, naming the run:
    no ``run.json``, no seed, or one of ``notebooks`` not completed."""
    manifest = RunManifest.require(run_dir)
    manifest.require_completed(notebooks, run_dir)
    run = dict(manifest.params)
    seed = run.pop("seed", None)
    run.pop("run_id", None)
    setup = {"run": run}
    for nb in notebooks or manifest.notebooks:
        # A notebook's parameters repeat the run's; only what it ran otherwise is its own.
        entry = manifest.notebooks.get(nb)
        params = entry.parameters if entry else {}
        seed = params.get("seed", seed)
        setup[nb] = {k: v for k, v in params.items() if k not in ("seed", "run_id") and run.get(k, object()) != v}
    if seed is None:
        raise ValueError(f"{Path(run_dir) / MANIFEST_FILE} records no seed")
    return int(seed), setup


def one_setup_at_several_seeds(run_dirs: Sequence[str | Path], notebooks: Iterable[str] = ()) -> list[int]:
    """The seeds of ``run_dirs``, checked to be one setup at several seeds (`run_setup`):
    ValueError, naming the runs, for fewer than two runs, two runs of one seed, or runs
    whose other parameters differ (the notebooks compared: ``notebooks``, else those both
    ran)."""
    notebooks = tuple(notebooks)
    if len(run_dirs) < 2:
        raise ValueError(f"comparing runs across seeds needs at least two runs, got {len(run_dirs)}")
    seeds: dict[int, Path] = {}
    reference = None
    for run_dir in map(Path, run_dirs):
        seed, setup = run_setup(run_dir, notebooks)
        if seed in seeds:
            raise ValueError(f"{run_dir} and {seeds[seed]} are both seed {seed}")
        seeds[seed] = run_dir
        if reference is None:
            reference = (run_dir, setup)
            continue
        other = reference[1]
        differ = sorted(f"{part}.{key}" if part != "run" else key
                        for part in set(setup) & set(other)
                        for key in set(setup[part]) | set(other[part]) if setup[part].get(key) != other[part].get(key))
        if differ:
            raise ValueError(f"{run_dir} and {reference[0]} differ in {differ}, not only in the seed")
    return list(seeds)
