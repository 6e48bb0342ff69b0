"""Wall time of the whole batch (every notebook) per scale, and where it goes.

Goal (issues 11 and 14): `make reproduce` at the default scale (`small`) within 25 minutes on
a quiet 2-core machine, with the calibrated twin and real tuning switched on.

For each scale, runs the batch into a fresh ``reports/bench-<scale>/`` (removed first, so
nothing is resumed) and prints, per notebook, the wall time, the seconds inside model
fitting (``fit_seconds`` of ``run.json``, measured by `ltrlib.timing`) and the share spent
outside fitting (data, evaluation, tables, figures), and how many of the machine's cores
were busy on average while it ran (read from ``/proc/stat`` twice a second; a notebook
that keeps one of two cores idle shows 1.0). The kernels get an empty cache folder,
as on a fresh machine. Run it when nothing else runs: on
two cores a parallel job inflates these figures severalfold.

Run: .venv/bin/python bench/bench_batch.py [--scales tiny,small] [--seed 0] [--only 03,05]
or ``make bench-batch``. ``--report`` only prints the table of an existing run directory.
"""

import argparse
import datetime as dt
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

from ltrlib import config
from ltrlib.runner import run_all

#: The issue's goal for the whole batch at the default scale, in seconds.
GOALS = {"small": 25 * 60}


class CpuSampler:
    """Busy CPU time of the whole machine, sampled from ``/proc/stat`` in a thread.

    ``busy_cores(start, end)``: the average number of busy cores between two wall-clock
    times (epoch seconds); None without ``/proc/stat`` or samples in that window.
    """

    def __init__(self, interval: float = 0.5):
        self.interval = interval
        self.samples: list[tuple[float, float, float]] = []  # (time, busy jiffies, all jiffies)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @staticmethod
    def _read() -> tuple[float, float] | None:
        try:
            fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
        except OSError:
            return None
        # user nice system idle iowait irq softirq steal; guest time is already in user.
        ticks = [float(x) for x in fields[:8]]
        idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0.0)  # idle + iowait
        return sum(ticks) - idle, sum(ticks)

    def _run(self) -> None:
        while not self._stop.is_set():
            now, read = time.time(), self._read()
            if read is not None:
                self.samples.append((now, *read))
            self._stop.wait(self.interval)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def busy_cores(self, start: float, end: float) -> float | None:
        inside = [s for s in self.samples if start <= s[0] <= end]
        if len(inside) < 2:
            return None
        (_, b0, a0), (_, b1, a1) = inside[0], inside[-1]
        return (b1 - b0) / max(a1 - a0, 1e-9) * (os.cpu_count() or 1)


def _epoch(stamp: str | None) -> float | None:
    return dt.datetime.fromisoformat(stamp).timestamp() if stamp else None


def summary(run_dir: Path, cpu: CpuSampler | None = None) -> list[tuple[str, float, float, float | None]]:
    """(notebook, seconds, fit seconds, busy cores or None) per completed notebook of a run."""
    manifest = json.loads((run_dir / "run.json").read_text())
    rows = []
    for name, e in sorted(manifest["notebooks"].items()):
        if e.get("status") != "completed":
            continue
        start, end = _epoch(e.get("started")), _epoch(e.get("finished"))
        busy = cpu.busy_cores(start, end) if cpu is not None and start and end else None
        rows.append((name, float(e["seconds"]), float(e.get("fit_seconds") or 0.0), busy))
    return rows


def print_summary(label: str, rows: list[tuple[str, float, float, float | None]],
                  wall: float | None = None) -> None:
    print(f"\n{label}")
    print(f"  {'notebook':24s} {'seconds':>9s} {'fitting':>9s} {'outside fitting':>16s} {'cores busy':>11s}")
    for name, sec, fit, busy in rows:
        print(f"  {name:24s} {sec:9.1f} {fit:9.1f} {(sec - fit) / max(sec, 1e-9):15.0%} "
              f"{'' if busy is None else f'{busy:11.2f}'}")
    total = sum(r[1] for r in rows)
    fit = sum(r[2] for r in rows)
    weighted = [(r[3] * r[1], r[1]) for r in rows if r[3] is not None]
    mean_busy = sum(w for w, _ in weighted) / sum(s for _, s in weighted) if weighted else None
    print(f"  {'all notebooks':24s} {total:9.1f} {fit:9.1f} {(total - fit) / max(total, 1e-9):15.0%} "
          f"{'' if mean_busy is None else f'{mean_busy:11.2f}'}"
          + (f"   (wall {wall:.0f} s with start-up)" if wall is not None else ""))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scales", default="tiny,small")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", default=None, help="notebook numbers, e.g. 03,05 (default all)")
    ap.add_argument("--report", default=None, help="print the table of this existing run directory")
    args = ap.parse_args()

    if args.report:
        print_summary(args.report, summary(Path(args.report)))
        return 0
    # A fresh machine has no cache: the notebooks' caches (notebook 06's stage-1 scores,
    # parsed LETOR files) go to a new folder, so an earlier run cannot shorten this one.
    with tempfile.TemporaryDirectory(prefix="ltrlib-bench-cache-") as cache:
        os.environ["LTRLIB_CACHE_DIR"] = cache
        ok = _run_scales(args)
    sys.stdout.flush()
    return 0 if ok else 1


def _run_scales(args) -> bool:
    ok = True
    for scale in [s.strip() for s in args.scales.split(",") if s.strip()]:
        run_id = f"bench-{scale}"
        run_dir = config.REPORTS_DIR / run_id
        shutil.rmtree(run_dir, ignore_errors=True)
        start = time.perf_counter()
        with CpuSampler() as cpu:
            run_all("synthetic", scale=scale, seed=args.seed, run_id=run_id, only=args.only, progress=False)
        wall = time.perf_counter() - start
        rows = summary(run_dir, cpu)
        print_summary(f"scale {scale}, seed {args.seed} ({run_dir})", rows, wall)
        goal = GOALS.get(scale)
        if goal is not None and args.only is None:
            met = wall <= goal
            ok &= met
            print(f"  goal: whole batch within {goal / 60:.0f} min: {'PASS' if met else 'FAIL'} "
                  f"({wall / 60:.1f} min)")
    return ok


if __name__ == "__main__":
    raise SystemExit(main())
