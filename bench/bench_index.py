"""What building a run's report index costs over a run: once per output (as `Reporter`
did until the index moved to the runner) against once per notebook (as the runner builds
it now), on a finished run's own outputs.

The run's tables and figures are replayed into a scratch copy in the order they were
written (their modification times), with `ltrlib.report.write_index` called after each
output in the first pass and after each notebook's last output in the second. Both passes
build the same final index; the difference is the index-building time a batch spends.

    .venv/bin/python bench/bench_index.py reports/ledger-small-seed0
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from ltrlib.report import write_index


def outputs(run_dir: Path) -> list[tuple[str, list[Path]]]:
    """(notebook, the files one output wrote) in the order written: a table's CSV and
    Markdown, a figure's PNG and caption."""
    found = []
    for kind, primary in (("tables", "*.csv"), ("figures", "*.png")):
        for path in (run_dir / kind).glob(f"*/{primary}"):
            companions = [path.with_suffix(".md")] if kind == "tables" else [path.with_suffix(".caption.txt")]
            found.append((path.stat().st_mtime, path.parent.name, [path, *[c for c in companions if c.exists()]]))
    return [(notebook, files) for _, notebook, files in sorted(found, key=lambda t: (t[0], str(t[2][0])))]


def replay(run_dir: Path, written: list[tuple[str, list[Path]]], per_output: bool) -> tuple[float, int]:
    """Seconds spent in `write_index` replaying ``written``, and how many times it ran."""
    with tempfile.TemporaryDirectory() as scratch:
        target = Path(scratch) / run_dir.name
        target.mkdir()
        for name in ("run.json", "metrics.json", "provenance.json"):
            if (run_dir / name).exists():
                shutil.copy2(run_dir / name, target / name)
        spent, calls = 0.0, 0
        for i, (notebook, files) in enumerate(written):
            for f in files:
                dest = target / f.relative_to(run_dir)
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(f, dest)
            last_of_notebook = i + 1 == len(written) or written[i + 1][0] != notebook
            if per_output or last_of_notebook:
                start = time.perf_counter()
                write_index(target)
                spent += time.perf_counter() - start
                calls += 1
        return spent, calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", type=Path, help="a finished run folder under reports/")
    args = parser.parse_args()
    written = outputs(args.run)
    notebooks = len({n for n, _ in written})
    print(f"{args.run}: {len(written)} outputs (tables and figures) from {notebooks} notebooks")
    for label, per_output in (("per output", True), ("per notebook", False)):
        spent, calls = replay(args.run, written, per_output)
        print(f"index built {label:<13}: {calls:>4} builds, {spent:6.1f} s in all")


if __name__ == "__main__":
    main()
