"""One digest of a run's results with its wall times taken out: the check that a refactoring
changed no number. Run the same batch before and after the change and compare the digests:

    .venv/bin/ltrlib run --scale tiny --run-id before        # on the old commit
    .venv/bin/ltrlib run --scale tiny --run-id after         # on the new one
    .venv/bin/python bench/results_digest.py reports/before reports/after
    .venv/bin/python bench/results_digest.py reports/before reports/after --only 03,04,05

Hashed: every table's CSV (a Markdown table and a table's HTML page render its CSV, so the
CSV stands for them; a Markdown page without one is hashed itself), ``metrics.json``,
``fidelity.csv`` and ``fidelity_claims.csv``. Taken out: CSV columns and metrics.json keys named like a time
(seconds, time, wall, duration, elapsed, eta, ``_s``), and a duration written in text
(``0.7 s`` in a claim's evidence). Per file it says byte-identical, identical once the wall
times are out, or different; the digest covers the second reading.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import re
from pathlib import Path

import pandas as pd

TIME_NAME = re.compile(r"second|time|wall|duration|elapsed|_s$|eta", re.I)
DURATION = re.compile(r"\d+(?:\.\d+)? s\b")
RUN_FILES = ("metrics.json", "fidelity.csv", "fidelity_claims.csv")


def without_wall_times(path: Path) -> bytes:
    raw = path.read_bytes()
    if path.suffix == ".csv":
        frame = pd.read_csv(io.BytesIO(raw))
        frame = frame[[c for c in frame.columns if not TIME_NAME.search(str(c))]]
        return DURATION.sub("T s", frame.to_csv(index=False)).encode()
    if path.suffix == ".json":
        def strip(d):
            return {k: strip(v) if isinstance(v, dict) else v for k, v in d.items() if not TIME_NAME.search(k)}
        return json.dumps(strip(json.loads(raw)), sort_keys=True).encode()
    if path.suffix == ".md":
        return re.sub(r"[ \-:]+", " ", DURATION.sub("T s", raw.decode("utf-8"))).encode()
    return raw


def result_files(run: Path, notebooks: list[str]) -> list[Path]:
    tables = [p.relative_to(run) for p in sorted((run / "tables").rglob("*")) if p.is_file()
              and not (p.suffix in (".md", ".html") and p.with_suffix(".csv").exists())
              and (not notebooks or p.parent.name[:2] in notebooks)]
    return tables + ([] if notebooks else [Path(n) for n in RUN_FILES if (run / n).exists()])


def digest(run: Path, files: list[Path]) -> str:
    h = hashlib.sha256()
    for rel in files:
        h.update(rel.as_posix().encode() + hashlib.sha256(without_wall_times(run / rel)).digest())
    return h.hexdigest()[:16]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="run folders (reports/<run_id>)")
    parser.add_argument("--only", default="", help="notebook numbers, comma-separated (their tables only)")
    args = parser.parse_args()
    notebooks = [n.strip() for n in args.only.split(",") if n.strip()]
    files = {run: result_files(run, notebooks) for run in args.runs}
    for run, own in files.items():
        print(f"{run}: {len(own)} result files, digest {digest(run, own)}")
    first, *others = args.runs
    for other in others:
        common = sorted(set(files[first]) & set(files[other]))
        same = [f for f in common if (first / f).read_bytes() == (other / f).read_bytes()]
        timed = [f for f in common if f not in same
                 and without_wall_times(first / f) == without_wall_times(other / f)]
        differ = [f for f in common if f not in same and f not in timed]
        print(f"{first} vs {other}: {len(same)} byte-identical, {len(timed)} identical but for wall times, "
              f"{len(differ)} different; only in one: {sorted(set(files[first]) ^ set(files[other]))}")
        for f in differ:
            print(f"  differs: {f}")


if __name__ == "__main__":
    main()
